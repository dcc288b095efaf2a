"""Trace files: `save` writes a Trace as one .npz; `load` reads one back and checks every claim
the file makes before it allocates for it or hands it to a view (docs/traces.md has the format,
docs/bad_input.md the limits).

A file is hostile until checked: only a regular file is opened (a FIFO or /dev/zero would block or
never end), no bigger than the budget; each zip member's size (its zip header and its .npy header)
is checked before it is read; the JSON metadata is small and holds few containers before it is
parsed; the grid, the arrays' shapes and dtypes, and every event's blocks, statuses, coordinates
and padding must be what the interpreter writes, so the views never meet a block outside the grid,
a status they do not know or an allocation the file did not pay for.
"""
from __future__ import annotations

import json
import math
import os
import stat
import tempfile
import tokenize
import zipfile
import zlib

import numpy as np

from ..ir.attrs import PaddingMode
from ..ir.ops import OPS, Category, ViewKind
from ..ir.types import dtype_named
from .trace import MAX_TRACE_BYTES, Event, InvalidTraceError, Status, Trace, view_bytes

FORMAT = "tileworkbench-trace"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
PER_LANE = "lanes"   # meta's padding_value when the value differs between lanes (in e<k>_padding)
_MAX_META_BYTES = 16 << 20
_MAX_META_CONTAINERS = 1 << 17   # JSON objects and lists: 64 MiB of `{},` would take GBs parsed
_MAX_GRID = (1 << 31) - 1   # blocks are int32
_MAX_RANK = 8
MAX_TILE_ELEMENTS = 1 << 24   # as frontend/compiler.py's: an event's tile, a shape op's operand
_LANE_STATUSES = {  # what each kind of op writes in its events (interp/memory.py, executor.py)
    "read": {Status.LOADED, Status.PADDED, Status.MASKED, Status.OUT_OF_BOUNDS},
    "write": {Status.STORED, Status.DROPPED, Status.MASKED, Status.OUT_OF_BOUNDS, Status.COLLISION},
    "shape": {Status.MOVED},
}
_INSIDE = (Status.LOADED, Status.STORED, Status.COLLISION)   # lanes that touched an element


def save(trace: Trace, path) -> None:
    """Write `trace` to `path` (an .npz), atomically: a reader never sees half a file."""
    meta = {"format": FORMAT, "version": VERSION, "kernel": trace.kernel, "grid": list(trace.grid),
            "arrays": trace.arrays,
            "events": [{"op": e.op, "array": e.array, "line": e.line, "col": e.col, "source": e.source,
                        "shape": list(e.shape),
                        "operand_shapes": [list(s) for s in e.operand_shapes] if e.operand_shapes else None,
                        "padding_mode": e.padding_mode, "padding_value": _padding_to_json(e.padding_value)}
                       for e in trace.events]}
    entries = {"meta": np.frombuffer(json.dumps(meta, allow_nan=False).encode(), np.uint8)}
    for k, e in enumerate(trace.events):
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


def load(path, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
    """Read a trace file; InvalidTraceError (naming the file and the reason) if it is not one, or if
    reading and viewing it would take more than `max_bytes` of memory."""
    name = os.fspath(path)
    with _open_regular(name, max_bytes) as f:
        try:
            with zipfile.ZipFile(f) as archive:
                return _read_trace(_Members(archive, name, max_bytes), name)
        except InvalidTraceError:
            raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, KeyError, IndexError, ValueError,
                TypeError, AttributeError, UnicodeDecodeError, RecursionError, NotImplementedError, OverflowError,
                SyntaxError, tokenize.TokenError) as e:
            raise InvalidTraceError(f"{name} is not a readable tileworkbench trace: {type(e).__name__}: {e}") from None


