"""Claims: numbers a document prints, each tied to the query that recomputes it.

A claim's expected value is parsed with the quantity grammar; its printed digits
set the tolerance (half a unit in the last printed digit, after unit
conversion), and the verdict is PASS/FAIL, or XFAIL/XPASS for a claim marked as
an erratum of its source, or ERROR when it cannot be evaluated."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import sympy as sp

from ..compiler.queries import QueryEngine, Quantity
from ..compiler.spec import Spec, check_keys, seq, text
from ..compiler.symbols import DTYPE_BYTES, SCENARIO
from ..compiler.expressions import Evaluator
from ..dsl.errors import Loc, SpecError
from ..dsl.parser import parse_expr, parse_quantity
from ..dsl.units import dims_name, unit_of_terms
from ..dsl.yamlload import Map, Text, load_yaml_file
from .verdicts import VERDICTS  # noqa: F401 - re-exported

CLAIM_KEYS = {"id", "source", "quote", "eval", "expect", "expect_formula", "tolerance", "erratum", "note"}


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

    def computed_exact(self) -> str:
        if self.computed is None:
            return ""
        value = self.computed.value
        if isinstance(value, sp.Rational):
            return str(value.p) if value.q == 1 else f"{value.p}/{value.q}"
        return str(value)

    def computed_display(self) -> str:
        """The computed value in the claim's unit, two digits finer than printed."""
        if self.computed is None:
            return "—"
        value = self.computed.value
        if not value.is_number:
            return str(value)
        scaled = sp.Rational(value) / sp.Rational(self.unit_factor) if value.is_rational else value / sp.Rational(self.unit_factor)
        digits = self.decimals + 2
        text = f"{float(scaled):,.{digits}f}" if digits < 12 else str(scaled)
        return f"{text} {self.unit_label}".strip()


def load_claims(spec: Spec, extra_files=()) -> list[Claim]:
    """The spec's own claims, its claims_files, then any --claims files."""
    entries = [(node, spec.path) for node in spec.claims]
    files = [Path(spec.path).parent / f for f in spec.claims_files] + [Path(f) for f in extra_files]
    for path in files:
        raw = load_yaml_file(path)
        if raw is None:
            continue
        raw = check_keys(raw, {"claims"}, {"claims"}, f"claims file {path.name}")
        entries.extend((node, str(path)) for node in seq(raw["claims"], "claims"))
    claims, seen = [], {}
    for node, _ in entries:
        node = check_keys(node, CLAIM_KEYS, {"id", "eval"}, "claim")
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
                            str(node["note"]) if node.get("note") else None, node.loc))
    return claims


def _tolerance(claim: Claim, expected_q, factor: Fraction, expected_value: Fraction):
    """(half-width) of the accepted interval, in base units."""
    if claim.tolerance is None:
        step = Fraction(1, 10 ** expected_q.decimals) * Fraction(10) ** expected_q.exponent
        return step / 2 * factor
    tol = parse_quantity(claim.tolerance)
    tol_unit = unit_of_terms(tol.numerator, tol.denominator)
    if tol_unit.label == "%":
        return abs(expected_value) * tol.value / 100
    return tol.value * tol_unit.factor


def check(engine: QueryEngine, claim: Claim) -> Result:
    try:
        computed = engine.evaluate_text(claim.eval, symbolic_ok=claim.expect_formula is not None)
    except SpecError as exc:
        return Result(claim, "ERROR", message=exc.render())
    except (ValueError, TypeError, ZeroDivisionError) as exc:
        return Result(claim, "ERROR", message=f"{claim.eval.loc}: cannot evaluate: {exc}")
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
    try:
        expected_q = parse_quantity(claim.expect)
        exp_unit = unit_of_terms(expected_q.numerator, expected_q.denominator)
    except SpecError as exc:
        return Result(claim, "ERROR", computed, message=exc.render())
    if exp_unit.dims != computed.dims:
        msg = SpecError(f"unit mismatch: the query gives {dims_name(computed.dims)} but '{claim.expect}' is "
                        f"{dims_name(exp_unit.dims)}", claim.expect.loc, span=len(claim.expect),
                        expected=f"a value in {dims_name(computed.dims)}").render()
        return Result(claim, "ERROR", computed, message=msg)
    expected = expected_q.value * exp_unit.factor
    try:
        half = _tolerance(claim, expected_q, exp_unit.factor, expected)
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
    # both ends are accepted: a value exactly halfway prints as either neighbour,
    # depending on the rounding convention (half up, half to even)
    agrees = bool(low <= value) and bool(value <= high) if half > 0 else bool(value == expected)
    result.verdict = "PASS" if agrees else "FAIL"
    if not agrees:
        result.message = f"computed {result.computed_display()} is outside [{_fmt(low, exp_unit)}, {_fmt(high, exp_unit)}]"
    return _erratum(result, agrees)


def _fmt(value, unit) -> str:
    return f"{float(value / sp.Rational(unit.factor)):,.6g} {unit.label}"


def _erratum(result: Result, agrees: bool) -> Result:
    if result.claim.erratum is None:
        return result
    if agrees:
        result.verdict = "XPASS"
        result.message = "marked as an erratum, but the computed value agrees with the source"
    else:
        result.verdict = "XFAIL"
        result.message = f"erratum: {result.claim.erratum}"
    return result


def verify_spec(spec: Spec, extra_files=()) -> list[Result]:
    engine = QueryEngine.shared(spec)
    return [check(engine, claim) for claim in load_claims(spec, extra_files)]
