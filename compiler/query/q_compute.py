"""Compute queries: matrix FLOPs and scalar work of a call, of a request, pairs and rows."""

from __future__ import annotations

import sympy as sp

from ...dsl.errors import SpecError
from ...dsl.units import FLOPS, NONE
from .query_base import L_SYMBOL, PAIRS, Quantity, settle_conditions
from ..schema.patterns import range_sum
from ..schema.symbols import B, G, P, S


class ComputeQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def _call_scenario(self, a, need_g=False):
        batch, cached, new = a.scenario("B", 1), a.scenario("S", 0), a.scenario("P")
        if isinstance(new, sp.Integer) and new < 1:
            raise SpecError("P must be at least 1 (a call adds at least one token)", a.loc, expected="P >= 1")
        gen = a.scenario("G") if need_g else None
        if isinstance(gen, sp.Integer) and gen < 1:
            raise SpecError("G must be at least 1", a.loc, expected="G >= 1")
        return batch, cached, new, gen

    def q_flops(self, model, a, what="flops"):
        batch, cached, new, _ = self._call_scenario(a)
        ext = a.check_context(model, cached + new)
        total = self._sum(model, what, a.filters(), a.loc)
        return Quantity(total.xreplace({B: batch, S: cached, P: new}), FLOPS, ext)

    def q_scalar_work(self, model, a):
        return self.q_flops(model, a, "scalar")

    def q_request_flops(self, model, a):
        batch, cached, new, gen = self._call_scenario(a, need_g=True)
        ext = a.check_context(model, cached + new + gen - 1)
        total = self._sum(model, "flops", a.filters(), a.loc)
        prefill = total.xreplace({B: batch, S: cached, P: new})
        step = total.xreplace({P: sp.Integer(1), B: batch}).xreplace({S: L_SYMBOL})
        lo, hi = cached + new, cached + new + gen - 1
        decode = range_sum(settle_conditions(step, L_SYMBOL, lo, hi), L_SYMBOL, lo, hi)
        return Quantity(prefill + decode, FLOPS, ext)

    def q_pairs(self, model, a):
        batch, cached, new, _ = self._call_scenario(a)
        return Quantity(batch * (new * cached + new * (new + 1) / 2), PAIRS)

    def q_rows(self, model, a):
        batch, cached, new, _ = self._call_scenario(a)
        ext = a.check_context(model, cached + new)
        filters = a.filters()
        if "op" not in filters:
            raise SpecError("rows() needs op=", a.loc, expected="rows(P=8192, op=q) or rows(P=8192, op=router, layer=30)")
        found = {op.rows.xreplace({B: batch, S: cached, P: new}) for op in self._ops(model, filters, a.loc)}
        if len(found) != 1:
            raise SpecError(f"op '{filters['op']}' stands for ops with different row counts", a.loc,
                            expected="layer= (or a longer op path) to pick one")
        return Quantity(found.pop(), NONE, ext)
