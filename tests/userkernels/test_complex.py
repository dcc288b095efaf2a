"""CuPy-style kernels on complex arrays: complex<float>/complex<double> as CuPy spells them,
thrust::complex's promotion, the math functions defined on complex values, casts to real types
taking the real part, sums over complex values, and clear errors where complex numbers have no order."""
import numpy as np
import pytest

import tileworkbench
from tileworkbench.errors import ArgumentTypeError, TileTypeError, TileUnsupportedFeatureError

RNG = np.random.default_rng(11)


def _complex(shape, dtype):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_generic_add_takes_a_complex_array_and_a_numpy_complex_scalar(dtype):
    add = tileworkbench.ElementwiseKernel("T x, T y", "T z", "z = x + y")
    x = _complex((4, 5), dtype)
    z = add(x, dtype(2 - 1j))
    assert z.dtype == dtype
    np.testing.assert_array_equal(z, x + dtype(2 - 1j))


def test_exp_log_abs_conj_real_imag_on_complex128_match_numpy():
    kernel = tileworkbench.ElementwiseKernel(
        "T x, T y", "T z, float64 r",
        "z = exp(x) * conj(y) - log(x) / (y + complex<double>(2)); r = abs(x) + real(y) * imag(x)")
    x, y = _complex(64, np.complex128), _complex(64, np.complex128)
    z, r = kernel(x, y)
    np.testing.assert_allclose(z, np.exp(x) * np.conj(y) - np.log(x) / (y + 2), rtol=1e-12)
    np.testing.assert_allclose(r, np.abs(x) + y.real * x.imag, rtol=1e-12)


def test_complex_is_made_from_its_two_parts_as_in_cpp():
    kernel = tileworkbench.ElementwiseKernel("float32 t, float32 r", "complex64 z, complex128 c",
                                             "z = complex<float>(cos(t), sin(t)) * r; c = complex<double>(1, -2)")
    t, r = np.linspace(0, 3, 16).astype(np.float32), np.float32(2)
    z, c = kernel(t, r)
    np.testing.assert_allclose(z, 2 * np.exp(1j * t), rtol=1e-6, atol=1e-6)
    assert c.tolist() == [1 - 2j] * 16


def test_complex_float_with_a_double_is_complex_double_as_in_thrust():
    kernel = tileworkbench.ElementwiseKernel("complex64 x, float64 f", "complex128 z", "auto w = x * f; z = w")
    x, f = _complex(8, np.complex64), RNG.standard_normal(8)
    np.testing.assert_allclose(kernel(x, f), x.astype(np.complex128) * f, rtol=1e-12)


def test_assigning_a_complex_value_to_a_real_output_keeps_the_real_part():
    kernel = tileworkbench.ElementwiseKernel("complex64 x", "float32 y, int32 n", "y = x; n = x")
    x = np.array([1.5 + 2j, -2.5 - 1j, 7 + 4j], np.complex64)
    y, n = kernel(x)
    assert y.tolist() == [1.5, -2.5, 7.0] and n.tolist() == [1, -2, 7]


def test_reduction_kernel_sums_complex_values_along_an_axis():
    kernel = tileworkbench.ReductionKernel("T x", "T y", "x * conj(x) + x", "a + b", "y = a", "0")
    x = _complex((6, 300), np.complex64)
    np.testing.assert_allclose(kernel(x, axis=1), (x * np.conj(x) + x).sum(1), rtol=1e-5)


def test_a_max_reduction_of_complex_values_is_refused_at_the_reduce_expression():
    kernel = tileworkbench.ReductionKernel("T x", "T y", "x", "max(a, b)", "y = a", "0")
    with pytest.raises(TileTypeError, match="A max reduction of complex<float>: complex numbers have no order") as e:
        kernel(_complex(16, np.complex64))
    assert "max(a, b)" in str(e.value)


def test_ordering_comparison_of_complex_values_is_refused_at_the_operator():
    kernel = tileworkbench.ElementwiseKernel("T x, T y", "bool z", "z = x < y")
    with pytest.raises(TileTypeError, match="'<' does not apply to complex<float>: complex numbers have no order"):
        kernel(_complex(4, np.complex64), _complex(4, np.complex64))


def test_equality_of_complex_values_compares_both_parts():
    kernel = tileworkbench.ElementwiseKernel("T x, T y", "bool z, bool n", "z = x == y; n = x != y")
    x = np.array([1 + 1j, 1 + 2j, 3 + 0j], np.complex64)
    z, n = kernel(x, np.array([1 + 1j, 1 - 2j, 3 + 0j], np.complex64))
    assert z.tolist() == [True, False, True] and n.tolist() == [False, True, False]


def test_a_math_function_not_defined_here_on_complex_values_says_which_are():
    kernel = tileworkbench.ElementwiseKernel("T x", "T z", "z = sin(x)")
    with pytest.raises(TileUnsupportedFeatureError, match=r"sin\(\) of complex<float> is not supported; on complex "
                                                          "values: exp, log, abs, conj, real and imag"):
        kernel(_complex(4, np.complex64))


def test_a_complex_scalar_for_a_real_parameter_is_refused():
    kernel = tileworkbench.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y")
    with pytest.raises(ArgumentTypeError, match="a complex scalar for a parameter of type float32"):
        kernel(np.zeros(3, np.float32), 1j)


def test_complex_type_names_of_the_parameter_list_are_numpy_names():
    kernel = tileworkbench.ElementwiseKernel("complex128 x", "complex128 z", "z = conj(x)")
    x = _complex(5, np.complex128)
    np.testing.assert_array_equal(kernel(x), np.conj(x))
