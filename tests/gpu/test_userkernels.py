"""User-defined kernels on the GPU: the same call with CuPy arrays returns what CuPy's own
ElementwiseKernel/ReductionKernel returns (bit-exact where the case says so), and what the
interpreter returns with NumPy arrays."""
import numpy as np
import pytest

import tileworkbench
from tileworkbench.profile.check import tolerance, widened

from .userkernel_cases import CASES


def _compare(got, want, exact, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if exact or want.dtype.kind in "biu":
        # bit patterns (a 0-d result viewed as a 1-element array)
        np.testing.assert_array_equal(np.atleast_1d(got).view(np.uint8), np.atleast_1d(want).view(np.uint8),
                                      err_msg=what)
    else:
        tol = tolerance(want.dtype)
        np.testing.assert_allclose(widened(got), widened(want), rtol=tol, atol=tol, err_msg=what)


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_user_kernel_matches_cupys_own_kernel(case):
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    args = case.args()
    on_device = tuple(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    ours = _outputs(case.define(tileworkbench)(*on_device, **case.kwargs))
    theirs = _outputs(case.define(cp)(*on_device, **case.kwargs))
    for k, (got, want) in enumerate(zip(ours, theirs)):
        assert isinstance(got, cp.ndarray)
        _compare(cp.asnumpy(got), cp.asnumpy(want), case.exact, f"{case.id} output #{k} against CuPy")


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_user_kernel_on_the_gpu_matches_the_interpreter(case):
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    args = case.args()
    kernel = case.define(tileworkbench)
    on_cpu = _outputs(kernel(*args, **case.kwargs))
    on_gpu = _outputs(kernel(*(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args), **case.kwargs))
    for k, (got, want) in enumerate(zip(on_gpu, on_cpu)):
        _compare(cp.asnumpy(got), want, case.exact, f"{case.id} output #{k} against the interpreter")


@pytest.mark.gpu
def test_a_timed_sweep_makes_its_fastest_tile_the_default():
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    add = tileworkbench.ElementwiseKernel("T x, T y", "T z", "z = x + y", "vector_add")
    x = cp.arange(1 << 20, dtype=cp.float32)
    result = add.sweep(x, x, space={"TILE": [256, 2048]})
    assert result.timed and all(r.ok for r in result.rows), [r.reason for r in result.rows]
    assert add.launch_plan(x, x).config == result.best().config
    cp.testing.assert_array_equal(add(x, x), x + x)


@pytest.mark.gpu
def test_repeat_calls_on_the_gpu_follow_each_calls_layout_and_scalars():
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    axpy = tileworkbench.ElementwiseKernel("T x, T y, T a", "T z", "z = a * x + y", "axpy_gpu_repeat")
    total = tileworkbench.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total_gpu_repeat")
    x = cp.arange(4096, dtype=cp.float32)
    y = cp.ones(4096, cp.float32)
    for a in (2.0, 3.0, 2.0):
        for xs, ys in ((x, y), (x[::2], y[::2]), (x.reshape(64, 64).T, y.reshape(64, 64)), (x, y)):
            np.testing.assert_array_equal(cp.asnumpy(axpy(xs, ys, a)), cp.asnumpy(a * xs + ys))
    m = x.reshape(64, 64)
    for axis in (None, 0, 1, None):
        np.testing.assert_allclose(cp.asnumpy(total(m, axis=axis)), cp.asnumpy(m.sum(axis=axis)), rtol=1e-5)


@pytest.mark.gpu
def test_a_repeat_call_launches_on_the_stream_current_at_that_call():
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    add = tileworkbench.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add_current_stream")
    x, out = cp.arange(4096, dtype=cp.float32), cp.zeros(4096, cp.float32)
    add(x, x, out)   # planned, compiled and launched on the default stream
    out.fill(0)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:   # captured into a graph only if launched on `stream`, CuPy's current one here
        stream.begin_capture()
        add(x, x, out)
        graph = stream.end_capture()
    stream.synchronize()
    assert not out.any()
    graph.launch(stream)
    stream.synchronize()
    cp.testing.assert_array_equal(out, x + x)
