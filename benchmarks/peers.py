"""tileworkbench against cuTile, Triton, CuPy and PyTorch (cuBLAS) on one GPU, in one command:

    source .cutile/setup.sh                 # cuTile's toolchain (made by benchmarks/prepare_cutile.sh)
    python3 benchmarks/peers.py --out DIR [--quick] [--only softmax,matmul] [--impl cutile,triton]

Cases: device-to-device copy (the ceiling), vector add f32 2^28, transpose 16384^2 f32 and bf16, row
gather (an embedding lookup of random rows), row softmax 32768 x {1024, 4096, 16384} f32, layernorm
forward (bf16 in and out, f32 statistics), matmul bf16 4096^3 and 8192^3 (f32 accumulate), and two
of CuPy's user-defined kernels (an ElementwiseKernel squared difference f32 2^28 and a ReductionKernel
L2 norm of 32768 rows x 4096 f32) run by CuPy and, from the same definitions, by tileworkbench
(tileworkbench.ElementwiseKernel / ReductionKernel, its tile sizes tried and the fastest kept); then
compile latency (cold, disk-cache hit in a new process, same-process hit) and the host overhead of
launching an empty kernel.

Method: every implementation is checked on fresh random inputs against a float32/float64 torch
reference (its output poisoned with NaN first) before it is timed; one that fails or raises is
reported with its reason and not timed. Where an implementation has a few configurations (tile
shapes, compiler hints) each is checked and briefly timed and the fastest is kept (Triton's matmul
autotunes itself). Timing: CUDA events around each launch after warm-up, the L2 flushed before each,
the implementations of a case interleaved over rounds; median and p10/p90. GPU clocks, temperature
and power are logged before, per case and after (never changed).

Results, in --out: DATE-DEVICE-peers.json (`validate` checks its shape), .txt (the printed table:
ms, GB/s or TFLOP/s; ratios to the copy's bandwidth, to cuBLAS, to the case's fastest) and .png.

Sections: results (pure: statistics, ratios, table, names), cases, measuring, the implementations
(one table, IMPLEMENTATIONS, from a case's op to each library's function), latency, the system, the
chart, the command.
"""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
if REPO not in sys.path:  # run as a script: tileworkbench from this checkout
    sys.path.insert(0, REPO)

import tileworkbench.tile as tw  # noqa: E402


# ---- results: plain data, no GPU ------------------------------------------------------------------

SCHEMA = "tileworkbench-peers/2"
KINDS = ("copy", "memory", "matmul")
CUBLAS = "torch.matmul (cuBLAS)"  # the implementation matmul ratios are taken against


def summarize(samples: list[float]) -> dict:
    """Median and p10/p90 of timing samples in milliseconds."""
    p10, p50, p90 = np.percentile(np.asarray(samples, dtype=float), [10, 50, 90])
    return {"ms": float(p50), "p10": float(p10), "p90": float(p90), "samples": len(samples)}


def verdict(error: float, tolerance: float) -> str | None:
    """None for a result within `tolerance` (relative norm error; 0 means bit-exact), else why not.
    NaN (an output left unwritten: outputs are poisoned with NaN before the check) always fails."""
    if error != error:
        return "output has NaN (not every element written)"
    if tolerance == 0:
        return None if error == 0 else f"not bit-exact (relative error {error:.2e})"
    return None if error <= tolerance else f"relative error {error:.2e} > {tolerance:.0e}"


def _timed(case: dict) -> list[dict]:
    return [r for r in case["results"] if r["status"] == "ok"]


def add_ratios(cases: list[dict]) -> None:
    """Throughput and ratios of every timed result, in place: GB/s (memory-bound and copy cases) and
    `x_copy` against the fastest copy; TFLOP/s and `x_cublas` against cuBLAS (matmul); `x_best`
    against the fastest implementation of the case (1 = fastest)."""
    for case in cases:
        for r in _timed(case):
            if case["kind"] != "matmul":
                r["gbs"] = case["bytes"] / r["ms"] / 1e6
            if case["flops"]:
                r["tflops"] = case["flops"] / r["ms"] / 1e9
    copy_gbs = max((r["gbs"] for c in cases if c["kind"] == "copy" for r in _timed(c)), default=None)
    for case in cases:
        timed = _timed(case)
        if not timed:
            continue
        best = min(r["ms"] for r in timed)
        cublas = next((r["ms"] for r in timed if r["impl"] == CUBLAS), None)
        for r in timed:
            r["x_best"] = best / r["ms"]
            if case["kind"] != "matmul" and copy_gbs:
                r["x_copy"] = r["gbs"] / copy_gbs
            if case["kind"] == "matmul" and cublas:
                r["x_cublas"] = cublas / r["ms"]


def versus_best_peer(case: dict, family: str = "tileworkbench") -> tuple[float, str] | None:
    """(speed of `family`'s fastest result / the fastest other implementation's, that implementation)."""
    timed = _timed(case)
    own = [r["ms"] for r in timed if r["family"] == family]
    peers = [r for r in timed if r["family"] != family]
    if not own or not peers:
        return None
    best = min(peers, key=lambda r: r["ms"])
    return best["ms"] / min(own), best["impl"]


def result_stem(date: str, device: str, quick: bool) -> str:
    """File name stem of a run's results: date, device and 'peers' (and 'quick' for a smoke test).

    >>> result_stem("2026-11-22T13:02:47+00:00", "NVIDIA H100 80GB HBM3", quick=False)
    '2026-11-22-h100-80gb-hbm3-peers'
    """
    name = re.sub(r"^nvidia ", "", device.strip().lower())
    slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"
    return f"{date[:10]}-{slug}-peers" + ("-quick" if quick else "")


def validate(doc: dict) -> list[str]:
    """What is missing or malformed in a results document (empty when it is well formed)."""
    problems = []

    def need(obj, key, types, where):
        if not isinstance(obj, dict) or key not in obj:
            problems.append(f"{where}: missing {key!r}")
        elif not isinstance(obj[key], types):
            problems.append(f"{where}.{key}: {type(obj[key]).__name__}, expected {types}")

    def result(r, where, numbers):
        need(r, "impl", str, where)
        if r.get("status") == "ok":
            for key in numbers:
                need(r, key, (int, float), where)
        elif r.get("status") == "failed":
            need(r, "error", str, where)
        else:
            problems.append(f"{where}.status: {r.get('status')!r}")

    if doc.get("schema") != SCHEMA:
        problems.append(f"doc.schema: {doc.get('schema')!r}, expected {SCHEMA!r}")
    for key, types in (("date", str), ("quick", bool), ("environment", dict), ("gpu_state", dict),
                       ("settings", dict), ("cases", list), ("latency", list)):
        need(doc, key, types, "doc")
    for i, case in enumerate(doc.get("cases", [])):
        where = f"cases[{i}]"
        for key, types in (("key", str), ("title", str), ("kind", str), ("bytes", int), ("flops", int),
                           ("results", list)):
            need(case, key, types, where)
        if case.get("kind") not in KINDS:
            problems.append(f"{where}.kind: {case.get('kind')!r}")
        for j, r in enumerate(case.get("results", [])):
            result(r, f"{where}.results[{j}]", ("ms", "p10", "p90", "samples"))
    for i, r in enumerate(doc.get("latency", [])):
        need(r, "measure", str, f"latency[{i}]")
        result(r, f"latency[{i}]", ("ms",))
    return problems


