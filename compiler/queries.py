"""The query engine: every number specc reports comes from here.

A query is a call like `flops(B=1, S=0, P=8192)` in the expression language;
`QueryEngine.evaluate` walks the parsed expression, dispatches query calls to
the methods below and does unit-checked arithmetic on the results. Costs are
summed symbolically once per (options, filters) and then evaluated by
substitution, so a query's cost does not depend on the context length."""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import sympy as sp

from ..dsl import ast
from ..dsl.errors import Loc, SpecError, did_you_mean
from ..dsl.parser import parse_expr, parse_quantity
from ..dsl.units import BYTES, FLOPS, NONE, PARAMS, SECONDS, TOKENS, combine, dims_name, unit, unit_of_terms
from ..dsl.yamlload import load_yaml_file
from .build import Model
from .model_cache import compile_cached
from .expressions import Evaluator, checked_power
from ..dsl.limits import check_digits
from .patterns import range_sum
from .spec import Spec
from .symbols import B, G, H, P, S, SCENARIO
from .training import TRAINING_QUERIES, TrainingQueries

PAIRS = NONE
# a positive stand-in for the context length while summing over decode steps
_L = sp.Symbol("L", integer=True, positive=True)
# slope of eventually-linear entry counts: measured far beyond any cap over a span
# divisible by every compression ratio up to 64 and every power of two up to 2^20
_FAR, _SPAN = sp.Integer(10) ** 18, sp.Integer(2) ** 20 * sp.ilcm(*range(1, 65))


@dataclass(frozen=True)
class Quantity:
    value: sp.Expr
    dims: tuple
    extrapolated: bool = False

    def with_value(self, value, dims=None, extrapolated=None) -> "Quantity":
        return Quantity(value, self.dims if dims is None else dims,
                        self.extrapolated if extrapolated is None else extrapolated)


# query name -> (method, documentation)
QUERIES: dict[str, str] = {
    "params": "params(group=, op=, layer=, stage=) — parameter count",
    "weight_bytes": "weight_bytes(format=, group=) — bytes of stored weights",
    "weight_read_bytes": "weight_read_bytes(B=1, format=) — weight bytes one decode step reads (lookup tables excluded)",
    "flops": "flops(B=1, S=0, P, <option>=, stage=, component=, op=, layer=) — matrix FLOPs of one call",
    "scalar_work": "scalar_work(B=1, S=0, P, ...) — declared non-matrix work of one call",
    "request_flops": "request_flops(B=1, S=0, P, G, ...) — prefill plus G-1 decode calls",
    "pairs": "pairs(B=1, S=0, P) — valid causal query-key pairs of a call",
    "kv_bytes_per_token": "kv_bytes_per_token(format=, component=) — average context-state growth per token",
    "state_bytes": "state_bytes(H, B=1, format=, component=) — resident state at context length H",
    "decode_read_bytes": "decode_read_bytes(H, B=1, format=, component=) — bytes one decode step reads",
    "decode_write_bytes": "decode_write_bytes(H, B=1, format=, component=) — state bytes one decode step at length H writes",
    "request_read_bytes": "request_read_bytes(S=0, P, G, B=1, format=, component=) — state bytes read by the G-1 decode steps",
    "b_max": "b_max(device=, H, workspace=0 B, format=) — requests that fit on a device",
    "op_count": "op_count(op=, stage=, component=, layer=) — layer instances that contain an op",
    "dim": "dim(NAME) — a dimension of the spec",
    "dtype_bytes": "dtype_bytes(NAME) — bytes per element of a storage type (fp4 = 0.5 B, bf16 = 2 B, ...)",
    "rows": "rows(B=1, S=0, P, op=, layer=) — rows (positions × requests) an op processes in one call",
    "device_memory": "device_memory(device=) — memory of a device in specs/hardware/",
    "device_flops": "device_flops(device=) — a device's peak dense matrix FLOP/s (its `flops:` field)",
    "device_bandwidth": "device_bandwidth(device=) — a device's memory bandwidth (its `bandwidth:` field)",
}
# Any query also takes spec=NAME: evaluate it against the sibling spec NAME.yaml
# (e.g. kv_bytes_per_token(spec=other_model) / kv_bytes_per_token()), and
# DIM=value for a what-if variant with a dimension changed (kv_bytes_per_token(n_kv=4)).
QUERIES.update(TRAINING_QUERIES)
_FILTERS = {"stage", "component", "op", "layer", "group"}
_FLOP_RATE = combine(FLOPS, SECONDS, -1)
_BYTE_RATE = combine(BYTES, SECONDS, -1)
# argument names queries use; a spec dimension of the same name cannot be overridden in a query
_QUERY_ARGS = {"B", "S", "P", "G", "H", "format", "device", "workspace", "extrapolate", "precision", "optimizer",
               "checkpointing", "backward", "spec"} | _FILTERS


