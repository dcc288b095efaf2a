"""GPU backend speed, side by side with peers on the same buffers, in one run.

    python benchmarks/gpu_backend.py            # on a machine with a CUDA GPU (CuPy; torch optional)

Each implementation is checked against a reference on fresh random data before it is timed.
Timing: CUDA events around each launch, after warm-up, L2 flushed outside the timed region,
median with p10/p90 over many repetitions. Ratios are against the device-to-device copy
(memory-bound cases) and against torch.matmul / cuBLAS (matmul).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import cupy as cp
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.kernels import matmul, row_gather, row_load, softmax, transpose, vector_add
from tileworkbench.profile import time_launches

try:
    import torch
except ImportError:  # the peers that need torch are skipped
    torch = None

def timed(fn, reps=50, warmup=5):
    """Median, p10, p90 in milliseconds (CUDA events, L2 flushed before each repetition)."""
    t = time_launches(fn, repetitions=reps, warmup=warmup, flush_l2=True)
    return t.median_ms, t.p10_ms, t.p90_ms


MATMUL_TILES = [(64, 64, 32), (128, 128, 32), (128, 128, 64), (128, 256, 32), (128, 256, 64)]
BF16_TILES = MATMUL_TILES[2:]  # the large-matmul candidates


def launcher(kernel, grid, args):
    stream = cp.cuda.get_current_stream()
    return lambda: ct.launch(stream, grid, kernel, args)


def main():
    rows = []
    stream = cp.cuda.get_current_stream()

    def record(case, impl, t, nbytes=None, flops=None, ref=None):
        ms, p10, p90 = t
        row = {"case": case, "impl": impl, "ms": ms, "p10": p10, "p90": p90}
        if nbytes:
            row["GB/s"] = nbytes / ms / 1e6
        if flops:
            row["TFLOP/s"] = flops / ms / 1e9
        rows.append(row)

    n = 1 << 28
    a, b = cp.random.rand(n, dtype=cp.float32), cp.random.rand(n, dtype=cp.float32)
    c = cp.empty_like(a)
    copy_t = timed(lambda: cp.copyto(c, a))
    record("copy 2^28 f32", "cupy copy", copy_t, nbytes=2 * a.nbytes)
    for tile in (1024, 2048, 4096, 8192):
        ct.launch(stream, (n // tile,), vector_add, (a, b, c, tile))
        assert cp.array_equal(c, a + b)
        record("vector add 2^28 f32", f"tileworkbench {tile}",
               timed(launcher(vector_add, (n // tile,), (a, b, c, tile))), nbytes=3 * a.nbytes)
    record("vector add 2^28 f32", "cupy", timed(lambda: cp.add(a, b, out=c)), nbytes=3 * a.nbytes)
    a = b = c = None  # frees the device memory before the next case

    m = 16384
    x = cp.random.rand(m, m, dtype=cp.float32)
    y = cp.empty_like(x)
    ct.launch(stream, (m // 64, m // 64), transpose, (x, y, 64))
    assert cp.array_equal(y, x.T)
    record("transpose 16384^2 f32", "tileworkbench", timed(launcher(transpose, (m // 64, m // 64), (x, y, 64))),
           nbytes=2 * x.nbytes)
    record("transpose 16384^2 f32", "cupy", timed(lambda: cp.copyto(y, x.T)), nbytes=2 * x.nbytes)
    x = y = None  # frees the device memory before the next case

    table = cp.random.rand(1 << 20, 256, dtype=cp.float32)
    ids = cp.random.randint(0, 1 << 20, 1 << 18, dtype=cp.int32)
    out = cp.empty((1 << 18, 256), cp.float32)
    ct.launch(stream, (1 << 18,), row_gather, (table, ids, out, 256))
    assert cp.array_equal(out, table[ids])
    record("row gather 2^18 x 256 f32", "tileworkbench gather", timed(launcher(row_gather, (1 << 18,), (table, ids, out, 256))),
           nbytes=2 * out.nbytes)
    out.fill(0)
    ct.launch(stream, (1 << 18,), row_load, (table, ids, out, 256))
    assert cp.array_equal(out, table[ids])
    record("row gather 2^18 x 256 f32", "tileworkbench load", timed(launcher(row_load, (1 << 18,), (table, ids, out, 256))),
           nbytes=2 * out.nbytes)
    record("row gather 2^18 x 256 f32", "cupy take", timed(lambda: cp.take(table, ids, axis=0, out=out)),
           nbytes=2 * out.nbytes)
    table = ids = out = None  # frees the device memory before the next case

    x = cp.random.randn(32768, 4096, dtype=cp.float32)
    y = cp.empty_like(x)
    ct.launch(stream, (32768,), softmax, (x, y, 4096))
    ref = cp.exp(x - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    assert float(cp.abs(y - ref).max()) < 1e-5
    record("softmax 32768x4096 f32", "tileworkbench", timed(launcher(softmax, (32768,), (x, y, 4096)), reps=20),
           nbytes=2 * x.nbytes)
    if torch is not None:
        tx = torch.as_tensor(x, device="cuda")
        record("softmax 32768x4096 f32", "torch", timed(lambda: torch.softmax(tx, dim=1), reps=20), nbytes=2 * x.nbytes)
    x = y = ref = None  # frees the device memory before the next case

    size = 4096
    A = cp.random.randn(size, size, dtype=cp.float32).astype(cp.float16)
    B = cp.random.randn(size, size, dtype=cp.float32).astype(cp.float16)
    C = cp.empty((size, size), cp.float16)
    flops = 2 * size ** 3
    ref = A.astype(cp.float32) @ B.astype(cp.float32)
    for tm, tn, tk in MATMUL_TILES:
        grid = (size // tm, size // tn)
        C.fill(cp.nan)
        ct.launch(stream, grid, matmul, (A, B, C, tm, tn, tk))
        err = float(cp.linalg.norm(C.astype(cp.float32) - ref) / cp.linalg.norm(ref))
        if not err < 1e-2:
            print(f"matmul f16 {tm}x{tn}x{tk}: WRONG RESULT, relative error {err}")
            continue
        record("matmul 4096^3 f16", f"tileworkbench {tm}x{tn}x{tk}",
               timed(launcher(matmul, grid, (A, B, C, tm, tn, tk)), reps=10), flops=flops)
    record("matmul 4096^3 f16", "cupy (cuBLAS)", timed(lambda: cp.matmul(A, B, out=C), reps=20), flops=flops)
    if torch is not None:
        for size in (4096, 8192):
            tA = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
            tB = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
            tC = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
            flops = 2 * size ** 3
            ref = tA.float() @ tB.float()
            for tm, tn, tk in BF16_TILES:
                grid = (size // tm, size // tn)
                tC.fill_(float("nan"))
                ct.launch(stream, grid, matmul, (tA, tB, tC, tm, tn, tk))
                err = float((tC.float() - ref).norm() / ref.norm())
                if not err < 1e-2:
                    print(f"matmul bf16 {size} {tm}x{tn}x{tk}: WRONG RESULT, relative error {err}")
                    continue
                record(f"matmul {size}^3 bf16", f"tileworkbench {tm}x{tn}x{tk}",
                       timed(launcher(matmul, grid, (tA, tB, tC, tm, tn, tk)), reps=5), flops=flops)
            record(f"matmul {size}^3 bf16", "torch (cuBLAS)", timed(lambda: torch.matmul(tA, tB, out=tC), reps=20),
                   flops=flops)
            tA = tB = tC = ref = None  # frees the device memory before the next case

    # compile latency in a fresh process: cold (empty disk cache) and a disk-cache hit
    env = dict(os.environ, TILEWORKBENCH_CACHE_DIR="/tmp/tw-bench-cache")
    probe = ("import time, numpy as np; from tileworkbench.kernels import vector_add; from tileworkbench.runtime.launch import build;"
             "x = np.zeros(1024, np.float32); fn = vector_add.specialize((x, x, x, 1024));"
             "t = time.perf_counter(); build(fn, 'sm_90'); print(time.perf_counter() - t)")
    subprocess.run(["rm", "-rf", "/tmp/tw-bench-cache"])
    for label in ("cold compile", "disk cache hit"):
        result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
        rows.append({"case": "compile vector add, new process", "impl": label, "ms": float(result.stdout.split()[-1]) * 1e3})
    # host launch overhead: many launches of a tiny kernel, wall clock per launch (best of 3 rounds)
    def per_launch(go, n=20000):
        go()
        best = float("inf")
        for _ in range(3):
            stream.synchronize()
            t = time.perf_counter()
            for _ in range(n):
                go()
            stream.synchronize()
            best = min(best, (time.perf_counter() - t) / n)
        return best * 1e3

    tiny = cp.zeros(128, cp.float32)
    rows.append({"case": "host launch overhead", "impl": "tileworkbench (3 arrays + int)",
                 "ms": per_launch(launcher(vector_add, (1,), (tiny, tiny, tiny, 128)))})
    one = cp.RawKernel(r'extern "C" __global__ void k(float* a) { a[threadIdx.x] += 1.0f; }', "k")
    rows.append({"case": "host launch overhead", "impl": "cupy RawKernel (1 array)",
                 "ms": per_launch(lambda: one((1,), (128,), (tiny,)))})
    same = cp.RawKernel(r'extern "C" __global__ void k(float* c, const float* a, const float* b, int n) '
                        r'{ int i = threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }', "k")
    n = np.int32(128)
    rows.append({"case": "host launch overhead", "impl": "cupy RawKernel (3 arrays + int)",
                 "ms": per_launch(lambda: same((1,), (128,), (tiny, tiny, tiny, n)))})

    out_dir = os.environ.get("OUT", ".")
    with open(os.path.join(out_dir, "gpu_backend.json"), "w") as f:
        json.dump({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": rows}, f, indent=1)
    copy_gbs = rows[0]["GB/s"]
    print(f"{'case':42} {'impl':32} {'ms':>9} {'p10-p90':>17} {'GB/s':>7} {'xcopy':>6} {'TFLOP/s':>8}")
    for r in rows:
        gbs = r.get("GB/s")
        spread = f"{r['p10']:.3f}-{r['p90']:.3f}" if "p10" in r else ""
        print(f"{r['case']:42} {r['impl']:32} {r['ms']:9.4f} {spread:>17} {gbs or 0:7.0f} "
              f"{(gbs or 0) / copy_gbs:6.2f} {r.get('TFLOP/s', 0):8.1f}")


if __name__ == "__main__":
    main()
