"""Exact closed forms for the access-pattern sums that count attention work.

Counting attention work means summing, over query positions, how many keys
each query can see. The access patterns that occur in practice need only a
few sums, and each has an O(1) closed form:

* ``causal_pairs(S, P)``: causal attention, P new positions after S cached ones.
* ``rect_pairs(S, P)``: every new position sees all S + P positions.
* ``WindowPairs(a, b, w, f)``: sliding window of ``w`` keys; keys start at ``f``.
* ``CompressedPairs(a, b, r, cap)``: one compressed entry per ``r`` tokens, at
  most ``cap`` of them visible (top-k).
* ``range_sum(expr, var, lo, hi)``: sums over positions of sums of the atoms
  above, plus polynomials, in closed form.

All arithmetic is exact: sympy Integers and Rationals, or Python ints. There
are no floats, and no code loops over positions. The ``brute`` static methods
are the only loops, and they exist only to test the closed forms against.

``WindowPairs`` and ``CompressedPairs`` are sympy ``Function`` classes. With
symbolic arguments they stay as unevaluated calls and print as
``window_pairs(a, b, w, f)`` / ``compressed_pairs(a, b, r, cap)``. When every
argument is a number they evaluate to a ``sympy.Integer``. ``sympy.oo`` means
"no cap" (and, for ``w``, "no window").
"""

from __future__ import annotations

from typing import Optional

import sympy as sp

__all__ = [
    "NoClosedForm",
    "WindowPairs",
    "CompressedPairs",
    "causal_pairs",
    "rect_pairs",
    "range_sum",
    "window_pairs_int",
    "compressed_pairs_int",
    "SYMPY_LOCALS",
]


class NoClosedForm(ValueError):
    """``range_sum`` has no closed form for some sub-expression of its summand."""


# --------------------------------------------------------------------------
# Plain helpers
# --------------------------------------------------------------------------


def causal_pairs(S, P):
    """Causal query-key pairs of P new positions after S cached ones.

    New position i (1-based) sees the S cached keys and the i new keys up to
    and including itself: Σ_{i=1}^{P} (S + i) = P·S + P(P+1)/2.
    """
    S, P = sp.sympify(S), sp.sympify(P)
    return P * S + P * (P + 1) / 2


def rect_pairs(S, P):
    """Pairs when each of P new positions sees all S + P positions: P·(S + P)."""
    S, P = sp.sympify(S), sp.sympify(P)
    return P * (S + P)


# --------------------------------------------------------------------------
# Pure-integer closed forms (Python ints in, Python int out, O(1))
# --------------------------------------------------------------------------


def _window_prefix(n: int, w: Optional[int]) -> int:
    """H(n) = Σ_{u=1}^{n} min(u, w) for n ≥ 0 (w=None means no window).

    Up to u = w the terms are 1, 2, ..., w, which sum to w(w+1)/2. Each of the
    remaining n − w terms is w.
    """
    if w is None or n <= w:
        return n * (n + 1) // 2
    return w * (w + 1) // 2 + w * (n - w)


def window_pairs_int(a: int, b: int, w: Optional[int], f: int) -> int:
    """Σ_{t=a}^{b-1} min(t − f + 1, w) over Python ints (w=None: no window).

    Substitute u = t − f + 1. Then u runs over a−f+1 .. b−f, all ≥ 1 since
    f ≤ a, so the sum is H(b − f) − H(a − f) with H from ``_window_prefix``.
    """
    _check_window_ints(a, b, w, f)
    return _window_prefix(b - f, w) - _window_prefix(a - f, w)


def _floor_prefix(n: int, r: int) -> int:
    """F(n) = Σ_{u=1}^{n} ⌊u/r⌋, extended to every integer n.

    For n < 0 the extension is F(n) = −Σ_{u=n+1}^{0} ⌊u/r⌋. That is the unique
    extension with F(0) = 0 and F(n) − F(n−1) = ⌊n/r⌋ for every n, so range
    sums are differences F(b) − F(a) whatever the signs.

    Derivation: write n = q·r + s with q = ⌊n/r⌋ and 0 ≤ s < r. The values
    u = j·r .. j·r + r − 1 form block j, and every u in it has ⌊u/r⌋ = j.
    Blocks 0 .. q−1 are full and give r·(0 + 1 + ... + q−1) = r·q(q−1)/2.
    The partial block q holds u = q·r .. n, which is n − q·r + 1 values that
    each give q. (Block 0 starts at u = 0, but that term is 0.) Hence
        F(n) = r·q(q−1)/2 + q·(n − q·r + 1).
    The formula also gives the extension for negative n. Inside a block the
    step Φ(n) − Φ(n−1) is q. Across a block boundary (n = q·r) the step is
    [r·q(q−1)/2 + q] − [r·(q−1)(q−2)/2 + (q−1)·r] = q as well, and Φ(0) = 0.
    Python's // floors toward −∞, which is what these identities need.
    """
    q = n // r
    return r * q * (q - 1) // 2 + q * (n - q * r + 1)


