"""The launch path on a GPU: loading and launching through libcuda (no CuPy needed for PyTorch
tensors), streams, scalars packed to their bits, and the driver's refusals."""
import os
import subprocess
import sys
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import vector_add
from tileworkbench.runtime.launch import LaunchError

REPO = Path(__file__).parents[2]

_TORCH_ONLY = """
import sys, torch
import tileworkbench.tile as ct
from tileworkbench.kernels import vector_add
a = torch.arange(4096, device="cuda", dtype=torch.float32); b = 2 * a; c = torch.empty_like(a)
ct.launch(torch.cuda.current_stream(), (4,), vector_add, (a, b, c, 1024))
torch.cuda.synchronize()
assert torch.equal(c, 3 * a), c
print("cupy" in sys.modules, "tileworkbench.interp" in sys.modules)
"""


@pytest.mark.gpu
@pytest.mark.parametrize("cache", ["cold", "warm"])
def test_a_torch_program_launches_without_importing_cupy_or_the_interpreter(tmp_path, cache):
    pytest.importorskip("torch")
    environment = {**os.environ, "PYTHONPATH": str(REPO), "TILEWORKBENCH_CACHE_DIR": str(tmp_path)}
    runs = 2 if cache == "warm" else 1
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _TORCH_ONLY], env=environment, capture_output=True,
                              text=True, cwd=REPO)
        assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.gpu
def test_launches_on_a_side_stream_and_on_raw_handles():
    torch = pytest.importorskip("torch")
    a = torch.arange(2048, device="cuda", dtype=torch.float32)
    side = torch.cuda.Stream()
    for stream in (side, side.cuda_stream, torch.cuda.current_stream(), 0):
        c = torch.zeros_like(a)
        torch.cuda.synchronize()
        ct.launch(stream, (2,), vector_add, (a, a, c, 1024))
        torch.cuda.synchronize()
        assert torch.equal(c, 2 * a)


@ct.kernel
def _fill(x, h, b, f, n, TILE: ct.Constant[int]):
    i = ct.bid(0)
    value = ct.astype(h, ct.float32) + ct.astype(b, ct.float32) + f + ct.astype(n, ct.float32)
    ct.store(x, (i,), ct.full((TILE,), value, ct.float32))


@pytest.mark.gpu
def test_16_bit_float_scalars_arrive_as_the_host_rounded_them():
    cupy = pytest.importorskip("cupy")
    x = cupy.zeros(256, cupy.float32)
    h, b = np.float16(1.0009765625), ml_dtypes.bfloat16(3.0078125)
    for f, n in ((0.5, 7), (-2.25, -3)):
        ct.launch(0, (2,), _fill, (x, h, b, f, n, 128))
        expected = np.float32(h) + np.float32(b) + np.float32(f) + np.float32(n)
        np.testing.assert_array_equal(x.get(), np.full(256, expected, np.float32))


@ct.kernel
def _fill_fp8(x, e4, e5, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.full((TILE,), ct.astype(e4, ct.float32) + ct.astype(e5, ct.float32), ct.float32))


@pytest.mark.gpu
def test_fp8_scalars_arrive_as_their_bits():
    cupy = pytest.importorskip("cupy")
    x = cupy.zeros(256, cupy.float32)
    for e4, e5 in ((ml_dtypes.float8_e4m3fn(-3.5), ml_dtypes.float8_e5m2(0.0078125)),
                   (ml_dtypes.float8_e4m3fn(448), ml_dtypes.float8_e5m2(-57344))):
        ct.launch(0, (2,), _fill_fp8, (x, e4, e5, 128))
        np.testing.assert_array_equal(x.get(), np.full(256, np.float32(e4) + np.float32(e5), np.float32))


@pytest.mark.gpu
def test_a_grid_the_driver_refuses_raises_a_launch_error_naming_it():
    cupy = pytest.importorskip("cupy")
    a = cupy.zeros(1024, cupy.float32)
    with pytest.raises(LaunchError, match=r"CUDA_ERROR_INVALID_VALUE(.|\n)*grid \(1, 70000, 1\)"):
        ct.launch(0, (1, 70000), vector_add, (a, a, a, 1024))


@pytest.mark.gpu
def test_a_thread_that_never_used_cuda_launches_a_kernel_launched_before():
    import threading
    cupy = pytest.importorskip("cupy")
    a = cupy.arange(2048, dtype=cupy.float32)
    c = cupy.zeros_like(a)
    ct.launch(0, (2,), vector_add, (a, a, c, 1024))  # the kernel's launcher, made on this thread
    c[:] = 0
    cupy.cuda.Device().synchronize()
    errors = []

    def launch():
        try:
            ct.launch(0, (2,), vector_add, (a, a, c, 1024))
        except Exception as e:  # reported on the test's thread
            errors.append(e)
    thread = threading.Thread(target=launch)
    thread.start()
    thread.join()
    assert errors == []
    cupy.cuda.Device().synchronize()
    np.testing.assert_array_equal(c.get(), 2 * a.get())


