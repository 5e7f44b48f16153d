"""Closed-form access-pattern sums, checked against brute-force enumeration."""

import time

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

try:
    from specc.compiler.schema import patterns
except ImportError:  # before the package is installed
    import importlib.util
    import pathlib

    _spec = importlib.util.spec_from_file_location(
        "patterns", pathlib.Path(__file__).parents[1] / "compiler" / "patterns.py"
    )
    patterns = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(patterns)

WindowPairs = patterns.WindowPairs
CompressedPairs = patterns.CompressedPairs
NoClosedForm = patterns.NoClosedForm
range_sum = patterns.range_sum
oo = sp.oo

CAPS = list(range(7)) + [oo]

a_, b_, w_, f_, r_, k_ = sp.symbols("a b w f r k", integer=True)
t = sp.Symbol("t", integer=True)
L, H = sp.symbols("L H", integer=True)


def _cap(c):
    return None if c is oo else c


# ---------------------------------------------------------------- brute force


def brute_range(fn, lo, hi):
    return sum(fn(x) for x in range(lo, hi))


# ----------------------------------------------------- exhaustive small inputs


def test_window_int_exhaustive():
    for b in range(-3, 41):
        for a in range(-3, b + 1):
            for w in list(range(1, 13)) + [oo]:
                for f in range(a - 6, a + 1):
                    assert patterns.window_pairs_int(a, b, _cap(w), f) == WindowPairs.brute(a, b, w, f), (a, b, w, f)


def test_compressed_int_exhaustive():
    for b in range(-3, 41):
        for a in range(-3, b + 1):
            for r in range(1, 10):
                for cap in CAPS:
                    got = patterns.compressed_pairs_int(a, b, r, _cap(cap))
                    assert got == CompressedPairs.brute(a, b, r, cap), (a, b, r, cap)


def test_window_sympy_class_grid():
    for b in range(0, 25, 3):
        for a in range(0, b + 1, 2):
            for w in (1, 2, 5, 12, oo):
                for f in (a, a - 1, a - 7):
                    got = WindowPairs(a, b, w, f)
                    assert isinstance(got, sp.Integer)
                    assert got == WindowPairs.brute(a, b, w, f)


def test_compressed_sympy_class_grid():
    for b in range(-1, 25, 3):
        for a in range(-1, b + 1, 2):
            for r in (1, 2, 3, 7):
                for cap in (0, 1, 3, oo):
                    got = CompressedPairs(a, b, r, cap)
                    assert isinstance(got, sp.Integer)
                    assert got == CompressedPairs.brute(a, b, r, cap)


def test_python_and_sympy_integer_args_agree():
    assert WindowPairs(3, 17, 4, 1) == WindowPairs(sp.Integer(3), sp.Integer(17), sp.Integer(4), sp.Integer(1))
    assert isinstance(WindowPairs(3, 17, 4, 1), sp.Integer)
    assert isinstance(CompressedPairs(0, 100, 4, oo), sp.Integer)
    assert isinstance(CompressedPairs(5, 5, 4, 2), sp.Integer)
    assert CompressedPairs(5, 5, 4, 2) == 0


# --------------------------------------------------- hypothesis, larger values


@settings(max_examples=150, deadline=None)
@given(
    a=st.integers(-1000, 100_000),
    n=st.integers(0, 100_000),
    w=st.one_of(st.integers(1, 200_000), st.just(oo)),
    back=st.integers(0, 100_000),
)
def test_window_property(a, n, w, back):
    b, f = a + n, a - back
    got = WindowPairs(a, b, w, f)
    assert isinstance(got, sp.Integer)
    assert got == WindowPairs.brute(a, b, w, f)


@settings(max_examples=150, deadline=None)
@given(
    a=st.integers(-1000, 100_000),
    n=st.integers(0, 100_000),
    r=st.integers(1, 5000),
    cap=st.one_of(st.integers(0, 3000), st.just(oo)),
)
def test_compressed_property(a, n, r, cap):
    b = a + n
    got = CompressedPairs(a, b, r, cap)
    assert isinstance(got, sp.Integer)
    assert got == CompressedPairs.brute(a, b, r, cap)


@settings(max_examples=100, deadline=None)
@given(S=st.integers(0, 50_000), P=st.integers(0, 50_000))
def test_causal_and_rect_pairs(S, P):
    assert patterns.causal_pairs(S, P) == sum(S + i for i in range(1, P + 1))
    assert patterns.rect_pairs(S, P) == P * (S + P)
    # Causal attention is an unbounded window whose keys start at 0.
    assert patterns.causal_pairs(S, P) == WindowPairs(S, S + P, oo, 0)


