"""Deployment queries and the per-device machinery the memory, state and capacity
families share: the tp/pp/ep/dp arguments of a query, the spread of per-op (or
per-store) amounts over pipeline stages, and comm_bytes, the bytes one device sends
in one call. The rules themselves are in compiler/sharding.py.

How each collective is costed (ring algorithms, per device, uniform routing):
  row-parallel op (shard=row)       all-reduce of its output over tp: 2·(tp−1)/tp · rows·width·act_bytes
  vocab-parallel lookup             all-reduce of the embeddings:      2·(tp−1)/tp · rows·d·act_bytes
  vocab-parallel head (shard=vocab) all-gather of the logits:          (tp−1)/tp · rows·V·act_bytes
  route / combine under ep          all-to-all of the dispatched rows: (ep−1)/ep · (k·rows/ep)·width·act_bytes
                                    (dispatch at route, the same rows back at combine)
  pipeline stage boundary           the stream tensor entering the next stage: rows·width·act_bytes,
                                    one send for the most loaded device (every stage but the last)
rows are the rows one device processes (the instance's rows / ep); activations are
act_bytes (default 2, BF16) per element. Column-parallel and replicated ops send nothing."""

from __future__ import annotations

import sympy as sp

from ..dsl.errors import SpecError, did_you_mean
from ..dsl.units import BYTES
from .query_base import Quantity
from .sharding import Deployment, stage_counts, stages, tp_fraction
from .symbols import B, P, S, substitute

_DEGREES = ("tp", "pp", "ep", "dp")
_COMM_COMPONENTS = ("tp", "ep", "pp")


class DeploymentQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine, and the per-device helpers."""

    def _deployment(self, a, allowed=_DEGREES) -> Deployment:
        degrees = {}
        # a degree the query does not declare (ep= of train_memory) is refused as an unknown argument
        for key in allowed:
            a.used.add(key)
            value = a.raw(key)
            if value is None:
                continue
            if not (isinstance(value, sp.Integer) and value >= 1):
                raise SpecError(f"'{key}=' takes a positive integer (a parallel degree), got {value}",
                                a._node_loc(key), expected=f"e.g. {key}=8")
            degrees[key] = int(value)
        a.used.add("per_device")
        flag = a.raw("per_device")
        if flag not in (None, "true", "false", sp.Integer(0), sp.Integer(1)):
            raise SpecError(f"'per_device=' takes true or false, got {flag}", a._node_loc("per_device"),
                            expected="per_device=true")
        return Deployment(**degrees, per_device=flag in ("true", sp.Integer(1)))

    def _stage_of(self, model, pp: int, loc) -> dict:
        key = (id(model), "stages", pp)
        if key not in self._sums:
            self._sums[key] = stages(model, pp, loc)
        return self._sums[key]

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
        return sp.Add(*per_stage) * dep.tp * dep.ep * dep.dp

    # ------------------------------------------------------------ comm_bytes
    def _comm_terms(self, model, dep: Deployment, rows_at, act_bytes, loc) -> dict:
        """component -> [(layers, segment, mult, bytes one device sends)]."""
        out = {c: [] for c in _COMM_COMPONENTS}
        ep_share = sp.Rational(1, dep.ep)
        for op in model.ops:
            where = (op.layers, op.segment, op.mult)
            if dep.tp > 1 and op.shard in ("row", "vocab") and tp_fraction(op, dep, loc) != 1:
                rows = rows_at(op.rows) * ep_share
                width = op.outputs[0][1].width if op.outputs else 0
                if op.kind == "matmul" and op.shard == "vocab":
                    factor = sp.Rational(dep.tp - 1, dep.tp)               # all-gather of the logits
                else:
                    factor = 2 * sp.Rational(dep.tp - 1, dep.tp)           # ring all-reduce
                out["tp"].append((*where, factor * rows * width * act_bytes))
            if dep.ep > 1 and op.kind in ("route", "combine"):
                tensor = op.outputs[0][1] if op.kind == "route" else op.inputs[0][1]
                rows = rows_at(tensor.rows) * ep_share
                out["ep"].append((*where, sp.Rational(dep.ep - 1, dep.ep) * rows * tensor.width * act_bytes))
        if dep.pp > 1:
            stage_of = self._stage_of(model, dep.pp, loc)
            first_of_stage = {}
            for op in model.ops:
                stage = stage_of[op.layers[0]] if op.layers else stage_of[("segment", op.segment)]
                if stage not in first_of_stage and op.inputs:
                    first_of_stage[stage] = op
            sends = [rows_at(op.inputs[0][1].rows) * ep_share * op.inputs[0][1].width * act_bytes
                     for stage, op in sorted(first_of_stage.items()) if stage > 0]
            out["pp"] = sends
        return out

    def _comm_total(self, model, dep: Deployment, rows_at, act_bytes, component, loc):
        terms = self._comm_terms(model, dep, rows_at, act_bytes, loc)
        picked = _COMM_COMPONENTS if component is None else (component,)
        total = sp.Integer(0)
        for comp in picked:
            if comp == "pp":
                sends = terms["pp"]
                if sends:
                    # per device: the most loaded stage sends one boundary; in total every boundary
                    total += (self._most_loaded(sends) if dep.per_device else sp.Add(*sends) * dep.tp * dep.ep)
            elif terms[comp]:
                one = self._per_stage(model, dep, terms[comp], loc)
                total += self._most_loaded(one) if dep.per_device else sp.Add(*one) * dep.tp * dep.ep
        return total

    def _act_bytes(self, a):
        a.used.add("act_bytes")
        value = a.raw("act_bytes")
        if value is None:
            return sp.Integer(2)
        value = value.value if isinstance(value, Quantity) else value
        if not (isinstance(value, sp.Rational) and value > 0):
            raise SpecError("'act_bytes=' takes bytes per activation element", a._node_loc("act_bytes"),
                            expected="act_bytes=2 (BF16) or act_bytes=1 (FP8)")
        return value

    def q_comm_bytes(self, model, a):
        batch, cached, new, _ = self._call_scenario(a)
        ext = a.check_context(model, cached + new)
        dep = self._deployment(a, ("tp", "pp", "ep", "dp"))
        component = a.name("component")
        if component is not None and component not in _COMM_COMPONENTS:
            raise SpecError(f"no communication component '{component}'", a.loc,
                            expected=did_you_mean(component, _COMM_COMPONENTS))
        instance_b = sp.ceiling(batch / dep.dp) if dep.dp > 1 else batch   # one instance's requests

        def rows_at(expr):
            return substitute(expr, {B: instance_b, S: cached, P: new})

        total = self._comm_total(model, dep, rows_at, self._act_bytes(a), component, a.loc)
        return Quantity(sp.nsimplify(total) if not total.is_Rational else total, BYTES, ext)
