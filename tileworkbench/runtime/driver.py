"""The CUDA driver calls a launch needs, over libcuda with ctypes: the current device, its arch,
loading a cubin, and cuLaunchKernelEx.

No array framework is imported for them: a program whose arrays are PyTorch tensors never pays
for importing CuPy (longer than a whole first launch from the disk cache), and ctypes is in the
standard library. Kernels load into the current context, the primary context of the current
device that the CUDA runtime (and so PyTorch and CuPy) uses; a thread with no current context
gets device 0's, as the runtime would give it on its first call.

    >>> device = current_device()
    >>> function = load_function(cubin, "vector_add")
    >>> launch = launch_kernel_function()
    >>> check(launch(config, function.handle, params, None), "cuLaunchKernelEx")

Handles travel as `ctypes.c_void_p`, never as plain Python ints: without declared argument types
ctypes passes an int as a 32-bit C int. The hot call, cuLaunchKernelEx, is left without declared
argument types, which makes each call cheaper (ctypes then checks and converts nothing); it takes
the launch configuration as one struct, so a launch passes four arguments that a launcher makes
once instead of cuLaunchKernel's eleven (measured with a no-op C function: 170 ns against 290).
"""
from __future__ import annotations

import ctypes
import functools
import sys
from typing import NamedTuple

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_INVALID_CONTEXT = 201
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_STREAM_CAPTURE_STATUS_NONE = 0


class CudaDriverError(RuntimeError):
    """A driver call failed; the message starts with the CUresult's name (CUDA_ERROR_...)."""

    def __init__(self, status: int, call: str):
        super().__init__(f"{error_name(status)}: {call} failed")
        self.status = status


@functools.cache
def library() -> ctypes.CDLL:
    """libcuda, loaded on first use; OSError where there is no driver."""
    return ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")


def error_name(status: int) -> str:
    name = ctypes.c_char_p()
    if library().cuGetErrorName(status, ctypes.byref(name)) != CUDA_SUCCESS or not name.value:
        return f"CUDA error {status}"
    return name.value.decode()


def check(status: int, call: str) -> None:
    if status != CUDA_SUCCESS:
        raise CudaDriverError(status, call)


def _call(name: str, *args) -> None:
    check(getattr(library(), name)(*args), name)


def current_device() -> int:
    """The ordinal of the current context's device (initializing the driver and making device 0's
    primary context current where the thread has none, as the CUDA runtime would)."""
    device = ctypes.c_int()  # one per call: another thread may ask at the same time
    status = library().cuCtxGetDevice(ctypes.byref(device))
    if status in (CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_INVALID_CONTEXT):
        _use_primary_context(0)
        status = library().cuCtxGetDevice(ctypes.byref(device))
    check(status, "cuCtxGetDevice")
    return device.value


@functools.cache
def device_count() -> int:
    """How many devices this process sees (CUDA_VISIBLE_DEVICES is read once, at initialization)."""
    _call("cuInit", 0)
    count = ctypes.c_int()
    _call("cuDeviceGetCount", ctypes.byref(count))
    return count.value


def _use_primary_context(device: int) -> None:
    _call("cuInit", 0)
    context = ctypes.c_void_p()
    _call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
    _call("cuCtxSetCurrent", context)


def device_arch(device: int | None = None) -> str:
    """`sm_<major><minor>` of `device` (the current one by default)."""
    device = current_device() if device is None else device
    major, minor = ctypes.c_int(), ctypes.c_int()
    _call("cuDeviceGetAttribute", ctypes.byref(major), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    _call("cuDeviceGetAttribute", ctypes.byref(minor), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    return f"sm_{major.value}{minor.value}"


class Function(NamedTuple):
    """A kernel loaded into the current context. `ptr` is the CUfunction as an int (what CuPy's
    driver bindings and the occupancy API take); its module stays loaded for the process."""

    handle: ctypes.c_void_p
    module: ctypes.c_void_p

    @property
    def ptr(self) -> int:
        return self.handle.value


def load_function(cubin: bytes, name: str, dynamic_smem: int = 0) -> Function:
    """Load `cubin` into the current context and find kernel `name`; a kernel asking for more than
    48 KB of dynamic shared memory is allowed it (above that a kernel must opt in)."""
    current_device()  # a context to load into
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    _call("cuModuleLoadData", ctypes.byref(module), cubin)
    _call("cuModuleGetFunction", ctypes.byref(function), module, name.encode())
    if dynamic_smem > 48 * 1024:
        _call("cuFuncSetAttribute", function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem)
    return Function(function, module)


def launch_kernel_function():
    """cuLaunchKernelEx(config, function, params, extra) (CUDA 12 drivers): pointers to a
    CUlaunchConfig, the CUfunction handle and the parameter pointers, and None; returns the CUresult."""
    return library().cuLaunchKernelEx


def stream_is_capturing(stream: int) -> bool:
    """Whether work queued on `stream` (a CUstream handle; 0 is the legacy default stream) is being
    captured into a CUDA graph."""
    status = ctypes.c_int()
    _call("cuStreamIsCapturing", ctypes.c_void_p(stream) if stream else None, ctypes.byref(status))
    return status.value != CU_STREAM_CAPTURE_STATUS_NONE
