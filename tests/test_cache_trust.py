"""The cache as a trust boundary (cache/disk_cache): a planted entry never runs
and never changes an answer; a folder others can write is refused with a
warning and specc still answers; special files, truncated and wrong-shaped
entries are ignored; no home folder still works."""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from specc.compiler.lanes import compiled
from specc.cache import codec as cache_codec, disk_cache

REPO = Path(__file__).resolve().parents[1]
SPEC = "specs/qwen3_8b.yaml"
# a query the shipped compiled forms (specs/compiled/) do not hold, so a first run fills the cache
QUERY = "params() / 2"


def _run(args, env_extra, timeout=60, cwd=REPO):
    env = dict(os.environ)
    env.update(env_extra)
    env = {k: v for k, v in env.items() if v is not None}
    cmd = [sys.executable, "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def truth(tmp_path_factory):
    out = _run(["eval", SPEC, QUERY], {"SPECC_CACHE_DIR": ""})
    assert out.returncode == 0, out.stderr
    return out.stdout


class _Planted:
    """Unpickling this writes a marker file: the proof that a pickle ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path(self.marker).write_text, ("ran",))


def _plant(cache: Path, marker: Path) -> None:
    """Every kind of entry an attacker could leave: pickles at the old names and at
    the new ones, and a well-formed store (right engine, right dependency hashes)
    whose printed code would write the marker and answer 1."""
    folder_names = [f"{name}-{disk_cache.engine_fingerprint()[:16]}"
                    for name in ("compiled", "models", "parses", "yaml")] + ["compiled", "models", "yaml"]
    bomb = pickle.dumps(_Planted(marker))
    spec = (REPO / SPEC).resolve()
    store_key = compiled._store_path(spec)   # the name specc will look for (under SPECC_CACHE_DIR)
    for name in folder_names:
        folder = cache / name
        folder.mkdir(parents=True, exist_ok=True)
        for stem in ("planted", store_key.stem if store_key else "x"):
            (folder / f"{stem}.pickle").write_bytes(bomb)
            (folder / f"{stem}.json").write_bytes(bomb)
    code = f"def q():\n    open({str(marker)!r}, 'w').write('ran')\n    return 1\n"
    deps = {str(spec): compiled.file_hash(spec)}
    store = compiled.Store(compiled.engine_hash(), deps,
                           {QUERY: compiled.Template((), code, "params", "params")}, {}, {}, {})
    payload = cache_codec.dumps(store)
    forged = disk_cache._MAGIC + b"0" * 64 + b"\n" + payload          # no valid tag
    target = cache / f"compiled-{disk_cache.engine_fingerprint()[:16]}" / store_key.name
    target.write_bytes(forged)


@pytest.mark.parametrize("mode", [0o777, 0o757, 0o775])
def test_a_planted_cache_in_a_folder_others_can_write_never_runs(tmp_path, truth, mode):
    cache = tmp_path / "shared"
    cache.mkdir()
    os.environ["SPECC_CACHE_DIR"] = str(cache)          # for _plant's path computations
    try:
        marker = tmp_path / "marker"
        _plant(cache, marker)
        os.chmod(cache, mode)
        out = _run(["eval", SPEC, QUERY], {"SPECC_CACHE_DIR": str(cache)})
    finally:
        del os.environ["SPECC_CACHE_DIR"]
    assert out.returncode == 0, out.stderr
    assert out.stdout == truth
    assert not marker.exists()
    assert "not using the cache" in out.stderr and "others can write it" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_forged_store_in_ones_own_folder_is_ignored(tmp_path, truth):
    """Even in a private folder, an entry without this user's tag is not read."""
    cache = tmp_path / "cache"
    os.environ["SPECC_CACHE_DIR"] = str(cache)
    try:
        assert _run(["eval", SPEC, QUERY], {"SPECC_CACHE_DIR": str(cache)}).stdout == truth   # makes the key
        marker = tmp_path / "marker"
        _plant(cache, marker)
        for path in cache.rglob("*"):
            if path.is_file() and path.name != "key":
                os.chmod(path, 0o600)
        out = _run(["eval", SPEC, QUERY], {"SPECC_CACHE_DIR": str(cache)})
    finally:
        del os.environ["SPECC_CACHE_DIR"]
    assert out.returncode == 0 and out.stdout == truth
    assert not marker.exists()


def test_an_entry_signed_with_another_key_is_ignored(tmp_path, truth):
    """A cache copied from another machine or user (another key) answers nothing."""
    cache = tmp_path / "cache"
    env = {"SPECC_CACHE_DIR": str(cache)}
    assert _run(["eval", SPEC, QUERY], env).stdout == truth
    key = cache / "key"
    os.chmod(key, 0o600)
    key.write_bytes(os.urandom(32))
    out = _run(["eval", SPEC, QUERY], env)
    assert out.returncode == 0 and out.stdout == truth


def test_tampered_truncated_and_wrong_shaped_entries_are_ignored(tmp_path, monkeypatch, truth):
    cache = tmp_path / "cache"
    env = {"SPECC_CACHE_DIR": str(cache)}
    assert _run(["eval", SPEC, QUERY], env).stdout == truth
    entries = [p for p in cache.rglob("*.json")]
    assert entries, "the first run stored entries"
    for i, path in enumerate(entries):
        data = path.read_bytes()
        if i % 3 == 0:
            path.write_bytes(data[: len(data) // 2])                         # truncated
        elif i % 3 == 1:
            path.write_bytes(data.replace(b"params", b"paramz", 1))          # tampered
        else:
            path.write_bytes(data[:len(disk_cache._MAGIC)] + b"x" * 70)      # nonsense
    out = _run(["eval", SPEC, QUERY], env)
    assert out.returncode == 0 and out.stdout == truth
    assert "Traceback" not in out.stderr
    # a correctly signed entry of the wrong shape: still no answer from it, no crash
    monkeypatch.setenv("SPECC_CACHE_DIR", str(cache))
    disk_cache._checked.clear()
    disk_cache._key_cache.clear()
    for path in cache.rglob("*.json"):
        disk_cache.store(path, ["not", "a", "store", 1])
    out = _run(["eval", SPEC, QUERY], env)
    assert out.returncode == 0 and out.stdout == truth


def test_a_fifo_or_a_link_in_the_cache_never_hangs(tmp_path, truth):
    cache = tmp_path / "cache"
    env = {"SPECC_CACHE_DIR": str(cache)}
    assert _run(["eval", SPEC, QUERY], env).stdout == truth
    for path in list(cache.rglob("*.json")):
        path.unlink()
        os.mkfifo(path)
    out = _run(["eval", SPEC, QUERY], env, timeout=30)
    assert out.returncode == 0 and out.stdout == truth
    for path in list(cache.rglob("*.json")):
        path.unlink()
        path.symlink_to("/dev/zero")
    out = _run(["eval", SPEC, QUERY], env, timeout=30)
    assert out.returncode == 0 and out.stdout == truth


def test_an_entry_others_can_write_is_refused(tmp_path, truth):
    cache = tmp_path / "cache"
    env = {"SPECC_CACHE_DIR": str(cache)}
    assert _run(["eval", SPEC, QUERY], env).stdout == truth
    for path in cache.rglob("*.json"):
        os.chmod(path, 0o666)
    out = _run(["eval", SPEC, QUERY], env)
    assert out.returncode == 0 and out.stdout == truth
    assert "others can write it" in out.stderr


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a folder owned by a second user")
def test_a_folder_owned_by_another_user_is_refused(tmp_path, truth):
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o755)
    marker = tmp_path / "marker"
    os.environ["SPECC_CACHE_DIR"] = str(cache)
    try:
        _plant(cache, marker)
    finally:
        del os.environ["SPECC_CACHE_DIR"]
    for path in [cache, *cache.rglob("*")]:
        os.chown(path, 4242, 4242)
    out = _run(["eval", SPEC, QUERY], {"SPECC_CACHE_DIR": str(cache)})
    assert out.returncode == 0 and out.stdout == truth
    assert "owned by user id 4242" in out.stderr
    assert not marker.exists()


def test_no_home_and_no_passwd_entry_still_answers(tmp_path, truth):
    """HOME unset and getpwuid failing (a bare container): a per-user temp folder."""
    code = ("import os, pwd, sys, tempfile\n"
            "def _nobody(uid): raise KeyError(uid)\n"
            "pwd.getpwuid = _nobody\n"
            f"tempfile.tempdir = {str(tmp_path)!r}\n"
            "from specc.cli import main; sys.argv[0] = 'specc'; main()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "SPECC_CACHE_DIR")}
    out = subprocess.run([sys.executable, "-c", code, "eval", SPEC, QUERY], capture_output=True,
                         text=True, env=env, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == truth
    folder = tmp_path / f"specc-{os.getuid()}"
    assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_the_key_and_entries_are_private(tmp_path, truth):
    cache = tmp_path / "cache"
    assert _run(["eval", SPEC, QUERY], {"SPECC_CACHE_DIR": str(cache)}).stdout == truth
    assert stat.S_IMODE((cache / "key").stat().st_mode) == 0o600
    for path in cache.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, (path, oct(mode))
    # one engine fingerprint names every cache's folder
    suffixes = {p.name.rsplit("-", 1)[1] for p in cache.iterdir() if p.is_dir()}
    assert suffixes == {disk_cache.engine_fingerprint()[:16]}


def _entry(classes, exprs, value) -> bytes:
    import json

    return json.dumps([cache_codec.FORMAT, classes, exprs, value]).encode()


def test_the_codec_refuses_what_it_may_not_build():
    bad = [
        _entry(["os:system"], [], ["o", 0, "echo hi"]),                       # not this package
        _entry(["builtins:eval"], [[0, ["1"], {}]], ["e", 0]),                 # not sympy, not ours
        _entry(["sympy:sympify"], [[0, ["1"], {}]], ["e", 0]),                 # a function, not a class
        _entry(["sympy:sin"], [[0, ["__import__('os').getpid()"], {}]], ["e", 0]),   # a string sympy would run
        _entry(["sympy:Symbol"], [[0, ["x"], {"positive": "yes"}]], ["e", 0]),  # keywords are flags
        _entry(["specc.cache.disk_cache:_warn"], [], ["o", 0]),                  # private, and a function
        _entry(["specc.compiler.lanes.compiled:Store"], [], ["O", 0, "__class__", 1]),
        _entry(["specc.compiler.lanes.compiled:Store"], [], ["o", 0, 1]),             # fields missing
        _entry([], [], ["e", 3]), _entry([], [], ["o", 7]), _entry([], [], []),
        _entry([], [], ["F", 1, 0]), _entry([], [], ["r", 0, 10, 0]), _entry([], [], ["zz"]),
        b'[]', b'{"a": 1}', b"\xff", b'["specc-codec 1", [], [], 1]',
    ]
    for data in bad:
        with pytest.raises(cache_codec.CacheFormatError):
            cache_codec.loads(data)


def test_the_codec_never_hands_sympy_a_string_to_parse():
    import sympy as sp

    x = sp.Symbol("x", positive=True, integer=True)
    for expr in (sp.Min(x, 3), sp.Max(x, sp.Rational(1, 3)), sp.floor(x / 7) + 2 ** x,
                 sp.Piecewise((x, x > 3), (1, True))):
        assert cache_codec.loads(cache_codec.dumps(expr)) == expr
    shared = sp.floor(x / 7) + 2 ** x
    entry = cache_codec.dumps([shared * 3, shared + 1, {shared: shared}])
    assert entry.count(b'"sympy.core.power:Pow"') == 1      # each class named once
    assert cache_codec.loads(entry) == [shared * 3, shared + 1, {shared: shared}]


def test_four_parallel_first_runs_share_one_key_and_agree(tmp_path, truth):
    cache = tmp_path / "cache"
    env = dict(os.environ, SPECC_CACHE_DIR=str(cache))
    cmd = [sys.executable, "-c", "import sys; from specc.cli import main; sys.argv[0] = 'specc'; main()",
           "eval", SPEC, QUERY]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert all(out == truth for out, _ in outs)
    assert not any("warning" in err for _, err in outs)
    assert (cache / "key").stat().st_size == 32 and not list(cache.glob(".key*"))
    assert _run(["eval", SPEC, QUERY], {"SPECC_CACHE_DIR": str(cache)}).stdout == truth