def _capped_floor_prefix(n: int, r: int, cap: Optional[int]) -> int:
    """G(n) = Σ_{u=1}^{n} min(⌊u/r⌋, cap), extended to every integer n like F.

    ⌊u/r⌋ < cap ⟺ u ≤ M := cap·r − 1. Up to M the terms are uncapped, and
    beyond M each term is cap:
        G(n) = F(min(n, M)) + cap·max(0, n − M).
    This holds for cap = 0 (M = −1, where F(−1) = 0) and for negative n: the
    step G(n) − G(n−1) is ⌊n/r⌋ for n ≤ M and cap for n > M. cap=None means
    no cap (G = F).
    """
    if cap is None:
        return _floor_prefix(n, r)
    m = cap * r - 1
    return _floor_prefix(min(n, m), r) + cap * max(0, n - m)


def compressed_pairs_int(a: int, b: int, r: int, cap: Optional[int]) -> int:
    """Σ_{t=a}^{b-1} min(⌊(t+1)/r⌋, cap) over Python ints (cap=None: no cap).

    Substitute u = t + 1, which runs over a+1 .. b. The sum is then G(b) − G(a)
    with G from ``_capped_floor_prefix``. Any integer a works, including
    negative ones.
    """
    _check_compressed_ints(a, b, r, cap)
    return _capped_floor_prefix(b, r, cap) - _capped_floor_prefix(a, r, cap)


def _check_window_ints(a, b, w, f) -> None:
    if w is not None and w < 1:
        raise ValueError(f"window_pairs: window w must be >= 1, got {w}")
    if a > b:
        raise ValueError(f"window_pairs: need a <= b, got a={a}, b={b}")
    if f > a:
        raise ValueError(f"window_pairs: need f <= a (keys start at or before the first query), got f={f}, a={a}")


def _check_compressed_ints(a, b, r, cap) -> None:
    if r < 1:
        raise ValueError(f"compressed_pairs: ratio r must be >= 1, got {r}")
    if cap is not None and cap < 0:
        raise ValueError(f"compressed_pairs: cap must be >= 0 (or oo), got {cap}")
    if a > b:
        raise ValueError(f"compressed_pairs: need a <= b, got a={a}, b={b}")


# --------------------------------------------------------------------------
# Argument classification for the sympy Function classes
# --------------------------------------------------------------------------


def _numeric(x: sp.Expr, what: str, *, allow_oo: bool = False):
    """Classify an argument: an int, ``sp.oo`` (if allowed), or None if symbolic.

    Numeric arguments that are not integers raise ValueError. That covers
    Floats, Rationals and -oo, and it keeps floats out of the accounting.
    """
    if x.is_Integer:
        return int(x)
    if allow_oo and x is sp.oo:
        return sp.oo
    if x.is_number:
        kind = "an integer or oo" if allow_oo else "an integer"
        raise ValueError(f"{what} must be {kind}, got {x}")
    return None


def _difference(x: sp.Expr, y: sp.Expr) -> sp.Expr:
    """x − y, expanded only if the plain difference does not cancel to a number."""
    d = x - y
    if not d.is_number:
        d = sp.expand(d)
    return d


def _check_difference(d: sp.Expr, message: str) -> None:
    """Raise ValueError if d is a number that is not a non-negative integer."""
    if d.is_number and not (d.is_Integer and d >= 0):
        raise ValueError(f"{message} (difference is {d})")


class _PatternSum(sp.Function):
    """Shared behaviour: integer-valued, printed under a snake_case name."""

    _print_name = "?"

    def _eval_is_integer(self):
        return True

    def _sympystr(self, printer):
        return "%s(%s)" % (self._print_name, ", ".join(printer._print(x) for x in self.args))

    def _latex(self, printer):
        name = self._print_name.replace("_", r"\_")
        args = ", ".join(printer._print(x) for x in self.args)
        return r"\operatorname{%s}\left(%s\right)" % (name, args)


