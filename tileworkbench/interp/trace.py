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
`{"format": "tileworkbench-trace", "version": 3, "kernel", "grid", "arrays": {name: {"shape", "dtype"}},
"events": [{"op", "array", "line", "col", "source", "shape", "operand_shapes", "padding_mode",
"padding_value"}, ...]}` and the entries `e<k>_blocks`, `e<k>_coords`, `e<k>_status` (and
`e<k>_padding` for a per-lane padding value) hold event k's arrays. Since version 3 the coordinates
are stored as differences between neighbouring lanes, one row per coordinate: they are nearly all
equal, so the fastest zlib level shrinks them about a hundredfold (saving a 4096x4096 trace went
from about a minute to a few seconds). Versions 1 and 2 (coordinates as they are; version 1 without
padding fields) still load. A file that is not a readable trace raises InvalidTraceError naming it
and what is wrong, and `load` allocates at most `max_bytes`. docs/traces.md has the details.
"""
from __future__ import annotations

import enum
import json
import os
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field

import numpy as np

FORMAT = "tileworkbench-trace"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
PER_LANE = "lanes"   # meta's padding_value when the value differs between lanes (in e<k>_padding)
MAX_TRACE_BYTES = 1 << 30  # what `Trace.load` allocates at most unless told more: a small zip can claim GiBs
_MAX_META_BYTES = 64 << 20


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
    # every op's tile per block when run with values=True (interp/steps.py); not saved with the trace
    steps: object = field(default=None, repr=False, compare=False)

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
        return Trace(self.kernel, self.grid, dict(self.arrays), events, self.steps)

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
            entries[f"e{k}_blocks"], entries[f"e{k}_status"] = e.blocks, e.status
            entries[f"e{k}_coords"] = _lane_differences(e.coords)
            if isinstance(e.padding_value, np.ndarray):
                entries[f"e{k}_padding"] = e.padding_value
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f, \
                    zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
                for name, array in entries.items():
                    with archive.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path, *, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
        """Read a trace file; InvalidTraceError if it is not one, or if its arrays would take more
        than `max_bytes` of memory."""
        try:
            with zipfile.ZipFile(path) as archive:
                return _read_trace(_Members(archive, max_bytes), path)
        except InvalidTraceError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, IndexError, ValueError, TypeError,
                AttributeError, UnicodeDecodeError, RecursionError, NotImplementedError) as e:
            raise InvalidTraceError(f"{os.fspath(path)} is not a readable tileworkbench trace: "
                                    f"{type(e).__name__}: {e}") from None


class _Members:
    """The .npy members of a trace's zip, each checked before it is read: a plain dtype, and no more
    bytes in all than the budget."""

    def __init__(self, archive: zipfile.ZipFile, budget: int):
        self.archive, self.budget = archive, budget

    def __contains__(self, name: str) -> bool:
        return name + ".npy" in self.archive.NameToInfo

    def read(self, name: str, limit: int | None = None) -> np.ndarray:
        with self.archive.open(name + ".npy") as f:
            version = np.lib.format.read_magic(f)
            header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = header(f)
            if dtype.hasobject:
                raise InvalidTraceError(f"{self.archive.filename}: entry {name} holds Python objects")
            count = int(np.prod(shape, dtype=object))
            nbytes = count * dtype.itemsize
            if nbytes > min(self.budget, limit if limit is not None else self.budget):
                raise InvalidTraceError(
                    f"{self.archive.filename}: entry {name} of shape {tuple(shape)} needs {nbytes} bytes, more "
                    f"than the {self.budget} left to read (Trace.load(path, max_bytes=...) reads bigger traces)")
            self.budget -= nbytes
            array = np.empty(count, dtype)
            if f.readinto(memoryview(array).cast("B")) != nbytes:
                raise InvalidTraceError(f"{self.archive.filename}: entry {name} is truncated")
            return array.reshape(shape, order="F" if fortran else "C")


def _read_trace(members: _Members, path) -> Trace:
    meta = json.loads(members.read("meta", _MAX_META_BYTES).tobytes().decode())
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InvalidTraceError(f"{os.fspath(path)} is not a tileworkbench trace (its meta names no "
                                f"format {FORMAT!r})")
    version = meta.get("version")
    version = int(version) if isinstance(version, str) and version.isdigit() else version  # "2" as 2
    if version not in READABLE_VERSIONS:
        raise InvalidTraceError(f"{os.fspath(path)} is a version {meta.get('version')!r} trace; this "
                                f"tileworkbench reads versions {', '.join(map(str, READABLE_VERSIONS))}")
    grid = tuple(int(g) for g in meta["grid"])
    arrays = meta["arrays"]
    events = []
    for k, m in enumerate(meta["events"]):
        blocks, status = members.read(f"e{k}_blocks"), members.read(f"e{k}_status")
        shape = tuple(int(n) for n in m["shape"])
        if blocks.ndim != 2 or blocks.shape[1] != 3 or status.shape != blocks.shape[:1] + shape:
            raise InvalidTraceError(f"{os.fspath(path)}: event {k}'s blocks {blocks.shape} and status "
                                    f"{status.shape} do not match its shape {list(shape)}")
        ndim = len(arrays[m["array"]]["shape"]) if m["array"] is not None else 2
        coords = members.read(f"e{k}_coords")
        coords = _from_lane_differences(coords, status.shape, ndim) if version >= 3 else coords
        if coords.shape != status.shape + (ndim,):
            raise InvalidTraceError(f"{os.fspath(path)}: event {k}'s coordinates {coords.shape} do not match its "
                                    f"status {status.shape}")
        events.append(Event(str(m["op"]), m["array"], int(m["line"]), int(m["col"]), str(m["source"]), blocks,
                            coords, status,
                            tuple(map(tuple, m["operand_shapes"])) if m.get("operand_shapes") else None,
                            m.get("padding_mode"),
                            members.read(f"e{k}_padding") if m.get("padding_value") == PER_LANE else
                            _padding_from_json(m.get("padding_value"))))
    return Trace(str(meta["kernel"]), grid, arrays, events)


def _lane_differences(coords: np.ndarray) -> np.ndarray:
    """(B, *shape, ndim) coordinates as (ndim, lanes) differences from the previous lane (int32,
    wrapping): a tile's neighbouring lanes differ by 0 or 1 almost everywhere."""
    lanes = int(np.prod(coords.shape[:-1], dtype=np.int64))
    rows = np.moveaxis(np.asarray(coords, np.int32), -1, 0).reshape(coords.shape[-1], lanes)
    return np.diff(rows, axis=1, prepend=np.zeros((rows.shape[0], 1), np.int32))


def _from_lane_differences(deltas: np.ndarray, lanes_shape: tuple, ndim: int) -> np.ndarray:
    if deltas.shape != (ndim, int(np.prod(lanes_shape, dtype=np.int64))):
        raise InvalidTraceError(f"coordinate differences of shape {deltas.shape}, expected "
                                f"{(ndim, int(np.prod(lanes_shape)))}")
    rows = np.cumsum(deltas, axis=1, dtype=np.int32)
    return np.moveaxis(rows.reshape((ndim, *lanes_shape)), 0, -1)


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
