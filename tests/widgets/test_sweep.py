"""A sweep without a GPU: one row per configuration, failures with their reasons, the best by the
documented rule (highest occupancy, then fewest registers), and CSV/JSON that read back."""
import csv
import json

import numpy as np
import pytest

from tileworkbench.kernels import vector_add
from tileworkbench.profile.sweep import sweep
from tileworkbench.runtime import device
from tileworkbench.widgets.sweep import SweepView

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

N = 4096
SPACE = {"TILE": [128, 96, 1024]}     # 96 is not a power of two


def args(config):
    return np.zeros(N, np.float32), np.zeros(N, np.float32), np.zeros(N, np.float32), config["TILE"]


@pytest.fixture(scope="module")
def progress_and_result():
    calls = []
    with pytest.MonkeyPatch.context() as mp:   # compile-time results, the same on a machine with a GPU
        mp.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
        result = sweep(vector_add, lambda c: (N // c["TILE"],), args, SPACE, arch="sm_90", workers=2,
                       progress=lambda done, total: calls.append((done, total)))
    return calls, result


def test_each_configuration_has_a_row_and_the_progress_reaches_the_total(progress_and_result):
    calls, result = progress_and_result
    assert [r.config["TILE"] for r in result.rows] == SPACE["TILE"]
    assert sorted(calls) == [(1, 3), (2, 3), (3, 3)]
    assert not result.timed and "timings need a GPU" in result.note


def test_a_tile_shape_that_is_not_a_power_of_two_fails_with_its_tile_error(progress_and_result):
    _, result = progress_and_result
    bad = result.rows[1]
    assert bad.status == "tile error" and "power of two" in bad.reason and "TileTypeError" in bad.reason
    assert bad.registers is None and bad.occupancy is None


def test_good_rows_have_compile_time_resources_and_the_best_follows_the_rule(progress_and_result):
    _, result = progress_and_result
    good = [r for r in result.rows if r.ok]
    assert len(good) == 2 and all(r.registers > 0 and r.threads > 0 and r.limiter for r in good)
    assert all(r.time_ms is None for r in good)
    best = result.best()
    assert best.ok and (best.occupancy, -best.registers) == max((r.occupancy, -r.registers) for r in good)


def test_csv_and_json_round_trip(progress_and_result, tmp_path):
    _, result = progress_and_result
    result.to_csv(tmp_path / "s.csv")
    with open(tmp_path / "s.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["TILE"]) for r in rows] == SPACE["TILE"]
    assert [r["status"] for r in rows] == [r.status for r in result.rows]
    assert int(rows[0]["registers"]) == result.rows[0].registers
    result.to_json(tmp_path / "s.json")
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["rows"] == result.records() and data["space"] == SPACE and data["timed"] is False


def test_view_of_a_one_dimensional_sweep_draws_a_row_and_exports_png(progress_and_result, tmp_path):
    _, result = progress_and_result
    view = SweepView(result)
    assert view.y == "" and view.data["best"] == result.rows.index(result.best())
    assert "sweep-cell" in view.to_svg()
    pytest.importorskip("matplotlib", reason="the PNG export needs matplotlib")
    view.to_png(tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.gpu
def test_on_a_gpu_every_good_configuration_is_timed():
    result = sweep(vector_add, lambda c: (N // c["TILE"],), lambda c: _device(args(c)), {"TILE": [128, 256]})
    assert result.timed and all(r.ok and r.time_ms > 0 for r in result.rows)


def _device(host_args):
    import cupy
    return tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host_args)
