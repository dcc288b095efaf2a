"""The syntax tree of the C subset: expressions, statements and preamble functions.

Every node keeps the offsets (`start`, `end`) of the snippet text it came from, for errors.
Types are kept as written (`TypeName`) and resolved by the translator, which knows the kernel's
type placeholders.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    start: int
    end: int


@dataclass(frozen=True)
class TypeName(Node):
    words: tuple[str, ...]   # ('unsigned', 'int'), ('T',), ('auto',)


# ---- expressions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Number(Node):
    text: str                # as written, suffix included


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Member(Node):
    """`obj.member()`: `_ind.size()` (the elements the kernel loops over), or `size()`,
    `shape()` or `strides()` of a raw array (the last two are arrays of `ptrdiff_t`)."""

    obj: Name
    member: str


@dataclass(frozen=True)
class Field(Node):
    """`x.at<k>()`: field k of a structured value."""

    obj: Name
    index: int


@dataclass(frozen=True)
class FieldCount(Node):
    """`T::field_count`: the number of fields of a structured type."""

    type: TypeName


@dataclass(frozen=True)
class InitList(Node):
    """`{a, b, c}`: the initializer of a local array."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Unary(Node):
    op: str                  # '-', '+', '!', '~'
    operand: Node


@dataclass(frozen=True)
class Binary(Node):
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Conditional(Node):
    cond: Node
    then: Node
    orelse: Node


@dataclass(frozen=True)
class Cast(Node):
    type: TypeName
    operand: Node
    imag: Node | None = None  # complex<float>(re, im): the imaginary part


@dataclass(frozen=True)
class Call(Node):
    func: str
    func_end: int
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Subscript(Node):
    array: Node              # a raw array, a local array or `x.shape()`
    index: Node


# ---- statements --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Declarator(Node):
    name: Name
    init: Node | None
    array: bool = False      # `name[length]` or `name[]`
    length: Node | None = None


@dataclass(frozen=True)
class Declaration(Node):
    type: TypeName
    names: tuple[Declarator, ...]


@dataclass(frozen=True)
class Assign(Node):
    target: Name | Subscript
    op: str                  # '=', '+=', ..., '++', '--'
    value: Node | None       # None for ++ and --


@dataclass(frozen=True)
class Block(Node):
    """`{ ... }`: its declarations end with it."""

    body: tuple[Node, ...]


@dataclass(frozen=True)
class If(Node):
    cond: Node
    then: tuple[Node, ...]
    orelse: tuple[Node, ...]


@dataclass(frozen=True)
class StaticAssert(Node):
    cond: Node
    message: str | None


@dataclass(frozen=True)
class Return(Node):
    value: Node


@dataclass(frozen=True)
class Function(Node):
    """A preamble `__device__` function: inlined where it is called."""

    return_type: TypeName
    name: Name
    params: tuple[tuple[TypeName, Name], ...]
    body: tuple[Node, ...]


def walk(nodes):
    """Every node under `nodes` (a node or a tuple of them), depth first, without recursion."""
    stack = list(nodes) if isinstance(nodes, tuple) else [nodes]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif isinstance(node, Node):
            yield node
            stack.extend(getattr(node, f) for f in node.__dataclass_fields__ if f not in ("start", "end"))
