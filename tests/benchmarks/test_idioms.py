"""benchmarks/idioms.py without a GPU: every idiom kernel runs on the interpreter at a tiny size and
matches NumPy; the checks catch wrong rows; the 16-bit gathers and scatters of the idioms compile to
16-byte vector accesses with no local memory."""
import collections

import numpy as np
import pytest

import benchmarks.idioms as idioms


def test_every_idiom_matches_numpy_on_the_interpreter_in_every_dtype():
    results = idioms.smoke()
    assert len(results) == len(idioms.idioms(smoke=True)) * len(idioms.DTYPES)
    assert [r for r in results if r[2] != "ok"] == []


def test_the_smoke_command_prints_a_verdict_per_idiom_and_dtype(capsys):
    assert idioms.main(["--smoke", "--only", "dropout", "--dtypes", "float16"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("dropout") and line.endswith("ok")


def test_an_unknown_dtype_is_refused():
    with pytest.raises(SystemExit):
        idioms.main(["--smoke", "--dtypes", "float8"])


def test_check_names_a_wrong_element_and_an_unwritten_one():
    [softmax] = [i for i in idioms.idioms(smoke=True) if i.kernel == "softmax_load"]
    x = np.random.default_rng(1).standard_normal((6, 64)).astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    assert idioms.check(softmax, {"x": x, "y": y}, "float32") is None
    wrong = y.copy()
    wrong[5, 3] += 0.5
    assert "relative error" in idioms.check(softmax, {"x": x, "y": wrong}, "float32")
    wrong[5, 3] = np.nan
    assert "NaN" in idioms.check(softmax, {"x": x, "y": wrong}, "float32")


def test_the_dropout_hash_keeps_about_one_minus_p_of_the_elements():
    u = idioms.hash_uniform(np.arange(1 << 16), 7)
    assert u.min() >= 0 and u.max() < 1
    assert abs(float((u >= idioms.DROP_P).mean()) - (1 - idioms.DROP_P)) < 0.01


def test_the_table_gives_bandwidth_and_ratios_to_copy_and_cutile():
    rows = [{"idiom": "softmax gather 4096", "dtype": "bfloat16", "bytes": 2e9, "tileworkbench": 1.0, "cuTile": 1.5,
             "copy": 0.8},
            {"idiom": "dropout", "dtype": "float32", "bytes": 1e9, "tileworkbench": "RuntimeError: boom", "copy": 0.5}]
    text = idioms.table(rows)
    first = text.splitlines()[2]
    assert "2000 GB/s" in first and "0.80" in first and "1.50" in first
    assert "failures:" in text and "RuntimeError: boom" in text


def _sass_counts(kernel, args):
    from tileworkbench.runtime.launch import build
    compiled = build(kernel.specialize(args), "sm_90")
    resources = compiled.resources
    counts = collections.Counter(i.opcode for i in compiled.instructions)
    return resources, counts


def _sass_missing() -> str | None:
    from tileworkbench.runtime.nvrtc import unavailable_reason
    from tileworkbench.runtime.sass import find_nvdisasm
    return unavailable_reason() or (None if find_nvdisasm() else "nvdisasm is not installed")


@pytest.mark.skipif(_sass_missing() is not None, reason=f"needs NVRTC and nvdisasm ({_sass_missing()})")
@pytest.mark.parametrize("name", ["softmax_gather", "swiglu", "silu_and_mul", "dropout"])
def test_16_bit_row_gathers_and_scatters_move_16_byte_vectors_without_local_memory(name):
    import ml_dtypes
    kernels = idioms.load_kernels("tileworkbench")
    z = lambda *shape: np.zeros(shape, ml_dtypes.bfloat16)  # noqa: E731
    args = {"softmax_gather": (z(8, 4096), z(8, 4096), 4096, 4096),
            "swiglu": (z(8, 4096), z(8, 4096), z(8, 4096), 4096),
            "silu_and_mul": (z(8, 8192), z(8, 4096), 4096, 4096),
            "dropout": (z(1 << 20), z(1 << 20), 1 << 20, 7, 0.1, 1024)}[name]
    resources, counts = _sass_counts(getattr(kernels, name), args)
    assert resources.local_bytes == 0
    assert counts["LDG.E.128.CONSTANT"] >= 2 and counts["STG.E.128"] >= 2
    # one reciprocal per APPROX division (silu) or per row (softmax), no IEEE division's refinement
    assert counts["MUFU.RCP"] <= 16
