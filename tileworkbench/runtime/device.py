"""Is there a CUDA GPU to launch on? One answer for the whole package, and NumPy arrays to it and back.

    >>> from tileworkbench.runtime import device
    >>> device.gpu_available(), device.unavailable_reason()
    (False, "ModuleNotFoundError: No module named 'cupy'")
    >>> device.target_arch(None)            # the GPU's arch, or sm_90 without one
    'sm_90'

Importing this module loads no GPU library. The first question imports CuPy and asks the driver
how many devices there are; the answer is kept for the life of the process.
"""
from __future__ import annotations

import functools

import numpy as np

from ..arguments import host_numpy, host_tensor

DEFAULT_ARCH = "sm_90"   # what compile-time reports target when there is no GPU to ask


@functools.lru_cache(maxsize=None)
def unavailable_reason() -> str | None:
    """None where CuPy sees a CUDA device; otherwise why not, in one line."""
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, no driver, or no device
        return f"{type(e).__name__}: {e}".splitlines()[0]
    return None if count else "no CUDA device found"


def gpu_available() -> bool:
    return unavailable_reason() is None


def target_arch(arch: str | None = None) -> str:
    """The arch to compile for: `arch` when given, else the GPU's, else sm_90."""
    if arch:
        return arch
    if gpu_available():
        from .driver import device_arch
        return device_arch()
    return DEFAULT_ARCH


def to_device(a):
    """A GPU copy of a NumPy array (bfloat16 and fp8, ml_dtypes types CuPy lacks, as PyTorch tensors of
    the same names); other values as is."""
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.type.__module__ != "numpy":
        return host_tensor(np.ascontiguousarray(a)).cuda()
    import cupy
    return cupy.asarray(a)


def to_host(a) -> np.ndarray:
    """A NumPy copy of a GPU array (CuPy, or a PyTorch tensor, bfloat16 and fp8 included)."""
    if isinstance(a, np.ndarray):
        return a.copy()
    if type(a).__module__.startswith("torch"):
        return host_numpy(a.detach().cpu())
    import cupy
    return cupy.asnumpy(a)


def l2_flusher():
    """A function that evicts the GPU's L2 cache (writes a buffer twice its size), for timing cold launches."""
    import cupy
    size = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["l2CacheSize"]
    buffer = cupy.empty(max(size * 2, 1 << 20) // 4, cupy.int32)
    return lambda: buffer.fill(0)
