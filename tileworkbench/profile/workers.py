"""A sweep's work as jobs for worker processes: compiling a configuration (NVRTC, no GPU needed)
and timing it on a GPU. `profile/sweep.py` decides where they run:

    compile_pool(4)                      # 4 CPU processes for compile jobs
    gpu_workers(Gpu(), (0, 1, 2, 3))     # one process per GPU, each with its own CUDA context, kept
                                         # by this module for later sweeps (shutdown_workers() ends them)
    client.get_executor()                # or any concurrent.futures.Executor: Dask, Ray, ...

A job is plain data that the standard pickle carries: the specialization's IR (`ir.Function`, made
by the caller, who has the kernel), the arch, and for timing the grid and the arguments: handles
on shared memory for this module's GPU workers (profile/transfer.py: each array crosses once per
sweep), host copies for any other executor. Workers need tileworkbench and nothing of the
caller's, so the kernel may come from a notebook cell. Every worker compiles through its
process's default compile cache: on one host that is one disk directory, whose entries are
written to a temporary file and renamed (see runtime/cache.py), so workers compiling the same
source at once both succeed and leave one entry; a GPU worker finds there what the compile jobs
(or the sweep's own process, from the same cache) made, and NVRTC does not run again.

Processes start with "spawn": a GPU worker must not inherit the CUDA state of its parent. Scripts
that sweep with worker processes therefore run the sweep under `if __name__ == "__main__":`.
"""
from __future__ import annotations

import atexit
import multiprocessing
import socket
import sys
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np

from ..errors import TileError
from ..ir.core import Function
from ..runtime.cache import NotCached
from ..runtime.occupancy import Occupancy
from .check import agreement
from .transfer import resident


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


@dataclass(frozen=True)
class Gpu:
    """The device side of a sweep, in the process that owns the device. Tests pass a stand-in with
    the same methods (it must pickle, to reach worker processes). Every `Gpu()` is equal: the GPU
    workers kept for one serve the next."""

    def count(self) -> int:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()

    def describe(self, index: int) -> tuple[str, str]:
        """(model name, arch) of GPU `index`."""
        import cupy
        name = cupy.cuda.runtime.getDeviceProperties(index)["name"].decode()
        return name, f"sm_{cupy.cuda.Device(index).compute_capability}"

    def use(self, index: int) -> None:
        """Make GPU `index` this process's device (a GPU worker does this once, before any job), and
        create its context there and then, while the sweep is still compiling."""
        import cupy
        cupy.cuda.runtime.setDevice(index)
        cupy.cuda.runtime.deviceSynchronize()

    def current(self) -> int:
        import cupy
        return cupy.cuda.runtime.getDevice()

    def to_device(self, a):
        from ..runtime import device
        return device.to_device(a)

    def to_host(self, a) -> np.ndarray:
        from ..runtime import device
        return device.to_host(a)

    def restore(self, a, pristine) -> None:
        """Copy the device array `pristine` into `a`, on the device."""
        a[...] = pristine

    def release_memory(self) -> None:
        """Hand the device memory of freed arrays back to the driver (CuPy keeps it for reuse)."""
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()

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
    args: tuple                 # the launch arguments, each array a SharedArray or a host copy
    expected: list | None       # the caller's reference outputs, if any (SharedArrays or host arrays)
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
    except NotCached:
        raise
    except TileError as e:
        return Compiled("tile error", f"{type(e).__name__}: {e.message}")
    except Exception as e:
        return Compiled("compile error", one_line(e))
    return Compiled(threads=c.threads, registers=c.registers, local_bytes=c.local_bytes, shared_bytes=c.shared_bytes,
                    occupancy=c.occupancy)


def cached_config(fn: Function, arch: str) -> Compiled | None:
    """`compile_config` answered from the compile cache alone (memory or disk: a few milliseconds);
    None where it would have to compile."""
    from ..runtime.cache import cached_only
    with cached_only():
        try:
            return compile_config(fn, arch)
        except NotCached:
            return None


