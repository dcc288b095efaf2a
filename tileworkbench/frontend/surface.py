"""Lowerings of the tile functions built from other ops: byte packing, block-scaled mma, tiled
views, and the compile-time assertions and scheduling hints that emit nothing (ir/stubs.py
declares them).

Each composes ops every backend already has, so the interpreter and the GPU share one definition:

    pack_to_bytes(x: int32[2])  ->  bitcast uint32, broadcast (2, 4), >> [0, 8, 16, 24], astype uint8,
                                    reshape (8,)        (little-endian bytes, as cuTile gives them)
"""
from __future__ import annotations

from ..errors import TileStaticAssertionError, TileTypeError, TileUnsupportedFeatureError
from ..ir.attrs import MemoryOrder, padding_value
from ..ir.core import Value
from ..ir import stubs
from ..ir.types import (bool_, float4_e2m1fn, float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float32, int32, uint8,
                        uint16, uint32, uint64)
from . import coerce
from .lowering import (bind_call, const_int, constant_value, dtype_arg, impl, lower_binary, lower_call, padding_arg,
                       tile_arg)
from .lowering import tile_shape as shape_arg

_UNSIGNED = {1: uint8, 2: uint16, 4: uint32, 8: uint64}


def _call(lw, stub, *args, **kwargs):
    """Another tile function's lowering, its arguments bound as a user's call binds them."""
    return lower_call(lw, stub, list(args), kwargs)


def _reshape(lw, x, shape):
    return _call(lw, stubs.reshape, x, shape)


def _byte_shifts(lw, k: int, rows: int, unsigned):
    """The (rows, k) tile of bit offsets 0, 8, ..., 8 (k - 1) along each row, in `unsigned`."""
    shifts = lower_binary(lw, "mul", _call(lw, stubs.arange, k, dtype=unsigned), 8)
    return _call(lw, stubs.broadcast_to, _reshape(lw, shifts, (1, k)), (rows, k))


def _bytes_dtype_check(lw, dtype, fn):
    if dtype is bool_:
        lw.fail(TileTypeError, f"{fn}() does not support bool")
    if dtype.bitwidth < 8:
        lw.fail(TileUnsupportedFeatureError, f"{fn}() of {dtype} is not supported: tileworkbench keeps one "
                                             f"{dtype.bitwidth}-bit value per byte")


@impl(stubs.pack_to_bytes)
def pack_to_bytes(lw, x):
    x = tile_arg(lw, x, "pack_to_bytes")
    _bytes_dtype_check(lw, x.dtype, "pack_to_bytes")
    n, k = x.type.size, x.dtype.itemsize
    flat = _reshape(lw, x, (n,))
    unsigned = _UNSIGNED[k]
    words = _call(lw, stubs.bitcast, flat, unsigned)
    if k == 1:
        return words
    wide = _call(lw, stubs.broadcast_to, _reshape(lw, words, (n, 1)), (n, k))
    shifted = lower_binary(lw, "rshift", wide, _byte_shifts(lw, k, n, unsigned))
    return _reshape(lw, _call(lw, stubs.astype, shifted, uint8), (n * k,))


