"""complex64/complex128 tiles compile with NVRTC (no GPU needed): the tile library's complex type
(codegen/include/tileworkbench/complex.cuh), its math, a sum of complex values across a block, and
a CuPy-style complex kernel."""
import re

import numpy as np
import pytest

import tileworkbench
from tileworkbench.codegen.cuda import literal
from tileworkbench.ir.types import complex64, complex128

from ..gpu.cases import complex_math
from .test_compile import _nvrtc_missing, runtime


def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", None)


def test_complex_constants_are_written_as_the_library_type_of_two_float_literals():
    assert literal(1.5 - 2j, complex64) == "tw::complex64(1.5f, -2.0f)"
    assert literal(3, complex128) == "tw::complex128(3.0, 0.0)"


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_math_and_sum_compile_without_spills_and_move_whole_elements(dtype, tmp_path, monkeypatch):
    _fresh_cache(tmp_path, monkeypatch)
    x, parts = np.zeros(1024, dtype), np.zeros(1024, np.zeros((), dtype).real.dtype)
    compiled = runtime.build(complex_math.specialize((x, x, x, parts, x, 256)), "sm_90")
    resources = compiled.resources
    assert 0 < resources.registers <= 255 and resources.spill_stores == 0
    assert f"tw::tile<tw::{np.dtype(dtype).name}, tw::shape<256>>" in compiled.asm["cuda"]
    part = "f32" if dtype is np.complex64 else "f64"
    assert re.search(rf"st\.global\.v2\.{part}", compiled.asm["ptx"])  # a (re, im) pair per store at least


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
def test_a_cupy_style_complex_kernel_compiles(tmp_path, monkeypatch):
    _fresh_cache(tmp_path, monkeypatch)
    kernel = tileworkbench.ElementwiseKernel("T x, T y", "T z, float32 r",
                                             "z = exp(x) / conj(y) + complex<float>(1); r = abs(z) - imag(x)")
    x = np.zeros(4096, np.complex64)
    launch = kernel.launch_plan(x, x)
    compiled = runtime.build(launch.kernel.specialize(launch.args), "sm_90")
    assert 0 < compiled.registers <= 255
