"""Cache entries as plain data: a tagged JSON encoding of the values the caches
keep (parse trees, YAML trees, compiled models, compiled-query stores).

Why not pickle: unpickling runs whatever callables the bytes name, so a cache
entry planted by someone else would run code as whoever runs specc. Here the
bytes can only name classes of this package (specc.*) that are plain records
(dataclasses, named tuples, slotted records) and sympy expression classes; a
record is rebuilt field by field without calling its constructor, an
expression by its class's constructor on decoded arguments (as sympy's own
unpickling does), never from a string (sympy would parse it as Python).
Anything else is refused with CacheFormatError and the caller treats the entry
as missing. Entries are authenticated besides (see cache/disk_cache), so this is
a second wall, not the only one.

An entry is [FORMAT, classes, expressions, value]: `classes` names each class
once; `expressions` lists each distinct sympy subexpression once, after the
ones it is built from (a compiled model shares most of its subexpressions, so
each is stored and rebuilt once, as pickle's memo would). In `value` (JSON
arrays are always tagged; strings, ints, floats, booleans and null stand for
themselves):
  ["l", ...] list    ["t", ...] tuple    ["s", ...] set    ["f", ...] frozenset
  ["d", k, v, ...] dict (any keys)       ["F", p, q] Fraction   ["r", a, b, s] range
  ["L", file, line, col, text] Loc       ["T", text, loc, quoted] YAML scalar
  ["M", loc, key_locs, k, v, ...] YAML mapping    ["S", loc, ...] YAML sequence
  ["o", class, v1, v2, ...] a record of this package, its fields in declared order
  ["O", class, name, value, ...] a record with other attributes than its fields
  ["e", i] the i-th expression    ["I", range, ...] a layer set, kept as ranges
An expression is [class, [arg, ...], {keyword: bool}]."""

from __future__ import annotations

import importlib
import json
from fractions import Fraction

FORMAT = "specc-codec 2"


class CacheFormatError(ValueError):
    """An entry that is not what this codec writes (damaged, planted or from another version)."""


_CLASSES: dict = {}


