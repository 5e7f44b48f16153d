"""Meaning of expression ASTs as exact sympy values.

`Evaluator` turns an `ast` expression into a sympy expression, resolving names
in an environment (dimensions, block parameters, scenario symbols) and calling
the functions of `FUNCTIONS`. Unknown names and wrong calls are located errors.
Nothing is ever passed to Python's eval."""

from __future__ import annotations

from typing import Callable, Mapping

import sympy as sp

from ...dsl import ast
from ...dsl.errors import SpecError, did_you_mean
from ...dsl.limits import limit, limit_error
from . import patterns


def truth(value) -> sp.Basic:
    """A sympy condition from a number or a condition (non-zero means true)."""
    if isinstance(value, sp.Rational):   # most conditions of a spec are decided by its dimensions
        return sp.false if value == 0 else sp.true
    if isinstance(value, (sp.logic.boolalg.Boolean, sp.core.relational.Relational)):
        return value
    if isinstance(value, sp.Piecewise) and len(value.args) == 2 and value.args[0][0] == 1 \
            and value.args[1] == (0, True):
        return value.args[0][1]  # a condition stored as 1/0 by as_number: unwrap, don't re-solve
    return sp.Ne(value, 0)


def as_number(cond) -> sp.Basic:
    """A condition as 1/0, so conditions can be used in arithmetic and stored."""
    if cond is sp.true:
        return sp.Integer(1)
    if cond is sp.false:
        return sp.Integer(0)
    if isinstance(cond, (sp.logic.boolalg.Boolean, sp.core.relational.Relational)):
        # evaluate=False: sympy's Piecewise canonicalisation (solving the condition as a
        # set) dominates compile time; substitution later decides the condition anyway
        return sp.Piecewise((1, cond), (0, True), evaluate=False)
    return cond


def _if(cond, then, otherwise):
    c = truth(cond)
    if c is sp.true:
        return then
    if c is sp.false:
        return otherwise
    return sp.Piecewise((then, c), (otherwise, True), evaluate=False)


def _extreme(pick, sympy_fn):
    """min/max: numbers are compared directly, since sympy's Min/Max spends most
    of its time proving symbolic arguments comparable."""
    def fn(*args):
        args = [sp.sympify(a) for a in args]
        if all(a.is_Number for a in args):
            return pick(args)
        # unevaluated: substituting numbers later evaluates it anyway
        return sympy_fn(*args, evaluate=False)
    return fn


# min/max for the engine's own formulas, with the same shortcut as the DSL's
exact_min, exact_max = _extreme(min, sp.Min), _extreme(max, sp.Max)


def _ceil_div(a, b):
    return sp.ceiling(a / b)


# name -> (callable, allowed arities, description)
FUNCTIONS: dict[str, tuple[Callable, tuple, str]] = {
    "min": (exact_min, (2, 3, 4, 5, 6), "min(a, b, ...)"),
    "max": (exact_max, (2, 3, 4, 5, 6), "max(a, b, ...)"),
    "floor": (sp.floor, (1,), "floor(x)"),
    "ceil": (sp.ceiling, (1,), "ceil(x)"),
    "ceil_div": (_ceil_div, (2,), "ceil_div(a, b) = ceil(a/b)"),
    "abs": (sp.Abs, (1,), "abs(x)"),
    "if": (_if, (3,), "if(condition, then, else)"),
    "causal_pairs": (patterns.causal_pairs, (2,), "causal_pairs(S, P): P*S + P*(P+1)/2"),
    "rect_pairs": (patterns.rect_pairs, (2,), "rect_pairs(S, P): P*(S+P)"),
    "window_pairs": (patterns.WindowPairs, (4,), "window_pairs(a, b, w, f): sum over t in [a,b) of min(t-f+1, w)"),
    "compressed_pairs": (patterns.CompressedPairs, (4,),
                         "compressed_pairs(a, b, r, cap): sum over t in [a,b) of min(floor((t+1)/r), cap)"),
}

_BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: sp.floor(a / b),
    "%": lambda a, b: sp.Mod(a, b),
    "**": lambda a, b: a ** b,
}
_COMPARE = {"==": sp.Eq, "!=": sp.Ne, "<": sp.Lt, "<=": sp.Le, ">": sp.Gt, ">=": sp.Ge}
# two exact numbers are compared as Python numbers: sympy's relational machinery
# (assumption queries, fuzzy comparisons) was a sixth of a cold compile
_COMPARE_NUMBERS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
                    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def checked_power(base, exponent, loc):
    """a ** b within the limits: a bounded rational exponent, no division by zero,
    a real result of bounded size."""
    if not exponent.is_number or not exponent.is_rational:
        raise SpecError(f"the exponent {exponent} must be an exact number", loc, expected="an integer or a fraction")
    if abs(exponent) > limit("power_exponent"):
        raise limit_error("power_exponent", loc, found=exponent)
    if base == 0 and exponent < 0:
        raise SpecError("division by zero: 0 raised to a negative power", loc)
    if base.is_number and base.is_negative and not exponent.is_integer:
        raise SpecError(f"({base}) ** ({exponent}) is not a real number", loc, expected="a real result")
    if base.is_Rational and exponent != 0:
        # size the result before computing it: digits(p/q ** e) ~ e * digits(max(p, q))
        bits = max(abs(base.p).bit_length(), base.q.bit_length()) * abs(sp.Rational(exponent).p)
        if bits > limit("exact_digits") * 3.33:
            raise limit_error("exact_digits", loc)
    return base ** exponent


