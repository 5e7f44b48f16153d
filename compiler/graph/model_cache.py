"""A persistent cache of compiled models, keyed by everything they depend on.

Compiling is the largest cost left once parses are cached (0.05–0.5 s per spec
and option choice). A compiled Model depends only on the spec file, the
libraries it imports, the option choices and the engine's own code, so it is
stored under a hash of exactly those (the engine's in the folder's name) and
reloaded as plain data (cache/codec; about ten times faster than compiling).
Where it lives, whom it trusts and how entries are written: cache/disk_cache."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from ...cache import disk_cache
from .build import Model, compile_spec
from ..schema.spec import Spec


def _key(spec: Spec, choices: dict, overrides: dict | None = None) -> str:
    digest = hashlib.sha256()
    for source in spec.sources or [spec.path]:
        # the bytes this Spec was parsed from, not the file as it is now (it may have been edited)
        parsed = spec.source_hashes.get(str(source)) if spec.source_hashes else None
        digest.update(str(source).encode() + b"\0" + (parsed.encode() if parsed else Path(source).read_bytes()))
    digest.update(repr(sorted(choices.items())).encode())
    if overrides:
        digest.update(repr(sorted(overrides.items())).encode())
    return digest.hexdigest()[:32]


def compile_cached(spec: Spec, overrides: dict | None = None, choices: dict | None = None) -> Model:
    choices = dict(choices or {})
    folder = disk_cache.cache_dir("models")
    if folder is None:
        return compile_spec(spec, overrides, choices)
    try:
        path = folder / f"{_key(spec, choices, overrides)}.json"
    except OSError:
        return compile_spec(spec, overrides, choices)
    model = disk_cache.load(path)
    if isinstance(model, Model):
        model.spec = spec
        return model
    model = compile_spec(spec, overrides, choices)   # errors propagate and are never cached
    # the graph is derived from the ops and the spec is loaded anyway: store neither
    disk_cache.store(path, dataclasses.replace(model, graph_=None, spec=None))
    return model
