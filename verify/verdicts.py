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
