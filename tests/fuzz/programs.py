"""Random tile kernels, each with its expected output computed by a plain NumPy formulation.

A program loads one tile per block from `x` (and `y`), applies a short random chain of operations
(elementwise math, comparisons and `where`, casts, reductions, scans, shape ops, gathers with
out-of-bounds and masked lanes) and stores the result tile at the block's index of `out`. Arrays
have ragged edges, so loads pad and stores drop. The expected output is computed here, block by
block, from the op definitions in docs/language.md, written without the interpreter's rules:

    program = random_program(np.random.default_rng(7))
    program.source     # the kernel's Python text
    program.expected   # what `out` must hold after the launch
"""
from __future__ import annotations

import ast
import dataclasses
import math
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_PADDING = {"ZERO": 0.0, "NEG_ZERO": -0.0, "NAN": math.nan, "POS_INF": math.inf, "NEG_INF": -math.inf}


def _is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


@dataclass
class Tile:
    """A value of the program: its variable name, tile shape, dtype, and each block's expected value."""

    name: str
    shape: tuple
    dtype: str
    blocks: list  # one NumPy array of `shape` per block
    exact: bool = True  # False once float rounding may differ (sums, transcendental functions)
    defined: list | None = None  # per block: the lanes cuTile defines (see `in_integer_range`)
    # a float product: an add or subtract of it may be fused into one fma (by use count, see
    # tileworkbench/ir/fuse.py), which families.multiply_add_program draws; these programs add none
    product: bool = False


@dataclass
class Program:
    source: str
    grid: tuple
    args: tuple  # x, y, out: NumPy arrays (out holds its initial contents)
    expected: np.ndarray
    exact: bool  # the result must match exactly, else within float rounding
    eps: float  # the coarsest float rounding on the way
    ops: list = field(default_factory=list)  # the operations drawn, for reports
    defined: np.ndarray | None = None  # the elements of `out` cuTile defines (None: all); the others
    # come from a float -> integer conversion of NaN, an infinity or a value past the integer's range
    tolerance: np.ndarray | None = None  # per element of `out`: how far two correct results may be apart

    def fresh_args(self) -> tuple:
        return tuple(a.copy() for a in self.args)


def _int_range(dtype: str):
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def float_to_int(values: np.ndarray, dtype: str) -> np.ndarray:
    """Float -> integer as the language defines it, one element at a time with Python integers:
    truncate toward zero, saturate to the range, NaN -> 0."""
    lo, hi = _int_range(dtype)

    def one(v):
        v = float(v)
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return hi if v > 0 else lo
        return max(lo, min(hi, math.trunc(v)))
    return np.array([one(v) for v in values.ravel()], dtype=object).astype(dtype).reshape(values.shape)


def in_integer_range(values: np.ndarray, dtype: str) -> np.ndarray:
    """Where a float -> integer conversion is defined in cuTile: the value is finite and truncates
    into the integer's range. Elsewhere cuTile's compiler emits an unsaturated conversion, whose
    result the Tile IR specification (`ftoi`) leaves undefined; tileworkbench saturates."""
    lo, hi = _int_range(dtype)
    with np.errstate(invalid="ignore"):
        truncated = np.trunc(values.astype(np.float64))
        return np.isfinite(truncated) & (truncated >= lo) & (truncated <= hi)


def _arg_extreme(row: list, smallest: bool, propagate_nan: bool) -> int:
    """The first index of the extreme of a list of Python numbers; NaN is the worst value, or the best
    when propagating."""
    best = 0
    for k, v in enumerate(row[1:], 1):
        b = row[best]
        v_nan, b_nan = isinstance(v, float) and math.isnan(v), isinstance(b, float) and math.isnan(b)
        if v_nan or b_nan:
            if v_nan != b_nan and v_nan == propagate_nan:  # the NaN wins when propagating, else the number
                best = k
            continue
        if (v < b) if smallest else (v > b):
            best = k
    return best


