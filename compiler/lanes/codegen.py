"""A printer from sympy closed forms to plain source code.

sympy builds the closed forms; it should not be needed to *use* them. `emit`
turns one expression into the source of a function of named scenario
arguments, for a *target*:

* ``python``      — Python ints and ``fractions.Fraction`` only (never a float);
* ``vector``      — the same arithmetic on numpy int64 arrays (``specc sweep``):
                    branches become selections, min/max become element-wise;
* ``javascript``  — BigInt integers plus a tiny exact rational helper (``_R``).

Printing is shared; each target is a small table of how to spell a sum, a
product, an exact quotient, a floor division, min/max, a selection, a
comparison, and the access-pattern sums. `prelude(target)` is the support code
those spellings call (pure integer formulas, no sympy).

Rational coefficients are brought to a common denominator before printing, so
`P*(P+1)/2` becomes an exact integer quotient of integer arithmetic and
`floor(P/2 + S/2)` becomes `(P + S) // 2`: ints stay ints on the fast path, and
a Fraction appears only when a value really is not an integer."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import sympy as sp

from .codegen_prelude import JS_PRELUDE, PYTHON_PRELUDE, VECTOR_PRELUDE
from ..schema.patterns import CompressedPairs, WindowPairs


class CodegenError(ValueError):
    """The expression uses something no target can print (e.g. a float or an unknown function)."""


@dataclass(frozen=True)
class Target:
    """How one language spells the operations of a closed form."""

    name: str
    integer: Callable[[int], str]
    rational: Callable[[int, int], str]
    add: Callable[[list], str]
    mul: Callable[[list], str]
    quotient: Callable[[str, str], str]          # exact n / d (int when it divides)
    floordiv: Callable[[str, int], str]          # floor(n / d) for a positive integer d
    floor: Callable[[str], str]                  # floor of any exact value
    power: Callable[[str, int], str]             # x ** n, n >= 1
    neg: Callable[[str], str]
    minimum: Callable[[list], str]
    maximum: Callable[[list], str]
    absolute: Callable[[str], str]
    mod: Callable[[str, str], str]
    select: Callable[[list, str], str]           # [(cond, value), ...], otherwise
    compare: Callable[[str, str, str], str]      # op in < <= > >= == !=
    both: Callable[[list], str]
    either: Callable[[list], str]
    negate: Callable[[str], str]
    true: str
    false: str
    none: str                                    # "no cap" / "no window" argument
    call: Callable[[str, list], str]             # a support helper
    function: Callable[[str, list, list, str], str]   # name, args, [(var, code)], result


def _nest(fn: str, parts: list) -> str:
    out = parts[-1]
    for part in reversed(parts[:-1]):
        out = f"{fn}({part}, {out})"
    return out


def _py_select(cases, otherwise):
    out = otherwise
    for cond, value in reversed(cases):
        out = f"({value} if {cond} else {out})"
    return out


def _py_function(name, args, lets, result, indent="    "):
    body = "".join(f"{indent}{var} = {code}\n" for var, code in lets)
    return f"def {name}({', '.join(args)}):\n{body}{indent}return {result}\n"


_PY_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}

PYTHON = Target(
    name="python",
    integer=lambda v: str(v) if v >= 0 else f"({v})",
    rational=lambda p, q: f"_Fraction({p}, {q})",
    add=lambda parts: "(" + " + ".join(parts) + ")",
    mul=lambda parts: "(" + " * ".join(parts) + ")",
    quotient=lambda n, d: f"_q({n}, {d})",
    floordiv=lambda n, d: f"({n} // {d})",
    floor=lambda x: f"({x} // 1)",
    power=lambda x, n: f"({x} ** {n})",
    neg=lambda x: f"(-{x})",
    minimum=lambda parts: f"min({', '.join(parts)})",
    maximum=lambda parts: f"max({', '.join(parts)})",
    absolute=lambda x: f"abs({x})",
    mod=lambda a, b: f"({a} % {b})",
    select=_py_select,
    compare=lambda op, a, b: f"({a} {_PY_CMP[op]} {b})",
    both=lambda parts: "(" + " and ".join(parts) + ")",
    either=lambda parts: "(" + " or ".join(parts) + ")",
    negate=lambda x: f"(not {x})",
    true="True", false="False", none="None",
    call=lambda fn, parts: f"_{fn}({', '.join(parts)})",
    # results are normalized: an integral Fraction is returned as an int
    function=lambda name, args, lets, result: _py_function(name, args, lets, f"_n({result})"),
)

# numpy arrays: no Python branching; `_where`, `_min`, ... are bound by the caller
# (to numpy, or to interval arithmetic that bounds every intermediate value)
VECTOR = Target(
    name="vector",
    integer=PYTHON.integer,
    rational=lambda p, q: f"_rat({p}, {q})",
    add=PYTHON.add, mul=PYTHON.mul,
    quotient=lambda n, d: f"_q({n}, {d})",
    floordiv=lambda n, d: f"({n} // {d})",
    floor=lambda x: f"({x} // 1)",
    power=PYTHON.power, neg=PYTHON.neg,
    minimum=lambda parts: _nest("_min", parts),
    maximum=lambda parts: _nest("_max", parts),
    absolute=lambda x: f"_abs({x})",
    mod=PYTHON.mod,
    select=lambda cases, otherwise: _py_vselect(cases, otherwise),
    compare=PYTHON.compare,
    both=lambda parts: _nest("_and", parts),
    either=lambda parts: _nest("_or", parts),
    negate=lambda x: f"_not({x})",
    true="True", false="False", none="None",
    call=lambda fn, parts: f"_{fn}_v({', '.join(parts)})",
    function=_py_function,
)


def _py_vselect(cases, otherwise):
    out = otherwise
    for cond, value in reversed(cases):
        out = f"_where({cond}, {value}, {out})"
    return out


def _js_select(cases, otherwise):
    out = otherwise
    for cond, value in reversed(cases):
        out = f"({cond} ? {value} : {out})"
    return out


def _js_function(name, args, lets, result):
    body = "".join(f"  const {var} = {code};\n" for var, code in lets)
    return f"function {name}({', '.join(args)}) {{\n{body}  return {result};\n}}\n"


JAVASCRIPT = Target(
    name="javascript",
    integer=lambda v: f"{v}n" if v >= 0 else f"({v}n)",
    rational=lambda p, q: f"_R.q({p}n, {q}n)",
    add=lambda parts: _nest("_R.add", parts),
    mul=lambda parts: _nest("_R.mul", parts),
    quotient=lambda n, d: f"_R.q({n}, {d})",
    floordiv=lambda n, d: f"_R.floor(_R.q({n}, {d}n))",
    floor=lambda x: f"_R.floor({x})",
    power=lambda x, n: f"_R.pow({x}, {n})",
    neg=lambda x: f"_R.neg({x})",
    minimum=lambda parts: _nest("_R.min", parts),
    maximum=lambda parts: _nest("_R.max", parts),
    absolute=lambda x: f"_R.abs({x})",
    mod=lambda a, b: f"_R.mod({a}, {b})",
    select=_js_select,
    compare=lambda op, a, b: f"(_R.cmp({a}, {b}) {op if op not in ('==', '!=') else op + '='} 0)",
    both=lambda parts: "(" + " && ".join(parts) + ")",
    either=lambda parts: "(" + " || ".join(parts) + ")",
    negate=lambda x: f"(!{x})",
    true="true", false="false", none="null",
    call=lambda fn, parts: f"_R.{fn}({', '.join(parts)})",
    function=_js_function,
)

TARGETS = {t.name: t for t in (PYTHON, VECTOR, JAVASCRIPT)}

_RELATIONS = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
              sp.GreaterThan: ">=", sp.Equality: "==", sp.Unequality: "!="}
_PATTERNS = {WindowPairs: "wp", CompressedPairs: "cp"}


class _Printer:
    def __init__(self, target: Target, names: dict):
        self.t = target
        self.names = names          # sympy Symbol -> source name

    def __call__(self, e) -> str:
        t = self.t
        if e is sp.true:
            return t.true
        if e is sp.false:
            return t.false
        if isinstance(e, sp.Integer):
            return t.integer(int(e))
        if isinstance(e, sp.Rational):
            return t.rational(int(e.p), int(e.q))
        if isinstance(e, sp.Symbol):
            if e not in self.names:
                raise CodegenError(f"the closed form depends on '{e}', which is not an argument")
            return self.names[e]
        if isinstance(e, sp.Add):
            return self._sum(e.args)
        if isinstance(e, sp.Mul):
            return self._product(e)
        if isinstance(e, sp.Pow):
            if e.exp.is_Integer and e.exp > 0:
                return t.power(self(e.base), int(e.exp))
            if e.exp.is_Integer and e.exp < 0:
                return t.quotient(t.integer(1), self(e.base ** -e.exp))
            raise CodegenError(f"cannot print the power {e} (only integer exponents)")
        if isinstance(e, (sp.floor, sp.ceiling)):
            return self._rounding(e)
        if isinstance(e, (sp.Min, sp.Max)):
            parts = [self(a) for a in e.args]
            return (t.minimum if isinstance(e, sp.Min) else t.maximum)(parts)
        if isinstance(e, sp.Abs):
            return t.absolute(self(e.args[0]))
        if isinstance(e, sp.Mod):
            return t.mod(self(e.args[0]), self(e.args[1]))
        if isinstance(e, sp.Piecewise):
            return self._piecewise(e)
        if type(e) in _RELATIONS:
            return t.compare(_RELATIONS[type(e)], self(e.lhs), self(e.rhs))
        if isinstance(e, sp.And):
            return t.both([self(a) for a in e.args])
        if isinstance(e, sp.Or):
            return t.either([self(a) for a in e.args])
        if isinstance(e, sp.ITE):
            return t.select([(self(e.args[0]), self(e.args[1]))], self(e.args[2]))
        if isinstance(e, sp.Not):
            return t.negate(self(e.args[0]))
        if type(e) in _PATTERNS:
            parts = [t.none if a is sp.oo else self(a) for a in e.args]
            return t.call(_PATTERNS[type(e)], parts)
        if isinstance(e, sp.Float):
            raise CodegenError(f"a float ({e}) in a closed form: exact values only")
        raise CodegenError(f"cannot print {type(e).__name__}: {e}")

    @staticmethod
    def _over_common_denominator(terms) -> tuple[list, int]:
        """Terms c_i·x_i with rational c_i, as (integer-coefficient terms, D) with Σ = Σ'/D."""
        split = [term.as_coeff_Mul() for term in terms]
        d = math.lcm(*[int(c.q) for c, _ in split]) if split else 1
        return [(c * d, rest) for c, rest in split], d

    def _scaled(self, coeff, rest) -> str:
        if rest == 1:
            return self.t.integer(int(coeff))
        if coeff == 1:
            return self(rest)
        if coeff == -1:
            return self.t.neg(self(rest))
        return self.t.mul([self.t.integer(int(coeff)), self(rest)])

    def _sum(self, terms) -> str:
        scaled, d = self._over_common_denominator(terms)
        total = self.t.add([self._scaled(c, rest) for c, rest in scaled])
        return total if d == 1 else self.t.quotient(total, self.t.integer(d))

    def _product(self, e) -> str:
        coeff, rest = e.as_coeff_Mul()
        numer, denom = [], []
        for factor in sp.Mul.make_args(rest):
            if factor.is_Pow and factor.exp.is_Integer and factor.exp < 0:
                denom.append(factor.base ** -factor.exp)
            else:
                numer.append(factor)
        parts = [self(f) for f in numer]
        if coeff.p != 1 or not parts:
            parts.insert(0, self.t.integer(int(coeff.p)))
        code = parts[0] if len(parts) == 1 else self.t.mul(parts)
        if denom:
            code = self.t.quotient(code, self(sp.Mul(*denom)))
        if coeff.q != 1:
            code = self.t.quotient(code, self.t.integer(int(coeff.q)))
        return code

    def _rounding(self, e) -> str:
        x = e.args[0]
        ceil = isinstance(e, sp.ceiling)
        terms = sp.Add.make_args(x)
        if all(not (f.is_Pow and f.exp.is_negative) for term in terms for f in sp.Mul.make_args(term)):
            scaled, d = self._over_common_denominator(terms)
            if ceil:
                scaled = [(-c, rest) for c, rest in scaled]
            numer = self.t.add([self._scaled(c, rest) for c, rest in scaled])
            if d == 1 and _integer_by_construction(x):
                code = numer
            else:
                code = self.t.floordiv(numer, d) if d != 1 else self.t.floor(numer)
            return self.t.neg(code) if ceil else code
        inner = self(-x if ceil else x)
        return self.t.neg(self.t.floor(inner)) if ceil else self.t.floor(inner)

    def _piecewise(self, e) -> str:
        cases = [(c, v) for v, c in e.args]
        if cases[-1][0] is not sp.true:
            cases.append((sp.true, None))
        body = [(self(c), self(v)) for c, v in cases[:-1] if c is not sp.false]
        last = cases[-1][1]
        otherwise = self.t.call("undefined", []) if last is None else self(last)
        return self.t.select(body, otherwise) if body else otherwise


