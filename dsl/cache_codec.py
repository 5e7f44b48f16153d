"""Cache entries as plain data: a tagged JSON encoding of the values the caches
keep (parse trees, YAML trees, compiled models, compiled-query stores).

Why not pickle: unpickling runs whatever callables the bytes name, so a cache
entry planted by someone else would run code as whoever runs specc. Here the
bytes can only name classes of this package (specc.*) that are plain records
(dataclasses, named tuples, slotted records) and sympy expression classes; a
record is rebuilt field by field without calling its constructor, an
expression by its class's constructor on decoded arguments (the same as
sympy's own unpickling). Anything else is refused with CacheFormatError and the
caller treats the entry as missing. Entries are authenticated besides (see
dsl/disk_cache), so this is a second wall, not the only one.

Encoding (JSON arrays are always tagged; strings, ints, floats, booleans and
null stand for themselves):
  ["l", ...] list    ["t", ...] tuple    ["s", ...] set    ["f", ...] frozenset
  ["d", k, v, ...] dict (any keys)       ["F", p, q] Fraction   ["r", a, b, s] range
  ["L", file, line, col, text] Loc       ["T", text, loc, quoted] YAML scalar
  ["M", loc, key_locs, k, v, ...] YAML mapping    ["S", loc, ...] YAML sequence
  ["o", "module:Class", name, value, ...] a record of this package
  ["y", "module:Class", args, kwargs] a sympy expression
  ["I", range, ...] a layer set (compiler/layerset.py), kept as ranges
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from fractions import Fraction


class CacheFormatError(ValueError):
    """An entry that is not what this codec writes (damaged, planted or from another version)."""


_CLASSES: dict = {}


def _class_name(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve(name: str, *, sympy_class: bool):
    """The class called `name`, only if it is one this codec may build."""
    found = _CLASSES.get((name, sympy_class))
    if found is not None:
        return found
    if not isinstance(name, str) or name.count(":") != 1:
        raise CacheFormatError(f"not a class name: {name!r}")
    module_name, qualname = name.split(":")
    allowed = ("sympy.", "specc.") if sympy_class else ("specc.",)
    if not module_name.startswith(allowed) or "." in qualname or qualname.startswith("_"):
        raise CacheFormatError(f"class {name} may not be built from a cache entry")
    try:
        cls = getattr(importlib.import_module(module_name), qualname)
    except (ImportError, AttributeError):
        raise CacheFormatError(f"no class {name}") from None
    if not isinstance(cls, type):
        raise CacheFormatError(f"{name} is not a class")
    if sympy_class:
        import sympy as sp

        if not issubclass(cls, sp.Basic):
            raise CacheFormatError(f"{name} is not a sympy expression class")
    elif not _is_record(cls):
        raise CacheFormatError(f"{name} is not a plain record")
    _CLASSES[(name, sympy_class)] = cls
    return cls


def _is_record(cls) -> bool:
    return (dataclasses.is_dataclass(cls) or getattr(cls, "_fields", None) is not None
            or (getattr(cls, "__slots__", None) is not None and getattr(cls, "__getstate__", None) is not None
                and cls.__module__.startswith("specc.")))


# ------------------------------------------------------------------ encoding
def _encode(value):
    # the common cases first: this runs once per node of every cached tree
    if value is None or value is True or value is False:
        return value
    cls = type(value)
    if cls is str or cls is int or cls is float:
        return value
    if cls is list:
        return ["l", *map(_encode, value)]
    if cls is tuple:
        return ["t", *map(_encode, value)]
    if cls is dict:
        return ["d", *_pairs(value)]
    from .errors import Loc
    from .yamlload import Map, Seq, Text

    if cls is Loc:
        return ["L", value.file, value.line, value.col, value.source_text]
    if cls is Text:
        return ["T", str(value), _encode(value.loc), value.quoted]
    if cls is Map:
        return ["M", _encode(value.loc), _encode(value.key_locs), *_pairs(value)]
    if cls is Seq:
        return ["S", _encode(value.loc), *map(_encode, value)]
    if cls is Fraction:
        return ["F", value.numerator, value.denominator]
    if cls is range:
        return ["r", value.start, value.stop, value.step]
    if cls is set or cls is frozenset:
        # sorted by encoding, so equal sets give equal entries
        items = sorted((_encode(v) for v in value), key=lambda e: json.dumps(e, sort_keys=True))
        return ["s" if cls is set else "f", *items]
    if cls.__name__ == "LayerIndices" and cls.__module__ == "specc.compiler.layerset":
        return ["I", *(_encode(r) for r in value.ranges)]     # ranges, never the indices
    if cls.__module__.startswith("sympy.") or _is_sympy(value):
        return _encode_sympy(value)
    if cls.__module__.startswith("specc.") and _is_record(cls):
        return ["o", _class_name(cls), *_record_fields(value)]
    raise CacheFormatError(f"cannot store a {cls.__name__}")


def _pairs(mapping):
    for key, item in mapping.items():
        yield _encode(key)
        yield _encode(item)


def _is_sympy(value) -> bool:
    import sys

    sp = sys.modules.get("sympy")
    return sp is not None and isinstance(value, sp.Basic)


def _record_fields(value):
    cls = type(value)
    if getattr(cls, "_fields", None) is not None:           # a named tuple
        names = cls._fields
    elif hasattr(value, "__dict__"):
        names = list(vars(value))
    else:
        names = [n for n in cls.__slots__ if hasattr(value, n)]
    for name in names:
        yield name
        yield _encode(getattr(value, name))


def _encode_sympy(value):
    import sympy as sp

    if not isinstance(value, sp.Basic):
        raise CacheFormatError(f"cannot store a {type(value).__name__}")
    # what sympy's own pickling keeps: the constructor's arguments
    kwargs: dict = {}
    if hasattr(value, "__getnewargs_ex__"):
        args, kwargs = value.__getnewargs_ex__()
    elif hasattr(value, "__getnewargs__"):
        args = value.__getnewargs__()
    else:
        args = value.args
    return ["y", _class_name(type(value)), [_encode(a) for a in args], _encode(dict(kwargs))]


# ------------------------------------------------------------------ decoding
def _decode(data):
    if type(data) is not list:
        if data is None or isinstance(data, (str, int, float, bool)):
            return data
        raise CacheFormatError("an untagged value")
    if not data:
        raise CacheFormatError("an empty array")
    tag, rest = data[0], data[1:]
    if tag == "l":
        return [_decode(v) for v in rest]
    if tag == "t":
        return tuple(_decode(v) for v in rest)
    if tag == "L":
        from .errors import Loc

        file, line, col, text = rest
        if not (isinstance(file, str) and type(line) is int and type(col) is int
                and (text is None or isinstance(text, str))):
            raise CacheFormatError("a malformed position")
        return Loc(file, line, col, text)
    if tag == "d":
        return dict(_decode_pairs(rest))
    if tag == "T":
        from .yamlload import Text

        text, loc, quoted = rest
        if not isinstance(text, str):
            raise CacheFormatError("a malformed YAML scalar")
        return Text(text, _decode(loc), bool(quoted))
    if tag == "M":
        from .yamlload import Map

        out = Map(_decode_pairs(rest[2:]))
        out.loc, out.key_locs = _decode(rest[0]), _decode(rest[1])
        return out
    if tag == "S":
        from .yamlload import Seq

        out = Seq(_decode(v) for v in rest[1:])
        out.loc = _decode(rest[0])
        return out
    if tag == "F":
        p, q = rest
        if type(p) is not int or type(q) is not int or q <= 0:
            raise CacheFormatError("a malformed fraction")
        return Fraction(p, q)
    if tag == "r":
        start, stop, step = rest
        if not (type(start) is int and type(stop) is int and type(step) is int and step):
            raise CacheFormatError("a malformed range")
        return range(start, stop, step)
    if tag == "s":
        return {_decode(v) for v in rest}
    if tag == "f":
        return frozenset(_decode(v) for v in rest)
    if tag == "o":
        return _decode_record(rest)
    if tag == "I":
        from ..compiler.layerset import LayerIndices

        ranges = [_decode(r) for r in rest]
        if not all(type(r) is range for r in ranges):
            raise CacheFormatError("a malformed layer set")
        return LayerIndices(ranges)
    if tag == "y":
        return _decode_sympy(rest)
    raise CacheFormatError(f"unknown tag {tag!r}")


def _decode_pairs(items):
    if len(items) % 2:
        raise CacheFormatError("a mapping with an odd number of items")
    for i in range(0, len(items), 2):
        yield _decode(items[i]), _decode(items[i + 1])


def _decode_record(rest):
    cls = _resolve(rest[0], sympy_class=False)
    values = dict(_decode_pairs(rest[1:]))
    if getattr(cls, "_fields", None) is not None:
        if set(values) != set(cls._fields):
            raise CacheFormatError(f"a {cls.__name__} with other fields")
        return cls(**values)
    allowed = ({f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls)
               else set(cls.__slots__))
    obj = object.__new__(cls)
    for name, value in values.items():
        if not isinstance(name, str) or (name not in allowed and (name.startswith("_") or not hasattr(obj, "__dict__"))):
            raise CacheFormatError(f"a {cls.__name__} with an unknown field {name!r}")
        object.__setattr__(obj, name, value)
    return obj


def _decode_sympy(rest):
    import sympy as sp

    name, args, kwargs = rest
    cls = _resolve(name, sympy_class=True)
    if type(args) is not list:
        raise CacheFormatError("malformed expression arguments")
    args = [_decode(a) for a in args]
    kwargs = _decode(kwargs)
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) and type(v) is bool
                                               for k, v in kwargs.items()):
        raise CacheFormatError("malformed expression keywords")
    # sympy turns a string argument into an expression by running it as Python: only
    # a symbol's name may be a string; everything else is an expression or an integer
    named = issubclass(cls, sp.Symbol)
    for arg in args:
        if not (isinstance(arg, sp.Basic) or type(arg) is int or (named and type(arg) is str)):
            raise CacheFormatError(f"a {cls.__name__} with an argument of type {type(arg).__name__}")
    if cls in (sp.Min, sp.Max):
        # kept unevaluated while compiling (see compiler/expressions.py): re-proving
        # them on load would cost more than the cache saves
        kwargs["evaluate"] = False
    try:
        return cls(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure means the entry is not ours
        raise CacheFormatError(f"cannot rebuild a {cls.__name__}: {exc}") from None


# ------------------------------------------------------------------ entry points
def dumps(value) -> bytes:
    """The plain-data encoding of `value` (CacheFormatError when it holds something else)."""
    try:
        return json.dumps(_encode(value), separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
    except (ValueError, RecursionError) as exc:
        raise CacheFormatError(str(exc)) from None


def loads(data: bytes):
    """The value encoded in `data`; CacheFormatError for anything this module did not write."""
    try:
        return _decode(json.loads(data.decode("utf-8")))
    except CacheFormatError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, UnicodeDecodeError) as exc:
        raise CacheFormatError(f"malformed entry: {type(exc).__name__}") from None
