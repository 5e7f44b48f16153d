"""The Python API: what the command line does, as objects.

    >>> import specc
    >>> m = specc.load("<model>")                  # a shipped spec by name, or a path
    >>> r = m.eval("params()")
    >>> r.value, r.unit                            # a Python int and 'params'
    >>> m.flops(P=8192)                            # keyword access, one method per query
    >>> m.eval("flops(P=P)", symbolic=True).expr   # the closed form (a sympy expression)
    >>> [c.verdict for c in m.verify()]

Values are exact: a Python `int` or `fractions.Fraction` whenever the result is
a number (sympy only for a closed form asked with symbolic=True). Every mistake
raises `specc.Error` (the located SpecError the CLI prints), never a traceback
from inside the engine."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from .dsl.errors import SpecError
from .dsl.limits import printing_exact
from .dsl.human import exact_json, show

Error = SpecError     # the one exception type of the API


# ------------------------------------------------------------------ results
def _exact(value):
    """A sympy number as a Python int or Fraction; anything else is returned as is."""
    import sympy as sp

    if isinstance(value, sp.Integer):
        return int(value)
    if isinstance(value, sp.Rational):
        return Fraction(int(value.p), int(value.q))
    return value


@printing_exact
def display(value, unit: str, extrapolated: bool) -> str:
    """How the CLI prints a value: 8,190,735,360 params; 1/2  ≈ 0.5; 13.654 ms; a closed form as text."""
    return show(value, unit, extrapolated)[1]


@dataclass(frozen=True)
class Result:
    """One evaluated query. `value` is an int or Fraction (a sympy expression only
    for a symbolic closed form); `expr` is always the sympy form."""

    query: str
    value: object
    unit: str
    extrapolated: bool
    expr: object
    dims: tuple = ()
    note: str = ""          # a convention the answer used (compute fp8), or why the value is what it is (b_max = 0)

    @property
    def symbolic(self) -> bool:
        return not isinstance(self.value, (int, Fraction))

    def __float__(self) -> float:
        if self.symbolic:
            raise TypeError(f"{self.query} is a closed form, not a number: {self.value}")
        return float(self.value)

    def __int__(self) -> int:
        if not isinstance(self.value, int):
            raise TypeError(f"{self.query} = {self} is not an integer")
        return self.value

    def __repr__(self) -> str:
        return f"<{self.line()}>"

    def __str__(self) -> str:
        """Exactly what `specc eval` prints after the query and its '=' (or '≈' for a rounded time)."""
        return display(self.value, self.unit, self.extrapolated) + (f"  ({self.note})" if self.note else "")

    def line(self, exact: bool = False) -> str:
        """The line `specc eval` prints: 'params() = 8,190,735,360 params', 'tpot(...) ≈ 13.654 ms'."""
        relation, text = show(self.value, self.unit, self.extrapolated, exact)
        return f"{self.query} {relation} {text}" + (f"  ({self.note})" if self.note else "")

    def to_json(self) -> dict:
        """The object `specc eval --json` prints for this query."""
        value = self.value
        shown = exact_json(value)
        number = float(self.expr) if getattr(self.expr, "is_number", False) else None
        out = {"query": self.query, "value": shown, "float": number, "unit": self.unit,
               "extrapolated": self.extrapolated}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Claim:
    """A claim of the spec as written: a number a source prints and the query behind it."""

    id: str
    source: str
    quote: str
    eval: str
    expected: str
    erratum: str | None
    note: str | None
    location: str


@dataclass(frozen=True)
class ClaimResult:
    """A verified claim (the fields of `specc verify --format json`)."""

    id: str
    spec: str
    source: str
    eval: str
    expected: str
    computed: str              # exact: an integer, p/q, or a formula
    verdict: str               # PASS, FAIL, XFAIL, XPASS or ERROR
    note: str
    fact_check: bool = False   # the claim reads no model (a device or unit fact)

    @property
    def ok(self) -> bool:
        return self.verdict in ("PASS", "XFAIL")


# ------------------------------------------------------------------ arguments given as Python values
# Arguments that are estimates by nature — the achieved fraction of peak FLOPs (mfu) and of
# peak bandwidth (mbu), compiler/query/q_time.py — also take a float, read as the shortest decimal
# that prints it (0.8 -> 4/5, as the text 'mbu=0.8' is); exact quantities still refuse floats.
APPROXIMATE_ARGS = ("mfu", "mbu")


def _argument_value(key: str, value):
    """A keyword argument as a query value (compiler/query/query_value.py). Ints and Fractions
    are exact numbers, bools true/false, strings are query text (a name, a quantity
    such as '2 GiB', a decimal such as '0.8', or a scenario symbol such as 'P' with
    symbolic=True); a float is taken only for the approximate arguments (APPROXIMATE_ARGS);
    sympy symbols are refused."""
    import math

    import sympy as sp

    from .compiler.query.query_value import Expr, Name

    if isinstance(value, bool):
        return Name("true" if value else "false")
    if isinstance(value, sp.Basic):
        if isinstance(value, sp.Rational):
            value = _exact(value)
        else:
            raise Error(f"{key}={sp.srepr(value)}: a sympy object cannot be passed as an argument",
                        expected=f"an int or Fraction, or the symbol's name as text with symbolic=True "
                                 f"({key}='{value}')")
    if isinstance(value, (int, Fraction)):
        return value
    if isinstance(value, str):
        probe = Expr.parse(f"q(x={value})")
        call = probe.call if probe is not None else None
        if call is None or len(call.args) != 1:
            return Expr((value,))          # printed as written; the engine reports what is wrong with it
        return call.args[0][1]
    if isinstance(value, float) and key in APPROXIMATE_ARGS and math.isfinite(value):
        return Fraction(repr(value))      # the shortest decimal that prints it: 0.8 -> 4/5
    if isinstance(value, numbers.Real):
        raise Error(f"{key}={value!r}: a float is not exact", expected="an int, a fractions.Fraction, "
                    f"or text such as {key}='1.5' or {key}='2 GiB'")
    raise Error(f"{key}={value!r}: cannot be used as a query argument",
                expected="an int, a fractions.Fraction, a bool or a string")


def _call(query: str, args: dict):
    """The query value of a bare query name and keyword arguments given as Python values."""
    from .compiler.query.query_registry import REGISTRY
    from .compiler.query.query_value import Call

    name = query.strip()
    if not name.isidentifier():
        raise Error(f"keyword arguments need a bare query name, got '{query}'",
                    expected="m.eval('flops', P=8192), or the arguments inside the text: m.eval('flops(P=8192)')")
    if name not in REGISTRY:
        from .dsl.errors import did_you_mean

        raise Error(f"unknown query '{name}'", expected=did_you_mean(name, REGISTRY))
    return Call(name, tuple((k, _argument_value(k, v)) for k, v in args.items()))


def _query_method(info):
    """The keyword method of one query declaration: m.tpot(H=8192, device='h100_sxm'), with
    the declaration's parameters as its real signature and its docstring."""
    import inspect

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    if info.special:        # dim(NAME), dtype_bytes(NAME): m.dim("d")
        def method(self, name: str) -> Result:
            from .compiler.query.query_value import Call, Name

            if not isinstance(name, str) or not name.isidentifier():
                raise Error(f"{info.name}() takes a name, got {name!r}", expected=f"m.{info.name}('d')")
            return self.eval(Call(info.name, ((None, Name(name)),)).text())

        params.append(inspect.Parameter("name", inspect.Parameter.POSITIONAL_ONLY))
        method.__signature__ = inspect.Signature(params, return_annotation="Result")
        method.__name__ = method.__qualname__ = info.name
        method.__doc__ = _docstring(info)
        return method

    def method(self, symbolic: bool = False, **args) -> Result:
        return self.eval(_call(info.name, args).text(), symbolic=symbolic)

    for p in info.params:
        if p.positional:
            continue
        default = inspect.Parameter.empty if p.required else p.default
        if p.kind == "flag" and default is not None:
            default = default == "true"         # a Python bool is accepted for a flag
        params.append(inspect.Parameter(p.name, keyword, default=default))
    params.append(inspect.Parameter("symbolic", keyword, default=False))
    # the spec's options, dimension overrides, spec= and extrapolate=
    params.append(inspect.Parameter("more", inspect.Parameter.VAR_KEYWORD))
    method.__signature__ = inspect.Signature(params, return_annotation="Result")
    method.__name__ = method.__qualname__ = info.name
    method.__doc__ = _docstring(info)
    return method


