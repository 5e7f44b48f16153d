"""A persistent cache of compiled models, keyed by everything they depend on.

Compiling is the largest cost left once parses are cached (0.05–0.5 s per spec
and option choice). A compiled Model depends only on the spec file, the
libraries it imports, the option choices and the engine's own code, so it is
stored under a hash of exactly those and reloaded with pickle (about ten times
faster than compiling). Lives next to the parse cache ($SPECC_CACHE_DIR,
default ~/.cache/specc; an empty SPECC_CACHE_DIR disables it)."""

from __future__ import annotations

import copyreg
import dataclasses
import hashlib
import os
import pickle
import tempfile
from pathlib import Path

import sympy as sp

from .build import Model, compile_spec
from .spec import Spec

def _unevaluated_min(*args):
    return sp.Min(*args, evaluate=False)


def _unevaluated_max(*args):
    return sp.Max(*args, evaluate=False)


# Min/Max are kept unevaluated while compiling (see expressions.py); rebuilding
# them with evaluation on unpickling would cost more than the cache saves
copyreg.pickle(sp.Min, lambda e: (_unevaluated_min, e.args))
copyreg.pickle(sp.Max, lambda e: (_unevaluated_max, e.args))

_ENGINE_DIRS = (Path(__file__).parent, Path(__file__).parent.parent / "dsl")
_ENGINE_HASH: str | None = None


def _engine_hash() -> str:
    global _ENGINE_HASH
    if _ENGINE_HASH is None:
        digest = hashlib.sha256()
        for folder in _ENGINE_DIRS:
            for path in sorted(folder.glob("*.py")) + sorted(folder.glob("*.lark")):
                digest.update(path.name.encode() + path.read_bytes())
        _ENGINE_HASH = digest.hexdigest()
    return _ENGINE_HASH


def _cache_dir() -> Path | None:
    root = os.environ.get("SPECC_CACHE_DIR")
    if root == "":
        return None
    return (Path(root) if root else Path.home() / ".cache" / "specc") / "models"


def _key(spec: Spec, choices: dict, overrides: dict | None = None) -> str:
    digest = hashlib.sha256(_engine_hash().encode())
    for source in spec.sources or [spec.path]:
        digest.update(str(source).encode() + b"\0" + Path(source).read_bytes())
    digest.update(repr(sorted(choices.items())).encode())
    if overrides:
        digest.update(repr(sorted(overrides.items())).encode())
    return digest.hexdigest()[:32]


def compile_cached(spec: Spec, overrides: dict | None = None, **choices) -> Model:
    folder = _cache_dir()
    if folder is None:
        return compile_spec(spec, overrides, **choices)
    try:
        path = folder / f"{_key(spec, choices, overrides)}.pickle"
    except OSError:
        return compile_spec(spec, overrides, **choices)
    if path.exists():
        try:
            with open(path, "rb") as fh:
                model = pickle.load(fh)
            model.spec = spec
            return model
        except Exception:  # noqa: BLE001 - a damaged entry is recompiled
            pass
    model = compile_spec(spec, overrides, **choices)   # errors propagate and are never cached
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        # the graph is derived from the ops and the spec is loaded anyway: store neither
        stored = dataclasses.replace(model, graph_=None, spec=None)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(stored, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    return model
