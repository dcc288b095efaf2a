"""tileworkbench against cuTile, Triton, CuPy and PyTorch (cuBLAS, SDPA) on one GPU, in one command:

    bash benchmarks/prepare_cutile.sh; source .cutile/setup.sh    # cuTile (its samples/ folder: .cutile/samples)
    bash benchmarks/prepare_triton_tutorials.sh                    # Triton's tutorials in .triton_tutorials
    python3 benchmarks/peers.py --out DIR [--quick] [--only attention,matmul] [--impl cutile,triton]
    python3 benchmarks/peers.py --dry-run                          # no GPU: every path that can run without one

Every peer runs its own project's published kernel for a case: Triton's tutorials (02 fused softmax,
03 matrix multiplication autotuned, 05 layer norm forward, 06 fused attention forward), loaded from
--triton-tutorials (they are not in Triton's wheel); cuTile's samples unchanged, from
--cutile-samples, under cuTile and, through tileworkbench's `cuda.tile` binding, under tileworkbench;
torch's operators (cuBLAS matmul; SDPA with the backend PyTorch picks by default, and with the cuDNN and
the flash backends forced, the fastest of them the attention reference). Beside them, kernels written here in
each peer's language ("peers.py" in the name), kept where they beat the published one: e.g. cuTile's
matmul without the sample's padded loads. A published kernel whose folder is missing is a skipped row.

Cases: device-to-device copy (the ceiling), vector add, transposes (f32, bf16, f16), row gather, row
softmax, layernorm forward bf16, matmul f16 and bf16 at 4096^3 and 8192^3, attention forward
(B=4, H=16, S=4096; d 64 and 128; causal or not; f16 and bf16), the rest of cuTile's single-GPU
samples (vector add plain and by gather, batch matmul, layernorm backward, FFT, MoE), CuPy's
user-defined kernels run by CuPy and by tileworkbench, the memory-bound kernels of benchmarks/idioms.py
(bf16 and f32; one source under cuTile and tileworkbench); then compile latency (cold, disk-cache hit,
same-process hit), host launch overhead and a new process's first launch (benchmarks/launch_overhead.py).

Method: every implementation is checked on fresh random inputs against a float32/float64 torch
reference (its output poisoned with NaN first) before it is timed; one that fails or raises is
reported with its reason and not timed. Where an implementation has a few configurations (tile
shapes, compiler hints) each is checked and briefly timed and the fastest is kept (Triton's
autotuned kernels tune themselves). Timing: CUDA events around each launch after warm-up, the L2
flushed before each, the implementations of a case interleaved over rounds; median and p10/p90.
GPU clocks, temperature and power are logged before, per case and after (never changed).

Results, in --out: DATE-DEVICE-peers.json (`validate` checks its shape), .txt (the printed table:
ms, GB/s or TFLOP/s; ratios to the copy's bandwidth, cuBLAS, SDPA, cuTile and the case's fastest;
then the targets, each with its measured ratio and PASS or MISS) and .png.

Sections: results (pure: statistics, ratios, targets, table, names), cases, measuring, the
implementations (one table, IMPLEMENTATIONS, from a case's op to each library's function), latency,
the system, the chart, the command.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import importlib
import json
import math
import os
import re
import signal
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

SCHEMA = "tileworkbench-peers/3"
KINDS = ("copy", "memory", "matmul", "attention", "sample")
CUBLAS = "torch.matmul (cuBLAS)"  # the implementation matmul ratios are taken against
SDPA = "torch SDPA (flash backend)"  # attention ratios are to the fastest SDPA backend of the case
SDPA_DEFAULT, SDPA_CUDNN = "torch SDPA (default backend)", "torch SDPA (cuDNN backend)"
SDPA_ROWS = (SDPA_DEFAULT, SDPA_CUDNN, SDPA)
CUTILE_SAMPLE, ON_TILEWORKBENCH = "cuTile sample ", "tileworkbench, "  # "cuTile sample MatMul.py" and its twin
TRITON_TUTORIAL = "Triton tutorial "


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


def _fastest(rows: list[dict]) -> float | None:
    return min((r["ms"] for r in rows), default=None)


def add_ratios(cases: list[dict]) -> None:
    """Throughput and ratios of every timed result, in place: GB/s (cases that give their bytes) and
    `x_copy` against the fastest copy (memory-bound cases); TFLOP/s (cases that give their flops);
    `x_cublas` (matmul) and `x_sdpa` (attention: the fastest SDPA backend) against torch; `x_cutile` against the case's fastest
    cuTile result; `x_best` against the case's fastest result (1 = fastest). A ratio above 1 is faster."""
    for case in cases:
        for r in _timed(case):
            if case["bytes"] and case["kind"] in ("copy", "memory", "sample"):
                r["gbs"] = case["bytes"] / r["ms"] / 1e6
            if case["flops"]:
                r["tflops"] = case["flops"] / r["ms"] / 1e9
    copy_gbs = max((r["gbs"] for c in cases if c["kind"] == "copy" for r in _timed(c)), default=None)
    for case in cases:
        timed = _timed(case)
        references = {"x_best": _fastest(timed), "x_cutile": _fastest([r for r in timed if r["family"] == "cuTile"]),
                      "x_cublas": _fastest([r for r in timed if r["impl"] == CUBLAS]),
                      "x_sdpa": _fastest([r for r in timed if r["impl"] in SDPA_ROWS])}
        for r in timed:
            r.update({key: ms / r["ms"] for key, ms in references.items() if ms})
            if case["kind"] in ("copy", "memory") and copy_gbs and "gbs" in r:
                r["x_copy"] = r["gbs"] / copy_gbs


# ---- targets: what tileworkbench must reach, each measured in the same run ---------------------------

@dataclass(frozen=True)
class Target:
    """tileworkbench's fastest result in each case `applies` to must be at least `at_least` times as
    fast as the fastest of the rows `versus` picks there, or, where `versus` is None, reach `at_least`
    times the copy's bandwidth."""
    name: str
    applies: Callable          # (case) -> bool
    versus: Callable | None    # (row) -> bool
    at_least: float


# Besides these, each cuTile sample (AttentionFMHA among them) under tileworkbench >= 1.0x under cuTile.
def _idiom_16_bit(case: dict) -> bool:
    return case["key"].startswith("idiom_") and not case["key"].endswith("_f32")


