"""Compile a kernel specialization for the current GPU, load it, and launch it.

    generate (IR -> CUDA C++) -> NVRTC (cached in memory and on disk) -> cubin -> CuPy module -> launch

The cubin is loaded with CuPy's driver-module binding rather than RawModule, so any arch NVRTC
can target (sm_90a included) works. Launches go straight to cuLaunchKernel (see Launcher).
"""
from __future__ import annotations

import ctypes
import functools
import struct
import threading
from dataclasses import dataclass

import numpy as np

from ..codegen import HEADER_VERSION, INCLUDE_DIR, GeneratedKernel, generate
from ..ir.core import Function
from .arrays import _is_torch, device_array, stream_handle
from .nvrtc import NvrtcError

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # CUfunction_attribute in cuda.h
COMPILE_OPTIONS = ()  # the NVRTC layer adds -arch, -lineinfo and --std=c++17


@dataclass
class GpuKernel:
    """A specialization compiled and loaded for one device."""

    generated: GeneratedKernel
    module: object   # the NVRTC result: source, ptx, cubin, resources
    function: object  # cupy.cuda.Function

    @property
    def resources(self):
        return self.module.kernels[self.generated.name]


def device_arch() -> str:
    import cupy
    return f"sm_{cupy.cuda.Device().compute_capability}"


def cuda_include_dirs() -> tuple[str, ...]:
    """Where cuda_fp16.h and cuda_bf16.h live: the nvidia-cuda-runtime wheel, else a CUDA toolkit."""
    import glob
    import importlib.util
    import os
    candidates = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidates += sorted(glob.glob(os.path.join(root, "cu*", "include")), reverse=True)
        candidates.append(os.path.join(root, "cuda_runtime", "include"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "include"))
    for directory in candidates:
        if os.path.exists(os.path.join(directory, "cuda_fp16.h")):
            return (directory,)
    raise RuntimeError("CUDA headers (cuda_fp16.h) not found: pip install nvidia-cuda-runtime, or set CUDA_HOME")


def build(fn: Function, arch: str, threads: int | None = None):
    """Generate and compile (through the cache) one specialization for `arch`; no GPU needed.
    A compile error is raised at the kernel source line it comes from."""
    from .cache import compile_cached
    generated = generate(fn, threads=threads, arch=arch)
    try:
        module = compile_cached(generated.source, arch=generated.arch or arch, options=COMPILE_OPTIONS, header_version=HEADER_VERSION,
                                include_paths=(str(INCLUDE_DIR), *cuda_include_dirs()))
    except NvrtcError as e:
        raise _at_source_line(e, fn, generated) from None
    return generated, module


def _at_source_line(error: NvrtcError, fn: Function, generated: GeneratedKernel) -> NvrtcError:
    """The error located at the kernel line of its first diagnostic that the #line directives of the
    generated code (or a template's instantiation point) lead back to."""
    locs = {}
    for op in fn.walk():
        if op.loc:
            locs.setdefault((op.loc.filename, op.loc.line), op.loc)
    for d in error.diagnostics:
        for filename in {f for f, _ in locs}:
            line = d.line_in(filename)
            loc = locs.get((filename, generated.line_map.get((filename, line), line)))
            if loc is not None:
                return NvrtcError(f"CUDA compilation of kernel `{fn.name}` failed: {d.message}\n"
                                  f"(in the CUDA generated for this line: `--show cuda` shows it)",
                                  error.log, error.diagnostics, loc)
    return error


_loaded: dict = {}


def _current_device() -> int:
    global _get_device
    if _get_device is None:
        import cupy
        _get_device = cupy.cuda.runtime.getDevice
    return _get_device()


_get_device = None


def load(fn: Function, arch: str | None = None) -> GpuKernel:
    arch = arch or device_arch()
    key = (id(fn), arch, _current_device())
    kernel = _loaded.get(key)
    if kernel is None:
        import cupy
        generated, module = build(fn, arch)
        cu_module = cupy.cuda.function.Module()
        cu_module.load(module.cubin)
        function = cu_module.get_function(generated.name)
        if generated.smem_bytes > 48 * 1024:  # above 48 KB a kernel must opt in
            cupy.cuda.driver.funcSetAttribute(function.ptr, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              generated.smem_bytes)
        kernel = _loaded[key] = GpuKernel(generated, module, function)
        kernel._cu_module = cu_module  # keep the module alive as long as its function
    return kernel


# ---- the launch fast path -------------------------------------------------------------------------
#
# A launch packs the arguments into one preallocated parameter buffer with a precompiled
# struct.Struct and hands it to cuLaunchKernel through ctypes: one C call, no per-argument objects.

@functools.cache
def _driver():
    """cuLaunchKernel and cuGetErrorName from the CUDA driver library."""
    lib = ctypes.CDLL("libcuda.so.1")
    launch = lib.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    launch.restype = ctypes.c_int
    error_name = lib.cuGetErrorName
    error_name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    error_name.restype = ctypes.c_int

    def name_of(code: int) -> str:
        text = ctypes.c_char_p()
        return text.value.decode() if error_name(code, ctypes.byref(text)) == 0 and text.value else f"CUresult {code}"
    return launch, name_of


# struct codes of the scalar parameter types; bfloat16 and fp8 travel as their bits
_STRUCT_CODES = {"bool_": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
                 "uint32": "I", "uint64": "Q", "float16": "e", "float32": "f", "float64": "d"}


