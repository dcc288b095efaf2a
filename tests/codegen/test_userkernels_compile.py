"""The tile kernels generated for the GPU tests' user-defined kernels compile offline with NVRTC."""
import pytest

import tileworkbench

from ..gpu.userkernel_cases import CASES
from .test_compile import _nvrtc_missing, runtime

pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_generated_user_kernel_compiles_for_sm_90(case, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", None)
    kernel = case.define(tileworkbench)
    launch = kernel.launch_plan(*case.args(), **case.kwargs)
    compiled = runtime.build(launch.kernel.specialize(launch.args), "sm_90")
    assert 0 < compiled.resources.registers <= 255
