"""Run random programs on the interpreter, compare with their NumPy formulation, compile a sample with NVRTC;
save each one's trace and load it again.

    >>> stats = fuzz(seconds=5, seed=0)
    >>> stats.checked, stats.mismatches
"""
from __future__ import annotations

import itertools
import linecache
import os
import re
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.interp import Trace
from tileworkbench.tile import interpret

from .programs import Program, random_program


@dataclass
class Stats:
    checked: int = 0
    compiled: int = 0
    mismatches: list = field(default_factory=list)  # (seed, program index, what differs, the source)

    def __str__(self) -> str:
        return (f"{self.checked} kernels checked against NumPy, {self.compiled} compiled with NVRTC, "
                f"{len(self.mismatches)} mismatches")


def kernel_of(program: Program, filename: str):
    """The program's kernel, defined as if from a file called `filename` (so its source can be read)."""
    linecache.cache[filename] = (len(program.source), None, program.source.splitlines(keepends=True), filename)
    scope = {"ct": ct}
    exec(compile(program.source, filename, "exec"), scope)
    return scope["fuzz"]


def difference(program: Program, got: np.ndarray) -> str | None:
    """What differs between the launch's output and the expected one, or None."""
    want = program.expected
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"output {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
    if want.dtype.kind != "f" and want.dtype.name != "bfloat16":
        bad = got != want
    else:
        nan = np.isnan(want)
        bad = nan != np.isnan(got)
        if program.exact:
            bad |= ~nan & (got != want)
        else:
            g, w = got.astype(np.float64), want.astype(np.float64)
            inputs = np.concatenate([a.ravel().astype(np.float64) for a in program.args[:2]])
            scale = 1 + np.max(np.abs(inputs[np.isfinite(inputs)]), initial=0)
            tol = program.eps * 4 * max(64, inputs.size) * scale
            with np.errstate(invalid="ignore"):
                close = (g == w) | (np.abs(g - w) <= tol * (1 + np.abs(w)))
            bad |= ~nan & ~close
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{int(bad.sum())} elements differ, first at {where}: got {got[where]!r}, expected {want[where]!r}"


def trace_difference(a: Trace, b: Trace) -> str | None:
    """What differs between a trace and the same trace saved and loaded, or None."""
    if (a.kernel, tuple(a.grid), a.arrays, len(a.events)) != (b.kernel, tuple(b.grid), b.arrays, len(b.events)):
        return f"trace header: {a.kernel, a.grid, a.arrays, len(a.events)} != {b.kernel, b.grid, b.arrays, len(b.events)}"
    for k, (e, f) in enumerate(zip(a.events, b.events)):
        for name in ("op", "array", "line", "col", "source", "operand_shapes", "padding_mode"):
            if getattr(e, name) != getattr(f, name):
                return f"event {k}'s {name}: {getattr(e, name)!r} != {getattr(f, name)!r}"
        for name in ("blocks", "coords", "status"):
            x, y = getattr(e, name), getattr(f, name)
            if x.dtype != y.dtype or not np.array_equal(x, y):
                return f"event {k}'s {name}: {x.dtype}{x.shape} != {y.dtype}{y.shape}"
        pads = e.padding_of_lanes(), f.padding_of_lanes()
        if (pads[0] is None) != (pads[1] is None) or pads[0] is not None and \
                pads[0].tobytes() != pads[1].astype(pads[0].dtype).tobytes():
            return f"event {k}'s padding: {e.padding_value!r} != {f.padding_value!r}"
    return None


def saved_and_loaded(trace: Trace, directory: str) -> str | None:
    """Save the trace, load it again, and say what differs (None: nothing)."""
    path = os.path.join(directory, "trace.npz")
    trace.save(path)
    return trace_difference(trace, Trace.load(path))


def check(program: Program, filename: str, arch: str | None = None, traces: str | None = None) -> str | None:
    """Launch on the interpreter and compare; with `arch`, also compile the kernel with NVRTC for it;
    with `traces` (a directory), also run it traced, compare that output, save the trace there and
    load it again."""
    kernel = kernel_of(program, filename)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the interpreter must not warn about the values it computes
            x, y, out = program.fresh_args()
            ct.launch(None, program.grid, kernel, (x, y, out))
            found = difference(program, out)
            if found is None and traces is not None:
                x, y, traced = program.fresh_args()
                trace = interpret(kernel, program.grid, (x, y, traced), trace=True)
                found = difference(program, traced) or saved_and_loaded(trace, traces)
                found = found and f"traced: {found}"
        if found is None and arch is not None:
            from tileworkbench.runtime.launch import build
            compiled = build(kernel.specialize((x, y, out)), arch)
            if not re.search(r"\bst\.global", compiled.asm["ptx"]):
                found = f"no store in the PTX for {arch}"
        return found
    except Exception as e:  # noqa: BLE001 - a crash on a valid program is a finding too
        return f"{type(e).__name__}: {e}"
    finally:
        linecache.cache.pop(filename, None)


def fuzz(seconds: float, seed: int = 0, nvrtc_every: int = 0, nvrtc_seconds: float | None = None,
         limit: int | None = None) -> Stats:
    """Check random programs for `seconds` (or `limit` programs), each also traced, saved and loaded
    again; every `nvrtc_every`-th one is also compiled with NVRTC (alternately for sm_80 and sm_90)
    while NVRTC has used under `nvrtc_seconds`."""
    stats = Stats()
    traces = tempfile.mkdtemp(prefix="fuzz-traces-")
    rng = np.random.default_rng(seed)
    start = time.monotonic()
    nvrtc_time = 0.0
    archs = itertools.cycle(["sm_80", "sm_90"])
    for k in itertools.count():
        if time.monotonic() - start > seconds or (limit is not None and k >= limit):
            break
        program = random_program(rng)
        compile_it = nvrtc_every and k % nvrtc_every == 0 and (nvrtc_seconds is None or nvrtc_time < nvrtc_seconds)
        t0 = time.monotonic()
        found = check(program, f"<fuzz seed {seed} #{k}>", next(archs) if compile_it else None, traces)
        if compile_it:
            nvrtc_time += time.monotonic() - t0
            stats.compiled += found is None
        stats.checked += 1
        if found is not None:
            stats.mismatches.append((seed, k, found, program.source))
    shutil.rmtree(traces, ignore_errors=True)
    return stats
