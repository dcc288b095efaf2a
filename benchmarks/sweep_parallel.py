"""A compile-only sweep of the tensor-core matmul over 64 tile shapes (TM x TN x TK in 16..128),
once in this process and once through a local Dask cluster of CPU workers, each from an empty
compile cache, taking turns by TK (16 configurations at a time); both records must be the same.

    python benchmarks/sweep_parallel.py [workers]      # default: 2 Dask workers, one thread each

Prints both wall times, the ratio and the CPU time each side spent (on a machine that other work
shares, the CPU times show whether the workers did more work or only got less of the CPUs).
Needs NVRTC and `distributed`; no GPU (the sweep compiles for sm_90 whether or not one is there).
"""
import os
import sys
import tempfile
import time

import numpy as np

from tileworkbench.kernels import matmul
from tileworkbench.profile.sweep import sweep

SIZES = [16, 32, 64, 128]
A = np.zeros((512, 512), np.float16)


def run(tk: int, **options):
    """(result, wall seconds) of the 16 configurations with this TK."""
    start = time.perf_counter()
    result = sweep(matmul, lambda c: (512 // c["TM"], 512 // c["TN"]), lambda c: (A, A, A, c["TM"], c["TN"], c["TK"]),
                   {"TM": SIZES, "TN": SIZES, "TK": [tk]}, arch="sm_90", gpus=[], progress=False, **options)
    return result, time.perf_counter() - start


def main():
    from distributed import Client, LocalCluster
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    serial_s = parallel_s = serial_cpu = workers_cpu = 0.0
    serial_rows, parallel_rows = [], []
    with tempfile.TemporaryDirectory() as serial_cache, tempfile.TemporaryDirectory() as cluster_cache:
        os.environ["TILEWORKBENCH_CACHE_DIR"] = cluster_cache   # the workers start with it, empty
        start = time.perf_counter()
        with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.wait_for_workers(workers)
            startup_s = time.perf_counter() - start
            os.environ["TILEWORKBENCH_CACHE_DIR"] = serial_cache
            load = os.getloadavg()[0]
            for tk in SIZES:   # alternate, so that what else the machine runs weighs on both alike
                cpu = time.process_time()
                serial, seconds = run(tk, workers=1)
                serial_s, serial_cpu = serial_s + seconds, serial_cpu + time.process_time() - cpu
                before = client.run(time.process_time)
                parallel, seconds = run(tk, executor=client.get_executor())
                parallel_s += seconds
                workers_cpu += sum(client.run(time.process_time)[w] - before[w] for w in before)
                serial_rows += serial.records()
                parallel_rows += parallel.records()
    assert parallel_rows == serial_rows, "the Dask sweep's record differs from the serial one"
    ok = sum(r["status"] == "ok" for r in serial_rows)
    print(f"{len(serial_rows)} configurations ({ok} ok), compile only, sm_90, {os.cpu_count()} CPUs, "
          f"load average {load:.1f} before")
    print(f"serial, in this process:        {serial_s:6.1f} s ({serial_cpu:.1f} s of CPU)")
    print(f"Dask LocalCluster, {workers} workers:   {parallel_s:6.1f} s ({workers_cpu:.1f} s of CPU in the workers; "
          f"{serial_s / parallel_s:.2f}x; the cluster took {startup_s:.1f} s more to start)")
    print("records identical")


if __name__ == "__main__":
    main()
