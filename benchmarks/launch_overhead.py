"""Host cost of a launch: back-to-back launches of an empty kernel, and the first launch of a new process.

    python3 benchmarks/launch_overhead.py                 # on a GPU: tileworkbench, CuPy RawKernel, cuTile
    python3 benchmarks/launch_overhead.py --mock-driver   # anywhere: the Python side alone

Back to back: microseconds per launch of an empty kernel (one array argument; also one with an array
and float16/bfloat16/float32/int scalars), best of 5 rounds of --launches launches, the stream
synchronized once per round (with --mock-driver timed on the thread's CPU clock). On a GPU
tileworkbench runs with PyTorch tensors and with CuPy arrays, beside CuPy's RawKernel and, where
`cuda.tile` imports, cuTile, on the same tensor. Two more rows
split tileworkbench's time: the launcher with the driver call replaced by a Python no-op (its Python
side on this machine, real tensors included), and the launcher's cuLaunchKernelEx alone through
ctypes with the buffer as the last launch packed it (the floor of any ctypes launch); a last row
makes the same launch by cuLaunchKernel, to tell whether the older entry point costs libcuda less.

First launch: a new process (PyTorch imported and a tensor made before the clock, as a user's program
has them) times `import tileworkbench.tile` and `tileworkbench.kernels`, then the first launch of
vector_add up to a synchronize. Each sample runs it three times on a fresh kernel cache and a fresh
bytecode cache (PYTHONPYCACHEPREFIX): cold (NVRTC compiles, Python compiles the package's source),
warm (both read from disk: an installed package's state on its second run), and warm kernel cache
without bytecode (PYTHONDONTWRITEBYTECODE, as in an environment that never writes .pyc files, where
every import compiles the source). Medians of --samples.

With --mock-driver nothing touches a GPU: stand-in `cupy` and `torch` modules answer the runtime's
device questions, load nothing and launch nothing (the driver calls are no-ops), and arrays are
stand-ins with the attributes the launch path reads. What remains is the Python the launch path runs
(argument checks, specialization lookup, packing; on the first launch parse, lowering, code
generation, the cache lookup), which is what this mode measures. NVRTC compiles for real (sm_90) when
the cache is cold.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


# ---- stand-ins for the GPU libraries (--mock-driver) -----------------------------------------------

class _Memory:
    def __init__(self, ptr):
        self.ptr = ptr


class StandInCupyArray:
    """What the launch path reads of a CuPy array."""

    def __init__(self, shape, dtype=np.float32, ptr=0x7000_0000):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.ndim, self.itemsize, self.data = len(shape), self.dtype.itemsize, _Memory(ptr)
        self.strides = tuple(int(s) for s in np.empty(shape, self.dtype).strides)
        self.size = int(np.prod(shape))

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False), "version": 3}


class StandInDeviceArray(StandInCupyArray):
    """An array of no known framework: the launch path reads its __cuda_array_interface__."""


class _StandInTorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class StandInTorchTensor:
    """What the launch path reads of a PyTorch CUDA tensor."""

    def __init__(self, shape, dtype="float32", ptr=0x7100_0000):
        self.shape, self.dtype, self.ndim, self.is_cuda, self._ptr = tuple(shape), _STANDIN_DTYPES[dtype], \
            len(shape), True, ptr
        self._strides = tuple(int(s) // 4 for s in np.empty(shape, np.float32).strides)

    def data_ptr(self):
        return self._ptr

    def stride(self, d=None):
        return self._strides if d is None else self._strides[d]


class StandInStream:
    cuda_stream = 0


_STANDIN_DTYPES = {name: _StandInTorchDtype(name) for name in ("float32", "float16", "bfloat16")}
_StandInTorchDtype.__module__ = StandInTorchTensor.__module__ = "torch"


class StandInDriver:
    """libcuda as the runtime calls it, answering without a GPU: one device (0, sm_90), a current
    context, modules that load and launches that succeed, each call recorded in `calls`."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, args))
            return 0
        return call

    def cuCtxGetDevice(self, device):
        device._obj.value = 0
        return 0

    def cuDeviceGetCount(self, count):
        count._obj.value = 1
        return 0

    def cuDeviceGetAttribute(self, value, attribute, device):
        value._obj.value = {75: 9, 76: 0}[attribute]  # compute capability major, minor
        return 0

    def cuModuleLoadData(self, module, image):
        self.calls.append(("cuModuleLoadData", (module, image)))
        module._obj.value = 0x1000
        return 0

    def cuModuleGetFunction(self, function, module, name):
        self.calls.append(("cuModuleGetFunction", (function, module, name)))
        function._obj.value = 0x2000
        return 0

    def cuLaunchKernelEx(self, config, function, params, extra):  # the hot call: not recorded
        return 0

    def cuGetErrorName(self, status, name):
        name._obj.value = {1: b"CUDA_ERROR_INVALID_VALUE", 201: b"CUDA_ERROR_INVALID_CONTEXT"}[status]
        return 0


