"""Every elementwise math function compiles with NVRTC (no GPU needed), as a tile function and as
C's spellings in a CuPy-style kernel, and the interpreter runs the same kernels to NumPy's values
(rows: tests/gpu/math_cases.py)."""
import numpy as np
import pytest

import tileworkbench
import tileworkbench.tile as ct

from ..gpu.math_cases import MATH, every_function_kernel, every_spelling_kernel, tolerance
from .test_compile import _nvrtc_missing, runtime

pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
KERNEL = every_function_kernel()


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_math_tile_function_compiles_and_calls_the_library(dtype, fresh_cache):
    x = np.linspace(0.1, 2, 256).astype(dtype)
    out = np.zeros((len(MATH), 256), dtype)
    compiled = runtime.build(KERNEL.specialize((x, x, out)), "sm_90")
    assert 0 < compiled.registers <= 255
    for case in MATH:
        assert f"tw::{case.name}(" in compiled.asm["cuda"], case.name
    ct.launch(None, (1,), KERNEL, (x, x, out))  # on the interpreter
    for k, case in enumerate(MATH):
        np.testing.assert_allclose(out[k], case.expected((x,) * case.arity), rtol=tolerance(dtype), err_msg=case.name)


@pytest.mark.parametrize("ctype", ["float32", "float64"])
def test_every_c_spelling_compiles_in_a_cupy_style_kernel(ctype, fresh_cache):
    kernel, calls = every_spelling_kernel(tileworkbench, ctype)
    x = np.linspace(0.1, 2, 64).astype(ctype)
    launch = kernel.launch_plan(x, x)
    compiled = runtime.build(launch.kernel.specialize(launch.args), "sm_90")
    assert 0 < compiled.registers <= 255
    for (name, case), got in zip(calls, kernel(x, x)):  # on the interpreter
        np.testing.assert_allclose(got, case.expected((x,) * case.arity), rtol=tolerance(ctype), err_msg=name)
