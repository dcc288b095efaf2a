"""ct.launch's fast path without a GPU: repeated launches take the kernel's last launcher and read
every argument anew, any change of the argument profile specializes anew, and bad arguments are
refused as the first launch refuses them. libcuda is the benchmark's stand-in; loading a kernel
is replaced by a handle, so only the Python side of launching runs."""
import gc
import struct
import sys
import types
import weakref

import numpy as np
import pytest

import tileworkbench.tile as ct
from benchmarks.launch_overhead import StandInDriver
from tileworkbench.errors import ArgumentTypeError, ArgumentValueError
from tileworkbench.runtime import driver
from tileworkbench.runtime import launch as runtime_launch
from tileworkbench.runtime.launch import LAUNCH_CONFIG_BYTES


class _TorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


_TorchDtype.__module__ = "torch"
_DTYPES = {name: _TorchDtype(name) for name in ("float32", "float16")}


class _Tensor:
    """A CUDA tensor as PyTorch shows it to a launch (the fixture makes this class torch.Tensor)."""

    def __init__(self, shape, dtype="float32", ptr=0x7000, strides=None):
        self.shape, self.ndim, self.dtype, self.is_cuda, self._ptr = tuple(shape), len(shape), _DTYPES[dtype], True, ptr
        self._strides = strides or tuple(int(s) // 4 for s in np.empty(shape, np.float32).strides)

    def data_ptr(self):
        return self._ptr

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]


class _DeviceArray:
    """A device array known only by __cuda_array_interface__."""

    def __init__(self, shape, ptr=0x5000):
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(np.float32), len(shape)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": "<f4", "data": (ptr, False), "version": 3}


def _touch(x, y, n, T: ct.Constant[int]):
    pass


@pytest.fixture
def gpu(monkeypatch):
    """Launches go to a stand-in libcuda that records each launch's buffer; loading gives a handle."""
    stand_in = StandInDriver()
    stand_in.launches = []
    stand_in.cuLaunchKernelEx = lambda config, function, params, extra: stand_in.launches.append(bytes(config)) or 0
    monkeypatch.setattr(driver, "library", lambda: stand_in)
    driver.device_count.cache_clear()
    loaded = types.SimpleNamespace(generated=types.SimpleNamespace(threads=64, smem_bytes=0, name="touch",
                                                                   tensor_maps=[]),
                                   function=types.SimpleNamespace(ptr=0x2000),
                                   resources=types.SimpleNamespace(registers=16))
    monkeypatch.setattr(runtime_launch, "load", lambda fn, arch=None: loaded)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=_Tensor))
    yield stand_in
    driver.device_count.cache_clear()  # the stand-in's answer is not the machine's


def _launched(buffer: bytes) -> tuple:
    """(grid, stream, x's pointer, shape, stride, y's pointer, shape, strides, n) of one launch of
    _touch with a 1-d x, a 2-d y and an int32 n."""
    grid, stream = struct.unpack_from("=3I", buffer), struct.unpack_from("=Q", buffer, 32)[0]
    x_ptr, x_n, x_s, y_ptr, *y_dims, n = struct.unpack_from("=QiiQiiiii", buffer, LAUNCH_CONFIG_BYTES)
    return grid, stream, (x_ptr, x_n, x_s), (y_ptr, *y_dims), n


def test_repeated_launches_take_one_launcher_and_read_each_argument_anew(gpu):
    touch = ct.kernel(_touch)
    x, y = _Tensor((128,), ptr=0x1000), _Tensor((64, 32), ptr=0x2000)
    transposed = _Tensor((32, 64), ptr=0x3000, strides=(1, 32))
    ct.launch(0, (4,), touch, (x, y, 5, 16))
    ct.launch(0x99, (2, 3), touch, (_Tensor((256,), ptr=0x4000, strides=(2,)), transposed, 7, 16))
    assert len(touch.launchers) == 1
    assert [_launched(b) for b in gpu.launches] == [
        ((4, 1, 1), 0, (0x1000, 128, 1), (0x2000, 64, 32, 32, 1), 5),
        ((2, 3, 1), 0x99, (0x4000, 256, 2), (0x3000, 32, 64, 1, 32), 7)]


def test_arrays_known_by_cuda_array_interface_are_read_anew_at_each_launch(gpu):
    touch = ct.kernel(_touch)
    for ptr, n in ((0x1000, 16), (0x8000, 48)):
        ct.launch(0, (1,), touch, (_DeviceArray((n,), ptr), _DeviceArray((n, 2), ptr + 0x100), 1, 8))
    assert [_launched(b)[2:4] for b in gpu.launches] == [((0x1000, 16, 1), (0x1100, 16, 2, 2, 1)),
                                                        ((0x8000, 48, 1), (0x8100, 48, 2, 2, 1))]
    assert len(touch.launchers) == 1


@pytest.mark.parametrize("change, specializations", [
    (lambda x, y, n, t: (_Tensor((128,), "float16"), y, n, t), 2),  # another dtype
    (lambda x, y, n, t: (_Tensor((8, 16)), y, n, t), 2),            # another rank
    (lambda x, y, n, t: (x, y, np.int64(n), t), 2),                 # another scalar type
    (lambda x, y, n, t: (x, y, n, 32), 2),                          # another Constant value
    (lambda x, y, n, t: (_DeviceArray((128,)), y, n, t), 1),        # the same IR, read from another array type
])
def test_another_argument_profile_gets_its_own_launcher(gpu, change, specializations):
    touch = ct.kernel(_touch)
    args = (_Tensor((128,)), _Tensor((64, 32)), 5, 16)
    ct.launch(0, (1,), touch, args)
    ct.launch(0, (1,), touch, change(*args))
    ct.launch(0, (1,), touch, args)
    assert len(touch.launchers) == 2 and len(touch.specializations) == specializations and len(gpu.launches) == 3


def test_bad_arguments_after_launches_are_refused_as_on_the_first_launch(gpu):
    touch = ct.kernel(_touch)
    x, y = _Tensor((128,)), _Tensor((64, 32))
    ct.launch(0, (1,), touch, (x, y, 5, 16))
    with pytest.raises(ArgumentTypeError, match="argument #1: Objects of type 'str' are not supported.*parameter y"):
        ct.launch(0, (1,), touch, (x, "y", 5, 16))
    with pytest.raises(ArgumentTypeError, match=r"Kernel expects 4 arguments but 3 were given.*missing T"):
        ct.launch(0, (1,), touch, (x, y, 5))
    with pytest.raises(TypeError, match="Unsupported stream object of type 'str'"):
        ct.launch("default", (1,), touch, (x, y, 5, 16))
    with pytest.raises(ArgumentValueError, match=r"argument #2: 1099511627776 does not fit int32 \(parameter n\)"):
        ct.launch(0, (1,), touch, (x, y, 2**40, 16))
    wide = _Tensor((2, 2**31), strides=(2**31, 1))
    with pytest.raises(ArgumentValueError, match=r"argument #1: shape \(2, 2147483648\).*fit 32 bits \(parameter y"):
        ct.launch(0, (1,), touch, (x, wide, 5, 16))
    assert len(gpu.launches) == 1


def test_a_launcher_keeps_no_argument_alive(gpu):
    touch = ct.kernel(_touch)
    x, y = _Tensor((128,)), _Tensor((64, 32))
    ct.launch(0, (1,), touch, (x, y, 5, 16))
    watched = weakref.ref(x)
    del x
    gc.collect()
    assert watched() is None
