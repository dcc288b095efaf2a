"""The launch fast path's argument handling, without a GPU: parameter layout, scalar packing, streams."""
import ctypes

import numpy as np
import pytest

from tileworkbench.ir.types import bfloat16, bool_, float16, float32, int8, int64, uint16
from tileworkbench.runtime.arrays import stream_handle
from tileworkbench.runtime.launch import _parameter_buffer, _scalar_packer

CTYPES = {"Q": ctypes.c_uint64, "i": ctypes.c_int32, "e": ctypes.c_uint16, "H": ctypes.c_uint16,
          "q": ctypes.c_int64, "?": ctypes.c_bool, "b": ctypes.c_int8, "d": ctypes.c_double, "f": ctypes.c_float}


@pytest.mark.parametrize("codes", [["Q", "i", "i"], ["Q", "i", "e", "q", "?", "Q", "i", "i", "i", "i"],
                                   ["b", "d", "H", "f", "Q"], ["?"]])
def test_parameters_sit_where_a_c_struct_puts_them(codes):
    """CUDA lays kernel parameters out at their natural alignment, as a C struct does."""
    struct_, buffer, params = _parameter_buffer(codes)

    class Params(ctypes.Structure):
        _fields_ = [(f"p{k}", CTYPES[c]) for k, c in enumerate(codes)]
    base = ctypes.addressof(buffer)
    assert [p - base for p in params] == [getattr(Params, f"p{k}").offset for k in range(len(codes))]
    assert struct_.size <= ctypes.sizeof(Params) <= len(buffer)


def test_packed_values_read_back_through_the_parameter_pointers():
    struct_, buffer, params = _parameter_buffer(["Q", "i", "i", "q"])
    struct_.pack_into(buffer, 0, 0xDEADBEEF000, 7, -3, -2**40)
    read = [ctypes.c_uint64.from_address(params[0]).value, ctypes.c_int32.from_address(params[1]).value,
            ctypes.c_int32.from_address(params[2]).value, ctypes.c_int64.from_address(params[3]).value]
    assert read == [0xDEADBEEF000, 7, -3, -2**40]


@pytest.mark.parametrize("dtype, value, bits", [
    (bfloat16, 1.5, 0x3FC0), (float16, 1.5, 0x3E00), (bool_, True, 1), (int8, -2, 0xFE), (uint16, 65535, 0xFFFF)])
def test_scalars_pack_to_their_bits(dtype, value, bits):
    code, convert = _scalar_packer(dtype)
    struct_, buffer, _ = _parameter_buffer([code])
    struct_.pack_into(buffer, 0, convert(value))
    assert int.from_bytes(buffer.raw[:dtype.itemsize], "little") == bits


def test_float32_scalars_round_as_numpy_does():
    code, convert = _scalar_packer(float32)
    struct_, buffer, _ = _parameter_buffer([code])
    struct_.pack_into(buffer, 0, convert(0.1))
    assert np.frombuffer(buffer.raw[:4], np.float32)[0] == np.float32(0.1)
    assert _scalar_packer(int64)[0] == "q"


class _CupyLike:
    ptr = 0x1234


class _TorchLike:
    cuda_stream = 0x5678


class _NumbaLike:
    handle = ctypes.c_void_p(0x9ABC)


@pytest.mark.parametrize("stream, handle", [(0, 0), (0x42, 0x42), (_CupyLike(), 0x1234), (_TorchLike(), 0x5678),
                                            (_NumbaLike(), 0x9ABC), (np.uint64(7), 7)])
def test_streams_as_cutile_accepts_them(stream, handle):
    assert stream_handle(stream) == handle


def test_stream_none_and_unknown_objects_are_refused():
    with pytest.raises(TypeError, match="Stream is required"):
        stream_handle(None)
    with pytest.raises(TypeError, match="Unsupported stream object of type 'str'"):
        stream_handle("default")
