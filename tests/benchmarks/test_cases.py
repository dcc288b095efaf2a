from benchmarks.peers import CUBLAS, FAMILIES, IMPLEMENTATIONS, all_cases, entries_for, selected


def test_only_selects_a_key_or_every_key_of_its_first_part():
    assert selected("softmax_4096", ["softmax"]) and selected("softmax_4096", ["softmax_4096"])
    assert not selected("softmax_4096", ["soft"]) and not selected("softmax_4096", ["softmax_1024"])
    assert selected("matmul_8192", [])


def test_cases_have_the_sizes_of_the_issue_and_the_same_keys_when_quick():
    full = {c.key: c for c in all_cases(quick=False)}
    assert list(full) == [c.key for c in all_cases(quick=True)]
    assert full["add"].params == {"n": 1 << 28} and full["add"].bytes == 3 * 4 * (1 << 28)
    assert full["transpose_f32"].bytes == 2 * 4 * 16384 ** 2 and full["transpose_bf16"].bytes == 2 * 2 * 16384 ** 2
    assert [full[f"softmax_{n}"].params for n in (1024, 4096, 16384)] == [{"rows": 32768, "cols": n}
                                                                         for n in (1024, 4096, 16384)]
    assert full["matmul_4096"].flops == 2 * 4096 ** 3 and full["matmul_8192"].params == {"s": 8192}
    assert {c.kind for c in full.values()} == {"copy", "memory", "matmul"}
    assert full["cupy_elementwise"].params == {"n": 1 << 28} and full["cupy_elementwise"].tolerance == 0
    assert full["cupy_reduction"].params == {"rows": 32768, "cols": 4096}


def test_exact_ops_must_be_bit_exact_and_the_others_have_a_tolerance_per_dtype():
    tolerance = {c.key: c.tolerance for c in all_cases(quick=False)}
    assert all(tolerance[k] == 0 for k in ("copy", "add", "transpose_f32", "transpose_bf16", "gather"))
    assert tolerance["softmax_4096"] == 1e-5 and tolerance["layernorm"] == tolerance["matmul_4096"] == 1e-2


def test_every_library_implements_every_case_but_the_copy_and_cupys_own_kernels():
    only = {"copy": ["CuPy", "torch"], "cupy_elementwise": ["CuPy", "tileworkbench"],
            "cupy_reduction": ["CuPy", "tileworkbench"]}
    for case in all_cases(quick=False):
        families = [family for _, family, _ in IMPLEMENTATIONS[case.op]]
        expected = only.get(case.op, list(FAMILIES))
        assert sorted(families) == sorted(expected), case.op
        assert len({name for name, _, _ in IMPLEMENTATIONS[case.op]}) == len(families)


def test_cublas_is_the_torch_matmul_the_ratios_refer_to():
    assert (CUBLAS, "torch") in [(name, family) for name, family, _ in IMPLEMENTATIONS["matmul"]]


def test_impl_filter_keeps_the_references_of_the_ratios():
    cases = {c.key: c for c in all_cases(quick=True)}
    assert [e.family for e in entries_for(cases["softmax_1024"], ["cutile"])] == ["cuTile"]
    assert [e.impl for e in entries_for(cases["matmul_4096"], ["cutile"])] == ["cuTile", CUBLAS]
    assert len(entries_for(cases["copy"], ["cutile"])) == 2
    assert len(entries_for(cases["add"], [])) == 5
