"""NumPy rules for the memory ops, with padding, bounds, masks, the checked mode and tracing.

All blocks of the batch run an op at once: element coordinates are (B, *tile_shape) arrays.
A lane outside the array never touches memory: loads substitute padding, stores drop it.

UNDETERMINED padding (the default) reads zero, as cuTile's GPU path does (its flash attention
relies on finite padding past a ragged key length). Misuse stays visible without poisoning results:
the trace marks those lanes PADDED with the mode UNDETERMINED, and `strict_padding` makes reading
them an error.
"""
from __future__ import annotations

import numpy as np

from ..errors import TileOutOfBoundsError, TileUndeterminedPaddingError, TileValueError
from ..ir.attrs import padding_value
from ..ir.ops import ATOMICS, Rules
from .trace import Status

MEMORY_RULES = Rules()
memory_rule = MEMORY_RULES.add


def _axis_range(n: int, axis: int, nd: int) -> np.ndarray:
    shape = [1] * (nd + 1)
    shape[axis + 1] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


def _per_block(x, nd: int) -> np.ndarray:
    """A (B,) or (1,) scalar index as a (B, 1, ..., 1) int64 array."""
    return np.asarray(x).astype(np.int64).reshape((-1,) + (1,) * nd)


def _tile_space_coords(array, index, shape, order):
    """Array coordinates (in array axis order) of a tile at `index` of the order-permuted tile space."""
    nd = len(shape)
    coords = [None] * nd
    for k, n in enumerate(shape):  # tile axis k walks array axis order[k]
        coords[order[k]] = _per_block(index[k], nd) * n + _axis_range(n, k, nd)
    return coords


class ArrayView:
    """An array argument seen through `array.slice(...)`: the argument's NumPy array, and per
    dimension an origin and an extent, each a (B,) or (1,) int64 array (bounds may differ by block)."""

    def __init__(self, base: np.ndarray, origin: list, extent: list):
        self.base, self.origin, self.extent = base, origin, extent

    @classmethod
    def of(cls, array) -> ArrayView:
        if isinstance(array, ArrayView):
            return array
        return cls(array, [np.zeros(1, np.int64)] * array.ndim, [np.array([n], np.int64) for n in array.shape])

    def restricted(self, rows) -> ArrayView:
        """The view as the blocks `rows` of the batch see it."""
        pick = [x if x.shape[0] == 1 else x[rows] for x in self.origin + self.extent]
        return ArrayView(self.base, pick[:self.base.ndim], pick[self.base.ndim:])


class ArrayChoice:
    """An array value that differs between the blocks of a batch (chosen under a runtime `if`, or
    carried by a loop): the array (a NumPy array or an ArrayView) each block holds."""

    def __init__(self, per_block: list):
        self.per_block = per_block

    def restricted(self, rows) -> ArrayChoice | np.ndarray | ArrayView:
        return chosen([self.per_block[r] for r in rows])


def per_block(array, size: int) -> list:
    """An array value as a list of what each of `size` blocks holds."""
    if isinstance(array, ArrayChoice):
        return list(array.per_block)
    if isinstance(array, ArrayView) and any(x.shape[0] > 1 for x in array.origin + array.extent):
        return [array.restricted([r]) for r in range(size)]  # bounds that differ by block
    return [array] * size


def chosen(blocks: list):
    """The array value of a batch whose blocks hold `blocks`: one array when they agree."""
    first = blocks[0]
    return first if all(b is first for b in blocks) else ArrayChoice(blocks)


def _lanes(array, coords, full):
    """The base array, the lanes' coordinates in it, and which lanes lie inside the (viewed) array,
    for lanes at coordinates `coords` of `array` (a NumPy array or an ArrayView)."""
    view = ArrayView.of(array)
    rank = len(full) - 1
    inside, absolute = np.ones(full, bool), []
    for c, origin, extent in zip(coords, view.origin, view.extent):
        inside &= (c >= 0) & (c < extent.reshape((-1,) + (1,) * rank))
        absolute.append(c + origin.reshape((-1,) + (1,) * rank))
    return view.base, absolute, inside




