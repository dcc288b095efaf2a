"""What a CUDA Tile C++ launch touches, without a GPU: the kernel's Tile IR evaluated per block.

    trace = trace_launch(kernel, grid, (x, y, 1000))      # NumPy arrays for the pointers
    views_of_trace(trace)                                  # coverage, tile spaces, index maps

The Tile IR is what NVRTC's tile mode made of the cell (the stage tileiras compiles), so addresses,
masks and partition indices here are the compiler's reading of the C++, not a second reading of the
source. Only what decides addresses is evaluated: integers, booleans, pointers, tensor and partition
views, loops. Element values (floats, what a load reads) stay opaque; an access whose address or mask
depends on one is reported as not traceable. Each pointer-tile load or store becomes a gather or
scatter event (an index map); each partition-view load or store a load or store event (a tile space);
events carry the cell line (tileirdisasm -g locations) and coordinates in the argument array's shape.
"""
from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass

import numpy as np

from ..errors import TileCompilerExecutionError
from ..interp.trace import Event, Status, Trace

_ELEMENT_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "tf32": 4, "f64": 8}
_TILE = re.compile(r"tile<((?:\d+x)*)(ptr<\w+>|\w+)>")
_STATEMENT = re.compile(r"^\s*(?:(?P<results>%[\w.:-]+(?:, %[\w.:-]+)*) = )?(?P<op>[a-z_]+)\b(?P<rest>.*?)"
                        r"(?: loc\((?P<loc>#loc\d+)\))?\s*(?P<open>\{)?\s*$")
_LOC = re.compile(r"^(#loc\d*) = (.*)$", re.M)  # loc("file":line:col), or a #cuda_tile.di_loc of another
_PADDING = {"zero": "ZERO", "neg_zero": "NEG_ZERO", "pos_inf": "POS_INF", "neg_inf": "NEG_INF", "nan": "NAN"}


class Opaque:
    """A value the trace does not compute (an element value, or what depends on one)."""


OPAQUE = Opaque()


@dataclass
class Pointer:
    base: str | None        # the kernel parameter it points into; None: the block's own memory (alloca)
    offset: np.ndarray      # bytes, per lane
    element: int            # bytes of the pointee


@dataclass
class View:
    pointer: Pointer
    shape: list
    strides: list
    tile: tuple = ()
    padding: str | None = None


class _Untraceable(Exception):
    pass


def trace_launch(kernel, grid, args) -> Trace:
    """Evaluate the kernel's Tile IR for every block of `grid` with `args` (NumPy arrays for pointer
    parameters, numbers for scalars) and record every load and store."""
    grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    text = kernel.compile("sm_90").ptx
    if not text:
        from .tile_cpp import TileCompilerUnavailableError, no_tile_ir_text
        raise TileCompilerUnavailableError(no_tile_ir_text())
    names = [p.name for p in kernel.parameters("sm_90")]
    if len(args) != len(names):
        raise TypeError(f"`{kernel.name}{kernel.signature}` takes {len(names)} arguments, {len(args)} were given")
    arrays = {n: a for n, a in zip(names, args) if isinstance(a, np.ndarray)}
    body, params = _entry(text, kernel.cubin_name("sm_90"))
    locations = _locations(text, kernel.first_line, kernel.source.splitlines())
    recorder = _Recorder(arrays, locations)
    for block in itertools.product(*(range(g) for g in grid)):
        values = {"%blockId": block, "%grid": grid}
        for param, name, value in zip(params, names, args):
            values[param] = Pointer(name, np.zeros((), np.int64), _element(name, arrays)) \
                if isinstance(value, np.ndarray) else np.asarray(value)
        recorder.block = block
        _run(body, 0, len(body), values, recorder)
    trace = Trace(kernel.expression, grid, {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in arrays.items()})
    trace.events = recorder.events()
    return trace


def _element(name, arrays) -> int:
    return arrays[name].dtype.itemsize


def _entry(text: str, name: str):
    lines = text.splitlines()
    start = next((k for k, line in enumerate(lines) if line.startswith(f"entry @{name}(")), None)
    if start is None:
        raise TileCompilerExecutionError(f"the Tile IR has no entry {name}")
    params = re.findall(r"(%arg\d+):", lines[start].split(")")[0])
    end = next(k for k in range(start + 1, len(lines)) if lines[k].startswith("}"))
    return [(line, _STATEMENT.match(line)) for line in lines[start + 1:end] if line.strip()], params


