"""Memory-bound kernels written the way cuTile users write them (not tuned for tileworkbench).

Read by benchmarks/idioms.py, which loads this file twice: once as it is (real cuTile) and once with
`cuda.tile` bound to tileworkbench (benchmarks/published.py), so both run the same text.

Idioms: a row per block through `ct.gather`/`ct.scatter` at `(row, ct.arange(TILE))` with bounds
checks; whole-row tiles (the next power of two of the row) converted to float32 for the math and
back; `(1, TILE)` loads padded with zeros; APPROX divisions that flush to zero; persistent loops
over rows; `occupancy=` hints; dropout with a hash of the element index as its random numbers
(cuTile has no random-number op); RoPE on the two halves of each head.
"""
import cuda.tile as ct

ConstInt = ct.Constant[int]
ConstFloat = ct.Constant[float]
APPROX = ct.RoundingMode.APPROX
NEG_INF = float("-inf")
TWO_TO_MINUS_24 = 5.9604644775390625e-08


@ct.kernel
def softmax_gather(x, y, n_cols: int, TILE: ConstInt):
    """One row per block: gathered with bounds checks, masked past the row, scattered back."""
    row = ct.bid(0)
    cols = ct.arange(TILE, dtype=ct.int32)
    t = ct.gather(x, (row, cols), check_bounds=True, padding_value=0).astype(ct.float32)
    t = ct.where(cols < n_cols, t, NEG_INF)
    e = ct.exp(t - ct.max(t, 0))
    out = ct.truediv(e, ct.sum(e, 0), rounding_mode=APPROX, flush_to_zero=True)
    ct.scatter(y, (row, cols), out.astype(y.dtype), check_bounds=True)


@ct.kernel
def softmax_gather_persistent(x, y, n_rows: int, n_cols: int, TILE: ConstInt):
    """softmax_gather over rows bid, bid + blocks, ...: a grid of a few blocks per SM."""
    cols = ct.arange(TILE, dtype=ct.int32)
    for row in range(ct.bid(0), n_rows, ct.num_blocks(0)):
        t = ct.gather(x, (row, cols), check_bounds=True, padding_value=0).astype(ct.float32)
        t = ct.where(cols < n_cols, t, NEG_INF)
        e = ct.exp(t - ct.max(t, 0))
        out = ct.truediv(e, ct.sum(e, 0), rounding_mode=APPROX, flush_to_zero=True)
        ct.scatter(y, (row, cols), out.astype(y.dtype), check_bounds=True)


@ct.kernel(occupancy=2)
def softmax_load(x, y, TILE: ConstInt):
    """One row per block as a (1, TILE) tile padded with zeros (rows are a power of two long)."""
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, TILE), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    out = ct.truediv(e, ct.sum(e, axis=1, keepdims=True), rounding_mode=APPROX, flush_to_zero=True)
    ct.store(y, (row, 0), out.astype(y.dtype))


def _silu(g):
    return ct.truediv(g, 1.0 + ct.exp(-g), rounding_mode=APPROX, flush_to_zero=True)


@ct.kernel
def swiglu(a, b, c, TILE: ConstInt):
    """c = silu(a) * b, a row per block, persistent over rows."""
    cols = ct.arange(TILE, dtype=ct.int32)
    for row in range(ct.bid(0), a.shape[0], ct.num_blocks(0)):
        g = ct.gather(a, (row, cols), check_bounds=True, padding_value=0).astype(ct.float32)
        u = ct.gather(b, (row, cols), check_bounds=True, padding_value=0).astype(ct.float32)
        ct.scatter(c, (row, cols), (_silu(g) * u).astype(c.dtype), check_bounds=True)


@ct.kernel
def silu_and_mul(x, y, d: int, TILE: ConstInt):
    """y = silu(x[:, :d]) * x[:, d:], a row per block."""
    row = ct.bid(0)
    cols = ct.arange(TILE, dtype=ct.int32)
    inside = cols < d
    g = ct.gather(x, (row, cols), mask=inside, padding_value=0).astype(ct.float32)
    u = ct.gather(x, (row, cols + d), mask=inside, padding_value=0).astype(ct.float32)
    ct.scatter(y, (row, cols), (_silu(g) * u).astype(y.dtype), mask=inside)


def _uniform(index, seed):
    """A uniform number in [0, 1) from a hash of (index, seed): cuTile has no random-number op."""
    h = (index + seed).astype(ct.uint32)
    h = h ^ (h >> 16)
    h = h * 0x7FEB352D
    h = h ^ (h >> 15)
    h = h * 0x2C1B3C6D
    h = h ^ (h >> 16)
    return (h >> 8).astype(ct.float32) * TWO_TO_MINUS_24


@ct.kernel
def dropout(x, y, n: int, seed: int, p: ConstFloat, TILE: ConstInt):
    """y = x / (1 - p) where the element's random number is at least p, else 0."""
    offs = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    t = ct.gather(x, offs, check_bounds=True, padding_value=0).astype(ct.float32)
    keep = _uniform(offs, seed) >= p
    ct.scatter(y, offs, ct.where(keep, t * (1.0 / (1.0 - p)), 0.0).astype(y.dtype), check_bounds=True)


@ct.kernel(occupancy=4)
def rope(x, cos, sin, y, HEADS: ConstInt, HALF: ConstInt):
    """Rotary embedding of one position's heads (x: positions x heads x 2*HALF; cos, sin: positions x
    HALF): the first half of each head turns against the second."""
    s = ct.bid(0)
    x1 = ct.load(x, (s, 0, 0), (1, HEADS, HALF)).astype(ct.float32)
    x2 = ct.load(x, (s, 0, 1), (1, HEADS, HALF)).astype(ct.float32)
    c = ct.load(cos, (s, 0), (1, HALF)).astype(ct.float32)[:, None, :]
    sn = ct.load(sin, (s, 0), (1, HALF)).astype(ct.float32)[:, None, :]
    ct.store(y, (s, 0, 0), (x1 * c - x2 * sn).astype(y.dtype))
    ct.store(y, (s, 0, 1), (x2 * c + x1 * sn).astype(y.dtype))