def _scalar_packer(dtype):
    """(struct code, value -> what the code packs) for a scalar parameter."""
    make = dtype.numpy.type
    code = _STRUCT_CODES.get(dtype.name)
    if code is not None:
        return code, make
    bits = np.dtype(f"uint{dtype.bitwidth}")
    return bits.char, lambda value: np.array(value, dtype=dtype.numpy).view(bits).item()


def _array_packer(position: int, example, ndim: int):
    """value -> (pointer, shape..., strides in elements...) for an array parameter. The launcher's
    argument profile fixes the argument's type, so the packer is chosen once, from the first launch."""
    if type(example).__module__ == "cupy" and type(example).__name__ == "ndarray":
        itemsize = example.itemsize
        return lambda value: (value.data.ptr, *value.shape, *[s // itemsize for s in value.strides])
    if _is_torch(example):
        def pack_torch(value):
            if not value.is_cuda:
                raise ValueError(f"Kernel argument #{position}: the tensor is not on a CUDA device")
            return (value.data_ptr(), *value.shape, *value.stride())
        return pack_torch

    def pack_any(value):
        a = device_array(value, position)
        return (a.ptr, *a.shape, *a.strides)
    return pack_any


class Launcher:
    """One argument profile of a kernel, ready to launch: the loaded kernel, a packer per argument
    and the parameter buffer. Built on the first launch of the profile; later launches cost a
    dictionary lookup, the packing and one driver call."""

    def __init__(self, fn: Function, gpu: GpuKernel, args):
        self.fn, self.gpu = fn, gpu
        self.threads = gpu.generated.threads
        self.smem = gpu.generated.smem_bytes
        self.function = ctypes.c_void_p(int(gpu.function.ptr))
        self.packers, codes = [], []
        for k, (p, value) in enumerate(zip(fn.params, args)):
            if p.kind == "array":
                self.packers.append((k, _array_packer(k, value, p.type.ndim), True))
                codes += ["Q"] + ["i"] * (2 * p.type.ndim)
            elif p.kind == "scalar":
                code, convert = _scalar_packer(p.type.dtype)
                self.packers.append((k, convert, False))
                codes.append(code)
        self.struct, self.buffer, self.params = _parameter_buffer(codes)
        self.lock = threading.Lock()  # one buffer: pack and launch as one step

    def __call__(self, stream: int, grid, args):
        values = []
        for k, pack, is_array in self.packers:
            if is_array:
                values += pack(args[k])
            else:
                values.append(pack(args[k]))
        launch, name_of = _driver()
        with self.lock:
            try:
                self.struct.pack_into(self.buffer, 0, *values)
            except struct.error:
                raise OverflowError("An array shape or stride, or an int argument, does not fit its "
                                    "parameter type (32 bits for shapes and strides)") from None
            status = launch(self.function, grid[0], grid[1], grid[2], self.threads, 1, 1, self.smem, stream,
                            self.params, None)
        if status:
            raise LaunchError(self.describe_failure(name_of(status), grid))

    def describe_failure(self, error: str, grid) -> str:
        r = self.gpu.resources
        config = (f"kernel `{self.gpu.generated.name}`, grid {tuple(grid)}, {self.threads} threads per block, "
                  f"{self.smem} bytes of dynamic shared memory, {r.registers} registers per thread")
        hint = _HINTS.get(error.split(":")[0].strip(), "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing launch")
        return f"{error}\n  {config}\n  hint: {hint}"


def _parameter_buffer(codes: list[str]):
    """A struct for the kernel's parameters laid out as the CUDA ABI lays them (each at its natural
    alignment), a buffer for it, and the array of pointers to each parameter cuLaunchKernel takes."""
    fmt, offsets, end = "=", [], 0
    for code in codes:
        size = struct.calcsize("=" + code)
        pad = -end % size
        fmt += "x" * pad + code
        offsets.append(end + pad)
        end += pad + size
    buffer = ctypes.create_string_buffer(max(end, 8))
    base = ctypes.addressof(buffer)
    params = (ctypes.c_void_p * max(len(offsets), 1))(*(base + o for o in offsets))
    return struct.Struct(fmt), buffer, params


class LaunchError(RuntimeError):
    """A GPU launch failed; the message names the kernel, its launch configuration and a likely cause."""


_HINTS = {
    "CUDA_ERROR_OUT_OF_RESOURCES": "too many registers or too much shared memory for this block size: "
                                   "use smaller tiles",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "an access outside an array: run the same launch on NumPy arrays (the "
                                  "interpreter's checked mode names the line and the index)",
    "CUDA_ERROR_INVALID_VALUE": "the grid or the shared memory exceeds the device's limits",
}


def _profile_key(kernel, args) -> tuple:
    """What selects a specialization, cheaply: array dtypes and ranks, scalar types, Constant values."""
    key = []
    for constant, value in zip(kernel._constant_mask, args):
        if constant:
            key.append((type(value), value))
        else:
            key.append((type(value), getattr(value, "dtype", None), getattr(value, "ndim", None)))
    return tuple(key)


def launch(kernel, stream, grid, args) -> None:
    """Launch `kernel` (a ct.kernel) on the GPU with device arrays."""
    try:
        device = _current_device()
    except Exception as e:
        raise RuntimeError(f"No CUDA GPU is available ({type(e).__name__}: {e}). To run the kernel on the "
                           f"interpreter, pass NumPy arrays to ct.launch.") from None
    key = (device, _profile_key(kernel, args))
    launcher = kernel._launchers.get(key)
    if launcher is None:
        fn = kernel.specialize(args)
        launcher = kernel._launchers[key] = Launcher(fn, load(fn), args)
    launcher(stream_handle(stream), grid, args)
