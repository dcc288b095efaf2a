"""x * y + z rounded once to nearest, in NumPy, for every float dtype (Python 3.11 has no math.fma).

float16, bfloat16 and float32: x * y is exact in float64 (48 bits at most) and its sum with z is
rounded to odd there (rounded, then the last bit set where inexact). Rounding that to the dtype is
the correctly rounded result, as float64 carries more than two bits beyond the dtype's precision
(Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding
to odd", 2008). bfloat16 takes one more rounding to odd, to float32, as ml_dtypes converts float64 by
way of float32.

float64: x * y as an exact sum of two doubles (Dekker's product), then the same paper's emulated
fma: two error-free sums, a sum rounded to odd, one last rounding. Elements where Dekker's product is
not exact (products past 2**995 or under 2**-969) are computed in rationals.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

_SPLIT = 2.0 ** 27 + 1  # Veltkamp's constant: splits a double into two halves of 26 bits


def fused_multiply_add(x, y, z, dtype: np.dtype) -> np.ndarray:
    """x * y + z rounded once to nearest (ties to even), as an array of `dtype`."""
    x, y, z = np.broadcast_arrays(*(np.asarray(v).astype(np.float64) for v in (x, y, z)))
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            return _fma64(x, y, z)
        s, err = _two_sum(x * y, z)
        odd = _to_odd(s, err)
        if dtype.name == "bfloat16":
            odd = _odd_float32(odd)
        return np.where(np.isfinite(s), odd, x * y + z).astype(dtype)


def _two_sum(a, b):
    """s = a + b rounded, and its exact error: a + b = s + err (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _to_odd(s, err):
    """s rounded to odd: where inexact (err != 0) and s's last bit is 0, the neighbour toward the
    exact value s + err, whose last bit is 1."""
    fix = (err != 0) & ((s.view(np.int64) & 1) == 0) & np.isfinite(s)
    return np.where(fix, np.nextafter(s, np.copysign(np.inf, err)), s)


def _odd_float32(v):
    """float64 values rounded to odd in float32."""
    f = v.astype(np.float32)
    fix = np.isfinite(f) & (f.astype(np.float64) != v) & ((f.view(np.int32) & 1) == 0)
    toward = np.where(v > f, np.inf, -np.inf).astype(np.float32)
    return np.where(fix, np.nextafter(f, toward), f).astype(np.float64)


def _split(a):
    t = _SPLIT * a
    high = t - (t - a)
    return high, a - high


def _fma64(x, y, z):
    p = x * y
    xh, xl = _split(x)
    yh, yl = _split(y)
    p_err = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl  # x * y = p + p_err exactly
    th, tl = _two_sum(z, p_err)
    vh, vl = _two_sum(p, th)
    w, w_err = _two_sum(tl, vl)
    out = vh + _to_odd(w, w_err)
    finite = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
    magnitude = np.abs(p)
    rational = finite & ((magnitude > 2.0 ** 995) | ((magnitude < 2.0 ** -969) & (x != 0) & (y != 0))
                         | ~np.isfinite(out) | (np.abs(x) > 2.0 ** 995) | (np.abs(y) > 2.0 ** 995))
    out = np.where(finite, out, x * y + z)
    for k in np.flatnonzero(rational):
        out.flat[k] = _exact(x.flat[k], y.flat[k], z.flat[k])
    return out


def _exact(x: float, y: float, z: float) -> float:
    """x * y + z rounded to nearest, in rationals (Python's int division rounds correctly), for a
    nonzero product: an exact zero sum is then +0."""
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")
