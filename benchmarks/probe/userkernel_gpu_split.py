"""Where a user-kernel call's time goes on a GPU, for CuPy's kernels and ours (needs CuPy and a GPU).

    python benchmarks/probe/userkernel_gpu_split.py               # the guide's kernels at 4M elements
    python benchmarks/probe/userkernel_gpu_split.py --n 67108864  # 64M: the kernels' own speed
    python benchmarks/probe/userkernel_gpu_split.py --sweep       # and each tile shape of ours
    python benchmarks/probe/userkernel_gpu_split.py --sweep --vector widest   # an experiment, see below

Per kernel of benchmarks/cupy_twin.py's timing table, microseconds per call, CuPy's then ours:
- event: the table's measure (CUDA events around one call, median), host path included;
- host: the Python of one call up to its return, the GPU left to run (mean of back-to-back calls,
  which never fill the launch queue);
- stream: back-to-back calls between two events, per call: max(host, kernel) once the queue is
  busy; at a size where the kernel is much longer than the host path, the kernel's own time.
A row where ours is behind on `event` but not on `stream` or `host` loses in the latency from the
call to the kernel's start; behind on `stream` at 64M, the kernel itself is slower. `launcher` says
whether our launches went from C or from Python, `result` whether ours gave CuPy's bits.

With --sweep each tile shape of ours is timed as `stream` times a call, on the call's own arrays:
its launches alone, back to back (reductions: TK, at the default TM), the default marked. (Not by
profile.sweep, which flushes L2 before each launch and, until it kept an array passed twice as one
array, read two arrays for `cmul(c, c)` where the call reads one: complex128 z = x * y + x took
52 us a launch there and 35 us a call in `stream`.)

--vector widest builds our kernels with the CUDA backend's register chunks 16 bytes of the widest
array instead of the narrowest (every warp access then covers whole 32-byte sectors, the narrower
arrays moving 8- or 4-byte vectors): the experiment that says whether mixed-width kernels
(float32 with float64) would gain from that rule. Compare its `stream` and sweep rows with a run
without it; `result` must stay `bit for bit`.
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

from cupy_twin import (ElementwiseTwin, ReductionTwin, _arrays, _time_ms, compare, guide_cases,  # noqa: E402
                       outputs_copied)

import tileworkbench.tile as ct  # noqa: E402


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


def widest_vectors() -> None:
    """The CUDA backend's TW_VEC from the widest array's dtype (see --vector)."""
    import tileworkbench.codegen.cuda as cuda
    memory_dtypes = cuda._memory_dtypes

    def widest_only(fn):
        dtypes = list(memory_dtypes(fn))
        return [max(dtypes, key=lambda d: d.itemsize)] if dtypes else []
    cuda._memory_dtypes = widest_only


def tile_rows(kernel, call_args, kwargs) -> list:
    """(config, microseconds a launch back to back, default?) for each tile shape of the call."""
    launch = kernel.launch_plan(*call_args, **kwargs)
    space = dict(launch.space)
    if "TM" in space:
        space = {"TK": space["TK"]}
    rows = []
    for name, values in space.items():
        for value in values:
            config = {**launch.config, name: value}
            grid, args = launch.grid_of(config), launch.args_of(config)
            stream = cupy.cuda.get_current_stream()

            def run(grid=grid, args=args, stream=stream):
                ct.launch(stream, grid, launch.kernel, args)
            run()
            rows.append((config, statistics.median(stream_us(run) for _ in range(3)), config == launch.config))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1 << 22, help="elements (a multiple of 1024)")
    parser.add_argument("--sweep", action="store_true", help="time each tile shape of our kernels")
    parser.add_argument("--vector", choices=["narrowest", "widest"], default="narrowest",
                        help="the CUDA backend's 16-byte register chunks: of the narrowest array (its rule) or the widest")
    args = parser.parse_args()
    if args.vector == "widest":
        widest_vectors()
    print(f"{'kernel':34s} {'event CuPy':>10s} {'ours':>7s} {'host CuPy':>10s} {'ours':>7s} "
          f"{'stream CuPy':>11s} {'ours':>7s}   launcher  result")
    for label, kind, definition, call_args, kwargs in guide_cases(args.n):
        twin = (ElementwiseTwin if kind == "E" else ReductionTwin)(*definition)
        ours_args, ours_kwargs = outputs_copied(twin._ours, call_args, kwargs)
        ours = twin._ours(*ours_args, **ours_kwargs)
        theirs = twin._theirs(*call_args, **kwargs)
        _, result = compare(_arrays(theirs) + _arrays(list(call_args)), _arrays(ours) + _arrays(ours_args),
                            kind == "R")
        row = []
        for kernel in (twin._theirs, twin._ours):
            def call(kernel=kernel):
                return kernel(*call_args, **kwargs)
            row.append((_time_ms(call) * 1e3, statistics.median(host_us(call) for _ in range(3)),
                        statistics.median(stream_us(call) for _ in range(3))))
        launcher = twin._ours.last_tile_kernel.last_launcher
        path = "C" if getattr(launcher, "native", None) is not None else "Python"
        (ce, ch, cs), (oe, oh, os_) = row
        print(f"{label:34s} {ce:10.1f} {oe:7.1f} {ch:10.1f} {oh:7.1f} {cs:11.1f} {os_:7.1f}   {path:8s}  {result}",
              flush=True)
        if args.sweep:
            for config, us, default in tile_rows(twin._ours, call_args, kwargs):
                mark = " (default)" if default else ""
                print(f"    {' '.join(f'{k}={v}' for k, v in config.items()):24s} {us:7.1f} us{mark}", flush=True)


if __name__ == "__main__":
    main()
