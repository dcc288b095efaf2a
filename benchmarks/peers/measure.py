"""Check, tune and time the implementations of one case on the GPU.

Each implementation gets fresh random inputs (its own `Problem`) and offers one or more
configurations (`{label: run}`). Every configuration is run once on an output poisoned with NaN and
checked against the case's reference; the ones that pass are timed briefly and the fastest is kept
(the config column). Then the implementations of the case are timed round-robin, a batch of
repetitions each per round: CUDA events around each launch, the L2 flushed before each.
"""
from __future__ import annotations

import math
import traceback
from dataclasses import dataclass, field

from .results import verdict


@dataclass
class Entry:
    """One implementation of one case, through checking, tuning and timing."""
    impl: str
    family: str
    offer: object  # (problem) -> {config label: run}; a callable alone is one unnamed configuration
    config: str | None = None
    tuning: dict = field(default_factory=dict)  # config label -> brief median ms, or why it was dropped
    error: str | None = None
    samples: list = field(default_factory=list)
    run: object = None
    problem: object = None

    def result(self) -> dict:
        row = {"impl": self.impl, "family": self.family}
        if self.config:
            row["config"] = self.config
        if len(self.tuning) > 1 or any(isinstance(v, str) for v in self.tuning.values()):
            row["tuning"] = self.tuning
        if self.error or not self.samples:
            row.update(status="failed", error=self.error or "not timed")
        else:
            from .results import summarize
            row.update(status="ok", **summarize(self.samples))
        return row


def describe(e: BaseException) -> str:
    """One line naming an exception, short enough for a table cell."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:400]}"


class Timer:
    """CUDA events around one launch on the current stream, the L2 flushed before it."""

    def __init__(self):
        import torch
        self.torch = torch
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.scrub = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def flush(self):
        self.scrub.zero_()

    def samples(self, run, repetitions: int) -> list[float]:
        out = []
        for _ in range(repetitions):
            self.flush()
            self.start.record()
            run()
            self.stop.record()
            self.stop.synchronize()
            out.append(self.start.elapsed_time(self.stop))
        return out


def relative_error(got, expected) -> float:
    """||got - expected|| / ||expected|| in float64, by chunks of rows (the outputs are GiBs); NaN if
    `got` has a NaN. Exact (0.0) when every element is equal."""
    import torch
    got, expected = got.reshape(got.shape[0], -1), expected.reshape(expected.shape[0], -1)
    if got.shape != expected.shape:
        return math.nan
    diff = norm = 0.0
    step = max(1, (1 << 26) // max(1, got.shape[1]))
    for i in range(0, got.shape[0], step):
        g, e = got[i:i + step].double(), expected[i:i + step].double()
        if torch.isnan(g).any():
            return math.nan
        diff += float(torch.sum((g - e) ** 2))
        norm += float(torch.sum(e * e))
    return 0.0 if diff == 0 else math.sqrt(diff / max(norm, 1e-300))


def prepare(entry: Entry, case, timer: Timer, *, tune_reps: int, warmup: int) -> None:
    """Make the entry's problem, check every configuration, keep the fastest correct one."""
    import torch
    try:
        entry.problem = problem = case.make()
        offered = entry.offer(problem)
        offered = offered if isinstance(offered, dict) else {"": offered}
    except Exception as e:  # a peer that cannot run here is reported, not fatal
        entry.error = describe(e)
        return
    expected = case.reference(problem)
    passing = {}
    for label, run in offered.items():
        try:
            problem.poison()
            run()
            torch.cuda.synchronize()
            reason = verdict(relative_error(problem.y, expected), case.tolerance)
            if reason:
                entry.tuning[label] = f"wrong result: {reason}"
                continue
            samples = timer.samples(run, tune_reps)
            entry.tuning[label] = sorted(samples)[len(samples) // 2]
            passing[label] = run
        except Exception as e:
            entry.tuning[label] = describe(e)
            if _is_fatal(e):
                traceback.print_exc()
                break
    del expected
    if not passing:
        reasons = [f"{k}: {v}" if k else v for k, v in entry.tuning.items()]
        entry.error = reasons[0] if len(reasons) == 1 else "every configuration failed: " + "; ".join(reasons)
        return
    entry.config = min(passing, key=entry.tuning.get) or None
    entry.run = passing[entry.config or ""]
    for _ in range(warmup):
        entry.run()
    torch.cuda.synchronize()


def _is_fatal(e: BaseException) -> bool:
    """A CUDA error that leaves the context unusable (an illegal address, a launch failure)."""
    text = str(e).lower()
    return "illegal" in text or "unspecified launch failure" in text or "misaligned address" in text


def time_round_robin(entries: list[Entry], timer: Timer, *, rounds: int, repetitions: int) -> None:
    """`rounds` rounds; in each, every prepared entry gets `repetitions` timed launches in turn."""
    for _ in range(rounds):
        for entry in entries:
            if entry.run is None:
                continue
            try:
                entry.samples += timer.samples(entry.run, repetitions)
            except Exception as e:
                entry.error, entry.run = f"failed while timed: {describe(e)}", None