def _open_regular(name: str, max_bytes: int):
    """The file opened for reading if it is a regular file of at most `max_bytes`. Opened without
    blocking and checked before anything is read: a FIFO would wait for a writer for ever."""
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidTraceError(f"{name} is not a regular file (a device, a FIFO or a directory), so not a trace")
        if info.st_size > max_bytes:
            raise InvalidTraceError(f"{name} has {info.st_size} bytes, more than the {max_bytes} a trace may "
                                    f"take (Trace.load(path, max_bytes=...) reads bigger traces)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class _Members:
    """The .npy members of a trace's zip, each checked before it is read: a plain dtype, sizes that
    agree, and no more bytes in all than the budget."""

    def __init__(self, archive: zipfile.ZipFile, name: str, budget: int):
        self.archive, self.name, self.budget, self.max_bytes = archive, name, budget, budget

    def __contains__(self, name: str) -> bool:
        return name + ".npy" in self.archive.NameToInfo

    def spend(self, nbytes: int, what: str) -> None:
        if nbytes > self.budget:
            raise InvalidTraceError(
                f"{self.name}: {what} needs {nbytes} bytes, more than the {self.budget} left of max_bytes="
                f"{self.max_bytes} (Trace.load(path, max_bytes=...) reads bigger traces)")
        self.budget -= nbytes

    def read(self, name: str, limit: int | None = None) -> np.ndarray:
        """Member `name`, paid for from the budget; `limit`: at most so many bytes, outside the budget."""
        try:
            info = self.archive.getinfo(name + ".npy")
        except KeyError:
            raise InvalidTraceError(f"{self.name}: entry {name} is missing") from None
        if info.flag_bits & 0x1:
            raise InvalidTraceError(f"{self.name}: entry {name} is encrypted")
        if limit is not None and info.file_size > limit:
            raise InvalidTraceError(f"{self.name}: entry {name} has {info.file_size} bytes, more than {limit}")
        with self.archive.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version not in ((1, 0), (2, 0)):
                raise InvalidTraceError(f"{self.name}: entry {name} is a .npy of version {version}, not 1.0 or 2.0")
            header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, dtype = header(f)
            if dtype.hasobject or dtype.names is not None:
                raise InvalidTraceError(f"{self.name}: entry {name} holds Python objects or records")
            count = int(np.prod(shape, dtype=object))
            nbytes = count * dtype.itemsize
            if limit is None:
                self.spend(nbytes, f"entry {name} of shape {tuple(shape)}")
            elif nbytes > limit:
                raise InvalidTraceError(f"{self.name}: entry {name} has {nbytes} bytes, more than {limit}")
            if nbytes > info.file_size:
                raise InvalidTraceError(f"{self.name}: entry {name} of shape {tuple(shape)} claims {nbytes} bytes "
                                        f"but holds {info.file_size}")
            array = np.empty(count, dtype)
            if f.readinto(memoryview(array).cast("B")) != nbytes:
                raise InvalidTraceError(f"{self.name}: entry {name} is truncated")
            return array.reshape(shape, order="F" if fortran else "C")


def _meta(members: _Members) -> dict:
    data = members.read("meta", _MAX_META_BYTES)
    if data.dtype != np.uint8 or data.ndim != 1:
        raise InvalidTraceError(f"{members.name}: entry meta is not text")
    text = data.tobytes()
    if text.count(b"{") + text.count(b"[") > _MAX_META_CONTAINERS:
        raise InvalidTraceError(f"{members.name}: its meta holds more than {_MAX_META_CONTAINERS} JSON objects "
                                f"and lists, far more than a trace writes")
    meta = json.loads(text.decode())
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InvalidTraceError(f"{members.name} is not a tileworkbench trace (its meta names no format {FORMAT!r})")
    return meta


class _Checker:
    """Raises InvalidTraceError naming the file and what of it is wrong."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, ok, what: str) -> None:
        if not ok:
            raise InvalidTraceError(f"{self.name}: {what}")

    def count(self, x, what: str, low: int = 0, high: int = _MAX_GRID) -> int:
        self(type(x) is int and low <= x <= high, f"{what} must be an integer in [{low}, {high}], got {x!r}"[:300])
        return x

    def shape(self, x, what: str) -> tuple[int, ...]:
        self(isinstance(x, list) and len(x) <= _MAX_RANK, f"{what} must be a list of at most {_MAX_RANK} sizes")
        return tuple(self.count(n, f"{what}'s sizes") for n in x)


def _read_trace(members: _Members, name: str) -> Trace:
    meta = _meta(members)
    check = _Checker(name)
    version = meta.get("version")
    version = int(version) if isinstance(version, str) and version.isdigit() and len(version) < 4 else version
    if version not in READABLE_VERSIONS:
        raise InvalidTraceError(f"{name} is a version {repr(meta.get('version'))[:20]} trace; this tileworkbench "
                                f"reads versions {', '.join(map(str, READABLE_VERSIONS))}")
    check(isinstance(meta.get("kernel"), str), "its kernel name is not a string")
    grid = check.shape(meta.get("grid"), "its grid")
    check(len(grid) == 3 and min(grid) >= 1, f"its grid {list(grid)} is not 3 positive sizes")
    arrays = meta.get("arrays")
    check(isinstance(arrays, dict), "its arrays are not a JSON object")
    for array, info in arrays.items():
        check(isinstance(info, dict) and set(info) == {"shape", "dtype"}, f"array {repr(array)[:40]} is not {{shape, dtype}}")
        check.shape(info["shape"], f"array {repr(array)[:40]}'s shape")
        check(isinstance(info["dtype"], str) and _known_dtype(info["dtype"]),
              f"array {repr(array)[:40]}'s dtype {repr(info['dtype'])[:40]} is not a tile dtype")
    members.spend(view_bytes(grid, arrays), f"viewing a grid of {list(grid)} and arrays of shapes "
                                           f"{[info['shape'] for info in arrays.values()]}"[:300])
    events = meta.get("events")
    check(isinstance(events, list), "its events are not a list")
    out = [_event(members, check, k, m, grid, arrays, version) for k, m in enumerate(events)]
    return Trace(meta["kernel"], grid, arrays, out)


def _known_dtype(name: str) -> bool:
    try:
        dtype_named(name)
    except KeyError:
        return False
    return True


def _event(members: _Members, check: _Checker, k: int, m, grid: tuple, arrays: dict, version: int) -> Event:
    what = f"event {k}"
    check(isinstance(m, dict), f"{what} is not a JSON object")
    op, array = m.get("op"), m.get("array")
    decl = OPS.get(op) if isinstance(op, str) else None
    check(decl is not None and decl.category in (Category.MEMORY, Category.SHAPE),
          f"{what}'s op {repr(op)[:40]} is not a memory or shape op")
    is_shape = decl.category is Category.SHAPE
    check((array is None) == is_shape and (array is None or array in arrays),
          f"{what}'s array {repr(array)[:40]} is not one of the trace's arrays" if not is_shape else
          f"{what} is a shape op ({op}) naming an array")
    line, col = check.count(m.get("line"), f"{what}'s line"), check.count(m.get("col"), f"{what}'s col")
    check(isinstance(m.get("source"), str), f"{what}'s source is not a string")
    shape = check.shape(m.get("shape"), f"{what}'s shape")
    check(_is_tile_shape(shape), f"{what}'s shape {list(shape)} is not a tile shape")

    blocks, status = members.read(f"e{k}_blocks"), members.read(f"e{k}_status")
    check(blocks.ndim == 2 and blocks.shape[1] == 3 and len(blocks) >= 1 and status.shape == blocks.shape[:1] + shape,
          f"{what}'s blocks {blocks.shape} and status {status.shape} do not match its shape {list(shape)}")
    check(blocks.dtype.kind in "iu" and ((blocks >= 0) & (blocks < np.asarray(grid))).all(),
          f"{what} names a block outside the grid {list(grid)}")
    allowed = _LANE_STATUSES["shape" if is_shape else decl.access]
    check(status.dtype == np.uint8 and np.isin(status, list(allowed)).all(),
          f"{what}'s statuses are not all among {sorted(s.name for s in allowed)}")

    ndim = 2 if is_shape else len(arrays[array]["shape"])
    coords = members.read(f"e{k}_coords")
    check(coords.dtype.kind in "iu" and coords.dtype.itemsize <= 4,
          f"{what}'s coordinates are not 32-bit integers")
    if version >= 3:
        check(coords.shape == (ndim, status.size), f"{what}'s coordinate differences {coords.shape} do not match "
                                                   f"its status {status.shape}")
        coords = _from_lane_differences(coords.astype(np.int32, copy=False), status.shape, ndim)
    check(coords.shape == status.shape + (ndim,), f"{what}'s coordinates {coords.shape} do not match its status "
                                                  f"{status.shape}")
    coords = coords.astype(np.int32, copy=False)
    operand_shapes = _operand_shapes(check, what, op, m.get("operand_shapes"), is_shape, coords, version)
    if is_shape:
        _check_moves(check, what, coords, operand_shapes)
    else:
        check(decl.view is not ViewKind.TILE_SPACE or _is_tile_lattice(coords),
              f"{what}'s lanes do not form a tile: a {op} touches a box of the array, one lane per element")
        inside = np.isin(status, _INSIDE)
        bounds = np.asarray(arrays[array]["shape"], np.int64)
        check(((coords[inside] >= 0) & (coords[inside] < bounds)).all(),
              f"{what} touches elements outside array {repr(array)[:40]} of shape {list(bounds)}")
    return Event(op, array, line, col, m["source"], blocks.astype(np.int32, copy=False), coords, status,
                 operand_shapes, *_padding(members, check, k, m, status.shape))


def _operand_shapes(check: _Checker, what: str, op: str, shapes, is_shape: bool, coords, version: int):
    """A shape op's operand shapes: one tile shape per data operand. Version 1 files may lack them:
    then each operand is shown flat, as long as its positions reach."""
    if not is_shape:
        check(not shapes, f"{what} is a memory op with operand_shapes")
        return None
    count = 2 if op in ("cat", "insert") else 1
    if not shapes and version == 1:
        operand, position = coords[..., 0], coords[..., 1]
        out = tuple((int(position[operand == k].max(initial=0)) + 1,) for k in range(count))
    else:
        check(isinstance(shapes, list) and len(shapes) == count,
              f"{what}'s operand_shapes are not the {count} tile shape(s) of a {op}")
        out = tuple(check.shape(s, f"{what}'s operand shape") for s in shapes)
    check(all(_is_tile_shape(s) for s in out), f"{what}'s operand shapes {list(out)} are not tile shapes")
    return out


def _is_tile_shape(shape: tuple) -> bool:
    return all(n >= 1 for n in shape) and math.prod(shape) <= MAX_TILE_ELEMENTS


def _is_tile_lattice(coords: np.ndarray) -> bool:
    """Whether each row of (B, *tile, ndim) coordinates is a tile's box: lane i at origin + i, the
    tile's axes in some order (a load's `order`)."""
    tile, ndim = coords.shape[1:-1], coords.shape[-1]
    if len(tile) != ndim:
        return False
    offsets = coords - coords[(slice(None),) + (0,) * ndim + (None,) * ndim]
    lane = np.indices(tile, dtype=np.int32)
    free = list(range(ndim))
    for d in range(ndim):
        axis = next((a for a in free if (offsets[..., d] == lane[a]).all()), None)
        if axis is None:
            return False
        free.remove(axis)
    return True


def _check_moves(check: _Checker, what: str, coords: np.ndarray, operand_shapes) -> None:
    """A shape op's lanes each name (operand, flat position) inside that operand."""
    operand, position = coords[..., 0], coords[..., 1]
    sizes = np.array([math.prod(s) for s in operand_shapes])
    check(((operand >= 0) & (operand < len(sizes))).all(), f"{what} moves elements from operands it does not have")
    check(((position >= 0) & (position < sizes[np.clip(operand, 0, len(sizes) - 1)])).all(),
          f"{what} moves elements from outside its operands")


