"""Deployment arithmetic: how the declared sharding of ops and stores splits a model
over tp · pp · dp devices, its routed experts over ep of them. Pure functions of the
compiled Model; no model names.

Declarations (in the block library, next to group=):
  shard=column     output width split over tp (Megatron ColumnParallelLinear)
  shard=row        input width split over tp; its output is a partial sum (RowParallelLinear),
                   all-reduced where a consumer needs it whole (q_deployment.py)
  shard=heads      split by attention heads over tp (attend, or a grouped matmul)
  shard=vocab      vocabulary split over tp: a lookup table's rows (all-reduce of the
                   embeddings) or the head's output columns (all-gather of the logits)
  shard=replicated every tp rank holds and computes it (the default: norms, routers, ...)
  units=EXPR       the indivisible pieces of the split dimension (KV heads for K/V
                   projections); default the split width, or heads= for attend
A store declares `shard: EXPR` (its entries split into EXPR pieces, e.g. n_kv) or
`shard: replicated` (the default).

Layout (as engines define it; Megatron's "MoE parallel folding", vLLM's --enable-expert-parallel):
  * world = tp · pp · dp devices. Within a pipeline stage the tp·dp devices form dp groups of tp
    devices; attention and dense layers are tensor-parallel over tp inside a group, and each
    group serves its own requests ("DP attention"; for a dense model, independent replicas);
  * the routed experts of a stage are spread over ep of its tp·dp devices (ep divides tp·dp),
    E/ep experts each, and each expert is split over the rest, etp = tp·dp/ep devices
    (expert tensor parallelism). vLLM `--tensor-parallel-size 8 --enable-expert-parallel` is
    tp=8, ep=8; `--data-parallel-size 8 --enable-expert-parallel` is dp=8, ep=8; tp=8 alone
    splits every expert 8 ways (etp = 8). Training keeps Megatron's default instead (etp = tp,
    experts replicated over dp: experts_over_dp=False);
  * B counts the requests of the whole deployment; the most loaded group holds ceil(B/dp)
    of them and does all of their non-expert work; routing is balanced: the experts of an
    ep rank receive k/ep of all the stage's rows (expected counts, exact fractions).

Rules:
  * a split of u units over n devices: 1/n each when n divides u; when u divides n, each
    device keeps one unit (n/u copies of each: KV heads replicated); else an error;
  * non-expert ops split over tp; ops with experts=E copies (routed experts) hold E/ep copies
    (E % ep == 0) each split over etp by the same declared rule;
  * layers split over pp in contiguous, even stages (sizes differ by at most one), or as
    the spec declares (`pipeline: {4: [19, 21, 21, 19]}`: layers per stage for pp = 4);
    unlayered segments before the first layered one sit on the first stage, the rest on
    the last; the most loaded stage answers per_device queries.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ...dsl.errors import SpecError
from ...dsl.limits import limit_error
from ..schema.layerset import LayerIndices, clip, count_between, nth, ranges_of, union

SHARD_KINDS = ("column", "row", "heads", "vocab", "replicated")


@dataclass(frozen=True)
class Deployment:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    per_device: bool = False
    experts_over_dp: bool = True   # inference (vLLM): experts span tp·dp; training (Megatron): tp only


    @property
    def trivial(self) -> bool:
        return (self.tp, self.pp, self.ep, self.dp) == (1, 1, 1, 1)

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def stage_devices(self) -> int:
        """The devices of one pipeline stage: the expert group."""
        return self.tp * self.dp

    @property
    def etp(self) -> int:
        """Expert tensor parallelism: the devices each routed expert is split over."""
        return (self.tp * self.dp if self.experts_over_dp else self.tp) // self.ep

    def check(self, loc) -> "Deployment":
        if (self.tp * self.dp) % self.ep:
            raise SpecError(f"ep={self.ep} must divide tp·dp = {self.tp * self.dp} (the experts are spread over "
                            f"the devices of a pipeline stage)", loc,
                            expected=f"dp={self.ep}, ep={self.ep} (DP attention) or tp={self.ep}, ep={self.ep}")
        return self

    def requests_per_device(self, batch):
        """The most loaded device's share of B requests (B spread over the dp groups)."""
        if self.dp == 1:
            return batch
        return sp.ceiling(sp.Integer(batch) / self.dp) if isinstance(batch, (int, sp.Integer)) \
            else sp.ceiling(batch / self.dp)


