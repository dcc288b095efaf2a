"""cuTile's samples against tileworkbench: run each sample script unchanged through the `cuda.tile`
alias with its `--correctness-check` and print a table (sample, mode, pass/fail, seconds, first error).

    git clone https://github.com/NVIDIA/cutile-python /tmp/cutile-python     # never into this repo
    python benchmarks/cutile_samples.py /tmp/cutile-python/samples               # on the GPU
    python benchmarks/cutile_samples.py /tmp/cutile-python/samples --interpret   # GPU tensors, interpreter
    python benchmarks/cutile_samples.py /tmp/cutile-python/samples --cpu         # no GPU at all
    python benchmarks/cutile_samples.py /tmp/cutile-python/samples --cpu --compile sm_90   # and NVRTC each kernel
    python benchmarks/cutile_samples.py /tmp/cutile-python/samples MatMul FFT --gpu --interpret
    python benchmarks/cutile_samples.py /tmp/cutile-python/samples --bench --json bench.json

Modes: `gpu` (the default) launches on the device; `interpret` sets TILEWORKBENCH_INTERPRET=1 (every
launch on the interpreter, CUDA tensors copied to the host and back); `cpu` needs no GPU: the
interpreter, with the samples' CUDA tensors made in host memory and their torch references computed
as accurately as on CUDA (benchmarks/cutile_cpu_torch.py); `--compile sm_90` also compiles every
kernel they launch with NVRTC, as the GPU would, and checks its shared memory against the arch.
Several modes may be given; each runs every sample. The samples take no size arguments, so they run
at their own sizes; `--timeout` bounds each run, and a run that passes it is reported as such.

`--bench` also collects the timing lines the samples print (e.g. AttentionFMHA's benchmark) under
tileworkbench and, where a real cuTile is installed, under cuTile (the same script without the alias).
Not part of the test suite (pytest collects tests/ only).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SAMPLES = ("VectorAddition", "Transpose", "MatMul", "BatchMatMul", "LayerNorm", "AttentionFMHA", "FFT", "MoE")
MODES = ("gpu", "interpret", "cpu")
HERE = Path(__file__).resolve().parent
TIMING = re.compile(r"(?P<what>[^:\n]*?):\s*(?P<ms>[0-9.]+)\s*ms\b")
COMPILED = re.compile(r"^\[compile (?P<arch>\w+)\] (?P<kernel>\w+): (?P<verdict>ok|failed)(?P<detail>.*)$", re.M)


@dataclass
class Run:
    sample: str
    mode: str
    outcome: str  # "pass", "fail" or "timeout"
    seconds: float
    error: str
    checks: int  # "Correctness check passed" lines printed
    timings: dict
    compiled: list  # [kernel, "ok" or "failed", detail] per specialization compiled offline (--compile)


def sample_command(script: Path, mode: str, implementation: str = "tileworkbench", compile_for: str | None = None
                   ) -> list[str]:
    """The command that runs `script` in `mode`: through the alias (tileworkbench), or as it is (cuTile)."""
    if implementation == "cuTile":
        return [sys.executable, "-u", str(script), "--correctness-check"]
    launcher = [str(HERE / "cutile_cpu_torch.py")] + (["--compile-for", compile_for] if compile_for else []) \
        if mode == "cpu" else ["-m", "tileworkbench.cutile_alias"]
    return [sys.executable, "-u", *launcher, str(script), "--correctness-check"]


def sample_environment(mode: str, force: bool) -> dict:
    env = dict(os.environ)
    env.pop("TILEWORKBENCH_INTERPRET", None)
    if mode in ("interpret", "cpu"):
        env["TILEWORKBENCH_INTERPRET"] = "1"
    if force:
        env["TILEWORKBENCH_CUTILE_ALIAS"] = "force"
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent)] +
                                        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def first_error(output: str) -> str:
    """The line that names the failure: the last exception line of a traceback, else the last line."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    exceptions = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b", line)]
    return ((exceptions or lines or [""])[-1])[:200]


def timings(output: str) -> dict:
    """The `name: N ms` lines a sample prints about its own speed."""
    return {m["what"].strip(): float(m["ms"]) for m in TIMING.finditer(output)}


def compiled(output: str) -> list:
    return [[m["kernel"], m["verdict"], m["detail"].strip(" :")] for m in COMPILED.finditer(output)]


