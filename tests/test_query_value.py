"""The query value (compiler/query/query_value.py): parse, the one printer, bind, symbolize;
and what the engine returns with a closed form (its side conditions as data)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from specc.compiler.query import query_registry
from specc.compiler.query.query_value import (Call, Expr, Name, bind_symbols, make_call, print_query, scenario_literals,
                                        substitute, symbolize, symbols_used, uses_scenario_names)

ROOT = Path(__file__).resolve().parent.parent
SPEC = str(ROOT / "specs" / "llama2_7b.yaml")


def test_parse_and_print():
    expr = Expr.parse("flops(B=1,S = 0, P=8192) / params()")
    first, second = list(expr.calls())
    assert first == Call("flops", (("B", 1), ("S", 0), ("P", 8192))) and second == Call("params")
    assert print_query(expr) == "flops(B=1, S=0, P=8192) / params()"
    call = Expr.parse("b_max(device=h100_sxm, H=8192, workspace=2 GiB)").call
    assert call.get("device") == Name("h100_sxm") and call.get("H") == 8192
    assert print_query(call.get("workspace")) == "2 GiB"
    assert Expr.parse("dim(d)").call.args == ((None, Name("d")),)
    assert Expr.parse("min(flops(P=1), flops(P=2))").call is not None
    assert len(list(Expr.parse("min(flops(P=1), flops(P=2))").calls())) == 3
    for bad in ("flops(P=1", "flops(P=)", "flops(P=1))", "flops(P=1) $"):
        assert Expr.parse(bad) is None, bad


def test_every_claim_and_declared_example_prints_back():
    """Printing a parsed query changes nothing but the spacing around ', ' and '='."""
    from specc.compiler.schema.spec import load_spec
    from specc.verify.claims import load_claims

    texts = [str(c.eval) for path in sorted((ROOT / "specs").glob("*.yaml")) for c in load_claims(load_spec(path))]
    assert len(texts) > 1000
    for text in texts:
        expr = Expr.parse(text)
        assert expr is not None, text
        assert print_query(expr).replace(" ", "") == text.replace(" ", ""), text
        assert Expr.parse(print_query(expr)) == expr


def test_values_and_scenarios():
    expr = Expr.parse("flops(P=8192) / flops(P=1, B=2)")
    assert scenario_literals(expr) == {"P": {8192, 1}, "B": {2}}
    assert not uses_scenario_names(expr) and uses_scenario_names(Expr.parse("flops(P=P)"))
    assert not uses_scenario_names(Expr.parse("state_bytes(H=1) / 2 B"))       # the unit B
    assert symbols_used(Expr.parse("flops(P=P, B=B, S=0)")) == {"P", "B"}
    assert substitute(expr, {"B": Name("B")}).text() == "flops(P=8192) / flops(P=1, B=B)"
    assert bind_symbols(Expr.parse("flops(P=P) / flops(P=5)"), {"P": 7}).text() == "flops(P=7) / flops(P=5)"
    assert symbolize(Expr.parse("pairs(P=3, S=1)"), ["S"]).text() == "pairs(P=3, S=S)"
    assert make_call("b_max", {"device": "h100_sxm", "workspace": "2 GiB", "format": None, "extrapolate": True,
                               "H": 5}).text() == "b_max(device=h100_sxm, workspace=2 GiB, extrapolate=true, H=5)"
    assert make_call("flops", {"P": Fraction(1, 2)}).text() == "flops(P=(1/2))"


def test_bind_gives_every_declared_parameter_its_default():
    call = Expr.parse("tpot(H=8192, device=h100_sxm, head=all)").call
    bound = call.bound(query_registry.REGISTRY["tpot"])
    assert list(bound)[:3] == ["H", "B", "device"] and bound["B"] == 1 and bound["H"] == 8192
    assert bound["mfu"] == 1 and bound["format"] is None and bound["head"] == Name("all")


def test_the_fast_lane_imports_no_dataclasses_for_normalizing():
    code = ("import sys; from specc.compiler.lanes import compiled; compiled.normalize('flops(P=8192)'); "
            "print(sorted(m for m in ('sympy', 'lark', 'yaml', 'dataclasses', 'inspect') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_normalize_templates_only_literal_scenario_arguments():
    from specc.compiler.lanes.compiled import normalize

    assert normalize("flops(B=1, S=0, P=8192)") == ("flops(B=B, S=0, P=P)", {"B": 1, "P": 8192})
    assert normalize("flops(P=8192) / flops(P=1)") == ("flops(P=8192) / flops(P=1)", {})
    assert normalize("flops(P=P)") == ("flops(P=P)", {})
    assert normalize("2 B / state_bytes(H=4)") == ("2 B / state_bytes(H=H)", {"H": 4})


# ------------------------------------------------------------------ side conditions as data
def test_a_closed_form_returns_its_context_limit_as_data():
    from specc.compiler.query.query_base import ContextLimit
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    engine = QueryEngine(load_spec(SPEC))
    result = engine.evaluate_text("flops(B=B, S=S, P=P) * state_bytes(H=H)", symbolic_ok=True)
    limits = [c for c in result.conditions if isinstance(c, ContextLimit)]
    assert [str(c.context) for c in limits] == ["P + S", "H"] and {c.limit for c in limits} == {4096}
    assert not any(c.allowed for c in limits)
    assert all(c.allowed for c in engine.evaluate_text("flops(P=P, extrapolate=true)", symbolic_ok=True).conditions)
    assert engine.evaluate_text("flops(P=8)").conditions == ()


def test_a_bug_while_compiling_is_raised_not_taken_for_no_closed_form(monkeypatch, tmp_path):
    from specc.compiler.lanes import compile_queries
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path))
    engine = QueryEngine(load_spec(SPEC))

    def broken(self, model, args):
        raise AttributeError("a bug")

    monkeypatch.setattr(QueryEngine, "q_pairs", broken)
    with pytest.raises(AttributeError):
        compile_queries._template(engine, "pairs(P=P)", {"P": 3})
    # sympy undecided in symbols (h_max's B >= 1 check at a symbolic B): no closed form, no error
    assert compile_queries._template(engine, "h_max(device=h100_sxm, B=B)", {"B": 3}) is None


# ------------------------------------------------------------------ specc eval A B C
def test_eval_prints_every_answer_and_every_error(cli):
    for extra in ([], ["--no-fast"]):
        out = cli("eval", SPEC, *extra, "params()", "flops(p=1)", "state_bytes(H=10)")
        assert out.exit_code == 2
        assert "params() = 6,738,415,616 params" in out.stdout and "state_bytes(H=10) = " in out.stdout
        assert "<query>:1:7: unknown argument 'p'" in out.stderr and "did you mean P?" in out.stderr
    out = cli("eval", SPEC, "--json", "params()", "flops(p=1)")
    rows = json.loads(out.stdout)
    assert out.exit_code == 2 and rows[0]["value"] == 6738415616
    assert rows[1] == {"query": "flops(p=1)", "error": "unknown argument 'p': flops() does not take 'p=' "
                                                       "(did you mean P?)"}


def test_random_queries_print_the_same_in_both_lanes(cli):
    """The compiled lane and the symbolic lane print the same answers (and errors)."""
    rng = random.Random(5)
    queries = [f"flops(B={rng.randint(1, 9)}, S={rng.choice([0, 7, 100])}, P={rng.randint(1, 999)})"
               for _ in range(20)] + ["tpot(H=100, device=h100_sxm, mf=1)", "state_bytes(H=8000)"]
    fast, slow = cli("eval", SPEC, *queries), cli("eval", "--no-fast", SPEC, *queries)
    assert fast.stdout == slow.stdout and fast.stderr == slow.stderr and fast.exit_code == slow.exit_code == 2


def test_user_written_arguments_become_a_call():
    from specc.compiler.query.query_value import call_with_arguments

    call = call_with_arguments("flops", "B=1, S=0,P=8192")
    assert call.with_args({"component": "attention", "extrapolate": True}).text() == \
        "flops(B=1, S=0, P=8192, component=attention, extrapolate=true)"
    assert call.with_args({"S": 5, "B": None}).text() == "flops(S=5, P=8192)"
    assert call_with_arguments("flops", "B=1) + params(") is None
    assert call_with_arguments("flops", "B=1, (") is None
