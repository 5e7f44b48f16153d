"""State queries: per-token and resident state bytes, and the state bytes decode steps read and write."""

from __future__ import annotations

import sympy as sp

from ...dsl.units import BYTES, TOKENS, combine
from .query_base import L_SYMBOL, FAR, SPAN, Quantity, settle_conditions
from ..schema.patterns import range_sum
from ..deploy.sharding import store_fraction
from ..schema.symbols import H, at_length


class StateQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def _request_state(self, model, uses, fmt, stores, dep, loc):
        """State of one request as an expression in H: the whole of it, or (deployed,
        per_device) what the most loaded device holds of it; deployed without per_device,
        the sum over the tp copies and pipeline stages."""
        if dep.trivial and not dep.per_device:
            return self._state_expr(model, uses, fmt, stores)
        terms = []
        for use in uses:
            if use.store in stores:
                frac = store_fraction(self.store_units(model, use.store), dep, use.store, loc)
                terms.append((use.layers, use.segment, use.mult,
                              use.entries * self.store_bytes(model, use.store, fmt) * frac))
        per_stage = self._per_stage(model, dep, terms, loc)
        if dep.per_device:
            return per_stage[0] if len(per_stage) == 1 else sp.Max(*per_stage)
        return sp.Add(*per_stage) * dep.tp

    def store_units(self, model, store):
        shard = self.spec.stores[store].shard
        return shard if shard in (None, "replicated") else self.constant(model, shard)

    def _requests_on(self, batch, dep):
        """Requests whose state one device holds (per_device), else all of them."""
        return dep.requests_per_device(batch) if dep.per_device else batch

    def q_kv_bytes_per_token(self, model, args):
        fmt = self.format_of(args)
        stores = self._stores(args.name("component") or ("kv" if self._has_tag("kv") else None), args.loc)
        expr = self._request_state(model, model.states, fmt, stores, self.deployment(args), args.loc)
        slope = (expr.xreplace({H: FAR + SPAN}) - expr.xreplace({H: FAR})) / SPAN
        # the slope of a state that grows by floor(H/r) steps is exact at a multiple
        # of every ratio (FAR, SPAN); it is already a rational, nothing to guess
        return Quantity(sp.simplify(slope) if not slope.is_Rational else slope, combine(BYTES, TOKENS, -1))

    def _has_tag(self, tag):
        return any(tag in s.tags for s in self.spec.stores.values())

    def q_state_bytes(self, model, args):
        if args.raw("allocator") is not None:     # the pages an engine's allocator holds (compiler/query/allocator.py)
            from . import allocator

            return allocator.state_bytes(self, model, args)
        length, batch = args.scenario("H"), args.scenario("B", 1)
        ext = args.check_context(model, length)
        fmt = self.format_of(args)
        dep = self.deployment(args)
        expr = self._request_state(model, model.states, fmt, self._stores(args.name("component"), args.loc), dep, args.loc)
        return Quantity(self._requests_on(batch, dep) * at_length(expr, length), BYTES, ext)

    def q_decode_read_bytes(self, model, args):
        length, batch = args.scenario("H"), args.scenario("B", 1)
        ext = args.check_context(model, length)   # a snapshot read at length H, like state_bytes
        fmt = self.format_of(args)
        component = args.name("component")
        dep = self.deployment(args)
        total = sp.Integer(0)
        if component in (None, "weights", "lookup"):
            shared, rows = self._weight_reads(model, fmt, batch, True, dep, args.loc)
            total += {None: shared + rows, "weights": shared, "lookup": rows}[component].xreplace({H: length})
        if component not in ("weights", "lookup"):
            stores = self._stores(component, args.loc)
            reads = self._request_state(model, model.reads, fmt, stores, dep, args.loc)
            total += self._requests_on(batch, dep) * at_length(reads, length)
        return Quantity(total, BYTES, ext)

    def q_decode_write_bytes(self, model, args):
        """What the step that takes the context from H to H+1 tokens writes: the
        spec's `writes:` declarations (ring buffers overwrite, recurrent states are
        rewritten whole); a spec that declares none writes what its state grows by."""
        length, batch = args.scenario("H"), args.scenario("B", 1)
        ext = args.check_context(model, length + 1)
        fmt = self.format_of(args)
        stores = self._stores(args.name("component"), args.loc)
        if model.writes:
            per_step = self._state_expr(model, model.writes, fmt, stores).xreplace({H: length})
        else:
            state = self._state_expr(model, model.states, fmt, stores)
            per_step = state.xreplace({H: length + 1}) - state.xreplace({H: length})
        return Quantity(batch * per_step, BYTES, ext)

    def q_request_read_bytes(self, model, args):
        batch, cached, new, gen = self._call_scenario(args, need_g=True)
        ext = args.check_context(model, cached + new + gen - 1)
        fmt = self.format_of(args)
        per_step = self._state_expr(model, model.reads, fmt, self._stores(args.name("component"), args.loc))
        lo, hi = cached + new, cached + new + gen - 1
        total = range_sum(settle_conditions(per_step.xreplace({H: L_SYMBOL}), L_SYMBOL, lo, hi), L_SYMBOL, lo, hi)
        return Quantity(batch * total, BYTES, ext)
