"""Does a GPU result agree with the interpreter's? The tolerance per dtype and the element test
that sweeps (profile/sweep.py) and the verdict view (widgets/verdict.py) share.

Floats agree within a relative and absolute tolerance that follows the dtype (TOLERANCE); the
absolute part is scaled by the largest magnitude in the expected array, because the rounding error
of a sum of products (a matmul element, a reduction) follows the size of its terms, not of the
result: an element that cancels to nearly 0 carries the error of its big terms. NaN agrees with
NaN and an infinity with the same infinity; integers and bools agree exactly.

    >>> close, error = agreement(np.float32([1, 2, np.nan]), np.float32([1, 2.5, np.nan]))
    >>> close.tolist(), float(error.max())
    ([True, False, True], 0.5)
"""
from __future__ import annotations

import numpy as np

TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12, "complex64": 2e-5,
             "complex128": 1e-12}


def widened(x) -> np.ndarray:
    """`x` in float64, or complex128 for a complex array (so the imaginary parts are compared too)."""
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def tolerance(dtype) -> float:
    return TOLERANCE.get(np.dtype(dtype).name, 0.0)


def agreement(expected, actual, rtol: float | None = None, atol: float | None = None):
    """(close, error) per element: whether `actual` agrees with `expected`, and |actual - expected|
    (0 where they agree exactly, NaN and infinities included; inf where only one is NaN).
    `rtol`/`atol` replace the dtype's tolerances (atol then is absolute, unscaled)."""
    tol = tolerance(expected.dtype)
    w, g = widened(expected), widened(actual)
    finite = np.abs(w[np.isfinite(w)])
    rtol = tol if rtol is None else rtol
    atol = tol * max(1.0, float(finite.max(initial=0))) if atol is None else atol
    same = (w == g) | (np.isnan(w) & np.isnan(g))
    with np.errstate(invalid="ignore"):
        error = np.where(same, 0.0, np.nan_to_num(np.abs(g - w), nan=np.inf))
        close = same | (error <= atol + rtol * np.abs(w))
    return close, error
