"""Capacity queries: how many requests fit (b_max) and how long a context fits (h_max)."""

from __future__ import annotations

import sympy as sp

from ..dsl.errors import SpecError
from ..dsl.units import BYTES, NONE
from .query_base import Quantity, _Args
from .symbols import H


class CapacityQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def q_b_max(self, model, a):
        device = a.name("device", required=True)
        a.used.add("H")
        memory = self._device_memory(device, a.loc)
        workspace = a.quantity("workspace", BYTES, sp.Integer(0))
        fmt = self._format(a.name("format"), a.loc)
        weights = self.q_weight_bytes(model, _Args({"format": fmt}, a.loc, self, {})).value
        state = self.q_state_bytes(model, _Args({"H": a.raw("H"), "format": fmt, "extrapolate": a.raw("extrapolate")},
                                                a.loc, self, a.evaluators))
        if state.value == 0:
            raise SpecError(f"{self.spec.model} keeps no per-request state, so b_max has no bound", a.loc,
                            expected="a spec that declares state stores (state: in its stack)")
        free = memory - weights - workspace
        return Quantity(sp.Max(0, sp.floor(free / state.value)), NONE, state.extrapolated)
