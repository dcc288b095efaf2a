"""A `cupy` module over NumPy and tileworkbench's kernels, loaded as a pytest plugin
(`-p cupy_shim`) by benchmarks/cupy_user_kernel_tests.py so CuPy's own test files run unedited
on the CPU.

`cupy.ElementwiseKernel` and `cupy.ReductionKernel` are tileworkbench's; arrays, dtypes and
`cupy.random` are NumPy's; `cupy.testing` has the decorators and helpers those tests use. What
only CuPy itself has (`cupy._core`, devices, textures, memory pools, CUB switches) is an
`Internal`: importing and passing it around works, but using a value of it raises NotApplicable,
and the test is counted as needing CuPy internals. Each test's outcome goes to the JSON file
named by CUPY_SHIM_REPORT:

    pass / fail (with the error) / complex (fails only for complex dtypes) /
    n/a (needs CuPy internals or GPU arrays, or never builds a user kernel)
"""
from __future__ import annotations

import functools
import inspect
import itertools
import json
import os
import sys
import types

import numpy
import pytest

import tileworkbench

COMPLEX = (numpy.complex64, numpy.complex128)
ALL_DTYPES = (numpy.bool_, numpy.float16, numpy.float32, numpy.float64, *COMPLEX, numpy.int8, numpy.int16,
              numpy.int32, numpy.int64, numpy.uint8, numpy.uint16, numpy.uint32, numpy.uint64)


class NotApplicable(Exception):
    """The test needs CuPy itself (internals, devices, GPU-only objects)."""


class ComplexOnly(AssertionError):
    """A dtype loop failed for complex dtypes only (a gap in complex support, told apart from other failures)."""


class Internal:
    """Something only CuPy has: it can be imported, called, passed and stored; using its value fails."""

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Internal(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        return Internal(f"{self._name}()")

    def _use(self, *args, **kwargs):
        raise NotApplicable(f"needs CuPy's {self._name}")

    __bool__ = __len__ = __iter__ = __eq__ = __ne__ = __lt__ = __gt__ = __int__ = __float__ = _use
    __enter__ = __getitem__ = __setitem__ = __add__ = __radd__ = __array__ = __index__ = _use
    __hash__ = object.__hash__


# ---- which test is running, and whether it built a user kernel --------------------------------------

_current = {"test": None}
_used: set = set()


class _Counted:
    def __init__(self, *args, **kwargs):
        _used.add(_current["test"])
        super().__init__(*args, **kwargs)


class ElementwiseKernel(_Counted, tileworkbench.ElementwiseKernel):
    pass


class ReductionKernel(_Counted, tileworkbench.ReductionKernel):
    pass


# ---- cupy.testing --------------------------------------------------------------------------------

def _without(func, *names):
    """`func`'s signature without the parameters a decorator fills (so pytest asks no fixture)."""
    sig = inspect.signature(func)
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name not in names])


def _for_dtypes(dtypes, name="dtype"):
    def decorator(impl):
        @functools.wraps(impl)
        def test(*args, **kwargs):
            failed = []
            for dtype in dtypes:
                try:
                    impl(*args, **{**kwargs, name: dtype})
                except NotApplicable:
                    raise
                except Exception as error:   # noqa: BLE001 - collected, then judged per dtype
                    failed.append((dtype, error))
            real = [(d, e) for d, e in failed if d not in COMPLEX]
            if real:
                dtype, error = real[0]
                raise AssertionError(f"{name}={numpy.dtype(dtype).name}: {type(error).__name__}: {error}") from error
            if failed:
                raise ComplexOnly(f"fails for {', '.join(numpy.dtype(d).name for d, _ in failed)} only: "
                                  f"{type(failed[0][1]).__name__}: {str(failed[0][1]).splitlines()[0]}")
        test.__signature__ = _without(impl, name)
        del test.__wrapped__
        return test
    return decorator


def for_all_dtypes(name="dtype", no_float16=False, no_bool=False, no_complex=False):
    return _for_dtypes([d for d in ALL_DTYPES if not (no_float16 and d is numpy.float16 or no_bool and d is numpy.bool_
                                                       or no_complex and d in COMPLEX)], name)


