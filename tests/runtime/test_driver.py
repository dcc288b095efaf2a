"""The driver layer and what a launch imports, without a GPU: libcuda is a stand-in that records
its calls (benchmarks/launch_overhead.py's, which the benchmark's no-GPU mode uses too)."""
import os
import struct
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import tileworkbench.tile as ct
from benchmarks.launch_overhead import StandInDriver
from tileworkbench.runtime import driver
from tileworkbench.runtime.launch import Launcher, LaunchError

REPO = Path(__file__).parents[2]


@pytest.fixture
def libcuda(monkeypatch):
    stand_in = StandInDriver()
    monkeypatch.setattr(driver, "library", lambda: stand_in)
    device_count = driver.device_count
    device_count.cache_clear()
    yield stand_in
    device_count.cache_clear()  # the stand-in's answer is not the machine's


def _names(stand_in) -> list[str]:
    return [name for name, _ in stand_in.calls]


def test_a_thread_without_a_context_gets_device_0s_primary_context(libcuda):
    current = []

    def ctx_get_device(device):
        if not current:
            return driver.CUDA_ERROR_INVALID_CONTEXT
        device._obj.value = 0
        return 0
    libcuda.cuCtxGetDevice = ctx_get_device
    libcuda.cuCtxSetCurrent = lambda context: current.append(context) or 0
    assert driver.current_device() == 0
    assert _names(libcuda) == ["cuInit", "cuDevicePrimaryCtxRetain"] and len(current) == 1


def test_the_arch_is_read_from_the_compute_capability(libcuda):
    assert driver.device_arch() == "sm_90"


@pytest.mark.parametrize("smem, opts_in", [(48 * 1024, False), (48 * 1024 + 16, True)])
def test_only_kernels_above_48_kb_of_dynamic_shared_memory_opt_in(libcuda, smem, opts_in):
    function = driver.load_function(b"\x7fELF", "k", smem)
    assert function.ptr == 0x2000
    attributes = [args for name, args in libcuda.calls if name == "cuFuncSetAttribute"]
    assert [(f.value, a, v) for f, a, v in attributes] == ([(0x2000, 8, smem)] if opts_in else [])


def test_a_failed_driver_call_names_the_error(libcuda):
    libcuda.cuModuleLoadData = lambda module, image: 1
    with pytest.raises(driver.CudaDriverError, match="CUDA_ERROR_INVALID_VALUE: cuModuleLoadData failed"):
        driver.load_function(b"", "k")


@ct.kernel
def _store_one(x):
    ct.store(x, (0,), ct.full((16,), 1.0, x.dtype))


class _DeviceArray:
    """A device array known only by __cuda_array_interface__."""

    def __init__(self, n, ptr=0x5000):
        self.shape, self.dtype, self.ndim = (n,), np.dtype(np.float32), 1
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr, False), "version": 3}


def _launcher(libcuda, args):
    fn = _store_one.specialize(args)
    gpu = types.SimpleNamespace(compiled=types.SimpleNamespace(threads=64, dynamic_shared_bytes=0, name="k",
                                                               tensor_maps=(), registers=16),
                                function=types.SimpleNamespace(ptr=0x2000))
    return Launcher(fn, gpu, args, device=0)


def _configuration(config) -> tuple:
    """(grid x, y, z, block x, y, z, shared bytes, stream) of the CUlaunchConfig a launch passed."""
    return struct.unpack_from("=7I4xQ", config)


def test_the_launch_configuration_reaches_the_driver_with_the_stream_as_given(libcuda):
    launches = []
    libcuda.cuLaunchKernelEx = lambda config, *call: launches.append((_configuration(config), *call)) or 0
    x = _DeviceArray(16)
    launcher = _launcher(libcuda, (x,))
    launcher(0, (2, 1, 1), (x,))
    launcher(0x99, (2, 3, 1), (x,))
    assert [call[0] for call in launches] == [(2, 1, 1, 64, 1, 1, 0, 0), (2, 3, 1, 64, 1, 1, 0, 0x99)]
    assert [(function.value, extra) for _, function, _, extra in launches] == [(0x2000, None)] * 2


def test_with_one_device_a_thread_without_a_context_gets_one_and_launches(libcuda):
    results, contexts = [driver.CUDA_ERROR_INVALID_CONTEXT, 0], []
    libcuda.cuLaunchKernelEx = lambda *call: results.pop(0)
    libcuda.cuCtxGetDevice = lambda device: contexts.append(device) or 0
    x = _DeviceArray(16)
    launcher = _launcher(libcuda, (x,))
    assert "get_device() == device" not in launcher.source  # one device: no driver call to ask
    assert launcher.relaunch(0, (1, 1, 1), (x,))
    assert results == [] and len(contexts) == 1


