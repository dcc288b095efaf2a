"""C's arithmetic in kernel bodies, checked against NumPy formulations of the same C rules."""
import numpy as np
import pytest

from tileworkbench import ElementwiseKernel

RNG = np.random.default_rng(7)


def kernel(in_params, out_params, body):
    return ElementwiseKernel(in_params, out_params, body, "semantics")


def test_integer_division_truncates_toward_zero():
    x = RNG.integers(-50, 50, 200).astype(np.int32)
    y = RNG.choice([-7, -3, -1, 1, 2, 5], 200).astype(np.int32)
    got = kernel("int32 x, int32 y", "int32 z", "z = x / y")(x, y)
    np.testing.assert_array_equal(got, np.trunc(x / y).astype(np.int32))


def test_remainder_has_the_sign_of_the_dividend():
    x = RNG.integers(-50, 50, 200).astype(np.int64)
    y = RNG.choice([-7, -3, 2, 5], 200).astype(np.int64)
    got = kernel("int64 x, int64 y", "int64 z", "z = x % y")(x, y)
    np.testing.assert_array_equal(got, np.fmod(x, y))


def test_small_integers_are_promoted_to_int_before_arithmetic():
    x = np.array([100, -100, 127, 3], np.int8)
    y = np.array([100, 100, 2, -3], np.int8)
    got = kernel("int8 x, int8 y", "int16 z", "z = x * y")(x, y)
    np.testing.assert_array_equal(got, (x.astype(np.int32) * y).astype(np.int16))


def test_unsigned_arithmetic_wraps_after_promotion():
    x = np.array([0, 1, 255], np.uint8)
    got = kernel("uint8 x", "uint8 z", "z = x - 1")(x)
    np.testing.assert_array_equal(got, np.array([255, 0, 254], np.uint8))
    shifted = kernel("uint8 x", "int32 z", "z = x - 1")(x)   # int arithmetic: -1 stays -1
    np.testing.assert_array_equal(shifted, [-1, 0, 254])


def test_signed_and_unsigned_int_compare_as_unsigned():
    x = np.array([-1, 0, 5], np.int32)
    y = np.array([1, 1, 1], np.uint32)
    got = kernel("int32 x, uint32 y", "bool z", "z = x < y")(x, y)
    np.testing.assert_array_equal(got, x.astype(np.uint32) < y)


def test_a_double_literal_computes_in_double_and_a_float_literal_in_float():
    x = RNG.random(1000).astype(np.float32) * 100
    double = kernel("float32 x", "float32 z", "z = x * 0.1")(x)
    single = kernel("float32 x", "float32 z", "z = x * 0.1f")(x)
    np.testing.assert_array_equal(double, (x.astype(np.float64) * 0.1).astype(np.float32))
    np.testing.assert_array_equal(single, x * np.float32(0.1))
    assert (double != single).any()   # the two really differ for some x


def test_integer_division_then_conversion_to_float():
    x = np.array([7, -7, 3], np.int32)
    got = kernel("int32 x", "float32 z", "z = x / 2")(x)
    np.testing.assert_array_equal(got, np.array([3, -3, 1], np.float32))


def test_casts_truncate_floats_and_wrap_integers():
    x = np.array([-2.7, 2.7, 300.5], np.float32)
    got = kernel("float32 x", "int32 z, uint8 w", "z = (int)x; w = static_cast<unsigned char>((int)x)")(x)
    np.testing.assert_array_equal(got[0], [-2, 2, 300])
    np.testing.assert_array_equal(got[1], np.array([-2, 2, 300]).astype(np.uint8))


def test_right_shift_of_a_negative_int_is_arithmetic():
    x = np.array([-16, 16, -1], np.int32)
    got = kernel("int32 x", "int32 z", "z = (x >> 2) ^ (x << 1)")(x)
    np.testing.assert_array_equal(got, (x >> 2) ^ (x << 1))


def test_if_else_and_the_conditional_operator_choose_per_element():
    x = RNG.standard_normal(100).astype(np.float32)
    body = """
        float m;
        if (x > 0) { m = x; } else if (x < -1) m = -2 * x; else { m = 0; }
        z = m > 1.5f ? 1.5f : m;
    """
    got = kernel("float32 x", "float32 z", body)(x)
    m = np.where(x > 0, x, np.where(x < -1, (-2 * x.astype(np.float64)).astype(np.float32), 0))
    np.testing.assert_array_equal(got, np.where(m > 1.5, np.float32(1.5), m))


def test_an_output_assigned_on_some_paths_keeps_its_contents_elsewhere():
    x = np.arange(6, dtype=np.int32)
    z = np.full(6, -1, np.int32)
    kernel("int32 x", "int32 z", "if (x % 2 == 0) z = x * 10")(x, z)
    assert z.tolist() == [0, -1, 20, -1, 40, -1]


def test_compound_assignment_reads_the_given_output():
    x = np.arange(4, dtype=np.float32)
    z = np.full(4, 10, np.float32)
    kernel("float32 x", "float32 z", "z += x; z *= 2; z--")(x, z)
    assert z.tolist() == [19, 21, 23, 25]


def test_math_functions_follow_their_argument_types():
    x = np.array([1, 4, 9], np.int32)
    got = kernel("int32 x", "float64 z, float32 w, int32 m", "z = sqrt(x); w = sqrtf(x) + fabsf(-x); m = max(x, 5)")(x)
    np.testing.assert_array_equal(got[0], np.sqrt(x.astype(np.float64)))
    np.testing.assert_array_equal(got[1], np.sqrt(x.astype(np.float32)) + x.astype(np.float32))
    np.testing.assert_array_equal(got[2], np.maximum(x, 5))


def test_preamble_functions_and_constants_are_inlined():
    preamble = """
    const float SCALE = 0.5f;
    __device__ float halve_sq(float v) { float h = v * SCALE; return h * h; }
    """
    k = ElementwiseKernel("float32 x", "float32 z", "z = halve_sq(x) + SCALE", "pre", preamble=preamble)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(k(x), (x * np.float32(0.5)) ** 2 + np.float32(0.5))


def test_loop_prep_declares_values_the_body_uses():
    k = ElementwiseKernel("T x", "T z", "z = x * two", "prep", loop_prep="T two = 2;")
    assert k(np.arange(3, dtype=np.int16)).tolist() == [0, 2, 4]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint16, np.int64])
def test_type_generic_kernels_specialize_per_dtype(dtype):
    k = ElementwiseKernel("T x, T y", "T z", "z = x + y * y", "generic")
    x = np.arange(8).astype(dtype)
    y = (np.arange(8) % 3).astype(dtype)
    want = (x + y * y) if np.dtype(dtype).itemsize >= 4 or np.dtype(dtype).kind == "f" else \
        (x.astype(np.int32) + y.astype(np.int32) * y).astype(dtype)
    got = k(x, y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


def test_literals_take_cs_types():
    x = np.zeros(1, np.int64)
    got = kernel("int64 x", "int64 a, int64 b, int64 c, int64 d, float64 e",
                 "a = 0xFF + 017; b = 2147483647 + 1; c = 2147483647LL + 1; d = 4294967295u + 1; e = 1e3f / 3")(x)
    assert [int(v[0]) for v in got[:4]] == [255 + 15, -2**31, 2**31, 0]   # int overflow wraps, unsigned wraps
    assert got[4][0] == np.float64(np.float32(1e3) / np.float32(3))
