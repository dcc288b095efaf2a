"""Compile a kernel specialization for the current GPU, load it, and launch it.

    generate (IR -> CUDA C++) -> NVRTC (cached in memory and on disk) -> cubin -> CuPy module -> launch

The cubin is loaded with CuPy's driver-module binding rather than RawModule, so any arch NVRTC
can target (sm_90a included) works.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codegen import HEADER_VERSION, INCLUDE_DIR, GeneratedKernel, generate
from ..ir.core import Function
from .arrays import cupy_stream, device_array
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
    generated = generate(fn, threads=threads)
    try:
        module = compile_cached(generated.source, arch=arch, options=COMPILE_OPTIONS, header_version=HEADER_VERSION,
                                include_paths=(str(INCLUDE_DIR), *cuda_include_dirs()))
    except NvrtcError as e:
        raise _at_source_line(e, fn) from None
    return generated, module


def _at_source_line(error: NvrtcError, fn: Function) -> NvrtcError:
    """The error located at the kernel line of its first diagnostic that the #line directives of the
    generated code (or a template's instantiation point) lead back to."""
    locs = {}
    for op in fn.walk():
        if op.loc:
            locs.setdefault((op.loc.filename, op.loc.line), op.loc)
    for d in error.diagnostics:
        for filename in {f for f, _ in locs}:
            loc = locs.get((filename, d.line_in(filename)))
            if loc is not None:
                return NvrtcError(f"CUDA compilation of kernel `{fn.name}` failed: {d.message}\n"
                                  f"(in the CUDA generated for this line: `--show cuda` shows it)",
                                  error.log, error.diagnostics, loc)
    return error


_loaded: dict = {}


def _current_device() -> int:
    import cupy
    return cupy.cuda.runtime.getDevice()


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


def _array_packer(position: int, example):
    """Pack an array argument as (pointer, shape..., strides in elements...). The launcher's argument
    profile fixes the argument's type, so the packer is chosen once, from the first launch."""
    import cupy
    i32 = np.int32
    if type(example) is cupy.ndarray:
        itemsize = example.itemsize

        def pack_cupy(value, out):
            out.append(value)  # CuPy passes its own arrays as device pointers
            out += [i32(n) for n in value.shape]
            out += [i32(s // itemsize) for s in value.strides]
        return pack_cupy

    def pack_any(value, out):
        a = device_array(value, position)
        out.append(np.uint64(a.ptr))
        out += [i32(n) for n in a.shape]
        out += [i32(s) for s in a.strides]
    return pack_any


def _scalar_packer(dtype):
    make = dtype.numpy.type
    return lambda value, out: out.append(make(value))


class Launcher:
    """One argument profile of a kernel, ready to launch: the loaded kernel and a packer per argument.
    Built on the first launch of the profile; later launches cost a dictionary lookup and the packing."""

    def __init__(self, fn: Function, gpu: GpuKernel, args):
        self.fn, self.gpu = fn, gpu
        self.block = (gpu.generated.threads, 1, 1)
        self.smem = gpu.generated.smem_bytes
        self.packers = []
        for k, (p, value) in enumerate(zip(fn.params, args)):
            if p.kind == "array":
                self.packers.append(_array_packer(k, value))
            elif p.kind == "scalar":
                self.packers.append(_scalar_packer(p.type.dtype))
            else:
                self.packers.append(None)

    def __call__(self, stream, grid, args):
        packed = []
        for pack, value in zip(self.packers, args):
            if pack is not None:
                pack(value, packed)
        try:
            self.gpu.function(grid, self.block, packed, shared_mem=self.smem, stream=stream)
        except OverflowError:
            raise OverflowError("An array shape or stride, or an int argument, does not fit 32 bits") from None
        except Exception as e:
            if type(e).__name__ != "CUDADriverError":
                raise
            raise LaunchError(self.describe_failure(str(e), grid)) from None

    def describe_failure(self, error: str, grid) -> str:
        r = self.gpu.resources
        config = (f"kernel `{self.gpu.generated.name}`, grid {tuple(grid)}, {self.block[0]} threads per block, "
                  f"{self.smem} bytes of dynamic shared memory, {r.registers} registers per thread")
        hint = _HINTS.get(error.split(":")[0].strip(), "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing launch")
        return f"{error}\n  {config}\n  hint: {hint}"


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
        import cupy
        device = cupy.cuda.runtime.getDevice()
    except Exception as e:
        raise RuntimeError(f"No CUDA GPU is available ({type(e).__name__}: {e}). To run the kernel on the "
                           f"interpreter, pass NumPy arrays to ct.launch.") from None
    key = (device, _profile_key(kernel, args))
    launcher = kernel._launchers.get(key)
    if launcher is None:
        fn = kernel.specialize(args)
        launcher = kernel._launchers[key] = Launcher(fn, load(fn), args)
    launcher(cupy_stream(stream), grid, args)
