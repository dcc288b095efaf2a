"""The command: run the selected cases and latency measures, then write and print the results."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import traceback

from . import cases as case_table
from .impls import FAMILIES, offers
from .results import CUBLAS, SCHEMA, add_ratios, format_table, result_stem

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LATENCY_KEYS = ("compile", "launch")
FULL = {"rounds": 5, "repetitions": 10, "matmul_repetitions": 4, "warmup": 5, "tune_repetitions": 5,
        "compile_samples": 2, "launches": 20000}
QUICK = {"rounds": 2, "repetitions": 3, "matmul_repetitions": 2, "warmup": 2, "tune_repetitions": 2,
         "compile_samples": 1, "launches": 2000}


def parser() -> argparse.ArgumentParser:
    keys = [c.key for c in case_table.all_cases(quick=False)] + list(LATENCY_KEYS)
    ap = argparse.ArgumentParser(
        prog="python3 -m benchmarks.peers",
        description="Time tileworkbench against cuTile, Triton, CuPy and PyTorch (cuBLAS) on this GPU, "
                    "each implementation checked on fresh random inputs before it is timed. Writes "
                    "DATE-DEVICE-peers.{json,txt,png} to --out. For cuTile, first `source .cutile/setup.sh` "
                    "(made by benchmarks/peers/prepare_cutile.sh).")
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the results (default: $OUT, else .)")
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions: a smoke test of a minute or two")
    ap.add_argument("--only", default="", metavar="CASE[,CASE]",
                    help=f"cases to run, by key or its first part (softmax = every softmax case): {', '.join(keys)}; "
                         "memory-bound cases bring the copy case along (their ratios' ceiling)")
    ap.add_argument("--impl", default="", metavar="IMPL[,IMPL]",
                    help=f"libraries to run: {', '.join(FAMILIES)} (case-insensitive); the copy case and cuBLAS "
                         "matmul always run, as the references of the ratios")
    ap.add_argument("--rounds", type=int, help="round-robin rounds per case (default 5; quick 2)")
    return ap


def _words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


def run_case(case, families: list[str], timer, settings: dict) -> dict:
    """Check, tune and time every implementation of one case; its part of the results document."""
    import torch

    from .measure import Entry, prepare, time_round_robin
    from .system import gpu_state
    started = time.perf_counter()
    entries = [Entry(name, family, offer) for name, family, offer in offers(case.op)
               if not families or family.lower() in families or case.kind == "copy" or name == CUBLAS]
    state = gpu_state()
    for entry in entries:
        prepare(entry, case, timer, tune_reps=settings["tune_repetitions"], warmup=settings["warmup"])
    reps = settings["matmul_repetitions" if case.kind == "matmul" else "repetitions"]
    time_round_robin(entries, timer, rounds=settings["rounds"], repetitions=reps)
    results = [entry.result() for entry in entries]
    del entries
    _release_memory(torch)
    return {"key": case.key, "title": case.title, "kind": case.kind, "params": case.params, "bytes": case.bytes,
            "flops": case.flops, "tolerance": case.tolerance, "gpu_state": state,
            "seconds": round(time.perf_counter() - started, 1), "results": results}


def _release_memory(torch) -> None:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    try:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
    except Exception:  # noqa: BLE001 - CuPy missing: nothing of it to free
        pass


def write(doc: dict, out: str) -> list[str]:
    """The JSON document, the printed table and the chart, named by date and device, in `out`."""
    from .chart import draw
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, result_stem(doc["date"], doc["environment"].get("device", "gpu"), doc["quick"]))
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(stem + ".txt", "w") as f:
        f.write(format_table(doc))
    written = [stem + ".json", stem + ".txt"]
    try:
        draw(doc, stem + ".png")
        written.append(stem + ".png")
    except Exception:  # noqa: BLE001 - the numbers are written; a chart problem is reported only
        traceback.print_exc()
    return written


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    only, families = _words(args.only), [f.lower() for f in _words(args.impl)]
    unknown = [f for f in families if f not in {x.lower() for x in FAMILIES}]
    if unknown:
        parser().error(f"unknown --impl {', '.join(unknown)}; choose from {', '.join(FAMILIES)}")
    import torch
    if not torch.cuda.is_available():
        print("benchmarks.peers needs a CUDA GPU (and PyTorch, CuPy)", file=sys.stderr)
        return 2
    from .latency import compile_latency, launch_overhead
    from .measure import Timer
    from .system import environment, gpu_state
    settings = dict(QUICK if args.quick else FULL, **({"rounds": args.rounds} if args.rounds else {}))
    started = time.perf_counter()
    doc = {"schema": SCHEMA, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "quick": args.quick, "settings": settings,
           "gpu_state": {"before": gpu_state()}, "environment": environment(REPO), "cases": [], "latency": []}
    print(f"# {doc['environment']['device']}: {json.dumps(doc['environment'])}", flush=True)
    chosen = [c for c in case_table.all_cases(args.quick) if case_table.selected(c.key, only)]
    if chosen and chosen[0].kind != "copy" and any(c.kind == "memory" for c in chosen):
        chosen.insert(0, case_table.all_cases(args.quick)[0])
    timer = Timer()
    for case in chosen:
        try:
            doc["cases"].append(run_case(case, families, timer, settings))
        except Exception:  # noqa: BLE001 - one case's trouble must not lose the others
            traceback.print_exc()
        print(f"# {case.title}: {time.perf_counter() - started:.0f} s so far", flush=True)
    latency_families = [f for f in families if f != "torch"]  # torch has no compile step of its own
    selected_latency = [k for k in LATENCY_KEYS if case_table.selected(k, only) and (latency_families or not families)]
    if "compile" in selected_latency:
        doc["latency"] += compile_latency(REPO, settings["compile_samples"], latency_families)
    if "launch" in selected_latency:
        doc["latency"] += launch_overhead(settings["launches"], latency_families)
    doc["gpu_state"]["after"] = gpu_state()
    doc["seconds"] = round(time.perf_counter() - started, 1)
    add_ratios(doc["cases"])
    written = write(doc, args.out)
    print()
    print(format_table(doc))
    print(f"# {doc['seconds']:.0f} s; written: {', '.join(written)}")
    return 0