class WindowPairs(_PatternSum):
    """window_pairs(a, b, w, f) = Σ_{t=a}^{b-1} min(t − f + 1, w).

    Query positions t ∈ [a, b) each see a sliding window of the last w keys.
    Keys exist only from position f on, so query t sees min(t − f + 1, w) keys.
    Requirements: a ≤ b (the sum is 0 when a = b), w ≥ 1 (w = oo means no
    window, i.e. plain causal attention), and f ≤ a.

    With all arguments integers the result is an exact ``sympy.Integer``,
    computed in O(1) by ``window_pairs_int``. With b − a = 0 the result is 0,
    and with b − a = 1 it is ``Min(a − f + 1, w)``. Otherwise the call stays
    unevaluated.
    """

    _print_name = "window_pairs"

    @classmethod
    def eval(cls, a, b, w, f):
        na = _numeric(a, "window_pairs: a")
        nb = _numeric(b, "window_pairs: b")
        nw = _numeric(w, "window_pairs: w", allow_oo=True)
        nf = _numeric(f, "window_pairs: f")
        if nw is not None and nw is not sp.oo and nw < 1:
            raise ValueError(f"window_pairs: window w must be >= 1, got {w}")
        span = _difference(b, a)
        _check_difference(span, f"window_pairs: need a <= b, got a={a}, b={b}")
        _check_difference(_difference(a, f), f"window_pairs: need f <= a, got f={f}, a={a}")
        if None not in (na, nb, nw, nf):
            return sp.Integer(window_pairs_int(na, nb, None if nw is sp.oo else nw, nf))
        if span == 0:
            return sp.S.Zero
        if span == 1:
            return sp.Min(a - f + 1, w)
        return None

    def _eval_is_nonnegative(self):
        return True  # every term is at least 1 for valid arguments

    @staticmethod
    def brute(a: int, b: int, w, f: int) -> int:
        """Direct loop over positions, for tests only."""
        w = None if w is sp.oo else w
        return sum(t - f + 1 if w is None else min(t - f + 1, w) for t in range(a, b))


