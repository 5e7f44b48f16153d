"""The caches are never stale: each answer's manifest records every file a name
resolved to (claims files, devices, sibling specs, imports), the candidates
tried before it, the search path, and the hashes of the bytes actually parsed.
Each scenario asks once (filling the cache), changes the world, and asks again:
the second answer must be the fresh one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BASE = (REPO / "tests" / "malformed" / "base.yaml").read_text(encoding="utf-8")
DEVICE = (REPO / "specs" / "hardware" / "a100_40gb.yaml").read_text(encoding="utf-8")
B_MAX = "b_max(device=dev, H=4096)"


def _specc(args, cache, cwd, env_extra=None):
    env = dict(os.environ, SPECC_CACHE_DIR=str(cache))
    env.pop("SPECC_PATH", None)
    env.update(env_extra or {})
    cmd = [sys.executable, "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def _fresh(args, cwd, env_extra=None):
    """The answer without any cache: the reference."""
    return _specc(args, "", cwd, env_extra)


def _device(path: Path, memory: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = DEVICE.replace("name: a100_40gb", "name: dev")
    path.write_text(text.replace("memory: 42949672960 B", f"memory: {memory}"), encoding="utf-8")


def _same_as_fresh(out, args, cwd, env_extra=None):
    ref = _fresh(args, cwd, env_extra)
    assert (out.returncode, out.stdout) == (ref.returncode, ref.stdout), (out.stdout, out.stderr, ref.stdout)
    return out


@pytest.fixture
def world(tmp_path):
    """A spec in its own folder (no lib/ or hardware/ beside it), a cache."""
    model = tmp_path / "work" / "m"
    model.mkdir(parents=True)
    (model / "spec.yaml").write_text(BASE, encoding="utf-8")
    return tmp_path, model, tmp_path / "cache"


def test_a_claims_file_found_through_a_parent_folder_is_recorded_where_it_is(world):
    tmp, model, cache = world
    claims = tmp / "work" / "claims" / "c.yaml"
    claims.parent.mkdir()
    claims.write_text("claims:\n  - {id: c.p, source: t, eval: params(), expect: '78400 params'}\n")
    spec = model / "spec.yaml"
    spec.write_text(BASE.replace("claims:\n", "claims_files: [claims/c.yaml]\nclaims:\n", 1))
    first = _specc(["verify", str(spec)], cache, model)
    assert first.returncode == 0, first.stdout + first.stderr
    claims.write_text("claims:\n  - {id: c.p, source: t, eval: params(), expect: '99999 params'}\n")
    second = _specc(["verify", str(spec)], cache, model)
    assert second.returncode == 1 and "FAIL" in second.stdout, second.stdout


@pytest.mark.parametrize("how", ["SPECC_PATH", "--path"])
def test_an_edited_device_from_the_search_path(world, how):
    tmp, model, cache = world
    devices = tmp / "devices"
    _device(devices / "hardware" / "dev.yaml", "1000000 B")
    env = {"SPECC_PATH": str(devices)} if how == "SPECC_PATH" else {}
    extra = ["--path", str(devices)] if how == "--path" else []
    args = [*extra, "eval", "spec.yaml", B_MAX]
    first = _specc(args, cache, model, env)
    assert first.returncode == 0, first.stderr
    _device(devices / "hardware" / "dev.yaml", "100000000 B")
    second = _same_as_fresh(_specc(args, cache, model, env), args, model, env)
    assert second.stdout != first.stdout


def test_an_edited_shipped_device_is_recorded(world, monkeypatch):
    """The shipped data is found last; its file is in the manifest like any other
    (checked on the store itself: the shipped file is not ours to edit here)."""
    from specc.compiler.lanes import compile_queries, compiled
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    tmp, model, cache = world
    monkeypatch.setenv("SPECC_CACHE_DIR", str(cache))
    monkeypatch.delenv("SPECC_PATH", raising=False)
    compiled.STORES.clear()
    engine = QueryEngine(load_spec(model / "spec.yaml"))
    compile_queries.answer(engine, "b_max(device=a100_40gb, H=4096)")
    store = compile_queries.store_for(engine)
    shipped = str((REPO / "specs" / "hardware" / "a100_40gb.yaml").resolve())
    assert store.deps.get(shipped) == compiled.file_hash(shipped)
    # and the closer places it was not found are recorded as absent
    assert store.deps.get(str(model / "hardware" / "a100_40gb.yaml")) is None
    assert str(model / "hardware" / "a100_40gb.yaml") in store.deps
    compiled.STORES.clear()


def test_changing_the_search_path_changes_the_answer(world):
    tmp, model, cache = world
    for name, memory in (("one", "1000000 B"), ("two", "300000000 B")):
        _device(tmp / name / "hardware" / "dev.yaml", memory)
    args = ["eval", "spec.yaml", B_MAX]
    first = _specc(args, cache, model, {"SPECC_PATH": str(tmp / "one")})
    second = _specc(args, cache, model, {"SPECC_PATH": str(tmp / "two")})
    _same_as_fresh(second, args, model, {"SPECC_PATH": str(tmp / "two")})
    assert first.stdout != second.stdout
    third = _specc(["--path", str(tmp / "one"), *args], cache, model, {"SPECC_PATH": str(tmp / "two")})
    assert third.stdout == first.stdout


def test_a_closer_hardware_folder_appearing(world):
    tmp, model, cache = world
    _device(tmp / "far" / "hardware" / "dev.yaml", "1000000 B")
    env = {"SPECC_PATH": str(tmp / "far")}
    args = ["eval", "spec.yaml", B_MAX]
    first = _specc(args, cache, model, env)
    _device(model / "hardware" / "dev.yaml", "300000000 B")
    second = _same_as_fresh(_specc(args, cache, model, env), args, model, env)
    assert first.stdout != second.stdout


def test_a_closer_lib_folder_appearing(world):
    tmp, model, cache = world
    args = ["eval", "spec.yaml", "params()"]
    first = _specc(args, cache, model)
    assert first.returncode == 0, first.stderr
    (model / "lib").mkdir()
    (model / "lib" / "core.yaml").write_text("blocks: {}\n")   # shadows the shipped library: no blocks now
    second = _same_as_fresh(_specc(args, cache, model), args, model)
    assert second.returncode == 2


def test_a_closer_same_named_sibling_spec_appearing(world):
    tmp, model, cache = world
    far = tmp / "far"
    far.mkdir()
    (far / "other.yaml").write_text(BASE.replace("d: 64", "d: 32"))
    env = {"SPECC_PATH": str(far)}
    args = ["eval", "spec.yaml", "params(spec=other)"]
    first = _specc(args, cache, model, env)
    assert first.returncode == 0, first.stderr
    (model / "other.yaml").write_text(BASE.replace("d: 64", "d: 16"))
    second = _same_as_fresh(_specc(args, cache, model, env), args, model, env)
    assert first.stdout != second.stdout


def test_a_spec_edited_while_verify_runs_is_not_stored_with_old_verdicts(world, monkeypatch):
    """The store records the hash of the bytes parsed, not of the file when it is saved."""
    from specc.compiler.lanes import compile_queries, compiled
    from specc.verify import claims as claims_module
    from specc.verify import fast_claims

    tmp, model, cache = world
    monkeypatch.setenv("SPECC_CACHE_DIR", str(cache))
    monkeypatch.delenv("SPECC_PATH", raising=False)
    compiled.STORES.clear()
    spec = model / "spec.yaml"
    original = claims_module.verify_spec

    def edit_midway(loaded, files=()):
        results = original(loaded, files)
        spec.write_text(BASE.replace("expect: 78,400 params", "expect: 12 params"))   # edited meanwhile
        return results

    monkeypatch.setattr(claims_module, "verify_spec", edit_midway)
    results = fast_claims.verify_path(str(spec))
    assert [r.verdict for r in results] == ["PASS"]
    monkeypatch.setattr(claims_module, "verify_spec", original)
    compiled.STORES.clear()
    compile_queries.dirty_stores.clear()
    assert fast_claims.cached_results(str(spec)) is None        # the old verdicts are not for this text
    again = _specc(["verify", str(spec)], cache, model)
    assert again.returncode == 1 and "FAIL" in again.stdout
