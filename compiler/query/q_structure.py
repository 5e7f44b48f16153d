"""Structure queries: how many layer instances contain an op (dim and dtype_bytes are special forms of the evaluator)."""

from __future__ import annotations

import sympy as sp

from ...dsl.errors import SpecError
from ...dsl.units import NONE
from .query_base import Quantity


class StructureQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def q_op_count(self, model, args):
        filters = args.filters()
        if "op" not in filters:
            raise SpecError("op_count() needs op=", args.loc, expected="op_count(op=router, stage=encoder)")
        per_layer = "layer" in filters
        return Quantity(sp.Integer(sum(1 if per_layer else o.mult for o in self._ops(model, filters, args.loc))), NONE)

