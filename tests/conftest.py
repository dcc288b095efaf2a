"""Test-suite wiring: GPU tests run only where a CUDA device answers, and say so otherwise."""
import pytest

from tileworkbench.runtime import device


def gpu_unavailable_reason() -> str | None:
    reason = device.unavailable_reason()
    return None if reason is None else f"needs a CUDA GPU ({reason})"


def pytest_collection_modifyitems(config, items):
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason + "; run `python -m pytest -m gpu` on a machine with one")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
