"""The one table of input limits.

specc runs in CI on specs, claim files and queries other people write, so every
input is bounded: a file, a YAML tree, a number, an exponent, an expression, a
layer count. Each limit has a name; exceeding it is a located `SpecError` that
names the limit (`limit_error`), never a hang, a MemoryError or a traceback.
The values are generous for real models (the largest shipped file is ~0.3 MB,
the deepest expression ~12 levels, the largest layer count 128) and small
enough that the worst accepted input is answered in well under a second."""

from __future__ import annotations

from .errors import Loc, SpecError

# name -> (value, what it bounds)
LIMITS: dict[str, tuple[int, str]] = {
    "file_bytes": (8 * 2**20, "bytes in one spec, library, claim or config file"),
    "yaml_nodes": (400_000, "YAML nodes in one file, counting every alias expansion"),
    "yaml_alias_expansions": (2_000, "times YAML aliases (*name) are expanded in one file"),
    "yaml_depth": (64, "nesting depth of YAML mappings and lists"),
    "json_depth": (64, "nesting depth of a JSON config"),
    "text_chars": (4_000, "characters in one expression, op statement, quantity or query"),
    "expression_depth": (48, "nesting depth of brackets in one expression"),
    "expression_terms": (300, "operators in one expression"),
    "number_digits": (40, "digits in one number literal"),
    "number_exponent": (40, "size of the e-exponent of one number literal (1e40)"),
    "power_exponent": (256, "size of an exponent in a ** b"),
    "value_digits": (60, "decimal digits of a dimension value or a what-if override"),
    "exact_digits": (5_000, "decimal digits of an exact intermediate result (a power of a fraction)"),
    "layers": (10**12, "layer indices of a layer range (cost never grows with it)"),
    "enumerated_layers": (4_096, "layers of one stack entry whose parameters depend on `layer` "
                                 "(each such layer is evaluated on its own)"),
    "block_nesting": (32, "depth of blocks calling blocks"),
    "sweep_points": (4_000_000, "points of one `specc sweep` grid (the product of the axes' lengths)"),
}


def limit(name: str) -> int:
    return LIMITS[name][0]


def limit_error(name: str, loc: Loc | None, found=None, span: int = 1) -> SpecError:
    """The located error for an input over limit `name`."""
    value, what = LIMITS[name]
    shown = f" (found {found})" if found is not None else ""
    return SpecError(f"input exceeds the limit '{name}' = {value:,}: {what}{shown}", loc, span=span,
                     expected=f"at most {value:,} (limits are listed in dsl/limits.py and the README)")


def check_digits(value, loc: Loc | None, name: str = "value_digits", span: int = 1):
    """Raise when an exact integer or rational has more digits than limit `name`."""
    p = getattr(value, "p", None)
    q = getattr(value, "q", None)
    for part in (p, q):
        if part is not None and abs(int(part)).bit_length() > limit(name) * 3.33:
            raise limit_error(name, loc, span=span)


# Python refuses to turn an int of more than 4,300 digits into text (a guard against
# quadratic conversions of untrusted input). specc's own answers are bounded by the
# limits above (at most expression_terms factors of number_exponent digits, ~80,000
# digits), so printing them lifts that guard for the duration of the print only.
PRINTED_DIGITS = 200_000


def printing_exact(fn):
    """Run `fn` with Python's int-to-text limit raised to PRINTED_DIGITS (restored after)."""
    import functools
    import sys

    get = getattr(sys, "get_int_max_str_digits", None)
    if get is None:          # Python < 3.11 has no such limit
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        old = get()
        if 0 < old < PRINTED_DIGITS:
            sys.set_int_max_str_digits(PRINTED_DIGITS)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.set_int_max_str_digits(old)
    return wrapper
