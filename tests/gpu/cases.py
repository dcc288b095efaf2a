"""The GPU test kernels and their launches, as one table (no GPU needed to import it).

tests/gpu/test_differential.py runs every case on the interpreter and the GPU and compares;
tests/codegen/test_compile.py compiles every case's specialization offline for sm_80 and sm_90.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.kernels import layernorm, matmul, row_gather, row_load, softmax, transpose, vector_add

from .idiom_kernels import attention_arguments, bmm_arguments, causal_attention, persistent_bmm

RNG = np.random.default_rng(1234)
BF16 = ct.bfloat16.numpy
FLOATS = [np.float16, BF16, np.float32, np.float64]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
COMPLEX = [np.complex64, np.complex128]


def random_array(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) * 3 + 3j * RNG.standard_normal(shape)).astype(dtype)
    return (RNG.standard_normal(shape) * 3).astype(dtype)


@dataclass
class Case:
    id: str
    kernel: object
    grid: tuple
    args: Callable[[], tuple]   # fresh NumPy arguments
    exact: bool = False         # bit-exact (data movement, integers) or within float rounding


CASES: list[Case] = []


def case(id, kernel, grid, args, exact=False):
    CASES.append(Case(id, kernel, grid, args, exact))


# ---- data movement: exact ----------------------------------------------------------------------

@ct.kernel
def copy_2d(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (TM, TN)))


for _dt in FLOATS + INTS + COMPLEX + [np.bool_]:
    case(f"copy-ragged-{np.dtype(_dt).name}", copy_2d, (ct.cdiv(67, 16), ct.cdiv(45, 32)),
         lambda dt=_dt: (random_array((67, 45), dt), np.zeros((67, 45), dt), 16, 32), exact=True)


@ct.kernel
def widen_2d(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (TM, TN)).astype(y.dtype))


# float32 stored from a bfloat16 kernel: chunks of 8 floats (32 bytes); ragged edges and rows of 101
# floats (every other row unaligned) store chunk by chunk or element by element
for _cols in (100, 101):
    case(f"widen-to-32-byte-chunks-{_cols}", widen_2d, (ct.cdiv(37, 8), ct.cdiv(_cols, 64)),
         lambda c=_cols: (random_array((37, c), BF16), np.zeros((37, c), np.float32), 8, 64), exact=True)


@ct.kernel
def load_padded(x, y, MODE: ct.Constant[int], ORDER: ct.Constant[int]):
    mode = (ct.PaddingMode.UNDETERMINED, ct.PaddingMode.ZERO, ct.PaddingMode.NEG_ZERO, ct.PaddingMode.NAN,
            ct.PaddingMode.POS_INF, ct.PaddingMode.NEG_INF)[MODE]
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, (i, j), (8, 16), order="C" if ORDER == 0 else "F", padding_mode=mode)
    ct.store(y, (i, j), t)


for _mode in range(6):
    for _order in (0, 1):
        for _dt in (np.float32, np.float16, np.int32, np.uint8):
            case(f"padding-{_mode}-order{_order}-{np.dtype(_dt).name}", load_padded, (3, 1) if _order == 0 else (2, 2),
                 lambda m=_mode, o=_order, dt=_dt: (random_array((21, 13), dt),
                                                    np.zeros((24, 16) if o == 0 else (16, 32), dt), m, o), exact=True)


FP8 = [ct.float8_e4m3fn.numpy, ct.float8_e5m2.numpy, ct.float8_e8m0fnu.numpy]


def fp8_array(shape, dtype):
    """Values every fp8 format holds: powers of two (e8m0 has nothing else), signed where the format has a sign."""
    values = 2.0 ** RNG.integers(-6, 7, shape)
    if np.dtype(dtype) != ct.float8_e8m0fnu.numpy:
        values *= RNG.choice([-1.0, 1.0], shape)
    return values.astype(dtype)


@ct.kernel
def copy_1d(x, y, T: ct.Constant[int]):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (T,), padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def widen_and_narrow(x, wide, narrow):
    t = ct.load(x, (ct.bid(0),), (64,))
    ct.store(wide, (ct.bid(0),), t.astype(ct.float32))
    ct.store(narrow, (ct.bid(0),), ct.load(wide, (ct.bid(0),), (64,)).astype(narrow.dtype))


for _dt in FP8:
    _name = np.dtype(_dt).name
    case(f"copy-{_name}", copy_1d, (ct.cdiv(300, 128),), lambda dt=_dt: (fp8_array(300, dt), np.zeros(300, dt), 128),
         exact=True)
    case(f"cast-{_name}-float32", widen_and_narrow, (4,),
         lambda dt=_dt: (fp8_array(256, dt), np.zeros(256, np.float32), np.zeros(256, dt)), exact=True)


@ct.kernel
def zero_d(x, y, z):
    ct.scatter(y, (), ct.gather(x, ()) + 1)
    ct.store(z, (), ct.load(x, (), ()) * 2)


case("zero-d-arrays", zero_d, (2,), lambda: (np.array(3.5, np.float32), np.zeros((), np.float32),
                                             np.zeros((), np.float32)), exact=True)


@ct.kernel
def narrow(wide, out):
    ct.store(out, (0,), ct.load(wide, (0,), (64,)).astype(out.dtype))


def _past_the_fp8_range(dt):
    wide = np.array([500.0, 1e6, -1e6, 460.0, 464.0, 1.5 * 2.0 ** -10, 2.0 ** -20, 3.0] * 8, np.float32)
    return wide, np.zeros(64, dt)


for _dt in FP8[:2]:  # beyond the largest finite value: NaN (e4m3fn) or infinity (e5m2), not saturated
    case(f"cast-float32-past-the-range-of-{np.dtype(_dt).name}", narrow, (1,), lambda dt=_dt: _past_the_fp8_range(dt))


@ct.kernel
def fp8_mma(a, b, c):
    c_tile = ct.mma(ct.load(a, (0, 0), (32, 32)), ct.load(b, (0, 0), (32, 32)), ct.zeros((32, 32), ct.float32))
    ct.store(c, (0, 0), c_tile)


for _dt in FP8[:2]:
    case(f"mma-{np.dtype(_dt).name}", fp8_mma, (1,),
         lambda dt=_dt: (fp8_array((32, 32), dt), fp8_array((32, 32), dt), np.zeros((32, 32), np.float32)))


@ct.kernel
def load_permuted(x, y):
    ct.store(y, (0, 0, 0), ct.load(x, (0, 0, 0), (4, 8, 2), order=(1, 2, 0)))


case("load-tuple-order", load_permuted, (1,), lambda: (random_array((2, 4, 8), np.float32), np.zeros((4, 8, 2), np.float32)),
     exact=True)


@ct.kernel
def gather_scatter(x, idx, out, scattered):
    i = ct.load(idx, (0,), (64,))
    g = ct.gather(x, i, mask=(i % 3) != 0, padding_value=-7)
    ct.store(out, (0,), g)
    ct.scatter(scattered, i, g + 1, mask=i < 40)


for _dt in (np.float32, np.int32, np.int8, np.float16):
    # unique indices (no scatter collisions), negatives and >= 50 are out of bounds
    case(f"gather-scatter-{np.dtype(_dt).name}", gather_scatter, (1,),
         lambda dt=_dt: (random_array(50, dt), RNG.permutation(np.arange(-20, 80))[:64].astype(np.int32),
                         np.zeros(64, dt), np.zeros(50, dt)), exact=True)


@ct.kernel
def gather_2d(x, rows, out):
    r = ct.load(rows, (0,), (8,))
    c = ct.arange(16, dtype=ct.int32)
    ct.store(out, (0, 0), ct.gather(x, (r[:, None], c[None, :])))


case("gather-broadcast-indices", gather_2d, (1,),
     lambda: (random_array((10, 12), np.float32), np.array([0, 9, -1, 3, 10, 2, 2, 5], np.int32),
              np.zeros((8, 16), np.float32)), exact=True)


@ct.kernel
def affine_gather_scatter(x, y, start, T: ct.Constant[int]):
    # indices start + bid * T + arange(T): chunks of adjacent elements move as vectors where they are
    # aligned, inside and unmasked, element by element elsewhere
    i = start + ct.bid(0) * T + ct.arange(T, dtype=ct.int32)
    g = ct.gather(x, i, mask=i != 37, padding_value=5)
    ct.scatter(y, i, g * 2, mask=i != 70)


for _dt in (np.float32, np.float16, np.int8, np.float64):
    for _start in (0, 1, -3):   # aligned, unaligned, partly before the array (out of bounds)
        case(f"gather-scatter-affine-{np.dtype(_dt).name}-start{_start}", affine_gather_scatter, (5,),
             lambda dt=_dt, start=_start: (random_array(1000, dt), np.zeros(1000, dt), start, 256), exact=True)


@ct.kernel
def row_gather_scatter_2d(x, y, rows, C: ct.Constant[int]):
    # whole rows of a 2-d array (adjacent along the last axis) by row index, the last one out of bounds
    r = ct.load(rows, (0,), (8,))
    c = ct.arange(C, dtype=ct.int32)
    ct.scatter(y, (r[:, None], c[None, :]), ct.gather(x, (r[:, None], c[None, :])) + 1)


case("gather-scatter-rows-2d", row_gather_scatter_2d, (1,),
     lambda: (random_array((12, 64), np.float32), np.zeros((12, 64), np.float32),
              np.array([0, 9, 3, 11, 2, 5, 7, 12], np.int32), 64), exact=True)


@ct.kernel
def odd_rows(x, y, z, T: ct.Constant[int]):
    # rows of an odd length: most start off a 16-byte boundary, and their whole chunks move as shifted
    # vectors (neighbouring lanes completing each other's aligned blocks); the masked columns, the row's
    # end and the row past the array element by element, the lanes around them writing their own ends
    row = ct.bid(0)
    cols = ct.arange(T, dtype=ct.int32)
    t = ct.gather(x, (row, cols), check_bounds=True, padding_value=3).astype(y.dtype)
    ct.scatter(y, (row, cols), t + 1, mask=(cols < 300) | (cols > 333))
    ct.store(z, (row, 0), ct.load(x, (row, 0), (1, T), padding_mode=ct.PaddingMode.ZERO).astype(z.dtype))


# (int8: 1-byte pieces; float64: 8-byte; bfloat16 to float32 and back: 32-byte chunks)
for _x, _y in ((np.int8, np.int8), (BF16, BF16), (np.float16, np.float16), (np.float32, np.float32),
               (np.float64, np.float64), (BF16, np.float32), (np.float32, BF16)):
    case(f"odd-rows-{np.dtype(_x).name}-to-{np.dtype(_y).name}", odd_rows, (8,),
         lambda x=_x, y=_y: (random_array((7, 1001), x), np.zeros((7, 1001), y), np.zeros((7, 1001), y), 1024),
         exact=True)
# long rows: four chunks a thread, read ahead of their shifts a few at a time
case("odd-rows-long-bfloat16", odd_rows, (4,),
     lambda: (random_array((3, 16001), BF16), np.zeros((3, 16001), BF16), np.zeros((3, 16001), BF16), 16384), exact=True)


@ct.kernel
def masked_row_softmax(x, y, n_rows: int, n_cols: int, TILE: ct.Constant[int]):
    # the row softmax of cuTile code in the wild: rows of an odd length (most off a 16-byte boundary)
    # gathered whole into a power-of-two tile with bounds checks, masked past the row, float32 math with
    # APPROX division, scattered back; a persistent loop over the rows (16384-wide float32 rows: eight
    # chunks a thread)
    cols = ct.arange(TILE, dtype=ct.int32)
    for row in range(ct.bid(0), n_rows, ct.num_blocks(0)):
        t = ct.gather(x, (row, cols), check_bounds=True, padding_value=0).astype(ct.float32)
        t = ct.where(cols < n_cols, t, float("-inf"))
        e = ct.exp(t - ct.max(t, 0))
        out = ct.truediv(e, ct.sum(e, 0), rounding_mode=ct.RoundingMode.APPROX, flush_to_zero=True)
        ct.scatter(y, (row, cols), out.astype(y.dtype), check_bounds=True)


for _dt, _cols in ((BF16, 3965), (np.float16, 3965), (np.float32, 3965), (BF16, 16001), (np.float32, 16001)):
    case(f"masked-row-softmax-{np.dtype(_dt).name}-{_cols}", masked_row_softmax, (3,),
         lambda dt=_dt, c=_cols: (random_array((9, c), dt), np.zeros((9, c), dt), 9, c, 1 << (c - 1).bit_length()))


@ct.kernel
def outer_product_indices(x, y, r0, c0):
    # row and column indices start + arange: computed per element, a chunk of a row moved at once
    # where inside, aligned and unmasked
    rows = r0 + ct.arange(16, dtype=ct.int32)
    cols = c0 + ct.arange(32, dtype=ct.int32)
    t = ct.gather(x, (rows[:, None], cols[None, :]), mask=(cols[None, :] % 5) != 0, padding_value=-1)
    ct.scatter(y, (rows[:, None], cols[None, :]), t * 2, mask=rows[:, None] != 3)


for _dt in (np.float32, np.float16):
    for _r0, _c0 in ((0, 0), (-2, 5), (5, 16), (10, 20)):  # inside; before the array; aligned; past its end
        case(f"outer-product-indices-{np.dtype(_dt).name}-{_r0}-{_c0}", outer_product_indices, (1,),
             lambda dt=_dt, r0=_r0, c0=_c0: (random_array((20, 48), dt), np.zeros((20, 48), dt), r0, c0), exact=True)


@ct.kernel
def row_by_scalar_index(x, y, shift, n, T: ct.Constant[int]):
    # a row per block at (row, start + arange), masked by `cols < n`: the scalar row is one index for
    # every element, the columns step by one and the mask is computed from them, so a chunk is checked
    # at its ends and moved whole; rows past the array (the grid has more blocks than rows), columns
    # past it, masked columns and unaligned starts element by element
    row = ct.bid(0)
    cols = ct.arange(T, dtype=ct.int32)
    t = ct.gather(x, (row, cols + shift), mask=cols < n, padding_value=7)
    ct.scatter(y, (row, cols), t, check_bounds=True)


for _dt in (BF16, np.float16, np.float32):
    # whole rows; a short last chunk; unaligned; before the row; a mask ending inside a chunk
    for _cols, _shift, _n in ((64, 0, 64), (61, 0, 64), (64, 1, 64), (64, -3, 64), (64, 0, 50)):
        case(f"row-by-scalar-index-{np.dtype(_dt).name}-{_cols}-shift{_shift}-mask{_n}", row_by_scalar_index, (6,),
             lambda dt=_dt, c=_cols, s=_shift, n=_n: (random_array((5, c), dt), np.zeros((5, c), dt), s, n, 64),
             exact=True)


@ct.kernel
def approx_math(x, y, out):
    # APPROX: the hardware's approximate division, exponential and square root, with and without flushing
    # (cuTile's exp takes no flush_to_zero: exp2 flushes)
    a, b = ct.load(x, (0,), (256,)), ct.load(y, (0,), (256,))
    A = ct.RoundingMode.APPROX
    ct.store(out, (0,), ct.truediv(a, b, rounding_mode=A))
    ct.store(out, (1,), ct.truediv(a, b, rounding_mode=A, flush_to_zero=True))
    ct.store(out, (2,), ct.exp(a, rounding_mode=A))
    ct.store(out, (3,), ct.exp2(a, flush_to_zero=True))
    ct.store(out, (4,), ct.sqrt(ct.abs(b), rounding_mode=A))
    ct.store(out, (5,), ct.sqrt(ct.abs(b), rounding_mode=A, flush_to_zero=True))


def _approx_args():
    x, y = random_array(256, np.float32) * 8, random_array(256, np.float32) + 3
    x[:4] = [1e-39, -1e-39, 0.0, -100.0]  # subnormals (flushed or not), exp of a large negative
    y[4:6] = [1e-39, -1e-39]
    return x, y, np.zeros(6 * 256, np.float32)


case("approx-division-exp-sqrt-float32", approx_math, (1,), _approx_args)


@ct.kernel
def multiply_adds(x, y, z, out):
    # a multiply fused into its one add or subtract (one rounding, as cuTile's compiler fuses it), in
    # a directed rounding too; rounded twice where the product is used again or rounds otherwise
    a, b, c = ct.load(x, (0,), (128,)), ct.load(y, (0,), (128,)), ct.load(z, (0,), (128,))
    ct.store(out, (0,), a * b + c)
    ct.store(out, (1,), c - a * b)
    p = a * b
    ct.store(out, (2,), (p + c) + p)
    ct.store(out, (3,), ct.sub(ct.mul(a, b, rounding_mode=ct.RoundingMode.RZ), c, rounding_mode=ct.RoundingMode.RZ))
    ct.store(out, (4,), ct.add(ct.mul(a, b, rounding_mode=ct.RoundingMode.RP), c))


def _multiply_add_args(dtype):
    x, y = random_array(128, dtype), random_array(128, dtype)
    product = x.astype(np.float64) * y.astype(np.float64)
    z = (-product * (1 + RNG.standard_normal(128) * 2.0 ** -RNG.integers(4, 40, 128))).astype(dtype)
    return x, y, z, np.zeros(5 * 128, dtype)


for _dt in FLOATS:
    case(f"multiply-adds-{np.dtype(_dt).name}", multiply_adds, (1,), lambda dt=_dt: _multiply_add_args(dt), exact=True)


@ct.kernel
def advanced(x, y, z, start):
    rows = ct.load(z, (0,), (4,))
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(start, 8)), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (0, 0), t)
    ct.store_advanced_indexing(x, (rows, ct.Slice(start, 8)), t * 2)


case("advanced-indexing", advanced, (1,),
     lambda: (random_array((8, 10), np.float32), np.zeros((4, 8), np.float32), np.array([1, 7, 9, 3], np.int32), 5),
     exact=True)


@ct.kernel
def shapes(x, y):
    t = ct.load(x, (0, 0), (4, 8))
    p = ct.permute(ct.reshape(t, (2, 2, 8)), (2, 0, 1))                  # (8, 2, 2)
    c = ct.cat((ct.reshape(p, (8, 4)), ct.reshape(p, (8, 4)) * 2), 1)    # (8, 8)
    e = ct.extract(c, (1, 0), (4, 4))
    i = ct.insert(ct.zeros((8, 8), x.dtype), (0, 1), e)
    b = ct.broadcast_to(ct.sum(t, axis=1, keepdims=True), (4, 8))
    tr = ct.reshape(ct.transpose(ct.reshape(t, (8, 4))), (4, 8))
    ct.store(y, (0, 0), ct.reshape(i, (4, 16)) + ct.reshape(ct.cat((b, tr), 0), (4, 16)))


for _dt in (np.float32, np.int32, np.float64):
    case(f"shape-ops-{np.dtype(_dt).name}", shapes, (1,), lambda dt=_dt: (random_array((4, 8), dt), np.zeros((4, 16), dt)))

@ct.kernel
def narrow_integer_ops(x, y, quotient, inverted):
    a, b = ct.load(x, (0,), (64,)), ct.load(y, (0,), (64,))
    ct.store(quotient, (0,), ct.cdiv(a, b))
    ct.store(inverted, (0,), (~(a > b)).astype(ct.int8))


case("cdiv-int8-and-invert-bool", narrow_integer_ops, (1,),
     lambda: (RNG.integers(0, 128, 64).astype(np.int8), RNG.integers(1, 128, 64).astype(np.int8),
              np.zeros(64, np.int8), np.zeros(64, np.int8)), exact=True)


def _integer_ops(a, b, k):
    """//, %, cdiv by b and << and >> by k: the arithmetic whose C++ spelling differs from cuTile's."""
    return a // b, a % b, ct.cdiv(a, b), a << k, a >> k