def _docstring(info) -> str:
    from .compiler.query.query_registry import docstring

    return docstring(info)


# ------------------------------------------------------------------ a loaded spec
class Model:
    """A spec, loaded and checked; queries compile it on first use (cached by content)."""

    def __init__(self, spec):
        from .compiler.query.queries import QueryEngine

        self.spec = spec
        self.engine = QueryEngine(spec)

    @property
    def path(self) -> Path:
        return Path(self.spec.path)

    @property
    def name(self) -> str:
        return self.spec.model

    def __repr__(self) -> str:
        return f"<specc.Model {self.name} from {self.path}>"

    def eval(self, query: str, symbolic: bool = False, **args) -> Result:
        """Evaluate a query expression, e.g. 'params(group=routed_experts) / params()'.

        With keyword arguments the text is a bare query name: eval('flops', P=8192).
        symbolic=True allows scenario symbols as arguments (P=P) and returns the
        closed form when the result depends on them."""
        from .dsl.units import DISPLAY, dims_name

        if not isinstance(query, str):
            raise Error(f"a query is text, got {type(query).__name__} {query!r}", expected="e.g. 'params()'")
        text = _call(query, args).text() if args else query
        try:
            quantity = self.engine.evaluate_text(text, "<query>", symbolic_ok=symbolic)
        except (ValueError, ZeroDivisionError) as exc:    # e.g. a sum with no closed form
            raise Error(f"cannot evaluate '{text}': {exc}") from None
        value = _exact(quantity.value)
        if not symbolic and not getattr(quantity.value, "is_number", True):
            raise Error(f"'{text}' is not a number: {value}", expected="symbolic=True for a closed form")
        return Result(text, value, DISPLAY.get(quantity.dims, dims_name(quantity.dims)),
                      bool(quantity.extrapolated), quantity.value, quantity.dims, quantity.note)

    def __getattr__(self, name):
        raise AttributeError(f"{type(self).__name__} has no attribute or query '{name}'")

    def sweep(self, query: str, fast: bool = True, **over):
        """The query at every point of a grid, exact: m.sweep('flops(P=P, B=B)',
        P=range(1, 10**6 + 1), B=[1, 2, 4]). Each swept name is written NAME=NAME
        in the query and given as a range or a list of non-negative ints. Returns a
        table (compiler/lanes/sweep.py) with .names, .columns, .values (int64 array when
        proven safe, else exact ints/Fractions), .extrapolated, .refused (points
        eval refuses: beyond max_context without extrapolate=true) and .unit;
        specc.compiler.lanes.sweep.to_csv / to_json print it as `specc sweep` does."""
        from .compiler.lanes import sweep as sweeping

        for name, values in over.items():
            if not (isinstance(values, range) or (isinstance(values, (list, tuple)) and values and all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values))):
                raise Error(f"{name}= takes a range or a list of non-negative ints, got {values!r}",
                            expected=f"e.g. {name}=range(1, 1001) or {name}=[1, 2, 4]")
        return sweeping.sweep(self.path, query, dict(over), fast=fast)

    def plan(self, rate, isl=None, osl=None, **options):
        """The cheapest deployments serving `rate` requests/s of `isl`-token prompts and
        `osl`-token answers within ttft=/tpot= ('50 ms'): a plan (plan/search.py) with
        .chosen, .front, .best_per_device, .closest; options as `specc plan`'s
        (devices=, max_gpus=, formats=, mode=, prices=, arrivals=, chunk=, ...);
        mix="2000:300:3,8000:500:1" (or [(isl, osl, weight), ...]) instead of isl/osl."""
        from .plan.run import plan

        return plan(self.path, rate, isl, osl, **options)

    def simulate(self, rate, isl=None, osl=None, device=None, **options):
        """A discrete-event run of one deployment (plan/simulate.py): .mean('ttft'),
        .percentile('tpot', 99), .throughput, .summary(), .plot(path)."""
        from .plan.run import simulate

        return simulate(self.path, rate, isl, osl, device, **options)

    # ------------------------------------------------------------ claims
    def claims(self, extra_files=()) -> list[Claim]:
        """The claims of the spec (its claims:, its claims_files and extra files), not evaluated."""
        from .verify.claims import load_claims

        return [Claim(c.id, c.source, c.quote, str(c.eval), str(c.expect or c.expect_formula or ""),
                      c.erratum, c.note, str(c.loc)) for c in load_claims(self.spec, extra_files)]

    def verify(self, extra_files=()) -> list[ClaimResult]:
        """Every claim checked: the objects `specc verify --format json` prints."""
        from .verify.claims import check, load_claims
        from .verify.output import claim_record

        out = []
        for claim in load_claims(self.spec, extra_files):
            r = check(self.engine, claim)
            out.append(ClaimResult(**claim_record(r)))
        return out


# one method per declared query (compiler/query/query_registry.py): m.flops(P=8192), m.params(group="routed_experts"),
# m.dim("d")
def _add_query_methods() -> None:
    from .compiler.query.query_registry import REGISTRY

    for info in REGISTRY.values():
        setattr(Model, info.name, _query_method(info))


_add_query_methods()


def load(spec: str | Path) -> Model:
    """A spec by path ('specs/<model>.yaml', a pathlib.Path) or by name ('<model>':
    the current folder, --path/SPECC_PATH folders, then the specs shipped with specc)."""
    from .compiler.schema.spec import load_spec
    from .dsl.search_path import spec_argument

    if not isinstance(spec, (str, Path)):
        raise Error(f"specc.load() takes a path or a spec name, got {type(spec).__name__}")
    return Model(load_spec(spec_argument(str(spec))))
