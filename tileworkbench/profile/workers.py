"""A sweep's work as jobs for worker processes: compiling a configuration (NVRTC, no GPU needed)
and timing it on a GPU. `profile/sweep.py` decides where they run:

    compile_pool(4)                      # 4 CPU processes for compile jobs
    gpu_pool(Gpu(), [0, 1, 2, 3])        # one process per GPU, each with its own CUDA context
    client.get_executor()                # or any concurrent.futures.Executor: Dask, Ray, ...

A job is plain data that the standard pickle carries: the specialization's IR (`ir.Function`, made
by the caller, who has the kernel), the arch, and for timing the grid and host copies of the
arguments. Workers need tileworkbench and nothing of the caller's, so the kernel may come from a
notebook cell. Every worker compiles through its process's default compile cache: on one host
that is one disk directory, whose entries are written to a temporary file and renamed (see
runtime/cache.py), so workers compiling the same source at once both succeed and leave one entry.

Processes start with "spawn": a GPU worker must not inherit the CUDA state of its parent. Scripts
that sweep with worker processes therefore run the sweep under `if __name__ == "__main__":`.
"""
from __future__ import annotations

import multiprocessing
import socket
import sys
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..errors import TileError
from ..ir.core import Function
from ..runtime.occupancy import Occupancy
from .check import agreement


@dataclass(frozen=True)
class Compiled:
    """What compiling one configuration gave: its resources, or the reason it failed."""
    status: str = "ok"              # ok | tile error | compile error
    reason: str = ""
    threads: int | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    local_bytes: int | None = None
    occupancy: Occupancy | None = None   # the compiled record's


@dataclass(frozen=True)
class Timed:
    """What launching, checking and timing one configuration on a GPU gave."""
    status: str = "ok"              # ok | launch error | tile error | mismatch | device mismatch
    reason: str = ""
    time_ms: float | None = None
    device: str | None = None       # "GPU 1: NVIDIA H100 80GB HBM3"
    host: str | None = None


class Gpu:
    """The device side of a sweep, in the process that owns the device. Tests pass a stand-in with
    the same methods (it must pickle, to reach worker processes)."""

    def count(self) -> int:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()

    def describe(self, index: int) -> tuple[str, str]:
        """(model name, arch) of GPU `index`."""
        import cupy
        name = cupy.cuda.runtime.getDeviceProperties(index)["name"].decode()
        return name, f"sm_{cupy.cuda.Device(index).compute_capability}"

    def use(self, index: int) -> None:
        """Make GPU `index` this process's device (a GPU worker does this once, before any job)."""
        import cupy
        cupy.cuda.runtime.setDevice(index)

    def current(self) -> int:
        import cupy
        return cupy.cuda.runtime.getDevice()

    def to_device(self, a):
        from ..runtime import device
        return device.to_device(a)

    def to_host(self, a) -> np.ndarray:
        from ..runtime import device
        return device.to_host(a)

    def launcher(self, fn: Function, arch: str, grid, args):
        """A function that launches `fn` once with `args` (device arrays) on the current stream."""
        import cupy

        from ..runtime.launch import Launcher, load
        launch = Launcher(fn, load(fn, arch), args, self.current())
        stream = cupy.cuda.get_current_stream()
        return lambda: launch(stream, grid, args)

    def synchronize(self) -> None:
        import cupy
        cupy.cuda.get_current_stream().synchronize()

    def time_ms(self, launch, repetitions: int) -> float:
        """The median time of `launch()`, in milliseconds (CUDA events, L2 flushed)."""
        from .bench import time_launches
        return time_launches(launch, repetitions=repetitions, warmup=3).median_ms


@dataclass
class TimingJob:
    fn: Function
    arch: str
    model: str                  # the GPU model the sweep reports: a worker with another refuses the job
    grid: tuple
    args: tuple                 # host copies of the launch arguments (the interpreter updates them)
    expected: list | None       # the caller's reference outputs, if any
    check: bool                 # compare every array argument with the interpreter's run
    repetitions: int
    gpu: Gpu


def one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def compile_config(fn: Function, arch: str) -> Compiled:
    """Generate and compile one specialization for `arch`; a failure is a `Compiled` with its reason."""
    from ..runtime.launch import build
    try:
        c = build(fn, arch)
    except TileError as e:
        return Compiled("tile error", f"{type(e).__name__}: {e.message}")
    except Exception as e:
        return Compiled("compile error", one_line(e))
    return Compiled(threads=c.threads, registers=c.registers, local_bytes=c.local_bytes, shared_bytes=c.shared_bytes,
                    occupancy=c.occupancy)


