"""complex64 and complex128 tiles on the interpreter: NumPy's results and NumPy's types, and a
clear refusal of what complex numbers do not have (an order)."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import TileTypeError

RNG = np.random.default_rng(7)


def _complex(n, dtype):
    return (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(dtype)


@ct.kernel
def arithmetic(x, y, z, parts, total):
    i = ct.bid(0)
    a, b = ct.load(x, (i,), (16,)), ct.load(y, (i,), (16,))
    w = ct.exp(a * b + a) - ct.conj(b) / a + ct.log(a) * 2j
    ct.store(z, (i,), w)
    ct.store(parts, (i,), ct.abs(w) + ct.real(a) * ct.imag(b))
    ct.store(total, (i,), ct.reshape(ct.sum(a), (1,)))


@pytest.mark.parametrize("dtype,part", [(np.complex64, np.float32), (np.complex128, np.float64)])
def test_complex_arithmetic_exp_log_conj_and_parts_match_numpy(dtype, part):
    x, y = _complex(32, dtype), _complex(32, dtype)
    z, parts, total = np.zeros(32, dtype), np.zeros(32, part), np.zeros(2, dtype)
    ct.launch(None, (2,), arithmetic, (x, y, z, parts, total))
    want = np.exp(x * y + x) - np.conj(y) / x + np.log(x) * dtype(2j)
    tol = 1e-5 if dtype is np.complex64 else 1e-12
    np.testing.assert_allclose(z, want, rtol=tol)
    np.testing.assert_allclose(parts, np.abs(want) + x.real * y.imag, rtol=tol)
    np.testing.assert_allclose(total, x.reshape(2, 16).sum(1), rtol=tol)


@ct.kernel
def mixed(x, f, out):
    ct.store(out, (0,), ct.load(x, (0,), (4,)) * ct.load(f, (0,), (4,)))


def test_complex64_times_float64_is_complex128_as_in_numpy():
    x, f = _complex(4, np.complex64), RNG.standard_normal(4)
    out = np.zeros(4, np.complex128)
    ct.launch(None, (1,), mixed, (x, f, out))
    np.testing.assert_allclose(out, x * f, rtol=1e-6)
    with pytest.raises(TileTypeError, match="cannot implicitly cast complex128 to complex64"):
        ct.launch(None, (1,), mixed, (x, f, np.zeros(4, np.complex64)))


@ct.kernel
def to_real(x, re, n):
    t = ct.load(x, (0,), (4,))
    ct.store(re, (0,), t.astype(ct.float32))
    ct.store(n, (0,), t.astype(ct.int32))


def test_casting_complex_to_a_real_type_keeps_the_real_part():
    x = np.array([1.5 + 2j, -2.7 - 1j, 3 + 0j, 0.25 + 9j], np.complex64)
    re, n = np.zeros(4, np.float32), np.zeros(4, np.int32)
    ct.launch(None, (1,), to_real, (x, re, n))
    assert re.tolist() == [1.5, -2.700000047683716, 3.0, 0.25] and n.tolist() == [1, -2, 3, 0]


@ct.kernel
def ordered(x, out, WHAT: ct.Constant[int]):
    t = ct.load(x, (0,), (4,))
    if WHAT == 0:
        ct.store(out, (0,), ct.where(t < t, t, t))
    elif WHAT == 1:
        ct.store(out, (0,), ct.broadcast_to(ct.reshape(ct.max(t), (1,)), (4,)))
    else:
        ct.store(out, (0,), ct.maximum(t, t))


@pytest.mark.parametrize("what,function", [(0, "less"), (1, "max"), (2, "maximum")])
def test_ordering_a_complex_tile_is_refused_by_name(what, function):
    x = _complex(4, np.complex64)
    with pytest.raises(TileTypeError, match=rf"{function}\(\) does not take complex operands \(complex64\): "
                                            "complex numbers have no order"):
        ct.launch(None, (1,), ordered, (x, np.zeros(4, np.complex64), what))


@ct.kernel
def from_parts(re, im, out):
    ct.store(out, (0,), ct.make_complex(ct.load(re, (0,), (4,)), ct.load(im, (0,), (4,))))


def test_make_complex_keeps_each_part_as_it_is_even_infinite():
    re, im = np.array([1.0, -0.0, np.nan, 2.0]), np.array([np.inf, 3.0, 1.0, -np.inf])
    out = np.zeros(4, np.complex128)
    ct.launch(None, (1,), from_parts, (re, im, out))
    np.testing.assert_array_equal(out.real, re)
    np.testing.assert_array_equal(out.imag, im)
    with pytest.raises(TileTypeError, match="cannot implicitly cast complex128 to complex64"):
        ct.launch(None, (1,), from_parts, (re, im, np.zeros(4, np.complex64)))


@ct.kernel
def equal(x, y, out):
    a, b = ct.load(x, (0,), (4,)), ct.load(y, (0,), (4,))
    ct.store(out, (0,), (a == b) & (a != b * 2))


def test_complex_equality_compares_both_parts():
    x = np.array([1 + 1j, 1 + 2j, 3 + 0j, 0j], np.complex64)
    y = np.array([1 + 1j, 1 - 2j, 3 + 0j, 1j], np.complex64)
    out = np.zeros(4, np.bool_)
    ct.launch(None, (1,), equal, (x, y, out))
    assert out.tolist() == [True, False, True, False]
