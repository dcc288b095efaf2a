"""How a timed sweep scales with GPUs, and what fixed overhead remains.

The sweep: the tensor-core matmul (SIZE^3 float16, 12 tile shapes), each configuration launched,
checked against a float32 reference (not against the interpreter, which would run each launch on
the CPU) and timed with 100 repetitions: per-configuration work dominates. It runs on 1 GPU (in
this process, as a sweep on one GPU does), then on 2, 4, ... GPUs of the current GPU's model (one
worker process each): first cold (the sweep starts the worker processes), then warm (the next
sweeps reuse them), all from a warm compile cache.

    python benchmarks/sweep_gpus.py                 # every count of 1, 2, 4, 8 this host has
    python benchmarks/sweep_gpus.py --gpus 1,2,4 --size 4096 --repetitions 100

Prints the wall time of each sweep, the speedup of the warm sweeps over one GPU, and the fixed
overhead, each part measured on its own: starting the worker processes, moving the arguments
(into shared memory once per sweep, to each GPU once per sweep), what this process does per
configuration, a job's round trip to a worker, and the work of one configuration in a worker.
"""
import argparse
import os
import statistics
import time
from concurrent.futures import wait

import numpy as np

from tileworkbench.arguments import argument_leaves, normalize_grid
from tileworkbench.kernels import matmul
from tileworkbench.profile.sweep import sweep
from tileworkbench.profile.transfer import ArgumentStore, SharedArray
from tileworkbench.profile.work import launch_work
from tileworkbench.profile.workers import (Gpu, TimingJob, cached_config, copied_once, gpu_workers, release_arguments,
                                           shutdown_workers, time_config)

SPACE = {"TM": [64, 128], "TN": [64, 128, 256], "TK": [32, 64]}
CONFIGS = [dict(TM=m, TN=n, TK=k) for m in SPACE["TM"] for n in SPACE["TN"] for k in SPACE["TK"]]


class Matmul:
    """The swept problem: its arguments, grid and reference."""

    def __init__(self, size: int, repetitions: int):
        rng = np.random.default_rng(0)
        self.size, self.repetitions = size, repetitions
        self.a, self.b = (rng.standard_normal((size, size)).astype(np.float16) for _ in range(2))
        self.expected = (self.a.astype(np.float32) @ self.b.astype(np.float32)).astype(np.float16)

    def grid(self, c):
        return self.size // c["TM"], self.size // c["TN"]

    def args(self, c):
        return self.a, self.b, np.zeros((self.size, self.size), np.float16), c["TM"], c["TN"], c["TK"]

    def reference(self, c):
        return [self.expected]

    def sweep(self, gpus):
        """Wall seconds of the sweep on `gpus`; every configuration must pass its check."""
        start = time.perf_counter()
        result = sweep(matmul, self.grid, self.args, SPACE, reference=self.reference, check=False,
                       repetitions=self.repetitions, gpus=list(gpus), progress=False)
        seconds = time.perf_counter() - start
        failed = [r for r in result.rows if not r.ok]
        assert not failed, f"configurations failed: {[(r.config, r.status, r.reason) for r in failed]}"
        return seconds


def median_s(fn, times: int = 5) -> float:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def worker_start_s(gpu: Gpu, indices) -> float:
    """Starting worker processes on `indices` until each has its CUDA context (what a cold sweep adds)."""
    shutdown_workers()
    start = time.perf_counter()
    wait(gpu_workers(gpu, indices).broadcast(os.getpid))
    return time.perf_counter() - start


def round_trip_s(gpu: Gpu, indices) -> float:
    """A job that does nothing, sent to a warm worker and back."""
    workers = gpu_workers(gpu, indices)
    return median_s(lambda: workers.submit(os.getpid).result(), 50)