def for_int_dtypes(name="dtype", no_bool=False):
    ints = [d for d in ALL_DTYPES if numpy.dtype(d).kind in "iu"]
    return _for_dtypes(ints if no_bool else [numpy.bool_, *ints], name)


def for_float_dtypes(name="dtype", no_float16=False):
    return _for_dtypes([d for d in (numpy.float16, numpy.float32, numpy.float64) if not (no_float16 and
                                                                                          d is numpy.float16)], name)


def for_complex_dtypes(name="dtype"):
    return _for_dtypes(COMPLEX, name)


def for_orders(orders, name="order"):
    return _for_dtypes(list(orders), name)


def _numpy_cupy(compare, name="xp", accept_error=False, type_check=True, **_):
    accepted = (Exception if accept_error is True else accept_error) or ()

    def decorator(impl):
        @functools.wraps(impl)
        def test(*args, **kwargs):
            results = []
            for xp in (numpy, sys.modules["cupy"]):
                try:
                    results.append((impl(*args, **{**kwargs, name: xp}), None))
                except NotApplicable:
                    raise
                except Exception as error:   # noqa: BLE001 - compared between NumPy and cupy below
                    results.append((None, error))
            (expected, numpy_error), (got, cupy_error) = results
            if numpy_error or cupy_error:
                if not (numpy_error and cupy_error and isinstance(numpy_error, accepted)
                        and isinstance(cupy_error, accepted)):
                    raise cupy_error or AssertionError(f"NumPy raised {numpy_error!r}, cupy did not")
                return
            for e, g in zip(*(r if isinstance(r, tuple) else (r,) for r in (expected, got))):
                if type_check:
                    assert numpy.asarray(e).dtype == numpy.asarray(g).dtype, (numpy.asarray(e).dtype,
                                                                               numpy.asarray(g).dtype)
                compare(g, e)
        test.__signature__ = _without(impl, name)
        del test.__wrapped__
        return test
    return decorator


def numpy_cupy_array_equal(err_msg="", verbose=True, name="xp", type_check=True, accept_error=False, **kwargs):
    return _numpy_cupy(numpy.testing.assert_array_equal, name, accept_error, type_check)


def numpy_cupy_allclose(rtol=1e-7, atol=0, err_msg="", verbose=True, name="xp", type_check=True,
                        accept_error=False, **kwargs):
    return _numpy_cupy(functools.partial(numpy.testing.assert_allclose, rtol=rtol, atol=atol), name, accept_error,
                       type_check)


def product(parameters: dict) -> list[dict]:
    keys = list(parameters)
    return [dict(zip(keys, values)) for values in itertools.product(*parameters.values())]


def parameterize(*params):
    """One test class per parameter set, with the parameters as attributes (CuPy's way)."""
    def decorator(cls):
        module = sys.modules[cls.__module__]
        for k, p in enumerate(params):
            name = f"{cls.__name__}_param_{k}_{'_'.join(f'{key}_{value}' for key, value in p.items())}"
            name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
            setattr(module, name, type(name, (cls,), {**p, "__test__": True}))
        cls.__test__ = False
        return cls
    return decorator


def multi_gpu(count):
    def decorator(impl):
        @functools.wraps(impl)
        def test(*args, **kwargs):
            raise NotApplicable(f"needs {count} GPUs")
        return test
    return decorator


def shaped_arange(shape, xp=None, dtype=numpy.float32, order="C"):
    size = int(numpy.prod(shape))
    a = numpy.arange(1, size + 1)
    if numpy.dtype(dtype) == numpy.bool_:
        a = a % 2 == 0
    elif numpy.dtype(dtype).kind == "c":
        a = a + a * 1j
    return numpy.array(a.astype(dtype).reshape(shape), order=order)


def shaped_random(shape, xp=None, dtype=numpy.float32, scale=10, seed=0, order="C"):
    dtype = numpy.dtype(dtype)
    rng = numpy.random.RandomState(seed)
    if dtype == numpy.bool_:
        return numpy.array(rng.randint(2, size=shape).astype(dtype), order=order)
    return numpy.array((rng.rand(*shape) * scale).astype(dtype), order=order)


