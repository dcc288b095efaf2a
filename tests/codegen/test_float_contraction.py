"""Where NVRTC may fuse multiply-adds: a tile kernel's floats round as its IR says (only the IR's fma
is fused, as cuTile fuses), so NVRTC gets --fmad=false; a CuPy-style kernel is C, which NVRTC
compiles with its own fusion, as CuPy does."""
import re

import numpy as np
import pytest

import tileworkbench
import tileworkbench.tile as ct
from tileworkbench.runtime import cache, launch

from .test_compile import _nvrtc_missing

pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))


@pytest.fixture
def options_given(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_default", None)
    seen = []
    real = cache.compile_cached

    def recording(source, **kwargs):
        seen.append(kwargs["options"])
        return real(source, **kwargs)
    monkeypatch.setattr(cache, "compile_cached", recording)
    return seen


@ct.kernel
def products(x, y, out):
    a, b = ct.load(x, (0,), (64,)), ct.load(y, (0,), (64,))
    p = a * b
    ct.store(out, (0,), (p + b) + p)  # p is used twice: two roundings, no fma


def test_a_tile_kernel_fuses_only_what_its_ir_fuses(options_given):
    args = tuple(np.zeros(64, np.float32) for _ in range(3))
    compiled = launch.build(products.specialize(args), "sm_90")
    assert all("--fmad=false" in options for options in options_given)
    sass = compiled.sass if isinstance(compiled.sass, str) else compiled.sass()
    assert "FFMA" not in sass and re.search(r"\bFMUL\b", sass) and re.search(r"\bFADD\b", sass)


def test_a_cupy_style_kernel_keeps_nvrtcs_fusion_as_cupy_compiles_it(options_given):
    kernel = tileworkbench.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y + y", "muladd")
    plan = kernel.launch_plan(np.ones(64, np.float32), np.ones(64, np.float32))
    launch.build(plan.kernel.specialize(plan.args), "sm_90")
    assert options_given and not any("--fmad=false" in options for options in options_given)