TARGETS = (
    Target("attention >= 1.0x SDPA (fastest backend)", lambda c: c["kind"] == "attention",
           lambda r: r["impl"] in SDPA_ROWS, 1.0),
    Target("matmul >= 1.0x cuBLAS", lambda c: c["kind"] == "matmul", lambda r: r["impl"] == CUBLAS, 1.0),
    Target("matmul >= 1.0x Triton's tutorial (autotuned)", lambda c: c["kind"] == "matmul",
           lambda r: r["impl"].startswith(TRITON_TUTORIAL), 1.0),
    Target("layernorm bf16, 16-bit transposes >= 0.95x copy",
           lambda c: c["key"] in ("layernorm", "transpose_bf16", "transpose_f16"), None, 0.95),
    Target("16-bit idioms >= 1.0x cuTile", _idiom_16_bit, lambda r: r["family"] == "cuTile", 1.0),
    Target("16-bit idioms >= 0.9x copy", _idiom_16_bit, None, 0.9),
)
# FlashAttention-3's published forward speed on an H100 80GB SXM5 (Shah et al., 2024, arXiv:2407.08608):
# up to 740 TFLOP/s in FP16; 638 TFLOP/s at head dim 128, sequence 4096, not causal. Printed beside the
# attention rows: an H200 has the H100's tensor cores and more memory bandwidth.
FLASH_ATTENTION_3_H100 = "FlashAttention-3, published (H100 SXM5, fp16, d128, seq 4k, not causal): 638 TFLOP/s"
FIRST_LAUNCH_LIMIT_MS = 60.0


def _target_row(name: str, where: str, measured: float | None, at_least: float, shown: str | None = None) -> dict:
    verdict = "not measured" if measured is None else "PASS" if measured >= at_least else "MISS"
    return {"target": name, "case": where, "measured": measured,
            "shown": shown or ("-" if measured is None else f"{measured:.2f}x"),
            "verdict": verdict}


def _case_targets(case: dict) -> list[dict]:
    timed, rows = _timed(case), []
    own = [r for r in timed if r["family"] == "tileworkbench"]
    for target in TARGETS:
        if not target.applies(case):
            continue
        if target.versus is None:
            measured = max((r["x_copy"] for r in own if "x_copy" in r), default=None)
        else:
            versus, mine = _fastest([r for r in timed if target.versus(r)]), _fastest(own)
            measured = versus / mine if versus and mine else None
        rows.append(_target_row(target.name, case["title"], measured, target.at_least))
    for r in case["results"]:  # each cuTile sample: under tileworkbench at least as fast as under cuTile
        if r["family"] == "cuTile" and r["impl"].startswith(CUTILE_SAMPLE):
            twin = [t["ms"] for t in timed if t["impl"] == ON_TILEWORKBENCH + r["impl"]]
            measured = r["ms"] / twin[0] if twin and r["status"] == "ok" else None
            rows.append(_target_row(f"{r['impl'][len(CUTILE_SAMPLE):]} >= 1.0x cuTile", case["title"], measured, 1.0))
    return rows


def targets(doc: dict) -> list[dict]:
    """Every target of every case it applies to, with tileworkbench's measured ratio and PASS, MISS or
    'not measured' (a side failed or did not run); then the launch targets. Needs add_ratios first."""
    rows = [row for case in doc["cases"] for row in _case_targets(case)]
    latency = {(r["measure"], r["impl"]): r["ms"] for r in doc["latency"] if r["status"] == "ok"}
    own, cutile = (latency.get((OVERHEAD, f"{family}, 1 PyTorch tensor")) for family in ("tileworkbench", "cuTile"))
    rows.append(_target_row("host launch overhead <= cuTile's", "empty kernel, back to back",
                            cutile / own if own and cutile else None, 1.0,
                            f"{own * 1e3:.1f} us vs {cutile * 1e3:.1f} us" if own and cutile else "-"))
    first = latency.get((FIRST_LAUNCH, "tileworkbench"))
    rows.append(_target_row(f"first launch, warm disk cache, import included <= {FIRST_LAUNCH_LIMIT_MS:.0f} ms",
                            "new process", FIRST_LAUNCH_LIMIT_MS / first if first else None, 1.0,
                            f"{first:.1f} ms" if first else "-"))
    return rows


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
        elif r.get("status") in ("failed", "skipped"):
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


RATIO_COLUMNS = (("x_copy", "xcopy"), ("x_cublas", "xcuBLAS"), ("x_sdpa", "xSDPA"), ("x_cutile", "xcuTile"),
                 ("x_best", "xbest"))


def format_table(doc: dict) -> str:
    """The printed report: environment, clocks, every case's results with ratios, latency, targets."""
    env = doc["environment"]
    lines = [f"{env.get('device', '?')}  driver {env.get('driver', '?')}  CUDA {env.get('cuda_driver', '?')}  "
             f"{doc['date']}{'  (' + doc['settings'].get('size', 'quick') + ' sizes)' if doc['quick'] else ''}",
             "  ".join(f"{k} {env[k]}" for k in ("torch", "triton", "cupy", "cuda.tile", "tileiras",
                                                 "tileworkbench commit") if k in env),
             "  ".join(f"{k}: {env[k]}" for k in ("Triton tutorials", "cuTile samples") if k in env),
             f"GPU before: {doc['gpu_state'].get('before')}",
             f"GPU after:  {doc['gpu_state'].get('after')}",
             "Names: 'Triton tutorial F' and 'cuTile sample F' run the peer's published kernel (file F, unchanged); "
             "'tileworkbench, cuTile sample F' runs that sample on tileworkbench; '(peers.py)' marks a kernel "
             "written here in the peer's language. Ratios: > 1 is faster than the reference.", ""]
    head = (f"{'implementation':50} {'config':24} {'ms':>9} {'p10-p90':>17} {'GB/s':>6} {'TFLOP/s':>7} "
            + " ".join(f"{title:>{max(5, len(title))}}" for _, title in RATIO_COLUMNS))
    for case in doc["cases"]:
        lines += [f"== {case['title']} ({case['kind']})", head]
        for r in case["results"]:
            name = f"{r['impl'][:50]:50} {(r.get('config') or '')[:24]:24}"
            if r["status"] != "ok":
                lines.append(f"{name} {r['status']}: {r['error'][:150]}")
                continue
            ratios = " ".join(f"{_number(r.get(key), '.2f'):>{max(5, len(title))}}" for key, title in RATIO_COLUMNS)
            lines.append(f"{name} {r['ms']:9.4f} {r['p10']:8.4f}-{r['p90']:<8.4f} {_number(r.get('gbs'), '6.0f'):>6} "
                         f"{_number(r.get('tflops'), '7.1f'):>7} {ratios}")
        against = versus_best_peer(case)
        if against:
            lines.append(f"   tileworkbench / best peer ({against[1]}): {against[0]:.2f}x")
        if case["kind"] == "attention":
            lines.append(f"   beside it: {FLASH_ATTENTION_3_H100}")
        lines.append("")
    if doc["latency"]:
        lines += ["== compile, cache and launch latency (ms; median of the samples)",
                  f"{'measure':60} {'implementation':36} {'ms':>10}  samples"]
        for r in doc["latency"]:
            if r["status"] != "ok":
                lines.append(f"{r['measure']:60} {r['impl']:36} {r['status']}: {r['error'][:120]}")
            else:
                samples = " ".join(f"{s:.4g}" for s in r.get("values", []))
                lines.append(f"{r['measure']:60} {r['impl']:36} {r['ms']:10.4f}  {samples}")
        lines.append("")
    rows = targets(doc)
    lines += ["== targets (tileworkbench's fastest result in the case against the reference)",
              f"{'target':56} {'case':44} {'measured':>24}  verdict"]
    lines += [f"{t['target'][:56]:56} {t['case'][:44]:44} {t['shown']:>24}  {t['verdict']}" for t in rows]
    counts = {v: sum(t["verdict"] == v for t in rows) for v in ("PASS", "MISS", "not measured")}
    lines.append(", ".join(f"{n} {v}" for v, n in counts.items()))
    return "\n".join(lines) + "\n"