class _Builder:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.lines: list[str] = []
        self.count = 0
        self.ops: list[str] = []
        self.eps = 0.0  # the coarsest float rounding any value went through

    def choice(self, options):
        return options[int(self.rng.integers(len(options)))]

    def new(self, shape, dtype, blocks, line_of, exact=True, defined=None) -> Tile:
        self.count += 1
        if _is_float(dtype):
            self.eps = max(self.eps, float(ml_dtypes.finfo(dtype).eps))
        if defined is None:
            defined = [np.ones(v.shape, bool) for v in blocks]
        t = Tile(f"t{self.count}", tuple(shape), dtype, blocks, exact, defined)
        self.lines.append(f"    {t.name} = {line_of}")
        return t


def _random_values(rng, shape, dtype):
    if _is_float(dtype):
        v = rng.standard_normal(shape) * 3
        special = rng.random(shape) < 0.05
        v[special] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30], special.sum())
        with np.errstate(over="ignore"):
            return v.astype(dtype)
    lo, hi = _int_range(dtype)
    v = rng.integers(max(lo, -120), min(hi, 120), shape, endpoint=True).astype(dtype)
    if np.dtype(dtype).itemsize >= 4:  # a few values far out: the extremes, and neighbours past float32's 24 bits
        base = int(rng.integers(max(lo, -(2**62)), min(hi, 2**62) - 8, endpoint=True)) // 2**24 * 2**24
        near = (base + rng.integers(0, 8, shape)).astype(dtype)
        extreme = np.array([lo, hi], dtype)[rng.integers(0, 2, shape)]
        v = np.where(rng.random(shape) < 0.05, np.where(rng.random(shape) < 0.3, extreme, near), v)
    return v


def _padded_tile(array, index, shape, pad):
    """Block `index`'s tile of `array`, read element by element with `pad` outside it."""
    out = np.full(shape, pad, dtype=array.dtype)
    for pos in np.ndindex(*shape):
        src = tuple(i * n + p for i, n, p in zip(index, shape, pos))
        if all(0 <= s < d for s, d in zip(src, array.shape)):
            out[pos] = array[src]
    return out


# ---- the operations ---------------------------------------------------------------------------------

def _unary(b: _Builder, t: Tile, ctx) -> Tile:
    if _is_float(t.dtype):
        # floor and ceil jump: only on values computed exactly
        name = b.choice(["neg", "abs", "exp", "sqrt", "sin", "tanh"] + (["floor", "ceil"] if t.exact else []))
        fn = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "sqrt": lambda v: np.sqrt(np.abs(v)),
              "sin": np.sin, "floor": np.floor, "ceil": np.ceil, "tanh": np.tanh}[name]
        code = {"neg": f"-{t.name}", "abs": f"ct.abs({t.name})", "sqrt": f"ct.sqrt(ct.abs({t.name}))"}.get(
            name, f"ct.{name}({t.name})")
    else:
        name = b.choice(["neg", "abs", "invert"])
        fn = {"neg": np.negative, "abs": np.abs, "invert": np.invert}[name]
        code = {"neg": f"-{t.name}", "abs": f"ct.abs({t.name})", "invert": f"~{t.name}"}[name]
    b.ops.append(name)

    def apply(v):
        with np.errstate(all="ignore"):
            wide = v.astype(np.float64) if _is_float(t.dtype) else v
            return fn(wide).astype(t.dtype)
    exact = t.exact and name not in ("exp", "sin", "tanh")
    defined = t.defined
    if name == "abs" and np.dtype(t.dtype).kind == "u":
        defined = [d & signed_abs_agrees(v) for v, d in zip(t.blocks, t.defined)]
    return b.new(t.shape, t.dtype, [apply(v) for v in t.blocks], code, exact, defined)


