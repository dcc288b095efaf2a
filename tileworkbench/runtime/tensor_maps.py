"""Tensor maps (CUtensorMap) for the TMA loads of a kernel, encoded on the host at launch.

A kernel whose pipeline stages are filled by TMA (tile_tma.cuh) takes one 128-byte tensor map per
such load, after its other parameters (GeneratedKernel.tensor_maps). The driver encodes it
(cuTensorMapEncodeTiled) from the array's address, shape and strides and the load's box and
swizzle; the result depends on nothing else, so it is cached by those values (an array freed and
another allocated at the same address with the same shape gets a map that is right for it too).

An array a tensor map cannot describe (an address or a stride not a multiple of 16 bytes, a last
axis that is not contiguous, an empty axis), or one the driver refuses to encode (or a driver
without tensor maps), gets None: the launcher then runs the kernel's cp.async variant, which reads
any array.
"""
from __future__ import annotations

import ctypes
import functools

from . import driver

TENSOR_MAP_BYTES = 128

# CUtensorMapDataType of the 16-bit operand types
_DATA_TYPES = {"float16": 6, "bfloat16": 9}
_SWIZZLE = {32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_32B / 64B / 128B
_INTERLEAVE_NONE = 0
_L2_PROMOTION_256B = 3
_OOB_FILL_ZEROS = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: elements outside the array read as zero


def describable(ptr: int, shape: tuple, strides: tuple, itemsize: int) -> bool:
    """Whether a tensor map can describe this array (strides in elements): a 16-byte aligned base,
    a contiguous last axis, the other strides positive multiples of 16 bytes, no empty axis."""
    return (ptr % 16 == 0 and strides[-1] == 1 and all(n > 0 for n in shape)
            and all(s > 0 and s * itemsize % 16 == 0 for s in strides[:-1]))


@functools.lru_cache(maxsize=1024)
def encode(dtype: str, ptr: int, shape: tuple, strides: tuple, box: tuple, swizzle: int) -> bytes | None:
    """The tensor map of a `dtype` array (shape and strides in elements, in its own axis order) read
    in boxes of `box` elements with the `swizzle`-byte swizzle; None where no map can describe it."""
    itemsize = 2
    encode_tiled = _encode_function()
    if encode_tiled is None or dtype not in _DATA_TYPES or not describable(ptr, shape, strides, itemsize):
        return None
    rank = len(shape)
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    # the driver counts axes innermost first; strides in bytes, for every axis but the innermost
    dims = (u64 * rank)(*reversed(shape))
    byte_strides = (u64 * max(rank - 1, 1))(*[s * itemsize for s in reversed(strides[:-1])])
    boxes = (u32 * rank)(*reversed(box))
    element_strides = (u32 * rank)(*([1] * rank))
    tensor_map = ctypes.create_string_buffer(TENSOR_MAP_BYTES)
    status = encode_tiled(tensor_map, _DATA_TYPES[dtype], rank, ctypes.c_void_p(ptr), dims, byte_strides,
                                boxes, element_strides, _INTERLEAVE_NONE, _SWIZZLE[swizzle], _L2_PROMOTION_256B,
                                _OOB_FILL_ZEROS)
    return tensor_map.raw if status == driver.CUDA_SUCCESS else None


@functools.cache
def _encode_function():
    """cuTensorMapEncodeTiled with its argument types; None from a driver older than CUDA 12."""
    function = getattr(driver.library(), "cuTensorMapEncodeTiled", None)
    if function is None:
        return None
    c_int, u32, p = ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p
    function.argtypes = [p, c_int, u32, p, p, p, p, p, c_int, c_int, c_int, c_int]
    function.restype = c_int
    return function
