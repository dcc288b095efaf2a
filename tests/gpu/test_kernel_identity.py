"""On the GPU, a kernel redefined again and again (as re-running a notebook cell does) always launches
its own compiled code, also where it took a dead kernel's address: loaded modules are keyed on the
program's content."""
import numpy as np
import pytest

from ..kernel_variants import expected, launch, redefine_until_addresses_repeat


@pytest.mark.gpu
def test_redefined_kernels_launch_their_own_code_on_the_gpu():
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    host = np.arange(64, dtype=np.float32)
    x = cp.asarray(host)

    def run(kernel, variant):
        y = cp.full_like(x, cp.nan)
        launch(kernel, x, y, cp.cuda.get_current_stream())
        return np.allclose(cp.asnumpy(y), expected(variant, host), rtol=1e-6, equal_nan=False)
    wrong, repeated = redefine_until_addresses_repeat(run)
    assert wrong == [] and repeated > 0
