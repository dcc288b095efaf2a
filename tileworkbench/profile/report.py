"""The launch report: one compiled kernel's record, the launch's work and, on a GPU, its timing.

    >>> report = compile_report(matmul, (32, 32), (A, B, C, 128, 128, 32))   # no GPU: what the compiler decided
    >>> report.registers, report.occupancy.limiter, report.timing
    (96, 'registers', None)
    >>> report = benchmark(matmul, (32, 32), (A, B, C, 128, 128, 32))        # profile.bench: measured on a GPU
    >>> report.timing.median_ms, report.tflops, report.driver_blocks_per_sm

One type for both: the compiled record (runtime.compiled.CompiledKernel) carries the resources and
the occupancy; the report adds what a launch adds. widgets/launch_report.py only draws it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.compiled import CompiledKernel
from ..runtime.occupancy import Occupancy
from ..targets import NOMINAL_PEAKS, DevicePeaks
from .work import Work, launch_work


@dataclass(frozen=True)
class Timing:
    median_ms: float
    p10_ms: float
    p90_ms: float
    repetitions: int
    warmup: int
    l2_flushed: bool


@dataclass(frozen=True)
class LaunchReport:
    """A launch of a compiled kernel: its record, grid and work; the timing, the driver's resident
    blocks per SM and the device's peaks where it was measured (None without a GPU; the peaks
    then are the arch's datasheet's, targets.NOMINAL_PEAKS, where known)."""

    compiled: CompiledKernel
    grid: tuple
    work: Work
    timing: Timing | None = None
    driver_blocks_per_sm: int | None = None
    peaks: DevicePeaks | None = None

    @property
    def kernel(self) -> str:
        return self.compiled.kernel

    @property
    def threads(self) -> int:
        return self.compiled.threads

    @property
    def registers(self) -> int:
        return self.compiled.registers

    @property
    def shared_bytes(self) -> int:
        return self.compiled.shared_bytes

    @property
    def local_bytes(self) -> int:
        return self.compiled.local_bytes

    @property
    def spill_stores(self) -> int | None:
        return self.compiled.spill_stores

    @property
    def spill_loads(self) -> int | None:
        return self.compiled.spill_loads

    @property
    def occupancy(self) -> Occupancy:
        return self.compiled.occupancy

    @property
    def notes(self) -> tuple:
        return self.compiled.notes

    @property
    def gbs(self) -> float | None:
        return self.work.bytes / self.timing.median_ms / 1e6 if self.timing else None

    @property
    def tflops(self) -> float | None:
        return self.work.flops / self.timing.median_ms / 1e9 if self.timing else None


def launch_shapes(fn, args) -> dict:
    """{array parameter: shape} of a launch of the specialization `fn` with `args` (NumPy or device arrays)."""
    from ..arguments import argument_leaves
    from ..runtime.arrays import device_array
    runtime_args = [a for p, a in zip(fn.params, argument_leaves(args)) if p.kind != "constant"]
    return {p.name: tuple(a.shape) if hasattr(a, "shape") else device_array(a).shape
            for p, a in zip(fn.runtime_params, runtime_args) if p.kind == "array"}


def compile_report(kernel, grid, args, arch: str = "sm_90") -> LaunchReport:
    """What the compiler decided, with no GPU: NVRTC resources, theoretical occupancy, the IR's work.
    `args` may be NumPy arrays (only their shapes are read).

        >>> r = compile_report(vector_add, (16,), (a, b, c, 256))
        >>> r.registers > 0, r.occupancy.limiter, r.timing
    """
    from ..arguments import normalize_grid
    from ..runtime.launch import build
    grid = normalize_grid(grid)
    fn = kernel.specialize(args)
    return LaunchReport(build(fn, arch), grid, launch_work(fn, grid, launch_shapes(fn, args)),
                        peaks=NOMINAL_PEAKS.get(arch.rstrip("af")))