@ct.kernel
def integer_arithmetic(x, y, k, tiles, scalars, N: ct.Constant[int]):
    """Row r of `tiles`: op r on whole tiles; block i writes op r of element i, as scalars, to scalars[r, i]."""
    i = ct.bid(0)
    whole = _integer_ops(ct.load(x, (0,), (N,)), ct.load(y, (0,), (N,)), ct.load(k, (0,), (N,)))
    one = _integer_ops(ct.load(x, (i,), (1,)).item(), ct.load(y, (i,), (1,)).item(), ct.load(k, (i,), (1,)).item())
    for r in ct.static_iter(range(5)):
        ct.store(tiles, (r, 0), ct.reshape(whole[r], (1, N)))
        ct.store(scalars, (r, i), ct.full((1, 1), one[r], scalars.dtype))


def _integer_operands(dtype, n=64):
    from ..integer_model import edge_operands, shift_amounts
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    x, y = edge_operands(dtype, n, rng)
    return x, y, shift_amounts(dtype, n, rng), np.zeros((5, n), dtype), np.zeros((5, n), dtype), n


for _dt in INTS:
    case(f"integer-arithmetic-{np.dtype(_dt).name}", integer_arithmetic, (64,),
         lambda dt=_dt: _integer_operands(dt), exact=True)


@ct.kernel
def bytes_round_trip(x, packed, back, N: ct.Constant[int]):
    b = ct.pack_to_bytes(ct.load(x, (0,), (N,)))
    ct.store(packed, (0,), b)
    ct.store(back, (0,), ct.unpack_from_bytes(b, back.dtype))


for _dt in (np.int16, np.float32, np.int64, BF16):
    case(f"pack-unpack-bytes-{np.dtype(_dt).name}", bytes_round_trip, (1,),
         lambda dt=_dt: (random_array(64, dt), np.zeros(64 * np.dtype(dt).itemsize, np.uint8), np.zeros(64, dt), 64),
         exact=True)


@ct.kernel
def scaled_mma(a, sa, b, sb, c):
    """fp8 with e8m0 scales per 32 values of K: a correct path on GPUs without block-scaled mma."""
    acc = ct.load(c, (0, 0), (32, 32))
    ct.store(c, (0, 0), ct.mma_scaled(ct.load(a, (0, 0), (32, 64)), ct.load(sa, (0, 0), (32, 2)),
                                      ct.load(b, (0, 0), (64, 32)), ct.load(sb, (0, 0), (2, 32)), acc))


def _scaled_mma_args():
    e8m0 = ct.float8_e8m0fnu.numpy
    return (random_array((32, 64), FP8[0]), (2.0 ** RNG.integers(-4, 4, (32, 2))).astype(e8m0),
            random_array((64, 32), FP8[0]), (2.0 ** RNG.integers(-4, 4, (2, 32))).astype(e8m0),
            random_array((32, 32), np.float32))


case("mma-scaled-fp8-e8m0", scaled_mma, (1,), _scaled_mma_args)


@ct.kernel
def tiled_views(x, out, counts, y):
    """Tiled views: default steps (ct.load), overlapping tiles (element indices), counts, a store
    with gaps and an atomic update."""
    i = ct.bid(0)
    tv = x.tiled_view((4, 8), padding_mode=ct.PaddingMode.NAN)
    ct.store(out, (i, 0), tv.load((i, 0)))
    overlapping = x.tiled_view((4, 8), traversal_steps=(1, 8), padding_mode=ct.PaddingMode.NEG_INF)
    ct.store(out, (i, 1), overlapping.load((i * 3, 0)))
    ct.store(counts, (i,), ct.full((1,), overlapping.num_tiles(0) * 100 + tv.num_tiles(1), ct.int32))
    gaps = y.tiled_view((2,), traversal_steps=(3,))
    gaps.store(i, ct.arange(2, dtype=ct.int32) + i)
    y.tiled_view((4,)).atomic_store_add(4, 1)


case("tiled-views", tiled_views, (3,),
     lambda: (random_array((10, 13), np.float32), np.zeros((12, 16), np.float32), np.zeros(3, np.int32),
              np.zeros(24, np.int32)), exact=True)


