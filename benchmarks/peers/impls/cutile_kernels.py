"""cuTile (`cuda.tile`) kernels for the peer benchmark, each in the form cuTile's guide suggests for
its op: tile-space loads and stores, fp32 math, hints (occupancy, CTAs per cluster) set per launch
configuration in cutile_impls.py."""
import cuda.tile as ct

ConstInt = ct.Constant[int]
APPROX = ct.RoundingMode.APPROX


@ct.kernel
def add(a, b, c, TILE: ConstInt):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def transpose(x, y, T: ConstInt):
    """Tile (i, j) of y is tile (j, i) of x, transposed. Grid: y's tiles."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.transpose(ct.load(x, (j, i), (T, T))))


@ct.kernel
def row_load(table, ids, out, D: ConstInt):
    """out[r] = table[ids[r]]: the id is the row index of a (1, D) tile. Grid: one block per row."""
    r = ct.bid(0)
    ct.store(out, (r, 0), ct.load(table, (ct.load(ids, (r,), ()), 0), (1, D)))


@ct.kernel
def rows_gather(table, ids, out, R: ConstInt, D: ConstInt):
    """R rows per block, by element indices: a (R, 1) tile of ids against a (1, D) range of columns."""
    b = ct.bid(0)
    rows = ct.load(ids, (b,), (R,))
    cols = ct.arange(D, dtype=ct.int32)
    ct.store(out, (b, 0), ct.gather(table, (rows[:, None], cols[None, :])))


@ct.kernel
def rows_indexed(table, ids, out, R: ConstInt, D: ConstInt):
    """R rows per block with advanced indexing: the ids tile selects rows, a Slice the columns."""
    b = ct.bid(0)
    rows = ct.load(ids, (b,), (R,))
    ct.store(out, (b, 0), ct.load_advanced_indexing(table, (rows, ct.Slice(0, D))))


@ct.kernel
def softmax(x, y, N: ConstInt):
    """One row of N (a power of two, the row length) per block."""
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, N))
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True), rounding_mode=APPROX)
    ct.store(y, (r, 0), ct.truediv(e, ct.sum(e, axis=1, keepdims=True), rounding_mode=APPROX))


@ct.kernel
def softmax_persistent(x, y, N: ConstInt):
    """Rows r = bid, bid + blocks, ... of N per block: a grid of a few blocks per SM."""
    for r in range(ct.bid(0), x.shape[0], ct.num_blocks(0)):
        t = ct.load(x, (r, 0), (1, N))
        e = ct.exp(t - ct.max(t, axis=1, keepdims=True), rounding_mode=APPROX)
        ct.store(y, (r, 0), ct.truediv(e, ct.sum(e, axis=1, keepdims=True), rounding_mode=APPROX))


@ct.kernel
def layernorm(x, w, b, y, N: ConstInt):
    """One row of N (a power of two, the row length) per block; statistics in float32."""
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, N)).astype(ct.float32)
    d = t - ct.sum(t, axis=1, keepdims=True) / N
    rstd = ct.rsqrt(ct.sum(d * d, axis=1, keepdims=True) / N + 1e-5)
    scale = ct.load(w, (0,), (N,)).astype(ct.float32)[None, :]
    shift = ct.load(b, (0,), (N,)).astype(ct.float32)[None, :]
    ct.store(y, (r, 0), (d * rstd * scale + shift).astype(y.dtype))


@ct.kernel
def matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, GROUP: ConstInt):
    """C = A @ B, f32 accumulate, one (TM, TN) tile of C per block. Grid: 1-D, C's tile count; the
    blocks walk C in groups of GROUP tile rows so that neighbours share A and B tiles in L2."""
    tiles_m, tiles_n = ct.cdiv(A.shape[0], TM), ct.cdiv(B.shape[1], TN)
    bid = ct.bid(0)
    first = bid // (GROUP * tiles_n) * GROUP
    height = min(tiles_m - first, GROUP)
    bm = first + bid % (GROUP * tiles_n) % height
    bn = bid % (GROUP * tiles_n) // height
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


@ct.kernel
def empty(x):
    pass
