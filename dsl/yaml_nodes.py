"""The nodes of a YAML tree as specc reads it: scalars are `Text` (a str that knows
where it came from), mappings `Map` (a dict that also remembers where each key was),
sequences `Seq`. Their own module, so that the cache codec can rebuild them without
importing the loader (which imports the cache)."""

from __future__ import annotations

from .errors import Loc


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
