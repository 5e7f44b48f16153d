"""The block library's reference: each block instantiated with its parameters
as free symbols, so its documented costs are derived, not hand-written.

Every required parameter becomes a positive integer symbol of the same name and
the block runs on `m` rows; parameters with defaults keep them. The result
lists each op with its parameters and matrix FLOPs as expressions in those
symbols, plus the block totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp

from ...dsl import ast
from ...dsl.ast import unparse
from ...dsl.parser import parse_layer_set
from .build import Builder, dead_ops
from ..schema.expressions import Evaluator
from ..schema.spec import BlockDef, Segment, Spec, StoreDef, load_library

ROWS = sp.Symbol("m", integer=True, positive=True)


@dataclass
class OpRow:
    statement: str
    kind: str
    component: str
    params: sp.Expr
    flops: sp.Expr


@dataclass
class BlockRef:
    name: str
    file: str
    doc: str
    params: list                    # (name, default text or None)
    inputs: list                    # (name, width)
    outputs: list
    ops: list = field(default_factory=list)   # OpRow
    params_total: sp.Expr = sp.Integer(0)
    flops_total: sp.Expr = sp.Integer(0)
    error: str = ""                 # why costs could not be derived symbolically
    assumed: list = field(default_factory=list)   # flags fixed to show one variant
    dead_ends: list = field(default_factory=list)  # (op text, location) of ops nothing consumes


def _library_spec(path: Path) -> Spec:
    blocks, elementwise = {}, set()
    load_library(path, blocks, elementwise, set())
    # the stores a block declares belong to the spec that uses it; stand-ins let
    # the block compile here (state is not part of the reference's costs)
    stores = {}
    for block in blocks.values():
        for decl in block.state + block.reads + block.writes:
            stores[str(decl.store)] = StoreDef(str(decl.store), (), {}, "", decl.loc)
    return Spec(str(path), "block library", "", "", {}, None, {}, {}, {}, stores, blocks, elementwise, [])


def block_reference(path) -> list:
    """BlockRef for every block defined in the library file `path` (not its imports)."""
    path = Path(path).resolve()
    spec = _library_spec(path)
    refs = []
    for block in spec.blocks.values():
        if Path(block.file).resolve() != path:
            continue
        refs.append(_reference(spec, block))
    return refs


def _reference(spec: Spec, block: BlockDef) -> BlockRef:
    params = [(name, None if default is None else _text(default)) for name, default in block.params.items()]
    ref = BlockRef(block.name, block.file, " ".join(block.doc.split()), params,
                   [(n, _text(w)) for n, w in block.inputs.items()], list(block.outputs))
    builder = Builder(spec, {})
    env = dict(builder.env)
    # a block runs on m rows: positions start..n-1 (cnt of them) of each request
    env.update(m=ROWS, start=sp.Symbol("start", integer=True, nonnegative=True),
               cnt=sp.Symbol("cnt", integer=True, positive=True))
    bound = {name: sp.Symbol(name, integer=True, positive=True) for name, default in block.params.items()
             if default is None}
    # a block that calls other blocks under when=<flag> needs the flag decided:
    # the reference shows the variant with every such flag on
    for stmt in block.ops:
        for kw in stmt.kwargs:
            if kw.name == "when" and stmt.func in spec.blocks:
                for node in kw.value.walk():
                    if isinstance(node, ast.Name) and node.id in bound:
                        bound[node.id] = sp.Integer(1)
                        if f"{node.id} = 1" not in ref.assumed:
                            ref.assumed.append(f"{node.id} = 1")
    try:
        for name, default in block.params.items():
            if default is not None:
                bound[name] = Evaluator({**env, **bound}, builder.sets)(default)
        segment = Segment("block", block, parse_layer_set("0"), {}, None, "", block.loc)
        builder.instantiate(block, env, bound, block.name, segment, (), 1, None, defaults={})
    except Exception as exc:  # noqa: BLE001 - a reference page reports, it does not stop
        ref.error = str(getattr(exc, "message", exc)).splitlines()[0]
        return ref
    ref.dead_ends = [(op.stmt.text.strip(), op.stmt.loc) for op in dead_ops(builder.ops, builder.returned)]
    for op in builder.ops:
        if op.kind in ("view", "route", "combine", "select", "split", "concat") and not op.weights:
            continue
        row = OpRow(op.stmt.text.strip(), op.kind, op.component, sp.factor(op.params()), sp.factor(op.flops))
        ref.ops.append(row)
    ref.params_total = sp.factor(sum((r.params for r in ref.ops), sp.Integer(0)))
    ref.flops_total = sp.factor(sum((r.flops for r in ref.ops), sp.Integer(0)))
    return ref


def _text(node) -> str:
    return unparse(node)
