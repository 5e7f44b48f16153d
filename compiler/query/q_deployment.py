"""Deployment queries and the per-device machinery the memory, state and capacity
families share: the tp/pp/ep/dp arguments of a query, the spread of per-op (or
per-store) amounts over pipeline stages, and the collectives of a call, whose bytes
comm_bytes counts and whose seconds the time queries add. The layout rules are in
compiler/deploy/sharding.py, the cost of each collective in compiler/deploy/collectives.py.

Which collectives a call runs (the most loaded device; rows are its group's, B → ceil(B/dp)):
  tp  partial sums: a row-parallel op (shard=row), a vocab-parallel lookup and, under tp,
      the routed experts leave partial sums on the tp devices. Engines reduce them lazily:
      a partial sum flows unreduced through linear ops (view, split, select, combine, a gate
      or scale by a full tensor, and an add/mix of partial sums only); an add/mix of partial
      and full tensors all-reduces once at its output (so the k routed outputs and the shared
      expert are combined locally and reduced once per layer, as vLLM's FusedMoE and
      Megatron do); any other consumer all-reduces the partial input it reads.
      A vocab-parallel head all-gathers the logits.
  ep  when dp > 1 the groups hold different rows, so each MoE layer dispatches rows to the
      expert devices and combines them back (two all-to-all phases). Balanced routing: a
      row's k experts fall on min(k, ep) distinct ep ranks, each equally likely; a row is sent
      once to each device that needs it (every etp shard of a chosen ep rank) and one combined
      partial row comes back from each. Per phase the most loaded device moves the larger of
      what it sends, (dp−1)·c·R(ceil(B/dp)), and what it receives, c·(R(B) − R(floor(B/dp))),
      with c = min(k, ep)/ep and R(b) the MoE input rows of b requests.
  pp  each stage boundary sends the stream tensor entering the next stage (point to point).
activations are act_bytes (default 2, BF16) per element. Column-parallel and replicated ops
send nothing."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import sympy as sp

from ...dsl.errors import SpecError, did_you_mean
from ...dsl.units import BYTES
from ..deploy.collectives import Collective, bytes_moved, per_node
from .query_base import Quantity
from ..deploy.sharding import Deployment, stage_counts, stages, tp_fraction
from ..schema.symbols import B, P, S, substitute

# how a partial sum flows through an op (see the module doc)
_LINEAR_KINDS = ("view", "split", "select", "combine")
_SUM_FUNCS = ("add", "mix")
_SCALE_FUNCS = ("gate", "scale")

_DEGREES = ("tp", "pp", "ep", "dp")
_COMM_COMPONENTS = ("tp", "ep", "pp")


class DeploymentQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine, and the per-device helpers."""

    def deployment(self, args, allowed=_DEGREES) -> Deployment:
        degrees = {}
        # a degree the query does not declare (ep= of train_memory) is refused as an unknown argument
        for key in allowed:
            args.used.add(key)
            value = args.raw(key)
            if value is None:
                continue
            if not (isinstance(value, sp.Integer) and value >= 1):
                raise SpecError(f"'{key}=' takes a positive integer (a parallel degree), got {value}",
                                args.node_loc(key), expected=f"e.g. {key}=8")
            degrees[key] = int(value)
        Deployment(**degrees).check(args.node_loc("ep"))
        args.used.add("per_device")
        flag = args.raw("per_device")
        if flag not in (None, "true", "false", sp.Integer(0), sp.Integer(1)):
            raise SpecError(f"'per_device=' takes true or false, got {flag}", args.node_loc("per_device"),
                            expected="per_device=true")
        return Deployment(**degrees, per_device=flag in ("true", sp.Integer(1)))

    def _stage_of(self, model, pp: int, loc) -> dict:
        key = (id(model), "stages", pp)
        if key not in self.sums:
            self.sums[key] = stages(model, pp, loc)
        return self.sums[key]

    def _per_stage(self, model, dep: Deployment, terms, loc) -> list:
        """terms: (layers, segment, mult, amount on one device of its stage) -> the sum of each stage."""
        if dep.pp == 1:
            return [sp.Add(*[mult * amount for _, _, mult, amount in terms])]
        stage_of = self._stage_of(model, dep.pp, loc)
        sums = [[] for _ in range(dep.pp)]
        for layers, segment, mult, amount in terms:
            for stage, count in enumerate(stage_counts(layers, segment, mult, stage_of, dep.pp)):
                if count:
                    sums[stage].append(count * amount)
        return [sp.Add(*s) for s in sums]

    @staticmethod
    def _most_loaded(per_stage: list):
        if all(v.is_number for v in per_stage):
            return max(per_stage)
        return sp.Max(*per_stage)

    def _spread(self, model, dep: Deployment, terms, loc):
        """The most loaded device's amount (per_device=true) or the sum over every device."""
        per_stage = self._per_stage(model, dep, terms, loc)
        if dep.per_device:
            return self._most_loaded(per_stage)
        return sp.Add(*per_stage) * dep.tp * dep.dp

    # ------------------------------------------------------------ collectives
    def call_collectives(self, model, dep: Deployment, scenario: dict, act_bytes, loc, gpus_per_node=None) -> list:
        """Every collective of a call on the most loaded device (see the module doc). scenario
        maps B, S, P to the call's values; B counts the whole deployment's requests."""
        batch = scenario[B]
        group_b = dep.requests_per_device(batch)

        def at(expr, b=group_b):
            return substitute(expr, {**scenario, B: b})

        def tp_and_ep():
            found = []
            if dep.tp > 1:
                found += self._partial_sum_collectives(model, dep, at, act_bytes, loc)
            if dep.dp > 1:
                found += self._expert_all_to_all(model, dep, at, batch, act_bytes)
            return found

        # the tp and ep collectives depend on neither pp nor the node size: a site export asks
        # for the same call at every pp and node size
        found = self.remembered(("collectives", id(model), dep.tp, dep.ep, dep.dp,
                                 tuple(scenario.get(k) for k in (B, S, P)), act_bytes), tp_and_ep)
        off = self._off_node_share(dep, gpus_per_node, loc) if dep.dp > 1 else None
        # kept collectives are shared, never changed in place (every consumer replaces to change one)
        out = [dataclasses.replace(c, off_node=off) if c.component == "ep" else c for c in found]
        if dep.pp > 1:
            out += self._stage_sends(model, dep, at, act_bytes, loc, gpus_per_node)
        return out

    def _partial_sum_collectives(self, model, dep, at, act_bytes, loc) -> list:
        """The all-reduces (and the head's all-gather) over the tp group, placed where a partial
        sum must become whole (the module doc's rules), in op order."""
        partial = set()            # ids of ops whose output is a partial sum over the tp group
        out = []

        def reduce(tensor, op):
            out.append(Collective("tp", "all_reduce", dep.tp, at(tensor.rows) * tensor.width * act_bytes,
                                  op.layers, op.segment, op.mult))

        for op in model.ops:
            func = getattr(op.stmt, "func", None)
            ins = [(t, t.producer in partial) for _, t in op.inputs if t is not None]
            part = [t for t, p in ins if p]
            if op.kind == "matmul" and op.shard == "vocab" and tp_fraction(op, dep, loc) != 1:
                for t in part:
                    reduce(t, op)
                logits = op.outputs[0][1]
                out.append(Collective("tp", "all_gather", dep.tp, at(logits.rows) * logits.width * act_bytes,
                                      op.layers, op.segment, op.mult))
                continue
            makes_partial = op.shard == "row" and (op.experts != 1 or tp_fraction(op, dep, loc) != 1) \
                or (op.kind == "lookup" and op.shard == "vocab" and tp_fraction(op, dep, loc) != 1)
            if makes_partial:
                for t in part:
                    reduce(t, op)
                partial.add(op.id)
            elif not part:
                continue
            elif op.kind in _LINEAR_KINDS and len(ins) == len(part):
                partial.add(op.id)
            elif op.kind == "elementwise" and func in _SUM_FUNCS:
                if len(part) == len(ins):
                    partial.add(op.id)
                else:                      # partial sums added to a full tensor: one all-reduce
                    reduce(op.outputs[0][1], op)
            elif op.kind == "elementwise" and func in _SCALE_FUNCS and ins[0][1] and len(part) == 1:
                partial.add(op.id)
            else:
                for t in part:
                    reduce(t, op)
        return out

    def _expert_all_to_all(self, model, dep, at, batch, act_bytes) -> list:
        """Dispatch and combine of every route op when the dp groups hold different rows (the
        share that leaves the node is call_collectives' to set: _off_node_share)."""
        n = dep.stage_devices
        lo_b, hi_b = sp.floor(sp.sympify(batch) / dep.dp), dep.requests_per_device(batch)   # least, most loaded group
        out = []
        for op in model.ops:
            if op.kind != "route":
                continue
            x = op.inputs[0][1]
            k = _simplified(op.outputs[0][1].rows / x.rows)
            c = sp.Min(k, dep.ep) / dep.ep
            sent = (dep.dp - 1) * c * at(x.rows, hi_b)
            received = c * (at(x.rows, batch) - at(x.rows, lo_b))
            phase = _larger(sent, received) * x.width * act_bytes
            for _ in ("dispatch", "combine"):
                out.append(Collective("ep", "all_to_all", n, phase, op.layers, op.segment, op.mult))
        return out

    @staticmethod
    def _off_node_share(dep, gpus_per_node, loc):
        """The share of a device's all-to-all peers outside its own tp group that sit on other nodes."""
        n = dep.stage_devices
        a = per_node(n, gpus_per_node, loc) if gpus_per_node else n
        return sp.Rational(n - a, n - dep.tp) if a >= dep.tp else sp.Integer(1)

    def _stage_sends(self, model, dep, at, act_bytes, loc, gpus_per_node) -> list:
        """One send per stage boundary: the stream tensor entering the first op of the stage's
        first layer (an op node stands for every layer of its run, so the boundary is found by
        layer, not by op)."""
        stage_of = self._stage_of(model, dep.pp, loc)
        n = dep.stage_devices

        def entering():
            # the stream tensor entering each stage after the first (stages hold ranges of layers)
            return [next(op for op in model.ops if stage_of.values[stage][0] in op.layers and op.inputs).inputs[0][1]
                    for stage in range(1, dep.pp)]

        out = []
        for stage, t in enumerate(self.remembered(("stage inputs", id(model), dep.pp), entering), 1):
            ranks = range((stage - 1) * n, stage * n)
            crosses = gpus_per_node is not None and any(r // gpus_per_node != (r + n) // gpus_per_node
                                                        for r in ranks)
            out.append(Collective("pp", "send", 2, at(t.rows) * t.width * act_bytes, (), f"stage {stage}", 1,
                                  sp.Integer(1 if crosses else 0)))
        return out

    def _comm_total(self, model, dep: Deployment, scenario, act_bytes, component, loc):
        """The bytes of the most loaded device (per_device) or of every device (else)."""
        picked = _COMM_COMPONENTS if component is None else (component,)
        colls = [c for c in self.call_collectives(model, dep, scenario, act_bytes, loc) if c.component in picked]
        total = sp.Integer(0)
        sends = [c.size for c in colls if c.component == "pp"]
        if sends:
            # per device: the most loaded stage sends one boundary; in total every boundary
            total += self._most_loaded(sends) if dep.per_device else sp.Add(*sends) * dep.stage_devices
        terms = [(c.layers, c.segment, c.mult, bytes_moved(c, None, loc)) for c in colls if c.component != "pp"]
        if terms:
            one = self._per_stage(model, dep, terms, loc)
            total += self._most_loaded(one) if dep.per_device else sp.Add(*one) * dep.stage_devices
        return total

    def _act_bytes(self, args):
        args.used.add("act_bytes")
        value = args.raw("act_bytes")
        if value is None:
            return sp.Integer(2)
        value = value.value if isinstance(value, Quantity) else value
        if not (isinstance(value, sp.Rational) and value > 0):
            raise SpecError("'act_bytes=' takes bytes per activation element", args.node_loc("act_bytes"),
                            expected="act_bytes=2 (BF16) or act_bytes=1 (FP8)")
        return value

    def q_comm_bytes(self, model, args):
        batch, cached, new, _ = self._call_scenario(args)
        ext = args.check_context(model, cached + new)
        dep = self.deployment(args, ("tp", "pp", "ep", "dp"))
        component = args.name("component")
        if component is not None and component not in _COMM_COMPONENTS:
            raise SpecError(f"no communication component '{component}'", args.loc,
                            expected=did_you_mean(component, _COMM_COMPONENTS))
        total = self._comm_total(model, dep, {B: batch, S: cached, P: new}, self._act_bytes(args), component, args.loc)
        return Quantity(sp.nsimplify(total) if not total.is_Rational else total, BYTES, ext)


@lru_cache(maxsize=4096)
def _larger(sent, received):
    """max(sent, received) as sympy writes it. The same pair recurs at every tp, pp and node
    size of a site export (it depends on dp, ep and the call only), and building a Max of
    two symbolic terms makes sympy try to order them, milliseconds each time."""
    return sent if sent == received else sp.Max(sent, received)


@lru_cache(maxsize=1024)
def _simplified(expr):
    """sympy's simplify of a route op's rows out per row in (its k), once per expression."""
    return sp.simplify(expr)