def time_config(job: TimingJob) -> Timed:
    """Launch once on this process's GPU, check the outputs (interpreter, reference), then time."""
    gpu, index = job.gpu, job.gpu.current()
    name, _ = gpu.describe(index)
    where = {"device": f"GPU {index}: {name}", "host": socket.gethostname()}
    if name != job.model:
        return Timed("device mismatch", f"this worker's GPU is {name}; the sweep reports {job.model}", **where)
    arrays = [p.kind == "array" for p in job.fn.params]
    on_device = copied_once(job.args, arrays, gpu.to_device)
    try:
        launch = gpu.launcher(job.fn, job.arch, job.grid, on_device)
        launch()
        gpu.synchronize()
    except Exception as e:
        return Timed("launch error", one_line(e), **where)
    after = [gpu.to_host(a) if is_array else None for a, is_array in zip(on_device, arrays)]
    try:
        reason = interpreter_mismatch(job.fn, job.grid, list(job.args), after) if job.check else None
    except TileError as e:   # e.g. an unchecked access out of bounds: what the GPU did is undefined
        return Timed("tile error", f"{type(e).__name__}: {e.message}", **where)
    if reason is None and job.expected is not None:
        reason = reference_mismatch(job.expected, [a for a in after if a is not None])
    if reason is not None:
        return Timed("mismatch", reason, **where)
    return Timed(time_ms=gpu.time_ms(launch, job.repetitions), **where)


def copied_once(values, arrays: list, copy) -> tuple:
    """`values` with each array (where `arrays` says so) replaced by `copy(array)`, made once per
    array: one passed twice (`cmul(c, c)`) stays one array, so a timing moves the bytes the call does."""
    copies = []   # (array, its copy)
    out = []
    for value, array in zip(values, arrays):
        if array:
            done = next((c for a, c in copies if a is value), None)
            if done is None:
                done = copy(value)
                copies.append((value, done))
            value = done
        out.append(value)
    return tuple(out)


def interpreter_mismatch(fn: Function, grid, before: list, after: list) -> str | None:
    """Run the launch on the interpreter over `before` (host copies of the inputs, updated in place)
    and compare every array argument with the GPU's result `after`; None when all agree."""
    from ..interp import execute
    execute(fn, grid, tuple(before))
    for p, want, got in zip(fn.params, before, after):
        if p.kind != "array":
            continue
        close, error = agreement(want, got)
        if not close.all():
            worst = np.unravel_index(int(np.argmax(error)), error.shape)
            return (f"{p.name}: {int((~close).sum())} of {close.size} elements differ from the interpreter, "
                    f"max error {error[worst]:.3g} at {tuple(int(i) for i in worst)}")
    return None


def reference_mismatch(expected: list, outputs: list) -> str | None:
    """`expected` against the last len(expected) array arguments, within 1e-2."""
    for want, got in zip(expected, outputs[-len(expected):]):
        close, error = agreement(np.asarray(want), got, rtol=1e-2, atol=1e-2)
        if not close.all():
            return f"max error {error.max():.3g} against the reference"
    return None


class InlineExecutor(Executor):
    """Runs each job as it is submitted, in the calling thread: the serial sweep (`workers=1`)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:
            future.set_exception(e)
        return future


def compile_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=_spawn())


def gpu_pool(gpu: Gpu, indices: list[int]) -> ProcessPoolExecutor:
    """One process per entry of `indices`, each claiming its GPU before its first job; jobs go to
    whichever process is free, so a fast GPU takes more of them."""
    context = _spawn()
    claims = context.Queue()
    for index in indices:
        claims.put(index)
    return ProcessPoolExecutor(len(indices), mp_context=context, initializer=_claim_device, initargs=(claims, gpu))


def _spawn():
    """The "spawn" start method. Starting a process reads `__main__.__spec__`, which the namespace of
    an interactive shell can lose (`%reset`, a cleared user namespace); None is what a script has."""
    main = sys.modules["__main__"]
    if not hasattr(main, "__spec__"):
        main.__spec__ = None
    return multiprocessing.get_context("spawn")


def _claim_device(claims, gpu: Gpu) -> None:
    gpu.use(claims.get())
