"""One lowering per tile function: check the user's arguments, then emit IR ops.

Each lowering is registered for its tile function (ir/stubs.py) and receives the arguments bound
against that function's signature, by name, each either a compile-time Python value or an IR
Value. Messages follow cuTile's wording where cuTile has one.
"""
from __future__ import annotations

import enum
import inspect
import re

import numpy as np

from ..errors import (TileStaticAssertionError, TileSyntaxError, TileTypeError, TileUnsupportedFeatureError,
                      TileValueError)
from ..ir.attrs import MemoryOrder, MemoryScope, PaddingMode, RoundingMode
from ..ir.core import Value
from ..ir import stubs
from ..ir.ops import ATOMICS, OPS, Accepts, Category, Rules
from ..ir.types import (ArrayType, DType, TileType, bool_, can_cast_implicitly, float16, float32, float64, int8,
                        int32, is_pow2, to_dtype, uint8, bfloat16, tfloat32, float8_e4m3fn, float8_e5m2)
from . import coerce
from .coerce import broadcast, cast, is_const, to_value, unify


def _matches_stub(stub, lowering):
    """As cuTile's @impl checks: the lowering takes every parameter of the tile function by name
    (after `lw`; more only with defaults, or **arguments), so a renamed parameter fails at import."""
    wanted = inspect.signature(stub).parameters
    params = list(inspect.signature(lowering).parameters.values())[1:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    names = {p.name for p in params}
    extra = [p.name for p in params if p.name not in wanted and p.default is p.empty]
    if set(wanted) - names or extra:
        raise TypeError(f"lowering {lowering.__qualname__}{inspect.signature(lowering)} does not take the parameters "
                        f"of {stub.__name__}{inspect.signature(stub)}")


LOWERINGS = Rules(check=_matches_stub)  # tile function -> its lowering
impl = LOWERINGS.add


def bind_call(lw, stub, args, kwargs) -> dict:
    """The call's arguments by parameter name, defaults applied (as cuTile's compiler binds them)."""
    try:
        bound = inspect.signature(stub).bind(*args, **kwargs)
    except TypeError as e:
        lw.fail(TileTypeError, f"{stub.__name__}(): {e}")
    bound.apply_defaults()
    params = bound.signature.parameters
    return {name: tuple(v) if params[name].kind is inspect.Parameter.VAR_POSITIONAL else v
            for name, v in bound.arguments.items()}


class SliceValue:
    """ct.Slice(start, length) inside tile code: start may be a runtime scalar, length is a constant."""

    def __init__(self, start, length):
        self.start, self.length = start, length


@impl(stubs.Slice)
def slice_value(lw, start, length):
    return SliceValue(start, length)


# ---- argument helpers ---------------------------------------------------------------------------

def const_int(lw, x, what: str, node=None) -> int:
    if isinstance(x, Value):
        lw.fail(TileTypeError, f"{what} must be a compile-time constant, got a runtime {x.type}", node)
    if isinstance(x, bool) or not isinstance(x, int):
        lw.fail(TileTypeError, f"{what} must be an integer constant, got {x!r}", node)
    return x


def const_bool(lw, x, what: str) -> bool:
    if not isinstance(x, bool):
        lw.fail(TileTypeError, f"{what} must be a constant bool, got {coerce.describe(x) if isinstance(x, Value) else repr(x)}")
    return x


def tile_shape(lw, shape, what="Tile shape", arg="shape") -> tuple[int, ...]:
    """A constant shape of power-of-two dimensions (an int means a 1-D shape)."""
    node = lw.arg(arg)
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, tuple):
        lw.fail(TileTypeError, f"{what} must be a tuple of integer constants, got {coerce.describe(shape)}", node)
    for n in shape:
        if isinstance(n, Value):
            lw.fail(TileTypeError, f'Invalid argument "{arg}" of {lw.calling}(): Expected a constant integer tuple; '
                                   f'{what[0].lower() + what[1:]} must be a compile-time constant, got a runtime {n.type}',
                    node)
    dims = tuple(const_int(lw, n, what, node) for n in shape)
    for n in dims:
        if not is_pow2(n):
            lw.fail(TileTypeError, f"{what} {dims} must have power-of-two dimensions; {n} is not a power of two", node)
    return dims


def normalize_axis(lw, axis, ndim: int, what="axis") -> int:
    axis = const_int(lw, axis, what)
    if not -ndim <= axis < ndim:
        lw.fail(TileTypeError, f"{what[0].upper() + what[1:]} {axis} is out of range for rank {ndim}")
    return axis % ndim


def array_arg(lw, a, fn: str) -> Value:
    if not (isinstance(a, Value) and a.is_array):
        lw.fail(TileTypeError, f"{fn}() expects an array as its first argument, got {coerce.describe(a)}", lw.arg("array"))
    return a


def tile_arg(lw, x, fn: str) -> Value:
    if isinstance(x, Value) and x.is_array:
        lw.fail(TileTypeError, f"{fn}() expects a tile, got an array (load it first)")
    if not isinstance(x, Value) and not is_const(x):
        lw.fail(TileTypeError, f"{fn}() expects a tile, got {coerce.describe(x)}")
    return to_value(lw, x)


def dtype_arg(lw, d) -> DType:
    try:
        return to_dtype(d)
    except (TypeError, KeyError):
        lw.fail(TileTypeError, f"Invalid dtype {d!r}")


def tile_index(lw, index, ndim: int, what: str) -> list[Value]:
    """A tuple (or one scalar) of integer scalars, one per array dimension."""
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) != ndim:
        lw.fail(TileTypeError, f"Index size {len(index)} does not match the array rank {ndim}", lw.arg("index"))
    return [lw.index_scalar(i, what) if is_const(i) else _int_scalar(lw, i, what) for i in index]


def _int_scalar(lw, i, what) -> Value:
    if not (isinstance(i, Value) and not i.is_array and i.shape == () and i.dtype.is_integral):
        lw.fail(TileTypeError, f"{what} must be an integer scalar, got {coerce.describe(i)}")
    return i


def order_arg(lw, order, ndim: int) -> tuple[int, ...]:
    with lw.at(lw.arg("order") or lw.node):
        return _order(lw, order, ndim)


def _order(lw, order, ndim: int) -> tuple[int, ...]:
    if order == "C":
        return tuple(range(ndim))
    if order == "F":
        return tuple(reversed(range(ndim)))
    if isinstance(order, str) or not isinstance(order, tuple):
        lw.fail(TileTypeError, f"Expected 'C' or 'F' or a tuple of axes for order, got {order!r}")
    if len(order) != ndim:
        lw.fail(TileTypeError, f"Expected tuple of length {ndim} for order, got {len(order)}")
    axes = tuple(normalize_axis(lw, a, ndim, "order axis") for a in order)
    for a in axes:
        if axes.count(a) > 1:
            lw.fail(TileTypeError, f"Axis order must be a permutation, but axis {a} is used at least twice")
    return axes


def memory_hints(lw, latency, allow_tma, *, memory_order=None, memory_scope=None, allowed_orders=()) -> dict:
    hints = {}
    if latency is not None:
        latency = const_int(lw, latency, "latency")
        if not 1 <= latency <= 10:
            lw.fail(TileValueError, f"Latency must be between 1 and 10, got {latency}")
        hints["latency"] = latency
    if allow_tma is not None:
        hints["allow_tma"] = const_bool(lw, allow_tma, "allow_tma")
    if memory_order is not None:
        if memory_order not in allowed_orders:
            lw.fail(TileValueError, f"Memory order {memory_order.name} is not allowed here")
        if memory_order is MemoryOrder.WEAK and memory_scope is not MemoryScope.NONE:
            lw.fail(TileTypeError, "Operations with WEAK memory ordering cannot specify a memory scope")
        if memory_order is not MemoryOrder.WEAK and memory_scope is MemoryScope.NONE:
            lw.fail(TileTypeError, f"Memory order {memory_order.name} requires a memory scope")
    return hints


