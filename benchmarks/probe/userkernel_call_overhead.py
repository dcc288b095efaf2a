"""Host cost of a repeat call of a user kernel (ElementwiseKernel, ReductionKernel), without a GPU.

    python benchmarks/probe/userkernel_call_overhead.py            # microseconds per call
    python benchmarks/probe/userkernel_call_overhead.py --profile  # and cProfile's top entries

Device arrays are stand-ins (NumPy arrays behind `__cuda_array_interface__`, with the attributes and
methods the call path uses), `cupy` is a stand-in module (empty, broadcast_to, the current stream),
allocations come from a pool (as CuPy's), and the GPU launcher of each argument profile is a no-op that accepts the arguments: what is timed
is the Python from the call to the launcher, i.e. what a call adds to ~10 µs of GPU work.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # this checkout's tileworkbench


class DeviceArray:
    """A device array stand-in: CuPy's attributes, over a NumPy array."""

    __slots__ = ("_a", "shape", "dtype", "strides", "ndim", "size", "itemsize", "flags")

    def __init__(self, a: np.ndarray):
        self._a = a
        self.shape, self.dtype, self.strides, self.ndim = a.shape, a.dtype, a.strides, a.ndim
        self.size, self.itemsize, self.flags = a.size, a.itemsize, a.flags

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._a.ctypes.data, False),
                "strides": self.strides, "version": 3}

    def reshape(self, *shape):
        return DeviceArray(self._a.reshape(*shape))

    def transpose(self, *axes):
        return DeviceArray(self._a.transpose(*axes))

    def __getitem__(self, index):
        return DeviceArray(self._a[index])

    def __setitem__(self, index, value):
        self._a[index] = value._a if isinstance(value, DeviceArray) else value


def install_stand_ins() -> None:
    """`cupy` and a no-op GPU launcher per argument profile."""
    cupy = types.ModuleType("cupy")
    pool = {}   # as CuPy's memory pool, an allocation of a size freed before costs next to nothing

    def empty(shape, dtype=float):
        key = (shape if isinstance(shape, tuple) else (shape,), np.dtype(dtype))
        if key not in pool:
            pool[key] = np.empty(*key)
        return DeviceArray(pool[key])
    cupy.empty = empty
    cupy.broadcast_to = lambda a, shape: DeviceArray(np.broadcast_to(a._a, shape))
    stream = object()
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: stream)
    sys.modules["cupy"] = cupy

    from tileworkbench.tile import _kernel

    class NoopLauncher:
        def __init__(self, nargs):
            self.nargs = nargs

        def relaunch(self, stream, grid, args):
            return type(args) is tuple and len(args) == self.nargs

        def __call__(self, stream, grid, args):
            self.relaunch(stream, grid, args)

    def launch_on_gpu(kernel, stream, grid, args):
        launcher = kernel.launchers.setdefault(kernel.profile_key(args), NoopLauncher(len(args)))
        kernel.use_launcher(launcher)

    _kernel._launch_on_gpu = launch_on_gpu


def cases():
    from tileworkbench.userkernels import ElementwiseKernel, ReductionKernel
    n = 1 << 22
    x, y, z = (DeviceArray(np.arange(n, dtype=np.float32)) for _ in range(3))
    row = DeviceArray(np.arange(1024, dtype=np.float32))
    m = DeviceArray(np.ones((4096, 1024), np.float32))
    add2 = ElementwiseKernel("T x", "T y", "y = x * 2", "double_it")
    squared_diff = ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")
    generic = ElementwiseKernel("T x, T y, T w", "T z", "z = x * w + y", "axpy")
    raw = ElementwiseKernel("raw T x, int32 n", "T y", "y = x[n - 1 - i]", "reverse")
    super_generic = ElementwiseKernel("X x, Y y", "Z z", "z = (x - y) * (x - y)", "squared_diff_super_generic")
    cmul = ElementwiseKernel("T x, T y", "T z", "z = x * y + x", "cmul")
    l2norm = ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    out = DeviceArray(np.empty(n, np.float32))
    y64, z64 = DeviceArray(np.ones(n, np.float64)), DeviceArray(np.empty(n, np.float64))
    c64, c128 = DeviceArray(np.ones(n, np.complex64)), DeviceArray(np.ones(n, np.complex128))
    return {
        "elementwise, 2 args (x -> y)": lambda: add2(x),
        "elementwise, 3 args (x, y -> z)": lambda: squared_diff(x, y),
        "elementwise, 3 args + out given": lambda: squared_diff(x, y, out),
        "elementwise, scalar arg (x, 5.0)": lambda: squared_diff(x, 5.0),
        "elementwise, 4 args (x, y, w -> z)": lambda: generic(x, y, z),
        "elementwise, broadcast (4096x1024, 1024)": lambda: squared_diff(m, row),
        "elementwise, raw (raw x, n, size=)": lambda: raw(x, n, size=n),
        "elementwise, float32 with float64, out given": lambda: super_generic(x, y64, z64),
        "elementwise, complex64 z = x * y + x": lambda: cmul(c64, c64),
        "elementwise, complex128 z = x * y + x": lambda: cmul(c128, c128),
        "elementwise, complex128 with a complex scalar": lambda: cmul(c128, 2j),
        "reduction, all axes": lambda: l2norm(x),
        "reduction, axis=1": lambda: l2norm(m, axis=1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top entries per case")
    args = parser.parse_args()
    install_stand_ins()
    for name, call in cases().items():
        call()  # compiles the tile kernel and makes its launcher
        best = min(_time(call, args.calls) for _ in range(3))
        print(f"{name:44s} {best * 1e6:8.2f} µs per call")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(_time, call, args.calls)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(8)


def _time(call, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


if __name__ == "__main__":
    main()
