"""Measure a kernel launch on the GPU: what the launch report shows.

    >>> report = benchmark(matmul, (32, 32), (A, B, C, 128, 128, 32))
    >>> report.timing.median_ms, report.tflops, report.occupancy.limiter, report.driver_blocks_per_sm

Timing: CUDA events around each launch after warm-up launches, the L2 cache flushed (by writing
a buffer larger than it) outside the timed region, median and p10/p90 over the repetitions.
Achieved GB/s and TFLOP/s come from the IR's memory traffic and math (profile/work.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runtime.device import l2_flusher
from .occupancy import Occupancy, theoretical_occupancy
from .work import Work, launch_work

# Dense math per SM per clock: (tensor-core 16-bit, tensor-core tf32, fp32 FMA units), counting an FMA as 2.
_FLOPS_PER_SM_CLOCK = {"sm_80": (2048, 1024, 128), "sm_86": (1024, 512, 256), "sm_89": (1024, 512, 256),
                       "sm_90": (4096, 2048, 256)}


@dataclass(frozen=True)
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    repetitions: int
    warmup: int
    l2_flushed: bool


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    arch: str
    sms: int
    clock_mhz: float
    bandwidth_gbs: float        # from the memory clock and bus width
    tensor16_tflops: float | None
    fp32_tflops: float | None


@dataclass(frozen=True)
class LaunchReport:
    kernel: str
    grid: tuple
    threads: int
    shared_bytes: int
    registers: int
    local_bytes: int
    spill_stores: int | None
    timing: Timing
    work: Work
    occupancy: Occupancy
    driver_blocks_per_sm: int
    peaks: DevicePeaks
    notes: tuple = ()  # (kernel line, text): the code generator's notes (codegen GeneratedKernel.notes)

    @property
    def gbs(self) -> float:
        return self.work.bytes / self.timing.median_ms / 1e6

    @property
    def tflops(self) -> float:
        return self.work.flops / self.timing.median_ms / 1e9


def device_peaks() -> DevicePeaks:
    import cupy
    device = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(device.id)
    arch = f"sm_{device.compute_capability}"
    clock_mhz = props["clockRate"] / 1e3
    bandwidth = props["memoryClockRate"] * 1e3 * 2 * props["memoryBusWidth"] / 8 / 1e9
    rates = _FLOPS_PER_SM_CLOCK.get(arch)
    sms = props["multiProcessorCount"]
    tensor = rates[0] * sms * clock_mhz * 1e6 / 1e12 if rates else None
    fp32 = rates[2] * sms * clock_mhz * 1e6 / 1e12 if rates else None
    return DevicePeaks(props["name"].decode(), arch, sms, clock_mhz, bandwidth, tensor, fp32)


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

    from ..ir import specialization_label
    from ..runtime.arrays import device_array
    from ..runtime.launch import load
    from ..tile import launch
    from ..arguments import argument_leaves, normalize_grid
    stream = stream or cupy.cuda.get_current_stream()
    grid = normalize_grid(grid)
    fn = kernel.specialize(args)
    gpu = load(fn)
    timing = time_launches(lambda: launch(stream, grid, kernel, args), repetitions=repetitions, warmup=warmup,
                           flush_l2=flush_l2, stream=stream)
    runtime_args = [a for p, a in zip(fn.params, argument_leaves(args)) if p.kind != "constant"]
    shapes = {p.name: device_array(a).shape for p, a in zip(fn.runtime_params, runtime_args) if p.kind == "array"}
    resources = gpu.resources
    peaks = device_peaks()
    threads, smem = gpu.generated.threads, gpu.generated.smem_bytes
    occupancy = theoretical_occupancy(peaks.arch, threads, resources.registers,
                                      smem + resources.shared_static_bytes)
    driver = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(gpu.function.ptr, threads, smem)
    report = LaunchReport(fn.name, grid, threads, smem + resources.shared_static_bytes, resources.registers,
                          resources.local_bytes, resources.spill_stores, timing, launch_work(fn, grid, shapes),
                          occupancy, int(driver), peaks, tuple(gpu.generated.notes))
    kernel.last_timing = timing_record(timing, grid, specialization_label(fn), report.gbs)
    return report
