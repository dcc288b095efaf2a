"""Access traces: what every executed memory op (and shape op) touched, for the pictures.

A trace is a list of events, each a few NumPy arrays (never a Python object per element):

    event.blocks  (B, 3) int32        the blocks that executed the op (B = how many)
    event.coords  (B, *shape, ndim)   int32 element coordinates into the array, per lane
    event.status  (B, *shape) uint8   what happened to each lane (Status below)

For shape ops (reshape, permute, broadcast, cat, extract, insert, and the `order` of a load)
`coords` holds, per output element, (operand number, flat position in that operand); the array
is None and B is 1 because the map is the same in every block; `operand_shapes` gives the
input tiles' shapes.

Reads that pad record what a padded lane reads: `padding_mode` (load, load_adv: the PaddingMode's
name) and `padding_value` (load, load_adv, gather): a Python scalar when every lane of the event
pads with the same value, else a (B, *shape) array of the value per lane (a gather's
padding_value tile).

On disk a trace is one `.npz` file: the entry `meta` holds UTF-8 JSON
`{"format": "tileworkbench-trace", "version": 2, "kernel", "grid", "arrays": {name: {"shape", "dtype"}},
"events": [{"op", "array", "line", "col", "source", "shape", "operand_shapes", "padding_mode",
"padding_value"}, ...]}` and the entries `e<k>_blocks`, `e<k>_coords`, `e<k>_status` (and
`e<k>_padding` for a per-lane padding value) hold event k's arrays. Version 1 files (no padding
fields) still load, with padding_mode and padding_value None. docs/traces.md has the details.
"""
from __future__ import annotations

import enum
import json
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

FORMAT = "tileworkbench-trace"
VERSION = 2
READABLE_VERSIONS = (1, 2)
PER_LANE = "lanes"   # meta's padding_value when the value differs between lanes (in e<k>_padding)


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

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.status.shape[1:])

    def padding_of_lanes(self) -> np.ndarray | None:
        """The padding value of every lane, (B, *shape), or None for ops that do not pad."""
        if self.padding_value is None:
            return None
        return np.broadcast_to(np.asarray(self.padding_value), self.status.shape)

    def for_block(self, block) -> Event:
        """The lanes of one block (a tuple of 1 to 3 grid coordinates)."""
        block = tuple(block) + (0,) * (3 - len(block))
        rows = np.nonzero((self.blocks == np.asarray(block, np.int32)).all(axis=1))[0]
        if self.array is None:  # a shape op's map is the same in every block
            rows = np.zeros(1, np.intp) if len(rows) else rows
            return Event(self.op, None, self.line, self.col, self.source, self.blocks[:len(rows)],
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

    def by_array(self, name: str) -> list[Event]:
        return [e for e in self.events if e.array == name]

    def by_op(self, op: str) -> list[Event]:
        return [e for e in self.events if e.op == op]

    def merged(self) -> Trace:
        """Events of one op (same line, same array) from several chunks of the grid joined into one."""
        groups: dict = {}
        for e in self.events:
            groups.setdefault((e.op, e.array, e.line, e.col, e.shape), []).append(e)
        events = []
        for (op, array, line, col, _), es in groups.items():
            if len(es) == 1 or array is None:
                events.append(es[0] if array is not None or len(es) == 1 else
                              Event(op, None, line, col, es[0].source, np.concatenate([x.blocks for x in es]),
                                    es[0].coords, es[0].status, es[0].operand_shapes))
                continue
            events.append(Event(op, array, line, col, es[0].source, np.concatenate([x.blocks for x in es]),
                                np.concatenate([x.coords for x in es]), np.concatenate([x.status for x in es]),
                                padding_mode=es[0].padding_mode, padding_value=_joined_padding(es)))
        return Trace(self.kernel, self.grid, dict(self.arrays), events)

    def save(self, path) -> None:
        """Write the trace to `path` (an .npz), atomically: a reader never sees half a file."""
        meta = {"format": FORMAT, "version": VERSION, "kernel": self.kernel, "grid": list(self.grid),
                "arrays": self.arrays,
                "events": [{"op": e.op, "array": e.array, "line": e.line, "col": e.col, "source": e.source,
                            "shape": list(e.shape),
                            "operand_shapes": [list(s) for s in e.operand_shapes] if e.operand_shapes else None,
                            "padding_mode": e.padding_mode, "padding_value": _padding_to_json(e.padding_value)}
                           for e in self.events]}
        entries = {"meta": np.frombuffer(json.dumps(meta, allow_nan=False).encode(), np.uint8)}
        for k, e in enumerate(self.events):
            entries[f"e{k}_blocks"], entries[f"e{k}_coords"], entries[f"e{k}_status"] = e.blocks, e.coords, e.status
            if isinstance(e.padding_value, np.ndarray):
                entries[f"e{k}_padding"] = e.padding_value
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez_compressed(f, **entries)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path) -> Trace:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path} is not a tileworkbench trace")
            if meta.get("version") not in READABLE_VERSIONS:
                raise ValueError(f"{path} is a version {meta.get('version')} trace; this tileworkbench reads "
                                 f"versions {', '.join(map(str, READABLE_VERSIONS))}")
            events = [Event(m["op"], m["array"], m["line"], m["col"], m["source"], data[f"e{k}_blocks"],
                            data[f"e{k}_coords"], data[f"e{k}_status"],
                            tuple(map(tuple, m["operand_shapes"])) if m.get("operand_shapes") else None,
                            m.get("padding_mode"),
                            data[f"e{k}_padding"] if m.get("padding_value") == PER_LANE else
                            _padding_from_json(m.get("padding_value")))
                      for k, m in enumerate(meta["events"])]
        return cls(meta["kernel"], tuple(meta["grid"]), meta["arrays"], events)


def padding_scalar(values: np.ndarray):
    """One Python scalar when every lane pads with the same value (bit for bit: -0.0 is not 0.0),
    else the array itself."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if flat.size and (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all():
        return flat[0].item()
    return values


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


def _padding_to_json(value):
    """JSON has no NaN or infinities: those travel as the strings "nan", "inf", "-inf"."""
    if isinstance(value, np.ndarray):
        return PER_LANE
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if np.isnan(value) else "inf" if value > 0 else "-inf"
    return value


def _padding_from_json(value):
    return float(value) if value in ("nan", "inf", "-inf") else value