def run_sample(samples_dir: Path, sample: str, mode: str, timeout: float, force: bool = False,
               implementation: str = "tileworkbench", compile_for: str | None = None) -> Run:
    started = time.perf_counter()
    try:
        done = subprocess.run(sample_command(samples_dir / f"{sample}.py", mode, implementation, compile_for),
                              cwd=samples_dir,
                              env=sample_environment(mode, force), capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as timed_out:
        output = (timed_out.stdout or b"").decode(errors="replace") if isinstance(timed_out.stdout, bytes) \
            else timed_out.stdout or ""
        return Run(sample, mode, "timeout", time.perf_counter() - started,
                   f"ran past {timeout:.0f} s at its own sizes (after: {first_error(output) or 'no output'})",
                   output.count("Correctness check passed"), {}, [])
    seconds = time.perf_counter() - started
    output = done.stdout + done.stderr
    outcome = "pass" if done.returncode == 0 else "fail"
    return Run(sample, mode, outcome, seconds, "" if outcome == "pass" else first_error(done.stdout + "\n" + "\n".join(
        line for line in done.stderr.splitlines() if not COMPILED.match(line))),
               output.count("Correctness check passed"), timings(done.stdout), compiled(done.stderr))


def format_table(runs: list[Run], compile_for: str | None = None) -> str:
    compile_column = [f" compiled for {compile_for} |", "---|"] if compile_for else ["", ""]
    lines = ["| sample | mode | result | checks passed | seconds |" + compile_column[0] + " first error |",
             "|---|---|---|---:|---:|" + compile_column[1] + "---|"]
    for r in runs:
        error = r.error.replace("|", "\\|")
        failed = [f"{kernel}: {detail}" for kernel, verdict, detail in r.compiled if verdict == "failed"]
        built = f" {sum(v == 'ok' for _, v, _ in r.compiled)}/{len(r.compiled)}{' ' + failed[0] if failed else ''} |" \
            if compile_for else ""
        lines.append(f"| {r.sample} | {r.mode} | {r.outcome} | {r.checks} | {r.seconds:.1f} |{built} {error} |")
    passed = sum(r.outcome == "pass" for r in runs)
    lines += ["", f"{passed} of {len(runs)} runs pass"]
    return "\n".join(lines)


def format_bench(rows: list[tuple[str, Run]]) -> str:
    lines = ["| sample | implementation | timing | ms |", "|---|---|---|---:|"]
    for implementation, r in rows:
        if r.outcome != "pass":
            lines.append(f"| {r.sample} | {implementation} | ({r.outcome}) | |")
        lines += [f"| {r.sample} | {implementation} | {what} | {ms:.4f} |" for what, ms in r.timings.items()]
    return "\n".join(lines)


def real_cutile_installed() -> bool:
    try:
        return importlib.util.find_spec("cuda.tile") is not None
    except ModuleNotFoundError:
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples_dir", type=Path, help="a checkout of cuTile's samples/ folder")
    parser.add_argument("samples", nargs="*", help=f"samples to run (default: {', '.join(SAMPLES)})")
    for mode in MODES:
        parser.add_argument(f"--{mode}", action="store_true", help=f"run in {mode} mode" +
                            (" (the default when no mode is given)" if mode == "gpu" else ""))
    parser.add_argument("--compile", metavar="ARCH", help="with --cpu: also NVRTC-compile every kernel the samples "
                                                          "launch for ARCH (e.g. sm_90), shared memory checked")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per sample run")
    parser.add_argument("--force", action="store_true", help="shadow a real cuTile install")
    parser.add_argument("--bench", action="store_true", help="collect the samples' timing output "
                                                             "(tileworkbench on the GPU, and cuTile where installed)")
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_intermixed_args(argv)
    samples_dir = args.samples_dir.resolve()
    if not (samples_dir / "VectorAddition.py").exists():
        parser.error(f"{samples_dir} does not look like cuTile's samples/ folder (no VectorAddition.py)")
    unknown = sorted(set(args.samples) - set(SAMPLES))
    if unknown:
        parser.error(f"unknown samples {', '.join(unknown)}; choose from {', '.join(SAMPLES)}")
    modes = [m for m in MODES if getattr(args, m)] or ["gpu"]
    runs = []
    for mode in modes:
        for sample in args.samples or SAMPLES:
            runs.append(run_sample(samples_dir, sample, mode, args.timeout, args.force,
                                   compile_for=args.compile if mode == "cpu" else None))
            print(f"{sample} [{mode}]: {runs[-1].outcome} in {runs[-1].seconds:.1f} s {runs[-1].error}",
                  file=sys.stderr, flush=True)
    print(format_table(runs, args.compile))
    bench = []
    if args.bench:
        bench = [("tileworkbench", r) for r in runs if r.mode == "gpu"]
        if real_cutile_installed() and not args.force:
            bench += [("cuTile", run_sample(samples_dir, sample, "gpu", args.timeout, implementation="cuTile"))
                      for sample in args.samples or SAMPLES]
        print("\n" + format_bench(bench))
    if args.json:
        args.json.write_text(json.dumps({"runs": [asdict(r) for r in runs],
                                         "bench": [{"implementation": i, **asdict(r)} for i, r in bench]}, indent=1))
    return 0 if all(r.outcome == "pass" for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
