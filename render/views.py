"""Read-only views of a compiled Model shared by the renderers: groups of
identical layers, the runs they form, row counts in the chapter's notation
(m = B·P), the stores each group writes or reads, and number formatting.

Nothing here names a model; everything is derived from Model.ops / states /
reads / runs and the spec's stores."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy.printing.str import StrPrinter

from ..compiler.graph.build import Model, OpNode
from ..compiler.schema.symbols import B, P

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MATRIX_KINDS = {"matmul", "attend", "score", "work"}


class RenderError(Exception):
    """A rendering request that cannot be served (e.g. Graphviz missing)."""


@dataclass
class Group:
    """One group of identical layers of a segment (or an unlayered segment)."""
    segment: str
    index: int
    prefix: str               # op id prefix: 'layers' or 'encoder#3'
    letter: str
    layers: tuple
    mult: int
    stage: str
    ops: list = field(default_factory=list)
    members: list = field(default_factory=list)    # for a layer type: its groups

    @property
    def key(self) -> str:
        return self.prefix

    def rel(self, op: OpNode) -> str:
        """The op's name inside its group: 'attn_out.q'."""
        return op.id[len(self.prefix) + 1:]


def op_prefix(op: OpNode) -> str:
    head = op.id.split(".", 1)[0]
    return head


