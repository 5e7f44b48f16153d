"""The support code printed closed forms call (see compiler/lanes/codegen.py), as text.

Kept apart from the printer so that running printed code needs no sympy: these
are plain integer formulas."""

# The pattern sums (compiler/schema/patterns.py) as integer formulas; Python's // floors
# toward -inf, which the prefix identities need. Tests check them against patterns.py.
PYTHON_PRELUDE = '''\
from fractions import Fraction as _Fraction


def _q(n, d):
    """n / d exactly: an int when d divides n, else a Fraction."""
    if type(n) is int and type(d) is int and n % d == 0:
        return n // d
    r = _Fraction(n, d)
    return r.numerator if r.denominator == 1 else r


def _n(x):
    """An integral Fraction as an int (every other value unchanged)."""
    return x.numerator if type(x) is _Fraction and x.denominator == 1 else x


def _undefined():
    raise ValueError("the closed form is undefined at this point")


def _window_prefix(n, w):
    if w is None or n <= w:
        return n * (n + 1) // 2
    return w * (w + 1) // 2 + w * (n - w)


def _wp(a, b, w, f):
    """window_pairs(a, b, w, f) = sum over t in [a, b) of min(t - f + 1, w)."""
    if (w is not None and w < 1) or a > b or f > a:
        raise ValueError(f"window_pairs({a}, {b}, {w}, {f}): need w >= 1, a <= b, f <= a")
    return _window_prefix(b - f, w) - _window_prefix(a - f, w)


def _floor_prefix(n, r):
    q = n // r
    return r * q * (q - 1) // 2 + q * (n - q * r + 1)


def _capped_prefix(n, r, cap):
    if cap is None:
        return _floor_prefix(n, r)
    m = cap * r - 1
    return _floor_prefix(min(n, m), r) + cap * max(0, n - m)


def _cp(a, b, r, cap):
    """compressed_pairs(a, b, r, cap) = sum over t in [a, b) of min(floor((t+1)/r), cap)."""
    if r < 1 or (cap is not None and cap < 0) or a > b:
        raise ValueError(f"compressed_pairs({a}, {b}, {r}, {cap}): need r >= 1, cap >= 0, a <= b")
    return _capped_prefix(b, r, cap) - _capped_prefix(a, r, cap)
'''

# Element-wise versions over numpy int64 arrays, bound to _np by the caller. They
# do not validate (a lane of an unselected branch may hold anything); the sweep
# checks validity against the exact path.
VECTOR_PRELUDE = '''\


def _undefined_v():
    raise ValueError("the closed form is undefined at this point")


def _window_prefix_v(n, w):
    if w is None:
        return n * (n + 1) // 2
    return _where(n <= w, n * (n + 1) // 2, w * (w + 1) // 2 + w * (n - w))


def _wp_v(a, b, w, f):
    return _window_prefix_v(b - f, w) - _window_prefix_v(a - f, w)


def _capped_prefix_v(n, r, cap):
    if cap is None:
        return _floor_prefix(n, r)
    m = cap * r - 1
    return _floor_prefix(_min(n, m), r) + cap * _max(0, n - m)


def _cp_v(a, b, r, cap):
    return _capped_prefix_v(b, r, cap) - _capped_prefix_v(a, r, cap)
'''

JS_PRELUDE = r'''// exact arithmetic for specc closed forms: BigInt integers, {n, d} rationals (d > 0, reduced)
const _R = (() => {
  const isInt = (x) => typeof x === "bigint";
  const babs = (x) => (x < 0n ? -x : x);
  const gcd = (a, b) => { a = babs(a); b = babs(b); while (b) { [a, b] = [b, a % b]; } return a; };
  const num = (x) => (isInt(x) ? x : x.n);
  const den = (x) => (isInt(x) ? 1n : x.d);
  // floor(n / d) for BigInt (BigInt division truncates toward zero)
  const fdiv = (n, d) => { if (d < 0n) { n = -n; d = -d; } const q = n / d; return (n % d !== 0n && n < 0n) ? q - 1n : q; };
  const q = (a, b) => {
    let n = num(a) * den(b), d = den(a) * num(b);
    if (d === 0n) throw new RangeError("division by zero");
    if (d < 0n) { n = -n; d = -d; }
    const g = gcd(n, d) || 1n;
    n /= g; d /= g;
    return d === 1n ? n : { n, d };
  };
  const add = (a, b) => (isInt(a) && isInt(b) ? a + b : q(num(a) * den(b) + num(b) * den(a), den(a) * den(b)));
  const mul = (a, b) => (isInt(a) && isInt(b) ? a * b : q(num(a) * num(b), den(a) * den(b)));
  const neg = (a) => (isInt(a) ? -a : { n: -a.n, d: a.d });
  const cmp = (a, b) => { const x = num(a) * den(b), y = num(b) * den(a); return x < y ? -1 : x > y ? 1 : 0; };
  const floor = (a) => (isInt(a) ? a : fdiv(a.n, a.d));
  const ceil = (a) => neg(floor(neg(a)));
  const pow = (a, k) => { let r = 1n; for (let i = 0; i < k; i++) r = mul(r, a); return r; };
  const min = (a, b) => (cmp(a, b) <= 0 ? a : b);
  const max = (a, b) => (cmp(a, b) >= 0 ? a : b);
  const abs = (a) => (cmp(a, 0n) < 0 ? neg(a) : a);
  const mod = (a, b) => add(a, neg(mul(b, floor(q(a, b)))));
  const undefined_ = () => { throw new RangeError("the closed form is undefined at this point"); };
  const windowPrefix = (n, w) => (w === null || n <= w ? fdiv(n * (n + 1n), 2n) : fdiv(w * (w + 1n), 2n) + w * (n - w));
  const wp = (a, b, w, f) => {
    if ((w !== null && w < 1n) || a > b || f > a) throw new RangeError("window_pairs: need w >= 1, a <= b, f <= a");
    return windowPrefix(b - f, w) - windowPrefix(a - f, w);
  };
  const floorPrefix = (n, r) => { const k = fdiv(n, r); return fdiv(r * k * (k - 1n), 2n) + k * (n - k * r + 1n); };
  const cappedPrefix = (n, r, cap) => {
    if (cap === null) return floorPrefix(n, r);
    const m = cap * r - 1n;
    return floorPrefix(n < m ? n : m, r) + cap * (n - m > 0n ? n - m : 0n);
  };
  const cp = (a, b, r, cap) => {
    if (r < 1n || (cap !== null && cap < 0n) || a > b) throw new RangeError("compressed_pairs: need r >= 1, cap >= 0, a <= b");
    return cappedPrefix(b, r, cap) - cappedPrefix(a, r, cap);
  };
  const toString = (a) => (isInt(a) ? a.toString() : `${a.n}/${a.d}`);
  return { q, add, mul, neg, cmp, floor, ceil, pow, min, max, abs, mod, wp, cp, fdiv, toString, undefined: undefined_ };
})();
'''
