"""Test-suite wiring: GPU tests run only where a CUDA device answers, and say so otherwise."""
import functools

import pytest


@functools.lru_cache(maxsize=None)
def gpu_unavailable_reason() -> str | None:
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, no driver, or no device
        return f"needs a CUDA GPU ({type(e).__name__}: {e})".splitlines()[0]
    return None if count else "needs a CUDA GPU (none found)"


def pytest_collection_modifyitems(config, items):
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason + "; run `python -m pytest -m gpu` on a machine with one")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