def padding_arg(lw, mode):
    if not isinstance(mode, PaddingMode):
        lw.fail(TileTypeError, f"padding_mode must be a ct.PaddingMode, got {mode!r}")
    return mode


# ---- grid ---------------------------------------------------------------------------------------

def _axis012(lw, axis) -> int:
    axis = const_int(lw, axis, "axis")
    if axis not in (0, 1, 2):
        lw.fail(TileTypeError, f"Grid axis must be 0, 1 or 2, got {axis}")
    return axis


@impl(stubs.bid)
def bid(lw, axis):
    return lw.emit("bid", [], {"axis": _axis012(lw, axis)})


@impl(stubs.num_blocks)
def num_blocks(lw, axis):
    return lw.emit("num_blocks", [], {"axis": _axis012(lw, axis)})


@impl(stubs.num_tiles)
def num_tiles(lw, array, axis, shape, order):
    array = array_arg(lw, array, "num_tiles")
    ndim = array.type.ndim
    shape = (1,) * ndim if shape == () else tile_shape(lw, shape)
    if len(shape) != ndim:
        lw.fail(TileTypeError, f"Expected shape of length {ndim}, got {len(shape)}")
    return lw.emit("num_tiles", [array], {"axis": normalize_axis(lw, axis, ndim), "shape": shape,
                                          "order": order_arg(lw, order, ndim)})


# ---- memory -------------------------------------------------------------------------------------

def array_slice(lw, array, axis, start, stop):
    """array.slice(axis, start, stop): a view, no copy; constant bounds give a constant extent."""
    ndim = array.type.ndim
    axis = const_int(lw, axis, "axis", lw.arg("axis"))
    if not -ndim <= axis < ndim:
        lw.fail(TileTypeError, f"Axis {axis} is out of range for rank {ndim}'s axes {-ndim}..{ndim - 1}", lw.arg("axis"))
    bounds = {}
    for name, bound in (("start", start), ("stop", stop)):
        with lw.at(lw.arg(name) or lw.node):
            if is_const(bound) and isinstance(bound, (int, np.integer)) and not isinstance(bound, bool):
                if bound < 0:
                    lw.fail(TileTypeError, f"Slice {name} must be non-negative")
            elif not (isinstance(bound, Value) and not bound.is_array and bound.shape == () and bound.dtype.is_signed):
                lw.fail(TileTypeError, f"Expected a signed integer scalar, but got {coerce.describe(bound)}")
            bounds[name] = bound
    constant = all(is_const(b) for b in bounds.values())
    if constant and stop < start:
        lw.fail(TileTypeError, "Slice stop must be greater than or equal to start")
    operands = [array] + [lw.index_scalar(b, f"slice {name}") for name, b in bounds.items()]
    return lw.emit("array_slice", operands, {"axis": axis % ndim, "extent": stop - start if constant else None})


def static_extent(array: Value, axis: int) -> int | None:
    """The extent of a sliced array's axis when its slice had constant bounds."""
    op = array.owner
    while op is not None and op.name == "array_slice":
        if op.attrs["axis"] == axis:
            return op.attrs["extent"]
        op = op.operands[0].owner
    return None



@impl(stubs.load)
def load(lw, array, index, shape, order, padding_mode, check_bounds, latency, allow_tma, memory_order, memory_scope):
    array = array_arg(lw, array, "load")
    ndim = array.type.ndim
    idx = tile_index(lw, index, ndim, "load index")
    scalar_result = shape == ()
    shape = (1,) * ndim if scalar_result else tile_shape(lw, shape)
    if len(shape) != ndim:
        lw.fail(TileTypeError, f"Expected shape of length {ndim} for an array of rank {ndim}, got {shape}", lw.arg("shape"))
    attrs = {"shape": shape, "order": order_arg(lw, order, ndim), "padding": padding_arg(lw, padding_mode),
             "check_bounds": const_bool(lw, check_bounds, "check_bounds")}
    attrs.update(memory_hints(lw, latency, allow_tma, memory_order=memory_order, memory_scope=memory_scope,
                              allowed_orders=(MemoryOrder.WEAK, MemoryOrder.RELAXED, MemoryOrder.ACQUIRE)))
    tile = lw.emit("load", [array, *idx], attrs)
    return lw.emit("reshape", [tile], {"shape": ()}) if scalar_result else tile


@impl(stubs.store)
def store(lw, array, index, tile, order, check_bounds, latency, allow_tma, memory_order, memory_scope):
    array = array_arg(lw, array, "store")
    ndim = array.type.ndim
    idx = tile_index(lw, index, ndim, "store index")
    value = coerce.implicit_cast(lw, tile_arg(lw, tile, "store") if isinstance(tile, Value) else tile,
                                 array.dtype, "Stored tile")
    if value.shape == ():
        value = lw.emit("reshape", [value], {"shape": (1,) * ndim})
    if value.type.ndim != ndim:
        lw.fail(TileTypeError, f"Stored tile has rank {value.type.ndim} but the array has rank {ndim}")
    attrs = {"order": order_arg(lw, order, ndim), "check_bounds": const_bool(lw, check_bounds, "check_bounds")}
    attrs.update(memory_hints(lw, latency, allow_tma, memory_order=memory_order, memory_scope=memory_scope,
                              allowed_orders=(MemoryOrder.WEAK, MemoryOrder.RELAXED, MemoryOrder.RELEASE)))
    lw.emit("store", [array, *idx, value], attrs)


def _element_indices(lw, array: Value, indices, fn: str) -> list[Value]:
    ndim = array.type.ndim
    if not isinstance(indices, tuple):
        if ndim != 1:
            lw.fail(TileTypeError, f"For array of rank {ndim}, indices must be a tuple of length {ndim}")
        indices = (indices,)
    if len(indices) != ndim:
        extra = ", or a single scalar/tile" if ndim == 1 else ""
        lw.fail(TileTypeError, f"For array of rank {ndim}, indices must be a tuple of length {ndim}{extra}, "
                               f"got {len(indices)}")
    values = []
    for d, i in enumerate(indices):
        v = to_value(lw, i) if is_const(i) and not isinstance(i, (bool, float)) else i
        if not (isinstance(v, Value) and not v.is_array and v.dtype.is_integral):
            what = coerce.describe(v) if isinstance(v, Value) else repr(v)
            lw.fail(TileTypeError, f"Index for dimension {d} has non-integer data type: {what}")
        values.append(v)
    shape = coerce.broadcast_shapes(lw, *(v.shape for v in values))
    return [broadcast(lw, v, shape) for v in values]


def _mask(lw, mask, shape):
    if mask is None:
        return []
    m = to_value(lw, mask) if is_const(mask) else mask
    if not isinstance(m, Value) or m.dtype is not bool_:
        lw.fail(TileTypeError, f"Custom mask must have boolean dtype, got {coerce.describe(m)}")
    if not coerce.broadcasts_to(m.shape, shape):
        lw.fail(TileTypeError, f"Custom mask shape {m.shape} is not broadcastable to the index shape {tuple(shape)}")
    return [broadcast(lw, m, shape)]


def _element_access(lw, fn, array, indices, operand, what, mask, check_bounds, latency):
    """The common part of gather and scatter: indices broadcast together, the padding value or the
    scattered value (`operand`) cast and broadcast to their shape, the mask, the attributes."""
    array = array_arg(lw, array, fn)
    idx = _element_indices(lw, array, indices, fn)
    shape = idx[0].shape if idx else ()  # a 0-d array takes the index ()
    v = coerce.implicit_cast(lw, operand, array.dtype, what)
    if not coerce.broadcasts_to(v.shape, shape):
        lw.fail(TileTypeError, f"{what} of shape {v.shape} is not broadcastable to the index shape {shape}")
    masks = _mask(lw, mask, shape)
    attrs = {"check_bounds": const_bool(lw, check_bounds, "check_bounds"), "has_mask": bool(masks)}
    attrs.update(memory_hints(lw, latency, None))
    return [array, *idx, broadcast(lw, v, shape), *masks], attrs


