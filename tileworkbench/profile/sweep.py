"""Run one kernel over every combination of Constant values (tile shapes) and compare them.

    result = sweep(matmul, grid_fn=lambda c: (M // c["TM"], N // c["TN"]),
                   args_fn=lambda c: (A, B, C, c["TM"], c["TN"], 32),
                   space={"TM": [64, 128], "TN": [64, 128]})
    result.best().config, result.to_csv("sweep.csv")

Compiles run in parallel (NVRTC, through the disk cache). With a GPU each configuration is then
launched once and checked: the interpreter runs the same launch on host copies of the inputs and
every array argument must agree with it (within the dtype's tolerance, profile/check.py), and
with `reference(config)` (optional, the expected outputs) when given. Only then is it timed.
Without a GPU each configuration reports its compile-time resources and theoretical occupancy,
and the result says that timings need a GPU. A configuration that fails keeps its reason: a
tile-language error, a compile error, a resource limit, a launch error, or a mismatch (which
array, how many elements, the largest error and where).
"""
from __future__ import annotations

import csv
import itertools
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import TileError
from ..runtime import device
from .check import agreement
from .occupancy import theoretical_occupancy


@dataclass
class SweepRow:
    config: dict
    status: str = "ok"              # ok | tile error | compile error | resource limit | mismatch | launch error
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

    @property
    def note(self) -> str:
        return "" if self.timed else f"no GPU: compile-time resources and theoretical occupancy for {self.arch}; " \
                                     f"timings need a GPU"

    def best(self) -> SweepRow | None:
        """The fastest configuration; without timings, the highest occupancy, then the fewest registers."""
        good = [r for r in self.rows if r.ok]
        if not good:
            return None
        if self.timed:
            return min(good, key=lambda r: r.time_ms)
        return max(good, key=lambda r: (r.occupancy or 0, -(r.registers or 0)))

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
        best = self.best()
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
                       "note": self.note, "rows": self.records()}, f, indent=1)


class Gpu:
    """The GPU side of a sweep: copies to and from the device, one launch, timing. A sweep on a
    machine with a GPU uses this one; tests pass a stand-in with the same methods."""

    def to_device(self, a):
        return device.to_device(a)

    def to_host(self, a) -> np.ndarray:
        return device.to_host(a)

    def launch(self, kernel, grid, args) -> None:
        import cupy

        from .. import tile as ct
        stream = cupy.cuda.get_current_stream()
        ct.launch(stream, grid, kernel, args)
        stream.synchronize()

    def time_ms(self, kernel, grid, args, repetitions: int) -> float:
        """The median time of the launch, in milliseconds."""
        import cupy

        from .. import tile as ct
        from .bench import time_launches
        stream = cupy.cuda.get_current_stream()
        return time_launches(lambda: ct.launch(stream, grid, kernel, args), repetitions=repetitions,
                             warmup=3).median_ms


def _compile(kernel, config, args, arch):
    """Specialize and compile one configuration; returns (row, fn) with failures recorded."""
    from ..runtime.launch import build
    row = SweepRow(dict(config))
    try:
        fn = kernel.specialize(args)
        generated, module = build(fn, arch)
    except TileError as e:
        row.status, row.reason = "tile error", f"{type(e).__name__}: {e.message}"
        return row, None
    except Exception as e:
        row.status, row.reason = "compile error", f"{type(e).__name__}: {str(e).splitlines()[0]}"
        return row, None
    r = module.kernels[generated.name]
    row.threads, row.registers, row.local_bytes = generated.threads, r.registers, r.local_bytes
    row.shared_bytes = generated.smem_bytes + r.shared_static_bytes
    occupancy = theoretical_occupancy(arch, generated.threads, r.registers, row.shared_bytes)
    row.occupancy, row.limiter = occupancy.occupancy, occupancy.limiter
    if occupancy.blocks_per_sm == 0:
        row.status, row.reason = "resource limit", f"no block fits on an SM ({occupancy.limiter})"
    return row, fn