def _locations(text: str, first_line: int, source: list[str]) -> dict[str, tuple[int, int, str]]:
    """#locN -> (cell line, column, its text): the last place in the cell its location chain names,
    moved to the call it is an argument of (`_call_start`)."""
    table = dict(_LOC.findall(text))
    from .cpp import _without_comments
    code = _without_comments("\n".join(source)).splitlines()

    def places(ref, depth=0):
        found = re.findall(r'"([^"]*)":(\d+):(\d+)', table.get(ref, ""))
        for inner in re.findall(r"#loc\d*", table.get(ref, "")) if depth < 8 else ():
            found += places(inner, depth + 1)
        return found
    out = {}
    for ref in table:
        cell = [(int(line), int(col)) for f, line, col in places(ref) if os.path.basename(f) == "cell"]
        if cell:
            row, col = _call_start(code, cell[-1][0] - first_line, cell[-1][1] - 1)
            out[ref] = (row + first_line, col, source[row] if 0 <= row < len(source) else "")
    return out


def _call_start(code: list[str], row: int, col: int) -> tuple[int, int]:
    """Where the call whose arguments hold (row, col) begins, when it begins on an earlier line: NVRTC
    places an access that spans lines at one of its arguments, and the views (as for Python cells)
    name the line the call is written on. `code`: the cell's lines, comments blanked."""
    if not 0 <= row < len(code):
        return row, col
    depth, r, c = 0, row, min(col, len(code[row]))
    while r >= 0:
        for k in range(c - 1, -1, -1):
            ch = code[r][k]
            if ch in ")}":  # a group the place is not in: an argument list, a braced init, a block
                depth += 1
            elif ch in "({" and depth:
                depth -= 1
            elif ch == "(":  # the innermost call around the place: its name, where it is written
                if r == row:
                    return row, col
                callee = re.search(r"[\w.:]+(?:<[^()]*>)?\s*$", code[r][:k])
                return r, callee.start() if callee else len(code[r]) - len(code[r].lstrip())
            elif ch in ";{" and not depth:
                return row, col  # the statement begins: no call around the place
        r -= 1
        c = len(code[r]) if r >= 0 else 0
    return row, col


class _Recorder:
    """Events by access site and by how many times a block reached it (a loop's k-th pass)."""

    def __init__(self, arrays, locations):
        self.arrays, self.locations, self.block = arrays, locations, (0, 0, 0)
        self.sites: dict = {}
        self.passes: dict = {}

    def record(self, statement, op, pointer, coords, status, padding=None):
        if pointer.base is None or pointer.base not in self.arrays:
            return  # the block's own memory (a local array), not an argument
        loc = self.locations.get(statement.group("loc"), (0, 0, ""))
        site = (op, pointer.base, loc)
        k = self.passes[(site, self.block)] = self.passes.get((site, self.block), -1) + 1
        self.sites.setdefault((site, k), []).append((self.block, coords, status, padding))

    def events(self) -> list[Event]:
        events = []
        for ((op, array, (line, col, source)), _), rows in self.sites.items():
            padding = rows[0][3]
            events.append(Event(op, array, line, col, source, np.array([r[0] for r in rows], np.int32),
                                np.stack([r[1] for r in rows]).astype(np.int32),
                                np.stack([r[2] for r in rows]).astype(np.uint8), padding_mode=padding,
                                padding_value=None if padding is None else 0))
        return events


def _run(body, start, end, values, recorder):
    k = start
    while k < end:
        line, m = body[k]
        if m is not None and m.group("open") and m.group("op") in ("for", "if"):
            close = _matching(body, k)
            if m.group("op") == "for":
                _loop(m, body, k + 1, close, values, recorder)
            else:
                _branch(m, body, k + 1, close, values, recorder)
            k = close + 1
            continue
        if m is not None:
            _step(m, values, recorder)
        k += 1


def _matching(body, k) -> int:
    """The line that closes the region opened at line k."""
    depth = 0
    for j in range(k, len(body)):
        depth += body[j][0].count("{") - body[j][0].count("}")
        if depth == 0:
            return j
    return len(body) - 1