@impl(stubs.gather)
def gather(lw, array, indices, mask, padding_value, check_bounds, latency):
    operands, attrs = _element_access(lw, "gather", array, indices, padding_value, "Padding value", mask,
                                      check_bounds, latency)
    return lw.emit("gather", operands, attrs)


@impl(stubs.scatter)
def scatter(lw, array, indices, value, mask, check_bounds, latency):
    operands, attrs = _element_access(lw, "scatter", array, indices, value, "Scattered value", mask,
                                      check_bounds, latency)
    lw.emit("scatter", operands, attrs)


_ATOMIC_DTYPES = {  # the array dtypes each atomic takes
    "exchange": ("int32", "int64", "uint32", "uint64", "float32", "float64"),
    "atomic_add": ("int32", "int64", "uint32", "uint64", "float32", "float64", "float16", "bfloat16"),
    "integer": ("int32", "int64", "uint32", "uint64"),
}


def _atomic(name):
    def lower(lw, array, indices, check_bounds, memory_order, memory_scope, update=None, expected=None, desired=None):
        operands = (expected, desired) if name == "atomic_cas" else (update,)
        array = array_arg(lw, array, name)
        kind = ("exchange" if name in ("atomic_cas", "atomic_xchg") else "atomic_add" if name == "atomic_add"
                else "integer")
        if array.dtype.name not in _ATOMIC_DTYPES[kind]:
            lw.fail(TileTypeError, f"Unsupported array dtype: {array.dtype}")
        if name in ("atomic_and", "atomic_or", "atomic_xor"):
            update = operands[0]
            dtype = update.dtype if isinstance(update, Value) else None
            if dtype is not None and dtype is not array.dtype:
                lw.fail(TileTypeError, f"Bitwise atomic read-modify-write operations require the update dtype "
                                       f"({dtype}) to exactly match the array dtype ({array.dtype})")
        if memory_order not in (MemoryOrder.RELAXED, MemoryOrder.ACQUIRE, MemoryOrder.RELEASE, MemoryOrder.ACQ_REL):
            lw.fail(TileTypeError, f"Memory order {getattr(memory_order, 'name', memory_order)} is not allowed for "
                                   f"atomics (RELAXED, ACQUIRE, RELEASE or ACQ_REL)")
        if memory_scope not in (MemoryScope.BLOCK, MemoryScope.DEVICE, MemoryScope.SYS):
            lw.fail(TileTypeError, f"Memory scope {getattr(memory_scope, 'name', memory_scope)} is not allowed for "
                                   f"atomics (BLOCK, DEVICE or SYS)")
        idx = _element_indices(lw, array, indices, name)
        shape = idx[0].shape if idx else ()
        values = []
        for what, v in zip(("Expected value", "Desired value") if name == "atomic_cas" else ("Update",), operands):
            v = coerce.implicit_cast(lw, v, array.dtype, what)
            if not coerce.broadcasts_to(v.shape, shape):
                lw.fail(TileTypeError, f"{what} of shape {v.shape} is not broadcastable to the index shape {shape}")
            values.append(broadcast(lw, v, shape))
        attrs = {"check_bounds": const_bool(lw, check_bounds, "check_bounds"), "memory_order": memory_order.name,
                 "memory_scope": memory_scope.name}
        return lw.emit(name, [array, *idx, *values], attrs)
    return lower


for _name in ATOMICS:
    impl(stubs.FUNCTIONS[_name])(_atomic(_name))


def _advanced_indices(lw, array: Value, indices):
    ndim = array.type.ndim
    if ndim < 2:
        lw.fail(TileTypeError, "load_advanced_indexing/store_advanced_indexing need an array of rank 2 or more; "
                               "use gather()/scatter() for 1-D arrays")
    if not isinstance(indices, tuple) or len(indices) != ndim:
        n = len(indices) if isinstance(indices, tuple) else 1
        lw.fail(TileTypeError, f"load_advanced_indexing/store_advanced_indexing index length {n} does not match "
                               f"array rank {ndim}")
    sparse = [d for d, i in enumerate(indices) if isinstance(i, Value)]
    if not sparse:
        lw.fail(TileTypeError, "exactly one index must be a 1D integer Tile (the sparse dim); none found")
    if len(sparse) > 1:
        lw.fail(TileTypeError, f"exactly one index must be a 1D integer Tile (the sparse dim); found {len(sparse)} "
                               f"at dims {sparse}")
    (sd,) = sparse
    index = indices[sd]
    if index.type.ndim != 1 or not index.dtype.is_integral:
        lw.fail(TileTypeError, f"Sparse index at dim {sd} must be a 1D integer tile, got {index.type}")
    if not is_pow2(index.shape[0]):
        lw.fail(TileTypeError, f"Index at dim {sd} has size {index.shape[0]}; must be a power of two")
    starts, lengths = [], []
    for d, s in enumerate(indices):
        if d == sd:
            lengths.append(index.shape[0])
            continue
        if not isinstance(s, SliceValue):
            lw.fail(TileTypeError, f"Index at dim {d} must be a ct.Slice(start, length), got {coerce.describe(s)}")
        if isinstance(s.length, Value) or not isinstance(s.length, int):
            lw.fail(TileTypeError, f"ct.Slice length at dim {d} must be a compile-time constant")
        if not is_pow2(s.length):
            lw.fail(TileTypeError, f"Index at dim {d} has size {s.length}; must be a power of two")
        lengths.append(s.length)
        starts.append(lw.index_scalar(s.start, "Slice start") if is_const(s.start) else _int_scalar(lw, s.start, "Slice start"))
    return sd, index, starts, tuple(lengths)


@impl(stubs.load_advanced_indexing)
def load_advanced_indexing(lw, array, indices, padding_mode, latency, allow_tma):
    array = array_arg(lw, array, "load_advanced_indexing")
    sd, index, starts, lengths = _advanced_indices(lw, array, indices)
    attrs = {"sparse_dim": sd, "lengths": lengths, "padding": padding_arg(lw, padding_mode)}
    attrs.update(memory_hints(lw, latency, allow_tma))
    return lw.emit("load_adv", [array, index, *starts], attrs)


@impl(stubs.store_advanced_indexing)
def store_advanced_indexing(lw, array, indices, tile, latency, allow_tma):
    array = array_arg(lw, array, "store_advanced_indexing")
    sd, index, starts, lengths = _advanced_indices(lw, array, indices)
    value = coerce.implicit_cast(lw, tile, array.dtype, "Stored tile")
    if value.shape != lengths:
        lw.fail(TileTypeError, f"Stored tile shape {value.shape} must equal the indexed shape {lengths} exactly")
    attrs = {"sparse_dim": sd, "lengths": lengths}
    attrs.update(memory_hints(lw, latency, allow_tma))
    lw.emit("store_adv", [array, index, *starts, value], attrs)


# ---- creation and casts -------------------------------------------------------------------------

@impl(stubs.arange)
def arange(lw, size, dtype, start, step):
    if isinstance(size, Value) or isinstance(size, bool) or not isinstance(size, int):
        lw.fail(TileTypeError, f"Expected an integer constant for the size of arange, got {coerce.describe(size)}")
    if not is_pow2(size):
        lw.fail(TileTypeError, f"Result tile shape must be power of 2, got {size}", lw.arg("size"))
    dtype = dtype_arg(lw, dtype)
    iota = lw.emit("iota", [], {"shape": (size,), "dtype": int32})
    result = cast(lw, iota, dtype)
    if not (is_const(step) and step == 1):
        result = lw.emit("mul", [result, broadcast(lw, _as_dtype(lw, step, dtype), (size,))])
    if not (is_const(start) and start == 0):
        result = lw.emit("add", [result, broadcast(lw, _as_dtype(lw, start, dtype), (size,))])
    return result


