"""Every user mistake is a located SpecError: `file:line:col: message`, then the
offending source line with a caret under the offending text; through the CLI it
is a non-zero exit status and never a Python traceback."""

from __future__ import annotations

import ast as pyast
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specc.compiler.graph.build import compile_spec
from specc.compiler.schema.expressions import Evaluator
from specc.compiler.query.queries import QueryEngine
from specc.compiler.schema.spec import load_spec
from specc.dsl.errors import SpecError
from specc.dsl.parser import parse_expr, parse_quantity, parse_stmt
from specc.verify.claims import verify_spec

# A small but complete spec: embedding, one matmul segment with a state store, head.
TINY = """\
model: Tiny
imports: [lib/core.yaml]
dims:
  d: 64
  V: 100
max_context: 4096
stores:
  kv:
    bytes: {default: 2*d}
stack:
  - name: embed
    block: token_embedding
    with: {V: V, d: d}
  - name: body
    inputs: {x: d}
    outputs: [y]
    ops:
      - y = x @ W[d, d]; group=dense_shared_ffn
    state:
      - {store: kv, entries: H}
  - name: head
    block: lm_head
    with: {d: d, V: V, rows: B}
"""
TINY_PARAMS = 100 * 64 + 64 * 64 + 64 + 64 * 100  # embed, W, final norm, head


def build(path: Path):
    """Load, compile and query a spec: any user mistake must surface as SpecError."""
    spec = load_spec(path)
    compile_spec(spec)
    engine = QueryEngine(spec)
    engine.evaluate_text("params()")
    engine.evaluate_text("flops(P=16)")
    engine.evaluate_text("state_bytes(H=16)")
    return engine


def mutate(old: str, new: str, base: str = TINY) -> str:
    assert old in base, old
    return base.replace(old, new, 1)


def where(text: str, snippet: str, occurrence: int = 1) -> tuple[int, int]:
    """1-based (line, col) of the n-th occurrence of snippet in text."""
    pos = -1
    for _ in range(occurrence):
        pos = text.index(snippet, pos + 1)
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def assert_located(err: SpecError, path, line: int | None = None, col: int | None = None,
                   snippet: str | None = None, lines=None):
    """render() starts with path:line:col:, then shows the source line and a caret
    under the offending text."""
    rendered = err.render()
    head = re.match(rf"^{re.escape(str(path))}:(\d+):(\d+): \S", rendered)
    assert head, f"not located at {path}:\n{rendered}"
    got_line, got_col = int(head.group(1)), int(head.group(2))
    if line is not None:
        assert got_line == line, rendered
    if lines is not None:
        assert got_line in lines, rendered
    if col is not None:
        assert got_col == col, rendered
    source = Path(path).read_text(encoding="utf-8").splitlines()[got_line - 1]
    shown = rendered.splitlines()
    assert shown[1] == "    " + source, rendered
    assert shown[2].startswith("    " + " " * (got_col - 1) + "^"), rendered
    if snippet is not None:
        assert snippet in source, rendered
        assert source[got_col - 1:].startswith(snippet), rendered
    return rendered


def assert_cli_error(result, path, code: int = 2):
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert result.stderr.startswith(f"{path}:"), result.output


def test_tiny_spec_is_valid(write_spec):
    engine = build(write_spec(TINY))
    assert engine.evaluate_text("params()").value == TINY_PARAMS