def _branch(m, body, start, close, values, recorder):
    """`if %c {...} else {...}`: the side the condition takes (the results, element values, are opaque)."""
    condition = values.get(_operands(m.group("rest"))[0], OPAQUE)
    if isinstance(condition, Opaque):
        raise _Untraceable("a branch on loaded values")
    middle, depth = close, 1
    for j in range(start, close):
        if depth == 1 and body[j][0].strip().startswith("} else {"):
            middle = j
            break
        depth += body[j][0].count("{") - body[j][0].count("}")
    taken = (start, middle) if int(condition) else (middle + 1, close)
    _run(body, *taken, values, recorder)
    for name in _results(m):
        values[name] = OPAQUE


def _results(m) -> list[str]:
    names = []
    for r in (m.group("results") or "").split(", "):
        if ":" in r:  # %for:3 names %for#0, %for#1, %for#2
            base, count = r.split(":")
            names += [f"{base}#{i}" for i in range(int(count))]
        elif r:
            names.append(r)
    return names


def _loop(m, body, start, close, values, recorder):
    header = re.match(r"\s*(%[\w.-]+) in \((%[\w.-]+) to (%[\w.-]+), step (%[\w.-]+)\)(?:.*iter_values\((.*?)\))?",
                      m.group("rest"))
    iv, lb, ub, step = header.group(1), *(values[n] for n in header.group(2, 3, 4))
    if any(isinstance(v, Opaque) for v in (lb, ub, step)):
        raise _Untraceable("a loop's bounds depend on loaded values")
    carried = [a.split(" = ")[0] for a in (header.group(5) or "").split(", ") if a]
    for name, init in zip(carried, [a.split(" = ")[1] for a in (header.group(5) or "").split(", ") if a]):
        values[name] = values.get(init)
    last = body[close - 1][1]
    inner_end = close - 1 if last is not None and last.group("op") == "continue" else close
    for i in range(int(lb), int(ub), int(step)):
        values[iv] = np.asarray(i, np.int64)
        _run(body, start, inner_end, values, recorder)
        if inner_end != close:
            passed = [values.get(n.strip()) for n in last.group("rest").split(":")[0].split(",") if n.strip()]
            for name, value in zip(carried, passed):
                values[name] = value
    for i, name in enumerate(_results(m)):
        values[name] = values.get(carried[i]) if i < len(carried) else None


def _operands(rest: str) -> list[str]:
    return re.findall(r"%[\w.-]+", rest.split(" : ")[0])


def _result_type(rest: str):
    """(shape, element) of the first tile result type."""
    types = rest.split(" : ", 1)[1] if " : " in rest else ""
    types = types.split("->")[-1]
    found = _TILE.search(types)
    if not found:
        return None, None
    return tuple(int(d) for d in found.group(1).split("x") if d), found.group(2)


def _step(m, values, recorder):
    op, rest, results = m.group("op"), m.group("rest"), _results(m)
    if op in ("get_tile_block_id", "get_num_tile_blocks"):
        source = values["%blockId"] if op == "get_tile_block_id" else values["%grid"]
        for name, v in zip(results, source):
            values[name] = np.asarray(v, np.int64)
        return
    get = [values.get(n, OPAQUE) for n in _operands(rest)]
    shape, element = _result_type(rest)
    try:
        value = _evaluate(op, rest, get, shape, element, values, m, recorder)
    except _Untraceable as e:
        raise TileCompilerExecutionError(f"--viz cannot trace this kernel: {e}") from None
    for name in results:
        values[name] = value
    if op in ("load_ptr_tko", "load_view_tko", *_ATOMICS) and len(results) > 1:
        values[results[1]] = None  # the token


def _evaluate(op, rest, get, shape, element, values, m, recorder):
    if op == "constant":
        return _constant(rest, shape)
    if op == "iota":
        return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    if op in ("assume", "make_token", "join_tokens", "return", "continue", "yield"):
        return get[-1] if op == "assume" else None
    if op == "alloca":
        return Pointer(None, np.zeros((), np.int64), 1)
    if op == "make_tensor_view":
        shape_ops = re.search(r"shape = \[(.*?)\]", rest).group(1)
        strides = re.search(r"strides = \[(.*?)\]", rest).group(1)
        return View(get[0], [_scalar(s, values) for s in shape_ops.split(", ")],
                    [_scalar(s, values) for s in strides.split(", ")])
    if op == "make_partition_view":
        tile = tuple(int(d) for d in re.search(r"tile=\(([\dx]+)\)", rest).group(1).split("x"))
        padding = re.search(r"padding_value = (\w+)", rest)
        return View(get[0].pointer, get[0].shape, get[0].strides, tile,
                    _PADDING.get(padding.group(1)) if padding else None)
    if op in ("load_view_tko", "store_view_tko"):
        return _view_access(op, rest, get, values, m, recorder)
    if op in ("load_ptr_tko", "store_ptr_tko", *_ATOMICS):
        return _pointer_access(op, rest, get, m, recorder)
    if any(isinstance(v, Opaque) for v in get) or element is None or element.startswith("f") or element == "bf16":
        return OPAQUE
    if any(isinstance(v, Pointer) for v in get):
        return _pointer_op(op, get, element, shape)
    return _integer(op, rest, get, shape, element)


