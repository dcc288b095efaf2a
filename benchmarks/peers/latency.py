"""Compile and cache latency (a small vector add launched in a new process) and host launch overhead
(an empty kernel launched back to back), for tileworkbench, cuTile, Triton and CuPy.

Each probe process imports its library before the clock starts, then times the first launch
(compile, or load from the disk cache, then launch and synchronize) and the second (the same
process's in-memory cache). A probe runs twice per sample on one fresh cache folder: first cold
(every library's cache pointed at the empty folder), then again in a new process (a disk-cache hit).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import tileworkbench.tile as tw

from .measure import describe

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
import tileworkbench.runtime.launch  # CuPy and NVRTC's bindings: imported before the clock, as the others
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
    if done.returncode:
        raise RuntimeError(" ".join((done.stderr or done.stdout).split()[-60:]))
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

        from .impls.cutile_kernels import empty
        stream = torch.cuda.current_stream()
        return lambda: ct.launch(stream, (1,), empty, (x,))

    def triton():
        from .impls.triton_kernels import empty
        return lambda: empty[(1,)](x)

    def cupy():
        import cupy

        from .impls.cupy_kernels import EMPTY
        kernel, cx = cupy.RawKernel(EMPTY, "empty"), cupy.asarray(x)
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
