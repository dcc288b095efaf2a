"""Tensor maps for TMA loads, encoded on the host: which arrays one can describe, and what the
driver is asked for (axes innermost first, strides in bytes). No GPU needed: the driver call is
recorded."""
import ctypes
import types

import pytest

from tileworkbench.runtime import driver, tensor_maps


@pytest.mark.parametrize("ptr, shape, strides, ok", [
    (0x1000, (300, 200), (200, 1), True),
    (0x1002, (300, 200), (200, 1), False),  # base one element into an allocation
    (0x1000, (300, 130), (130, 1), False),  # rows of 260 bytes
    (0x1000, (200, 264), (1056, 2), False),  # every other column
    (0x1000, (0, 64), (64, 1), False),  # empty
    (0x1000, (4, 1, 64), (64, 64, 1), True),  # a unit axis whose stride is a multiple of 16 bytes
])
def test_a_tensor_map_describes_aligned_arrays_with_a_contiguous_last_axis(ptr, shape, strides, ok):
    assert tensor_maps.describable(ptr, shape, strides, 2) is ok


@pytest.fixture
def recorded(monkeypatch):
    """cuTensorMapEncodeTiled replaced by a recorder that writes a recognizable map."""
    calls = []

    def encode(tensor_map, dtype, rank, ptr, dims, strides, box, element_strides, interleave, swizzle, l2, fill):
        calls.append((dtype, rank, ptr.value, list(dims), list(strides)[:rank - 1], list(box),
                      list(element_strides), interleave, swizzle, fill))
        ctypes.memmove(tensor_map, b"\x5a" * 128, 128)
        return driver.CUDA_SUCCESS
    encode.argtypes = encode.restype = None
    monkeypatch.setattr(driver, "library", lambda: types.SimpleNamespace(cuTensorMapEncodeTiled=encode))
    tensor_maps.encode.cache_clear()
    tensor_maps._encode_function.cache_clear()
    yield calls
    tensor_maps.encode.cache_clear()
    tensor_maps._encode_function.cache_clear()


def test_the_driver_gets_axes_innermost_first_and_strides_in_bytes(recorded):
    assert tensor_maps.encode("bfloat16", 0x10000, (2, 300, 200), (60000, 200, 1), (1, 128, 64), 128) == b"\x5a" * 128
    assert recorded == [(9, 3, 0x10000, [200, 300, 2], [400, 120000], [64, 128, 1], [1, 1, 1], 0, 3, 0)]


def test_maps_are_cached_by_address_shape_strides_and_box(recorded):
    for _ in range(3):
        tensor_maps.encode("float16", 0x10000, (256, 256), (256, 1), (64, 32), 64)
    tensor_maps.encode("float16", 0x20000, (256, 256), (256, 1), (64, 32), 64)
    assert [(dtype, ptr, swizzle) for dtype, _, ptr, *_, swizzle, _ in recorded] == [(6, 0x10000, 2), (6, 0x20000, 2)]


def test_an_array_no_map_describes_gets_none_without_asking_the_driver(recorded):
    assert tensor_maps.encode("float16", 0x10002, (256, 256), (256, 1), (64, 64), 128) is None
    assert not recorded


def test_a_map_the_driver_refuses_is_none(recorded, monkeypatch):
    refuse = types.SimpleNamespace(cuTensorMapEncodeTiled=lambda *args: 1)
    monkeypatch.setattr(driver, "library", lambda: refuse)
    tensor_maps._encode_function.cache_clear()
    assert tensor_maps.encode("float16", 0x10000, (256, 256), (256, 1), (64, 64), 128) is None


def test_a_driver_without_tensor_maps_gets_none(recorded, monkeypatch):
    monkeypatch.setattr(driver, "library", lambda: types.SimpleNamespace())
    tensor_maps._encode_function.cache_clear()
    assert tensor_maps.encode("float16", 0x10000, (256, 256), (256, 1), (64, 64), 128) is None
