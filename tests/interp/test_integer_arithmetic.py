"""//, %, cdiv, << and >> on integers of every width and sign, tiles and scalars, against plain
Python ints (tests/integer_model.py): floor division, the divisor's sign for %, ceil for cdiv."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tileworkbench.tile as ct

from .. import integer_model as model

OP_NAMES = list(model.OPS)


def apply(op: int, a, b):
    """Tile code: the op numbered `op` in OP_NAMES."""
    if op == 0:
        return a // b
    if op == 1:
        return a % b
    if op == 2:
        return ct.cdiv(a, b)
    if op == 3:
        return a << b
    return a >> b


@ct.kernel
def tile_op(x, y, out, OP: ct.Constant[int], N: ct.Constant[int]):
    ct.store(out, (0,), apply(OP, ct.load(x, (0,), (N,)), ct.load(y, (0,), (N,))))


@ct.kernel
def scalar_op(x, y, out, OP: ct.Constant[int]):
    a, b = ct.load(x, (0,), (1,)).item(), ct.load(y, (0,), (1,)).item()
    ct.store(out, (0,), ct.full((1,), apply(OP, a, b), out.dtype))


def run_op(name, x, y, scalar=False):
    out = np.zeros_like(x)
    op = OP_NAMES.index(name)
    if scalar:
        for k in range(len(x)):
            one = out[k:k + 1].copy()
            ct.launch(None, (1,), scalar_op, (x[k:k + 1].copy(), y[k:k + 1].copy(), one, op))
            out[k] = one[0]
    else:
        ct.launch(None, (1,), tile_op, (x, y, out, op, len(x)))
    return out


def operands(name, dtype, n, rng):
    x, y = model.edge_operands(dtype, n, rng)
    return (x, model.shift_amounts(dtype, n, rng)) if "shift" in name else (x, y)


@pytest.mark.parametrize("name", OP_NAMES)
@pytest.mark.parametrize("dtype", model.INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_integer_ops_of_every_width_match_python_ints(name, dtype):
    x, y = operands(name, dtype, 64, np.random.default_rng(5))
    np.testing.assert_array_equal(run_op(name, x, y), model.expected(name, x, y, dtype))


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(OP_NAMES), dtype=st.sampled_from(model.INT_DTYPES), seed=st.integers(0, 2**32 - 1),
       scalar=st.booleans())
def test_integer_ops_on_tiles_and_scalars_match_python_ints(name, dtype, seed, scalar):
    x, y = operands(name, dtype, 4 if scalar else 16, np.random.default_rng(seed))
    np.testing.assert_array_equal(run_op(name, x, y, scalar), model.expected(name, x, y, dtype))


@pytest.mark.parametrize("x, y, quotient", [(7, -2, -3), (51, -1, -51), (-7, 2, -3), (-7, -2, 4), (8, 4, 2),
                                            (0, -5, 0), (1, 3, 1)])
def test_cdiv_rounds_toward_positive_infinity_for_every_sign(x, y, quotient):
    assert ct.cdiv(x, y) == quotient
    got = run_op("cdiv", np.array([x], np.int32), np.array([y], np.int32))
    assert got.tolist() == [quotient]
    assert run_op("cdiv", np.array([x], np.int64), np.array([y], np.int64), scalar=True).tolist() == [quotient]


def test_cdiv_of_floats_is_refused():
    with pytest.raises(ct.TileTypeError, match=r"cdiv\(\) supports integer operands, got float32"):
        ct.evaluate(lambda a: ct.cdiv(a, a), np.ones(4, np.float32))
