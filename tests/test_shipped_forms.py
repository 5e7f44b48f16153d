"""The shipped specs' compiled forms (specs/compiled/, `specc ship-compiled`): current,
read by a first `specc verify` and a typical `specc eval` (no sympy imported), trusted
as the package's code but only while the engine and every file they depend on are as
they were, and ignored otherwise; the user's cache keeps its own rules (cache/disk_cache)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specc.compiler.lanes import compiled
from specc.cache import disk_cache
from specc.dsl import search_path
from specc.verify import fast_claims, shipped_forms

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"
FORMS = SPECS / compiled.SHIPPED_FORMS
REGENERATE = "stale: regenerate with `specc ship-compiled` and commit specs/compiled/"


def _specc(args, cache, importtime=False, env_extra=None):
    env = dict(os.environ, SPECC_CACHE_DIR=str(cache))
    env.pop("SPECC_PATH", None)
    env.update(env_extra or {})
    cmd = [sys.executable] + (["-X", "importtime"] if importtime else []) + [
        "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)


def _imported(stderr: str) -> set:
    return {line.split("|")[-1].strip().split(".")[0] for line in stderr.splitlines()
            if line.startswith("import time:")}


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache of this test's own and no search path; the process's stores forgotten."""
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECC_PATH", raising=False)
    compiled.STORES.clear()
    yield tmp_path
    compiled.STORES.clear()


# ------------------------------------------------------------------ current
def test_every_shipped_spec_has_a_current_compiled_form(fresh):
    """Every committed form stands for the engine and the files as they are now (the engine's
    fingerprint and each dependency's hash), and there is one per shipped spec and no other."""
    specs = sorted(SPECS.glob("*.yaml"))
    assert sorted(p.name for p in FORMS.glob("*.json")) == sorted(f"{p.stem}.json" for p in specs), REGENERATE
    stale = [p.stem for p in specs if compiled.shipped(p) is None]
    assert not stale, f"{REGENERATE} ({', '.join(stale[:6])}{' …' if len(stale) > 6 else ''})"


def test_the_committed_forms_are_plain_deterministic_data_without_machine_paths():
    for path in FORMS.glob("*.json"):
        data = path.read_bytes()
        assert data.startswith(compiled.SHIPPED_MAGIC)
        assert str(REPO).encode() not in data and b'"/' not in data, path.name
        assert b"pickle" not in data and b"Timestamp" not in data


@pytest.mark.slow           # builds every shipped spec's store afresh (about 20 s)
def test_the_committed_forms_are_what_the_generator_writes_now(tmp_path):
    out = _specc(["ship-compiled", "--check"], tmp_path / "cache")
    assert out.returncode == 0, out.stderr


# ------------------------------------------------------------------ read on a first run
def test_a_first_verify_and_a_typical_eval_read_them(tmp_path):
    """An empty cache: verify of every shipped spec and an eval of a declared query's shape
    at a new value import no sympy, and print what the symbolic engine prints."""
    specs = [str(p.relative_to(REPO)) for p in sorted(SPECS.glob("*.yaml"))]
    first = _specc(["verify", *specs, "--format", "json"], tmp_path / "a", importtime=True)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "sympy" not in _imported(first.stderr)
    reference = _specc(["verify", *specs, "--format", "json", "--no-fast"], "")
    assert first.stdout == reference.stdout
    query = ["eval", "specs/deepseek_v41.yaml", "flops(P=8192)", "state_bytes(H=77777)"]
    first = _specc(query, tmp_path / "b", importtime=True)
    assert first.returncode == 0 and "sympy" not in _imported(first.stderr)
    assert first.stdout == _specc(query + ["--no-fast"], "").stdout
    assert "flops(P=8192) = 143,946,626,891,776 FLOPs" in first.stdout


# ------------------------------------------------------------------ ignored when they do not match
@pytest.fixture
def copy(fresh, monkeypatch):
    """A copy of the shipped folder, standing in for it (search_path.SHIPPED)."""
    folder = fresh / "pkg" / "specs"
    shutil.copytree(SPECS, folder)
    monkeypatch.setattr(search_path, "SHIPPED", folder.resolve())
    return folder.resolve()


