"""A persistent cache of parse trees, like Python's .pyc files.

Parsing with Lark is the single largest cost of `specc verify` (thousands of
claim queries and op statements, ~1–3 ms each), and a parse depends only on the
text, the grammar rule and the grammar itself. So each tree is stored once,
positioned as if the text started at line 1, column 1 of an anonymous source,
and relocated to wherever the text really is when it is reused.

The cache lives in $SPECC_CACHE_DIR (default ~/.cache/specc) in a folder named
by the engine's fingerprint (grammar and code that builds trees included), one
file per source file, written atomically at exit; what it trusts and how entries
are stored: cache/disk_cache. Set SPECC_CACHE_DIR to an empty string to disable it."""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
from pathlib import Path

from ..dsl import ast
from . import disk_cache
from ..dsl.errors import Loc

ANON = "<anon>"
_HERE = Path(__file__).parent


def _cache_dir() -> Path | None:
    return disk_cache.cache_dir("parses")


class ParseCache:
    """Trees are kept in one shard per source file (plus one for texts that are
    not in a file), so a command reading one spec loads only that spec's trees."""

    def __init__(self):
        self.folder = _cache_dir()
        self.shards: dict = {}      # shard name -> {(text, start): tree}
        self.dirty: set = set()
        atexit.register(self.save)

    def _path(self, shard: str) -> Path:
        return self.folder / (hashlib.sha256(shard.encode()).hexdigest()[:24] + ".json")

    def _shard(self, shard: str) -> dict:
        trees = self.shards.get(shard)
        if trees is None:
            trees = disk_cache.load(self._path(shard)) if self.folder is not None else None
            trees = trees if isinstance(trees, dict) else {}     # a wrong-shaped entry is no entry
            self.shards[shard] = trees
        return trees

    def get(self, shard: str, text: str, start: str):
        return self._shard(shard).get((text, start))

    def put(self, shard: str, text: str, start: str, tree):
        self._shard(shard)[(text, start)] = tree
        self.dirty.add(shard)

    def save(self):
        if self.folder is None:
            return
        for shard in sorted(self.dirty):
            disk_cache.store(self._path(shard), self.shards[shard])
        self.dirty.clear()


_FIELDS: dict = {}


def relocate(node, to_loc):
    """A copy of an anonymous tree whose every Loc(line, col) is mapped by to_loc.
    (Nodes are frozen dataclasses; copies are built field by field, which is
    several times faster than dataclasses.replace.)"""
    if isinstance(node, tuple):
        return tuple(relocate(item, to_loc) for item in node)
    if not isinstance(node, ast.Node):
        return node
    cls = type(node)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    copy = object.__new__(cls)
    for name in names:
        value = getattr(node, name)
        if name == "loc":
            value = to_loc(value.line, value.col)
        elif isinstance(value, (ast.Node, tuple)):
            value = relocate(value, to_loc)
        object.__setattr__(copy, name, value)
    return copy


def anonymous_loc(line: int, col: int) -> Loc:
    return Loc(ANON, line, col)
