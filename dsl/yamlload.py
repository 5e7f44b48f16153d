"""Safe YAML loading that keeps the file, line and column of every node.

Scalars become `Text` (a str that knows where it came from), mappings `Map`
(a dict that also remembers where each key was) and sequences `Seq`.
Nothing is ever constructed beyond plain strings, so no YAML tag can run code;
every scalar is later parsed by specc's own grammars."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import yaml

from ..cache import disk_cache
from .errors import Loc, SpecError
from .limits import limit, limit_error
from .yaml_nodes import Map, Seq, Text  # noqa: F401  (the node types, re-exported)


def _loc(mark, path: str, source_text: str | None) -> Loc:
    return Loc(path, mark.line + 1, mark.column + 1, source_text)


class _Budget:
    """Counts converted nodes and alias re-uses, so an alias bomb (a few lines
    that expand to billions of nodes) stops at a named limit."""

    def __init__(self):
        self.nodes = 0
        self.seen: set = set()
        self.aliases = 0


def _convert(node, path: str, source_text: str | None, budget: _Budget | None = None, depth: int = 0):
    loc = _loc(node.start_mark, path, source_text)
    budget = budget or _Budget()
    budget.nodes += 1
    if budget.nodes > limit("yaml_nodes"):
        raise limit_error("yaml_nodes", loc)
    if depth > limit("yaml_depth"):
        raise limit_error("yaml_depth", loc)
    if not isinstance(node, yaml.ScalarNode):
        if id(node) in budget.seen:   # the same composed node again: an alias
            budget.aliases += 1
            if budget.aliases > limit("yaml_alias_expansions"):
                raise limit_error("yaml_alias_expansions", loc)
        budget.seen.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        if node.tag == "tag:yaml.org,2002:null" or (node.style is None and node.value in ("", "~", "null")):
            return None
        return Text(node.value, loc, quoted=node.style in ("'", '"'))
    if isinstance(node, yaml.SequenceNode):
        out = Seq(_convert(item, path, source_text, budget, depth + 1) for item in node.value)
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
            out[key] = _convert(value_node, path, source_text, budget, depth + 1)
            out.key_locs[key] = _loc(key_node.start_mark, path, source_text)
        return out
    raise SpecError(f"unsupported YAML node {node.tag}", loc)  # pragma: no cover


# libyaml parses about ten times faster; both keep line/column marks and load safely
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml_text(text: str, path: str, *, is_file: bool = True):
    """Parse YAML text into Text/Map/Seq nodes; YAML syntax errors become SpecErrors."""
    source_text = None if is_file else text
    _check_text(text, path, source_text)
    try:
        if sum(map(text.count, _INDICATORS)) > _SCAN_ABOVE:
            _check_depth(text, path, source_text)
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = _loc(mark, path, source_text) if mark else Loc(path, 1, 1, source_text)
        problem = exc.problem or exc.context or "invalid YAML"
        if "maximum nesting depth" in problem:    # newer libyaml stops deep input itself, scanning ahead
            raise limit_error("yaml_depth", loc, found=f"libyaml: {problem}") from None
        raise SpecError(f"YAML syntax error: {problem}", loc,
                        expected="well-formed YAML (check indentation, colons and quotes)") from None
    except yaml.YAMLError as exc:   # e.g. a reader error on a control character
        raise SpecError(f"YAML error: {str(exc).splitlines()[0]}", Loc(path, 1, 1, source_text),
                        expected="UTF-8 YAML text") from None
    except RecursionError:
        raise limit_error("yaml_depth", Loc(path, 1, 1, source_text)) from None
    if node is None:
        return None
    try:
        return _convert(node, path, source_text)
    except RecursionError:  # pragma: no cover - yaml_depth stops it first
        raise limit_error("yaml_depth", Loc(path, 1, 1, source_text)) from None


_OPEN = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken,
         yaml.FlowSequenceStartToken)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


# Every nesting level of YAML starts at an indicator character of its own ('[', '{',
# '-', '?' or the ':' of its first key), so a text with at most _SCAN_ABOVE of them
# nests at most that deep: far below where libyaml's composer overflows the C stack
# (past 10,000 levels), and _convert enforces yaml_depth itself. Only a text with
# more is scanned first (the scan costs as much as composing).
_INDICATORS = "[{-?:"
_SCAN_ABOVE = 2000


def _check_depth(text: str, path: str, source_text):
    """Nesting depth from the token stream (flat, so it cannot overflow): libyaml's
    composer recurses per level and crashes the process on very deep input."""
    depth = 0
    for token in yaml.scan(text, Loader=_LOADER):
        if isinstance(token, _OPEN):
            depth += 1
            if depth > limit("yaml_depth"):
                raise limit_error("yaml_depth", _loc(token.start_mark, path, source_text))
        elif isinstance(token, _CLOSE):
            depth -= 1


def _offset_loc(text: str, offset: int, path: str, source_text) -> Loc:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Loc(path, line, col, source_text)


def _check_text(text: str, path: str, source_text):
    """Characters YAML would reject with a traceback-shaped message: NUL and other
    control characters, located at their line and column."""
    match = _CONTROL.search(text)
    if match:
        raise SpecError(f"control character U+{ord(match.group()):04X} in the text",
                        _offset_loc(text, match.start(), path, source_text),
                        expected="UTF-8 text without NUL or control characters (is this a binary file?)")


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def decode_bytes(data: bytes, path: str) -> str:
    """UTF-8 text of a file, or a located error saying what the bytes look like."""
    if len(data) > limit("file_bytes"):
        raise limit_error("file_bytes", Loc(path, 1, 1), found=f"{len(data):,} bytes")
    nul = [data[i:i + 1] == b"\0" for i in range(4)]
    wide = (nul[0] and nul[2] and not nul[1]) or (nul[1] and nul[3] and not nul[0])  # ASCII as UTF-16 BE / LE
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or wide:
        raise SpecError("the file is UTF-16 (or another wide encoding)", Loc(path, 1, 1, ""),
                        expected="UTF-8 text (re-save the file as UTF-8)")
    if b"\0" in data:
        at = data.index(b"\0")
        good = data[:at].decode("utf-8", errors="replace")
        loc = _offset_loc(good, len(good), path, "")
        raise SpecError(f"the file contains a NUL byte (offset {at}): it looks binary", loc,
                        expected="a UTF-8 text file")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[:exc.start].decode("utf-8", errors="replace")
        loc = _offset_loc(good, len(good), path, None)
        raise SpecError(f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                        Loc(path, loc.line, loc.col, ""),
                        expected="UTF-8 text (Latin-1 or binary files are not accepted; re-save as UTF-8)") from None


# loaded files by (path, size, mtime): every spec imports the same libraries
_FILES: dict = {}
# SHA-256 of the bytes each file's tree was parsed from, taken when they were read
# (a file edited afterwards must not lend its new hash to answers from the old text)
READ_HASHES: dict = {}


def load_yaml_file(path: str | Path):
    """Load a YAML file (the returned nodes are shared between callers: treat
    them as read-only)."""
    path = Path(path)
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key in _FILES:
            READ_HASHES[key[0]] = _FILES[key][1]
            return _FILES[key][0]
        if stat.st_size > limit("file_bytes"):
            raise limit_error("file_bytes", Loc(str(path), 1, 1), found=f"{stat.st_size:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read {path}: {exc.strerror}", Loc(str(path), 1, 1, "")) from None
    text = decode_bytes(data, str(path))
    digest = hashlib.sha256(data).hexdigest()
    _FILES[key] = (_load_cached(text, str(path)), digest)
    READ_HASHES[key[0]] = digest
    return _FILES[key][0]


def _load_cached(text: str, path: str):
    """Converted trees are cached under a hash of the text and its path, in a folder
    named by the engine's fingerprint (see disk_cache); errors are never cached."""
    folder = disk_cache.cache_dir("yaml")
    if folder is None:
        return load_yaml_text(text, path)
    digest = hashlib.sha256(path.encode() + b"\0" + text.encode()).hexdigest()[:32]
    cached = folder / f"{digest}.json"
    tree = disk_cache.load(cached)
    if not isinstance(tree, (Map, Seq, Text)):       # missing, or not the shape this code writes
        tree = load_yaml_text(text, path)
        disk_cache.store(cached, tree)
    return tree