@ct.kernel
def nan_rows(x, out):
    t = ct.load(x, (0, 0), (8, 32))
    ct.store(out, (0, 0), ct.max(t, axis=1, keepdims=True))
    ct.store(out, (0, 1), ct.min(t, axis=1, keepdims=True))


def _nan_rows_args():
    x = random_array((8, 32), np.float32)
    x[::2] = np.nan  # rows of NaN only: their max and min are NaN
    x[1, 5] = np.nan
    return x, np.zeros((8, 2), np.float32)


case("max-min-of-nan-rows", nan_rows, (1,), _nan_rows_args, exact=True)


@ct.kernel
def accumulator_row_extremes(a, b, c, out):
    """Row max and min of an mma accumulator, reduced in registers without shared memory."""
    acc = ct.mma(ct.load(a, (0, 0), (128, 16)), ct.load(b, (0, 0), (16, 64)), ct.load(c, (0, 0), (128, 64)))
    row_max = ct.max(acc, axis=1, keepdims=True)
    row_min = ct.min(acc, axis=1, keepdims=True)
    ct.store(out, (0, 0), row_max)
    ct.store(out, (0, 1), row_min)


def _accumulator_nan_rows_args():
    c = random_array((128, 64), np.float32)
    c[::7] = np.nan  # rows of NaN only: their max and min are NaN
    c[1::7, ::3] = np.nan  # NaNs among numbers are ignored
    c[2::7, 5] = -np.inf
    c[3::7, 60] = np.inf
    return (RNG.integers(-3, 4, (128, 16)).astype(np.float16), RNG.integers(-3, 4, (16, 64)).astype(np.float16), c,
            np.zeros((128, 2), np.float32))


case("max-min-of-accumulator-rows-with-nans", accumulator_row_extremes, (1,), _accumulator_nan_rows_args)


@ct.kernel
def causal_row_max(Q, K, M, n: int):
    """Row max of Q @ K^T over the keys at or before each query row: the row indices are made before
    the loop and compared, in every iteration, with the key tile's columns in the accumulator layout."""
    rows = ct.bid(0) * 128 + ct.arange(128, dtype=ct.int32)[:, None]
    q = ct.load(Q, (ct.bid(0), 0), (128, 64))
    m = ct.full((128, 1), -np.inf, ct.float32)
    for j in range(ct.cdiv(n, 128)):
        s = ct.mma(q, ct.load(K, (0, j), (64, 128)), ct.zeros((128, 128), ct.float32))
        cols = j * 128 + ct.arange(128, dtype=ct.int32)[None, :]
        m = ct.maximum(m, ct.max(ct.where(rows >= cols, s, -np.inf), axis=1, keepdims=True))
    ct.store(M, (ct.bid(0), 0), m)


case("causal-row-max", causal_row_max, (2,), lambda: (
    RNG.integers(-3, 4, (256, 64)).astype(np.float16), RNG.integers(-3, 4, (64, 256)).astype(np.float16),
    np.zeros((256, 1), np.float32), 256), exact=True)


@ct.kernel
def large_reduction(x, out, AXIS: ct.Constant[int], OP: ct.Constant[int]):
    t = ct.load(x, (0, 0), (512, 128))
    r = (ct.sum, ct.max, ct.argmin)[OP](t, axis=AXIS, keepdims=True)
    ct.store(out, (0, 0), r.astype(out.dtype))


LARGE_REDUCTIONS = []  # (512, 128) tiles: larger than shared memory, staged in several passes
for _dt in (np.float32, BF16):
    for _axis in (0, 1):
        for _op, _name in enumerate(("sum", "max", "argmin")):
            _id = f"large-reduction-{_name}-axis{_axis}-{np.dtype(_dt).name}"
            LARGE_REDUCTIONS.append(_id)
            # eighths: every partial sum is exact in float32, whatever order the GPU adds in
            case(_id, large_reduction, (1,),
                 lambda dt=_dt, axis=_axis, op=_op: (
                     (np.round(random_array((512, 128), np.float32) * 8) / 8).astype(dt),
                     np.zeros((1, 128) if axis == 0 else (512, 1), np.float32), axis, op),
                 exact=True)


@ct.kernel
def leading_axes_reductions(x, out, at, TA: ct.Constant[int], TB: ct.Constant[int], TN: ct.Constant[int]):
    """Reductions over the leading axes of a (TA, TB, TN) tile: each thread folds its register chunks
    that land on the same outputs before anything goes through shared memory."""
    t = ct.load(x, (0, 0, 0), (TA, TB, TN))
    rows = ct.reshape(t, (TA * TB, TN))
    least = ct.reduce(rows, 0, lambda a, b: ct.minimum(a, b), np.inf, keepdims=True)
    ct.store(out, (0, 0, 0), ct.sum(t, axis=(0, 1), keepdims=True).astype(out.dtype))
    ct.store(out, (1, 0, 0), ct.max(t, axis=(0, 1), keepdims=True).astype(out.dtype))
    ct.store(out, (2, 0, 0), ct.reshape(least, (1, 1, TN)).astype(out.dtype))
    ct.store(at, (0, 0), ct.argmax(rows, axis=0, keepdims=True))


# (TA, TB, TN): the folded tile several rows ((32, 1, 1024): 4 rows on 512 threads, float32 chunks of
# 32 bytes next to a bfloat16 array, as in a LayerNorm's weight gradient), one row, which is the
# result ((8, 1, 2048)), two leading axes reduced ((4, 8, 256)); integers in [-3, 3] in eighths:
# sums exact in any order, and ties for argmax, which goes to the smallest index
for _shape, _dt in (((32, 1, 1024), BF16), ((8, 1, 2048), np.float32), ((4, 8, 256), np.float32)):
    case(f"leading-axes-reductions-{'x'.join(map(str, _shape))}-{np.dtype(_dt).name}", leading_axes_reductions, (1,),
         lambda shape=_shape, dt=_dt: (RNG.integers(-24, 25, shape).astype(np.float32) / 8,
                                       np.zeros((3, 1, shape[2]), dt), np.zeros((1, shape[2]), np.int32), *shape),
         exact=True)


