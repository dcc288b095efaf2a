"""float32 GEMM on tensor cores as cuTile code asks for it (operands cast to tfloat32, mma into float32),
through tileworkbench, real cuTile (where importable: `source .cutile/setup.sh`) and cuBLAS's TF32 GEMM
(torch.matmul with TF32 allowed), one process, the same inputs; median milliseconds and TFLOP/s.

    python benchmarks/probe/tf32_gemm.py --size 4096 --tiles 64,64,32 128,128,32
"""
from __future__ import annotations

import argparse
import importlib
import statistics

import torch

GEMM = '''
def gemm(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    for kk in range(ct.cdiv(a.shape[1], TK)):
        at = ct.astype(ct.load(a, (bm, kk), (TM, TK), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        bt = ct.astype(ct.load(b, (kk, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO), ct.tfloat32)
        acc = ct.mma(at, bt, acc)
    ct.store(c, (bm, bn), acc)
'''


def kernel_from(module_name: str, tmpdir):
    """The gemm kernel defined from a file (cuTile reads its kernels' source) with `ct` = module_name."""
    import importlib.util
    path = tmpdir / f"tf32_gemm_{module_name.replace('.', '_')}.py"
    path.write_text(f"import {module_name} as ct\n\n@ct.kernel{GEMM}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gemm, importlib.import_module(module_name).launch


def median_ms(run, repetitions=30) -> float:
    for _ in range(3):
        run()
    times = []
    for _ in range(repetitions):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main() -> None:
    import tempfile
    from pathlib import Path
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--tiles", nargs="+", default=["64,64,32", "128,128,32"])
    args = parser.parse_args()
    n = args.size
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    reference = a.double() @ b.double()
    flops = 2 * n ** 3
    print(f"{torch.cuda.get_device_name()}: {n}^3 float32 with tfloat32 operands")
    rows = [("cuBLAS (torch, TF32)", "", median_ms(lambda: a @ b), a @ b)]
    with tempfile.TemporaryDirectory() as tmp:
        for module_name in ("tileworkbench.tile", "cuda.tile"):
            try:
                kernel, launch = kernel_from(module_name, Path(tmp))
            except ImportError:
                continue
            for tiles in args.tiles:
                tm, tn, tk = map(int, tiles.split(","))
                c = torch.empty(n, n, device="cuda")
                grid = (-(-n // tm), -(-n // tn), 1)
                stream = torch.cuda.current_stream()
                run = lambda: launch(stream, grid, kernel, (a, b, c, tm, tn, tk))  # noqa: E731
                try:
                    rows.append((module_name, tiles, median_ms(run), c))
                except Exception as e:  # noqa: BLE001 - a refusal is a row
                    print(f"{module_name} {tiles}: {type(e).__name__}: {str(e).splitlines()[0]}")
    print(f"{'implementation':24s} {'tiles':12s} {'ms':>9s} {'TFLOP/s':>9s} {'rel. error':>11s}")
    for name, tiles, ms, out in rows:
        error = ((out.double() - reference).norm() / reference.norm()).item()
        print(f"{name:24s} {tiles:12s} {ms:9.3f} {flops / ms / 1e9:9.1f} {error:11.2e}")


if __name__ == "__main__":
    main()
