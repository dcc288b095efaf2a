"""Access traces: what every executed memory op (and shape op) touched, for the pictures.

A trace is a list of events, each a few NumPy arrays (never a Python object per element):

    event.blocks  (B, 3) int32        the blocks that executed the op (B = how many)
    event.coords  (B, *shape, ndim)   int32 element coordinates into the array, per lane
    event.status  (B, *shape) uint8   what happened to each lane (Status below)

For shape ops (reshape, permute, broadcast, cat, extract, insert, and the `order` of a load)
`coords` holds, per output element, (operand number, flat position in that operand); the array
is None, and B is 1 where the map is the same in every block (`blocks` then names the first block
that ran it), else one row per block; `operand_shapes` gives the input tiles' shapes.

Reads that pad record what a padded lane reads: `padding_mode` (load, load_adv: the PaddingMode's
name) and `padding_value` (load, load_adv, gather): a Python scalar when every lane of the event
pads with the same value, else a (B, *shape) array of the value per lane (a gather's
padding_value tile).

On disk a trace is one `.npz` file (trace_file.py writes and reads it, checking everything a file
claims; docs/traces.md has the format).
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

MAX_TRACE_BYTES = 1 << 30   # what recording a trace, and loading one, may take unless told more
# the views count reads and writes per array element and keep lists per block (int64 each): a
# trace is charged for them as if they were allocated, when recorded and when loaded
VIEW_BYTES_PER_ELEMENT = 16


def view_bytes(grid, arrays: dict) -> int:
    """What the views of a trace over `grid` with `arrays` ({name: {"shape", ...}}) allocate at most."""
    elements = math.prod(grid) + sum(math.prod(info["shape"]) for info in arrays.values())
    return elements * VIEW_BYTES_PER_ELEMENT


class InvalidTraceError(ValueError):
    """A file that is not a readable trace: the message names the file and what is wrong."""


class Status(enum.IntEnum):
    """What happened to one lane of a memory op."""
    LOADED = 1         # read from the array
    PADDED = 2         # a load lane outside the array: filled by padding_mode
    MASKED = 3         # a gather/scatter lane switched off by the mask
    OUT_OF_BOUNDS = 4  # a gather/scatter lane whose index is outside the array (negative included)
    STORED = 5         # written to the array
    DROPPED = 6        # a store lane outside the array: not written
    COLLISION = 7      # a scatter lane that wrote an element another lane of the same op also wrote
    MOVED = 8          # a shape op: the element came from (operand, position)


@dataclass
class Event:
    op: str                     # the IR op: load, store, gather, scatter, load_adv, store_adv, or a shape op
    array: str | None           # the kernel parameter name of the array
    line: int                   # the kernel source line
    col: int
    source: str                 # the text of that line
    blocks: np.ndarray
    coords: np.ndarray
    status: np.ndarray
    operand_shapes: tuple | None = None  # shape ops: the tile shape of each data operand
    padding_mode: str | None = None      # load, load_adv: the PaddingMode's name ("ZERO", "NAN", ...)
    padding_value: object = None         # load, load_adv, gather: a scalar, or a (B, *shape) array per lane
    # which op of the kernel recorded it (its place in the IR): ops of one line may share a location
    # (both broadcasts of `t[:, None] - t[None, :]`), so `merged` joins events by op, not by line
    op_number: int | None = field(default=None, compare=False, repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.status.shape[1:])

    @property
    def nbytes(self) -> int:
        padding = self.padding_value.nbytes if isinstance(self.padding_value, np.ndarray) else 0
        return self.blocks.nbytes + self.coords.nbytes + self.status.nbytes + padding

    def padding_of_lanes(self) -> np.ndarray | None:
        """The padding value of every lane, (B, *shape), or None for ops that do not pad."""
        if self.padding_value is None:
            return None
        return np.broadcast_to(np.asarray(self.padding_value), self.status.shape)

    def for_block(self, block) -> Event:
        """The lanes of one block (a tuple of 1 to 3 grid coordinates)."""
        block = tuple(block) + (0,) * (3 - len(block))
        rows = np.nonzero((self.blocks == np.asarray(block, np.int32)).all(axis=1))[0]
        if self.array is None:  # a shape op: the block's map, once (a loop runs the same op again)
            rows = rows[:1]
            return Event(self.op, None, self.line, self.col, self.source, self.blocks[rows],
                         self.coords[rows], self.status[rows], self.operand_shapes)
        pad = self.padding_value[rows] if isinstance(self.padding_value, np.ndarray) else self.padding_value
        return Event(self.op, self.array, self.line, self.col, self.source, self.blocks[rows],
                     self.coords[rows], self.status[rows], padding_mode=self.padding_mode, padding_value=pad)

    def counts(self) -> dict[str, int]:
        values, n = np.unique(self.status, return_counts=True)
        return {Status(int(v)).name: int(c) for v, c in zip(values, n)}


@dataclass
class Trace:
    kernel: str
    grid: tuple[int, int, int]
    arrays: dict[str, dict] = field(default_factory=dict)   # name -> {"shape": [...], "dtype": "float32"}
    events: list[Event] = field(default_factory=list)
    # every op's tile per block when run with values=True (interp/steps.py); not saved with the trace
    steps: object = field(default=None, repr=False, compare=False)

    def by_array(self, name: str) -> list[Event]:
        return [e for e in self.events if e.array == name]

    def by_op(self, op: str) -> list[Event]:
        return [e for e in self.events if e.op == op]

    def merged(self) -> Trace:
        """The events of each op from several chunks of the grid (and loop iterations) joined into one."""
        groups: dict = {}
        for e in self.events:
            groups.setdefault((e.op_number, e.op, e.array, e.line, e.col, e.shape), []).append(e)
        return Trace(self.kernel, self.grid, dict(self.arrays), [_joined(es) for es in groups.values()], self.steps)

    def save(self, path) -> None:
        """Write the trace to `path` (an .npz), atomically: a reader never sees half a file."""
        from .trace_file import save
        save(self, path)

    @classmethod
    def load(cls, path, *, max_bytes: int | None = None) -> Trace:
        """Read a trace file; InvalidTraceError naming the file and the reason if it is not one, or
        if reading and viewing it would take more than `max_bytes` (default 1 GiB) of memory."""
        from .trace_file import load
        return load(path, MAX_TRACE_BYTES if max_bytes is None else max_bytes)


def padding_scalar(values: np.ndarray):
    """One Python scalar when every lane pads with the same value (bit for bit: -0.0 is not 0.0),
    else the array itself."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if flat.size and (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all():
        return flat[0].item()
    return values


def _joined(events: list[Event]) -> Event:
    """One op's events as one: a shape op whose map is the same everywhere keeps its one row, else
    every event's rows (blocks, coordinates, status) are stacked."""
    first = events[0]
    if len(events) == 1 or (first.array is None and all(
            len(e.blocks) == 1 and np.array_equal(e.coords, first.coords) for e in events)):
        return first
    return Event(first.op, first.array, first.line, first.col, first.source,
                 np.concatenate([e.blocks for e in events]), np.concatenate([e.coords for e in events]),
                 np.concatenate([e.status for e in events]), first.operand_shapes, first.padding_mode,
                 _joined_padding(events), first.op_number)


def _joined_padding(events: list[Event]):
    """The padding value of one op's events from several chunks of the grid, joined."""
    values = [e.padding_value for e in events]
    if all(not isinstance(v, np.ndarray) for v in values):
        first = values[0]
        if all(_same_scalar(v, first) for v in values):
            return first
    return np.concatenate([e.padding_of_lanes() for e in events])


def _same_scalar(a, b) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)   # repr tells -0.0 from 0.0 and matches NaN with NaN
