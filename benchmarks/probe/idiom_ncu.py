"""What each memory-bound idiom's launch looks like under tileworkbench and under cuTile, read by Nsight
Compute: block and grid, registers, shared memory, achieved occupancy, instructions executed, DRAM bytes
and time, one row per kernel and implementation (the last of its launches), so that a gap in
benchmarks/idioms.py can be traced to a launch shape or to the instructions the kernel runs.

    python3 benchmarks/probe/idiom_ncu.py                              # needs ncu, a GPU, PyTorch (and cuTile)
    python3 benchmarks/probe/idiom_ncu.py --only softmax --dtypes bfloat16

Runs benchmarks/idioms.py once with a single timed repetition under `ncu --csv --page raw`.
"""
from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.idioms import NAMES  # noqa: E402

METRICS = {   # column -> ncu metric
    "block": "launch__block_size",
    "grid": "launch__grid_size",
    "regs": "launch__registers_per_thread",
    "smem": "launch__shared_mem_per_block",
    "occ%": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "inst/thr": "smsp__inst_executed.sum",
    "DRAM MB": "dram__bytes.sum",
    "us": "gpu__time_duration.sum",
}


SCALE = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}


def rows(csv_text: str) -> tuple[dict, list[dict]]:
    """The units and the idiom kernels' launches from ncu's raw CSV (a header line, a units line, then a
    row per launch)."""
    lines = [line for line in csv_text.splitlines() if line.startswith('"')]
    table = list(csv.DictReader(io.StringIO("\n".join(lines))))
    if not table:
        return {}, []
    return table[0], [r for r in table[1:] if any(name in r.get("Kernel Name", "") for name in NAMES)]


def number(text: str, unit: str = "") -> float:
    """A value of ncu's CSV in the table's units (us, MB)."""
    if text in ("", "n/a"):
        return float("nan")
    return float(text.replace(",", "")) * SCALE.get(unit, 1.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--csv", help="also keep ncu's CSV here")
    args = parser.parse_args(argv)
    command = ["ncu", "--csv", "--page", "raw", "--metrics", ",".join(METRICS.values()),
               sys.executable, str(REPO / "benchmarks" / "idioms.py"), "--repetitions", "1", "--dtypes", args.dtypes]
    if args.only:
        command += ["--only", args.only]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if args.csv:
        Path(args.csv).write_text(done.stdout)
    units, found = rows(done.stdout)
    if not found:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        return 1
    groups = []   # runs of launches of one kernel at one shape: an idiom's, in one implementation
    for r in found:
        key = (r["Kernel Name"], r["launch__grid_size"], r["launch__block_size"], r["launch__registers_per_thread"])
        if groups and groups[-1][0] == key:
            groups[-1][1] = r   # the last launch of a run is the timed one
        else:
            groups.append([key, r])
    print(f"{'kernel':44s} " + " ".join(f"{c:>9s}" for c in METRICS))
    for (name, *_), r in groups:
        values = {c: number(r[m], units.get(m, "")) for c, m in METRICS.items()}
        threads = values["block"] * values["grid"]
        values["inst/thr"] = values["inst/thr"] * 32 / threads if threads else float("nan")  # warp instructions
        print(f"{name[:44]:44s} " + " ".join(f"{values[c]:9.1f}" for c in METRICS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
