"""The console script's fast lane: `eval` and `verify` answered from compiled
queries (compiler/compiled.py) without importing click, sympy, yaml or lark.

`try_fast(argv)` handles only the plain forms of the two commands: `verify`
only when every answer is already in the cache, `eval` also on a miss (it then
compiles the missing closed forms itself, which a first run needs anyway). It
returns the exit status, or None to hand the command line to click unchanged
(an error to report, any other option, help, a spec given by name, ...).
Nothing is printed before every answer is known, so a hand-over never
duplicates output. The formatting functions are shared with the click
commands, so both lanes print the same text."""

from __future__ import annotations

import json
import os
import sys
from fractions import Fraction

from .dsl.limits import printing_exact


# ------------------------------------------------------------------ eval output
def _json_value(value):
    if type(value) is int:
        return value
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if getattr(value, "is_Integer", False):
        return int(value)
    if getattr(value, "is_Rational", False):
        return f"{value.p}/{value.q}"
    return str(value)


def _float(value):
    """The value as a float for JSON, or None (a closed form, or beyond a float's range:
    the exact value is printed beside it either way)."""
    try:
        if isinstance(value, (int, Fraction)):
            return float(value)
        return float(value) if value.is_number else None
    except (OverflowError, TypeError, ValueError):
        return None


def approx_text(value) -> str:
    """'4.45314e+263': six significant digits of an exact rational, at any magnitude
    (decimal arithmetic: no float overflow above 1.8e308)."""
    from decimal import Context, Decimal

    number = value if isinstance(value, (int, Fraction)) else Fraction(int(value.p), int(value.q))
    frac = Fraction(number)
    try:
        return f"{float(frac):.6g}"
    except OverflowError:
        pass
    quotient = Context(prec=12).divide(Decimal(frac.numerator), Decimal(frac.denominator))
    mantissa, _, exponent = f"{quotient:.6g}".partition("E" if "E" in f"{quotient:.6g}" else "e")
    # the float style: e+409 (Decimal prints E+409 or e+409 by context; both lanes print alike)
    return f"{mantissa}e{exponent[0]}{int(exponent[1:]):02d}" if exponent else mantissa


@printing_exact
def eval_rows(queries, answers) -> list:
    """answers: (value, unit label, extrapolated) per query; an error (an exception) is kept as it is."""
    return [answer if isinstance(answer, Exception) else
            {"query": text, "value": _json_value(answer[0]), "float": _float(answer[0]), "unit": answer[1],
             "extrapolated": bool(answer[2])} for text, answer in zip(queries, answers)]


@printing_exact
def render_eval(rows, as_json: bool) -> str:
    if as_json:
        return json.dumps(rows, indent=2)
    lines = []
    for row in rows:
        flag = "  (extrapolated)" if row["extrapolated"] else ""
        value = row["value"]
        pretty = f"{value:,}" if isinstance(value, int) else str(value)
        approx = "" if isinstance(value, int) else (
            f"  ≈ {row['float']:.6g}" if row["float"] is not None
            else f"  ≈ {approx_text(Fraction(value))}" if isinstance(value, str) and _is_ratio(value) else "")
        lines.append(f"{row['query']} = {pretty} {row['unit']}{approx}{flag}".rstrip())
    return "\n".join(lines)


def _is_ratio(text: str) -> bool:
    head, _, tail = text.partition("/")
    return head.lstrip("-").isdigit() and tail.isdigit()


# ------------------------------------------------------------------ the lane
def _eval(args) -> int | None:
    as_json = False
    rest = []
    for arg in args:
        if arg == "--json":
            as_json = True
        elif arg.startswith("-"):
            return None
        else:
            rest.append(arg)
    if len(rest) < 2 or not os.path.isfile(rest[0]):
        return None
    from .compiler import compiled

    spec, queries = rest[0], rest[1:]
    answers = []
    for text in queries:
        found = compiled.lookup(spec, text)
        if found is None:
            break
        answers.append((found.value, found.unit, found.extrapolated))
    else:
        sys.stdout.write(render_eval(eval_rows(queries, answers), as_json) + "\n")
        return 0
    # a miss: compile what is missing here rather than import click for it (a first run
    # pays for sympy already); any error is left to the click command to report
    from .dsl.errors import SpecError

    try:
        answers = compiled_answers(spec, queries)
    except SpecError:
        return None
    sys.stdout.write(render_eval(eval_rows(queries, answers), as_json) + "\n")
    return 0


def compiled_answers(spec_path, queries, keep_going: bool = False) -> list:
    """(value, unit, extrapolated) of each query, from compiled queries, compiling a
    closed form (with the symbolic engine) where the store has none. Shared by the
    fast lane and the click command, so both print the same bits. A query's located
    error is raised, or with keep_going=True kept in its place (the others still answered)."""
    from .compiler import compile_queries
    from .compiler.queries import QueryEngine
    from .compiler.spec import load_spec
    from .dsl.errors import SpecError

    engine = QueryEngine.shared(load_spec(spec_path))
    answers = []
    try:
        for text in queries:
            try:
                found = compile_queries.answer(engine, text)
            except SpecError as exc:
                if not keep_going:
                    raise
                answers.append(exc)
                continue
            answers.append((found.value, found.unit, found.extrapolated))
    finally:
        compile_queries.flush()
    return answers


def _verify(args) -> int | None:
    specs, claim_files, fmt, only = [], [], "text", None
    it = iter(args)
    for arg in it:
        if arg in ("--format", "--only", "--claims"):
            value = next(it, None)
            if value is None:
                return None
            if arg == "--format":
                fmt = value
            elif arg == "--only":
                only = value
            else:
                claim_files.append(value)
        elif arg.startswith("-"):
            return None
        else:
            specs.append(arg)
    if not specs or fmt not in ("text", "json", "junit", "md"):
        return None
    if not all(os.path.isfile(p) for p in specs + claim_files):
        return None
    from .verify import fast_claims

    results = []
    for path in specs:
        found = fast_claims.cached_results(path, claim_files)
        if found is None:
            return None
        results.extend(found)
    if only:
        results = [r for r in results if only in r.claim.id]
        if not results:
            return None          # the click command says which ids exist
    from .verify.output import FORMATS

    sys.stdout.write(FORMATS[fmt](results) + "\n")
    # the exit status of the click command: 2 for a claim that cannot be evaluated, 1 for FAIL/XPASS
    if any(r.verdict == "ERROR" for r in results):
        return 2
    return 1 if any(r.verdict in ("FAIL", "XPASS") for r in results) else 0


def try_fast(argv) -> int | None:
    if not argv:
        return None
    try:
        if argv[0] == "eval":
            return _eval(argv[1:])
        if argv[0] == "verify":
            return _verify(argv[1:])
    except Exception:  # noqa: BLE001 - any surprise: the full command line handles it
        return None
    return None