class CompressedPairs(_PatternSum):
    """compressed_pairs(a, b, r, cap) = Σ_{t=a}^{b-1} min(⌊(t+1)/r⌋, cap).

    One compressed entry is formed per r tokens. A query at position t has seen
    t + 1 tokens, so ⌊(t+1)/r⌋ entries exist for it, and it attends to at most
    cap of them (top-k). Requirements: a ≤ b (the sum is 0 when a = b), r ≥ 1,
    and cap ≥ 0 or cap = oo (no cap). Any integer a works.

    With all arguments integers (cap may be oo) the result is an exact
    ``sympy.Integer``, computed in O(1) by ``compressed_pairs_int``. With
    b − a = 0 the result is 0, and with b − a = 1 it is
    ``Min(floor((a+1)/r), cap)`` (``floor((a+1)/r)`` when cap = oo). Otherwise
    the call stays unevaluated.
    """

    _print_name = "compressed_pairs"

    @classmethod
    def eval(cls, a, b, r, cap):
        na = _numeric(a, "compressed_pairs: a")
        nb = _numeric(b, "compressed_pairs: b")
        nr = _numeric(r, "compressed_pairs: r")
        ncap = _numeric(cap, "compressed_pairs: cap", allow_oo=True)
        if nr is not None and nr < 1:
            raise ValueError(f"compressed_pairs: ratio r must be >= 1, got {r}")
        if ncap is not None and ncap is not sp.oo and ncap < 0:
            raise ValueError(f"compressed_pairs: cap must be >= 0 (or oo), got {cap}")
        span = _difference(b, a)
        _check_difference(span, f"compressed_pairs: need a <= b, got a={a}, b={b}")
        if None not in (na, nb, nr, ncap):
            return sp.Integer(compressed_pairs_int(na, nb, nr, None if ncap is sp.oo else ncap))
        if span == 0:
            return sp.S.Zero
        if span == 1:
            entries = sp.floor((a + 1) / r)
            return entries if cap is sp.oo else sp.Min(entries, cap)
        return None

    def _eval_is_nonnegative(self):
        a = self.args[0]
        if (a + 1).is_nonnegative:
            return True  # every term is then ⌊(t+1)/r⌋ ≥ 0 capped at cap ≥ 0
        return None

    @staticmethod
    def brute(a: int, b: int, r: int, cap) -> int:
        """Direct loop over positions, for tests only."""
        cap = None if cap is sp.oo else cap
        return sum((t + 1) // r if cap is None else min((t + 1) // r, cap) for t in range(a, b))


#: Names for ``sympy.sympify(text, locals=SYMPY_LOCALS)``, so printed
#: expressions parse back.
SYMPY_LOCALS = {"window_pairs": WindowPairs, "compressed_pairs": CompressedPairs}


# --------------------------------------------------------------------------
# range_sum
# --------------------------------------------------------------------------


def range_sum(expr, var, lo, hi):
    """Σ_{var=lo}^{hi-1} expr in closed form (lo and hi may be symbolic).

    ``expr`` must be a sum of terms ``coeff · atom``, where coeff is free of
    ``var`` and atom is one of:

    * free of var → ``hi − lo``;
    * ``var**k`` (so any polynomial) → (B_{k+1}(hi) − B_{k+1}(lo)) / (k+1),
      where B_n is the Bernoulli polynomial. This is Faulhaber's formula: it
      telescopes because B_{k+1}(x+1) − B_{k+1}(x) = (k+1)·x^k;
    * ``Min(var + c, w)`` → ``WindowPairs(lo, hi, w, 1 − c)``, since
      t − f + 1 = t + c when f = 1 − c;
    * ``floor((var + c)/r)`` → ``CompressedPairs(lo + c − 1, hi + c − 1, r, oo)``.
      With s = t + c − 1 we get ⌊(s+1)/r⌋ = ⌊(t+c)/r⌋, and s runs over
      lo+c−1 .. hi+c−2. A rational c is replaced by ⌊c⌋, which is exact for
      integer t because ⌊x/r⌋ = ⌊⌊x⌋/r⌋ for a positive integer r;
    * ``Min(floor((var + c)/r), cap)`` → the same with cap;
    * unit-span ``WindowPairs(var+α, var+α+1, w, f)`` / ``CompressedPairs(...)``
      left unevaluated, which are rewritten to their Min form first.

    Anything else raises ``NoClosedForm`` and names the offending sub-expression.
    Floats anywhere raise ValueError.
    """
    expr, lo, hi = sp.sympify(expr), sp.sympify(lo), sp.sympify(hi)
    for x in (expr, lo, hi):
        if x.has(sp.Float):
            raise ValueError(f"range_sum: floats are not allowed (in {x}); use integers or Rationals")
    if lo.is_Integer and hi.is_Integer and hi <= lo:
        # an empty range sums to 0 whatever the summand (a request of G = 1 has no decode step,
        # and its summand's conditions need not be decidable outside the range)
        return sp.Integer(0)
    # Hide every non-arithmetic node (Min, floor, pattern sums, ...) behind a
    # Dummy, so that expand distributes products over sums but never rewrites
    # anything inside a floor or a Min.
    table: dict = {}
    dependent: set = set()
    masked = _mask(expr, var, table, dependent)
    unmask = {d: e for e, d in table.items()}
    total = sp.S.Zero
    for term in sp.Add.make_args(sp.expand(masked)):
        coeff, atom = term.as_independent(var, *dependent, as_Add=False)
        total += coeff.xreplace(unmask) * _sum_atom(atom.xreplace(unmask), var, lo, hi, expr)
    return total


def _mask(e, var, table: dict, dependent: set):
    """Replace each outermost non-Add/Mul/Pow node of e by a Dummy.

    ``table`` maps node → Dummy. ``dependent`` collects the Dummies whose node
    contains var.
    """
    if e.is_Atom:
        return e
    if isinstance(e, (sp.Add, sp.Mul, sp.Pow)):
        return e.func(*[_mask(x, var, table, dependent) for x in e.args])
    if e not in table:
        table[e] = sp.Dummy("atom")
        if e.has(var):
            dependent.add(table[e])
    return table[e]


def _no_closed_form(atom, var, whole, why: str = "") -> NoClosedForm:
    extra = f" ({why})" if why else ""
    return NoClosedForm(f"range_sum: no closed form for the sum over {var} of {atom}{extra}, in {whole}")


def _power_sum(k: int, lo, hi):
    """Σ_{t=lo}^{hi-1} t**k via Bernoulli polynomials (exact, any integer lo ≤ hi)."""
    return sp.expand((sp.bernoulli(k + 1, hi) - sp.bernoulli(k + 1, lo)) / (k + 1))


def _sum_atom(atom, var, lo, hi, whole):
    """Closed-form Σ_{var=lo}^{hi-1} atom for one atom (see ``range_sum``)."""
    if not atom.has(var):
        return atom * (hi - lo)
    if atom == var:
        return _power_sum(1, lo, hi)
    if atom.is_Pow and atom.base == var and atom.exp.is_Integer and atom.exp > 0:
        return _power_sum(int(atom.exp), lo, hi)
    if isinstance(atom, (WindowPairs, CompressedPairs)):
        a, b = atom.args[0], atom.args[1]
        if _difference(b, a) != 1:
            raise _no_closed_form(atom, var, whole, "only unit-span pattern sums can be summed again")
        # Evaluating rewrites a unit span to its Min / floor form, which may
        # simplify further (e.g. floor(t + 1) = t + 1), so sum it from scratch.
        unit = atom.func(*atom.args)
        if isinstance(unit, (WindowPairs, CompressedPairs)):
            raise _no_closed_form(atom, var, whole)
        return range_sum(unit, var, lo, hi)
    if isinstance(atom, sp.floor):
        r, c = _floor_form(atom, var, whole)
        return CompressedPairs(lo + c - 1, hi + c - 1, r, sp.oo)
    if isinstance(atom, sp.Min) and len(atom.args) == 2:
        x, y = atom.args
        if x.has(var) and y.has(var):
            raise _no_closed_form(atom, var, whole, "both Min arguments depend on the index")
        g, bound = (x, y) if x.has(var) else (y, x)
        c = g - var
        if c.has(var):
            c = sp.expand(c)
        if not c.has(var):  # Min(var + c, w): a sliding window
            _require_integer(c, atom, var, whole)
            return _window_sum(lo, hi, bound, c)
        offset, core = g.as_independent(var, as_Add=True)  # Min(floor(X) + n, cap)
        if isinstance(core, sp.floor):
            _require_integer(offset, atom, var, whole)
            r, c = _floor_form(sp.floor(core.args[0] + offset, evaluate=False), var, whole)
            return CompressedPairs(lo + c - 1, hi + c - 1, r, bound)
    raise _no_closed_form(atom, var, whole)


def _window_sum(lo, hi, w, c):
    """Σ_{t=lo}^{hi-1} min(t + c, w).

    This is WindowPairs(lo, hi, w, 1 − c). When that call is known to be
    invalid (w = 0, or t + c < 1 at t = lo), use the identical
    CompressedPairs(lo + c − 1, hi + c − 1, 1, w) instead: with r = 1 and
    s = t + c − 1, min(⌊(s+1)/1⌋, w) = min(t + c, w), and it takes any start.
    """
    f = 1 - c
    start_ok = _difference(lo, f)
    if (w.is_number and w == 0) or (start_ok.is_number and start_ok < 0):
        return CompressedPairs(lo + c - 1, hi + c - 1, 1, w)
    return WindowPairs(lo, hi, w, f)


def _require_integer(x, atom, var, whole) -> None:
    if x.is_number and not x.is_Integer:
        raise _no_closed_form(atom, var, whole, f"offset {x} is not an integer")


def _floor_form(fl, var, whole):
    """Match floor(X) with X = (var + c)/r. Returns (r, c), with c an integer."""
    x = sp.expand(fl.args[0])
    m, lin = x.as_independent(var, as_Add=True)
    k = lin / var  # the coefficient 1/r of var
    if k.has(var) or k == 0:
        raise _no_closed_form(fl, var, whole, "floor argument is not linear in the index")
    r = 1 / k
    if r.is_number and not (r.is_Integer and r >= 1):
        raise _no_closed_form(fl, var, whole, f"divisor {r} is not a positive integer")
    c = sp.expand(m * r)
    if c.is_number:
        if not c.is_Rational:
            raise _no_closed_form(fl, var, whole, f"offset {c} is not rational")
        c = sp.floor(c)  # ⌊(t + c)/r⌋ = ⌊(t + ⌊c⌋)/r⌋ for integer t
    return r, c
