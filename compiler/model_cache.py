"""A persistent cache of compiled models, keyed by everything they depend on.

Compiling is the largest cost left once parses are cached (0.05–0.5 s per spec
and option choice). A compiled Model depends only on the spec file, the
libraries it imports, the option choices and the engine's own code, so it is
stored under a hash of exactly those and reloaded with pickle (about ten times
faster than compiling). Where it lives and how entries are written: dsl/disk_cache."""

from __future__ import annotations

import copyreg
import dataclasses
import hashlib
from pathlib import Path

import sympy as sp

from ..dsl import disk_cache
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


def _key(spec: Spec, choices: dict, overrides: dict | None = None) -> str:
    digest = hashlib.sha256(_engine_hash().encode())
    for source in spec.sources or [spec.path]:
        digest.update(str(source).encode() + b"\0" + Path(source).read_bytes())
    digest.update(repr(sorted(choices.items())).encode())
    if overrides:
        digest.update(repr(sorted(overrides.items())).encode())
    return digest.hexdigest()[:32]


def compile_cached(spec: Spec, overrides: dict | None = None, **choices) -> Model:
    folder = disk_cache.cache_dir("models")
    if folder is None:
        return compile_spec(spec, overrides, **choices)
    try:
        path = folder / f"{_key(spec, choices, overrides)}.pickle"
    except OSError:
        return compile_spec(spec, overrides, **choices)
    model = disk_cache.load(path)
    if model is not None:
        model.spec = spec
        return model
    model = compile_spec(spec, overrides, **choices)   # errors propagate and are never cached
    # the graph is derived from the ops and the spec is loaded anyway: store neither
    disk_cache.store(path, dataclasses.replace(model, graph_=None, spec=None))
    return model
