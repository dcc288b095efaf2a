"""The interpreter's fused multiply-add rounds once, to nearest, in every float dtype: checked
against exact rational arithmetic, on cases where rounding through float64 first would be wrong."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from tileworkbench.interp.fma import fused_multiply_add
from tests.fuzz.families import rounded

BF16 = np.dtype(ml_dtypes.bfloat16)


def _exact(x, y, z, dtype):
    return np.array([rounded(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), dtype)
                     for a, b, c in zip(x, y, z)], dtype)


@pytest.mark.parametrize("dtype, x, y, z, want", [
    # the product is a tie of the dtype, z (too small for float64's sum) says which way: down
    (BF16, 1 + 2.0 ** -7, 1.5, -(2.0 ** -100), 193 * 2.0 ** -7),
    (np.dtype(np.float32), 1 + 2.0 ** -23, 1.5, -(2.0 ** -100), 12582913 * 2.0 ** -23),
    # float64: the product rounded first would cancel to 0
    (np.dtype(np.float64), 1 + 2.0 ** -52, 1 - 2.0 ** -53, -1.0, 2.0 ** -53 - 2.0 ** -105),
])
def test_a_tie_or_a_cancellation_that_two_roundings_get_wrong_is_rounded_once(dtype, x, y, z, want):
    got = fused_multiply_add(np.array([x], dtype), np.array([y], dtype), np.array([z], dtype), dtype)
    assert got.dtype == dtype and float(got[0]) == float(np.array(want).astype(dtype))
    assert float(got[0]) != float((np.array(x, dtype).astype(np.float64) * float(np.array(y, dtype)))
                                  .astype(dtype).astype(np.float64) + float(np.array(z, dtype)))


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)])
def test_random_multiply_adds_near_cancellation_match_exact_rounding(dtype):
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal(400) * 4).astype(dtype), (rng.standard_normal(400) * 4).astype(dtype)
    product = x.astype(np.float64) * y.astype(np.float64)
    z = (-product * (1 + rng.standard_normal(400) * 2.0 ** -rng.integers(4, 60, 400))).astype(dtype)
    got = fused_multiply_add(x, y, z, dtype)
    np.testing.assert_array_equal(got.view(f"u{dtype.itemsize}"), _exact(x, y, z, dtype).view(f"u{dtype.itemsize}"))


def test_float64_products_past_dekkers_range_and_special_values_follow_ieee():
    big, tiny = 2.0 ** 1000, 2.0 ** -1000
    x = np.array([big, tiny, np.inf, np.nan, 1.0, big])
    y = np.array([2.0 ** 20, tiny * 2.0 ** 40, 0.0, 1.0, np.inf, 2.0 ** 30])
    z = np.array([-big * 2.0 ** 20, 2.0 ** -1060, 1.0, 1.0, -np.inf, 1.0])
    got = fused_multiply_add(x, y, z, np.dtype(np.float64))
    assert got[0] == 0.0 and got[1] == float(Fraction(tiny) * Fraction(tiny * 2.0 ** 40) + Fraction(2.0 ** -1060))
    assert np.isnan(got[2]) and np.isnan(got[3]) and np.isnan(got[4]) and got[5] == np.inf
