"""Compile a Spec into a Model: dimensions and layer sets evaluated, blocks
instantiated per group of identical layers, shapes checked on every edge, and a
networkx DiGraph whose nodes are ops (with multiplicities) and whose edges are
tensors. One Model is one choice of the spec's options (e.g. execution mode)."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from ...dsl import ast
from ...dsl.errors import SpecError, did_you_mean
from . import primitives as prim
from ...dsl.limits import check_digits, limit, limit_error
from ..schema.expressions import Evaluator, as_number, require_integer
from ..schema.layerset import LayerIndices
from ..deploy.sharding import SHARD_KINDS
from ..schema.spec import BlockDef, Segment, Spec
from ..schema.symbols import DERIVED, DTYPE_BYTES, SCENARIO, S, B, H


@dataclass
class OpNode:
    id: str
    name: str                 # qualified: segment.block-path.target
    kind: str
    segment: str
    stage: str
    component: str
    layers: tuple             # layer indices this node stands for; () for unlayered segments
    mult: int
    weights: list
    flops: sp.Expr            # per instance, matrix FLOPs
    scalar: sp.Expr
    lookup: bool
    lookup_rows: sp.Expr
    experts: sp.Expr
    rows: sp.Expr             # rows of the first input
    formula: str
    stmt: ast.Stmt
    inputs: list = field(default_factory=list)    # (tensor name, Tensor)
    outputs: list = field(default_factory=list)
    shard: str | None = None  # how it splits over tp (compiler/deploy/sharding.py); None = replicated
    units: sp.Expr | None = None  # indivisible pieces of the split dimension

    def params(self, group: str | None = None) -> sp.Expr:
        return sum((w.params for w in self.weights if group is None or w.group == group), sp.Integer(0))

    @property
    def short(self) -> str:
        return self.name.split(".")[-1]

    def matches(self, op: str) -> bool:
        """`op=q` matches 'layers.attn.q' and 'attn.q' matches too: any dotted suffix."""
        return self.name == op or self.name.endswith("." + op)


@dataclass
class StateUse:
    store: str
    entries: sp.Expr          # in H (per request)
    layers: tuple
    mult: int
    segment: str
    block: str = ""           # the instantiated block's name prefix (roofline rows attribute traffic by it)


@dataclass
class Model:
    spec: Spec
    choices: dict
    dims: dict
    sets: dict
    ops: list
    states: list
    reads: list
    graph_: object            # the networkx graph, built from the ops on first use (see .graph)
    max_context: sp.Expr | None
    runs: list                # (segment, group index, first layer, last layer)
    writes: list = field(default_factory=list)   # StateUse: entries one decode step at length H writes
    returned: set = field(default_factory=set)   # ids of ops whose tensors some block returns

    def dead_ops(self) -> list:
        """Ops whose tensors nothing consumes and no block returns: a dead end in the
        graph, which in a faithful spec means a miswired block (a `param` op only
        declares parameters, so it is exempt)."""
        return dead_ops(self.ops, self.returned)

    @property
    def graph(self):
        if self.graph_ is None:
            self.graph_ = graph_of(self.ops)
        return self.graph_


def dead_ops(ops, returned) -> list:
    """The ops of `ops` whose tensors no op of `ops` consumes and whose ids are not in
    `returned` (a `param` op only declares parameters, so it is exempt)."""
    consumed = {t.producer for op in ops for _, t in op.inputs if t is not None}
    return [op for op in ops if op.outputs and op.kind != "param"
            and op.id not in consumed and op.id not in returned]


def graph_of(ops):
    """The op graph: a node per op, an edge per tensor from the op that made it.
    Derived from the ops on demand, so queries never pay for networkx."""
    import networkx as nx

    graph = nx.DiGraph()
    for op in ops:
        graph.add_node(op.id, op=op)
        for tname, tensor in op.inputs:
            if tensor.producer is not None:
                graph.add_edge(tensor.producer, op.id, tensor=tname, rows=tensor.rows, width=tensor.width)
    return graph


def _base_env(spec: Spec, overrides: dict | None = None):
    """Dimensions in declaration order; an overridden dimension takes its new
    value, and dimensions defined from it follow (a what-if variant)."""
    env: dict = dict(DTYPE_BYTES)
    env.update(SCENARIO)
    env.update(DERIVED)
    dims = {}
    overrides = overrides or {}
    for key, node in spec.dims.items():
        if key in overrides:
            value = overrides[key]
        else:
            ev = Evaluator(env, what="dimension")
            value = tuple(ev(n) for n in node) if isinstance(node, tuple) else ev(node)
            for item, item_node in (zip(value, node) if isinstance(node, tuple) else [(value, node)]):
                _check_dimension(key, item, item_node)
        env[key] = dims[key] = value
    return env, dims


def _check_dimension(key: str, value, node):
    """A dimension is a concrete real number of bounded size: the scenario symbols
    (B, S, P, G, H, ...) are per query, so `d: H` cannot mean anything."""
    value = sp.sympify(value)
    if not value.is_number:
        names = sorted(str(x) for x in value.free_symbols)
        raise SpecError(f"dimension '{key}' depends on {', '.join(names)}, which "
                        f"{'is a scenario symbol' if len(names) == 1 else 'are scenario symbols'} set per query",
                        node.loc, expected="a number or an expression of other dimensions")
    if value.is_real is False or value.has(sp.zoo, sp.oo, sp.nan):
        raise SpecError(f"dimension '{key}' is not a finite real number ({value})", node.loc,
                        expected="a finite number")
    check_digits(value, node.loc)


def _layer_indices(expr, env, sets, where) -> LayerIndices:
    """The layer set an expression names, as ranges (never one entry per layer)."""
    if isinstance(expr, str):
        return sets[expr]
    ev = Evaluator(env, sets, what="dimension")
    out = []
    for item in expr.items:
        if isinstance(item, ast.LayerRange):
            first = require_integer(ev(item.first), item.first, "first layer")
            last = require_integer(ev(item.last), item.last, "last layer")
            step = require_integer(ev(item.step), item.step, "step") if item.step is not None else 1
            if step < 1 or last < first:
                raise SpecError(f"empty layer range {first}..{last}", item.loc, expected="first <= last, step >= 1")
            if last >= limit("layers"):
                raise limit_error("layers", item.loc, found=f"layer {last:,}")
            out.append(range(first, last + 1, step))
        else:
            index = require_integer(ev(item), item, "layer index")
            if index >= limit("layers"):
                raise limit_error("layers", item.loc, found=f"layer {index:,}")
            out.append(range(index, index + 1))
    indices = LayerIndices(out)
    twice = indices.first_overlap()
    if twice is not None:
        raise SpecError(f"layer set lists layer {twice} twice in {where}", expr.loc)
    return indices


def _mentions_layer(nodes) -> bool:
    """Whether any expression reads `layer` (then each layer is evaluated on its own)."""
    return any(isinstance(n, ast.Name) and n.id == "layer" for node in nodes if node is not None
               for n in node.walk())


class Builder:
    def __init__(self, spec: Spec, choices: dict, overrides: dict | None = None):
        self.spec = spec
        self.choices = choices
        self.env, self.dims = _base_env(spec, overrides)
        self.sets = {}
        for key, expr in spec.sets.items():
            self.sets[key] = _layer_indices(expr, self.env, self.sets, f"set '{key}'")
        for opt_name, choice in choices.items():
            option = spec.options[opt_name]
            ev = Evaluator(self.env, self.sets, what="name")
            for var, node in option.choices[choice].items():
                self.env[var] = ev(node)
        self.ops: list = []
        self.states: list = []
        self.reads: list = []
        self.writes: list = []
        self.node_ids: set = set()
        self.runs: list = []
        self.returned: set = set()
        self._calling: list = []   # blocks being instantiated (a block may not call itself)

    # ------------------------------------------------------------ segments
    def build(self) -> Model:
        stream: prim.Tensor | None = None
        for segment in self.spec.stack:
            stream = self._segment(segment, stream)
        max_ctx = None
        if self.spec.max_context is not None:
            max_ctx = Evaluator(self.env, what="dimension")(self.spec.max_context)
            if not (max_ctx.is_Integer and max_ctx > 0):
                raise SpecError(f"max_context must be a positive integer, got {max_ctx}", self.spec.max_context.loc,
                                expected="the longest context the model supports, e.g. 40960")
        self._check_sizes()
        return Model(self.spec, self.choices, self.dims, self.sets, self.ops, self.states, self.reads,
                     None, max_ctx, self.runs, self.writes, self.returned)

    def _segment(self, seg: Segment, stream):
        layers = _layer_indices(seg.layers, self.env, self.sets, f"segment '{seg.name}'") \
            if seg.layers is not None else None
        # a layer is evaluated on its own when its bindings, its stack entry's state lines
        # or its block's own ops read `layer`; otherwise identical layers are one group
        per_layer = layers is not None and (_mentions_layer(
            [seg.start, *seg.bindings.values(),
             *(d for p, d in seg.block.params.items() if p not in seg.bindings),
             *(n for _, decl in seg.state for n in (decl.entries, decl.when))])
            or self._block_reads_layer(seg.block))
        if layers is not None and not per_layer:
            # identical layers: one group, evaluated once, whatever the layer count
            order, groups = [None], {None: (self._layer_env(seg, layers[0]), None, layers)}
            env = groups[None][0]
            groups[None] = (env, self._bind(seg.block, seg.bindings, env, seg), layers)
        else:
            if layers is not None and len(layers) > limit("enumerated_layers"):
                raise limit_error("enumerated_layers", seg.loc, found=f"{len(layers):,} layers")
            groups, order = {}, []
            for layer in (layers if layers is not None else [None]):
                env = self._layer_env(seg, layer)
                bound = self._bind(seg.block, seg.bindings, env, seg)
                key = (env["start"], tuple(sorted((k, v) for k, v in bound.items() if not isinstance(v, str))),
                       self._layer_key(seg, env, bound, layer))
                if key not in groups:
                    groups[key] = (env, bound, [])
                    order.append(key)
                groups[key][2].append(layer)
        group_outputs = {}
        for gi, key in enumerate(order):
            env, bound, members = groups[key]
            layer_tuple = members if isinstance(members, LayerIndices) else \
                LayerIndices.of(l for l in members if l is not None)
            prefix = seg.name if len(order) == 1 else f"{seg.name}#{gi}"
            outputs = self.instantiate(seg.block, env, bound, prefix, seg, layer_tuple,
                                        len(members), stream, defaults={"stage": seg.stage},
                                        extra_state=seg.state)
            group_outputs[gi] = outputs
        if layers is None:
            out = group_outputs[0]
            return out[0] if out else stream
        # runs of consecutive layers that share a group, in layer order (for model-level views)
        if len(order) == 1:
            self.runs.append((seg.name, 0, layers[0], layers[-1]))
            last_group = 0
        else:
            key_of = {}
            for gi, key in enumerate(order):
                for layer in groups[key][2]:
                    key_of[layer] = gi
            listed = list(layers)
            run_start = None
            for idx, layer in enumerate(listed):
                gi = key_of[layer]
                if run_start is None:
                    run_start = (gi, layer)
                nxt = listed[idx + 1] if idx + 1 < len(listed) else None
                if nxt is None or key_of[nxt] != gi:
                    self.runs.append((seg.name, run_start[0], run_start[1], layer))
                    run_start = None
            last_group = key_of[listed[-1]]
        out = group_outputs[last_group]
        return out[0] if out else stream

    def _layer_key(self, seg: Segment, env: dict, bound: dict, layer):
        """What else, besides the bound parameters, makes a layer differ from another:
        the segment's own state declarations (often written with `layer`, evaluated
        here), and the layer index itself when the block's ops or state read `layer`
        directly. Without it, layers that differ only there would share a group."""
        if layer is None:
            return None
        ev = Evaluator({**env, **bound}, self.sets)
        decls = []
        for kind, decl in seg.state:
            active = as_number(ev(decl.when)) if decl.when is not None else sp.Integer(1)
            # like the build: a declaration switched off is not evaluated (floor(H/r) with r = 0)
            decls.append((kind, active, ev(decl.entries) if active != 0 else None))
        return tuple(decls), (layer if self._block_reads_layer(seg.block) else None)

    def _block_reads_layer(self, block: BlockDef) -> bool:
        # a property of the block library, asked once per layer of a per-layer segment:
        # walking every op tree again for each layer was a third of a cold V4.1 compile
        memo = self.spec.__dict__.setdefault("_reads_layer", {})   # shared by the spec's option variants
        found = memo.get(block.name)
        if found is None:
            found = memo[block.name] = _reads_layer(block, self.spec.blocks, set())
        return found

    def _check_sizes(self):
        """Bytes per entry of every store and bytes per parameter of every format are
        expressions of the dimensions: unknown names are reported at compile time,
        not at the first query that happens to use them."""
        env = {**self.env, "layer": sp.Integer(0)}
        for store in self.spec.stores.values():
            for fmt, node in store.bytes.items():
                Evaluator(env, self.sets, what=f"name in the bytes of store '{store.name}'")(node)
        for fmt in self.spec.formats.values():
            for group, node in fmt.weights.items():
                Evaluator(env, self.sets, what=f"name in format '{fmt.name}'")(node)

    def _layer_env(self, seg: Segment, layer) -> dict:
        env = dict(self.env)
        if layer is not None:
            env["layer"] = sp.Integer(layer)
        start = Evaluator(env, self.sets)(seg.start) if seg.start is not None else S
        env.update(start=start, cnt=self.env["n"] - start, m=B * (self.env["n"] - start))
        return env

    def _bind(self, block: BlockDef, bindings: dict, env: dict, where) -> dict:
        bound = {}
        ev_outer = Evaluator(env, self.sets)
        for param, default in block.params.items():
            if param in bindings:
                bound[param] = ev_outer(bindings[param])
            elif default is not None:
                bound[param] = Evaluator({**env, **bound}, self.sets)(default)
            else:
                raise SpecError(f"block '{block.name}' needs parameter '{param}'", where.loc,
                                expected=f"with: {{{param}: ...}}")
        return bound

    # ------------------------------------------------------------ blocks
    def instantiate(self, block: BlockDef, env: dict, bound: dict, prefix: str, seg: Segment, layers: tuple,
                     mult: int, stream, defaults: dict, inputs: list | None = None, where=None,
                     overrides: dict | None = None, extra_state=()):
        local = dict(env)
        local.update(bound)
        ev = Evaluator(local, self.sets)
        tensors: dict = {}
        input_names = list(block.inputs)
        given = inputs if inputs is not None else ([("stream", stream)] if stream is not None else [])
        for idx, in_name in enumerate(input_names):
            width = ev(block.inputs[in_name])
            if idx < len(given) and given[idx][1] is not None:
                src_name, src = given[idx]
                prim.check_width(src_name, src, width, where or seg, f"block '{block.name}' input '{in_name}'")
                rows = src.rows if inputs is not None else local["m"]
                tensors[in_name] = prim.Tensor(rows, width, src.producer)
            else:
                tensors[in_name] = prim.Tensor(local["m"], width, None)
        for stmt in block.ops:
            self._op(stmt, tensors, local, ev, prefix, seg, layers, mult, defaults, overrides or {})
        outs = []
        for out_name in block.outputs:
            if out_name not in tensors:
                raise SpecError(f"block '{block.name}' output '{out_name}' is never computed", block.loc,
                                expected="an output named by one of the block's ops")
            outs.append(tensors[out_name])
            if tensors[out_name] is not None and tensors[out_name].producer is not None:
                self.returned.add(tensors[out_name].producer)
        states = list(block.state) + [d for kind, d in extra_state if kind == "state"]
        reads = list(block.reads) + [d for kind, d in extra_state if kind == "reads"]
        writes = list(block.writes) + [d for kind, d in extra_state if kind == "writes"]
        for decl_list, sink in ((states, self.states), (reads, self.reads), (writes, self.writes)):
            for decl in decl_list:
                if decl.store not in self.spec.stores:
                    raise SpecError(f"unknown store '{decl.store}'", decl.store.loc, span=len(decl.store),
                                    expected=did_you_mean(decl.store, self.spec.stores))
                factor = sp.Integer(1)
                if decl.when is not None:
                    factor = as_number(ev(decl.when))
                    if factor == 0:
                        continue
                sink.append(StateUse(str(decl.store), factor * ev(decl.entries), layers, mult, seg.name, prefix))
        return outs

    def _op(self, stmt: ast.Stmt, tensors, local, ev, prefix, seg, layers, mult, defaults, overrides):
        kwargs = {}
        for kw in stmt.kwargs:
            if kw.name in kwargs:
                raise SpecError(f"keyword '{kw.name}' given twice", kw.loc, span=len(kw.name))
            if kw.name in prim.NAME_KWARGS or kw.name == "shard":
                if not isinstance(kw.value, ast.Name):
                    raise SpecError(f"'{kw.name}=' takes a name", kw.value.loc, expected="a plain name")
                kwargs[kw.name] = (kw.value.id, kw)
            else:
                kwargs[kw.name] = (None, kw)  # evaluated below, once we know the op accepts it
        # naming precedence: a block call's group=/component=/stage= (overrides) beat the
        # op's own, which beat the segment's defaults
        opts = {**defaults, **{k: v[0] for k, v in kwargs.items() if k in prim.NAME_KWARGS}, **overrides}
        active = sp.Integer(1)
        if "when" in kwargs:
            active = as_number(ev(kwargs["when"][1].value))
            if active == 0:
                # a disabled op leaves existing tensors as they were (so `x = f(x); when=c`
                # is an optional update) and leaves new names undefined
                for target in stmt.targets:
                    tensors.setdefault(target, None)
                return
        func = stmt.func
        if func in self.spec.blocks and func not in prim.RULES:
            if "shard" in kwargs or "units" in kwargs:
                key = "shard" if "shard" in kwargs else "units"
                raise SpecError(f"'{key}=' goes on the ops inside block '{func}', not on its call", kwargs[key][1].loc,
                                span=len(key), expected="shard= next to group= on an op line of the block")
            call_overrides = {**overrides, **{k: v[0] for k, v in kwargs.items() if k in prim.NAME_KWARGS}}
            self._block_call(stmt, kwargs, tensors, local, prefix, seg, layers, mult, defaults, call_overrides, active)
            return
        rule_name = func if func in prim.RULES else ("elementwise" if func in self.spec.elementwise else None)
        if rule_name is None:
            known = list(prim.RULES) + sorted(self.spec.elementwise) + list(self.spec.blocks)
            raise SpecError(f"unknown op '{func}'", stmt.loc.shifted(stmt.text.find(func)) if func in stmt.text
                            else stmt.loc, span=len(func), expected="a primitive, element-wise op or block: "
                            + did_you_mean(func, known))
        allowed = prim.COMMON_KWARGS | prim.RULE_KWARGS[rule_name]
        values = {}
        for key, (value, kw) in kwargs.items():
            if key not in allowed:
                raise SpecError(f"{func}() does not take '{key}='", kw.loc, span=len(key),
                                expected=did_you_mean(key, allowed))
            values[key] = (value if key in prim.NAME_KWARGS or key == "shard" else ev(kw.value), kw)
        values.update({k: (v, None) for k, v in opts.items() if k not in values})
        ctx = prim.OpContext(stmt, tensors, ev, values)
        rule = prim.RULES.get(func, prim.elementwise)
        cost = rule(ctx)
        if len(cost.outputs) != len(stmt.targets):
            ctx.n_targets(len(cost.outputs))
        name = f"{prefix}.{stmt.targets[0]}"
        node_id = name
        suffix = 2
        while node_id in self.node_ids:
            node_id, suffix = f"{name}~{suffix}", suffix + 1
        input_tensors = [(a.id, tensors[a.id]) for a in stmt.args if isinstance(a, ast.Name) and a.id in tensors]
        component = opts.get("component") or prim.DEFAULT_COMPONENT.get(cost.kind) or \
            (cost.weights[0].group if cost.weights else cost.kind)
        stage = seg.op_stages.get(stmt.targets[0], opts.get("stage", seg.stage))
        node = OpNode(node_id, name, cost.kind, seg.name, stage, component, layers, mult,
                      cost.weights, active * cost.flops, active * cost.scalar, cost.lookup_bytes_per_param,
                      active * cost.lookup_rows, cost.experts, input_tensors[0][1].rows if input_tensors else sp.Integer(0),
                      cost.formula, stmt, input_tensors, [])
        if "shard" in values:
            node.shard, node.units = _shard_of(stmt, cost, values)
        self.ops.append(node)
        self.node_ids.add(node_id)
        for target, out in zip(stmt.targets, cost.outputs):
            if out is not None:
                out = prim.Tensor(out.rows, out.width, node_id)
                node.outputs.append((target, out))
            tensors[target] = out

    def _block_call(self, stmt, kwargs, tensors, local, prefix, seg, layers, mult, defaults, overrides, active):
        block = self.spec.blocks[stmt.func]
        if prefix.count(".") >= limit("block_nesting"):
            raise limit_error("block_nesting", stmt.loc)
        if self._calling.count(block.name):
            raise SpecError(f"block '{block.name}' calls itself (through {' -> '.join(self._calling + [block.name])})",
                            stmt.loc, span=len(stmt.text), expected="blocks that do not call themselves")
        self._calling.append(block.name)
        try:
            self._block_call_inner(block, stmt, kwargs, tensors, local, prefix, seg, layers, mult, defaults,
                                   overrides, active)
        finally:
            self._calling.pop()

    def _block_call_inner(self, block, stmt, kwargs, tensors, local, prefix, seg, layers, mult, defaults,
                          overrides, active):
        if active != 1:
            raise SpecError("a block call's when= must be decidable when the spec is compiled", stmt.loc,
                            expected="a condition on dimensions and layer parameters, not on S/P/B")
        bindings = {}
        for key, (value, kw) in kwargs.items():
            if key in prim.COMMON_KWARGS:
                continue
            if key not in block.params:
                raise SpecError(f"block '{block.name}' has no parameter '{key}'", kw.loc, span=len(key),
                                expected=did_you_mean(key, block.params))
            bindings[key] = kw.value
        bound = self._bind(block, bindings, local, stmt)
        given = []
        for arg in stmt.args:
            if not isinstance(arg, ast.Name):
                raise SpecError(f"block '{block.name}' takes tensors as positional arguments", arg.loc,
                                expected="tensor names; parameters go after ';' as name=value")
            given.append(prim.OpContext(stmt, tensors, None, {}).tensor(arg))
        if len(given) != len(block.inputs):
            raise SpecError(f"block '{block.name}' takes {len(block.inputs)} input tensor(s), got {len(given)}",
                            stmt.loc, expected=", ".join(block.inputs))
        sub_env = {k: local[k] for k in ("start", "cnt", "m") if k in local}
        env = dict(self.env)
        env.update(sub_env)
        outs = self.instantiate(block, env, bound, f"{prefix}.{stmt.targets[0]}", seg, layers, mult, None,
                                    defaults=defaults, inputs=given, where=stmt, overrides=overrides)
        if len(outs) != len(stmt.targets):
            raise SpecError(f"block '{block.name}' returns {len(outs)} tensor(s), but {len(stmt.targets)} names are given",
                            stmt.loc, expected=", ".join(block.outputs))
        for target, out in zip(stmt.targets, outs):
            tensors[target] = out


def _shard_of(stmt, cost, values):
    """The op's tp split and the count of its indivisible pieces (see compiler/deploy/sharding.py):
    units= when declared, else the split width (heads= for attention)."""
    kind, kw = values["shard"]
    if kind not in SHARD_KINDS:
        raise SpecError(f"unknown shard kind '{kind}'", kw.value.loc, span=len(kind),
                        expected=did_you_mean(kind, SHARD_KINDS))
    if "units" in values:
        return kind, values["units"][0]
    weight = cost.weights[0] if cost.weights else None
    if kind == "replicated":
        return kind, None
    if kind == "heads" and ("heads" in values or "groups" in values):
        return kind, values["heads" if "heads" in values else "groups"][0]   # attention heads, or per-head blocks
    if weight is not None and len(weight.shape) == 2:
        groups = values["groups"][0] if "groups" in values else 1
        width = weight.shape[0] if (kind == "row" or (kind == "vocab" and cost.kind == "lookup")) else weight.shape[1]
        return kind, groups * width
    raise SpecError(f"shard={kind} on this op needs units=", kw.loc, span=len("shard"),
                    expected="units=<the number of pieces the split dimension has>")


def compile_spec(spec: Spec, overrides: dict | None = None, choices: dict | None = None) -> Model:
    """Compile with the given option choices ({option: choice}; others take their
    defaults) and, for what-if variants, some dimensions overridden ({name: value}).
    Choices are data, never keyword arguments: an option may have any name."""
    choices = dict(choices or {})
    selected = {}
    for opt_name, option in spec.options.items():
        selected[opt_name] = choices.pop(opt_name, option.default)
        if selected[opt_name] not in option.choices:
            raise SpecError(f"option '{opt_name}' has no choice '{selected[opt_name]}'", option.loc,
                            expected=did_you_mean(selected[opt_name], option.choices))
    if choices:
        raise SpecError(f"unknown option '{next(iter(choices))}'", None, expected=did_you_mean(next(iter(choices)), spec.options))
    return Builder(spec, selected, overrides).build()


def _reads_layer(block: BlockDef, blocks: dict, seen: set) -> bool:
    """True when the block (or a block it calls) names `layer` in an op, a parameter
    default or a state declaration, rather than receiving it through a parameter."""
    if block.name in seen:
        return False
    seen.add(block.name)
    nodes = [*block.ops, *(d for d in block.params.values() if d is not None)]
    for decl in (*block.state, *block.reads, *block.writes):
        nodes += [decl.entries] + ([decl.when] if decl.when is not None else [])
    for node in nodes:
        if any(isinstance(n, ast.Name) and n.id == "layer" for n in node.walk()):
            return True
    return any(_reads_layer(blocks[stmt.func], blocks, seen) for stmt in block.ops if stmt.func in blocks)
