"""Bounded fuzzing: random queries and random edits of a spec never crash or hang.

Every outcome must be a value or a located SpecError; anything else (a Python
exception, a RecursionError, a MemoryError) is a bug, and so is an example that
runs longer than `ALARM` seconds (a SIGALRM turns a hang into a failure)."""

from __future__ import annotations

import signal
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specc.compiler.graph.build import compile_spec
from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.dsl.errors import SpecError

HERE = Path(__file__).resolve().parent
BASE = (HERE / "malformed" / "base.yaml").read_text(encoding="utf-8")
ALARM = 20


class Hang(Exception):
    pass


@contextmanager
def bounded(seconds: int = ALARM):
    def stop(signum, frame):
        raise Hang(f"example ran over {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(HERE.parent / "specs" / "lib", root / "lib")
    shutil.copytree(HERE.parent / "specs" / "hardware", root / "hardware")
    (root / "base.yaml").write_text(BASE, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def engine(folder):
    return QueryEngine(load_spec(folder / "base.yaml"))


# ------------------------------------------------------------------ random queries
QUERY_NAMES = ["params", "flops", "weight_bytes", "state_bytes", "kv_bytes_per_token", "b_max", "dim",
               "op_count", "floor", "ceil", "min", "max", "abs", "rows", "pairs", "request_flops", "nope"]
ARG_NAMES = ["P", "S", "B", "H", "G", "p", "group", "op", "layer", "format", "head", "device", "workspace",
             "d", "L", "f", "V", "spec", "zz"]
ATOMS = ["0", "1", "-1", "8192", "10**9", "10**80", "1/3", "2.5", "1e30", "2 GiB", "-2 GiB", "3 GB", "P", "H",
         "last", "all", "rtx_4090", "bf16", "fp8", "dense_shared_ffn", "ffn", "d", "x", "()", "", "1e400"]


def _query():
    atom = st.sampled_from(ATOMS)

    def call(inner):
        arg = st.one_of(inner, st.tuples(st.sampled_from(ARG_NAMES), inner).map(lambda t: f"{t[0]}={t[1]}"))
        return st.tuples(st.sampled_from(QUERY_NAMES), st.lists(arg, max_size=4)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})")

    def combine(inner):
        return st.one_of(call(inner),
                         st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "**", "%", " and ", ">"]),
                                   inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
                         inner.map(lambda x: f"({x})"), inner.map(lambda x: f"-{x}"))

    return st.recursive(atom, combine, max_leaves=12)


@settings(max_examples=250, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=_query())
def test_random_queries_never_crash(engine, text):
    with bounded():
        try:
            engine.evaluate_text(text, "<query>")
        except SpecError as exc:
            assert exc.render()


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(ATOMS + ARG_NAMES + QUERY_NAMES + list("()+-*/,=; .[]")), max_size=40)
       .map("".join))
def test_random_token_soup_never_crashes(engine, text):
    with bounded():
        try:
            engine.evaluate_text(text, "<query>")
        except SpecError as exc:
            assert exc.render()


# ------------------------------------------------------------------ random spec edits
SNIPPETS = ["", " ", "-", "0", "-1", "10**9", "10**4400", "H", "S", "P", "{", "}", "[", "]", ":", ",", "'", '"',
            "*a", "&a ", "\n", "\t", "#", "x", "..", "step 0", "layer", "1/0", "@", ";", "when=", "true",
            "L-1..0", "0..10**9", "oo", "\u00e9", "!!str ", "? ", "- ", "d", "f", "kv", "lm_head"]


@st.composite
def _edit(draw):
    text = BASE
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 6))
        text = text[:at] + draw(st.sampled_from(SNIPPETS)) + text[at + cut:]
    return text


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=_edit())
def test_random_spec_edits_never_crash(folder, text):
    path = folder / "edited.yaml"
    path.write_text(text, encoding="utf-8")
    with bounded():
        try:
            spec = load_spec(path)
            compile_spec(spec)
            engine = QueryEngine(spec)
            for query in ("params()", "flops(P=16)", "state_bytes(H=16)", "weight_bytes(format=fp8)"):
                engine.evaluate_text(query, "<query>")
        except SpecError as exc:
            assert exc.render()
