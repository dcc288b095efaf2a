"""fp8 mma on tensor cores: mma.sync m16n8k32 from sm_89 on, wgmma k32 on sm_90, CUDA cores before.
Compiled offline with NVRTC; the SASS shows which instruction the GPU runs."""
import re

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.codegen import generate
from tileworkbench.kernels import batch_matmul, matmul
from tileworkbench.runtime import sass

from ..gpu.cases import matmul_a_transposed, matmul_b_transposed, matmul_k_reversed
from .test_compile import _nvrtc_missing, runtime

FP8 = {"e4m3": ct.float8_e4m3fn.numpy, "e5m2": ct.float8_e5m2.numpy}
SAMPLE_TILES = (128, 256, 128)  # cuTile's BatchMatMul sample: (4, 512, 256) @ (4, 256, 1024)


def _sample(dtype, tiles=SAMPLE_TILES):
    a, b = np.zeros((4, 512, 256), dtype), np.zeros((4, 256, 1024), dtype)
    return batch_matmul.specialize((a, b, np.zeros((4, 512, 1024), np.float32), *tiles))


def _two_d(kernel, dtype, tiles, b_rows_are_n=False):
    a, b = np.zeros((256, 512), dtype), np.zeros((512, 512), dtype)
    return kernel.specialize((a, b.T.copy() if b_rows_are_n else b, np.zeros((256, 512), np.float32), *tiles))


def test_fp8_without_an_arch_stays_on_cuda_cores():
    source = generate(_sample(FP8["e4m3"])).source
    assert "mma_layout" not in source and "software pipeline" not in source
    assert re.search(r"tw::mma\(\w+, \w+, \w+\)", source)


def test_an_n_major_fp8_b_operand_is_staged_transposed_and_a_k_major_one_by_cp_async():
    source = generate(_sample(FP8["e4m3"]), arch="sm_89").source
    assert "const tw::operand_stages<__nv_fp8_e4m3, 128, 128, 2> a_stages" in source
    assert "const tw::operand_stages<__nv_fp8_e4m3, 256, 128, 2> b_stages" in source  # N x K: the transpose
    assert "tw::load_async(tw::transpose_stage(b_stages[stage]), B, " in source
    assert "tw::load_async(a_stages[stage], A, " in source
    assert "tw::mma(a_stages[stage], tw::transpose_stage(b_stages[stage]), acc" in source
    transposed_load = generate(_two_d(matmul_b_transposed, FP8["e4m3"], (128, 128, 64), True), arch="sm_89").source
    assert "tw::load_async(b_stages[stage], BT, " in transposed_load  # stored K-major: copied as it is
    assert "tw::mma(a_stages[stage], tw::transpose_stage(b_stages[stage]), acc" in transposed_load


def test_with_one_block_per_sm_an_n_major_fp8_b_lands_by_cp_async_and_is_transposed_in_shared_memory():
    source = generate(_sample(FP8["e4m3"]), arch="sm_90").source  # 128 x 256 accumulators: one block per SM
    assert "const tw::operand_stages<__nv_fp8_e4m3, 128, 256, 3> b_stages" in source  # as stored: K x N
    assert "const tw::operand_stages<__nv_fp8_e4m3, 256, 128, 2> b_k_major" in source  # two, alternating
    assert "tw::load_async(b_stages[stage], B, " in source
    loop = source[source.index("for (int32_t k = 0, stage = 0, turn = 0;"):]
    transpose = loop.index("tw::transpose_into(b_stages[stage], b_k_major[turn]);")
    assert transpose < loop.index("tw::publish_stage();") < loop.index(
        "tw::wgmma_async(a_stages[stage], tw::transpose_stage(b_k_major[turn]), acc")


def test_an_m_major_fp8_a_operand_is_staged_transposed_too():
    at, b = np.zeros((512, 256), FP8["e4m3"]), np.zeros((512, 512), FP8["e4m3"])
    fn = matmul_a_transposed.specialize((at, b, np.zeros((256, 512), np.float32), 64, 64, 32))
    source = generate(fn, arch="sm_90").source
    assert "const tw::operand_stages<__nv_fp8_e4m3, 64, 32, 4> a_stages" in source  # M x K: the transpose
    assert "tw::load_async(tw::transpose_stage(a_stages[stage]), AT, " in source
    assert "tw::wgmma(a_stages[stage], tw::transpose_stage(b_stages[stage]), acc" in source


