"""Reference solutions of the puzzles (kept out of the notebooks), one kernel per puzzle name."""
import math

import tileworkbench.tile as ct


@ct.kernel
def add_ten(x, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, (i,), ct.load(x, (i,), (TILE,)) + 10)


@ct.kernel
def double_ragged(x, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, (i,), 2 * ct.load(x, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def zip_mul(a, b, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(out, (i,), ct.load(a, (i,), (TILE,)) * ct.load(b, (i,), (TILE,)))


@ct.kernel
def outer_add(a, b, out, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(out, (i, j), ct.load(a, (i,), (T,))[:, None] + ct.load(b, (j,), (T,))[None, :])


@ct.kernel
def leaky_relu(x, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i,), (TILE,))
    ct.store(out, (i,), ct.where(t > 0, t, 0.1 * t))


@ct.kernel
def row_sum(x, out, N: ct.Constant[int]):
    r = ct.bid(0)
    ct.store(out, (r,), ct.sum(ct.load(x, (r, 0), (1, N)), axis=1))


@ct.kernel
def column_max(x, out, M: ct.Constant[int], W: ct.Constant[int]):
    j = ct.bid(0)
    ct.store(out, (j,), ct.max(ct.load(x, (0, j), (M, W)), axis=0))


@ct.kernel
def dot(a, b, out, TILE: ct.Constant[int]):
    acc = ct.zeros((TILE,), ct.float32)
    for k in range(ct.num_tiles(a, 0, (TILE,))):
        zero = ct.PaddingMode.ZERO
        acc = acc + ct.load(a, (k,), (TILE,), padding_mode=zero) * ct.load(b, (k,), (TILE,), padding_mode=zero)
    ct.store(out, (0,), ct.sum(acc, axis=0, keepdims=True))


@ct.kernel
def prefix_sum(x, out, N: ct.Constant[int]):
    r = ct.bid(0)
    ct.store(out, (r, 0), ct.cumsum(ct.load(x, (r, 0), (1, N)), axis=1))


@ct.kernel
def softmax(x, out, N: ct.Constant[int]):
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, N), padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(out, (r, 0), e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def masked_gather(table, idx, keep, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    rows = ct.load(idx, (i,), (TILE,))
    ct.store(out, (i,), ct.gather(table, rows, mask=ct.load(keep, (i,), (TILE,)), padding_value=-1))


@ct.kernel
def stencil(x, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    at = ct.arange(TILE, dtype=ct.int32) + i * TILE
    ct.store(out, (i,), ct.gather(x, at - 1) + ct.gather(x, at) + ct.gather(x, at + 1))


@ct.kernel
def inverse_permutation(x, perm, out, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.scatter(out, ct.load(perm, (i,), (TILE,)), ct.load(x, (i,), (TILE,)))


@ct.kernel
def transpose(x, out, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(out, (i, j), ct.transpose(ct.load(x, (j, i), (T, T))))


@ct.kernel
def transpose_coalesced(x, out, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(out, (i, j), ct.load(x, (i, j), (T, T), order="F"))


@ct.kernel
def matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        acc = ct.mma(ct.load(a, (i, k), (TM, TK)), ct.load(b, (k, j), (TK, TN)), acc)
    ct.store(c, (i, j), acc)


@ct.kernel
def grouped_matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                   GROUP: ct.Constant[int]):
    block = ct.bid(0)
    rows, cols = ct.cdiv(a.shape[0], TM), ct.cdiv(b.shape[1], TN)
    first = block // (GROUP * cols) * GROUP
    height = min(rows - first, GROUP)
    i = first + block % (GROUP * cols) % height
    j = block % (GROUP * cols) // height
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        acc = ct.mma(ct.load(a, (i, k), (TM, TK)), ct.load(b, (k, j), (TK, TN)), acc)
    ct.store(c, (i, j), acc)


@ct.kernel
def flash_attention(q, k, v, out, BM: ct.Constant[int], BN: ct.Constant[int], D: ct.Constant[int]):
    i = ct.bid(0)
    qt = ct.load(q, (i, 0), (BM, D)) * (1 / math.sqrt(D))
    m = ct.full((BM, 1), -math.inf, ct.float32)
    s = ct.zeros((BM, 1), ct.float32)
    acc = ct.zeros((BM, D), ct.float32)
    for j in range(ct.num_tiles(k, 0, (BN, D))):
        scores = ct.mma(qt, ct.transpose(ct.load(k, (j, 0), (BN, D))), ct.zeros((BM, BN), ct.float32))
        m_new = ct.maximum(m, ct.max(scores, axis=1, keepdims=True))
        p = ct.exp(scores - m_new)
        scale = ct.exp(m - m_new)
        s = s * scale + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p, ct.load(v, (j, 0), (BN, D)), acc * scale)
        m = m_new
    ct.store(out, (i, 0), acc / s)


SOLUTIONS = {f.name: f for f in (add_ten, double_ragged, zip_mul, outer_add, leaky_relu, row_sum, column_max,
                                     dot, prefix_sum, softmax, masked_gather, stencil, inverse_permutation,
                                     transpose, transpose_coalesced, matmul, grouped_matmul, flash_attention)}
