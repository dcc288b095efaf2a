"""C++ cell kernels on the GPU: launched with arguments packed from the PTX parameter list, checked
against NumPy, and measured by --bench into the record the kernel inspector shows."""
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from tileworkbench.magic import KERNEL_MIME
from tileworkbench.runtime.cpp import CppKernel

SOURCE = '''#include <tileworkbench/tile.cuh>
extern "C" __global__ void axpy(const float* x, float* y, int n, float a, __half h, long long m, double d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + __half2float(h) + float(m) + float(d);
}
'''


@pytest.mark.gpu
def test_a_cpp_kernel_launches_with_every_kind_of_parameter():
    cp = pytest.importorskip("cupy")
    kernel = CppKernel(SOURCE, "<c>")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.full(1024, -1.0, dtype=cp.float32)
    kernel.launch((4,), 256, (x, y, 1000, 2.0, 0.5, 3, 0.25))
    want = 2.0 * np.arange(1000, dtype=np.float32) + 0.5 + 3 + 0.25
    np.testing.assert_array_equal(cp.asnumpy(y[:1000]), want)
    assert (cp.asnumpy(y[1000:]) == -1).all()  # the guard held


TEMPLATE = '''namespace ops {
template <typename T, int TILE>
__global__ void scale(const T* x, T* y, int n, T a) {
  int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
}
'''


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_a_template_instance_in_a_namespace_launches_with_its_own_parameter_types(dtype):
    cp = pytest.importorskip("cupy")
    ctype = {"float32": "float", "float64": "double", "int32": "int"}[dtype]
    kernel = CppKernel(TEMPLATE, "<c>", f"ops::scale<{ctype}, 128>")
    x, y = cp.arange(1000).astype(dtype), cp.zeros(1000, dtype)
    kernel.launch((8,), 128, (x, y, 1000, 3))
    np.testing.assert_array_equal(cp.asnumpy(y), 3 * np.arange(1000).astype(dtype))


@pytest.mark.gpu
def test_bench_of_a_cpp_cell_records_the_timing_for_the_inspector():
    cp = pytest.importorskip("cupy")
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tileworkbench")
    ip.user_ns.update(x=cp.ones(1 << 20, cp.float32), y=cp.zeros(1 << 20, cp.float32), n=1 << 20)
    with capture_output() as out:
        ip.run_cell_magic("tilekernel", '--lang cpp --grid "(n // 256,)" --block 256 '
                                        '--args "x, y, n, 2.0, 0.0, 0, 0.0" --bench', SOURCE)
    assert "median" in out.stdout and "resident blocks per SM" in out.stdout
    (record,) = [o.data[KERNEL_MIME] for o in out.outputs if KERNEL_MIME in o.data]
    assert record["timing"]["median_ms"] > 0 and record["timing"]["grid"] == [4096, 1, 1]
    assert record["gpu"] and record["specializations"][0]["threads"] == 256
    assert float(ip.user_ns["y"][12345]) == 2.0
    ip.user_ns.clear()
