"""Run one kernel over every combination of Constant values (tile shapes) and compare them.

    result = sweep(matmul, grid_fn=lambda c: (M // c["TM"], N // c["TN"]),
                   args_fn=lambda c: (A, B, C, c["TM"], c["TN"], 32),
                   space={"TM": [64, 128], "TN": [64, 128]})
    result.best().config, result.to_csv("sweep.csv")

The kernel is specialized here, once per configuration; a configuration the compile cache holds
is read from it here, the others compile in parallel worker processes (NVRTC, through the disk
cache; profile/workers.py). With a GPU each one that compiled is launched once and checked: the
interpreter runs the same launch on host copies of the inputs and every array argument must agree
with it (within the dtype's tolerance, profile/check.py), and with `reference(config)` (optional,
the expected outputs) when given. Only then is it timed, on every GPU of the host at once (one
worker process per GPU, kept for later sweeps; the arguments cross to each GPU once per sweep,
profile/transfer.py), only on GPUs of one model, and each row names the GPU it ran on.
`executor=` runs both kinds of job on any `concurrent.futures.Executor` instead, e.g. a Dask
cluster's (`client.get_executor()`), with host copies of the arguments in every timing job.

Without a GPU each configuration reports its compile-time resources and theoretical occupancy,
and the result says that timings need a GPU. A configuration that fails keeps its reason: a
tile-language error, an error of `args_fn`/`grid_fn`, a compile error, a resource limit, a launch
error, or a mismatch (which array, how many elements, the largest error and where).
"""
from __future__ import annotations

import csv
import itertools
import json
import os
from collections import Counter, deque
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field

import numpy as np

from ..arguments import argument_leaves
from ..errors import TileError
from ..ir import specialization_label
from ..runtime import device
from .occupancy import percent
from .transfer import ArgumentStore, SharedArray
from .workers import (Gpu, InlineExecutor, TimingJob, cached_config, compile_config, compile_pool, copied_once,
                      gpu_workers, one_line, release_arguments, time_config)


class SweepError(RuntimeError):
    """A sweep gave no configuration to choose: every one of them failed."""


@dataclass
class SweepRow:
    config: dict
    # pending (while the sweep runs) | ok | tile error | argument error | compile error | resource limit
    # | launch error | mismatch | device mismatch
    status: str = "pending"
    reason: str = ""
    threads: int | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    local_bytes: int | None = None
    occupancy: float | None = None
    limiter: str | None = None
    time_ms: float | None = None
    gbs: float | None = None
    tflops: float | None = None
    device: str | None = None       # the GPU that timed it, "GPU 1: NVIDIA H100 80GB HBM3"
    host: str | None = None         # and the machine it is in

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class SweepResult:
    kernel: str
    arch: str
    space: dict
    rows: list = field(default_factory=list)
    timed: bool = False
    device: str | None = None       # the GPU model every timing is for
    note: str = ""                  # why nothing was timed, or why nothing can be chosen

    def best_or_none(self) -> SweepRow | None:
        """`best()`, or None where no configuration succeeded (yet)."""
        good = [r for r in self.rows if r.ok]
        if not good:
            return None
        if self.timed:
            return min(good, key=lambda r: r.time_ms)
        return max(good, key=lambda r: (r.occupancy or 0, -(r.registers or 0)))

    def best(self) -> SweepRow:
        """The fastest configuration; without timings, the highest occupancy, then the fewest registers.
        Raises SweepError, with what went wrong, when every configuration failed."""
        best = self.best_or_none()
        if best is None:
            raise SweepError(self.failure_summary())
        return best

    def failure_summary(self) -> str:
        """Why no configuration can be chosen: the failures, most common first."""
        finished = [r for r in self.rows if r.status != "pending"]
        reasons = Counter(f"{r.status}: {r.reason}" for r in finished if not r.ok)
        listed = "; ".join(f"{reason} ({count}x)" for reason, count in reasons.most_common(3))
        more = f"; and {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
        return f"every configuration of `{self.kernel}` failed ({len(finished)} of {len(self.rows)} run): {listed}{more}"

    def records(self) -> list[dict]:
        names = list(self.space)
        out = []
        for r in self.rows:
            record = {n: r.config[n] for n in names}
            record.update({k: v for k, v in asdict(r).items() if k != "config"})
            out.append(record)
        return out

    def grid(self, x: str, y: str, metric: str) -> tuple[list, list, np.ndarray]:
        """A heatmap of `metric` over two swept names (other names at their best row's values)."""
        best = self.best_or_none()
        fixed = {n: v for n, v in (best.config.items() if best else ()) if n not in (x, y)}
        xs, ys = self.space[x], self.space[y]
        values = np.full((len(ys), len(xs)), np.nan)
        for r in self.rows:
            if all(r.config[n] == v for n, v in fixed.items()) and r.ok and getattr(r, metric) is not None:
                values[ys.index(r.config[y]), xs.index(r.config[x])] = getattr(r, metric)
        return xs, ys, values

    def to_csv(self, path) -> None:
        records = self.records()
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(records[0]) if records else list(self.space))
            writer.writeheader()
            writer.writerows(records)

    def to_json(self, path) -> None:
        with open(path, "w") as f:
            json.dump({"kernel": self.kernel, "arch": self.arch, "space": self.space, "timed": self.timed,
                       "device": self.device, "note": self.note, "rows": self.records()}, f, indent=1)