@ct.kernel
def _copy_tiles(x, y, TILE: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (TILE, TILE)))


@pytest.mark.gpu
def test_one_launcher_reads_each_tensors_shape_and_strides_anew():
    torch = pytest.importorskip("torch")
    stream = torch.cuda.current_stream()
    for rows, cols, transposed in ((64, 32, False), (32, 96, True), (128, 64, True), (16, 16, False)):
        base = torch.randn(cols, rows, device="cuda") if transposed else torch.randn(rows, cols, device="cuda")
        x = base.t() if transposed else base  # a transposed view: strides (1, rows)
        y = torch.zeros(rows, cols, device="cuda")
        ct.launch(stream, (rows // 16, cols // 16), _copy_tiles, (x, y, 16))
        torch.cuda.synchronize()
        assert torch.equal(y, x), (rows, cols, transposed)
    assert len(_copy_tiles.launchers) == 1


@pytest.mark.gpu
@pytest.mark.parametrize("f", [float.fromhex("0x1.fffffefffffffp+127"), float.fromhex("0x1.ffffffp+127"), 1e-46,
                               1.0 + 2.0**-24, np.float32(0.1), -0.0])
def test_float_scalars_arrive_as_numpy_rounds_them_to_float32(f):
    cupy = pytest.importorskip("cupy")
    x = cupy.zeros(256, cupy.float32)
    h, b = np.float16(0), ml_dtypes.bfloat16(0)
    with np.errstate(over="ignore"):
        expected = np.float32(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow warning, where it rounds to inf
        ct.launch(0, (2,), _fill, (x, h, b, f, 0, 128))
    np.testing.assert_array_equal(x.get(), np.full(256, expected, np.float32))


@pytest.mark.gpu
def test_threads_launching_one_kernel_at_once_each_launch_their_own_arguments():
    import threading
    torch = pytest.importorskip("torch")
    inputs = [torch.full((4096,), float(k), device="cuda") for k in range(8)]
    outputs = [torch.zeros(4096, device="cuda") for _ in range(8)]
    ct.launch(0, (4,), vector_add, (inputs[0], inputs[0], outputs[0], 1024))
    errors = []

    def launch_many(k):
        try:
            for _ in range(300):
                ct.launch(0, (4,), vector_add, (inputs[k], inputs[k], outputs[k], 1024))
        except Exception as e:  # reported on the test's thread
            errors.append(e)
    threads = [threading.Thread(target=launch_many, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    torch.cuda.synchronize()
    assert errors == []
    assert all(torch.equal(out, 2 * inp) for inp, out in zip(inputs, outputs))


def _copy_tiles_body(x, y, TILE: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (TILE, TILE)))


_VIEWS = {  # of a 64 x 96 tensor `base`
    "an offset window": lambda base: base[3:19, 5:69],
    "one column": lambda base: base[:, 7:8],
    "one row": lambda base: base[7:8, :],
    "one row of a transposed view": lambda base: base.t()[:1],
    "every second row, every third column": lambda base: base[::2, ::3],
    "a row broadcast (stride 0)": lambda base: base[0].expand(64, 96),
    "an empty slice": lambda base: base[:0],
}


@pytest.mark.gpu
@pytest.mark.parametrize("view", _VIEWS)
def test_the_c_and_python_launch_paths_read_views_alike(view, monkeypatch):
    torch = pytest.importorskip("torch")
    from tileworkbench.runtime import native_launch
    native_launch.module()  # built now, not in the background while the C path's launcher is made
    stream = torch.cuda.current_stream()
    x = _VIEWS[view](torch.randn(64, 96, device="cuda"))
    grid = (max(1, -(-x.shape[0] // 16)), max(1, -(-x.shape[1] // 16)))
    results = {}
    for path in ("C", "Python"):
        monkeypatch.setenv(native_launch.ENV, "1" if path == "C" else "0")
        kernel, y = ct.kernel(_copy_tiles_body), torch.full(x.shape, float("nan"), device="cuda")
        ct.launch(stream, grid, kernel, (x, y, 16))  # the launcher is made here
        y.fill_(float("nan"))
        ct.launch(stream, grid, kernel, (x, y, 16))  # and used here
        torch.cuda.synchronize()
        assert (kernel.last_launcher.native is not None) == (path == "C" and native_launch.module() is not None)
        results[path] = y
    assert torch.equal(results["C"], x) and torch.equal(results["Python"], x)
