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

    def _call_scenario(self, args, need_g=False):
        batch, cached, new = args.scenario("B", 1), args.scenario("S", 0), args.scenario("P")
        if isinstance(new, sp.Integer) and new < 1:
            raise SpecError("P must be at least 1 (a call adds at least one token)", args.loc, expected="P >= 1")
        gen = args.scenario("G") if need_g else None
        if isinstance(gen, sp.Integer) and gen < 1:
            raise SpecError("G must be at least 1", args.loc, expected="G >= 1")
        return batch, cached, new, gen

    def q_flops(self, model, args, what="flops"):
        batch, cached, new, _ = self._call_scenario(args)
        ext = args.check_context(model, cached + new)
        total = self._sum(model, what, args.filters(), args.loc)
        return Quantity(total.xreplace({B: batch, S: cached, P: new}), FLOPS, ext)

    def q_scalar_work(self, model, args):
        return self.q_flops(model, args, "scalar")

    def q_request_flops(self, model, args):
        batch, cached, new, gen = self._call_scenario(args, need_g=True)
        ext = args.check_context(model, cached + new + gen - 1)
        total = self._sum(model, "flops", args.filters(), args.loc)
        prefill = total.xreplace({B: batch, S: cached, P: new})
        step = total.xreplace({P: sp.Integer(1), B: batch}).xreplace({S: L_SYMBOL})
        lo, hi = cached + new, cached + new + gen - 1
        decode = range_sum(settle_conditions(step, L_SYMBOL, lo, hi), L_SYMBOL, lo, hi)
        return Quantity(prefill + decode, FLOPS, ext)

    def q_pairs(self, model, args):
        batch, cached, new, _ = self._call_scenario(args)
        return Quantity(batch * (new * cached + new * (new + 1) / 2), PAIRS)

    def q_rows(self, model, args):
        batch, cached, new, _ = self._call_scenario(args)
        ext = args.check_context(model, cached + new)
        filters = args.filters()
        if "op" not in filters:
            raise SpecError("rows() needs op=", args.loc, expected="rows(P=8192, op=q) or rows(P=8192, op=router, layer=30)")
        found = {op.rows.xreplace({B: batch, S: cached, P: new}) for op in self._ops(model, filters, args.loc)}
        if len(found) != 1:
            raise SpecError(f"op '{filters['op']}' stands for ops with different row counts", args.loc,
                            expected="layer= (or a longer op path) to pick one")
        return Quantity(found.pop(), NONE, ext)
