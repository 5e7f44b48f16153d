"""The declared serving model: the steady state of a deployment under a traffic.

Every rule is a named convention (the README's "Planning a deployment" writes
them out). Per model instance (tp·pp·dp devices, plan/queries.py; the replicas
each take 1/replicas of the requests, spread uniformly at random):

* requests: prompts of I tokens (`isl`), answers of G tokens (`osl`), or a weighted
  list of such classes (then t_p, t_kv and the decode steps G − 1 are means over it,
  H̄ the mean context over every decode step, memory is reserved for the longest
  final context, and the prefill queue is M/G/1: W = λ·E[s²]/(2·(1 − λ·E[s])));
  the prefill gives the first token, then G − 1 decode steps give the rest;
* prefill in chunks of at most C tokens (`max_num_batched_tokens`): chunk j is
  call_time(B=1, S=j·C, P=min(C, I − j·C)) (ttft(P) for the first); t_p is their sum. One request's
  tokens per chunk (no packing of several prompts into one chunk);
* a decode step of B running requests costs tpot(H=H̄, B=B) = call_time(B=B, S=H̄, P=1) = t_d(B),
  with H̄ = I + ⌊(G − 1)/2⌋ the mean context over a request's decode steps
  (rounded up); exact when the step's cost is affine in the contexts (full
  attention), an approximation for windows;
* a step that carries a prefill chunk costs t_d(B) + the chunk's call (the two
  calls are not fused: each reads the weights);
* memory: a request is admitted (its prefill starts) only when its whole final
  context fits: running + 1 ≤ N = b_max(H = I + G, workspace = memory − ⌊f·memory⌋),
  f = the engine's memory fraction (vLLM's gpu_memory_utilization, 0.9); no
  preemption, no prefix-cache hits, no speculative decoding, no stragglers;
* an instance with dp data-parallel attention ranks is one engine: B counts the
  requests of all its ranks (each rank serves ceil(B/dp) of them, the busiest sets
  the step, as the engine's time queries count them), N is the requests all ranks
  hold, and its prefills are taken one at a time (one chunk per step for the whole
  instance: conservative where ranks could prefill different prompts at once);

Aggregated (continuous batching with chunked prefill), λ = rate / replicas:
  u = λ·t_p                      the share of time spent in prefill chunks;
  B = min { b ≥ 1 : b ≥ λ·(G − 1)·t_d(b) / (1 − u) }   the running batch
                                 (Little's law over the decode phase: the fixed point,
                                 rounded up to whole requests, found exactly);
  TPOT = t_d(B) / (1 − u)        decode steps share the time with chunks;
  q = min(1, λ·(G − 1)·t_d(B)/(1 − u))   the share of steps with a running batch
                                 (the fractional fixed point; below 1 at light load);
  s = t_p + n_c·q·t_d(B)         one request's prefill: n_c steps with chunks;
  TTFT = s + W + (1 − λ·s)·q·t_d(B)/2
    W = λ·s² / (2·(1 − λ·s))     the M/D/1 queue of prefills (Poisson arrivals;
                                 0 for fixed intervals), the last term the mean rest
                                 of the step in flight when a request arrives idle.
Disaggregated (r_p prefill instances, r_d decode instances, the same layout):
  TTFT = t_p + W_p + t_kv        W_p the M/D/1 queue of the prefill instance,
                                 t_kv = state_bytes(H=I, per device) / the per-GPU
                                 scale-out link (device_link(link=scale_out));
  B = min { b ≥ 1 : b ≥ λ_d·(G − 1)·t_d(b) }, TPOT = t_d(B).
Throughput is the offered rate's tokens, rate·G per second, whenever the
deployment is stable (u < 1, λ·s < 1, B exists and fits).

Stability of the fixed point: with k = λ·(G − 1)/(1 − u) (λ_d·(G − 1) for a decode
pool), the decode loop gain g = k·(the largest growth of t_d per request near B: one
request either side, and the chord over the next 1 + ⌊√(4B)⌋ requests, about two
standard deviations of a Poisson batch; with dp attention ranks, a request more per
rank: dp requests, divided by dp) says how strongly a request more lengthens
every request's stay. Linearizing the birth-death process of the running requests
around the fixed point gives a variance B/(1 − g) (Poisson's B at g = 0): as g nears 1
the running batch's fluctuations, and the time they add, grow without bound; a step
time that bends upward near B (MoE layers touching more experts, matrix products
turning compute-bound) makes the mean step over a fluctuating batch exceed the step at
the mean. The mean-value figures then stop describing the engine (the simulator shows
TPOT 17–60 % above them there), so a deployment is trusted only while
g ≤ max_loop_gain (1/4): the `stability` limit."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..dsl.errors import SpecError
from . import formulas as F
from .figures import Figure
from .queries import Asker, Layout

# the two algebras the formulas (plan/formulas.py, printed for the explorer too) run in here:
# exact figures that carry their `specc eval` expression, and plain exact numbers
FIG = F.Ops(one=Figure.seconds(), number=Figure.number, minimum=Figure.minimum, maximum=Figure.maximum,
            ceil=None, at_least=None)
EXACT = F.Ops(one=1, number=Fraction, minimum=min, maximum=max, ceil=lambda x: -((-x.numerator) // x.denominator),
              at_least=lambda a, b: a >= b)

AGGREGATED, DISAGGREGATED = "aggregated", "disaggregated"
LIMITS = ("memory", "TPOT", "TTFT", "stability")


@dataclass(frozen=True)
class Traffic:
    rate: Fraction             # requests per second, whole deployment
    isl: int                   # prompt tokens (the largest of a mix)
    osl: int                   # output tokens (≥ 2: a TPOT needs a decode step; of the same class)
    arrivals: str = "poisson"  # or "fixed" (equal intervals)
    mix: tuple = ()            # ((share, isl, osl), ...), shares summing to 1: a weighted list

    @property
    def classes(self) -> tuple:
        """((share, I, G), ...): the mix, or the one class (1, isl, osl)."""
        return self.mix or ((Fraction(1), self.isl, self.osl),)


@dataclass(frozen=True)
class Targets:
    ttft: Fraction | None = None   # seconds (mean)
    tpot: Fraction | None = None


@dataclass(frozen=True)
class EngineRules:
    chunk: int = 8192                       # max_num_batched_tokens: prefill tokens per step
    memory_fraction: Fraction = Fraction(9, 10)
    max_loop_gain: Fraction = Fraction(1, 4)   # the planner's trust bound (see decode_loop_gain)


@dataclass(frozen=True)
class Deployment:
    layout: Layout
    mode: str = AGGREGATED
    replicas: int = 1          # aggregated instances, or decode instances (disaggregated)
    prefill_replicas: int = 0  # prefill instances (disaggregated only)

    @property
    def gpus(self) -> int:
        return F.gpus(EXACT, self.replicas, self.prefill_replicas, self.layout.gpus)


def chunks(isl: int, chunk: int) -> list:
    """(S, P) of each prefill chunk."""
    return [(s, F.chunk_tokens(EXACT, isl, s, chunk)) for s in range(0, isl, chunk)]


def fluctuation(b: int) -> int:
    """1 + ⌊√(4b)⌋: about two standard deviations of a Poisson running batch of mean b."""
    import math

    return 1 + math.isqrt(F.fluctuation_radicand(EXACT, b))


def mean_context(t: Traffic) -> int:
    """H̄: the mean context over the decode steps of every request (each step of a
    class with prompt I and G tokens at S = I .. I + G − 2), rounded up."""
    if len(t.classes) == 1:
        _, i, g = t.classes[0]
        return F.mean_context(EXACT, Fraction(i), Fraction(g))
    steps = sum(p * F.decode_steps(EXACT, g) for p, _, g in t.classes)
    total = sum(p * F.decode_steps(EXACT, g) * (2 * i + g - 2) for p, i, g in t.classes) / (2 * steps)
    return EXACT.ceil(total)


def final_context(t: Traffic) -> int:
    """The longest final context of the traffic (memory is reserved for it)."""
    return max(F.final_context(EXACT, i, g) for _, i, g in t.classes)


def decode_steps(t: Traffic) -> Fraction:
    """Decode steps per request, on average: Σ share·(G − 1)."""
    return sum((Fraction(p) * F.decode_steps(EXACT, g) for p, _, g in t.classes), Fraction(0))


def output_tokens(t: Traffic) -> Fraction:
    return sum((Fraction(p) * g for p, _, g in t.classes), Fraction(0))


def _weighted(parts: list) -> Figure:
    """Σ share·figure over the classes (the figure alone for a single class)."""
    total = None
    for p, fig in parts:
        term = fig if p == 1 else Figure.number(p) * fig
        total = term if total is None else total + term
    return total


@dataclass
class Evaluation:
    """The exact steady state of one deployment: figures (name -> Figure), the
    ratio of each limit to its bound (≤ 1 passes; inf when no steady state), and
    the running batch."""

    deployment: Deployment
    figures: dict = field(default_factory=dict)
    ratios: dict = field(default_factory=dict)
    batch: int | None = None
    capacity: int = 0           # N: requests that fit per instance (decode instance)
    note: str = ""
    simulated: dict | None = None   # percentile targets: the simulation's figures (search.Percentile)

    @property
    def feasible(self) -> bool:
        return all(r <= 1 for r in self.ratios.values())

    @property
    def binding(self) -> str:
        return max(self.ratios, key=lambda k: self.ratios[k])


class LayoutFacts:
    """The exact per-layout ingredients (asked once per layout)."""

    def __init__(self, asker: Asker, lay: Layout, traffic: Traffic, rules: EngineRules):
        q = asker.q
        self.asker, self.lay, self.t, self.rules = asker, lay, traffic, rules
        memory = asker.exact(q.device_memory(lay))
        self.workspace = F.workspace(EXACT, memory, rules.memory_fraction.numerator, rules.memory_fraction.denominator)
        self.memory = Figure.query(q.device_memory(lay), memory)
        text = q.b_max(lay, final_context(traffic), self.workspace)
        self.n_fit = Figure.query(text, asker.exact(text))
        text = q.weight_bytes(lay)
        self.weights = Figure.query(text, asker.exact(text))
        self._td: dict = {}
        self._tp: dict = {}

    def t_prefill_of(self, isl: int) -> Figure:
        """One prompt of `isl` tokens, chunk by chunk."""
        if isl not in self._tp:
            total = None
            for s, p in chunks(isl, self.rules.chunk):
                text = self.asker.q.prefill_chunk(self.lay, s, p)
                part = Figure.query(text, self.asker.exact(text))
                total = part if total is None else total + part
            self._tp[isl] = total
        return self._tp[isl]

    @property
    def t_prefill(self) -> Figure:
        """t_p: the mean prefill time over the traffic's classes."""
        return _weighted([(p, self.t_prefill_of(i)) for p, i, _ in self.t.classes])

    def t_decode(self, b: int) -> Figure:
        found = self._td.get(b)
        if found is None:
            # beyond what fits, only to locate the fixed point (the memory limit fails there)
            text = self.asker.q.decode_step(self.lay, b, mean_context(self.t), beyond_fit=b > self.n_fit.value)
            found = self._td[b] = Figure.query(text, self.asker.exact(text))
        return found

    def t_decode_slope(self, b: int) -> Figure:
        """How much one running request more lengthens a decode step near b: the
        largest of the one-request steps on either side of b (MoE layers touching more
        experts) and the chord over the next w = fluctuation(b) requests (a step time
        bending upward, e.g. turning compute-bound, within the batch's usual range; a
        step time that bends down below b only makes the figures conservative). With dp
        attention ranks the busiest rank holds ceil(b/dp): one request more on every
        rank (dp requests) is the smallest step, so those slopes are taken over dp."""
        td = self.t_decode
        d = self.lay.dp
        w = F.gain_window(EXACT, fluctuation(b) - 1, d)
        terms = [F.chord(FIG, td(b + d), td(b), d), F.chord(FIG, td(b + w), td(b), w)]
        if b >= d + 1:
            terms.append(F.chord(FIG, td(b), td(b - d), d))
        found = terms[0]
        for term in terms[1:]:
            found = Figure.maximum(found, term)
        return found

    def kv_transfer_of(self, isl: int) -> Figure:
        q = self.asker.q
        kv = Figure.query(q.state_bytes(self.lay, isl, 1), self.asker.exact(q.state_bytes(self.lay, isl, 1)))
        link = Figure.query(q.kv_link(self.lay), self.asker.exact(q.kv_link(self.lay)))
        return F.kv_transfer(FIG, kv, link)

    def kv_transfer(self) -> Figure:
        """The mean KV transfer time over the traffic's classes."""
        return _weighted([(p, self.kv_transfer_of(i)) for p, i, _ in self.t.classes])

    def memory_ratio(self) -> Fraction:
        """(weights + one request's KV at I + G) / usable memory, per device."""
        usable = self.memory.value - self.workspace
        need = self.weights.value + self.kv_reserved(1).value
        return Fraction(need, usable) if usable > 0 else Fraction(10**9)

    def kv_reserved(self, b: int) -> Figure:
        text = self.asker.q.state_bytes(self.lay, final_context(self.t), b)
        return Figure.query(text, self.asker.exact(text))

    def running_batch(self, k: Fraction, guess: int | None = None, limit: int = 1 << 20) -> int | None:
        """min { b ≥ 1 : b ≥ k·t_d(b) }, exactly (None when there is none up to
        `limit`: the decode steps cannot keep up). The condition holds from the
        fixed point on while t_d grows by less than 1/k per request (roofline
        times grow at most linearly in b), so a bisection finds its first b."""
        def ok(b):
            return b >= 1 and F.batch_holds(EXACT, b, k, self.t_decode(b).value)

        lo, hi = 0, None                 # lo fails (or is 0), hi passes
        if guess is not None and 1 <= guess <= limit:
            if ok(guess):
                if guess == 1 or not ok(guess - 1):
                    return guess
                hi = guess - 1
            elif ok(guess + 1):
                return guess + 1
            else:
                lo = guess + 1
        if hi is None:
            hi = max(1, 2 * lo)
            while not ok(hi):
                lo, hi = hi, 2 * hi
                if hi > limit:
                    return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi


