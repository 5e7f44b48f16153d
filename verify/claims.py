"""Claims: numbers a document prints, each tied to the query that recomputes it.

A claim's expected value is parsed with the quantity grammar; its printed digits
set the tolerance (half a unit in the last printed digit, after unit
conversion), and the verdict is PASS/FAIL, or XFAIL/XPASS for a claim marked as
an erratum of its source, or ERROR when it cannot be evaluated."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import sympy as sp

from ..compiler.query.queries import QueryEngine, Quantity
from ..compiler.schema.spec import Spec, check_keys, seq, text
from ..compiler.schema.symbols import DTYPE_BYTES, SCENARIO
from ..compiler.schema.expressions import Evaluator
from ..dsl import ast
from ..dsl.errors import Loc, SpecError
from ..dsl.human import exact_text
from ..dsl.parser import parse_expr, parse_quantity
from ..dsl.units import dims_name, unit_of_terms
from ..dsl.yamlload import Map, Text, load_yaml_file
from .verdicts import VERDICTS, erratum_verdict, interval_verdict, limit_text, show_scaled  # noqa: F401 - VERDICTS re-exported

CLAIM_KEYS = {"id", "source", "quote", "gloss", "eval", "expect", "expect_formula", "tolerance", "erratum", "note"}


# how a document states a bound: the words and signs an `expect:` may start with
# (the number after them is exact: "more than 90 %" is 0.9, not 0.85..0.95)
BOUNDS = {">=": ">=", "≥": ">=", "at least": ">=", "no less than": ">=",
          ">": ">", "more than": ">", "over": ">", "above": ">",
          "<=": "<=", "≤": "<=", "at most": "<=", "no more than": "<=",
          "<": "<", "under": "<", "less than": "<", "below": "<"}
# "about 90 %": an approximate number, accepted only with a declared `tolerance:`
ABOUT = ("about", "around", "roughly", "nearly", "approximately", "~", "≈")
_ABOUT_RE = re.compile(r"\s*(" + "|".join(re.escape(w) for w in ABOUT) + r")(?=[\s\d.+-])\s*")
_BOUND_RE = re.compile(r"\s*(" + "|".join(sorted((re.escape(k) for k in BOUNDS), key=len, reverse=True))
                       + r")(?=[\s\d.+-])\s*")
_HOLDS = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b}


def split_bound(expect) -> tuple[str | None, int]:
    """(comparison or 'about', characters it takes) at the start of an `expect:` text."""
    match = _BOUND_RE.match(str(expect))
    if match:
        return BOUNDS[match.group(1)], match.end()
    match = _ABOUT_RE.match(str(expect))
    if match:
        return "about", match.end()
    return None, 0


def touches_model(eval_text) -> bool:
    """Whether a claim's query reads the model (a query whose declaration says so; device
    and storage-type look-ups do not): a claim that does not is a fact check."""
    from ..compiler.query.query_registry import REGISTRY

    def reads_model(name) -> bool:
        return name in REGISTRY and REGISTRY[name].reads_model

    node = parse_expr(eval_text)
    return any(isinstance(n, ast.Call) and reads_model(n.func) or isinstance(n, ast.Name) and reads_model(n.id)
               for n in node.walk())


@dataclass
class Claim:
    id: str
    spec: str
    source: str
    quote: str
    eval: Text
    expect: Text | None
    expect_formula: Text | None
    tolerance: Text | None
    erratum: str | None
    note: str | None
    loc: Loc
    gloss: str | None = None      # the quote in English, for a claim no catalog entry states (verify/sources.py)

    @property
    def fact_check(self) -> bool:
        """A claim whose query never reads the model (only a device or dtype table, or
        unit arithmetic): reported apart from the model claims."""
        try:
            return not touches_model(self.eval)
        except SpecError:
            return False


@dataclass
class Result:
    claim: Claim
    verdict: str
    computed: Quantity | None = None
    expected: sp.Expr | None = None     # in base units
    low: sp.Expr | None = None
    high: sp.Expr | None = None
    unit_label: str = ""
    unit_factor: Fraction = Fraction(1)
    decimals: int = 0
    message: str = ""
    bound: str | None = None            # '>=', '>', '<=', '<' for an inequality claim

    def computed_exact(self) -> str:
        if self.computed is None:
            return ""
        return exact_text(self.computed.value)

    def computed_display(self) -> str:
        """The computed value in the claim's unit, two digits finer than printed."""
        if self.computed is None:
            return "—"
        value = self.computed.value
        if not value.is_number:
            return str(value)
        if value.is_rational:
            scaled = Fraction(int(value.p), int(value.q)) / Fraction(self.unit_factor)
            return show_scaled(scaled, self.decimals, self.unit_label)
        scaled = value / sp.Rational(self.unit_factor)
        digits = self.decimals + 2
        text = f"{float(scaled):,.{digits}f}" if digits < 12 else str(scaled)
        return f"{text} {self.unit_label}".strip()


