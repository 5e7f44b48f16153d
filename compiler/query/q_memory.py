"""Memory queries: parameters and weight bytes (and the weights a decode step reads)."""

from __future__ import annotations

import sympy as sp

from ...dsl.errors import SpecError, did_you_mean
from ...dsl.units import BYTES, PARAMS
from ..schema.expressions import exact_min
from .query_base import Quantity
from ..deploy.sharding import Deployment, ep_fraction, tp_fraction, weight_fraction
from ..schema.symbols import B, H, P, S, substitute


class MemoryQueries:
    """q_<name>(self, model, args) -> Quantity methods of QueryEngine."""

    def q_params(self, model, args):
        filters = args.filters()
        dep = self.deployment(args)
        if dep.trivial and not dep.per_device:
            return Quantity(self._sum_params(model, filters, args.loc), PARAMS)
        group = filters.pop("group", None)
        self._sum_params(model, {"group": group}, args.loc)      # checks the group name
        terms = [self._where(op, filters) + (op.params(group) * weight_fraction(op, dep, args.loc),)
                 for op in self._ops(model, filters, args.loc)]
        return Quantity(self._spread(model, dep, terms, args.loc), PARAMS)

    def q_active_params(self, model, args):
        """Parameters one token uses: every weight, except routed experts', of which only the
        experts one token's rows reach count: min(E, rows of a one-token call) of E, i.e. top-k
        of E for a router that sends each row to k experts. A per-expert weight declared apart
        from its expert matmul (a bias table [E, f] in the routed_experts group) counts at the
        fraction of the expert ops of its own block instance. Lookup tables count whole, as the
        usual "active parameters" convention counts embeddings."""
        one_token = {B: sp.Integer(1), S: sp.Integer(0), P: sp.Integer(1)}
        share = {}                    # block instance -> fraction of its experts one token reaches
        for op in model.ops:
            if op.experts != 1 and not op.lookup:
                share[self._instance(op)] = exact_min(op.experts, substitute(op.rows, one_token)) / op.experts
        total = sp.Integer(0)
        for op in model.ops:
            fraction = share.get(self._instance(op), 1)
            for w in op.weights:
                used = op.experts != 1 and not op.lookup or w.group == "routed_experts"
                total += op.mult * w.params * (fraction if used else 1)
        return Quantity(total, PARAMS)

    @staticmethod
    def _instance(op) -> str:
        """The block instance an op belongs to: its qualified name without the op's own target."""
        return op.name.rsplit(".", 1)[0]

    @staticmethod
    def _where(op, filters) -> tuple:
        """(layers, segment, instances) of an op, or of the one layer a layer= filter picks."""
        if "layer" in filters:
            return (filters["layer"],), op.segment, 1
        return op.layers, op.segment, op.mult

    def _sum_params(self, model, filters, loc):
        group = filters.pop("group", None)
        per_layer = "layer" in filters
        key = (id(model), "params", group)
        if key not in self.sums:
            self.sums[key] = {op.id: op.params(group) for op in model.ops}
        params = self.sums[key]
        total = sp.Add(*[params[op.id] * (1 if per_layer else op.mult) for op in self._ops(model, filters, loc)])
        if group is not None and total == 0 and group not in {w.group for o in model.ops for w in o.weights}:
            known = {w.group for o in model.ops for w in o.weights} | {"embedding_head", "attention_projection",
                                                                       "dense_shared_ffn", "routed_experts", "engram", "other"}
            if group not in known:
                raise SpecError(f"unknown parameter group '{group}'", loc, expected=did_you_mean(group, known))
        return total

    def q_weight_bytes(self, model, args):
        fmt = self.format_of(args)
        group = args.name("group")
        dep = self.deployment(args)
        if dep.trivial and not dep.per_device:
            total = sp.Integer(0)
            for op in model.ops:
                for w in op.weights:
                    if group is None or w.group == group:
                        total += op.mult * self._stored_bytes(model, fmt, op, w)
            return Quantity(total, BYTES)
        return Quantity(self._weight_bytes_deployed(model, fmt, group, dep, args.loc), BYTES)

    def _weight_bytes_deployed(self, model, fmt, group, dep, loc):
        terms = []
        for op in model.ops:
            amount = sp.Add(*[self._stored_bytes(model, fmt, op, w)
                              for w in op.weights if group is None or w.group == group])
            if amount != 0:
                terms.append((op.layers, op.segment, op.mult, amount * weight_fraction(op, dep, loc)))
        return self._spread(model, dep, terms, loc)

    def _weight_read_terms(self, model, fmt, batch, dep=None, loc=None, scenario=None):
        """Per op: (layers, segment, mult, shared weight bytes read, lookup-row bytes read, op id) by
        the most loaded device in a decode step of `batch` requests (of the whole deployment):
        every weight once, of routed experts only those the rows can touch (at most
        min(local experts, the k/ep share of the stage's assignments) on the device), of
        lookup tables the rows its group gathered."""
        dep = dep or Deployment()
        scenarios = scenario if isinstance(scenario, list) else [scenario or {B: batch, S: H, P: sp.Integer(1)}]

        def rows_of(expr, grouped):     # summed over the step's parts (a decode step unless a call is given)
            return sp.Add(*[substitute(expr, {**sc, B: dep.requests_per_device(sc[B])} if grouped else sc)
                            for sc in scenarios])

        def reach() -> dict:
            """op id -> (weight share, routed experts touched, lookup rows): the same in every format."""
            out = {}
            for op in model.ops:
                frac = weight_fraction(op, dep, loc) if not dep.trivial else 1
                touched = rows = None
                if not op.weights:
                    pass
                elif op.lookup:
                    rows = rows_of(op.lookup_rows, True)
                elif op.experts != 1:
                    local = op.experts * ep_fraction(op, dep, loc) if dep.ep > 1 else op.experts
                    routed = rows_of(op.rows, False)
                    touched = exact_min(local, sp.ceiling(routed / dep.ep) if dep.ep > 1 else routed)
                out[op.id] = (frac, touched, rows)
            return out

        reached = self.remembered(("weights reached", id(model), dep.tp, dep.pp, dep.ep, dep.dp,
                                   tuple((sc.get(B), sc.get(S), sc.get(P)) for sc in scenarios)), reach)
        out = []
        for op in model.ops:
            shared, rows_read = sp.Integer(0), sp.Integer(0)
            frac, touched, rows = reached[op.id]
            for w in op.weights:
                if op.lookup:      # a table is read by row; schemes quantize matrices, never tables
                    bpp = self.bytes_per_param(model, fmt, w.group)
                    rows_read += rows * w.shape[-1] * bpp
                    continue
                stored = self._stored_bytes(model, fmt, op, w)
                if op.experts != 1:
                    shared += stored / op.experts * tp_fraction(op, dep, loc) * touched
                else:
                    shared += stored * frac
            if shared != 0 or rows_read != 0:
                out.append((op.layers, op.segment, op.mult, shared, rows_read, op.id))
        return out

    def _weight_reads(self, model, fmt, batch, lookups: bool, dep=None, loc=None):
        terms = self._weight_read_terms(model, fmt, batch, dep, loc)
        if dep is None or (dep.trivial and not dep.per_device):
            return (sp.Add(*[t[2] * t[3] for t in terms]), sp.Add(*[t[2] * t[4] for t in terms]))
        return (self._spread(model, dep, [t[:3] + (t[3],) for t in terms], loc),
                self._spread(model, dep, [t[:3] + (t[4],) for t in terms], loc))

    def q_weight_read_bytes(self, model, args):
        batch = args.scenario("B", 1)
        dep = self.deployment(args)
        shared, _ = self._weight_reads(model, self.format_of(args), batch, False, dep, args.loc)
        return Quantity(shared, BYTES)