# ------------------------------------------------------------------ spec mistakes
SPEC_MISTAKES = {
    # name: (old, new, offending snippet, message fragment)
    "unknown-top-level-key": ("model: Tiny\n", "model: Tiny\nbogus: 1\n", "bogus", "unknown key 'bogus'"),
    "unknown-dimension": ("y = x @ W[d, d]", "q = x @ Wq[d, n_qq]", "n_qq", "n_qq"),
    "unknown-op": ("y = x @ W[d, d]; group=dense_shared_ffn", "y = frobnicate(x)", "frobnicate",
                   "unknown op 'frobnicate'"),
    "shape-mismatch": ("y = x @ W[d, d]", "y = x @ W[d+1, d]", "x @", "shape mismatch"),
    "unknown-block": ("block: lm_head", "block: lm_heady", "lm_heady", "unknown block 'lm_heady'"),
    "unknown-store": ("{store: kv, entries: H}", "{store: kvv, entries: H}", "kvv", "unknown store 'kvv'"),
    "unknown-block-parameter": ("with: {V: V, d: d}", "with: {V: V, dd: d}", "dd", "no parameter 'dd'"),
    "unknown-tensor": ("y = x @ W[d, d]", "y = z @ W[d, d]", "z @", "unknown tensor 'z'"),
    "bad-op-syntax": ("y = x @ W[d, d]", "y = x @ W[d, d", None, "unexpected"),
    "bad-expression-in-dim": ("d: 64", "d: 64 +* 2", "*", "unexpected"),
}


@pytest.mark.parametrize("case", list(SPEC_MISTAKES))
def test_spec_mistake_is_located(write_spec, cli, case):
    old, new, snippet, fragment = SPEC_MISTAKES[case]
    text = mutate(old, new)
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        build(path)
    assert fragment in info.value.message
    line = where(text, new.strip().splitlines()[-1])[0]
    assert_located(info.value, path, line=line, snippet=snippet)
    result = cli("check", path)
    assert_cli_error(result, path)
    assert fragment in result.stderr


def test_malformed_yaml_bad_indentation(write_spec, cli):
    text = mutate("  V: 100", "   V: 100")
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "YAML" in info.value.message
    line = where(text, "   V: 100")[0]
    assert_located(info.value, path, line=line)
    assert_cli_error(cli("check", path), path)


def test_malformed_yaml_unclosed_bracket(write_spec, cli):
    text = mutate("with: {V: V, d: d}", "with: {V: V, d: d")
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "YAML" in info.value.message
    line = where(text, "with: {V: V, d: d")[0]
    # PyYAML notices the missing '}' at the next token, on the line after
    assert_located(info.value, path, lines=(line, line + 1))
    assert_cli_error(cli("check", path), path)


def test_malformed_yaml_unclosed_list(write_spec, cli):
    text = mutate("imports: [lib/core.yaml]", "imports: [lib/core.yaml")
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert_located(info.value, path)
    assert_cli_error(cli("verify", path), path)


def test_duplicate_key(write_spec):
    text = mutate("  V: 100\n", "  V: 100\n  d: 32\n")
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert_located(info.value, path, line=where(text, "d: 32")[0], snippet="d")


def test_missing_required_key(write_spec):
    path = write_spec(mutate("model: Tiny\n", ""))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "model" in info.value.message
    assert_located(info.value, path)


def test_unknown_import(write_spec):
    text = mutate("lib/core.yaml", "lib/nope.yaml")
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert_located(info.value, path, line=2, snippet="lib/nope.yaml")


# ------------------------------------------------------------------ YAML tags never run code
PY_TAG = '!!python/object/apply:os.system ["echo hi"]'


def _touch_tag(marker: Path) -> str:
    return f'!!python/object/apply:os.system ["touch {marker}"]'


@pytest.mark.parametrize("placement", ["document", "dimension", "op"])
def test_python_tag_rejected(write_spec, tmp_path, cli, placement):
    marker = tmp_path / "pwned"
    for tag in (PY_TAG, _touch_tag(marker)):
        text = {
            "document": tag + "\n",
            "dimension": mutate("V: 100", "V: " + tag),
            "op": mutate("- y = x @ W[d, d]; group=dense_shared_ffn", "- " + tag),
        }[placement]
        path = write_spec(text)
        with pytest.raises(SpecError) as info:
            build(path)
        assert_located(info.value, path)
        result = cli("check", path)
        assert result.exit_code == 2
        assert "hi\n" not in result.stdout
    assert not marker.exists(), "a YAML tag ran a shell command"


def test_python_tag_in_free_text_is_not_executed(write_spec, tmp_path):
    marker = tmp_path / "pwned"
    path = write_spec(TINY + f"notes: {_touch_tag(marker)}\ndescription: {_touch_tag(marker)}\n")
    try:
        build(path)
    except SpecError:
        pass
    assert not marker.exists(), "a YAML tag ran a shell command"


