"""Time queries: a roofline estimate of one call on a deployment, and the serving
figures built from it (ttft, tpot, throughput).

Seconds are approximate by nature (peak rates, no kernel overheads), but every
input is exact: FLOPs and bytes are the engine's closed forms, the rates are the
datasheet's, and the result is an exact rational number of seconds.

The convention, per device of one model instance (tp·pp·ep devices; dp instances
run side by side):
  * each op's time is max(FLOPs / (peak · mfu), bytes / (bandwidth · mbu)) where
    - FLOPs are its matrix FLOPs in the call, times the device's share (sharding.py);
    - bytes are the weight bytes it reads (every weight once; routed experts only those
      the rows can touch; lookup tables the rows gathered) plus the state bytes of the
      stores its block declares: a call of P new tokens after S cached reads the `reads:`
      entries at H = S and writes what the state grows by from S to S + P (a decode step
      with `writes:` declarations writes those). A store's traffic is attributed to the
      first attention op (attend/score) of the block that declares it, else it is a row
      of its own with no FLOPs;
    - activations=true adds each op's input and output tensors (act_bytes per element);
  * peak is the device's rate for dtype= (default bf16, fp16 where it has no bf16);
  * ops are summed over the whole model (a call passes every pipeline stage in turn);
  * communication (comm_bytes' collectives, every layer's, and each pipeline boundary)
    takes bytes / link bandwidth (the device file's `link:`, both directions added) and
    adds to the compute time, or overlaps it (overlap=true: max of the two).
ttft(P, B) is the prefill call (S = 0); tpot(H, B) one decode step at context H
(S = H, P = 1: it reads H entries, as decode_read_bytes(H) does); throughput(H, B) =
B / tpot(H, B) tokens per second of the whole deployment (dp instances in parallel)."""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..dsl.errors import SpecError
from ..dsl.units import SECONDS, TOKENS, combine
from .query_base import Quantity
from .sharding import Deployment, store_fraction, work_fraction
from .symbols import B, H, P, S, substitute

_ATTENTION_KINDS = ("attend", "score")


@dataclass
class RooflineRow:
    name: str            # op name, or '<block> <store> state' for traffic with no attention op
    kind: str
    flops: sp.Expr       # on one device, all instances of the op
    bytes: sp.Expr
    compute_s: sp.Expr
    memory_s: sp.Expr

    @property
    def time(self):
        return sp.Max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        if self.flops == 0 and self.bytes == 0:
            return "—"
        return "compute" if self.compute_s >= self.memory_s else "memory"

    @property
    def intensity(self):
        return self.flops / self.bytes if self.bytes != 0 else None


def _flag(a, key) -> bool:
    a.used.add(key)
    value = a.raw(key)
    if value in (None, "false", sp.Integer(0)):
        return False
    if value in ("true", sp.Integer(1)):
        return True
    raise SpecError(f"'{key}=' takes true or false, got {value}", a._node_loc(key), expected=f"{key}=true")


def _fraction(a, key):
    a.used.add(key)
    value = a.raw(key)
    if value is None:
        return sp.Integer(1)
    if not (isinstance(value, sp.Rational) and 0 < value <= 1):
        raise SpecError(f"'{key}=' takes a fraction of the peak in (0, 1], got {value}", a._node_loc(key),
                        expected=f"e.g. {key}=0.5")
    return value


class TimeQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def roofline(self, model, a, batch, cached, new):
        """The rows of one call (per device) and the communication seconds."""
        device = a.name("device", required=True)
        dep = self._deployment(a, ("tp", "pp", "ep", "dp"))
        dep = Deployment(dep.tp, dep.pp, dep.ep, dep.dp, per_device=True)
        fmt = self._format_of(a)
        dtype, self.last_compute = self._compute_dtype(a, fmt, device)
        peak = self._flops_of(a, device, dtype) * _fraction(a, "mfu")
        bandwidth = self._bandwidth_of(a, device) * _fraction(a, "mbu")
        with_activations = _flag(a, "activations")
        act_bytes = self._act_bytes(a)
        instance_b = sp.ceiling(batch / dep.dp) if dep.dp > 1 else batch
        scenario = {B: instance_b, S: cached, P: new}

        # weights each op reads (per device)
        per_op_reads = {op_id: mult * (shared + rows_read) for _, _, mult, shared, rows_read, op_id
                        in self._weight_read_terms(model, fmt, instance_b, dep, a.loc, scenario)}
        # state traffic per store use, attributed to the first attention op of its block
        state = self._state_traffic(model, fmt, dep, batch, cached, new, a.loc)
        attention_of = {}
        for op in model.ops:
            if op.kind in _ATTENTION_KINDS:
                for use_key in state:
                    block = use_key[0]
                    if use_key not in attention_of and (op.name.startswith(block + ".") or op.name == block):
                        attention_of[use_key] = op.id
        extra = {}
        for use_key, amount in state.items():
            if use_key in attention_of:
                extra[attention_of[use_key]] = extra.get(attention_of[use_key], 0) + amount
        rows = []
        for op in model.ops:
            flops = op.mult * substitute(op.flops, scenario) * work_fraction(op, dep, a.loc)
            traffic = per_op_reads.get(op.id, sp.Integer(0)) + extra.get(op.id, 0)
            if with_activations:
                tensors = [t for _, t in op.inputs] + [t for _, t in op.outputs]
                traffic += op.mult * sp.Add(*[substitute(t.rows, scenario) * t.width for t in tensors]) \
                    * act_bytes * work_fraction(op, dep, a.loc)
            traffic = sp.nsimplify(traffic) if not sp.sympify(traffic).is_Rational else sp.sympify(traffic)
            if flops == 0 and traffic == 0:
                continue
            rows.append(RooflineRow(op.name, op.kind, flops, traffic, flops / peak, traffic / bandwidth))
        for use_key, amount in state.items():
            if use_key not in attention_of and amount != 0:
                rows.append(RooflineRow(f"{use_key[0]} {use_key[1]} state", "state", sp.Integer(0), amount,
                                        sp.Integer(0), amount / bandwidth))
        comm = self._comm_latency_bytes(model, dep, scenario, act_bytes, a.loc)
        comm_s = comm / self._link_of(a, device) if comm != 0 else sp.Integer(0)
        return rows, comm_s, _flag(a, "overlap")

    def _compute_dtype(self, a, fmt, device):
        """(math type, note) of a call. compute= (or dtype=) as given; else a weight scheme's:
        weights and activations both quantized (FP8, INT8, NVFP4) run at that type's peak,
        weight-only schemes (INT4, MXFP4) dequantize into BF16 math; a device whose datasheet
        gives no rate for the scheme's type runs it in its default type. The note is what
        the output prints ("" without a scheme or compute=, so plain outputs are unchanged)."""
        given = a.name("compute") or a.name("dtype")
        if a.name("compute") and a.name("dtype") and a.name("compute") != a.name("dtype"):
            raise SpecError("compute= and dtype= disagree", a.loc, expected="one of them")
        if given:
            return given, (f"compute {given}" if a.name("compute") else "")
        scheme = getattr(fmt, "weights", None)
        if scheme is None or a.raw("flops") is not None:
            return None, ""
        path, hw = self._device_file(device, a.loc)
        rates = hw.get("flops") if hasattr(hw, "get") else None
        if scheme.compute in ("bf16", "fp16") or not hasattr(rates, "items") or scheme.compute not in rates:
            fallback = next((t for t in ("bf16", "fp16") if hasattr(rates, "items") and t in rates), None)
            why = "" if scheme.compute in ("bf16", "fp16") else f"; {path.stem} has no {scheme.compute} rate"
            return fallback, f"compute {fallback or 'default'}: weights={scheme.name}{why}"
        return scheme.compute, f"compute {scheme.compute}: weights={scheme.name}"

    def _state_traffic(self, model, fmt, dep, batch, cached, new, loc) -> dict:
        """(block, store) -> state bytes one device reads and writes in the call."""
        on_device = dep.requests_per_device(batch)
        out = {}

        def add(use, amount):
            frac = store_fraction(self._store_units(model, use.store), dep, use.store, loc)
            key = (use.block or use.segment, use.store)
            out[key] = out.get(key, 0) + on_device * use.mult * amount * self._store_bytes(model, use.store, fmt) * frac

        for use in model.reads:
            add(use, use.entries.xreplace({H: cached}))
        if new == 1 and model.writes:
            for use in model.writes:
                add(use, use.entries.xreplace({H: cached}))
        else:
            for use in model.states:
                add(use, use.entries.xreplace({H: cached + new}) - use.entries.xreplace({H: cached}))
        return out

    def _comm_latency_bytes(self, model, dep, scenario, act_bytes, loc):
        """Every collective of the call on one device, all stages in turn, and every pipeline send."""
        if (dep.tp, dep.pp, dep.ep) == (1, 1, 1):
            return sp.Integer(0)
        terms = self._comm_terms(model, dep, lambda e: substitute(e, scenario), act_bytes, loc)
        total = sp.Add(*[mult * amount for comp in ("tp", "ep") for _, _, mult, amount in terms[comp]])
        return total + sp.Add(*terms["pp"])

    def _call_seconds(self, model, a, batch, cached, new):
        rows, comm_s, overlap = self.roofline(model, a, batch, cached, new)
        # the rows behind the last time query, for `specc table --kind roofline`
        self.last_roofline = (rows, comm_s, overlap)
        compute = sp.Add(*[r.time for r in rows])
        return sp.Max(compute, comm_s) if overlap else compute + comm_s

    def q_call_time(self, model, a):
        batch, cached, new, _ = self._call_scenario(a)
        ext = a.check_context(model, cached + new)
        return Quantity(self._call_seconds(model, a, batch, cached, new), SECONDS, ext, self.last_compute)

    def q_ttft(self, model, a):
        batch, new = a.scenario("B", 1), a.scenario("P")
        if isinstance(new, sp.Integer) and new < 1:
            raise SpecError("P must be at least 1", a.loc, expected="P >= 1")
        ext = a.check_context(model, new)
        return Quantity(self._call_seconds(model, a, batch, sp.Integer(0), new), SECONDS, ext, self.last_compute)

    def q_tpot(self, model, a):
        length, batch = a.scenario("H"), a.scenario("B", 1)
        ext = a.check_context(model, length)   # the step reads H entries, like decode_read_bytes(H)
        return Quantity(self._call_seconds(model, a, batch, length, sp.Integer(1)), SECONDS, ext, self.last_compute)

    def q_throughput(self, model, a):
        length, batch = a.scenario("H"), a.scenario("B")
        if batch < 1:
            raise SpecError("throughput needs B >= 1", a.loc, expected="B=1 or more")
        ext = a.check_context(model, length)   # the step reads H entries, like decode_read_bytes(H)
        seconds = self._call_seconds(model, a, batch, length, sp.Integer(1))
        return Quantity(batch / seconds, combine(TOKENS, SECONDS, -1), ext, self.last_compute)

    def roofline_forms(self, choices: dict, fmt: str | None = None, tp: int = 1, pp: int = 1, ep: int = 1,
                       act_bytes=2, rows: bool = True) -> dict:
        """The device-free parts of roofline() for symbolic B, S, P, so that a program (the
        explorer) can apply any device's peak, bandwidth and link, and any mfu, mbu, itself:

          {"call": [(name, flops, bytes)], "step": [(name, flops, bytes)] or None, "comm": bytes}

        "call" are the rows of a call of P new tokens after S cached ones, "step" those of a
        decode step (P = 1) when they differ from "call" at P = 1 (a spec whose stores declare
        `writes:`), "comm" the communication bytes of one device (a call with P = 1 is "comm"
        at P = 1). A call then takes Σ_rows max(flops / (peak·mfu), bytes / (bandwidth·mbu))
        + comm / link seconds (max of the two sums with overlap=true), exactly what
        call_time/ttft/tpot compute. The forms are for one model instance (dp = 1); a
        deployment with dp instances is the same forms at B = ceil(B/dp): roofline() counts
        every row of an instance at ceil(B/dp), and the state traffic's ceil(B/(ep·dp))
        equals ceil(ceil(B/dp)/ep). rows=False answers "comm" alone (no "call", "step")."""
        from .query_base import _BYTE_RATE, _FLOP_RATE, _Args

        model = self.model(dict(choices))
        if not rows:
            dep = Deployment(tp, pp, ep, 1, per_device=True)
            return {"comm": self._comm_latency_bytes(model, dep, {B: B, S: S, P: P}, sp.Integer(act_bytes), None)}
        unit_rate = {"flops": Quantity(sp.Integer(1), _FLOP_RATE), "bandwidth": Quantity(sp.Integer(1), _BYTE_RATE),
                     "link_bandwidth": Quantity(sp.Integer(1), _BYTE_RATE)}
        values = {"device": "<rates given>", **unit_rate, "tp": sp.Integer(tp), "pp": sp.Integer(pp),
                  "ep": sp.Integer(ep), "act_bytes": sp.Integer(act_bytes) if act_bytes != 2 else None}
        if fmt is not None:
            values["format"] = fmt
        args = _Args({k: v for k, v in values.items() if v is not None}, None, self, {"symbolic_ok": True})
        # with rates of 1 FLOP/s, 1 B/s and 1 B/s, a row's seconds are its FLOPs and bytes
        call_rows, comm, _ = self.roofline(model, args, B, S, P)
        call = [(r.name, r.flops, r.bytes) for r in call_rows]
        step = None
        if model.writes:            # a decode step writes the declared entries, not the growth
            step_rows, _, _ = self.roofline(model, args, B, S, sp.Integer(1))
            step = [(r.name, r.flops, r.bytes) for r in step_rows]
        return {"call": call, "step": step, "comm": comm}
