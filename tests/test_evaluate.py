"""ct.evaluate: tile code in one block, its result as a NumPy array of the tile's shape and dtype."""
import ml_dtypes
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile import evaluate


def test_evaluate_returns_the_tile_with_its_shape_and_dtype():
    x = np.arange(8, dtype=np.float16).reshape(2, 4)
    got = evaluate(lambda t: ct.permute(t, (1, 0)) * 2, x)
    assert got.dtype == np.float16 and np.array_equal(got, x.T * 2)


def test_evaluate_returns_a_full_reduction_as_a_0d_array_and_bfloat16_as_ml_dtypes():
    total = evaluate(lambda t: ct.sum(t.astype(ct.bfloat16)), np.arange(4, dtype=np.float32))
    assert total.shape == () and total.dtype == ml_dtypes.bfloat16 and float(total) == 6.0


def test_evaluate_loads_up_to_three_inputs_and_refuses_a_fourth():
    a, b, c = (np.full(2, v, np.int32) for v in (1, 2, 3))
    assert evaluate(lambda x, y, z: x + y * z, a, b, c).tolist() == [7, 7]
    with pytest.raises(ValueError, match="at most three input arrays, got 4"):
        evaluate(lambda *t: t[0], a, b, c, a)


def test_evaluate_refuses_a_function_that_returns_no_tile():
    with pytest.raises(ValueError, match="fn must return one tile"):
        evaluate(lambda: (ct.zeros((2,), ct.int32), ct.ones((2,), ct.int32)))
