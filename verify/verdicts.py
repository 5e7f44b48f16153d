"""The verdicts a claim can get, in report order (a module of its own so the
output formats need neither sympy nor the claim loader)."""

from ..dsl.limits import printing_exact

VERDICTS = ("PASS", "FAIL", "XFAIL", "XPASS", "ERROR")


def erratum_verdict(agrees: bool, erratum: str) -> tuple[str, str]:
    """(verdict, message) of a claim marked as its source's erratum: XFAIL when the
    computed value indeed disagrees, XPASS (an error) when it agrees after all."""
    if agrees:
        return "XPASS", "marked as an erratum, but the computed value agrees with the source"
    return "XFAIL", f"erratum: {erratum}"


def interval_verdict(value, low, high, display: str, unit_factor, unit_label: str, erratum) -> tuple[str, str]:
    """The one rule that judges a computed value against a printed number, for the symbolic
    lane (sympy numbers) and the fast lane (Fractions) alike: PASS when low <= value <= high,
    both ends accepted (a value exactly halfway prints as either neighbour under half-up or
    half-to-even rounding; low = high when the source's number is exact), else FAIL naming the
    interval; a claim marked as its source's erratum gets XFAIL/XPASS instead."""
    agrees = bool(low <= value) and bool(value <= high)
    if erratum is not None:
        return erratum_verdict(agrees, erratum)
    if agrees:
        return "PASS", ""
    return "FAIL", (f"computed {display} is outside [{limit_text(low, unit_factor, unit_label)}, "
                    f"{limit_text(high, unit_factor, unit_label)}]")


def limit_text(value, unit_factor, unit_label: str) -> str:
    """A bound of a claim's interval in the claim's unit, for messages (6 significant digits)."""
    return f"{float(value / unit_factor):,.6g} {unit_label}"


@printing_exact
def show_scaled(scaled, decimals: int, label: str) -> str:
    """A computed value already in the claim's unit (an exact Fraction), shown two
    digits finer than printed; an integer is shown as one (78,400 params, not 78,400.00)."""
    if scaled.denominator == 1:
        return f"{scaled.numerator:,} {label}".strip()
    digits = decimals + 2
    try:
        text = f"{float(scaled):,.{digits}f}" if digits < 12 else str(scaled)
    except OverflowError:                  # beyond a float's range: the exact fraction
        text = str(scaled)
    return f"{text} {label}".strip()
