"""The tensor-core mma path: which kernels take it, and what the generated code looks like."""
import re

import numpy as np
import pytest

from tileworkbench.codegen import generate
from tileworkbench.kernels import matmul

from ..gpu.cases import BF16, batched_matmul
from .test_compile import _nvrtc_missing, runtime


def _matmul(dtype, tiles=(128, 128, 32), size=256):
    a = np.zeros((size, size), dtype)
    return matmul.specialize((a, a, a, *tiles))


def test_bf16_matmul_keeps_its_accumulator_in_the_mma_layout_across_the_loop():
    source = generate(_matmul(BF16)).source
    assert "using mma_2x4 = tw::mma_layout<2, 4>;" in source
    assert "tw::tile<float, tw::shape<128, 128>, mma_2x4> acc = tw::full<float, tw::shape<128, 128>, mma_2x4>(0.0f);" in source
    assert source.count("tw::convert_layout") == 1  # once, before the store, never in the loop
    assert "#define TW_THREADS 256" in source


def test_matmul_operand_loads_are_pipelined_through_shared_memory_stages():
    generated = generate(_matmul(BF16, tiles=(128, 128, 64)), arch="sm_80")
    source = generated.source
    # 2 x 16 KB per stage; sm_80 gives two blocks of 256 threads 81 KB each: 4 stages do not fit, 2 do
    assert "the loads of a and b run 1 iteration ahead, copied by cp.async into 2 shared-memory stages" in source
    assert "const tw::operand_stages<__nv_bfloat16, 128, 64, 2> a_stages{tw::smem() + 0};" in source
    assert "const tw::operand_stages<__nv_bfloat16, 64, 128, 2> b_stages{tw::smem() + 32768};" in source
    assert "tw::load_async(a_stages[stage], A, tw::at(bm, k), " in source
    loop = source[source.index("for (int32_t k = 0, stage = 0;"):]
    assert "tw::mma(a_stages[stage], b_stages[stage], acc_1)" in loop and "load_operand" not in loop
    assert generated.smem_bytes >= 65536 and generated.arch is None


