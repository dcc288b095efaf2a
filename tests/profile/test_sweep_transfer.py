"""What a sweep moves and keeps between jobs: each distinct argument array crosses to a GPU once
per sweep (shared memory, one block per content), every configuration starts from the caller's
contents, shared memory is gone when the sweep is over (also when it is interrupted), and the GPU
worker processes stay for the next sweep, a dead one replaced. Stand-in GPUs: the interpreter
plays the device, here and in worker processes."""
import os
from multiprocessing.shared_memory import SharedMemory

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import transpose
from tileworkbench.profile import sweep as sweep_module
from tileworkbench.profile.sweep import sweep
from tileworkbench.profile.transfer import ArgumentStore, SharedArray
from tileworkbench.profile.workers import gpu_workers, shutdown_workers

from .fakes import FakeGpu

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

X = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
TWO_GPUS = FakeGpu(models=("Fake GPU", "Fake GPU"))    # one pair of worker processes for this module


@pytest.fixture(scope="module", autouse=True)
def end_gpu_workers():
    yield
    shutdown_workers()


@pytest.fixture
def stores(monkeypatch):
    """The ArgumentStores the sweeps of a test use, with the names of the blocks each made."""
    made = []

    class Recording(ArgumentStore):
        def __init__(self):
            super().__init__()
            self.names = []
            made.append(self)

        def share(self, array):
            handle = super().share(array)
            if isinstance(handle, SharedArray):
                self.names.append(handle.block)
            return handle
    monkeypatch.setattr(sweep_module, "ArgumentStore", Recording)
    return made


def transpose_sweep(args_fn, gpu, space=(16, 32, 64), **options):
    return sweep(transpose, lambda c: (128 // c["T"], 128 // c["T"]), args_fn, {"T": list(space)}, arch="sm_80",
                 gpu=gpu, workers=1, progress=False, **options)


class CountingGpu(FakeGpu):
    """Counts the arrays copied to the stand-in device (in this process: a sweep on one GPU times here)."""

    def to_device(self, a):
        if isinstance(a, np.ndarray):
            self.copies.append(a.shape)
        return super().to_device(a)


def test_each_distinct_array_is_copied_once_per_sweep_not_once_per_configuration(stores):
    gpu = CountingGpu()
    gpu.copies = []
    result = transpose_sweep(lambda c: (X, np.zeros_like(X), c["T"]), gpu)
    assert all(r.ok for r in result.rows), result.records()
    (store,) = stores
    assert store.made == 2                      # x, and the zeros every configuration makes afresh
    assert len(gpu.copies) == 3                 # x, y, and y's pristine copy: y is written


@ct.kernel
def increment(x, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (T,)) + 1)


@pytest.mark.parametrize("gpus", [None, [0, 1]], ids=["here", "worker processes"])
def test_every_configuration_starts_from_the_callers_contents_of_an_array_it_writes(gpus):
    x = np.arange(256, dtype=np.float32)
    gpu = FakeGpu() if gpus is None else TWO_GPUS
    result = sweep(increment, lambda c: (256 // c["T"],), lambda c: (x, c["T"]), {"T": [32, 64, 128, 256]},
                   arch="sm_80", gpu=gpu, gpus=gpus, reference=lambda c: [x + 1], progress=False)
    assert [r.status for r in result.rows] == ["ok"] * 4, result.records()
    assert np.array_equal(x, np.arange(256, dtype=np.float32))


def test_a_device_copy_an_earlier_configuration_wrote_is_restored_before_another_argument_reads_it():
    zeros, ones = np.zeros_like(X), np.ones_like(X)
    inputs = {16: zeros, 32: ones, 64: zeros}     # at 32 the output's copy of the zeros is the first one ...
    result = transpose_sweep(lambda c: (inputs[c["T"]], np.zeros_like(X), c["T"]), FakeGpu())
    assert [r.status for r in result.rows] == ["ok"] * 3, result.records()   # ... and at 64 the input's


@pytest.mark.parametrize("gpus", [None, [0, 1]], ids=["here", "worker processes"])
def test_arguments_that_differ_per_configuration_are_each_timed_with_their_own(stores, gpus):
    buffer = np.empty_like(X)

    def refilled(c):                    # one array, other contents each time: content, not identity, counts
        buffer[...] = X * c["T"]
        return buffer, np.zeros_like(X), c["T"]
    for args_fn in (lambda c: (X * c["T"], np.zeros_like(X), c["T"]), refilled):
        result = transpose_sweep(args_fn, FakeGpu() if gpus is None else TWO_GPUS, gpus=gpus,
                                 reference=lambda c: [(X * c["T"]).T])
        assert [r.status for r in result.rows] == ["ok"] * 3, result.records()
    assert [s.made for s in stores] == [7, 7]   # three inputs, three references and the zeros, in each sweep


def test_shared_memory_is_gone_after_the_sweep_and_after_an_interruption(stores):
    transpose_sweep(lambda c: (X, np.zeros_like(X), c["T"]), FakeGpu())
    calls = []

    def interrupted(c):
        calls.append(c)
        if len(calls) == 5:             # a configuration is timed, so its blocks exist
            raise KeyboardInterrupt
        return X * c["T"], np.zeros_like(X), c["T"]
    with pytest.raises(KeyboardInterrupt):
        transpose_sweep(interrupted, FakeGpu())
    assert len(stores) == 2 and all(len(set(s.names)) >= 2 for s in stores)
    for name in (n for s in stores for n in s.names):
        with pytest.raises(FileNotFoundError):
            SharedMemory(name=name)


def test_a_second_sweep_reuses_the_gpu_worker_processes():
    first = transpose_sweep(lambda c: (X, np.zeros_like(X), c["T"]), TWO_GPUS, gpus=[0, 1])
    workers = gpu_workers(TWO_GPUS, (0, 1))
    processes = {f.result(timeout=60) for f in workers.broadcast(os.getpid)}
    second = transpose_sweep(lambda c: (X.T.copy(), np.zeros_like(X), c["T"]), TWO_GPUS, gpus=[0, 1])
    assert all(r.ok for r in first.rows + second.rows)
    assert gpu_workers(TWO_GPUS, (0, 1)) is workers and workers.started == 2
    assert {f.result(timeout=60) for f in workers.broadcast(os.getpid)} == processes
    assert len(processes) == 2 and os.getpid() not in processes


def test_a_gpu_worker_that_dies_is_replaced_and_the_sweep_still_reports_every_row():
    gpu = FakeGpu(models=("Fake GPU", "Fake GPU"), die_at=16)
    result = transpose_sweep(lambda c: (X, np.zeros_like(X), c["T"]), gpu, space=(16, 32, 64, 64), gpus=[1])
    statuses = [r.status for r in result.rows]
    assert statuses[0] == "launch error" and "terminated abruptly" in result.rows[0].reason
    assert statuses[-1] == "ok" and result.rows[-1].device == "GPU 1: Fake GPU"
    assert gpu_workers(gpu, (1,)).started == 2


def test_without_room_in_shared_memory_arguments_travel_with_each_job(stores, monkeypatch):
    from tileworkbench.profile import transfer
    monkeypatch.setattr(transfer, "_shared_memory_free", lambda: 1 << 20)
    with pytest.warns(UserWarning, match=r"shared memory \(/dev/shm\) has 1 MB free"):
        result = transpose_sweep(lambda c: (X * c["T"], np.zeros_like(X), c["T"]), TWO_GPUS, gpus=[0, 1],
                                 reference=lambda c: [(X * c["T"]).T])
    assert [r.status for r in result.rows] == ["ok"] * 3, result.records()
    assert stores[0].made == 0
