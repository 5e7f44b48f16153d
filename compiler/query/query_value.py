"""A query as a value: what specc passes around instead of query text.

`Expr.parse(text)` reads a query expression such as `flops(B=1, P=8192) / params()`
into its calls (`Call`: a name and its ordered arguments) and the text between
them, kept verbatim; `print(...)`/`Expr.text` is the one printer of a query, so
every module that needs query text (compiled queries, sweeps, the report, the
tables, the explorer) builds a `Call` and prints it rather than formatting or
rewriting text. An argument value is an `int` (plain digits), a `Fraction`, a
`Name` (a bare name: a choice, a device, a scenario symbol, true) or an `Expr`
(anything else, e.g. `2 GiB`, printed as written).

Standard library only, and no regular expressions: the compiled-query fast lane
(no sympy, lark or yaml) parses with it. It only finds the structure of a query:
whether the text is a valid query is the engine's parser's business (dsl/parser.py),
so `parse` returns None for text it cannot read and the caller leaves that text to
the engine, which reports the error with its location. The explorer's JavaScript
builds the same text for its figures (render/site_assets/explorer.js)."""

from __future__ import annotations

from fractions import Fraction

# the scenario symbols, in the argument order of every printed closed form
SCENARIO_NAMES = ("B", "S", "P", "G", "H")


class _Value:
    """A small immutable record (no dataclasses: the fast lane would pay for importing inspect)."""

    __slots__ = ()

    def __init__(self, *values):
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _key(self):
        return tuple(getattr(self, n) for n in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(repr(v) for v in self._key())})"

_OPERATORS = ("**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "^", "<", ">", "(", ")", "[", "]",
              ",", "=", "@", ";", ".")


class _Token(_Value):
    __slots__ = ("kind", "text", "start", "end")    # kind: "name", "number" or "op"


def _tokens(text: str) -> list | None:
    """The tokens of a query (the grammar's NAME, NUMBER and operators), None on any other character."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        start = i
        if ch.isascii() and (ch.isalpha() or ch == "_"):
            while i < n and text[i].isascii() and (text[i].isalnum() or text[i] == "_" or
                                                   (text[i] == "." and i + 1 < n and
                                                    (text[i + 1].isalpha() or text[i + 1] == "_"))):
                i += 1
            out.append(_Token("name", text[start:i], start, i))
        elif ch.isascii() and ch.isdigit():
            while i < n and text[i].isascii() and (text[i].isdigit() or text[i] == "_"):
                i += 1
            if i + 1 < n and text[i] == "." and text[i + 1].isascii() and text[i + 1].isdigit():
                i += 1
                while i < n and text[i].isascii() and (text[i].isdigit() or text[i] == "_"):
                    i += 1
            if i < n and text[i] in "eE":
                j = i + 1 + (i + 1 < n and text[i + 1] in "+-")
                if j < n and text[j].isascii() and text[j].isdigit():
                    i = j
                    while i < n and text[i].isascii() and text[i].isdigit():
                        i += 1
            out.append(_Token("number", text[start:i], start, i))
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is None:
                return None
            i += len(op)
            out.append(_Token("op", op, start, i))
    return out


class Name(_Value):
    """A bare name as an argument value: a choice, a device, true, or a scenario symbol (P=P)."""

    __slots__ = ("id",)

    def __str__(self) -> str:
        return self.id


class Call(_Value):
    """One query call: its name and (keyword or None, value) arguments in order."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: tuple = ()):
        super().__init__(name, tuple(args))

    def get(self, key, default=None):
        return next((value for k, value in self.args if k == key), default)

    def keys(self) -> tuple:
        return tuple(k for k, _ in self.args if k is not None)

    def with_args(self, updates: dict) -> "Call":
        """The call with these arguments replaced in place and the new ones appended (plain
        values as make_call takes them; None leaves an argument out)."""
        updates = {k: _plain(v) for k, v in updates.items()}
        args = [(k, updates[k] if k in updates else v) for k, v in self.args]
        args += [(k, v) for k, v in updates.items() if k not in self.keys()]
        return Call(self.name, tuple((k, v) for k, v in args if v is not None))

    def bound(self, declaration) -> dict:
        """Every declared parameter -> its value here, else its declared default
        (None: absent; the query's own rule applies), in declaration order, then any
        other argument (options, dimension overrides, extrapolate=)."""
        out = {p.name: self.get(p.name, p.default) for p in declaration.params if not p.positional}
        out.update({k: v for k, v in self.args if k is not None and k not in out})
        return out

    def text(self) -> str:
        return print_query(self)

    def __str__(self) -> str:
        return print_query(self)