def test_python_tag_as_model_name_rejected(write_spec):
    path = write_spec(mutate("model: Tiny", "model: " + PY_TAG))
    with pytest.raises(SpecError) as info:
        build(path)
    assert_located(info.value, path, line=1)


# ------------------------------------------------------------------ malformed values
@pytest.mark.parametrize("old, new", [("  V: 100", "  V:"), ("max_context: 4096", "max_context:")])
def test_empty_value_is_located(write_spec, old, new):
    text = mutate(old, new)
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        build(path)
    assert_located(info.value, path, line=where(text, new)[0])


def test_scalar_with_is_a_spec_error(write_spec):
    text = mutate("with: {V: V, d: d}", "with: 0")
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        build(path)
    assert_located(info.value, path, line=where(text, "with: 0")[0])


def test_empty_store_bytes_is_a_spec_error(write_spec):
    text = mutate("bytes: {default: 2*d}", "bytes:")
    path = write_spec(text)
    with pytest.raises(SpecError) as info:
        build(path)
    assert_located(info.value, path)


def test_scalar_with_cli_has_no_traceback(write_spec, cli):
    path = write_spec(mutate("with: {V: V, d: d}", "with: 0"))
    assert_cli_error(cli("check", path), path)


# ------------------------------------------------------------------ claims
CLAIM_UNIT = """\
claims:
  - id: tiny.unit-mismatch
    source: test
    eval: params()
    expect: 5 GB
"""


def test_claim_unit_mismatch(write_spec, tmp_path, cli):
    spec_path = write_spec(TINY)
    claims = tmp_path / "claims.yaml"
    claims.write_text(CLAIM_UNIT, encoding="utf-8")
    [result] = verify_spec(load_spec(spec_path), [str(claims)])
    assert result.verdict == "ERROR"
    assert "unit mismatch" in result.message
    line, col = where(CLAIM_UNIT, "5 GB")
    assert result.message.startswith(f"{claims}:{line}:{col}:"), result.message
    assert "expect: 5 GB" in result.message

    out = cli("verify", spec_path, "--claims", claims)
    assert out.exit_code == 2
    assert "Traceback" not in out.output
    assert "ERROR" in out.output and "unit mismatch" in out.output
    assert f"{claims}:{line}:{col}:" in out.output


def test_claim_file_mistakes_are_located(write_spec, tmp_path, cli):
    spec_path = write_spec(TINY)
    claims = tmp_path / "claims.yaml"
    text = CLAIM_UNIT.replace("    source: test\n", "    source: test\n    expected: 1\n")
    claims.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        verify_spec(load_spec(spec_path), [str(claims)])
    assert_located(info.value, claims, line=where(text, "expected:")[0], snippet="expected")
    assert_cli_error(cli("verify", spec_path, "--claims", claims), claims)


# ------------------------------------------------------------------ query mistakes through `specc eval`
QUERY_MISTAKES = {
    "flopz(P=1)": "unknown query 'flopz'",
    "flops(P=1, Q=2)": "unknown argument 'Q'",
    "flops(P=1, head=middle)": "no choice 'middle'",
    "flops(P=-1)": "non-negative",
    "flops(P=0)": "P must be at least 1",
    "flops(S=-3, P=1)": "non-negative",
    "flops(P=": "unexpected end",
    "flops(P=1) + params()": "cannot add",
}


@pytest.mark.parametrize("query", list(QUERY_MISTAKES))
def test_query_mistake(cli, repo, qwen_engine, query):
    with pytest.raises(SpecError) as info:
        qwen_engine.evaluate_text(query)
    assert QUERY_MISTAKES[query] in info.value.message
    rendered = info.value.render()
    assert rendered.startswith("<query>:1:")
    assert rendered.splitlines()[1] == "    " + query
    result = cli("eval", repo / "specs" / "qwen3_8b.yaml", query)
    assert result.exit_code == 2
    assert "<query>:1:" in result.stderr
    assert "Traceback" not in result.output


