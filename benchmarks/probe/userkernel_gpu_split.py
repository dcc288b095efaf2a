"""Where a user-kernel call's time goes on a GPU, for CuPy's kernels and ours (needs CuPy and a GPU).

    python benchmarks/probe/userkernel_gpu_split.py               # the guide's kernels at 4M elements
    python benchmarks/probe/userkernel_gpu_split.py --n 67108864  # 64M: the kernels' own speed

Per kernel of benchmarks/cupy_twin.py's timing table, microseconds per call, CuPy's then ours:
- event: the table's measure (CUDA events around one call, median), host path included;
- host: the Python of one call up to its return, the GPU left to run (mean of back-to-back calls,
  which never fill the launch queue);
- stream: back-to-back calls between two events, per call: max(host, kernel) once the queue is
  busy; at a size where the kernel is much longer than the host path, the kernel's own time.
A row where ours is behind on `event` but not on `stream` or `host` loses in the latency from the
call to the kernel's start; behind on `stream` at 64M, the kernel itself is slower.
With --sweep, each of our kernels' tile shapes is timed too (kernel time alone, as profile.sweep
times it), the default marked.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import cupy

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # this checkout's tileworkbench
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # cupy_twin

from cupy_twin import ElementwiseTwin, ReductionTwin, _time_ms, guide_cases  # noqa: E402


def host_us(call, reps: int = 200) -> float:
    cupy.cuda.get_current_stream().synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        call()
    elapsed = time.perf_counter() - start
    cupy.cuda.get_current_stream().synchronize()
    return elapsed / reps * 1e6


def stream_us(call, reps: int = 200) -> float:
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(reps):
        call()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / reps * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1 << 22, help="elements (a multiple of 1024)")
    parser.add_argument("--sweep", action="store_true", help="time each tile shape of our kernels")
    args = parser.parse_args()
    print(f"{'kernel':34s} {'event CuPy':>10s} {'ours':>7s} {'host CuPy':>10s} {'ours':>7s} "
          f"{'stream CuPy':>11s} {'ours':>7s}   launcher")
    for label, kind, definition, call_args, kwargs in guide_cases(args.n):
        twin = (ElementwiseTwin if kind == "E" else ReductionTwin)(*definition)
        row = []
        for kernel in (twin._theirs, twin._ours):
            def call(kernel=kernel):
                return kernel(*call_args, **kwargs)
            row.append((_time_ms(call) * 1e3, statistics.median(host_us(call) for _ in range(3)),
                        statistics.median(stream_us(call) for _ in range(3))))
        launcher = twin._ours.last_tile_kernel.last_launcher
        path = "C" if getattr(launcher, "native", None) is not None else "Python"
        (ce, ch, cs), (oe, oh, os_) = row
        print(f"{label:34s} {ce:10.1f} {oe:7.1f} {ch:10.1f} {oh:7.1f} {cs:11.1f} {os_:7.1f}   {path}")
        if args.sweep:
            default = twin._ours.launch_plan(*call_args, **kwargs).config
            result = twin._ours.sweep(*call_args, apply=False, check=False, progress=False, **kwargs)
            for r in result.rows:
                mark = " (default)" if r.config == default else ""
                timing = f"{r.time_ms * 1e3:7.1f} us" if r.ok and r.time_ms else f"-- {r.reason}"
                print(f"    {' '.join(f'{k}={v}' for k, v in r.config.items()):24s} {timing}{mark}")


if __name__ == "__main__":
    main()
