"""GPU vs interpreter: the same launch on both must agree (bit-exact for data movement and
integers, within rounding for float arithmetic). Any difference is a codegen or runtime bug."""
import ml_dtypes
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.arguments import argument_leaves
from tileworkbench.tile import interpret

from tileworkbench.profile.check import tolerance, widened
from tileworkbench.runtime.device import to_device, to_host

from .cases import CASES

@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gpu_matches_interpreter(case):
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    args = case.args()
    host = [_arrays(a, np.copy) for a in args]
    interpret(case.kernel, case.grid, tuple(host))
    device = [_arrays(a, to_device) for a in args]
    stream = cp.cuda.get_current_stream()
    ct.launch(stream, case.grid, case.kernel, tuple(device))
    stream.synchronize()
    for k, (want, got) in enumerate(zip(argument_leaves(host), argument_leaves(device))):
        if not isinstance(want, np.ndarray):
            continue
        got = to_host(got)
        if case.exact or want.dtype.kind in "biu":
            # bit patterns, so NaN padding and -0.0 must match too (0-d arrays viewed as one element)
            np.testing.assert_array_equal(np.atleast_1d(got).view(np.uint8), np.atleast_1d(want).view(np.uint8),
                                          err_msg=f"argument #{k}")
        else:
            tol = tolerance(want.dtype)
            np.testing.assert_allclose(widened(got), widened(want), rtol=tol, atol=tol,
                                       err_msg=f"argument #{k}")


def _arrays(arg, f):
    """`f` of an array argument, of each array in a list or tuple argument; other arguments as they are."""
    if isinstance(arg, (list, tuple)):
        return type(arg)(_arrays(a, f) for a in arg)
    return f(arg) if isinstance(arg, np.ndarray) else arg


def test_matmul_interpreter_is_close_to_float64():
    case = next(c for c in CASES if c.id == "matmul-bfloat16")
    A, B, C, *tiles = case.args()
    interpret(case.kernel, case.grid, (A, B, C, *tiles))
    reference = A.astype(np.float64) @ B.astype(np.float64)
    assert np.linalg.norm(C.astype(np.float64) - reference) / np.linalg.norm(reference) < 1e-2


MASKED_ROWS = [c for c in CASES if c.id.startswith("masked-row-softmax-")]


@pytest.mark.gpu
@pytest.mark.parametrize("case", MASKED_ROWS, ids=[c.id for c in MASKED_ROWS])
def test_masked_rows_of_odd_lengths_give_numpys_softmax(case):
    """Rows of 3965 and 16001 elements (most off a 16-byte boundary, the last chunk cut by the row's
    end) against NumPy's float64 softmax of the same rows: every element written, none past the row."""
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    x, y, *rest = case.args()
    device = (to_device(x), to_device(np.full_like(y, np.nan)), *rest)
    ct.launch(cp.cuda.get_current_stream(), case.grid, case.kernel, device)
    cp.cuda.get_current_stream().synchronize()
    e = np.exp(widened(x) - widened(x).max(axis=1, keepdims=True))
    tol = tolerance(y.dtype)  # (absolute only below the dtype's normal numbers: float16's are 6e-5)
    np.testing.assert_allclose(widened(to_host(device[1])), e / e.sum(axis=1, keepdims=True), rtol=tol,
                               atol=tol * float(ml_dtypes.finfo(y.dtype).smallest_normal))


MMA_SYNC_CASES = [c for c in CASES if (c.id.startswith("matmul-") and "tiles" in c.id) or c.id.startswith("attention-")]


@pytest.mark.gpu
@pytest.mark.parametrize("case", MMA_SYNC_CASES, ids=[c.id for c in MMA_SYNC_CASES])
def test_pipelined_mma_sync_path_matches_interpreter_on_any_gpu(case, monkeypatch):
    """The same kernels generated without an arch: the mma.sync consumer of the pipeline stages,
    which sm_80-sm_89 GPUs run (an sm_90 GPU would otherwise take wgmma)."""
    from tileworkbench.runtime import launch
    real_generate = launch.generate
    monkeypatch.setattr(launch, "generate", lambda fn, threads=None, arch=None, **options: real_generate(fn, threads=threads))
    monkeypatch.setattr(launch, "_loaded", {})
    monkeypatch.setattr(case.kernel, "launchers", {})  # and no launcher of the usual code outlives the test:
    monkeypatch.setattr(case.kernel, "last_launcher", None)  # ct.launch would try these first
    monkeypatch.setattr(case.kernel, "earlier_launchers", ())
    test_gpu_matches_interpreter(case)


@pytest.mark.gpu
@pytest.mark.parametrize("framework", ["cupy", "torch"])
def test_the_interpreter_switch_runs_device_arrays_on_the_host_and_copies_back(framework, monkeypatch):
    case = next(c for c in CASES if c.id == "array-slice-ragged")
    inputs = case.args()  # random: drawn once, for both runs
    expected = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in inputs)
    ct.launch(None, case.grid, case.kernel, expected)
    module = pytest.importorskip(framework)
    upload = module.asarray if framework == "cupy" else (lambda a: module.from_numpy(a).cuda())
    args = [upload(a) if isinstance(a, np.ndarray) else a for a in inputs]
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    ct.launch(None, case.grid, case.kernel, tuple(args))
    result = args[1].get() if framework == "cupy" else args[1].cpu().numpy()
    np.testing.assert_array_equal(result, expected[1])
