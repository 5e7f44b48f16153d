"""Device queries: the facts of a datasheet in specs/hardware/."""

from __future__ import annotations

import sympy as sp

from ..dsl.errors import SpecError
from ..dsl.units import BYTES, dims_name
from .query_base import Quantity
from ..dsl.parser import parse_quantity
from ..dsl.units import unit_of_terms
from ..dsl.yamlload import load_yaml_file
from .query_base import _BYTE_RATE, _FLOP_RATE


class DeviceQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def _device_field(self, device, field: str, dims, loc, example: str):
        """A device fact from specs/hardware/<device>.yaml: memory, flops (peak FLOP/s),
        bandwidth (memory bytes/s), with its unit checked."""
        path = self._hardware_path(device, loc)
        hw = load_yaml_file(path)
        if not hasattr(hw, "get") or field not in hw:
            raise SpecError(f"device file {path} has no '{field}:'", getattr(hw, "loc", None),
                            expected=f"{field}: {example}")
        value_q = parse_quantity(hw[field])
        value_unit = unit_of_terms(value_q.numerator, value_q.denominator)
        if value_unit.dims != dims:
            raise SpecError(f"device {field} must be in {dims_name(dims)}", hw[field].loc, expected=f"e.g. {example}")
        return sp.Rational(value_q.value * value_unit.factor)

    def _device_memory(self, device, loc):
        return self._device_field(device, "memory", BYTES, loc, "24 GB")

    def q_device_memory(self, model, a):
        return Quantity(self._device_memory(a.name("device", required=True), a.loc), BYTES)

    def q_device_flops(self, model, a):
        return Quantity(self._device_field(a.name("device", required=True), "flops", _FLOP_RATE, a.loc,
                                           "312 TFLOPs/s"), _FLOP_RATE)

    def q_device_bandwidth(self, model, a):
        return Quantity(self._device_field(a.name("device", required=True), "bandwidth", _BYTE_RATE, a.loc,
                                           "2 TB/s"), _BYTE_RATE)