def sweep(kernel, grid_fn, args_fn, space: dict, *, arch: str | None = None, reference=None, check: bool = True,
          workers: int = 2, repetitions: int = 20, progress=None, gpu: Gpu | None = None) -> SweepResult:
    """Compile (and, with a GPU, check and time) `kernel` for every combination in `space`.
    `grid_fn(config)` and `args_fn(config)` give each configuration's grid and arguments;
    `progress(done, total)` is called as configurations finish. On a GPU each configuration's
    outputs are compared with the interpreter's run of the same launch (`check=False` skips that:
    it runs the whole launch on the CPU) and with `reference(config)` when given."""
    if gpu is None and device.gpu_available():
        gpu = Gpu()
    timed = gpu is not None
    arch = device.target_arch(arch)
    configs = [dict(zip(space, values)) for values in itertools.product(*space.values())]
    total = len(configs) * (2 if timed else 1)
    done = 0

    def step():
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    def compile_one(config):
        try:
            return _compile(kernel, config, args_fn(config), arch)
        finally:
            step()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        compiled = list(pool.map(compile_one, configs))
    result = SweepResult(kernel.name, arch, {k: list(v) for k, v in space.items()}, timed=timed)
    for config, (row, fn) in zip(configs, compiled):
        if timed and row.ok:
            _run(gpu, kernel, fn, config, row, grid_fn, args_fn, reference, check, repetitions)
            step()
        result.rows.append(row)
    return result


def _run(gpu, kernel, fn, config, row, grid_fn, args_fn, reference, check, repetitions):
    """Launch one configuration on the GPU, check its outputs, time it; failures land in `row`."""
    from ..arguments import normalize_grid
    from .work import launch_work
    args, grid = args_fn(config), normalize_grid(grid_fn(config))
    arrays = [p.kind == "array" for p in fn.params]
    before = [gpu.to_host(a) if is_array else a for a, is_array in zip(args, arrays)]   # the launch writes outputs
    on_device = tuple(gpu.to_device(a) for a in args)
    try:
        gpu.launch(kernel, grid, on_device)
    except Exception as e:
        row.status, row.reason = "launch error", f"{type(e).__name__}: {str(e).splitlines()[0]}"
        return
    after = [gpu.to_host(a) if is_array else None for a, is_array in zip(on_device, arrays)]
    reason = _interpreter_mismatch(kernel, grid, fn, before, after) if check else None
    if reason is None and reference is not None:
        reason = _reference_mismatch(reference(config), [a for a in after if a is not None])
    if reason is not None:
        row.status, row.reason = "mismatch", reason
        return
    row.time_ms = gpu.time_ms(kernel, grid, on_device, repetitions)
    shapes = {p.name: tuple(a.shape) for p, a in zip(fn.params, args) if p.kind == "array"}
    work = launch_work(fn, grid, shapes)
    row.gbs = work.bytes / row.time_ms / 1e6
    row.tflops = work.flops / row.time_ms / 1e9


def _interpreter_mismatch(kernel, grid, fn, before: list, after: list) -> str | None:
    """Run the launch on the interpreter over `before` (host copies of the inputs, updated in place)
    and compare every array argument with the GPU's result `after`; None when all agree."""
    from ..interp import run
    run(kernel, grid, tuple(before))
    for p, want, got in zip(fn.params, before, after):
        if p.kind != "array":
            continue
        close, error = agreement(want, got)
        if not close.all():
            worst = np.unravel_index(int(np.argmax(error)), error.shape)
            return (f"{p.name}: {int((~close).sum())} of {close.size} elements differ from the interpreter, "
                    f"max error {error[worst]:.3g} at {tuple(int(i) for i in worst)}")
    return None


def _reference_mismatch(expected: list, outputs: list) -> str | None:
    """`expected` against the last len(expected) array arguments, within 1e-2."""
    for want, got in zip(expected, outputs[-len(expected):]):
        close, error = agreement(np.asarray(want), got, rtol=1e-2, atol=1e-2)
        if not close.all():
            return f"max error {error.max():.3g} against the reference"
    return None
