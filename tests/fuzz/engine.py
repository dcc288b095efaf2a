"""Run random programs on the interpreter, compare with their NumPy formulation, compile a sample with NVRTC.

    >>> stats = fuzz(seconds=5, seed=0)
    >>> stats.checked, stats.mismatches
"""
from __future__ import annotations

import itertools
import linecache
import re
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import tileworkbench.tile as ct

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


def check(program: Program, filename: str, arch: str | None = None) -> str | None:
    """Launch on the interpreter and compare; with `arch`, also compile the kernel with NVRTC for it."""
    kernel = kernel_of(program, filename)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the interpreter must not warn about the values it computes
            x, y, out = program.fresh_args()
            ct.launch(None, program.grid, kernel, (x, y, out))
        found = difference(program, out)
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
    """Check random programs for `seconds` (or `limit` programs); every `nvrtc_every`-th one is also
    compiled with NVRTC (alternately for sm_80 and sm_90) while NVRTC has used under `nvrtc_seconds`."""
    stats = Stats()
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
        found = check(program, f"<fuzz seed {seed} #{k}>", next(archs) if compile_it else None)
        if compile_it:
            nvrtc_time += time.monotonic() - t0
            stats.compiled += found is None
        stats.checked += 1
        if found is not None:
            stats.mismatches.append((seed, k, found, program.source))
    return stats