class Expr(_Value):
    """A query expression: Calls and the text between them (verbatim, whitespace included)."""

    __slots__ = ("parts",)

    @staticmethod
    def parse(text: str) -> "Expr | None":
        tokens = _tokens(text)
        if tokens is None:
            return None
        try:
            expr, i = _parse_expr(text, tokens, 0, top=True)
        except _Unreadable:
            return None
        return expr if i == len(tokens) else None

    def calls(self):
        """Every call of the expression, nested ones included, outermost first."""
        for part in self.parts:
            if isinstance(part, Call):
                yield part
                for _, value in part.args:
                    if isinstance(value, Expr):
                        yield from value.calls()
            elif isinstance(part, Expr):
                yield from part.calls()

    def map_calls(self, fn) -> "Expr":
        """The expression with every call replaced by fn(call) (inner calls first)."""
        out = []
        for part in self.parts:
            if isinstance(part, Call):
                args = tuple((k, v.map_calls(fn) if isinstance(v, Expr) else v) for k, v in part.args)
                out.append(fn(Call(part.name, args)))
            else:
                out.append(part)
        return Expr(tuple(out))

    def names(self):
        """Every bare name the expression uses as a value (not a query name, a keyword or a unit)."""
        for part in self.parts:
            if isinstance(part, Call):
                for _, value in part.args:
                    if isinstance(value, Name):
                        yield value.id
                    elif isinstance(value, Expr):
                        yield from value.names()
            else:
                yield from _free_names(part)

    @property
    def call(self) -> Call | None:
        """The call when the expression is one call and nothing else."""
        real = [p for p in self.parts if not (isinstance(p, str) and not p.strip())]
        return real[0] if len(real) == 1 and isinstance(real[0], Call) else None

    def text(self) -> str:
        return print_query(self)

    def __str__(self) -> str:
        return print_query(self)


class _Unreadable(Exception):
    pass


def _free_names(segment: str):
    """Names in a text segment that are not units (a name right after a number is one)."""
    tokens = _tokens(segment) or []
    for prev, tok in zip([None] + tokens, tokens):
        if tok.kind == "name" and not (prev is not None and prev.kind == "number"):
            yield tok.text


def _parse_expr(text, tokens, i, top=False):
    """Parts up to a ',' or ')' at this level (the whole text when top)."""
    parts, depth, seg_start = [], 0, tokens[i].start if i < len(tokens) else len(text)
    start = seg_start

    def flush(upto):
        if upto > start:
            parts.append(text[start:upto])

    while i < len(tokens):
        tok = tokens[i]
        if depth == 0 and not top and tok.text in (",", ")"):
            break
        if tok.kind == "name" and i + 1 < len(tokens) and tokens[i + 1].text == "(":
            flush(tok.start)
            call, i = _parse_call(text, tokens, i)
            parts.append(call)
            start = tokens[i - 1].end
            continue
        if tok.text in ("(", "["):
            depth += 1
        elif tok.text in (")", "]"):
            depth -= 1
            if depth < 0:
                raise _Unreadable
        i += 1
    if depth != 0:
        raise _Unreadable
    end = tokens[i - 1].end if i > 0 and i <= len(tokens) and tokens else start
    flush(max(end, start))
    return Expr(tuple(parts)), i


def _parse_call(text, tokens, i):
    name = tokens[i].text
    i += 2                      # name (
    args = []
    while True:
        if i >= len(tokens):
            raise _Unreadable
        if tokens[i].text == ")":
            return Call(name, tuple(args)), i + 1
        key = None
        if tokens[i].kind == "name" and i + 1 < len(tokens) and tokens[i + 1].text == "=":
            key, i = tokens[i].text, i + 2
        if i >= len(tokens) or tokens[i].text in (",", ")"):
            raise _Unreadable
        first = i
        value, i = _parse_expr(text, tokens, i)
        args.append((key, _value(value, tokens[first:i])))
        if i >= len(tokens):
            raise _Unreadable
        if tokens[i].text == ",":
            i += 1