def _scalar(text, values):
    text = text.strip()
    return int(values[text]) if text.startswith("%") else int(text)


def _constant(rest, shape):
    body = re.search(r"<(\w+): (.*?)>\s*:", rest)
    element, literal = body.group(1), body.group(2)
    if element.startswith("f") or element == "bf16":
        return OPAQUE
    items = [int(x == "true") if x in ("true", "false") else int(x) for x in re.findall(r"true|false|-?\d+", literal)]
    return np.broadcast_to(np.array(items if literal.startswith("[") else items[0], np.int64), shape or ()).copy()


def _pointer_op(op, get, element, shape):
    p = next(v for v in get if isinstance(v, Pointer))
    if op == "offset":
        return Pointer(p.base, p.offset + np.asarray(get[1], np.int64) * p.element, p.element)
    if op == "ptr_to_ptr":
        return Pointer(p.base, p.offset, _ELEMENT_BYTES.get(element[4:-1], 1))
    if op == "reshape":
        return Pointer(p.base, np.reshape(p.offset, shape), p.element)
    if op == "broadcast":
        return Pointer(p.base, np.broadcast_to(p.offset, shape).copy(), p.element)
    raise _Untraceable(f"pointer operation {op}")


_BINARY = {"addi": np.add, "subi": np.subtract, "muli": np.multiply, "andi": np.bitwise_and, "ori": np.bitwise_or,
           "xori": np.bitwise_xor, "maxi": np.maximum, "mini": np.minimum, "shli": np.left_shift}
_COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less_than": np.less, "less_than_or_equal": np.less_equal,
            "greater_than": np.greater, "greater_than_or_equal": np.greater_equal}


def _integer(op, rest, get, shape, element):
    a = [np.asarray(v, np.int64) for v in get]
    if op in _BINARY:
        return _wrap(_BINARY[op](a[0], a[1]), element)
    if op == "divi":
        return _wrap(np.floor_divide(a[0], a[1]) if "rounding<negative_inf>" in rest else
                     np.trunc(a[0] / np.where(a[1] == 0, 1, a[1])).astype(np.int64), element)
    if op == "remi":
        return _wrap(np.fmod(a[0], np.where(a[1] == 0, 1, a[1])), element)
    if op == "shri":
        return _wrap(np.right_shift(a[0], a[1]), element)
    if op == "cmpi":
        predicate = rest.split()[0]
        return _COMPARE[predicate](a[0], a[1]).astype(np.int64)
    if op == "select":
        return np.where(a[0] != 0, a[1], a[2])
    if op in ("exti", "trunci", "bitcast"):
        unsigned = "unsigned" in rest and op == "exti"
        source = _TILE.search(rest.split(" : ")[1]).group(2) if " : " in rest else element
        return _wrap(_wrap(a[0], source, unsigned), element)
    if op == "reshape":
        return a[0].reshape(shape)
    if op == "broadcast":
        return np.broadcast_to(a[0], shape).copy()
    if op == "permute":
        order = [int(d) for d in re.search(r"\[([\d, ]+)\]", rest).group(1).split(",")]
        return np.transpose(a[0], order)
    raise _Untraceable(f"the Tile IR operation `{op}` on integers")


def _wrap(x, element, unsigned=False):
    """Integers of `element`'s width (i1: 0 or 1), signed unless `unsigned`."""
    bits = _ELEMENT_BYTES.get(element, 8) * 8 if element != "i1" else 1
    if bits >= 64:
        return np.asarray(x, np.int64)
    x = np.asarray(x, np.int64) & ((1 << bits) - 1)
    return x if unsigned or bits == 1 else np.where(x >= 1 << (bits - 1), x - (1 << bits), x)


