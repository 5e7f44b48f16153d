"""Capacity queries: how many requests fit (b_max) and how long a context fits (h_max).

Both answer for a deployment (tp=, pp=, ep=, dp=, see compiler/deploy/sharding.py) on
devices of one kind: every device holds its share of the weights (the most loaded
pipeline stage binds), a per-device `workspace=` and the state of the requests it
serves. With block=N (paged allocation, as vLLM allocates), each request's entries of
every store that grows with the context round up to whole blocks of N. h_max answers
at most the spec's max_context unless extrapolate=true. check_fit is the fit rule the
time queries apply before they answer."""

from __future__ import annotations

import sympy as sp

from ...dsl.errors import SpecError
from ...dsl.units import BYTES, NONE, TOKENS
from . import allocator
from .query_base import Quantity
from ..deploy.sharding import Deployment, store_fraction, weight_fraction
from ..schema.symbols import H, substitute

_H_LIMIT = 2 ** 48      # search bound for h_max (tokens); far beyond any context


# The two capacity rules, stated once for the engine's numbers and for the explorer's printed
# formulas (render/site.py passes memory and workspace as symbols and evaluate=False, so sympy
# builds the Max/Min/floor without comparing symbols).
def requests_that_fit(free, per_request, dp, evaluate: bool = True):
    """b_max's rule: dp · max(0, min over the stages whose requests hold state of ⌊free / state⌋)
    (each dp group serves its own requests; ep spreads experts, not requests); None when no
    stage's requests hold state."""
    fits = [sp.Max(0, sp.floor(f / s, evaluate=evaluate), evaluate=evaluate)
            for f, s in zip(free, per_request) if s != 0]
    if not fits:
        return None
    return dp * (fits[0] if len(fits) == 1 else sp.Min(*fits) if evaluate else as_written(sp.Min, fits))


def as_written(kind, terms: list):
    """kind(*terms) (Min or Max) neither evaluated nor put in sympy's canonical order: for a
    printed formula only. (sympy sorts an unevaluated Min/Max's arguments by a sort key that
    costs about a millisecond on a stage's state expression, and a site export builds
    thousands; the order changes no value.)"""
    if len(terms) == 1:
        return terms[0]
    made = sp.Expr.__new__(kind, *terms)
    made._argset = frozenset(terms)
    return made


def stage_shortfalls(free, per_request, on_device, context) -> list:
    """check_fit's rule, per pipeline stage: the bytes its `on_device` requests at `context`
    tokens need beyond its free memory (the deployment fits when none is positive)."""
    return [on_device * substitute(s, {H: context}) - f for f, s in zip(free, per_request)]


class CapacityQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def budget(self, model, args, need_state=True):
        """(free bytes per stage for state, per-request state per stage as expressions in H, deployment)."""
        # kv_memory= gives each device's state budget directly (vLLM's --kv-cache-memory-bytes)
        kv_memory = args.quantity("kv_memory", BYTES, None) if args.declares("kv_memory") else None
        memory = self._memory_of(args, args.name("device", required=True)) if kv_memory is None else None
        workspace = args.quantity("workspace", BYTES, sp.Integer(0))
        fmt = self.format_of(args)
        dep = self.deployment(args)
        dep = Deployment(dep.tp, dep.pp, dep.ep, dep.dp, per_device=True)
        block = self.allocator_block(args) if args.declares("block") else None
        weights, states = [], []
        for op in model.ops:
            amount = sp.Add(*[self._stored_bytes(model, fmt, op, w) for w in op.weights])
            if amount != 0:
                weights.append((op.layers, op.segment, op.mult, amount * weight_fraction(op, dep, args.loc)))
        for use in model.states:
            entries = use.entries
            if block is not None and entries.has(H):
                entries = sp.ceiling(entries / block) * block
            frac = store_fraction(self.store_units(model, use.store), dep, use.store, args.loc)
            states.append((use.layers, use.segment, use.mult,
                           entries * self.store_bytes(model, use.store, fmt) * frac))
        free = [memory - w - workspace if kv_memory is None else kv_memory
                for w in self._per_stage(model, dep, weights, args.loc)]
        per_request = self._per_stage(model, dep, states, args.loc)
        if need_state and all(s == 0 for s in per_request):
            raise SpecError(f"{self.spec.model} keeps no per-request state, so capacity has no bound", args.loc,
                            expected="a spec that declares state stores (state: in its stack)")
        return free, per_request, dep

    def check_fit(self, model, args, batch, context):
        """A time query answers only for a deployment that fits: the most loaded device's weights,
        workspace= and the state of its ceil(B/dp) requests at `context` tokens within its memory.
        Otherwise a located error with the shortfall in bytes, unless ignore_fit=true."""
        args.used.add("ignore_fit")
        flag = args.raw("ignore_fit")
        if flag in ("true", sp.Integer(1)):
            return
        if flag not in (None, "false", sp.Integer(0)):
            raise SpecError(f"'ignore_fit=' takes true or false, got {flag}", args.node_loc("ignore_fit"),
                            expected="ignore_fit=true")
        free, per_request, dep = self.budget(model, args, need_state=False)
        on_device = dep.requests_per_device(batch)
        shorts = stage_shortfalls(free, per_request, on_device, context)
        if not all(sp.sympify(x).is_number for x in shorts):
            args.check_bound(shorts[0] if len(shorts) == 1 else sp.Max(*shorts), 0)   # settled at the arguments
            return
        short = sp.ceiling(max(shorts))
        if short > 0:
            device = args.name("device")
            memory = self._memory_of(args, device)
            short, memory = int(short), int(memory)
            raise SpecError(f"the deployment does not fit: the most loaded {device} needs {memory + short:,} B "
                            f"(weights, workspace= and the state of {on_device} request(s) at {context} tokens) "
                            f"of its {memory:,} B, {short:,} B short", args.loc,
                            expected="a larger tp/pp/ep, fewer requests or a shorter context; "
                                     "ignore_fit=true to time it anyway")

    def allocator_block(self, args):
        args.used.add("block")
        block = args.raw("block")
        if block is None:
            return None
        if not (isinstance(block, sp.Integer) and block >= 1):
            raise SpecError(f"'block=' takes a positive number of entries, got {block}", args.node_loc("block"),
                            expected="block=16")
        return block

    def q_b_max(self, model, args):
        if args.raw("allocator") is not None:     # a declared engine's paging rules (compiler/query/allocator.py)
            return allocator.b_max(self, model, args)
        args.used.add("H")
        free, per_request, dep = self.budget(model, args)
        length = args.scenario("H")
        ext = args.check_context(model, length)
        # a budget whose per-request state is zero at this H bounds nothing (f/0 is no count)
        value = requests_that_fit(free, [substitute(s, {H: length}) for s in per_request], dep.dp)
        if value is None:
            raise SpecError(f"at H={length} a request holds no state on any device, so any batch fits",
                            args.loc, expected="H=1 or more (a context whose state takes memory)")
        return Quantity(value, NONE, ext, note=_shortfall(value, free, per_request, length))

    def q_h_max(self, model, args):
        if args.raw("allocator") is not None:
            return allocator.h_max(self, model, args)
        free, per_request, dep = self.budget(model, args)
        batch = args.scenario("B", 1)
        if batch < 1:
            raise SpecError("h_max needs B >= 1", args.loc, expected="B=1 or more")
        on_device = dep.requests_per_device(batch)

        def fits(length) -> bool:
            return all(on_device * substitute(s, {H: sp.Integer(length)}) <= f for f, s in zip(free, per_request))

        if not fits(0):
            return Quantity(sp.Integer(0), TOKENS)
        if fits(_H_LIMIT):
            raise SpecError(f"{self.spec.model}'s state does not bind: any context fits", args.loc,
                            expected="a model whose state grows with the context")
        lo, hi = 0, 1
        while fits(hi):                     # exponential then binary search: O(log H) evaluations
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return self.context_answer(model, args, lo)

    @staticmethod
    def context_answer(model, args, longest):
        """h_max's answer for the longest context that fits, under every allocator: the model's
        maximum context bounds it, unless the user asks beyond it (extrapolate=true)."""
        if model.max_context is not None and longest > model.max_context:
            if args.raw("extrapolate") not in ("true", sp.Integer(1)):
                return Quantity(sp.Integer(model.max_context), TOKENS)
            return Quantity(sp.Integer(longest), TOKENS, True)
        return Quantity(sp.Integer(longest), TOKENS)


def _shortfall(value, free, per_request, length) -> str:
    """Why b_max is 0, in bytes: the first device (pipeline stage) that cannot hold one request,
    its state for one request and what is left after weights and workspace."""
    if value != 0:
        return ""
    for stage, (f, s) in enumerate(zip(free, per_request)):
        one = substitute(s, {H: length})
        if not (f.is_number and one.is_number) or one == 0 or f >= one:
            continue
        where = f" on pipeline stage {stage + 1}" if len(free) > 1 else ""
        left = (f"{int(sp.floor(f)):,} B are left after weights and workspace" if f >= 0
                else f"weights and workspace alone exceed the memory by {int(sp.ceiling(-f)):,} B")
        return (f"short by {int(sp.ceiling(one - f)):,} B{where}: one request's state is "
                f"{int(sp.ceiling(one)):,} B and {left}")
    return ""
