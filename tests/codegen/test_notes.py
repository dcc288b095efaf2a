"""The code generator's notes: which path each mma took and why it missed a faster one, and where
tiles change layout through shared memory. No GPU needed (generation only)."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.codegen import generate

from ..gpu.cases import (attention_rows, causal_row_max, gathered_rows_matmul, gathered_rows_matmul_scattered,
                         matmul_operator)


def _notes(kernel, args, arch="sm_90", **options):
    fn = kernel.specialize(args)
    return {(line, text) for line, text in generate(fn, arch=arch, **options).notes}


def _attention_args(k_as=0, d=64):
    return (np.zeros((256, d), np.float16), np.zeros((d, 200) if k_as == 0 else (200, d), np.float16),
            np.zeros((200, d), np.float16), np.zeros((256, d), np.float16), 200, 128, 128, d, k_as)


def _line_of(kernel, text: str) -> int:
    lines, first = __import__("inspect").getsourcelines(kernel.__wrapped__)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_chained_mmas_on_sm_90_run_as_pipelined_wgmma_with_p_from_registers():
    notes = dict(_notes(attention_rows, _attention_args()))
    qk = notes[_line_of(attention_rows, "s = ct.mma(q, k")]
    pv = notes[_line_of(attention_rows, "acc = ct.mma(p.astype")]
    assert qk.startswith("mma on tensor cores (wgmma), operands copied by TMA (mbarrier stages)")
    assert pv.startswith("mma on tensor cores (wgmma); A from registers")


def test_the_same_kernel_for_sm_80_says_mma_sync():
    texts = [t for _, t in _notes(attention_rows, _attention_args(), arch="sm_80")]
    assert any(t.startswith("mma on tensor cores (mma.sync)") and "cp.async" in t for t in texts)
    assert not any("wgmma" in t for t in texts)


def test_a_128_row_n_major_b_with_a_in_registers_is_wgmma_where_tma_fills_its_stages():
    texts = [t for _, t in _notes(attention_rows, _attention_args(d=128)) if t.startswith("mma on")]
    assert texts and all(t.startswith("mma on tensor cores (wgmma)") for t in texts)


def test_a_128_row_n_major_b_with_a_in_registers_on_cp_async_stages_says_why_it_is_not_wgmma():
    texts = [t for _, t in _notes(attention_rows, _attention_args(d=128), tma=False)]
    assert any("not wgmma: with A in registers and stages filled by cp.async" in t and "(this one is 128 x 128)" in t
               for t in texts)


@ct.kernel
def gathered_b(A, B, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (ct.bid(0), k), (TM, TK))
        rows = k * TK + ct.arange(TK, dtype=ct.int32)
        b = ct.gather(B, (rows[:, None], ct.arange(TN, dtype=ct.int32)[None, :]))
        acc = ct.mma(a, b, acc)
    ct.store(C, (ct.bid(0), 0), acc.astype(C.dtype))


def test_an_mma_operand_from_a_gather_is_not_pipelined_and_the_note_says_so():
    args = (np.zeros((128, 128), np.float16), np.zeros((128, 64), np.float16), np.zeros((128, 64), np.float16),
            64, 64, 32)
    notes = dict(_notes(gathered_b, args))
    text = notes[_line_of(gathered_b, "acc = ct.mma(a, b, acc)")]
    assert "its operands are copied to shared memory at every call" in text
    assert "not pipelined: its B operand is a gather in the loop" in text


def _gathered_rows_args(tk=32):
    return (np.zeros((50, 200), np.float16), np.zeros((200, 128), np.float16), np.zeros((128, 128), np.float32),
            np.zeros(128, np.int32), 64, 64, tk)


def test_an_a_operand_gathered_by_rows_in_the_loop_is_pipelined_through_a_row_table():
    fn = gathered_rows_matmul.specialize(_gathered_rows_args())
    generated = generate(fn, arch="sm_90")
    text = dict(generated.notes)[_line_of(gathered_rows_matmul, "acc = ct.mma(a, ct.load(B")]
    assert text.startswith("mma on tensor cores (wgmma), operands copied by cp.async")
    assert "not TMA: the rows of `A` are gathered" in text
    assert "tw::store_row_table(" in generated.source and "tw::gather_rows_async(" in generated.source
    # the index tiles only the staged gather read are not made in the loop
    assert "tw::broadcast<tw::shape<64, 32>>" not in generated.source


def test_a_scatter_by_an_outer_product_of_indices_makes_no_full_index_tiles():
    # rows: a loaded tile, read from a table in shared memory; columns: start + arange, computed
    args = (np.zeros((130, 256), np.float16), np.zeros((256, 256), np.float16), np.zeros((130, 256), np.float16),
            np.zeros(128, np.int32), 128, 128, 64)
    source = generate(gathered_rows_matmul_scattered.specialize(args), arch="sm_90").source
    assert source.count("tw::index_table<tw::shape<128, 128>>") == 1
    assert source.count("tw::affine_index<int32_t, tw::shape<128, 128>, 1>") == 1
    assert "tw::broadcast<tw::shape<128, 128>>" not in source


@ct.kernel
def gathered_rows_masked(A, B, C, rows, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    r = ct.load(rows, (ct.bid(0),), (TM,))
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(A.shape[1], TK)):
        cols = k * TK + ct.arange(TK, dtype=ct.int32)
        a = ct.gather(A, (r[:, None], cols[None, :]), mask=cols[None, :] < 100)
        acc = ct.mma(a, ct.load(B, (k, 0), (TK, TN)), acc)
    ct.store(C, (ct.bid(0), 0), acc)


def test_a_masked_gather_is_not_pipelined_and_the_note_says_so():
    notes = dict(_notes(gathered_rows_masked, _gathered_rows_args()))
    text = notes[_line_of(gathered_rows_masked, "acc = ct.mma(a, ct.load(B")]
    assert "not pipelined: its A operand is a gather in the loop" in text


def test_a_float32_mma_says_it_runs_on_cuda_cores_and_why():
    args = (np.zeros((96, 80), np.float32), np.zeros((80, 72), np.float32), np.zeros((96, 72), np.float32), 32, 32, 16)
    texts = [t for _, t in _notes(matmul_operator, args)]
    assert any(t == "mma on CUDA cores: tensor cores take float16, bfloat16 or tfloat32 operands here, not float32 "
                    "@ float32 (ct.astype both to ct.tfloat32 for tensor cores)" for t in texts)


def test_a_tfloat32_mma_in_a_loop_runs_on_tensor_cores_and_says_why_it_is_not_pipelined():
    from ..gpu.cases import tf32_matmul_loop
    args = (np.zeros((32, 100), np.float32), np.zeros((100, 32), np.float32), np.zeros((32, 32), np.float32), 16)
    texts = [t for _, t in _notes(tf32_matmul_loop, args)]
    assert ("mma on tensor cores (mma.sync); its operands are copied to shared memory at every call, then a barrier; "
            "not pipelined: pipeline stages hold 16-bit operands") in texts


def test_storing_an_accumulator_after_the_loop_notes_one_layout_change_through_shared_memory():
    texts = [t for _, t in _notes(attention_rows, _attention_args())]
    stores = [t for t in texts if t.endswith("changes layout (mma_8x1 to blocked) through shared memory")]
    assert len(stores) == 1


@ct.kernel
def bias_each_step(A, B, Bias, C, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        acc = ct.mma(ct.load(A, (0, k), (TM, TK)), ct.load(B, (k, 0), (TK, TN)), acc)
        acc = acc + ct.load(Bias, (0, 0), (TM, TN))
    ct.store(C, (0, 0), acc)


def test_a_layout_change_inside_a_loop_says_every_iteration():
    args = (np.zeros((64, 128), np.float16), np.zeros((128, 64), np.float16), np.zeros((64, 64), np.float32),
            np.zeros((64, 64), np.float32), 64, 64, 32)
    notes = _notes(bias_each_step, args)
    line = _line_of(bias_each_step, "acc = acc + ct.load(Bias")
    assert any(l == line and "changes layout (blocked to mma_" in t and t.endswith("in every iteration")
               for l, t in notes)


def test_a_tile_made_before_a_loop_changes_layout_once_where_it_is_made():
    args = (np.zeros((256, 64), np.float16), np.zeros((64, 256), np.float16), np.zeros((256, 1), np.float32), 256)
    notes = _notes(causal_row_max, args)
    line = _line_of(causal_row_max, "rows = ct.bid(0)")
    assert (line, "`rows` (128x1) changes layout (blocked to mma_rows_8) through shared memory") in notes
    assert not any(t.endswith("in every iteration") for _, t in notes)


def test_the_launch_report_card_lists_the_notes():
    from tileworkbench.widgets.launch_report import compile_report, launch_report_data, report_text
    text = report_text(launch_report_data(compile_report(attention_rows, (2,), _attention_args())))
    assert "codegen" in text and "mma on tensor cores (wgmma)" in text
