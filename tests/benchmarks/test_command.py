import importlib.util
import json
import os
import subprocess
import sys

import pytest

import benchmarks.peers as peers
from benchmarks.peers import PROBES, add_ratios, commit, gpu_state, main, validate, write_results

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_help_runs_as_the_readme_says_without_a_gpu():
    done = subprocess.run([sys.executable, "benchmarks/peers.py", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--only" in done.stdout and "softmax_16384" in done.stdout and "cuTile" in done.stdout


def test_an_unknown_library_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--impl", "cutile,numba"])
    assert e.value.code == 2 and "unknown --impl numba" in capsys.readouterr().err


def test_results_are_written_as_json_table_and_chart_named_by_date_and_device(doc, tmp_path):
    add_ratios(doc["cases"])
    written = write_results(doc, str(tmp_path / "out"))
    stem = str(tmp_path / "out" / "2026-11-22-h100-80gb-hbm3-peers")
    assert written[:2] == [stem + ".json", stem + ".txt"]
    with open(stem + ".json") as f:
        assert validate(json.load(f)) == []
    with open(stem + ".txt") as f:
        assert "tileworkbench / best peer" in f.read()
    if importlib.util.find_spec("matplotlib"):  # the chart is written where matplotlib is installed
        assert written[2] == stem + ".png" and os.path.getsize(stem + ".png") > 10_000


def test_every_compile_probe_is_valid_python():
    for impl, body in PROBES.items():
        compile(peers._TIME_TWO_LAUNCHES + body, f"<{impl} probe>", "exec")


def test_a_latency_row_is_the_median_of_its_samples_or_the_failure():
    assert peers._row("cold", "Triton", [3.0, 1.0, 2.0]) == {"measure": "cold", "impl": "Triton", "status": "ok",
                                                            "ms": 2.0, "values": [3.0, 1.0, 2.0]}
    assert peers._row("cold", "cuTile", error="RuntimeError: x")["status"] == "failed"


def test_the_commit_comes_from_the_environment_first(monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_COMMIT", "0123abc")
    assert commit(REPO) == "0123abc"
    monkeypatch.delenv("TILEWORKBENCH_COMMIT")
    assert commit(REPO) and "unknown" not in commit(REPO)


def test_gpu_state_without_nvidia_smi_says_so(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert gpu_state() == {"error": "nvidia-smi gave nothing"}


def test_a_dry_run_makes_every_selected_case_its_table_and_targets_without_a_gpu(tmp_path):
    pytest.importorskip("torch", reason="the peer benchmark's cases make their data with PyTorch")
    done = subprocess.run([sys.executable, "benchmarks/peers.py", "--dry-run", "--out", str(tmp_path),
                           "--only", "softmax_1024,attention_d64_f16,sample_fft,launch",
                           "--triton-tutorials", str(tmp_path / "none")],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    doc = json.loads(path.read_text())
    assert validate(doc) == []
    assert [c["key"] for c in doc["cases"]] == ["copy", "softmax_1024", "attention_d64_f16",
                                                "attention_d64_f16_causal", "sample_fft"]
    results = {c["key"]: {r["impl"]: r for r in c["results"]} for c in doc["cases"]}
    assert results["softmax_1024"]["tileworkbench"]["status"] == "ok"  # on the interpreter, checked
    assert results["softmax_1024"]["Triton tutorial 02-fused-softmax"]["status"] == "skipped"
    assert results["attention_d64_f16"]["torch SDPA (flash backend)"]["status"] == "ok"
    assert doc["latency"][0]["status"] == "skipped"
    text = (tmp_path / path.name.replace(".json", ".txt")).read_text()
    assert "== targets" in text and "attention >= 1.0x SDPA (fastest backend)" in text


def test_runs_split_by_only_merge_into_one_document_with_each_case_once(doc, tmp_path):
    import copy
    first, second = copy.deepcopy(doc), copy.deepcopy(doc)
    first["cases"], first["latency"] = first["cases"][:2], []
    second["cases"] = [second["cases"][0], second["cases"][2]]
    second["cases"][0]["results"][1]["ms"] = 99.0  # the second run's copy is not the one kept
    second["command"] = "python3 benchmarks/peers.py --only matmul,launch"
    paths = []
    for i, part in enumerate((first, second)):
        paths.append(str(tmp_path / f"part{i}.json"))
        with open(paths[-1], "w") as f:
            json.dump(part, f)
    assert main(["--merge", *paths, "--out", str(tmp_path / "merged")]) == 0
    [merged] = [p for p in (tmp_path / "merged").iterdir() if p.suffix == ".json"]
    result = json.loads(merged.read_text())
    assert validate(result) == []
    assert [c["key"] for c in result["cases"]] == ["copy", "softmax_4096", "matmul_4096"]
    assert result["cases"][0]["results"][1]["ms"] == 2.0 and len(result["latency"]) == 2
    assert "--only matmul,launch" in result["command"]


def test_a_dry_run_without_pytorch_says_it_needs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if it were not installed
    with pytest.raises(SystemExit, match="--dry-run needs PyTorch"):
        peers.on_the_host()