def _padding(members: _Members, check: _Checker, k: int, m: dict, lanes: tuple):
    """(padding_mode, padding_value) of event k."""
    mode, value = m.get("padding_mode"), m.get("padding_value")
    check(mode is None or (isinstance(mode, str) and mode in PaddingMode.__members__),
          f"event {k}'s padding_mode {repr(mode)[:40]} is not a PaddingMode")
    if value == PER_LANE:
        value = members.read(f"e{k}_padding")
        check(value.shape == lanes and value.dtype.kind in "biufV" and value.dtype.itemsize <= 16,
              f"event {k}'s padding {value.dtype}{value.shape} is not one value per lane {lanes}")
        return mode, value
    check(value is None or isinstance(value, float) or (isinstance(value, int) and abs(value) < 1 << 64)
          or value in ("nan", "inf", "-inf"),
          f"event {k}'s padding_value {repr(value)[:40]} is not a number")
    return mode, _padding_from_json(value)


def _lane_differences(coords: np.ndarray) -> np.ndarray:
    """(B, *shape, ndim) coordinates as (ndim, lanes) differences from the previous lane (int32,
    wrapping): a tile's neighbouring lanes differ by 0 or 1 almost everywhere."""
    lanes = int(np.prod(coords.shape[:-1], dtype=np.int64))
    rows = np.moveaxis(np.asarray(coords, np.int32), -1, 0).reshape(coords.shape[-1], lanes)
    return np.diff(rows, axis=1, prepend=np.zeros((rows.shape[0], 1), np.int32))


def _from_lane_differences(deltas: np.ndarray, lanes_shape: tuple, ndim: int) -> np.ndarray:
    rows = np.cumsum(deltas, axis=1, dtype=np.int32)
    return np.moveaxis(rows.reshape((ndim, *lanes_shape)), 0, -1)


def _padding_to_json(value):
    """JSON has no NaN or infinities: those travel as the strings "nan", "inf", "-inf"."""
    if isinstance(value, np.ndarray):
        return PER_LANE
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if np.isnan(value) else "inf" if value > 0 else "-inf"
    return value


def _padding_from_json(value):
    return float(value) if value in ("nan", "inf", "-inf") else value