def _queue_wait(t: Traffic, lam: Figure, s: Figure, s2: Figure | None = None) -> Figure:
    """The mean wait of a FIFO server of Poisson arrivals: λ·E[s²] / (2·(1 − λ·E[s]))
    (Pollaczek–Khinchine; M/D/1 with s2 = s·s for one class); 0 for fixed intervals."""
    if t.arrivals != "poisson":
        return Figure.seconds(0)
    return F.queue_wait(FIG, lam, s, F.FORMULAS["square"][0](FIG, s) if s2 is None else s2)


def _service(facts: "LayoutFacts", busy: Figure | None, td: Figure | None) -> tuple:
    """(E[s], E[s²] or None for one class) of one request's prefill: its chunks, each
    riding on a step that carries busy·t_d of decode (aggregated), or alone."""
    parts = []
    for p, i, _ in facts.t.classes:
        s = facts.t_prefill_of(i)
        if busy is not None:
            n = len(chunks(i, facts.rules.chunk))
            s = F.prefill_service(FIG, s, n, busy, td)
        parts.append((p, s))
    if len(parts) == 1:
        return parts[0][1], None
    return _weighted(parts), _weighted([(p, F.FORMULAS["square"][0](FIG, s)) for p, s in parts])


INF = float("inf")


def _refused(ev, ratios: dict, note: str):
    """The evaluation of a deployment that cannot serve the traffic: how far each limit is
    (ratios, >= 1 where it binds) and why, in words."""
    ev.ratios, ev.note = ratios, note
    return ev


