"""Measured metrics from Nsight Compute (`ncu`), where it is installed and allowed to read the GPU's
performance counters: achieved occupancy, DRAM and L2 throughput, sectors per request, shared-memory
bank conflicts, warp stall reasons, and hot spots per source line and per SASS instruction.

    metrics = collect(["python", "my_launch.py"], kernel="vector_add")
    metrics[0].achieved_occupancy, metrics[0].stalls, metrics[0].hot_lines
    CodeView(vector_add, args, ncu=metrics[0])   # the samples next to the SASS they were taken at

Where ncu is absent or not permitted, `NcuUnavailable` says so and how to fix it.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.sass import Samples

# the raw metrics a collection asks for, by the name this module gives them
METRICS = {
    "achieved_occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram_throughput": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_throughput": "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
    "l2_hit_rate": "lts__t_sector_hit_rate.pct",
    "dram_bytes_read": "dram__bytes_read.sum",
    "dram_bytes_write": "dram__bytes_write.sum",
    "load_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "load_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "store_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "store_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "shared_load_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_store_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "shared_load_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_store_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    # per instruction, from its addresses (the names the H100's ncu lists): wavefronts of shared loads
    # and stores, conflicts of ldmatrix and cp.async. The L1 counters above count more (extra cycles
    # that differ between kernels whose shared accesses are identical)
    "shared_load_wavefronts_sass": "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_store_wavefronts_sass": "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "ldmatrix_conflicts_sass": "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
    "cp_async_conflicts_sass": "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "shared_load_instructions": "smsp__sass_inst_executed_op_shared_ld.sum",
    "shared_store_instructions": "smsp__sass_inst_executed_op_shared_st.sum",
    "duration_ns": "gpu__time_duration.sum",
}
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
                 "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
                 "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait")

PERMISSION_ERROR = "ERR_NVGPUCTRPERM"
DEFAULT_CUDA_ROOT = "/usr/local/cuda"


class NcuUnavailable(RuntimeError):
    """Nsight Compute cannot measure here; the message says why and what would fix it."""


@dataclass
class NcuMetrics:
    """One profiled launch."""
    kernel: str
    values: dict[str, float]                                 # METRICS name -> value
    stalls: dict[str, float] = field(default_factory=dict)   # reason -> warps stalled per issued instruction
    hot_lines: list[tuple[str, float]] = field(default_factory=list)  # (source line, stall samples), hottest first
    sass_samples: dict[int, Samples] = field(default_factory=dict)   # instruction offset in the kernel -> samples

    def __getattr__(self, name):
        if name in METRICS:   # vars(): no recursion before __init__ has set `values`
            return vars(self).get("values", {}).get(name)
        raise AttributeError(name)

    @property
    def load_sectors_per_request(self) -> float | None:
        return _ratio(self.values.get("load_sectors"), self.values.get("load_requests"))

    @property
    def store_sectors_per_request(self) -> float | None:
        return _ratio(self.values.get("store_sectors"), self.values.get("store_requests"))


def _ratio(a, b):
    return a / b if a is not None and b else None


def find_ncu() -> str | None:
    """The ncu executable: on PATH, else in $CUDA_HOME/bin or /usr/local/cuda/bin."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), DEFAULT_CUDA_ROOT):
        if root and (Path(root) / "bin" / "ncu").exists():
            return str(Path(root) / "bin" / "ncu")
    return None


def require_ncu() -> str:
    ncu = find_ncu()
    if ncu is None:
        raise NcuUnavailable(
            "Nsight Compute (ncu) is not installed here: it is not on PATH, in $CUDA_HOME/bin or in "
            "/usr/local/cuda/bin. Install Nsight Compute (part of the CUDA toolkit) to collect measured "
            "metrics; the access analysis (tileworkbench.profile.access) needs no GPU.")
    return ncu


def unavailable_reason(output: str) -> str | None:
    """What ncu's output says is in the way of measuring, or None."""
    if PERMISSION_ERROR in output:
        return ("Nsight Compute is not permitted to read the GPU's performance counters (ERR_NVGPUCTRPERM). "
                "Run as an administrator, or let every user profile: load the NVIDIA driver with "
                "NVreg_RestrictProfilingToAdminUsers=0 (in a container: also start it with --cap-add SYS_ADMIN).")
    if "No kernels were profiled" in output:
        return "Nsight Compute profiled no kernel: the command launched none matching the kernel name."
    return None


