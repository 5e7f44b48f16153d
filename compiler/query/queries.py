"""The query engine: every number specc reports comes from here.

A query is a call like `flops(B=1, S=0, P=8192)` in the expression language;
`QueryEngine.evaluate` walks the parsed expression, dispatches query calls to
the `q_<name>` methods of the query-family modules (q_memory, q_compute, q_state,
q_capacity, q_device, q_deployment, q_time, training, q_structure) and does
unit-checked arithmetic on the results. The names, arguments, units and docs of
the queries are one table, compiler/query/query_registry.py. Costs are summed
symbolically once per (options, filters) and then evaluated by substitution, so
a query's cost does not depend on the context length."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import sympy as sp

from ...dsl import ast
from ...dsl.errors import SpecError, did_you_mean
from ...dsl.parser import parse_expr
from ...dsl.units import BYTES, NONE, combine, dims_name, unit
from ..graph.build import Model
from ..graph.model_cache import compile_cached
from ..schema.expressions import Evaluator, checked_power
from ...dsl.limits import check_digits
from ..deploy import schemes
from .q_capacity import CapacityQueries
from .q_compute import ComputeQueries
from .q_deployment import DeploymentQueries
from .q_device import DeviceQueries
from .q_memory import MemoryQueries
from .q_state import StateQueries
from .q_structure import StructureQueries
from .q_time import TimeQueries
from ..schema.symbols import model_env  # noqa: F401
from .query_base import PAIRS, Quantity, QueryArgs  # noqa: F401  (re-exported: other modules import them from here)
from .query_registry import ARGUMENT_NAMES, REGISTRY, SPECIAL_FORMS, unknown_argument_hint
from ..schema.spec import Spec
from ..schema.symbols import SCENARIO
from .training import TrainingQueries

# query name -> its declaration (compiler/query/query_registry.py); str(info) is its one-line summary
QUERIES = REGISTRY
# Any query also takes spec=NAME: evaluate it against the sibling spec NAME.yaml
# (e.g. kv_bytes_per_token(spec=other_model) / kv_bytes_per_token()), and
# DIM=value for a what-if variant with a dimension changed (kv_bytes_per_token(n_kv=4)),
# unless DIM is the name of an argument some query declares (ARGUMENT_NAMES).


def _hardware_file(spec_path: str, device: str, loc) -> Path:
    """The device's datasheet: beside the spec (hardware/ in its folder or a parent),
    on --path/SPECC_PATH, or shipped with specc (dsl/search_path.py)."""
    from ...dsl.search_path import hardware_file

    return hardware_file(device, spec_path, loc)


# engines of specs reached through spec=NAME, shared so each is compiled once per process
_ENGINES: dict = {}
_REMEMBERED = 128           # entries QueryEngine.remembered keeps (a site export reuses an entry within a layout)


class QueryEngine(MemoryQueries, ComputeQueries, StateQueries, CapacityQueries, DeviceQueries, DeploymentQueries,
                  TimeQueries, TrainingQueries, StructureQueries):
    def __init__(self, spec: Spec):
        self.spec = spec
        self._models: dict = {}
        self.sums: dict = {}
        self._remembered: dict = {}          # remembered(): per-call work a site export repeats
        self.siblings: dict = {}

    @classmethod
    def shared(cls, spec: Spec) -> "QueryEngine":
        """The process's engine for this spec file (one per file), so a spec asked
        through spec=NAME by another is compiled once."""
        path = Path(spec.path).resolve()
        try:
            content = path.read_bytes()
        except OSError:
            content = None
        # a file rewritten in the same process (a test, a notebook) gets a new engine
        if path not in _ENGINES or _ENGINES[path][0] != content:
            _ENGINES[path] = (content, cls(spec))
        return _ENGINES[path][1]

    def remembered(self, key: tuple, make):
        """make(), kept for the next call with this key: work that a site export asks again at
        every pp, node size, format or knob of a layout (a call's tp and ep collectives, a step's
        per-op FLOPs, activations and weights reached). The _REMEMBERED most recently used are
        kept: an entry can hold an expression per op, and numeric queries make new keys without end."""
        memo = self._remembered
        found = memo.get(key)
        if found is None:
            found = memo[key] = make()
            if len(memo) > _REMEMBERED:
                del memo[next(iter(memo))]          # the least recently used
        else:
            memo[key] = memo.pop(key)               # now the most recently used
        return found

    # ------------------------------------------------------------ models and sums
    def model(self, choices: dict, overrides: dict | None = None) -> Model:
        key = (tuple(sorted(choices.items())), tuple(sorted((overrides or {}).items())))
        if key not in self._models:
            self._models[key] = compile_cached(self.spec, overrides or None, choices)
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
            from itertools import islice   # a suggestion needs a few names, not every layer

            return {str(l) for o in model.ops for l in islice(o.layers, 1000)}
        if key == "group":
            return {w.group for o in model.ops for w in o.weights}
        return {getattr(o, key) for o in model.ops}

    def _sum(self, model: Model, what: str, filters: dict, loc) -> sp.Expr:
        key = (id(model), what, tuple(sorted(filters.items())))
        if key not in self.sums:
            per_layer = "layer" in filters
            # one Add of all terms: adding one by one re-flattens the sum every time
            terms = [getattr(op, what) if per_layer else op.mult * getattr(op, what)
                     for op in self._ops(model, filters, loc)]
            self.sums[key] = sp.Add(*terms)
        return self.sums[key]

    # ------------------------------------------------------------ formats and stores
    def _format(self, fmt, loc) -> str:
        fmt = fmt or self.spec.default_format
        if fmt not in self.spec.formats:
            raise SpecError(f"unknown format '{fmt}'", loc, expected=did_you_mean(fmt, self.spec.formats))
        return fmt

    def format_of(self, args):
        """The call's format with its weights=/kv=/compute= knobs (compiler/deploy/schemes.py)."""
        return schemes.choose(self, args)

    def _stored_bytes(self, model: Model, fmt, op, weight) -> sp.Expr:
        """Bytes of one weight of an op in the format (a weight scheme counts codes, scales, zeros),
        once per model, format, scheme and weight: every layout of a site export asks again."""
        scheme = getattr(fmt, "weights", None)
        key = ("stored", id(model), str(fmt), scheme, op.id, id(weight))
        found = self.sums.get(key)
        if found is None:
            found = self.sums[key] = schemes.weight_bytes(self, model, fmt, op, weight)
        return found

    def bytes_per_param(self, model: Model, fmt: str, group: str) -> sp.Expr:
        weights = self.spec.formats[fmt].weights
        node = weights.get(group) or weights.get("default")
        if node is None:
            raise SpecError(f"format '{fmt}' gives no bytes per parameter for group '{group}'",
                            self.spec.formats[fmt].loc, expected="a 'default:' entry under weights")
        return self.constant(model, node)

    def constant(self, model: Model, node) -> sp.Expr:
        """A spec expression in the model's dimensions (bytes per parameter or entry), evaluated once."""
        key = (id(model), id(node))
        if key not in self.sums:
            self.sums[key] = Evaluator(model_env(model), what="name")(node)
        return self.sums[key]

    def store_bytes(self, model: Model, store: str, fmt: str) -> sp.Expr:
        sdef = self.spec.stores[store]
        node = sdef.bytes.get(fmt) or sdef.bytes.get("default")
        if node is None:
            raise SpecError(f"store '{store}' has no entry size for format '{fmt}'", sdef.loc,
                            expected=f"bytes: {{{fmt}: ...}} or a default")
        return schemes.store_entry_bytes(self, model, store, fmt, node)

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
        return sp.Add(*[use.mult * use.entries * self.store_bytes(model, use.store, fmt)
                        for use in uses if use.store in stores])

    def _hardware_path(self, device: str, loc) -> Path:
        return _hardware_file(self.spec.path, device, loc)

    def sibling(self, name: str, loc) -> "QueryEngine":
        """The engine of another spec (spec=NAME), for cross-model queries."""
        from ...dsl.search_path import spec_file
        from ..schema.spec import load_spec

        if name not in self.siblings:
            # next to this spec, then on --path/SPECC_PATH, then among the shipped specs
            path = spec_file(name, self.spec.path, loc)
            self.siblings[name] = _ENGINES[path][1] if path in _ENGINES else QueryEngine.shared(load_spec(path))
        return self.siblings[name]

    # ------------------------------------------------------------ evaluation of query expressions
    def evaluate(self, node: ast.Node, symbolic_ok: bool = False) -> Quantity:
        return _QueryEvaluator(self, symbolic_ok).eval(node)

    def evaluate_text(self, text, origin: str = "<query>", symbolic_ok: bool = False) -> Quantity:
        return self.evaluate(parse_expr(text, origin), symbolic_ok)