def _class_name(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve(name, *, sympy_class: bool):
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


def _is_dataclass(cls) -> bool:
    # what dataclasses.is_dataclass checks, without importing dataclasses (and inspect) on the
    # warm path: a store read by `specc eval` holds slotted records, not dataclasses
    return getattr(cls, "__dataclass_fields__", None) is not None


def _is_record(cls) -> bool:
    return (_is_dataclass(cls) or getattr(cls, "_fields", None) is not None
            or (getattr(cls, "__slots__", None) is not None and getattr(cls, "__getstate__", None) is not None
                and cls.__module__.startswith("specc.")))


_FIELDS: dict = {}


def _field_names(cls) -> tuple:
    """A record class's fields in declared order (cached)."""
    names = _FIELDS.get(cls)
    if names is None:
        if getattr(cls, "_fields", None) is not None:
            names = tuple(cls._fields)
        elif _is_dataclass(cls):
            import dataclasses

            names = tuple(f.name for f in dataclasses.fields(cls))
        else:
            names = tuple(cls.__slots__)
        _FIELDS[cls] = names
    return names


# ------------------------------------------------------------------ encoding
class _Encoder:
    def __init__(self):
        self.classes: list = []
        self.class_index: dict = {}
        self.exprs: list = []
        self.expr_index: dict = {}
        from ..dsl.errors import Loc
        from ..dsl.yaml_nodes import Map, Seq, Text

        self.Loc, self.Map, self.Seq, self.Text = Loc, Map, Seq, Text

    def cls(self, cls) -> int:
        name = _class_name(cls)
        found = self.class_index.get(name)
        if found is None:
            found = self.class_index[name] = len(self.classes)
            self.classes.append(name)
        return found

    def encode(self, value):
        # the common cases first: this runs once per node of every cached tree
        if value is None or value is True or value is False:
            return value
        cls = type(value)
        if cls is str or cls is int or cls is float:
            return value
        enc = self.encode
        if cls is list:
            return ["l", *map(enc, value)]
        if cls is tuple:
            return ["t", *map(enc, value)]
        if cls is dict:
            return ["d", *self.pairs(value)]
        if cls is self.Loc:
            return ["L", value.file, value.line, value.col, value.source_text]
        if cls is self.Text:
            return ["T", str(value), enc(value.loc), value.quoted]
        if cls is self.Map:
            return ["M", enc(value.loc), enc(value.key_locs), *self.pairs(value)]
        if cls is self.Seq:
            return ["S", enc(value.loc), *map(enc, value)]
        if cls is Fraction:
            return ["F", value.numerator, value.denominator]
        if cls is range:
            return ["r", value.start, value.stop, value.step]
        if cls is set or cls is frozenset:
            # sorted by encoding, so equal sets give equal entries
            items = sorted(map(enc, value), key=lambda e: json.dumps(e, sort_keys=True))
            return ["s" if cls is set else "f", *items]
        if cls.__name__ == "LayerIndices" and cls.__module__ == "specc.compiler.schema.layerset":
            return ["I", *map(enc, value.ranges)]     # ranges, never the indices
        if cls.__module__.startswith("sympy.") or _is_sympy(value):
            return ["e", self.expr(value)]
        if cls.__module__.startswith("specc.") and _is_record(cls):
            return self.record(value)
        raise CacheFormatError(f"cannot store a {cls.__name__}")

    def pairs(self, mapping):
        enc = self.encode
        for key, item in mapping.items():
            yield enc(key)
            yield enc(item)

    def record(self, value):
        cls = type(value)
        names = _field_names(cls)
        if getattr(cls, "_fields", None) is not None:
            return ["o", self.cls(cls), *map(self.encode, value)]
        attrs = vars(value) if hasattr(value, "__dict__") else None
        if attrs is None:
            if all(hasattr(value, n) for n in names):
                return ["o", self.cls(cls), *(self.encode(getattr(value, n)) for n in names)]
            attrs = {n: getattr(value, n) for n in names if hasattr(value, n)}
        elif len(attrs) == len(names) and all(n in attrs for n in names):
            return ["o", self.cls(cls), *(self.encode(attrs[n]) for n in names)]
        return ["O", self.cls(cls), *self.pairs(attrs)]

    def expr(self, value) -> int:
        found = self.expr_index.get(value)
        if found is not None:
            return found
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
        for key, flag in kwargs.items():
            if type(flag) is not bool:
                raise CacheFormatError(f"a {type(value).__name__} with a keyword {key} that is not a flag")
        definition = [self.cls(type(value)), [self.encode(a) for a in args], dict(kwargs)]
        index = self.expr_index[value] = len(self.exprs)
        self.exprs.append(definition)
        return index


def _is_sympy(value) -> bool:
    import sys

    sp = sys.modules.get("sympy")
    return sp is not None and isinstance(value, sp.Basic)


# ------------------------------------------------------------------ decoding
class _Decoder:
    def __init__(self, classes: list):
        if type(classes) is not list:
            raise CacheFormatError("a malformed class table")
        self.names = classes
        self.records: dict = {}
        self.exprs: list = []

    def record_class(self, index):
        found = self.records.get(index)
        if found is None:
            if type(index) is not int or not 0 <= index < len(self.names):
                raise CacheFormatError("a record of no listed class")
            cls = _resolve(self.names[index], sympy_class=False)
            names = _field_names(cls)
            if getattr(cls, "_fields", None) is not None:
                kind = "tuple"
            else:      # instances with a __dict__ are filled through it; slotted ones by slot
                kind = "dict" if hasattr(object.__new__(cls), "__dict__") else "slots"
            found = self.records[index] = (cls, names, kind)
        return found

    def decode(self, data):
        if type(data) is not list:
            if data is None or isinstance(data, (str, int, float, bool)):
                return data
            raise CacheFormatError("an untagged value")
        if not data:
            raise CacheFormatError("an empty array")
        tag = data[0]
        dec = self.decode
        if tag == "o":
            cls, names, kind = self.record_class(data[1])
            values = [dec(v) for v in data[2:]]
            if len(values) != len(names):
                raise CacheFormatError(f"a {cls.__name__} with {len(values)} fields, not {len(names)}")
            if kind == "tuple":
                return cls(*values)
            obj = object.__new__(cls)
            if kind == "dict":
                obj.__dict__.update(zip(names, values))    # frozen dataclasses too: no __setattr__
            else:
                for name, value in zip(names, values):
                    object.__setattr__(obj, name, value)
            return obj
        if tag == "e":
            index = data[1] if len(data) == 2 else None
            if type(index) is not int or not 0 <= index < len(self.exprs):
                raise CacheFormatError("a reference to no expression")
            return self.exprs[index]
        if tag == "t":
            return tuple([dec(v) for v in data[1:]])
        if tag == "l":
            return [dec(v) for v in data[1:]]
        if tag == "L":
            from ..dsl.errors import Loc

            _, file, line, col, text = data
            if not (isinstance(file, str) and type(line) is int and type(col) is int
                    and (text is None or isinstance(text, str))):
                raise CacheFormatError("a malformed position")
            return Loc(file, line, col, text)
        if tag == "d":
            return dict(self.pairs(data, 1))
        if tag == "T":
            from ..dsl.yaml_nodes import Text

            _, text, loc, quoted = data
            if not isinstance(text, str):
                raise CacheFormatError("a malformed YAML scalar")
            return Text(text, dec(loc), bool(quoted))
        if tag == "M":
            from ..dsl.yaml_nodes import Map

            out = Map(self.pairs(data, 3))
            out.loc, out.key_locs = dec(data[1]), dec(data[2])
            return out
        if tag == "S":
            from ..dsl.yaml_nodes import Seq

            out = Seq(dec(v) for v in data[2:])
            out.loc = dec(data[1])
            return out
        if tag == "F":
            _, p, q = data
            if type(p) is not int or type(q) is not int or q <= 0:
                raise CacheFormatError("a malformed fraction")
            return Fraction(p, q)
        if tag == "r":
            _, start, stop, step = data
            if not (type(start) is int and type(stop) is int and type(step) is int and step):
                raise CacheFormatError("a malformed range")
            return range(start, stop, step)
        if tag == "I":
            from ..compiler.schema.layerset import LayerIndices

            ranges = [dec(r) for r in data[1:]]
            if not all(type(r) is range for r in ranges):
                raise CacheFormatError("a malformed layer set")
            return LayerIndices(ranges)
        if tag == "s":
            return {dec(v) for v in data[1:]}
        if tag == "f":
            return frozenset(dec(v) for v in data[1:])
        if tag == "O":
            cls, names, kind = self.record_class(data[1])
            if kind == "tuple":
                raise CacheFormatError("a named tuple with loose fields")
            obj = object.__new__(cls)
            allowed = set(names)
            for name, value in self.pairs(data, 2):
                if not isinstance(name, str) or (name not in allowed and (name.startswith("_") or kind != "dict")):
                    raise CacheFormatError(f"a {cls.__name__} with an unknown field {name!r}")
                object.__setattr__(obj, name, value)
            return obj
        raise CacheFormatError(f"unknown tag {tag!r}")

    def pairs(self, items, start: int):
        if (len(items) - start) % 2:
            raise CacheFormatError("a mapping with an odd number of items")
        dec = self.decode
        for i in range(start, len(items), 2):
            yield dec(items[i]), dec(items[i + 1])

    def build_exprs(self, definitions) -> None:
        import sympy as sp

        if type(definitions) is not list:
            raise CacheFormatError("a malformed expression table")
        sympy_classes: dict = {}
        for definition in definitions:
            if type(definition) is not list or len(definition) != 3:
                raise CacheFormatError("a malformed expression")
            index, args, kwargs = definition
            cls = sympy_classes.get(index)
            if cls is None:
                if type(index) is not int or not 0 <= index < len(self.names):
                    raise CacheFormatError("an expression of no listed class")
                cls = sympy_classes[index] = _resolve(self.names[index], sympy_class=True)
            if type(args) is not list or type(kwargs) is not dict or \
                    not all(type(v) is bool for v in kwargs.values()):
                raise CacheFormatError("malformed expression arguments")
            args = [self.decode(a) for a in args]
            # sympy turns a string argument into an expression by running it as Python: only
            # a symbol's name may be a string; everything else is an expression or an integer
            named = issubclass(cls, sp.Symbol)
            for arg in args:
                if not (isinstance(arg, sp.Basic) or type(arg) is int or (named and type(arg) is str)):
                    raise CacheFormatError(f"a {cls.__name__} with an argument of type {type(arg).__name__}")
            if cls is sp.Min or cls is sp.Max:
                # kept unevaluated while compiling (see compiler/schema/expressions.py): re-proving
                # them on load would cost more than the cache saves
                kwargs = dict(kwargs, evaluate=False)
            try:
                self.exprs.append(cls(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - any failure means the entry is not ours
                raise CacheFormatError(f"cannot rebuild a {cls.__name__}: {exc}") from None


# ------------------------------------------------------------------ entry points
def dumps(value) -> bytes:
    """The plain-data encoding of `value` (CacheFormatError when it holds something else)."""
    encoder = _Encoder()
    try:
        body = encoder.encode(value)
        return json.dumps([FORMAT, encoder.classes, encoder.exprs, body], separators=(",", ":"),
                          ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, RecursionError) as exc:
        raise CacheFormatError(str(exc)) from None


def loads(data: bytes):
    """The value encoded in `data`; CacheFormatError for anything this module did not write."""
    try:
        entry = json.loads(data.decode("utf-8"))
        if type(entry) is not list or len(entry) != 4 or entry[0] != FORMAT:
            raise CacheFormatError("not an entry of this format")
        decoder = _Decoder(entry[1])
        if entry[2]:
            decoder.build_exprs(entry[2])
        return decoder.decode(entry[3])
    except CacheFormatError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, UnicodeDecodeError,
            AttributeError) as exc:
        raise CacheFormatError(f"malformed entry: {type(exc).__name__}") from None