def _integer_by_construction(e) -> bool:
    """True when e is an integer because of how it is built (integers and integer symbols under
    +, ×, non-negative integer powers, floor, ceiling, min and max); False when that does not
    show it, and the floor is printed, exact either way. (Asking sympy's assumptions instead
    costs milliseconds on a large sum, and on every shipped form gives the same code.)"""
    if isinstance(e, sp.Integer) or isinstance(e, (sp.floor, sp.ceiling)):
        return True
    if isinstance(e, sp.Symbol):
        return bool(e.is_integer)
    if isinstance(e, (sp.Add, sp.Mul, sp.Min, sp.Max)):
        return all(_integer_by_construction(a) for a in e.args)
    if isinstance(e, sp.Pow):
        return e.exp.is_Integer and e.exp >= 0 and _integer_by_construction(e.base)
    return False


def emit(expr, args: list[str], target: str = "python", name: str = "f", shared: bool | None = None) -> str:
    """Source text of a function `name(*args)` that computes `expr` exactly.

    `args` name the sympy symbols the expression may use (by their names); any
    other free symbol is a CodegenError. With `shared`, common sub-expressions
    are computed once (sympy's cse); that is the default for the targets that
    evaluate many points per call (vector, javascript), not for python, whose
    functions answer one point and where cse would cost a cold run more than
    it saves."""
    t = TARGETS[target]
    expr = sp.sympify(expr)
    if expr.has(sp.Float):
        raise CodegenError(f"a float in a closed form ({expr}): exact values only")
    symbols = {s.name: s for s in expr.free_symbols}
    names = {}
    for i, arg in enumerate(args):
        if arg in symbols:
            names[symbols[arg]] = arg
    printer = _Printer(t, names)
    lets = []
    if shared is None:
        shared = target != "python"
    replacements = None
    if shared and expr.count_ops() > 8:
        try:
            replacements, (reduced,) = sp.cse(expr, symbols=sp.numbered_symbols("_t"), optimizations=None)
        except RecursionError:
            # sympy's cse rebuilds each Piecewise with evaluation, and a Piecewise nested
            # in another's condition can re-enter Piecewise.eval without end: printing
            # without shared sub-expressions gives the same values
            replacements = None
    if replacements is not None:
        inline = {}
        for sym, sub in replacements:
            sub = sub.xreplace(inline)
            if sub.is_Rational or (isinstance(sub, sp.Mul) and sub.as_coeff_Mul()[0].q != 1):
                # keep S/2 inside floor(S/2 + P/2), so it prints as (S + P) // 2
                inline[sym] = sub
                continue
            lets.append((sym.name, printer(sub)))
            names[sym] = sym.name
        expr = reduced.xreplace(inline)
    return t.function(name, list(args), lets, printer(expr))


def prelude(target: str = "python") -> str:
    """Support code the emitted functions of `target` call."""
    return {"python": PYTHON_PRELUDE, "vector": PYTHON_PRELUDE + VECTOR_PRELUDE, "javascript": JS_PRELUDE}[target]


def compile_python(expr, args: list[str], name: str = "f", shared: bool | None = None):
    """The emitted Python function itself (for tests and the symbolic-miss path)."""
    namespace: dict = {}
    exec(prelude("python") + "\n" + emit(expr, args, "python", name, shared), namespace)  # noqa: S102 - our own printed code
    return namespace[name]
