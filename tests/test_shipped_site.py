"""The shipped specs' site exports (specs/compiled/site/, `specc ship-compiled`,
render/shipped_site.py): current, what a cold export gives, read by a first `specc site`,
and ignored as soon as the engine, the export's code, the spec's name or any file they
were made from differs."""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specc.cache import codec
from specc.compiler.lanes import compiled
from specc.dsl import search_path
from specc.dsl.search_path import device_files
from specc.render import shipped_site
from specc.render.site import export_parts, node_sizes
from test_shipped_forms import CHANGES, edit_a_file_of_qwen3_8b

REPO = Path(__file__).resolve().parents[1]
REGENERATE = "stale: regenerate with `specc ship-compiled` and commit specs/compiled/site/"


def _load(name: str):
    """The shipped export of specs/NAME.yaml, named as `specc site` names it beside specs/."""
    path = f"specs/{name}.yaml"
    return shipped_site.load(path, path, node_sizes(device_files(path)))


@pytest.fixture
def beside_specs(tmp_path, monkeypatch):
    """Run beside the repository's specs/, with an empty cache of the test's own and no search path."""
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECC_PATH", raising=False)
    monkeypatch.chdir(REPO)
    return tmp_path


@pytest.fixture
def copy(tmp_path, monkeypatch):
    """A copy of the shipped folder standing in for it (search_path.SHIPPED), run beside it."""
    folder = tmp_path / "pkg" / "specs"
    shutil.copytree(REPO / "specs", folder)
    monkeypatch.setattr(search_path, "SHIPPED", folder.resolve())
    monkeypatch.setenv("SPECC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECC_PATH", raising=False)
    monkeypatch.chdir(folder.parent)
    return folder.resolve()


def test_every_shipped_spec_has_a_current_site_export(beside_specs):
    specs = sorted((REPO / "specs").glob("*.yaml"))
    exports = sorted(p.stem for p in shipped_site.folder().glob("*.xz"))
    assert exports == [p.stem for p in specs], REGENERATE
    stale = [p.stem for p in specs if _load(p.stem) is None]
    assert not stale, f"{REGENERATE} ({', '.join(stale[:6])})"


def test_a_shipped_export_is_what_a_cold_export_gives(beside_specs):
    """Two small specs exported afresh (nothing read from a cache or the package) give the
    parts, costs included, that their shipped exports hold."""
    names = ["specs/toy_moe.yaml", "specs/shazeer2017_moe.yaml"]
    record: dict = {}
    export_parts(names, jobs=1, cached=False, record=record)
    for name in names:
        shipped = _load(Path(name).stem)
        fresh = {part: (codec.loads(codec.dumps(plain)), cost) for (path, part), (plain, _, cost) in record.items()
                 if path == name}
        assert shipped is not None and set(shipped) == set(fresh)
        for part in fresh:
            assert shipped[part] == fresh[part], (name, part)


def test_the_exports_hold_no_path_of_this_machine():
    for path in shipped_site.folder().glob("*.xz"):
        header, packed = shipped_site.split(path.read_bytes())
        assert str(REPO).encode() not in header + lzma.decompress(packed), path.name


