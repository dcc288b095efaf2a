"""Does a GPU result agree with the interpreter's? The tolerance per dtype and the element test
that sweeps (profile/sweep.py) and the verdict view (widgets/verdict.py) share.

Floats agree within a relative and absolute tolerance that follows the dtype (TOLERANCE); NaN
agrees with NaN and an infinity with the same infinity; integers and bools agree exactly.

    >>> close, error = agreement(np.float32([1, 2, np.nan]), np.float32([1, 2.5, np.nan]))
    >>> close.tolist(), float(error.max())
    ([True, False, True], 0.5)
"""
from __future__ import annotations

import numpy as np

TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12}


def tolerance(dtype) -> float:
    return TOLERANCE.get(np.dtype(dtype).name, 0.0)


def agreement(expected, actual, rtol: float | None = None, atol: float | None = None):
    """(close, error) per element: whether `actual` agrees with `expected`, and |actual - expected|
    (0 where they agree exactly, NaN and infinities included; inf where only one is NaN)."""
    tol = tolerance(expected.dtype)
    rtol, atol = (tol if rtol is None else rtol), (tol if atol is None else atol)
    w, g = np.asarray(expected).astype(np.float64), np.asarray(actual).astype(np.float64)
    same = (w == g) | (np.isnan(w) & np.isnan(g))
    with np.errstate(invalid="ignore"):
        error = np.where(same, 0.0, np.nan_to_num(np.abs(g - w), nan=np.inf))
        close = same | (error <= atol + rtol * np.abs(w))
    return close, error