def test_causal_and_rect_pairs_symbolic():
    S, P = sp.symbols("S P")
    assert sp.expand(patterns.causal_pairs(S, P) - (P * S + P * (P + 1) / 2)) == 0
    assert sp.expand(patterns.rect_pairs(S, P) - P * (S + P)) == 0
    assert patterns.causal_pairs(S, P).subs({S: 3, P: 4}) == 3 * 4 + 10


def test_large_range_is_fast():
    start = time.perf_counter()
    w = WindowPairs(0, 2**40, 4096, 0)
    c = CompressedPairs(0, 2**40, 64, 2048)
    c2 = CompressedPairs(0, 2**40, 64, oo)
    assert time.perf_counter() - start < 0.5
    assert isinstance(w, sp.Integer) and isinstance(c, sp.Integer) and isinstance(c2, sp.Integer)
    n = 2**40
    assert w == 4096 * 4097 // 2 + 4096 * (n - 4096)
    assert c2 == patterns.compressed_pairs_int(0, n, 64, None)


# ------------------------------------------------------------ symbolic forms


def test_unit_span_rewrites():
    S = sp.Symbol("S", integer=True)
    assert WindowPairs(S, S + 1, w_, f_) == sp.Min(S - f_ + 1, w_)
    assert CompressedPairs(S, S + 1, r_, k_) == sp.Min(sp.floor((S + 1) / r_), k_)
    assert CompressedPairs(S, S + 1, r_, oo) == sp.floor((S + 1) / r_)
    assert CompressedPairs(S, S + 1, 4, oo) == sp.floor((S + 1) / 4)
    assert WindowPairs(S, S + 1, oo, 0) == S + 1
    # Unit span written differently: the span still simplifies to 1.
    assert WindowPairs(2 * S, 2 * (S + 1) - 1 - S + S, w_, 0) == sp.Min(2 * S + 1, w_)


def test_zero_span_is_zero():
    S = sp.Symbol("S", integer=True)
    assert WindowPairs(S, S, w_, f_) == 0
    assert CompressedPairs(S + 3, S + 3, r_, k_) == 0


def test_symbolic_stays_unevaluated_and_prints():
    e = WindowPairs(a_, a_ + 7, w_, f_)
    assert isinstance(e, WindowPairs)
    assert str(e) == "window_pairs(a, a + 7, w, f)"
    c = CompressedPairs(a_, b_, r_, oo)
    assert isinstance(c, CompressedPairs)
    assert str(c) == "compressed_pairs(a, b, r, oo)"
    assert str(2 * c + 1) == "2*compressed_pairs(a, b, r, oo) + 1"
    assert "window\\_pairs" in sp.latex(e)
    assert e.is_integer and c.is_integer


def test_printed_form_parses_back():
    a, b, w, f = sp.symbols("a b w f")
    e = WindowPairs(a, b, w, f) + 3 * CompressedPairs(a, b + 2, 4, oo)
    assert sp.sympify(str(e), locals=patterns.SYMPY_LOCALS) == e


def test_substitution_evaluates():
    e = WindowPairs(a_, b_, w_, f_)
    val = e.subs({a_: 5, b_: 40, w_: 6, f_: 2})
    assert isinstance(val, sp.Integer)
    assert val == WindowPairs.brute(5, 40, 6, 2)
    c = CompressedPairs(a_, b_, r_, k_).subs({a_: 0, b_: 1000, r_: 7, k_: 30})
    assert c == CompressedPairs.brute(0, 1000, 7, 30)


# ----------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "call",
    [
        lambda: WindowPairs(0, 5, 0, 0),  # w < 1
        lambda: WindowPairs(0, 5, -3, 0),
        lambda: WindowPairs(5, 4, 3, 0),  # a > b
        lambda: WindowPairs(2, 5, 3, 3),  # f > a
        lambda: WindowPairs(0, 5, sp.Rational(1, 2), 0),  # non-integer
        lambda: WindowPairs(0, 5.0, 3, 0),  # float
        lambda: WindowPairs(0, 5, -oo, 0),
        lambda: CompressedPairs(0, 5, 0, oo),  # r < 1
        lambda: CompressedPairs(0, 5, oo, oo),  # r must be finite
        lambda: CompressedPairs(0, 5, 2, -1),  # negative cap
        lambda: CompressedPairs(0, 5, 2, -oo),
        lambda: CompressedPairs(6, 5, 2, 3),  # a > b
        lambda: CompressedPairs(0, 5, sp.Rational(3, 2), 3),
        lambda: CompressedPairs(0.0, 5, 2, 3),
        lambda: patterns.window_pairs_int(0, 5, 0, 0),
        lambda: patterns.compressed_pairs_int(0, 5, 0, None),
    ],
)
def test_validation_errors(call):
    with pytest.raises(ValueError):
        call()


