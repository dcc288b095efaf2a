"""fp8 mma on the GPU: cuTile's BatchMatMul sample's fp8 case against cuBLAS's fp8 GEMM.

    python3 benchmarks/probe/fp8_mma_probe.py [--sizes BATCHxMxKxN ...] [--tiles TMxTNxTK ...] [--repeat 50]

For each size and tile shape it runs `tileworkbench.kernels.batch_matmul` (the sample's kernel: 3-D
tile loads, float32 accumulator) on float8_e4m3fn inputs drawn as the sample draws them
(torch.randn(...).to(float8_e4m3fn)), once on the GPU's own path (wgmma on sm_90) and once as
generated for sm_89 (pipelined mma.sync), and prints per run: the codegen note of its mma, the
largest absolute and relative difference from torch._scaled_mm (scales 1, float32 out), how many
elements lie outside the sample's tolerance (rtol 1.3e-6, atol 1e-5), both results' largest error
against float64, and TFLOP/s of the kernel and of torch._scaled_mm (CUDA events, median).
The first size and tiles are the sample's: (4, 512, 256) @ (4, 256, 1024) in 128x256x128 tiles.
"""
from __future__ import annotations

import argparse
import statistics

import torch

import tileworkbench.tile as ct
from tileworkbench.kernels import batch_matmul
from tileworkbench.runtime import driver, launch

RTOL, ATOL = 1.3e-6, 1e-5  # torch.testing.assert_close's float32 defaults, which the sample uses


def _triple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.lower().split("x"))


def scaled_mm(a, b):
    one = torch.tensor(1.0, device=a.device)
    return torch.stack([torch._scaled_mm(a[i], b[i].t().contiguous().t(), scale_a=one, scale_b=one,
                                         out_dtype=torch.float32) for i in range(a.shape[0])])


def run_kernel(a, b, c, tiles):
    grid = (a.shape[0], ct.cdiv(a.shape[1], tiles[0]), ct.cdiv(b.shape[2], tiles[1]))
    ct.launch(torch.cuda.current_stream(), grid, batch_matmul, (a, b, c, *tiles))


def median_ms(fn, repeat: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


_GENERATE = launch.generate


def use_path(path: str):
    """Generate for the GPU's own arch ("default") or as for sm_89 ("mma.sync"), loading afresh."""
    launch.generate = _GENERATE if path == "default" else (
        lambda fn, threads=None, arch=None: _GENERATE(fn, threads=threads, arch="sm_89"))
    launch._loaded.clear()
    batch_matmul.launchers.clear()


def mma_note(a, b, c, tiles, path: str) -> str:
    fn = batch_matmul.specialize((a, b, c, *tiles))
    arch = "sm_89" if path == "mma.sync" else driver.device_arch()
    return next(text for _, text in _GENERATE(fn, arch=arch).notes if text.startswith("mma "))


def probe(size, tiles, path: str, repeat: int):
    batch, m, k, n = size
    torch.manual_seed(0)
    a = torch.randn(batch, m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(batch, k, n, device="cuda").to(torch.float8_e4m3fn)
    c = torch.empty(batch, m, n, device="cuda", dtype=torch.float32)
    use_path(path)
    run_kernel(a, b, c, tiles)
    ref = scaled_mm(a, b)
    exact = torch.matmul(a.double(), b.double())
    diff = (c - ref).abs()
    outside = (diff > ATOL + RTOL * ref.abs()).sum().item()
    flops = 2.0 * batch * m * n * k
    ours = median_ms(lambda: run_kernel(a, b, c, tiles), repeat)
    cublas = median_ms(lambda: scaled_mm(a, b), repeat)
    print(f"{'x'.join(map(str, size))} tiles {'x'.join(map(str, tiles))} [{path}]: {mma_note(a, b, c, tiles, path)}")
    print(f"  vs torch._scaled_mm: max abs {diff.max().item():.3e}, max rel "
          f"{(diff / ref.abs().clamp_min(1e-30)).max().item():.3e}, {outside} of {c.numel()} outside the sample's "
          f"tolerance -> {'PASS' if outside == 0 else 'FAIL'}")
    print(f"  vs float64: ours max abs {(c.double() - exact).abs().max().item():.3e}, torch._scaled_mm "
          f"{(ref.double() - exact).abs().max().item():.3e}")
    print(f"  TFLOP/s: ours {flops / ours / 1e9:.1f} ({ours:.3f} ms), torch._scaled_mm {flops / cublas / 1e9:.1f} "
          f"({cublas:.3f} ms)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", type=_triple, default=[(4, 512, 256, 1024), (8, 4096, 4096, 4096)])
    parser.add_argument("--tiles", nargs="+", type=_triple, default=[(128, 256, 128), (128, 128, 128), (128, 256, 64)])
    parser.add_argument("--paths", nargs="+", default=["default", "mma.sync"], choices=["default", "mma.sync"])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for size in args.sizes:
        for tiles in args.tiles:
            for path in args.paths:
                probe(size, tiles, path, args.repeat)


if __name__ == "__main__":
    main()
