"""The CuPy RawKernels' CUDA C++ compiles with NVRTC alone (no header) for the H100, without spills."""
import pytest

from benchmarks.peers import CUDA_LAYERNORM, CUDA_SOFTMAX, CUDA_TRANSPOSE, macros, row_threads
from tileworkbench.runtime import nvrtc

pytestmark = pytest.mark.skipif(nvrtc.unavailable_reason() is not None, reason="needs NVRTC")

CONFIGURATIONS = ([(CUDA_SOFTMAX, macros(COLS=c, THREADS=t)) for c in (1024, 4096, 16384) for t in row_threads(c, 4)]
                  + [(CUDA_LAYERNORM, macros(COLS=4096, THREADS=t)) for t in row_threads(4096, 8)]
                  + [(CUDA_TRANSPOSE, macros(ELEMENT=e)) for e in ("float", "short")])


def test_row_kernels_keep_one_to_eight_vectors_a_thread():
    assert row_threads(1024, 4) == [128, 256]
    assert row_threads(16384, 4) == [512, 1024]
    assert row_threads(4096, 8) == [128, 256, 512]
    assert macros(COLS=4096, THREADS=512) == ("-DCOLS=4096", "-DTHREADS=512")


@pytest.mark.parametrize("source, options", CONFIGURATIONS, ids=[" ".join(o) or "empty" for _, o in CONFIGURATIONS])
def test_raw_kernel_compiles_for_sm_90_without_spills(source, options):
    module = nvrtc.compile_cuda(source, arch="sm_90", options=options)
    [(name, resources)] = module.kernels.items()
    assert resources.spill_stores == 0 and resources.local_bytes == 0, name
