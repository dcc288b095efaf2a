"""Tensor-core matmul: correctness on awkward shapes, then a tile sweep against cuBLAS, in one run.

    python benchmarks/matmul_sweep.py [tm,tn,tk ...]     # on a machine with a CUDA GPU and PyTorch

Every result is checked against a float32 reference (relative Frobenius error) on fresh random
data before it is timed; timing is CUDA events, median over repetitions after warm-up.
"""
from __future__ import annotations

import sys

import cupy as cp
import torch

import tileworkbench.tile as ct
from tileworkbench.kernels import matmul
from tileworkbench.profile import time_launches

TILES = [(128, 128, 32), (128, 128, 64), (128, 256, 32), (128, 256, 64), (256, 128, 32)]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def run(a, b, c, tiles):
    tm, tn, tk = tiles
    grid = (-(-a.shape[0] // tm), -(-b.shape[1] // tn))
    stream = cp.cuda.get_current_stream()  # the legacy default stream, as torch's
    return lambda: ct.launch(stream, grid, matmul, (a, b, c, tm, tn, tk))


def error(c, a, b):
    ref = a.float() @ b.float()
    return float((c.float() - ref).norm() / ref.norm())


def check(m, n, k, dtype, tiles):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    run(a, b, c, tiles)()
    torch.cuda.synchronize()
    err = error(c, a, b)
    ok = err < 1e-2
    print(f"check {m}x{n}x{k} {dtype} tiles {tiles}: rel err {err:.2e} {'ok' if ok else 'FAIL'}", flush=True)
    return ok


def median_ms(fn):
    return time_launches(fn, repetitions=20, warmup=3, flush_l2=True).median_ms


def main():
    tiles_list = [tuple(map(int, t.split(","))) for t in sys.argv[1:]] or TILES
    ok = all([check(96, 72, 80, torch.float16, (32, 32, 16)), check(96, 72, 80, torch.bfloat16, (32, 32, 16)),
              check(300, 200, 136, torch.bfloat16, (128, 128, 32)), check(256, 512, 256, torch.float16, (64, 64, 32)),
              *(check(512, 768, 320, torch.bfloat16, t) for t in tiles_list)])
    rows = []
    for size in (4096, 8192):
        for name, dtype in DTYPES.items():
            a = torch.randn(size, size, device="cuda", dtype=dtype)
            b = torch.randn(size, size, device="cuda", dtype=dtype)
            c = torch.empty(size, size, device="cuda", dtype=dtype)
            flops = 2 * size ** 3
            cublas = flops / median_ms(lambda: torch.matmul(a, b, out=c)) / 1e9
            rows.append((f"{size}^3 {name}", "cuBLAS", cublas, 1.0))
            for tiles in tiles_list:
                fn = run(a, b, c, tiles)
                fn()
                err = error(c, a, b)
                tflops = flops / median_ms(fn) / 1e9
                rows.append((f"{size}^3 {name}", f"{tiles} err {err:.1e}", tflops, tflops / cublas))
            a = b = c = None  # frees the device memory before the next case
    print(f"{'case':<14} {'impl':<28} {'TFLOP/s':>8} {'vs cuBLAS':>9}")
    for case, impl, tflops, ratio in rows:
        print(f"{case:<14} {impl:<28} {tflops:8.1f} {ratio:9.2f}")
    print("all checks passed" if ok else "SOME CHECKS FAILED")


if __name__ == "__main__":
    main()