def claims_file(spec: Spec, name: str) -> Path:
    """A claims_files entry: beside the spec, on the search path, or shipped (dsl/search_path.py)."""
    from ..dsl.search_path import relative_file

    listed = spec.raw.get("claims_files") if spec.raw is not None else None
    loc = next((item.loc for item in (listed if isinstance(listed, list) else [listed])
                if str(item) == name and hasattr(item, "loc")), None)
    return relative_file(name, spec.path, loc, "claims file")


def load_claims(spec: Spec, extra_files=()) -> list[Claim]:
    """The spec's own claims, its claims_files, then any --claims files."""
    entries = [(node, spec.path) for node in spec.claims]
    files = [claims_file(spec, f) for f in spec.claims_files] + [Path(f) for f in extra_files]
    for path in files:
        raw = load_yaml_file(path)
        if raw is None:
            continue
        raw = check_keys(raw, {"claims"}, {"claims"}, f"claims file {path.name}")
        entries.extend((node, str(path)) for node in seq(raw["claims"], "claims"))
    claims, seen = [], {}
    for node, _ in entries:
        node = check_keys(node, CLAIM_KEYS, {"id", "eval"}, "claim")
        _check_one_line(node["id"], "claim id")
        if "expect" not in node and "expect_formula" not in node:
            raise SpecError(f"claim '{node['id']}' needs 'expect:' or 'expect_formula:'", node.loc,
                            expected="expect: 133.6 TFLOPs")
        cid = str(text(node["id"], "id"))
        if cid in seen:
            raise SpecError(f"claim id '{cid}' is used twice (first at {seen[cid]})", node["id"].loc, span=len(cid))
        seen[cid] = node["id"].loc

        def opt(key):
            return text(node[key], key) if node.get(key) is not None else None

        claims.append(Claim(cid, spec.path, str(node.get("source") or ""), str(node.get("quote") or ""),
                            text(node["eval"], "eval"), opt("expect"), opt("expect_formula"), opt("tolerance"),
                            str(node["erratum"]) if node.get("erratum") else None,
                            str(node["note"]) if node.get("note") else None, node.loc,
                            str(node["gloss"]) if node.get("gloss") else None))
    return claims


def _check_one_line(value, what: str) -> None:
    """A claim id is printed into CI logs and reports: one line, no control characters
    (a newline could forge a log line or a GitHub workflow command)."""
    import re

    bad = re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029]", str(value))
    if bad:
        raise SpecError(f"{what} holds a control character (U+{ord(bad.group()):04X})", getattr(value, "loc", None),
                        expected=f"a {what} on one line, of printable characters")


def _tolerance(claim: Claim, expected_q, factor: Fraction, expected_value: Fraction, exp_unit=None):
    """(half-width) of the accepted interval, in base units. An explicit tolerance is
    checked like `expect`: in the claim's unit (or a % of it), and positive."""
    if claim.tolerance is None:
        step = Fraction(1, 10 ** expected_q.decimals) * Fraction(10) ** expected_q.exponent
        return step / 2 * factor
    tol = parse_quantity(claim.tolerance)
    tol_unit = unit_of_terms(tol.numerator, tol.denominator)
    if tol.value <= 0:
        raise SpecError(f"tolerance '{claim.tolerance}' must be positive", claim.tolerance.loc,
                        span=len(claim.tolerance), expected="a positive amount, e.g. 0.5 GB or 2 %")
    if tol_unit.label == "%":
        return abs(expected_value) * tol.value / 100
    if exp_unit is not None and tol_unit.dims != exp_unit.dims:
        raise SpecError(f"tolerance unit mismatch: '{claim.tolerance}' is {dims_name(tol_unit.dims)} but the "
                        f"claim is {dims_name(exp_unit.dims)}", claim.tolerance.loc, span=len(claim.tolerance),
                        expected=f"a tolerance in {dims_name(exp_unit.dims)} or a percentage")
    return tol.value * tol_unit.factor


