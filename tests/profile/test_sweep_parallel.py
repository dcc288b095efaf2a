"""Where a sweep's work runs: compile jobs in worker processes that share the disk cache, timing in
one process per GPU (stand-in GPUs here: the interpreter plays the device), or any Executor (a
local Dask cluster of CPU workers). Wherever it runs, the record is the serial one; a configuration
that fails is a row with its reason, and a sweep where every one failed says so."""
import os
import socket
import tempfile

import numpy as np
import pytest

from tileworkbench.kernels import transpose
from tileworkbench.profile.sweep import SweepError, sweep
from tileworkbench.profile.workers import GpuWorkers, TimingJob, shutdown_workers, time_config
from tileworkbench.runtime import device

from .fakes import FakeGpu, claimed_gpu_once_all_arrive

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

X = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
SPACE = {"T": [16, 32, 24, 64]}     # 24 is not a power of two


def transpose_sweep(space=SPACE, **options):
    options = {"progress": False, "arch": "sm_80", **options}
    return sweep(transpose, lambda c: (128 // c["T"], 128 // c["T"]), lambda c: (X, np.zeros_like(X), c["T"]),
                 space, **options)


@pytest.fixture(scope="module", autouse=True)
def end_gpu_workers():
    """The stand-in GPU workers that sweeps here keep end with the module's tests."""
    yield
    shutdown_workers()


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """An empty compile cache, here and in the worker processes this test starts (they read the variable)."""
    from tileworkbench.runtime import cache
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_default", None)
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def serial():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
        return transpose_sweep(workers=1)


def test_compiling_in_worker_processes_gives_the_serial_record(no_gpu, fresh_cache, serial):
    parallel = transpose_sweep(workers=2)
    assert parallel.records() == serial.records()
    assert [r.status for r in parallel.rows] == ["ok", "ok", "tile error", "ok"]
    compiled = sorted(fresh_cache.glob("*.kernel"))
    assert compiled                                 # the workers compiled into the shared cache ...
    transpose_sweep(workers=2)                      # ... all of it: the next sweep finds every kernel there
    assert sorted(fresh_cache.glob("*.kernel")) == compiled


def test_a_sweep_the_compile_cache_answers_starts_no_compile_process(no_gpu, fresh_cache, monkeypatch):
    from tileworkbench.profile import sweep as sweep_module
    from tileworkbench.profile.workers import InlineExecutor
    jobs = []

    class Recording(InlineExecutor):
        def submit(self, fn, /, *args, **kwargs):
            jobs.append(args[0].name)
            return super().submit(fn, *args, **kwargs)
    monkeypatch.setattr(sweep_module, "compile_pool", lambda processes: Recording())
    first = transpose_sweep(workers=2)
    assert len(jobs) == 3                           # an empty cache: each valid configuration is a compile job
    again = transpose_sweep(workers=2)
    assert len(jobs) == 3 and again.records() == first.records()


def test_workers_compiling_the_same_source_at_once_leave_one_valid_cache_entry(no_gpu, fresh_cache, monkeypatch):
    from tileworkbench.runtime import cache
    result = transpose_sweep({"T": [32] * 6}, workers=2)
    assert all(r.ok for r in result.rows) and len({r.registers for r in result.rows}) == 1
    entries = sorted(p.name for p in fresh_cache.iterdir())
    assert all(name.endswith(".kernel") for name in entries)   # no temporary file left behind
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(fresh_cache.parent / "once"))
    monkeypatch.setattr(cache, "_default", None)
    transpose_sweep({"T": [32] * 2}, workers=2)                 # the same entries as one compile writes
    assert sorted(p.name for p in (fresh_cache.parent / "once").iterdir()) == entries


def test_a_sweep_through_a_local_dask_cluster_gives_the_serial_record(no_gpu, fresh_cache, serial):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        result = transpose_sweep(executor=client.get_executor())
        workers = client.run(os.getpid)
    assert result.records() == serial.records()
    assert len(set(workers.values()) - {os.getpid()}) == 2 and list(fresh_cache.glob("*.kernel"))


def test_an_executor_must_be_a_concurrent_futures_executor(no_gpu):
    with pytest.raises(TypeError, match=r"client.get_executor\(\)"):
        transpose_sweep(executor=object())


def test_the_progress_bar_counts_configurations(no_gpu, capsys):
    transpose_sweep(workers=1, progress=True)
    bar = capsys.readouterr().err
    assert "transpose" in bar and "4/4" in bar