# ---- cases: sizes, fresh random inputs, references, tolerances ------------------------------------

class Problem(SimpleNamespace):
    """One implementation's inputs (torch tensors on the GPU, fresh random values) and output `y`.
    Fields by op: `x, y` (copy, transpose, softmax), `a, b, y` (add, matmul), `table, ids, y`
    (gather), `x, w, b, y` (layernorm); an idiom: its arrays by name, `y` its output, and `idiom`."""

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
    """Whether `--only` words select a key: the key itself or a prefix of whole parts ("softmax",
    "attention_d128")."""
    return not words or any(w == key or key.startswith(w + "_") for w in words)


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


SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def transpose_case(s: int, dtype: str) -> Case:
    short = SHORT[dtype]
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


def matmul_case(s: int, dtype: str, size: int) -> Case:
    """A square matmul of side `s`, keyed by the full-size side `size` (the same key when quick)."""
    def make():
        return Problem(a=_randn(s, s, dtype=dtype), b=_randn(s, s, dtype=dtype), y=_nan(s, s, dtype=dtype))
    return Case(f"matmul_{SHORT[dtype]}_{size}", f"matmul {s}^3 {SHORT[dtype]} (f32 accumulate)", "matmul", "matmul",
                {"s": s, "dtype": dtype}, 3 * s * s * 2, 2 * s ** 3, 1e-2, make, lambda p: p.a.double() @ p.b.double())


def attention_reference(p):
    """softmax(q k^T / sqrt(d), causal mask) v in float64, one batch at a time (the scores are S x S)."""
    import torch
    out = torch.empty(p.q.shape, dtype=torch.float64, device=p.q.device)
    seq = p.q.shape[2]
    mask = torch.ones(seq, seq, dtype=torch.bool, device=p.q.device).tril() if p.causal else None
    for b in range(p.q.shape[0]):
        scores = p.q[b].double() @ p.k[b].double().transpose(-1, -2) * p.scale
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out[b] = torch.softmax(scores, dim=-1) @ p.v[b].double()
    return out


def attention_case(batch: int, heads: int, seq: int, d: int, dtype: str, causal: bool) -> Case:
    def make():
        shape = (batch, heads, seq, d)
        return Problem(q=_randn(*shape, dtype=dtype), k=_randn(*shape, dtype=dtype), v=_randn(*shape, dtype=dtype),
                       causal=causal, scale=1 / math.sqrt(d), y=_nan(*shape, dtype=dtype))
    name = f"d{d}_{SHORT[dtype]}" + ("_causal" if causal else "")
    flops = 4 * batch * heads * seq * seq * d // (2 if causal else 1)
    return Case(f"attention_{name}", f"attention B={batch} H={heads} S={seq} d={d} {SHORT[dtype]}"
                + (" causal" if causal else ""), "attention", "attention",
                {"batch": batch, "heads": heads, "seq": seq, "d": d, "dtype": dtype, "causal": causal},
                4 * batch * heads * seq * d * 2, flops, 1e-2, make, attention_reference)


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


def _layernorm_backward_reference(p):
    import torch
    from torch.nn.functional import layer_norm
    x = p.x.float().requires_grad_()
    layer_norm(x, (x.shape[1],), p.w.float(), p.b.float(), 1e-5).backward(p.dy.float())
    return x.grad


def _moe_problem(tokens: int, experts: int, topk: int) -> Problem:
    """The MoE sample's own kind of inputs (hidden 512, intermediate 1024, bf16)."""
    import torch
    hidden, intermediate = 512, 1024
    bf16 = "bfloat16"
    return Problem(h=_randn(tokens, hidden, dtype=bf16) * 0.5, w1=_randn(experts, 2 * intermediate, hidden, dtype=bf16)
                   * 0.1, w2=_randn(experts, hidden, intermediate, dtype=bf16) * 0.1,
                   ids=torch.stack([torch.randperm(experts, device="cuda")[:topk] for _ in range(tokens)]),
                   weights=torch.softmax(_randn(tokens, topk), dim=-1).to(torch.bfloat16),
                   y=_nan(tokens, hidden, dtype=bf16))


def _moe_reference(p):
    """The MoE sample's own torch reference (needs the samples folder)."""
    return published_module("cuTile", "MoE.py", ("torch_moe",), "cuTile").torch_moe(p.h, p.w1, p.w2, p.weights, p.ids)


def _fft_reference(p):
    import torch
    return torch.view_as_real(torch.fft.fft(p.x.to(torch.complex128), dim=-1))