# every registered query has its method, and every method is registered
_MISSING = [n for n in REGISTRY if n not in SPECIAL_FORMS and not hasattr(QueryEngine, "q_" + n)]
_UNREGISTERED = [m[2:] for m in dir(QueryEngine) if m.startswith("q_") and m[2:] not in REGISTRY]
assert not _MISSING and not _UNREGISTERED, (_MISSING, _UNREGISTERED)


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
            return Quantity(value, left.dims or right.dims, ext, left.conditions + right.conditions)
        if node.op == "*":
            return Quantity(left.value * right.value, combine(left.dims, right.dims, 1), ext,
                            left.conditions + right.conditions)
        if node.op in ("/", "//"):
            if right.value == 0:
                raise SpecError("division by zero in query", node.loc)
            value = left.value / right.value
            return Quantity(sp.floor(value) if node.op == "//" else value, combine(left.dims, right.dims, -1), ext,
                            left.conditions + right.conditions)
        if node.op == "**" and right.dims == NONE and left.dims == NONE:
            return Quantity(checked_power(left.value, right.value, node.loc), NONE, ext,
                            left.conditions + right.conditions)
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
            return Quantity(fn(*[a.value for a in args]), args[0].dims, any(a.extrapolated for a in args),
                            sum((a.conditions for a in args), ()))
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
            from ..schema.symbols import DTYPE_BYTES

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
                            expected=str(QUERIES[node.func]))
        values, nodes, choices, overrides = {}, {}, {}, {}
        for kw in node.kwargs:
            if kw.name in nodes:
                raise SpecError(f"argument '{kw.name}=' is given twice", kw.loc, span=len(kw.name),
                                expected="each argument once")
            nodes[kw.name] = kw.value
            if kw.name in spec.dims and kw.name not in ARGUMENT_NAMES:
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
        _check_declared(node, values)
        args = QueryArgs(values, node.loc, engine, {"symbolic_ok": self.symbolic_ok}, nodes, QUERIES[node.func])
        model = engine.model(choices, overrides)
        try:
            result = getattr(engine, "q_" + node.func)(model, args)
        except SpecError as exc:
            raise _at_argument(exc, node) from None
        if args.conditions:
            result = dataclasses.replace(result, conditions=result.conditions + tuple(args.conditions))
        return result


def _check_declared(node, values) -> None:
    """Every argument (beyond the spec's options and dimensions, spec= and extrapolate=)
    is one the query declares; else an error naming the closest declared one."""
    info = QUERIES[node.func]
    for kw in node.kwargs:
        key = kw.name
        if key in values and key not in info.names and key != "extrapolate":
            close = unknown_argument_hint(node.func, key)
            hint = f" (did you mean {close}?)" if close else ""
            raise SpecError(f"unknown argument '{key}': {node.func}() does not take '{key}='{hint}", kw.loc,
                            span=len(key), expected=str(info))


def _at_argument(exc: SpecError, node) -> SpecError:
    """An error about an argument's value, raised at the call, is moved to that value."""
    if exc.loc != node.loc:
        return exc
    for kw in node.kwargs:
        if isinstance(kw.value, ast.Name) and f"'{kw.value.id}'" in exc.message:
            return SpecError(exc.message, kw.value.loc, span=len(kw.value.id), expected=exc.expected)
    return exc