@ct.kernel
def summed_partials(dw, db, out_w, out_b, TM: ct.Constant[int], TN: ct.Constant[int]):
    """Two (TM, TN) float32 accumulators carried through a loop of loads and reduced down their
    columns, as a LayerNorm's weight gradient sums its partial rows: more than a block's registers
    hold at 512 threads."""
    j = ct.bid(0)
    acc_w = ct.zeros((TM, TN), ct.float32)
    acc_b = ct.zeros((TM, TN), ct.float32)
    for i in range(ct.num_tiles(dw, 0, (TM, TN))):
        acc_w += ct.load(dw, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
        acc_b += ct.load(db, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out_w, (j,), ct.sum(acc_w, axis=0).astype(out_w.dtype))
    ct.store(out_b, (j,), ct.sum(acc_b, axis=0).astype(out_b.dtype))


# 80 partial rows: the last of three tiles ragged; eighths in [-3, 3]: sums exact in any order
case("summed-partials-32x1024", summed_partials, (2,),
     lambda: (RNG.integers(-24, 25, (80, 2048)).astype(np.float32) / 8,
              RNG.integers(-24, 25, (80, 2048)).astype(np.float32) / 8,
              np.zeros(2048, BF16), np.zeros(2048, np.float32), 32, 1024), exact=True)


@ct.kernel
def rounded_casts(x, to_float32, to_bfloat16, to_tfloat32):
    t = ct.load(x, (0,), (64,))
    f = t.astype(ct.float32)
    R = ct.RoundingMode
    ct.store(to_float32, (0,), t.astype(ct.float32, rounding_mode=R.RN))
    ct.store(to_float32, (1,), t.astype(ct.float32, rounding_mode=R.RZ))
    ct.store(to_float32, (2,), t.astype(ct.float32, rounding_mode=R.RM))
    ct.store(to_float32, (3,), t.astype(ct.float32, rounding_mode=R.RP))
    ct.store(to_bfloat16, (0,), f.astype(ct.bfloat16, rounding_mode=R.RN))
    ct.store(to_bfloat16, (1,), f.astype(ct.bfloat16, rounding_mode=R.RZ))
    ct.store(to_bfloat16, (2,), f.astype(ct.bfloat16, rounding_mode=R.RM))
    ct.store(to_bfloat16, (3,), f.astype(ct.bfloat16, rounding_mode=R.RP))
    ct.store(to_tfloat32, (0,), f.astype(ct.tfloat32).astype(ct.float32))
    ct.store(to_tfloat32, (1,), f.astype(ct.tfloat32, rounding_mode=R.RZ).astype(ct.float32))
    ct.store(to_tfloat32, (2,), f.astype(ct.tfloat32, rounding_mode=R.RA).astype(ct.float32))


def _rounding_args():
    x = random_array(64, np.float64)
    steps = np.array([0.5, 0.25, 0.75, 0.5, 2.5, 1.5, 0.5, 0.5]) * [1, 1, 1, -1, 1, -1, 2 ** 13, -2 ** 13]
    x[:8] = 1 + steps * 2.0 ** -23  # ties and near-ties of float32, bfloat16 and tfloat32
    return x, np.zeros(256, np.float32), np.zeros(256, BF16), np.zeros(192, np.float32)


case("rounded-casts", rounded_casts, (1,), _rounding_args, exact=True)


@ct.kernel
def atomics(keys, counts, values, olds, OP: ct.Constant[int]):
    k = ct.load(keys, (ct.bid(0),), (64,))
    ct.atomic_add(counts, k, 1)  # colliding lanes: only the final counts are deterministic
    lanes = ct.arange(64, dtype=ct.int32) + ct.bid(0) * 64  # one lane per element: the old values are too
    update = ct.load(olds, (ct.bid(0),), (64,))
    f = (ct.atomic_xchg, ct.atomic_add, ct.atomic_max, ct.atomic_min, ct.atomic_and, ct.atomic_or, ct.atomic_xor)[OP]
    ct.store(olds, (ct.bid(0),), f(values, lanes, update, memory_order=ct.MemoryOrder.RELAXED))


ATOMICS = ("xchg", "add", "max", "min", "and", "or", "xor")
for _op, _name in enumerate(ATOMICS):
    for _dt in (np.int32, np.uint64) + ((np.float32, np.float16) if _name in ("xchg", "add") else ()):
        if _name == "xchg" and _dt == np.float16:
            continue
        case(f"atomic-{_name}-{np.dtype(_dt).name}", atomics, (4,),
             lambda op=_op, dt=_dt: (RNG.integers(0, 16, 256).astype(np.int32), np.zeros(16, np.int32),
                                     random_array(256, dt), random_array(256, dt), op), exact=True)


@ct.kernel
def compare_and_swap(values, expected, olds):
    lanes = ct.arange(64, dtype=ct.int32) + ct.bid(0) * 64
    e = ct.load(expected, (ct.bid(0),), (64,))
    ct.store(olds, (ct.bid(0),), ct.atomic_cas(values, lanes, e, e + 1, memory_scope=ct.MemoryScope.SYS))


def _cas_args(dt):
    values = random_array(128, dt)
    expected = np.where(RNG.random(128) < 0.5, values, values + 1).astype(dt)  # half the lanes swap
    return values, expected, np.zeros(128, dt)


for _dt in (np.int32, np.float64):
    case(f"atomic-cas-{np.dtype(_dt).name}", compare_and_swap, (2,), lambda dt=_dt: _cas_args(dt), exact=True)


@ct.kernel
def checked_copy(x, y):
    t = ct.load(x, (ct.bid(0),), (64,))
    ct.assert_(ct.isfinite(t), "x must be finite")  # holds: the kernel runs on
    ct.store(y, (ct.bid(0),), t)


case("assert-that-holds", checked_copy, (2,), lambda: (random_array(128, np.float32), np.zeros(128, np.float32)),
     exact=True)


@ct.kernel
def scalar_atomic(x, out):
    ct.scatter(out, ct.bid(0), ct.atomic_cas(x, 0, 0, 1))  # exactly one block sees 0


case("atomic-scalar-cas", scalar_atomic, (1,), lambda: (np.zeros(1, np.int32), np.full(1, -1, np.int32)), exact=True)


@ct.kernel
def rounded_arithmetic(x, y, out):
    a, b = ct.load(x, (0,), (64,)), ct.load(y, (0,), (64,))
    R = ct.RoundingMode
    ct.store(out, (0, 0), ct.add(a, b, rounding_mode=R.RZ).reshape((1, 64)))
    ct.store(out, (1, 0), ct.sub(a, b, rounding_mode=R.RM).reshape((1, 64)))
    ct.store(out, (2, 0), ct.mul(a, b, rounding_mode=R.RP).reshape((1, 64)))
    ct.store(out, (3, 0), ct.truediv(a, b, rounding_mode=R.RM).reshape((1, 64)))
    ct.store(out, (4, 0), ct.sqrt(ct.abs(a), rounding_mode=R.RP).reshape((1, 64)))
    ct.store(out, (5, 0), ct.truediv(a, b, rounding_mode=R.RP).reshape((1, 64)))


for _dt in (np.float32, np.float64, np.float16, BF16):  # directed roundings are exact: bit for bit
    case(f"rounded-arithmetic-{np.dtype(_dt).name}", rounded_arithmetic, (1,),
         lambda dt=_dt: (random_array(64, dt), random_array(64, dt), np.zeros((6, 64), dt)), exact=True)


ORDERS = {"acquire": ct.MemoryOrder.ACQUIRE, "release": ct.MemoryOrder.RELEASE, "acq_rel": ct.MemoryOrder.ACQ_REL}


@ct.kernel
def ordered_atomics(values, olds, OP: ct.Constant[int], ORDER: ct.Constant[int]):
    lanes = ct.arange(64, dtype=ct.int32) + ct.bid(0) * 64
    update = ct.load(olds, (ct.bid(0),), (64,))
    f = (ct.atomic_xchg, ct.atomic_add, ct.atomic_max, ct.atomic_min, ct.atomic_and, ct.atomic_or, ct.atomic_xor)[OP]
    ct.store(olds, (ct.bid(0),), f(values, lanes, update, memory_order=tuple(ORDERS.values())[ORDER]))


for _order, _order_name in enumerate(ORDERS):  # the order on the instruction: every kind, 4- and 8-byte words
    for _op, _name in enumerate(ATOMICS):
        _dt = (np.int32, np.uint64, np.int64)[_order]
        case(f"atomic-{_name}-{_order_name}-{np.dtype(_dt).name}", ordered_atomics, (2,),
             lambda op=_op, o=_order, dt=_dt: (random_array(128, dt), random_array(128, dt), op, o), exact=True)
    for _dt in (np.float32, np.float64, np.float16):  # floats add as they are; 16-bit adds between fences
        case(f"atomic-add-{_order_name}-{np.dtype(_dt).name}", ordered_atomics, (2,),
             lambda o=_order, dt=_dt: (random_array(128, dt), random_array(128, dt), 1, o), exact=True)


@ct.kernel
def ordered_compare_and_swap(values, expected, olds, ORDER: ct.Constant[int]):
    lanes = ct.arange(64, dtype=ct.int32) + ct.bid(0) * 64
    e = ct.load(expected, (ct.bid(0),), (64,))
    ct.store(olds, (ct.bid(0),), ct.atomic_cas(values, lanes, e, e + 1, memory_order=tuple(ORDERS.values())[ORDER]))


for _order, _order_name in enumerate(ORDERS):
    for _dt in (np.int32, np.float32, np.uint64):
        case(f"atomic-cas-{_order_name}-{np.dtype(_dt).name}", ordered_compare_and_swap, (2,),
             lambda o=_order, dt=_dt: (*_cas_args(dt), o), exact=True)


@ct.kernel
def locked_accumulate(x, total, lock, counter):
    """Blocks add their rows into one row under a spin lock (acquire CAS, release exchange whose old
    value goes unused), and count themselves with a relaxed add whose old value goes unused."""
    t = ct.load(x, (ct.bid(0), 0), (1, 256))
    while ct.atomic_cas(lock, 0, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    ct.store(total, (0, 0), ct.load(total, (0, 0), (1, 256)) + t)
    ct.atomic_xchg(lock, 0, 0, memory_order=ct.MemoryOrder.RELEASE)
    ct.atomic_add(counter, ct.arange(4, dtype=ct.int32), 1)


case("atomic-spin-lock-accumulate", locked_accumulate, (24,),
     lambda: (random_array((24, 256), np.int32), np.zeros((1, 256), np.int32), np.zeros(1, np.int32),
              np.zeros(4, np.int32)), exact=True)


@ct.kernel
def locked_group_sums(x, partial, locks, TILE_N: ct.Constant[int]):
    """Each row added into the float32 row of its group under the group's spin lock, tile by tile (the
    partial weight gradients of a LayerNorm's backward pass): bfloat16 rows in, float32 rows of 32-byte
    chunks loaded and stored inside the lock."""
    row = ct.bid(0)
    group = row % partial.shape[0]
    for j in range(ct.num_tiles(x, axis=1, shape=(1, TILE_N))):
        t = ct.load(x, (row, j), (1, TILE_N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
        while ct.atomic_cas(locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        t += ct.load(partial, (group, j), (1, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        ct.store(partial, (group, j), t)
        ct.atomic_xchg(locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)


# eighths: the sums are exact in float32 whatever order the blocks take the lock in; 600 columns: the
# last tile's chunks cross the row's end
case("locked-group-sums-bfloat16-to-float32", locked_group_sums, (64,),
     lambda: ((RNG.integers(-24, 25, (64, 600)) / 8).astype(BF16), np.zeros((4, 600), np.float32),
              np.zeros(4, np.int32), 256), exact=True)


@ct.kernel
def ragged_16_bit_rows(x, wide, narrow):
    """Tiles of bfloat16 and float32 over a ragged array: chunks of 8 that cross its edges go element by element."""
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (4, 64), padding_mode=ct.PaddingMode.ZERO)
    ct.store(wide, (ct.bid(0), ct.bid(1)), t.astype(ct.float32))
    ct.store(narrow, (ct.bid(0), ct.bid(1)), ct.load(wide, (ct.bid(0), ct.bid(1)), (4, 64)).astype(narrow.dtype))


for _dt in (BF16, np.float16, np.int16):
    case(f"ragged-16-bit-rows-{np.dtype(_dt).name}", ragged_16_bit_rows, (ct.cdiv(13, 4), ct.cdiv(83, 64)),
         lambda dt=_dt: (random_array((13, 83), dt), np.zeros((13, 83), np.float32), np.zeros((13, 83), dt)),
         exact=True)


# ---- arithmetic: within rounding -----------------------------------------------------------------

UNARY = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "abs", "floor", "ceil"]


@ct.kernel
def unary(x, y, OP: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (128,))
    f = (ct.exp, ct.exp2, ct.log, ct.log2, ct.sqrt, ct.rsqrt, ct.sin, ct.cos, ct.tanh, ct.erf, ct.abs, ct.floor,
         ct.ceil)[OP]
    ct.store(y, (ct.bid(0),), f(t))


def _unary_args(op, dt):
    x = random_array(300, dt)
    if UNARY[op] in ("log", "log2", "sqrt", "rsqrt"):
        x = (np.abs(x.astype(np.float32)) + 0.5).astype(dt)
    return x, np.zeros(300, dt), op


for _op, _name in enumerate(UNARY):
    for _dt in FLOATS:
        case(f"unary-{_name}-{np.dtype(_dt).name}", unary, (3,), lambda op=_op, dt=_dt: _unary_args(op, dt))

BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "minimum", "maximum", "lt", "eq", "and", "lshift"]


@ct.kernel
def binary(x, y, z, OP: ct.Constant[int]):
    a = ct.load(x, (ct.bid(0),), (64,))
    b = ct.load(y, (ct.bid(0),), (64,))
    ops = (lambda p, q: p + q, lambda p, q: p - q, lambda p, q: p * q, lambda p, q: p / q,
           lambda p, q: p // q, lambda p, q: p % q, ct.minimum, ct.maximum,
           lambda p, q: ct.where(p < q, p, q), lambda p, q: ct.where(p == q, p, q),
           lambda p, q: p & q, lambda p, q: p << (q & 3))
    ct.store(z, (ct.bid(0),), ops[OP](a, b).astype(z.dtype))


def _binary_args(op, dt):
    x, y = random_array(200, dt), random_array(200, dt)
    if BINARY[op] in ("truediv", "floordiv", "mod"):
        y[y == 0] = 1
    out = np.float32 if BINARY[op] == "truediv" and np.dtype(dt).kind in "iu" else dt
    return x, y, np.zeros(200, out), op


for _op, _name in enumerate(BINARY):
    for _dt in (np.int8, np.int32, np.int64, np.uint16, np.float16, np.float32, np.float64):
        if _name in ("and", "lshift") and np.dtype(_dt).kind == "f":
            continue
        exact = np.dtype(_dt).kind in "iu" and _name != "truediv"
        case(f"binary-{_name}-{np.dtype(_dt).name}", binary, (4,), lambda op=_op, dt=_dt: _binary_args(op, dt), exact)


@ct.kernel
def powers(x, y, out):
    """x ** 2 (a constant exponent of 2: one multiply) and x ** y with y 2 in some lanes only."""
    t = ct.load(x, (ct.bid(0),), (128,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (0, ct.bid(0)), (t ** 2).reshape((1, 128)))
    ct.store(out, (1, ct.bid(0)), (t ** ct.load(y, (ct.bid(0),), (128,), padding_mode=ct.PaddingMode.ZERO)).reshape((1, 128)))


def _powers_args(dt):
    x = random_array(300, dt)
    x[:4] = [np.inf, -np.inf, np.nan, -0.0]
    y = RNG.choice([2.0, 0.5, 3.0, -1.0], 300).astype(dt)
    return x, y, np.zeros((2, 300), dt)


for _dt in FLOATS:
    case(f"pow-square-{np.dtype(_dt).name}", powers, (3,), lambda dt=_dt: _powers_args(dt))


@ct.kernel
def reductions(x, out, AXIS: ct.Constant[int]):
    t = ct.load(x, (0, 0), (16, 64), padding_mode=ct.PaddingMode.ZERO)
    s = ct.sum(t, axis=AXIS, keepdims=True)
    m = ct.max(t, axis=AXIS, keepdims=True)
    n = ct.min(t, axis=AXIS, keepdims=True)
    a = ct.argmax(t, axis=AXIS, keepdims=True).astype(x.dtype)
    b = ct.argmin(t, axis=AXIS, keepdims=True).astype(x.dtype)
    c = ct.cumsum(t, axis=AXIS)
    ct.store(out, (0, 0), c + ct.broadcast_to(s + m - n + a - b, (16, 64)))


for _axis in (0, 1):
    for _dt in (np.float32, np.int32, np.float16):
        case(f"reductions-axis{_axis}-{np.dtype(_dt).name}", reductions, (1,),
             lambda a=_axis, dt=_dt: (random_array((13, 60), dt), np.zeros((16, 64), dt), a),
             exact=np.dtype(_dt).kind == "i")


@ct.kernel
def full_reduction(x, out):
    t = ct.load(x, (ct.bid(0), 0), (1, 4096))
    ct.store(out, (ct.bid(0),), ct.sum(t) + ct.max(t) * 2 + ct.argmax(t).astype(ct.float32))


case("reduce-long-row", full_reduction, (4,), lambda: (random_array((4, 4096), np.float32), np.zeros(4, np.float32)))

# ---- whole kernels (tileworkbench.kernels) ---------------------------------------------------------

case("vector-add", vector_add, (ct.cdiv(100_003, 1024),),
     lambda: (random_array(100_003, np.float32), random_array(100_003, np.float32), np.zeros(100_003, np.float32), 1024),
     exact=True)
case("transpose-by-order", transpose, (ct.cdiv(70, 32), ct.cdiv(100, 32)),
     lambda: (random_array((100, 70), np.float32), np.zeros((70, 100), np.float32), 32), exact=True)


@ct.kernel
def transpose_op(x, y, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (j, i), ct.transpose(ct.load(x, (i, j), (T, T))))


case("transpose-op", transpose_op, (ct.cdiv(100, 32), ct.cdiv(70, 32)),
     lambda: (random_array((100, 70), np.float32), np.zeros((70, 100), np.float32), 32), exact=True)


@ct.kernel
def transpose_rect(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (j, i), ct.transpose(ct.load(x, (i, j), (TM, TN))))


@ct.kernel
def swap_leading_axes(x, y, T: ct.Constant[int], C: ct.Constant[int]):
    """(T, T, C) -> (T, T, C) with the first two axes swapped: the last axis stays, whole chunks move."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (j, i, 0), ct.permute(ct.load(x, (i, j, 0), (T, T, C)), (1, 0, 2)))


# 8- and 16-bit tiles of 16-byte chunks: staged chunk by chunk (tile.cuh stages_chunks); ragged edges
for _dt, _shapes in ((np.float16, ((64, 64), (128, 128), (128, 64), (32, 128))), (BF16, ((128, 128),)),
                     (np.int8, ((64, 64), (128, 128)))):
    _name = np.dtype(_dt).name
    for _tm, _tn in _shapes:
        case(f"transpose-chunks-{_name}-{_tm}x{_tn}", transpose_rect, (ct.cdiv(300, _tm), ct.cdiv(200, _tn)),
             lambda dt=_dt, tm=_tm, tn=_tn: (random_array((300, 200), dt), np.zeros((200, 300), dt), tm, tn),
             exact=True)
    case(f"transpose-by-order-chunks-{_name}", transpose, (ct.cdiv(200, 64), ct.cdiv(300, 64)),
         lambda dt=_dt: (random_array((300, 200), dt), np.zeros((200, 300), dt), 64), exact=True)
    case(f"swap-leading-axes-chunks-{_name}", swap_leading_axes, (2, 2),
         lambda dt=_dt: (random_array((32, 32, 64), dt), np.zeros((32, 32, 64), dt), 16, 64), exact=True)
for _k in (row_gather, row_load):
    case(f"row-{_k.name}", _k, (33,),
         lambda: (random_array((50, 128), np.float32), RNG.integers(0, 50, 33).astype(np.int32),
                  np.zeros((33, 128), np.float32), 128), exact=True)
case("softmax", softmax, (37,), lambda: (random_array((37, 1000), np.float32), np.zeros((37, 1000), np.float32), 1024))
case("layernorm-bf16", layernorm, (16,),
     lambda: (random_array((16, 300), BF16), random_array(300, BF16), random_array(300, BF16), np.zeros((16, 300), BF16),
              512))
for _dt in (np.float16, BF16):
    case(f"matmul-{np.dtype(_dt).name}", matmul, (3, 3),
         lambda dt=_dt: (random_array((96, 80), dt), random_array((80, 72), dt), np.zeros((96, 72), dt), 32, 32, 16))

# Tile shapes of the software-pipelined tensor-core path (wgmma on sm_90): ragged M, N and K; K = 130
# has rows that are not 16-byte aligned, so every operand load takes the element-by-element path.
for _dt in (np.float16, BF16):
    for (_m, _k, _n), (_tm, _tn, _tk) in [((200, 136, 264), (128, 128, 64)), ((200, 130, 264), (128, 128, 64)),
                                           ((100, 96, 80), (64, 64, 32)), ((256, 192, 520), (128, 256, 64)),
                                           ((130, 40, 300), (128, 256, 64)), ((256, 384, 264), (128, 128, 128)),
                                           ((128, 256, 256), (64, 128, 128)), ((256, 384, 520), (128, 256, 128)),
                                           ((128, 256, 264), (64, 128, 128))]:
        case(f"matmul-{np.dtype(_dt).name}-{_m}x{_k}x{_n}-tiles-{_tm}x{_tn}x{_tk}", matmul,
             (ct.cdiv(_m, _tm), ct.cdiv(_n, _tn)),
             lambda dt=_dt, m=_m, k=_k, n=_n, tiles=(_tm, _tn, _tk): (
                 random_array((m, k), dt), random_array((k, n), dt), np.zeros((m, n), dt), *tiles))

# A float32 result: the accumulator epilogue's 8-byte pairs and 32-byte chunks through padded rows
for (_m, _k, _n), _tiles in [((200, 136, 264), (128, 128, 64)), ((100, 96, 80), (64, 64, 32)),
                             ((256, 192, 520), (128, 256, 64))]:
    case(f"matmul-float16-float32-out-{_m}x{_k}x{_n}-tiles-{'x'.join(map(str, _tiles))}", matmul,
         (ct.cdiv(_m, _tiles[0]), ct.cdiv(_n, _tiles[1])),
         lambda m=_m, k=_k, n=_n, tiles=_tiles: (random_array((m, k), np.float16), random_array((k, n), np.float16),
                                                 np.zeros((m, n), np.float32), *tiles))


@ct.kernel
def batched_matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Operands computed from 3-D loads (not loads themselves): the tensor-core path that copies them to
    shared memory at each call, not a software pipeline."""
    batch, bm, bn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[2], TK)):
        a = ct.reshape(ct.load(A, (batch, bm, k), (1, TM, TK), padding_mode=ct.PaddingMode.ZERO), (TM, TK))
        b = ct.reshape(ct.load(B, (batch, k, bn), (1, TK, TN), padding_mode=ct.PaddingMode.ZERO), (TK, TN))
        acc = ct.mma(a + a, b + b, acc)
    ct.store(C, (batch, bm, bn), ct.reshape(acc.astype(C.dtype), (1, TM, TN)))


# 128x128 and 128x256 float16 operands: two alternating operand buffers and the result's layout
# change need more than the 227 KB of an sm_90 block, one buffer fits.
case("batched-matmul-float16-one-mma-operand-buffer", batched_matmul, (2, 1, 1),
     lambda: (random_array((2, 128, 256), np.float16) / 8, random_array((2, 256, 256), np.float16) / 8,
              np.zeros((2, 128, 256), np.float16), 128, 256, 128))


@ct.kernel
def matmul_operator(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        acc = acc + ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO) @ \
            ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


# small integers: float32 products and sums are exact in any order, so GPU and interpreter agree bit for bit
case("matmul-operator-float32", matmul_operator, (3, 3),
     lambda: (RNG.integers(-3, 4, (96, 80)).astype(np.float32), RNG.integers(-3, 4, (80, 72)).astype(np.float32),
              np.zeros((96, 72), np.float32), 32, 32, 16), exact=True)


# ---- edges where the interpreter and the tile library once disagreed ------------------------------

@ct.kernel
def extract_constant_index(x, y):
    t = ct.load(x, (ct.bid(0),), (8,))
    ct.store(y, (ct.bid(0),), ct.extract(t, (1,), (4,)))


case("extract-constant-index-per-block", extract_constant_index, (4,),
     lambda: (np.arange(32, dtype=np.float32), np.zeros(16, np.float32)), exact=True)

_INF, _NAN = np.inf, np.nan
NAN_AND_INFINITIES = np.array([[-_INF, _NAN, 1, 2], [_INF, _NAN, 1, 2], [_NAN, _INF, -_INF, _NAN], [_NAN] * 4,
                               [1, -_INF, _INF, 0], [_NAN, 3, 3, _NAN], [-_INF, -_INF, _INF, _INF], [0, -0.0, _NAN, 0]])


@ct.kernel
def arg_extremes(x, y, PROPAGATE: ct.Constant[bool]):
    t = ct.load(x, (0, 0), (8, 4))
    ct.store(y, (0, 0), ct.argmin(t, axis=1, keepdims=True, propagate_nan=PROPAGATE))
    ct.store(y, (0, 1), ct.argmax(t, axis=1, keepdims=True, propagate_nan=PROPAGATE))


for _dt in (np.float32, np.float16, np.float64):
    for _propagate in (False, True):
        case(f"argmin-argmax-nan-inf-{np.dtype(_dt).name}-propagate{_propagate}", arg_extremes, (1,),
             lambda dt=_dt, p=_propagate: (NAN_AND_INFINITIES.astype(dt), np.zeros((8, 2), np.int32), p), exact=True)

# Rows whose values differ only past float32's 24 bits: they order as themselves, never as floats.
WIDE_INTEGER_ROWS = [[2**24 + 1, 2**24, 2**24 + 2, 2**24 + 1], [7, 2**31 - 2, 2**31 - 1, -2**31], [-1, 0, 1, -2],
                     [2**24 + 3, 2**24 + 3, 2**24 + 2, 2**24 + 4]] * 2
for _dt in (np.int32, np.uint32, np.int64, np.uint64):
    case(f"argmin-argmax-beyond-float-precision-{np.dtype(_dt).name}", arg_extremes, (1,),
         lambda dt=_dt: ((np.array(WIDE_INTEGER_ROWS, np.int64) * (2**32 if np.dtype(dt).itemsize == 8 else 1)
                          + 5).astype(dt), np.zeros((8, 2), np.int32), False), exact=True)

FLOAT_TO_INT_EDGES = np.array([_NAN, _INF, -_INF, 3e9, -3e9, 2.7, -2.7, -0.5, 1e20, -1e20, 127.9, 128, -128.9, -129,
                               255.5, 65535.9])


def _float_edges(dtype):
    with np.errstate(over="ignore"):  # 3e9 and 1e20 are infinities in float16
        return FLOAT_TO_INT_EDGES.astype(dtype)


@ct.kernel
def convert(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (16,)).astype(y.dtype))


for _src in FLOATS:
    for _dst in INTS + [np.bool_]:
        case(f"float-to-int-{np.dtype(_src).name}-to-{np.dtype(_dst).name}", convert, (1,),
             lambda s=_src, d=_dst: (_float_edges(s), np.zeros(16, d)), exact=True)

# ---- language constructs: custom reduce/scan, astile, divmod, array slices, while/break/continue --

@ct.kernel
def custom_reduce_scan(x, total, prefix, mod, T: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i, 0), (4, T))
    m = ct.load(mod, (0,), (1,)).item()
    ct.store(total, (i,), ct.reduce(t, 1, lambda a, b: (a + b) % m, 0))
    ct.store(prefix, (i, 0), ct.scan(t, axis=-1, func=lambda a, b: ct.maximum(a, b), identity=-100, reverse=True))


case("custom-reduce-scan-int32", custom_reduce_scan, (3,),
     lambda: (random_array((12, 64), np.int32), np.zeros(12, np.int32), np.zeros((12, 64), np.int32),
              np.array([7], np.int32), 64), exact=True)


def _min_with_index(a_value, a_index, b_value, b_index):
    take_b = (b_value < a_value) | ((b_value == a_value) & (b_index < a_index))
    return ct.where(take_b, b_value, a_value), ct.where(take_b, b_index, a_index)


@ct.kernel
def tuple_reduce_scan(x, small, lowest, where, row_min, row_at, running, count, T: ct.Constant[int]):
    """reduce/scan over tuples of tiles of different dtypes: to several outputs, to one, along a
    broadcast tile, in reverse."""
    i = ct.bid(0)
    t = ct.load(x, (i, 0), (4, T))
    columns = ct.arange(T, dtype=ct.int32)
    m, at = ct.reduce((t, columns[None, :]), 1, _min_with_index, (3.0e38, 2**31 - 1))
    ct.store(lowest, (i,), m)
    ct.store(where, (i,), at)
    flat = ct.reshape(t, (4 * T,))
    one_m, one_at = ct.reduce((flat, ct.arange(4 * T, dtype=ct.int32)), 0, _min_with_index, (3.0e38, 2**31 - 1))
    ct.store(row_min, (i,), ct.full((1,), one_m, ct.float32))
    ct.store(row_at, (i,), ct.full((1,), one_at, ct.int32))
    s = ct.load(small, (i, 0), (4, T))
    ones = ct.full((1, T), 1, ct.int8)
    total, seen = ct.scan((s, ones), 1, lambda a, n, b, m: (a + b, n + m), (0, 0), reverse=True)
    ct.store(running, (i, 0), total)
    ct.store(count, (i, 0), seen)


case("tuple-reduce-scan", tuple_reduce_scan, (3,),
     lambda: (random_array((12, 32), np.float32), random_array((12, 32), np.int16), np.zeros(12, np.float32),
              np.zeros(12, np.int32), np.zeros(3, np.float32), np.zeros(3, np.int32), np.zeros((12, 32), np.int16),
              np.zeros((12, 32), np.int8), 32), exact=True)


@ct.kernel
def welford(x, mean, m2, T: ct.Constant[int]):
    """A float reduction over a tuple of three tiles (count, mean, sum of squared deviations)."""
    i = ct.bid(0)
    t = ct.load(x, (i, 0), (8, T))

    def merge(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
        n = n_a + n_b
        delta = mean_b - mean_a
        share = ct.where(n > 0, n_b / ct.maximum(n, 1.0), 0.0)
        return n, mean_a + delta * share, m2_a + m2_b + delta * delta * n_a * share
    _, mu, sq = ct.reduce((ct.full((8, T), 1.0, ct.float32), t, ct.zeros((8, T), ct.float32)), 1, merge,
                          (0.0, 0.0, 0.0))
    ct.store(mean, (i,), mu)
    ct.store(m2, (i,), sq)


case("tuple-reduce-welford", welford, (2,),
     lambda: (random_array((16, 64), np.float32), np.zeros(16, np.float32), np.zeros(16, np.float32), 64))


@ct.kernel
def arrays_chosen_at_run_time(x, y, out_a, out_b, n: int, T: ct.Constant[int]):
    """Arrays chosen per block under a runtime if, swapped in a while loop, reassigned in a for loop."""
    i = ct.bid(0)
    if i % 2 == 0:
        src = x
    else:
        src = y
    dst, other = out_a, out_b
    k = 0
    while k < n + i:
        dst, other = other, dst
        k += 1
    scale = y
    for j in range(i):
        scale = x
    t = ct.load(src, (i,), (T,)) * ct.load(scale, (i,), (T,))
    ct.store(dst, (i,), t)
    ct.store(other, (i,), -t)


case("arrays-chosen-at-run-time", arrays_chosen_at_run_time, (4,),
     lambda: (random_array(64, np.float32), random_array(64, np.float32), np.zeros(64, np.float32),
              np.zeros(64, np.float32), 1, 16), exact=True)


@ct.kernel
def astile_divmod(x, q, r, a: int):
    t = ct.load(x, (0,), (8,))
    k = ct.astile(((a, 2), (3, a + 1)), dtype=ct.int32).reshape((4,))
    tq, tr = ct.divmod(t, ct.broadcast_to(k[None, :], (2, 4)).reshape((8,)))
    ct.store(q, (0,), tq)
    ct.store(r, (0,), tr)


case("astile-divmod", astile_divmod, (1,),
     lambda: (random_array(8, np.int32), np.zeros(8, np.int32), np.zeros(8, np.int32), 5), exact=True)


@ct.kernel
def ragged_rows(A, B, indptr, TM: ct.Constant[int], TN: ct.Constant[int]):
    seg = ct.bid(0)
    start = ct.load(indptr, index=seg, shape=())
    end = ct.load(indptr, index=seg + 1, shape=())
    sub_a = A.slice(axis=0, start=start, stop=end)
    sub_b = B.slice(0, start, end).slice(axis=1, start=2, stop=14)
    for i in range(ct.cdiv(end - start, TM)):
        ct.store(sub_b, (i, 0), ct.load(sub_a.slice(1, 2, 14), (i, 0), (TM, TN)) * 2)


case("array-slice-ragged", ragged_rows, (3,),
     lambda: (random_array((12, 16), np.float32), np.zeros((12, 16), np.float32),
              np.array([0, 4, 7, 12], np.int32), 4, 16), exact=True)


@ct.kernel
def loops_with_exits(x, n, T: ct.Constant[int]):
    i = ct.bid(0)
    xi = ct.load(x, (i,), (T,))
    for k in range(n):
        if k == 2:
            continue
        elif k > 4 + i:
            break
        xi += 1
    count = 0
    while count < n:
        count += 1
        if count > 3 + i:
            break
        xi = xi * 2
    if i == 1:
        return
    ct.store(x, (i,), xi)


case("loops-with-exits", loops_with_exits, (3,), lambda: (random_array(384, np.float32), 9, 128), exact=True)


@ct.kernel
def swapping_tuples(x, n: int):
    t = ct.load(x, (0,), (16,)), (ct.load(x, (1,), (16,)), 0)
    for i in range(n):
        t = t[1][0], (t[0] + t[1][0], i)
    k = ct.bid(0)
    while k < 3:
        t = t[1][0], (t[0], k)
        k += 1
    ct.store(x, (2 + ct.bid(0),), t[0] + t[1][1])


case("tuples-carried-and-swapped", swapping_tuples, (2,), lambda: (random_array(64, np.float32), 5))


# ---- chained tensor-core mmas: a warp holds whole accumulator rows (mma<W x 1>, mma_rows) ---------

@ct.kernel
def attention_rows(Q, K, V, O, n: int, TM: ct.Constant[int], TN: ct.Constant[int], D: ct.Constant[int],
                   K_AS: ct.Constant[int]):
    """Online-softmax attention: row max/sum of Q @ K^T in registers, P @ V with P from registers,
    Q converted once outside the loop; K given as (D, n), or as (n, D) and transposed by a permute
    (K_AS=1) or by the load's order (K_AS=2); the ragged last key tile masked under a runtime if."""
    q = ct.load(Q, (ct.bid(0), 0), (TM, D))
    m_i = ct.full((TM, 1), -np.inf, ct.float32)
    l_i = ct.zeros((TM, 1), ct.float32)
    acc = ct.zeros((TM, D), ct.float32)
    for j in range(ct.cdiv(n, TN)):
        if K_AS == 0:
            k = ct.load(K, (0, j), (D, TN), padding_mode=ct.PaddingMode.ZERO)
        elif K_AS == 1:
            k = ct.permute(ct.load(K, (j, 0), (TN, D), padding_mode=ct.PaddingMode.ZERO), (1, 0))
        else:
            k = ct.load(K, (0, j), (D, TN), order=(1, 0), padding_mode=ct.PaddingMode.ZERO)
        s = ct.mma(q, k, ct.zeros((TM, TN), ct.float32))
        if (j + 1) * TN > n:
            cols = j * TN + ct.arange(TN, dtype=ct.int32)[None, :]
            s = ct.where(cols < n, s, -np.inf)
        m_ij = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_ij)
        alpha = ct.exp(m_i - m_ij)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        v = ct.load(V, (j, 0), (TN, D), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m_i = m_ij
    ct.store(O, (ct.bid(0), 0), (acc / l_i).astype(O.dtype))


for _dt in (np.float16, BF16):
    for _tm, _tn, _d, _k_as in [(128, 128, 64, 0), (128, 128, 64, 1), (128, 64, 128, 2), (64, 64, 128, 0),
                                (128, 64, 32, 2), (128, 128, 128, 0), (128, 128, 128, 2)]:
        case(f"attention-rows-{np.dtype(_dt).name}-{_tm}x{_tn}x{_d}-k{_k_as}", attention_rows, (2,),
             lambda dt=_dt, tm=_tm, tn=_tn, d=_d, k_as=_k_as: (
                 (RNG.standard_normal((2 * tm, d)) * 0.5).astype(dt),
                 (RNG.standard_normal((d, 200) if k_as == 0 else (200, d)) * 0.5).astype(dt),
                 RNG.standard_normal((200, d)).astype(dt), np.zeros((2 * tm, d), dt), 200, tm, tn, d, k_as))


@ct.kernel
def matmul_transposed_b(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """C = A @ B^T with B given as (N, K): the transposed operand staged as loaded."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (bn, k), (TN, TK), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, ct.transpose(b), acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


for _dt in (np.float16, BF16):
    for (_m, _k, _n), (_tm, _tn, _tk) in [((200, 136, 264), (128, 128, 64)), ((100, 96, 80), (64, 64, 32))]:
        case(f"matmul-transposed-b-{np.dtype(_dt).name}-{_m}x{_k}x{_n}-tiles-{_tm}x{_tn}x{_tk}", matmul_transposed_b,
             (ct.cdiv(_m, _tm), ct.cdiv(_n, _tn)),
             lambda dt=_dt, m=_m, k=_k, n=_n, tiles=(_tm, _tn, _tk): (
                 random_array((m, k), dt), random_array((n, k), dt), np.zeros((m, n), dt), *tiles))


# ---- TMA pipeline stages (sm_90) and the loads that keep cp.async ------------------------------

def small_integers(shape, dtype):
    """Integers in [-3, 3]: products and sums of them are exact in float32 (with a float32 C, the
    tensor cores and NumPy agree bit for bit whatever order they add in)."""
    return RNG.integers(-3, 4, shape).astype(dtype)


@ct.kernel
def batched_matmul_staged(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Operands straight from 3-D loads with a unit leading axis: staged (a 3-D tensor map on sm_90)."""
    batch, bm, bn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[2], TK)):
        a = ct.reshape(ct.load(A, (batch, bm, k), (1, TM, TK), padding_mode=ct.PaddingMode.ZERO), (TM, TK))
        b = ct.reshape(ct.load(B, (batch, k, bn), (1, TK, TN), padding_mode=ct.PaddingMode.ZERO), (TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, (batch, bm, bn), ct.reshape(acc, (1, TM, TN)))


@ct.kernel
def matmul_nan_padded(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """A's rows past the edge read NaN (only rows of C outside the array see them): TMA would read
    zeros, so these stages stay on cp.async."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.NAN)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


@ct.kernel
def matmul_transposed_a(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """C = A^T @ B with A given as (K, M): stages are read with A's K axis contiguous, so this one
    takes the register-operand path (mma.sync)."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[0], TK)):
        a = ct.load(A, (k, bm), (TK, TM), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ct.transpose(a), b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


@ct.kernel
def matmul_invariant_transposed_a(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """C[:, n-tiles] = A^T @ B[:, k-tile] summed over B's column tiles, A given as (K, M) and loaded
    once, transposed by the load's order, before the loop: no stage reads it, so the mma copies it."""
    bm, bn = ct.bid(0), ct.bid(1)
    a = ct.load(A, (bm, 0), (TM, TK), order=(1, 0), padding_mode=ct.PaddingMode.ZERO)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(B, 1, (TK, TN))):
        acc = ct.mma(a, ct.load(B, (0, k), (TK, TN), padding_mode=ct.PaddingMode.ZERO), acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


for _dt in (np.float16, BF16):
    _name = np.dtype(_dt).name
    case(f"matmul-invariant-transposed-a-{_name}", matmul_invariant_transposed_a, (2, 1),
         lambda dt=_dt: (small_integers((64, 200), dt), small_integers((64, 384), dt),
                         np.zeros((200, 128), np.float32), 128, 128, 64), exact=True)
    case(f"tma-batched-matmul-staged-{_name}", batched_matmul_staged, (2, 2, 2),
         lambda dt=_dt: (small_integers((2, 130, 96), dt), small_integers((2, 96, 200), dt),
                         np.zeros((2, 130, 200), np.float32), 128, 128, 64), exact=True)
    case(f"tma-matmul-nan-padded-{_name}", matmul_nan_padded, (2, 2),
         lambda dt=_dt: (small_integers((200, 128), dt), small_integers((128, 256), dt),
                         np.zeros((200, 256), np.float32), 128, 128, 64), exact=True)
    case(f"tma-matmul-transposed-a-{_name}", matmul_transposed_a, (2, 2),
         lambda dt=_dt: (small_integers((136, 200), dt), small_integers((136, 256), dt),
                         np.zeros((200, 256), np.float32), 128, 128, 64), exact=True)


@ct.kernel
def gathered_rows_matmul(A, B, C, rows, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """C[block rows] = A[rows] @ B with A's rows gathered in the K loop (a mixture-of-experts layer's
    shape): pipelined through a row table on sm_90. Rows outside A and columns past K read the
    gather's padding value."""
    bm, bn = ct.bid(0), ct.bid(1)
    r = ct.load(rows, (bm,), (TM,))
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        cols = k * TK + ct.arange(TK, dtype=ct.int32)
        a = ct.gather(A, (r[:, None], cols[None, :]), padding_value=2)
        acc = ct.mma(a, ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO), acc)
    ct.store(C, (bm, bn), acc)


def _gathered_rows_product(A, B, r, bn, TM, TN, TK):
    """A[r] @ B[:, block bn], A's rows gathered in the K loop (a helper the kernels below inline)."""
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        cols = k * TK + ct.arange(TK, dtype=ct.int32)
        acc = ct.mma(ct.gather(A, (r[:, None], cols[None, :])), ct.load(B, (k, bn), (TK, TN)), acc)
    return acc


@ct.kernel
def gathered_rows_matmul_weighted(A, B, C, rows, weights, TM: ct.Constant[int], TN: ct.Constant[int],
                                  TK: ct.Constant[int]):
    """The same, each output row scaled by a weight gathered by the same rows (MoE's routed weights):
    a (TM, 1) factor broadcast over the accumulator's rows."""
    bm, bn = ct.bid(0), ct.bid(1)
    r = ct.load(rows, (bm,), (TM,))
    acc = _gathered_rows_product(A, B, r, bn, TM, TN, TK) * ct.gather(weights, r)[:, None]
    ct.store(C, (bm, bn), acc)


@ct.kernel
def gathered_rows_matmul_scattered(A, B, C, rows, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Rows gathered, multiplied, and scattered back to the same rows of C (MoE's epilogue): the
    scatter's row indices are read from a table, its column indices computed."""
    bm, bn = ct.bid(0), ct.bid(1)
    r = ct.load(rows, (bm,), (TM,))
    acc = _gathered_rows_product(A, B, r, bn, TM, TN, TK)
    out_cols = bn * TN + ct.arange(TN, dtype=ct.int32)
    ct.scatter(C, (r[:, None], out_cols[None, :]), acc.astype(C.dtype))


def _gathered_rows(count, limit):
    """Row indices in [-3, limit + 3): some before and some past the array's rows."""
    return RNG.integers(-3, limit + 3, count).astype(np.int32)


for _dt in (np.float16, BF16):
    _name = np.dtype(_dt).name
    for _k in (192, 200, 203):  # whole tiles; a ragged K; rows not 16-byte aligned (element by element)
        case(f"gathered-rows-matmul-{_name}-k{_k}", gathered_rows_matmul, (2, 2),
             lambda dt=_dt, k=_k: (small_integers((50, k), dt), small_integers((k, 128), dt),
                                   np.zeros((128, 128), np.float32), _gathered_rows(128, 50), 64, 64, 32), exact=True)
    case(f"gathered-rows-matmul-weighted-{_name}", gathered_rows_matmul_weighted, (1, 1),
         lambda dt=_dt: (small_integers((300, 256), dt), small_integers((256, 128), dt),
                         np.zeros((128, 128), np.float32), _gathered_rows(128, 300),
                         small_integers(300, np.float32), 128, 128, 64), exact=True)
    case(f"gathered-rows-matmul-scattered-{_name}", gathered_rows_matmul_scattered, (1, 2),
         lambda dt=_dt: (small_integers((130, 256), dt), small_integers((256, 256), dt), np.zeros((130, 256), dt),
                         RNG.permutation(np.arange(-5, 135))[:128].astype(np.int32), 128, 128, 64), exact=True)
    case(f"gathered-rows-matmul-{_name}-wide-tiles", gathered_rows_matmul, (1, 1),
         lambda dt=_dt: (small_integers((300, 256), dt), small_integers((256, 128), dt),
                         np.zeros((128, 128), np.float32), _gathered_rows(128, 300), 128, 128, 64), exact=True)


@ct.kernel
def expert_rows_matmul(A, B, C, rows, experts, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """A mixture-of-experts layer's product: A's rows gathered, times the transpose of one expert's
    (N, K) weights, a plane of the 3-D B picked by an index read in the kernel."""
    bm, bn = ct.bid(0), ct.bid(1)
    r = ct.load(rows, (bm,), (TM,))
    expert = ct.load(experts, bm, shape=())
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        cols = k * TK + ct.arange(TK, dtype=ct.int32)
        a = ct.gather(A, (r[:, None], cols[None, :]))
        b = ct.load(B, (expert, k, bn), (1, TK, TN), order=(0, 2, 1), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b.reshape((TK, TN)), acc)
    ct.store(C, (bm, bn), acc)


for _dt in (np.float16, BF16):
    case(f"expert-rows-matmul-{np.dtype(_dt).name}", expert_rows_matmul, (2, 2),
         lambda dt=_dt: (small_integers((300, 200), dt), small_integers((3, 256, 200), dt),
                         np.zeros((256, 256), np.float32), _gathered_rows(256, 300),
                         np.array([2, 0], np.int32), 128, 128, 64), exact=True)


@ct.kernel
def mma_row_reductions(A, B, S, I, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """Row reductions of an mma result that feeds another mma: sum/min without keepdims, argmax,
    a user reduce, each stored."""
    a = ct.load(A, (0, 0), (TM, TK))
    c = ct.mma(a, ct.load(B, (0, 0), (TK, TN)), ct.zeros((TM, TN), ct.float32))
    d = ct.mma(c.astype(A.dtype), ct.load(B, (0, 0), (TN, TN)), ct.zeros((TM, TN), ct.float32))
    ct.store(S, (0, 0), ct.sum(d, axis=1)[:, None] + ct.min(c, axis=1)[:, None] * 0.5)
    ct.store(S, (0, 1), ct.reduce(d, axis=1, func=lambda x, y: ct.maximum(x, y), identity=-np.inf)[:, None])
    ct.store(I, (0, 0), ct.argmax(d, axis=1, keepdims=True))


# small integers: every product, sum and the 16-bit rounding of c are exact on both sides, so the
# float32 results and the argmax (ties included) must match bit for bit
for _dt in (np.float16, BF16):
    case(f"mma-row-reductions-{np.dtype(_dt).name}", mma_row_reductions, (1,),
         lambda dt=_dt: (RNG.integers(-3, 4, (64, 32)).astype(dt), RNG.integers(-2, 3, (64, 64)).astype(dt),
                         np.zeros((64, 2), np.float32), np.zeros((64, 1), np.int32), 64, 64, 32), exact=True)


@ct.kernel
def flush_to_zero_ops(x, y, out):
    a, b = ct.load(x, (0,), (8,)), ct.load(y, (0,), (8,))
    ct.store(out, (0,), ct.exp2(a, flush_to_zero=True))
    ct.store(out, (1,), ct.add(b, b, flush_to_zero=True))
    ct.store(out, (2,), ct.exp2(a))


_TINY = np.finfo(np.float32).tiny
case("flush-to-zero-exp2-and-add", flush_to_zero_ops, (1,),
     lambda: (np.array([-130, -127.5, 1, -140, 0, -126, -126.5, 3.5], np.float32),
              np.array([_TINY / 4, -_TINY / 2, 0, _TINY, 1, -_TINY / 8, 2.5, _TINY / 2], np.float32),
              np.zeros(24, np.float32)))


# ---- lists of arrays as arguments: a loop over the list, constant indexes, an index per block ----

@ct.kernel
def list_sum(arrays, out, T: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.zeros((T,), out.dtype)
    for k in range(len(arrays)):
        acc += ct.load(arrays[k], (i,), (T,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (i,), acc)


for _dt in (np.float32, np.int16, BF16):
    case(f"list-sum-differing-lengths-{np.dtype(_dt).name}", list_sum, (4,),
         lambda dt=_dt: ([random_array(n, dt) for n in (100, 64, 37, 128)], np.zeros(128, dt), 32))


@ct.kernel
def list_constant_index(arrays, out):
    t = ct.load(arrays[2], (0, 0), (8, 16)) - ct.load(arrays[0], (0, 0), (8, 16))
    ct.store(out, (0, 0), t * len(arrays))


case("list-constant-index", list_constant_index, (1,),
     lambda: ([random_array((8, 16), np.int32), random_array((9, 20), np.int32), random_array((8, 16), np.int32)],
              np.zeros((8, 16), np.int32)), exact=True)


@ct.kernel
def list_copy_by_block(src, dst, T: ct.Constant[int]):
    k = ct.bid(0)
    ct.store(dst[k], (0,), ct.load(src[k], (0,), (T,), padding_mode=ct.PaddingMode.NEG_INF))


case("list-copy-by-block-index", list_copy_by_block, (3,),
     lambda: ([random_array(n, np.float32) for n in (16, 5, 11)], [np.zeros(n, np.float32) for n in (16, 16, 3)],
              16), exact=True)


@ct.kernel
def list_item_of_a_0d_index(arrays, out):
    first = ct.full((), 0, dtype=ct.int32)
    ct.store(out, (0, 0), ct.load(arrays[first + 1], (0, 0), (4, 8)) + ct.load(arrays[first], (0, 0), (4, 8)))


case("list-item-of-0d-tile-index", list_item_of_a_0d_index, (1,),
     lambda: ([random_array((4, 8), np.uint8), random_array((4, 8), np.uint8)], np.zeros((4, 8), np.uint8)),
     exact=True)


@ct.kernel
def tuple_arguments(pair, out, config):
    t = ct.load(pair[0], (0, 0), (4, 8)) * ct.load(pair[1], (0, 0), (4, 8))
    (scale, shift), lists = config
    ct.store(out, (0, 0), t * scale + shift + ct.load(lists[1], (0, 0), (4, 8)))


case("tuple-of-arrays-scalars-and-a-list", tuple_arguments, (1,),
     lambda: ((random_array((4, 8), np.float32), random_array((6, 9), np.float32)), np.zeros((4, 8), np.float32),
              ((np.float32(0.5), 2.0), [random_array((4, 8), np.float32), random_array((5, 8), np.float32)])))


@ct.kernel
def list_item_shape_and_slice(arrays, out):
    b = ct.bid(0)
    a = arrays[b]  # each block its own array, of its own length
    t = ct.load(a.slice(0, 0, 2), (0,), (4,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (b,), ct.full((4,), a.shape[0], ct.int32) + t)


case("list-item-shape-and-slice", list_item_shape_and_slice, (3,),
     lambda: ([random_array(n, np.int32) for n in (3, 7, 2)], np.zeros(12, np.int32)), exact=True)


# ---- the tensor cores' arithmetic: bit for bit on every path -----------------------------------------
# Random operands of a tensor-core format into a float32 accumulator: the tensor cores, the CUDA cores
# (which compute the same block-adder model: tile_mma.cuh) and the interpreter (interp/tensor_cores.py)
# agree bit for bit, float32 results compared as bits.

def normal_array(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


@ct.kernel
def batched_mma_3d(A, B, C):
    """One 3-D mma (batch dims): the CUDA cores' path."""
    ct.store(C, (0, 0, 0), ct.mma(ct.load(A, (0, 0, 0), (2, 32, 128)), ct.load(B, (0, 0, 0), (2, 128, 16)),
                                  ct.load(C, (0, 0, 0), (2, 32, 16))))


@ct.kernel
def tf32_mma(A, B, C):
    a, b = ct.load(A, (0, 0), (32, 64)).astype(ct.tfloat32), ct.load(B, (0, 0), (64, 32)).astype(ct.tfloat32)
    ct.store(C, (0, 0), ct.mma(a, b, ct.load(C, (0, 0), (32, 32))))


@ct.kernel
def tf32_matmul_loop(A, B, C, TK: ct.Constant[int]):
    """The usual way to ask for tensor cores on float32 data: matmul of tfloat32 casts, in a K loop."""
    acc = ct.zeros((32, 32), ct.float32)
    for k in range(ct.num_tiles(A, 1, (32, TK))):
        a = ct.astype(ct.load(A, (0, k), (32, TK), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        b = ct.astype(ct.load(B, (k, 0), (TK, 32), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        acc = acc + ct.matmul(a, b).astype(ct.float32)
    ct.store(C, (0, 0), acc)


case("tfloat32-matmul-k-loop", tf32_matmul_loop, (1,),
     lambda: (normal_array((32, 100), np.float32), normal_array((100, 32), np.float32), np.zeros((32, 32), np.float32),
              16), exact=True)


for _dt in (np.float16, BF16):
    _name = np.dtype(_dt).name
    case(f"tensor-core-arithmetic-pipelined-{_name}", matmul, (2, 3),
         lambda dt=_dt: (normal_array((200, 392), dt), normal_array((392, 264), dt), np.zeros((200, 264), np.float32),
                         128, 128, 64), exact=True)
    case(f"tensor-core-arithmetic-copied-operands-{_name}", batched_matmul, (2, 1, 1),
         lambda dt=_dt: (normal_array((2, 128, 256), dt), normal_array((2, 256, 256), dt),
                         np.zeros((2, 128, 256), np.float32), 128, 256, 128), exact=True)
    case(f"tensor-core-arithmetic-cuda-cores-{_name}", batched_mma_3d, (1,),
         lambda dt=_dt: (normal_array((2, 32, 128), dt), normal_array((2, 128, 16), dt),
                         normal_array((2, 32, 16), np.float32)), exact=True)
for _dt in FP8[:2]:  # 8-bit: partial sums of 128 products, as cuBLAS's and cuTile's fp8 GEMMs
    _name = np.dtype(_dt).name
    case(f"tensor-core-arithmetic-cuda-cores-{_name}", batched_matmul_staged, (1, 2, 2),
         lambda dt=_dt: (normal_array((1, 130, 300), dt), normal_array((1, 300, 200), dt),
                         np.zeros((1, 130, 200), np.float32), 128, 128, 128), exact=True)
case("tensor-core-arithmetic-tfloat32", tf32_mma, (1,),
     lambda: (normal_array((32, 64), np.float32), normal_array((64, 32), np.float32),
              normal_array((32, 32), np.float32)), exact=True)


@ct.kernel
def tf32_mma_shaped(A, B, C, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int]):
    """One tfloat32 mma of any shape (M not a multiple of 16: the CUDA cores' path)."""
    a, b = ct.load(A, (0, 0), (M, K)).astype(ct.tfloat32), ct.load(B, (0, 0), (K, N)).astype(ct.tfloat32)
    ct.store(C, (0, 0), ct.mma(a, b, ct.load(C, (0, 0), (M, N))))


case("tensor-core-arithmetic-cuda-cores-tfloat32", tf32_mma_shaped, (1,),
     lambda: (normal_array((8, 64), np.float32), normal_array((64, 8), np.float32),
              normal_array((8, 8), np.float32), 8, 8, 64), exact=True)


def spread_array(shape, octaves=24):
    """Normal values scaled by 2^-octaves/2 .. 2^octaves/2, element by element: the products of one
    tensor-core step differ widely in exponent, so how each is aligned and truncated shows in the sum."""
    return (RNG.standard_normal(shape) * 2.0 ** RNG.integers(-octaves // 2, octaves // 2 + 1, shape)).astype(np.float32)


@ct.kernel
def tf32_gemm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """float32 data on tensor cores as cuTile programs ask for it: tfloat32 casts into an mma, in a K loop."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for kk in range(ct.num_tiles(A, 1, (TM, TK))):
        at = ct.astype(ct.load(A, (bm, kk), (TM, TK), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        bt = ct.astype(ct.load(B, (kk, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        acc = ct.mma(at, bt, acc)
    ct.store(C, (bm, bn), acc)


# 4 warps a block (mma<2x2>), 2 x 3 blocks, 32 K tiles (the last padded): 125 steps of 8 products per
# accumulator, values 24 octaves apart, so every step truncates somewhere
case("tfloat32-mma-k-loop-several-warps", tf32_gemm, (2, 3),
     lambda: (spread_array((128, 1000)), spread_array((1000, 192)), np.zeros((128, 192), np.float32), 64, 64, 32),
     exact=True)


@ct.kernel
def tf32_chained(Q, K, V, O):
    """An mma whose tfloat32 A operand is the previous mma's result, read from registers."""
    q, k = ct.load(Q, (0, 0), (64, 32)).astype(ct.tfloat32), ct.load(K, (0, 0), (32, 64)).astype(ct.tfloat32)
    s = ct.mma(q, k, ct.zeros((64, 64), ct.float32))
    v = ct.load(V, (0, 0), (64, 32)).astype(ct.tfloat32)
    ct.store(O, (0, 0), ct.mma(s.astype(ct.tfloat32), v, ct.zeros((64, 32), ct.float32)))


case("tfloat32-mma-a-from-registers", tf32_chained, (1,),
     lambda: (spread_array((64, 32), 8), spread_array((32, 64), 8), spread_array((64, 32), 8),
              np.zeros((64, 32), np.float32)), exact=True)


# ---- keyword spellings: every parameter cuTile's compiler takes by keyword, passed by keyword -------

@ct.kernel
def keyword_spellings(x, out, SPELLING: ct.Constant[int]):
    """The same computation spelled with keywords (SPELLING 1) and positionally (0): same result."""
    if SPELLING:
        i = ct.bid(axis=0)
        t = ct.load(x, index=(i, 0), shape=(4, 8), padding_mode=ct.PaddingMode.ZERO, check_bounds=True)
        first = ct.extract(t, index=(0, 0), shape=(4, 4))
        s = ct.insert(t, index=(0, 1), value=ct.cat((first, first), axis=1).extract(index=(0, 0), shape=(4, 4)))
        s = ct.permute(ct.transpose(s, axis0=0, axis1=1), axes=(1, 0)) + ct.broadcast_to(
            ct.sum(t, axis=1, keepdims=True), shape=(4, 8))
        s = s + ct.max(t, axis=1, keepdims=True) + ct.cumsum(t, axis=1, reverse=False)
        s = s + ct.reduce(t, axis=1, func=lambda a, b: a + b, identity=0.0, keepdims=True)
        s = s + ct.scan(t, axis=1, func=lambda a, b: ct.maximum(a, b), identity=-1e30, reverse=False)
        s = s + ct.expand_dims(ct.arange(8, dtype=ct.int32, start=1, step=2).astype(ct.float32), axis=0)
        s = s + ct.reshape(ct.argmax(t, axis=1).astype(ct.float32), shape=(4, 1))
        s = s + ct.full(shape=(4, 8), fill_value=0.5, dtype=ct.float32) + ct.zeros(shape=(4, 8), dtype=ct.float32)
        s = s + t.sum(axis=0, keepdims=True) + t.reshape(shape=(32,)).reshape(shape=(4, 8))
        s = s + ct.num_tiles(x, axis=0, shape=(4, 8)) + ct.num_blocks(axis=0)
        ct.store(out, index=(i, 0), tile=s)
    else:
        i = ct.bid(0)
        t = ct.load(x, (i, 0), (4, 8), padding_mode=ct.PaddingMode.ZERO, check_bounds=True)
        first = ct.extract(t, (0, 0), (4, 4))
        s = ct.insert(t, (0, 1), ct.cat((first, first), 1).extract((0, 0), (4, 4)))
        s = ct.permute(ct.transpose(s, 0, 1), (1, 0)) + ct.broadcast_to(ct.sum(t, 1, keepdims=True), (4, 8))
        s = s + ct.max(t, 1, keepdims=True) + ct.cumsum(t, 1)
        s = s + ct.reduce(t, 1, lambda a, b: a + b, 0.0, keepdims=True)
        s = s + ct.scan(t, 1, lambda a, b: ct.maximum(a, b), -1e30)
        s = s + ct.expand_dims(ct.arange(8, dtype=ct.int32, start=1, step=2).astype(ct.float32), 0)
        s = s + ct.reshape(ct.argmax(t, 1).astype(ct.float32), (4, 1))
        s = s + ct.full((4, 8), 0.5, ct.float32) + ct.zeros((4, 8), ct.float32)
        s = s + t.sum(0, keepdims=True) + t.reshape((32,)).reshape((4, 8))
        s = s + ct.num_tiles(x, 0, (4, 8)) + ct.num_blocks(0)
        ct.store(out, (i, 0), s)


for _spelling in (0, 1):
    case(f"keyword-spellings-{('positional', 'keywords')[_spelling]}", keyword_spellings, (3,),
         lambda s=_spelling: (normal_array((10, 8), np.float32), np.zeros((10, 8), np.float32), s))


# ---- complex: arithmetic, exp/log, parts and a sum ----------------------------------------------

@ct.kernel
def complex_math(x, y, z, parts, total, T: ct.Constant[int]):
    i = ct.bid(0)
    a, b = ct.load(x, (i,), (T,)), ct.load(y, (i,), (T,))
    w = ct.exp(a * 0.25) * ct.conj(b) + ct.log(a) - a / b + ct.make_complex(ct.imag(a), ct.real(b))
    ct.store(z, (i,), w)
    ct.store(parts, (i,), ct.abs(w) + ct.real(a) * ct.imag(b))
    ct.store(total, (i,), ct.reshape(ct.sum(a * b), (1,)))


for _dt in COMPLEX:
    case(f"complex-math-{np.dtype(_dt).name}", complex_math, (ct.cdiv(1000, 256),),
         lambda dt=_dt: (random_array(1000, dt), random_array(1000, dt), np.zeros(1000, dt),
                         np.zeros(1000, np.zeros((), dt).real.dtype), np.zeros(4, dt), 256))


# ---- cuTile code as written in the wild: a persistent batched matmul, causal flash attention ------
# (references and interpreter tests: idiom_kernels.py, tests/interp/test_idiom_kernels.py). The
# matmul's tensor-core sums agree bit for bit, so its float16/bfloat16 results do too.

for _dt, _ta, _tb, _tiles in [(np.float16, False, False, (64, 64, 32)), (np.float16, True, True, (64, 64, 32)),
                              (BF16, True, False, (64, 64, 32)), (BF16, False, True, (64, 64, 32)),
                              (np.float16, False, True, (128, 128, 64))]:
    for _k in (511, 1024):
        case(f"persistent-bmm-k{_k}-{'nt'[_ta]}{'nt'[_tb]}-{np.dtype(_dt).name}-{'x'.join(map(str, _tiles))}",
             persistent_bmm, (7,),
             lambda dt=_dt, ta=_ta, tb=_tb, k=_k, tiles=_tiles:
             bmm_arguments(RNG, 2, 320, 200, k, dt, ta, tb, tiles)[0], exact=True)
for _dt, _heads, _seq, _tiles in [(np.float16, 2, 511, (64, 64)), (BF16, 2, 511, (128, 64)),
                                  (np.float16, 1, 2047, (128, 64))]:  # 2047: ~4 s on the interpreter
    case(f"causal-attention-d128-s{_seq}-{np.dtype(_dt).name}-{'x'.join(map(str, _tiles))}", causal_attention,
         attention_arguments(RNG, 1, _heads, _seq, 128, _dt, _tiles)[1],
         lambda dt=_dt, heads=_heads, seq=_seq, tiles=_tiles: attention_arguments(RNG, 1, heads, seq, 128, dt, tiles)[0])