def _hardware_file(spec_path: str, device: str, loc) -> Path:
    here = Path(spec_path).resolve().parent
    for folder in [here, *here.parents][:4]:
        candidate = folder / "hardware" / f"{device}.yaml"
        if candidate.exists():
            return candidate
        if folder.name == "hardware" and (folder / f"{device}.yaml").exists():
            return folder / f"{device}.yaml"
    known = sorted(p.stem for folder in [here, *here.parents][:4] for p in (folder / "hardware").glob("*.yaml"))
    raise SpecError(f"unknown device '{device}'", loc, span=len(device), expected=did_you_mean(device, known))


def _nondecreasing(expr, var) -> bool:
    """True when expr is built from var with + and positive scaling, floor, ceiling,
    Min and Max only, so it never decreases as var grows."""
    if not expr.has(var) or expr == var:
        return True
    if isinstance(expr, (sp.Add, sp.Min, sp.Max, sp.floor, sp.ceiling)):
        return all(_nondecreasing(a, var) for a in expr.args)
    if isinstance(expr, sp.Mul):
        consts = [a for a in expr.args if not a.has(var)]
        rest = [a for a in expr.args if a.has(var)]
        return len(rest) == 1 and all(c.is_nonnegative for c in consts) and _nondecreasing(rest[0], var)
    return False


def _settle_conditions(expr, var, lo, hi):
    """Over var in [lo, hi) with concrete bounds, decide conditions such as
    `floor((var+1)/r) > 0` that are monotone in var and agree at both ends, so the
    sum over decode steps has a closed form."""
    if not (isinstance(lo, sp.Integer) and isinstance(hi, sp.Integer)) or hi <= lo:
        return expr
    replacements = {}
    for rel in expr.atoms(sp.core.relational.Relational):
        if not rel.has(var) or not isinstance(rel, (sp.Gt, sp.Ge, sp.Lt, sp.Le)):
            continue
        diff = rel.lhs - rel.rhs if isinstance(rel, (sp.Gt, sp.Ge)) else rel.rhs - rel.lhs
        if not _nondecreasing(diff, var):
            continue
        first, last = rel.subs(var, lo), rel.subs(var, hi - 1)
        if first == last and first in (sp.true, sp.false):
            replacements[rel] = first
    return expr.xreplace(replacements) if replacements else expr


# engines of specs reached through spec=NAME, shared so each is compiled once per process
_ENGINES: dict = {}


