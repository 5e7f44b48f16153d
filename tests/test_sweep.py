"""`specc sweep` and compiler/lanes/sweep.py: every row equals `specc eval` at its
point; int64 only where interval arithmetic proves it safe; exact otherwise."""

from __future__ import annotations

import csv
import io
import json
import random
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from specc.compiler.lanes import codegen, compile_queries, compiled, sweep, vector
from specc.dsl.errors import SpecError

from test_codegen import ARGS, B, P, S, random_expr  # noqa: E402 - tests/ is on sys.path

REPO = Path(__file__).resolve().parents[1]
QWEN = REPO / "specs" / "qwen3_8b.yaml"
V41 = REPO / "specs" / "deepseek_v41.yaml"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    compiled.STORES.clear()
    yield
    compiled.STORES.clear()
    compile_queries.dirty_stores.clear()


def _engine(path):
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    return QueryEngine.shared(load_spec(path))


def _eval(path, text):
    """What `specc eval --no-fast` computes: (exact value, extrapolated)."""
    q = _engine(path).evaluate_text(text, "<query>")
    value = int(q.value) if q.value.is_Integer else Fraction(int(q.value.p), int(q.value.q))
    return value, bool(q.extrapolated)


def _rows(table):
    return list(csv.reader(io.StringIO(sweep.to_csv(table))))


def _value(cell):
    return Fraction(cell) if "/" in cell else int(cell)


@pytest.mark.parametrize("path,query,over", [
    (QWEN, "flops(P=P, B=B)", {"P": range(1, 301), "B": [1, 2, 7]}),
    (V41, "flops(B=B, S=S, P=P)", {"S": [0, 1, 127, 128, 129, 5000], "P": range(1, 41, 3), "B": [1, 3]}),
    (V41, "state_bytes(H=H, extrapolate=true)", {"H": [0, 1, 127, 128, 1048576, 1048577, 3000000]}),
    (QWEN, "request_flops(P=P, G=G)", {"P": [1, 100], "G": [1, 2, 50]}),
])
def test_every_row_equals_eval(path, query, over):
    table = sweep.sweep(path, query, over)
    rows = _rows(table)
    assert rows[0] == list(over) + ["value", "extrapolated"]
    assert len(rows) - 1 == len(table)
    for row in rows[1:]:
        point = dict(zip(over, row))
        text = sweep._literal(query, point)
        assert (_value(row[len(over)]), row[-1] == "true") == _eval(path, text), text


def test_a_million_points_run_as_int64_and_agree_with_eval():
    table = sweep.sweep(QWEN, "flops(P=P, extrapolate=true)", {"P": range(1, 10 ** 6 + 1)})
    assert table.mode == "int64" and len(table) == 10 ** 6
    rng = random.Random(3)
    for i in [0, 1, 40959, 40960, 10 ** 6 - 1] + [rng.randrange(10 ** 6) for _ in range(30)]:
        assert (int(table.values[i]), bool(table.extrapolated[i])) == _eval(QWEN, f"flops(P={i + 1}, extrapolate=true)")


def test_values_beyond_int64_are_exact():
    table = sweep.sweep(V41, "flops(P=P) * flops(P=P)", {"P": range(1, 6)})
    assert table.mode == "exact"
    assert [int(v) for v in table.values] == [_eval(V41, f"flops(P={p}) * flops(P={p})")[0] for p in range(1, 6)]


def test_fractions_are_exact_and_printed_as_p_over_q():
    table = sweep.sweep(QWEN, "flops(P=P) / 7", {"P": range(1, 20)})
    rows = _rows(table)
    assert any("/" in r[1] for r in rows[1:])
    for p, row in zip(range(1, 20), rows[1:]):
        assert _value(row[1]) == _eval(QWEN, f"flops(P={p}) / 7")[0]


def test_the_exact_lane_agrees_with_the_fast_lane():
    over = {"P": range(1, 200, 7), "S": [0, 5, 300]}
    fast = sweep.sweep(V41, "flops(P=P, S=S)", over)
    slow = sweep.sweep(V41, "flops(P=P, S=S)", over, fast=False)
    assert fast.mode == "int64" and slow.mode == "exact"
    assert sweep.to_csv(fast) == sweep.to_csv(slow)


def test_errors_are_the_errors_of_eval():
    with pytest.raises(SpecError, match="at least 1"):
        sweep.sweep(QWEN, "flops(P=P)", {"P": [0, 1, 2]})
    with pytest.raises(SpecError, match="gives no values"):
        sweep.sweep(QWEN, "flops(P=P, B=B)", {"P": [1]})
    with pytest.raises(SpecError, match="not used"):
        sweep.sweep(QWEN, "flops(P=P)", {"P": [1], "B": [1]})
    for bad in ("P=", "P=3..1", "X=1..3", "P=1,a"):
        with pytest.raises(SpecError):
            sweep.parse_over(bad)
    assert sweep.parse_over("P=1..10:3") == ("P", range(1, 11, 3))


