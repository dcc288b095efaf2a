"""A sweep compiles every configuration (no GPU needed), keeps failures with their reasons and
picks a best configuration; results export to CSV and JSON."""
import csv
import json

import numpy as np
import pytest

from tileworkbench.kernels import transpose
from tileworkbench.profile.sweep import sweep

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

X = np.zeros((256, 256), np.float32)


@pytest.fixture(scope="module")
def result():
    progress = []
    r = sweep(transpose, grid_fn=lambda c: (256 // c["T"], 256 // c["T"]), args_fn=lambda c: (X, X.copy(), c["T"]),
              space={"T": [16, 32, 24, 64]}, arch="sm_80", progress=lambda done, total: progress.append((done, total)))
    r.progress = progress
    return r


def test_every_configuration_gets_a_row_with_compile_time_numbers(result):
    assert [row.config["T"] for row in result.rows] == [16, 32, 24, 64]
    ok = [row for row in result.rows if row.ok]
    assert len(ok) == 3
    assert all(row.registers > 0 and row.threads >= 32 and 0 < row.occupancy <= 1 and row.limiter for row in ok)
    assert not result.timed and "timings need a GPU" in result.note


def test_an_invalid_configuration_keeps_its_reason(result):
    (bad,) = [row for row in result.rows if row.config["T"] == 24]
    assert bad.status == "tile error" and "power" in bad.reason


def test_progress_is_reported_per_configuration(result):
    assert sorted(result.progress)[-1] == (4, 4) and len(result.progress) == 4


def test_best_is_the_highest_occupancy_then_fewest_registers(result):
    best = result.best()
    ok = [row for row in result.rows if row.ok]
    assert best.occupancy == max(row.occupancy for row in ok)


def test_csv_and_json_exports_round_trip(result, tmp_path):
    result.to_csv(tmp_path / "s.csv")
    rows = list(csv.DictReader(open(tmp_path / "s.csv")))
    assert [r["T"] for r in rows] == ["16", "32", "24", "64"] and rows[2]["status"] == "tile error"
    result.to_json(tmp_path / "s.json")
    data = json.load(open(tmp_path / "s.json"))
    assert data["kernel"] == "transpose" and len(data["rows"]) == 4 and data["timed"] is False
