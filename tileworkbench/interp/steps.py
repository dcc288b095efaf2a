"""Per-op values for the block stepper: every op a block executed, in program order, with its tile.

Opt-in (`run(..., values=True)`): recording copies every op's result, so ordinary runs skip it.
The interpreter runs the blocks of a batch together, op by op, so the log holds one `Step` per
executed op *per batch*: the blocks that ran it, and its tile for each of them (a leading axis
over those blocks, or length 1 where the value is the same in every block). Restricted to one
block, the steps are that block's program order, loop iterations included: a loop body's ops
appear once per iteration, each step naming its loops' iterations.

The copies are bounded: once `max_bytes` are held, later steps keep their op, blocks and memory
events but no values, and `truncated` says where recording stopped and how to record more.

    trace = run(kernel, grid, args, values=True)
    for step in trace.steps.for_block((1, 0)):
        step.line, step.op, step.loops, step.value, step.events
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..ir.ops import OPS

VALUES_MAX_BYTES = 256 << 20
CONTROL = frozenset({"if", "for", "while", "yield"})   # their body ops are the steps


@dataclass
class Step:
    """One op executed by a batch of blocks."""
    op: str
    filename: str                 # where its code is: the kernel's file or cell, or a helper's
    line: int
    col: int
    source: str
    blocks: np.ndarray            # (B, 3) int32: the blocks that executed it
    value: np.ndarray | None      # (B or 1, *shape): its result (a write: the tile written), None if not kept
    loops: tuple = ()             # ((loop line, iteration), ...) of the enclosing loops, outermost first
    events: list = field(default_factory=list)   # the trace events it made (memory and shape ops)


@dataclass
class BlockStep:
    """One op as one block executed it."""
    number: int                   # its position in the block's program order
    op: str
    filename: str
    line: int
    col: int
    source: str
    value: np.ndarray | None      # the tile (shape () for a scalar), None where not kept
    loops: tuple
    events: list                  # the trace events of this block's lanes (Event.for_block)


@dataclass
class StepLog:
    max_bytes: int = VALUES_MAX_BYTES
    filename: str = ""            # where the kernel is defined (a file, or a %%tilekernel cell)
    steps: list[Step] = field(default_factory=list)
    held_bytes: int = 0
    truncated: str | None = None  # why later steps have no values, None when all are kept
    _loops: list = field(default_factory=list)

    def record(self, op, value, blocks: np.ndarray, events: list) -> None:
        if value is not None and self.truncated is None:
            value = np.array(value)   # the executor may update a loop's carried arrays in place
            if self.held_bytes + value.nbytes > self.max_bytes:
                self.truncated = (f"values were kept for the first {len(self.steps)} steps only: they filled the "
                                  f"{self.max_bytes >> 20} MiB budget (run(..., values=True, "
                                  f"values_max_bytes=...) keeps more)")
                value = None
            else:
                self.held_bytes += value.nbytes
        elif self.truncated is not None:
            value = None
        loc = op.loc
        self.steps.append(Step(op.name, loc.filename if loc else "", loc.line if loc else 0, loc.col if loc else 0,
                               loc.source_line if loc else "", blocks, value, tuple(self._loops), events))

    @contextmanager
    def iteration(self, op, k: int):
        """Steps recorded inside are in iteration `k` of loop `op`."""
        self._loops.append((op.loc.line if op.loc else 0, k))
        try:
            yield
        finally:
            self._loops.pop()

    def for_block(self, block) -> list[BlockStep]:
        """The steps of one block (1 to 3 grid coordinates), in its program order."""
        target = np.asarray(tuple(block) + (0,) * (3 - len(block)), np.int32)
        out = []
        for step in self.steps:
            rows = np.nonzero((step.blocks == target).all(axis=1))[0]
            if not len(rows):
                continue
            row = int(rows[0])
            value = None if step.value is None else step.value[row if step.value.shape[0] > 1 else 0]
            events = [e.for_block(block) for e in step.events]
            out.append(BlockStep(len(out), step.op, step.filename, step.line, step.col, step.source, value,
                                 step.loops, events))
        return out


def written_operand(op) -> int | None:
    """The operand a result-less memory write stores (its tile), or None for other ops."""
    decl = OPS.get(op.name)
    if decl is None or decl.access != "write" or op.results:
        return None
    moved = decl.moved(op)
    return max(k for k, v in enumerate(op.operands) if v.type == moved)
