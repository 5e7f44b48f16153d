"""Verification results as text, JSON, JUnit XML or Markdown."""

from __future__ import annotations

import json
import re
from collections import Counter
from fractions import Fraction
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from .verdicts import VERDICTS

if TYPE_CHECKING:
    from .claims import Result


# ------------------------------------------------------------------ escaping echoed fields
# control characters (newlines, carriage returns, escape sequences) and the Unicode line breaks
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text) -> str:
    """A field from a spec or claims file as printed into CI output: on one line, its
    control characters shown as escapes (\\n, \\x1b), so it can neither start a log line
    of its own, nor forge a workflow command (GitHub Actions reads a line beginning
    with `::` as one), nor break XML or move a terminal's cursor."""
    return _CONTROL.sub(_escape_char, str(text))


def _escape_char(m) -> str:
    char = m.group()
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return named.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def safe_lines(text) -> list[str]:
    """A multi-line message as lines that are each safe to print (see one_line): a
    line that would begin with `::` (after spaces) is prefixed with a backslash."""
    out = []
    for line in str(text).splitlines():
        line = one_line(line)
        if line.lstrip().startswith("::"):
            line = line.replace("::", "\\::", 1)
        out.append(line)
    return out


def summary(results: list[Result]) -> dict:
    counts = Counter(r.verdict for r in results)
    return {v: counts.get(v, 0) for v in VERDICTS}


def claim_counts(results: list[Result]) -> str:
    """'183 claims' or '183 claims: 180 model claims, 3 fact checks' (a fact check reads
    only a device or dtype table, so it says nothing about the model)."""
    facts = sum(1 for r in results if r.claim.fact_check)
    if not facts:
        return f"{len(results)} claims"
    return f"{len(results)} claims: {len(results) - facts} model claims, {facts} fact check{'s' if facts != 1 else ''}"


def tolerance_text(r: Result) -> str:
    if r.low is None:
        return ""
    # exact rationals (sympy or Fraction) as Fractions: no sympy needed to print
    half = (_fraction(r.high) - _fraction(r.low)) / 2 / Fraction(r.unit_factor)
    return f"±{float(half):.3g} {r.unit_label}".strip()