def install_stand_in_libcuda() -> StandInDriver:
    """Make ctypes load a StandInDriver for libcuda (nothing of tileworkbench is imported here)."""
    import ctypes
    stand_in, load = StandInDriver(), ctypes.CDLL
    ctypes.CDLL = lambda name, *args, **kwargs: stand_in if name in ("libcuda.so.1", "nvcuda.dll") else \
        load(name, *args, **kwargs)
    return stand_in


def install_stand_in_driver() -> StandInDriver:
    """The stand-in libcuda, and stand-in `cupy` and `torch` modules, whose array classes the launch
    path recognises."""
    sys.modules["cupy"] = types.SimpleNamespace(ndarray=StandInCupyArray)
    sys.modules["torch"] = types.SimpleNamespace(Tensor=StandInTorchTensor, **_STANDIN_DTYPES)
    return install_stand_in_libcuda()


# ---- back to back -----------------------------------------------------------------------------------

def per_launch_us(launch, synchronize, launches: int, rounds: int = 5, clock=time.perf_counter) -> float:
    """Best of `rounds`, in microseconds per launch, on `clock` (the wall clock for a GPU, whose work
    runs beside the host's; a stand-in driver's launches are all host work, so the thread's CPU clock
    there, which other processes on a shared machine do not move)."""
    launch()
    synchronize()
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        for _ in range(launches):
            launch()
        synchronize()
        best = min(best, (clock() - start) / launches * 1e6)
    return best


def tileworkbench_cases(mock: bool):
    """(name, launch, synchronize) for tileworkbench's empty kernels on PyTorch and CuPy arrays."""
    import tileworkbench.tile as ct

    @ct.kernel
    def empty(x):
        pass

    @ct.kernel
    def empty_scalars(x, h, b, f, n):
        pass

    if mock:
        torch_x, cupy_x, stream = StandInTorchTensor((128,)), StandInCupyArray((128,)), StandInStream()

        def sync():
            pass
    else:
        import cupy
        import torch
        torch_x, stream, sync = torch.zeros(128, device="cuda"), torch.cuda.current_stream(), torch.cuda.synchronize
        cupy_x = cupy.asarray(torch_x)
    from tileworkbench.runtime import native_launch
    native_launch.module()  # launches measured once the C launcher is built (a machine's first builds it)
    import ml_dtypes  # here, not at the top: the first-launch probe imports this module and times the rest
    scalars = (torch_x, np.float16(1.5), ml_dtypes.bfloat16(1.5), 2.5, 7)
    ct.launch(stream, (1,), empty, (torch_x,))
    launcher = empty.last_launcher  # the PyTorch tensor's
    if not mock:  # the driver-alone rows launch the Python path's buffer: packed by one launch through it
        launcher.matches.__globals__["relaunch"](stream, (1,), (torch_x,))
    yield "tileworkbench, 1 PyTorch tensor", lambda: ct.launch(stream, (1,), empty, (torch_x,)), sync
    yield "tileworkbench, 1 CuPy array", lambda: ct.launch(stream, (1,), empty, (cupy_x,)), sync
    yield ("tileworkbench, tensor + f16, bf16, f32, int scalars",
           lambda: ct.launch(stream, (1,), empty_scalars, scalars), sync)
    if not mock:  # with the stand-in driver the first row is the Python side already
        yield "  the same by the Python path alone (no C launcher)", python_path(empty, stream, torch_x), sync
        yield "  of which Python: 1 PyTorch tensor, driver call a no-op", *python_side(empty, stream, torch_x, sync)
        yield "  of which the driver: cuLaunchKernelEx via ctypes, prepacked", *driver_alone(launcher), sync
        yield "  the same launch by cuLaunchKernel via ctypes", *classic_driver_alone(launcher), sync


