"""Matmul with TMA pipeline stages against the cp.async stages and cuBLAS, on one GPU (sm_90 for TMA).

    python3 benchmarks/probe/tma_matmul_probe.py [--quick] [--sizes 4096,8192] [--repetitions 50]

First checks: tileworkbench's matmul (tileworkbench/kernels.py) on small integers, whose products
and sums are exact in float32, against NumPy bit for bit, for each tile configuration, dtype and
variant, on whole tiles and on a ragged shape; then both variants on random data against each
other bit for bit (the same wgmma groups in the same order). Then times both variants and
torch.matmul (cuBLAS) at each size, bf16 and f16 in and out (float32 accumulation), CUDA events,
median of rounds, and prints one table: TFLOP/s and the ratio to cuBLAS.

The two variants are loaded side by side (runtime.launch.load(fn, tma=True/False)); an ordinary
ct.launch takes the TMA one on sm_90 unless TILEWORKBENCH_NO_TMA=1 is set. Exit status 1 if a
check fails.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

TILES = [(128, 256, 64), (128, 128, 64), (128, 256, 32), (64, 256, 64), (128, 128, 128)]
VARIANTS = {"tma": True, "cp.async": False}


def _torch_dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "f16": torch.float16}[name]


def launcher(a, b, c, tiles, tma: bool):
    """A launcher of tileworkbench's matmul for these arguments, with or without TMA stages."""
    from tileworkbench.kernels import matmul
    from tileworkbench.runtime import driver
    from tileworkbench.runtime.launch import Launcher, load
    args = (a, b, c, *tiles)
    fn = matmul.specialize(args)
    return Launcher(fn, load(fn, tma=tma), args, driver.current_device()), args


def run(a, b, c, tiles, tma: bool):
    import torch
    from tileworkbench.tile import cdiv
    launch, args = launcher(a, b, c, tiles, tma)
    grid = (cdiv(c.shape[0], tiles[0]), cdiv(c.shape[1], tiles[1]), 1)
    stream = torch.cuda.current_stream()
    return launch, lambda: launch(stream, grid, args)


def path_taken(launch) -> str:
    """What actually ran: TMA stages, or cp.async (with the reason when it fell back)."""
    if not launch.gpu.compiled.tensor_maps:
        return "cp.async"
    return "tma" if launch.fallback is None else "cp.async (fallback: no tensor map describes an array)"


def check_exact(dtype: str, tiles, shape, tma: bool) -> tuple[bool, str]:
    import torch
    m, k, n = shape
    rng = np.random.default_rng(7)
    a64, b64 = rng.integers(-3, 4, (m, k)).astype(np.float64), rng.integers(-3, 4, (k, n)).astype(np.float64)
    a = torch.tensor(a64, dtype=_torch_dtype(dtype), device="cuda")
    b = torch.tensor(b64, dtype=_torch_dtype(dtype), device="cuda")
    c = torch.zeros((m, n), dtype=torch.float32, device="cuda")
    launch, go = run(a, b, c, tiles, tma)
    go()
    torch.cuda.synchronize()
    ok = np.array_equal(c.cpu().numpy(), (a64 @ b64).astype(np.float32))
    return ok, path_taken(launch)


def default_path() -> str:
    """The path an ordinary ct.launch of the matmul takes here (a kernel object of its own)."""
    import torch

    import tileworkbench.tile as ct
    from tileworkbench.kernels import matmul
    kernel = ct.kernel(matmul.__wrapped__)
    a = torch.zeros((256, 256), dtype=torch.bfloat16, device="cuda")
    ct.launch(torch.cuda.current_stream(), (2, 1), kernel, (a, a, a, 128, 256, 64))
    torch.cuda.synchronize()
    return path_taken(kernel.last_launcher)


def check_variants_agree(dtype: str, tiles) -> bool:
    import torch
    torch.manual_seed(0)
    a = torch.randn((1000, 700), device="cuda").to(_torch_dtype(dtype))
    b = torch.randn((700, 1200), device="cuda").to(_torch_dtype(dtype))
    out = []
    for tma in (True, False):
        c = torch.zeros((1000, 1200), dtype=torch.float32, device="cuda")
        run(a, b, c, tiles, tma)[1]()
        torch.cuda.synchronize()
        out.append(c.view(torch.int32).cpu())
    return bool(torch.equal(*out))


def time_ms(go, repetitions: int, rounds: int = 5) -> float:
    """The median over rounds of the mean time per call of `repetitions` back-to-back calls."""
    import torch
    for _ in range(3):
        go()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(rounds):
        start.record()
        for _ in range(repetitions):
            go()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / repetitions)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two tile configurations, 4096 only")
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--repetitions", type=int, default=20)
    options = parser.parse_args()
    import torch
    from tileworkbench.runtime import driver
    sizes = [4096] if options.quick else [int(s) for s in options.sizes.split(",")]
    tiles_list = TILES[:2] if options.quick else TILES
    print(f"device: {torch.cuda.get_device_name()} ({driver.device_arch()})")

    failures = 0
    print("\n== checks (exact: small integers vs NumPy; agree: TMA vs cp.async bit for bit on random data)")
    for dtype in ("bf16", "f16"):
        for tiles in tiles_list:
            for shape in ((512, 512, 1024), (1000, 328, 1200)):
                for variant, tma in VARIANTS.items():
                    ok, path = check_exact(dtype, tiles, shape, tma)
                    failures += not ok
                    print(f"  {'ok  ' if ok else 'FAIL'} exact {dtype} tiles {tiles} shape {shape} {variant}: ran {path}")
            agree = check_variants_agree(dtype, tiles)
            failures += not agree
            print(f"  {'ok  ' if agree else 'FAIL'} agree {dtype} tiles {tiles}")

    print(f"  ct.launch takes: {default_path()} (TILEWORKBENCH_NO_TMA={os.environ.get('TILEWORKBENCH_NO_TMA', '')!r})")

    print("\n== timing (TFLOP/s; x = ratio to torch.matmul)")
    print(f"  {'size':>5} {'dtype':>5} {'tiles':>12} {'variant':>9} {'regs':>5} {'smem KB':>8} {'ms':>8} "
          f"{'TFLOP/s':>8} {'x cuBLAS':>8}")
    for size in sizes:
        for dtype in ("bf16", "f16"):
            a = torch.randn((size, size), device="cuda").to(_torch_dtype(dtype))
            b = torch.randn((size, size), device="cuda").to(_torch_dtype(dtype))
            c = torch.empty((size, size), device="cuda", dtype=_torch_dtype(dtype))
            flop = 2 * size ** 3
            cublas_ms = time_ms(lambda: torch.matmul(a, b, out=c), options.repetitions)
            print(f"  {size:>5} {dtype:>5} {'cuBLAS':>12} {'':>9} {'':>5} {'':>8} {cublas_ms:8.3f} "
                  f"{flop / cublas_ms / 1e9:8.1f} {1.0:8.2f}")
            for tiles in tiles_list:
                for variant, tma in VARIANTS.items():
                    launch, go = run(a, b, c, tiles, tma)
                    ms = time_ms(go, options.repetitions)
                    r = launch.gpu.compiled
                    label = "x".join(map(str, tiles))
                    shown = variant if path_taken(launch) == variant else f"{variant}->{path_taken(launch)}"
                    print(f"  {size:>5} {dtype:>5} {label:>12} {shown:>9} {r.registers:>5} "
                          f"{launch.smem / 1024:8.1f} {ms:8.3f} {flop / ms / 1e9:8.1f} {cublas_ms / ms:8.2f}")
    print(f"\n{failures} check(s) failed" if failures else "\nall checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