@pytest.mark.parametrize("fast", [True, False])
def test_points_beyond_max_context_are_refused_as_eval_refuses_them(fast):
    """A grid running past the spec's maximum context: each point has eval's value,
    or — where eval refuses it — no value and the refusal, whichever lane computes it."""
    table = sweep.sweep(QWEN, "flops(P=P, B=B)", {"P": range(40950, 40971), "B": [1, 2]}, fast=fast)
    rows = _rows(table)
    assert rows[0] == ["P", "B", "value", "extrapolated", "note"]
    for p, b, value, extrapolated, note in rows[1:]:
        text = f"flops(P={p}, B={b})"
        if int(p) > 40960:
            with pytest.raises(SpecError, match="exceeds") as err:
                _eval(QWEN, text)
            assert (value, extrapolated, note) == ("", "false", sweep.REFUSED)
        else:
            assert (_value(value), extrapolated == "true", note) == (*_eval(QWEN, text), "")
    assert table.refused.sum() == 20
    with pytest.raises(SpecError) as err:
        _eval(QWEN, "flops(P=40961, B=1)")
    assert table.refusal == "context 40961 exceeds Qwen3-8B's maximum of 40960" == err.value.message
    # with extrapolate=true every point has a value, marked extrapolated, and no note column
    table = sweep.sweep(QWEN, "flops(P=P, extrapolate=true)", {"P": range(40959, 40963)}, fast=fast)
    assert table.refused is None
    assert [r[2] for r in _rows(table)[1:]] == ["false", "false", "true", "true"]


def test_cli_sweep_past_max_context_warns_and_writes_every_row(cli, tmp_path):
    out = tmp_path / "f.csv"
    result = cli("sweep", QWEN, "flops(P=P)", "--over", "P=40000..50000", "-o", out)
    assert result.exit_code == 0, result.output
    assert "warning: 9,040 points have no value" in result.output and "extrapolate=true" in result.output
    rows = list(csv.reader(out.open()))
    assert len(rows) == 10002 and rows[961] == ["40960", str(_eval(QWEN, "flops(P=40960)")[0]), "false", ""]
    assert rows[962] == ["40961", "", "false", sweep.REFUSED]
    data = json.loads(cli("sweep", QWEN, "flops(P=P)", "--over", "P=40960,40961", "--format", "json").stdout)
    assert data["columns"][-1] == "note" and data["rows"][1][1] is None and "exceeds" in data["refusal"]


def test_cli_sweep_csv_and_json(cli, tmp_path):
    out = tmp_path / "f.csv"
    result = cli("sweep", QWEN, "flops(P=P)", "--over", "P=1..1000", "--format", "csv", "-o", out)
    assert result.exit_code == 0, result.output
    assert "points/s" in result.output
    rows = list(csv.reader(out.open()))
    assert len(rows) == 1001 and int(rows[1000][1]) == _eval(QWEN, "flops(P=1000)")[0]
    result = cli("sweep", QWEN, "flops(P=P, B=B)", "--over", "P=1..3", "--over", "B=1,2", "--format", "json")
    data = json.loads(result.stdout)
    assert data["columns"] == ["P", "B", "value", "extrapolated"] and len(data["rows"]) == 6
    bad = cli("sweep", QWEN, "flops(P=P)", "--over", "P=0..3")
    assert bad.exit_code == 2 and "at least 1" in bad.output


# ------------------------------------------------------------------ the interval proof
@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10 ** 9))
def test_intervals_contain_every_value_and_int64_runs_agree(seed):
    import numpy as np

    rng = random.Random(seed)
    expr = random_expr(rng)
    src = codegen.emit(expr, ARGS, "vector", name="q")
    box = [(rng.randint(1, 3), rng.randint(3, 6)), (rng.randint(0, 20), rng.randint(20, 60)),
           (rng.randint(1, 10), rng.randint(10, 40))]
    points = [tuple(rng.randint(lo, hi) for lo, hi in box) for _ in range(20)] + [tuple(lo for lo, _ in box)]
    exact = []
    for pt in points:
        value = sp.sympify(expr.xreplace(dict(zip((B, S, P), pt))))
        exact.append(sp.Rational(value if value.is_Rational else value.doit()))
    try:
        interval, largest = vector.bounds(src, box)
    except vector.NotInt64:
        return
    for want in exact:
        assert interval.lo <= want <= interval.hi, (expr, box)
    assert largest >= max(abs(v) for v in exact)
    arrays = [np.array([pt[k] for pt in points], dtype=np.int64) for k in range(3)]
    try:
        got = vector.run(src, arrays)
    except vector.NotInt64:
        return
    assert [int(v) for v in got] == exact, expr