@impl(stubs.unpack_from_bytes)
def unpack_from_bytes(lw, x, dtype):
    x, dtype = tile_arg(lw, x, "unpack_from_bytes"), dtype_arg(lw, dtype)
    if x.dtype is not uint8 or x.type.ndim != 1:
        lw.fail(TileTypeError, f"unpack_from_bytes() expects a 1-D uint8 tile, got {x.dtype}{x.shape}")
    _bytes_dtype_check(lw, dtype, "unpack_from_bytes")
    m, k = x.type.size, dtype.itemsize
    if m % k:
        lw.fail(TileTypeError, f"unpack_from_bytes(): {m} bytes do not hold a whole number of {dtype} values")
    unsigned = _UNSIGNED[k]
    if k > 1:
        rows = _call(lw, stubs.astype, _reshape(lw, x, (m // k, k)), unsigned)
        placed = lower_binary(lw, "lshift", rows, _byte_shifts(lw, k, m // k, unsigned))
        x = _call(lw, stubs.sum, placed, 1)  # the bytes' bits are disjoint: the sum is their OR
    return _call(lw, stubs.bitcast, x, dtype)


@impl(stubs.assume_divisible_by)
def assume_divisible_by(lw, x, divisor):
    """A promise for the optimizer: x comes back unchanged (tileworkbench does not act on it)."""
    divisor = const_int(lw, divisor, "divisor of assume_divisible_by()")
    if divisor <= 0:
        lw.fail(TileTypeError, f"assume_divisible_by() needs a positive divisor, got {divisor}")
    dtype = x.dtype if isinstance(x, Value) else None
    if isinstance(x, Value) and (x.is_array or x.shape or not dtype.is_integral) or isinstance(x, (bool, float)):
        lw.fail(TileTypeError, f"assume_divisible_by() expects an integer scalar, got {coerce.describe(x)}")
    return x


@impl(stubs.ensure_constant)
def ensure_constant(lw, value):
    if isinstance(value, Value) and (value.is_array or constant_value(value) is None):
        lw.fail(TileStaticAssertionError, "Argument of ensure_constant() is not a compile-time constant")
    return value


# Programmatic dependent launch: tileworkbench launches a kernel only after the previous kernel in
# its stream has finished (it never sets the launch attribute that lets a dependent start early),
# so at a kernel's first instruction the wait is already satisfied and its writes are visible, and
# letting dependents start early is only ever a permission. Both are correct as nothing.
@impl(stubs.grid_dependency_control_wait, stubs.grid_dependency_control_launch_dependents)
def _granted(lw):
    return None


# operand dtype -> {scale dtype: block sizes}, all into float32 (cuTile's table)
_SCALED = {float8_e4m3fn: {float8_e8m0fnu: (32,)}, float8_e5m2: {float8_e8m0fnu: (32,)},
           float4_e2m1fn: {float8_e8m0fnu: (16, 32), float8_e4m3fn: (16,)}}


def _scaled(lw, t, scale, k_axis: int, block: int):
    """t in float32 times its scale repeated `block` times along the K axis (exact: a power of two
    or an 8-bit float times a value of at most 11 bits)."""
    shape = scale.shape
    spread = shape[:k_axis + 1] + (1,) + shape[k_axis + 1:]
    wide = shape[:k_axis + 1] + (block,) + shape[k_axis + 1:]
    repeated = _call(lw, stubs.broadcast_to, _reshape(lw, scale, spread), wide)
    repeated = _reshape(lw, _call(lw, stubs.astype, repeated, float32), t.shape)
    return lower_binary(lw, "mul", _call(lw, stubs.astype, t, float32), repeated)


@impl(stubs.mma_scaled)
def mma_scaled(lw, x, x_scale, y, y_scale, acc):
    x, x_scale, y, y_scale, acc = (tile_arg(lw, t, "mma_scaled") for t in (x, x_scale, y, y_scale, acc))
    if x.dtype is not y.dtype or x.dtype not in _SCALED:
        lw.fail(TileTypeError, f"mma_scaled() needs x and y of one dtype among "
                               f"{', '.join(d.name for d in _SCALED)}, got {x.dtype} and {y.dtype}")
    if x_scale.dtype is not y_scale.dtype or x_scale.dtype not in _SCALED[x.dtype]:
        lw.fail(TileTypeError, f"Unsupported scale dtype {x_scale.dtype} for {x.dtype} inputs; supported: "
                               f"{', '.join(d.name for d in _SCALED[x.dtype])}")
    if acc.dtype is not float32:
        lw.fail(TileTypeError, f"mma_scaled() accumulates in float32, got {acc.dtype}")
    if x.type.ndim < 2 or y.type.ndim < 2 or x.shape[-1] != y.shape[-2]:
        lw.fail(TileTypeError, f"mma_scaled() needs [..., M, K] @ [..., K, N] tiles, got {x.shape} and {y.shape}")
    k, k_scales = x.shape[-1], x_scale.shape[-1] if x_scale.type.ndim else 0
    if (x_scale.shape[:-1] != x.shape[:-1] or y_scale.type.ndim != y.type.ndim
            or y_scale.shape[:-2] + y_scale.shape[-1:] != y.shape[:-2] + y.shape[-1:] or y_scale.shape[-2] != k_scales):
        lw.fail(TileTypeError, f"mma_scaled() scale shapes {x_scale.shape} and {y_scale.shape} do not match "
                               f"x {x.shape} and y {y.shape} outside the K dimension")
    block = k // k_scales if k_scales and k % k_scales == 0 else 0
    if block not in _SCALED[x.dtype][x_scale.dtype]:
        lw.fail(TileTypeError, f"mma_scaled(): K={k} with {k_scales} scales gives blocks of {k / max(k_scales, 1):g}; "
                               f"{x.dtype} with {x_scale.dtype} scales takes blocks of "
                               f"{' or '.join(map(str, _SCALED[x.dtype][x_scale.dtype]))}")
    xs = _scaled(lw, x, x_scale, x.type.ndim - 1, block)
    ys = _scaled(lw, y, y_scale, y.type.ndim - 2, block)
    return _call(lw, stubs.mma, xs, ys, acc)


# ---- tiled views ---------------------------------------------------------------------------------

class TiledView:
    """`array.tiled_view(tile_shape, *, padding_mode, traversal_steps)` in tile code: a compile-time
    value (passed to helpers, captured, carried) whose tile `index` starts at element index *
    traversal_steps. With the default steps it loads and stores as ct.load/ct.store do; other steps
    (overlapping tiles, gaps) read and write through element indices, as gather/scatter do."""

    METHODS = ("load", "store", "num_tiles") + tuple(f"atomic_store_{op}" for op in
                                                     ("add", "max", "min", "and", "or", "xor"))

    def __init__(self, array: Value, tile_shape: tuple, padding_mode, steps: tuple, scalar: bool):
        self.array, self.shape, self.padding_mode, self.steps = array, tile_shape, padding_mode, steps
        self.scalar = scalar  # tile_shape (): each tile is one element, loaded as a 0-d tile

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def tile_shape(self):
        return self.shape

    @property
    def traversal_steps(self):
        return self.steps

    def __repr__(self) -> str:
        return f"TiledView(tile_shape={self.shape}, traversal_steps={self.steps})"

    def lower_method(self, lw, name, args, kwargs):
        if name.startswith("atomic_store_"):
            return self._atomic(lw, **bind_call(lw, _atomic_store, args, kwargs), op=name[len("atomic_store_"):])
        return getattr(self, "_" + name)(lw, **bind_call(lw, _VIEW_METHODS[name], args, kwargs))

    def _index(self, lw, index) -> tuple:
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != len(self.shape):
            lw.fail(TileTypeError, f"Index size {len(index)} does not match the tiled view's rank {len(self.shape)}")
        return index

    def _default_steps(self) -> bool:
        return self.steps == self.shape

    def _element_indices(self, lw, index) -> tuple:
        """One index tile per axis, broadcast to the tile shape: index * step + [0, tile) along the axis."""
        rank = len(self.shape)
        tiles = []
        for d, (i, n, step) in enumerate(zip(self._index(lw, index), self.shape, self.steps)):
            origin = lower_binary(lw, "mul", i, step)
            along = lower_binary(lw, "add", _call(lw, stubs.arange, n, dtype=int32), origin)
            shape = tuple(n if k == d else 1 for k in range(rank))
            tiles.append(_call(lw, stubs.broadcast_to, _reshape(lw, along, shape), self.shape))
        return tuple(tiles)

    def _fit(self, lw, tile):
        """`tile` broadcast to the tile shape (cuTile's rule for stores and atomic updates)."""
        value = coerce.to_value(lw, tile, None if isinstance(tile, Value) else self.array.dtype)
        if value.shape == self.shape:
            return value
        if not coerce.broadcasts_to(value.shape, self.shape):
            lw.fail(TileTypeError, f"A tile of shape {value.shape} does not broadcast to the view's tile shape "
                                   f"{self.shape}")
        return _call(lw, stubs.broadcast_to, value, self.shape)

    def _load(self, lw, index, check_bounds, latency, allow_tma):
        if self._default_steps():
            tile = _call(lw, stubs.load, self.array, self._index(lw, index), self.shape, padding_mode=self.padding_mode,
                         check_bounds=check_bounds, latency=latency, allow_tma=allow_tma)
        else:
            pad = padding_value(self.padding_mode, self.array.dtype)
            tile = _call(lw, stubs.gather, self.array, self._element_indices(lw, index), padding_value=pad,
                         check_bounds=check_bounds, latency=latency)
        return _reshape(lw, tile, ()) if self.scalar else tile

    def _store(self, lw, index, tile, check_bounds, latency, allow_tma):
        value = self._fit(lw, tile)
        if self._default_steps():
            return _call(lw, stubs.store, self.array, self._index(lw, index), value, check_bounds=check_bounds,
                         latency=latency, allow_tma=allow_tma)
        return _call(lw, stubs.scatter, self.array, self._element_indices(lw, index), value, check_bounds=check_bounds,
                     latency=latency)

    def _num_tiles(self, lw, axis):
        axis = const_int(lw, axis, "axis")
        rank = len(self.shape)
        if not -rank <= axis < rank:
            lw.fail(TileTypeError, f"Axis {axis} is out of range for a tiled view of rank {rank}")
        extent = lw.value_attribute(self.array, "shape")[axis % rank]
        return _call(lw, stubs.cdiv, extent, self.steps[axis % rank])

    def _atomic(self, lw, index, update, op):
        value = self._fit(lw, update)
        _call(lw, stubs.FUNCTIONS[f"atomic_{op}"], self.array, self._element_indices(lw, index), value,
              memory_order=MemoryOrder.RELAXED)


def _method(name):
    def bound(view):
        from .compiler import BoundMethod  # the compiler calls it back through lower_method
        return BoundMethod(view, name)
    return property(bound)


for _name in TiledView.METHODS:
    setattr(TiledView, _name, _method(_name))


def _view_load(index, *, check_bounds=True, latency=None, allow_tma=None):
    pass


def _view_store(index, tile, *, check_bounds=True, latency=None, allow_tma=None):
    pass


def _view_num_tiles(axis):
    pass


def _atomic_store(index, update):
    pass


_VIEW_METHODS = {"load": _view_load, "store": _view_store, "num_tiles": _view_num_tiles}


@impl(stubs.tiled_view)
def tiled_view(lw, array, tile_shape, padding_mode, traversal_steps):
    rank = array.type.ndim
    scalar = tile_shape == ()
    shape = (1,) * rank if scalar else shape_arg(lw, tile_shape if isinstance(tile_shape, tuple) else (tile_shape,))
    if len(shape) != rank:
        lw.fail(TileTypeError, f"Expected a tile shape of length {rank} for an array of rank {rank}, got {shape}")
    if traversal_steps is None:
        steps = shape
    else:
        steps = traversal_steps if isinstance(traversal_steps, tuple) else (traversal_steps,)
        steps = tuple(const_int(lw, s, "traversal step") for s in steps)
        if len(steps) != rank or any(s <= 0 for s in steps):
            lw.fail(TileTypeError, f"traversal_steps must be {rank} positive integer constants, got {steps}")
    return TiledView(array, shape, padding_arg(lw, padding_mode), steps, scalar)