def assert_array_equal(actual, desired, *args, **kwargs):
    numpy.testing.assert_array_equal(numpy.asarray(actual), numpy.asarray(desired), *args, **kwargs)


def assert_allclose(actual, desired, rtol=1e-7, atol=0, *args, **kwargs):
    numpy.testing.assert_allclose(numpy.asarray(actual), numpy.asarray(desired), rtol, atol, *args, **kwargs)


# ---- the module tree -----------------------------------------------------------------------------

def _module(name: str, attrs: dict | None = None, internal: bool = False) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs or {})
    if internal:
        module.__getattr__ = lambda attr: Internal(f"{name}.{attr}")
    sys.modules[name] = module
    return module


def install():
    """Put the shim in sys.modules as `cupy` and its submodules."""
    testing = _module("cupy.testing", {k: v for k, v in globals().items() if k in (
        "for_all_dtypes", "for_int_dtypes", "for_float_dtypes", "for_complex_dtypes", "for_orders",
        "numpy_cupy_array_equal", "numpy_cupy_allclose", "product", "parameterize", "multi_gpu", "shaped_arange",
        "shaped_random", "assert_array_equal", "assert_allclose")})
    _module("cupy.testing._protocol_helpers", internal=True)
    runtime = _module("cupy.cuda.runtime", {"is_hip": False}, internal=True)
    texture = _module("cupy.cuda.texture", internal=True)
    cuda = _module("cupy.cuda", {"runtime": runtime, "texture": texture}, internal=True)
    core = _module("cupy._core", internal=True)
    core._accelerator = _module("cupy._core._accelerator", internal=True)
    exceptions = _module("cupy.exceptions", {"ComplexWarning": numpy.exceptions.ComplexWarning,
                                             "AxisError": numpy.exceptions.AxisError})
    cupy = _module("cupy", {"ElementwiseKernel": ElementwiseKernel, "ReductionKernel": ReductionKernel,
                            "testing": testing, "cuda": cuda, "_core": core, "exceptions": exceptions,
                            "_util": Internal("cupy._util"), "asnumpy": numpy.asarray,
                            "get_default_memory_pool": Internal("cupy.get_default_memory_pool"),
                            "make_aligned_dtype": Internal("cupy.make_aligned_dtype")})
    cupy.__getattr__ = lambda attr: getattr(numpy, attr)   # arrays, dtypes, cupy.random: NumPy's


install()


# ---- pytest hooks: classify each test --------------------------------------------------------------

_results: dict = {}


def pytest_configure(config):
    for marker in ("slow", "thread_unsafe"):
        config.addinivalue_line("markers", f"{marker}: CuPy's marker")


def pytest_runtest_setup(item):
    _current["test"] = item.nodeid


def pytest_runtest_makereport(item, call):
    if item.nodeid in _results:
        return
    error = call.excinfo.value if call.excinfo is not None else None
    if error is not None and call.excinfo.errisinstance(pytest.skip.Exception):
        _results[item.nodeid] = ("n/a", f"skipped: {error}")
    elif isinstance(error, NotApplicable) or isinstance(getattr(error, "__cause__", None), NotApplicable):
        _results[item.nodeid] = ("n/a", str(error))
    elif item.nodeid not in _used:
        if error is not None or call.when == "teardown":   # CuPy's arrays, not its user kernels
            _results[item.nodeid] = ("n/a", "builds no ElementwiseKernel or ReductionKernel")
    elif isinstance(error, ComplexOnly):
        _results[item.nodeid] = ("complex", str(error))
    elif error is not None:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        _results[item.nodeid] = ("fail", f"{type(error).__name__}: {first}"[:300])
    elif call.when == "teardown":
        _results[item.nodeid] = ("pass", "")


def pytest_deselected(items):
    for item in items:
        _results[item.nodeid] = ("n/a", "marked slow by CuPy (8 GiB arrays across the 32-bit boundary)")


def pytest_sessionfinish(session):
    path = os.environ.get("CUPY_SHIM_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(_results, f, indent=1)
