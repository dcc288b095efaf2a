"""What the results depend on: the device, driver, CUDA and library versions, the commit, and the GPU's
clocks, temperature and power (read with nvidia-smi, never changed)."""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

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
        head = open(os.path.join(repo, ".git", "HEAD")).read().strip()
        if head.startswith("ref: "):
            return open(os.path.join(repo, ".git", head[5:])).read().strip()[:12]
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
    env = {"device": props.name, "compute capability": f"{props.major}.{props.minor}", "sms": props.multi_processor_count,
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