def sample_cases(z: dict) -> list[Case]:
    """The cases of cuTile's samples not already among the others (matmul, attention, layernorm forward
    and transpose cases run their samples too); each sample's wrapper on inputs of its own kind."""
    n, (batch, side), rows, ffts, (tokens, experts, topk) = z["n"], z["bmm"], z["ln"], z["fft"], z["moe"]

    def vectors():
        return Problem(a=_randn(n), b=_randn(n), y=_nan(n))

    def matrices():
        f16 = "float16"
        return Problem(a=_randn(batch, side, side, dtype=f16), b=_randn(batch, side, side, dtype=f16),
                       y=_nan(batch, side, side, dtype=f16))

    def layernorm():
        bf16 = "bfloat16"
        return Problem(x=_randn(rows, 4096, dtype=bf16), w=_randn(4096, dtype=bf16), b=_randn(4096, dtype=bf16),
                       dy=_randn(rows, 4096, dtype=bf16), y=_nan(rows, 4096, dtype=bf16))
    power = n.bit_length() - 1
    return [
        Case("sample_vector_add", f"VectorAddition f32 2^{power}", "sample", "sample_vector_add", {"n": n}, 12 * n, 0,
             0, vectors, lambda p: p.a + p.b),
        Case("sample_vector_add_gather", f"VectorAddition by gather f32 2^{power}", "sample",
             "sample_vector_add_gather", {"n": n}, 12 * n, 0, 0, vectors, lambda p: p.a + p.b),
        Case("sample_batch_matmul", f"BatchMatMul {batch} x {side}^3 f16", "sample", "sample_batch_matmul",
             {"batch": batch, "s": side}, 0, 2 * batch * side ** 3, 1e-2, matrices,
             lambda p: p.a.double() @ p.b.double()),
        Case("sample_layernorm_backward", f"LayerNorm forward + backward (dx) {rows} x 4096 bf16", "sample",
             "sample_layernorm_backward", {"rows": rows, "cols": 4096}, 5 * rows * 4096 * 2, 0, 2e-2, layernorm,
             _layernorm_backward_reference),
        Case("sample_fft", f"FFT {ffts} x 8 complex64", "sample", "sample_fft", {"batch": ffts, "n": 8},
             2 * ffts * 8 * 8, 0, 1e-5,
             lambda: Problem(x=_randn(ffts, 8, dtype="complex64"), y=_nan(ffts, 8, 2)), _fft_reference),
        Case("sample_moe", f"MoE {tokens} tokens, {experts} experts, top {topk}, bf16", "sample", "sample_moe",
             {"tokens": tokens, "experts": experts, "topk": topk}, 0, 0, 5e-2,
             lambda: _moe_problem(tokens, experts, topk), _moe_reference),
    ]


IDIOM_DTYPES = ("bfloat16", "float32")


def idiom_cases(size: str) -> list[Case]:
    """The kernels of benchmarks/idioms.py (cuTile code as third parties write it: row gathers and
    scatters, whole-row tiles, APPROX divisions, persistent loops, hashed dropout, RoPE) in bf16 and
    f32, their whole outputs checked against the NumPy reference there."""
    from benchmarks import idioms
    cases = []
    for idiom in idioms.idioms(smoke=size == "dry"):
        for dtype in IDIOM_DTYPES:
            def make(idiom=idiom, dtype=dtype):
                arrays = {k: (_nan if k in idiom.outputs else _randn)(*shape, dtype=d or dtype)
                          for k, (shape, d) in idiom.arrays.items()}
                return Problem(**{**arrays, "y": arrays[idiom.outputs[0]]}, idiom=idiom)

            def reference(p, idiom=idiom):
                import torch
                host = {k: getattr(p, k).double().cpu().numpy() for k in idiom.arrays if k not in idiom.outputs}
                return torch.from_numpy(idiom.reference(host, 0)[idiom.outputs[0]]).to(p.y.device)
            cases.append(Case(f"idiom_{idiom.key}_{SHORT[dtype]}", f"{idiom.name} {SHORT[dtype]} (idiom)", "memory",
                              "idiom", {"idiom": idiom.key, "dtype": dtype}, idiom.nbytes(dtype), 0,
                              idioms.TOLERANCE[dtype], make, reference))
    return cases


# sizes: "full" fills an H100; "quick" is a smoke test on a GPU; "dry" runs on the interpreter, no GPU
# FFT: cuTile's sample loads the whole batch into one tile in every block (it is written for a batch of
# 2), so its batch stays small: 256 FFTs are a 4096-element tile
SIZES = {  # samples: vector length, batch matmul (batch, side), layernorm rows, FFTs, MoE (tokens, experts, top k)
    "full": {"n": 1 << 28, "s": 16384, "rows": 32768, "gather": (1 << 18, 256, 1 << 20), "matmul": (4096, 8192),
             "attention": (4, 16, 4096),
             "samples": {"n": 1 << 26, "bmm": (8, 2048), "ln": 8192, "fft": 256, "moe": (512, 64, 8)}},
    "quick": {"n": 1 << 22, "s": 2048, "rows": 2048, "gather": (1 << 12, 256, 1 << 14), "matmul": (1024, 2048),
              "attention": (1, 4, 1024),
              "samples": {"n": 1 << 22, "bmm": (2, 1024), "ln": 1024, "fft": 64, "moe": (64, 64, 8)}},
    "dry": {"n": 1 << 13, "s": 256, "rows": 4, "gather": (16, 256, 64), "matmul": (256, 256), "attention": (1, 1, 256),
            "samples": {"n": 1 << 12, "bmm": (1, 256), "ln": 4, "fft": 4, "moe": (4, 4, 2)}},
}


def all_cases(size: str = "full") -> list[Case]:
    """Every case at `size` (a key of SIZES); the keys do not depend on the size."""
    z = SIZES[size]
    n, s, rows = z["n"], z["s"], z["rows"]
    batch, heads, seq = z["attention"]
    return [copy_case(n), add_case(n), *(transpose_case(s, t) for t in ("float32", "bfloat16", "float16")),
            gather_case(*z["gather"]), *(softmax_case(rows, cols) for cols in (1024, 4096, 16384)),
            layernorm_case(rows, 4096),
            *(matmul_case(side, dtype, full) for side, full in zip(z["matmul"], SIZES["full"]["matmul"])
              for dtype in ("float16", "bfloat16")),
            *(attention_case(batch, heads, seq, d, dtype, causal) for d in (64, 128)
              for dtype in ("float16", "bfloat16") for causal in (False, True)),
            *sample_cases(z["samples"]), cupy_elementwise_case(n), cupy_reduction_case(rows, 4096),
            *idiom_cases(size)]


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
    skipped: bool = False  # its published kernel is not here (see Skipped)

    def result(self) -> dict:
        row = {"impl": self.impl, "family": self.family}
        if self.config:
            row["config"] = self.config
        if len(self.tuning) > 1 or any(isinstance(v, str) for v in self.tuning.values()):
            row["tuning"] = self.tuning
        if self.error or not self.samples:
            row.update(status="skipped" if self.skipped else "failed", error=self.error or "not timed")
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
        l2 = getattr(torch.cuda.get_device_properties(), "L2_cache_size", 0)
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
    except Skipped as e:
        entry.error, entry.skipped = str(e), True
        return
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


