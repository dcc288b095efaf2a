"""ct.launch's fast path without a GPU: repeated launches take the kernel's last launcher and read
every argument anew, any change of the argument profile specializes anew, and bad arguments are
refused as the first launch refuses them. libcuda is the benchmark's stand-in, with a C-callable
cuLaunchKernelEx that records what each launch passes; loading a kernel is replaced by a handle.
Every test runs twice: with the launchers' C path (runtime/native_launch.c, where it builds) and
with the Python path alone."""
import ctypes
import gc
import struct
import sys
import types
import weakref

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tileworkbench.tile as ct
from benchmarks.launch_overhead import StandInDriver
from tileworkbench.errors import ArgumentTypeError, ArgumentValueError
from tileworkbench.runtime import driver
from tileworkbench.runtime import launch as runtime_launch
from tileworkbench.runtime import native_launch
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


_LAUNCH_KERNEL_EX = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
PARAMETER_BYTES_READ = 64  # of the parameters from the first one: all that these tests' kernels take


def _recorder(launches: list):
    """A cuLaunchKernelEx, callable from C, that records each launch as its configuration's bytes
    followed by those of its parameters (where the Python path's buffer has them)."""
    def launch(config, function, params, extra):
        first = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))[0]
        launches.append(ctypes.string_at(config, LAUNCH_CONFIG_BYTES) + ctypes.string_at(first, PARAMETER_BYTES_READ))
        return 0
    return _LAUNCH_KERNEL_EX(launch)


@pytest.fixture(params=["C", "Python"])
def path(request, monkeypatch):
    """Which launch path runs: the C launchers (skipped where they do not build) or Python's."""
    if request.param == "C" and native_launch.module() is None:
        pytest.skip(f"no C launcher here: {native_launch.unavailable()}")
    if request.param == "Python":
        monkeypatch.setenv(native_launch.ENV, "0")
    return request.param


@pytest.fixture
def gpu(path, stand_in_gpu):
    return stand_in_gpu


@pytest.fixture
def stand_in_gpu(monkeypatch):
    """Launches go to a stand-in libcuda that records each launch's buffer; loading gives a handle."""
    stand_in = StandInDriver()
    stand_in.launches = []
    stand_in.cuLaunchKernelEx = _recorder(stand_in.launches)
    monkeypatch.setattr(driver, "library", lambda: stand_in)
    driver.device_count.cache_clear()
    loaded = types.SimpleNamespace(compiled=types.SimpleNamespace(threads=64, dynamic_shared_bytes=0, name="touch",
                                                                  tensor_maps=(), registers=16),
                                   function=types.SimpleNamespace(ptr=0x2000))
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


@pytest.mark.skipif(native_launch.module() is None, reason="no C launcher here")
def test_c_launches_pack_and_launch_without_the_python_path(stand_in_gpu):
    gpu = stand_in_gpu
    touch = ct.kernel(_touch)
    x, y = _Tensor((128,), ptr=0x1000), _Tensor((64, 32), ptr=0x2000)
    ct.launch(0, (1,), touch, (x, y, 5, 16))
    python_path = touch.last_launcher.matches.__globals__  # the generated Python functions' namespace
    packed_by_python = []
    pack_into = python_path["pack_into"]
    python_path["pack_into"] = lambda *values: packed_by_python.append(values) or pack_into(*values)
    for n in (1, -7, 2**31 - 1):
        ct.launch(_Stream(0x10), (2, 3), touch, (x, y, n, 16))
    assert packed_by_python == [] and [_launched(b)[4] for b in gpu.launches] == [5, 1, -7, 2**31 - 1]
    with pytest.raises(ArgumentValueError, match="does not fit int32"):  # a value C leaves to Python
        ct.launch(0, (1,), touch, (x, y, 2**31, 16))
    assert len(packed_by_python) == 1


# ---- the C path against the Python path ------------------------------------------------------------

def _scalar_and_constant(x, s, T: ct.Constant[int]):
    pass


class _Stream:
    def __init__(self, handle):
        self.cuda_stream = handle


_INTEGER_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
_FLOAT_TYPES = {np.float16: 16, np.float32: 32, np.float64: 64}


@st.composite
def _scalars(draw):
    """(an example, a value of its type): Python ints, floats and bools, and NumPy scalars."""
    kind = draw(st.sampled_from([int, float, bool, *_INTEGER_TYPES, *_FLOAT_TYPES]))
    if kind is int:
        return 1, draw(st.integers(-2**70, 2**70))
    if kind is float:
        return 1.0, draw(st.floats(allow_nan=True, allow_infinity=True))
    if kind is bool:
        return True, draw(st.booleans())
    if kind in _FLOAT_TYPES:
        return kind(1), kind(draw(st.floats(width=_FLOAT_TYPES[kind], allow_nan=True, allow_infinity=True)))
    info = np.iinfo(kind)
    return kind(1), kind(draw(st.integers(int(info.min), int(info.max))))