def signed_abs_agrees(values: np.ndarray) -> np.ndarray:
    """Where cuTile's abs of an unsigned integer is the value itself, as NumPy's is and tileworkbench's:
    cuTile emits Tile IR's `absi`, which reads its operand as signed, so a value with the top bit set
    comes back negated (abs(uint8(200)) is 56 there)."""
    return values < np.array(1, values.dtype) << (values.dtype.itemsize * 8 - 1)


def _binary(b: _Builder, t: Tile, ctx) -> Tile:
    other = ctx["y_tile"](t)
    if other is None:
        return t
    name = b.choice(["add", "sub", "mul", "maximum", "minimum"] + (["where"] if t.exact and other.exact else [])
                    + (["truediv"] if _is_float(t.dtype) else []))
    if name in ("add", "sub") and (t.product or other.product):
        name = "mul"
    b.ops.append(name)
    propagate = bool(b.rng.integers(2))
    if name == "where":
        code = f"ct.where({t.name} > {other.name}, {t.name}, {other.name})"
        fn = lambda u, v: np.where(u > v, u, v)
    elif name in ("maximum", "minimum"):
        code = f"ct.{name}({t.name}, {other.name}, propagate_nan={propagate})"
        pick = {"maximum": (np.maximum, np.fmax), "minimum": (np.minimum, np.fmin)}[name]
        fn = pick[0] if propagate else pick[1]
    else:
        code = f"{t.name} { {'add': '+', 'sub': '-', 'mul': '*', 'truediv': '/'}[name]} {other.name}"
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide}[name]

    def apply(u, v):
        with np.errstate(all="ignore"):
            if _is_float(t.dtype):
                return fn(u.astype(np.float64), v.astype(np.float64)).astype(t.dtype)
            return fn(u, v).astype(t.dtype)  # integers wrap
    result = b.new(t.shape, t.dtype, [apply(u, v) for u, v in zip(t.blocks, other.blocks)], code,
                   t.exact and other.exact, [d & e for d, e in zip(t.defined, other.defined)])
    result.product = name == "mul" and _is_float(t.dtype)
    return result


# Python float constants for float tiles: each is converted to the tile's dtype first (rounded there),
# then the op runs in that dtype, as cuTile types a constant beside a tile. Beside float64 tiles only
# constants float32 holds: cuTile 1.7 rounds a float constant to float32 on the way to float64 (0.1
# becomes 0.100000001490116), where its typing rule, NumPy and tileworkbench keep it as written
_FLOAT_CONSTANTS = (0.1, 2.5, -1.75, 1 / 3, 1e-3, 65504.0)
_FLOAT32_CONSTANTS = (2.5, -1.75, 65504.0, 0.375)


def _scalar_op(b: _Builder, t: Tile, ctx) -> Tile:
    k = int(b.rng.integers(1, 4))
    if _is_float(t.dtype) and b.rng.integers(2):
        k = b.choice(_FLOAT32_CONSTANTS if t.dtype == "float64" else _FLOAT_CONSTANTS)
    op = b.choice(["+", "*", "-"] + (["/"] if _is_float(t.dtype) else []))
    if t.product and op in "+-":
        op = "*"
    b.ops.append(f"scalar{op}")
    fn = {"+": np.add, "*": np.multiply, "-": np.subtract, "/": np.true_divide}[op]

    def apply(v):
        with np.errstate(all="ignore"):
            if _is_float(t.dtype):
                typed = np.array(k).astype(t.dtype).astype(np.float64)
                return fn(v.astype(np.float64), typed).astype(t.dtype)
            return fn(v, np.array(k, t.dtype)).astype(t.dtype)
    result = b.new(t.shape, t.dtype, [apply(v) for v in t.blocks], f"{t.name} {op} {k}", t.exact, t.defined)
    result.product = op == "*" and _is_float(t.dtype)
    return result