def split_fraction(units, n: int, what: str, loc) -> sp.Rational:
    """The share of a dimension of `units` pieces one of n devices holds."""
    if n == 1:
        return sp.Integer(1)
    if not isinstance(units, (int, sp.Integer)) or int(units) < 1:
        raise SpecError(f"{what} splits {units} pieces, which is not a positive integer", loc,
                        expected="a concrete units= count")
    u = int(units)
    if u % n == 0:
        return sp.Rational(1, n)
    if n % u == 0:
        return sp.Rational(1, u)
    raise SpecError(f"cannot split {what} ({u} pieces) over {n} devices", loc,
                    expected=f"a degree that divides {u} or that {u} divides")


def op_where(op) -> str:
    return f"op '{op.short}' ({op.stmt.loc.file}:{op.stmt.loc.line})" if getattr(op.stmt, "loc", None) else \
        f"op '{op.short}'"


def tp_fraction(op, dep: Deployment, loc) -> sp.Rational:
    """The share of an op's split dimension one device holds: over tp, or over etp for an
    op with routed experts."""
    n = dep.etp if op.experts != 1 else dep.tp
    if op.shard in (None, "replicated") or n == 1:
        return sp.Integer(1)
    return split_fraction(op.units, n, f"{op_where(op)} (shard={op.shard})", loc)


def ep_fraction(op, dep: Deployment, loc) -> sp.Rational:
    """The share of an op's expert copies one ep rank holds (1 for ops without experts)."""
    experts = op.experts
    if experts == 1 or dep.ep == 1:
        return sp.Integer(1)
    if not isinstance(experts, (int, sp.Integer)) or int(experts) % dep.ep:
        raise SpecError(f"ep={dep.ep} does not divide the {experts} experts of {op_where(op)}", loc,
                        expected=f"an ep that divides {experts}")
    return sp.Rational(1, dep.ep)


def weight_fraction(op, dep: Deployment, loc) -> sp.Rational:
    return tp_fraction(op, dep, loc) * ep_fraction(op, dep, loc)


def work_fraction(op, dep: Deployment, loc) -> sp.Rational:
    """The share of an op's FLOPs (and activation rows) the most loaded device does, of the
    op's work at the rows it runs on (its group's ceil(B/dp) requests for a non-expert op,
    every request of the stage for routed experts — q_time.py): a non-expert op's split over
    tp; an expert op's 1/ep of the stage's assignments (balanced routing), split over etp."""
    return tp_fraction(op, dep, loc) * ep_fraction(op, dep, loc)


def store_fraction(units, dep: Deployment, name: str, loc) -> sp.Rational:
    if units in (None, "replicated") or dep.tp == 1:
        return sp.Integer(1)
    return split_fraction(units, dep.tp, f"store '{name}'", loc)


class StageMap:
    """Which pipeline stage each layer sits on, kept as index intervals over the sorted
    layers (never a dict of every layer: a spec may have 10**12 of them).
    stage_map[layer] and stage_map[("segment", name)] give a stage; counts() and
    layers_on() answer for whole layer sets in O(number of ranges)."""

    def __init__(self, layers: LayerIndices, bounds: list, pp: int, segments: dict):
        self.layers, self.pp, self.segments = layers, pp, segments
        self._counts: dict = {}      # ranges -> counts(): bounded by the model's distinct layer sets
        # stage s holds the sorted layers of index bounds[s] .. bounds[s+1]-1: as values lo..hi
        self.values = []
        for s in range(pp):
            first, last = bounds[s], bounds[s + 1] - 1
            self.values.append((nth(layers, first), nth(layers, last)) if first <= last else None)

    def __getitem__(self, key):
        if isinstance(key, tuple):
            return self.segments[key]
        for s, span in enumerate(self.values):
            if span is not None and span[0] <= key <= span[1]:
                return s
        raise KeyError(key)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def counts(self, layers) -> list:
        """How many of `layers` (with repeats, as listed) sit on each stage."""
        rs = ranges_of(layers)
        found = self._counts.get(rs)
        if found is None:
            # the ops of a layer share its layer set: counted once per set
            found = self._counts[rs] = [0 if span is None else sum(count_between(r, span[0], span[1]) for r in rs)
                                        for span in self.values]
        return list(found)

    def layers_on(self, layers, stage: int) -> LayerIndices:
        span = self.values[stage]
        if span is None:
            return LayerIndices()
        return LayerIndices([clip(r, span[0], span[1]) for r in ranges_of(layers)])