def test_a_first_specc_site_reads_them_and_writes_what_a_cold_one_writes(tmp_path):
    """With an empty cache, `specc site` of shipped specs exports nothing; copied elsewhere
    (no shipped export answers for them) the same specs export every part, and both sites
    are byte for byte the same."""
    env = dict(os.environ, SPECC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("SPECC_PATH", None)
    specc = [sys.executable, "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()"]
    first = subprocess.run(specc + ["site", "-o", str(tmp_path / "a"), "--specs", "specs/toy_moe.yaml",
                                    "--docs", "", "--jobs", "1"], cwd=REPO, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "6 export parts: 0 cached, 6 shipped with specc, 0 to export" in first.stderr
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(REPO / "specs", elsewhere / "specs")
    env["SPECC_CACHE_DIR"] = str(tmp_path / "cache2")
    cold = subprocess.run(specc + ["site", "-o", str(tmp_path / "b"), "--specs", "specs/toy_moe.yaml",
                                   "--docs", "", "--jobs", "1"], cwd=elsewhere, env=env, capture_output=True,
                          text=True)
    assert cold.returncode == 0, cold.stderr
    assert "6 export parts: 0 cached, 6 to export" in cold.stderr
    written = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    for rel in written:
        if rel.name != ".specc-written":
            assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


# ------------------------------------------------------------------ ignored when they do not match
def _rewrite(path: Path, change, rehash: bool) -> None:
    """Apply `change` to an export's header (its hash made right again, or not)."""
    data = path.read_bytes()
    header, packed = shipped_site.split(data)
    entry = codec.loads(header)
    change(entry)
    header = codec.dumps(entry)
    rest = str(len(header)).encode() + b"\n" + header + packed
    head = len(shipped_site.MAGIC) + 64
    digest = hashlib.sha256(rest).hexdigest().encode() if rehash else data[len(shipped_site.MAGIC):head]
    path.write_bytes(shipped_site.MAGIC + digest + b"\n" + rest)


def test_the_copy_stands_in_for_the_shipped_folder(copy):
    assert _load("qwen3_8b") is not None


def test_a_tampered_export_whose_hash_does_not_match_is_ignored(copy):
    target = shipped_site.folder() / "qwen3_8b.xz"
    data = bytearray(target.read_bytes())
    data[-20] ^= 1
    target.write_bytes(bytes(data))
    assert _load("qwen3_8b") is None
    assert _load("llama2_7b") is not None                     # the others still answer


@pytest.mark.parametrize("change", CHANGES)
def test_an_export_whose_files_changed_is_ignored(copy, change):
    assert _load("qwen3_8b") is not None
    edit_a_file_of_qwen3_8b(copy, change)
    assert _load("qwen3_8b") is None


@pytest.mark.parametrize("field", ["engine", "code", "public", "sizes"])
def test_an_export_made_for_another_engine_code_name_or_node_sizes_is_ignored(copy, field):
    other = {"engine": "f" * 64, "code": "0" * 64, "public": "elsewhere/qwen3_8b.yaml", "sizes": [None, 4]}[field]
    _rewrite(shipped_site.folder() / "qwen3_8b.xz", lambda entry: None, rehash=True)
    assert _load("qwen3_8b") is not None                     # rewritten unchanged: still read
    _rewrite(shipped_site.folder() / "qwen3_8b.xz", lambda entry: entry["decides"].update({field: other}),
             rehash=True)
    assert _load("qwen3_8b") is None


def test_a_header_whose_hash_does_not_match_is_ignored(copy):
    _rewrite(shipped_site.folder() / "qwen3_8b.xz", lambda entry: entry["deps"].clear(), rehash=False)
    assert _load("qwen3_8b") is None


def test_a_link_in_place_of_an_export_is_ignored(copy):
    target = shipped_site.folder() / "qwen3_8b.xz"
    target.unlink()
    target.symlink_to(REPO / "specs" / compiled.SHIPPED_FORMS / shipped_site.SUBFOLDER / "qwen3_8b.xz")
    assert _load("qwen3_8b") is None


def test_only_the_shipped_folder_s_specs_without_a_search_path_and_with_caching_on(copy, monkeypatch, tmp_path):
    elsewhere = tmp_path / "mine" / "qwen3_8b.yaml"                       # the same bytes elsewhere
    elsewhere.parent.mkdir()
    shutil.copy(copy / "qwen3_8b.yaml", elsewhere)
    assert shipped_site.load(elsewhere, "specs/qwen3_8b.yaml", node_sizes(device_files(elsewhere))) is None
    monkeypatch.setenv("SPECC_PATH", str(tmp_path))
    assert _load("qwen3_8b") is None
    monkeypatch.delenv("SPECC_PATH")
    monkeypatch.setenv("SPECC_CACHE_DIR", "")                             # every cache off: these too
    assert _load("qwen3_8b") is None
