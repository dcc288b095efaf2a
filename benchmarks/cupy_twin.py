"""The GPU half of benchmarks/cupy_user_kernel_tests.py (`--gpu`), also a pytest plugin
(`-p cupy_twin`): with the real CuPy installed, `cupy.ElementwiseKernel` and `cupy.ReductionKernel`
become twins that build every definition twice, CuPy's and tileworkbench's. Each call runs
CuPy's kernel (whose results the test keeps) and then ours on copies of the same CuPy arrays,
and the two are compared: bit for bit, except float reductions, which combine in another order
(their largest relative difference is reported and must stay within REDUCTION_RTOL). A call
CuPy refuses must be refused by ours with the same exception class. The comparisons go to the
JSON file named by CUPY_TWIN_REPORT; `time_guide_kernels` then times both on the user guide's
kernels and on complex elementwise kernels.
"""
from __future__ import annotations

import json
import os
import statistics
import traceback

import cupy
import numpy

import tileworkbench

REDUCTION_RTOL = {numpy.dtype(numpy.float16): 1e-2, numpy.dtype(numpy.float32): 1e-5,
                  numpy.dtype(numpy.float64): 1e-12, numpy.dtype(numpy.complex64): 1e-5,
                  numpy.dtype(numpy.complex128): 1e-12}
_comparisons: dict = {}
_current = {"test": "(outside a test)", "calls": 0}


def _copy(value):
    return value.copy() if isinstance(value, cupy.ndarray) else value


