"""Per-op values for the block stepper: every op a block executed, in program order, with its tile.

Opt-in (`run(..., values=True)`): recording copies every op's result, so ordinary runs skip it.
The interpreter runs the blocks of a batch together, op by op, so the log holds one `Step` per
executed op *per batch*: the blocks that ran it, and its tile for each of them (a leading axis
over those blocks, or length 1 where the value is the same in every block). Restricted to one
block, the steps are that block's program order, loop iterations included: a loop body's ops
appear once per iteration, each step naming its loops' iterations.

The copies are bounded: once `max_bytes` are held, later steps keep their op, blocks and memory
events but no values, and `truncated` says where recording stopped. A block whose values were not
kept gets them on demand (`for_block`) from a re-run on copies of the arguments as they were
before the launch: of the block alone where that gives exactly what the launch computed (the
kernel uses no atomics, whose results depend on the order blocks run in, and the block reads no
element another block writes), else of the whole launch, in its order, keeping that block's values
only. `values_source(block)` says which; `missing(block)` says why tiles are still missing (one
block's own values over the budget) and how to record them.

    trace = run(kernel, grid, args, values=True)
    for step in trace.steps.for_block((1, 0)):
        step.line, step.op, step.loops, step.value, step.events
"""
from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..ir.ops import OPS
from .trace import Status

