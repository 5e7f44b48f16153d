"""Time queries: a roofline estimate of one engine step on a deployment, and the serving
figures built from it (ttft, tpot, throughput).

Seconds are approximate by nature (peak rates, no kernel overheads), but every
input is exact: FLOPs and bytes are the engine's closed forms, the rates are the
datasheet's (or, with efficiency=measured, the device file's cited measurements), and
the result is an exact rational number of seconds.

The convention, on the busiest device of the deployment (compiler/deploy/sharding.py):
  * each op's time is max(FLOPs / (peak · mfu), bytes / (bandwidth · mbu)) where
    - FLOPs are its matrix FLOPs at its group's ceil(B/dp) requests (every request of the
      stage for routed experts), times the device's share;
    - bytes are the weight bytes it reads (every weight once; routed experts only those
      the rows can touch; lookup tables the rows gathered) plus the state bytes of the
      stores its block declares: a call of P new tokens after S cached reads the `reads:`
      entries at H = S and writes what the state grows by from S to S + P (a decode step
      with `writes:` declarations writes those). A store's traffic is attributed to the
      first attention op (attend/score) of the block that declares it, else it is a row
      of its own with no FLOPs;
    - activations=true adds each op's input and output tensors at the device's share
      (sharding.activation_placement; views are free), act_bytes per element;
  * peak is the device's rate for dtype= (default bf16, fp16 where it has no bf16);
  * ops are summed over the whole model (a call passes every pipeline stage in turn), and
    so are the collectives (q_deployment.py), each costing its latency plus its bytes over
    the per-direction rate of the link it crosses (collectives.py); they add to the compute
    time, or overlap it (overlap=true: max of the two);
  * one engine step may run several groups of rows (a prefill chunk beside decode rows):
    their FLOPs and traffic add, the weights are read once, the collectives carry both.
ttft(P, B, H) is one request's prefill, in chunks of max_num_batched_tokens − B tokens
(without a budget, one step), beside B requests decoding at context H; tpot(H, B) one
decode step at context H (S = H, P = 1); throughput(H, B) = B / tpot(H, B) tokens per
second of the whole deployment. A call of P tokens after S holds S + P tokens when it
ends (the context rule of every time query), and a deployment that does not fit gets no
time (q_capacity.check_fit) unless ignore_fit=true."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import sympy as sp

from ...dsl.errors import SpecError
from ...dsl.units import SECONDS, TOKENS, combine
from .query_base import Quantity
from ..deploy.collectives import bytes_moved, seconds as collective_seconds
from ..deploy.sharding import Deployment, activation_placement, store_fraction, work_fraction
from ..schema.symbols import B, P, S, at_length, substitute

_ATTENTION_KINDS = ("attend", "score")
_TIME_ARGS = {"device", "dtype", "format", "tp", "pp", "ep", "dp", "per_device", "mfu", "mbu", "overlap",
              "activations", "act_bytes", "flops", "bandwidth", "link_bandwidth", "scale_out_bandwidth", "latency",
              "memory", "workspace", "block", "ignore_fit", "efficiency", "max_num_batched_tokens"}


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


def step_seconds(compute, comm, overlap):
    """One engine step's seconds from its compute time and its collectives' time: they add, or
    with overlap=true the larger one sets the step (stated once for the engine and the explorer)."""
    return sp.Max(compute, comm) if overlap else compute + comm


def tokens_per_second(batch, seconds):
    """throughput's rule: each of the B requests gets one token per decode step."""
    return batch / seconds


def _flag(args, key) -> bool:
    args.used.add(key)
    value = args.raw(key)
    if value in (None, "false", sp.Integer(0)):
        return False
    if value in ("true", sp.Integer(1)):
        return True
    raise SpecError(f"'{key}=' takes true or false, got {value}", args.node_loc(key), expected=f"{key}=true")


def _fraction(args, key):
    args.used.add(key)
    value = args.raw(key)
    if value is None:
        return sp.Integer(1)
    if not (isinstance(value, sp.Rational) and 0 < value <= 1):
        raise SpecError(f"'{key}=' takes a fraction of the peak in (0, 1], got {value}", args.node_loc(key),
                        expected=f"e.g. {key}=0.5")
    return value


def _rational(value):
    """value with every float written as a rational (sympy's nsimplify). An expression in the
    scenario symbols without floats is that already: asking nsimplify costs it a failed integer
    test whose message prints the whole expression."""
    value = sp.sympify(value)
    if value.is_Rational or (value.free_symbols and not value.has(sp.Float)):
        return value
    return sp.nsimplify(value)


class TimeQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def roofline(self, model, args, batch, cached, new):
        """The rows of one call (the most loaded device) and the communication seconds."""
        return self.roofline_step(model, args, [(batch, cached, new)])

    def roofline_step(self, model, args, parts, with_comm=True):
        """The rows of one engine step that runs several groups of rows at once, parts =
        [(requests, cached, new), ...] (a prefill chunk beside decode rows): each op's FLOPs,
        state and activation traffic add over the parts, its weights are read once (routed
        experts: those the parts' rows together can touch), and each collective moves the
        parts' rows together at one latency."""
        device = args.name("device", required=True)
        dep = self.deployment(args, ("tp", "pp", "ep", "dp"))
        dep = Deployment(dep.tp, dep.pp, dep.ep, dep.dp, per_device=True)
        fmt = self.format_of(args)
        dtype, self.last_compute = self.compute_dtype(args, fmt, device)
        peak = self._peak_of(args, device, dtype) * _fraction(args, "mfu")
        bandwidth = self._memory_rate_of(args, device) * _fraction(args, "mbu")
        with_activations = _flag(args, "activations")
        act_bytes = self._act_bytes(args)
        scenarios = [{B: batch, S: cached, P: new} for batch, cached, new in parts]

        # weights each op reads (per device)
        per_op_reads = {op_id: mult * (shared + rows_read) for _, _, mult, shared, rows_read, op_id
                        in self._weight_read_terms(model, fmt, parts[0][0], dep, args.loc, scenarios)}
        # state traffic per store use, attributed to the first attention op of its block
        state = {}
        for batch, cached, new in parts:
            for key, amount in self._state_traffic(model, fmt, dep, batch, cached, new, args.loc).items():
                state[key] = state.get(key, 0) + amount
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
        def at(expr, where):
            return sp.Add(*[substitute(expr, {**sc, B: sc[B] if where == "stage" else dep.requests_per_device(sc[B])})
                            for sc in scenarios])

        def op_work() -> dict:
            """op id -> (FLOPs, activation bytes) on the device: the same at every format and knob."""
            placement = activation_placement(model, dep, args.loc) if with_activations else {}
            out = {}
            for op in model.ops:
                flops = op.mult * at(op.flops, "stage" if op.experts != 1 else "group") * work_fraction(op, dep, args.loc)
                moved = None
                if with_activations and op.kind != "view":
                    tensors = [(t, placement.get(t.producer, ("group", 1))) for _, t in op.inputs if t is not None] + \
                              [(t, placement[op.id]) for _, t in op.outputs]
                    moved = op.mult * sp.Add(*[at(t.rows, where) * t.width * share for t, (where, share) in tensors]) \
                        * act_bytes
                out[op.id] = (flops, moved)
            return out

        work = self.remembered(("step work", id(model), dep.tp, dep.pp, dep.ep, dep.dp,
                                tuple((sc[B], sc[S], sc[P]) for sc in scenarios), with_activations, act_bytes), op_work)
        rows = []
        for op in model.ops:
            flops, moved = work[op.id]
            traffic = per_op_reads.get(op.id, sp.Integer(0)) + extra.get(op.id, 0)
            if moved is not None:
                traffic += moved
            traffic = _rational(traffic)
            if flops == 0 and traffic == 0:
                continue
            rows.append(RooflineRow(op.name, op.kind, flops, traffic, flops / peak, traffic / bandwidth))
        for use_key, amount in state.items():
            if use_key not in attention_of and amount != 0:
                rows.append(RooflineRow(f"{use_key[0]} {use_key[1]} state", "state", sp.Integer(0), amount,
                                        sp.Integer(0), amount / bandwidth))
        comm_s = self._comm_seconds(model, args, device, dep, scenarios, act_bytes) if with_comm else sp.Integer(0)
        return rows, comm_s, _flag(args, "overlap")

    def _comm_seconds(self, model, args, device, dep, scenarios, act_bytes):
        """Every collective of the step, all stages in turn, and every pipeline send; the
        parts' rows travel together (sizes add, one latency)."""
        if (dep.tp, dep.pp, dep.dp) == (1, 1, 1):
            return sp.Integer(0)
        links = self.links_of(args, device)
        per_part = [self.call_collectives(model, dep, sc, act_bytes, args.loc, links.gpus_per_node) for sc in scenarios]
        colls = per_part[0]
        for other in per_part[1:]:
            colls = [dataclasses.replace(c, size=c.size + o.size) for c, o in zip(colls, other)]
        return sp.Add(*[c.mult * collective_seconds(c, links, args.loc) for c in colls])

    def compute_dtype(self, args, fmt, device):
        """(math type, note) of a call. compute= (or dtype=) as given; else a weight scheme's:
        weights and activations both quantized (FP8, INT8, NVFP4) run at that type's peak,
        weight-only schemes (INT4, MXFP4) dequantize into BF16 math; a device whose datasheet
        gives no rate for the scheme's type runs it in its default type. The note is what
        the output prints ("" without a scheme or compute=, so plain outputs are unchanged)."""
        given = args.name("compute") or args.name("dtype")
        if args.name("compute") and args.name("dtype") and args.name("compute") != args.name("dtype"):
            raise SpecError("compute= and dtype= disagree", args.loc, expected="one of them")
        if given:
            return given, (f"compute {given}" if args.name("compute") else "")
        scheme = getattr(fmt, "weights", None)
        if scheme is None or args.raw("flops") is not None:
            return None, ""
        path, hw = self._device_file(device, args.loc)
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
            frac = store_fraction(self.store_units(model, use.store), dep, use.store, loc)
            key = (use.block or use.segment, use.store)
            out[key] = out.get(key, 0) + on_device * use.mult * amount * self.store_bytes(model, use.store, fmt) * frac

        for use in model.reads:
            add(use, at_length(use.entries, cached))
        if new == 1 and model.writes:
            for use in model.writes:
                add(use, at_length(use.entries, cached))
        else:
            for use in model.states:
                add(use, at_length(use.entries, cached + new) - at_length(use.entries, cached))
        return out

    def _comm_latency_bytes(self, model, dep, scenario, act_bytes, loc):
        """The bytes of every collective of the call on one device, all stages in turn."""
        if (dep.tp, dep.pp, dep.dp) == (1, 1, 1):
            return sp.Integer(0)
        return sp.Add(*[c.mult * bytes_moved(c, None, loc)
                        for c in self.call_collectives(model, dep, scenario, act_bytes, loc)])

    def _call_seconds(self, model, args, batch, cached, new):
        return self._step_seconds(model, args, [(batch, cached, new)])

    def _step_seconds(self, model, args, parts):
        rows, comm_s, overlap = self.roofline_step(model, args, parts)
        # the rows behind the last time query, for `specc table --kind roofline`
        self.last_roofline = (rows, comm_s, overlap)
        return step_seconds(sp.Add(*[r.time for r in rows]), comm_s, overlap)

    # One context rule for every time query: a call of P new tokens after S cached ones holds
    # S + P tokens when it ends (a decode step at H is the call S = H, P = 1: H + 1 tokens);
    # beyond max_context it needs extrapolate=true, and the deployment must fit (check_fit).
    def _timed(self, model, args, batch, cached, new):
        args.used.update(_TIME_ARGS)        # an error below is about the scenario, not an unknown argument
        ext = args.check_context(model, cached + new)
        args.name("device", required=True)
        self.check_fit(model, args, batch, cached + new)
        return self._call_seconds(model, args, batch, cached, new), ext

    def q_call_time(self, model, args):
        batch, cached, new, _ = self._call_scenario(args)
        seconds, ext = self._timed(model, args, batch, cached, new)
        return Quantity(seconds, SECONDS, ext, note=self.last_compute)

    def q_ttft(self, model, args):
        """One request's time to first token: its prompt of P tokens prefilled in chunks of
        max_num_batched_tokens − ceil(B/dp) tokens (vLLM's chunked prefill: every step's token
        budget serves the running decode rows of the request's dp group first, the prompt's next
        chunk takes the rest; the whole prompt in one step without a budget), each step beside
        B other requests decoding at context H. ttft is the sum of those steps' times."""
        args.used.update(_TIME_ARGS)
        new, others = args.scenario("P"), args.scenario("B", 0)
        if isinstance(new, sp.Integer) and new < 1:
            raise SpecError("P must be at least 1", args.loc, expected="P >= 1")
        length = args.scenario("H") if others != 0 else sp.Integer(0)
        budget = args.raw("max_num_batched_tokens")
        if budget is not None and not (isinstance(budget, sp.Integer) and budget >= 1):
            raise SpecError(f"'max_num_batched_tokens=' takes a positive number of tokens, got {budget}",
                            args.node_loc("max_num_batched_tokens"), expected="max_num_batched_tokens=8192")
        context = new if others == 0 else sp.Max(new, length + 1)
        ext = args.check_context(model, new)
        if others != 0:
            ext = args.check_context(model, length + 1) or ext
        args.name("device", required=True)
        self.check_fit(model, args, others + 1, context)
        decode = [(others, length, sp.Integer(1))] if others != 0 else []
        if budget is None:
            seconds = self._step_seconds(model, args, [(sp.Integer(1), sp.Integer(0), new)] + decode)
            return Quantity(seconds, SECONDS, ext, note=self.last_compute)
        # each dp group schedules its own steps: the budget serves that group's decode rows
        rows_beside = self.deployment(args, ("tp", "pp", "ep", "dp")).requests_per_device(others)
        chunk = budget - rows_beside
        if chunk < 1:
            raise SpecError(f"max_num_batched_tokens={budget} leaves no room for a prefill chunk beside "
                            f"{rows_beside} decode rows", args.node_loc("max_num_batched_tokens"),
                            expected=f"max_num_batched_tokens > {rows_beside}, the decode rows of a dp group")
        if not isinstance(new, sp.Integer):
            raise SpecError("chunked prefill needs a concrete P", args.loc, expected="P=<integer>")
        total, done = sp.Integer(0), 0
        while done < new:
            step = min(chunk, new - done)
            total += self._step_seconds(model, args, [(sp.Integer(1), sp.Integer(done), sp.Integer(step))] + decode)
            done += step
        return Quantity(total, SECONDS, ext, note=self.last_compute)

    def q_tpot(self, model, args):
        length, batch = args.scenario("H"), args.scenario("B", 1)
        seconds, ext = self._timed(model, args, batch, length, sp.Integer(1))
        return Quantity(seconds, SECONDS, ext, note=self.last_compute)

    def q_throughput(self, model, args):
        length, batch = args.scenario("H"), args.scenario("B")
        if batch < 1:
            raise SpecError("throughput needs B >= 1", args.loc, expected="B=1 or more")
        seconds, ext = self._timed(model, args, batch, length, sp.Integer(1))
        return Quantity(tokens_per_second(batch, seconds), combine(TOKENS, SECONDS, -1), ext, note=self.last_compute)

    def roofline_forms(self, choices: dict, fmt: str | None = None, tp: int = 1, pp: int = 1, ep: int = 1,
                       act_bytes=2, rows: bool = True, dp: int | None = None) -> dict:
        """The device-free parts of roofline() for symbolic B, S, P, so that a program (the
        explorer) can apply any device's peak, bandwidth and link, and any mfu, mbu, itself:

          {"call": [(name, flops, bytes)], "step": [(name, flops, bytes)] or None, "comm": bytes,
           "collectives": count}

        "call" are the rows of a call of P new tokens after S cached ones, "step" those of a
        decode step (P = 1) when they differ from "call" at P = 1 (a spec whose stores declare
        `writes:`), "comm" the bytes of the call's collectives on one device and "collectives"
        how many it runs (each costs the device's collective latency; groups within one node).
        A call then takes Σ_rows max(flops / (peak·mfu), bytes / (bandwidth·mbu)) + comm / link
        + collectives · latency seconds (max of the two sums with overlap=true), what
        call_time/ttft/tpot compute when every group fits in a node. B counts the requests of
        the deployment (tp, pp, dp, ep); dp=None keeps the explorer's older reading of ep, ep
        attention-data-parallel ranks (dp = ep). rows=False answers "comm" and "collectives"
        alone (no "call", "step")."""
        from .query_base import BYTE_RATE, FLOP_RATE, QueryArgs

        dp = ep if dp is None else dp
        model = self.model(dict(choices))
        dep = Deployment(tp, pp, ep, dp, per_device=True).check(None)
        scenario = {B: B, S: S, P: P}
        colls = self.call_collectives(model, dep, scenario, sp.Integer(act_bytes), None) \
            if (tp, pp, dp) != (1, 1, 1) else []
        comm = {"comm": sp.Add(*[c.mult * bytes_moved(c, None, None) for c in colls]),
                "collectives": sum(c.mult for c in colls)}
        if not rows:
            return comm
        unit_rate = {"flops": Quantity(sp.Integer(1), FLOP_RATE), "bandwidth": Quantity(sp.Integer(1), BYTE_RATE)}
        values = {"device": "<rates given>", **unit_rate, "tp": sp.Integer(tp), "pp": sp.Integer(pp),
                  "ep": sp.Integer(ep), "dp": sp.Integer(dp),
                  "act_bytes": sp.Integer(act_bytes) if act_bytes != 2 else None}
        if fmt is not None:
            values["format"] = fmt
        args = QueryArgs({k: v for k, v in values.items() if v is not None}, None, self, {"symbolic_ok": True})
        # with rates of 1 FLOP/s and 1 B/s, a row's seconds are its FLOPs and bytes
        call_rows, _, _ = self.roofline_step(model, args, [(B, S, P)], with_comm=False)
        call = [(r.name, r.flops, r.bytes) for r in call_rows]
        step = None
        if model.writes:            # a decode step writes the declared entries, not the growth
            step_rows, _, _ = self.roofline_step(model, args, [(B, S, sp.Integer(1))], with_comm=False)
            step = [(r.name, r.flops, r.bytes) for r in step_rows]
        return {"call": call, "step": step, **comm}
