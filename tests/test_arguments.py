"""What every layer takes for an array (launches, the interpreter's host copies, CuPy-style kernels),
and host copies of PyTorch tensors whose dtypes NumPy lacks."""
import numpy as np
import pytest

from tileworkbench.arguments import host_numpy, host_tensor, is_array_like


class DeviceArray:
    def __init__(self):
        self.__cuda_array_interface__ = {"data": (0, False), "shape": (4,), "typestr": "<f4", "version": 3}


class DLPackOnly:
    dtype = np.dtype(np.float32)

    def __dlpack__(self, stream=None):
        raise NotImplementedError


@pytest.mark.parametrize("value, expected", [(np.zeros(3), True), (DeviceArray(), True), (DLPackOnly(), True),
                                             (np.float32(1), False), (np.int64(3), False), (3, False), ([1, 2], False)])
def test_arrays_are_numpy_arrays_and_anything_with_an_array_protocol_but_never_numpy_scalars(value, expected):
    assert is_array_like(value) is expected


def test_a_cupy_style_kernel_takes_its_type_placeholders_from_any_array_a_launch_takes():
    from tileworkbench.userkernels.params import parse_params, resolve_types
    inputs, outputs = parse_params("T x", "in_params"), parse_params("T y", "out_params")
    _, _, placeholders = resolve_types(inputs, outputs, (DLPackOnly(),), (DLPackOnly(),), "k")
    assert str(placeholders["T"]) == "float32"
    with pytest.raises(TypeError, match="cannot be determined"):
        resolve_types(inputs, outputs, (np.float32(1),), (np.float32(2),), "k")   # NumPy scalars are no arrays


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_host_tensors_of_dtypes_numpy_lacks_round_trip_bit_for_bit(name):
    torch = pytest.importorskip("torch")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([0.5, -2.0, 1.5, 0.25], getattr(ml_dtypes, name))
    tensor = host_tensor(values)
    assert tensor.dtype == getattr(torch, name)
    back = host_numpy(tensor)
    assert back.dtype == values.dtype and back.view(np.uint8).tobytes() == values.view(np.uint8).tobytes()


def test_host_tensors_of_numpy_dtypes_share_the_array_memory():
    torch = pytest.importorskip("torch")
    values = np.arange(4, dtype=np.float32)
    tensor = host_tensor(values)
    tensor[0] = 7
    assert values[0] == 7 and host_numpy(torch.ones(2)).tolist() == [1.0, 1.0]