def check(engine: QueryEngine, claim: Claim) -> Result:
    try:
        computed = engine.evaluate_text(claim.eval, symbolic_ok=claim.expect_formula is not None)
    except SpecError as exc:
        return Result(claim, "ERROR", message=exc.render())
    except (ValueError, TypeError, ZeroDivisionError) as exc:
        return Result(claim, "ERROR", message=f"{claim.eval.loc}: cannot evaluate: {exc}")
    if computed.value.is_number and computed.value.is_real is False:
        return Result(claim, "ERROR", computed, message=SpecError(
            f"the query's value {computed.value} is not a real number", claim.eval.loc,
            span=len(claim.eval)).render())
    if claim.expect_formula is not None:
        # a formula may name the scenario symbols, the spec's dimensions (as the
        # document writes it: 2*L*n_kv*d_h*bf16) and storage types' bytes
        env = dict(DTYPE_BYTES)
        env.update({k: v for k, v in engine.model({}).dims.items() if not isinstance(v, tuple)})
        env.update(SCENARIO)
        try:
            formula = Evaluator(env, what="scenario symbol or dimension")(parse_expr(claim.expect_formula))
        except SpecError as exc:
            return Result(claim, "ERROR", computed, message=exc.render())
        agrees = sp.simplify(sp.expand(computed.value - formula)) == 0
        result = Result(claim, "PASS" if agrees else "FAIL", computed, formula, unit_label="(formula)")
        if not agrees:
            result.message = f"{computed.value} differs from {formula} by {sp.simplify(computed.value - formula)}"
        return _erratum(result, agrees)
    bound, skip = split_bound(claim.expect)
    try:
        expected_q = parse_quantity(Text(str(claim.expect)[skip:], claim.expect.loc_at(skip)) if skip else claim.expect)
        exp_unit = unit_of_terms(expected_q.numerator, expected_q.denominator)
    except SpecError as exc:
        return Result(claim, "ERROR", computed, message=exc.render())
    if bound == "about":
        if claim.tolerance is None:
            return Result(claim, "ERROR", computed, message=SpecError(
                f"'{claim.expect}' is approximate: an 'about' claim needs a declared tolerance", claim.expect.loc,
                span=len(claim.expect), expected="tolerance: <amount or %> (the source's own 'about')").render())
        bound = None
    if bound is not None and claim.tolerance is not None:
        return Result(claim, "ERROR", computed, message=SpecError(
            "an inequality claim takes no tolerance: its bound is exact", claim.tolerance.loc,
            expected="either expect: '>= 90 %' or expect: 90 % with tolerance:").render())
    if exp_unit.dims != computed.dims:
        msg = SpecError(f"unit mismatch: the query gives {dims_name(computed.dims)} but '{claim.expect}' is "
                        f"{dims_name(exp_unit.dims)}", claim.expect.loc, span=len(claim.expect),
                        expected=f"a value in {dims_name(computed.dims)}").render()
        return Result(claim, "ERROR", computed, message=msg)
    expected = expected_q.value * exp_unit.factor
    if bound is not None:
        return _erratum(_check_bound(claim, computed, bound, expected, expected_q, exp_unit), None)
    try:
        half = _tolerance(claim, expected_q, exp_unit.factor, expected, exp_unit)
    except SpecError as exc:
        return Result(claim, "ERROR", computed, message=exc.render())
    low, high = sp.Rational(expected - half), sp.Rational(expected + half)
    result = Result(claim, "FAIL", computed, sp.Rational(expected), low, high, exp_unit.label, exp_unit.factor,
                    expected_q.decimals)
    value = computed.value
    if not value.is_number:
        result.verdict = "ERROR"
        result.message = f"{claim.eval.loc}: the query is not a number: {value}"
        return result
    result.verdict, result.message = interval_verdict(value, low, high, result.computed_display(),
                                                      sp.Rational(exp_unit.factor), exp_unit.label, claim.erratum)
    return result


def _check_bound(claim, computed, bound, expected, expected_q, exp_unit) -> Result:
    result = Result(claim, "FAIL", computed, sp.Rational(expected), unit_label=exp_unit.label,
                    unit_factor=exp_unit.factor, decimals=expected_q.decimals, bound=bound)
    value = computed.value
    if not value.is_number:
        result.verdict = "ERROR"
        result.message = f"{claim.eval.loc}: the query is not a number: {value}"
        return result
    agrees = bool(_HOLDS[bound](value, sp.Rational(expected)))
    result.verdict = "PASS" if agrees else "FAIL"
    if not agrees:
        result.message = (f"computed {result.computed_display()} is not {bound} "
                          f"{limit_text(expected, sp.Rational(exp_unit.factor), exp_unit.label)}")
    return result


def _erratum(result: Result, agrees: bool | None) -> Result:
    if agrees is None:
        agrees = result.verdict == "PASS"
    if result.claim.erratum is None or result.verdict == "ERROR":
        return result
    result.verdict, result.message = erratum_verdict(agrees, result.claim.erratum)
    return result


def verify_spec(spec: Spec, extra_files=()) -> list[Result]:
    engine = QueryEngine.shared(spec)
    return [check(engine, claim) for claim in load_claims(spec, extra_files)]