_grids = st.one_of(st.tuples(st.integers(-1, 2**25)), st.tuples(st.integers(1, 8), st.integers(0, 2**24 + 1)),
                   st.tuples(*[st.integers(1, 4)] * 3), st.tuples(*[st.integers(1, 4)] * 4),
                   st.just(()), st.just([2]), st.just((True,)), st.just((np.int64(3),)))
_streams = st.one_of(st.integers(-2**65, 2**65), st.integers(0, 2**64 - 1).map(_Stream), st.just(None),
                     st.just("default"))


def _outcome(monkeypatch, stand_in, native: bool, example, value, stream, grid):
    """What one launch with `value` for s does after a launch with `example` made the launcher: the
    launch's bytes, or the error; the warnings; and how many launchers the kernel then has."""
    monkeypatch.setenv(native_launch.ENV, "1" if native else "0")
    kernel, x = ct.kernel(_scalar_and_constant), _Tensor((128,))
    ct.launch(0, (1,), kernel, (x, example, 4))
    assert (kernel.last_launcher.native is not None) == native
    stand_in.launches.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ct.launch(stream, grid, kernel, (x, value, 4))
            error = None
        except Exception as e:  # noqa: BLE001 - the error is the outcome compared
            error = (type(e), str(e))
    packed = [launch[:LAUNCH_CONFIG_BYTES + 24] for launch in stand_in.launches]  # x: 16 bytes, s: 8 at most
    return packed, error, [str(w.message) for w in caught], len(kernel.launchers)


@pytest.mark.skipif(native_launch.module() is None, reason="no C launcher here")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scalar=_scalars(), stream=_streams, grid=_grids)
def test_c_launches_pack_the_bytes_python_packs_and_refuse_what_python_refuses(monkeypatch, stand_in_gpu, scalar,
                                                                               stream, grid):
    example, value = scalar
    native = _outcome(monkeypatch, stand_in_gpu, True, example, value, stream, grid)
    python = _outcome(monkeypatch, stand_in_gpu, False, example, value, stream, grid)
    assert native == python


def test_launches_alternating_between_profiles_keep_to_the_launchers_used_last(gpu, monkeypatch):
    touch = ct.kernel(_touch)
    x, y = _Tensor((128,)), _Tensor((64, 32))
    profiles = [(x, y, 5, 16), (x, y, 5, 32), (_Tensor((128,), "float16"), y, 5, 16)]
    for args in profiles:
        ct.launch(0, (1,), touch, args)
    first, second, third = (touch.launchers[key] for key in touch.launchers)
    assert (touch.last_launcher, touch.earlier_launchers) == (third, (second, first))
    monkeypatch.setattr(runtime_launch, "Launcher", None)  # no launcher made or found by profile from here
    monkeypatch.setattr(type(touch), "profile_key", None)
    for args in profiles * 3:
        ct.launch(0, (2,), touch, args)
    assert [_launched(b)[0] for b in gpu.launches] == [(1, 1, 1)] * 3 + [(2, 1, 1)] * 9
    assert (touch.last_launcher, touch.earlier_launchers) == (third, (second, first))


def test_without_a_c_compiler_launches_take_the_python_path_and_say_why(stand_in_gpu, monkeypatch, tmp_path):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))  # nothing built there yet
    monkeypatch.setenv("PATH", str(tmp_path))                     # and no compiler to build with
    monkeypatch.delenv("CC", raising=False)
    native_launch._built.cache_clear()
    try:
        assert "no C compiler" in native_launch.unavailable()
        touch = ct.kernel(_touch)
        ct.launch(0, (3,), touch, (_Tensor((128,)), _Tensor((64, 32)), 5, 16))
        assert touch.last_launcher.native is None and _launched(stand_in_gpu.launches[0])[0] == (3, 1, 1)
    finally:
        native_launch._built.cache_clear()


def test_an_unwritable_cache_directory_leaves_launches_on_the_python_path(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(blocker))
    native_launch._built.cache_clear()
    try:
        assert native_launch.module() is None and "cannot build" in native_launch.unavailable()
    finally:
        native_launch._built.cache_clear()


