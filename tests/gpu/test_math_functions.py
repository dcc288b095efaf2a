"""Every elementwise math function on a GPU matches its NumPy reference: the tile function and C's
spellings in CuPy-style kernels (rows: math_cases.py)."""
import numpy as np
import pytest

import tileworkbench
import tileworkbench.tile as ct

from .math_cases import MATH, cupy_kernel, every_function_kernel, spellings, tolerance

IDS = [c.name for c in MATH]
KERNEL = every_function_kernel()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", MATH, ids=IDS)
def test_tile_function_on_the_gpu_matches_numpy(case, dtype):
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    x = case.operands(dtype)
    y = x[1] if case.arity == 2 else x[0]
    out = cp.zeros((len(MATH), 256), dtype)
    ct.launch(cp.cuda.get_current_stream(), (1,), KERNEL, (cp.asarray(x[0]), cp.asarray(y), out))
    got = cp.asnumpy(out[MATH.index(case)])
    np.testing.assert_allclose(got, case.expected(x), rtol=tolerance(dtype), atol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("case", MATH, ids=IDS)
def test_c_spellings_in_cupy_style_kernels_on_the_gpu_match_numpy(case):
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    for name, ctype in spellings(case):
        x = case.operands(ctype)
        got = cupy_kernel(tileworkbench, name, case.arity, ctype)(*(cp.asarray(a) for a in x))
        assert isinstance(got, cp.ndarray) and got.dtype == ctype, name
        np.testing.assert_allclose(cp.asnumpy(got), case.expected(x), rtol=tolerance(ctype), atol=0, err_msg=name)
