"""The tile IR: SSA values, ops with attributes and a source location, and nested regions.

A kernel is one `Function`: its parameters are block arguments of the body; control flow is
structured (`if` and `for` ops own regions that end in `yield`), as in MLIR's scf dialect.

    %0 = bid {axis=0} : int32                         # line 3
    %1 = load %a, %0 {shape=(1024,), order=(0,), padding=UNDETERMINED} : tile<float32, 1024>
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import SourceLoc
from .types import ArrayType, TileType


class Value:
    """An SSA value: a block argument or the result of an op."""

    __slots__ = ("type", "name", "owner")

    def __init__(self, type, name: str = "", owner=None):
        self.type = type
        self.name = name  # a hint for printers (the user's variable name), not identity
        self.owner = owner

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, ArrayType)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    def __repr__(self) -> str:
        return f"Value({self.name or '?'}: {self.type})"


@dataclass(eq=False)
class Block:
    """A list of ops with arguments (function parameters, a loop's induction and carried values)."""

    args: list[Value] = field(default_factory=list)
    ops: list["Op"] = field(default_factory=list)


@dataclass(eq=False)
class Op:
    """One operation: its operands and results (SSA values), attributes, nested blocks and source line."""

    name: str
    operands: list[Value]
    attrs: dict[str, Any]
    results: list[Value]
    loc: SourceLoc | None
    regions: list[Block] = field(default_factory=list)

    @property
    def result(self) -> Value:
        (r,) = self.results
        return r


@dataclass(eq=False)
class Param:
    """A kernel parameter as the IR sees it after specialization."""

    name: str
    kind: str          # 'array', 'scalar' or 'constant'
    type: Any = None   # ArrayType / TileType; None for constants
    value: Any = None  # the Python value of a constant


@dataclass(eq=False)
class Function:
    """One specialization of a kernel: parameters, body, and the source it came from."""

    name: str
    params: list[Param]
    body: Block
    source: str = ""
    filename: str = ""
    first_line: int = 1
    # the kernel's options (occupancy, num_ctas, ...; a value may be a ByTarget, resolved per GPU):
    # they shape the generated code, so the fingerprint covers them
    hints: dict = field(default_factory=dict)
    _fingerprint: str | None = field(default=None, repr=False)  # computed once: a Function is not changed after it is built

    def walk(self) -> Iterator[Op]:
        yield from walk_block(self.body)

    @property
    def runtime_params(self) -> list[Param]:
        return [p for p in self.params if p.kind != "constant"]

    def fingerprint(self) -> str:
        """A hash of the program: the printed IR (names, types, constants, attributes, source lines)
        and the file it came from. Equal fingerprints mean equal generated code, so caches of
        compiled kernels are keyed on it, never on the identity of a Function that can die."""
        if self._fingerprint is None:
            from .printer import print_function
            text = f"{self.filename}\0{sorted(self.hints.items())!r}\0{print_function(self, locations=True)}"
            self._fingerprint = hashlib.sha256(text.encode()).hexdigest()[:32]
        return self._fingerprint


def walk_block(block: Block) -> Iterator[Op]:
    for op in block.ops:
        yield op
        for region in op.regions:
            yield from walk_block(region)


class Builder:
    """Appends ops to the current block; checks each op against its declaration as it is built."""

    def __init__(self, block: Block):
        self.block = block

    def emit(self, name: str, operands, attrs=None, loc=None, regions=(), result_names=()) -> Op:
        from .ops import infer_result_types
        operands = list(operands)
        attrs = dict(attrs or {})
        types = infer_result_types(name, [v.type for v in operands], attrs)
        results = [Value(t) for t in types]
        for v, hint in zip(results, result_names):
            v.name = hint
        op = Op(name, operands, attrs, results, loc, list(regions))
        for v in results:
            v.owner = op
        self.block.ops.append(op)
        return op

    def value(self, name: str, operands, attrs=None, loc=None) -> Value:
        return self.emit(name, operands, attrs, loc).result


def is_tile(v) -> bool:
    return isinstance(v, Value) and isinstance(v.type, TileType)
