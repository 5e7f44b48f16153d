"""What every query family shares: the Quantity a query returns, the checked
keyword arguments of a call (QueryArgs), the environment of a model's dimensions and
the helpers that sum over decode steps. Imports no query module, so every family
module (and training.py) can import it without a cycle."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from ...dsl.errors import BeyondContext, SpecError
from ...dsl.units import BYTES, FLOPS, NONE, SECONDS, TOKENS, combine, dims_name
from ..schema.symbols import SCENARIO

# "Model" (compiler/graph/build.py) appears in annotations only: importing build here would close a
# cycle (build -> spec -> schemes -> query_base)

PAIRS = NONE
# a positive stand-in for the context length while summing over decode steps
L_SYMBOL = sp.Symbol("L", integer=True, positive=True)
# slope of eventually-linear entry counts: measured far beyond any cap over a span
# divisible by every compression ratio up to 64 and every power of two up to 2^20
FAR, SPAN = sp.Integer(10) ** 18, sp.Integer(2) ** 20 * sp.ilcm(*range(1, 65))


@dataclass(frozen=True)
class ContextLimit:
    """A side condition of a closed form: `context` (an expression in the scenario
    symbols) may not exceed `limit` (the spec's max_context) unless `allowed`
    (extrapolate=true), where the answer is flagged extrapolated. The compiled lane
    prints `context` and checks it at each concrete point (compiler/lanes/compile_queries.py)."""
    context: sp.Expr
    limit: int
    allowed: bool


@dataclass(frozen=True)
class Quantity:
    value: sp.Expr
    dims: tuple
    extrapolated: bool = False
    # side conditions of a closed form (ContextLimit, ...): checked at concrete values by whoever evaluates it
    conditions: tuple = ()
    # a convention the answer used (compute fp8), or why a value is what it is (b_max = 0: what is
    # short); printed after it, not part of the value
    note: str = field(default="", compare=False)

    def with_value(self, value, dims=None, extrapolated=None) -> "Quantity":
        return Quantity(value, self.dims if dims is None else dims,
                        self.extrapolated if extrapolated is None else extrapolated, self.conditions, self.note)



FLOP_RATE = combine(FLOPS, SECONDS, -1)
BYTE_RATE = combine(BYTES, SECONDS, -1)


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


def settle_conditions(expr, var, lo, hi):
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



class UndeclaredArgument(AssertionError):
    """A query's code read a parameter its declaration does not list: a bug of specc
    (the declaration is what users are told), never a user error."""


class _Read(set):
    """The parameters a query's code read; reading one its declaration lacks is a bug."""

    def __init__(self, declared):
        super().__init__()
        self.declared = declared

    def add(self, key):
        if self.declared is not None and key not in self.declared:
            raise UndeclaredArgument(f"a query read '{key}=', which its declaration does not list "
                                     f"({', '.join(sorted(self.declared))})")
        super().add(key)


class QueryArgs:
    """A query call's keyword arguments, with typed, checked accessors. With the
    query's declaration (compiler/query/query_registry.py), only its parameters can be read."""

    def __init__(self, values: dict, loc, engine, evaluators, nodes: dict | None = None, declaration=None):
        self.values = values
        self.loc = loc
        self.engine = engine
        self.evaluators = evaluators
        self.nodes = nodes or {}
        self.declaration = declaration
        declared = None if declaration is None else set(declaration.names) | {"extrapolate"}
        self.used: set = _Read(declared)
        self.conditions: list = []      # side conditions at symbolic values (ContextLimit)

    def raw(self, key):
        self.used.add(key)
        return self.values.get(key)

    def declares(self, key) -> bool:
        """Whether this query takes `key` (code shared by several queries reads only those)."""
        return self.used.declared is None or key in self.used.declared

    def node_loc(self, key):
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
            raise SpecError(f"'{key}=' takes a name, got {value}", self.node_loc(key), expected="a plain name")
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
            raise SpecError(f"'{key}=' takes a non-negative integer, got '{value}'", self.node_loc(key),
                            expected="an integer (or the bare symbol with --symbolic)")
        if isinstance(value, Quantity):
            if value.dims not in (NONE, TOKENS):
                raise SpecError(f"'{key}=' takes a count, got {dims_name(value.dims)}", self.node_loc(key))
            value = value.value
        if not (isinstance(value, sp.Integer) and value >= 0):
            raise SpecError(f"'{key}=' takes a non-negative integer, got {value}", self.node_loc(key),
                            expected="an integer >= 0")
        return value

    def quantity(self, key, dims, default):
        self.used.add(key)
        value = self.values.get(key)
        if value is None:
            return default
        if not isinstance(value, Quantity) or (value.dims != dims and not (value.value == 0)):
            raise SpecError(f"'{key}=' takes {dims_name(dims)}, e.g. 2 GiB", self.node_loc(key),
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
                raise SpecError("'layer=' takes a layer index", self.node_loc("layer"), expected="an integer")
            out["layer"] = int(layer)
        return out

    def check_bound(self, value, limit) -> None:
        """A condition value <= limit that a symbolic value cannot settle (a deployment's fit):
        a side condition of the result, never allowed past, so the compiled lane re-checks it
        at its arguments and leaves a violation to the symbolic path, which reports it."""
        self.conditions.append(ContextLimit(value, int(limit), False))

    def check_context(self, model: "Model", context) -> bool:
        """Beyond the spec's max context is an error unless extrapolate=true; then it is flagged.
        At a symbolic context the check is a side condition of the result (self.conditions)."""
        self.used.add("extrapolate")
        if model.max_context is None:
            return False
        flag = self.values.get("extrapolate")
        flag = flag.value if isinstance(flag, Quantity) else flag
        allowed = flag in ("true", 1, sp.Integer(1))
        if not isinstance(context, sp.Integer):
            self.conditions.append(ContextLimit(context, int(model.max_context), allowed))
            return False
        if context <= model.max_context:
            return False
        if allowed:
            return True
        raise BeyondContext(f"context {context} exceeds {self.engine.spec.model}'s maximum of {model.max_context}",
                        self.loc, expected="a shorter context, or extrapolate=true to extrapolate by formula")

