"""The primitive ops the compiler knows, and the cost rule of each.

Every op statement in a block is one of these (or a call of another block).
A rule checks the shapes of its inputs, returns the output shapes and fills
the op's costs: parameters (per weight), matrix FLOPs, scalar work and the
bytes it reads from lookup tables. FMA = 2 FLOPs throughout."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from ...dsl import ast
from ...dsl.errors import SpecError


@dataclass
class Tensor:
    """An edge of the graph: a [rows, width] activation and the op that made it."""

    rows: sp.Expr
    width: sp.Expr
    producer: str | None = None   # node id


@dataclass
class Weight:
    name: str
    shape: tuple                  # per copy, e.g. (i, o)
    copies: sp.Expr               # groups × experts
    group: str

    @property
    def params(self) -> sp.Expr:
        out = self.copies
        for dim in self.shape:
            out = out * dim
        return out


@dataclass
class OpCost:
    kind: str
    outputs: list                 # Tensor per target
    weights: list = field(default_factory=list)
    flops: sp.Expr = sp.Integer(0)        # matrix FLOPs
    scalar: sp.Expr = sp.Integer(0)       # declared non-matrix work
    lookup_bytes_per_param: bool = False  # weights are read per row (lookup tables)
    lookup_rows: sp.Expr = sp.Integer(0)
    experts: sp.Expr = sp.Integer(1)      # copies of which only touched ones are read
    formula: str = ""                     # human-readable FLOPs rule


def _same(a, b) -> bool:
    diff = sp.expand(a - b)
    return diff == 0 or (not diff.is_number and sp.simplify(diff) == 0)


def check_width(tensor_name: str, tensor: Tensor, expected, node: ast.Node, what: str):
    if not _same(tensor.width, expected):
        raise SpecError(f"shape mismatch: '{tensor_name}' has width {tensor.width} but {what} expects {expected}",
                        node.loc, span=len(tensor_name), expected=f"an input of width {expected}")


class OpContext:
    """What a rule sees: evaluated positional args and keyword values, plus helpers."""

    def __init__(self, stmt: ast.Stmt, tensors: dict, evaluate, kwargs: dict):
        self.stmt = stmt
        self.tensors = tensors
        self.evaluate = evaluate
        self.kwargs = kwargs      # name -> (value, node)

    def tensor(self, node: ast.Node) -> tuple[str, Tensor]:
        if not isinstance(node, ast.Name):
            raise SpecError("expected a tensor name here", node.loc, expected="the name of a tensor defined earlier")
        if node.id not in self.tensors:
            from ...dsl.errors import did_you_mean

            raise SpecError(f"unknown tensor '{node.id}'", node.loc, span=len(node.id),
                            expected="a tensor defined earlier in the block: " + did_you_mean(node.id, self.tensors))
        value = self.tensors[node.id]
        if value is None:
            raise SpecError(f"tensor '{node.id}' is not computed here (the op that makes it is disabled by when=)",
                            node.loc, span=len(node.id))
        return node.id, value

    def weight(self, node: ast.Node, group: str) -> Weight:
        if not isinstance(node, ast.Subscript):
            raise SpecError("expected a weight like W[d, f]", node.loc, expected="NAME[dim, ...]")
        shape = tuple(self.evaluate(i) for i in node.indices)
        return Weight(node.name, shape, sp.Integer(1), group)

    def arg(self, key: str, default=None, required: bool = False):
        if key in self.kwargs:
            return self.kwargs[key][0]
        if required:
            raise SpecError(f"{self.stmt.func}() needs '{key}='", self.stmt.loc, span=len(self.stmt.text),
                            expected=f"{key}=<expression>")
        return default

    def n_targets(self, n: int):
        if len(self.stmt.targets) != n:
            raise SpecError(f"{self.stmt.func} produces {n} tensor(s), but {len(self.stmt.targets)} names are given",
                            self.stmt.loc, expected=f"{n} target name(s)")


# ------------------------------------------------------------------ rules
def matmul(ctx: OpContext) -> OpCost:
    """y = x @ W[i, o]; groups=g, experts=E.
    x is [r, g*i]; y is [r, g*o]; parameters E*g*i*o; FLOPs 2*r*g*i*o."""
    x_node, w_node = ctx.stmt.args
    x_name, x = ctx.tensor(x_node)
    weight = ctx.weight(w_node, ctx.arg("group", "other"))
    if len(weight.shape) != 2:
        raise SpecError(f"matmul weight '{weight.name}' must have 2 dims [in, out], got {len(weight.shape)}",
                        w_node.loc, expected="W[in, out]")
    i, o = weight.shape
    groups, experts = ctx.arg("groups", sp.Integer(1)), ctx.arg("experts", sp.Integer(1))
    check_width(x_name, x, groups * i, x_node, f"'{weight.name}'" + (f" ({groups} groups of {i})" if groups != 1 else ""))
    weight.copies = groups * experts
    flops = 2 * x.rows * groups * i * o
    return OpCost("matmul", [Tensor(x.rows, groups * o)], [weight], flops=flops, experts=experts,
                  formula=f"2·rows·{'%s·' % groups if groups != 1 else ''}{i}·{o}")


def lookup(ctx: OpContext) -> OpCost:
    """e = lookup(ids, table[V, d]; per_row=k): no FLOPs; gathers k rows of width d
    per input row (one by default) and concatenates them: [rows, k*d]."""
    ctx.n_targets(1)
    ids_name, ids = ctx.tensor(ctx.stmt.args[0])
    table = ctx.weight(ctx.stmt.args[1], ctx.arg("group", "other"))
    if len(table.shape) != 2:
        raise SpecError("lookup table must be [rows, width]", ctx.stmt.args[1].loc)
    per_row = ctx.arg("per_row", sp.Integer(1))
    return OpCost("lookup", [Tensor(ids.rows, per_row * table.shape[1])], [table], lookup_bytes_per_param=True,
                  lookup_rows=per_row * ids.rows, formula="0 (row reads)")


def attend(ctx: OpContext) -> OpCost:
    """o = attend(q, k, v; heads, qk, v, pairs): QK and PV products over `pairs`
    query-key pairs: FLOPs 2*heads*(qk + v)*pairs. q must be [r, heads*qk]."""
    heads, qk = ctx.arg("heads", required=True), ctx.arg("qk", required=True)
    v = ctx.arg("v", qk)
    pairs = ctx.arg("pairs", required=True)
    q_name, q = ctx.tensor(ctx.stmt.args[0])
    if ctx.arg("check_q", sp.Integer(1)) != 0:
        check_width(q_name, q, heads * qk, ctx.stmt.args[0], f"attention with {heads} heads of {qk}")
    for node in ctx.stmt.args[1:]:
        ctx.tensor(node)
    return OpCost("attend", [Tensor(q.rows, heads * v)], flops=2 * heads * (qk + v) * pairs,
                  formula=f"2·{heads}·({qk}+{v})·pairs")


def score(ctx: OpContext) -> OpCost:
    """s = score(q, k; heads, width, pairs): dot products only: 2*heads*width*pairs."""
    heads, width = ctx.arg("heads", required=True), ctx.arg("width", required=True)
    pairs = ctx.arg("pairs", required=True)
    q_name, q = ctx.tensor(ctx.stmt.args[0])
    for node in ctx.stmt.args[1:]:
        ctx.tensor(node)
    return OpCost("score", [Tensor(q.rows, ctx.arg("out", heads))], flops=2 * heads * width * pairs,
                  formula=f"2·{heads}·{width}·pairs")


def work(ctx: OpContext) -> OpCost:
    """y = work(inputs...; flops=F, width=w): matrix work declared by formula
    (e.g. chunked recurrences), output [rows of first input, w]."""
    _, first = ctx.tensor(ctx.stmt.args[0])
    for node in ctx.stmt.args[1:]:
        ctx.tensor(node)
    return OpCost("work", [Tensor(ctx.arg("rows", first.rows), ctx.arg("width", first.width))],
                  flops=ctx.arg("flops", sp.Integer(0)), scalar=ctx.arg("scalar", sp.Integer(0)),
                  formula="declared")


def route(ctx: OpContext) -> OpCost:
    """r = route(x, scores; top_k=k): dispatch each row to the k experts its router
    scores pick: [k*rows, w]. The scores (one row per row of x) are an input so the
    router is part of the dataflow; they cost nothing here."""
    x_name, x = ctx.tensor(ctx.stmt.args[0])
    for node in ctx.stmt.args[1:]:
        s_name, s = ctx.tensor(node)
        if not _same(s.rows, x.rows):
            raise SpecError(f"route: scores '{s_name}' have {s.rows} rows, '{x_name}' has {x.rows}", node.loc,
                            expected="one row of router scores per routed row")
    k = ctx.arg("top_k", required=True)
    return OpCost("route", [Tensor(k * x.rows, x.width)], formula="0")


def combine(ctx: OpContext) -> OpCost:
    """y = combine(r; top_k=k): weighted sum of k expert rows: [rows/k, w]."""
    _, x = ctx.tensor(ctx.stmt.args[0])
    k = ctx.arg("top_k", required=True)
    rows = x.rows / k
    if sp.fraction(rows)[1] != 1:     # cancel (the polys machinery) only when k does not divide out by itself
        rows = sp.cancel(rows)
    return OpCost("combine", [Tensor(rows, x.width)], formula="0")


def select(ctx: OpContext) -> OpCost:
    """y = select(x; rows=r): keep r of the rows (e.g. the last position of each request)."""
    _, x = ctx.tensor(ctx.stmt.args[0])
    return OpCost("select", [Tensor(ctx.arg("rows", required=True), x.width)], formula="0")


def split(ctx: OpContext) -> OpCost:
    """a, b = split(x, wa, wb): split the width; the parts must add up."""
    x_name, x = ctx.tensor(ctx.stmt.args[0])
    widths = [ctx.evaluate(a) for a in ctx.stmt.args[1:]]
    ctx.n_targets(len(widths))
    check_width(x_name, x, sum(widths), ctx.stmt.args[0], f"split into {' + '.join(map(str, widths))}")
    return OpCost("split", [Tensor(x.rows, w) for w in widths], formula="0")


def concat(ctx: OpContext) -> OpCost:
    """y = concat(a, b, ...): join widths of tensors with equal rows."""
    parts = [ctx.tensor(a) for a in ctx.stmt.args]
    rows = parts[0][1].rows
    for (name, t), node in zip(parts, ctx.stmt.args):
        if not _same(t.rows, rows):
            raise SpecError(f"concat: '{name}' has {t.rows} rows, expected {rows}", node.loc)
    return OpCost("concat", [Tensor(rows, sum(t.width for _, t in parts))], formula="0")


def view(ctx: OpContext) -> OpCost:
    """y = view(x; rows=r, width=w): same elements, new shape."""
    x_name, x = ctx.tensor(ctx.stmt.args[0])
    rows, width = ctx.arg("rows", x.rows), ctx.arg("width", x.width)
    if not _same(rows * width, x.rows * x.width):
        raise SpecError(f"view of '{x_name}' changes the element count ({x.rows}·{x.width} → {rows}·{width})",
                        ctx.stmt.loc, expected="rows·width equal to the input's")
    return OpCost("view", [Tensor(rows, width)], formula="0")


def param(ctx: OpContext) -> OpCost:
    """p = param(W[...]): a parameter tensor used without matrix work (biases, sinks, tables of scales)."""
    weights = [ctx.weight(a, ctx.arg("group", "other")) for a in ctx.stmt.args]
    return OpCost("param", [None] * len(ctx.stmt.targets), weights, formula="0")


def elementwise(ctx: OpContext) -> OpCost:
    """y = f(x, w[d], ...): element-wise work (norms, activations, rotations, gates):
    no matrix FLOPs; weights given as args are parameters; `work=` declares scalar work."""
    tensors, weights = [], []
    for node in ctx.stmt.args:
        if isinstance(node, ast.Subscript):
            weights.append(ctx.weight(node, ctx.arg("group", "other")))
        else:
            tensors.append(ctx.tensor(node))
    if not tensors:
        raise SpecError(f"{ctx.stmt.func}() needs at least one input tensor", ctx.stmt.loc)
    first = tensors[0][1]
    width, rows = ctx.arg("width", first.width), ctx.arg("rows", first.rows)
    return OpCost("elementwise", [Tensor(rows, width) for _ in ctx.stmt.targets], weights,
                  scalar=ctx.arg("work", sp.Integer(0)), formula="0 (element-wise)")


RULES = {"@": matmul, "lookup": lookup, "attend": attend, "score": score, "work": work, "route": route,
         "combine": combine, "select": select, "split": split, "concat": concat, "view": view, "param": param}

# keyword arguments every op accepts, and those whose values are names rather than numbers
# shard=/units= declare how an op splits over tensor-parallel devices (compiler/deploy/sharding.py)
COMMON_KWARGS = {"when", "group", "component", "stage", "shard", "units"}
NAME_KWARGS = {"group", "component", "stage"}

# op-specific keyword arguments (beyond COMMON_KWARGS); anything else is an error
RULE_KWARGS = {
    "@": {"groups", "experts"}, "lookup": {"per_row"}, "attend": {"heads", "qk", "v", "pairs", "check_q"},
    "score": {"heads", "width", "pairs", "out"}, "work": {"flops", "scalar", "width", "rows"},
    "route": {"top_k"}, "combine": {"top_k"}, "select": {"rows"}, "split": set(), "concat": set(),
    "view": {"rows", "width"}, "param": set(), "elementwise": {"work", "width", "rows"},
}

# the FLOPs component an op reports under when the spec does not say
DEFAULT_COMPONENT = {"attend": "attention_interaction", "score": "index_interaction", "lookup": "embedding",
                     "elementwise": "elementwise", "param": "param"}