def test_with_several_devices_a_launcher_takes_only_its_own(libcuda, monkeypatch):
    monkeypatch.setattr(driver, "device_count", lambda: 2)
    launches, current = [], [0]
    libcuda.cuLaunchKernelEx = lambda *call: launches.append(call) or 0
    monkeypatch.setattr(driver, "current_device", lambda: current[0])
    x = _DeviceArray(16)
    launcher = _launcher(libcuda, (x,))
    current[0] = 1
    assert not launcher.relaunch(0, (1, 1, 1), (x,)) and not launches
    current[0] = 0
    assert launcher.relaunch(0, (1, 1, 1), (x,)) and len(launches) == 1


def test_a_launch_the_driver_refuses_names_the_error_and_the_configuration(libcuda):
    libcuda.cuLaunchKernelEx = lambda *call: 1
    x = _DeviceArray(16)
    with pytest.raises(LaunchError, match=r"CUDA_ERROR_INVALID_VALUE(.|\n)*grid \(3, 1, 1\), 64 threads"):
        _launcher(libcuda, (x,))(0, (3, 1, 1), (x,))


def _python(code: str, **env) -> str:
    environment = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          check=True, cwd=REPO).stdout


# What a GPU launch does not need: array frameworks, the notebook stack, the interpreter, and (for
# arrays of NumPy's own dtypes) ml_dtypes.
_NOT_FOR_LAUNCHING = ("cupy", "torch", "ml_dtypes", "IPython", "ipywidgets", "anywidget", "matplotlib", "tqdm",
                      "tileworkbench.interp", "tileworkbench.widgets", "tileworkbench.profile", "tileworkbench.magic",
                      "tileworkbench.tile.tune")


def _loaded(modules: str, prefixes) -> list[str]:
    return [m for m in modules.split() if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_importing_the_language_and_defining_a_kernel_loads_no_gpu_interpreter_or_notebook_library():
    modules = _python("import sys\nimport tileworkbench.tile as ct\n"
                      "@ct.kernel\ndef k(x, T: ct.Constant[int]):\n    ct.store(x, (0,), ct.zeros((T,), x.dtype))\n"
                      "print(' '.join(sys.modules))")
    assert _loaded(modules, _NOT_FOR_LAUNCHING + ("tileworkbench.runtime", "tileworkbench.codegen", "cuda")) == []


_LAUNCH_FROM_THE_CACHE = """
import sys
from benchmarks.launch_overhead import install_stand_in_libcuda
libcuda = install_stand_in_libcuda()
import tileworkbench.tile as ct
from tests.runtime.test_driver import _DeviceArray, _store_one
ct.launch(0, (1,), _store_one, (_DeviceArray(16),))
modules = [name for name, _ in libcuda.calls if name.startswith("cuModule")]
assert modules == ["cuModuleLoadData", "cuModuleGetFunction"], libcuda.calls
print(" ".join(sys.modules))
"""


def test_a_launch_from_the_disk_cache_loads_neither_nvrtc_nor_the_interpreter_nor_an_array_framework(tmp_path):
    from tileworkbench.runtime.nvrtc import unavailable_reason
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    cold = _python(_LAUNCH_FROM_THE_CACHE, TILEWORKBENCH_CACHE_DIR=str(tmp_path))
    warm = _python(_LAUNCH_FROM_THE_CACHE, TILEWORKBENCH_CACHE_DIR=str(tmp_path))
    assert "cuda.bindings.nvrtc" in cold.split()  # the first process compiled
    assert _loaded(warm, _NOT_FOR_LAUNCHING + ("cuda",)) == []



def test_without_a_driver_a_device_launch_says_there_is_no_gpu_and_how_to_use_the_interpreter(monkeypatch):
    def no_driver():
        raise OSError("libcuda.so.1: cannot open shared object file")
    monkeypatch.setattr(driver, "library", no_driver)
    driver.device_count.cache_clear()
    monkeypatch.setattr(_store_one, "last_launcher", None)
    with pytest.raises(RuntimeError, match="No CUDA GPU is available .*libcuda.*pass NumPy arrays"):
        ct.launch(0, (1,), _store_one, (_DeviceArray(16),))
