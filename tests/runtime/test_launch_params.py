"""The launch fast path's argument handling, without a GPU: parameter layout, the generated
matches/pack functions of a launcher, scalar packing, streams."""
import ctypes
import struct
import sys
import types
import warnings

import ml_dtypes
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import ArgumentValueError
from tileworkbench.ir.types import bfloat16, bool_, float16, float32, float64, int8, int64, to_dtype, uint16
from tileworkbench.runtime.arrays import stream_handle
from tileworkbench.runtime.launch import (LAUNCH_CONFIG, LAUNCH_CONFIG_BYTES, Launcher, _launch_buffer,
                                          _scalar_expression)

CTYPES = {"Q": ctypes.c_uint64, "i": ctypes.c_int32, "e": ctypes.c_uint16, "H": ctypes.c_uint16,
          "q": ctypes.c_int64, "?": ctypes.c_bool, "b": ctypes.c_int8, "d": ctypes.c_double, "f": ctypes.c_float,
          "2s": ctypes.c_uint16, "1s": ctypes.c_uint8}  # bfloat16 and fp8 scalars travel as their bytes


@pytest.mark.parametrize("codes", [["Q", "i", "i"], ["Q", "i", "e", "q", "?", "Q", "i", "i", "i", "i"],
                                   ["b", "d", "H", "f", "Q"], ["?"], ["?", "2s", "1s", "2s", "q"]])
