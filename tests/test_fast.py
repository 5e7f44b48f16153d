"""Compiled queries (the fast path) against the symbolic engine (the reference):
every shipped claim, random scenario points for every spec, the cache's
manifest, the validations, and a warm process that imports no sympy."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specc.compiler.lanes import compile_queries, compiled
from specc.dsl.errors import SpecError

REPO = Path(__file__).resolve().parents[1]
SPECS = sorted((REPO / "specs").glob("*.yaml"))
SPECC = [sys.executable, "-m", "specc"]


def _reset():
    compiled.STORES.clear()
    compile_queries.dirty_stores.clear()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, private cache for one test (and the in-process stores forgotten)."""
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    _reset()
    yield tmp_path / "cache"
    _reset()


def _engine(path):
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    return QueryEngine.shared(load_spec(path))


# ------------------------------------------------------------------ normalization
def test_normalize_makes_nonzero_scenario_literals_parameters():
    assert compiled.normalize("flops(B=1, S=0, P=8192)") == ("flops(B=B, S=0, P=P)", {"B": 1, "P": 8192})
    assert compiled.normalize("b_max(device=rtx_4090, H=8192, workspace=2 B)") == (
        "b_max(device=rtx_4090, H=H, workspace=2 B)", {"H": 8192})
    # one name, two values: those literals stay; the others are still parameters
    assert compiled.normalize("flops(P=8192) / flops(P=4096, B=2)") == ("flops(P=8192) / flops(P=4096, B=B)", {"B": 2})


@pytest.mark.parametrize("text", ["flops(P=P)", "flops(P=8192) * P", "flops(P=8) + B", "params()"])
def test_normalize_leaves_other_uses_of_the_letters_alone(text):
    assert compiled.normalize(text) == (text, {})


# ------------------------------------------------------------------ every shipped claim
def test_every_shipped_claim_has_the_same_verdict_and_text_on_both_paths(cache):
    """verify_path fills the store from the symbolic results; cached_results then
    recomputes every verdict from compiled queries alone. Both print the same."""
    from specc.verify import fast_claims
    from specc.verify.claims import verify_spec
    from specc.verify.output import FORMATS

    slow, fast, kept = [], [], 0
    for path in SPECS:
        slow.extend(verify_spec(_engine(path).spec))
        fast_claims.verify_path(path)
        found = fast_claims.cached_results(path)
        assert found is not None, path
        fast.extend(found)
        store = compiled.load(path)
        for record in store.verify[fast_claims._key(())]:
            if "verdict" in record:
                kept += 1
                # only what needs the symbolic engine keeps its verdict as data
                assert (record["claim"]["expect_formula"] is not None or record["verdict"] == "ERROR"
                        or record.get("bound") is not None), record
    assert len(fast) == len(slow) > 900
    # and every numeric claim's query, answered by its compiled closed form where it has one
    compiled_forms = with_arguments = 0
    for r in slow:
        value = None if r.computed is None else r.computed.value
        if r.claim.expect_formula is None and value is not None and value.is_Rational:
            engine = _engine(r.claim.spec)
            found = compile_queries.answer(engine, str(r.claim.eval), eager=True)
            assert found.value == value and found.extrapolated == r.computed.extrapolated, r.claim.id
            template, bind = compiled.normalize(str(r.claim.eval))
            with_arguments += bool(bind)
            compiled_forms += bool(bind) and compiled.load(r.claim.spec).templates.get(template) is not None
    # (queries without scenario arguments, e.g. params(), are constants: their exact value is stored)
    assert with_arguments > 250 and compiled_forms >= 0.8 * with_arguments
    for fmt in ("text", "json", "md", "junit"):
        assert FORMATS[fmt](fast) == FORMATS[fmt](slow), fmt
    recomputed = [r for r in fast if hasattr(r, "value")]
    assert len(recomputed) == len(fast) - kept > 800


# ------------------------------------------------------------------ random scenario points
QUERIES = ["flops(B={B}, S={S}, P={P}, extrapolate=true)", "state_bytes(H={H}, B={B}, extrapolate=true)",
           "decode_read_bytes(H={H}, B={B}, extrapolate=true)", "flops(S={S}, P={P})", "state_bytes(H={H})",
           "weight_read_bytes(B={B})", "request_flops(S={S}, P={P}, G={G}, extrapolate=true)"]