class OverTime(BaseException):
    """An implementation ran past its time limit (a BaseException: no configuration's handler keeps it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """OverTime in this thread once `seconds` have passed, so one very slow implementation (a huge
    compile, a kernel far off its peers) costs its row, not the run. A call into C that does not
    return is not interrupted: the progress lines on stdout show where a run stopped."""
    def expire(signum, frame):
        raise OverTime(f"over the time limit of {seconds:g} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def prepare_within(entry: Entry, case: Case, timer, settings: dict) -> None:
    started = time.perf_counter()
    try:
        with time_limit(settings["implementation_seconds"]):
            prepare(entry, case, timer, tune_reps=settings["tune_repetitions"], warmup=settings["warmup"])
    except OverTime as e:
        entry.error, entry.run = f"checking and tuning: {e}", None
    print(f"#   {entry.impl}: {'ready' if entry.run else 'not timed'} in {time.perf_counter() - started:.1f} s",
          flush=True)


def time_round_robin(entries: list[Entry], timer, *, rounds: int, repetitions: int, seconds: float) -> None:
    """`rounds` rounds; in each, every prepared entry gets `repetitions` timed launches in turn
    (at most `seconds` per entry and round)."""
    for _ in range(rounds):
        for entry in entries:
            if entry.run is None:
                continue
            try:
                with time_limit(seconds):
                    entry.samples += timer.samples(entry.run, repetitions)
            except (Exception, OverTime) as e:
                entry.error, entry.run = f"failed while timed: {describe(e)}", None


# ---- the implementations ---------------------------------------------------------------------------
# Each function takes a case's Problem and returns its configurations, {label: run} (or one run);
# run() launches once on the current stream and writes problem.y. A function imports its library
# (and compiles its kernels) when called, so a library missing here fails its rows with the reason.

def _stream():
    import torch
    return torch.cuda.current_stream()


# -- the peers' published kernels: Triton's tutorials and cuTile's samples, loaded from their files
#    (benchmarks/published.py) in folders named on the command line

PUBLISHED = {"Triton": os.path.join(REPO, ".triton_tutorials"), "cuTile": os.path.join(REPO, ".cutile", "samples")}
HOW_TO_GET = {"Triton": "--triton-tutorials DIR (bash benchmarks/prepare_triton_tutorials.sh makes .triton_tutorials)",
              "cuTile": "--cutile-samples DIR (the samples/ folder of a clone of github.com/NVIDIA/cutile-python)"}


class Skipped(Exception):
    """A published kernel's file is not here: its row is skipped, with how to get it."""


@functools.cache
def published_module(source: str, file: str, names: tuple, cuda_tile: str = "cuTile"):
    """`names` of the file `file` in the folder of `source`'s published kernels (PUBLISHED), loaded with
    `cuda.tile` as cuTile or bound to tileworkbench."""
    from benchmarks.published import load
    path = os.path.join(PUBLISHED[source] or "", file)
    if not PUBLISHED[source] or not os.path.isfile(path):
        raise Skipped(f"no {file} in {PUBLISHED[source]}: {HOW_TO_GET[source]}")
    return load(path, list(names), cuda_tile=cuda_tile)


def _published(source, file, function, call, cuda_tile="cuTile", grad=False, label=""):
    """An implementation running `function` of a published file: run() sets p.y = call(function, p)."""
    def offer(p):
        import torch
        fn = getattr(published_module(source, file, (function,), cuda_tile), function)

        def run():
            with torch.set_grad_enabled(grad):
                p.y = call(fn, p)
        return {label: run}
    return offer


def cutile_sample(file, function, call, grad=False) -> list[tuple]:
    """The IMPLEMENTATIONS rows of one cuTile sample: under cuTile, and under tileworkbench."""
    name = CUTILE_SAMPLE + file
    return [(ON_TILEWORKBENCH + name, "tileworkbench",
             _published("cuTile", file, function, call, "tileworkbench", grad)),
            (name, "cuTile", _published("cuTile", file, function, call, "cuTile", grad))]


def triton_tutorial(file, function, call, label) -> tuple:
    """The IMPLEMENTATIONS row of one Triton tutorial's wrapper (forward only: no autograd); `label`
    says what its wrapper does besides launching (the timing includes it)."""
    return (TRITON_TUTORIAL + file.removesuffix(".py"), "Triton",
            _published("Triton", file, function, call, label=label))


def _layernorm_backward(f, p):
    """The LayerNorm sample's autograd function, forward then backward: dx."""
    x = p.x.detach().requires_grad_()
    f(x, p.w, p.b, 1e-5).backward(p.dy)
    return x.grad