def sweep(kernel, grid_fn, args_fn, space: dict, *, arch: str | None = None, reference=None, check: bool = True,
          repetitions: int = 20, workers: int | None = None, executor: Executor | None = None,
          gpus: list[int] | None = None, gpu: Gpu | None = None, progress=True, on_row=None) -> SweepResult:
    """Compile (and, with a GPU, check and time) `kernel` for every combination in `space`.

    grid_fn(config), args_fn(config): each configuration's grid and arguments.
    reference(config): the expected outputs (optional). On a GPU each configuration's outputs are
        also compared with the interpreter's run of the same launch; `check=False` skips that (it
        runs the whole launch on the CPU).
    workers: processes that compile what the compile cache lacks (default: one per CPU; 1 compiles
        here, one at a time).
    gpus: the GPUs that time, one process each (default: every GPU of the model of the current
        one; `[]` times nothing). One GPU that is this process's current device times here. The
        processes stay for the next sweep on the same GPUs (`workers.shutdown_workers()` ends them).
    executor: any concurrent.futures.Executor that runs the compiling and the timing instead
        (`client.get_executor()` of a Dask cluster, a Ray executor); the caller shuts it down.
    progress: True shows a progress bar (tqdm: a widget in a notebook, text in a script), a
        function is called as `progress(done, total)`, False shows nothing.
    on_row(result, index): called as each configuration finishes; rows not yet run are "pending".
    gpu: the device side (tests pass a stand-in).
    """
    if workers is not None and workers < 1:
        raise ValueError(f"workers={workers}: at least one worker is needed")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, not {type(executor).__name__} "
                        f"(for a Dask client pass client.get_executor())")
    plan = _plan(arch, gpus, gpu)
    configs = [dict(zip(space, values)) for values in itertools.product(*space.values())]
    result = SweepResult(kernel.name, plan.arch, {k: list(v) for k, v in space.items()},
                         [SweepRow(dict(c)) for c in configs], timed=plan.model is not None, device=plan.model,
                         note=plan.note)
    with ExitStack() as stack:
        report = stack.enter_context(_Progress(progress, len(configs), kernel.name))
        # submitted at once: every compile (jobs are small) unless they run here; two timing jobs
        # per GPU process; on an executor, all
        compiling, compiles, timing, timings, store = executor, len(configs), executor, len(configs), None
        if executor is None:
            processes = min(workers or os.cpu_count() or 1, len(configs))
            # its processes start with its first job: a sweep the compile cache answers starts none
            compiling = InlineExecutor() if processes <= 1 else stack.enter_context(compile_pool(processes))
            compiles = 1 if processes <= 1 else len(configs)
            if plan.model is not None:
                store = stack.enter_context(ArgumentStore())
            if plan.model is not None and plan.here:
                timing, timings = InlineExecutor(), 1
                stack.callback(release_arguments, plan.gpu)
            elif plan.model is not None:
                timing, timings = gpu_workers(plan.gpu, plan.indices), 2 * len(plan.indices)
                stack.callback(timing.broadcast, release_arguments, plan.gpu)   # each runs it after its last job
        run = _Run(result, kernel, grid_fn, args_fn, reference, check, repetitions, plan, report, on_row, store)
        stack.callback(run.cancel)
        run.all(compiling, compiles, timing, timings)
    if result.best_or_none() is None and result.rows:
        result.note = " ".join(filter(None, [result.note, result.failure_summary()]))
    kernel.last_sweep = sweep_record(result, run.labels)
    return result