def segments(model: Model) -> list:
    """[(segment name, [Group, ...])] in stack order."""
    out: dict = {}
    for op in model.ops:
        prefix = op_prefix(op)
        groups = out.setdefault(op.segment, {})
        if prefix not in groups:
            idx = int(prefix.split("#", 1)[1]) if "#" in prefix else 0
            groups[prefix] = Group(op.segment, idx, prefix, "", op.layers, op.mult, op.stage)
        groups[prefix].ops.append(op)
    result = []
    for seg in model.spec.stack:
        groups = sorted(out.get(seg.name, {}).values(), key=lambda g: g.index)
        for i, g in enumerate(groups):
            g.letter = LETTERS[i % 26] + (str(i // 26) if i >= 26 else "")
            stages = [o.stage for o in g.ops]
            g.stage = max(set(stages), key=stages.count) if stages else seg.stage or seg.name
        result.append((seg.name, groups))
    return result


def all_groups(model: Model) -> list:
    return [g for _, groups in segments(model) for g in groups]


def find_group(model: Model, block: str | None) -> Group:
    """A group by 'segment', 'segment#i' or a layer index; by default the
    layered group with the most layers."""
    groups = all_groups(model)
    if block is None:
        layered = [g for g in groups if g.layers]
        return max(layered or groups, key=lambda g: g.mult)
    for g in groups:
        if g.prefix == block:
            return g
    named = [g for g in groups if g.segment == block]
    if named:
        return max(named, key=lambda g: g.mult)
    if block.isdigit():
        for g in groups:
            if int(block) in g.layers:
                return g
    names = sorted({g.segment for g in groups} | {g.prefix for g in groups})
    raise RenderError(f"no block '{block}'; choose one of: {', '.join(names)} or a layer index")


def _huge(layers) -> bool:
    """A layer set too large to list: described from its ranges instead (never enumerated)."""
    from ..compiler.schema.layerset import SMALL

    return len(layers) > SMALL


def _ranges_text(layers, limit: int | None = None) -> str:
    from ..compiler.schema.layerset import ranges_of, union

    try:
        rs = union(layers).ranges
    except ValueError:
        rs = ranges_of(layers)
    parts = [f"{r.start}" if len(r) == 1 else f"{r.start}–{r[-1]}" + (f" step {r.step}" if r.step != 1 else "")
             for r in sorted(rs, key=lambda r: r.start)]
    text = ", ".join(parts)
    if limit is not None and len(text) > limit:
        text = text[:limit].rsplit(",", 1)[0] + ", …"
    return text


def merged_layers(sets):
    """The layers of several groups in order: a sorted tuple when small, ranges when huge."""
    from ..compiler.schema.layerset import union

    if sum(len(x) for x in sets) <= _small():
        return tuple(sorted(l for x in sets for l in x))
    return union(*sets)


def same_layers(a, b) -> bool:
    """Whether two layer collections list the same layers in the same order (compared
    range by range when huge, never listed)."""
    from ..compiler.schema.layerset import ranges_of

    if len(a) != len(b):
        return False
    if len(a) <= _small():
        return tuple(a) == tuple(b)
    return ranges_of(a) == ranges_of(b)


def _small() -> int:
    from ..compiler.schema.layerset import SMALL

    return SMALL


def layer_text(layers) -> str:
    """(3,4,5,6,7,9,10) -> '3–7, 9–10'."""
    if _huge(layers):
        return _ranges_text(layers)
    layers = sorted(layers)
    if not layers:
        return ""
    parts, start, prev = [], layers[0], layers[0]
    for x in layers[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        parts.append(f"{start}" if start == prev else f"{start}–{prev}")
        if x is not None:
            start = prev = x
    return ", ".join(parts)


def layer_text_short(layers, limit: int = 36) -> str:
    """Compact layer list for labels: arithmetic progressions as 'a–b step k',
    long lists cut with '…' (the layer map shows every layer)."""
    if _huge(layers):
        return _ranges_text(layers, limit)
    layers = sorted(layers)
    if len(layers) >= 3:
        step = layers[1] - layers[0]
        if step > 1 and all(b - a == step for a, b in zip(layers, layers[1:])):
            return f"{layers[0]}–{layers[-1]} step {step}"
        if step > 1 and all(b - a == step for a, b in zip(layers[:-1], layers[1:-1])):
            return f"{layers[0]}–{layers[-2]} step {step}, {layers[-1]}"
    text = layer_text(layers)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(",", 1)[0]
    return cut + ", …"


def segment_rows(group: Group) -> sp.Expr:
    for op in group.ops:
        if op.rows != 0 and op.inputs:
            return op.rows
    return B * P


def _multiple_of(rows, base):
    """k when rows == k·base structurally (no simplification), else None."""
    if rows == base:
        return sp.Integer(1)
    coeff, rest = rows.as_coeff_Mul()
    if rest == base and coeff != 0:
        return coeff
    if isinstance(rows, sp.Mul) and isinstance(base, sp.Mul):
        # B*k*(...) vs B*(...): compare after taking out numeric factors
        c1, r1 = rows.as_coeff_Mul()
        c2, r2 = base.as_coeff_Mul()
        if r1 == r2 and c2 != 0:
            return c1 / c2
    return None


_ROWS_CACHE: dict = {}


def rows_text(rows, base=None) -> str:
    """Rows in the chapter's notation: m = B·P; m_l for a layer's own rows."""
    rows = sp.sympify(rows)
    key = (rows, base)
    if key in _ROWS_CACHE:
        return _ROWS_CACHE[key]
    text = None
    k = _multiple_of(rows, B * P)
    if k is not None:
        text = "m" if k == 1 else f"{k}·m"
    elif base is not None and base != 0:
        k = _multiple_of(rows, sp.sympify(base))
        if k is not None:
            text = "m_l" if k == 1 else f"{k}·m_l"
    if text is None:
        text = expr_text(rows)
    _ROWS_CACHE[key] = text
    return text


class _SpecPrinter(StrPrinter):
    """sympy expressions printed back in the spec language: min/max, if(c, a, b),
    ==, and/or, so a label reads like the spec it came from."""

    def _print_Min(self, expr):
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Max(self, expr):
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Piecewise(self, expr):
        *pairs, (last, _) = expr.args
        text = self._print(last)
        for value, cond in reversed(pairs):
            text = f"if({self._print(cond)}, {self._print(value)}, {text})"
        return text

    def _print_Equality(self, expr):
        return f"{self._print(expr.lhs)} == {self._print(expr.rhs)}"

    def _print_Unequality(self, expr):
        return f"{self._print(expr.lhs)} != {self._print(expr.rhs)}"

    def _print_And(self, expr):
        return " and ".join(self.parenthesize(a, 1) for a in expr.args)

    def _print_Or(self, expr):
        return " or ".join(self.parenthesize(a, 1) for a in expr.args)

    def _print_Infinity(self, expr):
        return "∞"


def expr_text(expr) -> str:
    text = _SpecPrinter().doprint(sp.sympify(expr))
    return text.replace("**", "^").replace("*", "·")


def shape_text(rows, width, base=None) -> str:
    return f"{rows_text(rows, base)}×{expr_text(width)}"


def weight_text(w) -> str:
    return "×".join(expr_text(s) for s in w.shape)


def si(value, unit: str = "", digits: int = 3) -> str:
    """1.23e12 -> '1.23 T' (decimal prefixes)."""
    value = float(value)
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}".strip()
    return f"{value:.{digits}g} {unit}".strip()


def params_text(value) -> str:
    """A parameter count in words: '1.174 billion' (never '1.174 B': B means bytes)."""
    value = float(value)
    if value >= 1e9:
        return f"{value / 1e9:.3f} billion"
    if value >= 1e6:
        return f"{value / 1e6:.2f} million"
    return f"{value:,.0f}"


def binary_bytes(value) -> str:
    value = float(value)
    for factor, name in ((2 ** 40, "TiB"), (2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {name}"
    return f"{value:.4g} B"


def _signature(model: Model, g: Group) -> tuple:
    ops = tuple((g.rel(o), o.kind, tuple((w.name, tuple(map(str, w.shape)), str(w.copies)) for w in o.weights))
                for o in g.ops)
    stores = tuple(sorted((s, w is not None, r is not None) for s, (w, r) in store_uses(model, g).items()))
    return ops, stores


def layer_types(model: Model, groups: list) -> list:
    """Groups of a segment merged into layer types: same ops, weights and stores
    (they may differ in FLOPs or entry counts, e.g. a per-layer parameter)."""
    types: dict = {}
    for g in groups:
        types.setdefault(_signature(model, g), []).append(g)
    out = []
    for i, members in enumerate(types.values()):
        first = members[0]
        layers = merged_layers([m.layers for m in members])
        letter = LETTERS[i % 26] + (str(i // 26) if i >= 26 else "")
        out.append(Group(first.segment, i, first.prefix, letter, layers, sum(m.mult for m in members),
                         first.stage, first.ops, members))
    return out


def store_uses(model: Model, group: Group) -> dict:
    """{store: (write entries or None, read entries or None)} of a group."""
    if group.members:
        merged: dict = {}
        for m in group.members:
            for store, (w, r) in store_uses(model, m).items():
                merged.setdefault(store, (w, r))
        return merged
    out: dict = {}
    for kind, uses in (("w", model.states), ("r", model.reads)):
        for use in uses:
            if use.segment != group.segment or not same_layers(use.layers, group.layers):
                continue
            w, r = out.get(use.store, (None, None))
            if kind == "w":
                w = use.entries if w is None else w + use.entries
            else:
                r = use.entries if r is None else r + use.entries
            out[use.store] = (w, r)
    return out


def entries_text(expr) -> str:
    return expr_text(expr)


def group_differences(groups: list) -> dict:
    """{prefix: [text, ...]}: ops a group has that not every group of its
    segment has, and ops whose FLOPs differ between groups."""
    if len(groups) < 2:
        return {g.prefix: [] for g in groups}
    names = [{g.rel(o) for o in g.ops} for g in groups]
    common = set.intersection(*names)
    flops_by_name: dict = {}
    for g in groups:
        for o in g.ops:
            flops_by_name.setdefault(g.rel(o), set()).add(sp.srepr(o.flops))
    out = {}
    for g, own in zip(groups, names):
        lines = []
        extra = [o for o in g.ops if g.rel(o) not in common and o.kind not in ("elementwise", "param")
                 and (o.weights or o.flops != 0 or o.kind == "lookup")]
        by_comp: dict = {}
        for o in extra:
            by_comp.setdefault(o.component, []).append(g.rel(o).split(".")[-1])
        for comp, ops in by_comp.items():
            lines.append(f"+ {comp}: {', '.join(ops)}")
        varying = sorted({g.rel(o) for o in g.ops if g.rel(o) in common and o.flops != 0
                          and len(flops_by_name[g.rel(o)]) > 1})
        if varying:
            lines.append("FLOPs differ: " + ", ".join(dict.fromkeys(v.split(".")[-1] for v in varying)))
        if len(g.members) > 1:
            inner = set()
            for o in g.ops:
                rel = g.rel(o)
                exprs = {sp.srepr(o2.flops) for m in g.members for o2 in m.ops if m.rel(o2) == rel}
                if len(exprs) > 1:
                    inner.add(rel.split(".")[-1])
            lines.append(f"{len(g.members)} variants by layer" + (f" (FLOPs of {', '.join(sorted(inner))})"
                                                                  if inner else ""))
        if not lines:
            missing = sorted(set.union(*names) - own)
            if missing:
                lines.append("without " + ", ".join(m.split(".")[-1] for m in missing[:4]))
        out[g.prefix] = lines
    return out