def _as_dtype(lw, x, dtype) -> Value:
    """An explicit conversion of a scalar (constant or runtime) to `dtype`."""
    if is_const(x):
        return coerce.constant(lw, x, dtype)
    v = tile_arg(lw, x, "arange")
    if v.shape != ():
        lw.fail(TileTypeError, f"Expected a scalar, got {v.type}")
    return cast(lw, v, dtype)


@impl(stubs.full)
def full(lw, shape, fill_value, dtype):
    shape, dtype = (() if shape == () else tile_shape(lw, shape)), dtype_arg(lw, dtype)
    if is_const(fill_value):
        return coerce.constant(lw, fill_value, dtype, shape)
    v = _as_dtype(lw, fill_value, dtype)
    return broadcast(lw, v, shape)


@impl(stubs.zeros)
def zeros(lw, shape, dtype):
    return full(lw, shape, 0, dtype)


@impl(stubs.ones)
def ones(lw, shape, dtype):
    return full(lw, shape, 1, dtype)


@impl(stubs.astile)
def astile(lw, value, dtype):
    """Scalars (constants or 0-d tiles) at the leaves of nested tuples, gathered into one tile."""
    dtype = dtype_arg(lw, dtype)
    if isinstance(value, Value) and value.shape != ():
        lw.fail(TileTypeError, f"Expected a scalar or (possibly nested) tuple of scalars, got {coerce.describe(value)}")
    shape = _nested_shape(lw, value, "value")
    leaves = []
    _flatten(value, leaves)
    scalars = [coerce.constant(lw, v, dtype) if is_const(v) else cast(lw, v, dtype) for v in leaves]
    if not shape:
        return scalars[0]
    return lw.emit("astile", scalars, {"shape": shape})


def _nested_shape(lw, value, where: str) -> tuple[int, ...]:
    if not isinstance(value, tuple):
        if not (is_const(value) or isinstance(value, Value) and not value.is_array and value.shape == ()):
            lw.fail(TileTypeError, f"Expected scalar elements at {where}, got {coerce.describe(value)}")
        return ()
    if not is_pow2(len(value)):
        lw.fail(TileTypeError, f"Tuple length {len(value)} at {where} is not a power of 2")
    inner = {_nested_shape(lw, v, f"{where}[{k}]") for k, v in enumerate(value)}
    if len(inner) > 1:
        lw.fail(TileTypeError, f"Tuple has non-uniform inner shapes at {where}")
    return (len(value),) + inner.pop()


def _flatten(value, out: list):
    if isinstance(value, tuple):
        for v in value:
            _flatten(v, out)
    else:
        out.append(value)


@impl(stubs.astype)
def astype(lw, x, dtype, rounding_mode):
    dtype = dtype_arg(lw, dtype)
    if is_const(x):
        return coerce.constant(lw, x, dtype)
    x = tile_arg(lw, x, "astype")
    if rounding_mode is None:
        return cast(lw, x, dtype)
    if not all(d.is_float or d.kind == "r" for d in (x.dtype, dtype)):
        lw.fail(TileTypeError, "rounding_mode is only valid for float to float conversions")
    if dtype is tfloat32 and x.dtype.is_float:
        modes = ("RN", "RZ", "RA")
    elif x.dtype.is_float and dtype.is_float:
        modes = ("RN", "RZ", "RM", "RP")
    else:  # to or from an fp8/fp4 format: the default rounding only
        modes = ("RN",)
    if not isinstance(rounding_mode, RoundingMode) or rounding_mode.name not in modes:
        lw.fail(TileTypeError, f"rounding_mode={rounding_mode} is not supported for conversion from {x.dtype} to "
                               f"{dtype} (supported: {', '.join(modes)})")
    if x.dtype is dtype or rounding_mode is RoundingMode.RN:
        return cast(lw, x, dtype)
    return lw.emit("astype", [x], {"dtype": dtype, "rounding": rounding_mode.name})


@impl(stubs.bitcast)
def bitcast(lw, x, dtype):
    x, dtype = tile_arg(lw, x, "bitcast"), dtype_arg(lw, dtype)
    if x.dtype.bitwidth != dtype.bitwidth:
        lw.fail(TileTypeError, f"Cannot bitcast {x.dtype} to {dtype}: bit width is different")
    if bool_ in (x.dtype, dtype):
        lw.fail(TileTypeError, "Cannot bitcast to or from bool")
    return x if x.dtype is dtype else lw.emit("bitcast", [x], {"dtype": dtype})


# ---- shape ops ----------------------------------------------------------------------------------

@impl(stubs.reshape)
def reshape(lw, x, shape):
    x = tile_arg(lw, x, "reshape")
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, tuple):
        lw.fail(TileTypeError, f"reshape() shape must be a tuple of integer constants, got {coerce.describe(shape)}")
    dims = [const_int(lw, n, "reshape dimension") for n in shape]
    if dims.count(-1) > 1:
        lw.fail(TileTypeError, "Only one dimension can be -1")
    if any(n < -1 or n == 0 for n in dims):
        lw.fail(TileTypeError, f"Invalid reshape dimension in {tuple(dims)}")
    if -1 in dims:
        known = 1
        for n in dims:
            known *= n if n != -1 else 1
        if x.type.size % known:
            lw.fail(TileTypeError, f"Cannot reshape {x.shape} to {tuple(dims)}")
        dims[dims.index(-1)] = x.type.size // known
    dims = tuple(dims)
    size = 1
    for n in dims:
        size *= n
    if size != x.type.size:
        lw.fail(TileTypeError, f"Cannot reshape {x.shape} to {dims}")
    tile_shape(lw, dims)
    return x if dims == x.shape else lw.emit("reshape", [x], {"shape": dims})


@impl(stubs.permute)
def permute(lw, x, axes):
    x = tile_arg(lw, x, "permute")
    if not isinstance(axes, tuple) or len(axes) != x.type.ndim:
        lw.fail(TileTypeError, "Num axes must match input's rank")
    norm = tuple(normalize_axis(lw, a, x.type.ndim) for a in axes)
    for i, a in enumerate(norm):
        if norm.index(a) != i:
            lw.fail(TileTypeError, f"Repeated axis #{i}")
    return x if norm == tuple(range(x.type.ndim)) else lw.emit("permute", [x], {"axes": norm})


