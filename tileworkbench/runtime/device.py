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
        from .launch import device_arch
        return device_arch()
    return DEFAULT_ARCH


def to_device(a):
    """A GPU copy of a NumPy array (bfloat16, which CuPy lacks, as a PyTorch tensor); other values as is."""
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.name == "bfloat16":
        import torch
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).cuda()
    import cupy
    return cupy.asarray(a)


def to_host(a) -> np.ndarray:
    """A NumPy copy of a GPU array (CuPy, or a PyTorch tensor, bfloat16 included)."""
    if isinstance(a, np.ndarray):
        return a.copy()
    if type(a).__module__.startswith("torch"):
        import torch
        if a.dtype == torch.bfloat16:
            import ml_dtypes
            return a.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
        return a.detach().cpu().numpy()
    import cupy
    return cupy.asnumpy(a)
