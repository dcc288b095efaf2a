"""On the GPU, a kernel redefined thousands of times (as re-running a notebook cell does) always
launches its own compiled code: loaded modules are keyed on the program's content."""
import gc

import numpy as np
import pytest

from ..kernel_variants import VARIANTS, define_variant, expected, launch


@pytest.mark.gpu
def test_redefined_kernels_launch_their_own_code_on_the_gpu():
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    host = np.arange(64, dtype=np.float32)
    x = cp.asarray(host)
    wrong = []
    for serial in range(4000):
        variant = serial % len(VARIANTS)
        kernel = define_variant(variant, serial)
        y = cp.full_like(x, cp.nan)
        launch(kernel, x, y, cp.cuda.get_current_stream())
        if not np.allclose(cp.asnumpy(y), expected(variant, host), rtol=1e-6, equal_nan=False):
            wrong.append((serial, variant))
        del kernel
        if serial % 8 == 0:
            gc.collect()
    assert wrong == []
