"""C++ cell kernels: finding the kernel, reading its parameters back from PTX, packing arguments as
the compiler laid them out, and compile errors at the cell's line with the quoted token underlined."""
import struct

import numpy as np
import pytest

from tileworkbench.errors import TileCompilerExecutionError
from tileworkbench.runtime.cpp import CppKernel, _token_range
from tileworkbench.runtime.nvrtc import NvrtcError

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

SOURCE = '''#include <tileworkbench/tile.cuh>
extern "C" __global__ void __launch_bounds__(256) axpy(const float* __restrict__ x, float* y, int n, float a,
                                                       __half h, long long m, double d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + __half2float(h) + float(m) + float(d);
}
__global__ void fill(int* p, unsigned char v) { p[threadIdx.x] = v; }
'''


class FakeDeviceArray:
    """Anything with __cuda_array_interface__ is a device array; its pointer is what gets packed."""

    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (4,), "typestr": "<f4", "version": 3,
                                         "strides": None}
        self.ndim, self.dtype = 1, np.dtype(np.float32)


def test_the_last_global_function_is_the_kernel_unless_one_is_named():
    assert CppKernel(SOURCE, "<c>").name == "fill"
    axpy = CppKernel(SOURCE, "<c>", "axpy")
    assert axpy.declarations == ["const float* __restrict__ x", "float* y", "int n", "float a", "__half h",
                                 "long long m", "double d"]
    with pytest.raises(TileCompilerExecutionError, match="no __global__ function named 'scale' .*axpy, fill"):
        CppKernel(SOURCE, "<c>", "scale")
    with pytest.raises(TileCompilerExecutionError, match="must define a kernel"):
        CppKernel("int f() { return 1; }", "<c>")


def test_parameters_come_from_the_ptx_entry():
    kernel = CppKernel(SOURCE, "<c>", "axpy")
    got = [(p.name, p.ptx_type, p.size, p.align, p.pointer) for p in kernel.parameters("sm_80")]
    assert got == [("x", ".u64", 8, 8, True), ("y", ".u64", 8, 8, True), ("n", ".u32", 4, 4, False),
                   ("a", ".f32", 4, 4, False), ("h", ".b8", 2, 2, False), ("m", ".u64", 8, 8, False),
                   ("d", ".f64", 8, 8, False)]
    assert kernel.resources("sm_80").max_threads == 256


def test_a_kernel_without_extern_c_is_found_by_its_mangled_name():
    kernel = CppKernel(SOURCE, "<c>")
    assert kernel.cubin_name("sm_90") == "_Z4fillPih"
    assert [p.ptx_type for p in kernel.parameters("sm_90")] == [".u64", ".u8"]


TEMPLATE = '''namespace ops {
template <typename T, int TILE>
__global__ void scale(const T* x, T* y, int n, T a) {
  int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
}
'''


def test_a_template_instance_named_on_the_header_is_compiled_and_found():
    kernel = CppKernel(TEMPLATE, "<c>", "ops::scale<double, 128>")
    assert (kernel.name, repr(kernel)) == ("scale", "<C++ tile kernel ops::scale<double, 128>(const T* x, T* y, int n, T a)>")
    assert kernel.cubin_name("sm_90") == "_ZN3ops5scaleIdLi128EEEvPKT_PS1_iS1_"
    assert [(p.name, p.ptx_type, p.size) for p in kernel.parameters("sm_90")] == [
        ("x", ".u64", 8), ("y", ".u64", 8), ("n", ".u32", 4), ("a", ".f64", 8)]
    float_kernel = CppKernel(TEMPLATE, "<c>", "ops::scale<float, 128>")
    assert float_kernel.parameters("sm_90")[3].ptx_type == ".f32"


def test_a_template_needs_its_arguments_and_a_wrong_name_is_an_error_at_the_header():
    with pytest.raises(TileCompilerExecutionError, match=r"`scale` is a function template <typename T, int TILE>: .*\"scale<float, 128>\""):
        CppKernel(TEMPLATE, "<c>")
    header = '%%tilekernel --lang cpp "ops::scale<flaot, 128>"'
    kernel = CppKernel(TEMPLATE, "<c>", "ops::scale<flaot, 128>", first_line=2, name_at=(1, header))
    with pytest.raises(NvrtcError) as info:
        kernel.compile("sm_90")
    error = info.value
    assert error.message.startswith('the kernel name `ops::scale<flaot, 128>`: identifier "flaot" is undefined')
    assert (error.loc.line, header[error.loc.col:error.loc.end_col]) == (1, "ops::scale<flaot, 128>")
    with pytest.raises(NvrtcError, match=r"the kernel name `scale`: identifier \"scale\" is undefined"):
        CppKernel(TEMPLATE.replace("template <typename T, int TILE>", "using T = float; constexpr int TILE = 4;"),
                  "<c>").compile("sm_90")  # in a namespace: the name needs it


def test_arguments_are_packed_at_the_compilers_offsets():
    kernel = CppKernel(SOURCE, "<c>", "axpy")
    data = kernel.pack((FakeDeviceArray(0x1000), FakeDeviceArray(0x2000), 10, 2.5, 1.0, -3, 0.25), "sm_90")
    # x@0 y@8 n@16 a@20 h@24 (2 bytes, then 6 of padding) m@32 d@40
    assert len(data) == 48
    assert struct.unpack_from("=QQifH", data, 0) == (0x1000, 0x2000, 10, 2.5, np.float16(1.0).view(np.uint16))
    assert struct.unpack_from("=qd", data, 32) == (-3, 0.25)


