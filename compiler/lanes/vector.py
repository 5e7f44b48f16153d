"""Running printed closed forms (codegen's `vector` target) over whole grids.

The same printed function runs in two namespaces:

* `bounds(source, ranges)` runs it on *intervals*: every operation returns an
  interval containing every value it can take over the grid, and the largest
  magnitude any intermediate value reaches is recorded. That is a proof, not a
  sample: when it stays below 2^62 the int64 run cannot overflow.
* `run(source, arrays)` runs it on numpy int64 arrays. An exact quotient that
  does not divide, or a rational constant, raises `NotInt64`: the caller then
  uses exact Python ints and Fractions instead.

Intervals are exact (Python ints), conservative (a product of two intervals
that come from one value is bounded as if independent), and a branch that
cannot be decided is bounded by the hull of both sides."""

from __future__ import annotations

from .codegen_prelude import PYTHON_PRELUDE, VECTOR_PRELUDE

LIMIT = 2 ** 62     # one bit of headroom below int64's 2^63


class NotInt64(ArithmeticError):
    """This grid needs exact Python arithmetic (a fraction, or values beyond int64)."""


# ------------------------------------------------------------------ intervals
class _Tracker:
    largest = 0


def _iv(x):
    return x if isinstance(x, Interval) else Interval(int(x), int(x))