def parts(problem: Matmul, gpu: Gpu) -> dict:
    """The per-sweep and per-configuration parts of a sweep, each timed on its own in this process."""
    arch = gpu.describe(gpu.current())[1]
    out = {}
    with ArgumentStore() as store:
        def job(c, fn):
            arrays = [p.kind == "array" for p in fn.params]
            args = copied_once(argument_leaves(problem.args(c)), arrays, store.share)
            expected = [store.share(e) for e in problem.reference(c)]
            return TimingJob(fn, arch, gpu.describe(gpu.current())[0], normalize_grid(problem.grid(c)), args,
                             expected, False, problem.repetitions, gpu)

        fns = [matmul.specialize(problem.args(c)) for c in CONFIGS]
        start = time.perf_counter()
        job(CONFIGS[0], fns[0])
        out["share_s"] = time.perf_counter() - start          # the first job: every array into shared memory
        out["shared_mb"] = sum(b.size for b in store.blocks.values()) / 1e6

        def in_this_process(c):                                # what the sweep's process does per configuration
            fn = matmul.specialize(problem.args(c))
            cached_config(fn, arch)
            j = job(c, fn)
            launch_work(fn, j.grid, {p.name: a.shape for p, a in zip(fn.params, j.args) if p.kind == "array"})
            store.done([h for h in (*j.args, *j.expected) if isinstance(h, SharedArray)])
        out["parent_s"] = statistics.median(median_s(lambda: in_this_process(c), 3) for c in CONFIGS)

        first = job(CONFIGS[0], fns[0])
        start = time.perf_counter()
        time_config(first)                                     # copies the arguments to the GPU
        first_s = time.perf_counter() - start
        work = []
        for c, fn in zip(CONFIGS, fns):
            j = job(c, fn)
            start = time.perf_counter()
            timed = time_config(j)
            work.append(time.perf_counter() - start)
            assert timed.status == "ok", (c, timed)
        out["work_s"] = statistics.mean(work)
        out["to_gpu_s"] = first_s - work[0]
        release_arguments(gpu)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default=None, help="GPU counts to sweep on, e.g. 1,2,4 (default: 1, 2, 4, 8 "
                                                     "where the host has them)")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repetitions", type=int, default=100)
    options = parser.parse_args()
    gpu = Gpu()
    current = gpu.current()
    model = gpu.describe(current)
    same = [current] + [i for i in range(gpu.count()) if i != current and gpu.describe(i) == model]
    wanted = [int(n) for n in options.gpus.split(",")] if options.gpus else [1, 2, 4, 8]
    counts = [n for n in wanted if n <= len(same)]
    if options.gpus and counts != wanted:
        print(f"this host has {len(same)} {model[0]}: not sweeping on {[n for n in wanted if n > len(same)]} GPUs")
    problem = Matmul(options.size, options.repetitions)

    compile_s = problem.sweep(same[:1])                        # fills the compile cache
    print(f"{len(CONFIGS)} configurations of a {options.size}^3 float16 matmul (reference-checked, "
          f"{options.repetitions} repetitions) on {model[0]}; the first sweep, compiling: {compile_s:.2f} s")
    rows, starts, trips = {}, {}, {}
    for n in counts:
        if n == 1:
            rows[n] = (None, min(problem.sweep(same[:1]) for _ in range(2)))
            continue
        shutdown_workers()
        cold = problem.sweep(same[:n])
        rows[n] = (cold, min(problem.sweep(same[:n]) for _ in range(2)))
        trips[n] = round_trip_s(gpu, same[:n])
        starts[n] = worker_start_s(gpu, same[:n])
    one = rows.get(1, (None, None))[1]
    print(f"{'GPUs':>4}  {'cold sweep':>10}  {'warm sweep':>10}  speedup (warm, over 1 GPU)")
    for n, (cold, warm) in rows.items():
        speedup = f"{one / warm:.2f}x" if one else "-"
        print(f"{n:>4}  {f'{cold:.2f} s' if cold else '-':>10}  {warm:8.2f} s  {speedup}")

    p = parts(problem, gpu)
    print("fixed overhead, each part measured on its own:")
    for n in starts:
        print(f"  starting {n} worker processes (spawn, import, CUDA context), the cold sweep only: "
              f"{starts[n]:.2f} s  (cold - warm sweep: {rows[n][0] - rows[n][1]:.2f} s)")
    print(f"  per sweep, arguments into shared memory ({p['shared_mb']:.0f} MB, hashed and copied once): "
          f"{p['share_s'] * 1e3:.0f} ms")
    print(f"  per sweep and GPU, the first job's extra time (arguments to the GPU, with a pristine copy of the output): "
          f"{p['to_gpu_s'] * 1e3:.0f} ms")
    print(f"  per configuration, in the sweep's process (specialize, compile cache, hash arguments, work model): "
          f"{p['parent_s'] * 1e3:.1f} ms")
    for n in trips:
        print(f"  per configuration, a job's round trip to a worker ({n} GPUs): {trips[n] * 1e3:.2f} ms")
    print(f"  the work of one configuration (launch, copy back, reference check, timing): {p['work_s'] * 1e3:.0f} ms")
    print("the warm sweeps against configurations x max(per configuration in the sweep's process, (work + round trip) / GPUs):")
    for n, (_, warm) in rows.items():
        bound = len(CONFIGS) * max(p["parent_s"], (p["work_s"] + trips.get(n, 0)) / n)
        print(f"  {n} GPU{'s' if n > 1 else ''}: {warm:.2f} s against {bound:.2f} s; the rest, {warm - bound:.2f} s, is "
              f"what the parts above leave out (arguments per sweep, GPUs idle while the last jobs finish)")
    shutdown_workers()


if __name__ == "__main__":
    main()