def test_the_c_launcher_is_built_once_into_the_cache_directory(monkeypatch, tmp_path):
    if native_launch.unavailable():
        pytest.skip(native_launch.unavailable())
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    native_launch._built.cache_clear()
    try:
        assert native_launch.module() is not None
        (built,) = (tmp_path / "native").iterdir()
        assert built.name.startswith("launch-") and built.stat().st_size > 0
    finally:
        native_launch._built.cache_clear()


@pytest.mark.skipif(native_launch.module() is None, reason="no C launcher here")
def test_a_launch_made_while_another_reads_its_values_keeps_each_launchs_arguments(stand_in_gpu):
    """Python code run while a value is read (here a stream's property, which launches the same
    kernel, as another thread could at that point) does not change what the launch being read packs."""
    touch = ct.kernel(_touch)
    x, y = _Tensor((128,), ptr=0x1000), _Tensor((64, 32), ptr=0x2000)

    class LaunchingStream:
        @property
        def cuda_stream(self):
            ct.launch(0x22, (7,), touch, (_Tensor((16,), ptr=0x9000), y, 9, 16))
            return 0x11

    ct.launch(0, (1,), touch, (x, y, 5, 16))
    assert touch.last_launcher.native is not None
    ct.launch(LaunchingStream(), (2,), touch, (x, y, 6, 16))
    launched = [_launched(b) for b in stand_in_gpu.launches[1:]]
    assert [(grid, stream, x_fields[0], n) for grid, stream, x_fields, _, n in launched] == [
        ((7, 1, 1), 0x22, 0x9000, 9), ((2, 1, 1), 0x11, 0x1000, 6)]


def test_a_machines_first_launch_does_not_wait_for_the_c_compiler_and_moves_to_c_once_built(
        stand_in_gpu, monkeypatch, tmp_path):
    if native_launch.unavailable():
        pytest.skip(native_launch.unavailable())
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))  # nothing built there yet
    monkeypatch.setattr(native_launch, "_background_build", None)
    native_launch._built.cache_clear()
    try:
        early = ct.kernel(_touch)
        ct.launch(0, (1,), early, (_Tensor((128,)), _Tensor((64, 32)), 5, 16))
        assert early.last_launcher.native is None  # launched from Python while the module builds
        first = early.last_launcher
        native_launch._background_build.join()
        later = ct.kernel(_touch)
        ct.launch(0, (2,), later, (_Tensor((128,)), _Tensor((64, 32)), 5, 16))
        assert later.last_launcher.native is not None
        # the launcher made while the module built now launches from C too, the Python path unused
        assert early.last_launcher is first and first.native is not None and first.relaunch == first.native.relaunch
        python_path = first.matches.__globals__
        packed_by_python, pack_into = [], python_path["pack_into"]
        python_path["pack_into"] = lambda *values: packed_by_python.append(values) or pack_into(*values)
        ct.launch(0, (3,), early, (_Tensor((128,)), _Tensor((64, 32)), 6, 16))
        assert packed_by_python == []
        assert [_launched(b)[0] for b in stand_in_gpu.launches] == [(1, 1, 1), (2, 1, 1), (3, 1, 1)]
    finally:
        native_launch._built.cache_clear()


def test_arguments_in_a_named_tuple_launch_as_in_a_tuple(gpu):
    import collections
    Args = collections.namedtuple("Args", "x y n T")
    touch = ct.kernel(_touch)
    x, y = _Tensor((128,), ptr=0x1000), _Tensor((64, 32), ptr=0x2000)
    ct.launch(0, (1,), touch, Args(x, y, 5, 16))
    ct.launch(0, (2,), touch, Args(x, y, 6, 16))
    ct.launch(0, (3,), touch, (x, y, 7, 16))
    assert [(_launched(b)[0], _launched(b)[4]) for b in gpu.launches] == [((1, 1, 1), 5), ((2, 1, 1), 6), ((3, 1, 1), 7)]
    with pytest.raises(ArgumentTypeError, match="Kernel arguments must be a tuple, got list"):
        ct.launch(0, (1,), touch, [x, y, 5, 16])


def test_an_interpreter_switch_set_to_off_keeps_launches_on_the_fast_path(gpu, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "0")
    touch = ct.kernel(_touch)
    args = (_Tensor((128,)), _Tensor((64, 32)), 5, 16)
    ct.launch(0, (1,), touch, args)
    monkeypatch.setattr(type(touch), "profile_key", None)  # no launcher found by profile from here
    ct.launch(0, (2,), touch, args)
    assert [_launched(b)[0] for b in gpu.launches] == [(1, 1, 1), (2, 1, 1)]
