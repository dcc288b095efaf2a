"""Tile functions take by keyword every parameter that cuTile's compiler takes by keyword (its
stubs' Python signatures: tests/frontend/test_signatures.py), and refuse the positional-only ones
by keyword as cuTile does. The kernels are GPU test cases too (tests/gpu/cases.py): they compile
with NVRTC in tests/codegen and run against the interpreter on a GPU."""
import numpy as np
import pytest

import tileworkbench.tile as ct

from ..gpu.cases import keyword_spellings, normal_array


def test_keyword_spellings_compute_what_the_positional_ones_do():
    x = normal_array((10, 8), np.float32)
    positional, keywords = np.zeros((10, 8), np.float32), np.zeros((10, 8), np.float32)
    ct.launch(None, (3,), keyword_spellings, (x, positional, 0))
    ct.launch(None, (3,), keyword_spellings, (x, keywords, 1))
    assert np.any(positional != 0)
    np.testing.assert_array_equal(keywords, positional)


def test_bid_takes_its_axis_by_keyword():
    @ct.kernel
    def k(out):
        ct.store(out, index=(ct.bid(axis=0),), tile=ct.full((1,), ct.bid(axis=0) * 10, ct.int32))
    out = np.zeros(3, np.int32)
    ct.launch(None, (3,), k, (out,))
    np.testing.assert_array_equal(out, [0, 10, 20])


def test_elementwise_options_are_keyword_only():
    x = np.array([1e-40, 2.0], np.float32)
    got = ct.evaluate(lambda a: ct.exp2(a, flush_to_zero=True) + ct.sqrt(a, rounding_mode=ct.RoundingMode.RN), x)
    np.testing.assert_allclose(got, np.exp2(x) + np.sqrt(x), rtol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda a: ct.load(array=a, index=(0,), shape=(4,)), "'array' parameter is positional only"),
    (lambda a: ct.exp(x=ct.load(a, (0,), (4,))), "'x' parameter is positional only"),
    (lambda a: ct.log(ct.load(a, (0,), (4,)), rounding_mode=ct.RoundingMode.RN),
     "got an unexpected keyword argument 'rounding_mode'"),
    (lambda a: ct.sum(ct.load(a, (0,), (4,)), 0, True), "takes from 1 to 2 positional arguments but 3 were given"),
])
def test_what_cutile_refuses_by_keyword_or_position_is_a_type_error(call, message):
    @ct.kernel
    def k(a):
        call(a)
    with pytest.raises(ct.TileTypeError, match=message):
        ct.launch(None, (1,), k, (np.zeros(4, np.float32),))


def test_static_iter_takes_its_iterable_by_keyword_and_static_eval_its_expression_only_by_position():
    @ct.kernel
    def unrolled(out):
        total = 0
        for k in ct.static_iter(iterable=(1, 2, 3)):
            total += k
        ct.store(out, (0,), ct.full((1,), total, ct.int32))
    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), unrolled, (out,))
    assert out[0] == 6

    @ct.kernel
    def named_expr(out):
        ct.store(out, (0,), ct.full((1,), ct.static_eval(expr=1), ct.int32))
    with pytest.raises(ct.TileSyntaxError, match="takes exactly one expression"):
        ct.launch(None, (1,), named_expr, (out,))