def test_parameters_sit_where_a_c_struct_puts_them(codes):
    """CUDA lays kernel parameters out at their natural alignment, as a C struct does; they follow
    the launch configuration in the launcher's buffer."""
    struct_, buffer, params, _ = _launch_buffer(codes)

    class Params(ctypes.Structure):
        _fields_ = [(f"p{k}", CTYPES[c]) for k, c in enumerate(codes)]
    base = ctypes.addressof(buffer) + LAUNCH_CONFIG_BYTES
    assert [p - base for p in params] == [getattr(Params, f"p{k}").offset for k in range(len(codes))]
    assert struct_.size - LAUNCH_CONFIG_BYTES <= ctypes.sizeof(Params) <= len(buffer) - LAUNCH_CONFIG_BYTES


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig as cuda.h declares it."""
    _fields_ = [(name, ctypes.c_uint) for name in ("gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY",
                                                  "blockDimZ", "sharedMemBytes")] + [
        ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


def test_the_launch_configuration_is_laid_out_as_cuda_h_declares_it():
    struct_, buffer, _, _ = _launch_buffer(["Q"])
    buffer.raw = b"\xff" * len(buffer)  # the configuration's padding and attributes are written too
    struct_.pack_into(buffer, 0, 7, 8, 9, 128, 1, 1, 4096, 0xABCDEF, 0x1234)
    config = LaunchConfig.from_buffer(buffer)
    assert ctypes.sizeof(LaunchConfig) == LAUNCH_CONFIG_BYTES == struct.calcsize("=" + LAUNCH_CONFIG)
    assert [getattr(config, name) for name, _ in LaunchConfig._fields_] == [7, 8, 9, 128, 1, 1, 4096, 0xABCDEF,
                                                                           None, 0]


def test_packed_values_read_back_through_the_parameter_pointers():
    struct_, buffer, params, _ = _launch_buffer(["Q", "i", "i", "q"])
    struct_.pack_into(buffer, 0, *CONFIG, 0xDEADBEEF000, 7, -3, -2**40)
    read = [ctypes.c_uint64.from_address(params[0]).value, ctypes.c_int32.from_address(params[1]).value,
            ctypes.c_int32.from_address(params[2]).value, ctypes.c_int64.from_address(params[3]).value]
    assert read == [0xDEADBEEF000, 7, -3, -2**40]


CONFIG = (1, 1, 1, 32, 1, 1, 0, 0)  # grid, block, shared bytes, stream


def _packed(dtype, value) -> bytes:
    env = {}
    code, expression = _scalar_expression("x", dtype, value, env)
    struct_, buffer, _, _ = _launch_buffer([code])
    struct_.pack_into(buffer, 0, *CONFIG, eval(expression, env, {"x": value}))
    return buffer.raw[LAUNCH_CONFIG_BYTES:LAUNCH_CONFIG_BYTES + dtype.itemsize]


@pytest.mark.parametrize("dtype, value, bits", [
    (bfloat16, 1.5, 0x3FC0), (float16, 1.5, 0x3E00), (bool_, True, 1), (int8, -2, 0xFE), (uint16, 65535, 0xFFFF)])
def test_scalars_pack_to_their_bits(dtype, value, bits):
    assert int.from_bytes(_packed(dtype, value), "little") == bits


@pytest.mark.parametrize("value", [ml_dtypes.bfloat16(1.5), ml_dtypes.bfloat16(-0.0), ml_dtypes.bfloat16("nan"),
                                   ml_dtypes.float8_e4m3fn(-3.5), ml_dtypes.float8_e5m2(57344)])
def test_bfloat16_and_fp8_scalars_of_the_parameter_dtype_pack_their_own_bytes(value):
    dtype = to_dtype(np.dtype(type(value)))
    code, expression = _scalar_expression("x", dtype, value, {})
    assert (code, expression) == (f"{dtype.itemsize}s", "x.tobytes()")
    assert _packed(dtype, value) == value.tobytes()


def test_float32_scalars_round_as_numpy_does():
    assert np.frombuffer(_packed(float32, 0.1), np.float32)[0] == np.float32(0.1)
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert np.frombuffer(_packed(float32, 1e39), np.float32)[0] == np.inf
    assert _scalar_expression("x", int64, 5, {})[0] == "q"


_FLOAT32_TIE = float.fromhex("0x1.ffffffp+127")  # halfway from the largest float32 to 2**128: rounds to inf
_FLOAT32_EDGES = [_FLOAT32_TIE, np.nextafter(_FLOAT32_TIE, 0), np.nextafter(_FLOAT32_TIE, np.inf),
                  float(np.finfo(np.float32).max), 1e39, 1e-46,
                  1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24, -0.0, float("nan"), float("inf")]


@pytest.mark.parametrize("value", _FLOAT32_EDGES + [-v for v in _FLOAT32_EDGES])
def test_python_floats_pack_to_the_float32_numpy_rounds_them_to(value):
    with np.errstate(over="ignore"):
        expected = np.float32(value).tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _packed(float32, value) == expected


def test_random_python_floats_pack_as_numpy_rounds_them():
    values = np.random.default_rng(0).standard_normal(2000) * 2.0 ** np.random.default_rng(1).integers(-150, 129, 2000)
    for value in values.tolist():
        with np.errstate(over="ignore"):
            assert _packed(float32, value) == np.float32(value).tobytes(), value


@pytest.mark.parametrize("value", [np.float16(1.5), np.float16(-np.inf), np.float32(0.1), np.float32(np.nan),
                                   np.float64(0.1), np.float64(-0.0)])
def test_numpy_scalars_of_the_parameter_dtype_pack_unconverted(value):
    dtype = {np.float16: float16, np.float32: float32, np.float64: float64}[type(value)]
    assert _scalar_expression("x", dtype, value, {})[1] == "x"
    assert _packed(dtype, value) == value.tobytes()


class _Memory:
    def __init__(self, ptr):
        self.ptr = ptr


class _CupyArray:
    """What the fast path reads of a CuPy array; the `launches` fixture makes it `cupy.ndarray`."""

    def __init__(self, shape, dtype=np.float32, ptr=0x7000):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.ndim, self.itemsize, self.data = len(shape), self.dtype.itemsize, _Memory(ptr)
        self.strides = tuple(int(s) for s in np.empty(shape, dtype).strides)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False), "version": 3}


@ct.kernel
def _scaled_copy(x, y, alpha, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i, 0), ct.load(x, (i, 0), (TILE, TILE)) * alpha)


@pytest.fixture
def launches(monkeypatch):
    """Launchers built with a recording driver call and device 0 current."""
    from tileworkbench.runtime import driver
    calls = []

    def launch_kernel(*call):
        calls.append(call)
        return driver.CUDA_SUCCESS
    monkeypatch.setattr(driver, "launch_kernel_function", lambda: launch_kernel)
    monkeypatch.setattr(driver, "current_device", lambda: 0)
    monkeypatch.setattr(driver, "device_count", lambda: 2)  # launchers then check the current device
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(ndarray=_CupyArray))
    return calls


def _launcher(args, kernel=_scaled_copy):
    fn = kernel.specialize(args)
    gpu = types.SimpleNamespace(compiled=types.SimpleNamespace(threads=128, dynamic_shared_bytes=0, name="k",
                                                               tensor_maps=()),
                                function=types.SimpleNamespace(ptr=1))
    return Launcher(fn, gpu, args, device=0)


def _compiled_stand_in(generated):
    """What a launcher reads of a compiled record, from generated code (no NVRTC)."""
    return types.SimpleNamespace(threads=generated.threads, dynamic_shared_bytes=generated.smem_bytes,
                                 name=generated.name, tensor_maps=tuple(generated.tensor_maps), registers=32)


def _matmul_launcher(args, monkeypatch, maps):
    """A launcher of the sm_90 matmul (two TMA loads) whose tensor maps are `maps(call)`, the
    arguments of each tensor_maps.encode call recorded in `calls`."""
    from tileworkbench.codegen import generate
    from tileworkbench.kernels import matmul
    from tileworkbench.runtime import tensor_maps
    calls = []
    monkeypatch.setattr(tensor_maps, "encode", lambda *call: calls.append(call) or maps(call))
    fn = matmul.specialize(args)
    gpu = types.SimpleNamespace(compiled=_compiled_stand_in(generate(fn, arch="sm_90")),
                                function=types.SimpleNamespace(ptr=1), arch="sm_90")
    return Launcher(fn, gpu, args, device=0), calls


def test_tensor_maps_are_packed_after_the_other_parameters_64_byte_aligned(launches, monkeypatch):
    a, b, c = _CupyArray((256, 192), np.float16, 0x1000), _CupyArray((192, 512), np.float16, 0x2000), \
        _CupyArray((256, 512), np.float16, 0x3000)
    args = (a, b, c, 128, 256, 64)
    launcher, calls = _matmul_launcher(args, monkeypatch, lambda call: bytes([call[1] >> 12]) * 128)
    launcher(0, (2, 2, 1), args)
    assert calls == [("float16", 0x1000, (256, 192), (192, 1), (128, 64), 128),
                     ("float16", 0x2000, (192, 512), (512, 1), (64, 64), 128)]
    start = ctypes.addressof(launcher.buffer)
    *_, map_a, map_b = [p - start for p in launcher.params]
    first = LAUNCH_CONFIG_BYTES  # the parameters start after the launch configuration
    assert (map_a - first) % 64 == 0 and (map_b - first) % 64 == 0
    assert launcher.params[-2] % 64 == 0 and launcher.params[-1] % 64 == 0  # as CUtensorMap is, in host memory
    assert map_a - first >= struct.calcsize("=" + "Qiiii" * 3)
    assert launcher.buffer.raw[map_a:map_a + 128] == b"\x01" * 128
    assert launcher.buffer.raw[map_b:map_b + 128] == b"\x02" * 128
    assert len(launches) == 1


def test_arrays_no_tensor_map_describes_launch_the_variant_without_tma(launches, monkeypatch):
    from tileworkbench.runtime import launch
    loaded = []

    def load(fn, arch, tma):
        loaded.append((arch, tma))
        gpu = types.SimpleNamespace(compiled=_compiled_stand_in(launch.generate(fn, arch=arch, tma=tma)),
                                    function=types.SimpleNamespace(ptr=2), arch=arch)
        return gpu
    monkeypatch.setattr(launch, "load", load)
    a, b, c = _CupyArray((256, 130), np.float16), _CupyArray((130, 512), np.float16), _CupyArray((256, 512), np.float16)
    args = (a, b, c, 128, 256, 64)
    launcher, _ = _matmul_launcher(args, monkeypatch, lambda call: None)
    launcher(0, (2, 2, 1), args)
    launcher(0, (2, 2, 1), args)
    assert loaded == [("sm_90", False)]  # loaded once, on first need
    assert not launcher.fallback.gpu.compiled.tensor_maps
    assert [call[1].value for call in launches] == [2, 2]  # both launches ran the variant


def test_launcher_packs_pointer_shape_strides_and_scalars_in_parameter_order(launches):
    x, y = _CupyArray((64, 48), ptr=0x1000), _CupyArray((64, 48), ptr=0x2000)
    launcher = _launcher((x, y, 2.5, 16))
    launcher(0x77, (3, 1, 1), (x, y, 2.5, 16))
    fields = struct.unpack_from("=" + "Qiiii" * 2 + "f", launcher.buffer, LAUNCH_CONFIG_BYTES)
    assert fields == (0x1000, 64, 48, 48, 1, 0x2000, 64, 48, 48, 1, 2.5)
    (call,) = launches
    config, function, params, extra = call
    launch = LaunchConfig.from_buffer(config)
    assert (launch.gridDimX, launch.gridDimY, launch.gridDimZ, launch.blockDimX, launch.sharedMemBytes,
            launch.hStream) == (3, 1, 1, 128, 0, 0x77)
    assert function.value == 1 and params is launcher.params and extra is None
    assert "a0.data.ptr" in launcher.source


def test_launcher_matches_only_its_argument_profile(launches):
    x, y = _CupyArray((64, 48)), _CupyArray((64, 48))
    launcher = _launcher((x, y, 2.5, 16))
    assert launcher.matches((_CupyArray((8, 8)), _CupyArray((4, 4)), 1.0, 16))  # shapes may change
    assert not launcher.matches((x, y, 2.5, 32))  # another Constant: another specialization
    assert not launcher.matches((x, _CupyArray((64, 48), np.float16), 2.5, 16))  # another dtype
    assert not launcher.matches((x, _CupyArray((64,)), 2.5, 16))  # another rank
    assert not launcher.matches((x, y, 2, 16))  # an int is another scalar type
    assert not launcher.matches((x, y, 2.5))
    assert not launcher.relaunch(0, (1, 1, 1), (x, y, 2.5, 32)) and not launches  # nothing launched


@ct.kernel
def _sum_list(arrays, out):
    acc = ct.zeros((16,), out.dtype)
    for i in range(len(arrays)):
        acc += ct.load(arrays[i], (0,), (16,))
    ct.store(out, (0,), acc)


def _list_launcher(args, monkeypatch, capturing=False):
    from tileworkbench.runtime import driver
    monkeypatch.setattr(driver, "stream_is_capturing", lambda stream: capturing)
    return _launcher(args, _sum_list)


def test_a_list_argument_packs_each_array_as_its_own_parameters(launches, monkeypatch):
    items = [_CupyArray((16,), ptr=0x1000), _CupyArray((40,), ptr=0x2000)]
    out = _CupyArray((16,), ptr=0x3000)
    launcher = _list_launcher((items, out), monkeypatch)
    launcher(0, (1, 1, 1), (items, out))
    assert struct.unpack_from("=" + "Qii" * 3, launcher.buffer, LAUNCH_CONFIG_BYTES) == \
        (0x1000, 16, 1, 0x2000, 40, 1, 0x3000, 16, 1)
    assert launcher.matches(([_CupyArray((8,)), _CupyArray((8,))], out))  # shapes may change
    assert not launcher.matches(([_CupyArray((8,))] * 3, out))  # another length: another specialization
    assert not launcher.matches(([_CupyArray((8,)), _CupyArray((8,), np.float16)], out))
    assert not launcher.matches((tuple(items), out))
    assert "# _sum_list(a0: arrays, a1: out)" in launcher.source


def test_a_list_argument_is_refused_in_cuda_graph_capture(launches, monkeypatch):
    items, out = [_CupyArray((16,))], _CupyArray((16,))
    launcher = _list_launcher((items, out), monkeypatch, capturing=True)
    with pytest.raises(RuntimeError, match="List argument in CUDAGraph isn't supported yet"):
        launcher(0x77, (1, 1, 1), (items, out))
    assert not launches


@ct.kernel
def _scaled_pair(pair, out, config):
    (alpha, n), beta = config
    ct.store(out, (0,), ct.load(pair[0], (0,), (16,)) * alpha + ct.load(pair[1], (0,), (16,)) * beta + n)


def test_a_tuple_argument_packs_its_arrays_and_scalars_in_order(launches):
    pair, out = (_CupyArray((16,), ptr=0x1000), _CupyArray((32,), ptr=0x2000)), _CupyArray((16,), ptr=0x3000)
    args = (pair, out, ((2.5, 7), 0.5))
    launcher = _launcher(args, _scaled_pair)
    launcher(0, (1, 1, 1), args)
    fields = struct.unpack(launcher.struct.format, launcher.buffer.raw[:launcher.struct.size])[len(CONFIG):]
    assert fields == (0x1000, 16, 1, 0x2000, 32, 1, 0x3000, 16, 1, 2.5, 7, 0.5)
    assert launcher.matches(((pair[1], pair[0]), out, ((1.0, 1), 2.0)))
    assert not launcher.matches(((pair[1], pair[0]), out, ((1.0, 1.5), 2.0)))  # a float for an int
    assert not launcher.matches(([pair[1], pair[0]], out, ((1.0, 1), 2.0)))  # a list for a tuple
    assert "# _scaled_pair(a0: pair, a1: out, a2: config)" in launcher.source


def test_shapes_beyond_32_bits_are_refused_before_launching_naming_the_parameter(launches):
    x, y = _CupyArray((64, 48)), _CupyArray((64, 48))
    launcher = _launcher((x, y, 2.5, 16))
    big = _CupyArray((2**31, 1))
    with pytest.raises(ArgumentValueError, match=r"argument #0: shape \(2147483648, 1\).*32 bits \(parameter x\)"):
        launcher(0, (1, 1, 1), (big, y, 2.5, 16))
    assert not launches


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



class FakeTorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class FakeTorchTensor:
    """What a PyTorch tensor shows a launch: its __cuda_array_interface__ raises for fp8 dtypes
    (KeyError) and for tensors that require grad (RuntimeError)."""

    def __init__(self, dtype_name, error):
        self.dtype, self.ndim, self._error = FakeTorchDtype(dtype_name), 1, error

    @property
    def __cuda_array_interface__(self):
        raise self._error

    def data_ptr(self):
        return 0


FakeTorchDtype.__module__ = "torch"


@ct.kernel
def copy_tile(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (16,)))


@pytest.mark.parametrize("dtype_name, error", [
    ("float8_e4m3fn", KeyError("torch.float8_e4m3fn")),
    ("float32", RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad"))])
def test_a_torch_tensor_is_an_array_even_where_its_cuda_array_interface_raises(dtype_name, error, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=FakeTorchTensor))
    x = FakeTorchTensor(dtype_name, error)
    specs = copy_tile.param_specs((x, x))
    assert [str(s.type) for s in specs] == [f"array<{dtype_name}, 1d>"] * 2


class _MaybeStream:
    def __init__(self, handle):
        if handle is not None:
            self.cuda_stream = handle


def test_each_stream_of_a_class_is_read_anew():
    assert [stream_handle(_MaybeStream(h)) for h in (5, 6)] == [5, 6]
    with pytest.raises(TypeError, match="Unsupported stream object of type '_MaybeStream'"):
        stream_handle(_MaybeStream(None))  # an instance without the handle its class's others had
