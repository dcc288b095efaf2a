"""Ratios to SDPA and cuTile, the targets section and skipped rows, on a fake results document: no GPU."""
import pytest

from benchmarks.peers import (CUBLAS, FIRST_LAUNCH, OVERHEAD, SDPA, add_ratios, format_table, targets, validate)
from tests.benchmarks.conftest import case, failed, ok


@pytest.fixture
def run(doc):
    """The shared document plus layernorm, attention, a sample case and the launch rows."""
    doc["cases"] += [
        case("layernorm", "memory", [ok("tileworkbench", "tileworkbench", 2.5), ok("torch layer_norm", "torch", 2.2)]),
        case("attention_d64_f16", "attention", [
            ok("tileworkbench, cuTile sample AttentionFMHA.py", "tileworkbench", 1.0),
            ok("cuTile sample AttentionFMHA.py", "cuTile", 1.25),
            ok(SDPA, "torch", 0.85),
            {"impl": "Triton tutorial 06-fused-attention", "family": "Triton", "status": "skipped",
             "error": "no 06-fused-attention.py in .triton_tutorials: --triton-tutorials DIR"}], flops=10 ** 12),
        case("sample_fft", "sample", [ok("tileworkbench, cuTile sample FFT.py", "tileworkbench", 2.0),
                                      failed("cuTile sample FFT.py", "cuTile", "TileCompilerError: x")]),
    ]
    doc["cases"][2]["results"].append(ok("Triton tutorial 03-matrix-multiplication", "Triton", 0.24))
    doc["latency"] += [{"measure": OVERHEAD, "impl": "tileworkbench, 1 PyTorch tensor", "status": "ok", "ms": 0.0092},
                       {"measure": OVERHEAD, "impl": "cuTile, 1 PyTorch tensor", "status": "ok", "ms": 0.0064},
                       {"measure": FIRST_LAUNCH, "impl": "tileworkbench", "status": "ok", "ms": 48.0}]
    add_ratios(doc["cases"])
    return doc


def by_target(rows, name, where=None):
    return next(r for r in rows if r["target"] == name and (where is None or r["case"] == where))


def test_attention_ratios_are_to_sdpa_and_to_the_fastest_cutile_result(run):
    tw, cutile, sdpa, _ = run["cases"][4]["results"]
    assert tw["x_sdpa"] == pytest.approx(0.85) and tw["x_cutile"] == pytest.approx(1.25)
    assert sdpa["x_best"] == 1.0 and tw["tflops"] == pytest.approx(1000.0)
    assert "x_cublas" not in tw and "x_copy" not in tw


def test_each_target_has_its_measured_ratio_and_verdict(run):
    rows = targets(run)
    assert by_target(rows, "attention >= 1.0x SDPA (fastest backend)")["verdict"] == "MISS"
    assert by_target(rows, "attention >= 1.0x SDPA (fastest backend)")["measured"] == pytest.approx(0.85)
    assert by_target(rows, "AttentionFMHA.py >= 1.0x cuTile")["measured"] == pytest.approx(1.25)
    assert by_target(rows, "AttentionFMHA.py >= 1.0x cuTile")["verdict"] == "PASS"
    assert by_target(rows, "matmul >= 1.0x cuBLAS")["measured"] == pytest.approx(0.8)
    assert by_target(rows, "matmul >= 1.0x Triton's tutorial (autotuned)")["measured"] == pytest.approx(0.96)
    copy = by_target(rows, "layernorm bf16, 16-bit transposes >= 0.95x copy")
    assert copy["measured"] == pytest.approx(2.0 / 2.5) and copy["verdict"] == "MISS"


def test_a_target_whose_reference_failed_or_is_missing_is_not_measured(run):
    rows = targets(run)
    assert by_target(rows, "FFT.py >= 1.0x cuTile")["verdict"] == "not measured"
    run["cases"][4]["results"][2] = failed(SDPA, "torch", "RuntimeError: No available kernel")
    assert by_target(targets(run), "attention >= 1.0x SDPA (fastest backend)")["verdict"] == "not measured"


def test_launch_targets_compare_with_cutile_and_the_first_launch_limit(run):
    rows = targets(run)
    overhead = by_target(rows, "host launch overhead <= cuTile's")
    assert overhead["verdict"] == "MISS" and overhead["shown"] == "9.2 us vs 6.4 us"
    first = by_target(rows, "first launch, warm disk cache, import included <= 60 ms")
    assert first["verdict"] == "PASS" and first["shown"] == "48.0 ms"


def test_targets_without_latency_rows_are_not_measured(doc):
    add_ratios(doc["cases"])
    rows = targets(doc)
    assert by_target(rows, "host launch overhead <= cuTile's")["verdict"] == "not measured"
    assert [r["target"] for r in rows if r["case"] == "matmul 4096"] == [
        "matmul >= 1.0x cuBLAS", "matmul >= 1.0x Triton's tutorial (autotuned)"]


def test_table_ends_with_the_targets_and_shows_skipped_rows(run):
    assert validate(run) == []
    text = format_table(run)
    targets_part = text[text.index("== targets"):]
    assert "attention >= 1.0x SDPA (fastest backend)" in targets_part and "0.85x  MISS" in targets_part
    assert "48.0 ms  PASS" in targets_part
    assert targets_part.strip().splitlines()[-1] == "2 PASS, 5 MISS, 1 not measured"
    assert "skipped: no 06-fused-attention.py" in text
    header = next(line for line in text.splitlines() if line.startswith("implementation"))
    assert header.split()[-5:] == ["xcopy", "xcuBLAS", "xSDPA", "xcuTile", "xbest"]


def test_cublas_is_the_matmul_reference_and_stays_named(run):
    assert [r["impl"] for r in run["cases"][2]["results"]][1] == CUBLAS


def test_attention_is_measured_against_the_fastest_sdpa_backend(run):
    from benchmarks.peers import SDPA_DEFAULT
    run["cases"][4]["results"].append(ok(SDPA_DEFAULT, "torch", 0.5))
    add_ratios(run["cases"])
    tw = run["cases"][4]["results"][0]
    assert tw["x_sdpa"] == pytest.approx(0.5)
    target = by_target(targets(run), "attention >= 1.0x SDPA (fastest backend)")
    assert target["measured"] == pytest.approx(0.5) and target["verdict"] == "MISS"


def test_16_bit_idioms_are_measured_against_cutile_and_the_copy(doc):
    doc["cases"] += [case("idiom_softmax_gather_4096_bf16", "memory", [
        ok("tileworkbench: idiom_kernels.py", "tileworkbench", 1.0), ok("cuTile: idiom_kernels.py", "cuTile", 0.9)]),
        case("idiom_softmax_gather_4096_f32", "memory", [ok("tileworkbench: idiom_kernels.py", "tileworkbench", 1.0)])]
    add_ratios(doc["cases"])
    rows = [r for r in targets(doc) if r["target"].startswith("16-bit idioms")]
    assert [r["target"] for r in rows] == ["16-bit idioms >= 1.0x cuTile", "16-bit idioms >= 0.9x copy"]
    assert rows[0]["measured"] == pytest.approx(0.9) and rows[0]["verdict"] == "MISS"
