"""Parsing entry points: Lark grammar (`specc.lark`) → `ast` nodes with positions.

Every parse takes a `Text` (a YAML scalar that knows its file position) or a
plain string with a pseudo-file name (`<query>`), so syntax errors point at the
exact column in the file the user edited."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
import re
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from . import ast
from .errors import Loc, SpecError
from .limits import limit, limit_error
from ..cache.parse_cache import ParseCache, anonymous_loc, relocate

_GRAMMAR = Path(__file__).with_name("specc.lark")
_WHAT = {
    "expr": "an expression",
    "stmt": "an op statement like `y = x @ W[d, f]` or `y = op(x; key=value)`",
    "quantity": "a number with a unit, like `133.6 TFLOPs` or `144 KiB/token`",
    "layer_set": "layer indices like `0..35` or `2, 8, 14`",
}


@lru_cache(maxsize=None)
def _parser() -> Lark:
    # cache=True keeps the built LALR tables in the temp dir: building them costs
    # more than parsing a whole spec
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", start=list(_WHAT),
                propagate_positions=True, maybe_placeholders=True, cache=True)


class _Source:
    """Maps (line, column) inside a parsed string to a Loc in its file."""

    def __init__(self, text: str, origin):
        self.text = text
        if hasattr(origin, "loc_at"):
            self.origin = origin
            self.base = None
        else:
            self.origin = None
            self.base = origin if isinstance(origin, Loc) else Loc(str(origin), 1, 1, text)

    def loc(self, line: int, column: int) -> Loc:
        if self.origin is not None:
            if line == 1:
                return self.origin.loc_at(column - 1)
            base = self.origin.loc
            return Loc(base.file, base.line + line - 1, column, base.source_text)
        if line == 1:
            return self.base.shifted(column - 1)
        return Loc(self.base.file, self.base.line + line - 1, column, self.base.source_text)


class _Anonymous:
    """A _Source that leaves lark's own (line, column) in place, for cached trees."""

    def __init__(self, text: str):
        self.text = text

    def loc(self, line: int, column: int) -> Loc:
        return anonymous_loc(line, column)


def _number(text: str) -> Fraction:
    return Fraction(text.replace("_", "").replace(",", ""))