def _astype(b: _Builder, t: Tile, ctx) -> Tile:
    # to an integer only from exactly computed values: truncation jumps
    dtype = b.choice(FLOAT_DTYPES + (INT_DTYPES if t.exact or not _is_float(t.dtype) else ()))
    b.ops.append(f"astype-{t.dtype}-{dtype}")
    defined = t.defined
    if _is_float(t.dtype) and not _is_float(dtype):
        blocks = [float_to_int(v, dtype) for v in t.blocks]
        defined = [d & in_integer_range(v, dtype) for v, d in zip(t.blocks, t.defined)]
    else:
        with np.errstate(all="ignore"):
            blocks = [v.astype(dtype) for v in t.blocks]
    code = f"ct.astype({t.name}, ct.{dtype})" if b.rng.integers(2) else f"{t.name}.astype(ct.{dtype})"
    return b.new(t.shape, dtype, blocks, code, t.exact, defined)


def _reduce(b: _Builder, t: Tile, ctx) -> Tile:
    if not t.shape:
        return t
    name = b.choice(["sum", "max", "min"] + (["argmax", "argmin"] if t.exact else []))
    axis = int(b.rng.integers(len(t.shape)))
    keepdims = bool(b.rng.integers(2))
    propagate = bool(b.rng.integers(2))
    b.ops.append(f"{name}-axis{axis}")
    shape = tuple(1 if k == axis else n for k, n in enumerate(t.shape)) if keepdims else \
        tuple(n for k, n in enumerate(t.shape) if k != axis)
    flag = f", propagate_nan={propagate}" if name != "sum" else ""

    def apply(v):
        moved = np.moveaxis(v, axis, -1)
        rows = moved.reshape(-1, moved.shape[-1])
        out = []
        for row in rows:
            numbers = row.astype(np.float64).tolist() if _is_float(t.dtype) else row.tolist()  # Python numbers
            if name.startswith("arg"):
                out.append(_arg_extreme(numbers, name == "argmin", propagate))
            elif name == "sum":
                if _is_float(t.dtype):
                    out.append(math.fsum(row.astype(np.float64)) if np.isfinite(row).all()
                               else float(np.sum(row.astype(np.float64))))
                else:
                    out.append(int(np.sum(row, dtype=t.dtype)))  # wraps in the dtype
            else:
                values = [x for x in numbers if not (isinstance(x, float) and math.isnan(x))]
                if _is_float(t.dtype) and (propagate and len(values) < len(numbers) or not values):
                    out.append(math.nan)
                else:
                    out.append((max if name == "max" else min)(values))
        dtype = "int32" if name.startswith("arg") else t.dtype
        with np.errstate(all="ignore"):
            return np.array(out, dtype=np.float64 if _is_float(dtype) else object).astype(dtype).reshape(shape)
    dtype = "int32" if name.startswith("arg") else t.dtype
    exact = t.exact and not (name == "sum" and _is_float(t.dtype))
    defined = [np.moveaxis(d, axis, -1).all(axis=-1).reshape(shape) for d in t.defined]
    return b.new(shape, dtype, [apply(v) for v in t.blocks],
                 f"ct.{name}({t.name}, axis={axis}, keepdims={keepdims}{flag})", exact, defined)


def _cumsum(b: _Builder, t: Tile, ctx) -> Tile:
    if not t.shape or not _is_float(t.dtype) and t.dtype not in ("int32", "int64"):
        return t
    axis = int(b.rng.integers(len(t.shape)))
    reverse = bool(b.rng.integers(2))
    b.ops.append(f"cumsum-axis{axis}")

    def apply(v):
        wide = v.astype(np.float64) if _is_float(t.dtype) else v
        flipped = np.flip(wide, axis) if reverse else wide
        out = np.cumsum(flipped, axis=axis, dtype=wide.dtype)
        with np.errstate(all="ignore"):
            return (np.flip(out, axis) if reverse else out).astype(t.dtype)

    def prefix_defined(d):  # a running sum is defined while every lane before it is
        flipped = np.flip(d, axis) if reverse else d
        out = np.logical_and.accumulate(flipped, axis=axis)
        return np.flip(out, axis) if reverse else out
    return b.new(t.shape, t.dtype, [apply(v) for v in t.blocks],
                 f"ct.cumsum({t.name}, axis={axis}, reverse={reverse})", t.exact and not _is_float(t.dtype),
                 [prefix_defined(d) for d in t.defined])