def test_each_finished_row_is_reported_while_the_others_are_pending(no_gpu):
    seen = []
    transpose_sweep(workers=1, on_row=lambda result, index: seen.append((index, [r.status for r in result.rows])))
    assert [index for index, _ in seen] == [0, 1, 2, 3]
    assert seen[0][1] == ["ok", "pending", "pending", "pending"] and seen[2][1][2] == "tile error"


def test_a_failing_argument_function_is_a_row_with_its_error(no_gpu):
    def args(c):
        if c["T"] == 32:
            raise KeyError("B")
        return X, np.zeros_like(X), c["T"]
    result = sweep(transpose, lambda c: (1, 1), args, {"T": [16, 32]}, arch="sm_80", workers=1, progress=False)
    assert [r.status for r in result.rows] == ["ok", "argument error"] and result.rows[1].reason == "KeyError: 'B'"


def test_a_sweep_where_every_configuration_failed_says_why(no_gpu, monkeypatch):
    from tileworkbench.runtime import launch
    from tileworkbench.runtime.nvrtc import NvrtcUnavailableError

    def no_nvrtc(fn, arch):
        raise NvrtcUnavailableError("NVRTC is not installed")
    monkeypatch.setattr(launch, "build", no_nvrtc)
    result = transpose_sweep(workers=1)
    expected = ("every configuration of `transpose` failed (4 of 4 run): compile error: NvrtcUnavailableError: "
                "NVRTC is not installed (3x); tile error: TileTypeError: Tile shape (24, 24) must have power-of-two "
                "dimensions; 24 is not a power of two (1x)")
    assert result.best_or_none() is None and result.note.endswith(expected)
    with pytest.raises(SweepError) as error:
        result.best()
    assert str(error.value) == expected


# ---- timing on several GPUs (stand-ins that launch on the interpreter) ----------------------------

def test_timing_spreads_over_every_gpu_of_the_model_and_each_row_names_its_gpu(no_gpu):
    one = transpose_sweep(workers=1, gpu=FakeGpu())
    spread = transpose_sweep(workers=2, gpu=FakeGpu(models=("Fake GPU", "Fake GPU", "Other GPU")))
    assert spread.timed and spread.device == "Fake GPU" and spread.note == ""
    assert [r.status for r in spread.rows] == ["ok", "ok", "tile error", "ok"]
    assert {r.device for r in spread.rows if r.ok} <= {"GPU 0: Fake GPU", "GPU 1: Fake GPU"}
    assert all(r.host == socket.gethostname() for r in spread.rows if r.ok)
    without_device = [{k: v for k, v in r.items() if k not in ("device", "host")} for r in spread.records()]
    assert without_device == [{k: v for k, v in r.items() if k not in ("device", "host")} for r in one.records()]
    assert spread.best().config == {"T": 64} and spread.best().time_ms == 1 / 64


def test_each_gpu_worker_process_claims_its_own_gpu():
    with tempfile.TemporaryDirectory() as arrived, GpuWorkers(FakeGpu(models=("A", "A")), [0, 1]) as pool:
        claimed = [pool.submit(claimed_gpu_once_all_arrive, arrived, 2) for _ in range(2)]
        assert sorted(f.result(timeout=120) for f in claimed) == [0, 1]


def test_gpus_of_different_models_are_refused(no_gpu):
    with pytest.raises(ValueError, match=r"gpus=\[0, 1\] are of different models \(A, B\)"):
        transpose_sweep(gpu=FakeGpu(models=("A", "B")), gpus=[0, 1])
    with pytest.raises(ValueError, match="this host has 2 GPUs"):
        transpose_sweep(gpu=FakeGpu(models=("A", "A")), gpus=[2])


def test_a_worker_with_another_gpu_model_refuses_the_job():
    fn = transpose.specialize((X, X, 32))
    job = TimingJob(fn, "sm_80", "NVIDIA H100", (4, 4, 1), (X, X.copy(), 32), None, True, 3, FakeGpu())
    timed = time_config(job)
    assert timed.status == "device mismatch" and timed.time_ms is None
    assert timed.reason == "this worker's GPU is Fake GPU; the sweep reports NVIDIA H100"


def test_an_arch_other_than_the_gpus_compiles_only_and_says_why(no_gpu):
    result = transpose_sweep({"T": [32]}, workers=1, gpu=FakeGpu(), arch="sm_90")
    assert not result.timed and result.rows[0].ok and result.rows[0].time_ms is None
    assert result.note.endswith("not timed: the GPU here (Fake GPU) is sm_80")