def _check_padding(ctx, op, array_name, array_shape, coords, padded):
    """Strict padding: a load that reads UNDETERMINED padding is an error (its values are unspecified)."""
    if not ctx.strict_padding or op.attrs["padding"].name != "UNDETERMINED" or not padded.any():
        return
    block, element = _first_lane(ctx, coords, padded)
    raise TileUndeterminedPaddingError(
        f"{op.name} from `{array_name}` reads UNDETERMINED padding: block {block} reads element {element} outside "
        f"an array of shape {tuple(array_shape)}; pass padding_mode= to say what it should read", op.loc)


def _first_lane(ctx, coords, mask) -> tuple[tuple, tuple]:
    """(block, array element) of the first lane where `mask` holds, for an error message."""
    lane = np.unravel_index(int(np.argmax(mask.reshape(-1))), mask.shape)
    block = tuple(int(b) for b in ctx.bids[lane[0] if ctx.bids.shape[0] > 1 else 0])
    return block, tuple(int(_full(c, mask.shape)[lane]) for c in coords)


def _full(x, shape):
    return np.broadcast_to(x, shape)


def _read(array, coords, full):
    """The elements at `coords`, one per lane (every lane of a 0-d array reads its one element)."""
    if not coords:
        return np.full(full, array[()])
    if array.size == 0:  # nothing to clamp to: every lane is padding, which the caller puts in
        return np.zeros(full, array.dtype)
    return array[tuple(_full(c, full) for c in coords)]


def _write(array, coords, values, ok):
    """Store the lanes where `ok` (later lanes win: blocks in order, then lanes in C order)."""
    if not coords:
        if ok.any():
            array[()] = values[ok][-1]
        return
    array[tuple(c[ok] for c in coords)] = values[ok]


def _writable(ctx, op, array) -> str:
    """The name of the array `op` writes, refusing a read-only one at the op's line."""
    name = ctx.array_name(array)
    if not array.flags.writeable:
        raise TileValueError(f"{op.name} into `{name}`: the NumPy array is read-only (pass a writable array, "
                             f"e.g. a copy)", op.loc)
    return name


def _check(ctx, op, array_name, array_shape, coords, bad, what):
    """Checked mode: an out-of-bounds lane of an op with check_bounds=False is an error, not UB."""
    if not ctx.checked or not bad.any():
        return
    block, element = _first_lane(ctx, coords, bad)
    raise TileOutOfBoundsError(
        f"{op.name} {what} `{array_name}` with check_bounds=False goes outside the array: block {block} "
        f"touches element {element} of an array of shape {tuple(array_shape)}", op.loc)


@memory_rule("load")
def load(ctx, op, array, *index):
    shape, order = op.attrs["shape"], op.attrs["order"]
    full = (ctx.size,) + tuple(shape)
    array, coords, inb = _lanes(array, _tile_space_coords(array, index, shape, order), full)
    name = ctx.array_name(array)
    if not op.attrs["check_bounds"]:
        _check(ctx, op, name, array.shape, coords, ~_full(inb, full), "from")
    _check_padding(ctx, op, name, array.shape, coords, ~_full(inb, full))
    pad = array.dtype.type(padding_value(op.attrs["padding"], op.result.dtype))
    if np.all(inb):
        values = _read(array, coords, full)
    else:
        safe = [np.where(inb, c, 0) for c in coords]
        values = np.where(inb, _read(array, safe, full), pad)
    ctx.record(op, name, coords, np.where(_full(inb, full), Status.LOADED, Status.PADDED), full,
               op.attrs["padding"].name, pad)
    return values