def test_wrong_arguments_are_refused_with_the_declaration_they_missed():
    kernel = CppKernel(SOURCE, "<c>", "axpy")
    good = [FakeDeviceArray(1), FakeDeviceArray(2), 10, 2.5, 1.0, 3, 0.5]
    with pytest.raises(TypeError, match=r"takes 7 arguments, 2 were given"):
        kernel.pack(tuple(good[:2]), "sm_90")
    with pytest.raises(TypeError, match=r"argument #1 for `float\* y`: expected a device array, got int"):
        kernel.pack(tuple(good[:1] + [5] + good[2:]), "sm_90")
    with pytest.raises(TypeError, match=r"argument #0 .*NumPy array lives on the host"):
        kernel.pack(tuple([np.zeros(4, np.float32)] + good[1:]), "sm_90")
    with pytest.raises(TypeError, match=r"argument #2 for `int n`: expected an int, got float"):
        kernel.pack(tuple(good[:2] + [1.5] + good[3:]), "sm_90")
    with pytest.raises(OverflowError, match=r"argument #2 for `int n`: 4294967296 does not fit 32 bits"):
        kernel.pack(tuple(good[:2] + [2**32] + good[3:]), "sm_90")
    with pytest.raises(TypeError, match=r"argument #2 for `int n`: an array is passed as a device pointer"):
        kernel.pack(tuple(good[:2] + [FakeDeviceArray(3)] + good[3:]), "sm_90")


def test_compile_errors_point_at_the_cell_line_and_the_quoted_token():
    cell = 'extern "C" __global__ void f(float* x) {\n  x[0] = scale * 2;\n}\n'
    kernel = CppKernel(cell, "<tilekernel-7>", first_line=2)  # the cell's header is line 1
    with pytest.raises(TileCompilerExecutionError) as info:
        kernel.compile("sm_90")
    loc = info.value.loc
    assert info.value.message == 'identifier "scale" is undefined'
    assert (loc.filename, loc.line, loc.col, loc.end_col) == ("<tilekernel-7>", 3, 9, 14)
    assert loc.source_line == "  x[0] = scale * 2;"


def test_several_errors_say_how_many_more_there_are():
    kernel = CppKernel('extern "C" __global__ void f(float* x) {\n  x[0] = p;\n  x[1] = q;\n}\n', "<c>", first_line=2)
    with pytest.raises(TileCompilerExecutionError, match=r'"p" is undefined \(and 1 more error: `--show log`'):
        kernel.compile("sm_90")


def test_token_range_falls_back_to_the_line_without_indentation():
    assert _token_range('    y = x + 1;', 'expected a ";"') == (4, 14)
    assert _token_range('  return;  ', 'identifier "q" is undefined') == (2, 9)
    assert _token_range('  y = xs + x;', 'identifier "x" is undefined') == (11, 12)  # whole words only


def test_a_tile_of_another_rank_than_its_array_is_a_compile_error_at_the_users_line():
    source = '''#include <tileworkbench/tile.cuh>
extern "C" __global__ void wrong_rank(float* x_ptr, int n) {
  const tw::array<float, 1> x{x_ptr, {n}, {1}};
  tw::store<tw::shape<16, 16>>(x, tw::at(int(blockIdx.x)), tw::full<float, tw::shape<16, 16>>(1.0f));
}
'''
    with pytest.raises(NvrtcError) as info:
        CppKernel(source, "<c>", first_line=2).compile("sm_90")
    assert info.value.message == 'static assertion failed with "a tile has the rank of the array it is loaded from or stored to"'
    assert info.value.loc.line == 5 and "tw::store<tw::shape<16, 16>>" in info.value.loc.source_line


def test_a_comment_in_the_parameter_list_is_not_a_parameter_and_a_commented_out_kernel_is_not_a_kernel():
    source = """// __global__ void old(float* x) {}
/* __global__ void older(float* x, int n) {} */
__global__ void scale(const float* x,  // input, row-major
                      float* y,        /* output, same shape */
                      int n) {}
"""
    kernel = CppKernel(source, "<cell>")
    assert kernel.name == "scale"
    assert kernel.declarations == ["const float* x", "float* y", "int n"]
    with pytest.raises(TileCompilerExecutionError, match="defines scale"):
        CppKernel(source, "<cell>", "old")


def test_a_16_bit_float_scalar_of_a_tile_kernel_is_packed_in_its_declared_format():
    import ml_dtypes

    from tileworkbench.runtime.tile_cpp import TileCppKernel
    kernel = TileCppKernel("#include <cuda_tile.h>\n__tile_global__ void k(__nv_bfloat16 a, __half b, float c) {}\n",
                           "<cell>")
    packed = kernel.pack((1.5, 1.5, 1.5), "sm_90")
    assert packed[:2] == np.asarray(1.5, ml_dtypes.bfloat16).tobytes() != np.float16(1.5).tobytes()
    assert packed[2:4] == np.float16(1.5).tobytes() and packed[4:] == np.float32(1.5).tobytes()
