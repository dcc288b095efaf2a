"""The CUDA Tile C++ kernels of benchmarks/tile_cpp.py (RMSNorm, softmax, SwiGLU, RoPE, GEMM f16/bf16/tf32)
compile without a GPU, and the tile compiler kept the operations each is written with. Their Python
twins (the benchmark's other column) run on the interpreter and match NumPy."""
import re

import numpy as np
import pytest

import tileworkbench.tile as ct
from benchmarks.tile_cpp import cases, python_kernels
from tileworkbench.runtime import tile_cpp
from tileworkbench.runtime.tile_cpp import TileCppKernel

CASES = cases(quick=True)
# Tile IR operations each kernel must hold: views or pointer tiles, reductions, loops, tensor-core mma
OPERATIONS = {
    "rms norm": {"make_partition_view", "load_view_tko", "store_view_tko", "reduce", "rsqrt", "assume"},
    "softmax": {"make_partition_view", "for", "reduce", "exp2", "divf", "store_view_tko"},
    "swiglu": {"load_ptr_tko", "store_ptr_tko", "exp", "assume"},
    "rope": {"make_partition_view", "load_view_tko", "store_view_tko"},
    "gemm float16": {"for", "mmaf", "load_view_tko"}, "gemm bfloat16": {"for", "mmaf", "load_view_tko"},
    "gemm float32": {"for", "mmaf", "load_view_tko"},
}


@pytest.mark.skipif(tile_cpp.unavailable_reason() is not None, reason=str(tile_cpp.unavailable_reason()))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_tile_cpp_kernel_compiles_and_keeps_the_operations_it_is_written_with(case):
    kernel = TileCppKernel(case.source, f"<{case.name}>", case.expression)
    module = kernel.compile("sm_90")
    used = set(re.findall(r"= ([a-z_]+\d?)\b", module.ptx))
    assert OPERATIONS[case.name] <= used, OPERATIONS[case.name] - used
    assert kernel.block_threads("sm_90") >= 128 and kernel.resources("sm_90").registers > 0
    assert "warning" not in module.log  # hints sit where they apply


def test_the_python_twins_match_numpy_on_the_interpreter():
    rng = np.random.default_rng(0)
    k = python_kernels(ct)
    x = rng.standard_normal((3, 1000)).astype(np.float32)
    w = (rng.random(1000) + 0.5).astype(np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (3,), k["rms_norm"], (x, w, y, 1e-6, 1024))
    np.testing.assert_allclose(y, x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w, rtol=1e-5, atol=1e-6)
    ct.launch(None, (2,), k["softmax"], (x, y, 1024))   # two blocks stride over three rows
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    a, b = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 64)).astype(np.float32)
    c = np.zeros((64, 64), np.float32)
    ct.launch(None, (2, 2), k["gemm"], (a, b, c, 32, 32, 32))
    np.testing.assert_allclose(c, a @ b, rtol=1e-2, atol=1e-2)
