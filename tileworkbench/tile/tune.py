"""Pick the fastest configuration of a kernel: `ct.tune.exhaustive_search`, as cuTile's.

    result = ct.tune.exhaustive_search(configs, stream, grid_fn, kernel, args_fn, hints_fn)
    result.best.config, result.best.mean_us

Each configuration launches `kernel` (or `kernel(config)`) with `hints_fn(config)` as its options
(`kernel.replace_hints`) over `grid_fn(config)` with `args_fn(config)`. A configuration that fails
(it does not compile, does not launch, a launch after the compiling one took longer than
`single_run_timeout_sec`) is recorded with its error and the search goes on. On the GPU each launch is timed with CUDA events, the L2 cache
flushed before it, until the 95% confidence half-width is within 1% of the mean (or 0.5 us), at
most 1000 launches or about 5 s per configuration. Launches that run on the interpreter (NumPy
arrays, host tensors, TILEWORKBENCH_INTERPRET=1) are timed once on the host clock: the interpreter's
time says nothing about the GPU, and a search there checks that every configuration runs.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

import numpy as np

from ..arguments import interpret_requested, is_host_tensor, normalize_grid
from ._kernel import Kernel, launch

T = TypeVar("T")

WARMUP = 3
MIN_SAMPLES = 5
MAX_SAMPLES = 1000
MAX_MEASURE_US = 5e6


@dataclass(frozen=True, kw_only=True)
class Measurement(Generic[T]):
    config: T
    mean_us: float
    num_samples: int
    error_margin_us: float  # half the 95% confidence interval of the mean


@dataclass(frozen=True, kw_only=True)
class TuningResult(Generic[T]):
    best: Measurement
    successes: Sequence[Measurement]
    failures: Sequence[tuple]  # (config, exception class, message) of each configuration that failed

    def summary(self, *, top_k: int = 10) -> str:
        lines = [f"{len(self.successes)} succeeded, {len(self.failures)} failed"]
        for m in sorted(self.successes, key=lambda m: m.mean_us)[:top_k]:
            lines.append(f"{'*' if m == self.best else ' '} {m.config}: {m.mean_us:.1f}±{m.error_margin_us:.1f} us "
                         f"({m.num_samples} samples)")
        lines += [f"  {config}: {kind.__name__}: {message.splitlines()[0] if message else ''}"
                  for config, kind, message in self.failures[:top_k]]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def exhaustive_search(search_space: Sequence[T], stream, grid_fn: Callable[[T], tuple], kernel,
                      args_fn: Callable[[T], tuple], hints_fn: Callable[[T], dict] | None = None, *,
                      quiet: bool = False, single_run_timeout_sec: float | None = None,
                      flush_l2: bool = True) -> TuningResult[T]:
    """Time every configuration of `search_space` and return them with the fastest (see the module);
    flush_l2=False times warm-cache launches (the L2 keeps what the previous launch left)."""
    if len(search_space) == 0:
        raise ValueError("Search space is empty.")
    successes, failures = [], []
    for config in search_space:
        try:
            chosen = kernel if isinstance(kernel, Kernel) else kernel(config)
            tuned = chosen.replace_hints(**(hints_fn(config) if hints_fn is not None else {}))
            grid = normalize_grid(grid_fn(config))
            successes.append(_measure(config, lambda: launch(stream, grid, tuned, args_fn(config)), stream,
                                      _on_device(args_fn(config)), single_run_timeout_sec, flush_l2))
        except Exception as e:  # the search goes on; the failure is part of the result
            failures.append((config, type(e), str(e)))
    if not successes:
        config, kind, message = failures[0]
        raise ValueError(f"No valid config found in search space.\nConfig: {config}\n{kind.__name__}: {message}")
    result = TuningResult(best=min(successes, key=lambda m: m.mean_us), successes=tuple(successes),
                          failures=tuple(failures))
    if not quiet:
        print(result)
    return result


def _on_device(args: tuple) -> bool:
    """Whether ct.launch runs these arguments on the GPU (else on the interpreter)."""
    return not interpret_requested() and not any(isinstance(a, np.ndarray) or is_host_tensor(a) for a in args)


def _measure(config, run: Callable[[], Any], stream, on_device: bool, timeout_s: float | None,
             flush_l2: bool = True) -> Measurement:
    time_one = _device_timer(stream, flush_l2) if on_device else _host_timer
    first = time_one(run)  # on the GPU this one compiles: a warm-up, not a sample
    if not on_device:
        _check_timeout(first, timeout_s)
        return Measurement(config=config, mean_us=first, num_samples=1, error_margin_us=0.0)
    for _ in range(WARMUP - 1):
        _check_timeout(time_one(run), timeout_s)
    samples: list[float] = []
    while True:
        samples.append(time_one(run))
        mean = float(np.mean(samples))
        margin = 1.96 * float(np.std(samples, ddof=1)) / math.sqrt(len(samples)) if len(samples) > 1 else math.inf
        if len(samples) >= MIN_SAMPLES and (margin <= 0.01 * mean or margin <= 0.5 or len(samples) >= MAX_SAMPLES
                                            or mean * len(samples) > MAX_MEASURE_US):
            return Measurement(config=config, mean_us=mean, num_samples=len(samples), error_margin_us=margin)


def _check_timeout(elapsed_us: float, timeout_s: float | None) -> None:
    if timeout_s is not None and elapsed_us > timeout_s * 1e6:
        raise TimeoutError(f"A launch took {elapsed_us / 1e6:.3g} s, more than single_run_timeout_sec={timeout_s}")


def _host_timer(run) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1e6


def _device_timer(stream, flush_l2: bool = True):
    """Time one launch on `stream` with CUDA events, the L2 cache flushed first (if flush_l2)."""
    import cupy

    from ..runtime.device import l2_flusher
    from ..runtime.arrays import stream_handle
    on = cupy.cuda.ExternalStream(stream_handle(stream))
    flush = l2_flusher() if flush_l2 else (lambda: None)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()

    def time_one(run) -> float:
        with on:
            flush()
            start.record(on)
            run()
            stop.record(on)
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) * 1e3
    return time_one