@memory_rule("store")
def store(ctx, op, array, *rest):
    *index, tile = rest
    order = op.attrs["order"]
    shape = tile.shape[1:]
    full = (ctx.size,) + tuple(shape)
    array, coords, inb = _lanes(array, _tile_space_coords(array, index, shape, order), full)
    name = _writable(ctx, op, array)
    if not op.attrs["check_bounds"]:
        _check(ctx, op, name, array.shape, coords, ~inb, "into")
    _write(array, [_full(c, full) for c in coords], _full(tile, full), inb)
    ctx.record(op, name, coords, np.where(inb, Status.STORED, Status.DROPPED), full)


def _element_lanes(ctx, op, array, rest, what):
    """Gather/scatter lanes: (operand of the op: padding or value, full shape, coordinates, in-bounds,
    mask-on), with the checked mode applied."""
    nd = len(ArrayView.of(array).origin)
    index, operand = rest[:nd], rest[nd]
    mask = rest[nd + 1] if op.attrs["has_mask"] else None
    full = (ctx.size,) + operand.shape[1:]  # the padding or value has the index shape
    coords = [_full(i.astype(np.int64), full) if i.dtype != np.uint64 else
              _full(np.where(i > np.iinfo(np.int64).max, -1, i).astype(np.int64), full) for i in index]
    array, coords, inb = _lanes(array, coords, full)
    on = _full(mask, full) if mask is not None else np.ones(full, bool)
    if not op.attrs["check_bounds"]:
        _check(ctx, op, ctx.array_name(array), array.shape, coords, on & ~inb, what)
    return operand, full, array, coords, inb, on


@memory_rule("gather")
def gather(ctx, op, array, *rest):
    pad, full, array, coords, inb, on = _element_lanes(ctx, op, array, rest, "from")
    name = ctx.array_name(array)
    ok = on & inb
    values = np.where(ok, _read(array, [np.where(ok, c, 0) for c in coords], full), _full(pad, full))
    status = np.where(ok, Status.LOADED, np.where(on, Status.OUT_OF_BOUNDS, Status.MASKED))
    ctx.record(op, name, coords, status, full, padding=pad)
    return values


@memory_rule("scatter")
def scatter(ctx, op, array, *rest):
    value, full, array, coords, inb, on = _element_lanes(ctx, op, array, rest, "into")
    name = _writable(ctx, op, array)
    nd = array.ndim
    ok = _full(on & inb, full)
    _write(array, coords, _full(value, full), ok)
    if ctx.tracing:
        status = np.where(ok, Status.STORED, np.where(on, Status.OUT_OF_BOUNDS, Status.MASKED)).astype(np.uint8)
        flat = np.ravel_multi_index(tuple(c[ok] for c in coords), array.shape) if nd else np.zeros(ok.sum(), np.int64)
        _, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True)
        status[ok] = np.where(counts[inverse] > 1, Status.COLLISION, Status.STORED)
        ctx.record(op, name, coords, status, full)


def _advanced_coords(op, array, index, starts):
    sd, lengths = op.attrs["sparse_dim"], op.attrs["lengths"]
    nd = len(lengths)
    coords, it = [], iter(starts)
    for d, n in enumerate(lengths):
        if d == sd:
            shape = [1] * (nd + 1)
            shape[0], shape[d + 1] = index.shape[0], n
            coords.append(index.astype(np.int64).reshape(shape))
        else:
            coords.append(_per_block(next(it), nd) + _axis_range(n, d, nd))
    return coords


@memory_rule("load_adv")
def load_adv(ctx, op, array, index, *starts):
    full = (ctx.size,) + op.result.shape
    array, coords, inb = _lanes(array, _advanced_coords(op, array, index, starts), full)
    name = ctx.array_name(array)
    _check_padding(ctx, op, name, array.shape, coords, ~inb)
    safe = tuple(np.where(inb, c, 0) for c in coords)
    pad = array.dtype.type(padding_value(op.attrs["padding"], op.result.dtype))
    values = np.where(inb, _read(array, safe, full), pad)
    ctx.record(op, name, coords, np.where(inb, Status.LOADED, Status.PADDED), full,
               op.attrs["padding"].name, pad)
    return values