VALUES_MAX_BYTES = 256 << 20
READ_LANES = (Status.LOADED,)
WRITTEN_LANES = (Status.STORED, Status.COLLISION)
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
    kept_steps: int | None = None  # how many steps (in launch order) have their values, None: all
    # re-runs the launch or one block on the launch's inputs (executor.Replay) where values were not all kept
    replay: object = field(default=None, repr=False)
    only: tuple | None = None     # the one block whose values are kept (a re-run of the launch for it)
    _loops: list = field(default_factory=list)
    _rerun: OrderedDict = field(default_factory=OrderedDict, repr=False)   # block -> its re-run StepLog
    _values: dict = field(default_factory=dict, repr=False)   # block -> (values_source, missing)

    def record(self, op, value, blocks: np.ndarray, events: list) -> None:
        if value is not None and self.only is not None:
            rows = (blocks == np.asarray(self.only, np.int32)).all(axis=1)
            value = None if not rows.any() else value[rows] if np.shape(value)[0] > 1 else value
        if value is not None and self.truncated is None:
            value = np.array(value)   # the executor may update a loop's carried arrays in place
            if self.held_bytes + value.nbytes > self.max_bytes:
                self.truncated = (f"values were kept for the first {len(self.steps)} steps of the launch only: "
                                  f"they filled the {budget_text(self.max_bytes)} budget (run(..., values=True, "
                                  f"values_max_bytes=...) keeps more)")
                self.kept_steps = len(self.steps)
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
        """The steps of one block (1 to 3 grid coordinates), in its program order; where the launch
        did not keep their values, from a re-run (values_source)."""
        target = _block3(block)
        key = tuple(int(b) for b in target)
        source = self.values_source(target)
        if source != "recording":
            return self._rerun_of(target, alone=source == "block").for_block(target)
        out = []
        for k, row in self._rows_of(target):
            step = self.steps[k]
            kept = step.value is not None and self.only in (None, key)
            value = step.value[row if step.value.shape[0] > 1 else 0] if kept else None
            events = [e.for_block(target) for e in step.events]
            out.append(BlockStep(len(out), step.op, step.filename, step.line, step.col, step.source, value,
                                 step.loops, events))
        return out

    def values_source(self, block) -> str:
        """Where `for_block(block)` takes the values from: "recording" (this launch's), "block" (a
        re-run of the block alone) or "launch" (a re-run of the whole launch keeping the block's)."""
        return self._values_of(_block3(block))[0]

    def missing(self, block) -> str | None:
        """Why some steps of `block` have no values and how to record them; None where every tile
        is there (kept by the launch or by a re-run)."""
        return self._values_of(_block3(block))[1]

    def _values_of(self, target: np.ndarray) -> tuple[str, str | None]:
        """(values_source, missing) of a block, worked out once."""
        key = tuple(int(b) for b in target)
        if key not in self._values:
            rows = self._rows_of(target)
            if self.kept_steps is None or not rows or rows[-1][0] < self.kept_steps:
                self._values[key] = ("recording", None)
            elif self.replay is None:   # a re-run's own log: the block's values alone exceed the budget
                self._values[key] = ("recording", self.truncated)
            else:
                source = "block" if self._why_not_alone(target) is None else "launch"
                over = self._rerun_of(target, alone=source == "block").truncated is not None
                self._values[key] = (source, None if not over else (
                    f"re-run for this block only, its values still exceed the {budget_text(self.max_bytes)} budget: "
                    f"its first ops have them; run(..., values=True, values_max_bytes=...) with more keeps all"))
        return self._values[key]

    def _rows_of(self, target: np.ndarray) -> list[tuple[int, int]]:
        """(step index, row of the block in that step) of every step the block executed."""
        out = []
        for k, step in enumerate(self.steps):
            rows = np.nonzero((step.blocks == target).all(axis=1))[0]
            if len(rows):
                out.append((k, int(rows[0])))
        return out

    def _why_not_alone(self, target: np.ndarray) -> str | None:
        """Why re-running the block alone would not give what the launch computed, None if it would."""
        if self.replay.has_atomics:
            return "the kernel's atomics give results that depend on the order blocks run in"
        if self.replay.has_aliases:
            return "two of its array arguments share memory"
        shared = self._read_from_other_blocks(target)
        if shared is not None:
            name, index, writer = shared
            return f"it reads {name}[{', '.join(map(str, index))}], which block {tuple(writer)} writes"
        return None

    def _read_from_other_blocks(self, target: np.ndarray):
        """(array, element, writing block) of an element `target` reads that another block writes,
        or None: then the block computes the same values alone as in the launch."""
        reads: dict = {}
        for step in self.steps:
            for e in step.events:
                if e.array is None:
                    continue
                mine = (e.blocks == target).all(axis=1)
                if mine.any():
                    lanes = np.isin(e.status[mine], READ_LANES)
                    reads.setdefault(e.array, []).append(e.coords[mine][lanes])
        for step in self.steps:
            for e in step.events:
                if e.array not in reads:
                    continue
                others = ~(e.blocks == target).all(axis=1)
                written = np.isin(e.status, WRITTEN_LANES) & others.reshape((-1,) + (1,) * (e.status.ndim - 1))
                if not written.any():
                    continue
                read = np.concatenate(reads[e.array])
                hit = _rows_in(e.coords[written], read)
                if hit.any():
                    lane = np.argwhere(written)[int(np.argmax(hit))]
                    return e.array, tuple(int(c) for c in e.coords[tuple(lane)]), e.blocks[lane[0]].tolist()
        return None

    def _rerun_of(self, target: np.ndarray, alone: bool) -> StepLog:
        """A re-run with the block's values (of the block `alone`, else of the launch), cached; the
        re-runs held together keep at most `max_bytes` of values."""
        key = tuple(int(b) for b in target)
        if key in self._rerun:
            self._rerun.move_to_end(key)
            return self._rerun[key]
        log = self.replay.block(target, self.max_bytes, alone)
        self._rerun[key] = log
        while len(self._rerun) > 1 and sum(r.held_bytes for r in self._rerun.values()) > self.max_bytes:
            self._rerun.popitem(last=False)
        return log


def budget_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def _block3(block) -> np.ndarray:
    return np.asarray(tuple(int(b) for b in block) + (0,) * (3 - len(block)), np.int32)


def _rows_in(coords: np.ndarray, among: np.ndarray) -> np.ndarray:
    """For each row (an element's coordinates) of `coords`, whether it is a row of `among`."""
    if not len(among) or not len(coords):
        return np.zeros(len(coords), bool)
    return np.isin(_row_keys(coords), _row_keys(among))


def _row_keys(coords: np.ndarray) -> np.ndarray:
    """Each row of int coordinates as one opaque value (its bytes), comparable as a whole."""
    rows = np.ascontiguousarray(coords.astype(np.int32)).reshape(-1, coords.shape[-1])
    return rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()


def written_operand(op) -> int | None:
    """The operand a result-less memory write stores (its tile), or None for other ops."""
    decl = OPS.get(op.name)
    if decl is None or decl.access != "write" or op.results:
        return None
    moved = decl.moved(op)
    return max(k for k, v in enumerate(op.operands) if v.type == moved)
