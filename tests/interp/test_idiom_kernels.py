"""The interpreter runs cuTile code as it is written in the wild correctly: a persistent batched
matmul and causal flash attention (tests/gpu/idiom_kernels.py) against float64 references, at sizes
that keep every edge: K past the last whole K tile, blocks with fewer (or no) output tiles than
others, sequence lengths past the last whole tile, transposed operands, float16 and bfloat16."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile import interpret

from ..gpu.idiom_kernels import attention_arguments, bmm_arguments, causal_attention, persistent_bmm

BF16 = ct.bfloat16.numpy
TRANSPOSES = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("trans_a, trans_b", TRANSPOSES, ids=["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("k", [75, 96])
@pytest.mark.parametrize("blocks", [5, 17], ids=["blocks-loop-unevenly", "blocks-without-tiles"])
def test_persistent_batched_matmul_matches_float64_with_ragged_k_and_transposed_operands(
        dtype, trans_a, trans_b, k, blocks):
    args, reference, bound = bmm_arguments(np.random.default_rng(k), 2, 40, 24, k, dtype, trans_a, trans_b,
                                           (16, 16, 32))
    interpret(persistent_bmm, (blocks,), args)
    error = np.abs(args[2].astype(np.float64) - reference)
    assert np.all(error <= bound), f"worst element off by {error.max()} (allowed {bound.flat[error.argmax()]})"


@pytest.mark.parametrize("dtype, atol", [(np.float16, 2.0 ** -8), (BF16, 2.0 ** -5)], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("tiles", [(32, 16), (16, 32)], ids=["tall-tiles", "wide-tiles"])
@pytest.mark.parametrize("seq", [75, 64])
def test_causal_flash_attention_matches_float64_with_ragged_sequence_and_head_dim_128(dtype, atol, tiles, seq):
    args, grid, reference = attention_arguments(np.random.default_rng(seq), 1, 2, seq, 128, dtype, tiles)
    interpret(causal_attention, grid, args)
    out = args[3].astype(np.float64)
    assert not np.isnan(out).any()
    np.testing.assert_allclose(out, reference, rtol=0, atol=atol)