class Interval:
    __slots__ = ("lo", "hi")

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        _Tracker.largest = max(_Tracker.largest, abs(lo), abs(hi))

    def __add__(self, o):
        o = _iv(o)
        return Interval(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __neg__(self):
        return Interval(-self.hi, -self.lo)

    def __sub__(self, o):
        return self + (-_iv(o))

    def __rsub__(self, o):
        return _iv(o) + (-self)

    def __mul__(self, o):
        o = _iv(o)
        c = (self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi)
        return Interval(min(c), max(c))

    __rmul__ = __mul__

    def __pow__(self, n):
        if not isinstance(n, int) or n < 1:
            raise NotInt64("power")
        c = (self.lo ** n, self.hi ** n)
        lo = 0 if (n % 2 == 0 and self.lo <= 0 <= self.hi) else min(c)
        return Interval(lo, max(c))

    def __floordiv__(self, o):
        o = _iv(o)
        if o.lo <= 0:
            raise NotInt64("division by an interval that may be zero or negative")
        c = (self.lo // o.lo, self.lo // o.hi, self.hi // o.lo, self.hi // o.hi)
        return Interval(min(c), max(c))

    def __rfloordiv__(self, o):
        return _iv(o) // self

    def __mod__(self, o):
        o = _iv(o)
        if o.lo <= 0:
            raise NotInt64("modulo by an interval that may be zero or negative")
        return Interval(0, o.hi - 1)

    def _cmp(self, o, op):
        o = _iv(o)
        # (can be true, can be false) over every pair of values
        if op == "<":
            return Truth(self.lo < o.hi, self.hi >= o.lo)
        if op == "<=":
            return Truth(self.lo <= o.hi, self.hi > o.lo)
        if op == "==":
            can_eq = self.lo <= o.hi and o.lo <= self.hi
            return Truth(can_eq, not (self.lo == self.hi == o.lo == o.hi))
        raise AssertionError(op)

    def __lt__(self, o):
        return self._cmp(o, "<")

    def __le__(self, o):
        return self._cmp(o, "<=")

    def __gt__(self, o):
        return _iv(o)._cmp(self, "<")

    def __ge__(self, o):
        return _iv(o)._cmp(self, "<=")

    def __eq__(self, o):  # noqa: D105 - element-wise, like numpy
        return self._cmp(o, "==")

    def __ne__(self, o):
        return _not(self._cmp(o, "=="))

    __hash__ = None


class Truth:
    """A condition over the grid: can it be true somewhere, false somewhere."""

    __slots__ = ("can_true", "can_false")

    def __init__(self, can_true, can_false):
        self.can_true, self.can_false = bool(can_true), bool(can_false)

    def __bool__(self):
        raise NotInt64("a printed function branched on a grid value")


def _truth(c):
    return c if isinstance(c, Truth) else Truth(bool(c), not bool(c))


def _hull(a, b):
    a, b = _iv(a), _iv(b)
    return Interval(min(a.lo, b.lo), max(a.hi, b.hi))


def _i_where(c, a, b):
    c = _truth(c)
    if not c.can_false:
        return a
    if not c.can_true:
        return b
    if isinstance(a, (Truth, bool)) or isinstance(b, (Truth, bool)):   # a choice between conditions
        a, b = _truth(a), _truth(b)
        return Truth(a.can_true or b.can_true, a.can_false or b.can_false)
    return _hull(a, b)


def _i_min(a, b):
    a, b = _iv(a), _iv(b)
    return Interval(min(a.lo, b.lo), min(a.hi, b.hi))


def _i_max(a, b):
    a, b = _iv(a), _iv(b)
    return Interval(max(a.lo, b.lo), max(a.hi, b.hi))


def _i_and(a, b):
    a, b = _truth(a), _truth(b)
    return Truth(a.can_true and b.can_true, a.can_false or b.can_false)


def _i_or(a, b):
    a, b = _truth(a), _truth(b)
    return Truth(a.can_true or b.can_true, a.can_false and b.can_false)


def _not(a):
    a = _truth(a)
    return Truth(a.can_false, a.can_true)


def _i_abs(a):
    a = _iv(a)
    if a.lo >= 0:
        return a
    if a.hi <= 0:
        return -a
    return Interval(0, max(-a.lo, a.hi))


def _i_q(n, d):
    d = _iv(d)
    if d.lo <= 0:
        raise NotInt64("division by an interval that may be zero or negative")
    return _iv(n) // d + Interval(0, 1)   # the exact quotient, floored or not


def _i_rat(p, q):
    raise NotInt64("a rational constant")


def _undefined():
    # a closed form undefined somewhere: the exact lane evaluates (and reports) each point
    raise NotInt64("a branch without an otherwise")


def _exec(namespace: dict, source: str, name: str):
    ns = dict(namespace)
    exec(PYTHON_PRELUDE + VECTOR_PRELUDE, ns)  # noqa: S102 - the project's own support code
    ns.update(namespace)                        # the namespace's own versions win
    exec(source, ns)  # noqa: S102 - code printed by codegen from the engine's closed forms
    return ns[name]


_INTERVAL_NS = {"_where": _i_where, "_min": _i_min, "_max": _i_max, "_and": _i_and, "_or": _i_or,
                "_not": _not, "_abs": _i_abs, "_q": _i_q, "_rat": _i_rat, "_undefined_v": _undefined}


def bounds(source: str, ranges: list, name: str = "q") -> tuple[Interval, int]:
    """(interval of the result, largest magnitude of any intermediate) over the
    box `ranges` = [(lo, hi), ...] of the function's arguments."""
    fn = _exec(_INTERVAL_NS, source, name)
    _Tracker.largest = 0
    result = _iv(fn(*[Interval(lo, hi) for lo, hi in ranges]))
    return result, _Tracker.largest


# ------------------------------------------------------------------ numpy
def _numpy_ns():
    import numpy as np

    def q(n, d):
        if (np.asarray(n % d) != 0).any():
            raise NotInt64("an exact quotient that is not an integer")
        return n // d

    def where(c, a, b):
        return np.where(c, a, b)

    return {"_where": where, "_min": np.minimum, "_max": np.maximum, "_and": np.logical_and,
            "_or": np.logical_or, "_not": np.logical_not, "_abs": np.abs, "_q": q, "_rat": _i_rat,
            "_undefined_v": _undefined}


def run(source: str, arrays: list, name: str = "q"):
    """The function over numpy int64 arrays (call `bounds` first: this does not
    check for overflow)."""
    import numpy as np

    fn = _exec(_numpy_ns(), source, name)
    with np.errstate(divide="ignore", invalid="ignore", over="raise"):
        out = fn(*arrays)
    return np.broadcast_to(np.asarray(out, dtype=np.int64), np.broadcast(*arrays).shape)