class QueryEngine(TrainingQueries):
    def __init__(self, spec: Spec):
        self.spec = spec
        self._models: dict = {}
        self._sums: dict = {}
        self._siblings: dict = {}

    @classmethod
    def shared(cls, spec: Spec) -> "QueryEngine":
        """The process's engine for this spec file (one per file), so a spec asked
        through spec=NAME by another is compiled once."""
        path = Path(spec.path).resolve()
        if path not in _ENGINES:
            _ENGINES[path] = cls(spec)
        return _ENGINES[path]

    # ------------------------------------------------------------ models and sums
    def model(self, choices: dict, overrides: dict | None = None) -> Model:
        key = (tuple(sorted(choices.items())), tuple(sorted((overrides or {}).items())))
        if key not in self._models:
            self._models[key] = compile_cached(self.spec, overrides or None, **choices)
        return self._models[key]

    def _ops(self, model: Model, filters: dict, loc):
        ops = model.ops
        for key, value in filters.items():
            if key == "op":
                picked = [o for o in ops if o.matches(value)]
            elif key == "layer":
                picked = [o for o in ops if value in o.layers]
            elif key == "group":
                picked = [o for o in ops if any(w.group == value for w in o.weights)]
            else:
                picked = [o for o in ops if getattr(o, key) == value]
            if not picked:
                known = self._known(model, key)
                if str(value) not in known:
                    raise SpecError(f"no op has {key} '{value}'", loc, expected=did_you_mean(str(value), known))
            ops = picked
        return ops

    @staticmethod
    def _known(model: Model, key: str) -> set:
        """The values a filter could take (only needed for an error message)."""
        if key == "op":
            return {part for o in model.ops for part in o.name.split(".")[1:]}
        if key == "layer":
            return {str(l) for o in model.ops for l in o.layers}
        if key == "group":
            return {w.group for o in model.ops for w in o.weights}
        return {getattr(o, key) for o in model.ops}

    def _sum(self, model: Model, what: str, filters: dict, loc) -> sp.Expr:
        key = (id(model), what, tuple(sorted(filters.items())))
        if key not in self._sums:
            per_layer = "layer" in filters
            # one Add of all terms: adding one by one re-flattens the sum every time
            terms = [getattr(op, what) if per_layer else op.mult * getattr(op, what)
                     for op in self._ops(model, filters, loc)]
            self._sums[key] = sp.Add(*terms)
        return self._sums[key]

    # ------------------------------------------------------------ formats and stores
    def _format(self, fmt, loc) -> str:
        fmt = fmt or self.spec.default_format
        if fmt not in self.spec.formats:
            raise SpecError(f"unknown format '{fmt}'", loc, expected=did_you_mean(fmt, self.spec.formats))
        return fmt

    def _bytes_per_param(self, model: Model, fmt: str, group: str) -> sp.Expr:
        weights = self.spec.formats[fmt].weights
        node = weights.get(group) or weights.get("default")
        if node is None:
            raise SpecError(f"format '{fmt}' gives no bytes per parameter for group '{group}'",
                            self.spec.formats[fmt].loc, expected="a 'default:' entry under weights")
        return self._constant(model, node)

    def _constant(self, model: Model, node) -> sp.Expr:
        """A spec expression in the model's dimensions (bytes per parameter or entry), evaluated once."""
        key = (id(model), id(node))
        if key not in self._sums:
            self._sums[key] = Evaluator(_env(model), what="name")(node)
        return self._sums[key]

    def _store_bytes(self, model: Model, store: str, fmt: str) -> sp.Expr:
        sdef = self.spec.stores[store]
        node = sdef.bytes.get(fmt) or sdef.bytes.get("default")
        if node is None:
            raise SpecError(f"store '{store}' has no entry size for format '{fmt}'", sdef.loc,
                            expected=f"bytes: {{{fmt}: ...}} or a default")
        return self._constant(model, node)

    def _stores(self, component, loc) -> list:
        names = list(self.spec.stores)
        if component is None:
            return names
        picked = [s for s in names if s == component or component in self.spec.stores[s].tags]
        if not picked:
            known = set(names) | {t for s in self.spec.stores.values() for t in s.tags}
            raise SpecError(f"no store or store tag '{component}'", loc, expected=did_you_mean(component, known))
        return picked

    def _state_expr(self, model: Model, uses: list, fmt: str, stores: list) -> sp.Expr:
        return sp.Add(*[use.mult * use.entries * self._store_bytes(model, use.store, fmt)
                        for use in uses if use.store in stores])

    # ------------------------------------------------------------ the queries
    def q_params(self, model, a):
        filters = a.filters()
        return Quantity(self._sum_params(model, filters, a.loc), PARAMS)

    def _sum_params(self, model, filters, loc):
        group = filters.pop("group", None)
        per_layer = "layer" in filters
        key = (id(model), "params", group)
        if key not in self._sums:
            self._sums[key] = {op.id: op.params(group) for op in model.ops}
        params = self._sums[key]
        total = sp.Add(*[params[op.id] * (1 if per_layer else op.mult) for op in self._ops(model, filters, loc)])
        if group is not None and total == 0 and group not in {w.group for o in model.ops for w in o.weights}:
            known = {w.group for o in model.ops for w in o.weights} | {"embedding_head", "attention_projection",
                                                                       "dense_shared_ffn", "routed_experts", "engram", "other"}
            if group not in known:
                raise SpecError(f"unknown parameter group '{group}'", loc, expected=did_you_mean(group, known))
        return total

    def q_weight_bytes(self, model, a):
        fmt = self._format(a.name("format"), a.loc)
        group = a.name("group")
        total = sp.Integer(0)
        for op in model.ops:
            for w in op.weights:
                if group is None or w.group == group:
                    total += op.mult * w.params * self._bytes_per_param(model, fmt, w.group)
        return Quantity(total, BYTES)

    def _weight_reads(self, model, fmt, batch, lookups: bool):
        shared, rows_read = sp.Integer(0), sp.Integer(0)
        decode = {B: batch, S: H, P: sp.Integer(1)}
        for op in model.ops:
            for w in op.weights:
                bpp = self._bytes_per_param(model, fmt, w.group)
                if op.lookup:
                    rows_read += op.mult * op.lookup_rows.xreplace(decode) * w.shape[-1] * bpp
                elif op.experts != 1:
                    touched = sp.Min(op.experts, op.rows.xreplace(decode))
                    shared += op.mult * w.params / op.experts * touched * bpp
                else:
                    shared += op.mult * w.params * bpp
        return shared, rows_read

    def q_weight_read_bytes(self, model, a):
        batch = a.scenario("B", 1)
        shared, _ = self._weight_reads(model, self._format(a.name("format"), a.loc), batch, False)
        return Quantity(shared, BYTES)

    def _call_scenario(self, a, need_g=False):
        batch, cached, new = a.scenario("B", 1), a.scenario("S", 0), a.scenario("P")
        if isinstance(new, sp.Integer) and new < 1:
            raise SpecError("P must be at least 1 (a call adds at least one token)", a.loc, expected="P >= 1")
        gen = a.scenario("G") if need_g else None
        if isinstance(gen, sp.Integer) and gen < 1:
            raise SpecError("G must be at least 1", a.loc, expected="G >= 1")
        return batch, cached, new, gen

    def q_flops(self, model, a, what="flops"):
        batch, cached, new, _ = self._call_scenario(a)
        ext = a.check_context(model, cached + new)
        total = self._sum(model, what, a.filters(), a.loc)
        return Quantity(total.xreplace({B: batch, S: cached, P: new}), FLOPS, ext)

    def q_scalar_work(self, model, a):
        return self.q_flops(model, a, "scalar")

    def q_request_flops(self, model, a):
        batch, cached, new, gen = self._call_scenario(a, need_g=True)
        ext = a.check_context(model, cached + new + gen - 1)
        total = self._sum(model, "flops", a.filters(), a.loc)
        prefill = total.xreplace({B: batch, S: cached, P: new})
        step = total.xreplace({P: sp.Integer(1), B: batch}).xreplace({S: _L})
        lo, hi = cached + new, cached + new + gen - 1
        decode = range_sum(_settle_conditions(step, _L, lo, hi), _L, lo, hi)
        return Quantity(prefill + decode, FLOPS, ext)

    def q_pairs(self, model, a):
        batch, cached, new, _ = self._call_scenario(a)
        return Quantity(batch * (new * cached + new * (new + 1) / 2), PAIRS)

    def q_kv_bytes_per_token(self, model, a):
        fmt = self._format(a.name("format"), a.loc)
        stores = self._stores(a.name("component") or ("kv" if self._has_tag("kv") else None), a.loc)
        expr = self._state_expr(model, model.states, fmt, stores)
        slope = (expr.xreplace({H: _FAR + _SPAN}) - expr.xreplace({H: _FAR})) / _SPAN
        # the slope of a state that grows by floor(H/r) steps is exact at a multiple
        # of every ratio (_FAR, _SPAN); it is already a rational, nothing to guess
        return Quantity(sp.simplify(slope) if not slope.is_Rational else slope, combine(BYTES, TOKENS, -1))

    def _has_tag(self, tag):
        return any(tag in s.tags for s in self.spec.stores.values())

    def q_state_bytes(self, model, a):
        length, batch = a.scenario("H"), a.scenario("B", 1)
        ext = a.check_context(model, length)
        fmt = self._format(a.name("format"), a.loc)
        expr = self._state_expr(model, model.states, fmt, self._stores(a.name("component"), a.loc))
        return Quantity(batch * expr.xreplace({H: length}), BYTES, ext)

    def q_decode_read_bytes(self, model, a):
        length, batch = a.scenario("H"), a.scenario("B", 1)
        ext = a.check_context(model, length)   # a snapshot read at length H, like state_bytes
        fmt = self._format(a.name("format"), a.loc)
        component = a.name("component")
        total = sp.Integer(0)
        if component in (None, "weights", "lookup"):
            shared, rows = self._weight_reads(model, fmt, batch, True)
            total += {None: shared + rows, "weights": shared, "lookup": rows}[component].xreplace({H: length})
        if component not in ("weights", "lookup"):
            stores = self._stores(component, a.loc)
            total += batch * self._state_expr(model, model.reads, fmt, stores).xreplace({H: length})
        return Quantity(total, BYTES, ext)

    def q_decode_write_bytes(self, model, a):
        """What the step that takes the context from H to H+1 tokens writes: the
        spec's `writes:` declarations (ring buffers overwrite, recurrent states are
        rewritten whole); a spec that declares none writes what its state grows by."""
        length, batch = a.scenario("H"), a.scenario("B", 1)
        ext = a.check_context(model, length + 1)
        fmt = self._format(a.name("format"), a.loc)
        stores = self._stores(a.name("component"), a.loc)
        if model.writes:
            per_step = self._state_expr(model, model.writes, fmt, stores).xreplace({H: length})
        else:
            state = self._state_expr(model, model.states, fmt, stores)
            per_step = state.xreplace({H: length + 1}) - state.xreplace({H: length})
        return Quantity(batch * per_step, BYTES, ext)

    def q_request_read_bytes(self, model, a):
        batch, cached, new, gen = self._call_scenario(a, need_g=True)
        ext = a.check_context(model, cached + new + gen - 1)
        fmt = self._format(a.name("format"), a.loc)
        per_step = self._state_expr(model, model.reads, fmt, self._stores(a.name("component"), a.loc))
        lo, hi = cached + new, cached + new + gen - 1
        total = range_sum(_settle_conditions(per_step.xreplace({H: _L}), _L, lo, hi), _L, lo, hi)
        return Quantity(batch * total, BYTES, ext)

    def q_b_max(self, model, a):
        device = a.name("device", required=True)
        a.used.add("H")
        memory = self._device_memory(device, a.loc)
        workspace = a.quantity("workspace", BYTES, sp.Integer(0))
        fmt = self._format(a.name("format"), a.loc)
        weights = self.q_weight_bytes(model, _Args({"format": fmt}, a.loc, self, {})).value
        state = self.q_state_bytes(model, _Args({"H": a.raw("H"), "format": fmt, "extrapolate": a.raw("extrapolate")},
                                                a.loc, self, a.evaluators))
        if state.value == 0:
            raise SpecError(f"{self.spec.model} keeps no per-request state, so b_max has no bound", a.loc,
                            expected="a spec that declares state stores (state: in its stack)")
        free = memory - weights - workspace
        return Quantity(sp.Max(0, sp.floor(free / state.value)), NONE, state.extrapolated)

    def _device_field(self, device, field: str, dims, loc, example: str):
        """A device fact from specs/hardware/<device>.yaml: memory, flops (peak FLOP/s),
        bandwidth (memory bytes/s), with its unit checked."""
        path = _hardware_file(self.spec.path, device, loc)
        hw = load_yaml_file(path)
        if not hasattr(hw, "get") or field not in hw:
            raise SpecError(f"device file {path} has no '{field}:'", getattr(hw, "loc", None),
                            expected=f"{field}: {example}")
        value_q = parse_quantity(hw[field])
        value_unit = unit_of_terms(value_q.numerator, value_q.denominator)
        if value_unit.dims != dims:
            raise SpecError(f"device {field} must be in {dims_name(dims)}", hw[field].loc, expected=f"e.g. {example}")
        return sp.Rational(value_q.value * value_unit.factor)

    def _device_memory(self, device, loc):
        return self._device_field(device, "memory", BYTES, loc, "24 GB")

    def q_device_memory(self, model, a):
        return Quantity(self._device_memory(a.name("device", required=True), a.loc), BYTES)

    def q_device_flops(self, model, a):
        return Quantity(self._device_field(a.name("device", required=True), "flops", _FLOP_RATE, a.loc,
                                           "312 TFLOPs/s"), _FLOP_RATE)

    def q_device_bandwidth(self, model, a):
        return Quantity(self._device_field(a.name("device", required=True), "bandwidth", _BYTE_RATE, a.loc,
                                           "2 TB/s"), _BYTE_RATE)

    def q_rows(self, model, a):
        batch, cached, new, _ = self._call_scenario(a)
        ext = a.check_context(model, cached + new)
        filters = a.filters()
        if "op" not in filters:
            raise SpecError("rows() needs op=", a.loc, expected="rows(P=8192, op=q) or rows(P=8192, op=router, layer=30)")
        found = {op.rows.xreplace({B: batch, S: cached, P: new}) for op in self._ops(model, filters, a.loc)}
        if len(found) != 1:
            raise SpecError(f"op '{filters['op']}' stands for ops with different row counts", a.loc,
                            expected="layer= (or a longer op path) to pick one")
        return Quantity(found.pop(), NONE, ext)

    def sibling(self, name: str, loc) -> "QueryEngine":
        """The engine of another spec in this spec's folder, for cross-model queries."""
        from .spec import load_spec

        if name not in self._siblings:
            path = Path(self.spec.path).resolve().parent / f"{name}.yaml"
            if not path.exists():
                known = sorted(p.stem for p in path.parent.glob("*.yaml"))
                raise SpecError(f"no spec '{name}' next to {Path(self.spec.path).name}", loc, span=len(name),
                                expected=did_you_mean(name, known))
            self._siblings[name] = _ENGINES.get(path) or QueryEngine.shared(load_spec(path))
        return self._siblings[name]

    def q_op_count(self, model, a):
        filters = a.filters()
        if "op" not in filters:
            raise SpecError("op_count() needs op=", a.loc, expected="op_count(op=router, stage=encoder)")
        per_layer = "layer" in filters
        return Quantity(sp.Integer(sum(1 if per_layer else o.mult for o in self._ops(model, filters, a.loc))), NONE)

    # ------------------------------------------------------------ evaluation of query expressions
    def evaluate(self, node: ast.Node, symbolic_ok: bool = False) -> Quantity:
        return _QueryEvaluator(self, symbolic_ok).eval(node)

    def evaluate_text(self, text, origin: str = "<query>", symbolic_ok: bool = False) -> Quantity:
        return self.evaluate(parse_expr(text, origin), symbolic_ok)


