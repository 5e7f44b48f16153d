"""Safe YAML loading that keeps the file, line and column of every node.

Scalars become `Text` (a str that knows where it came from), mappings `Map`
(a dict that also remembers where each key was) and sequences `Seq`.
Nothing is ever constructed beyond plain strings, so no YAML tag can run code;
every scalar is later parsed by specc's own grammars."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from . import disk_cache
from .errors import Loc, SpecError


class Text(str):
    """A YAML scalar with its source position. `col_of(i)` maps an offset in the
    string to a column in the file (exact for single-line plain/quoted scalars)."""

    loc: Loc
    quoted: bool

    def __new__(cls, value: str, loc: Loc, quoted: bool = False):
        obj = super().__new__(cls, value)
        obj.loc = loc
        obj.quoted = quoted
        return obj

    def loc_at(self, offset: int) -> Loc:
        return self.loc.shifted(offset + (1 if self.quoted else 0))

    def __getnewargs__(self):  # pickling (compiled-model cache)
        return (str(self), self.loc, self.quoted)


class Map(dict):
    loc: Loc
    key_locs: dict

    def key_loc(self, key: str) -> Loc:
        return self.key_locs.get(key, self.loc)


class Seq(list):
    loc: Loc


def _loc(mark, path: str, source_text: str | None) -> Loc:
    return Loc(path, mark.line + 1, mark.column + 1, source_text)


def _convert(node, path: str, source_text: str | None):
    loc = _loc(node.start_mark, path, source_text)
    if isinstance(node, yaml.ScalarNode):
        if node.tag == "tag:yaml.org,2002:null" or (node.style is None and node.value in ("", "~", "null")):
            return None
        return Text(node.value, loc, quoted=node.style in ("'", '"'))
    if isinstance(node, yaml.SequenceNode):
        out = Seq(_convert(item, path, source_text) for item in node.value)
        out.loc = loc
        return out
    if isinstance(node, yaml.MappingNode):
        out = Map()
        out.loc = loc
        out.key_locs = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecError("mapping keys must be plain names", _loc(key_node.start_mark, path, source_text))
            key = key_node.value
            if key in out:
                raise SpecError(f"duplicate key '{key}'", _loc(key_node.start_mark, path, source_text),
                                span=len(key), expected="each key once per mapping")
            out[key] = _convert(value_node, path, source_text)
            out.key_locs[key] = _loc(key_node.start_mark, path, source_text)
        return out
    raise SpecError(f"unsupported YAML node {node.tag}", loc)  # pragma: no cover


# libyaml parses about ten times faster; both keep line/column marks and load safely
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml_text(text: str, path: str, *, is_file: bool = True):
    """Parse YAML text into Text/Map/Seq nodes; YAML syntax errors become SpecErrors."""
    source_text = None if is_file else text
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = _loc(mark, path, source_text) if mark else Loc(path, 1, 1, source_text)
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(f"YAML syntax error: {problem}", loc,
                        expected="well-formed YAML (check indentation, colons and quotes)") from None
    if node is None:
        return None
    return _convert(node, path, source_text)


# loaded files by (path, size, mtime): every spec imports the same libraries
_FILES: dict = {}


def load_yaml_file(path: str | Path):
    """Load a YAML file (the returned nodes are shared between callers: treat
    them as read-only)."""
    path = Path(path)
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key in _FILES:
            return _FILES[key]
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read {path}: {exc.strerror}") from None
    _FILES[key] = _load_cached(text, str(path))
    return _FILES[key]


def _load_cached(text: str, path: str):
    """Converted trees are cached under a hash of the text, its path and the code
    that builds them (see disk_cache); errors are never cached."""
    folder = disk_cache.cache_dir("yaml")
    if folder is None:
        return load_yaml_text(text, path)
    here = Path(__file__)
    digest = hashlib.sha256(here.read_bytes() + here.with_name("errors.py").read_bytes()
                            + path.encode() + b"\0" + text.encode()).hexdigest()[:32]
    cached = folder / f"{digest}.pickle"
    tree = disk_cache.load(cached)
    if tree is None:
        tree = load_yaml_text(text, path)
        disk_cache.store(cached, tree)
    return tree
