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
class IndexSize(Node):
    """`_ind.size()`: the number of elements the kernel loops over."""


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


@dataclass(frozen=True)
class Call(Node):
    func: str
    func_end: int
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Subscript(Node):
    array: Name
    index: Node


# ---- statements --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Declaration(Node):
    type: TypeName
    names: tuple[tuple[Name, Node | None], ...]   # each declarator with its initializer


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
class Return(Node):
    value: Node


@dataclass(frozen=True)
class Function(Node):
    """A preamble `__device__` function: inlined where it is called."""

    return_type: TypeName
    name: Name
    params: tuple[tuple[TypeName, Name], ...]
    body: tuple[Node, ...]
