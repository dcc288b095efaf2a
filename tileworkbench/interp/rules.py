"""NumPy rules for the compute ops: one row per IR op.

Every runtime value is a NumPy array whose leading axis runs over the blocks being executed
(length B), or has length 1 when the value is the same in every block (constants, grid sizes).
Tile axes follow; rules shift them by one. 16-bit floats compute in float32 and round once,
which is exactly the correctly rounded half/bfloat16 result for + - * / (float32 carries more
than twice their precision plus two bits).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..arguments import block_text
from ..errors import TileAssertionError
from ..ir.ops import OPS, Rules
from ..ir.types import bfloat16, bool_, float16, float32, part_dtype, tfloat32
from .fma import fused_multiply_add
from .memory import ArrayView
from .tensor_cores import BLOCK_ADDERS, tensor_core_mma

RULES = Rules()
rule = RULES.add


def _wide(dtype):
    """The NumPy dtype a value of `dtype` is computed in."""
    return np.float32 if dtype in (float16, bfloat16) else dtype.numpy


def _elementwise(fn):
    def apply(ctx, op, *args):
        dtype = op.operands[0].dtype
        out = fn(*(a.astype(_wide(dtype), copy=False) for a in args))
        return out.astype(op.result.dtype.numpy, copy=False)
    return apply


def _numpy_function(spelling: str):
    """The function an op's `numpy` spelling names (ir/ops.py): np.exp, or math.erf applied per
    element in float64 (correctly rounded there) where NumPy has none."""
    if not spelling.startswith("math."):
        return getattr(np, spelling)
    per_element = np.frompyfunc(getattr(math, spelling[5:]), 1, 1)
    return lambda x: per_element(x.astype(np.float64, copy=False)).astype(x.dtype)


for _decl in OPS.values():
    if _decl.numpy is not None:
        RULES[_decl.name] = _elementwise(_numpy_function(_decl.numpy))


@rule("make_complex")
def make_complex(ctx, op, re, im):
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, op.result.dtype.numpy)
    out.real, out.imag = re, im  # each part as it is (re + im * 1j would turn an infinite im into a NaN real part)
    return out


@rule("rsqrt")
def rsqrt(ctx, op, x):
    return _elementwise(lambda x: (1.0 / np.sqrt(x.astype(np.float64))).astype(x.dtype))(ctx, op, x)


def _with_rounding(name, default):
    """The op in a directed rounding mode (attribute `rounding`: RZ, RM or RP) where it has one."""
    def apply(ctx, op, *args):
        if "rounding" not in op.attrs:
            return default(ctx, op, *args)
        nearest = default(ctx, op, *args)  # NaN, infinities and the default result where it is exact
        shape = nearest.shape
        flat = [np.broadcast_to(a, shape).ravel() for a in args]
        out = nearest.ravel().copy()
        for k in range(out.size):
            out[k] = _round_exact(name, [a[k] for a in flat], out[k], op.attrs["rounding"])
        return out.reshape(shape)
    return apply


def _round_exact(name, operands, nearest, mode):
    """One element: the exact result of `name` rounded toward zero (RZ), -inf (RM) or +inf (RP) in
    the dtype of `nearest` (the correctly rounded result), decided by rational arithmetic."""
    values = [float(v) for v in operands]
    if not all(map(math.isfinite, values)) or not math.isfinite(float(nearest)) and name == "sqrt":
        return nearest
    if name == "sqrt":
        if values[0] <= 0:  # a square root of 0 or of a negative number is exact or NaN
            return nearest
        square = Fraction(float(nearest)) ** 2
        x = Fraction(values[0])
        return nearest if square == x else _pick(nearest, square > x, True, mode)
    a, b = Fraction(values[0]), Fraction(values[1])
    if name == "truediv" and b == 0:
        return nearest
    exact = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "truediv": lambda: a / b,
             "fma": lambda: a * b + Fraction(values[2])}[name]()
    if exact == 0:
        if name in ("add", "sub", "fma") and mode == "RM":  # an exact zero sum is -0 unless both terms are +0
            x, y = (values[0] * values[1], values[2]) if name == "fma" else \
                (values[0], values[1] if name == "add" else -values[1])
            positive_zeros = math.copysign(1, x) > 0 and math.copysign(1, y) > 0 and x == y == 0
            return nearest.dtype.type(0.0 if positive_zeros else -0.0)
        return nearest
    if math.isinf(float(nearest)):  # overflow: between the largest finite value and infinity
        return _pick(nearest, float(nearest) > 0, exact > 0, mode)
    at = Fraction(float(nearest))
    return nearest if at == exact else _pick(nearest, at > exact, exact > 0, mode)


def _pick(candidate, above, positive, mode):
    """Of the two values of candidate's dtype around an exact result (candidate is one of them, on
    the side `above` says), the one the directed rounding `mode` takes."""
    c = np.array([candidate])
    lo, hi = (_step(c, False)[0], candidate) if above else (candidate, _step(c, True)[0])
    if mode == "RZ":
        return lo if positive else hi
    return lo if mode == "RM" else hi


@rule("floordiv")
def floordiv(ctx, op, x, y):
    """Floats: floor(x / y) with the quotient rounded to the dtype first, as cuTile computes it."""
    dtype = op.result.dtype
    if not dtype.is_float:
        return _elementwise(np.floor_divide)(ctx, op, x, y)
    quotient = (x.astype(_wide(dtype)) / y.astype(_wide(dtype))).astype(dtype.numpy)
    return np.floor(quotient.astype(_wide(dtype))).astype(dtype.numpy)


@rule("cdiv")
def cdiv(ctx, op, x, y):
    """ceil(x / y) in the dtype: the floor quotient, plus one where inexact (0 where y is 0, as on the GPU)."""
    with np.errstate(divide="ignore", over="ignore"):
        return (np.floor_divide(x, y) + (np.mod(x, y) != 0)).astype(op.result.dtype.numpy, copy=False)


@rule("minimum", "maximum")
def min_max(ctx, op, x, y):
    nan_ignoring = {"minimum": np.fmin, "maximum": np.fmax}[op.name]
    fn = {"minimum": np.minimum, "maximum": np.maximum}[op.name] if op.attrs.get("propagate_nan") else nan_ignoring
    return _elementwise(fn)(ctx, op, x, y)


@rule("where")
def where(ctx, op, cond, x, y):
    return np.where(cond, x, y)


@rule("constant")
def constant(ctx, op):
    return np.full((1,) + tuple(op.attrs["shape"]), op.attrs["value"], dtype=op.attrs["dtype"].numpy)


@rule("iota")
def iota(ctx, op):
    return np.arange(op.attrs["shape"][0], dtype=op.attrs["dtype"].numpy)[None]


def float_to_int(x, dtype):
    """Truncate toward zero, saturating to `dtype`'s range; NaN becomes 0.

    The one definition of float -> integer conversion, the same as the tile library's `convert`
    (and the GPU's cvt.rzi.sat): 2.7 -> 2, -2.7 -> -2, inf -> the largest value, 1e10 -> int32 max.
    """
    info = np.iinfo(dtype)
    t = np.trunc(np.asarray(x, np.float64))
    above = t >= float(info.max) + 1  # float(max) + 1 is the first power of two out of range, exactly
    below = t < info.min
    inside = ~(np.isnan(t) | above | below)
    out = np.where(inside, t, 0).astype(dtype)
    return np.where(above, info.max, np.where(below, info.min, out)).astype(dtype)


@rule("astile")
def astile(ctx, op, *elements):
    b = max(e.shape[0] for e in elements)
    stacked = np.stack([np.broadcast_to(e, (b,)) for e in elements], axis=1)
    return stacked.reshape((b,) + tuple(op.attrs["shape"]))


@rule("astype")
def astype(ctx, op, x):
    src, dst, mode = op.operands[0].dtype, op.attrs["dtype"], op.attrs.get("rounding", "RN")
    if src.is_complex and not dst.is_complex and dst is not bool_:  # the real part, as NumPy (and CuPy) cast
        x, src = x.real, part_dtype(src)
    if src.is_float and dst.is_integral:
        return float_to_int(x, dst.numpy)
    if dst is tfloat32:  # a float32 with 10 mantissa bits
        return round_tf32(x.astype(np.float32), mode)
    if mode != "RN":
        return _round_directed(x.astype(np.float64), dst.numpy, mode)
    return x.astype(dst.numpy)


def _step(r, up):
    """The next value of r's float dtype above (up) or below it, by its bits."""
    bits = np.dtype(f"uint{8 * r.dtype.itemsize}")
    b = np.ascontiguousarray(r).view(bits)
    sign = bits.type(1) << bits.type(8 * r.dtype.itemsize - 1)
    away = up != np.signbit(r)  # up from a positive value, or down from a negative one, grows the magnitude
    stepped = np.where(r == 0, np.where(up, bits.type(1), sign | bits.type(1)),
                       np.where(away, b + bits.type(1), b - bits.type(1)))
    return stepped.astype(bits).view(r.dtype)


def _round_directed(x, target, mode):
    """float64 values rounded to `target` toward zero (RZ), -inf (RM) or +inf (RP)."""
    nearest = x.astype(target)
    exact = nearest.astype(np.float64) == x
    above = nearest.astype(np.float64) > x
    lo = np.where(above, _step(nearest, False), nearest)
    hi = np.where(above, nearest, _step(nearest, True))
    pick = {"RZ": np.where(x > 0, lo, hi), "RM": lo, "RP": hi}[mode]
    return np.where(exact | np.isnan(x), nearest, pick)


@rule("bitcast")
def bitcast(ctx, op, x):
    return np.ascontiguousarray(x).view(op.attrs["dtype"].numpy)


# ---- shape ops ----------------------------------------------------------------------------------

@rule("reshape")
def reshape(ctx, op, x):
    return x.reshape((x.shape[0],) + tuple(op.attrs["shape"]))


@rule("permute")
def permute(ctx, op, x):
    return x.transpose((0,) + tuple(a + 1 for a in op.attrs["axes"]))


@rule("broadcast")
def broadcast(ctx, op, x):
    return np.broadcast_to(x, (x.shape[0],) + tuple(op.attrs["shape"]))


@rule("cat")
def cat(ctx, op, x, y):
    b = max(x.shape[0], y.shape[0])
    x = np.broadcast_to(x, (b,) + x.shape[1:])
    y = np.broadcast_to(y, (b,) + y.shape[1:])
    return np.concatenate([x, y], axis=op.attrs["axis"] + 1)


def _subtile_index(x_shape, sub_shape, index):
    """Fancy indices selecting sub-tile `index` (one (B,)-array per dim) of every block's tile."""
    b = max(i.shape[0] for i in index) if index else 1
    grids = []
    nd = len(sub_shape)
    for d, (n, i) in enumerate(zip(sub_shape, index)):
        shape = [1] * (nd + 1)
        shape[0], shape[d + 1] = b, n
        grids.append((np.broadcast_to(i, (b,)).astype(np.int64)[:, None] * n
                      + np.arange(n)[None]).reshape([b] + [n if k == d else 1 for k in range(nd)]))
    rows = np.arange(b).reshape([b] + [1] * nd)
    return b, rows, grids


@rule("extract")
def extract(ctx, op, x, *index):
    # a constant index (length 1) still selects from every block's own tile
    b = max([x.shape[0]] + [i.shape[0] for i in index])
    x = np.broadcast_to(x, (b,) + x.shape[1:])
    _, rows, grids = _subtile_index(x.shape[1:], op.attrs["shape"], [np.broadcast_to(i, (b,)) for i in index])
    return x[(rows, *grids)]


@rule("insert")
def insert(ctx, op, x, value, *index):
    b = max([x.shape[0], value.shape[0]] + [i.shape[0] for i in index])
    out = np.array(np.broadcast_to(x, (b,) + x.shape[1:]))
    _, rows, grids = _subtile_index(x.shape[1:], value.shape[1:], [np.broadcast_to(i, (b,)) for i in index])
    out[(rows, *grids)] = value
    return out


# ---- reductions and scans -----------------------------------------------------------------------

def _axes(op):
    return tuple(a + 1 for a in op.attrs["axes"])


@rule("sum", "prod")
def sum_prod(ctx, op, x):
    fn = np.sum if op.name == "sum" else np.prod
    dtype = op.result.dtype
    out = fn(x.astype(_wide(dtype), copy=False), axis=_axes(op), keepdims=op.attrs["keepdims"], dtype=_wide(dtype))
    return np.asarray(out).astype(dtype.numpy, copy=False)


# The NaN of a float32 max or min over NaNs only, as the GPU's fmaxf/fminf (FMNMX) give it.
CANONICAL_NAN32 = np.array(0x7FFFFFFF, np.uint32).view(np.float32)


@rule("max", "min")
def max_min(ctx, op, x):
    if op.attrs.get("propagate_nan") or not op.result.dtype.is_float:
        fn = np.max if op.name == "max" else np.min
    else:
        fn = np.fmax.reduce if op.name == "max" else np.fmin.reduce
    out = np.asarray(fn(x, axis=_axes(op), keepdims=op.attrs["keepdims"])).astype(op.result.dtype.numpy, copy=False)
    if out.dtype == np.float32 and not op.attrs.get("propagate_nan"):
        out = np.where(np.isnan(out), CANONICAL_NAN32, out)
    return out


@rule("argmax", "argmin")
def arg_max_min(ctx, op, x):
    """The first index holding the extreme; NaN is the worst value, or with propagate_nan the best
    (the first NaN wins, even over an infinity). An all-NaN slice gives 0."""
    (axis,) = _axes(op)
    extreme = (np.fmax if op.name == "argmax" else np.fmin).reduce(x, axis=axis, keepdims=True)
    nan = np.isnan(x) if op.operands[0].dtype.is_float else np.zeros(x.shape, bool)
    hit = (x == extreme) | (nan & np.isnan(extreme))
    if op.attrs.get("propagate_nan"):
        hit = np.where(nan.any(axis=axis, keepdims=True), nan, hit)
    return np.argmax(hit, axis=axis, keepdims=op.attrs["keepdims"]).astype(np.int32)


@rule("cumsum", "cumprod")
def scan(ctx, op, x):
    axis = op.attrs["axis"] + 1
    dtype = op.result.dtype
    fn = np.cumsum if op.name == "cumsum" else np.cumprod
    x = x.astype(_wide(dtype), copy=False)
    if op.attrs["reverse"]:
        return np.flip(fn(np.flip(x, axis), axis=axis, dtype=_wide(dtype)), axis).astype(dtype.numpy)
    return fn(x, axis=axis, dtype=_wide(dtype)).astype(dtype.numpy)


def round_tf32(x, mode="RN"):
    """Round float32 values to tfloat32's 10 mantissa bits: to nearest (RN: ties to even, RA: ties
    away from zero), toward zero (RZ), -inf (RM) or +inf (RP)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rest, kept = bits & np.uint32(0x1FFF), bits & np.uint32(0xFFFFE000)
    negative = (bits >> np.uint32(31)).astype(bool)
    up = {"RN": (rest > 0x1000) | ((rest == 0x1000) & ((bits & np.uint32(0x2000)) != 0)), "RA": rest >= 0x1000,
          "RZ": np.zeros(bits.shape, bool), "RM": negative & (rest != 0), "RP": ~negative & (rest != 0)}[mode]
    rounded = np.where(up, kept + np.uint32(0x2000), kept).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), rounded, x)


@rule("mma")
def mma(ctx, op, x, y, acc):
    """acc + x @ y. Floats of a tensor-core format (16- and 8-bit, tfloat32) into a float32 accumulator
    sum as the tensor cores do, bit for bit (interp/tensor_cores.py); other floats sum in float64 and
    round once to the accumulator's dtype; integers sum exactly."""
    acc_dtype = op.result.dtype
    in_format = op.operands[0].dtype.name
    if in_format == "tfloat32":
        x, y = round_tf32(x), round_tf32(y)
    if in_format in BLOCK_ADDERS and acc_dtype is float32 and op.operands[1].dtype.name == in_format:
        return tensor_core_mma(x, y, acc, in_format)
    wide = np.int64 if acc_dtype.is_integral else np.float64
    product = np.matmul(x.astype(wide), y.astype(wide))
    return (product + acc.astype(wide)).astype(acc_dtype.numpy)


# ---- the grid -----------------------------------------------------------------------------------

@rule("bid")
def bid(ctx, op):
    return ctx.bids[:, op.attrs["axis"]].copy()


@rule("num_blocks")
def num_blocks(ctx, op):
    return np.array([ctx.grid[op.attrs["axis"]]], np.int32)


@rule("array_dim")
def array_dim(ctx, op, array):
    return ArrayView.of(array).extent[op.attrs["axis"]].astype(np.int32)


@rule("num_tiles")
def num_tiles(ctx, op, array):
    axis, order, shape = op.attrs["axis"], op.attrs["order"], op.attrs["shape"]
    extent = ArrayView.of(array).extent[order[axis]]
    return (-(-extent // shape[axis])).astype(np.int32)


# ---- debugging ------------------------------------------------------------------------------------

@rule("assert")
def assert_(ctx, op, condition):
    failed = ~np.broadcast_to(condition, (ctx.size,) + condition.shape[1:])
    if failed.any():
        lane = np.unravel_index(int(np.argmax(failed.reshape(-1))), failed.shape)
        block = tuple(int(b) for b in ctx.bids[lane[0]])
        where = f" at element {tuple(int(i) for i in lane[1:])}" if failed.ndim > 1 else ""
        message = op.attrs["message"] or "Assertion failed"
        raise TileAssertionError(f"{message} ({block_text(block, ctx.grid)}{where})", op.loc)


@rule("fma")
def fma(ctx, op, x, y, z):
    return fused_multiply_add(x, y, z, op.result.dtype.numpy)


for _name in ("add", "sub", "mul", "truediv", "sqrt", "fma"):
    RULES[_name] = _with_rounding(_name, RULES[_name])


def _flush_subnormals(x):
    """float32 subnormals as zeros of the same sign (flush_to_zero)."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        return x
    tiny = np.finfo(np.float32).tiny
    return np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x).astype(np.float32)


def _with_flush_to_zero(default):
    """The op with attribute `flush_to_zero`: subnormal operands and results read as zero."""
    def apply(ctx, op, *args):
        if not op.attrs.get("flush_to_zero"):
            return default(ctx, op, *args)
        return _flush_subnormals(default(ctx, op, *(_flush_subnormals(a) for a in args)))
    return apply


for _decl in OPS.values():
    if _decl.params and "flush_to_zero" in _decl.params[1] or _decl.name == "fma":
        RULES[_decl.name] = _with_flush_to_zero(RULES[_decl.name])
