"""TMA pipeline stages on sm_90: which loads the planner gives to the tensor copy engine, the tensor
map parameters it asks the launcher for, what the code notes say, and what NVRTC makes of it (SASS
with UTMALDG, mbarrier SYNCS and HGMMA, no local memory). No GPU needed."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.codegen import generate
from tileworkbench.codegen.cuda import TensorMapParam
from tileworkbench.kernels import matmul
from tileworkbench.runtime import sass
from tileworkbench.runtime.launch import build

from ..gpu.cases import (BF16, attention_rows, batched_matmul_staged, matmul_invariant_transposed_a, matmul_nan_padded,
                         matmul_transposed_a, matmul_transposed_b)
from .test_compile import _nvrtc_missing

compiles = pytest.mark.skipif(_nvrtc_missing() is not None or sass.find_nvdisasm() is None,
                              reason="needs NVRTC and nvdisasm (pip install 'tileworkbench[nvrtc]')")


def _matmul(kernel=matmul, dtype=BF16, tiles=(128, 256, 64), a_shape=(512, 512), b_shape=(512, 512)):
    return kernel.specialize((np.zeros(a_shape, dtype), np.zeros(b_shape, dtype), np.zeros((512, 512), dtype), *tiles))


def _mma_notes(fn, **options) -> list[str]:
    return [text for _, text in generate(fn, arch="sm_90", **options).notes if text.startswith("mma on")]


def _sass_counts(fn) -> tuple[dict, object]:
    compiled = build(fn, "sm_90")
    listing = sass.disassemble(compiled.cubin)
    counts = {op: listing.count(op) for op in ("UTMALDG", "SYNCS", "HGMMA", "LDGSTS")}
    return counts, compiled.resources


@pytest.mark.parametrize("tiles", [(64, 64, 32), (64, 128, 128), (128, 128, 64), (128, 256, 64), (128, 256, 128)])
def test_sm90_matmul_stages_ask_for_one_tensor_map_per_operand_one_panel_wide(tiles):
    tm, tn, tk = tiles
    generated = generate(_matmul(tiles=tiles), arch="sm_90")
    assert generated.tensor_maps == [TensorMapParam(0, (tm, min(tk, 64)), min(128, 2 * tk)),
                                     TensorMapParam(1, (tk, min(tn, 64)), min(128, 2 * tn))]
    assert "const __grid_constant__ tw::tensor_map A_tma,\n    const __grid_constant__ tw::tensor_map B_tma) {" \
        in generated.source
    assert "tw::load_async" not in generated.source and "cp_async" not in generated.source
    (note,) = _mma_notes(_matmul(tiles=tiles))
    assert note.startswith("mma on tensor cores (wgmma), operands copied by TMA (mbarrier stages)")


@compiles
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("tiles", [(64, 64, 32), (128, 128, 64), (128, 256, 64)])
def test_sm90_matmul_compiles_to_tensor_copies_mbarriers_and_wgmma_without_local_memory(dtype, tiles):
    counts, resources = _sass_counts(_matmul(dtype=dtype, tiles=tiles))
    assert counts["UTMALDG"] and counts["SYNCS"] and counts["HGMMA"] and not counts["LDGSTS"]
    assert resources.local_bytes == 0 and not resources.spill_stores


def test_a_transposed_b_is_mapped_as_stored_n_by_k():
    fn = _matmul(matmul_transposed_b, tiles=(128, 128, 64))
    assert generate(fn, arch="sm_90").tensor_maps[1] == TensorMapParam(1, (128, 64), 128)


@compiles
def test_batched_3d_loads_with_a_unit_leading_axis_use_3d_tensor_maps():
    a = np.zeros((2, 256, 192), np.float16)
    fn = batched_matmul_staged.specialize((a, np.zeros((2, 192, 256), np.float16), np.zeros((2, 256, 256), np.float32),
                                           128, 128, 64))
    assert generate(fn, arch="sm_90").tensor_maps == [TensorMapParam(0, (1, 128, 64), 128),
                                                      TensorMapParam(1, (1, 64, 64), 128)]
    compiled = build(fn, "sm_90")
    assert "cp.async.bulk.tensor.3d" in compiled.asm["ptx"]


def test_a_load_padding_with_nan_keeps_cp_async_and_the_note_says_why():
    fn = _matmul(matmul_nan_padded)
    assert not generate(fn, arch="sm_90").tensor_maps
    (note,) = _mma_notes(fn)
    assert "copied by cp.async" in note and note.endswith("cp.async, not TMA: the load of `A` pads with NAN "
                                                          "(TMA fills with zeros)")


@ct.kernel
def matmul_of_a_slice(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    rows = A.slice(axis=0, start=64, stop=A.shape[0])
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(rows, 1, (TM, TK))):
        a = ct.load(rows, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO), acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


def test_a_load_from_an_array_slice_keeps_cp_async_and_the_note_says_why():
    fn = _matmul(matmul_of_a_slice)
    assert not generate(fn, arch="sm_90").tensor_maps
    (note,) = _mma_notes(fn)
    assert note.endswith("cp.async, not TMA: `rows` is not a kernel argument (tensor maps are made for arguments)")


def test_a_transposed_a_operand_is_not_staged_and_the_note_says_why():
    a = np.zeros((256, 512), np.float16)
    fn = matmul_transposed_a.specialize((a, a, np.zeros((512, 512), np.float32), 128, 128, 64))
    (note,) = _mma_notes(fn)
    assert note.startswith("mma on tensor cores (mma.sync); its operands are copied to shared memory at every call")
    assert note.endswith("not pipelined: its A operand is loaded transposed (a staged A is read K-major)")


def test_an_a_operand_loaded_transposed_before_the_loop_is_not_staged_and_the_note_says_why():
    fn = matmul_invariant_transposed_a.specialize((np.zeros((64, 256), np.float16), np.zeros((64, 512), np.float16),
                                                   np.zeros((256, 128), np.float32), 128, 128, 64))
    (note,) = _mma_notes(fn)
    assert note.endswith("not pipelined: its A operand, loaded before the loop, is transposed (a staged A is read "
                         "K-major)")
    for arch in ("sm_80", "sm_90"):
        build(fn, arch)  # compiles: the mma copies A through shared memory


def test_without_tma_or_before_sm_90_the_stages_stay_on_cp_async():
    fn = _matmul()
    (note,) = _mma_notes(fn, tma=False)
    assert note.endswith("cp.async, not TMA: the kernel was generated without TMA")
    assert not generate(fn, arch="sm_90", tma=False).tensor_maps
    assert not generate(fn, arch="sm_80").tensor_maps and "mbarrier" not in generate(fn, arch="sm_80").source


@compiles
def test_attention_copies_k_and_v_by_tma_and_q_once_by_cp_async():
    q = np.zeros((256, 64), np.float16)
    fn = attention_rows.specialize((q, np.zeros((64, 200), np.float16), np.zeros((200, 64), np.float16), q,
                                    200, 128, 128, 64, 0))
    generated = generate(fn, arch="sm_90")
    assert [m.array for m in generated.tensor_maps] == [1, 2]
    assert "tw::load_async(q_stage, Q, " in generated.source
    counts, resources = _sass_counts(fn)
    # (the few local bytes left are Q's element-by-element edge copy, as on the cp.async path)
    assert counts["UTMALDG"] and counts["LDGSTS"] and counts["HGMMA"] and not resources.spill_stores


@compiles
def test_tileworkbench_no_tma_in_the_environment_builds_the_cp_async_variant(monkeypatch):
    fn = _matmul(tiles=(128, 128, 64))
    monkeypatch.setenv("TILEWORKBENCH_NO_TMA", "1")
    compiled = build(fn, "sm_90")
    assert not compiled.tensor_maps and "cp.async.cg.shared.global" in compiled.asm["ptx"]
    monkeypatch.delenv("TILEWORKBENCH_NO_TMA")
    compiled = build(fn, "sm_90")
    assert compiled.tensor_maps and "cp.async.bulk.tensor" in compiled.asm["ptx"]

