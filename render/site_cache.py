"""`specc site`'s export, by content: each export part (render/site.py: _parts,
export_part) is cached on disk and reused while nothing that decides it changed.

An entry lives in the signed per-user cache (cache/disk_cache: a private folder,
HMAC-tagged plain data, never pickle, filed under the one engine fingerprint).
Its name is a hash of what the export reads besides the engine:

* the code of the export itself (render/site.py and this module, which the
  engine fingerprint does not cover) and the search path (dsl/search_path);
* the spec as named (its path as given and as the page prints it) and the bytes
  of its file;
* the part (the base, or one tp) and the node sizes of the devices it can name;

and it records every other file the answer read (imports, sibling specs, claims
files, devices, the schemes table, candidates that must stay absent), each with
the SHA-256 of the bytes read: an entry is used only while every one of them
still hashes the same (as compiled.py's stores are checked), so an edited
library retires exactly the parts that read it.

A spec's list of parts (which needs its compiled model) is cached the same way,
so a rebuild with nothing changed compiles nothing. Entries are plain data:
the part's dict, and its printed functions and unavailability reasons."""

from __future__ import annotations

import hashlib
from pathlib import Path

FOLDER = "site"
FORMAT = "specc-site-part 1"


_CODE: list = []


def code_hash() -> str:
    """The export's own code: the engine fingerprint covers compiler/, dsl/, verify/ and cache/, not render/."""
    if not _CODE:
        digest = hashlib.sha256(FORMAT.encode())
        for module in ("site.py", "site_cache.py"):
            digest.update(module.encode() + b"\0" + Path(__file__).with_name(module).read_bytes())
        _CODE.append(digest.hexdigest())
    return _CODE[0]


def _folder():
    from ..cache import disk_cache

    return disk_cache.cache_dir(FOLDER)


def name(*parts) -> str:
    """An entry's name: a hash of what decides it."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def spec_key(path: str, public: str) -> str | None:
    """What names a spec's entries: the spec as named (`public`: as the page prints its path)
    and its file's bytes (None when it cannot be read: exported uncached, so the export
    reports the error)."""
    from ..cache.disk_cache import engine_fingerprint
    from ..dsl.search_path import roots_signature

    try:
        content = Path(path).read_bytes()
    except OSError:
        return None
    return name(engine_fingerprint(), code_hash(), roots_signature(), str(path), str(Path(path).resolve()),
                public, hashlib.sha256(content).hexdigest())


def _valid(entry, kind: str) -> bool:
    from ..compiler.lanes.compiled import file_hash

    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("kind") != kind:
        return False
    deps = entry.get("deps")
    return isinstance(deps, dict) and all(file_hash(path) == digest for path, digest in deps.items())


def load(entry_name: str, kind: str):
    """The value stored under `entry_name` as a `kind` entry, or None (missing, damaged, not
    signed by this user, or some file it was computed from changed)."""
    from ..cache import disk_cache

    folder = _folder()
    if folder is None:
        return None
    entry = disk_cache.load(folder / f"{entry_name}.json")
    return entry["value"] if _valid(entry, kind) else None


def store(entry_name: str, kind: str, deps: dict, value) -> None:
    """Store `value` (plain data) valid while every file of `deps` ({path: sha256 or None}) is unchanged."""
    from ..cache import disk_cache

    folder = _folder()
    if folder is not None:
        disk_cache.store(folder / f"{entry_name}.json", {"format": FORMAT, "kind": kind, "deps": deps,
                                                         "value": value})


def dependencies(path: str) -> dict:
    """Every file the answers about the spec at `path` read in this process, as compile_queries
    records them for its compiled store, and the device files the site reads node sizes from."""
    from ..compiler.lanes import compiled
    from ..compiler.lanes.compile_queries import dependency_hashes
    from ..compiler.query.queries import QueryEngine
    from ..compiler.schema.spec import load_spec
    from ..dsl.search_path import device_files

    engine = QueryEngine.shared(load_spec(path))
    deps = dependency_hashes(engine, device_files(path))
    # verdicts answered from the compiled store asked no sibling engine here: its record has them
    found = compiled.load(engine.spec.path)
    for dep, digest in (found.deps.items() if found is not None else ()):
        deps.setdefault(dep, digest)
    return deps