def test_mma_of_computed_operands_keeps_the_register_path():
    import tileworkbench.tile as ct

    @ct.kernel
    def doubled(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
        acc = ct.zeros((TM, TN), ct.float32)
        for k in range(ct.num_tiles(A, 1, (TM, TK))):
            a = ct.load(A, (0, k), (TM, TK))
            acc = ct.mma(a + a, ct.load(B, (k, 0), (TK, TN)), acc)
        ct.store(C, (0, 0), acc.astype(C.dtype))
    a = np.zeros((128, 128), BF16)
    source = generate(doubled.specialize((a, a, a, 128, 128, 32)), arch="sm_90").source
    assert "software pipeline" not in source and "wgmma" not in source
    assert re.search(r"tw::mma\(\w+, \w+, acc_1, mma_stage\)", source)


def test_float32_matmul_keeps_the_generic_path():
    source = generate(_matmul(np.float32)).source
    assert "mma_layout" not in source and "convert_layout" not in source
    assert re.search(r"tw::mma\(a, b, acc_\d\)", source)


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_tensor_core_matmul_uses_cp_async_ldmatrix_and_mma_sync_without_spills(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", None)
    compiled = runtime.build(_matmul(dtype), "sm_80")
    assert "mma.sync.aligned.m16n8k16.row.col.f32" in compiled.asm["ptx"]
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in compiled.asm["ptx"]
    assert "cp.async.cg.shared.global" in compiled.asm["ptx"] and "cp.async.wait_group" in compiled.asm["ptx"]
    resources = compiled.resources
    assert resources.registers <= 128 and not resources.spill_stores


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("tiles, n", [((128, 128, 32), 128), ((64, 64, 32), 64), ((128, 256, 64), 256)])
def test_sm90_matmul_runs_on_wgmma_from_the_pipeline_stages(tiles, n, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", None)
    compiled = runtime.build(_matmul(BF16, tiles=tiles), "sm_90")
    assert compiled.generated.arch == "sm_90a" and compiled.arch == "sm_90a"
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16" in compiled.asm["ptx"]
    assert "mma.sync" not in compiled.asm["ptx"] and "cp.async.bulk.tensor.2d" in compiled.asm["ptx"]
    assert compiled.threads == tiles[0] // 16 * 32  # one warpgroup per 64 rows
    assert not compiled.resources.spill_stores
    assert "C7514" not in compiled.asm["log"]  # ptxas did not have to serialize the wgmmas


def test_a_lone_block_per_sm_keeps_one_wgmma_group_in_flight():
    source = generate(_matmul(BF16, tiles=(128, 256, 64)), arch="sm_90", tma=False).source
    assert "the loads of a and b run 2 iterations ahead, copied by cp.async into 4 shared-memory stages" in source
    loop = source[source.index("for (int32_t k = 0, stage = 0;"):]
    assert "tw::wgmma_async(a_stages[stage], b_stages[stage], acc_1);" in loop
    assert "load_stage(k + 2, stage + 2 < 4 ? stage + 2 : stage - 2);" in loop
    assert loop.index("tw::wgmma_wait_all(acc_1);") < loop.index("convert_layout")
    # two blocks per SM (128 x 128 accumulators): the other block fills the gaps, no group stays in flight
    assert "wgmma_async" not in generate(_matmul(BF16, tiles=(128, 128, 64)), arch="sm_90").source


def test_with_a_group_in_flight_tma_copies_refill_the_stage_released_at_the_end_of_the_iteration():
    source = generate(_matmul(BF16, tiles=(128, 256, 64)), arch="sm_90").source
    assert "the loads of a and b run 3 iterations ahead, copied by TMA into 4 shared-memory stages" in source
    loop = source[source.index("for (int32_t k = 0, use = 0;"):]
    order = ["stage_barriers.wait_full(use);", "tw::wgmma_async(a_stages[stage], b_stages[stage], acc_1);",
             "if (use > 0) stage_barriers.release(use - 1);",
             "if (threadIdx.x == 0 && k + 3 < v) load_stage(k + 3, use + 3);",
             "tw::wgmma_wait_all(acc_1);", "stage_barriers.invalidate();"]
    assert [loop.index(line) for line in order] == sorted(loop.index(line) for line in order)
    # each group waited for (two blocks per SM): the copies are requested at the top of the iteration
    loop = generate(_matmul(BF16, tiles=(128, 128, 64)), arch="sm_90").source
    assert loop.index("load_stage(k + 2, use + 2);") < loop.index("tw::wgmma(") < loop.index("stage_barriers.release(use);")



def _batched(tiles):
    tm, tn, tk = tiles
    a, b, c = np.zeros((2, tm, tk * 2), np.float16), np.zeros((2, tk * 2, tn), np.float16), np.zeros((2, tm, tn), np.float16)
    return batched_matmul.specialize((a, b, c, *tiles))


def test_mma_operand_buffers_that_do_not_fit_twice_in_shared_memory_become_one():
    def buffer_bytes(tm, tn, tk):
        return ((tm * (tk + 8) + tk * (tn + 8)) * 2 + 127) // 128 * 128
    small = generate(_batched((64, 64, 32)), arch="sm_90")
    assert "TW_MMA_BUFFERS" not in small.source and small.smem_bytes >= 2 * buffer_bytes(64, 64, 32)
    large = generate(_batched((128, 256, 128)), arch="sm_90")  # two buffers: 200 KB, with the result's layout change too much
    assert "software pipeline" not in large.source and "#define TW_MMA_BUFFERS 1" in large.source
    assert buffer_bytes(128, 256, 128) <= large.smem_bytes <= 227 * 1024 < large.smem_bytes + buffer_bytes(128, 256, 128)


def test_a_tfloat32_mma_off_the_tensor_core_shapes_names_the_tensor_cores_arithmetic_it_computes():
    from ..gpu.cases import tf32_mma_shaped
    a = np.zeros((8, 64), np.float32)
    source = generate(tf32_mma_shaped.specialize((a, a.T.copy(), np.zeros((8, 8), np.float32), 8, 8, 64))).source
    assert re.search(r"tw::mma<tw::tf32_inputs>\(", source)  # tfloat32 tiles are float tiles in C++
    float32 = generate(_matmul(np.float32, tiles=(32, 32, 32), size=64)).source
    assert "tf32_inputs" not in float32


def _tf32_gemm(tiles=(64, 64, 32), size=256):
    from ..gpu.cases import tf32_gemm
    a = np.zeros((size, size), np.float32)
    return tf32_gemm.specialize((a, a, a, *tiles))


def test_tfloat32_casts_of_loads_feed_the_tensor_cores_from_plain_16_byte_loads():
    source = generate(_tf32_gemm(), arch="sm_90").source
    assert "using mma_2x2 = tw::mma_layout<2, 2>;" in source and "#define TW_THREADS 128" in source
    assert source.count("tw::load_operand<") == 2 and "tf32_inputs" not in source
    assert re.search(r"tw::mma\(at, bt, acc_\d, mma_stage\)", source)
    assert "software pipeline" not in source and "wgmma" not in source


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_tfloat32_mma_runs_m16n8k8_from_conflict_free_shared_loads_without_spills(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    from tileworkbench.runtime import cache
    from tileworkbench.runtime.sass import find_nvdisasm
    monkeypatch.setattr(cache, "_default", None)
    compiled = runtime.build(_tf32_gemm(), arch)
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in compiled.asm["ptx"]
    assert "ldmatrix" not in compiled.asm["ptx"]
    resources = compiled.resources
    assert resources.registers <= 128 and not resources.spill_stores
    if find_nvdisasm() is None:
        pytest.skip("nvdisasm is not installed")
    opcodes = [i.opcode for i in compiled.instructions]
    # a warp's 32x32 part per k step of 8: 2 x 2 eight-byte A loads, 4 x 2 four-byte B loads, 8 HMMA
    assert sum(o.startswith("HMMA.1688.F32.TF32") for o in opcodes) == 8
    assert sum(o == "LDS.64" for o in opcodes) >= 4 and not any(o.startswith(("FFMA", "DFMA")) for o in opcodes)


@pytest.mark.skipif(runtime is None, reason="needs the runtime")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_gathered_product_with_a_plane_of_a_3d_operand_keeps_nothing_on_the_stack(arch):
    """The pipelined K loop of a mixture-of-experts product: B's plane (an array view made in every
    iteration) goes to the out-of-line edge path by value, not stored to the stack for a reference."""
    from ..gpu.cases import CASES
    case = next(c for c in CASES if c.id == "expert-rows-matmul-bfloat16")
    compiled = runtime.build(case.kernel.specialize(case.args()), arch)
    assert "tw::gather_rows_async" in compiled.asm["cuda"]
    assert compiled.resources.local_bytes == 0 and not compiled.resources.spill_stores