def _arrays(value) -> list:
    """The CuPy arrays a call's result holds, in order."""
    if isinstance(value, cupy.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    return []


def compare(theirs: list, ours: list, reduction: bool) -> tuple[bool, str]:
    """(match, detail) of two lists of CuPy arrays (results, then arguments after the call)."""
    if len(theirs) != len(ours):
        return False, f"{len(theirs)} arrays from CuPy, {len(ours)} from ours"
    worst, bitwise = 0.0, True
    for k, (t, o) in enumerate(zip(theirs, ours)):
        t, o = cupy.asnumpy(t), cupy.asnumpy(o)
        if t.shape != o.shape or t.dtype != o.dtype:
            return False, f"array {k}: CuPy {t.dtype}{t.shape}, ours {o.dtype}{o.shape}"
        if t.tobytes() == o.tobytes():
            continue
        bitwise = False
        if t.dtype.names is None and t.dtype.kind in "fc" and numpy.array_equal(t, o, equal_nan=True):
            continue   # equal values, NaNs of another payload or zeros of another sign
        if not (reduction and t.dtype.kind in "fc") or not numpy.array_equal(numpy.isnan(t), numpy.isnan(o)):
            diff = numpy.flatnonzero(t.reshape(-1) != o.reshape(-1))
            if diff.size == 0:
                continue   # equal fields, different padding bytes
            return False, (f"array {k}: {diff.size} elements differ, first at {diff[0]}: CuPy "
                           f"{t.reshape(-1)[diff[0]]!r}, ours {o.reshape(-1)[diff[0]]!r}")
        wide = numpy.complex128 if t.dtype.kind == "c" else numpy.float64  # complex: both parts count
        scale = numpy.maximum(numpy.abs(t.astype(wide)), numpy.finfo(t.dtype).tiny)
        rel = float(numpy.nanmax(numpy.abs(t.astype(wide) - o.astype(wide)) / scale))
        worst = max(worst, rel)
        if rel > REDUCTION_RTOL[t.dtype]:
            return False, f"array {k}: relative difference {rel:.3g} (a float reduction: order differs)"
    if bitwise:
        return True, "bit for bit"
    return True, f"float reduction, largest relative difference {worst:.3g}" if worst else \
        "equal values (NaN payloads or signs of zeros differ)"


def _record(name: str, match: bool, detail: str):
    _current["calls"] += 1
    _comparisons[f"{_current['test']} [{name} #{_current['calls']}]"] = {"match": match, "detail": detail}


class _Twin:
    """CuPy's kernel and ours for one definition; calls run both and compare."""

    theirs_class = ours_class = None
    reduction = False
    name_at = 3                   # the position of `name` in the definition's arguments

    def __init__(self, *args, **kwargs):
        try:
            self._ours, self._refused = self.ours_class(*args, **kwargs), None
        except Exception as error:   # noqa: BLE001 - compared with CuPy's verdict below
            self._ours, self._refused = None, error
        try:
            self._theirs = self.theirs_class(*args, **kwargs)
        except Exception as error:
            name = kwargs.get("name") or (args[self.name_at] if len(args) > self.name_at else "(definition)")
            _record(name, isinstance(self._refused, type(error)),
                    f"CuPy refuses the definition ({type(error).__name__}); ours: {self._refused!r}")
            raise
        self._name = self._theirs.name

    def __getattr__(self, attr):   # what tests read of CuPy's kernel (`_cached_codes`, ...)
        if attr in ("_theirs", "_ours", "_name", "_refused"):
            raise AttributeError(attr)
        return getattr(self._theirs, attr)

    def __call__(self, *args, **kwargs):
        # Ours runs first, on the same inputs and copies of the outputs: it reads the inputs before
        # CuPy's kernel writes an output they may share memory with.
        ours, ours_args, ours_error = None, list(args), None
        if self._ours is not None:
            ours_args, ours_kwargs = outputs_copied(self._ours, args, kwargs)
            try:
                ours = self._ours(*ours_args, **ours_kwargs)
            except Exception as error:   # noqa: BLE001 - compared with CuPy's outcome below
                ours_error = error
        try:
            theirs = self._theirs(*args, **kwargs)
        except Exception as error:
            refused = self._refused or ours_error
            _record(self._name, isinstance(refused, type(error)),
                    f"CuPy raises {type(error).__name__}; ours: {refused!r}")
            raise
        if self._ours is None or ours_error is not None:
            error = self._refused or ours_error
            _record(self._name, False, f"ours raised {type(error).__name__}: {str(error).splitlines()[0]}")
            return theirs
        defined = self.writes_allocated_outputs(args)   # else both results are uninitialized memory
        match, detail = compare(_arrays(theirs if defined else None) + _arrays(list(args)),
                                _arrays(ours if defined else None) + _arrays(ours_args), self.reduction)
        _record(self._name, match, detail)
        return theirs

    def writes_allocated_outputs(self, args) -> bool:
        """False for an elementwise kernel with an empty body called without outputs (CuPy's
        tests of `size` do that): what it returns was never written."""
        return not (isinstance(self._ours, tileworkbench.ElementwiseKernel) and not self._ours._body
                    and len(args) == self._ours.nin)


def outputs_copied(kernel, args, kwargs) -> tuple[list, dict]:
    """A call's arguments with its output arrays (positional or `out=`) copied."""
    return ([*args[:kernel.nin], *map(_copy, args[kernel.nin:])],
            {k: _copy(v) if k == "out" else v for k, v in kwargs.items()})


class ElementwiseTwin(_Twin):
    theirs_class, ours_class = cupy.ElementwiseKernel, tileworkbench.ElementwiseKernel


class ReductionTwin(_Twin):
    theirs_class, ours_class, reduction, name_at = cupy.ReductionKernel, tileworkbench.ReductionKernel, True, 6


# ---- the pytest plugin ---------------------------------------------------------------------------

def pytest_configure(config):
    cupy.ElementwiseKernel, cupy.ReductionKernel = ElementwiseTwin, ReductionTwin


def pytest_runtest_setup(item):
    _current["test"], _current["calls"] = item.nodeid, 0


def pytest_sessionfinish(session):
    path = os.environ.get("CUPY_TWIN_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({"comparisons": _comparisons}, f, indent=1)


# ---- timings -------------------------------------------------------------------------------------

def _time_ms(call, reps: int = 50) -> float:
    """Median milliseconds of one call, by CUDA events, after warming up (compiles included there)."""
    for _ in range(3):
        call()
    times = []
    for _ in range(reps):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def guide_cases(n: int = 1 << 22) -> list:
    """(label, kind, definition args, call args, call kwargs): the user guide's kernels, then
    complex elementwise kernels."""
    rng = cupy.random.default_rng(0)
    x, y = rng.random(n, dtype=cupy.float32), rng.random(n, dtype=cupy.float32)
    m = rng.random((1024, n // 1024), dtype=cupy.float32)
    c64 = (rng.random(n, dtype=cupy.float32) + 1j * rng.random(n, dtype=cupy.float32)).astype(cupy.complex64)
    c128 = c64.astype(cupy.complex128)
    diff = "z = (x - y) * (x - y)"
    return [
        ("squared_diff", "E", ("float32 x, float32 y", "float32 z", diff, "squared_diff"), (x, y), {}),
        ("squared_diff_generic (broadcast)", "E", ("T x, T y", "T z", diff, "squared_diff_generic"),
         (m, y[:n // 1024]), {}),
        ("squared_diff_super_generic", "E", ("X x, Y y", "Z z", diff, "squared_diff_super_generic"),
         (x, y.astype(cupy.float64), cupy.empty(n, cupy.float64)), {}),
        ("add_reverse (raw)", "E", ("T x, raw T y", "T z", "z = x + y[_ind.size() - i - 1]", "add_reverse"),
         (x, y), {}),
        ("l2norm axis=1", "R", ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm"), (m,), {"axis": 1}),
        ("complex64 z = x * y + x", "E", ("T x, T y", "T z", "z = x * y + x", "cmul"), (c64, c64), {}),
        ("complex128 z = x * y + x", "E", ("T x, T y", "T z", "z = x * y + x", "cmul"), (c128, c128), {}),
    ]


def time_guide_kernels() -> list:
    rows = []
    for label, kind, definition, args, kwargs in guide_cases():
        twin = (ElementwiseTwin if kind == "E" else ReductionTwin)(*definition)
        row = {"kernel": label, "shape": [list(a.shape) for a in args if isinstance(a, cupy.ndarray)][0],
               "dtype": str(args[0].dtype)}
        row["cupy_ms"] = _time_ms(lambda: twin._theirs(*args, **kwargs))
        if twin._ours is None:
            row["match"], row["detail"] = False, f"ours refused the definition: {twin._refused!r}"
            rows.append(row)
            continue
        try:
            ours_args, ours_kwargs = outputs_copied(twin._ours, args, kwargs)
            ours = twin._ours(*ours_args, **ours_kwargs)
            theirs = twin._theirs(*args, **kwargs)
            row["match"], row["detail"] = compare(_arrays(theirs) + _arrays(list(args)),
                                                  _arrays(ours) + _arrays(ours_args), kind == "R")
            row["ours_ms"] = _time_ms(lambda: twin._ours(*args, **kwargs))
            row["speed_vs_cupy"] = row["cupy_ms"] / row["ours_ms"]
        except Exception as error:   # noqa: BLE001 - reported in the row
            row["match"], row["detail"] = False, f"ours: {type(error).__name__}: {str(error).splitlines()[0]}"
            if not isinstance(error, TypeError):
                row["traceback"] = traceback.format_exc(limit=4)
        rows.append(row)
    return rows


def print_report(results: dict):
    comparisons = results.get("comparisons", {})
    bad = {k: v for k, v in comparisons.items() if not v["match"]}
    print(f"calls compared with CuPy's kernels: {len(comparisons)}, matching {len(comparisons) - len(bad)}")
    for key, c in sorted(bad.items()):
        print(f"    MISMATCH {key}: {c['detail']}")
    print(f"\n{'kernel':34} {'shape':>14} {'dtype':>10} {'CuPy ms':>9} {'ours ms':>9} {'speed':>7}  result")
    for row in results.get("timings", []):
        ours = f"{row['ours_ms']:9.4f} {row['speed_vs_cupy']:6.2f}x" if "ours_ms" in row else f"{'-':>9} {'-':>7}"
        print(f"{row['kernel']:34} {str(tuple(row['shape'])):>14} {row['dtype']:>10} {row['cupy_ms']:9.4f} {ours}  "
              f"{row['detail']}")
