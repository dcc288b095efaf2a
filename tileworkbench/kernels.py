"""A few standard tile kernels, written once: tests, benchmarks and tutorials use these.

    import tileworkbench.tile as ct
    from tileworkbench.kernels import softmax
    ct.launch(stream, (rows,), softmax, (x, y, 4096))
"""
from . import tile as ct


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    """c = a + b, one TILE-element tile per block."""
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def running_sum(x, y, TILE: ct.Constant[int]):
    """y[block] = the sum of x's TILE-element tiles, every block the same: a loop of loads."""
    i = ct.bid(0)
    acc = ct.zeros((TILE,), ct.float32)
    for k in range(ct.num_tiles(x, 0, (TILE,))):
        acc = acc + ct.load(x, (k,), (TILE,))
    ct.store(y, (i,), acc)


@ct.kernel
def transpose(x, y, T: ct.Constant[int]):
    """y = x.T: tile (i, j) of y is tile (i, j) of the F-order view of x. Grid: y's tiles."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (T, T), order="F"))


@ct.kernel
def row_gather(table, ids, out, D: ct.Constant[int]):
    """out[r] = table[ids[r]] (an embedding lookup) with element indices. Grid: one block per row."""
    r = ct.bid(0)
    row = ct.load(ids, (r,), ())
    ct.store(out, (r, 0), ct.gather(table, (ct.full((1, D), row, ct.int32), ct.arange(D, dtype=ct.int32)[None, :])))


@ct.kernel
def row_load(table, ids, out, D: ct.Constant[int]):
    """The same lookup as a tile-space load: a (1, D) tile's row index is the table row."""
    r = ct.bid(0)
    row = ct.load(ids, (r,), ())
    ct.store(out, (r, 0), ct.load(table, (row, 0), (1, D)))


@ct.kernel
def softmax(x, y, N: ct.Constant[int]):
    """Row softmax; N is a power of two >= the row length (padding with -inf). Grid: one block per row."""
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, N), padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, (r, 0), e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def layernorm(x, w, b, y, N: ct.Constant[int]):
    """Row layer norm, statistics in float32 whatever the input dtype. Grid: one block per row."""
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, N), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    mean = ct.sum(t, axis=1, keepdims=True) / x.shape[1]
    mask = ct.arange(N, dtype=ct.int32)[None, :] < x.shape[1]
    d = ct.where(mask, t - mean, 0.0)
    var = ct.sum(d * d, axis=1, keepdims=True) / x.shape[1]
    scale = ct.load(w, (0,), (N,), padding_mode=ct.PaddingMode.ZERO)[None, :].astype(ct.float32)
    shift = ct.load(b, (0,), (N,), padding_mode=ct.PaddingMode.ZERO)[None, :].astype(ct.float32)
    ct.store(y, (r, 0), (d * ct.rsqrt(var + 1e-5) * scale + shift).astype(y.dtype))


@ct.kernel
def matmul(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """C = A @ B accumulated in float32, one (TM, TN) tile of C per block. Grid: C's tiles."""
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))
