"""A differential test of the two lanes at edge arguments: the compiled closed
forms (compile_queries/compiled) and the symbolic engine give the same answer,
or the same located error, for b_max, h_max and the time queries at H = 0, 1,
max_context and beyond, B = 0 and 1, huge values, and parallel degrees."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specc.compiler.lanes import compile_queries, compiled
from specc.dsl.errors import SpecError

REPO = Path(__file__).resolve().parents[1]
SPECS = ["qwen3_8b", "deepseek_v41", "jamba2_mini", "toy_moe"]
DEVICES = ["h100_sxm", "rtx_4090", "b200"]
QUERIES = ["b_max(device={device}, H={H}, tp={tp})", "b_max(device={device}, H={H}, extrapolate=true)",
           "h_max(device={device}, B={B}, tp={tp})",
           "tpot(H={H}, B={B}, device={device}, extrapolate=true)",
           "call_time(B={B}, S={S}, P={P}, device={device}, tp={tp}, extrapolate=true)",
           "decode_read_bytes(H={H}, B={B}, extrapolate=true)"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    compiled.STORES.clear()
    compile_queries.dirty_stores.clear()
    yield
    compiled.STORES.clear()
    compile_queries.dirty_stores.clear()


def _plain(value):
    if isinstance(value, (int, Fraction)):
        return value
    if getattr(value, "is_Rational", False):
        return int(value) if value.is_Integer else Fraction(int(value.p), int(value.q))
    return str(value)


def _both(engine, text):
    try:
        fast = compile_queries.answer(engine, text, eager=True)
        fast = (_plain(fast.value), fast.extrapolated)
    except SpecError as exc:
        fast = exc.render()
    try:
        slow = engine.evaluate_text(text, "<query>")
        slow = (_plain(slow.value), slow.extrapolated)
    except SpecError as exc:
        slow = exc.render()
    return fast, slow


def _edges(max_context):
    edges = [0, 1, 2, 127, 4096, 10 ** 6, 10 ** 12]
    if max_context:
        edges += [max_context - 1, max_context, max_context + 1]
    return st.sampled_from(edges) | st.integers(0, 2 * 10 ** 6)


@pytest.mark.parametrize("name", SPECS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_lanes_agree_at_edge_arguments(name, data, cache):
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    engine = QueryEngine.shared(load_spec(REPO / "specs" / f"{name}.yaml"))
    limit = engine.model({}).max_context
    edges = _edges(int(limit) if limit is not None else None)
    point = {"H": data.draw(edges), "S": data.draw(edges), "P": data.draw(edges),
             "B": data.draw(st.sampled_from([0, 1, 2, 64, 10 ** 9]) | st.integers(0, 512)),
             "tp": data.draw(st.sampled_from([1, 2, 8])), "device": data.draw(st.sampled_from(DEVICES))}
    for template in QUERIES:
        text = template.format(**point)
        fast, slow = _both(engine, text)
        assert fast == slow, text
        assert "Traceback" not in str(fast)
