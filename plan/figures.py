"""Exact figures that carry the `specc eval` expression reproducing them.

A `Figure` is built from query atoms (a query text and its exact answer) and
numbers with + - * /; its `text` and its `value` are built from the same tree,
so `specc eval SPEC '<text>'` prints `value` (tests check it). Seconds enter
as `(1 s)`, so every text passes specc's unit check."""

from __future__ import annotations

from fractions import Fraction

from ..dsl.human import exact_text


def _number(v) -> str:
    v = Fraction(v)
    return str(v.numerator) if v.denominator == 1 else f"({v.numerator}/{v.denominator})"


class Figure:
    __slots__ = ("text", "value", "atomic")

    def __init__(self, text: str, value, atomic: bool = True):
        self.text, self.value, self.atomic = text, value, atomic

    @staticmethod
    def query(text: str, value) -> "Figure":
        return Figure(text, value)

    @staticmethod
    def number(v) -> "Figure":
        return Figure(_number(v), Fraction(v))

    @staticmethod
    def seconds(v=1) -> "Figure":
        return Figure(f"({_number(v)} s)" if v != 1 else "(1 s)", Fraction(v))

    def _wrap(self) -> str:
        return self.text if self.atomic else f"({self.text})"

    def _op(self, other, sym, fn, swap=False):
        other = other if isinstance(other, Figure) else Figure.number(other)
        a, b = (other, self) if swap else (self, other)
        return Figure(f"{a._wrap()} {sym} {b._wrap()}", fn(a.value, b.value), atomic=False)

    def __add__(self, o):
        return self._op(o, "+", lambda x, y: x + y)

    def __radd__(self, o):
        return self._op(o, "+", lambda x, y: x + y, swap=True)

    def __sub__(self, o):
        return self._op(o, "-", lambda x, y: x - y)

    def __rsub__(self, o):
        return self._op(o, "-", lambda x, y: x - y, swap=True)

    def __mul__(self, o):
        return self._op(o, "*", lambda x, y: x * y)

    def __rmul__(self, o):
        return self._op(o, "*", lambda x, y: x * y, swap=True)

    def __truediv__(self, o):
        return self._op(o, "/", lambda x, y: Fraction(x) / Fraction(y))

    def __rtruediv__(self, o):
        return self._op(o, "/", lambda x, y: Fraction(x) / Fraction(y), swap=True)

    @staticmethod
    def maximum(a: "Figure", b: "Figure") -> "Figure":
        return Figure(f"max({a.text}, {b.text})", max(a.value, b.value))

    @staticmethod
    def minimum(a: "Figure", b: "Figure") -> "Figure":
        return Figure(f"min({a.text}, {b.text})", min(a.value, b.value))

    def __float__(self):
        return float(self.value)

    def fits(self) -> bool:
        """Whether `specc eval` accepts the text (its input limits: length, operators, depth)."""
        from ..dsl.limits import limit
        from ..dsl.parser import BRACKET, OPERATOR

        if len(self.text) > limit("text_chars") or len(OPERATOR.findall(self.text)) > limit("expression_terms"):
            return False
        depth = most = 0
        for ch in BRACKET.findall(self.text):
            depth += 1 if ch in "([" else (-1 if ch in ")]" else 0)
            most = max(most, depth)
        return most <= limit("expression_depth")

    def to_json(self, unit: str) -> dict:
        v = self.value
        exact = exact_text(v)
        if self.fits():
            return {"value": float(v), "exact": exact, "unit": unit, "query": self.text}
        # a long prompt in many chunks, or a layout with many arguments: the expression
        # exceeds specc's input limits; its parts are the other figures, each with a query
        return {"value": float(v), "exact": exact, "unit": unit, "query": None,
                "expression": self.text, "note": "beyond specc eval's input limits (dsl/limits.py); "
                "built from the figures prefill_time, step_time and the traffic"}

    def __repr__(self):
        return f"<{self.text} = {float(self.value):.6g}>"