def python_path(kernel, stream, x):
    """ct.launch of `kernel` by a launcher made with the C launcher turned off."""
    import tileworkbench.tile as ct
    from tileworkbench.runtime import native_launch
    twin = ct.kernel(kernel.__wrapped__)
    os.environ[native_launch.ENV] = "0"
    try:
        ct.launch(stream, (1,), twin, (x,))
    finally:
        del os.environ[native_launch.ENV]
    return lambda: ct.launch(stream, (1,), twin, (x,))


def python_side(kernel, stream, x, sync):
    """ct.launch of `kernel` by a launcher whose driver call is a Python no-op."""
    import tileworkbench.tile as ct
    from tileworkbench.runtime import driver, launch
    real = driver.launch_kernel_function
    driver.launch_kernel_function = lambda: lambda config, function, params, extra: 0
    try:
        fn = kernel.specialize((x,))
        no_op = launch.Launcher(fn, launch.load(fn), (x,), 0)
    finally:
        driver.launch_kernel_function = real
    twin = ct.kernel(kernel.__wrapped__)  # its own last launcher: the real one stays with `kernel`
    twin.last_launcher = no_op
    return (lambda: ct.launch(stream, (1,), twin, (x,))), sync


def driver_alone(launcher):
    """The launcher's own cuLaunchKernelEx call with its buffer as the last launch left it."""
    import ctypes

    from tileworkbench.runtime import driver
    call, function = driver.launch_kernel_function(), ctypes.c_void_p(launcher.function)
    buffer, params = launcher.buffer, launcher.params
    driver.check(call(buffer, function, params, None), "cuLaunchKernelEx")  # a launch the driver takes
    return (lambda: call(buffer, function, params, None),)


def classic_driver_alone(launcher):
    """The launcher's last launch (function, configuration, parameters) made by cuLaunchKernel, the
    entry point without launch attributes and with eleven arguments: whether libcuda spends less
    in it than in cuLaunchKernelEx (ctypes spends about 0.13 us more on its arguments:
    benchmarks/probe/ctypes_launch_call.py)."""
    import ctypes

    from tileworkbench.runtime import driver
    call = driver.library().cuLaunchKernel
    gx, gy, gz, bx, by, bz, shared, stream = launcher.struct.unpack_from(launcher.buffer)[:8]
    function, stream, params = ctypes.c_void_p(launcher.function), ctypes.c_void_p(stream), launcher.params
    driver.check(call(function, gx, gy, gz, bx, by, bz, shared, stream, params, None), "cuLaunchKernel")
    return (lambda: call(function, gx, gy, gz, bx, by, bz, shared, stream, params, None),)


def peer_cases():
    """CuPy's RawKernel and cuTile launching their own empty kernels on the same tensor."""
    import cupy
    import torch
    x = torch.zeros(128, device="cuda")
    kernel, cx = cupy.RawKernel('extern "C" __global__ void empty(float* x) {}', "empty"), cupy.asarray(x)
    yield "CuPy RawKernel, 1 CuPy array", lambda: kernel((1,), (32,), (cx,)), torch.cuda.synchronize
    try:
        import cuda.tile as cutile
    except ImportError:
        return

    @cutile.kernel
    def empty(a):
        pass
    stream = torch.cuda.current_stream()
    yield "cuTile, 1 PyTorch tensor", lambda: cutile.launch(stream, (1,), empty, (x,)), torch.cuda.synchronize


# ---- first launch of a new process --------------------------------------------------------------------