def stages(model, pp: int, loc) -> StageMap:
    """layer index -> pipeline stage, plus the stages of unlayered segments
    ({('segment', name): stage}), as a StageMap."""
    try:
        layers = union(*(op.layers for op in model.ops), *(u.layers for u in model.states))
    except ValueError:
        raise limit_error("enumerated_layers", loc) from None
    n = len(layers)
    if pp > 1 and n < pp:
        raise SpecError(f"pp={pp} exceeds the {n} layers of the model", loc,
                        expected=f"pp <= {n}")
    declared = _declared_stages(model.spec, pp, n, loc)
    if declared is not None:
        bounds = [sum(declared[:s]) for s in range(pp)] + [n]
    else:
        # layer i of n (in order) is on stage i*pp//n: stage s starts at ceil(s*n/pp)
        bounds = [-(-s * n // pp) for s in range(pp)] + [n]
    segments: dict = {}
    seen_layered = False
    for op in model.ops:
        if op.layers:
            seen_layered = True
        elif ("segment", op.segment) not in segments:
            segments[("segment", op.segment)] = pp - 1 if seen_layered else 0
    return StageMap(layers, bounds, pp, segments)


def _declared_stages(spec, pp: int, n_layers: int, loc):
    """The spec's `pipeline:` split for this pp (layers per stage, in order), if it declares one."""
    split = spec.pipeline.get(pp) if pp > 1 else None
    if split is None:
        return None
    counts = list(split.counts)
    if sum(counts) != n_layers:
        raise SpecError(f"pipeline split for pp={pp} must give {pp} stages of at least one layer adding up to "
                        f"{n_layers}, got {counts}", split.loc, expected=f"{pp} positive counts summing to {n_layers}")
    return counts


def stage_counts(layers: tuple, segment: str, mult, stage_of: StageMap, pp: int) -> list:
    """How many of an op's (or state use's) instances sit on each stage."""
    counts = [0] * pp
    if layers:
        counts = stage_of.counts(layers)
    else:
        counts[stage_of.get(("segment", segment), 0)] += mult
    return counts


def activation_placement(model, dep: Deployment, loc) -> dict:
    """op id -> (rows of, share) of its output on the most loaded device: rows of "group"
    (its dp group's requests) or "stage" (every request's, for the routed experts' rows), and
    the share of those rows × width the device holds. A column- or head-parallel op's output
    is split like its weights; a row-parallel op's output is whole (a partial sum); the
    routed rows are 1/ep per device (balanced routing) until combine returns the group's
    rows; element-wise ops, splits and views keep their first input's placement."""
    out = {}
    for op in model.ops:
        ins = [out.get(t.producer, ("group", sp.Integer(1))) for _, t in op.inputs if t is not None]
        if op.kind == "route":
            out[op.id] = ("stage", sp.Rational(1, dep.ep))
        elif op.kind == "combine":
            out[op.id] = ("group", sp.Integer(1))
        elif op.experts != 1:
            split = tp_fraction(op, dep, loc) if op.shard in ("column", "heads") else sp.Integer(1)
            out[op.id] = ("stage", ep_fraction(op, dep, loc) * split)
        elif op.shard in ("column", "heads"):
            out[op.id] = ("group", tp_fraction(op, dep, loc))
        elif op.shard in ("row", "vocab", "replicated") or op.kind in ("matmul", "lookup", "attend", "score"):
            out[op.id] = ("group", sp.Integer(1))
        else:
            out[op.id] = ins[0] if ins else ("group", sp.Integer(1))
    return out
