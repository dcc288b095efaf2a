"""Typing rules the frontend applies before it emits an op: loose constants, promotion, broadcasting.

Loose constants (Python literals and arithmetic on them) take the type of the typed operand
they meet when it is of the same category (with a range check: `i8 + 300` is an error), and
their default type (int32/int64 by value, float32) when they are of a higher category:

    f16_tile * 2      -> float16          i8_tile + 1   -> int8
    i32_tile * 0.5    -> float32          bool_tile + 1 -> int32
    f32_tile * 1j     -> complex64        f64_tile * 1j -> complex128
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import TileTypeError, TileValueError
from ..ir.core import Value
from ..ir.types import (PromotionError, TileType, bool_, can_cast_implicitly, complex64, dtype_range, float32,
                        int32, int64, promote, uint64)


def is_const(x) -> bool:
    """A loose (untyped, compile-time) scalar constant."""
    return isinstance(x, (bool, int, float, complex, np.bool_, np.number)) and not isinstance(x, Value)


def _category(x) -> int:
    if isinstance(x, (bool, np.bool_)):
        return 0
    if isinstance(x, (int, np.integer)):
        return 1
    return 3 if isinstance(x, (complex, np.complexfloating)) else 2


def _dtype_category(dtype) -> int:
    return 0 if dtype is bool_ else 1 if dtype.is_integral else 3 if dtype.is_complex else 2


def default_dtype(c):
    """The dtype a loose constant takes on its own."""
    if _category(c) == 0:
        return bool_
    if _category(c) == 2:
        return float32
    if _category(c) == 3:
        return complex64
    for dtype in (int32, int64, uint64):
        lo, hi = dtype_range(dtype)
        if lo <= c <= hi:
            return dtype
    raise TileValueError(f"Integer constant {c} is too large for any integer dtype")


def const_as(lw, c, dtype, *, implicit=True):
    """The Python value of constant `c` converted to `dtype`, checked like an implicit cast."""
    cat, target = _category(c), _dtype_category(dtype)
    if dtype is bool_ and cat == 1:  # a loose 0 or 1 is a bool (padding_value=0 on a bool array)
        if implicit and c not in (0, 1):
            lw.fail(TileValueError, f"Integer constant {c} is out of range of bool_")
        return bool(c)
    if implicit and cat > target:
        lw.fail(TileTypeError, f"Cannot implicitly cast {type(c).__name__} constant {c!r} to {dtype}")
    if dtype.is_integral and cat == 1:
        lo, hi = dtype_range(dtype)
        if not lo <= int(c) <= hi:
            lw.fail(TileValueError, f"Integer constant {c} is out of range of {dtype}")
    if dtype.is_complex:
        return complex(c)
    c = c.real if cat == 3 else c  # an explicit cast of a complex constant keeps its real part, as NumPy
    if dtype is bool_:
        return bool(c)
    if dtype.is_integral:
        if isinstance(c, float) and not math.isfinite(c):
            lw.fail(TileValueError, f"Cannot convert {c} to {dtype}")
        return int(np.array(c).astype(np.float64).astype(dtype.numpy)) if cat == 2 else int(c)
    return float(c)


def constant(lw, c, dtype, shape=()) -> Value:
    """A typed constant tile."""
    return lw.emit("constant", [], {"value": const_as(lw, c, dtype, implicit=False), "dtype": dtype,
                                     "shape": tuple(shape)})


def to_value(lw, x, dtype=None) -> Value:
    """A tile Value for `x`: Values pass through, loose constants take `dtype` or their default."""
    if isinstance(x, Value):
        if x.is_array:
            lw.fail(TileTypeError, "Expected a tile or scalar, got an array (use load() or gather() to read it)")
        return x
    if is_const(x):
        if dtype is None:
            return constant(lw, x, default_dtype(x))
        return lw.emit("constant", [], {"value": const_as(lw, x, dtype), "dtype": dtype, "shape": ()})
    lw.fail(TileTypeError, f"Expected a tile or scalar, got {describe(x)}")


def describe(x) -> str:
    if isinstance(x, Value):
        return str(x.type)
    if isinstance(x, tuple):
        return getattr(x, "described", "a tuple")  # a list argument says what it is
    return f"a {type(x).__name__}"


def cast(lw, v: Value, dtype) -> Value:
    if v.dtype is dtype:
        return v
    return lw.emit("astype", [v], {"dtype": dtype})


def implicit_cast(lw, x, dtype, what: str) -> Value:
    """Cast for stores, scatters, padding values: allowed only where promotion would give `dtype`."""
    if is_const(x):
        return to_value(lw, x, dtype)
    v = to_value(lw, x)
    if not can_cast_implicitly(v.dtype, dtype):
        lw.fail(TileTypeError, f"{what} is incompatible with array's dtype: cannot implicitly cast {v.dtype} to {dtype}")
    return cast(lw, v, dtype)


def broadcast_shapes(lw, *shapes) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        lw.fail(TileTypeError, "Cannot broadcast shapes " + " and ".join(str(tuple(s)) for s in shapes))


def broadcasts_to(shape, target) -> bool:
    """Whether a tile of `shape` broadcasts to `target` (NumPy's rules, one way)."""
    return len(shape) <= len(target) and all(a in (1, b) for a, b in zip(reversed(shape), reversed(target)))


def broadcast(lw, v: Value, shape) -> Value:
    """Broadcast a tile to `shape` (NumPy rules), made explicit as reshape + broadcast ops."""
    shape = tuple(shape)
    if v.shape == shape:
        return v
    if not broadcasts_to(v.shape, shape):
        lw.fail(TileTypeError, f"Shape {v.shape} is not broadcastable to {shape}")
    if len(v.shape) < len(shape):
        v = lw.emit("reshape", [v], {"shape": (1,) * (len(shape) - len(v.shape)) + v.shape})
    # a broadcast that stretches nothing would still move the tile through shared memory
    return v if v.shape == shape else lw.emit("broadcast", [v], {"shape": shape})


def common_dtype(lw, *xs):
    """The dtype operands `xs` (Values and loose constants) are computed in."""
    typed = [x.dtype for x in xs if isinstance(x, Value)]
    try:
        result = typed[0] if typed else None
        for d in typed[1:]:
            result = promote(result, d)
    except PromotionError as e:
        lw.fail(TileTypeError, str(e))
    for c in (x for x in xs if is_const(x)):
        if result is None:
            result = default_dtype(c)
            continue
        have = _dtype_category(result)
        if _category(c) > have:
            result = promote(result, default_dtype(c))
        elif _category(c) == have == 1:
            const_as(lw, c, result)  # range check
    return result


def unify(lw, *xs, dtype=None) -> list[Value]:
    """Values of one dtype (promoted, or `dtype`) and one broadcast shape."""
    dtype = dtype or common_dtype(lw, *xs)
    shape = broadcast_shapes(lw, *(x.shape for x in xs if isinstance(x, Value)))
    return [lw.emit("constant", [], {"value": const_as(lw, x, dtype), "dtype": dtype, "shape": shape})
            if is_const(x) else broadcast(lw, cast(lw, to_value(lw, x), dtype), shape) for x in xs]


def check_arithmetic(lw, dtype, what: str):
    if not dtype.is_arithmetic:
        lw.fail(TileTypeError, f"{what} has non-arithmetic dtype {dtype}")


def scalar_type(dtype) -> TileType:
    return TileType(dtype, ())