@impl(stubs.transpose)
def transpose(lw, x, axis0, axis1):
    x = tile_arg(lw, x, "transpose")
    ndim = x.type.ndim
    if (axis0 is None) != (axis1 is None):
        lw.fail(TileTypeError, "transpose axes must either both be specified or both be None")
    if axis0 is None:
        if ndim < 2:  # the tile-operations spec: rank < 2 is returned unchanged
            return x
        axis0, axis1 = 0, 1
    a, b = normalize_axis(lw, axis0, ndim), normalize_axis(lw, axis1, ndim)
    axes = list(range(ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute(lw, x, tuple(axes))


@impl(stubs.expand_dims)
def expand_dims(lw, x, axis):
    x = tile_arg(lw, x, "expand_dims")
    axis = normalize_axis(lw, axis, x.type.ndim + 1)
    return lw.emit("reshape", [x], {"shape": x.shape[:axis] + (1,) + x.shape[axis:]})


@impl(stubs.broadcast_to)
def broadcast_to(lw, x, shape):
    x = tile_arg(lw, x, "broadcast_to")
    return broadcast(lw, x, tile_shape(lw, shape))


@impl(stubs.cat)
def cat(lw, tiles, axis):
    if not isinstance(tiles, tuple) or not tiles:
        lw.fail(TileTypeError, "cat() expects a tuple of tiles")
    if len(tiles) > 2:
        lw.fail(TileTypeError, f"cat() supports at most 2 tiles, got {len(tiles)}")
    values = [tile_arg(lw, t, "cat") for t in tiles]
    if len(values) == 1:
        return values[0]
    x, y = values
    if x.dtype is not y.dtype:
        lw.fail(TileTypeError, f"Expected tiles to have the same dtype, got {x.dtype} and {y.dtype}")
    if x.type.ndim != y.type.ndim:
        lw.fail(TileTypeError, f"Expected tiles to have the same rank, got {x.type.ndim} and {y.type.ndim}")
    if x.type.ndim == 0:
        lw.fail(TileTypeError, "Cannot concatenate scalars (rank 0 tiles)")
    axis = normalize_axis(lw, axis, x.type.ndim)
    if any(a != b for d, (a, b) in enumerate(zip(x.shape, y.shape)) if d != axis):
        lw.fail(TileTypeError, "Expected tiles to have the same shape for non axis dimensions")
    if not is_pow2(x.shape[axis] + y.shape[axis]):
        lw.fail(TileTypeError, f"Result tile shape must be power of 2, got {x.shape[axis] + y.shape[axis]} "
                               f"along axis {axis}")
    return lw.emit("cat", [x, y], {"axis": axis})


def _subtile(lw, x: Value, index, shape, fn: str):
    ndim = x.type.ndim
    scalar_result = shape == ()
    shape = (1,) * ndim if scalar_result else tile_shape(lw, shape)
    if len(shape) != ndim:
        lw.fail(TileTypeError, f"{fn}() shape must have rank {ndim}, got {shape}")
    for d, (n, m) in enumerate(zip(x.shape, shape)):
        if n % m:
            lw.fail(TileTypeError, f"Tile shape {x.shape} is not divisible by {shape} at dimension #{d}")
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) != ndim:
        lw.fail(TileTypeError, f"{fn}() index must have {ndim} entries, got {len(index)}")
    for d, i in enumerate(index):
        if is_const(i) and not 0 <= i < x.shape[d] // shape[d]:
            lw.fail(TileTypeError, f"Index {i} out of bounds at dimension #{d}: valid range is "
                                    f"[0, {x.shape[d] // shape[d]})")
    idx = [lw.index_scalar(i, f"{fn} index") for i in index]
    return shape, idx, scalar_result


@impl(stubs.extract)
def extract(lw, x, index, shape):
    x = tile_arg(lw, x, "extract")
    shape, idx, scalar_result = _subtile(lw, x, index, shape, "extract")
    r = lw.emit("extract", [x, *idx], {"shape": shape})
    return lw.emit("reshape", [r], {"shape": ()}) if scalar_result else r


@impl(stubs.insert)
def insert(lw, x, index, value):
    x = tile_arg(lw, x, "insert")
    v = to_value(lw, value, x.dtype) if is_const(value) else tile_arg(lw, value, "insert")
    if v.dtype is not x.dtype:
        lw.fail(TileTypeError, f"Cannot insert a tile of dtype {v.dtype} into a tile of dtype {x.dtype}")
    if v.shape == ():
        v = lw.emit("reshape", [v], {"shape": (1,) * x.type.ndim})
    if v.type.ndim != x.type.ndim:
        lw.fail(TileTypeError, f"Inserted tile has rank {v.type.ndim}, expected {x.type.ndim} (or a scalar)")
    _, idx, _ = _subtile(lw, x, index, v.shape, "insert")
    return lw.emit("insert", [x, v, *idx], {})


@impl(stubs.where)
def where(lw, cond, x, y):
    c = to_value(lw, cond) if is_const(cond) else tile_arg(lw, cond, "where")
    if c.dtype is not bool_:
        c = lw.emit("ne", [c, coerce.constant(lw, 0, c.dtype, c.shape)])
    xv, yv = unify(lw, x, y)
    shape = coerce.broadcast_shapes(lw, c.shape, xv.shape)
    return lw.emit("where", [broadcast(lw, c, shape), broadcast(lw, xv, shape), broadcast(lw, yv, shape)])


# ---- elementwise --------------------------------------------------------------------------------

def check_flush_to_zero(lw, flush_to_zero, dtype):
    """flush_to_zero (subnormals read and written as zero) exists for float32 arithmetic only."""
    if const_bool(lw, flush_to_zero, "flush_to_zero") and dtype is not float32:
        lw.fail(TileTypeError, "Flush to zero can only be used for float32 type", lw.arg("flush_to_zero"))


# The rounding modes each elementwise op takes (cuTile's); RZ, RM and RP are kept on the op, APPROX
# as `approx` where the hardware's approximate instruction is within a few ulp (_APPROXIMATED: the
# CUDA backend uses it; the interpreter computes as without a mode, a result at least as precise);
# FULL, and APPROX elsewhere (tanh.approx is off by up to 2^-11), compute as without one.
_DIRECTED = ("RZ", "RM", "RP")
_ROUNDING_MODES = {"add": ("RN",) + _DIRECTED, "sub": ("RN",) + _DIRECTED, "mul": ("RN",) + _DIRECTED,
                   "truediv": ("RN",) + _DIRECTED + ("FULL", "APPROX"), "sqrt": ("RN",) + _DIRECTED + ("APPROX",),
                   "exp": ("FULL", "APPROX"), "tanh": ("FULL", "APPROX")}
_APPROXIMATED = ("truediv", "exp", "sqrt")


def rounding_attrs(lw, name, rounding_mode, dtype, stub=None) -> dict:
    """The op's attributes for `rounding_mode` (checked as cuTile checks it) on operands of `dtype`;
    `stub`: the function the user called where it is not the op's own (sum() for add)."""
    if rounding_mode is None:
        return {}
    if not isinstance(rounding_mode, RoundingMode):
        lw.fail(TileTypeError, f"rounding_mode must be a ct.RoundingMode, got {rounding_mode!r}")
    mode = rounding_mode.name
    if mode not in _ROUNDING_MODES.get(name, ()):
        lw.fail(TileTypeError, f"Rounding mode {rounding_mode.value} is not supported for {stub or OPS[name].stub} "
                               f"(RoundingMode.{mode})", lw.arg("rounding_mode"))
    if not dtype.is_float:
        lw.fail(TileTypeError, f"Rounding mode can only be used for unrestricted float types, but got {dtype}",
                lw.arg("rounding_mode"))
    if mode in ("FULL", "APPROX") and dtype is not float32:
        lw.fail(TileTypeError, f"Rounding mode {rounding_mode.value} can only be used for float32 type, but got "
                               f"{dtype} (RoundingMode.{mode})", lw.arg("rounding_mode"))
    if mode in _DIRECTED:
        return {"rounding": mode}
    return {"approx": True} if mode == "APPROX" and name in _APPROXIMATED else {}


def lower_unary(lw, name, x, rounding_mode=None, flush_to_zero=False):
    """An elementwise op of one operand, checked and converted by the dtypes it accepts."""
    v = tile_arg(lw, x, name)
    coerce.check_arithmetic(lw, v.dtype, "Operand")
    check_flush_to_zero(lw, flush_to_zero, v.dtype if OPS[name].accepts is not Accepts.FLOAT_MATH or v.dtype.is_float
                        else float32)
    accepts = OPS[name].accepts
    if accepts is Accepts.FLOAT_MATH and not v.dtype.is_float and not v.dtype.is_complex:
        v = cast(lw, v, float32)
    if accepts is Accepts.FLOATS and not v.dtype.is_float:
        lw.fail(TileTypeError, f"{OPS[name].stub}() requires a floating-point tile, got {v.type}")
    if accepts is Accepts.INTEGERS and (v.dtype.is_float or v.dtype.is_complex):
        lw.fail(TileTypeError, f"Bitwise operations require integers or bool, got {v.dtype}")
    if name == "neg" and v.dtype is bool_:
        v = cast(lw, v, int32)
    return lw.emit(name, [v], {**rounding_attrs(lw, name, rounding_mode, v.dtype), **_ftz_attrs(flush_to_zero, v.dtype)})


def _ftz_attrs(flush_to_zero, dtype) -> dict:
    """flush_to_zero (already checked): float32 subnormal operands and results read as zero."""
    return {"flush_to_zero": True} if flush_to_zero is True and dtype is float32 else {}


def positive(lw, x):
    v = tile_arg(lw, x, "positive")
    coerce.check_arithmetic(lw, v.dtype, "Operand")
    return cast(lw, v, int32) if v.dtype is bool_ else v


def lower_binary(lw, name, x, y, flush_to_zero=False, rounding_mode=None):
    """x <op> y with cuTile's promotion, loose constants and broadcasting."""
    if name == "matmul":
        return matmul(lw, x, y)
    for v in (x, y):
        if isinstance(v, Value) and v.is_array:
            lw.fail(TileTypeError, "Arrays cannot be used in arithmetic; load() them into tiles first")
        if not isinstance(v, Value) and not is_const(v):
            lw.fail(TileTypeError, f"Unsupported operand for {name}: {coerce.describe(v)}")
    if name in _BITWISE or name in ("lshift", "rshift"):
        result = _bitwise(lw, name, x, y)
        check_flush_to_zero(lw, flush_to_zero, result.dtype)
        return result
    dtype = coerce.common_dtype(lw, x, y)
    coerce.check_arithmetic(lw, dtype, "Left-hand side" if isinstance(x, Value) and not x.dtype.is_arithmetic else "Operand")
    if name == "truediv" and not dtype.is_float and not dtype.is_complex:
        dtype = float32
    if OPS[name].accepts is Accepts.FLOATS and not dtype.is_float:
        lw.fail(TileTypeError, f"{name}() (**) supports floating-point tiles only, got {dtype}; cast with astype()")
    if OPS[name].accepts is Accepts.FLOAT_MATH and not dtype.is_float and not dtype.is_complex:
        dtype = float32
    if name in ("mod", "floordiv") and dtype is bool_:
        lw.fail(TileTypeError, f"{name} is not supported for bool operands")
    if name in ("add", "sub", "mul") and dtype is bool_:
        dtype = int32
    check_flush_to_zero(lw, flush_to_zero, dtype)
    attrs = {**rounding_attrs(lw, name, rounding_mode, dtype), **_ftz_attrs(flush_to_zero, dtype)}
    a, b = unify(lw, x, y, dtype=dtype)
    folded = None if attrs else _folded(lw, name, a, b)
    return folded if folded is not None else lw.emit(name, [a, b], attrs)


# Ops on typed scalar constants (`ct.int16(2) + n` with n a Constant) are computed at compile
# time, in the operands' dtype (wrapping as the GPU does), so that `ct.static_assert` can read them.
_FOLDABLE = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
             "floordiv": np.floor_divide, "mod": np.mod, "bitwise_and": np.bitwise_and,
             "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "eq": np.equal, "ne": np.not_equal,
             "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
# floats floor their rounded quotient (interp/rules.py), and a division by zero is left to run time
_INTEGER_DIVISIONS = ("floordiv", "mod")


def constant_value(v):
    """The Python value of a typed scalar constant (a Value; one promoted to a wider dtype too), else None."""
    op = v.owner if isinstance(v, Value) and not v.is_array and not v.shape else None
    if op is not None and op.name == "constant":
        return op.attrs["value"]
    if op is not None and op.name == "astype" and can_cast_implicitly(op.operands[0].dtype, v.dtype):
        inner = constant_value(op.operands[0])
        return None if inner is None else np.array(inner, op.operands[0].dtype.numpy).astype(v.dtype.numpy).item()
    return None


def _folded(lw, name, a: Value, b: Value) -> Value | None:
    """`a <name> b` as a constant when both are typed scalar constants and the op folds."""
    ufunc, x, y = _FOLDABLE.get(name), constant_value(a), constant_value(b)
    if ufunc is None or x is None or y is None:
        return None
    if name in _INTEGER_DIVISIONS and (not a.dtype.is_integral or y == 0):
        return None
    with np.errstate(all="ignore"):
        result = ufunc(np.array(x, a.dtype.numpy), np.array(y, b.dtype.numpy))
    dtype = bool_ if result.dtype == np.bool_ else a.dtype
    return lw.emit("constant", [], {"value": result.astype(dtype.numpy).item(), "dtype": dtype, "shape": ()})


_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")


def _bitwise(lw, name, x, y):
    shift = name in ("lshift", "rshift")
    dtypes = [v.dtype if isinstance(v, Value) else float32 if isinstance(v, float) else None for v in (x, y)]
    if any(d is not None and (d.is_float or d.is_complex or (shift and d is bool_)) for d in dtypes):
        names = " and ".join(str(d) if d else type(v).__name__ for d, v in zip(dtypes, (x, y)))
        lw.fail(TileTypeError, f"Bitwise shift requires an integer operand, got {names}" if shift else
                f"Bitwise operations require integers or bool, got {names}")
    if None not in dtypes and dtypes[0] is not dtypes[1] and not shift:
        lw.fail(TileTypeError, f"Bitwise operands must have same data type, got {x.dtype} and {y.dtype}")
    dtype = coerce.common_dtype(lw, x, y)
    a, b = unify(lw, x, y, dtype=dtype)
    return lw.emit(name, [a, b])


def _elementwise_lowering(decl):
    """The lowering of an elementwise op's tile function (made from its declaration, as the function is)."""
    operands, _ = decl.params
    lower = lower_unary if decl.arity == 1 else lower_binary

    def lowering(lw, **arguments):
        return lower(lw, decl.name, *(arguments.pop(n) for n in operands), **arguments)
    return lowering


def _min_max(name):
    def lower(lw, x, y, flush_to_zero=False, propagate_nan=False):
        dtype = coerce.common_dtype(lw, x, y)
        check_flush_to_zero(lw, flush_to_zero, dtype)
        a, b = unify(lw, x, y, dtype=dtype)
        attrs = {"propagate_nan": True} if const_bool(lw, propagate_nan, "propagate_nan") else {}
        return lw.emit(name, [a, b], attrs)
    return lower


impl(stubs.minimum)(_min_max("minimum"))
impl(stubs.maximum)(_min_max("maximum"))

for _decl in OPS.values():  # those without a lowering of their own above
    if _decl.category is Category.ELEMENTWISE and _decl.params and stubs.FUNCTIONS[_decl.stub] not in LOWERINGS:
        impl(stubs.FUNCTIONS[_decl.stub])(_elementwise_lowering(_decl))


@impl(stubs.divmod)
def divmod_(lw, x, y):
    if coerce.common_dtype(lw, x, y).is_float:
        lw.fail(TileTypeError, "divmod() is not implemented for floating point values")
    return lower_binary(lw, "floordiv", x, y), lower_binary(lw, "mod", x, y)


@impl(stubs.cdiv)
def cdiv(lw, x, y):
    """ceil(x / y) for integers of any sign and width, computed in their dtype as cuTile does."""
    dtype = coerce.common_dtype(lw, x, y)
    if not dtype.is_integral or dtype is bool_:
        lw.fail(TileTypeError, f"cdiv() supports integer operands, got {dtype}")
    return lower_binary(lw, "cdiv", x, y)


# ---- reductions and scans -----------------------------------------------------------------------

def _reduction_input(lw, x, fn):
    v = tile_arg(lw, x, fn)
    if not v.dtype.is_arithmetic:
        lw.fail(TileTypeError, f"Non-arithmetic dtype {v.dtype} is unsupported for reduction")
    return cast(lw, v, int32) if v.dtype is bool_ else v


def _axes(lw, axis, ndim) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    norm = tuple(normalize_axis(lw, a, ndim) for a in axes)
    for a in norm:
        if norm.count(a) > 1:
            lw.fail(TileTypeError, f"Repeated reduction axis {a}")
    return tuple(sorted(norm))


def check_accumulation_rounding(lw, name, rounding_mode, dtype):
    """sum/prod/cumsum/cumprod take the rounding modes of the add or mul they repeat; a directed
    one (RZ, RM, RP) would have to round every partial result, which they do not do yet."""
    step = "mul" if name in ("prod", "cumprod") else "add"
    if rounding_attrs(lw, step, rounding_mode, dtype, stub=name):
        lw.fail(TileUnsupportedFeatureError, f"{name}() in rounding mode {rounding_mode.name} is not supported yet; "
                                             f"only the default (RN)", lw.arg("rounding_mode"))


def _reduction(name):
    def lower(lw, x, axis=None, keepdims=False, rounding_mode=None, flush_to_zero=False, propagate_nan=False):
        v = _reduction_input(lw, x, name)
        check_flush_to_zero(lw, flush_to_zero, v.dtype)
        if name in ("sum", "prod"):
            check_accumulation_rounding(lw, name, rounding_mode, v.dtype)
        attrs = {"axes": _axes(lw, axis, v.type.ndim), "keepdims": const_bool(lw, keepdims, "keepdims")}
        if propagate_nan:
            attrs["propagate_nan"] = True
        if not attrs["axes"]:
            return v
        return lw.emit(name, [v], attrs)
    return lower


for _name in ("sum", "prod", "max", "min"):
    impl(stubs.FUNCTIONS[_name])(_reduction(_name))


def _argreduction(name):
    def lower(lw, x, axis=None, keepdims=False, propagate_nan=False):
        v = _reduction_input(lw, x, name)
        keepdims = const_bool(lw, keepdims, "keepdims")
        if isinstance(axis, tuple):
            lw.fail(TileTypeError, f"{name}() takes a single axis, not a tuple")
        attrs = {"propagate_nan": True} if propagate_nan else {}
        if axis is None:
            flat = lw.emit("reshape", [v], {"shape": (v.type.size,)}) if v.type.ndim != 1 else v
            r = lw.emit(name, [flat], {"axes": (0,), "keepdims": False, **attrs})
            return lw.emit("reshape", [r], {"shape": (1,) * v.type.ndim}) if keepdims else r
        return lw.emit(name, [v], {"axes": (normalize_axis(lw, axis, v.type.ndim),), "keepdims": keepdims, **attrs})
    return lower


impl(stubs.argmax)(_argreduction("argmax"))
impl(stubs.argmin)(_argreduction("argmin"))


def _scan(name):
    def lower(lw, x, axis=0, reverse=False, rounding_mode=None, flush_to_zero=False):
        v = _reduction_input(lw, x, name)
        check_flush_to_zero(lw, flush_to_zero, v.dtype)
        check_accumulation_rounding(lw, name, rounding_mode, v.dtype)
        if v.type.ndim == 0:
            lw.fail(TileTypeError, f"{name}() needs a tile of rank 1 or more")
        return lw.emit(name, [v], {"axis": normalize_axis(lw, axis, v.type.ndim),
                                   "reverse": const_bool(lw, reverse, "reverse")})
    return lower


impl(stubs.cumsum)(_scan("cumsum"))
impl(stubs.cumprod)(_scan("cumprod"))


def _combine_axis(lw, axis, ndim) -> int:
    if isinstance(axis, (Value, bool)) or not isinstance(axis, int):
        what = "None" if axis is None else coerce.describe(axis)
        lw.fail(TileTypeError, f"Expected an integer constant, but given value has type {what}",
                lw.arg("axis"))
    return normalize_axis(lw, axis, ndim)


def _combine(lw, kind, x, axis, func, identity, attrs):
    """reduce/scan with a user combine function: the tiles broadcast together, the function
    inlined once over scalars into the op's region."""
    what = "reduction" if kind == "reduce" else "scan"
    tiles = x if isinstance(x, tuple) else (x,)
    identities = identity if isinstance(identity, tuple) else (identity,)
    if len(identities) != len(tiles):
        lw.fail(TileTypeError, f"Expected {len(tiles)} identity value(s), got {len(identities)}", lw.arg("identity"))
    values = [tile_arg(lw, t, kind) for t in tiles]
    for v in values:
        if not v.dtype.is_arithmetic:
            lw.fail(TileTypeError, f"Non-arithmetic dtype {v.dtype} is unsupported for {what}")
    shape = coerce.broadcast_shapes(lw, *(v.shape for v in values))
    if not shape:
        lw.fail(TileTypeError, f"{kind}() needs a tile of rank 1 or more")
    values = [broadcast(lw, v, shape) for v in values]
    for i in identities:
        if not is_const(i):
            lw.fail(TileTypeError, f"The identity of {kind}() must be a constant scalar, got {coerce.describe(i)}",
                    lw.arg("identity"))
    attrs = {"axis": _combine_axis(lw, axis, len(shape)),
             "identities": tuple(coerce.const_as(lw, i, v.dtype, implicit=False) for i, v in zip(identities, values)),
             **attrs}
    region = lw.combine_region(func, [v.dtype for v in values], what)
    op = lw.emit(kind, values, attrs, regions=[region])
    results = [op] if isinstance(op, Value) else op.results
    return tuple(results) if isinstance(x, tuple) else results[0]


@impl(stubs.reduce)
def reduce(lw, x, axis, func, identity, keepdims):
    return _combine(lw, "reduce", x, axis, func, identity, {"keepdims": const_bool(lw, keepdims, "keepdims")})


@impl(stubs.scan)
def scan(lw, x, axis, func, identity, reverse):
    return _combine(lw, "scan", x, axis, func, identity, {"reverse": const_bool(lw, reverse, "reverse")})


# ---- matrix multiply ----------------------------------------------------------------------------

# input dtype -> accumulator dtypes mma accepts (the first is matmul's accumulator)
MMA_ACCUMULATORS = {float16: (float16, float32), bfloat16: (float32,), float32: (float32,), float64: (float64,),
                    tfloat32: (float32,), float8_e4m3fn: (float16, float32), float8_e5m2: (float16, float32),
                    int8: (int32,), uint8: (int32,)}


def _batch_broadcast(lw, x: Value, y: Value):
    """Give x and y the same batch dims (all but the last two)."""
    batch = coerce.broadcast_shapes(lw, x.shape[:-2], y.shape[:-2])
    return broadcast(lw, x, batch + x.shape[-2:]), broadcast(lw, y, batch + y.shape[-2:])


@impl(stubs.mma)
def mma(lw, x, y, acc, use_fast_acc):
    x, y, acc = (tile_arg(lw, t, "mma") for t in (x, y, acc))
    if x.type.ndim < 2 or y.type.ndim < 2:
        lw.fail(TileTypeError, f"mma() operands must have 2 or more dimensions, got {x.shape} and {y.shape}")
    if x.dtype is not y.dtype and {x.dtype, y.dtype} != {int8, uint8}:
        lw.fail(TileTypeError, f"x and y must have the same dtype unless they are int8/uint8, got {x.dtype} {y.dtype}")
    if x.dtype not in MMA_ACCUMULATORS:
        lw.fail(TileTypeError, f"Unsupported input dtype {x.dtype} for mma(); supported dtypes are "
                               f"{', '.join(d.name for d in MMA_ACCUMULATORS)}")
    if acc.dtype not in MMA_ACCUMULATORS[x.dtype]:
        lw.fail(TileTypeError, f"Unsupported acc dtype {acc.dtype} for {x.dtype} inputs; supported dtypes are "
                               f"{', '.join(d.name for d in MMA_ACCUMULATORS[x.dtype])}")
    if x.shape[-1] != y.shape[-2]:
        lw.fail(TileTypeError, f"mma() inner dimensions differ: {x.shape} @ {y.shape}")
    # fast accumulation only lets the hardware accumulate fp8 products less precisely: same results here
    if const_bool(lw, use_fast_acc, "use_fast_acc") and x.dtype not in (float8_e4m3fn, float8_e5m2):
        lw.fail(TileTypeError, f"use_fast_acc is only supported for fp8 input dtypes (float8_e4m3fn, float8_e5m2), "
                               f"got {x.dtype}")
    x, y = _batch_broadcast(lw, x, y)
    return lw.emit("mma", [x, y, acc])


@impl(stubs.matmul)
def matmul(lw, x, y):
    x, y = tile_arg(lw, x, "matmul"), tile_arg(lw, y, "matmul")
    squeeze_x, squeeze_y = x.type.ndim == 1, y.type.ndim == 1
    if squeeze_x:
        x = lw.emit("reshape", [x], {"shape": (1,) + x.shape})
    if squeeze_y:
        y = lw.emit("reshape", [y], {"shape": y.shape + (1,)})
    if not (2 <= x.type.ndim <= 3 and 2 <= y.type.ndim <= 3):
        lw.fail(TileTypeError, f"matmul() supports 1-D, 2-D and 3-D tiles, got {x.shape} and {y.shape}")
    dtype = coerce.common_dtype(lw, x, y)
    if dtype not in MMA_ACCUMULATORS:
        lw.fail(TileTypeError, f"Unsupported input dtype {dtype} for matmul")
    if x.shape[-1] != y.shape[-2]:
        lw.fail(TileTypeError, f"matmul() inner dimensions differ: {x.shape} @ {y.shape}")
    x, y = _batch_broadcast(lw, cast(lw, x, dtype), cast(lw, y, dtype))
    acc_dtype = MMA_ACCUMULATORS[dtype][0]
    acc = coerce.constant(lw, 0, acc_dtype, x.shape[:-1] + y.shape[-1:])
    r = cast(lw, lw.emit("mma", [x, y, acc]), dtype)
    if squeeze_x or squeeze_y:
        shape = r.shape[:-2] + (() if squeeze_x else r.shape[-2:-1]) + (() if squeeze_y else r.shape[-1:])
        r = lw.emit("reshape", [r], {"shape": shape})
    return r


# ---- utilities ------------------------------------------------------------------------------------

@impl(stubs.print)
def print_(lw, args, sep, end):
    pieces, operands = [], []
    for a in args:
        if isinstance(a, Value):
            if a.is_array:
                lw.fail(TileTypeError, "Cannot print an array; load() it first")
            pieces.append(None)
            operands.append(a)
        else:
            pieces.append(str(a) if not isinstance(a, DType) else a.name)
    lw.emit("print", operands, {"text": tuple(pieces), "sep": sep, "end": end})


_PRINTF_SPEC = re.compile(r"%%|%[-+ #0]*(?:\d+)?(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?([a-zA-Z])")


@impl(stubs.printf)
def printf(lw, format, args):
    """C's printf: one conversion per tile argument, checked against its dtype; a tile prints as a
    nested list of its elements, each formatted by the conversion."""
    if not isinstance(format, str):
        lw.fail(TileTypeError, f"printf() format must be a string constant, got {coerce.describe(format)}")
    pieces, formats, operands, start = [], [], [], 0
    args = list(args)
    for m in _PRINTF_SPEC.finditer(format):
        pieces.append(format[start:m.start()] + ("%" if m.group(0) == "%%" else ""))
        start = m.end()
        if m.group(0) == "%%":
            continue
        spec = m.group(1)
        if spec not in "diuoxXeEfFgGaA":
            lw.fail(TileTypeError, f"printf() conversion %{spec} is not supported (use one of diuoxXeEfFgGaA)")
        if not args:
            lw.fail(TileTypeError, f"printf() format {format!r} has more conversions than arguments")
        v = args.pop(0)
        v = to_value(lw, v) if is_const(v) else v
        if not isinstance(v, Value) or v.is_array:
            lw.fail(TileTypeError, f"printf() arguments must be tiles or scalars, got {coerce.describe(v)}")
        if (spec in "diuoxX") != (v.dtype.is_integral or v.dtype is bool_) or not v.dtype.is_arithmetic:
            lw.fail(TileTypeError, f"printf() conversion %{spec} does not match an argument of dtype {v.dtype}")
        pieces.append(None)
        text = re.sub(r"(?:hh|h|ll|l|z|j|t)([a-zA-Z])$", r"\1", m.group(0))  # Python's % takes no length
        formats.append(text[:-1] + "d" if spec in "iu" else text)
        operands.append(v)
    if args:
        lw.fail(TileTypeError, f"printf() format {format!r} has fewer conversions than arguments")
    pieces.append(format[start:])
    lw.emit("print", operands, {"text": tuple(p for p in pieces if p != ""), "sep": "", "end": "",
                                "formats": tuple(formats)})


@impl(stubs.assert_)
def assert_(lw, cond, message):
    if is_const(cond) and isinstance(cond, bool):
        cond = to_value(lw, cond)
    if not isinstance(cond, Value) or cond.is_array or cond.dtype is not bool_:
        lw.fail(TileTypeError, f"Type of condition must be bool, got {coerce.describe(cond)}")
    if message is not None and not isinstance(message, str):
        lw.fail(TileTypeError, f"assert_() message must be a string constant, got {coerce.describe(message)}")
    lw.emit("assert", [cond], {"message": message or ""})


@impl(stubs.static_assert)
def static_assert(lw, condition, message):
    if isinstance(condition, Value):
        condition = constant_value(condition)  # a comparison of typed constants folds to one
        if condition is None:
            lw.fail(TileTypeError, "static_assert() needs a compile-time condition")
    if not condition:
        lw.fail(TileStaticAssertionError, "Static assertion failed" + (f": {message}" if message is not None else ""))


# ---- tile methods -------------------------------------------------------------------------------

def _slice_stub(array, /, axis, start, stop):
    pass


def lower_method(lw, x: Value, name: str, args, kwargs):
    """t.reshape(...), t.astype(...), t.item(), a.slice(...): the tile function with t first."""
    if hasattr(x, "lower_method"):  # a tiled view's load, store, ... (frontend/surface.py)
        return x.lower_method(lw, name, args, kwargs)
    if x.is_array:
        if name != "slice":  # a.tiled_view(...)
            return lower_call(lw, stubs.ARRAY_METHODS[name], [x, *args], kwargs)
        return array_slice(lw, **bind_call(lw, _slice_stub, [x, *args], kwargs))
    if name == "item":
        if args or kwargs:
            lw.fail(TileTypeError, "item() takes no arguments")
        if x.type.size != 1:
            lw.fail(TileTypeError, f"Cannot reshape {x.shape} to () for item(): it needs a tile with one element")
        return lw.emit("reshape", [x], {"shape": ()}) if x.shape != () else x
    if name in ("reshape", "permute") and args and not isinstance(args[0], tuple):
        args = [tuple(args)]  # t.reshape(2, 8) as well as t.reshape((2, 8))
    return lower_call(lw, stubs.FUNCTIONS[name], [x, *args], kwargs)


def lower_call(lw, stub, args, kwargs):
    """A call of tile function `stub`: bound against its signature, then lowered."""
    return LOWERINGS[stub](lw, **bind_call(lw, stub, args, kwargs))


__all__ = ["LOWERINGS", "SliceValue", "bind_call", "lower_binary", "lower_call", "lower_unary", "lower_method", "positive",
           "can_cast_implicitly", "ArrayType", "TileType", "TileSyntaxError"]
