"""The serving model's arithmetic, declared once (plan/serving.py names each rule).

Each function below is one formula of the steady state, written over an *algebra*:
the planner (serving.py) calls it with exact `Figure`s, so that every figure keeps
the `specc eval` expression that reproduces it; the explorer's plan view
(render/plan_site.py) calls the same function with sympy symbols and prints the
result to JavaScript with compiler/codegen, so the page and the planner share one
definition. A formula only adds, multiplies, divides, compares and takes min, max or
ceil through `ops`; control flow that depends on concrete integers (a chunk count of
one, a dp of one) only shortens the figure's text, never its value.

`FORMULAS` lists what is printed: name -> (function, argument names); `SYMBOLIC` is
the algebra of sympy expressions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Ops:
    """How an algebra spells what the formulas need besides + - * / and comparisons."""

    one: object                        # one second (a Figure prints it as `(1 s)`)
    number: Callable                   # an exact number
    minimum: Callable
    maximum: Callable
    ceil: Callable
    at_least: Callable                 # a >= b, as a truth value of the algebra


def _is_one(n) -> bool:
    """Whether n is the integer 1 (a concrete count; a symbol never is)."""
    return isinstance(n, int) and n == 1


# ------------------------------------------------------------------ the traffic
def mean_context(ops, isl, osl):
    """H̄ of one class: the mean context over the decode steps S = I .. I + G − 2, rounded up
    (serving.mean_context takes the share-weighted mean over a mix's classes first)."""
    return ops.ceil(isl + (osl - 2) / ops.number(2))


def final_context(ops, isl, osl):
    """I + G: memory is reserved for the whole final context."""
    return isl + osl


def decode_steps(ops, osl):
    """G − 1 decode steps per request (the prefill gives the first token)."""
    return osl - 1


def chunk_tokens(ops, isl, start, chunk):
    """The tokens of the prefill chunk that starts after `start` tokens: min(C, I − start)."""
    return ops.minimum(chunk, isl - start)


# ------------------------------------------------------------------ per instance
def workspace(ops, memory, fraction_num, fraction_den):
    """memory − ⌊f·memory⌋: what the engine's memory fraction f leaves as workspace."""
    return memory - (memory * fraction_num // fraction_den)


def prefill_share(ops, lam, t_prefill):
    """u = λ·t_p: the share of an aggregated instance's time spent in prefill chunks."""
    return lam * t_prefill


def decode_demand(ops, lam, steps, u):
    """k = λ·(G − 1)/(1 − u): decode steps asked per second of decode time (u = 0 for a pool)."""
    return lam * steps / (1 - u)


def batch_holds(ops, b, k, t_decode):
    """The running batch is the least b ≥ 1 with b ≥ k·t_d(b) (Little's law over the decode phase)."""
    return ops.at_least(b, k * t_decode)


def fluctuation_radicand(ops, b):
    """The window of the loop gain's chord is 1 + ⌊√(4b)⌋ requests (two standard deviations)."""
    return 4 * b


def gain_window(ops, root, dp):
    """w = max(1 + ⌊√(4b)⌋, dp): the chord's width, at least one request on every dp rank."""
    return ops.maximum(1 + root, dp)


def chord(ops, t_high, t_low, n):
    """The growth of t_d per request between two batches n requests apart."""
    return t_high - t_low if _is_one(n) else (t_high - t_low) / n


def loop_gain(ops, lam, steps, slope, u):
    """g = λ·(G − 1)·Δ/(1 − u): how strongly a request more lengthens every request's stay."""
    return lam * steps * slope / (ops.one - u)


def pool_loop_gain(ops, lam, steps, slope):
    """g = λ_d·(G − 1)·Δ for a decode pool (no prefill shares its time)."""
    return lam * steps * slope / ops.one


def aggregated_tpot(ops, t_decode, u):
    """TPOT = t_d(B)/(1 − u): decode steps share the time with prefill chunks."""
    return t_decode * ops.one / (ops.one - u)


def busy_share(ops, k, t_decode):
    """q = min(1, k·t_d(B)): the share of steps with a running batch (the fractional fixed point)."""
    return ops.minimum(ops.number(1), ops.number(k) * t_decode / ops.one)


def prefill_service(ops, t_prefill, n_chunks, busy, t_decode):
    """s = t_p + n_c·q·t_d(B): one request's prefill, each chunk riding on a decode step."""
    return t_prefill + (busy * t_decode if _is_one(n_chunks) else n_chunks * busy * t_decode)


def load(ops, lam, s):
    """ρ = λ·s: the prefill server's utilisation."""
    return lam * s


def queue_wait(ops, lam, s, s2):
    """W = λ·E[s²]/(2·(1 − λ·E[s])): Pollaczek–Khinchine (M/D/1 with E[s²] = s·s)."""
    return lam * s2 / (2 * (ops.one - lam * s))


def aggregated_ttft(ops, s, wait, rho, busy, t_decode):
    """TTFT = s + W + (1 − ρ)·q·t_d(B)/2: the prefill, its queue and the rest of a step in flight."""
    return s + wait + (ops.one - rho) * busy * t_decode / (2 * ops.one)


def kv_transfer(ops, kv_bytes, link):
    """t_kv = the prompt's KV per device / the per-GPU scale-out link."""
    return kv_bytes / link


def disaggregated_ttft(ops, t_prefill, wait, t_kv):
    """TTFT = t_p + W_p + t_kv."""
    return t_prefill + wait + t_kv


def free_memory(ops, memory, weights, kv, reserved):
    """Per device: memory − weights − the running requests' KV − workspace."""
    return memory - weights - kv - reserved


def throughput(ops, rate, tokens):
    """The offered load: rate·G tokens/s."""
    return ops.number(rate * tokens)


def per_gpu(ops, rate, tokens, gpus):
    return ops.number(rate * tokens / gpus)


def gpus(ops, replicas, prefill_replicas, instance):
    """(replicas + prefill instances)·(tp·pp·dp)."""
    return (replicas + prefill_replicas) * instance


def cost(ops, price, devices):
    return price * devices


def reserved_requests(ops, b):
    """B + 1: the KV reserved per instance is the running batch's and one more being admitted."""
    return b + 1


def max_instances(ops, max_gpus, instance):
    """⌊max GPUs / GPUs per instance⌋: the most instances (replicas, or prefill + decode) searched."""
    return max_gpus // instance


def memory_ratio(ops, b, fit):
    """(B + 1)/N: a request is admitted only when its whole final context fits."""
    return (b + 1) / fit


def ratio(ops, value, target):
    """A figure against its bound (≤ 1 passes)."""
    return value / target


# ------------------------------------------------------------------ printing
def _symbolic_ops() -> Ops:
    import sympy as sp

    return Ops(one=sp.Integer(1), number=sp.sympify,
               minimum=lambda a, b: sp.Min(a, b, evaluate=False),
               maximum=lambda a, b: sp.Max(a, b, evaluate=False),
               ceil=lambda x: sp.ceiling(x),
               at_least=lambda a, b: sp.GreaterThan(a, b, evaluate=False))


FORMULAS = {
    "mean_context": (mean_context, ("isl", "osl")),
    "final_context": (final_context, ("isl", "osl")),
    "decode_steps": (decode_steps, ("osl",)),
    "chunk_tokens": (chunk_tokens, ("isl", "start", "chunk")),
    "prefill_share": (prefill_share, ("lam", "t_prefill")),
    "decode_demand": (decode_demand, ("lam", "steps", "u")),
    "batch_holds": (batch_holds, ("b", "k", "t_decode")),
    "fluctuation_radicand": (fluctuation_radicand, ("b",)),
    "gain_window": (gain_window, ("root", "dp")),
    "chord": (chord, ("t_high", "t_low", "n")),
    "loop_gain": (loop_gain, ("lam", "steps", "slope", "u")),
    "pool_loop_gain": (pool_loop_gain, ("lam", "steps", "slope")),
    "aggregated_tpot": (aggregated_tpot, ("t_decode", "u")),
    "busy_share": (busy_share, ("k", "t_decode")),
    "prefill_service": (prefill_service, ("t_prefill", "n_chunks", "busy", "t_decode")),
    "load": (load, ("lam", "s")),
    "queue_wait": (queue_wait, ("lam", "s", "s2")),
    "aggregated_ttft": (aggregated_ttft, ("s", "wait", "rho", "busy", "t_decode")),
    "kv_transfer": (kv_transfer, ("kv_bytes", "link")),
    "disaggregated_ttft": (disaggregated_ttft, ("t_prefill", "wait", "t_kv")),
    "free_memory": (free_memory, ("memory", "weights", "kv", "reserved")),
    "throughput": (throughput, ("rate", "tokens")),
    "per_gpu": (per_gpu, ("rate", "tokens", "gpus")),
    "gpus": (gpus, ("replicas", "prefill_replicas", "instance")),
    "cost": (cost, ("price", "devices")),
    "reserved_requests": (reserved_requests, ("b",)),
    "max_instances": (max_instances, ("max_gpus", "instance")),
    "memory_ratio": (memory_ratio, ("b", "fit")),
    "ratio": (ratio, ("value", "target")),
    "square": (lambda ops, s: s * s, ("s",)),
    "rate_per": (lambda ops, rate, n: rate / n, ("rate", "n")),
}


def symbolic(name: str):
    """The formula `name` as a sympy expression in its argument symbols."""
    import sympy as sp

    fn, args = FORMULAS[name]
    return fn(_symbolic_ops(), *[sp.Symbol(a) for a in args])


def javascript() -> str:
    """Every formula printed to JavaScript (`plan_<name>(args...)`, exact BigInt/rational)."""
    from ..compiler.lanes import codegen

    return "".join(codegen.emit(symbolic(name), list(args), "javascript", f"plan_{name}", shared=False)
                   for name, (_, args) in FORMULAS.items())