def test_validation_with_symbols():
    # Checks that need only the known parts still fire.
    with pytest.raises(ValueError, match="a <= b"):
        WindowPairs(a_, a_ - 1, w_, f_)
    with pytest.raises(ValueError, match="f <= a"):
        WindowPairs(a_, b_, w_, a_ + 1)
    with pytest.raises(ValueError, match="r must be"):
        CompressedPairs(a_, b_, 0, k_)
    with pytest.raises(ValueError, match="cap"):
        CompressedPairs(a_, b_, r_, -2)
    with pytest.raises(ValueError, match="a <= b"):
        CompressedPairs(a_ + 2, a_, r_, k_)
    with pytest.raises(ValueError, match="w must be"):
        WindowPairs(a_, b_, 0, f_)


# ------------------------------------------------------------------ range_sum


def _check_range_sum(expr, fn, lo, hi, subs=None, symbolic_bounds=True):
    """range_sum at integer bounds and at symbolic bounds substituted afterwards."""
    subs = subs or {}
    want = brute_range(fn, lo, hi)
    direct = range_sum(expr, t, lo, hi).subs(subs)
    assert direct == want, (expr, lo, hi)
    assert direct.is_Integer
    if not symbolic_bounds:
        return
    symbolic = range_sum(expr, t, L, H)
    assert not symbolic.has(t)
    assert symbolic.subs(subs).subs({L: lo, H: hi}) == want, (expr, lo, hi)


bounds = st.tuples(st.integers(-50, 300), st.integers(0, 300)).map(lambda p: (p[0], p[0] + p[1]))


@settings(max_examples=60, deadline=None)
@given(lo_hi=bounds, c=st.integers(-20, 20), k=st.integers(-5, 5))
def test_range_sum_constant_and_polynomial(lo_hi, c, k):
    lo, hi = lo_hi
    _check_range_sum(sp.Integer(c), lambda x: c, lo, hi)
    expr = 3 * t**3 - k * t**2 + c * t + 7
    _check_range_sum(expr, lambda x: 3 * x**3 - k * x**2 + c * x + 7, lo, hi)
    # A factored polynomial is expanded.
    _check_range_sum((t + c) * (t - k), lambda x: (x + c) * (x - k), lo, hi)


@settings(max_examples=60, deadline=None)
@given(lo_hi=bounds, c=st.integers(0, 20), w=st.integers(1, 40), m=st.integers(-3, 3))
def test_range_sum_window(lo_hi, c, w, m):
    lo, hi = lo_hi
    lo = max(lo, 1 - c)  # keys exist: t + c >= 1
    hi = max(hi, lo)
    _check_range_sum(sp.Min(t + c, w), lambda x: min(x + c, w), lo, hi)
    _check_range_sum(m * sp.Min(w, t + c) + 2, lambda x: m * min(x + c, w) + 2, lo, hi)


@settings(max_examples=60, deadline=None)
@given(lo_hi=bounds, c=st.integers(-20, 20), w=st.integers(0, 40))
def test_range_sum_window_any_start(lo_hi, c, w):
    # Where t + c < 1 or w = 0 the sum is still exact (CompressedPairs fallback).
    # Only for integer bounds: with symbolic ones the result is a WindowPairs,
    # which requires t + c >= 1 once the bounds are substituted.
    lo, hi = lo_hi
    _check_range_sum(sp.Min(t + c, w), lambda x: min(x + c, w), lo, hi, symbolic_bounds=False)


def test_range_sum_window_symbolic_parameters():
    expr = sp.Min(t + 1, w_)
    got = range_sum(expr, t, 0, H)
    assert got == WindowPairs(0, H, w_, 0)
    assert got.subs({H: 100, w_: 7}) == brute_range(lambda x: min(x + 1, 7), 0, 100)


