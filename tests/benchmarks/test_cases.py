import pytest

import benchmarks.peers as peers
from benchmarks.peers import (CUBLAS, CUTILE_SAMPLE, FAMILIES, IMPLEMENTATIONS, ON_TILEWORKBENCH, SDPA,
                              TRITON_TUTORIAL, Skipped, all_cases, entries_for, published_module, selected)


def test_only_selects_a_key_or_a_prefix_of_whole_parts():
    assert selected("softmax_4096", ["softmax"]) and selected("softmax_4096", ["softmax_4096"])
    assert not selected("softmax_4096", ["soft"]) and not selected("softmax_4096", ["softmax_1024"])
    assert selected("attention_d128_bf16_causal", ["attention_d128"]) and not selected("attention_d64_f16", ["d64"])
    assert selected("matmul_f16_8192", [])


def test_cases_have_the_sizes_of_the_issue_and_the_same_keys_at_every_size():
    full = {c.key: c for c in all_cases("full")}
    assert list(full) == [c.key for c in all_cases("quick")] == [c.key for c in all_cases("dry")]
    assert full["add"].params == {"n": 1 << 28} and full["add"].bytes == 3 * 4 * (1 << 28)
    assert full["transpose_f32"].bytes == 2 * 4 * 16384 ** 2 and full["transpose_f16"].bytes == 2 * 2 * 16384 ** 2
    assert [full[f"softmax_{n}"].params for n in (1024, 4096, 16384)] == [{"rows": 32768, "cols": n}
                                                                         for n in (1024, 4096, 16384)]
    assert [k for k in full if k.startswith("matmul")] == ["matmul_f16_4096", "matmul_bf16_4096", "matmul_f16_8192",
                                                          "matmul_bf16_8192"]
    assert full["matmul_bf16_8192"].flops == 2 * 8192 ** 3 and full["matmul_f16_4096"].params["dtype"] == "float16"
    attention = [c for c in full.values() if c.kind == "attention"]
    assert len(attention) == 8 and {(c.params["batch"], c.params["heads"], c.params["seq"]) for c in attention} == \
        {(4, 16, 4096)}
    assert {(c.params["d"], c.params["dtype"], c.params["causal"]) for c in attention} == \
        {(d, t, causal) for d in (64, 128) for t in ("float16", "bfloat16") for causal in (False, True)}
    assert full["attention_d64_f16_causal"].flops * 2 == full["attention_d64_f16"].flops == 4 * 4 * 16 * 4096 ** 2 * 64
    assert {c.kind for c in full.values()} == {"copy", "memory", "matmul", "attention", "sample"}
    assert full["cupy_reduction"].params == {"rows": 32768, "cols": 4096}


def test_exact_ops_must_be_bit_exact_and_the_others_have_a_tolerance_per_dtype():
    tolerance = {c.key: c.tolerance for c in all_cases()}
    assert all(tolerance[k] == 0 for k in ("copy", "add", "transpose_f32", "transpose_f16", "gather",
                                           "sample_vector_add"))
    assert tolerance["softmax_4096"] == 1e-5 and tolerance["layernorm"] == tolerance["matmul_bf16_4096"] == 1e-2
    assert tolerance["attention_d128_bf16"] == 1e-2


def test_every_library_implements_the_general_cases():
    general = ("add", "transpose", "gather", "softmax", "layernorm", "matmul")
    for op in general:
        assert {family for _, family, _ in IMPLEMENTATIONS[op]} == set(FAMILIES), op
        names = [name for name, _, _ in IMPLEMENTATIONS[op]]
        assert len(set(names)) == len(names), op


def test_each_peer_runs_its_published_kernel_where_it_has_one():
    def names(op):
        return [name for name, _, _ in IMPLEMENTATIONS[op]]
    assert TRITON_TUTORIAL + "03-matrix-multiplication" in names("matmul") and CUBLAS in names("matmul")
    assert TRITON_TUTORIAL + "06-fused-attention" in names("attention") and SDPA in names("attention")
    assert TRITON_TUTORIAL + "02-fused-softmax" in names("softmax")
    assert TRITON_TUTORIAL + "05-layer-norm" in names("layernorm")
    for op, file in (("matmul", "MatMul.py"), ("attention", "AttentionFMHA.py"), ("layernorm", "LayerNorm.py"),
                     ("transpose", "Transpose.py")):
        assert {CUTILE_SAMPLE + file, ON_TILEWORKBENCH + CUTILE_SAMPLE + file} <= set(names(op)), op


def test_every_sample_case_runs_a_cutile_sample_under_cutile_and_tileworkbench():
    samples = [c for c in all_cases() if c.kind == "sample"]
    assert {c.key for c in samples} == {"sample_vector_add", "sample_vector_add_gather", "sample_batch_matmul",
                                        "sample_layernorm_backward", "sample_fft", "sample_moe"}
    for case in samples:
        (tw, tw_family, _), (ct, ct_family, _) = IMPLEMENTATIONS[case.op]
        assert (tw_family, ct_family) == ("tileworkbench", "cuTile") and tw == ON_TILEWORKBENCH + ct


def test_impl_filter_keeps_the_references_of_the_ratios():
    cases = {c.key: c for c in all_cases("quick")}
    assert {e.family for e in entries_for(cases["softmax_1024"], ["cutile"])} == {"cuTile"}
    assert [e.impl for e in entries_for(cases["matmul_f16_4096"], ["torch"])] == [CUBLAS]
    assert SDPA in [e.impl for e in entries_for(cases["attention_d64_f16"], ["cutile"])]
    assert len(entries_for(cases["copy"], ["cutile"])) == 2


def test_a_missing_published_file_skips_its_row_and_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setitem(peers.PUBLISHED, "Triton", str(tmp_path))
    with pytest.raises(Skipped, match="prepare_triton_tutorials.sh"):
        published_module("Triton", "06-fused-attention.py", ("attention",))


def test_every_idiom_kernel_is_a_case_in_bf16_and_f32_under_tileworkbench_and_cutile():
    from benchmarks.idioms import idioms
    cases = {c.key: c for c in all_cases() if c.op == "idiom"}
    assert set(cases) == {f"idiom_{i.key}_{t}" for i in idioms(smoke=False) for t in ("bf16", "f32")}
    assert cases["idiom_softmax_gather_bf16"].bytes == 2 * 16384 * 4096 * 2 and \
        cases["idiom_softmax_gather_bf16"].kind == "memory"
    assert {family for _, family, _ in IMPLEMENTATIONS["idiom"]} == {"tileworkbench", "cuTile"}