@memory_rule("store_adv")
def store_adv(ctx, op, array, index, *rest):
    *starts, tile = rest
    full = (ctx.size,) + tile.shape[1:]
    array, coords, inb = _lanes(array, _advanced_coords(op, array, index, starts), full)
    name = _writable(ctx, op, array)
    array[tuple(_full(c, full)[inb] for c in coords)] = _full(tile, full)[inb]
    ctx.record(op, name, coords, np.where(inb, Status.STORED, Status.DROPPED), full)


def _atomic_update(name, old, operands):
    """The new value of one element (NumPy scalars of the array's dtype; 16-bit floats round once)."""
    if name == "atomic_cas":
        expected, desired = operands
        return desired if old.tobytes() == expected.tobytes() else old  # compares bits, as the hardware does
    (update,) = operands
    return {"atomic_xchg": lambda: update, "atomic_add": lambda: old + update,
            "atomic_max": lambda: max(old, update), "atomic_min": lambda: min(old, update),
            "atomic_and": lambda: old & update, "atomic_or": lambda: old | update,
            "atomic_xor": lambda: old ^ update}[name]()


def atomic(ctx, op, array, *rest):
    """Every lane in order (blocks in order, then lanes in C order): read the old value, write the
    update. A lane outside the array does nothing and returns 0 (a CAS returns `expected`)."""
    nd = len(ArrayView.of(array).origin)
    index, operands = rest[:nd], rest[nd:]
    full = (ctx.size,) + operands[0].shape[1:]
    array, coords, inb = _lanes(array, [_full(i.astype(np.int64), full) for i in index], full)
    name = _writable(ctx, op, array)
    if not op.attrs["check_bounds"]:
        _check(ctx, op, name, array.shape, coords, ~inb, "on")
    operands = [np.ascontiguousarray(_full(v, full)) for v in operands]
    old = np.array(operands[0]) if op.name == "atomic_cas" else np.zeros(full, array.dtype)
    for lane in zip(*np.nonzero(inb)):
        at = tuple(int(c[lane]) for c in coords)
        old[lane] = array[at]
        array[at] = _atomic_update(op.name, array[at], [v[lane] for v in operands])
    ctx.record(op, name, coords, np.where(inb, Status.STORED, Status.OUT_OF_BOUNDS), full)
    return old


for _name in ATOMICS:
    memory_rule(_name)(atomic)


@memory_rule("array_slice")
def array_slice(ctx, op, array, start, stop):
    view, axis = ArrayView.of(array), op.attrs["axis"]
    start, stop = start.astype(np.int64), stop.astype(np.int64)
    extent = view.extent[axis]
    bad = (start < 0) | (stop < start) | (stop > extent)
    if bad.any():
        k = int(np.argmax(np.broadcast_to(bad, (ctx.size,))))

        def at(x):  # block k's value
            return int(x[k if x.shape[0] > 1 else 0])
        raise TileOutOfBoundsError(f"slice along axis {axis} needs 0 <= start <= stop <= {at(extent)}; block "
                                   f"{tuple(int(b) for b in ctx.bids[k])} has start={at(start)}, stop={at(stop)}",
                                   op.loc)
    origin, extents = list(view.origin), list(view.extent)
    origin[axis] = view.origin[axis] + start
    extents[axis] = stop - start
    return ArrayView(view.base, origin, extents)


@memory_rule("list_item")
def list_item(ctx, op, *operands):
    """The array each block picks from a list argument (an index past the end is undefined on the GPU)."""
    *items, index = operands
    index = index.astype(np.int64)
    bad = (index < 0) | (index >= len(items))
    if bad.any():
        k = int(np.argmax(bad))
        block = tuple(int(b) for b in ctx.bids[k if index.shape[0] > 1 else 0])
        raise TileOutOfBoundsError(f"list index {int(index[k])} is out of range for a list of {len(items)} arrays "
                                   f"(block {block})", op.loc)
    if index.shape[0] == 1:
        return items[int(index[0])]
    return chosen([items[i] for i in index])
