"""The console script's fast lane: `eval` and `verify` answered from compiled
queries (compiler/lanes/compiled.py) without importing click, sympy, yaml or lark.

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
    from .dsl.human import exact_json

    return exact_json(value)


def _float(value):
    """The value as a float for JSON, or None (a closed form, or beyond a float's range:
    the exact value is printed beside it either way)."""
    try:
        if isinstance(value, (int, Fraction)):
            return float(value)
        return float(value) if value.is_number else None
    except (OverflowError, TypeError, ValueError):
        return None


@printing_exact
def eval_rows(queries, answers, notes=None) -> list:
    """answers: (value, unit label, extrapolated, note) per query, or an error (an exception, kept as it is);
    notes: query -> why its value is what it is (a 'note' key only where there is one)."""
    rows = []
    for text, answer in zip(queries, answers):
        if isinstance(answer, Exception):
            rows.append(answer)
            continue
        value, unit, extrapolated, note = answer
        row = {"query": text, "value": _json_value(value), "float": _float(value), "unit": unit,
               "extrapolated": bool(extrapolated)}
        note = note or (notes or {}).get(text)
        if note:
            row["note"] = note
        rows.append(row)
    return rows


def value_notes(spec_path, queries, answers) -> dict:
    """query -> the symbolic engine's note, for the few answers that need a reason beside the
    value (a b_max of 0 says what is short). The compiled store keeps values only, so those
    queries are asked once more of the engine (rare: only a zero capacity)."""
    from .compiler.query.query_value import Expr

    def capacity(text) -> bool:        # the query is one b_max call (read as a query value, not as text)
        parsed = Expr.parse(text)
        return parsed is not None and parsed.call is not None and parsed.call.name == "b_max"

    wanted = [text for text, answer in zip(queries, answers)
              if not isinstance(answer, Exception) and answer[0] == 0 and capacity(text)]
    if not wanted:
        return {}
    from .compiler.query.queries import QueryEngine
    from .compiler.schema.spec import load_spec

    engine = QueryEngine.shared(load_spec(spec_path))
    return {text: engine.evaluate_text(text).note for text in wanted}


def _row_value(value):
    """A row's value back as a number: an int, a Fraction from 'p/q', else the text of a closed form."""
    if isinstance(value, str) and value.count("/") == 1:
        num, den = value.split("/")
        if num.lstrip("-").isdigit() and den.isdigit():
            return Fraction(int(num), int(den))
    return value


@printing_exact
def render_eval(rows, as_json: bool, exact: bool = False) -> str:
    """The text of `specc eval`: times in their readable unit ('tpot(...) ≈ 13.654 ms'), every other
    value exact; --exact prints times as exact fractions of seconds too, --json every value exact."""
    if as_json:
        return json.dumps(rows, indent=2)
    from .dsl.human import show

    lines = []
    for row in rows:
        relation, text = show(_row_value(row["value"]), row["unit"], row["extrapolated"], exact)
        note = f"  ({row['note']})" if row.get("note") else ""
        lines.append(f"{row['query']} {relation} {text}{note}")
    return "\n".join(lines)


# ------------------------------------------------------------------ the lane
def _eval(args) -> int | None:
    as_json = exact = False
    rest = []
    for arg in args:
        if arg == "--json":
            as_json = True
        elif arg == "--exact":
            exact = True
        elif arg.startswith("-"):
            return None
        else:
            rest.append(arg)
    if len(rest) < 2 or not os.path.isfile(rest[0]):
        return None
    from .compiler.lanes import compiled

    spec, queries = rest[0], rest[1:]
    answers = []
    for text in queries:
        found = compiled.lookup(spec, text)
        if found is None:
            break
        answers.append((found.value, found.unit, found.extrapolated, found.note))
    else:
        rows = eval_rows(queries, answers, value_notes(spec, queries, answers))
        sys.stdout.write(render_eval(rows, as_json, exact) + "\n")
        return 0
    # a miss: compile what is missing here rather than import click for it (a first run
    # pays for sympy already); any error is left to the click command to report
    from .dsl.errors import SpecError

    try:
        answers = compiled_answers(spec, queries)
    except SpecError:
        return None
    rows = eval_rows(queries, answers, value_notes(spec, queries, answers))
    sys.stdout.write(render_eval(rows, as_json, exact) + "\n")
    return 0


def compiled_answers(spec_path, queries, keep_going: bool = False) -> list:
    """(value, unit, extrapolated) of each query, from compiled queries, compiling a
    closed form (with the symbolic engine) where the store has none. Shared by the
    fast lane and the click command, so both print the same bits. A query's located
    error is raised, or with keep_going=True kept in its place (the others still answered)."""
    from .compiler.lanes import compile_queries
    from .compiler.query.queries import QueryEngine
    from .compiler.schema.spec import load_spec
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
            answers.append((found.value, found.unit, found.extrapolated, found.note))
    finally:
        compile_queries.flush()
    return answers


def _verify(args) -> int | None:
    specs, claim_files, fmt, only, verbose = [], [], "text", None, False
    it = iter(args)
    for arg in it:
        if arg in ("-v", "--verbose"):
            verbose = True
        elif arg in ("--format", "--only", "--claims"):
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
    if not specs or fmt not in ("text", "table", "json", "junit", "md"):
        return None
    if not all(os.path.isfile(p) for p in specs + claim_files):
        return None
    from .verify import fast_claims

    groups = []
    for path in specs:
        found = fast_claims.cached_results(path, claim_files)
        if found is None:
            return None
        groups.append((path, [r for r in found if not only or only in r.claim.id]))
    results = [r for _, found in groups for r in found]
    if only and not results:
        return None          # the click command says which ids exist
    from .verify.output import render

    sys.stdout.write(render(groups, fmt, verbose, keep_empty=not only) + "\n")
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
    except BrokenPipeError:
        raise                # the reader went away: specc/cli.py stops quietly
    except Exception:  # noqa: BLE001 - any surprise: the full command line handles it
        return None
    return None
