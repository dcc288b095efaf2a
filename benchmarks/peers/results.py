"""The results of a run as plain data: statistics, ratios, the JSON document, the printed table and
the result files' names. Pure Python (NumPy for percentiles): no GPU, testable anywhere.

    >>> summarize([1.0, 2.0, 3.0, 4.0])["ms"]
    2.5
    >>> result_stem("2026-11-22T13:02:47+00:00", "NVIDIA H100 80GB HBM3", quick=False)
    '2026-11-22-h100-80gb-hbm3-peers'
"""
from __future__ import annotations

import re

import numpy as np

SCHEMA = "tileworkbench-peers/2"
KINDS = ("copy", "memory", "matmul")
CUBLAS = "torch.matmul (cuBLAS)"  # the implementation matmul ratios are taken against


def summarize(samples: list[float]) -> dict:
    """Median and p10/p90 of timing samples in milliseconds."""
    p10, p50, p90 = np.percentile(np.asarray(samples, dtype=float), [10, 50, 90])
    return {"ms": float(p50), "p10": float(p10), "p90": float(p90), "samples": len(samples)}


def verdict(error: float, tolerance: float) -> str | None:
    """None when a result within `tolerance` (relative norm error; 0 means bit-exact), else why not.
    NaN (an output left unwritten: outputs are poisoned with NaN before the check) always fails."""
    if error != error:
        return "output has NaN (not every element written)"
    if tolerance == 0:
        return None if error == 0 else f"not bit-exact (relative error {error:.2e})"
    return None if error <= tolerance else f"relative error {error:.2e} > {tolerance:.0e}"


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


def _timed(case: dict) -> list[dict]:
    return [r for r in case["results"] if r["status"] == "ok"]


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
    """File name stem of a run's results: date, device and 'peers' (and 'quick' for a smoke test)."""
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

    need(doc, "schema", str, "doc")
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
            _check_result(r, f"{where}.results[{j}]", ("ms", "p10", "p90", "samples"), need, problems)
    for i, r in enumerate(doc.get("latency", [])):
        need(r, "measure", str, f"latency[{i}]")
        _check_result(r, f"latency[{i}]", ("ms",), need, problems)
    return problems


def _check_result(r: dict, where: str, numbers: tuple, need, problems: list) -> None:
    need(r, "impl", str, where)
    if r.get("status") == "ok":
        for key in numbers:
            need(r, key, (int, float), where)
    elif r.get("status") == "failed":
        need(r, "error", str, where)
    else:
        problems.append(f"{where}.status: {r.get('status')!r}")


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
    head = (f"{'implementation':32} {'config':24} {'ms':>9} {'p10-p90':>17} {'GB/s':>6} {'TFLOP/s':>7} "
            f"{'xcopy':>5} {'xcuBLAS':>7} {'xbest':>5}")
    for case in doc["cases"]:
        lines += [f"== {case['title']} ({case['kind']})", head]
        for r in case["results"]:
            name = f"{r['impl'][:32]:32} {(r.get('config') or '')[:24]:24}"
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
                  f"{'measure':44} {'implementation':20} {'ms':>10}  samples"]
        for r in doc["latency"]:
            if r["status"] != "ok":
                lines.append(f"{r['measure']:44} {r['impl']:20} failed: {r['error'][:120]}")
            else:
                samples = " ".join(f"{s:.4g}" for s in r.get("values", []))
                lines.append(f"{r['measure']:44} {r['impl']:20} {r['ms']:10.4f}  {samples}")
    return "\n".join(lines) + "\n"
