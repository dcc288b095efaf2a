"""Where NVRTC may fuse multiply-adds: a tile kernel's floats round as its IR says (only the IR's fma
is fused, as cuTile fuses), so its other + and - are the _rn intrinsics, which NVRTC never fuses with
a multiply; a CuPy-style kernel is C, whose plain operators NVRTC fuses as it does for CuPy."""
import re

import numpy as np
import pytest

import tileworkbench
import tileworkbench.tile as ct
from tileworkbench.runtime import launch

from .test_compile import _nvrtc_missing

pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))


@ct.kernel
def products(x, y, out):
    a, b = ct.load(x, (0,), (64,)), ct.load(y, (0,), (64,))
    p = a * b
    ct.store(out, (0,), (p + b) + p)  # p is used twice: two roundings, no fma


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_tile_kernel_fuses_only_what_its_ir_fuses(dtype):
    args = tuple(np.zeros(64, dtype) for _ in range(3))
    compiled = launch.build(products.specialize(args), "sm_90")
    cuda = compiled.texts["cuda"]
    assert "tw::add_rn(" in cuda
    ptx = compiled.texts["ptx"]
    assert "fma." not in ptx and re.search(r"\badd\.rn\.(f16|f32|f64)\b", ptx)


def test_a_cupy_style_kernel_keeps_cs_operators_which_nvrtc_fuses_as_for_cupy():
    kernel = tileworkbench.ElementwiseKernel("float32 x, float32 y", "float32 z", "float t = x * y; z = t + y + t;",
                                             "twice")
    plan = kernel.launch_plan(np.ones(64, np.float32), np.ones(64, np.float32))
    compiled = launch.build(plan.kernel.specialize(plan.args), "sm_90")
    assert "_rn(" not in compiled.texts["cuda"]


@ct.kernel
def sums(x, y, out):
    a, b = ct.load(x, (0,), (64,)), ct.load(y, (0,), (64,))
    p = a * b
    ct.store(out, (0,), (-p + ct.exp(a)) + p)  # a negated product, then a product: both adds rounded alone
    ct.store(out, (1,), ct.exp(a) + b)         # no product: a plain add, NVRTC may fuse inside exp's code


def test_only_adds_a_product_reaches_are_kept_from_nvrtcs_fusion():
    args = (np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(128, np.float32))
    cuda = launch.build(sums.specialize(args), "sm_90").texts["cuda"]
    assert cuda.count("tw::add_rn(") == 2
    assert re.search(r"(\w+) = tw::exp\(a\);.*= \1 \+ b;", cuda, re.S)
