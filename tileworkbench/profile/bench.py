"""Measure a kernel launch on the GPU: what the launch report shows.

    >>> report = benchmark(matmul, (32, 32), (A, B, C, 128, 128, 32))
    >>> report.timing.median_ms, report.tflops, report.occupancy.limiter, report.driver_blocks_per_sm

Timing: CUDA events around each launch after warm-up launches, the L2 cache flushed (by writing
a buffer larger than it) outside the timed region, median and p10/p90 over the repetitions.
Achieved GB/s and TFLOP/s come from the IR's memory traffic and math (profile/work.py).
"""
from __future__ import annotations

import numpy as np

from ..runtime.device import l2_flusher
from ..targets import DevicePeaks, peaks_of
from .report import LaunchReport, Timing, launch_shapes
from .work import launch_work


def device_peaks() -> DevicePeaks:
    """The current device's peaks, from what its driver reports."""
    import cupy
    device = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(device.id)
    bandwidth = props["memoryClockRate"] * 1e3 * 2 * props["memoryBusWidth"] / 8 / 1e9
    return peaks_of(props["name"].decode(), f"sm_{device.compute_capability}", props["multiProcessorCount"],
                    props["clockRate"] / 1e3, bandwidth)


def time_launches(run, *, repetitions: int = 100, warmup: int = 10, flush_l2: bool = True, stream=None) -> Timing:
    """Time `run()` (which launches on `stream`) with CUDA events."""
    import cupy
    stream = stream or cupy.cuda.get_current_stream()
    flush = l2_flusher() if flush_l2 else (lambda: None)
    for _ in range(warmup):
        run()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    with stream:
        for _ in range(repetitions):
            flush()
            start.record(stream)
            run()
            stop.record(stream)
            stop.synchronize()
            samples.append(cupy.cuda.get_elapsed_time(start, stop))
    p10, p50, p90 = np.percentile(samples, [10, 50, 90])
    return Timing(float(p50), float(p10), float(p90), repetitions, warmup, flush_l2)


def timing_record(timing: Timing, grid, specialization: str, gbs: float | None = None) -> dict:
    """A measured launch as the kernel keeps it (`kernel.last_timing`, shown by the kernel inspector)."""
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    return {"median_ms": timing.median_ms, "p10_ms": timing.p10_ms, "p90_ms": timing.p90_ms,
            "repetitions": timing.repetitions, "device": name, "grid": list(grid) if grid else None,
            "specialization": specialization, "gbs": gbs}


def benchmark(kernel, grid, args, *, stream=None, repetitions: int = 100, warmup: int = 10,
              flush_l2: bool = True) -> LaunchReport:
    """Launch `kernel` repeatedly on the GPU and report timing, throughput and occupancy."""
    import cupy

    from ..arguments import normalize_grid
    from ..ir import specialization_label
    from ..runtime.launch import load
    from ..tile import launch
    stream = stream or cupy.cuda.get_current_stream()
    grid = normalize_grid(grid)
    fn = kernel.specialize(args)
    gpu = load(fn)
    timing = time_launches(lambda: launch(stream, grid, kernel, args), repetitions=repetitions, warmup=warmup,
                           flush_l2=flush_l2, stream=stream)
    compiled = gpu.compiled
    driver = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(gpu.function.ptr, compiled.threads,
                                                                       compiled.dynamic_shared_bytes)
    report = LaunchReport(compiled, grid, launch_work(fn, grid, launch_shapes(fn, args)), timing, int(driver),
                          device_peaks())
    kernel.last_timing = timing_record(timing, grid, specialization_label(fn), report.gbs)
    return report