def test_query_error_points_at_the_argument(qwen_engine):
    with pytest.raises(SpecError) as info:
        qwen_engine.evaluate_text("flops(P=1, head=middle)")
    col = "flops(P=1, head=middle)".index("middle") + 1
    assert info.value.render().startswith(f"<query>:1:{col}:")


def test_bad_cli_argument(cli, repo):
    result = cli("verify", "--format", "xml", repo / "specs" / "qwen3_8b.yaml")
    assert result.exit_code == 2
    assert "xml" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["verify"], ["check"], ["eval"], ["graph"]])
def test_nonexistent_spec(cli, tmp_path, command):
    args = command + [tmp_path / "no_such_spec.yaml"] + (["params()"] if command == ["eval"] else [])
    result = cli(*args)
    assert result.exit_code == 2
    assert "no_such_spec.yaml" in result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------------ parser robustness (hypothesis)
EXPR_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-*/()[],.=<> _"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=EXPR_ALPHABET, max_size=40))
def test_parsers_raise_only_spec_errors(text):
    for parse in (parse_expr, parse_quantity, parse_stmt):
        try:
            parse(text, "<fuzz>")
        except SpecError as err:
            assert err.render().startswith("<fuzz>:")


# mostly well-formed, so the fuzz reaches the deeper rules too
_TOKENS = st.sampled_from(["x", "W", "d", "f", "1", "42", "1.5", "1,000", "GB", "TFLOPs", "@", "=", "+", "-",
                           "*", "/", "(", ")", "[", "]", ",", ";", "group", "y", "<", "==", "and", "in", " "])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKENS, max_size=14).map(" ".join))
def test_parsers_raise_only_spec_errors_on_token_soup(text):
    for parse in (parse_expr, parse_quantity, parse_stmt):
        try:
            parse(text, "<fuzz>")
        except SpecError as err:
            assert err.render().startswith("<fuzz>:")


def _arith(ops, unary=False):
    leaves = st.integers(min_value=0, max_value=30).map(str)

    def extend(kids):
        options = [st.builds(lambda a, op, b: f"{a} {op} {b}", kids, st.sampled_from(ops), kids),
                   kids.map(lambda e: f"({e})")]
        if unary:
            options.append(kids.map(lambda e: f"-{e}"))
        return st.one_of(*options)

    return st.recursive(leaves, extend, max_leaves=12)


def _python_value(text: str) -> int:
    tree = pyast.parse(text, mode="eval")
    allowed = (pyast.Expression, pyast.BinOp, pyast.UnaryOp, pyast.Constant, pyast.Add, pyast.Sub, pyast.Mult,
               pyast.FloorDiv, pyast.Mod, pyast.USub)
    assert all(isinstance(node, allowed) for node in pyast.walk(tree)), text  # only our own arithmetic
    return eval(compile(tree, "<generated>", "eval"), {"__builtins__": {}})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_arith(["+", "-", "*"]))
def test_arithmetic_matches_python(text):
    result = Evaluator({})(parse_expr(text))
    assert result.is_Integer, (text, result)
    assert int(result) == _python_value(text), text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_arith(["+", "-", "*", "//", "%"], unary=True))
def test_integer_arithmetic_with_floor_division_matches_python(text):
    try:
        expected = _python_value(text)
    except ZeroDivisionError:
        with pytest.raises(SpecError):
            Evaluator({})(parse_expr(text))
        return
    result = Evaluator({})(parse_expr(text))
    assert result.is_Integer, (text, result)
    assert int(result) == expected, text


# ------------------------------------------------------------------ issue 12: bounded, faithful, located
def test_dead_tensor_is_a_located_error_unless_allowed(write_spec, cli):
    path = write_spec(mutate("      - y = x @ W[d, d]; group=dense_shared_ffn",
                             "      - unused = x @ U[d, d]; group=dense_shared_ffn\n"
                             "      - y = x @ W[d, d]; group=dense_shared_ffn"))
    line, col = where(path.read_text(), "unused")
    error = cli("check", path)
    assert error.exit_code == 2 and "Traceback" not in error.output
    assert f"{path}:{line}:{col}: error: 'unused' is computed but nothing consumes it" in error.output
    warn = cli("check", "--allow-dead-ends", path)
    assert warn.exit_code == 0 and f"{path}:{line}:{col}: warning: 'unused'" in warn.output
    assert cli("check", "--strict", path).exit_code == 2      # the old flag still runs (the default now)


