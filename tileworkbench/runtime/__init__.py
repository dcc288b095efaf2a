"""GPU runtime: NVRTC compilation, the compile cache and the resources of compiled kernels.

    >>> from tileworkbench.runtime import compile_cached
    >>> module = compile_cached(cuda_source, arch="sm_90")
    >>> module.kernels["my_kernel"].registers

Importing this package loads neither NVRTC nor any GPU library; the first compile loads NVRTC.
"""
from .cache import CompileCache, compile_cached, default_cache
from .cubin import Resources, cubin_arch, read_resources
from .nvrtc import CompiledModule, NvrtcError, NvrtcUnavailableError, compile_cuda

__all__ = [
    "CompileCache", "CompiledModule", "NvrtcError", "NvrtcUnavailableError", "Resources",
    "compile_cached", "compile_cuda", "cubin_arch", "default_cache", "read_resources",
]
