import json
import math

import pytest

from benchmarks.peers import add_ratios, format_table, result_stem, summarize, validate, verdict, versus_best_peer


def test_summarize_gives_median_and_p10_p90_in_ms():
    s = summarize([float(v) for v in range(1, 12)])
    assert (s["ms"], s["p10"], s["p90"], s["samples"]) == (6.0, 2.0, 10.0, 11)


def test_verdict_requires_bit_exact_results_at_zero_tolerance():
    assert verdict(0.0, 0) is None
    assert "not bit-exact" in verdict(1e-9, 0)


def test_verdict_compares_relative_error_with_tolerance():
    assert verdict(9e-6, 1e-5) is None
    assert verdict(2e-5, 1e-5) == "relative error 2.00e-05 > 1e-05"


def test_verdict_fails_an_output_with_nan_whatever_the_tolerance():
    assert "NaN" in verdict(math.nan, 1.0)


def test_ratios_are_to_the_fastest_copy_to_cublas_and_to_the_case_best(doc):
    add_ratios(doc["cases"])
    copy, softmax, matmul = doc["cases"]
    assert copy["results"][1]["gbs"] == (8 << 30) / 2.0 / 1e6
    assert copy["results"][0]["x_copy"] == 0.5 and copy["results"][1]["x_copy"] == 1.0
    tw, triton, cutile = softmax["results"]
    assert tw["x_copy"] == pytest.approx(0.8)
    assert (tw["x_best"], triton["x_best"]) == (0.8, 1.0)
    assert "x_best" not in cutile and "gbs" not in cutile
    tw, cublas = matmul["results"]
    assert tw["x_cublas"] == 0.2 / 0.25 and cublas["x_cublas"] == 1.0
    assert tw["tflops"] == 2 * 4096 ** 3 / 0.25 / 1e9
    assert "gbs" not in tw and "x_copy" not in tw


def test_ratios_leave_out_what_has_no_reference(doc):
    doc["cases"][0]["results"] = [{"impl": "torch copy_", "family": "torch", "status": "failed", "error": "x"}]
    add_ratios(doc["cases"])
    assert "x_copy" not in doc["cases"][1]["results"][0]
    assert doc["cases"][1]["results"][0]["gbs"] > 0


def test_versus_best_peer_names_the_fastest_other_library(doc):
    speed, peer = versus_best_peer(doc["cases"][1])
    assert (speed, peer) == (pytest.approx(0.8), "Triton")
    assert versus_best_peer(doc["cases"][0]) is None  # tileworkbench has no copy


def test_result_files_are_named_by_date_and_device():
    assert result_stem("2026-11-22T13:02:47+00:00", "NVIDIA H100 80GB HBM3", False) == "2026-11-22-h100-80gb-hbm3-peers"
    assert result_stem("2026-11-22T00:00:00+00:00", "NVIDIA H200", True) == "2026-11-22-h200-peers-quick"
    assert result_stem("2026-01-02", "  ", False) == "2026-01-02-gpu-peers"


def test_a_complete_document_validates_and_survives_json(doc):
    add_ratios(doc["cases"])
    assert validate(doc) == []
    assert validate(json.loads(json.dumps(doc))) == []


def test_validate_names_what_is_missing_or_malformed(doc):
    del doc["environment"]
    doc["cases"][0]["kind"] = "compute"
    del doc["cases"][1]["results"][0]["p90"]
    doc["cases"][1]["results"][2].pop("error")
    doc["latency"][0]["status"] = "maybe"
    problems = validate(doc)
    assert "doc: missing 'environment'" in problems
    assert "cases[0].kind: 'compute'" in problems
    assert "cases[1].results[0]: missing 'p90'" in problems
    assert "cases[1].results[2]: missing 'error'" in problems
    assert "latency[0].status: 'maybe'" in problems


def test_validate_rejects_another_schema(doc):
    doc["schema"] = "tileworkbench-peers/1"
    assert any("schema" in p for p in validate(doc))


def test_table_shows_numbers_ratios_failures_and_latency(doc):
    add_ratios(doc["cases"])
    text = format_table(doc)
    assert "NVIDIA H100 80GB HBM3" in text and "driver 580.159.04" in text and "tileworkbench commit abc123" in text
    line = next(s for s in text.splitlines() if s.startswith("tileworkbench") and "N=4096" in s)
    assert "2.5000" in line and "0.80" in line
    assert "failed: ModuleNotFoundError: No module named 'cuda'" in text
    assert "tileworkbench / best peer (Triton): 0.80x" in text
    assert "cold compile" in text and "450.0000" in text and "failed: RuntimeError: no tileiras" in text
