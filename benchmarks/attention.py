"""Attention forward: cuTile's AttentionFMHA sample kernel, unchanged, against torch SDPA.

    python3 benchmarks/attention.py CUTILE_SAMPLES_DIR [--impl tileworkbench|cutile] [--quick] [--json OUT]

The kernel (`fmha_kernel` of AttentionFMHA.py in a checkout of cuTile's samples, fetched separately)
is read from that file and launched as the sample's own wrapper launches it (one block per 128 query
rows and head). With --impl tileworkbench it runs through the `cuda.tile` alias; with --impl cutile
it runs under a real cuTile install (source .cutile/setup.sh first; see prepare_cutile.sh). Each
case is checked against torch's SDPA (flash backend), then timed with CUDA events, median of rounds.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path


def kernel_module(samples: Path):
    """The sample file's kernel and what it needs (not its tuning or benchmark code): benchmarks/published.py."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from published import load
    return load(samples / "AttentionFMHA.py", ["fmha_kernel"])


def launch(ct, torch, kernel, q, k, v, causal: bool, tile_m: int = 128, tile_n: int = 128):
    """The sample wrapper's launch: grid (query tiles, batch * heads)."""
    batch, heads, seq_q, d = q.shape
    out = torch.empty_like(q)
    grid = (math.ceil(seq_q / tile_m), batch * heads, 1)
    even_k = k.shape[2] % tile_n == 0
    ct.launch(torch.cuda.current_stream(), grid, kernel,
              (q, k, v, out, 1.0 / math.sqrt(d), 0, d, heads, tile_m, tile_n, 1, causal, even_k))
    return out


def cases(quick: bool):
    for d in (64, 128):
        for dtype in ("float16", "bfloat16"):
            for causal in (False, True):
                if quick and (dtype == "bfloat16" or causal):
                    continue
                yield dict(batch=4, heads=16, seq=4096 if not quick else 1024, d=d, dtype=dtype, causal=causal)


def median_ms(torch, run, rounds: int = 7, repetitions: int = 10) -> float:
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repetitions):
            run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / repetitions)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples", type=Path, help="cuTile's samples/ folder")
    parser.add_argument("--impl", choices=("tileworkbench", "cutile"), default="tileworkbench")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--occupancy", type=int, help="replace the kernel's occupancy hint (kernel.replace_hints)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.impl == "tileworkbench":
        from tileworkbench import cutile_alias
        cutile_alias.install()
    import cuda.tile as ct
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    kernel = kernel_module(args.samples).fmha_kernel
    if args.occupancy:
        kernel = kernel.replace_hints(occupancy=args.occupancy)
    rows = []
    for case in cases(args.quick):
        dtype = getattr(torch, case["dtype"])
        torch.manual_seed(0)
        shape = (case["batch"], case["heads"], case["seq"], case["d"])
        q, k, v = (torch.randn(shape, dtype=dtype, device="cuda") for _ in range(3))
        flops = 4 * math.prod(shape) * case["seq"] * (0.5 if case["causal"] else 1.0)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            want = sdpa(q, k, v, is_causal=case["causal"])
            sdpa_ms = median_ms(torch, lambda: sdpa(q, k, v, is_causal=case["causal"]))
        row = dict(case, sdpa_tflops=flops / sdpa_ms / 1e9)
        try:
            got = launch(ct, torch, kernel, q, k, v, case["causal"])
            torch.cuda.synchronize()
            row["max_error"] = float((got.float() - want.float()).abs().max())
            ms = median_ms(torch, lambda: launch(ct, torch, kernel, q, k, v, case["causal"]))
            row["tflops"] = flops / ms / 1e9
        except Exception as e:  # a failure is a result of the run, reported in the table
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        rows.append(row)
        label = f"{case['d']:>4} {case['dtype']:<9} {'causal' if case['causal'] else 'full':<6} S={case['seq']}"
        if "error" in row:
            print(f"{args.impl:<14} {label}  failed: {row['error']}", flush=True)
        else:
            print(f"{args.impl:<14} {label}  {row['tflops']:7.1f} TFLOP/s  SDPA {row['sdpa_tflops']:6.1f}  "
                  f"ratio {row['tflops'] / row['sdpa_tflops']:.2f}  max error {row['max_error']:.2e}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"impl": args.impl, "device": torch.cuda.get_device_name(), "rows": rows},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