def sweep_record(result: SweepResult, labels: dict) -> dict:
    """What the kernel keeps of its last sweep (`kernel.last_sweep`, shown by the kernel inspector):
    how many configurations ran and succeeded, and the best one with its specialization's label
    (`labels`: row index -> label) and what made it the best."""
    best = result.best_or_none()
    record = {"configurations": len(result.rows), "ok": sum(r.ok for r in result.rows), "best": None,
              "timed": result.timed, "device": result.device, "arch": result.arch}
    if best is not None:
        by = (f"fastest, {best.time_ms * 1e3:.3g} us" if result.timed else
              f"highest theoretical occupancy, {percent(best.occupancy)}, {best.registers} registers")
        record["best"] = {"config": " ".join(f"{k}={v}" for k, v in best.config.items()),
                          "specialization": labels[result.rows.index(best)], "by": by}
    return record


@dataclass
class _Plan:
    """Where a sweep times: the arch it compiles for, the GPU model and indices, or why not at all."""
    arch: str
    model: str | None = None        # None: compile only
    indices: tuple = ()
    here: bool = False              # one GPU, this process's own: time in this process
    gpu: Gpu | None = None
    note: str = ""


def _plan(arch: str | None, gpus, gpu: Gpu | None) -> _Plan:
    if gpus == []:
        arch = device.target_arch(arch)
        return _Plan(arch, note=f"compile-time resources and theoretical occupancy for {arch}; not timed (gpus=[])")
    if gpu is None and device.gpu_available():
        gpu = Gpu()
    if gpu is None:
        if gpus:
            raise ValueError(f"gpus={gpus}: there is no GPU here ({device.unavailable_reason()})")
        arch = device.target_arch(arch)
        return _Plan(arch, note=f"no GPU: compile-time resources and theoretical occupancy for {arch}; "
                                f"timings need a GPU")
    count, current = gpu.count(), gpu.current()
    if gpus is None:
        indices = [i for i in range(count) if gpu.describe(i) == gpu.describe(current)]
    else:
        indices = list(gpus)
        if not all(0 <= i < count for i in indices):
            raise ValueError(f"gpus={indices}: this host has {count} GPUs, numbered from 0")
    described = {gpu.describe(i) for i in indices}
    if len(described) > 1:
        raise ValueError(f"gpus={indices} are of different models ({', '.join(sorted(n for n, _ in described))}): "
                         f"a sweep times on one model, so that its times compare")
    (model, gpu_arch), = described
    if arch and arch != gpu_arch:
        return _Plan(arch, note=f"compile-time resources and theoretical occupancy for {arch}; not timed: "
                                f"the GPU here ({model}) is {gpu_arch}")
    return _Plan(gpu_arch, model, tuple(indices), indices == [current], gpu)


