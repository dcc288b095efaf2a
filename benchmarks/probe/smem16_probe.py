"""Shared-memory paths of 16-bit tiles on one GPU: transposes, layer norm and the matmul epilogue.

    python3 benchmarks/probe/smem16_probe.py [--repetitions 20] [--size 8192]

What it exercises (tile.cuh, tile_mma.cuh): permutes of 8- and 16-bit tiles staged in whole
16-byte chunks at swizzled slots (transposes by `ct.transpose` of a loaded tile and by a load with
order="F"), a bf16 layer norm row held in registers, and the tensor-core accumulator stored
through rows padded by 16 bytes (every matmul's epilogue).

Each kernel is first checked against PyTorch (transposes bit for bit; layer norm and matmul within
rounding), then timed: CUDA events around each launch, L2 flushed before each, median of the
repetitions. Prints GB/s and the ratio to a torch copy of the same bytes (memory-bound cases) or
TFLOP/s and the ratio to torch.matmul (cuBLAS). About 30 s on an H100, most of it compiling.
Exit status 1 if a check fails.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import tileworkbench.tile as ct  # noqa: E402
from tileworkbench.kernels import layernorm, matmul, transpose  # noqa: E402


@ct.kernel
def transpose_tile(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    """Tile (i, j) of x, transposed by ct.transpose, is tile (j, i) of y. Grid: x's tiles."""
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (j, i), ct.transpose(ct.load(x, (i, j), (TM, TN))))


class Timer:
    def __init__(self, repetitions: int):
        import torch
        self.repetitions = repetitions
        self.flush = torch.empty(64 * 2**20, dtype=torch.int32, device="cuda")  # 256 MiB: more than any L2

    def median_ms(self, run) -> float:
        import torch
        for _ in range(3):
            run()
        samples = []
        for _ in range(self.repetitions):
            self.flush.zero_()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop))
        return statistics.median(samples)


def launch(kernel, grid, args):
    import torch
    stream = torch.cuda.current_stream()
    return lambda: ct.launch(stream, grid, kernel, args)


def row(case: str, impl: str, ms: float, gbytes: float | None = None, reference_ms: float | None = None,
        flops: float | None = None, ok: bool = True):
    rate = f"{gbytes / ms * 1e3:8.0f} GB/s" if gbytes else f"{flops / ms / 1e9:8.1f} TFLOP/s"
    ratio = f"{reference_ms / ms:5.2f}x" if reference_ms else "     "
    print(f"{case:34s} {impl:38s} {ms:8.4f} ms {rate} {ratio} {'ok' if ok else 'WRONG'}", flush=True)


def transposes(timer: Timer, size: int) -> bool:
    import torch
    ok_all = True
    for dtype, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        x = torch.randn(size, size, device="cuda").to(dtype)
        y = torch.empty_like(x)
        copy_ms = timer.median_ms(lambda: y.copy_(x))
        gbytes = 2 * x.numel() * x.element_size() / 1e9
        case = f"transpose {size}^2 {name}"
        row(case, "torch copy_ (reference)", copy_ms, gbytes)
        variants = [(f"load order=F, T={t}", transpose, (size // t, size // t), (x, y, t)) for t in (64, 128)]
        variants += [(f"ct.transpose, {tm}x{tn}", transpose_tile, (size // tm, size // tn), (x, y, tm, tn))
                     for tm, tn in ((64, 64), (128, 128), (128, 64), (64, 128))]
        for label, kernel, grid, args in variants:
            run = launch(kernel, grid, args)
            y.fill_(float("nan"))
            run()
            ok = torch.equal(y, x.t())
            ok_all &= ok
            row(case, label, timer.median_ms(run), gbytes, copy_ms, ok=ok)
    return ok_all


def layer_norm(timer: Timer, rows: int, cols: int) -> bool:
    import torch
    x = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
    w, b = torch.randn(cols, device="cuda").to(torch.bfloat16), torch.randn(cols, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    case = f"layernorm {rows}x{cols} bf16"
    gbytes = 2 * x.numel() * x.element_size() / 1e9
    copy_ms = timer.median_ms(lambda: y.copy_(x))
    row(case, "torch copy_ (reference)", copy_ms, gbytes)
    reference = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float(), 1e-5).to(torch.bfloat16)
    run = launch(layernorm, (rows,), (x, w, b, y, cols))
    y.fill_(float("nan"))
    run()
    ok = torch.allclose(y.float(), reference.float(), rtol=2e-2, atol=2e-2)
    row(case, f"kernels.layernorm N={cols}", timer.median_ms(run), gbytes, copy_ms, ok=ok)
    torch_ms = timer.median_ms(lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5))
    row(case, "torch layer_norm", torch_ms, gbytes, copy_ms)
    return ok


def matmuls(timer: Timer, side: int) -> bool:
    import torch
    a = torch.randn(side, side, device="cuda").to(torch.float16)
    b = torch.randn(side, side, device="cuda").to(torch.float16)
    flops = 2 * side**3
    case = f"matmul {side}^3 f16"
    cublas_ms = timer.median_ms(lambda: torch.matmul(a, b))
    row(case, "torch.matmul (cuBLAS, reference)", cublas_ms, flops=flops)
    reference = torch.matmul(a.float(), b.float())
    ok_all = True
    for out in (torch.float16, torch.float32):
        for tiles in ((128, 256, 64), (128, 128, 64)):
            c = torch.empty(side, side, device="cuda", dtype=out)
            run = launch(matmul, (side // tiles[0], side // tiles[1]), (a, b, c, *tiles))
            c.fill_(float("nan"))
            run()
            ok = torch.allclose(c.float(), reference, rtol=1e-2, atol=1e-1)
            ok_all &= ok
            row(case, f"{'x'.join(map(str, tiles))}, {str(out).split('.')[1]} out", timer.median_ms(run),
                reference_ms=cublas_ms, flops=flops, ok=ok)
    return ok_all


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--size", type=int, default=8192, help="transpose side")
    args = parser.parse_args(argv)
    import torch
    print(torch.cuda.get_device_name(), f"torch {torch.__version__}", flush=True)
    timer = Timer(args.repetitions)
    ok = transposes(timer, args.size)
    ok &= layer_norm(timer, 32768, 4096)
    ok &= matmuls(timer, 4096)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