def _value(expr: Expr, tokens):
    if len(tokens) == 1 and tokens[0].kind == "number" and tokens[0].text.isdigit():
        return int(tokens[0].text)
    if len(tokens) == 1 and tokens[0].kind == "name":
        return Name(tokens[0].text)
    return expr


def _print_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Fraction):
        return f"({value.numerator}/{value.denominator})"
    if isinstance(value, (Name, Expr, Call)):
        return print_query(value)
    raise TypeError(f"not a query value: {value!r}")


def print_query(value) -> str:
    """The one printer of query text: a Call as `name(k=v, k=v)`, an Expr as its
    calls printed so and the text between them as written."""
    if isinstance(value, Call):
        return f"{value.name}({', '.join(_print_value(v) if k is None else f'{k}={_print_value(v)}' for k, v in value.args)})"
    if isinstance(value, Expr):
        return "".join(p if isinstance(p, str) else print_query(p) for p in value.parts).strip()
    if isinstance(value, Name):
        return value.id
    return _print_value(value)


def make_call(name: str, args) -> Call:
    """A Call from plain values: (key, value) pairs or a dict, a str value being a bare name
    (h100_sxm, true, P) or query text ('2 GiB'), a bool true/false, None left out; ints
    and Fractions stay numbers."""
    pairs = args.items() if isinstance(args, dict) else args
    return Call(name, tuple((k, _plain(v)) for k, v in pairs if v is not None))


def _plain(value):
    if value is None or isinstance(value, (Name, Expr, Call)):
        return value
    if isinstance(value, bool):
        return Name("true" if value else "false")
    if isinstance(value, str):
        # a name (h100_sxm, true, P) or a quantity such as '2 GiB', printed as given
        return Name(value) if value.isidentifier() else Expr((value,))
    return value


def call_with_arguments(name: str, arguments: str) -> Call | None:
    """The call `name(...)` with the arguments a user wrote as text (a table's
    --scenario 'B=1, S=0, P=8192'); None when they cannot be read as arguments."""
    expr = Expr.parse(f"{name}({arguments})")      # parsed, never printed back as text
    call = expr.call if expr is not None else None
    return call if call is not None and call.name == name else None


# ------------------------------------------------------------------ scenario arguments
def scenario_literals(expr: Expr) -> dict:
    """Scenario symbol -> the set of plain integers it is given as a keyword anywhere in the expression."""
    found: dict = {}
    for call in expr.calls():
        for key, value in call.args:
            if key in SCENARIO_NAMES and isinstance(value, int) and not isinstance(value, bool):
                found.setdefault(key, set()).add(value)
    return found


def symbols_used(expr: Expr) -> set:
    """The scenario symbols passed as themselves (P=P): the parameters of a swept or symbolic query."""
    return {key for call in expr.calls() for key, value in call.args
            if key in SCENARIO_NAMES and value == Name(key)}


def uses_scenario_names(expr: Expr) -> bool:
    """Whether a scenario letter appears as a value other than a keyword's (P=P, 2*P, ...)."""
    return any(n in SCENARIO_NAMES for n in expr.names())


def substitute(expr: Expr, values: dict) -> Expr:
    """Every scenario keyword argument named in `values` set to that value (an int, or a Name)."""
    def one(call: Call) -> Call:
        hit = {k: values[k] for k in call.keys() if k in values}
        return call.with_args(hit) if hit else call
    return expr.map_calls(one)


def bind_symbols(expr: Expr, values: dict) -> Expr:
    """Every argument passed as its own symbol (P=P) set to values[P]; other arguments kept."""
    def one(call: Call) -> Call:
        hit = {k: values[k] for k, v in call.args if k in values and v == Name(k)}
        return call.with_args(hit) if hit else call
    return expr.map_calls(one)


def symbolize(expr: Expr, names) -> Expr:
    """The expression with the keyword arguments `names` (scenario symbols) set to themselves."""
    return substitute(expr, {n: Name(n) for n in names})