_FIRST_LAUNCH = """
import json, sys, time
sys.path.insert(0, {repo!r})
mock = {mock!r}
if mock:  # PyTorch imported, as a PyTorch program has it; the array is known by __cuda_array_interface__
    sys.path.insert(0, {benchmarks!r})
    import launch_overhead
    launch_overhead.install_stand_in_libcuda()
    try:
        import torch
    except ImportError:
        pass
    x, stream, sync = launch_overhead.StandInDeviceArray((1024,)), 0, lambda: None
else:
    import torch
    x = torch.zeros(1024, device="cuda"); stream = torch.cuda.current_stream(); sync = torch.cuda.synchronize
    sync()
start = time.perf_counter()
import tileworkbench.tile as ct
from tileworkbench.kernels import vector_add
imported = time.perf_counter()
ct.launch(stream, (1,), vector_add, (x, x, x, 1024))
sync()
done = time.perf_counter()
print(json.dumps({{"import_ms": (imported - start) * 1e3, "launch_ms": (done - imported) * 1e3,
                  "modules": sorted(sys.modules)}}))
"""


# The runs of one sample, in order on one kernel cache: (name, whether Python writes and reads bytecode)
WARM = "warm disk caches (kernel and bytecode)"   # the run the first-launch target is about
_FIRST_LAUNCH_RUNS = (("cold (kernel and bytecode caches empty)", True),
                      (WARM, True),
                      ("warm kernel cache, no bytecode", False))


def first_launch(samples: int, mock: bool) -> dict:
    """Median (import ms, first-launch ms) of a new process in each run of _FIRST_LAUNCH_RUNS."""
    script = _FIRST_LAUNCH.format(repo=REPO, mock=mock, benchmarks=os.path.dirname(os.path.abspath(__file__)))
    runs: dict = {name: [] for name, _ in _FIRST_LAUNCH_RUNS}
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    for _ in range(samples):
        with tempfile.TemporaryDirectory(prefix="launch_cache_") as cache, \
                tempfile.TemporaryDirectory(prefix="launch_pyc_") as bytecode, \
                tempfile.TemporaryDirectory(prefix="launch_no_pyc_") as no_bytecode:
            for name, written in _FIRST_LAUNCH_RUNS:
                env = dict(environment, TILEWORKBENCH_CACHE_DIR=cache,
                           PYTHONPYCACHEPREFIX=bytecode if written else no_bytecode)
                if not written:
                    env["PYTHONDONTWRITEBYTECODE"] = "1"
                done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                      check=True)
                runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    result = {}
    for name, state_runs in runs.items():
        for run in state_runs:
            run["total_ms"] = run["import_ms"] + run["launch_ms"]
        for field in ("import_ms", "launch_ms", "total_ms"):
            result[f"{name}: {field}"] = statistics.median(r[field] for r in state_runs)
    if not mock:  # which libraries a first launch imported (torch is the probe's own)
        warm = runs[WARM][-1]
        result["warm modules"] = sorted({m.split(".")[0] for m in warm["modules"]} & set(_WATCHED))
    return result


_WATCHED = ("cupy", "torch", "ml_dtypes", "IPython", "ipywidgets", "anywidget", "matplotlib", "cuda")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mock-driver", action="store_true", help="no GPU: stand-in driver, Python side only")
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=5,
                        help="new-process first launches (each: cold, warm, warm without bytecode)")
    args = parser.parse_args(argv)
    sys.path.insert(0, REPO)
    if args.mock_driver:
        install_stand_in_driver()
    print(f"back to back ({'stand-in driver: Python side only' if args.mock_driver else 'GPU'}), us per launch:")
    cases = list(tileworkbench_cases(args.mock_driver))
    if not args.mock_driver:
        cases += list(peer_cases())
    for name, launch, synchronize in cases:
        clock = time.thread_time if args.mock_driver else time.perf_counter
        print(f"  {name:60s} {per_launch_us(launch, synchronize, args.launches, clock=clock):7.2f}")
    print("first launch of a new process, ms (median):")
    for name, value in first_launch(args.samples, args.mock_driver).items():
        print(f"  {name:60s} {value if isinstance(value, list) else f'{value:7.1f}'}")


if __name__ == "__main__":
    main()