PUBLISHED_CALLS = {  # op -> the rows of the published kernels
    "transpose": cutile_sample("Transpose.py", "cutile_transpose", lambda f, p: f(p.x)),
    "softmax": [triton_tutorial("02-fused-softmax.py", "softmax", lambda f, p: f(p.x), "warmup() lookup per call")],
    "layernorm": [triton_tutorial("05-layer-norm.py", "layer_norm",
                                  lambda f, p: f(p.x, (p.x.shape[1],), p.w, p.b, 1e-5), "forward"),
                  *cutile_sample("LayerNorm.py", "cutile_layer_norm", lambda f, p: f(p.x, p.w, p.b, 1e-5))],
    "matmul": [triton_tutorial("03-matrix-multiplication.py", "matmul", lambda f, p: f(p.a, p.b),
                               "autotuned, f16 out"),
               *cutile_sample("MatMul.py", "cutile_matmul", lambda f, p: f(p.a, p.b))],
    "attention": [triton_tutorial("06-fused-attention.py", "attention",
                                  lambda f, p: f(p.q, p.k, p.v, p.causal, p.scale), "forward, autotuned"),
                  *cutile_sample("AttentionFMHA.py", "cutile_fmha", lambda f, p: f(p.q, p.k, p.v, causal=p.causal))],
    "sample_vector_add": cutile_sample("VectorAddition.py", "vec_add", lambda f, p: f(p.a, p.b)),
    "sample_vector_add_gather": cutile_sample("VectorAddition.py", "vec_add",
                                              lambda f, p: f(p.a, p.b, use_gather=True)),
    "sample_batch_matmul": cutile_sample("BatchMatMul.py", "bmm", lambda f, p: f(p.a, p.b, p.a.dtype)),
    "sample_layernorm_backward": cutile_sample("LayerNorm.py", "cutile_layer_norm", _layernorm_backward, grad=True),
    "sample_fft": cutile_sample("FFT.py", "cutile_fft", lambda f, p: _real_view(f(p.x, (2, 2, 2), 2))),
    "sample_moe": cutile_sample("MoE.py", "cutile_moe",  # the tile sizes of the sample's own run
                                lambda f, p: f(p.h, p.w1, p.w2, p.weights, p.ids, 128, 128, 64)),
}


def _real_view(t):
    import torch
    return torch.view_as_real(t)


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


def torch_sdpa(p, backend: str | None = None):
    """scaled_dot_product_attention with the backend PyTorch picks (None), or one forced by its
    SDPBackend name (an error where it cannot run)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    def run():
        with sdpa_kernel(getattr(SDPBackend, backend)) if backend else contextlib.nullcontext():
            p.y = scaled_dot_product_attention(p.q, p.k, p.v, is_causal=p.causal, scale=p.scale)
    return run


# -- the idiom kernels (benchmarks/idiom_kernels.py): one source, under tileworkbench and under cuTile

@functools.cache
def _idiom_kernels(cuda_tile: str):
    from benchmarks.idioms import load_kernels
    return load_kernels(cuda_tile)


def _idiom(cuda_tile: str):
    def offer(p):
        launch = tw.launch if cuda_tile == "tileworkbench" else importlib.import_module("cuda.tile").launch
        idiom, kernel, stream = p.idiom, getattr(_idiom_kernels(cuda_tile), p.idiom.kernel), _stream()
        arrays = {k: getattr(p, k) for k in idiom.arrays}
        grid, args = idiom.grid(arrays, _sms()), idiom.args(arrays)
        return lambda: launch(stream, grid, kernel, args)
    return offer


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
    return {f"T={t}": _tw(transpose, (s // t, s // t), (p.x, p.y, t)) for t in (32, 64, 128)}


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

    return SimpleNamespace(add=add, transpose=transpose, gather=gather, softmax=softmax, layernorm=layernorm,
                           matmul=matmul)


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
    blocks walk C in groups of GROUP tile rows so that neighbours share A and B tiles in L2. Unlike
    cuTile's MatMul sample, no padded loads: the shapes are multiples of the tiles, and padding costs
    cuTile most of its speed."""
    tiles_m, tiles_n = ct.cdiv(A.shape[0], TM), ct.cdiv(B.shape[1], TN)
    bid = ct.bid(0)
    first = bid // (GROUP * tiles_n) * GROUP
    height = min(tiles_m - first, GROUP)
    bm = first + bid % (GROUP * tiles_n) % height
    bn = bid % (GROUP * tiles_n) // height
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(A, 1, (TM, TK))):
        a = ct.load(A, (bm, k), (TM, TK))
        b = ct.load(B, (k, bn), (TK, TN))
        acc = ct.mma(a, b, acc)
    ct.store(C, (bm, bn), acc.astype(C.dtype))

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
    return torch.cuda.get_device_properties().multi_processor_count


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
    """cupy.matmul (cuBLAS); bfloat16 inputs as float16 copies (exact for these values; CuPy has no bfloat16)."""
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


# op -> (implementation, library, function), one row per op: what --impl filters and the cases run:
# the published kernels (PUBLISHED_CALLS) first, then the libraries' operators and the kernels written
# here in each peer's language ("(peers.py)"; after which published kernel, where one corresponds).
MINE = " (peers.py)"
OWN = {
    "copy": [("CuPy copyto", "CuPy", cupy_copy), ("torch copy_", "torch", torch_copy)],
    "add": [("tileworkbench", "tileworkbench", tw_add), ("cuTile" + MINE, "cuTile", cutile_add),
            ("Triton" + MINE + ": tutorial 01", "Triton", triton_add), ("CuPy ElementwiseKernel", "CuPy", cupy_add),
            ("torch.add", "torch", torch_add)],
    "transpose": [("tileworkbench", "tileworkbench", tw_transpose), ("cuTile" + MINE, "cuTile", cutile_transpose),
                  ("Triton" + MINE, "Triton", triton_transpose), ("CuPy", "CuPy", cupy_transpose),
                  ("torch copy_(x.t())", "torch", torch_transpose)],
    "gather": [("tileworkbench", "tileworkbench", tw_gather), ("cuTile" + MINE, "cuTile", cutile_gather),
               ("Triton" + MINE, "Triton", triton_gather), ("CuPy take", "CuPy", cupy_gather),
               ("torch index_select", "torch", torch_gather)],
    "softmax": [("tileworkbench", "tileworkbench", tw_softmax), ("cuTile" + MINE, "cuTile", cutile_softmax),
                ("Triton" + MINE + ": tutorial 02, one row a program", "Triton", triton_softmax),
                ("CuPy RawKernel", "CuPy", cupy_softmax),
                ("torch.softmax", "torch", torch_softmax)],
    "layernorm": [("tileworkbench", "tileworkbench", tw_layernorm), ("cuTile" + MINE, "cuTile", cutile_layernorm),
                  ("Triton" + MINE + ": tutorial 05, row in registers", "Triton", triton_layernorm),
                  ("CuPy RawKernel", "CuPy", cupy_layernorm),
                  ("torch layer_norm", "torch", torch_layernorm)],
    "matmul": [("tileworkbench", "tileworkbench", tw_matmul),
               ("cuTile" + MINE + ": MatMul.py unpadded", "cuTile", cutile_matmul),
               ("Triton" + MINE + ": tutorial 03, more configs", "Triton", triton_matmul),
               ("CuPy matmul (bf16 as f16)", "CuPy", cupy_matmul), (CUBLAS, "torch", torch_matmul)],
    "attention": [(SDPA_DEFAULT, "torch", torch_sdpa),
                  (SDPA_CUDNN, "torch", functools.partial(torch_sdpa, backend="CUDNN_ATTENTION")),
                  (SDPA, "torch", functools.partial(torch_sdpa, backend="FLASH_ATTENTION"))],
    "cupy_elementwise": [("tileworkbench ElementwiseKernel", "tileworkbench", tw_cupy_elementwise),
                         ("CuPy ElementwiseKernel", "CuPy", cupy_own_elementwise)],
    "cupy_reduction": [("tileworkbench ReductionKernel", "tileworkbench", tw_cupy_reduction),
                       ("CuPy ReductionKernel", "CuPy", cupy_own_reduction)],
    "idiom": [("tileworkbench: idiom_kernels.py", "tileworkbench", _idiom("tileworkbench")),
              ("cuTile: idiom_kernels.py", "cuTile", _idiom("cuTile"))],
}
IMPLEMENTATIONS = {op: PUBLISHED_CALLS.get(op, []) + OWN.get(op, []) for op in {**PUBLISHED_CALLS, **OWN}}
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
FIRST_LAUNCH = "first launch, new process, warm disk cache, import included"

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