def collect(command: list[str], *, kernel: str | None = None, launches: int = 1, source_lines: bool = True,
            timeout: float = 600) -> list[NcuMetrics]:
    """Run `command` under ncu and return the metrics of its first `launches` launches of `kernel`
    (a kernel name; None: any). `source_lines` adds the first launch's stall samples per source line
    and per SASS instruction (one more profiled run, read back twice)."""
    ncu = require_ncu()
    names = list(METRICS.values()) + [STALL_PREFIX + r + STALL_SUFFIX for r in STALL_REASONS]
    select = ["-k", f"regex:^{kernel}$"] if kernel else []
    raw = _run([ncu, "--csv", "--page", "raw", "--metrics", ",".join(names), *select, "-c", str(launches),
                *command], timeout)
    results = parse_raw(raw)
    if source_lines and results:
        with tempfile.TemporaryDirectory() as folder:
            report = str(Path(folder) / "source")
            _run([ncu, "--section", "SourceCounters", *select, "-c", "1", "-o", report, *command], timeout)
            page = [ncu, "--import", report + ".ncu-rep", "--csv", "--page", "source", "--print-source"]
            results[0].hot_lines = parse_source(_run([*page, "cuda"], timeout))
            results[0].sass_samples = parse_sass_source(_run([*page, "sass"], timeout))
    return results


def _run(argv: list[str], timeout: float) -> str:
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    reason = unavailable_reason(output)
    if reason:
        raise NcuUnavailable(reason)
    if done.returncode != 0:
        raise NcuUnavailable(f"ncu exited with status {done.returncode}: {output.strip()[-2000:]}")
    return done.stdout


def _csv_rows(text: str) -> list[list[str]]:
    """The CSV part of ncu's output (it prints its own ==PROF== lines and the program's output too)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_raw(text: str) -> list[NcuMetrics]:
    """`ncu --csv --page raw` output: a header row, a units row, then one row per launch."""
    rows = _csv_rows(text)
    if len(rows) < 3:
        return []
    header, rows = rows[0], rows[2:]
    column = {name: i for i, name in enumerate(header)}
    by_metric = {metric: name for name, metric in METRICS.items()}
    results = []
    for row in rows:
        values, stalls = {}, {}
        for metric, i in column.items():
            value = _number(row[i]) if i < len(row) else None
            if value is None:
                continue
            if metric in by_metric:
                values[by_metric[metric]] = value
            elif metric.startswith(STALL_PREFIX) and metric.endswith(STALL_SUFFIX):
                stalls[metric[len(STALL_PREFIX):-len(STALL_SUFFIX)]] = value
        results.append(NcuMetrics(row[column["Kernel Name"]] if "Kernel Name" in column else "", values,
                                  dict(sorted(stalls.items(), key=lambda kv: -kv[1]))))
    return results


def _samples_column(header: list[str]) -> int | None:
    """Warp Stall Sampling (All Samples), called (All Cycles) by older versions."""
    return next((i for i, name in enumerate(header) if name.startswith("Warp Stall Sampling (All")), None)


def hot_lines_from_sass(fn, arch: str, samples: dict[int, Samples]) -> list[tuple[str, float]]:
    """(kernel source line, stall samples) hottest first, from ncu's per-instruction samples mapped
    through the cubin's line table: for where ncu's CUDA source page has no lines to name."""
    from ..runtime.sass import sass_by_line
    totals = [(line.source, sum(samples[i.offset].samples for i in line.instructions if i.offset in samples))
              for line in sass_by_line(fn, arch=arch) if line.line is not None]
    return sorted([t for t in totals if t[1] > 0], key=lambda t: -t[1])


def parse_source(text: str) -> list[tuple[str, float]]:
    """`ncu --page source --csv --print-source cuda`: one row per source line; the stall-sampling column
    gives its hot spots. Lines without samples are left out; the hottest come first."""
    rows = _csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    samples = _samples_column(header)
    source = next((i for i, name in enumerate(header) if name == "Source"), None)
    if samples is None or source is None:
        return []
    hot = [(row[source], _number(row[samples]) or 0.0) for row in rows[1:] if len(row) > max(samples, source)]
    return sorted([h for h in hot if h[1] > 0], key=lambda h: -h[1])


def parse_sass_source(text: str) -> dict[int, Samples]:
    """`ncu --page source --csv --print-source sass`: a "Kernel Name" row, a header, then one row per
    instruction in code order with its address, its text, its stall samples and a `stall_<reason>`
    column per reason. Addresses are where the code was loaded; the offset in the kernel (as nvdisasm
    numbers it) is the distance from the first."""
    rows = _csv_rows(text)
    at = next((k for k, row in enumerate(rows) if "Address" in row and "Source" in row), None)
    if at is None:
        return {}
    header = rows[at]
    address, source, samples = header.index("Address"), header.index("Source"), _samples_column(header)
    reasons = {i: name[len("stall_"):] for i, name in enumerate(header)
               if name.startswith("stall_") and not name.endswith("(Not Issued)")}
    if samples is None:
        return {}
    found, start = {}, None
    for row in rows[at + 1:]:
        if len(row) != len(header) or not row[address].startswith("0x"):
            continue
        where = int(row[address], 16)
        start = where if start is None else start
        stalls = {reason: _number(row[i]) or 0.0 for i, reason in reasons.items()}
        found[where - start] = Samples(_number(row[samples]) or 0.0,
                                       dict(sorted(((r, n) for r, n in stalls.items() if n), key=lambda rn: -rn[1])),
                                       row[source].strip())
    return found