def _both(engine, text):
    """(value, extrapolated) or the error message, by each path."""
    try:
        fast = compile_queries.answer(engine, text, eager=True)   # from the compiled closed form
        fast = (fast.value if isinstance(fast.value, (int, Fraction)) else str(fast.value), fast.extrapolated)
    except SpecError as exc:
        fast = exc.render()
    try:
        slow = engine.evaluate_text(text, "<query>")
        value = slow.value
        if value.is_Rational:
            value = int(value) if value.is_Integer else Fraction(int(value.p), int(value.q))
        else:
            value = str(value)  # not a number (a query whose answer keeps a symbol): never compiled
        slow = (value, slow.extrapolated)
    except SpecError as exc:
        slow = exc.render()
    return fast, slow


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_points_agree_with_the_symbolic_engine(path, data, cache):
    engine = _engine(path)
    big = st.integers(0, 3 * 10 ** 6) | st.sampled_from([0, 1, 2, 127, 128, 129, 4096, 131072, 1048576])
    point = {"B": data.draw(st.integers(0, 64)), "S": data.draw(big), "P": data.draw(big), "H": data.draw(big),
             "G": data.draw(st.integers(0, 3000))}
    for template in QUERIES:
        text = template.format(**point)
        fast, slow = _both(engine, text)
        assert fast == slow, text
        # and a second time, now from the store alone
        found = compiled.lookup(path, text)
        if found is not None:
            assert (found.value, found.extrapolated) == slow, text


# ------------------------------------------------------------------ validations on the fast path
def test_fast_path_still_validates(cache):
    v41 = REPO / "specs" / "deepseek_v41.yaml"
    engine = _engine(v41)
    compile_queries.answer(engine, "flops(P=8192)", eager=True)   # the template exists now
    found = compiled.lookup(v41, "flops(P=2000000)")
    assert found is None                                         # beyond max_context: the symbolic path reports it
    with pytest.raises(SpecError, match="exceeds"):
        compile_queries.answer(engine, "flops(P=2000000)")
    ext = compile_queries.answer(engine, "flops(P=2000000, extrapolate=true)", eager=True)
    assert ext.extrapolated and compiled.lookup(v41, "flops(P=2000000, extrapolate=true)").extrapolated
    with pytest.raises(SpecError, match="at least 1"):
        compile_queries.answer(engine, "flops(P=0)")


def test_a_changed_dependency_invalidates_the_store(cache, write_spec, tmp_path):
    qwen = (REPO / "specs" / "qwen3_8b.yaml").read_text()
    spec = write_spec(tmp_path / "m", qwen, name="model.yaml")
    engine = _engine(spec)
    first = compile_queries.answer(engine, "params()").value
    compile_queries.flush()
    assert compiled.lookup(spec, "params()").value == first
    text = spec.read_text()
    assert "d: 4096" in text
    spec.write_text(text.replace("d: 4096", "d: 4104"))
    assert compiled.lookup(spec, "params()") is None            # the spec's hash changed
    _reset()
    assert compiled.load(spec) is None                          # also for a new process


def test_file_hashes_are_remembered_only_for_settled_files(tmp_path):
    """A file written just now may be rewritten within the same clock tick (same
    mtime and size): it is hashed afresh each time. A file last written a while ago
    is hashed once; rewriting it gives it a new mtime, so a new hash."""
    path = tmp_path / "f.yaml"
    path.write_text("a: 1\n")
    first = compiled.file_hash(path)
    path.write_text("a: 2\n")                       # same size, very likely the same tick
    assert compiled.file_hash(path) != first
    old = os.stat(path).st_mtime_ns - 10 ** 10
    os.utime(path, ns=(old, old))
    settled = compiled.file_hash(path)
    assert any(key[0] == str(path) for key in compiled._HASHES)
    path.write_text("a: 3\n")                       # a rewrite: mtime is now, not `old`
    assert compiled.file_hash(path) not in (settled, None)
    path.unlink()
    assert compiled.file_hash(path) is None