class Evaluator:
    """Evaluates expression ASTs in an environment of names.

    `env` maps names to sympy values (or tuples for per-layer lists); `sets`
    maps layer-set names to LayerIndices (for `layer in owners`)."""

    def __init__(self, env: Mapping[str, object], sets: Mapping[str, frozenset] | None = None,
                 what: str = "name"):
        self.env = env
        self.sets = sets or {}
        self.what = what

    def __call__(self, node: ast.Node):
        return self.eval(node)

    def eval(self, node: ast.Node):
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise SpecError(f"{type(node).__name__.lower()} is not allowed in an expression here", node.loc)
        return method(node)

    def _Num(self, node: ast.Num):
        return sp.Rational(node.value.numerator, node.value.denominator)

    def _QuantityLit(self, node: ast.QuantityLit):
        raise SpecError(f"a quantity with a unit ('{node.text}') is not allowed here", node.loc,
                        span=len(node.text), expected="a plain number or expression")

    def _Name(self, node: ast.Name):
        if node.id in self.env:
            value = self.env[node.id]
            if isinstance(value, tuple):
                raise SpecError(f"'{node.id}' is a list; index it like {node.id}[layer]", node.loc, span=len(node.id))
            return value
        if node.id == "true":
            return sp.Integer(1)
        if node.id == "false":
            return sp.Integer(0)
        if node.id == "oo":
            return sp.oo
        raise SpecError(f"unknown {self.what} '{node.id}'", node.loc, span=len(node.id),
                        expected=did_you_mean(node.id, list(self.env)))

    def _Subscript(self, node: ast.Subscript):
        values = self.env.get(node.name)
        if not isinstance(values, tuple):
            raise SpecError(f"'{node.name}' is not a list and cannot be indexed", node.loc, span=len(node.name),
                            expected="a list dimension such as ratios[layer]")
        if len(node.indices) != 1:
            raise SpecError(f"list '{node.name}' takes one index", node.loc)
        index = self.eval(node.indices[0])
        if not (isinstance(index, sp.Integer) and 0 <= int(index) < len(values)):
            raise SpecError(f"index {index} out of range for '{node.name}' (length {len(values)})", node.loc,
                            span=len(node.name))
        return values[int(index)]

    def _Call(self, node: ast.Call):
        if node.func == "if" and len(node.args) == 3 and not node.kwargs:
            # lazy: only the chosen branch is evaluated when the condition is decidable,
            # so if(r > 0, compressed_pairs(..., r, ...), 0) is fine for r = 0
            cond = truth(self.eval(node.args[0]))
            if cond is sp.true:
                return self.eval(node.args[1])
            if cond is sp.false:
                return self.eval(node.args[2])
            return sp.Piecewise((self.eval(node.args[1]), cond), (self.eval(node.args[2]), True), evaluate=False)
        if node.func not in FUNCTIONS:
            raise SpecError(f"unknown function '{node.func}'", node.loc, span=len(node.func),
                            expected=did_you_mean(node.func, FUNCTIONS))
        fn, arities, doc = FUNCTIONS[node.func]
        if node.kwargs:
            raise SpecError(f"{node.func}() takes no keyword arguments", node.kwargs[0].loc, expected=doc)
        if len(node.args) not in arities:
            raise SpecError(f"{node.func}() takes {' or '.join(map(str, arities))} arguments, got {len(node.args)}",
                            node.loc, span=len(node.func), expected=doc)
        args = [self.eval(a) for a in node.args]
        try:
            return fn(*args)
        except (ValueError, TypeError) as exc:
            raise SpecError(f"{node.func}(): {exc}", node.loc, span=len(node.func), expected=doc) from None

    def _BinOp(self, node: ast.BinOp):
        left = self.eval(node.left)
        # short-circuit, so `owner and floor(n/r) > 0` is fine where r = 0 and owner = 0
        if node.op == "and" and truth(left) is sp.false:
            return sp.Integer(0)
        if node.op == "or" and truth(left) is sp.true:
            return sp.Integer(1)
        right = self.eval(node.right)
        if node.op == "and":
            return as_number(sp.And(truth(left), truth(right)))
        if node.op == "or":
            return as_number(sp.Or(truth(left), truth(right)))
        if node.op in ("/", "//", "%") and right == 0:
            raise SpecError("division by zero", node.loc)
        if node.op == "**":
            return checked_power(sp.sympify(left), sp.sympify(right), node.loc)
        return _BINARY[node.op](left, right)

    def _UnaryOp(self, node: ast.UnaryOp):
        value = self.eval(node.operand)
        if node.op == "-":
            return -value
        return as_number(sp.Not(truth(value)))

    def _Compare(self, node: ast.Compare):
        left, right = self.eval(node.left), self.eval(node.right)
        if isinstance(left, sp.Rational) and isinstance(right, sp.Rational):
            return sp.Integer(1) if _COMPARE_NUMBERS[node.op](left, right) else sp.Integer(0)
        return as_number(_COMPARE[node.op](left, right))

    def _Member(self, node: ast.Member):
        if node.set_name not in self.sets:
            raise SpecError(f"unknown layer set '{node.set_name}'", node.loc,
                            expected=did_you_mean(node.set_name, self.sets))
        item = self.eval(node.item)
        if not isinstance(item, sp.Integer):
            raise SpecError("'in' needs a concrete layer index on its left", node.loc)
        return sp.Integer(int(int(item) in self.sets[node.set_name]))


def require_integer(value, node: ast.Node, what: str) -> int:
    """A concrete non-negative integer, or a located error saying what was wanted."""
    if isinstance(value, sp.Integer) and value >= 0:
        return int(value)
    raise SpecError(f"{what} must be a non-negative integer, got {value}", node.loc, expected="an integer")
