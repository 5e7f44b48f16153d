"""Values as people read them: the one formatter of times (s, ms, µs, ns) for
`specc eval`, the API's printed results, plots and the explorer's Python side.

Exact values stay exact everywhere else (`--json`, `Result.value`, the claims);
this module only decides how a number is *shown*. A time is shown in the
largest unit in which it is at least 1 (13.654 ms, not 0.013654 s), rounded to
five significant digits, and the line says "≈" because it is rounded. Only the
standard library is imported: the CLI's fast lane prints with it."""

from __future__ import annotations

from fractions import Fraction

from .limits import printing_exact

# (label, seconds per unit), largest first; ns is the floor (a smaller time is shown in ns)
TIME_UNITS = (("s", Fraction(1)), ("ms", Fraction(1, 10 ** 3)), ("µs", Fraction(1, 10 ** 6)),
              ("ns", Fraction(1, 10 ** 9)))
SECONDS_LABELS = ("s", "seconds")


def time_unit(seconds) -> tuple[str, Fraction]:
    """(label, seconds per unit) of the largest unit in which |seconds| is at least 1."""
    size = abs(Fraction(seconds)) if not isinstance(seconds, float) else abs(seconds)
    for label, factor in TIME_UNITS:
        if size >= factor:
            return label, factor
    return TIME_UNITS[-1]


def human_seconds(seconds, digits: int = 5) -> str:
    """'13.654 ms', '2.1 s', '850.3 µs': a time in its readable unit, `digits` significant digits
    (a whole number of seconds of 100,000 or more is printed whole, with separators)."""
    if seconds == 0:
        return "0 s"
    label, factor = time_unit(seconds)
    scaled = float(Fraction(seconds) / factor) if not isinstance(seconds, float) else seconds / float(factor)
    if abs(scaled) >= 10 ** digits:
        return f"{scaled:,.0f} {label}"
    return f"{scaled:.{digits}g} {label}"


def approx_text(value) -> str:
    """'4.45314e+263': six significant digits of an exact rational, at any magnitude
    (decimal arithmetic: no float overflow above 1.8e308)."""
    from decimal import Context, Decimal

    number = value if isinstance(value, (int, Fraction)) else Fraction(int(value.p), int(value.q))
    frac = Fraction(number)
    try:
        return f"{float(frac):.6g}"
    except OverflowError:
        pass
    quotient = Context(prec=12).divide(Decimal(frac.numerator), Decimal(frac.denominator))
    mantissa, _, exponent = f"{quotient:.6g}".partition("E" if "E" in f"{quotient:.6g}" else "e")
    # the float style: e+409 (Decimal prints E+409 or e+409 by context; every lane prints alike)
    return f"{mantissa}e{exponent[0]}{int(exponent[1:]):02d}" if exponent else mantissa


def is_seconds(unit: str) -> bool:
    return unit in SECONDS_LABELS


def show(value, unit: str, extrapolated: bool, exact: bool = False) -> tuple[str, str]:
    """(relation, text) of one query's value as `specc eval` prints it after the query:
    ('=', '8,190,735,360 params'), ('=', '1/2  ≈ 0.5'), ('≈', '13.654 ms') for a time
    (exact=True: the exact fraction of seconds, as for any other quantity)."""
    if isinstance(value, bool):
        value = int(value)
    flag = "  (extrapolated)" if extrapolated else ""
    if not exact and is_seconds(unit) and isinstance(value, (int, Fraction)) and abs(value) < 10 ** 300:
        return "≈", f"{human_seconds(value)}{flag}"
    if isinstance(value, int):
        pretty, approx = f"{value:,}", ""
    elif isinstance(value, Fraction):
        pretty, approx = f"{value.numerator}/{value.denominator}", f"  ≈ {approx_text(value)}"
    else:
        pretty = str(value)
        approx = f"  ≈ {approx_text(value)}" if getattr(value, "is_Rational", False) else (
            f"  ≈ {float(value):.6g}" if getattr(value, "is_number", False) else "")
    return "=", f"{pretty} {unit}{approx}{flag}".rstrip()


def exact_json(value):
    """An exact value as `specc eval --json` writes it, for every lane's numbers (int, Fraction,
    sympy Integer/Rational): an int, "p/q" for any other rational, else the value's text."""
    if isinstance(value, bool):
        value = int(value)
    if type(value) is int:
        return value
    num, den = getattr(value, "numerator", None), getattr(value, "denominator", None)
    if type(num) is int and type(den) is int:
        return num if den == 1 else f"{num}/{den}"
    return str(value)


@printing_exact
def exact_text(value) -> str:
    """An exact value as text: the integer's digits or "p/q" (exact_json, always a string)."""
    return str(exact_json(value))
