"""Memory queries: parameters and weight bytes (and the weights a decode step reads)."""

from __future__ import annotations

import sympy as sp

from ..dsl.errors import SpecError, did_you_mean
from ..dsl.units import BYTES, PARAMS
from .query_base import Quantity
from .symbols import B, H, P, S


class MemoryQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def q_params(self, model, a):
        filters = a.filters()
        return Quantity(self._sum_params(model, filters, a.loc), PARAMS)

    def _sum_params(self, model, filters, loc):
        group = filters.pop("group", None)
        per_layer = "layer" in filters
        key = (id(model), "params", group)
        if key not in self._sums:
            self._sums[key] = {op.id: op.params(group) for op in model.ops}
        params = self._sums[key]
        total = sp.Add(*[params[op.id] * (1 if per_layer else op.mult) for op in self._ops(model, filters, loc)])
        if group is not None and total == 0 and group not in {w.group for o in model.ops for w in o.weights}:
            known = {w.group for o in model.ops for w in o.weights} | {"embedding_head", "attention_projection",
                                                                       "dense_shared_ffn", "routed_experts", "engram", "other"}
            if group not in known:
                raise SpecError(f"unknown parameter group '{group}'", loc, expected=did_you_mean(group, known))
        return total

    def q_weight_bytes(self, model, a):
        fmt = self._format(a.name("format"), a.loc)
        group = a.name("group")
        total = sp.Integer(0)
        for op in model.ops:
            for w in op.weights:
                if group is None or w.group == group:
                    total += op.mult * w.params * self._bytes_per_param(model, fmt, w.group)
        return Quantity(total, BYTES)

    def _weight_reads(self, model, fmt, batch, lookups: bool):
        shared, rows_read = sp.Integer(0), sp.Integer(0)
        decode = {B: batch, S: H, P: sp.Integer(1)}
        for op in model.ops:
            for w in op.weights:
                bpp = self._bytes_per_param(model, fmt, w.group)
                if op.lookup:
                    rows_read += op.mult * op.lookup_rows.xreplace(decode) * w.shape[-1] * bpp
                elif op.experts != 1:
                    touched = sp.Min(op.experts, op.rows.xreplace(decode))
                    shared += op.mult * w.params / op.experts * touched * bpp
                else:
                    shared += op.mult * w.params * bpp
        return shared, rows_read

    def q_weight_read_bytes(self, model, a):
        batch = a.scenario("B", 1)
        shared, _ = self._weight_reads(model, self._format(a.name("format"), a.loc), batch, False)
        return Quantity(shared, BYTES)