class _ToAst:
    """Parse tree -> AST: one method per grammar rule (or alias), called with the
    rule's positions (meta) and its already converted children. A plain
    dispatcher rather than lark's Transformer, which re-wraps the method on
    every call: that was a third of the time of parsing a spec."""

    def __init__(self, source: _Source):
        self.src = source

    def transform(self, tree):
        # recursion depth is bounded: check_size limits the bracket depth first
        children = [self.transform(c) if isinstance(c, Tree) else c for c in tree.children]
        return getattr(self, tree.data)(tree.meta, *children)

    def _loc(self, meta) -> Loc:
        if getattr(meta, "empty", True):
            return self.src.loc(1, 1)
        return self.src.loc(meta.line, meta.column)

    def _tok_loc(self, tok: Token) -> Loc:
        return self.src.loc(tok.line, tok.column)

    # expressions
    def number(self, meta, tok):
        return ast.Num(self._loc(meta), _number(tok), str(tok))

    def quantity_literal(self, meta, num, unit):
        return ast.QuantityLit(self._loc(meta), _number(num), str(unit), f"{num} {unit}")

    def name(self, meta, tok):
        return ast.Name(self._loc(meta), str(tok))

    def keyword(self, meta, tok, value):
        return ast.Keyword(self._tok_loc(tok), str(tok), value)

    def arguments(self, meta, *items):
        return [i for i in items if i is not None]

    def op_arguments(self, meta, *items):
        return list(items)

    def call(self, meta, func, arguments):
        arguments = arguments or []
        args = tuple(a for a in arguments if not isinstance(a, ast.Keyword))
        kwargs = tuple(a for a in arguments if isinstance(a, ast.Keyword))
        return ast.Call(self._loc(meta), str(func), args, kwargs)

    def subscript(self, meta, name, *indices):
        return ast.Subscript(self._loc(meta), str(name), tuple(indices))

    def _bin(op):
        def build(self, meta, left, right):
            return ast.BinOp(self._loc(meta), op, left, right)
        return build

    add, sub, mul, div = _bin("+"), _bin("-"), _bin("*"), _bin("/")
    floordiv, mod, pow, and_, or_ = _bin("//"), _bin("%"), _bin("**"), _bin("and"), _bin("or")

    def neg(self, meta, operand):
        return ast.UnaryOp(self._loc(meta), "-", operand)

    def not_(self, meta, operand):
        return ast.UnaryOp(self._loc(meta), "not", operand)

    def compare(self, meta, left, op, right):
        return ast.Compare(self._loc(meta), str(op), left, right)

    def member(self, meta, item, set_name):
        return ast.Member(self._loc(meta), item, str(set_name))

    # statements
    def targets(self, meta, *names):
        return tuple(str(n) for n in names)

    def matmul(self, meta, x, weight, *shape):
        x_node = ast.Name(self._tok_loc(x), str(x))
        w_node = ast.Subscript(self._tok_loc(weight), str(weight), tuple(shape))
        return ("@", (x_node, w_node), ())

    def op_call(self, meta, func, op_arguments, arguments):
        return (str(func), tuple(op_arguments or ()), tuple(arguments or ()))

    def stmt(self, meta, targets, rhs, arguments):
        func, args, kwargs = rhs
        kwargs = kwargs + tuple(arguments or ())
        return ast.Stmt(self._loc(meta), targets, func, args, kwargs, self.src.text.strip())

    # quantities
    def unit_power(self, meta, word, power):
        return ast.UnitTerm(self._tok_loc(word), str(word), int(power) if power is not None else 1)

    def percent(self, meta):
        return ast.UnitTerm(self._loc(meta), "%", 1)

    def unit_product(self, meta, *terms):
        return tuple(terms)

    def unit(self, meta, first, *rest):
        # a / b / c means a / (b * c): everything after the first '/' divides
        return (first, tuple(t for group in rest for t in group))

    def quantity(self, meta, num, unit):
        text = str(num)
        mantissa, _, exp = text.lower().partition("e")
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        numerator, denominator = unit if unit is not None else ((), ())
        return ast.QuantityExpr(self._loc(meta), _number(text), decimals, int(exp or 0),
                                numerator, denominator, self.src.text.strip())

    # layer sets
    def layer_range(self, meta, first, last, step):
        return ast.LayerRange(self._loc(meta), first, last, step)

    def layer_single(self, meta, item):
        return item

    def layer_set(self, meta, *items):
        return ast.LayerSetExpr(self._loc(meta), tuple(items))


def _describe_expected(exc: UnexpectedInput) -> str | None:
    expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None)
    if not expected:
        return None
    pretty = {"NAME": "a name", "NUMBER": "a number", "QNUMBER": "a number", "UNIT_WORD": "a unit",
              "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "EQUAL": "'='", "LSQB": "'['", "RSQB": "']'",
              "SEMICOLON": "';'", "SLASH": "'/'", "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "INT": "an integer",
              "COMP_OP": "a comparison", "$END": "end of text"}
    names = sorted({pretty.get(e, e.lower()) for e in expected})
    return ", ".join(names[:8])


# Parsed ASTs by (text, rule, where it is): block ops are instantiated once per
# layer group and claims repeat query texts, so most parses are repeats. The
# AST nodes are frozen, so sharing them is safe.
_PARSED: dict = {}


def parse(text, start: str, origin=None):
    """Parse `text` (a `Text` or str) with grammar rule `start` into an AST node.
    `origin` (a Loc or pseudo-file name) locates plain strings; Text knows its own."""
    where = (text.loc, text.quoted) if hasattr(text, "loc_at") else origin
    key = (str(text), start, where)
    try:
        return _PARSED[key]
    except (KeyError, TypeError):
        pass
    node = _parse_cached(text, start, origin)
    try:
        _PARSED[key] = node
    except TypeError:  # an unhashable origin: parse again next time
        pass
    return node


_DISK = None


def _parse_cached(text, start: str, origin=None):
    """Reuse a stored anonymous tree (see parse_cache) relocated to this text's
    position; errors are never cached, so they are always reported afresh."""
    global _DISK
    if _DISK is None:
        _DISK = ParseCache()
    key = str(text)
    shard = text.loc.file if hasattr(text, "loc_at") else "<texts>"
    tree = _DISK.get(shard, key, start)
    if tree is None:
        try:
            tree = _parse(key, start, None, anonymous=True)
        except SpecError:
            _parse(text, start, origin)   # raises the same error, located where the text is
            raise
        _DISK.put(shard, key, start, tree)
    src = _Source(key, text if hasattr(text, "loc_at") else (origin or "<input>"))
    return relocate(tree, src.loc)