def launch_latency(launches: int, samples: int, families: list[str] | None = None) -> list[dict]:
    """Host milliseconds per back-to-back launch of an empty kernel, and a new process's first launch
    of tileworkbench from a warm disk cache, import included: benchmarks/launch_overhead.py's measures."""
    from benchmarks import launch_overhead as lo
    rows, cases = [], []
    for source, make in (("tileworkbench", lambda: lo.tileworkbench_cases(mock=False)),
                         ("CuPy, cuTile", lo.peer_cases)):
        try:
            cases += list(make())
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            rows.append(_row(OVERHEAD, source, error=describe(e)))
    for impl, launch, synchronize in cases:
        if families and not any(impl.lower().startswith(f.lower()) for f in families):
            continue
        try:
            rows.append(_row(OVERHEAD, impl, [lo.per_launch_us(launch, synchronize, launches) / 1e3]))
        except Exception as e:  # noqa: BLE001
            rows.append(_row(OVERHEAD, impl, error=describe(e)))
    if not families or "tileworkbench" in families:
        try:
            rows.append(_row(FIRST_LAUNCH, "tileworkbench",
                             [lo.first_launch(samples, mock=False)[f"{lo.WARM}: total_ms"]]))
        except Exception as e:  # noqa: BLE001
            rows.append(_row(FIRST_LAUNCH, "tileworkbench", error=describe(e)))
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


def published_sources() -> dict:
    """Where the published kernels come from: the folders, and the tutorials' recorded origin."""
    def describe_folder(source):
        folder = PUBLISHED[source]
        if not folder or not os.path.isdir(folder):
            return f"absent ({HOW_TO_GET[source]})"
        try:  # written by benchmarks/prepare_triton_tutorials.sh
            with open(os.path.join(folder, "SOURCE")) as f:
                return f"{folder}, from {f.read().strip()}"
        except OSError:
            return folder
    return {"Triton tutorials": describe_folder("Triton"), "cuTile samples": describe_folder("cuTile")}