def _transpose(b: _Builder, t: Tile, ctx) -> Tile:
    if len(t.shape) != 2:
        return t
    b.ops.append("transpose")
    code = f"ct.transpose({t.name}, axis0=0, axis1=1)" if b.rng.integers(2) else f"ct.transpose({t.name})"
    return b.new(t.shape[::-1], t.dtype, [v.T.copy() for v in t.blocks], code, t.exact, [d.T for d in t.defined])


def _reshape_flat(b: _Builder, t: Tile, ctx) -> Tile:
    if len(t.shape) < 2:
        return t
    b.ops.append("reshape")
    n = int(np.prod(t.shape))
    shape = f"shape=({n},)" if b.rng.integers(2) else f"({n},)"
    return b.new((n,), t.dtype, [v.reshape(n) for v in t.blocks], f"ct.reshape({t.name}, {shape})", t.exact,
                 [d.reshape(n) for d in t.defined])


def _extract(b: _Builder, t: Tile, ctx) -> Tile:
    if not t.shape or max(t.shape) < 2:
        return t
    sub = tuple(max(1, n // int(b.rng.choice([1, 2]))) for n in t.shape)
    counts = [n // s for n, s in zip(t.shape, sub)]
    per_block = bool(b.rng.integers(2))
    b.ops.append("extract-per-block" if per_block else "extract-constant")
    if per_block:  # the index depends on the block: (bid % count)
        index_of = [lambda bid, c=c: bid[0] % c for c in counts]
        code_index = ", ".join(f"ct.bid(0) % {c}" for c in counts)
    else:
        constant = [int(b.rng.integers(c)) for c in counts]
        index_of = [lambda bid, k=k: k for k in constant]
        code_index = ", ".join(map(str, constant))
    blocks, defined = [], []
    for bid, v, d in zip(ctx["bids"], t.blocks, t.defined):
        index = tuple(slice(f(bid) * s, (f(bid) + 1) * s) for f, s in zip(index_of, sub))
        blocks.append(v[index].copy())
        defined.append(d[index])
    return b.new(sub, t.dtype, blocks, f"ct.extract({t.name}, ({code_index},), {sub})", t.exact, defined)


OPERATIONS = (_unary, _binary, _scalar_op, _astype, _reduce, _cumsum, _transpose, _reshape_flat, _extract)


# ---- the program --------------------------------------------------------------------------------------

def _gather_start(b: _Builder, x: np.ndarray, dtype: str, bids) -> Tile:
    """A 1-D gather with indices that run past both ends of `x`, an optional mask and a padding value."""
    n = int(b.choice([4, 8, 16, 32]))
    step = int(b.choice([1, 2, 3, -1]))
    offset = int(b.rng.integers(-8, 8))
    pad = int(b.rng.integers(0 if dtype.startswith("u") else -3, 4))
    masked = bool(b.rng.integers(2))
    b.ops.append("gather-masked" if masked else "gather")
    idx_code = f"ct.arange({n}, dtype=ct.int32) * {step} + ct.bid(0) * {n} + {offset}"
    mask_code = f", mask=(ct.arange({n}, dtype=ct.int32) % 3) != 1" if masked else ""
    blocks = []
    for bid in bids:
        out = np.full(n, pad, dtype=dtype)
        for k in range(n):
            i = k * step + bid[0] * n + offset
            if (not masked or k % 3 != 1) and 0 <= i < x.size:
                out[k] = x[i]
        blocks.append(out)
    b.lines.append(f"    idx = {idx_code}")
    return b.new((n,), dtype, blocks, f"ct.gather(x, idx{mask_code}, padding_value={pad})")


def random_program(rng: np.random.Generator) -> Program:
    with np.errstate(all="ignore"):  # NaN from inf - inf, overflow to inf: values like any other
        return _random_program(rng)


def _random_program(rng: np.random.Generator) -> Program:
    b = _Builder(rng)
    dtype = b.choice(FLOAT_DTYPES + INT_DTYPES)
    rank = int(b.choice([1, 2]))
    tile_shape = tuple(int(b.choice([1, 2, 4, 8, 16])) for _ in range(rank))
    grid = tuple(int(rng.integers(1, 4)) for _ in range(rank))
    shape = tuple(max(1, g * n - int(rng.integers(0, n))) for g, n in zip(grid, tile_shape))  # ragged edges
    x, y = _random_values(rng, shape, dtype), _random_values(rng, shape, dtype)
    # cuTile's compiler refuses NEG_ZERO for integers (the tile-operations specification reads it as 0): rarely
    padding = b.choice(list(FLOAT_PADDING) if _is_float(dtype) else ["ZERO"] * 7 + ["NEG_ZERO"])
    pad = FLOAT_PADDING[padding] if _is_float(dtype) else 0
    bids = list(np.ndindex(*grid))
    index_code = ", ".join(f"ct.bid(axis={k})" if rng.integers(2) else f"ct.bid({k})" for k in range(rank))
    b.lines.append(f"    i = ({index_code},)")

    if rank == 1 and rng.random() < 0.25:
        grid = (int(rng.integers(1, 4)),)
        bids = list(np.ndindex(*grid))
        t = _gather_start(b, x, dtype, bids)
    elif rank == 2 and rng.random() < 0.25:  # order="F": the tile walks the array's axes swapped
        b.ops.append(f"load-F-{padding}")
        t = b.new(tile_shape[::-1], dtype, [_padded_tile(x, bid, tile_shape, pad).T.copy() for bid in bids],
                  f"ct.load(x, (ct.bid(1), ct.bid(0)), {tile_shape[::-1]}, order='F', "
                  f"padding_mode=ct.PaddingMode.{padding})")
    else:
        b.ops.append(f"load-{padding}")
        t = b.new(tile_shape, dtype, [_padded_tile(x, bid, tile_shape, pad) for bid in bids],
                  f"ct.load(x, i, {tile_shape}, padding_mode=ct.PaddingMode.{padding})")
    loaded_y = {}

    def y_tile(like: Tile):
        """y's tile of the block, if it has `like`'s shape and dtype (so a binary op can take it)."""
        if like.shape != tile_shape or like.dtype != dtype:
            return None
        if "y" not in loaded_y:
            loaded_y["y"] = b.new(tile_shape, dtype, [_padded_tile(y, bid, tile_shape, pad) for bid in bids],
                                  f"ct.load(y, i, {tile_shape}, padding_mode=ct.PaddingMode.{padding})")
        return loaded_y["y"]
    ctx = {"bids": bids, "y_tile": y_tile}
    for _ in range(int(rng.integers(1, 5))):
        t = b.choice(OPERATIONS)(b, t, ctx)

    if rank == 1 and len(t.shape) == 1 and rng.random() < 0.3:
        return _scatter_end(b, t, grid, bids, x, y, rng)
    # store: the result tile goes to the block's index of an output with the grid's rank
    result_shape = t.shape if len(t.shape) == rank else \
        (int(np.prod(t.shape)),) if rank == 1 else (int(np.prod(t.shape)), 1)
    if result_shape != t.shape:
        t = b.new(result_shape, t.dtype, [v.reshape(result_shape) for v in t.blocks],
                  f"ct.reshape({t.name}, {result_shape})", t.exact, [d.reshape(result_shape) for d in t.defined])
    full = tuple(g * n for g, n in zip(grid, result_shape))
    out_shape = tuple(max(1, f - int(rng.integers(0, 2)) * int(rng.integers(0, n))) for f, n in zip(full, result_shape))
    expected_full, defined_full = np.zeros(full, t.dtype), np.ones(full, bool)
    for bid, v, d in zip(bids, t.blocks, t.defined):
        place = tuple(slice(i * n, (i + 1) * n) for i, n in zip(bid, result_shape))
        expected_full[place], defined_full[place] = v, d
    kept = tuple(slice(0, n) for n in out_shape)
    b.lines.append(f"    ct.store(out, i, tile={t.name})" if rng.integers(2) else f"    ct.store(out, i, {t.name})")
    source = "@ct.kernel\ndef fuzz(x, y, out):\n" + "\n".join(b.lines) + "\n"
    out = np.zeros(out_shape, t.dtype)
    return Program(source, grid, (x, y, out), expected_full[kept], t.exact, b.eps, b.ops,
                   _all_or_none(defined_full[kept]))


def _all_or_none(defined: np.ndarray) -> np.ndarray | None:
    return None if defined.all() else defined


def _scatter_end(b: _Builder, t: Tile, grid, bids, x, y, rng) -> Program:
    """End with a scatter of the 1-D result: indices that run past both ends of `out` (never two
    lanes on one element: blocks write disjoint ranges), an optional mask."""
    n = t.shape[0]
    step = int(b.choice([1, -1]))
    offset = int(rng.integers(-n, n))
    masked = bool(rng.integers(2))
    size = max(1, grid[0] * n - int(rng.integers(0, n + 1)))
    b.ops.append("scatter-masked" if masked else "scatter")
    expected, defined = np.zeros(size, t.dtype), np.ones(size, bool)
    for bid, v, d in zip(bids, t.blocks, t.defined):
        for k in range(n):
            i = k * step + bid[0] * n + offset
            if (not masked or k % 3 != 1) and 0 <= i < size:
                expected[i], defined[i] = v[k], d[k]
    mask = f", mask=(ct.arange({n}, dtype=ct.int32) % 3) != 1" if masked else ""
    b.lines.append(f"    ct.scatter(out, ct.arange({n}, dtype=ct.int32) * {step} + ct.bid(0) * {n} + {offset}, "
                   f"{t.name}{mask})")
    source = "@ct.kernel\ndef fuzz(x, y, out):\n" + "\n".join(b.lines) + "\n"
    return Program(source, grid, (x, y, np.zeros(size, t.dtype)), expected, t.exact, b.eps, b.ops,
                   _all_or_none(defined))


# Python names that mean something else in C++ or CUDA (Python's own keywords, `class` among them,
# cannot be names): the generated code must rename them (tileworkbench/codegen/names.py)
CPP_NAMES = ("new", "template", "int", "this", "union", "do", "register", "signed", "unsigned", "typename",
             "namespace", "volatile", "auto", "char", "double", "float", "long", "short", "void", "switch", "case",
             "default", "delete", "friend", "operator", "private", "public", "virtual", "static", "extern", "const",
             "inline", "goto", "struct", "enum", "typedef", "sizeof", "bool", "explicit", "mutable", "catch",
             "throw", "export", "using", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "half", "dim3",
             "float4", "int2", "printf", "min", "max", "abs", "NAN", "INFINITY", "FLT_MAX", "NULL", "size_t",
             "uint32_t", "std", "main")


def with_cpp_names(program: Program, rng: np.random.Generator) -> Program:
    """The same program with its parameters and variables renamed to C++ and CUDA names at random."""
    tree = ast.parse(program.source)
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id != "ct"}
                   | {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)})
    chosen = rng.choice(len(CPP_NAMES), size=len(names), replace=False)
    renamed = {old: CPP_NAMES[int(k)] for old, k in zip(names, chosen)}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            node.id = renamed.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = renamed.get(node.arg, node.arg)
            return node
    source = ast.unparse(Rename().visit(tree)) + "\n"
    return dataclasses.replace(program, source=source, ops=program.ops + ["cpp-names"])