def evaluate(facts: LayoutFacts, dep: Deployment, targets: Targets, guess: int | None = None,
             guess_prefill=None) -> Evaluation:
    """The exact steady state of `dep` (facts of its layout) and its limits."""
    t = facts.t
    ev = Evaluation(dep)
    n = facts.n_fit.value
    ev.capacity = n
    ev.figures["weights_per_device"] = facts.weights
    ev.figures["requests_that_fit"] = facts.n_fit
    if n < 1:
        return _refused(ev, {"memory": facts.memory_ratio()},
                        "the weights and one request's KV do not fit in the usable memory")
    tp = facts.t_prefill
    g1 = decode_steps(t)
    if dep.mode == AGGREGATED:
        lam = Figure.number(_per(t.rate, dep.replicas))
        u = F.prefill_share(FIG, lam, tp)
        if u.value >= 1:
            return _refused(ev, {"memory": Fraction(0), "TPOT": INF, "TTFT": INF},
                            "prefill alone needs more than the instance's time")
        k = F.decode_demand(EXACT, _per(t.rate, dep.replicas), g1, u.value)
        b = facts.running_batch(k, guess)
        if b is None:
            return _refused(ev, {"memory": INF, "TPOT": INF, "TTFT": INF}, "decode steps cannot keep up at any batch")
        ev.batch = b
        td = facts.t_decode(b)
        ev.figures["decode_loop_gain"] = F.loop_gain(FIG, lam, g1, facts.t_decode_slope(b), u)
        tpot = F.aggregated_tpot(FIG, td, u)
        # the share of steps with a running batch: at most the fractional fixed point
        busy = F.busy_share(FIG, k, td)
        s, s2 = _service(facts, busy, td)
        rho = F.load(FIG, lam, s)
        ev.figures["step_time"] = td
        ev.figures["prefill_time"] = tp
        ev.figures["tpot"] = tpot
        if rho.value >= 1:
            return _refused(ev, {"memory": F.memory_ratio(EXACT, Fraction(b), n), "TPOT": _ratio(tpot.value, targets.tpot), "TTFT": INF},
                            "the prefill queue grows without bound")
        ttft = F.aggregated_ttft(FIG, s, _queue_wait(t, lam, s, s2), rho, busy, td)
        ev.figures["ttft"] = ttft
    else:
        lam_p = Figure.number(_per(t.rate, dep.prefill_replicas))
        rho = F.load(FIG, lam_p, tp)
        ev.figures["prefill_time"] = tp
        try:
            kv = facts.kv_transfer()
        except SpecError as exc:      # e.g. a device file that gives no scale-out link
            return _refused(ev, {"memory": Fraction(0), "TPOT": INF, "TTFT": INF},
                            f"the KV transfer cannot be timed: {exc.message}")
        ev.figures["kv_transfer"] = kv
        k = F.decode_demand(EXACT, _per(t.rate, dep.replicas), g1, 0)
        b = facts.running_batch(k, guess)
        if b is None:
            return _refused(ev, {"memory": INF, "TPOT": INF, "TTFT": INF}, "decode steps cannot keep up at any batch")
        ev.batch = b
        td = facts.t_decode(b)
        lam_d = Figure.number(_per(t.rate, dep.replicas))
        ev.figures["decode_loop_gain"] = F.pool_loop_gain(FIG, lam_d, g1, facts.t_decode_slope(b))
        ev.figures["step_time"] = td
        ev.figures["tpot"] = td
        if rho.value >= 1:
            return _refused(ev, {"memory": F.memory_ratio(EXACT, Fraction(b), n), "TPOT": _ratio(td.value, targets.tpot), "TTFT": INF},
                            "the prefill queue grows without bound")
        s, s2 = _service(facts, None, None)
        ev.figures["ttft"] = F.disaggregated_ttft(FIG, tp, _queue_wait(t, lam_p, s, s2), kv)
    ev.figures["kv_per_device"] = facts.kv_reserved(F.reserved_requests(EXACT, b))
    ev.figures["workspace_per_device"] = Figure.query(f"{facts.workspace} B", facts.workspace)
    ev.figures["free_per_device"] = F.free_memory(FIG, facts.memory, facts.weights, ev.figures["kv_per_device"],
                                                  ev.figures["workspace_per_device"])
    ev.figures["throughput"] = F.throughput(FIG, Fraction(t.rate), output_tokens(t))
    ev.figures["throughput_per_gpu"] = F.per_gpu(FIG, Fraction(t.rate), output_tokens(t), dep.gpus)
    ev.ratios = {"memory": F.memory_ratio(EXACT, Fraction(b), n), "TPOT": _ratio(ev.figures["tpot"].value, targets.tpot),
                 "TTFT": _ratio(ev.figures["ttft"].value, targets.ttft),
                 "stability": _ratio(ev.figures["decode_loop_gain"].value, facts.rules.max_loop_gain)}
    return ev


def _ratio(value, target):
    return Fraction(0) if target is None else F.ratio(EXACT, Fraction(value), Fraction(target))


def _per(rate, n) -> Fraction:
    """λ per instance: the rate over the instances that share it."""
    return F.FORMULAS["rate_per"][0](EXACT, Fraction(rate), n)


UNITS = {"decode_loop_gain": "", "weights_per_device": "B", "requests_that_fit": "requests", "step_time": "s", "prefill_time": "s",
         "tpot": "s", "ttft": "s", "kv_transfer": "s", "kv_per_device": "B", "workspace_per_device": "B",
         "free_per_device": "B", "throughput": "tokens/s", "throughput_per_gpu": "tokens/s"}