def test_an_fp8_b_operand_too_narrow_for_the_stages_keeps_the_register_path():
    source = generate(_two_d(matmul, FP8["e4m3"], (64, 64, 16)), arch="sm_89").source
    assert "mma_layout" not in source  # k = 16 is not a multiple of the fp8 instruction's 32


def _build(fn, arch, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", None)
    generated, module = runtime.build(fn, arch)
    listing = sass.disassemble(module.cubin)
    return generated, module, module.kernels[generated.name], listing


needs_tools = pytest.mark.skipif(_nvrtc_missing() is not None or sass.find_nvdisasm() is None,
                                 reason="needs NVRTC, the CUDA headers and nvdisasm")


@needs_tools
@pytest.mark.parametrize("kind", FP8)
@pytest.mark.parametrize("kernel, tiles, b_rows_are_n", [
    (matmul, (128, 128, 64), False), (matmul, (128, 256, 128), False), (matmul_b_transposed, (128, 128, 64), True),
    (matmul, (64, 64, 32), False)])
def test_sm89_fp8_matmul_runs_qmma_from_the_pipeline_stages_without_spills(kind, kernel, tiles, b_rows_are_n,
                                                                             tmp_path, monkeypatch):
    generated, module, resources, listing = _build(_two_d(kernel, FP8[kind], tiles, b_rows_are_n), "sm_89",
                                                   tmp_path, monkeypatch)
    assert f"mma.sync.aligned.m16n8k32.row.col.f32.{kind}.{kind}.f32" in module.ptx
    assert f"QMMA.16832.F32.{kind.upper()}.{kind.upper()}" in listing
    assert "software pipeline" in generated.source and generated.arch is None
    assert not resources.spill_stores


@needs_tools
@pytest.mark.parametrize("kind", FP8)
@pytest.mark.parametrize("fn, n", [(lambda dt: _sample(dt), 256), (lambda dt: _sample(dt, (128, 128, 128)), 128),
                                   (lambda dt: _two_d(matmul, dt, (128, 128, 64)), 128),
                                   (lambda dt: _two_d(matmul_b_transposed, dt, (64, 64, 32), True), 64),
                                   (lambda dt: _two_d(matmul, dt, (128, 16, 64)), 16)])  # B rows too narrow for a stage
def test_sm90_fp8_matmul_runs_wgmma_k32_without_spills(kind, fn, n, tmp_path, monkeypatch):
    generated, module, resources, listing = _build(fn(FP8[kind]), "sm_90", tmp_path, monkeypatch)
    assert generated.arch == "sm_90a"
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{kind}.{kind}" in module.ptx
    assert f"QGMMA.64x{n}x32.F32.{kind.upper()}.{kind.upper()}" in listing
    assert "mma.sync" not in module.ptx and not resources.spill_stores
    assert "C7514" not in module.log  # ptxas did not have to serialize the wgmmas


@needs_tools
@pytest.mark.parametrize("arch, instruction", [("sm_89", "QMMA.16832.F32.E4M3.E4M3"), ("sm_90", "HMMA.16816.F32")])
def test_fp8_operands_copied_at_each_call_still_run_on_tensor_cores(arch, instruction, tmp_path, monkeypatch):
    """Operands at an index computed in the loop: no pipeline; both go through K-major shared memory at
    each mma. sm_90 has no fp8 mma.sync of its own: ptxas widens the fragments to float16 (exactly) for HMMA."""
    fn = _two_d(matmul_k_reversed, FP8["e4m3"], (128, 64, 64))
    generated, module, resources, listing = _build(fn, arch, tmp_path, monkeypatch)
    assert "software pipeline" not in generated.source
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32" in module.ptx
    assert instruction in listing and not resources.spill_stores
