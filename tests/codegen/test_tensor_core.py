"""The tensor-core mma path: which kernels take it, and what the generated code looks like."""
import re

import numpy as np
import pytest

from tileworkbench.codegen import generate
from tileworkbench.kernels import matmul

from ..gpu.cases import BF16
from .test_compile import _nvrtc_missing, runtime


def _matmul(dtype, tiles=(128, 128, 32), size=256):
    a = np.zeros((size, size), dtype)
    return matmul.specialize((a, a, a, *tiles))


def test_bf16_matmul_keeps_its_accumulator_in_the_mma_layout_across_the_loop():
    source = generate(_matmul(BF16)).source
    assert "using mma_2x4 = tw::mma_layout<2, 4>;" in source
    assert "tw::tile<float, tw::shape<128, 128>, mma_2x4> acc = tw::full<float, tw::shape<128, 128>, mma_2x4>(0.0f);" in source
    assert "tw::mma(a, b, acc_1, mma_stage)" in source
    assert source.count("tw::convert_layout") == 1  # once, before the store, never in the loop
    assert "#define TW_THREADS 256" in source


def test_float32_matmul_keeps_the_generic_path():
    source = generate(_matmul(np.float32)).source
    assert "mma_layout" not in source and "convert_layout" not in source
    assert re.search(r"tw::mma\(a, b, acc_\d\)", source)


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_tensor_core_matmul_uses_ldmatrix_and_mma_sync_without_spills(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", None)
    generated, module = runtime.build(_matmul(dtype), "sm_90")
    assert "mma.sync.aligned.m16n8k16.row.col.f32" in module.ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in module.ptx
    resources = module.kernels["matmul"]
    assert resources.registers <= 128 and not resources.spill_stores
