"""Device queries: the facts of a datasheet in specs/hardware/.

A device file gives `memory:` in bytes as the device reports them (nvidia-smi /
rocm-smi), `bandwidth:` (memory, decimal B/s), `flops:` a table of dense peak matrix
throughput per data type (bf16, fp16, fp8, int8, fp4, tf32, fp32) and its links:
`scale_up_link:` per direction (NVLink / Infinity Fabric / ICI; a ring collective sends
and receives at once, so each direction carries half of the datasheet's both-ways
figure, which older files give as `link:` and which is read as twice the per-direction
rate), `scale_out_link:` per GPU per direction (the node's NIC), `gpus_per_node:`,
`collective_latency:` (seconds per collective, one figure or one per kind of
compiler/deploy/collectives.py) and optionally `scale_out_latency:`, `host_link:` (PCIe, both
directions added) and `measured:` achievable rates (flops per data type, bandwidth) for
efficiency=measured. `sources:` names where each link figure comes from. A fact the
datasheet does not confirm is simply absent.

A claim whose source assumes a different figure passes it explicitly: memory=,
bandwidth=, flops= (and link_bandwidth=, scale_out_bandwidth=, latency=) override the
datasheet in that one query, e.g. `b_max(device=rtx_4090, memory=24 GB, H=8192)` for a
chapter that takes 24×10⁹ B.

The data type of a rate: dtype= when given, else bf16, or fp16 on a device that
has no bf16 rate (Turing, T4): the 16-bit tensor rate LLM inference runs at."""

from __future__ import annotations

import sympy as sp

from ...dsl.errors import SpecError, did_you_mean
from ...dsl.parser import parse_quantity
from ...dsl.units import BYTES, NONE, SECONDS, dims_name, unit_of_terms
from ...dsl.yamlload import load_yaml_file
from ..deploy.collectives import KINDS, Links
from .query_base import BYTE_RATE, FLOP_RATE, Quantity

_DEFAULT_DTYPES = ("bf16", "fp16")
_LINKS = ("scale_up", "nvlink", "device", "scale_out", "host")


class DeviceQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def _device_file(self, device, loc):
        cache = self.__dict__.setdefault("_device_files", {})
        if device not in cache:
            path = self._hardware_path(device, loc)
            cache[device] = (path, load_yaml_file(path))
        return cache[device]

    def _device_value(self, path, node, dims, example):
        value_q = parse_quantity(node)
        value_unit = unit_of_terms(value_q.numerator, value_q.denominator)
        if value_unit.dims != dims:
            raise SpecError(f"a device's {example.split()[0]} must be in {dims_name(dims)}", node.loc,
                            expected=f"e.g. {example}")
        return sp.Rational(value_q.value * value_unit.factor)

    def _device_field(self, device, field: str, dims, loc, example: str, override: str | None = None):
        """A fact of specs/hardware/<device>.yaml with its unit checked."""
        path, hw = self._device_file(device, loc)
        if not hasattr(hw, "get") or hw.get(field) is None:
            raise SpecError(f"device '{device}' ({path.name}) gives no '{field}:'", loc,
                            expected=f"{field}: {example} in {path}, or pass {override or field}= in the query")
        return self._device_value(path, hw[field], dims, f"{field} {example}")

    def _device_rate(self, device, dtype, loc):
        """Peak dense FLOP/s of the device for a data type (see the module doc for the default)."""
        path, hw = self._device_file(device, loc)
        table = hw.get("flops") if hasattr(hw, "get") else None
        if table is None:
            raise SpecError(f"device '{device}' ({path.name}) gives no 'flops:'", loc,
                            expected="flops: {bf16: 312 TFLOPs/s, ...}, or pass flops= in the query")
        if not hasattr(table, "items"):      # a single figure (the type is not said)
            return self._device_value(path, table, FLOP_RATE, "flops 312 TFLOPs/s")
        if dtype is None:
            dtype = next((t for t in _DEFAULT_DTYPES if t in table), None)
            if dtype is None:
                raise SpecError(f"device '{device}' has no bf16 or fp16 rate", loc,
                                expected="dtype= one of " + ", ".join(table))
        if dtype not in table:
            raise SpecError(f"device '{device}' gives no {dtype} rate", loc,
                            expected=did_you_mean(dtype, list(table)) + f" (datasheet: {path.name})")
        return self._device_value(path, table[dtype], FLOP_RATE, "flops 312 TFLOPs/s")

    # values a query may pass instead of the datasheet's (a document's assumption)
    def _memory_of(self, args, device):
        value = args.quantity("memory", BYTES, None)
        return value if value is not None else self._device_field(device, "memory", BYTES, args.loc, "24 GB")

    def _bandwidth_of(self, args, device):
        value = args.quantity("bandwidth", BYTE_RATE, None)
        return value if value is not None else self._device_field(device, "bandwidth", BYTE_RATE, args.loc, "2 TB/s")

    def _flops_of(self, args, device, dtype=None):
        value = args.quantity("flops", FLOP_RATE, None)
        return value if value is not None else self._device_rate(device, dtype or args.name("dtype"), args.loc)

    # efficiency=peak (the datasheet, default) or measured (the device file's `measured:` rates,
    # each with its source); mfu= and mbu= scale either
    def _efficiency(self, args):
        which = args.name("efficiency") or "peak"
        if which not in ("peak", "measured"):
            raise SpecError(f"no efficiency '{which}'", args.node_loc("efficiency"),
                            expected="efficiency=peak (the datasheet) or efficiency=measured (the device's measured rates)")
        return which

    def _measured(self, device, key, loc):
        path, hw = self._device_file(device, loc)
        table = hw.get("measured") if hasattr(hw, "get") else None
        if table is None or not hasattr(table, "get") or table.get(key) is None:
            raise SpecError(f"device '{device}' ({path.name}) gives no measured {key}", loc,
                            expected=f"measured: {{{key}: ..., source: ...}} in {path.name}, or efficiency=peak")
        return path, table[key]

    def _peak_of(self, args, device, dtype=None):
        """The FLOP/s a time query applies: flops=, else the measured or datasheet rate of the
        math type (compute=/dtype=, or the weight scheme's)."""
        if self._efficiency(args) == "peak" or args.raw("flops") is not None:
            return self._flops_of(args, device, dtype)
        path, table = self._measured(device, "flops", args.loc)
        dtype = dtype or args.name("dtype")
        if dtype is None:
            dtype = next((t for t in _DEFAULT_DTYPES if t in table), None)
        if dtype not in table:
            raise SpecError(f"device '{device}' gives no measured {dtype} rate", args.loc,
                            expected="dtype= one of " + ", ".join(table) + ", or efficiency=peak")
        return self._device_value(path, table[dtype], FLOP_RATE, "flops 788 TFLOPs/s")

    def _memory_rate_of(self, args, device):
        """The memory bandwidth a time query applies: bandwidth=, else the measured or datasheet rate."""
        if self._efficiency(args) == "peak" or args.raw("bandwidth") is not None:
            return self._bandwidth_of(args, device)
        path, node = self._measured(device, "bandwidth", args.loc)
        return self._device_value(path, node, BYTE_RATE, "bandwidth 4.3 TB/s")

    def _optional_field(self, device, field, dims, loc, example):
        path, hw = self._device_file(device, loc)
        if not hasattr(hw, "get") or hw.get(field) is None:
            return None
        return self._device_value(path, hw[field], dims, f"{field} {example}")

    def _scale_up_of(self, device, loc):
        """The per-direction scale-up rate: scale_up_link:, else half of a legacy `link:`
        (which device files give as both directions added), else None."""
        value = self._optional_field(device, "scale_up_link", BYTE_RATE, loc, "450 GB/s")
        if value is None:
            legacy = self._optional_field(device, "link", BYTE_RATE, loc, "900 GB/s")
            value = legacy / 2 if legacy is not None else None
        return value

    def _latencies(self, device, field, loc) -> dict:
        """kind -> seconds from a device's `collective_latency:` (one figure for every kind, or
        a map of kinds) or `scale_out_latency:`; absent: {} (no latency term)."""
        path, hw = self._device_file(device, loc)
        node = hw.get(field) if hasattr(hw, "get") else None
        if node is None:
            return {}
        if hasattr(node, "items"):
            out = {}
            for kind, value in node.items():
                if str(kind) not in KINDS:
                    raise SpecError(f"no collective kind '{kind}'", getattr(value, "loc", None) or node.loc,
                                    expected=did_you_mean(str(kind), KINDS))
                out[str(kind)] = self._device_value(path, value, SECONDS, f"{field} 3.6 us")
            return out
        value = self._device_value(path, node, SECONDS, f"{field} 3.6 us")
        return {kind: value for kind in KINDS}

    def links_of(self, args, device) -> Links:
        """The deployment's links: the device file's, with the query's overrides
        (link_bandwidth= the scale-up rate, scale_out_bandwidth=, latency= every collective's)."""
        up = args.quantity("link_bandwidth", BYTE_RATE, None)
        out = args.quantity("scale_out_bandwidth", BYTE_RATE, None)
        latency = args.quantity("latency", SECONDS, None)
        up = up if up is not None else self._scale_up_of(device, args.loc)
        out = out if out is not None else self._optional_field(device, "scale_out_link", BYTE_RATE, args.loc,
                                                               "50 GB/s")
        gpn = self._optional_field(device, "gpus_per_node", NONE, args.loc, "8")
        if latency is not None:
            lat = {kind: latency for kind in KINDS}
            out_lat = lat
        else:
            lat = self._latencies(device, "collective_latency", args.loc)
            out_lat = self._latencies(device, "scale_out_latency", args.loc)
        return Links(up, out, int(gpn) if gpn is not None else None, lat, out_lat)

    def _device_memory(self, device, loc):
        return self._device_field(device, "memory", BYTES, loc, "24 GB")

    def q_device_memory(self, model, args):
        return Quantity(self._memory_of(args, args.name("device", required=True)), BYTES)

    def q_device_flops(self, model, args):
        return Quantity(self._flops_of(args, args.name("device", required=True)), FLOP_RATE)

    def q_device_bandwidth(self, model, args):
        return Quantity(self._bandwidth_of(args, args.name("device", required=True)), BYTE_RATE)

    def q_device_link(self, model, args):
        """Per direction: the scale-up link (default; nvlink and device are its old names),
        the scale-out NIC per GPU, or the host link (PCIe: half the datasheet's both-ways figure)."""
        device = args.name("device", required=True)
        which = args.name("link") or "scale_up"
        if which not in _LINKS:
            raise SpecError(f"no link '{which}'", args.loc, expected=did_you_mean(which, _LINKS))
        if which == "scale_out":
            value = self._device_field(device, "scale_out_link", BYTE_RATE, args.loc, "50 GB/s")
        elif which == "host":
            value = self._device_field(device, "host_link", BYTE_RATE, args.loc, "128 GB/s") / 2
        else:
            value = self._scale_up_of(device, args.loc)
            if value is None:
                path, _ = self._device_file(device, args.loc)
                raise SpecError(f"device '{device}' ({path.name}) gives no 'scale_up_link:' (nor a legacy 'link:')",
                                args.loc, expected=f"scale_up_link: 450 GB/s (per direction) in {path}")
        return Quantity(value, BYTE_RATE)
