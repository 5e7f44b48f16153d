"""Deployment arithmetic: how the declared sharding of ops and stores splits a model
over tp · pp · ep · dp devices. Pure functions of the compiled Model; no model names.

Declarations (in the block library, next to group=):
  shard=column     output width split over tp (Megatron ColumnParallelLinear)
  shard=row        input width split over tp; its output is all-reduced (RowParallelLinear)
  shard=heads      split by attention heads over tp (attend, or a grouped matmul)
  shard=vocab      vocabulary split over tp: a lookup table's rows (all-reduce of the
                   embeddings) or the head's output columns (all-gather of the logits)
  shard=replicated every tp rank holds and computes it (the default: norms, routers, ...)
  units=EXPR       the indivisible pieces of the split dimension (KV heads for K/V
                   projections); default the split width, or heads= for attend
A store declares `shard: EXPR` (its entries split into EXPR pieces, e.g. n_kv) or
`shard: replicated` (the default).

Rules:
  * a split of u units over tp: 1/tp each when tp divides u; when u divides tp, each
    device keeps one unit (tp/u copies of each: KV heads replicated); else an error;
  * ops with experts=E copies (routed experts) split their copies over ep (E % ep == 0);
  * layers split over pp in contiguous, even stages (sizes differ by at most one), or as
    the spec declares (`pipeline: {4: [19, 21, 21, 19]}`: layers per stage for pp = 4);
    unlayered segments before the first layered one sit on the first stage, the rest on
    the last; the most loaded stage answers per_device queries;
  * within one model instance (tp·pp·ep devices) the ep ranks are also attention-data-parallel:
    each holds the non-expert layers and serves 1/ep of the requests; dp instances are
    independent replicas. B counts the requests of the whole deployment; the most
    loaded device holds ceil(B / (ep·dp)) of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..dsl.errors import SpecError

SHARD_KINDS = ("column", "row", "heads", "vocab", "replicated")


@dataclass(frozen=True)
class Deployment:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    per_device: bool = False

    @property
    def trivial(self) -> bool:
        return (self.tp, self.pp, self.ep, self.dp) == (1, 1, 1, 1)

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.ep * self.dp

    def requests_per_device(self, batch):
        """The most loaded device's share of B requests (B spread over ep·dp request groups)."""
        groups = self.ep * self.dp
        return batch if groups == 1 else sp.ceiling(sp.Integer(batch) / groups) if isinstance(batch, (int, sp.Integer)) \
            else sp.ceiling(batch / groups)


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
    if op.shard in (None, "replicated") or dep.tp == 1:
        return sp.Integer(1)
    return split_fraction(op.units, dep.tp, f"{op_where(op)} (shard={op.shard})", loc)


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
    """The share of an op's FLOPs (and activation rows) one device does in a call of the
    whole instance: tp splits by the declared rule; ep splits every op's rows (attention
    data-parallel, experts by uniform routing)."""
    return tp_fraction(op, dep, loc) / dep.ep


def store_fraction(units, dep: Deployment, name: str, loc) -> sp.Rational:
    if units in (None, "replicated") or dep.tp == 1:
        return sp.Integer(1)
    return split_fraction(units, dep.tp, f"store '{name}'", loc)


def stages(model, pp: int, loc) -> dict:
    """layer index -> pipeline stage, plus the stages of unlayered segments
    ({('segment', name): stage})."""
    layers = sorted({l for op in model.ops for l in op.layers} | {l for u in model.states for l in u.layers})
    if pp > 1 and len(layers) < pp:
        raise SpecError(f"pp={pp} exceeds the {len(layers)} layers of the model", loc,
                        expected=f"pp <= {len(layers)}")
    declared = _declared_stages(model.spec, pp, len(layers), loc)
    if declared is not None:
        bounds = [sum(declared[:s]) for s in range(pp)]
        out = {l: max(s for s in range(pp) if bounds[s] <= i) for i, l in enumerate(layers)}
    else:
        out = {l: i * pp // len(layers) for i, l in enumerate(layers)} if layers else {}
    seen_layered = False
    for op in model.ops:
        if op.layers:
            seen_layered = True
        elif ("segment", op.segment) not in out:
            out[("segment", op.segment)] = pp - 1 if seen_layered else 0
    return out


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


def stage_counts(layers: tuple, segment: str, mult, stage_of: dict, pp: int) -> list:
    """How many of an op's (or state use's) instances sit on each stage."""
    counts = [0] * pp
    if layers:
        for l in layers:
            counts[stage_of[l]] += 1
    else:
        counts[stage_of.get(("segment", segment), 0)] += mult
    return counts
