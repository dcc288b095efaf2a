"""How much memory traffic and math a launch does, read off the IR.

Each memory op moves its tile's bytes each time it runs (the tile its declaration names). Flops
are what each op's declaration counts (ir/ops.py, `OpDecl.flops`):
- an elementwise math op on a float tile (or float scalar) does one flop per result element
  (a transcendental counts one, like an add);
- a reduction (sum, prod, max, min) or scan (cumsum, cumprod) of a float tile does one flop per
  input element (a sum of n elements counts n);
- an mma does 2*M*N*K (times its batch), whatever its dtypes.
Not flops: integer and bitwise arithmetic (index math included), comparisons and predicates,
`where`, casts, argmax/argmin, and data movement (memory and shape ops).

An op inside `for` runs once per iteration: trip counts are evaluated from the launch's
real array shapes and grid with the interpreter's own scalar rules, taking block (0, 0, 0) as the
representative block. Out-of-bounds lanes of edge tiles are counted, so ragged launches read
slightly high.

    >>> work = launch_work(fn, grid=(4096, 1, 1), shapes={"a": (2**22,), "b": (2**22,), "c": (2**22,)})
    >>> work.bytes_read, work.bytes_written
    (33554432, 16777216)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..interp.rules import RULES
from ..ir.core import Block, Function
from ..ir.ops import OPS
from ..ir.types import ArrayType, TileType


@dataclass(frozen=True)
class Work:
    bytes_read: int
    bytes_written: int
    flops: int
    elements: int = 0   # elements the memory ops move: the lanes a trace of the launch records

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written


class _Shape:
    """Stands in for an array argument: the scalar rules only ask for its shape and rank."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.ndim = len(self.shape)


class _OneBlock:
    """The part of an interpreter context the scalar rules read."""

    def __init__(self, grid):
        self.grid = tuple(grid)
        self.bids = np.zeros((1, 3), np.int32)


def launch_work(fn: Function, grid, shapes: dict) -> Work:
    """Bytes and flops of launching `fn` over `grid` with arrays of these shapes (by parameter name)."""
    values = {}
    for p, arg in zip(fn.runtime_params, fn.body.args):
        if p.kind == "array":
            values[arg] = _Shape(shapes[p.name])
    totals = [0, 0, 0, 0]   # bytes read, bytes written, flops, elements moved
    _walk(fn.body, values, _OneBlock(grid), 1, totals)
    blocks = int(np.prod(grid))
    return Work(*(t * blocks for t in totals))


def written_arrays(fn: Function) -> set[str]:
    """The array parameters a launch of `fn` may write: those a store, scatter or atomic reaches,
    directly or through a view of them (array_slice, list_item). A written array whose origin is
    not a parameter makes every array parameter count as written."""
    arrays = [p.name for p in fn.runtime_params if p.kind == "array"]
    origins = {arg: {p.name} for p, arg in zip(fn.runtime_params, fn.body.args) if p.kind == "array"}
    written = set()
    for op in fn.walk():
        for result in op.results:
            if isinstance(result.type, ArrayType):
                origins[result] = set().union(*(origins.get(v, ()) for v in op.operands))
        if OPS[op.name].access == "write":
            written |= origins.get(op.operands[0]) or set(arrays)
    return written


def _scalar(values, v):
    x = values.get(v)
    return None if x is None else int(np.asarray(x).reshape(-1)[0])


def _walk(block: Block, values: dict, ctx, times: int, totals: list):
    for op in block.ops:
        decl = OPS[op.name]
        if decl.access is not None:
            tile = decl.moved(op)
            totals[0 if decl.access == "read" else 1] += times * tile.size * tile.dtype.itemsize
            totals[3] += times * tile.size
        elif decl.flops is not None:
            totals[2] += times * decl.flops(op)
        elif op.name == "for":
            lo, hi, step = (_scalar(values, v) for v in op.operands[:3])
            trips = max(0, -(-(hi - lo) // step)) if None not in (lo, hi, step) and step > 0 else 1
            _walk(op.regions[0], values, ctx, times * trips, totals)
        elif op.name == "if":  # count the heavier branch
            branches = []
            for region in op.regions:
                sub = [0] * len(totals)
                _walk(region, values, ctx, times, sub)
                branches.append(sub)
            heavier = max(branches, key=lambda t: t[0] + t[1] + t[2])
            for k, n in enumerate(heavier):
                totals[k] += n
        _evaluate_scalar(op, values, ctx)


def _evaluate_scalar(op, values, ctx):
    """Record the value of a scalar op when all its operands are known (constants, grid, shapes)."""
    if len(op.results) != 1 or not isinstance(op.result.type, TileType) or op.result.shape:
        return
    rule = RULES.get(op.name)
    args = [values.get(v) for v in op.operands]
    if rule is None or any(a is None for a in args):
        return
    try:
        values[op.result] = rule(ctx, op, *args)
    except Exception:  # a scalar the model cannot evaluate stays unknown
        pass