def test_library_attention_flows_through_norms_and_rope(qwen_engine):
    """q -> q_norm -> q_rot -> attend (and k likewise): nothing in the attention block is a dead end."""
    model = qwen_engine.model({})
    assert not [op.name for op in model.dead_ops()]
    graph = model.graph
    attend = next(op for op in model.ops if op.kind == "attend")
    feeding = {graph.nodes[src]["op"].short for src in graph.predecessors(attend.id)}
    assert {"q_rot", "k_rot", "v"} <= feeding


def test_layer_count_does_not_change_the_cost(qwen_engine):
    """Identical layers stay one group: 10**9 layers compile to the same op nodes as 36."""
    import time

    started = time.process_time()
    huge = qwen_engine.model({}, {"L": sp_int(10**9)})
    assert len(huge.ops) == len(qwen_engine.model({}).ops)
    assert qwen_engine.evaluate_text("params(L=10**9) - params()").value == \
        (10**9 - 36) * qwen_engine.evaluate_text("params(layer=0)").value
    assert time.process_time() - started < 5


def sp_int(n):
    import sympy as sp

    return sp.Integer(n)


def test_layer_sets_match_enumeration():
    """LayerIndices against a brute-force list on small ranges: length, membership, order, overlaps."""
    import itertools

    from specc.compiler.schema.layerset import LayerIndices

    spans = [range(a, b, s) for a, b, s in itertools.product(range(0, 7), range(1, 12), range(1, 4)) if a < b]
    for r1, r2 in itertools.product(spans[::7], spans[::5]):
        indices = LayerIndices([r1, r2])
        listed = list(r1) + list(r2)
        assert len(indices) == len(listed) and list(indices) == listed
        assert all((x in indices) == (x in listed) for x in range(-1, 14))
        common = sorted(set(r1) & set(r2))
        assert indices.first_overlap() == (common[0] if common else None)
        assert [indices[i] for i in range(len(listed))] == listed


def test_every_limit_is_documented_in_the_readme(repo):
    from specc.dsl.limits import LIMITS

    readme = (repo / "README.md").read_text(encoding="utf-8")
    for name, (value, _) in LIMITS.items():
        assert f"| `{name}` | {value:,} |" in readme, name


@pytest.mark.parametrize("expect, verdict", [
    ("'>= 16,960 params'", "PASS"), ("'> 16,960 params'", "FAIL"), ("'at least 16,961 params'", "FAIL"),
    ("'under 17 thousand params'", "PASS"), ("'less than 16,960 params'", "FAIL"), ("'<= 16,960 params'", "PASS"),
    ("'more than 90 %'", "ERROR"),                      # unit mismatch, as for an exact claim
])
def test_inequality_claims(write_spec, tmp_path, expect, verdict):
    spec_path = write_spec(TINY)
    claims = tmp_path / "ineq.yaml"
    claims.write_text(f"claims:\n  - {{id: t.b, source: t, eval: params(), expect: {expect}}}\n", encoding="utf-8")
    [result] = verify_spec(load_spec(spec_path), [str(claims)])
    assert result.verdict == verdict, result.message


def test_tolerance_is_unit_checked(write_spec, tmp_path):
    spec_path = write_spec(TINY)
    claims = tmp_path / "tol.yaml"
    claims.write_text("claims:\n  - {id: t.t, source: t, eval: params(), expect: 16960 params, tolerance: 3 GB}\n",
                      encoding="utf-8")
    [result] = verify_spec(load_spec(spec_path), [str(claims)])
    assert result.verdict == "ERROR" and "tolerance unit mismatch" in result.message
    line, col = where(claims.read_text(), "3 GB")
    assert result.message.startswith(f"{claims}:{line}:{col}:")
