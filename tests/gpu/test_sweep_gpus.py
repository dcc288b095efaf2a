"""A sweep timed on GPUs from worker processes: every GPU of the host, several workers on one GPU,
and a local Dask cluster; each row names the GPU it was timed on, and the record is the one the
in-process sweep gives (statuses, resources, checks). The worker processes stay for the next
sweep, and every configuration starts from the caller's contents of the arrays it writes."""
import os

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import matmul
from tileworkbench.profile.sweep import sweep
from tileworkbench.profile.workers import Gpu, gpu_workers, shutdown_workers

M = N = K = 512
SPACE = {"TM": [64, 128], "TN": [64, 128], "TK": [32, 64]}
RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((M, K)).astype(np.float16), RNG.standard_normal((K, N)).astype(np.float16)


def matmul_sweep(**options):
    return sweep(matmul, lambda c: (M // c["TM"], N // c["TN"]),
                 lambda c: (A, B, np.zeros((M, N), np.float16), c["TM"], c["TN"], c["TK"]), SPACE,
                 reference=lambda c: [(A.astype(np.float32) @ B.astype(np.float32)).astype(np.float16)],
                 progress=False, **options)


def gpus_like_the_current():
    import cupy
    names = [cupy.cuda.runtime.getDeviceProperties(i)["name"].decode() for i in range(cupy.cuda.runtime.getDeviceCount())]
    model = names[cupy.cuda.runtime.getDevice()]
    return model, [i for i, name in enumerate(names) if name == model]


def without_timing(record):
    return {k: v for k, v in record.items() if k not in ("time_ms", "gbs", "tflops", "device", "host")}


@pytest.fixture(scope="module", autouse=True)
def end_gpu_workers():
    yield
    shutdown_workers()


@pytest.fixture(scope="module")
def in_process():
    return matmul_sweep(workers=1, gpus=[gpus_like_the_current()[1][0]])


@pytest.mark.gpu
def test_the_in_process_sweep_checks_and_times_every_configuration(in_process):
    model, _ = gpus_like_the_current()
    assert in_process.timed and in_process.device == model
    assert all(r.ok and r.time_ms > 0 and r.device.endswith(model) for r in in_process.rows), in_process.records()


@pytest.mark.gpu
def test_several_workers_on_one_gpu_give_the_in_process_record(in_process):
    model, indices = gpus_like_the_current()
    result = matmul_sweep(gpus=[indices[0]] * 3)
    assert [without_timing(r) for r in result.records()] == [without_timing(r) for r in in_process.records()]
    assert {r.device for r in result.rows} == {f"GPU {indices[0]}: {model}"}


@pytest.mark.gpu
def test_a_sweep_spreads_over_every_gpu_of_the_model_and_each_row_names_its_gpu(in_process):
    model, indices = gpus_like_the_current()
    if len(indices) < 2:
        pytest.skip(f"needs two GPUs of one model (this host has {len(indices)} {model})")
    result = matmul_sweep()
    assert [without_timing(r) for r in result.records()] == [without_timing(r) for r in in_process.records()]
    assert {r.device for r in result.rows} <= {f"GPU {i}: {model}" for i in indices}


@pytest.mark.gpu
def test_a_sweep_on_a_dask_cluster_is_timed_on_its_workers(in_process):
    distributed = pytest.importorskip("distributed")
    model, _ = gpus_like_the_current()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        result = matmul_sweep(executor=client.get_executor())
    assert [without_timing(r) for r in result.records()] == [without_timing(r) for r in in_process.records()]
    assert all(r.ok and r.time_ms > 0 and r.device.endswith(model) for r in result.rows)


@ct.kernel
def add_one(x, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(x, (i,), ct.load(x, (i,), (T,)) + 1)


@pytest.mark.gpu
def test_worker_processes_stay_for_the_next_sweep_and_each_configuration_starts_from_the_callers_array():
    _, indices = gpus_like_the_current()
    x = np.arange(1 << 16, dtype=np.float32)
    on = [indices[0]] * 2     # two worker processes, on one GPU: any host has that

    def run(scale):
        return sweep(add_one, lambda c: (x.size // c["T"],), lambda c: (x * scale, c["T"]), {"T": [128, 256, 512, 1024]},
                     reference=lambda c: [x * scale + 1], gpus=on, progress=False)
    first = run(1)
    workers = gpu_workers(Gpu(), on)
    processes = {f.result(timeout=120) for f in workers.broadcast(os.getpid)}
    second = run(2)
    assert all(r.ok for r in first.rows + second.rows), first.records() + second.records()
    assert gpu_workers(Gpu(), on) is workers and workers.started == 2
    assert {f.result(timeout=120) for f in workers.broadcast(os.getpid)} == processes