class _Run:
    """One sweep under way: configurations are specialized here, compiled and timed where the
    executors run them, and each finished row is reported. A timing job's arguments are made
    (`args_fn` called again) only as a GPU is about to be free: shared through `store` (one copy
    per distinct content for the whole sweep), or host copies in the job where there is no store."""

    def __init__(self, result, kernel, grid_fn, args_fn, reference, check, repetitions, plan, report, on_row,
                 store=None):
        self.result, self.kernel, self.grid_fn, self.args_fn = result, kernel, grid_fn, args_fn
        self.reference, self.check, self.repetitions, self.plan = reference, check, repetitions, plan
        self.report, self.on_row, self.store = report, on_row, store
        self.shared = {}            # row index -> the SharedArrays its timing job names
        self.specialized = {}       # row index -> (fn, grid) of a configuration not finished yet
        self.labels = {}            # row index -> its specialization's label
        self.shapes = {}            # row index -> {array parameter: shape} of a configuration being timed
        self.to_time = deque()      # row indices compiled, waiting for a GPU
        self.pending = {}           # future -> (row index, stage)

    def all(self, compiling: Executor, compiles: int, timing: Executor | None, timings: int) -> None:
        """Run every configuration, with at most `compiles` compile jobs and `timings` timing jobs
        submitted at once."""
        waiting = deque(range(len(self.result.rows)))
        while waiting or self.to_time or self.pending:
            while waiting and self.in_flight("compile") < compiles:
                self.start(waiting.popleft(), compiling)
            while self.to_time and self.in_flight("time") < timings:
                self.start_timing(self.to_time.popleft(), timing)
            if self.pending:
                done, _ = wait(list(self.pending), return_when=FIRST_COMPLETED)
                for future in done:
                    index, stage = self.pending.pop(future)
                    (self.compiled if stage == "compile" else self.timed)(index, future)

    def cancel(self) -> None:
        """Cancel the jobs not started (the sweep was interrupted: nothing waits for them)."""
        for future in self.pending:
            future.cancel()

    def in_flight(self, stage: str) -> int:
        return sum(s == stage for _, s in self.pending.values())

    def start(self, index: int, compiling: Executor) -> None:
        from ..arguments import normalize_grid
        config = self.result.rows[index].config
        try:
            fn = self.kernel.specialize(tuple(self.args_fn(config)))
            grid = normalize_grid(self.grid_fn(config))   # also where nothing is timed: a bad grid is an error
        except TileError as e:
            return self.finish(index, "tile error", f"{type(e).__name__}: {e.message}")
        except Exception as e:
            return self.finish(index, "argument error", one_line(e))
        self.specialized[index] = (fn, grid)
        self.labels[index] = specialization_label(fn)
        cached = cached_config(fn, self.result.arch)
        if cached is not None:
            future = Future()
            future.set_result(cached)
            return self.compiled(index, future)
        self.pending[compiling.submit(compile_config, fn, self.result.arch)] = (index, "compile")

    def compiled(self, index: int, future) -> None:
        row = self.result.rows[index]
        if future.exception() is not None:
            return self.finish(index, "compile error", one_line(future.exception()))
        c = future.result()
        row.threads, row.registers, row.shared_bytes, row.local_bytes = \
            c.threads, c.registers, c.shared_bytes, c.local_bytes
        if c.status != "ok":
            return self.finish(index, c.status, c.reason)
        occupancy = c.occupancy
        row.occupancy, row.limiter = occupancy.occupancy, occupancy.limiter
        if occupancy.blocks_per_sm == 0:
            return self.finish(index, "resource limit", f"no block fits on an SM ({occupancy.limiter})")
        if self.plan.model is None:
            return self.finish(index, "ok")
        self.to_time.append(index)

    def start_timing(self, index: int, timing: Executor) -> None:
        fn, grid = self.specialized[index]
        config, gpu = self.result.rows[index].config, self.plan.gpu
        shared = self.shared[index] = []

        def host(a):
            """What a timing job carries in the place of array `a`: a host copy, or a handle on the store's."""
            if self.store is None:
                return gpu.to_host(a)
            handle = self.store.share(a if isinstance(a, np.ndarray) else gpu.to_host(a))
            if isinstance(handle, SharedArray):
                shared.append(handle)
            return handle
        try:
            # the arrays and scalars of list and tuple arguments each in its place, as the specialization has them
            args = copied_once(argument_leaves(tuple(self.args_fn(config))), [p.kind == "array" for p in fn.params],
                               host)
            expected = self.reference(config) if self.reference is not None else None
            if expected is not None and self.store is not None:
                expected = [host(e) for e in expected]
        except Exception as e:
            return self.finish(index, "argument error", one_line(e))
        self.shapes[index] = {p.name: a.shape for p, a in zip(fn.params, args) if p.kind == "array"}
        job = TimingJob(fn, self.result.arch, self.plan.model, grid, args, expected, self.check, self.repetitions, gpu)
        self.pending[timing.submit(time_config, job)] = (index, "time")

    def timed(self, index: int, future) -> None:
        from .work import launch_work
        row = self.result.rows[index]
        if future.exception() is not None:
            return self.finish(index, "launch error", one_line(future.exception()))
        t = future.result()
        row.device, row.host = t.device, t.host
        if t.status == "ok":
            fn, grid = self.specialized[index]
            work = launch_work(fn, grid, self.shapes[index])
            row.time_ms, row.gbs, row.tflops = t.time_ms, work.bytes / t.time_ms / 1e6, work.flops / t.time_ms / 1e9
        self.finish(index, t.status, t.reason)

    def finish(self, index: int, status: str, reason: str = "") -> None:
        row = self.result.rows[index]
        row.status, row.reason = status, reason
        self.specialized.pop(index, None)
        self.shapes.pop(index, None)
        if self.store is not None:
            self.store.done(self.shared.pop(index, ()))
        self.report()
        if self.on_row is not None:
            self.on_row(self.result, index)


class _Progress:
    """Counts finished configurations: a tqdm bar (`progress=True`), the caller's function, or nothing."""

    def __init__(self, progress, total: int, name: str):
        self.done, self.total, self.bar, self.function = 0, total, None, None
        if callable(progress):
            self.function = progress
        elif progress:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total, desc=name, unit="config")

    def __enter__(self):
        return self

    def __call__(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        if self.function is not None:
            self.function(self.done, self.total)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()