def environment(repo: str) -> dict:
    import torch
    props = torch.cuda.get_device_properties()
    env = {"device": props.name, "compute capability": f"{props.major}.{props.minor}",
           "sms": props.multi_processor_count,
           "memory GiB": round(props.total_memory / 2 ** 30, 1),
           "l2 MiB": round(getattr(props, "L2_cache_size", 0) / 2 ** 20, 1),
           "driver": _run("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"),
           "python": sys.version.split()[0], "torch": torch.__version__, "cuda (torch)": torch.version.cuda,
           "triton": _version("triton"), "cupy": _version("cupy"), "cuda.tile": _version("cuda.tile"),
           "tileworkbench commit": commit(repo), **published_sources()}
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
    def family(impl):  # "CuPy RawKernel, 1 CuPy array" -> "CuPy"
        return impl.split(",")[0].split()[0]
    families = list(dict.fromkeys(family(r["impl"]) for r in doc["latency"]))
    bars = {f: [next((r["ms"] for r in doc["latency"] if r["measure"] == m and family(r["impl"]) == f
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
SETTINGS = {  # by size (SIZES); "heavy_repetitions": matmul and attention cases
    "full": {"rounds": 5, "repetitions": 10, "heavy_repetitions": 4, "warmup": 5, "tune_repetitions": 5,
             "compile_samples": 1, "launches": 20000, "first_launch_samples": 3, "implementation_seconds": 90},
    "quick": {"rounds": 2, "repetitions": 3, "heavy_repetitions": 2, "warmup": 2, "tune_repetitions": 2,
              "compile_samples": 1, "launches": 2000, "first_launch_samples": 1, "implementation_seconds": 90},
    "dry": {"rounds": 1, "repetitions": 1, "heavy_repetitions": 1, "warmup": 0, "tune_repetitions": 1,
            "implementation_seconds": 600},
}


def parser() -> argparse.ArgumentParser:
    keys = [c.key for c in all_cases()] + list(LATENCY_KEYS)
    ap = argparse.ArgumentParser(
        prog="python3 benchmarks/peers.py",
        description="Time tileworkbench against cuTile, Triton, CuPy and PyTorch (cuBLAS, SDPA) on this GPU, each "
                    "implementation checked on fresh random inputs before it is timed, each peer's published "
                    "kernels beside kernels written here. Writes DATE-DEVICE-peers.{json,txt,png} to --out. For "
                    "cuTile, first `source .cutile/setup.sh` (made by benchmarks/prepare_cutile.sh).")
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the results (default: $OUT, else .)")
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions: a smoke test")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: tiny sizes, torch's CUDA tensors in host memory, tileworkbench on its interpreter; "
                         "every case, check, table and target is made (peers without a GPU fail with their reason)")
    ap.add_argument("--only", default="", metavar="CASE[,CASE]",
                    help=f"cases to run, by key or a prefix of whole parts (attention, attention_d128, sample): "
                         f"{', '.join(keys)}; memory-bound cases bring the copy case along (their ratios' ceiling)")
    ap.add_argument("--impl", default="", metavar="IMPL[,IMPL]",
                    help=f"libraries to run: {', '.join(FAMILIES)} (any case); the copy case, cuBLAS matmul and SDPA "
                         "always run, as the references of the ratios")
    ap.add_argument("--triton-tutorials", default=PUBLISHED["Triton"], metavar="DIR",
                    help="folder of Triton's tutorials 02, 03, 05, 06 (default .triton_tutorials; made by "
                         "benchmarks/prepare_triton_tutorials.sh); without it their rows are skipped")
    ap.add_argument("--cutile-samples", default=PUBLISHED["cuTile"], metavar="DIR",
                    help="cuTile's samples/ folder, from a clone of github.com/NVIDIA/cutile-python (default "
                         ".cutile/samples); without it their rows are skipped")
    ap.add_argument("--rounds", type=int, help="round-robin rounds per case (default 5; quick 2)")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="no measuring: one document, table and targets of these runs' results (runs split by --only)")
    return ap


def words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


def entries_for(case: Case, families: list[str]) -> list[Entry]:
    """The case's implementations that run: those of `families` (all if empty) and the references."""
    return [Entry(name, family, offer) for name, family, offer in IMPLEMENTATIONS[case.op]
            if not families or family.lower() in families or case.kind == "copy" or name in (CUBLAS, *SDPA_ROWS)]


def run_case(case: Case, families: list[str], timer: Timer, settings: dict) -> dict:
    """Check, tune and time every implementation of one case: its part of the results document."""
    started = time.perf_counter()
    entries = entries_for(case, families)
    state = gpu_state()
    for entry in entries:
        prepare_within(entry, case, timer, settings)
    reps = settings["heavy_repetitions" if case.kind in ("matmul", "attention") else "repetitions"]
    time_round_robin(entries, timer, rounds=settings["rounds"], repetitions=reps,
                     seconds=settings["implementation_seconds"])
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


def write_results(doc: dict, out: str, chart: bool = True) -> list[str]:
    """The JSON document, the printed table and the chart, named by date and device, in `out`."""
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, result_stem(doc["date"], doc["environment"].get("device", "gpu"), doc["quick"]))
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(stem + ".txt", "w") as f:
        f.write(format_table(doc))
    written = [stem + ".json", stem + ".txt"]
    if not chart:
        return written
    try:
        draw_chart(doc, stem + ".png")
        written.append(stem + ".png")
    except Exception:  # noqa: BLE001 - the numbers are written; a chart problem is only reported
        traceback.print_exc()
    return written


def merge(docs: list[dict]) -> dict:
    """One results document of several runs (e.g. one device command each, with --only): the first
    run's environment, each case once (from the first run that has it), every latency row."""
    merged = dict(docs[0], cases=[], latency=[], command=" + ".join(d["command"] for d in docs),
                  seconds=sum(d.get("seconds", 0) for d in docs),
                  gpu_state={"before": docs[0]["gpu_state"].get("before"), "after": docs[-1]["gpu_state"].get("after")})
    keys = set()
    for doc in docs:
        merged["cases"] += [c for c in doc["cases"] if c["key"] not in keys]
        keys |= {c["key"] for c in doc["cases"]}
        merged["latency"] += doc["latency"]
    return merged


def on_the_host() -> None:
    """--dry-run: torch's CUDA tensors made in host memory (tileworkbench/cutile_alias/cpu.py) and every
    tileworkbench launch on its interpreter."""
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        raise SystemExit("--dry-run needs PyTorch: the cases make their data with it (pip install torch)") from None
    from tileworkbench.cutile_alias.cpu import redirect_to_host
    redirect_to_host()
    os.environ["TILEWORKBENCH_INTERPRET"] = "1"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    only, families = words(args.only), [f.lower() for f in words(args.impl)]
    unknown = [f for f in families if f not in {x.lower() for x in FAMILIES}]
    if unknown:
        parser().error(f"unknown --impl {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    PUBLISHED.update({"Triton": args.triton_tutorials, "cuTile": args.cutile_samples})
    if args.merge:
        docs = []
        for path in args.merge:
            with open(path) as f:
                docs.append(json.load(f))
        doc = merge(docs)
        add_ratios(doc["cases"])
        written = write_results(doc, args.out)
        print(format_table(doc))
        print(f"# written: {', '.join(written)}")
        return 0
    size = "dry" if args.dry_run else "quick" if args.quick else "full"
    if args.dry_run:
        on_the_host()
    import torch
    if not torch.cuda.is_available():
        print("benchmarks/peers.py needs a CUDA GPU (and PyTorch, CuPy); --dry-run runs without one", file=sys.stderr)
        return 2
    settings = dict(SETTINGS[size], size=size, **({"rounds": args.rounds} if args.rounds else {}))
    started = time.perf_counter()
    doc = {"schema": SCHEMA, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "quick": size != "full", "settings": settings,
           "gpu_state": {"before": gpu_state()}, "environment": environment(REPO), "cases": [], "latency": []}
    print(f"# {json.dumps(doc['environment'])}", flush=True)
    cases = all_cases(size)
    chosen = [c for c in cases if selected(c.key, only)]
    if chosen and chosen[0].kind != "copy" and any(c.kind == "memory" for c in chosen):
        chosen.insert(0, cases[0])
    timer = Timer()
    from tileworkbench.runtime import native_launch
    native_launch.module()  # launches timed from C throughout (a machine's first process builds it in the background)
    for case in chosen:
        try:
            doc["cases"].append(run_case(case, families, timer, settings))
        except Exception:  # noqa: BLE001 - one case's trouble must not lose the others
            traceback.print_exc()
        print(f"# {case.title}: done at {time.perf_counter() - started:.0f} s", flush=True)
        add_ratios(doc["cases"])
        write_results(doc, args.out, chart=False)  # what a run stopped early had measured is kept
    latency_families = [f for f in families if f != "torch"]  # torch compiles nothing of its own here
    measures = {"compile": lambda: compile_latency(REPO, settings["compile_samples"], latency_families),
                "launch": lambda: launch_latency(settings["launches"], settings["first_launch_samples"],
                                                 latency_families)}
    for key, measure in measures.items():
        if not selected(key, only) or (families and not latency_families):
            continue
        if args.dry_run:
            doc["latency"].append(_row(key, "every", error="--dry-run: no GPU") | {"status": "skipped"})
            continue
        try:
            doc["latency"] += measure()
        except Exception as e:  # noqa: BLE001 - e.g. a CUDA context lost earlier: recorded, not fatal
            traceback.print_exc()
            doc["latency"].append(_row(key, "every", error=describe(e)))
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
