"""The verifier: checks that a Function is well formed before anything executes or compiles it.

Rules: every operand is defined before its use in an enclosing scope (SSA dominance); every op's
result types are what its declaration computes; every region ends in exactly one `yield` whose
values match the op's result types (for `for`: its carried values).
"""
from __future__ import annotations

from ..errors import TileInternalError
from .core import Block, Function, Op
from .ops import OPS, infer_result_types
from .types import bool_, scalar


def verify(fn: Function) -> None:
    _verify_block(fn.body, set(fn.body.args), terminator=None)


def _fail(op: Op, message: str):
    raise TileInternalError(f"IR verification failed at '{op.name}': {message}", op.loc)


def _verify_block(block: Block, defined: set[int], terminator):
    defined = set(defined) | set(block.args)
    for i, op in enumerate(block.ops):
        if op.name not in OPS:
            _fail(op, "unknown op")
        for v in op.operands:
            if v not in defined:
                _fail(op, f"operand {v!r} is used before it is defined")
        expected = infer_result_types(op.name, [v.type for v in op.operands], op.attrs)
        if [r.type for r in op.results] != list(expected):
            _fail(op, f"result types {[str(r.type) for r in op.results]} differ from {list(map(str, expected))}")
        if op.name == "yield":
            if terminator is None or i != len(block.ops) - 1:
                _fail(op, "yield must end a region")
            if [v.type for v in op.operands] != list(terminator):
                _fail(op, "yielded types differ from the region's result types")
        if op.name == "if":
            for region in op.regions:
                _verify_region(op, region, defined, op.attrs["result_types"])
        elif op.name == "for":
            _verify_region(op, op.regions[0], defined, op.attrs["result_types"])
        elif op.name == "while":
            _verify_region(op, op.regions[0], defined, [scalar(bool_)] + list(op.attrs["result_types"]))
        elif op.name in ("reduce", "scan"):
            _verify_region(op, op.regions[0], defined, [scalar(v.dtype) for v in op.operands])
        defined.update(op.results)


def _verify_region(op: Op, region: Block, defined: set[int], result_types):
    if not region.ops or region.ops[-1].name != "yield":
        _fail(op, "region does not end in yield")
    _verify_block(region, defined, terminator=list(result_types))
