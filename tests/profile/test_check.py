"""GPU results agree with the interpreter's within the dtype's tolerance; NaN and infinities agree
with themselves; integers agree exactly."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.profile.check import agreement, tolerance


def test_floats_agree_within_the_dtype_tolerance():
    want = np.float32([1.0, 100.0, 0.0])
    close, error = agreement(want, want * np.float32(1 + 1e-5))
    assert close.all()
    close, _ = agreement(want, np.float32([1.01, 100.0, 0.0]))
    assert close.tolist() == [False, True, True]
    assert tolerance(np.float16) == 2e-3 and tolerance(ct.bfloat16.numpy) == 1.6e-2


def test_nan_and_infinities_agree_with_themselves_and_a_lone_nan_is_an_infinite_error():
    want = np.float32([np.nan, np.inf, -np.inf, 1.0])
    close, error = agreement(want, np.float32([np.nan, np.inf, -np.inf, np.nan]))
    assert close.tolist() == [True, True, True, False]
    assert error.tolist() == [0, 0, 0, np.inf]


def test_integers_agree_exactly():
    close, error = agreement(np.int32([5, 7]), np.int32([5, 8]))
    assert close.tolist() == [True, False] and error.tolist() == [0, 1]


def test_the_absolute_tolerance_follows_the_largest_expected_magnitude():
    """A matmul element that cancels to nearly 0 carries the rounding error of its big terms."""
    want = np.float32([90.0, 1e-3])
    close, _ = agreement(want, np.float32([90.0, 1e-3 + 1e-4]))
    assert close.all()                                       # 1e-4 <= 2e-5 * 90
    close, _ = agreement(want, np.float32([90.0, 1e-3 + 1e-2]))
    assert close.tolist() == [True, False]
    close, _ = agreement(np.float32([0.5, 1e-3]), np.float32([0.5, 1e-3 + 1e-4]))
    assert close.tolist() == [True, False]                   # small arrays keep the plain tolerance