def _env(model: Model) -> dict:
    from .symbols import DTYPE_BYTES

    env = dict(DTYPE_BYTES)
    env.update(SCENARIO)
    env.update(model.dims)
    return env


class _Args:
    """A query call's keyword arguments, with typed, checked accessors."""

    SCENARIO_NAMES = {"B", "S", "P", "G", "H"}

    def __init__(self, values: dict, loc, engine: QueryEngine, evaluators, nodes: dict | None = None):
        self.values = values
        self.loc = loc
        self.engine = engine
        self.evaluators = evaluators
        self.nodes = nodes or {}
        self.used: set = set()

    def raw(self, key):
        return self.values.get(key)

    def _node_loc(self, key):
        node = self.nodes.get(key)
        return node.loc if node is not None else self.loc

    def name(self, key, required=False):
        self.used.add(key)
        value = self.values.get(key)
        if value is None:
            if required:
                raise SpecError(f"missing argument '{key}='", self.loc, expected=f"{key}=<name>")
            return None
        if not isinstance(value, str):
            raise SpecError(f"'{key}=' takes a name, got {value}", self._node_loc(key), expected="a plain name")
        return value

    def scenario(self, key, default=None):
        self.used.add(key)
        value = self.values.get(key)
        if value is None:
            if default is None:
                raise SpecError(f"missing scenario argument '{key}='", self.loc, expected=f"{key}=<integer>")
            return sp.Integer(default)
        if isinstance(value, str):
            if value == key and self.evaluators.get("symbolic_ok"):
                return SCENARIO[key]
            raise SpecError(f"'{key}=' takes a non-negative integer, got '{value}'", self._node_loc(key),
                            expected="an integer (or the bare symbol with --symbolic)")
        if isinstance(value, Quantity):
            if value.dims not in (NONE, TOKENS):
                raise SpecError(f"'{key}=' takes a count, got {dims_name(value.dims)}", self._node_loc(key))
            value = value.value
        if not (isinstance(value, sp.Integer) and value >= 0):
            raise SpecError(f"'{key}=' takes a non-negative integer, got {value}", self._node_loc(key),
                            expected="an integer >= 0")
        return value

    def quantity(self, key, dims, default):
        self.used.add(key)
        value = self.values.get(key)
        if value is None:
            return default
        if not isinstance(value, Quantity) or (value.dims != dims and not (value.value == 0)):
            raise SpecError(f"'{key}=' takes {dims_name(dims)}, e.g. 2 GiB", self._node_loc(key),
                            expected="a number with a unit")
        return value.value

    def filters(self) -> dict:
        out = {}
        for key in ("stage", "component", "op", "group"):
            if self.values.get(key) is not None:
                out[key] = self.name(key)
        if self.values.get("layer") is not None:
            self.used.add("layer")
            layer = self.values["layer"]
            layer = layer.value if isinstance(layer, Quantity) else layer
            if not isinstance(layer, sp.Integer):
                raise SpecError("'layer=' takes a layer index", self._node_loc("layer"), expected="an integer")
            out["layer"] = int(layer)
        return out

    def check_context(self, model: Model, context) -> bool:
        """Beyond the spec's max context is an error unless extrapolate=true; then it is flagged."""
        self.used.add("extrapolate")
        if model.max_context is None or not isinstance(context, sp.Integer):
            return False
        if context <= model.max_context:
            return False
        flag = self.values.get("extrapolate")
        flag = flag.value if isinstance(flag, Quantity) else flag
        if flag in ("true", 1, sp.Integer(1)):
            return True
        raise SpecError(f"context {context} exceeds {self.engine.spec.model}'s maximum of {model.max_context}",
                        self.loc, expected="a shorter context, or extrapolate=true to extrapolate by formula")