def _reference(spec: Path) -> list:
    from specc.compiler.schema.spec import load_spec
    from specc.verify.claims import verify_spec

    return [(r.claim.id, r.verdict, r.computed_exact()) for r in verify_spec(load_spec(spec))]


def _fast(spec: Path) -> list:
    compiled.STORES.clear()
    return [(r.claim.id, r.verdict, r.computed_exact()) for r in fast_claims.verify_path(spec)]


def _forge(form: Path, old: bytes, new: bytes, rehash: bool) -> None:
    """Replace `old` by `new` in a form's payload (keeping its hash header right, or not)."""
    data = form.read_bytes()
    head = len(compiled.SHIPPED_MAGIC) + 65
    payload = data[head:]
    assert old in payload
    payload = payload.replace(old, new, 1)
    digest = hashlib.sha256(payload).hexdigest().encode() if rehash else data[len(compiled.SHIPPED_MAGIC):head - 1]
    form.write_bytes(compiled.SHIPPED_MAGIC + digest + b"\n" + payload)


def test_the_copy_stands_in_for_the_shipped_folder(copy):
    spec = copy / "qwen3_8b.yaml"
    store = compiled.shipped(spec)
    assert store is not None and store.verify[""]
    assert all(Path(p).is_relative_to(copy) for p in store.deps)         # made absolute under the copy
    assert compiled.load(spec) == store
    assert _fast(spec) == _reference(spec)


def test_a_tampered_form_whose_hash_does_not_match_is_ignored(copy):
    spec = copy / "qwen3_8b.yaml"
    truth = _reference(spec)
    form = copy / "compiled" / "qwen3_8b.json"
    value = re.search(rb'"params\(\)",\["o",\d+,8190735360,', form.read_bytes()).group()
    _forge(form, value, value.replace(b"8190735360", b"8190735361"), rehash=False)
    assert compiled.shipped(spec) is None
    _forge(form, value.replace(b"8190735360", b"8190735361"), value, rehash=False)     # undone: read again
    assert compiled.shipped(spec).literals["params()"].value == 8190735360
    assert _fast(spec) == truth


CHANGES = ["the spec", "an imported block", "a device", "a claims file"]


def edit_a_file_of_qwen3_8b(folder: Path, change: str) -> None:
    """Append a comment to one file qwen3_8b's answers read (one of CHANGES) in a copy of specs/."""
    target = {"the spec": folder / "qwen3_8b.yaml", "an imported block": folder / "lib" / "core.yaml",
              "a device": folder / "hardware" / "h100_sxm.yaml",
              "a claims file": next((folder / "claims").glob("*qwen3_8b*.yaml"))}[change]
    target.write_bytes(target.read_bytes() + b"\n# edited\n")


@pytest.mark.parametrize("change", CHANGES)
def test_a_form_whose_files_changed_is_ignored(copy, change):
    """The bytes parsed are what the form's manifest hashes: any dependency edited, no form."""
    spec = copy / "qwen3_8b.yaml"
    assert compiled.shipped(spec) is not None
    edit_a_file_of_qwen3_8b(copy, change)
    assert compiled.shipped(spec) is None


def test_a_consistent_form_for_other_bytes_is_ignored(copy):
    """A form rewritten with a right hash header but recording other spec bytes (or another
    engine) answers nothing: only the manifest's match with the files counts."""
    spec = copy / "qwen3_8b.yaml"
    digest = compiled.file_hash(spec).encode()
    _forge(copy / "compiled" / "qwen3_8b.json", digest, b"0" * 64, rehash=True)
    assert compiled.shipped(spec) is None
    engine = compiled.engine_hash().encode()
    _forge(copy / "compiled" / "llama2_7b.json", engine, b"f" * 64, rehash=True)
    assert compiled.shipped(copy / "llama2_7b.yaml") is None
    assert compiled.shipped(copy / "qwen3_30b_a3b.yaml") is not None          # the others still answer