def time_config(job: TimingJob) -> Timed:
    """Launch once on this process's GPU, check the outputs (interpreter, reference), then time."""
    gpu, index = job.gpu, job.gpu.current()
    name, _ = gpu.describe(index)
    where = {"device": f"GPU {index}: {name}", "host": socket.gethostname()}
    if name != job.model:
        return Timed("device mismatch", f"this worker's GPU is {name}; the sweep reports {job.model}", **where)
    from .work import written_arrays
    arrays = [p.kind == "array" for p in job.fn.params]
    writes = written_arrays(job.fn)
    try:
        resident.keep_only((*job.args, *(job.expected or ())), gpu)
        on_device = resident.on_device(job.args, arrays, [p.name in writes for p in job.fn.params], gpu)
        launch = gpu.launcher(job.fn, job.arch, job.grid, on_device)
        launch()
        gpu.synchronize()
    except Exception as e:
        return Timed("launch error", one_line(e), **where)
    # copied back: what is compared (every array for the interpreter, the last ones for a reference)
    positions = [k for k, is_array in enumerate(arrays) if is_array]
    compared = positions if job.check else positions[max(0, len(positions) - len(job.expected or ())):]
    after = {k: gpu.to_host(on_device[k]) for k in compared}
    try:
        reason = None
        if job.check:
            before = copied_once(job.args, arrays, lambda h: np.array(resident.host(h)))
            reason = interpreter_mismatch(job.fn, job.grid, list(before), [after.get(k) for k in range(len(arrays))])
    except TileError as e:   # e.g. an unchecked access out of bounds: what the GPU did is undefined
        return Timed("tile error", f"{type(e).__name__}: {e.message}", **where)
    if reason is None and job.expected is not None:
        reason = reference_mismatch([resident.host(h) for h in job.expected], [after[k] for k in compared])
    if reason is not None:
        return Timed("mismatch", reason, **where)
    return Timed(time_ms=gpu.time_ms(launch, job.repetitions), **where)


def release_arguments(gpu: Gpu) -> None:
    """Free this process's device copies of sweep arguments (a sweep's last job in each process)."""
    resident.release(gpu)


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


class GpuWorkers(Executor):
    """One process per entry of `indices`, each on its GPU for its whole life (its CUDA context, the
    loaded kernels and the device copies of a sweep's arguments stay between jobs). A job goes to
    the process with the fewest jobs in flight, so a fast GPU takes more of them; a process that
    died is replaced when a job is next sent its way. `broadcast(fn, ...)` runs a job in each."""

    def __init__(self, gpu: Gpu, indices):
        self.gpu, self.indices = gpu, tuple(indices)
        self._lock = threading.Lock()
        self._processes = [self._start(index) for index in self.indices]
        self._in_flight = [0] * len(self.indices)
        self.started = len(self.indices)     # processes started, replacements included

    def _start(self, index: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(1, mp_context=_spawn(), initializer=self.gpu.use, initargs=(index,))

    def start(self) -> None:
        """Start every process now (each creates its CUDA context), not at its first job."""
        for k in range(len(self.indices)):
            self._submit_to(k, _ready)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._lock:
            k = min(range(len(self.indices)), key=self._in_flight.__getitem__)
        return self._submit_to(k, fn, *args, **kwargs)

    def broadcast(self, fn, /, *args) -> list[Future]:
        return [self._submit_to(k, fn, *args) for k in range(len(self.indices))]

    def _submit_to(self, k: int, fn, *args, **kwargs) -> Future:
        with self._lock:
            try:
                future = self._processes[k].submit(fn, *args, **kwargs)
            except BrokenProcessPool:    # its process died: a new one takes its place
                self._processes[k].shutdown(wait=False)
                self._processes[k] = self._start(self.indices[k])
                self.started += 1
                future = self._processes[k].submit(fn, *args, **kwargs)
            self._in_flight[k] += 1
        future.add_done_callback(lambda _: self._finished(k))
        return future

    def _finished(self, k: int) -> None:
        with self._lock:
            self._in_flight[k] -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for process in self._processes:
            process.shutdown(wait, cancel_futures=cancel_futures)


def _ready() -> None:
    """A first job: the process has started, claimed its GPU and imported what timing needs."""
    from ..interp import execute  # noqa: F401
    from ..runtime import launch  # noqa: F401


_workers: dict = {}              # (Gpu, indices) -> GpuWorkers, for later sweeps
_workers_lock = threading.Lock()


def gpu_workers(gpu: Gpu, indices) -> GpuWorkers:
    """The GPU workers for `indices` that earlier sweeps started, or new ones, started at once."""
    key = (gpu, tuple(indices))
    with _workers_lock:
        workers = _workers.get(key)
        if workers is None:
            workers = _workers[key] = GpuWorkers(gpu, indices)
            workers.start()
    return workers


def shutdown_workers() -> None:
    """End the GPU worker processes that sweeps keep (their CUDA contexts and memory go with them);
    the next sweep on several GPUs starts new ones. Runs at interpreter exit."""
    with _workers_lock:
        workers = list(_workers.values())
        _workers.clear()
    for w in workers:
        w.shutdown()


atexit.register(shutdown_workers)


def _spawn():
    """The "spawn" start method. Starting a process reads `__main__.__spec__`, which the namespace of
    an interactive shell can lose (`%reset`, a cleared user namespace); None is what a script has."""
    main = sys.modules["__main__"]
    if not hasattr(main, "__spec__"):
        main.__spec__ = None
    return multiprocessing.get_context("spawn")

