"""Argument intake for GPU launches: device arrays from any framework, and streams.

An array becomes (pointer, shape, strides in elements, dtype) without copying and without
importing its framework: PyTorch tensors are read through `data_ptr()`/`stride()` (this also
covers bfloat16 and fp8, which `__cuda_array_interface__` cannot describe), everything else
through `__cuda_array_interface__` or, failing that, DLPack via CuPy.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..arguments import is_torch_tensor
from ..ir.types import DType, to_dtype


class DeviceArray(NamedTuple):
    """A device array as a launch reads it, from any framework."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: DType


def device_array(obj, position: int = 0) -> DeviceArray:
    """Describe a GPU array argument; NumPy arrays and host tensors are refused with a hint."""
    if isinstance(obj, np.ndarray):
        raise TypeError(f"Kernel argument #{position} is a NumPy array but others are on the GPU: pass all arrays "
                        f"on the GPU (or all as NumPy arrays to run on the interpreter)")
    if is_torch_tensor(obj):
        if not obj.is_cuda:
            raise ValueError(f"Kernel argument #{position}: the tensor is not on a CUDA device")
        return DeviceArray(obj.data_ptr(), tuple(obj.shape), tuple(obj.stride()), to_dtype(obj.dtype))
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None and hasattr(obj, "__dlpack__"):
        import cupy
        obj = cupy.from_dlpack(obj)
        cai = obj.__cuda_array_interface__
    if cai is None:
        raise TypeError(f"Invalid kernel argument #{position}: Objects of type '{type(obj).__name__}' are not supported.")
    dtype = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    if cai.get("strides") is None:
        strides, step = [], 1
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
    else:
        if any(s % dtype.itemsize for s in cai["strides"]):
            raise ValueError(f"Kernel argument #{position}: strides {cai['strides']} are not multiples of the item size")
        strides = [s // dtype.itemsize for s in cai["strides"]]
    return DeviceArray(int(cai["data"][0]), shape, tuple(strides), to_dtype(dtype))


def stream_handle(stream) -> int:
    """The raw CUstream of what cuTile accepts: CuPy, PyTorch or Numba streams, a raw handle, or 0."""
    known = _stream_attributes.get(type(stream))  # launches repeat their stream: skip the search
    if known is not None:
        handle = getattr(stream, known, None)
        if type(handle) is int:
            return handle
    return _find_stream_handle(stream)


def _find_stream_handle(stream) -> int:
    if type(stream) is int:
        return stream
    for attribute in ("ptr", "cuda_stream", "handle"):  # cupy, torch, numba
        handle = getattr(stream, attribute, None)
        if handle is not None:
            _stream_attributes[type(stream)] = attribute
            break
    if type(handle) is int:
        return handle
    if handle is not None:  # numba: a ctypes pointer
        return int(handle.value if hasattr(handle, "value") else handle)
    if stream is None:
        raise TypeError("Stream is required, got None")
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return int(stream)
    raise TypeError(f"Unsupported stream object of type '{type(stream).__name__}'")


_stream_attributes: dict = {}  # stream class -> the attribute holding its handle
