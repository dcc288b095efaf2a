"""A sweep timed on GPUs from worker processes: every GPU of the host, several workers on one GPU,
and a local Dask cluster; each row names the GPU it was timed on, and the record is the one the
in-process sweep gives (statuses, resources, checks)."""
import numpy as np
import pytest

from tileworkbench.kernels import matmul
from tileworkbench.profile.sweep import sweep

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
