"""Shared-memory staging of 16-bit tiles compiles to the vector accesses the access model counts
(docs/access.md): permutes in whole 16-byte chunks, the accumulator epilogue in column pairs and
16-byte chunks, for sm_80 and sm_90 (PTX, no GPU needed)."""
import re
from collections import Counter

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import transpose

from .test_compile import _nvrtc_missing

runtime = pytest.importorskip("tileworkbench.runtime.launch")
pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))


@ct.kernel
def mma_store(a, b, c, K: ct.Constant[int]):
    acc = ct.mma(ct.load(a, (0, 0), (64, K)), ct.load(b, (0, 0), (K, 64)), ct.zeros((64, 64), ct.float32))
    ct.store(c, (0, 0), acc.astype(c.dtype))


def _shared_accesses(fn, arch) -> Counter:
    compiled = runtime.build(fn, arch)
    return Counter(re.findall(r"(?:st|ld)\.shared\.[\w.]+", compiled.asm["ptx"]))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", [np.float16, ct.bfloat16.numpy])
def test_a_16_bit_transpose_stages_each_chunk_as_one_16_byte_store(arch, dtype):
    # 64x64 on 256 threads: two 8-element chunks per thread, each one st.shared.v4; the transposed
    # read is element by element (16 loads), never the 2-byte stores of the skewed path
    x = np.zeros((128, 128), dtype)
    assert _shared_accesses(transpose.specialize((x, x, 64)), arch) == {"st.shared.v4.u32": 2, "ld.shared.u16": 16}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("out, pair", [(np.float16, "st.shared.v2.u16"), (np.float32, "st.shared.v2.f32")])
def test_the_accumulator_epilogue_stores_column_pairs_and_reads_16_byte_chunks(arch, out, pair):
    # 64x64 accumulator of mma<1x2> on 64 threads: 64 registers, 32 pairs; the blocked result reads
    # 64 elements per thread in 16-byte pieces (8 of f16, 16 of f32). The operands' 8 st.shared.v4
    # are the tensor-core mma's own staging.
    a, b = np.zeros((64, 32), np.float16), np.zeros((32, 64), np.float16)
    accesses = _shared_accesses(mma_store.specialize((a, b, np.zeros((64, 64), out), 32)), arch)
    assert accesses[pair] == 32 and accesses["ld.shared.v4.u32"] == 64 * np.dtype(out).itemsize // 16
    assert not any(k in accesses for k in ("st.shared.u16", "st.shared.f32", "ld.shared.u16", "ld.shared.f32"))