BRACKET = re.compile(r"[()\[\]\n]")
_NUMBER = re.compile(r"(?<![A-Za-z_])\d[\d_,]*(\.[\d_]*)?([eE][+-]?\d+)?")
OPERATOR = re.compile(r"\*\*|//|[-+*/%^<>=!]=?|\b(?:and|or|not|in)\b|,")


def check_size(text: str, src) -> None:
    """Bound a text before the (recursive) parser and evaluator see it: length,
    bracket depth, operator count and the size of every number literal."""
    if len(text) > limit("text_chars"):
        raise limit_error("text_chars", src.loc(1, 1), found=f"{len(text):,} characters")
    depth, most, line, line_start = 0, limit("expression_depth"), 1, 0
    for match in BRACKET.finditer(text):     # only brackets and newlines, not every character
        ch = match.group()
        if ch == "\n":
            line, line_start = line + 1, match.end()
        elif ch in "([":
            depth += 1
            if depth > most:
                raise limit_error("expression_depth", src.loc(line, match.end() - line_start))
        else:
            depth -= 1
    operators = sum(1 for _ in OPERATOR.finditer(text))
    if operators > limit("expression_terms"):
        raise limit_error("expression_terms", src.loc(1, 1), found=f"{operators:,}")
    for match in _NUMBER.finditer(text):
        digits = sum(c.isdigit() for c in match.group().lower().partition("e")[0])
        exponent = match.group(2)
        if digits > limit("number_digits"):
            raise limit_error("number_digits", _where(text, match, src), found=f"{digits} digits",
                              span=len(match.group()))
        if exponent and abs(int(exponent[1:])) > limit("number_exponent"):
            raise limit_error("number_exponent", _where(text, match, src), found=exponent, span=len(match.group()))


def _where(text: str, match, src) -> Loc:
    before = text[:match.start()]
    return src.loc(before.count("\n") + 1, match.start() - (before.rfind("\n") + 1) + 1)


def _parse(text, start: str, origin=None, anonymous: bool = False):
    src = _Source(str(text), text if hasattr(text, "loc_at") else (origin or "<input>"))
    check_size(str(text), src)
    try:
        tree = _parser().parse(str(text), start=start)
        if anonymous:
            return _ToAst(_Anonymous(str(text))).transform(tree)
        return _ToAst(src).transform(tree)
    except UnexpectedEOF as exc:
        lines = str(text).splitlines() or [""]
        loc = src.loc(len(lines), len(lines[-1]) + 1)
        raise SpecError(f"unexpected end of {_WHAT[start].split(' like')[0]} in '{str(text).strip()}'", loc,
                        expected=_describe_expected(exc) or _WHAT[start]) from None
    except UnexpectedToken as exc:
        loc = src.loc(exc.line, exc.column) if exc.line and exc.line > 0 else src.loc(1, 1)
        shown = "end of text" if exc.token.type == "$END" else f"'{exc.token}'"
        raise SpecError(f"unexpected {shown} in '{str(text).strip()}'", loc, span=len(str(exc.token)) or 1,
                        expected=_describe_expected(exc) or _WHAT[start]) from None
    except UnexpectedCharacters as exc:
        loc = src.loc(exc.line, exc.column)
        raise SpecError(f"unexpected character '{str(text)[exc.pos_in_stream]}' in '{str(text).strip()}'", loc,
                        expected=_describe_expected(exc) or _WHAT[start]) from None
    except RecursionError:  # pragma: no cover - check_size bounds the depth first
        raise limit_error("expression_depth", src.loc(1, 1)) from None


def parse_expr(text, origin=None) -> ast.Node:
    return parse(text, "expr", origin)


def parse_stmt(text, origin=None) -> ast.Stmt:
    return parse(text, "stmt", origin)


def parse_quantity(text, origin=None) -> ast.QuantityExpr:
    return parse(text, "quantity", origin)


def parse_layer_set(text, origin=None) -> ast.LayerSetExpr:
    return parse(text, "layer_set", origin)
