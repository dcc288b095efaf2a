"""The peer benchmark's quick run on the GPU: the published and own kernels of a few cases are checked
and timed, the document validates, and tileworkbench's rows and the ratios' references all ran."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.peers import CUBLAS, SDPA, validate

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_quick_peer_run_checks_and_times_tileworkbench_and_the_references(tmp_path):
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "benchmarks/peers.py", "--quick", "--out", str(tmp_path),
                           "--only", "softmax_1024,matmul_f16_4096,attention_d64_f16,sample_vector_add"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    doc = json.loads(path.read_text())
    assert validate(doc) == []
    rows = {(c["key"], r["impl"]): r for c in doc["cases"] for r in c["results"]}
    assert rows[("matmul_f16_4096", CUBLAS)]["status"] == "ok"
    assert rows[("attention_d64_f16", SDPA)]["status"] == "ok"
    tileworkbench = [r for r in rows.values() if r["family"] == "tileworkbench" and r["status"] != "skipped"]
    assert tileworkbench and all(r["status"] == "ok" for r in tileworkbench), [r.get("error") for r in tileworkbench]
