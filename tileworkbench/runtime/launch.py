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
    """Generate and compile (through the cache) one specialization for `arch`; no GPU needed."""
    from .cache import compile_cached
    generated = generate(fn, threads=threads)
    module = compile_cached(generated.source, arch=arch, options=COMPILE_OPTIONS, header_version=HEADER_VERSION,
                            include_paths=(str(INCLUDE_DIR), *cuda_include_dirs()))
    return generated, module


_loaded: dict = {}


def load(fn: Function, arch: str | None = None) -> GpuKernel:
    arch = arch or device_arch()
    key = (id(fn), arch)
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


def _pack(fn: Function, args) -> list:
    packed = []
    runtime_args = [a for p, a in zip(fn.params, args) if p.kind != "constant"]
    for k, (p, value) in enumerate(zip(fn.runtime_params, runtime_args)):
        if p.kind == "array":
            a = device_array(value, k)
            if any(n >= 2**31 for n in a.shape) or any(abs(s) >= 2**31 for s in a.strides):
                raise OverflowError(f"Kernel argument #{k}: shape is too big for 32-bit indexing")
            packed.append(np.uint64(a.ptr))
            packed.extend(np.int32(n) for n in a.shape)
            packed.extend(np.int32(s) for s in a.strides)
        else:
            packed.append(p.type.dtype.numpy.type(value))
    return packed


def launch(kernel, stream, grid, args) -> None:
    """Launch `kernel` (a ct.kernel) on the GPU with device arrays."""
    fn = kernel.specialize(args)
    gpu = load(fn)
    gpu.function(grid, (gpu.generated.threads, 1, 1), tuple(_pack(fn, args)),
                 shared_mem=gpu.generated.smem_bytes, stream=cupy_stream(stream))