# ------------------------------------------------------------------ a warm process
def _run(args, cache_dir, importtime=False):
    env = dict(os.environ, SPECC_CACHE_DIR=str(cache_dir))
    cmd = [sys.executable] + (["-X", "importtime"] if importtime else []) + [
        "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()"] + args
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)


HEAVY = ("sympy", "networkx", "matplotlib", "yaml", "lark", "click")


def _heavy(stderr: str) -> set:
    return {line.split("|")[-1].strip().split(".")[0] for line in stderr.splitlines()
            if line.startswith("import time:")} & set(HEAVY)


def test_a_warm_eval_and_verify_import_no_sympy(tmp_path):
    query = ["eval", "specs/deepseek_v41.yaml", "flops(P=8192)", "state_bytes(H=1048576)"]
    cold = _run(query, tmp_path)
    assert cold.returncode == 0, cold.stderr
    warm = _run(query, tmp_path, importtime=True)
    assert warm.returncode == 0
    assert warm.stdout == cold.stdout
    assert "flops(P=8192) = 143,946,626,891,776 FLOPs" in warm.stdout
    assert _heavy(warm.stderr) == set()
    slow = _run(query + ["--no-fast"], tmp_path)
    assert slow.stdout == cold.stdout
    specs = ["specs/qwen3_8b.yaml", "specs/deepseek_v41.yaml"]
    cold = _run(["verify", *specs], tmp_path)
    warm = _run(["verify", *specs, "--format", "json"], tmp_path, importtime=True)
    assert _heavy(warm.stderr) == set()
    assert warm.stdout == _run(["verify", *specs, "--format", "json", "--no-fast"], tmp_path).stdout
    assert cold.returncode == warm.returncode == 0


def test_a_warm_error_is_still_a_located_error(tmp_path):
    _run(["eval", "specs/deepseek_v41.yaml", "flops(P=8192)"], tmp_path)
    out = _run(["eval", "specs/deepseek_v41.yaml", "flops(P=2000000)"], tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "<query>:1:1: context 2000000 exceeds" in out.stderr


def test_eval_json_is_the_same_on_both_paths(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path))
    _reset()
    args = ["eval", REPO / "specs" / "deepseek_v41.yaml", "--json", "flops(P=8192)",
            "kv_bytes_per_token()", "params(group=routed_experts) / params()", "request_flops(P=8192, G=2)"]
    fast = cli(*args)
    assert fast.exit_code == 0, fast.output
    assert cli(*args).output == fast.output == cli(*args, "--no-fast").output
    _reset()



def test_fail_and_erratum_verdicts_are_the_same_in_both_lanes(tmp_path):
    """One verdict rule (verify/verdicts.interval_verdict): a FAIL, an XPASS and an XFAIL print
    the same from the symbolic lane and, warm, from the fast lane's cached records."""
    import shutil

    folder = tmp_path / "specs"
    shutil.copytree(REPO / "specs" / "lib", folder / "lib")
    text = (REPO / "specs" / "toy_moe.yaml").read_text(encoding="utf-8")
    start = text.index("claims_files:")
    end = text.index("\n", start)
    (folder / "toy.yaml").write_text(text[:start] + "claims_files: [claims.yaml]" + text[end:], encoding="utf-8")
    (folder / "claims.yaml").write_text(
        "claims:\n"
        "  - {id: wrong, source: made-up, eval: 'params()', expect: 1.5 billion params}\n"
        "  - {id: erratum-agrees, source: made-up, eval: 'params()', expect: 17160 params, erratum: x}\n"
        "  - {id: erratum-differs, source: made-up, eval: 'params() + 1 params', expect: 1 params, erratum: y}\n"
        "  - {id: right-at-the-edge, source: made-up, eval: 'dim(E)', expect: 8}\n", encoding="utf-8")
    spec = str(folder / "toy.yaml")
    slow = _run(["verify", spec, "--no-fast", "--verbose"], tmp_path / "c1")
    cold = _run(["verify", spec, "--verbose"], tmp_path / "c2")
    warm = _run(["verify", spec, "--verbose"], tmp_path / "c2")
    assert slow.returncode == 1 and "FAIL" in slow.stdout and "XFAIL" in slow.stdout and "XPASS" in slow.stdout
    assert "is outside [" in slow.stdout
    assert cold.stdout == slow.stdout and warm.stdout == slow.stdout
