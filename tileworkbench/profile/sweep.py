"""Run one kernel over every combination of Constant values (tile shapes) and compare them.

    result = sweep(matmul, grid_fn=lambda c: (M // c["TM"], N // c["TN"]),
                   args_fn=lambda c: (A, B, C, c["TM"], c["TN"], 32),
                   space={"TM": [64, 128], "TN": [64, 128]})
    result.best().config, result.to_csv("sweep.csv")

Compiles run in parallel (NVRTC, through the disk cache). With a GPU each configuration is then
launched and timed; `reference(config)` (optional) returns the expected outputs, checked after
one launch. Without a GPU each configuration reports its compile-time resources and theoretical
occupancy, and the result says that timings need a GPU. A configuration that fails keeps its
reason: a tile-language error, a compile error, a resource limit, or a mismatch.
"""
from __future__ import annotations

import csv
import itertools
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import TileError
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


def _gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _compile(kernel, config, args, arch):
    """Specialize and compile one configuration; returns (row, fn, generated) with failures recorded."""
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


def sweep(kernel, grid_fn, args_fn, space: dict, *, arch: str | None = None, reference=None, workers: int = 2,
          repetitions: int = 20, progress=None) -> SweepResult:
    """Compile (and, with a GPU, time) `kernel` for every combination in `space`.
    `grid_fn(config)` and `args_fn(config)` give each configuration's grid and arguments;
    `progress(done, total)` is called as configurations finish."""
    timed = _gpu_available()
    if arch is None:
        from ..runtime.launch import device_arch
        arch = device_arch() if timed else "sm_90"
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
            _time(kernel, config, row, fn, grid_fn, args_fn, reference, repetitions)
            step()
        result.rows.append(row)
    return result


def _time(kernel, config, row, fn, grid_fn, args_fn, reference, repetitions):
    import cupy

    from .. import tile as ct
    from ..runtime.arrays import device_array
    from ..tile._kernel import normalize_grid
    from .bench import time_launches
    from .work import launch_work
    args, grid = args_fn(config), normalize_grid(grid_fn(config))
    stream = cupy.cuda.get_current_stream()
    try:
        ct.launch(stream, grid, kernel, args)
        stream.synchronize()
    except Exception as e:
        row.status, row.reason = "launch error", f"{type(e).__name__}: {str(e).splitlines()[0]}"
        return
    if reference is not None:
        expected = reference(config)
        outputs = [a for a in args if hasattr(a, "__cuda_array_interface__")]
        for want, got in zip(expected, outputs[-len(expected):]):
            got = cupy.asnumpy(got)
            if not np.allclose(got.astype(np.float64), np.asarray(want, np.float64), rtol=1e-2, atol=1e-2):
                row.status, row.reason = "mismatch", f"max error {np.abs(got - want).max():.3g} against the reference"
                return
    timing = time_launches(lambda: ct.launch(stream, grid, kernel, args), repetitions=repetitions, warmup=3)
    runtime_args = [a for p, a in zip(fn.params, args) if p.kind != "constant"]
    shapes = {p.name: device_array(a).shape for p, a in zip(fn.runtime_params, runtime_args) if p.kind == "array"}
    work = launch_work(fn, grid, shapes)
    row.time_ms = timing.median_ms
    row.gbs = work.bytes / timing.median_ms / 1e6
    row.tflops = work.flops / timing.median_ms / 1e9
