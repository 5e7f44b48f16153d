"""Units: one table is the single source of truth for every unit word.

A unit is an exact factor times a product of base dimensions. Base dimensions
are bytes, FLOPs, params, tokens and seconds; counts such as requests, layers,
rows or pairs are dimensionless labels. `B` is always bytes: billions are
written `billion` (or `e9`), so "8.19 billion params" and "16.38 GB" cannot be
confused."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .errors import SpecError

Dims = tuple  # sorted ((dimension, exponent), ...), exponents non-zero


def _dims(**exps) -> Dims:
    return tuple(sorted((k, v) for k, v in exps.items() if v))


@dataclass(frozen=True)
class Unit:
    factor: Fraction
    dims: Dims
    label: str

    def __mul__(self, other: "Unit") -> "Unit":
        return Unit(self.factor * other.factor, combine(self.dims, other.dims, 1), f"{self.label}·{other.label}")

    def __truediv__(self, other: "Unit") -> "Unit":
        return Unit(self.factor / other.factor, combine(self.dims, other.dims, -1), f"{self.label}/{other.label}")

    def __pow__(self, n: int) -> "Unit":
        return Unit(self.factor ** n, tuple((d, e * n) for d, e in self.dims), f"{self.label}^{n}")


def combine(a: Dims, b: Dims, sign: int) -> Dims:
    out = dict(a)
    for dim, exp in b:
        out[dim] = out.get(dim, 0) + sign * exp
    return tuple(sorted((d, e) for d, e in out.items() if e))


_SINGULAR = {"bytes": "byte", "tokens": "token", "params": "param", "FLOPs": "FLOP"}


def dims_name(dims: Dims) -> str:
    if not dims:
        return "a dimensionless count"
    num = [d if e == 1 else f"{d}^{e}" for d, e in dims if e > 0]
    # per one of a unit: bytes/token, FLOPs/param (a denominator is singular)
    den = [_SINGULAR.get(d, d) if e == -1 else f"{_SINGULAR.get(d, d)}^{-e}" for d, e in dims if e < 0]
    text = "·".join(num) or "1"
    return text + ("/" + "·".join(den) if den else "")


BYTES, FLOPS, PARAMS, TOKENS, SECONDS = (_dims(bytes=1), _dims(FLOPs=1), _dims(params=1),
                                         _dims(tokens=1), _dims(s=1))
NONE: Dims = ()

_DEC = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def _table() -> dict:
    table: dict[str, tuple[Fraction, Dims]] = {}
    for prefix, f in _DEC.items():
        table[prefix + "B"] = (Fraction(f), BYTES)
        for flop in ("FLOPs", "FLOP", "FLOPS"):
            table[prefix + flop] = (Fraction(f), FLOPS)
    for prefix, f in _BIN.items():
        table[prefix + "B"] = (Fraction(f), BYTES)
    table.update({
        "bytes": (Fraction(1), BYTES), "byte": (Fraction(1), BYTES),
        "params": (Fraction(1), PARAMS), "param": (Fraction(1), PARAMS),
        "parameters": (Fraction(1), PARAMS),
        "tokens": (Fraction(1), TOKENS), "token": (Fraction(1), TOKENS),
        "s": (Fraction(1), SECONDS), "ms": (Fraction(1, 1000), SECONDS),
        "us": (Fraction(1, 10**6), SECONDS), "µs": (Fraction(1, 10**6), SECONDS),
        # scale words (dimensionless); 'B' is never a billion
        "thousand": (Fraction(10**3), NONE), "million": (Fraction(10**6), NONE),
        "billion": (Fraction(10**9), NONE), "trillion": (Fraction(10**12), NONE),
        "%": (Fraction(1, 100), NONE), "x": (Fraction(1), NONE),
    })
    for label in ("request", "layer", "row", "pair", "entry", "entrie", "head", "step", "call",
                  "element", "expert", "block", "chunk", "position", "model", "read", "dim", "group",
                  "slot", "record", "instance", "time"):
        table[label] = table[label + "s"] = (Fraction(1), NONE)
    table.pop("entrie"), table.pop("entries")
    table["entry"] = table["entries"] = (Fraction(1), NONE)
    return table


UNITS = _table()


def unit(word: str, loc=None) -> Unit:
    if word not in UNITS:
        from .errors import did_you_mean

        raise SpecError(f"unknown unit '{word}'", loc, span=len(word), expected=did_you_mean(word, UNITS))
    factor, dims = UNITS[word]
    return Unit(factor, dims, word)


def unit_of_terms(numerator, denominator) -> Unit:
    """The Unit of a parsed quantity's unit terms (ast.UnitTerm tuples)."""
    result = Unit(Fraction(1), NONE, "")
    for term in numerator:
        result = result * unit(term.word, term.loc) ** term.power
    for term in denominator:
        result = result / unit(term.word, term.loc) ** term.power
    label = " ".join(t.word if t.power == 1 else f"{t.word}^{t.power}" for t in numerator)
    if denominator:
        label += "/" + "/".join(t.word for t in denominator)
    return Unit(result.factor, result.dims, label.strip())


# the unit a result is shown in by default, per dimension, and how to format it
DISPLAY = {BYTES: "B", FLOPS: "FLOPs", PARAMS: "params", TOKENS: "tokens", NONE: ""}