def _fraction(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(int(x.p), int(x.q))


def _claim_lines(r: Result) -> list[str]:
    """One claim as the verbose listing shows it: verdict, id, source; query and exact value;
    computed vs expected; the reason when it is not a PASS. Every echoed field is one line,
    control characters escaped (one_line), so a claim cannot forge CI log lines."""
    expected = one_line(r.claim.expect or r.claim.expect_formula or "")
    lines = [f"{r.verdict:<5}  {one_line(r.claim.id)}  {one_line(r.claim.source)}",
             f"       {one_line(r.claim.eval)}  =  {r.computed_exact() or '—'}"
             + ("   (fact check: reads no model)" if r.claim.fact_check else ""),
             f"       computed {r.computed_display()}   expected {expected} {tolerance_text(r)}".rstrip()]
    if r.message and r.verdict != "PASS":
        lines.extend("       " + line for line in safe_lines(r.message))
    return lines


def _totals(results: list[Result]) -> list[str]:
    counts = summary(results)
    lines = []
    facts = sum(1 for r in results if r.claim.fact_check)
    if facts:
        lines.append(f"{len(results) - facts} model claims and {facts} fact check{'s' if facts != 1 else ''} "
                     "(claims that read only a device or dtype table, not the model)")
    lines.append(_counts_text(counts) + f" ({len(results)} claim{'s' if len(results) != 1 else ''})")
    return lines


def _counts_text(counts: dict) -> str:
    return ", ".join(f"{n} {v.lower()}" for v, n in counts.items() if n) or "no claims"


def as_verbose_text(results: list[Result]) -> str:
    """Every claim, three lines or more each (`specc verify --verbose`)."""
    lines = []
    width = max((len(one_line(r.claim.id)) for r in results), default=10)
    for r in results:
        first, *rest = _claim_lines(r)
        lines.append(f"{r.verdict:<5}  {one_line(r.claim.id):<{width}}  {one_line(r.claim.source)}")
        lines.extend(rest)
    lines.append("")
    lines.extend(_totals(results))
    return "\n".join(lines)


# verdicts whose details the summary prints: those that make `specc verify` exit non-zero
_DETAILED = ("FAIL", "XPASS", "ERROR")


def as_text(results: list[Result], groups=None) -> str:
    """The default view, one screen for every shipped spec: one line per spec with its
    verdict counts, the details of every claim that makes the run fail (FAIL, XPASS,
    ERROR), then the totals. XFAILs (numbers the source prints wrongly, recorded as
    errata) are counted; `--verbose` lists every claim."""
    by_spec: dict[str, list] = {}
    if groups is None:                # no command line: group by the claims' own spec
        for r in results:
            by_spec.setdefault(one_line(str(r.claim.spec)), []).append(r)
    else:                             # the specs as given, in order; one without claims says so
        for path, found in groups:
            by_spec.setdefault(one_line(str(path)), []).extend(found)
    width = max((len(name) for name in by_spec), default=10)
    lines = [f"{name:<{width}}  {_counts_text(summary(group))}" for name, group in by_spec.items()]
    bad = [r for r in results if r.verdict in _DETAILED]
    if bad:
        lines.append("")
        for r in bad:
            lines.extend(_claim_lines(r))
    lines.append("")
    lines.extend(_totals(results))
    counts = summary(results)
    if counts["XFAIL"]:
        lines.append("xfail: the source prints this number wrongly and the claim records the erratum "
                     "(the computed value disagrees, as expected)")
    if len(bad) < len(results):
        lines.append("--verbose lists every claim with its query, computed and expected values")
    return "\n".join(lines)


def claim_record(r: Result) -> dict:
    """One verified claim as the fields `--format json` prints (and the API's ClaimResult holds)."""
    return {
        "id": r.claim.id, "spec": r.claim.spec, "source": r.claim.source, "eval": str(r.claim.eval),
        "expected": str(r.claim.expect or r.claim.expect_formula), "computed": r.computed_exact(),
        "verdict": r.verdict, "note": r.message or (r.claim.note or ""), "fact_check": r.claim.fact_check,
    }


def as_json(results: list[Result]) -> str:
    claims = [claim_record(r) for r in results]
    facts = sum(1 for r in results if r.claim.fact_check)
    return json.dumps({"claims": claims, "summary": summary(results),
                       "counts": {"model_claims": len(results) - facts, "fact_checks": facts}},
                      indent=2, ensure_ascii=False)


def as_junit(results: list[Result]) -> str:
    counts = summary(results)
    failures = counts["FAIL"] + counts["XPASS"]
    out = [f'<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuite name="specc" tests="{len(results)}" failures="{failures}" errors="{counts["ERROR"]}" '
           f'skipped="{counts["XFAIL"]}">']
    for r in results:
        out.append(f'  <testcase classname={quoteattr(one_line(r.claim.spec))} name={quoteattr(one_line(r.claim.id))}>')
        expected = one_line(r.claim.expect or r.claim.expect_formula)
        message = "\n".join(safe_lines(r.message or ""))
        body = escape(f"{one_line(r.claim.eval)} = {r.computed_exact()}; expected {expected}. {message}")
        if r.verdict in ("FAIL", "XPASS"):
            out.append(f'    <failure message={quoteattr(r.verdict)}>{body}</failure>')
        elif r.verdict == "ERROR":
            out.append(f'    <error message="ERROR">{body}</error>')
        elif r.verdict == "XFAIL":
            out.append(f'    <skipped message={quoteattr("XFAIL: " + one_line(r.claim.erratum or ""))}/>')
        out.append('  </testcase>')
    out.append('</testsuite>')
    return "\n".join(out)


def as_markdown(results: list[Result]) -> str:
    out = ["| verdict | claim | source | query | computed | expected |", "|---|---|---|---|---|---|"]
    for r in results:
        cells = [r.verdict, f"`{one_line(r.claim.id)}`", one_line(r.claim.source), f"`{one_line(r.claim.eval)}`",
                 r.computed_display(), f"{one_line(r.claim.expect or r.claim.expect_formula)} {tolerance_text(r)}".strip()]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    counts = summary(results)
    out.append("")
    out.append("**Summary:** " + ", ".join(f"{v} {n}" for v, n in counts.items()) + f" ({claim_counts(results)})")
    return "\n".join(out)


def render(groups: list, fmt: str, verbose: bool = False, keep_empty: bool = True) -> str:
    """`specc verify`'s output in both lanes. groups: (spec as given, its results) in command-line
    order; the summary has a line per spec (one without claims too, unless keep_empty is False)."""
    key = output_format(fmt, verbose)
    results = [r for _, found in groups for r in found]
    if key != "text":
        return FORMATS[key](results)
    return as_text(results, [(path, found) for path, found in groups if found or keep_empty])


def output_format(fmt: str, verbose: bool) -> str:
    """The FORMATS key of `specc verify --format FMT [--verbose]` (both lanes)."""
    return "verbose" if fmt == "table" or (fmt == "text" and verbose) else fmt


FORMATS = {"text": as_text, "verbose": as_verbose_text, "json": as_json, "junit": as_junit, "md": as_markdown}
