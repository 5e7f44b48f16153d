"""The scenario symbols every cost is written in, and the names every spec
expression can use without declaring them."""

from __future__ import annotations

from functools import lru_cache

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
    minutes long.

    The result is sympy's xreplace, node for node, but each (sub-expression, mapping)
    is rebuilt once per process (_SUBSTITUTED): the ops of a model share sub-expressions
    and the same mappings recur for every layout and format of a site export, and
    rebuilding a Min/Max costs milliseconds of proofs each time."""
    changed = {k: v for k, v in mapping.items() if k is not v}
    if not changed:
        return expr
    if not isinstance(expr, sp.Basic):
        return expr.xreplace(changed)
    global _SUBSTITUTED_NODES
    key = tuple(sorted(changed.items(), key=_name_of))
    memo = _SUBSTITUTED.get(key)
    if memo is None:
        if _SUBSTITUTED_NODES > _SUBSTITUTED_LIMIT:
            _SUBSTITUTED.clear()
            _SUBSTITUTED_NODES = 0
        memo = _SUBSTITUTED[key] = {}
    before = len(memo)
    result = _xreplace(expr, changed, memo)[0]
    _SUBSTITUTED_NODES += len(memo) - before
    return result


@lru_cache(maxsize=4096)
def at_length(expr, length):
    """expr at context length H = length: sympy's xreplace as it is (which rebuilds every node
    above H and so re-evaluates each Min/Max, even for H -> H), once per pair, since a site
    export asks the same state at every layout, format and knob."""
    return expr.xreplace({H: length})


def _name_of(item) -> str:
    # a symbol's name without sympy's printer (this runs for every substitution)
    return item[0].name if isinstance(item[0], sp.Symbol) else str(item[0])


# (symbol, replacement) pairs -> {node: (node replaced, whether it changed)}
_SUBSTITUTED: dict = {}
_SUBSTITUTED_NODES = 0
_SUBSTITUTED_LIMIT = 200_000
_PLAIN_XREPLACE = (sp.Basic._xreplace, sp.Atom._xreplace)


def _xreplace(node, rule: dict, memo: dict) -> tuple:
    """sympy's Basic._xreplace (1.14), remembering each node's result in `memo`."""
    found = memo.get(node)
    if found is not None:
        return found
    if getattr(type(node), "_xreplace", None) not in _PLAIN_XREPLACE:
        found = node._xreplace(rule)            # a class with its own rule: as sympy does it
    elif node in rule:
        found = rule[node], True
    else:
        args, changed = [], False
        for arg in node.args:
            if getattr(arg, "_xreplace", None) is not None:
                new, did = _xreplace(arg, rule, memo)
                args.append(new)
                changed |= did
            else:
                args.append(arg)
        found = (node.func(*args), True) if changed else (node, False)
    memo[node] = found
    return found


def model_env(model) -> dict:
    """The names a model's expressions can use: dtype widths, the scenario symbols and its dimensions."""
    env = dict(DTYPE_BYTES)
    env.update(SCENARIO)
    env.update(model.dims)
    return env
