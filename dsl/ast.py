"""The parsed form of specc's small languages. Each node class declares its
fields once (dataclasses), so walkers and printers stay generic; every node
keeps the `Loc` it was parsed from, for error messages."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from fractions import Fraction

from .errors import Loc


@dataclass(frozen=True)
class Node:
    loc: Loc = field(compare=False, repr=False)

    def children(self):
        for name in _child_fields(type(self)):
            value = getattr(self, name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, Node):
                        yield item
                    elif isinstance(item, tuple):
                        yield from (x for x in item if isinstance(x, Node))

    def walk(self):
        """Every node of the tree, pre-order (iterative: deep expressions need no recursion)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children())))


_FIELDS: dict = {}


def _child_fields(cls) -> tuple:
    """The field names of a node class that can hold children (all but loc), looked up
    once per class: dataclasses.fields() on every visit was a tenth of a cold compile."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls) if f.name != "loc")
    return names


# ------------------------------------------------------------------ expressions
@dataclass(frozen=True)
class Num(Node):
    value: Fraction
    text: str


@dataclass(frozen=True)
class QuantityLit(Node):
    value: Fraction
    unit: str
    text: str


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Keyword(Node):
    name: str
    value: "Node"


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple          # positional expression nodes
    kwargs: tuple        # Keyword nodes


@dataclass(frozen=True)
class Subscript(Node):
    name: str
    indices: tuple


@dataclass(frozen=True)
class BinOp(Node):
    op: str              # + - * / // % ** and or
    left: Node
    right: Node


@dataclass(frozen=True)
class UnaryOp(Node):
    op: str              # - not
    operand: Node


@dataclass(frozen=True)
class Compare(Node):
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Member(Node):
    item: Node
    set_name: str


# ------------------------------------------------------------------ op statements
@dataclass(frozen=True)
class Stmt(Node):
    """`targets = func(args; kwargs)`; a matmul `y = x @ W[i, o]` has func '@'
    and args (x, W[i, o])."""

    targets: tuple
    func: str
    args: tuple
    kwargs: tuple
    text: str


# ------------------------------------------------------------------ quantities
@dataclass(frozen=True)
class UnitTerm(Node):
    word: str            # a unit word, or '%'
    power: int


@dataclass(frozen=True)
class QuantityExpr(Node):
    """A claim's expected value: the number as printed and its unit.
    `numerator`/`denominator` hold the unit terms either side of '/'."""

    value: Fraction
    decimals: int        # digits after the decimal point as printed
    exponent: int        # the printed e-notation exponent (0 if none)
    numerator: tuple
    denominator: tuple
    text: str


# ------------------------------------------------------------------ layer sets
@dataclass(frozen=True)
class LayerRange(Node):
    first: Node
    last: Node           # inclusive
    step: Node | None


@dataclass(frozen=True)
class LayerSetExpr(Node):
    items: tuple         # LayerRange or expression nodes


def unparse(node: Node) -> str:
    """Print an expression back as text (used in tables and derivations)."""
    match node:
        case Num(text=text) | QuantityLit(text=text):
            return text
        case Name(id=name):
            return name
        case Call(func=func, args=args, kwargs=kwargs):
            parts = [unparse(a) for a in args] + [f"{k.name}={unparse(k.value)}" for k in kwargs]
            return f"{func}({', '.join(parts)})"
        case Subscript(name=name, indices=indices):
            return f"{name}[{', '.join(unparse(i) for i in indices)}]"
        case BinOp(op=op, left=left, right=right):
            return f"({unparse(left)} {op} {unparse(right)})"
        case UnaryOp(op=op, operand=operand):
            return f"{op}{' ' if op == 'not' else ''}{unparse(operand)}"
        case Compare(op=op, left=left, right=right):
            return f"{unparse(left)} {op} {unparse(right)}"
        case Member(item=item, set_name=set_name):
            return f"{unparse(item)} in {set_name}"
        case Stmt(text=text):
            return text
    return repr(node)
