"""A sweep compiles every configuration (no GPU needed), keeps failures with their reasons and
picks a best configuration; results export to CSV and JSON. On a GPU (here a stand-in that launches
on the interpreter) every configuration is checked against the interpreter before it is timed."""
import csv
import json

import numpy as np
import pytest

import tileworkbench.tile as ct

from tileworkbench.kernels import transpose
from tileworkbench.profile.sweep import sweep
from tileworkbench.runtime import device

from .fakes import FakeGpu

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

X = np.zeros((256, 256), np.float32)


@pytest.fixture(scope="module")
def result():
    progress = []
    with pytest.MonkeyPatch.context() as mp:   # compile-time results, the same on a machine with a GPU
        mp.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
        r = sweep(transpose, grid_fn=lambda c: (256 // c["T"], 256 // c["T"]), args_fn=lambda c: (X, X.copy(), c["T"]),
                  space={"T": [16, 32, 24, 64]}, arch="sm_80",
                  progress=lambda done, total: progress.append((done, total)))
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


# ---- the GPU path, through a stand-in GPU: the interpreter plays the device -----------------------

def fake_sweep(gpu, space=(16, 32, 64), **options):
    x = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    return sweep(transpose, grid_fn=lambda c: (128 // c["T"], 128 // c["T"]),
                 args_fn=lambda c: (x, np.zeros_like(x), c["T"]), space={"T": list(space)}, arch="sm_80",
                 gpu=gpu, **options)


def test_on_a_gpu_each_configuration_is_checked_against_the_interpreter_and_timed():
    def corrupt(T, y):
        if T == 32:
            y[3, 5] += 1000
    result = fake_sweep(FakeGpu(corrupt))
    assert result.timed and result.note == ""
    by_t = {row.config["T"]: row for row in result.rows}
    assert by_t[32].status == "mismatch"
    assert by_t[32].reason == "y: 1 of 16384 elements differ from the interpreter, max error 1e+03 at (3, 5)"
    assert by_t[32].time_ms is None
    assert by_t[16].ok and by_t[64].ok and by_t[64].time_ms == 1 / 64 and by_t[64].gbs > 0
    assert result.best().config == {"T": 64}


def test_a_difference_within_the_dtype_tolerance_is_not_a_mismatch():
    result = fake_sweep(FakeGpu(lambda T, y: y.__imul__(np.float32(1 + 1e-6))), space=(32,))
    assert result.rows[0].ok


def test_without_a_reference_a_wrong_output_is_still_caught_and_check_false_skips_the_interpreter():
    def zero(T, y):
        y[:] = 0
    assert fake_sweep(FakeGpu(zero), space=(64,)).rows[0].status == "mismatch"
    assert fake_sweep(FakeGpu(zero), space=(64,), check=False).rows[0].ok


def test_a_user_reference_is_checked_too():
    wrong = lambda c: [np.ones((128, 128), np.float32)]  # noqa: E731
    (row,) = fake_sweep(FakeGpu(), space=(64,), reference=wrong).rows
    assert row.status == "mismatch" and row.reason.endswith("against the reference")


@ct.kernel
def increment(x, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (T,)) + 1)


def test_the_interpreter_starts_from_the_inputs_as_they_were_before_the_gpu_launch():
    x = np.arange(256, dtype=np.float32)
    result = sweep(increment, lambda c: (256 // c["T"],), lambda c: (x, c["T"]), {"T": [64]}, arch="sm_80",
                   gpu=FakeGpu())
    assert result.rows[0].ok, result.rows[0].reason


def test_a_launch_that_fails_keeps_its_error():
    result = fake_sweep(FakeGpu(fail_at=16), space=(16, 32))
    assert result.rows[0].status == "launch error" and "OUT_OF_RESOURCES" in result.rows[0].reason
    assert result.rows[1].ok


@ct.kernel
def past_the_end(x, y, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i + 1,), (T,), check_bounds=False))


def test_an_unchecked_access_out_of_bounds_is_a_tile_error_not_a_timing():
    x = np.arange(256, dtype=np.float32)
    result = sweep(past_the_end, lambda c: (256 // c["T"],), lambda c: (x, np.zeros_like(x), c["T"]), {"T": [64]},
                   arch="sm_80", gpu=FakeGpu(), check=True)
    (row,) = result.rows
    assert row.status == "tile error" and row.reason.startswith("TileOutOfBoundsError") and row.time_ms is None


@ct.kernel
def add_into(x, y, z, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(z, (i,), ct.load(x, (i,), (T,)) + ct.load(y, (i,), (T,)))


class AliasRecordingGpu(FakeGpu):
    """Records, per launch, whether its first two arrays are one array on the device."""

    def launch(self, fn, grid, args):
        self.one_array.append(args[0] is args[1])
        super().launch(fn, grid, args)


def test_an_array_passed_twice_is_one_array_on_the_device_as_in_the_call_timed():
    x, z = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    gpu = AliasRecordingGpu()
    gpu.one_array = []
    result = sweep(add_into, lambda c: (256 // c["T"],), lambda c: (x, x, z, c["T"]), {"T": [64]}, arch="sm_80",
                   gpu=gpu)
    assert result.rows[0].ok, result.rows[0].reason
    assert gpu.one_array and all(gpu.one_array)
    result = sweep(add_into, lambda c: (256 // c["T"],), lambda c: (x, x.copy(), z, c["T"]), {"T": [64]},
                   arch="sm_80", gpu=gpu)
    assert result.rows[0].ok and not gpu.one_array[-1]