def _view_access(op, rest, get, values, m, recorder):
    view = get[1] if op == "store_view_tko" else get[0]
    index_names = re.search(r"\[(.*?)\]", rest).group(1)
    index = [_scalar(n, values) for n in index_names.split(", ")]
    lanes = np.indices(view.tile).reshape(len(view.tile), -1).T
    element_index = np.asarray(index) * np.asarray(view.tile) + lanes
    inside = (element_index < np.asarray(view.shape)).all(axis=1)
    flat = (element_index * np.asarray(view.strides)).sum(axis=1)
    array = recorder.arrays.get(view.pointer.base)
    store = op == "store_view_tko"
    if array is not None and list(array.shape) == view.shape and not view.pointer.offset.any():
        # the view is the array: a tile of its tile space (out-of-range lanes keep their place beside it)
        kind, coords = ("store" if store else "load"), element_index
        ok, miss = (Status.STORED, Status.DROPPED) if store else (Status.LOADED, Status.PADDED)
    else:  # another shape over the same memory: an index map of the elements each lane reaches
        kind = "scatter" if store else "gather"
        coords = _coords_of(view.pointer.offset + flat * view.pointer.element, array, view.pointer.element)
        ok, miss = (Status.STORED if store else Status.LOADED), Status.MASKED
    status = np.where(inside, ok, miss).reshape(view.tile)
    recorder.record(m, kind, view.pointer, coords.reshape(*view.tile, -1), status,
                    view.padding if kind == "load" else None)
    return None if store else OPAQUE


# where each pointer-tile access has its mask among its operands (a token there reads as no mask)
_MASK_AT = {"load_ptr_tko": 1, "store_ptr_tko": 2, "atomic_rmw_tko": 2, "atomic_cas_tko": 3}
_ATOMICS = ("atomic_rmw_tko", "atomic_cas_tko")
_RMW_MODES = {"addf": "add", "addi": "add", "maxf": "max", "minf": "min", "umax": "max", "umin": "min"}


def _pointer_access(op, rest, get, m, recorder):
    """A pointer-tile load (a gather), store (a scatter) or atomic (`atomic_add`, ... as in Python
    traces: `atomic_rmw_tko relaxed device %ptrs, addf, %values, %mask`)."""
    pointer = get[0]
    if not isinstance(pointer, Pointer):
        raise _Untraceable("a pointer tile computed from loaded values")
    mask = get[_MASK_AT[op]] if len(get) > _MASK_AT[op] else None
    if isinstance(mask, Opaque):
        raise _Untraceable("a mask computed from loaded values")
    offsets = np.asarray(pointer.offset)
    array = recorder.arrays.get(pointer.base)
    if op == "atomic_rmw_tko":  # the mode after the pointers: add, addf, max, umax, xchg, ...
        mode = re.search(r"%[\w.:-]+, (\w+),", rest).group(1)
        kind = "atomic_" + _RMW_MODES.get(mode, mode)
    else:
        kind = {"load_ptr_tko": "gather", "store_ptr_tko": "scatter", "atomic_cas_tko": "atomic_cas"}[op]
    if array is not None:
        coords = _coords_of(offsets, array, array.dtype.itemsize)
        inside = (offsets >= 0) & (offsets < array.nbytes)
        status = np.where(inside, Status.LOADED if op == "load_ptr_tko" else Status.STORED, Status.OUT_OF_BOUNDS)
        if mask is not None:
            status = np.where(np.broadcast_to(np.asarray(mask) != 0, offsets.shape), status, Status.MASKED)
        recorder.record(m, kind, pointer, coords.reshape(*offsets.shape, -1), status)
    return None if op == "store_ptr_tko" else OPAQUE  # loads and atomics give values the trace does not know


def _coords_of(byte_offsets, array, element_bytes) -> np.ndarray:
    """(lanes, ndim) coordinates in `array` of each byte offset (clipped into it for lanes outside)."""
    flat = np.asarray(byte_offsets, np.int64).reshape(-1) // max(element_bytes, 1)
    if array is None:
        return flat[:, None]
    flat = np.clip(flat, 0, max(array.size - 1, 0))
    return np.stack(np.unravel_index(flat, array.shape), axis=-1) if array.ndim else flat[:, None] * 0

