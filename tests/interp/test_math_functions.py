"""Every elementwise math function, as a tile function and as C's functions in CuPy-style kernels,
matches its NumPy reference on the interpreter (rows: tests/gpu/math_cases.py)."""
import numpy as np
import pytest

import tileworkbench
import tileworkbench.tile as ct
from tileworkbench.ir.ops import OPS, Accepts
from tileworkbench.tile import evaluate

from ..gpu.math_cases import MATH, cupy_kernel, spellings, tolerance

IDS = [c.name for c in MATH]


def test_every_float_math_function_of_the_op_table_has_a_row():
    assert {c.name for c in MATH} == {n for n, d in OPS.items() if d.accepts is Accepts.FLOAT_MATH and d.c}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", MATH, ids=IDS)
def test_tile_function_matches_numpy(case, dtype):
    x = case.operands(dtype)
    got = evaluate(getattr(ct, case.stub), *x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, case.expected(x), rtol=tolerance(dtype), atol=0)


@pytest.mark.parametrize("case", MATH, ids=IDS)
def test_tile_function_of_integers_computes_in_float32(case):
    x = tuple(np.clip(np.round(a), 1, None).astype(np.int32) for a in case.operands(np.float32, 16))
    got = evaluate(getattr(ct, case.stub), *x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, case.expected(x), rtol=tolerance(np.float32), atol=0)


@pytest.mark.parametrize("case", MATH, ids=IDS)
def test_c_spellings_in_cupy_style_kernels_match_numpy(case):
    for name, ctype in spellings(case):
        x = case.operands(ctype)
        got = cupy_kernel(tileworkbench, name, case.arity, ctype)(*x)
        assert got.dtype == ctype, name
        np.testing.assert_allclose(got, case.expected(x), rtol=tolerance(ctype), atol=0, err_msg=name)


def test_a_math_function_of_an_integer_in_a_cupy_style_kernel_is_double():
    got = tileworkbench.ElementwiseKernel("int32 x", "float64 y", "y = log1p(x)", "int_log1p")(np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(got, np.log1p(np.arange(4.0)))
