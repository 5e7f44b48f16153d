"""Layer index sets as unions of arithmetic ranges, never as lists.

A spec writes `layers: 0..L-1`; with L = 10**9 a list would take gigabytes.
`LayerIndices` keeps the ranges as written (in order), so its size, membership
and length cost O(number of ranges), independent of the layer count. Iterating
it still yields every index (views that draw each layer do so explicitly)."""

from __future__ import annotations

from math import gcd


class LayerIndices:
    __slots__ = ("ranges", "_len")

    def __init__(self, ranges=()):
        self.ranges = tuple(r for r in ranges if len(r))
        self._len = sum(len(r) for r in self.ranges)

    @classmethod
    def of(cls, items) -> "LayerIndices":
        """From explicit indices (merged into ranges of consecutive runs)."""
        out, start, prev = [], None, None
        for x in items:
            x = int(x)
            if start is not None and x == prev + 1:
                prev = x
                continue
            if start is not None:
                out.append(range(start, prev + 1))
            start = prev = x
        if start is not None:
            out.append(range(start, prev + 1))
        return cls(out)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __contains__(self, x) -> bool:
        try:
            x = int(x)
        except (TypeError, ValueError):
            return False
        return any(x in r for r in self.ranges)

    def __iter__(self):
        for r in self.ranges:
            yield from r

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(i)
        for r in self.ranges:
            if i < len(r):
                return r[i]
            i -= len(r)
        raise IndexError(i)  # pragma: no cover

    def __eq__(self, other) -> bool:
        if isinstance(other, LayerIndices):
            return self.ranges == other.ranges or (self._len == other._len and list(self) == list(other))
        if isinstance(other, (tuple, list)):
            return self._len == len(other) and list(self) == list(other)
        if isinstance(other, (set, frozenset)):
            return self._len == len(other) and all(x in self for x in other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.ranges)

    def __repr__(self) -> str:
        parts = [f"{r.start}..{r.stop - r.step}" + (f" step {r.step}" if r.step != 1 else "") if len(r) > 1
                 else str(r.start) for r in self.ranges]
        return f"LayerIndices({', '.join(parts)})"

    def __reduce__(self):
        return (LayerIndices, (self.ranges,))

    def first_overlap(self) -> int | None:
        """An index two of the ranges share, or None (pairwise, in closed form)."""
        for i, a in enumerate(self.ranges):
            for b in self.ranges[i + 1:]:
                hit = _intersection(a, b)
                if hit is not None:
                    return hit
        return None


def _intersection(a: range, b: range) -> int | None:
    """The smallest common element of two increasing ranges (CRT on the steps)."""
    lo, hi = max(a.start, b.start), min(a[-1], b[-1])
    if lo > hi:
        return None
    g = gcd(a.step, b.step)
    if (b.start - a.start) % g:
        return None
    # solve x = a.start (mod a.step), x = b.start (mod b.step)
    step_b = b.step // g
    k = ((b.start - a.start) // g * pow(a.step // g, -1, step_b)) % step_b if step_b > 1 else 0
    x = a.start + k * a.step
    period = a.step * step_b
    if x < lo:
        x += -(-(lo - x) // period) * period
    return x if x <= hi else None


# ------------------------------------------------------------------ counting without listing
SMALL = 1 << 16      # up to this many indices a set may simply be listed (cheap, and exact in any case)


def ranges_of(layers) -> tuple:
    """The increasing ranges of any layer collection (LayerIndices, range, tuple, set)."""
    if isinstance(layers, LayerIndices):
        return layers.ranges
    if isinstance(layers, range):
        return (layers,) if len(layers) else ()
    return LayerIndices.of(sorted(int(x) for x in layers)).ranges


def count_le(r: range, x: int) -> int:
    """How many elements of the increasing range r are <= x."""
    if not len(r) or x < r.start:
        return 0
    return min(len(r), (x - r.start) // r.step + 1)


def count_between(r: range, lo: int, hi: int) -> int:
    return count_le(r, hi) - count_le(r, lo - 1) if lo <= hi else 0


def clip(r: range, lo: int, hi: int) -> range:
    """The elements of r within [lo, hi], as a range."""
    first = count_le(r, lo - 1)
    last = count_le(r, hi)
    return r[first:last] if last > first else range(0)


def union(*sets) -> LayerIndices:
    """The distinct indices of several layer collections, as pairwise disjoint ranges:
    identical ranges merged, unit-step ranges joined as intervals; whatever still
    overlaps is listed only when small (a ValueError otherwise: the caller names the limit)."""
    ranges = []
    for s in sets:
        ranges.extend(ranges_of(s))
    ranges = list(dict.fromkeys(ranges))                         # identical ranges once
    unit = sorted((r for r in ranges if r.step == 1 or len(r) == 1), key=lambda r: r.start)
    merged: list = []
    for r in unit:
        if merged and r.start <= merged[-1].stop:
            merged[-1] = range(merged[-1].start, max(merged[-1].stop, r[-1] + 1))
        else:
            merged.append(range(r.start, r[-1] + 1))
    out = LayerIndices(merged + [r for r in ranges if not (r.step == 1 or len(r) == 1)])
    if out.first_overlap() is None:
        return out
    if len(out) <= SMALL:
        return LayerIndices.of(sorted(set(out)))
    raise ValueError("overlapping stepped layer ranges too large to list")


def nth(disjoint: LayerIndices, k: int) -> int:
    """The k-th smallest (0-based) index of pairwise disjoint ranges (binary search on counts)."""
    lo = min(r.start for r in disjoint.ranges)
    hi = max(r[-1] for r in disjoint.ranges)
    while lo < hi:
        mid = (lo + hi) // 2
        if sum(count_le(r, mid) for r in disjoint.ranges) >= k + 1:
            hi = mid
        else:
            lo = mid + 1
    return lo


def rank(disjoint: LayerIndices, x: int) -> int:
    """How many indices of pairwise disjoint ranges are smaller than x."""
    return sum(count_le(r, x - 1) for r in disjoint.ranges)
