"""The scenario symbols every cost is written in, and the names every spec
expression can use without declaring them."""

from __future__ import annotations

import sympy as sp

# Scenario symbols: B requests per call, S cached tokens, P new tokens,
# G generated tokens per request, H context length for state queries.
B, S, P, G, H = sp.symbols("B S P G H", integer=True, nonnegative=True)
SCENARIO = {"B": B, "S": S, "P": P, "G": G, "H": H}

# Derived names available in every cost expression.
DERIVED = {"n": S + P, "M": B * P}

# Bytes per element of common storage types (FP4 packs two values per byte).
DTYPE_BYTES = {
    "fp32": sp.Integer(4), "bf16": sp.Integer(2), "fp16": sp.Integer(2), "fp8": sp.Integer(1),
    "e4m3": sp.Integer(1), "e5m2": sp.Integer(1), "e8m0": sp.Integer(1), "fp4": sp.Rational(1, 2),
    "int4": sp.Rational(1, 2), "int8": sp.Integer(1), "int32": sp.Integer(4), "int64": sp.Integer(8),
}

# Names a spec may not redefine, because the engine gives them their meaning.
RESERVED = set(SCENARIO) | set(DERIVED) | {"layer", "start", "cnt", "m", "rows", "true", "false", "oo"}


def substitute(expr, mapping: dict):
    """expr with the symbols of `mapping` replaced. Pairs that map a symbol to itself
    are dropped first: xreplace rebuilds every node above a replaced symbol even when
    the replacement is the symbol itself, and rebuilding re-evaluates each Min/Max
    (sympy proves their arguments comparable), which made symbolic roofline forms
    minutes long."""
    changed = {k: v for k, v in mapping.items() if k is not v}
    return expr.xreplace(changed) if changed else expr


def model_env(model) -> dict:
    """The names a model's expressions can use: dtype widths, the scenario symbols and its dimensions."""
    env = dict(DTYPE_BYTES)
    env.update(SCENARIO)
    env.update(model.dims)
    return env