class _QueryEvaluator:
    def __init__(self, engine: QueryEngine, symbolic_ok: bool):
        self.engine = engine
        self.symbolic_ok = symbolic_ok

    def eval(self, node: ast.Node) -> Quantity:
        if isinstance(node, ast.Num):
            return Quantity(sp.Rational(node.value.numerator, node.value.denominator), NONE)
        if isinstance(node, ast.QuantityLit):
            u = unit(node.unit, node.loc.shifted(len(node.text) - len(node.unit)))
            return Quantity(sp.Rational(node.value * u.factor), u.dims)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.UnaryOp) and node.op == "-":
            inner = self.eval(node.operand)
            return inner.with_value(-inner.value)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Name):
            if node.id in QUERIES:
                return self._call(ast.Call(node.loc, node.id, (), ()))
            if self.symbolic_ok and node.id in SCENARIO:
                return Quantity(SCENARIO[node.id], NONE)
            raise SpecError(f"unknown name '{node.id}' in a query", node.loc, span=len(node.id),
                            expected="a query call such as " + did_you_mean(node.id, QUERIES))
        raise SpecError("this expression is not allowed in a query", node.loc,
                        expected="queries, numbers, quantities and + - * / // ( )")

    def _binop(self, node: ast.BinOp) -> Quantity:
        left, right = self.eval(node.left), self.eval(node.right)
        ext = left.extrapolated or right.extrapolated
        if node.op in ("+", "-"):
            if left.dims != right.dims and not (left.value == 0 or right.value == 0):
                raise SpecError(f"cannot {'add' if node.op == '+' else 'subtract'} {dims_name(right.dims)} "
                                f"{'to' if node.op == '+' else 'from'} {dims_name(left.dims)}", node.loc,
                                expected="operands with the same unit")
            value = left.value + right.value if node.op == "+" else left.value - right.value
            return Quantity(value, left.dims or right.dims, ext)
        if node.op == "*":
            return Quantity(left.value * right.value, combine(left.dims, right.dims, 1), ext)
        if node.op in ("/", "//"):
            if right.value == 0:
                raise SpecError("division by zero in query", node.loc)
            value = left.value / right.value
            return Quantity(sp.floor(value) if node.op == "//" else value, combine(left.dims, right.dims, -1), ext)
        if node.op == "**" and right.dims == NONE and left.dims == NONE:
            return Quantity(checked_power(left.value, right.value, node.loc), NONE, ext)
        raise SpecError(f"operator '{node.op}' is not supported in queries", node.loc)

    def _call(self, node: ast.Call) -> Quantity:
        if node.func in ("floor", "ceil", "min", "max", "abs"):
            arity = "1" if node.func in ("floor", "ceil", "abs") else "2 or more"
            if node.kwargs or (len(node.args) != 1 if arity == "1" else len(node.args) < 2):
                raise SpecError(f"{node.func}() takes {arity} positional argument{'s' if arity != '1' else ''}, "
                                f"got {len(node.args) + len(node.kwargs)}", node.loc, span=len(node.func),
                                expected=f"{node.func}(x)" if arity == "1" else f"{node.func}(a, b, ...)")
            args = [self.eval(a) for a in node.args]
            if not args or any(a.dims != args[0].dims for a in args):
                raise SpecError(f"{node.func}() needs arguments with one unit", node.loc)
            fn = {"floor": sp.floor, "ceil": sp.ceiling, "min": sp.Min, "max": sp.Max, "abs": sp.Abs}[node.func]
            return Quantity(fn(*[a.value for a in args]), args[0].dims, any(a.extrapolated for a in args))
        if node.func not in QUERIES:
            raise SpecError(f"unknown query '{node.func}'", node.loc, span=len(node.func),
                            expected=did_you_mean(node.func, list(QUERIES) + ["floor", "ceil", "min", "max"]))
        engine = self.engine
        spec = engine.spec
        other = next((kw for kw in node.kwargs if kw.name == "spec"), None)
        if other is not None:
            if not isinstance(other.value, ast.Name):
                raise SpecError("'spec=' takes the name of a spec file next to this one", other.value.loc,
                                expected="spec=<name of a spec file in the same folder>")
            rest = tuple(kw for kw in node.kwargs if kw is not other)
            return _QueryEvaluator(engine.sibling(other.value.id, other.value.loc), self.symbolic_ok)._call(
                dataclasses.replace(node, kwargs=rest))
        if node.func == "dtype_bytes":
            from .symbols import DTYPE_BYTES

            if len(node.args) != 1 or not isinstance(node.args[0], ast.Name) or node.kwargs:
                raise SpecError("dtype_bytes() takes one storage type name", node.loc, expected="dtype_bytes(fp4)")
            key = node.args[0].id
            if key not in DTYPE_BYTES:
                raise SpecError(f"unknown storage type '{key}'", node.args[0].loc, span=len(key),
                                expected=did_you_mean(key, DTYPE_BYTES))
            return Quantity(DTYPE_BYTES[key], BYTES)
        if node.func == "dim":
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
                raise SpecError("dim() takes one dimension name", node.loc, expected="dim(d)")
            key = node.args[0].id
            if key == "max_context" and spec.max_context is not None:
                return Quantity(engine.model({}).max_context, NONE)
            if key not in spec.dims:
                raise SpecError(f"unknown dimension '{key}'", node.args[0].loc, span=len(key),
                                expected=did_you_mean(key, spec.dims))
            value = engine.model({}).dims[key]
            if isinstance(value, tuple):
                raise SpecError(f"dimension '{key}' is a list", node.args[0].loc)
            return Quantity(value, NONE)
        if node.args:
            raise SpecError(f"{node.func}() takes named arguments only", node.args[0].loc,
                            expected=QUERIES[node.func])
        values, nodes, choices, overrides = {}, {}, {}, {}
        for kw in node.kwargs:
            if kw.name in nodes:
                raise SpecError(f"argument '{kw.name}=' is given twice", kw.loc, span=len(kw.name),
                                expected="each argument once")
            nodes[kw.name] = kw.value
            if kw.name in spec.dims and kw.name not in _QUERY_ARGS:
                # a what-if variant: the query runs on the model with this dimension changed
                value = self.eval(kw.value)
                if value.dims != NONE or not value.value.is_Integer or value.value < 0:
                    raise SpecError(f"dimension override '{kw.name}=' takes a non-negative integer", kw.value.loc,
                                    expected=f"e.g. {kw.name}={engine.model({}).dims.get(kw.name)}")
                check_digits(value.value, kw.value.loc)   # overrides obey the limits of spec values
                overrides[kw.name] = value.value
            elif kw.name in spec.options:
                if not isinstance(kw.value, ast.Name):
                    raise SpecError(f"option '{kw.name}=' takes a choice name", kw.value.loc,
                                    expected=did_you_mean("", spec.options[kw.name].choices))
                if kw.value.id not in spec.options[kw.name].choices:
                    raise SpecError(f"option '{kw.name}' has no choice '{kw.value.id}'", kw.value.loc,
                                    span=len(kw.value.id),
                                    expected=did_you_mean(kw.value.id, spec.options[kw.name].choices))
                choices[kw.name] = kw.value.id
            elif isinstance(kw.value, ast.Name) and not (self.symbolic_ok and kw.value.id in SCENARIO):
                values[kw.name] = kw.value.id
            elif isinstance(kw.value, ast.Name):
                values[kw.name] = kw.value.id
            else:
                values[kw.name] = self.eval(kw.value)
                number = values[kw.name].value
                if number.is_number and (number.is_negative or not number.is_real):
                    raise SpecError(f"argument '{kw.name}=' takes a non-negative value, got {number}", kw.value.loc,
                                    expected="a value >= 0")
                if values[kw.name].dims == NONE and kw.name not in ("workspace",):
                    values[kw.name] = values[kw.name].value
        args = _Args(values, node.loc, engine, {"symbolic_ok": self.symbolic_ok}, nodes)
        model = engine.model(choices, overrides)
        try:
            result = getattr(engine, "q_" + node.func)(model, args)
        except SpecError as exc:
            # an argument the query does not document explains a 'missing P' better: p= was meant as P=
            _unknown_argument(node, values, args, nodes, documented_only=True)
            raise _at_argument(exc, node) from None
        _unknown_argument(node, values, args, nodes)
        return result


