"""Verification results as text, JSON, JUnit XML or Markdown."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from .verdicts import VERDICTS

if TYPE_CHECKING:
    from .claims import Result


def summary(results: list[Result]) -> dict:
    counts = Counter(r.verdict for r in results)
    return {v: counts.get(v, 0) for v in VERDICTS}


def _tol(r: Result) -> str:
    if r.low is None:
        return ""
    # exact rationals (sympy or Fraction) as Fractions: no sympy needed to print
    half = (_fraction(r.high) - _fraction(r.low)) / 2 / Fraction(r.unit_factor)
    return f"±{float(half):.3g} {r.unit_label}".strip()


def _fraction(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(int(x.p), int(x.q))


def as_text(results: list[Result]) -> str:
    lines = []
    width = max((len(r.claim.id) for r in results), default=10)
    for r in results:
        expected = r.claim.expect or r.claim.expect_formula or ""
        lines.append(f"{r.verdict:<5}  {r.claim.id:<{width}}  {r.claim.source}")
        lines.append(f"       {r.claim.eval}  =  {r.computed_exact() or '—'}")
        lines.append(f"       computed {r.computed_display()}   expected {expected} {_tol(r)}")
        if r.message and r.verdict != "PASS":
            lines.extend("       " + line for line in r.message.splitlines())
    counts = summary(results)
    lines.append("")
    lines.append(", ".join(f"{n} {v.lower() if v not in ('XFAIL', 'XPASS') else v.lower()}" for v, n in counts.items() if n)
                 + f" ({len(results)} claims)")
    return "\n".join(lines)


def as_json(results: list[Result]) -> str:
    claims = [{
        "id": r.claim.id, "spec": r.claim.spec, "source": r.claim.source, "eval": str(r.claim.eval),
        "expected": str(r.claim.expect or r.claim.expect_formula), "computed": r.computed_exact(),
        "verdict": r.verdict, "note": r.message or (r.claim.note or ""),
    } for r in results]
    return json.dumps({"claims": claims, "summary": summary(results)}, indent=2, ensure_ascii=False)


def as_junit(results: list[Result]) -> str:
    counts = summary(results)
    failures = counts["FAIL"] + counts["XPASS"]
    out = [f'<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuite name="specc" tests="{len(results)}" failures="{failures}" errors="{counts["ERROR"]}" '
           f'skipped="{counts["XFAIL"]}">']
    for r in results:
        out.append(f'  <testcase classname={quoteattr(r.claim.spec)} name={quoteattr(r.claim.id)}>')
        body = escape(f"{r.claim.eval} = {r.computed_exact()}; expected {r.claim.expect or r.claim.expect_formula}. {r.message}")
        if r.verdict in ("FAIL", "XPASS"):
            out.append(f'    <failure message={quoteattr(r.verdict)}>{body}</failure>')
        elif r.verdict == "ERROR":
            out.append(f'    <error message="ERROR">{body}</error>')
        elif r.verdict == "XFAIL":
            out.append(f'    <skipped message={quoteattr("XFAIL: " + (r.claim.erratum or ""))}/>')
        out.append('  </testcase>')
    out.append('</testsuite>')
    return "\n".join(out)


def as_markdown(results: list[Result]) -> str:
    out = ["| verdict | claim | source | query | computed | expected |", "|---|---|---|---|---|---|"]
    for r in results:
        cells = [r.verdict, f"`{r.claim.id}`", r.claim.source, f"`{r.claim.eval}`", r.computed_display(),
                 f"{r.claim.expect or r.claim.expect_formula} {_tol(r)}".strip()]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    counts = summary(results)
    out.append("")
    out.append("**Summary:** " + ", ".join(f"{v} {n}" for v, n in counts.items()))
    return "\n".join(out)


FORMATS = {"text": as_text, "json": as_json, "junit": as_junit, "md": as_markdown}