def _number(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_table(doc: dict) -> str:
    """The printed report: environment, clocks, every case's results with ratios, and latency."""
    env = doc["environment"]
    lines = [f"{env.get('device', '?')}  driver {env.get('driver', '?')}  CUDA {env.get('cuda_driver', '?')}  "
             f"{doc['date']}{'  (quick)' if doc['quick'] else ''}",
             "  ".join(f"{k} {env[k]}" for k in ("torch", "triton", "cupy", "cuda.tile", "tileiras",
                                                 "tileworkbench commit") if k in env),
             f"GPU before: {doc['gpu_state'].get('before')}",
             f"GPU after:  {doc['gpu_state'].get('after')}", ""]
    head = (f"{'implementation':32} {'config':28} {'ms':>9} {'p10-p90':>17} {'GB/s':>6} {'TFLOP/s':>7} "
            f"{'xcopy':>5} {'xcuBLAS':>7} {'xbest':>5}")
    for case in doc["cases"]:
        lines += [f"== {case['title']} ({case['kind']})", head]
        for r in case["results"]:
            name = f"{r['impl'][:32]:32} {(r.get('config') or '')[:28]:28}"
            if r["status"] != "ok":
                lines.append(f"{name} failed: {r['error'][:150]}")
                continue
            lines.append(f"{name} {r['ms']:9.4f} {r['p10']:8.4f}-{r['p90']:<8.4f} {_number(r.get('gbs'), '6.0f'):>6} "
                         f"{_number(r.get('tflops'), '7.1f'):>7} {_number(r.get('x_copy'), '5.2f'):>5} "
                         f"{_number(r.get('x_cublas'), '7.2f'):>7} {_number(r.get('x_best'), '5.2f'):>5}")
        against = versus_best_peer(case)
        if against:
            lines.append(f"   tileworkbench / best peer ({against[1]}): {against[0]:.2f}x")
        lines.append("")
    if doc["latency"]:
        lines += ["== compile, cache and launch latency (ms; median of the samples)",
                  f"{'measure':54} {'implementation':16} {'ms':>10}  samples"]
        for r in doc["latency"]:
            if r["status"] != "ok":
                lines.append(f"{r['measure']:54} {r['impl']:16} failed: {r['error'][:120]}")
            else:
                samples = " ".join(f"{s:.4g}" for s in r.get("values", []))
                lines.append(f"{r['measure']:54} {r['impl']:16} {r['ms']:10.4f}  {samples}")
    return "\n".join(lines) + "\n"


# ---- cases: sizes, fresh random inputs, references, tolerances ------------------------------------

class Problem(SimpleNamespace):
    """One implementation's inputs (torch tensors on the GPU, fresh random values) and output `y`.
    Fields by op: `x, y` (copy, transpose, softmax), `a, b, y` (add, matmul), `table, ids, y`
    (gather), `x, w, b, y` (layernorm)."""

    def poison(self):
        self.y.fill_(float("nan"))


@dataclass(frozen=True)
class Case:
    key: str            # for --only: "softmax_4096"; "softmax" selects every softmax case
    title: str
    kind: str           # "copy" (the ceiling), "memory" (memory-bound), "matmul"
    op: str             # the row of IMPLEMENTATIONS
    params: dict
    bytes: int          # moved to or from memory, at least once each
    flops: int
    tolerance: float    # relative norm error against the reference; 0: bit-exact
    make: Callable
    reference: Callable


def selected(key: str, words: list[str]) -> bool:
    """Whether `--only` words select a key: the key itself or its first part ("softmax")."""
    return not words or any(w == key or key.split("_")[0] == w for w in words)


def _randn(*shape, dtype="float32"):
    import torch
    return torch.randn(*shape, device="cuda", dtype=getattr(torch, dtype))


def _nan(*shape, dtype="float32"):
    import torch
    return torch.full(shape, float("nan"), device="cuda", dtype=getattr(torch, dtype))


def copy_case(n: int) -> Case:
    return Case("copy", f"copy f32 2^{n.bit_length() - 1}", "copy", "copy", {"n": n}, 8 * n, 0, 0,
                lambda: Problem(x=_randn(n), y=_nan(n)), lambda p: p.x)


def add_case(n: int) -> Case:
    return Case("add", f"vector add f32 2^{n.bit_length() - 1}", "memory", "add", {"n": n}, 12 * n, n, 0,
                lambda: Problem(a=_randn(n), b=_randn(n), y=_nan(n)), lambda p: p.a + p.b)


def transpose_case(s: int, dtype: str) -> Case:
    short = {"float32": "f32", "bfloat16": "bf16"}[dtype]
    return Case(f"transpose_{short}", f"transpose {s}^2 {short}", "memory", "transpose", {"s": s},
                2 * s * s * (4 if short == "f32" else 2), 0, 0,
                lambda: Problem(x=_randn(s, s, dtype=dtype), y=_nan(s, s, dtype=dtype)), lambda p: p.x.t())


def gather_case(rows: int, width: int, vocab: int) -> Case:
    def make():
        import torch
        ids = torch.randint(0, vocab, (rows,), device="cuda", dtype=torch.int32)
        return Problem(table=_randn(vocab, width), ids=ids, y=_nan(rows, width))
    return Case("gather", f"row gather {rows} of {vocab} x {width} f32", "memory", "gather",
                {"rows": rows, "width": width, "vocab": vocab}, 2 * rows * width * 4 + rows * 4, 0, 0, make,
                lambda p: p.table[p.ids.long()])


def softmax_case(rows: int, cols: int) -> Case:
    def reference(p):
        import torch
        return torch.softmax(p.x.double(), dim=1)
    return Case(f"softmax_{cols}", f"softmax {rows} x {cols} f32", "memory", "softmax", {"rows": rows, "cols": cols},
                2 * rows * cols * 4, 0, 1e-5, lambda: Problem(x=_randn(rows, cols), y=_nan(rows, cols)), reference)


def layernorm_case(rows: int, cols: int) -> Case:
    def make():
        return Problem(x=_randn(rows, cols, dtype="bfloat16"), w=_randn(cols, dtype="bfloat16"),
                       b=_randn(cols, dtype="bfloat16"), y=_nan(rows, cols, dtype="bfloat16"))

    def reference(p):
        from torch.nn.functional import layer_norm
        return layer_norm(p.x.float(), (cols,), p.w.float(), p.b.float(), 1e-5)
    return Case("layernorm", f"layernorm {rows} x {cols} bf16 (f32 statistics)", "memory", "layernorm",
                {"rows": rows, "cols": cols}, 2 * rows * cols * 2 + 4 * cols, 0, 1e-2, make, reference)


def matmul_case(key: str, s: int) -> Case:
    def make():
        bf16 = "bfloat16"
        return Problem(a=_randn(s, s, dtype=bf16), b=_randn(s, s, dtype=bf16), y=_nan(s, s, dtype=bf16))
    return Case(key, f"matmul {s}^3 bf16 (f32 accumulate)", "matmul", "matmul", {"s": s}, 3 * s * s * 2,
                2 * s ** 3, 1e-2, make, lambda p: p.a.double() @ p.b.double())


def cupy_elementwise_case(n: int) -> Case:
    return Case("cupy_elementwise", f"ElementwiseKernel (x - y)^2 f32 2^{n.bit_length() - 1}", "memory",
                "cupy_elementwise", {"n": n}, 12 * n, 2 * n, 0,
                lambda: Problem(a=_randn(n), b=_randn(n), y=_nan(n)), lambda p: (p.a - p.b) * (p.a - p.b))


def cupy_reduction_case(rows: int, cols: int) -> Case:
    def reference(p):
        import torch
        return torch.linalg.vector_norm(p.x.double(), dim=1)
    return Case("cupy_reduction", f"ReductionKernel L2 norm {rows} x {cols} f32", "memory", "cupy_reduction",
                {"rows": rows, "cols": cols}, rows * cols * 4 + rows * 4, 2 * rows * cols, 1e-5,
                lambda: Problem(x=_randn(rows, cols), y=_nan(rows)), reference)


def all_cases(quick: bool) -> list[Case]:
    """Every case at full size (they fill an H100), or small for a smoke test (the same keys)."""
    n, s, rows = (1 << 22, 2048, 2048) if quick else (1 << 28, 16384, 32768)
    return [copy_case(n), add_case(n), transpose_case(s, "float32"), transpose_case(s, "bfloat16"),
            gather_case(1 << 12, 256, 1 << 14) if quick else gather_case(1 << 18, 256, 1 << 20),
            *(softmax_case(rows, cols) for cols in (1024, 4096, 16384)), layernorm_case(rows, 4096),
            matmul_case("matmul_4096", 1024 if quick else 4096), matmul_case("matmul_8192", 2048 if quick else 8192),
            cupy_elementwise_case(n), cupy_reduction_case(rows, 4096)]


# ---- measuring: check every configuration, keep the fastest correct one, time round-robin ---------

@dataclass
class Entry:
    """One implementation of one case, through checking, tuning and timing."""
    impl: str
    family: str
    offer: Callable  # (problem) -> {config label: run}; a callable alone is one unnamed configuration
    config: str | None = None
    tuning: dict = field(default_factory=dict)  # config label -> brief median ms, or why it was dropped
    error: str | None = None
    samples: list = field(default_factory=list)
    run: Callable | None = None
    problem: Problem | None = None

    def result(self) -> dict:
        row = {"impl": self.impl, "family": self.family}
        if self.config:
            row["config"] = self.config
        if len(self.tuning) > 1 or any(isinstance(v, str) for v in self.tuning.values()):
            row["tuning"] = self.tuning
        if self.error or not self.samples:
            row.update(status="failed", error=self.error or "not timed")
        else:
            row.update(status="ok", **summarize(self.samples))
        return row


def describe(e: BaseException) -> str:
    """One line naming an exception, short enough for a table cell."""
    return f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"


class Timer:
    """CUDA events around one launch on the current stream, the L2 flushed before it."""

    def __init__(self):
        import torch
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.scrub = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
        self.start, self.stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def samples(self, run, repetitions: int) -> list[float]:
        out = []
        for _ in range(repetitions):
            self.scrub.zero_()
            self.start.record()
            run()
            self.stop.record()
            self.stop.synchronize()
            out.append(self.start.elapsed_time(self.stop))
        return out


def relative_error(got, expected) -> float:
    """||got - expected|| / ||expected|| in float64, by chunks of rows (outputs are GiBs); NaN if `got`
    has a NaN; 0.0 exactly when every element is equal."""
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


def _synchronize():
    import torch
    torch.cuda.synchronize()


def prepare(entry: Entry, case: Case, timer, *, tune_reps: int, warmup: int) -> None:
    """Make the entry's problem, check every configuration, keep the fastest correct one."""
    try:
        entry.problem = problem = case.make()
        offered = entry.offer(problem)
        offered = offered if isinstance(offered, dict) else {"": offered}
        expected = case.reference(problem)
    except Exception as e:  # a peer that cannot run here is reported, not fatal
        entry.error = describe(e)
        return
    passing = {}
    for label, run in offered.items():
        try:
            problem.poison()
            run()
            _synchronize()
            reason = verdict(relative_error(problem.y, expected), case.tolerance)
            if reason:
                entry.tuning[label] = f"wrong result: {reason}"
                continue
            samples = timer.samples(run, tune_reps)
            entry.tuning[label] = sorted(samples)[len(samples) // 2]
            passing[label] = run
        except Exception as e:
            entry.tuning[label] = describe(e)
    del expected
    if not passing:
        reasons = [f"{k}: {v}" if k else v for k, v in entry.tuning.items()]
        entry.error = reasons[0] if len(reasons) == 1 else "every configuration failed: " + "; ".join(reasons)
        return
    entry.config = min(passing, key=entry.tuning.get) or None
    entry.run = passing[entry.config or ""]
    for _ in range(warmup):
        entry.run()
    _synchronize()


def time_round_robin(entries: list[Entry], timer, *, rounds: int, repetitions: int) -> None:
    """`rounds` rounds; in each, every prepared entry gets `repetitions` timed launches in turn."""
    for _ in range(rounds):
        for entry in entries:
            if entry.run is None:
                continue
            try:
                entry.samples += timer.samples(entry.run, repetitions)
            except Exception as e:
                entry.error, entry.run = f"failed while timed: {describe(e)}", None


# ---- the implementations ---------------------------------------------------------------------------
# Each function takes a case's Problem and returns its configurations, {label: run} (or one run);
# run() launches once on the current stream and writes problem.y. A function imports its library
# (and compiles its kernels) when called, so a library missing here fails its rows with the reason.

def _stream():
    import torch
    return torch.cuda.current_stream()


# -- PyTorch's own operators (cuBLAS for matmul); those returning a new tensor store it in p.y

def torch_copy(p):
    return lambda: p.y.copy_(p.x)


def torch_add(p):
    import torch
    return lambda: torch.add(p.a, p.b, out=p.y)


def torch_transpose(p):
    return lambda: p.y.copy_(p.x.t())


def torch_gather(p):
    import torch
    ids = p.ids.long()
    return lambda: torch.index_select(p.table, 0, ids, out=p.y)


def torch_softmax(p):
    import torch

    def run():
        p.y = torch.softmax(p.x, dim=1)
    return run


def torch_layernorm(p):
    from torch.nn.functional import layer_norm

    def run():
        p.y = layer_norm(p.x, (p.x.shape[1],), p.w, p.b, 1e-5)
    return run


def torch_matmul(p):
    import torch
    return lambda: torch.matmul(p.a, p.b, out=p.y)


# -- tileworkbench's own kernels (tileworkbench/kernels.py), a few tile shapes where they take one

def _tw(kernel, grid, args):
    stream = _stream()
    return lambda: tw.launch(stream, grid, kernel, args)


def tw_add(p):
    from tileworkbench.kernels import vector_add
    n = p.a.shape[0]
    return {f"TILE={t}": _tw(vector_add, (n // t,), (p.a, p.b, p.y, t)) for t in (1024, 4096)}


def tw_transpose(p):
    from tileworkbench.kernels import transpose
    s = p.x.shape[0]
    return {f"T={t}": _tw(transpose, (s // t, s // t), (p.x, p.y, t)) for t in (32, 64)}


def tw_gather(p):
    from tileworkbench.kernels import row_gather, row_load
    rows, width = p.y.shape
    return {name: _tw(kernel, (rows,), (p.table, p.ids, p.y, width))
            for name, kernel in (("row_load", row_load), ("row_gather", row_gather))}


def tw_softmax(p):
    from tileworkbench.kernels import softmax
    rows, cols = p.x.shape
    return {f"N={cols}": _tw(softmax, (rows,), (p.x, p.y, cols))}


def tw_layernorm(p):
    from tileworkbench.kernels import layernorm
    rows, cols = p.x.shape
    return {f"N={cols}": _tw(layernorm, (rows,), (p.x, p.w, p.b, p.y, cols))}


def tw_matmul(p):
    from tileworkbench.kernels import matmul
    s = p.a.shape[0]
    return {f"{tm}x{tn}x{tk}": _tw(matmul, (s // tm, s // tn), (p.a, p.b, p.y, tm, tn, tk))
            for tm, tn, tk in ((128, 256, 64), (128, 128, 64))}


# -- Triton, written the standard way (the tutorials' formulations); matmul autotuned by Triton

@functools.cache
def triton_kernels() -> SimpleNamespace:
    import triton
    import triton.language as tl

    @triton.jit
    def add(a, b, c, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(c + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)

    @triton.jit
    def transpose(x, y, M, N, B: tl.constexpr):
        """y (N x M) = x (M x N).T, one B x B block of x per program."""
        rows = tl.program_id(0) * B + tl.arange(0, B)
        cols = tl.program_id(1) * B + tl.arange(0, B)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        t = tl.load(x + rows[:, None] * N + cols[None, :], mask=mask)
        tl.store(y + cols[:, None] * M + rows[None, :], tl.trans(t), mask=tl.trans(mask))

    @triton.jit
    def gather(table, ids, out, D: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        row = tl.load(ids + r).to(tl.int64)
        cols = tl.arange(0, D)
        tl.store(out + r * D + cols, tl.load(table + row * D + cols))

    @triton.jit
    def softmax(x, y, N, BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        t = tl.load(x + r * N + cols, mask=mask, other=-float("inf"))
        e = tl.exp(t - tl.max(t, axis=0))
        tl.store(y + r * N + cols, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def layernorm(x, w, b, y, N, eps, BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        t = tl.load(x + r * N + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(t, axis=0) / N
        d = tl.where(mask, t - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(d * d, axis=0) / N + eps)
        scale = tl.load(w + cols, mask=mask).to(tl.float32)
        shift = tl.load(b + cols, mask=mask).to(tl.float32)
        tl.store(y + r * N + cols, (d * rstd * scale + shift).to(y.dtype.element_ty), mask=mask)

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=stages, num_warps=warps)
               for bm, bn, bk, stages, warps in ((128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                                                 (128, 128, 64, 3, 8), (64, 256, 64, 4, 4))]

    @triton.autotune(configs, key=["M", "N", "K"])
    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        """c = a @ b (row-major), f32 accumulate; programs in groups of GROUP block rows (L2 reuse)."""
        pid = tl.program_id(0)
        blocks_m, blocks_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        first_m = (pid // (GROUP * blocks_n)) * GROUP
        group_rows = min(blocks_m - first_m, GROUP)
        pm = first_m + (pid % (GROUP * blocks_n)) % group_rows
        pn = (pid % (GROUP * blocks_n)) // group_rows
        rm = (pm * BM + tl.arange(0, BM)) % M
        rn = (pn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        a_ptrs = a + rm[:, None] * K + rk[None, :]
        b_ptrs = b + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a_t = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
            b_t = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a_t, b_t, acc)
            a_ptrs += BK
            b_ptrs += BK * N
        cm = pm * BM + tl.arange(0, BM)
        cn = pn * BN + tl.arange(0, BN)
        mask = (cm[:, None] < M) & (cn[None, :] < N)
        tl.store(c + cm[:, None] * N + cn[None, :], acc.to(c.dtype.element_ty), mask=mask)

    @triton.jit
    def empty(x):
        pass

    return SimpleNamespace(add=add, transpose=transpose, gather=gather, softmax=softmax, layernorm=layernorm,
                           matmul=matmul, empty=empty)


def _row_warps(cols):
    """Warps per row-per-program kernel: each thread keeps at least 4 of the row's values."""
    return [w for w in (4, 8, 16) if cols // (32 * w) >= 4 or w == 4]


def triton_add(p):
    k, n = triton_kernels(), p.a.shape[0]
    return {f"BLOCK={blk}": (lambda blk=blk: k.add[(n // blk,)](p.a, p.b, p.y, n, BLOCK=blk)) for blk in (1024, 4096)}


def triton_transpose(p):
    k, s = triton_kernels(), p.x.shape[0]
    return {f"B={blk}": (lambda blk=blk: k.transpose[(s // blk, s // blk)](p.x, p.y, s, s, B=blk)) for blk in (32, 64)}


def triton_gather(p):
    k, (rows, width) = triton_kernels(), p.y.shape
    return lambda: k.gather[(rows,)](p.table, p.ids, p.y, D=width)


def triton_softmax(p):
    k, (rows, cols) = triton_kernels(), p.x.shape
    return {f"warps={w}": (lambda w=w: k.softmax[(rows,)](p.x, p.y, cols, BLOCK=cols, num_warps=w))
            for w in _row_warps(cols)}


def triton_layernorm(p):
    k, (rows, cols) = triton_kernels(), p.x.shape
    return {f"warps={w}": (lambda w=w: k.layernorm[(rows,)](p.x, p.w, p.b, p.y, cols, 1e-5, BLOCK=cols, num_warps=w))
            for w in _row_warps(cols)}


def triton_matmul(p):
    k, s = triton_kernels(), p.a.shape[0]

    def grid(meta):
        return (-(-s // meta["BM"]) * -(-s // meta["BN"]),)
    return {"autotuned": lambda: k.matmul[grid](p.a, p.b, p.y, s, s, s)}


# -- cuTile (`cuda.tile`): kernels in the form cuTile's guide gives for each op, compiled from this
# source text (cuTile, as Triton, reads a kernel's source from its file); hints per configuration

CUTILE_SOURCE = '''
import cuda.tile as ct

ConstInt = ct.Constant[int]
APPROX = ct.RoundingMode.APPROX


@ct.kernel
def add(a, b, c, TILE: ConstInt):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))


@ct.kernel
def transpose(x, y, T: ConstInt):
    """Tile (i, j) of y is tile (j, i) of x, transposed. Grid: y's tiles."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.transpose(ct.load(x, (j, i), (T, T))))


@ct.kernel
def row_load(table, ids, out, D: ConstInt):
    """out[r] = table[ids[r]]: the id is the row index of a (1, D) tile. Grid: one block per row."""
    r = ct.bid(0)
    ct.store(out, (r, 0), ct.load(table, (ct.load(ids, (r,), ()), 0), (1, D)))


@ct.kernel
def rows_gather(table, ids, out, R: ConstInt, D: ConstInt):
    """R rows per block by element indices: a (R, 1) tile of ids against a (1, D) range of columns."""
    b = ct.bid(0)
    rows = ct.load(ids, (b,), (R,))
    cols = ct.arange(D, dtype=ct.int32)
    ct.store(out, (b, 0), ct.gather(table, (rows[:, None], cols[None, :])))


@ct.kernel
def rows_indexed(table, ids, out, R: ConstInt, D: ConstInt):
    """R rows per block with advanced indexing: the ids tile selects rows, a Slice the columns."""
    b = ct.bid(0)
    rows = ct.load(ids, (b,), (R,))
    ct.store(out, (b, 0), ct.load_advanced_indexing(table, (rows, ct.Slice(0, D))))


@ct.kernel
def softmax(x, y, N: ConstInt):
    """One row of N (a power of two, the row length) per block."""
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, N))
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True), rounding_mode=APPROX)
    ct.store(y, (r, 0), ct.truediv(e, ct.sum(e, axis=1, keepdims=True), rounding_mode=APPROX))


@ct.kernel
def softmax_persistent(x, y, N: ConstInt):
    """Rows bid, bid + blocks, ... of N per block: a grid of a few blocks per SM."""
    for r in range(ct.bid(0), x.shape[0], ct.num_blocks(0)):
        t = ct.load(x, (r, 0), (1, N))
        e = ct.exp(t - ct.max(t, axis=1, keepdims=True), rounding_mode=APPROX)
        ct.store(y, (r, 0), ct.truediv(e, ct.sum(e, axis=1, keepdims=True), rounding_mode=APPROX))


@ct.kernel
def layernorm(x, w, b, y, N: ConstInt):
    """One row of N (a power of two, the row length) per block; statistics in float32."""
    r = ct.bid(0)
    t = ct.load(x, (r, 0), (1, N)).astype(ct.float32)
    d = t - ct.sum(t, axis=1, keepdims=True) / N
    rstd = ct.rsqrt(ct.sum(d * d, axis=1, keepdims=True) / N + 1e-5)
    scale = ct.load(w, (0,), (N,)).astype(ct.float32)[None, :]
    shift = ct.load(b, (0,), (N,)).astype(ct.float32)[None, :]
    ct.store(y, (r, 0), (d * rstd * scale + shift).astype(y.dtype))


@ct.kernel
def matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, GROUP: ConstInt):
    """C = A @ B, f32 accumulate, one (TM, TN) tile of C per block. Grid: 1-D, C's tile count; the
    blocks walk C in groups of GROUP tile rows so that neighbours share A and B tiles in L2."""
    tiles_m, tiles_n = ct.cdiv(A.shape[0], TM), ct.cdiv(B.shape[1], TN)
    bid = ct.bid(0)
    first = bid // (GROUP * tiles_n) * GROUP
    height = min(tiles_m - first, GROUP)
    bm = first + bid % (GROUP * tiles_n) % height
    bn = bid % (GROUP * tiles_n) // height
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))


@ct.kernel
def empty(x):
    pass
'''

# On sm_90 (tileiras 13.4) none of these spills; 128x256x64 and 256x128x64 without a hint do, heavily
# (the compiler gives 256 threads all 255 registers), and so does 128x256x32.
CUTILE_MATMUL_CONFIGS = ((128, 256, 64, {"num_worker_warps": 8}), (256, 128, 64, {"num_worker_warps": 8}),
                         (128, 256, 64, {"num_ctas": 2}), (256, 128, 64, {"num_ctas": 2}), (128, 128, 64, {}),
                         (128, 128, 64, {"occupancy": 2}))


@functools.cache
def cutile_kernels():
    """The module of CUTILE_SOURCE, written to a file and imported (raises if cuTile is missing)."""
    importlib.import_module("cuda.tile")
    folder = tempfile.mkdtemp(prefix="peers_cutile_")
    with open(os.path.join(folder, "peers_cutile_kernels.py"), "w") as f:
        f.write(CUTILE_SOURCE)
    sys.path.insert(0, folder)
    return importlib.import_module("peers_cutile_kernels")


@functools.cache
def cutile_hinted(name: str, hints: tuple = ()):
    """A cuTile kernel with compiler hints ((name, value), ...): one object, so one JIT cache, each."""
    kernel = getattr(cutile_kernels(), name)
    return kernel.replace_hints(**dict(hints)) if hints else kernel


def _ct(name, grid, args, **hints):
    import cuda.tile as ct
    kernel, stream = cutile_hinted(name, tuple(sorted((k, v) for k, v in hints.items() if v is not None))), _stream()
    return lambda: ct.launch(stream, grid, kernel, args)


def _label(base, **hints):
    return ", ".join([base] + [f"{k}={v}" for k, v in hints.items() if v is not None])


def _occupancies(cols):
    """Blocks per SM worth trying for a row of `cols` values in registers: without a hint the compiler
    gives 256 threads all 255 registers (one block per SM)."""
    return (4, 8) if cols <= 1024 else (2, 4) if cols <= 4096 else (1, 2)


def _sms():
    import torch
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def cutile_add(p):
    n = p.a.shape[0]
    return {f"TILE={t}": _ct("add", (n // t,), (p.a, p.b, p.y, t)) for t in (1024, 4096)}


def cutile_transpose(p):
    s = p.x.shape[0]
    return {f"T={t}": _ct("transpose", (s // t, s // t), (p.x, p.y, t)) for t in (32, 64)}


def cutile_gather(p):
    rows, width = p.y.shape
    return {"row_load": _ct("row_load", (rows,), (p.table, p.ids, p.y, width)),
            "gather, 8 rows": _ct("rows_gather", (rows // 8,), (p.table, p.ids, p.y, 8, width)),
            "advanced indexing, 8 rows": _ct("rows_indexed", (rows // 8,), (p.table, p.ids, p.y, 8, width))}


def cutile_softmax(p):
    rows, cols = p.x.shape
    out = {_label("row per block", occupancy=o): _ct("softmax", (rows,), (p.x, p.y, cols), occupancy=o)
           for o in (None, *_occupancies(cols))}
    for o in _occupancies(cols):
        out[_label("persistent", occupancy=o)] = _ct("softmax_persistent", (min(rows, _sms() * o),), (p.x, p.y, cols),
                                                     occupancy=o)
    return out


def cutile_layernorm(p):
    rows, cols = p.x.shape
    return {_label("row per block", occupancy=o): _ct("layernorm", (rows,), (p.x, p.w, p.b, p.y, cols), occupancy=o)
            for o in (None, *_occupancies(cols))}


def cutile_matmul(p):
    s = p.a.shape[0]
    return {_label(f"{tm}x{tn}x{tk}", **hints):
            _ct("matmul", (-(-s // tm) * -(-s // tn),), (p.a, p.b, p.y, tm, tn, tk, 8), **hints)
            for tm, tn, tk, hints in CUTILE_MATMUL_CONFIGS}


# -- CuPy: library calls (copyto, take, matmul), an ElementwiseKernel, and RawKernels where CuPy has no
# call for the op, written as a CUDA programmer would: one block per row with the row in registers
# (softmax, layernorm), a shared-memory tile (transpose). They need no header; bfloat16 is handled as
# its bits (CuPy has no bfloat16 type). CuPy arrays are views of the torch tensors.

CUDA_BLOCK_REDUCE = r"""
template <bool MAX> __device__ __forceinline__ float combine(float a, float b) { return MAX ? fmaxf(a, b) : a + b; }

// Every thread gets the block's max or sum of v. THREADS is a multiple of 32.
template <bool MAX> __device__ float block_reduce(float v) {
    __shared__ float partial[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = combine<MAX>(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();  // the previous reduction has read partial
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    v = partial[0];
    for (int w = 1; w < THREADS / 32; ++w) v = combine<MAX>(v, partial[w]);
    return v;
}
"""

CUDA_SOFTMAX = CUDA_BLOCK_REDUCE + r"""
// One block per row of COLS floats; each thread holds PER float4s of it, read once, written once.
#define PER (COLS / (4 * THREADS))

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_rows(const float4* __restrict__ x, float4* __restrict__ y) {
    const long long base = (long long)blockIdx.x * (COLS / 4) + threadIdx.x;
    float4 v[PER];
    float m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        v[k] = x[base + k * THREADS];
        m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    m = block_reduce<true>(m);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        v[k].x = __expf(v[k].x - m);
        v[k].y = __expf(v[k].y - m);
        v[k].z = __expf(v[k].z - m);
        v[k].w = __expf(v[k].w - m);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    const float inv = 1.0f / block_reduce<false>(s);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        v[k].x *= inv;
        v[k].y *= inv;
        v[k].z *= inv;
        v[k].w *= inv;
        y[base + k * THREADS] = v[k];
    }
}
"""

CUDA_LAYERNORM = CUDA_BLOCK_REDUCE + r"""
// One block per row of COLS bfloat16s, statistics in float32; each thread holds PER uint4s (8 values each).
#define PER (COLS / (8 * THREADS))

__device__ __forceinline__ void unpack(uint4 u, float* f) {
    const unsigned int w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

__device__ __forceinline__ unsigned int bf16_bits(float f) {  // round to nearest even (finite values)
    const unsigned int u = __float_as_uint(f);
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

__device__ __forceinline__ uint4 pack(const float* f) {
    uint4 u;
    u.x = bf16_bits(f[0]) | (bf16_bits(f[1]) << 16);
    u.y = bf16_bits(f[2]) | (bf16_bits(f[3]) << 16);
    u.z = bf16_bits(f[4]) | (bf16_bits(f[5]) << 16);
    u.w = bf16_bits(f[6]) | (bf16_bits(f[7]) << 16);
    return u;
}

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm_rows(const uint4* __restrict__ x, const uint4* __restrict__ w, const uint4* __restrict__ b,
               uint4* __restrict__ y) {
    const long long base = (long long)blockIdx.x * (COLS / 8) + threadIdx.x;
    float v[PER][8];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        unpack(x[base + k * THREADS], v[k]);
#pragma unroll
        for (int j = 0; j < 8; ++j) s += v[k][j];
    }
    const float mean = block_reduce<false>(s) / COLS;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            v[k][j] -= mean;
            q += v[k][j] * v[k][j];
        }
    }
    const float rstd = rsqrtf(block_reduce<false>(q) / COLS + 1e-5f);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        float scale[8], shift[8], out[8];
        unpack(w[k * THREADS + threadIdx.x], scale);
        unpack(b[k * THREADS + threadIdx.x], shift);
#pragma unroll
        for (int j = 0; j < 8; ++j) out[j] = v[k][j] * rstd * scale[j] + shift[j];
        y[base + k * THREADS] = pack(out);
    }
}
"""

CUDA_TRANSPOSE = r"""
// y = x.T (ELEMENT: float or short) through a 32 x 33 shared-memory tile (the padding avoids bank
// conflicts); blocks of 32 x 8 threads.
extern "C" __global__ void transpose(const ELEMENT* __restrict__ x, ELEMENT* __restrict__ y, int rows, int cols) {
    __shared__ ELEMENT tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int r = blockIdx.y * 32 + k;
        if (r < rows && c < cols) tile[k][threadIdx.x] = x[(long long)r * cols + c];
    }
    __syncthreads();
    const int r = blockIdx.y * 32 + threadIdx.x;  // a row of x is a column of y
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int yc = blockIdx.x * 32 + k;
        if (yc < cols && r < rows) y[(long long)yc * rows + r] = tile[threadIdx.x][k];
    }
}
"""

CUDA_EMPTY = r'extern "C" __global__ void empty(float* x) {}'


def macros(**values) -> tuple[str, ...]:
    """NVRTC options defining the macros: macros(COLS=4096) == ("-DCOLS=4096",)."""
    return tuple(f"-D{k}={v}" for k, v in values.items())


def row_threads(cols: int, per_vector: int) -> list[int]:
    """Block sizes for a row of `cols` held in registers: 1 to 8 vectors of `per_vector` values a thread."""
    return [t for t in (128, 256, 512, 1024) if cols % (per_vector * t) == 0 and 1 <= cols // (per_vector * t) <= 8]


def _cupy_view(t):
    import cupy
    import torch
    return cupy.asarray(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)


def cupy_copy(p):
    import cupy
    x, y = _cupy_view(p.x), _cupy_view(p.y)
    return lambda: cupy.copyto(y, x)


@functools.cache
def _cupy_add_kernel():
    import cupy
    return cupy.ElementwiseKernel("float32 a, float32 b", "float32 y", "y = a + b", "peer_add")


def cupy_add(p):
    kernel, a, b, y = _cupy_add_kernel(), _cupy_view(p.a), _cupy_view(p.b), _cupy_view(p.y)
    return lambda: kernel(a, b, y)


def cupy_transpose(p):
    import cupy
    x, y = _cupy_view(p.x), _cupy_view(p.y)
    rows, cols = x.shape
    element = "float" if x.itemsize == 4 else "short"
    kernel = cupy.RawKernel(CUDA_TRANSPOSE, "transpose", options=macros(ELEMENT=element))
    shape = (cupy.int32(rows), cupy.int32(cols))  # a Python int would be passed as 64 bits
    library = "copyto(y, x.T)" + ("" if x.itemsize == 4 else " on int16 views")
    return {"RawKernel, 32x32 tile": lambda: kernel((cols // 32, rows // 32), (32, 8), (x, y, *shape)),
            library: lambda: cupy.copyto(y, x.T)}


def cupy_gather(p):
    import cupy
    table, ids, y = _cupy_view(p.table), _cupy_view(p.ids), _cupy_view(p.y)
    return lambda: cupy.take(table, ids, axis=0, out=y)


def _cupy_rows(source, name, arrays, cols, per_vector):
    """One RawKernel configuration per block size: one block per row."""
    import cupy
    out = {}
    for t in row_threads(cols, per_vector):
        kernel = cupy.RawKernel(source, name, options=macros(COLS=cols, THREADS=t))
        out[f"threads={t}"] = lambda kernel=kernel, t=t: kernel((arrays[0].shape[0],), (t,), arrays)
    return out


def cupy_softmax(p):
    return _cupy_rows(CUDA_SOFTMAX, "softmax_rows", (_cupy_view(p.x), _cupy_view(p.y)), p.x.shape[1], 4)


def cupy_layernorm(p):
    arrays = tuple(_cupy_view(t) for t in (p.x, p.w, p.b, p.y))
    return _cupy_rows(CUDA_LAYERNORM, "layernorm_rows", arrays, p.x.shape[1], 8)


def cupy_matmul(p):
    """cupy.matmul (cuBLAS) on float16 copies of the bfloat16 inputs (exact for these values)."""
    import cupy
    import torch
    p.a16, p.b16 = p.a.half(), p.b.half()
    p.y = torch.empty_like(p.a16)  # the check reads the float16 result
    a, b, c = cupy.asarray(p.a16), cupy.asarray(p.b16), cupy.asarray(p.y)
    return lambda: cupy.matmul(a, b, out=c)


# -- CuPy's user-defined kernels: one definition, run by CuPy and by tileworkbench (a few tile sizes,
#    the fastest kept, as a sweep would choose)

SQUARED_DIFF = ("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")
L2NORM = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


def _tw_user_kernel(kernel, args, configs, **call):
    launch = kernel.launch_plan(*args, **call)
    return {",".join(f"{k}={v}" for k, v in c.items()): _tw(launch.kernel, launch.grid_of(c), launch.args_of(c))
            for c in configs}


def tw_cupy_elementwise(p):
    import tileworkbench
    args = tuple(_cupy_view(t) for t in (p.a, p.b, p.y))
    return _tw_user_kernel(tileworkbench.ElementwiseKernel(*SQUARED_DIFF), args,
                           [{"TILE": t} for t in (1024, 2048, 4096)])


def tw_cupy_reduction(p):
    import tileworkbench
    args = (_cupy_view(p.x), _cupy_view(p.y))
    return _tw_user_kernel(tileworkbench.ReductionKernel(*L2NORM), args,
                           [{"TM": tm, "TK": tk} for tm, tk in ((1, 1024), (2, 1024), (4, 512), (8, 512))], axis=1)


def cupy_own_elementwise(p):
    import cupy
    kernel, args = cupy.ElementwiseKernel(*SQUARED_DIFF), tuple(_cupy_view(t) for t in (p.a, p.b, p.y))
    return lambda: kernel(*args)


def cupy_own_reduction(p):
    import cupy
    kernel, x, y = cupy.ReductionKernel(*L2NORM), _cupy_view(p.x), _cupy_view(p.y)
    return lambda: kernel(x, y, axis=1)


# op -> (implementation, library, function), one row per op: what --impl filters and the cases run
IMPLEMENTATIONS = {
    "copy": [("CuPy copyto", "CuPy", cupy_copy), ("torch copy_", "torch", torch_copy)],
    "add": [("tileworkbench", "tileworkbench", tw_add), ("cuTile", "cuTile", cutile_add),
            ("Triton", "Triton", triton_add), ("CuPy ElementwiseKernel", "CuPy", cupy_add),
            ("torch.add", "torch", torch_add)],
    "transpose": [("tileworkbench", "tileworkbench", tw_transpose), ("cuTile", "cuTile", cutile_transpose),
                  ("Triton", "Triton", triton_transpose), ("CuPy", "CuPy", cupy_transpose),
                  ("torch copy_(x.t())", "torch", torch_transpose)],
    "gather": [("tileworkbench", "tileworkbench", tw_gather), ("cuTile", "cuTile", cutile_gather),
               ("Triton", "Triton", triton_gather), ("CuPy take", "CuPy", cupy_gather),
               ("torch index_select", "torch", torch_gather)],
    "softmax": [("tileworkbench", "tileworkbench", tw_softmax), ("cuTile", "cuTile", cutile_softmax),
                ("Triton", "Triton", triton_softmax), ("CuPy RawKernel", "CuPy", cupy_softmax),
                ("torch.softmax", "torch", torch_softmax)],
    "layernorm": [("tileworkbench", "tileworkbench", tw_layernorm), ("cuTile", "cuTile", cutile_layernorm),
                  ("Triton", "Triton", triton_layernorm), ("CuPy RawKernel", "CuPy", cupy_layernorm),
                  ("torch layer_norm", "torch", torch_layernorm)],
    "matmul": [("tileworkbench", "tileworkbench", tw_matmul), ("cuTile", "cuTile", cutile_matmul),
               ("Triton (autotuned)", "Triton", triton_matmul),
               ("CuPy matmul (f16: no bf16 in CuPy)", "CuPy", cupy_matmul), (CUBLAS, "torch", torch_matmul)],
    "cupy_elementwise": [("tileworkbench ElementwiseKernel", "tileworkbench", tw_cupy_elementwise),
                         ("CuPy ElementwiseKernel", "CuPy", cupy_own_elementwise)],
    "cupy_reduction": [("tileworkbench ReductionKernel", "tileworkbench", tw_cupy_reduction),
                       ("CuPy ReductionKernel", "CuPy", cupy_own_reduction)],
}
FAMILIES = ("tileworkbench", "cuTile", "Triton", "CuPy", "torch")


# ---- compile, cache and launch latency -------------------------------------------------------------
# Each probe process imports its library before the clock starts, then times the first launch of a
# small vector add (compile, or load from the disk cache, then launch and synchronize) and the second
# (the same process's in-memory cache). A sample runs a probe twice on one fresh cache folder: first
# cold (every library's cache pointed at the empty folder), then again in a new process (a disk hit).

COLD, DISK, MEMORY = ("cold compile: first launch, empty caches, new process",
                      "disk-cache hit: first launch, new process",
                      "same-process cache hit: second launch")
OVERHEAD = "host launch overhead, empty kernel, back to back"

_TIME_TWO_LAUNCHES = """
import json, time
def report(launch, sync):
    times = []
    for _ in range(2):
        t = time.perf_counter(); launch(); sync(); times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"first": times[0], "second": times[1]}))
"""

PROBES = {
    "tileworkbench": """
import torch, tileworkbench.tile as ct
import tileworkbench.runtime.launch  # the GPU runtime: imported before the clock, as the others import theirs
from tileworkbench.kernels import vector_add
x = torch.zeros(1024, device="cuda"); s = torch.cuda.current_stream(); torch.cuda.synchronize()
report(lambda: ct.launch(s, (1,), vector_add, (x, x, x, 1024)), torch.cuda.synchronize)
""",
    "cuTile": """
import torch, cuda.tile as ct
@ct.kernel
def add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
x = torch.zeros(1024, device="cuda"); s = torch.cuda.current_stream(); torch.cuda.synchronize()
report(lambda: ct.launch(s, (1,), add, (x, x, x, 1024)), torch.cuda.synchronize)
""",
    "Triton": """
import torch, triton, triton.language as tl
@triton.jit
def add(a, b, c, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c + o, tl.load(a + o, mask=o < n) + tl.load(b + o, mask=o < n), mask=o < n)
x = torch.zeros(1024, device="cuda"); torch.cuda.synchronize()
report(lambda: add[(1,)](x, x, x, 1024, BLOCK=1024), torch.cuda.synchronize)
""",
    "CuPy RawKernel": """
import cupy as cp
source = r'''extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }'''
x = cp.zeros(1024, cp.float32); cp.cuda.Device().synchronize()
report(lambda: cp.RawKernel(source, "add")((1,), (1024,), (x, x, x, cp.int32(1024))), cp.cuda.Device().synchronize)
""",
}


def _row(measure: str, impl: str, values: list[float] | None = None, error: str | None = None) -> dict:
    if error is not None or not values:
        return {"measure": measure, "impl": impl, "status": "failed", "error": error or "no sample"}
    ordered = sorted(values)
    return {"measure": measure, "impl": impl, "status": "ok", "ms": ordered[len(ordered) // 2], "values": values}


def _probe(script: str, cache: str, repo: str) -> dict:
    env = dict(os.environ, TILEWORKBENCH_CACHE_DIR=cache, TRITON_CACHE_DIR=cache, CUPY_CACHE_DIR=cache,
               CUDA_TILE_CACHE_DIR=cache, CUDA_CACHE_PATH=cache, HOME=cache, XDG_CACHE_HOME=cache,
               PYTHONPATH=os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode:  # the exception's line, not the traceback
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"exit status {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compile_latency(repo: str, samples: int, impls: list[str] | None = None) -> list[dict]:
    """Cold, disk-cache and in-memory first-launch latency of each probe, `samples` times each."""
    rows = []
    for impl, body in PROBES.items():
        if impls and not any(impl.lower().startswith(w.lower()) for w in impls):
            continue
        cold, disk, memory, error = [], [], [], None
        for _ in range(samples):
            cache = tempfile.mkdtemp(prefix="peers_cache_")
            script = os.path.join(cache, "probe.py")  # a file: Triton and cuTile read their kernels' source
            with open(script, "w") as f:
                f.write(_TIME_TWO_LAUNCHES + body)
            try:
                first = _probe(script, cache, repo)
                again = _probe(script, cache, repo)
            except Exception as e:
                error = describe(e)
                break
            cold.append(first["first"])
            disk.append(again["first"])
            memory += [first["second"], again["second"]]
        rows += [_row(COLD, impl, cold, error), _row(DISK, impl, disk, error), _row(MEMORY, impl, memory, error)]
    return rows


def _empty_launchers(families: list[str] | None) -> dict:
    """family -> a function making run() that launches that library's empty kernel on a small tensor."""
    import torch
    x = torch.zeros(128, device="cuda")

    def tileworkbench():
        stream = torch.cuda.current_stream()
        return lambda: tw.launch(stream, (1,), _tw_empty, (x,))

    def cutile():
        import cuda.tile as ct
        empty, stream = cutile_kernels().empty, torch.cuda.current_stream()
        return lambda: ct.launch(stream, (1,), empty, (x,))

    def triton():
        empty = triton_kernels().empty
        return lambda: empty[(1,)](x)

    def cupy():
        import cupy
        kernel, cx = cupy.RawKernel(CUDA_EMPTY, "empty"), cupy.asarray(x)
        return lambda: kernel((1,), (32,), (cx,))
    makers = {"tileworkbench": tileworkbench, "cuTile": cutile, "Triton": triton, "CuPy RawKernel": cupy}
    return {k: v for k, v in makers.items() if not families or any(k.lower().startswith(f.lower()) for f in families)}


@tw.kernel
def _tw_empty(x):
    pass


def launch_overhead(launches: int, families: list[str] | None = None) -> list[dict]:
    """Host milliseconds per launch of an empty kernel (one array argument), best of 3 rounds."""
    import torch
    rows = []
    for impl, make in _empty_launchers(families).items():
        try:
            run = make()
            run()
            torch.cuda.synchronize()
            rounds = []
            for _ in range(3):
                t = time.perf_counter()
                for _ in range(launches):
                    run()
                torch.cuda.synchronize()
                rounds.append((time.perf_counter() - t) * 1e3 / launches)
            rows.append({"measure": OVERHEAD, "impl": impl, "status": "ok", "ms": min(rounds), "values": rounds})
        except Exception as e:
            rows.append(_row(OVERHEAD, impl, error=describe(e)))
    return rows


# ---- the system: versions, commit, clocks (read with nvidia-smi, never changed) --------------------

_STATE_FIELDS = ("clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "temperature.gpu", "power.draw",
                 "power.limit", "pstate", "clocks_event_reasons.active")


def _run(*command: str, cwd: str | None = None) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def gpu_state() -> dict:
    """The first GPU's clocks (MHz), temperature (C), power (W), P-state and clock-event reasons now."""
    for fields in (_STATE_FIELDS, _STATE_FIELDS[:-1]):  # older drivers lack the last field
        out = _run("nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", "-i", "0")
        if out:
            return dict(zip(fields, (v.strip() for v in out.splitlines()[0].split(","))))
    return {"error": "nvidia-smi gave nothing"}


def commit(repo: str) -> str:
    """The tileworkbench commit: $TILEWORKBENCH_COMMIT, else git's, else .git/HEAD read directly."""
    if os.environ.get("TILEWORKBENCH_COMMIT"):
        return os.environ["TILEWORKBENCH_COMMIT"]
    found = _run("git", "rev-parse", "--short=12", "HEAD", cwd=repo)
    if found:
        dirty = _run("git", "status", "--porcelain", "--untracked-files=no", cwd=repo)
        return found + ("-dirty" if dirty else "")
    try:
        with open(os.path.join(repo, ".git", "HEAD")) as f:
            head = f.read().strip()
        if head.startswith("ref: "):
            with open(os.path.join(repo, ".git", head[5:])) as f:
                head = f.read().strip()
        return head[:12]
    except OSError:
        return "unknown (no git; set TILEWORKBENCH_COMMIT)"


def _version(module: str) -> str:
    try:
        return str(importlib.import_module(module).__version__)
    except Exception as e:  # noqa: BLE001 - the version line says why
        return f"unavailable ({type(e).__name__}: {' '.join(str(e).split())[:120]})"


def environment(repo: str) -> dict:
    import torch
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    env = {"device": props.name, "compute capability": f"{props.major}.{props.minor}",
           "sms": props.multi_processor_count,
           "memory GiB": round(props.total_memory / 2 ** 30, 1), "l2 MiB": round(props.L2_cache_size / 2 ** 20, 1),
           "driver": _run("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"),
           "python": sys.version.split()[0], "torch": torch.__version__, "cuda (torch)": torch.version.cuda,
           "triton": _version("triton"), "cupy": _version("cupy"), "cuda.tile": _version("cuda.tile"),
           "tileworkbench commit": commit(repo)}
    try:
        import cupy
        v = cupy.cuda.runtime.driverGetVersion()
        env["cuda_driver"] = f"{v // 1000}.{v % 1000 // 10}"
        r = cupy.cuda.runtime.runtimeGetVersion()
        env["cuda (cupy)"] = f"{r // 1000}.{r % 1000 // 10}"
    except Exception as e:  # noqa: BLE001
        env["cuda_driver"] = f"unavailable ({type(e).__name__})"
    try:
        from tileworkbench.runtime.nvrtc import nvrtc_version
        env["nvrtc (tileworkbench)"] = ".".join(map(str, nvrtc_version()))
    except Exception as e:  # noqa: BLE001
        env["nvrtc (tileworkbench)"] = f"unavailable ({type(e).__name__})"
    found = re.search(r"V(\d+\.\d+\.\d+)", _run("tileiras", "--version") or "")
    env["tileiras"] = found.group(1) if found else "not on PATH (source .cutile/setup.sh)"
    return env


# ---- the chart ---------------------------------------------------------------------------------------

COLORS = {"tileworkbench": "tab:blue", "cuTile": "tab:green", "Triton": "tab:orange", "CuPy": "tab:red",
          "torch": "tab:purple"}


def speed_bars(doc: dict) -> tuple[list[str], dict[str, list[float]]]:
    """(case titles, family -> its best `x_best` per case, 0 where it has none): the left panel's data."""
    titles = [c["title"] for c in doc["cases"]]
    families = [f for f in COLORS if any(r["family"] == f for c in doc["cases"] for r in c["results"])]
    bars = {f: [max((r.get("x_best", 0) for r in c["results"] if r["family"] == f and r["status"] == "ok"), default=0)
                for c in doc["cases"]] for f in families}
    return titles, bars


def latency_bars(doc: dict) -> tuple[list[str], dict[str, list[float]]]:
    """(measures, family -> its median ms per measure, 0 where none): the right panel's data."""
    measures = list(dict.fromkeys(r["measure"] for r in doc["latency"]))
    families = list(dict.fromkeys(r["impl"].split()[0] for r in doc["latency"]))
    bars = {f: [next((r["ms"] for r in doc["latency"] if r["measure"] == m and r["impl"].split()[0] == f
                      and r["status"] == "ok"), 0) for m in measures] for f in families}
    return measures, bars


def _grouped(ax, labels, bars):
    height = 0.8 / max(1, len(bars))
    for k, (family, values) in enumerate(bars.items()):
        ax.barh([i + k * height for i in range(len(labels))], values, height, label=family,
                color=COLORS.get(family))
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(labels))], labels, fontsize=8)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="lower right")


def draw_chart(doc: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    titles, speed = speed_bars(doc)
    measures, latency = latency_bars(doc)
    panels = 2 if any(any(values) for values in latency.values()) else 1
    fig, axes = plt.subplots(1, panels, figsize=(8 * panels, 0.5 * max(len(titles), 6) + 1.5), squeeze=False)
    left = axes[0][0]
    _grouped(left, titles, speed)
    left.axvline(1.0, color="gray", linewidth=0.8)
    left.set_xlabel("speed relative to the case's fastest implementation (1 = fastest)")
    if panels == 2:
        right = axes[0][1]
        _grouped(right, [m.replace(": ", ":\n") for m in measures], latency)
        right.set_xscale("log")
        right.set_xlabel("milliseconds (log scale; median)")
    env = doc["environment"]
    fig.suptitle(f"{env.get('device', '?')}, driver {env.get('driver', '?')}, {doc['date'][:10]}"
                 f"{' (quick)' if doc['quick'] else ''}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- the command ----------------------------------------------------------------------------------

LATENCY_KEYS = ("compile", "launch")
FULL = {"rounds": 5, "repetitions": 10, "matmul_repetitions": 4, "warmup": 5, "tune_repetitions": 5,
        "compile_samples": 2, "launches": 20000}
QUICK = {"rounds": 2, "repetitions": 3, "matmul_repetitions": 2, "warmup": 2, "tune_repetitions": 2,
         "compile_samples": 1, "launches": 2000}


def parser() -> argparse.ArgumentParser:
    keys = [c.key for c in all_cases(quick=False)] + list(LATENCY_KEYS)
    ap = argparse.ArgumentParser(
        prog="python3 benchmarks/peers.py",
        description="Time tileworkbench against cuTile, Triton, CuPy and PyTorch (cuBLAS) on this GPU, each "
                    "implementation checked on fresh random inputs before it is timed. Writes "
                    "DATE-DEVICE-peers.{json,txt,png} to --out. For cuTile, first `source .cutile/setup.sh` "
                    "(made by benchmarks/prepare_cutile.sh).")
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the results (default: $OUT, else .)")
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions: a smoke test")
    ap.add_argument("--only", default="", metavar="CASE[,CASE]",
                    help=f"cases to run, by key or its first part (softmax = every softmax case): {', '.join(keys)}; "
                         "memory-bound cases bring the copy case along (their ratios' ceiling)")
    ap.add_argument("--impl", default="", metavar="IMPL[,IMPL]",
                    help=f"libraries to run: {', '.join(FAMILIES)} (any case); the copy case and cuBLAS matmul "
                         "always run, as the references of the ratios")
    ap.add_argument("--rounds", type=int, help="round-robin rounds per case (default 5; quick 2)")
    return ap


def words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


def entries_for(case: Case, families: list[str]) -> list[Entry]:
    """The case's implementations that run: those of `families` (all if empty) and the references."""
    return [Entry(name, family, offer) for name, family, offer in IMPLEMENTATIONS[case.op]
            if not families or family.lower() in families or case.kind == "copy" or name == CUBLAS]


def run_case(case: Case, families: list[str], timer: Timer, settings: dict) -> dict:
    """Check, tune and time every implementation of one case: its part of the results document."""
    started = time.perf_counter()
    entries = entries_for(case, families)
    state = gpu_state()
    for entry in entries:
        prepare(entry, case, timer, tune_reps=settings["tune_repetitions"], warmup=settings["warmup"])
    reps = settings["matmul_repetitions" if case.kind == "matmul" else "repetitions"]
    time_round_robin(entries, timer, rounds=settings["rounds"], repetitions=reps)
    results = [entry.result() for entry in entries]
    del entries
    _release_memory()
    return {"key": case.key, "title": case.title, "kind": case.kind, "params": case.params, "bytes": case.bytes,
            "flops": case.flops, "tolerance": case.tolerance, "gpu_state": state,
            "seconds": round(time.perf_counter() - started, 1), "results": results}


def _release_memory() -> None:
    import torch
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    try:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
    except Exception:  # noqa: BLE001 - without CuPy there is nothing of it to free
        pass


def write_results(doc: dict, out: str) -> list[str]:
    """The JSON document, the printed table and the chart, named by date and device, in `out`."""
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, result_stem(doc["date"], doc["environment"].get("device", "gpu"), doc["quick"]))
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(stem + ".txt", "w") as f:
        f.write(format_table(doc))
    written = [stem + ".json", stem + ".txt"]
    try:
        draw_chart(doc, stem + ".png")
        written.append(stem + ".png")
    except Exception:  # noqa: BLE001 - the numbers are written; a chart problem is only reported
        traceback.print_exc()
    return written


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    only, families = words(args.only), [f.lower() for f in words(args.impl)]
    unknown = [f for f in families if f not in {x.lower() for x in FAMILIES}]
    if unknown:
        parser().error(f"unknown --impl {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    import torch
    if not torch.cuda.is_available():
        print("benchmarks/peers.py needs a CUDA GPU (and PyTorch, CuPy)", file=sys.stderr)
        return 2
    settings = dict(QUICK if args.quick else FULL, **({"rounds": args.rounds} if args.rounds else {}))
    started = time.perf_counter()
    doc = {"schema": SCHEMA, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "quick": args.quick, "settings": settings,
           "gpu_state": {"before": gpu_state()}, "environment": environment(REPO), "cases": [], "latency": []}
    print(f"# {json.dumps(doc['environment'])}", flush=True)
    chosen = [c for c in all_cases(args.quick) if selected(c.key, only)]
    if chosen and chosen[0].kind != "copy" and any(c.kind == "memory" for c in chosen):
        chosen.insert(0, all_cases(args.quick)[0])
    timer = Timer()
    for case in chosen:
        try:
            doc["cases"].append(run_case(case, families, timer, settings))
        except Exception:  # noqa: BLE001 - one case's trouble must not lose the others
            traceback.print_exc()
        print(f"# {case.title}: done at {time.perf_counter() - started:.0f} s", flush=True)
    latency_families = [f for f in families if f != "torch"]  # torch compiles nothing of its own here
    measures = {"compile": lambda: compile_latency(REPO, settings["compile_samples"], latency_families),
                "launch": lambda: launch_overhead(settings["launches"], latency_families)}
    for key, measure in measures.items():
        if selected(key, only) and (latency_families or not families):
            try:
                doc["latency"] += measure()
            except Exception as e:  # noqa: BLE001 - e.g. a CUDA context lost earlier: recorded, not fatal
                traceback.print_exc()
                doc["latency"].append({"measure": key, "impl": "every", "status": "failed", "error": describe(e)})
    doc["gpu_state"]["after"] = gpu_state()
    doc["seconds"] = round(time.perf_counter() - started, 1)
    add_ratios(doc["cases"])
    written = write_results(doc, args.out)
    print()
    print(format_table(doc))
    print(f"# {doc['seconds']:.0f} s; written: {', '.join(written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