def test_a_link_or_a_fifo_in_place_of_a_form_is_ignored(copy):
    form = copy / "compiled" / "qwen3_8b.json"
    form.unlink()
    form.symlink_to(FORMS / "qwen3_8b.json")
    assert compiled.shipped(copy / "qwen3_8b.yaml") is None
    form.unlink()
    os.mkfifo(form)
    assert compiled.shipped(copy / "qwen3_8b.yaml") is None


def test_only_the_shipped_folder_s_own_specs_without_a_search_path(copy, monkeypatch, tmp_path):
    spec = copy / "qwen3_8b.yaml"
    elsewhere = tmp_path / "mine" / "qwen3_8b.yaml"                       # the same bytes elsewhere
    elsewhere.parent.mkdir()
    shutil.copy(spec, elsewhere)
    assert compiled.shipped_path(elsewhere) is None
    monkeypatch.setenv("SPECC_PATH", str(tmp_path))
    assert compiled.shipped(spec) is None
    monkeypatch.delenv("SPECC_PATH")
    monkeypatch.setenv("SPECC_CACHE_DIR", "")                             # every cache off: these too
    assert compiled.shipped(spec) is None


# ------------------------------------------------------------------ the user's cache: its rules unchanged
def test_the_user_s_signed_store_comes_first_and_a_forged_one_is_ignored(copy):
    spec = copy / "qwen3_8b.yaml"
    truth = _reference(spec)
    path = compiled._store_path(spec)
    own = compiled.shipped(spec)
    own.literals["params()"] = compiled.Answer(1, own.literals["params()"].dims, "params")
    disk_cache.store(path, own)                                   # signed with this user's key: trusted
    compiled.STORES.clear()
    assert compiled.lookup(spec, "params()").value == 1
    # the same entry without this user's tag: ignored, and the shipped form answers
    data = path.read_bytes()
    start = len(disk_cache._MAGIC)
    path.write_bytes(data[:start] + b"0" * 64 + data[start + 64:])
    compiled.STORES.clear()
    assert compiled.lookup(spec, "params()").value == 8190735360
    assert _fast(spec) == truth


def test_a_store_grown_from_a_shipped_form_is_saved_to_the_user_s_cache(copy):
    from specc.compiler.lanes import compile_queries
    from specc.compiler.query.queries import QueryEngine
    from specc.compiler.schema.spec import load_spec

    spec = copy / "qwen3_8b.yaml"
    engine = QueryEngine.shared(load_spec(spec))
    compile_queries.answer(engine, "flops(P=8192, B=3)", eager=True)
    compile_queries.flush()
    saved = disk_cache.load(compiled._store_path(spec))
    assert isinstance(saved, compiled.Store) and "flops(P=P, B=B)" in saved.templates
    assert saved.verify[""] and (copy / "compiled" / "qwen3_8b.json").read_bytes() == \
        (FORMS / "qwen3_8b.json").read_bytes()              # the package's copy is never written


def test_the_engine_fingerprint_covers_subpackages(tmp_path, monkeypatch):
    """A split of compiler/ into subpackages stays covered: files are found recursively."""
    for rel in ("compiler/a.py", "compiler/graph/b.py", "dsl/g.lark", "verify/v.py", "render/r.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    monkeypatch.setattr(disk_cache, "_ROOT", tmp_path)
    monkeypatch.setattr(disk_cache, "_FINGERPRINT", None)
    assert [p.relative_to(tmp_path).as_posix() for p in disk_cache._engine_files()] == [
        "compiler/a.py", "compiler/graph/b.py", "dsl/g.lark", "verify/v.py"]
    first = disk_cache.engine_fingerprint()
    (tmp_path / "compiler" / "graph" / "b.py").write_text("x = 2\n")
    monkeypatch.setattr(disk_cache, "_FINGERPRINT", None)
    assert disk_cache.engine_fingerprint() != first
