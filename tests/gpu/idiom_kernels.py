"""Kernels written the way cuTile code in the wild writes them, with float64 NumPy references: a
persistent batched matmul (a grid-stride loop over output tiles, K not a multiple of the K tile,
operands transposed by `ct.transpose` or by a load's `order`) and causal flash attention (online
softmax in exp2 with -inf masking of the diagonal tiles, ragged sequence lengths).

tests/interp/test_idiom_kernels.py checks the interpreter against the references at small sizes;
tests/gpu/cases.py runs them on the GPU against the interpreter at moderate sizes (and
tests/codegen/test_compile.py compiles them)."""
import math

import ml_dtypes
import numpy as np

import tileworkbench.tile as ct

INV_LOG_2 = 1.0 / math.log(2)
ZERO = ct.PaddingMode.ZERO


@ct.kernel
def persistent_bmm(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                   TRANS_A: ct.Constant[bool], TRANS_B: ct.Constant[bool]):
    """C[b] = A[b] @ B[b] over (batch, M tile, N tile) ids in a grid-stride loop. A is (batch, K, M)
    when TRANS_A (loaded as is, then ct.transpose), B is (batch, N, K) when TRANS_B (loaded through
    `order`); accumulation in float32 by ct.mma, the result cast to C's dtype."""
    m_tiles, n_tiles = ct.cdiv(C.shape[1], TM), ct.cdiv(C.shape[2], TN)
    k_tiles = ct.cdiv(A.shape[1] if TRANS_A else A.shape[2], TK)
    for tile_id in range(ct.bid(0), C.shape[0] * m_tiles * n_tiles, ct.num_blocks(0)):
        batch = tile_id // (m_tiles * n_tiles)
        bm = tile_id % (m_tiles * n_tiles) // n_tiles
        bn = tile_id % n_tiles
        acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
        for k in range(k_tiles):
            if TRANS_A:
                a = ct.transpose(ct.reshape(ct.load(A, (batch, k, bm), (1, TK, TM), padding_mode=ZERO), (TK, TM)))
            else:
                a = ct.reshape(ct.load(A, (batch, bm, k), (1, TM, TK), padding_mode=ZERO), (TM, TK))
            if TRANS_B:
                b = ct.load(B, (batch, k, bn), (1, TK, TN), order=(0, 2, 1), padding_mode=ZERO)
            else:
                b = ct.load(B, (batch, k, bn), (1, TK, TN), padding_mode=ZERO)
            acc = ct.mma(a, ct.reshape(b, (TK, TN)), acc)
        ct.store(C, (batch, bm, bn), ct.reshape(ct.astype(acc, C.dtype), (1, TM, TN)))


def bmm_arguments(rng, batch, m, n, k, dtype, trans_a, trans_b, tiles):
    """(A, B, C and the constants) for persistent_bmm, and the float64 reference A @ B."""
    a, b = rng.standard_normal((batch, m, k)).astype(dtype), rng.standard_normal((batch, k, n)).astype(dtype)
    A = np.ascontiguousarray(a.transpose(0, 2, 1)) if trans_a else a
    B = np.ascontiguousarray(b.transpose(0, 2, 1)) if trans_b else b
    reference = a.astype(np.float64) @ b.astype(np.float64)
    # a correct result is off by the float32 sums' rounding plus the cast to `dtype` (round to nearest)
    summed = k * 2.0 ** -23 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    bound = 2.0 ** -(ml_dtypes.finfo(dtype).nmant + 1) * (np.abs(reference) + summed) + summed
    return (A, B, np.zeros((batch, m, n), dtype), *tiles, trans_a, trans_b), reference, bound


@ct.kernel
def causal_attention(Q, K, V, O, scale: float, D: ct.Constant[int], H: ct.Constant[int],
                     TM: ct.Constant[int], TN: ct.Constant[int]):
    """softmax(Q K^T * scale, causal) V for one (TM query rows, batch * head) block: K tiles read
    transposed through `order`, running max and sum in float32, masked tiles from the diagonal on
    (and past the sequence's end) get -inf before the max, exp2 of scaled logits, one division."""
    bm, batch, head = ct.bid(0), ct.bid(1) // H, ct.bid(1) % H
    seq = K.shape[2]
    qk_scale = scale * INV_LOG_2
    rows = (bm * TM + ct.arange(TM, dtype=ct.int32))[:, None]
    cols = ct.arange(TN, dtype=ct.int32)[None, :]
    m_i = ct.full((TM, 1), -np.inf, dtype=ct.float32)
    l_i = ct.full((TM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    q = ct.reshape(ct.load(Q, (batch, head, bm, 0), (1, 1, TM, D), padding_mode=ZERO), (TM, D))
    mask_start = min(bm * TM // TN, seq // TN)
    for j in range(ct.cdiv(min((bm + 1) * TM, seq), TN)):
        k = ct.load(K, (batch, head, 0, j), (1, 1, D, TN), order=(0, 1, 3, 2), padding_mode=ZERO)
        qk = ct.mma(q, ct.reshape(k, (D, TN)), ct.full((TM, TN), 0.0, dtype=ct.float32))
        if j >= mask_start:
            key = j * TN + cols
            qk = qk + ct.where((rows >= key) & (key < seq), 0.0, -np.inf)
        m_ij = max(m_i, ct.max(qk, axis=-1, keepdims=True) * qk_scale)
        p = ct.exp2(qk * qk_scale - m_ij, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_ij, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        v = ct.reshape(ct.load(V, (batch, head, j, 0), (1, 1, TN, D), padding_mode=ZERO), (TN, D))
        acc = ct.mma(ct.astype(p, Q.dtype), v, acc * alpha)
        m_i = m_ij
    out = ct.truediv(acc, l_i, flush_to_zero=True, rounding_mode=ct.RoundingMode.APPROX)
    ct.store(O, (batch, head, bm, 0), ct.reshape(ct.astype(out, O.dtype), (1, 1, TM, D)))


def attention_arguments(rng, batch, heads, seq, d, dtype, tiles):
    """(Q, K, V, O, scale and the constants) for causal_attention, its grid, and the float64 reference."""
    q, k, v = (rng.standard_normal((batch, heads, seq, d)).astype(dtype) for _ in range(3))
    scale = 1 / math.sqrt(d)
    logits = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) * scale
    logits = np.where(np.tril(np.ones((seq, seq), bool)), logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    reference = weights / weights.sum(-1, keepdims=True) @ v.astype(np.float64)
    grid = (ct.cdiv(seq, tiles[0]), batch * heads)
    return (q, k, v, np.zeros_like(q), scale, d, heads, *tiles), grid, reference