def _documented_args(func: str) -> set:
    """Argument names in a query's documentation line: 'flops(B=1, S=0, P, ...)' -> {B, S, P, ...}."""
    head = QUERIES[func].split(" — ")[0]
    inside = head[head.find("(") + 1:head.rfind(")")]
    return {m.group(1) for m in re.finditer(r"([A-Za-z_]\w*)\s*(?:=|,|$)", inside)}


def _unknown_argument(node, values, args, nodes, documented_only: bool = False):
    documented = _documented_args(node.func)
    unused = set(values) - args.used - {"extrapolate"} - (documented if documented_only else set())
    if unused:
        key = sorted(unused)[0]
        known = sorted(args.used | documented)
        close = [k for k in known if k.lower() == key.lower()] or difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        loc = next((kw.loc for kw in node.kwargs if kw.name == key), node.loc)
        raise SpecError(f"unknown argument '{key}': {node.func}() does not take '{key}='{hint}", loc, span=len(key),
                        expected=QUERIES[node.func])


def _at_argument(exc: SpecError, node) -> SpecError:
    """An error about an argument's value, raised at the call, is moved to that value."""
    if exc.loc != node.loc:
        return exc
    for kw in node.kwargs:
        if isinstance(kw.value, ast.Name) and f"'{kw.value.id}'" in exc.message:
            return SpecError(exc.message, kw.value.loc, span=len(kw.value.id), expected=exc.expected)
    return exc