@settings(max_examples=60, deadline=None)
@given(lo_hi=bounds, c=st.integers(-20, 20), r=st.integers(1, 9), m=st.integers(-3, 3))
def test_range_sum_floor(lo_hi, c, r, m):
    lo, hi = lo_hi
    _check_range_sum(sp.floor((t + c) / r), lambda x: (x + c) // r, lo, hi)
    _check_range_sum(m * sp.floor((t + c) / r) + t, lambda x: m * ((x + c) // r) + x, lo, hi)


@settings(max_examples=60, deadline=None)
@given(
    lo_hi=bounds,
    c=st.integers(-20, 20),
    r=st.integers(1, 9),
    cap=st.integers(0, 12),
)
def test_range_sum_capped_floor(lo_hi, c, r, cap):
    lo, hi = lo_hi
    lo = max(lo, 1 - c)  # ⌊(t+c)/r⌋ >= 0 so the cap is the only bound
    hi = max(hi, lo)
    _check_range_sum(sp.Min(sp.floor((t + c) / r), cap), lambda x: min((x + c) // r, cap), lo, hi)
    _check_range_sum(sp.Min(cap, sp.floor((t + c) / r)), lambda x: min((x + c) // r, cap), lo, hi)


def test_range_sum_capped_floor_negative_values():
    # min(⌊(t+c)/r⌋, cap) with negative floors: every term stays exact.
    for lo in range(-15, 5, 2):
        for hi in range(lo, lo + 25, 3):
            for r in (1, 2, 5):
                for cap in (0, 2):
                    got = range_sum(sp.Min(sp.floor((t - 3) / r), cap), t, lo, hi)
                    assert got == brute_range(lambda x: min((x - 3) // r, cap), lo, hi)


def test_range_sum_floor_rational_offset():
    for lo in range(-5, 10):
        for hi in range(lo, lo + 30):
            assert range_sum(sp.floor((t + sp.Rational(5, 2)) / 3), t, lo, hi) == brute_range(
                lambda x: (2 * x + 5) // 6, lo, hi
            )
            assert range_sum(sp.floor((2 * t + 1) / 4), t, lo, hi) == brute_range(lambda x: (2 * x + 1) // 4, lo, hi)


def test_range_sum_floor_symbolic_ratio():
    got = range_sum(sp.floor((t + 1) / r_), t, L, H)
    assert got == CompressedPairs(L, H, r_, oo)
    assert got.subs({L: 0, H: 77, r_: 5}) == brute_range(lambda x: (x + 1) // 5, 0, 77)
    got = range_sum(sp.Min(sp.floor((t + 1) / r_), k_), t, 0, H)
    assert got.subs({H: 200, r_: 3, k_: 9}) == brute_range(lambda x: min((x + 1) // 3, 9), 0, 200)


@settings(max_examples=40, deadline=None)
@given(lo_hi=bounds, alpha=st.integers(0, 10), w=st.integers(1, 20), r=st.integers(1, 6), cap=st.integers(0, 8))
def test_range_sum_unit_span_pattern_sums(lo_hi, alpha, w, r, cap):
    lo, hi = lo_hi
    lo = max(lo, 0)
    hi = max(hi, lo)
    # Built with evaluate=False, as if they came out of another module unevaluated.
    wp = WindowPairs(t + alpha, t + alpha + 1, w, 0, evaluate=False)
    cp = CompressedPairs(t + alpha, t + alpha + 1, r, cap, evaluate=False)
    cp_oo = CompressedPairs(t + alpha, t + alpha + 1, r, oo, evaluate=False)
    assert isinstance(wp, WindowPairs) and isinstance(cp, CompressedPairs)
    _check_range_sum(wp, lambda x: min(x + alpha + 1, w), lo, hi)
    _check_range_sum(2 * cp + cp_oo, lambda x: 2 * min((x + alpha + 1) // r, cap) + (x + alpha + 1) // r, lo, hi)
    # The evaluated forms (Min / floor) give the same sums.
    _check_range_sum(WindowPairs(t + alpha, t + alpha + 1, w, 0), lambda x: min(x + alpha + 1, w), lo, hi)
    _check_range_sum(
        CompressedPairs(t + alpha, t + alpha + 1, r, cap), lambda x: min((x + alpha + 1) // r, cap), lo, hi
    )


def test_range_sum_mixed_expression_symbolic_bounds_and_coefficients():
    S = sp.Symbol("S", integer=True)
    expr = S * (sp.Min(t + 1, w_) + 2 * t) + 3 * sp.floor((t + 3) / 4) + sp.Min(sp.floor((t + 1) / 8), 5) + t**2
    got = range_sum(expr, t, L, H)
    vals = {S: 7, w_: 5}
    for lo, hi in [(0, 0), (0, 1), (2, 50), (10, 333)]:
        want = brute_range(lambda x: 7 * (min(x + 1, 5) + 2 * x) + 3 * ((x + 3) // 4) + min((x + 1) // 8, 5) + x * x, lo, hi)
        assert got.subs(vals).subs({L: lo, H: hi}) == want


def test_range_sum_symbolic_offset():
    # Min(t + S, w) with S symbolic: window whose keys start at 1 - S.
    S = sp.Symbol("S", integer=True)
    got = range_sum(sp.Min(t + S + 1, w_), t, 0, H)
    assert got == WindowPairs(0, H, w_, -S)
    assert got.subs({S: 4, H: 60, w_: 9}) == brute_range(lambda x: min(x + 5, 9), 0, 60)


def test_range_sum_unit_span_with_symbolic_shift():
    # A per-position term built from a symbolic prefix length S: position t sees
    # window_pairs(S + t, S + t + 1, w, 0) = min(S + t + 1, w).
    S = sp.Symbol("S", integer=True)
    term = WindowPairs(S + t, S + t + 1, w_, 0)
    got = range_sum(term, t, 0, H)
    assert got.subs({S: 10, H: 30, w_: 16}) == brute_range(lambda x: min(10 + x + 1, 16), 0, 30)
    assert got.subs({S: 10, H: 30, w_: 16}) == WindowPairs(10, 40, 16, 0)


@pytest.mark.parametrize(
    "expr, culprit",
    [
        (t * sp.Min(t + 1, 4), "t*Min(4, t + 1)"),
        (sp.Min(2 * t, 4), "Min(4, 2*t)"),
        (sp.Min(t + 1, t**2), "Min"),
        (sp.floor(t**2 / 3), "floor(t**2/3)"),
        (sp.floor(3 * t / 4), "floor(3*t/4)"),
        (sp.sin(t), "sin(t)"),
        (1 / (t + 1), "1/(t + 1)"),
        (2**t, "2**t"),
        (sp.Min(t + 1, 4) ** 2, "Min(4, t + 1)**2"),
        (WindowPairs(t, t + 2, 4, 0), "window_pairs(t, t + 2, 4, 0)"),
        (CompressedPairs(0, t, 4, oo), "compressed_pairs(0, t, 4, oo)"),
    ],
)
def test_range_sum_no_closed_form(expr, culprit):
    with pytest.raises(NoClosedForm) as info:
        range_sum(5 + expr, t, 0, 10)
    assert culprit in str(info.value)
    assert isinstance(info.value, ValueError)


def test_range_sum_does_not_expand_inside_atoms():
    # The argument of a var-free Min is left alone in the coefficient.
    S = sp.Symbol("S", integer=True)
    cap = sp.Min(S * (S + 1), 9)
    got = range_sum(cap * sp.Min(t + 1, 4), t, 0, H)
    assert got.has(cap)
    assert got.subs({S: 2, H: 20}) == 6 * brute_range(lambda x: min(x + 1, 4), 0, 20)


def test_power_sums_faulhaber():
    for k in range(0, 7):
        for lo in range(-6, 6):
            for hi in range(lo, lo + 12):
                assert range_sum(t**k, t, lo, hi) == brute_range(lambda x: x**k, lo, hi)


def test_range_sum_rejects_floats():
    with pytest.raises(ValueError, match="float"):
        range_sum(sp.Float("0.5") * t, t, 0, 10)
    with pytest.raises(ValueError, match="float"):
        range_sum(t, t, 0, 10.0)


def test_range_sum_over_an_empty_range_is_zero_whatever_the_summand():
    """A request of G = 1 has no decode step: the sum over its empty range is 0 even when the
    summand holds a condition no closed form covers (it crashed request_flops(G=1) on a spec
    whose compressor publishes only past the first tokens)."""
    L = sp.Symbol("L", integer=True, positive=True)
    odd = sp.Piecewise((1, sp.floor(L / 2 + sp.Rational(1, 2)) > 0), (0, True))
    assert range_sum(odd * L + 3, L, 1, 1) == 0
    assert range_sum(odd, L, 5, 2) == 0


def test_request_of_one_token_is_its_prefill():
    import specc

    m = specc.load("deepseek_v41")
    assert m.request_flops(B=1, S=0, P=1, G=1).value == m.flops(B=1, S=0, P=1).value
