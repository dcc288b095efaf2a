"""Registers, spills, occupancy and main-loop instruction mix of the kernels of cuTile's LayerNorm, MoE and
attention samples and of tileworkbench's matmul, as tileworkbench compiles them for the peer benchmark's
sizes. No GPU needed (NVRTC and nvdisasm).

    python3 benchmarks/probe/sample_resources.py CUTILE_SAMPLES_DIR [--arch sm_90] [--only layer_norm,fmha]

One line per kernel specialization: threads per block, registers per thread, spill stores/loads and the
stack frame (bytes per thread), dynamic shared memory, blocks per SM and what limits them; for a kernel
with a loop around tensor-core mmas, the instruction count of that loop by class (attention_sass_mix.py's
classes). Spills and a loop's conversions and integer work are what to look at first.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def specializations(samples: Path):
    """(label, specialized function) of each kernel, with arrays of the peer benchmark's shapes and dtypes."""
    from ml_dtypes import bfloat16
    from published import load

    import tileworkbench.kernels as kernels
    f32, i32 = np.float32, np.int32
    ln = load(samples / "LayerNorm.py", ["layer_norm_fwd", "layer_norm_bwd_dx_partial_dwdb", "layer_norm_bwd_dwdb"],
              cuda_tile="tileworkbench")
    rows, cols = 8192, 4096
    x, w, stat = np.zeros((rows, cols), bfloat16), np.zeros(cols, bfloat16), np.zeros(rows, f32)
    partial, locks = np.zeros((64, cols), f32), np.zeros(64, i32)
    yield "layer_norm_fwd", ln.layer_norm_fwd.specialize((x, w, w, x, stat, stat, 1e-5, 1024))
    yield "layer_norm_bwd_dx_partial_dwdb", ln.layer_norm_bwd_dx_partial_dwdb.specialize(
        (x, x, partial, partial, x, w, stat, stat, locks, 1024))
    yield "layer_norm_bwd_dwdb", ln.layer_norm_bwd_dwdb.specialize((partial, partial, w, w, 32, 1024))

    moe = load(samples / "MoE.py", ["fused_moe_kernel", "silu_and_mul_kernel"], cuda_tile="tileworkbench")
    tokens, experts, topk, hidden, inter = 512, 64, 8, 512, 1024
    padded = tokens * topk + experts * 127  # sorted ids, padded to whole 128-row tiles per expert
    ids, weights = np.zeros(padded, i32), np.zeros(tokens * topk, bfloat16)
    blocks_of = np.zeros(padded // 128, i32)
    for label, a, b, c, replicas, weighted in (
            ("up", np.zeros((tokens, hidden), bfloat16), np.zeros((experts, 2 * inter, hidden), bfloat16),
             np.zeros((tokens * topk, 2 * inter), bfloat16), topk, False),
            ("down", np.zeros((tokens * topk, inter), bfloat16), np.zeros((experts, hidden, inter), bfloat16),
             np.zeros((tokens * topk, hidden), bfloat16), 1, True)):
        yield f"fused_moe_kernel ({label})", moe.fused_moe_kernel.specialize(
            (a, b, c, weights, ids, blocks_of, replicas, weighted, 128, 128, 64))
    half = np.zeros((tokens * topk, inter), bfloat16)
    yield "silu_and_mul_kernel", moe.silu_and_mul_kernel.specialize((half, half, half, inter))

    fmha = load(samples / "AttentionFMHA.py", ["fmha_kernel"], cuda_tile="tileworkbench").fmha_kernel
    for d, dtype, causal in ((64, np.float16, False), (128, np.float16, False), (128, bfloat16, False),
                             (128, bfloat16, True)):
        q = np.zeros((4, 16, 4096, d), dtype)
        yield (f"fmha_kernel d{d} {np.dtype(dtype).name}{' causal' if causal else ''}",
               fmha.specialize((q, q, q, q, 1.0 / math.sqrt(d), 0, d, 16, 128, 128, 1, causal, True)))
    for side in (4096, 8192):
        a = np.zeros((side, side), bfloat16)
        yield f"matmul {side}^3 bf16 128x256x64", kernels.matmul.specialize((a, a, a, 128, 256, 64))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples", type=Path, help="cuTile's samples/ folder")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--only", default="", help="comma-separated parts of kernel labels to keep")
    args = parser.parse_args(argv)
    from attention_sass_mix import classify, instructions, main_loop

    from tileworkbench.runtime.launch import build
    only = [part for part in args.only.split(",") if part]
    print(f"{'kernel':36} {'threads':>7} {'regs':>4} {'spill st/ld':>11} {'stack':>5} {'smem':>6} "
          f"{'blocks/SM':>9} limiter")
    for label, fn in specializations(args.samples):
        if only and not any(part in label for part in only):
            continue
        compiled = build(fn, args.arch)
        r, o = compiled.resources, compiled.occupancy
        print(f"{label:36} {compiled.threads:7} {r.registers:4} {f'{r.spill_stores}/{r.spill_loads}':>11} "
              f"{r.local_bytes:5} {compiled.shared_bytes:6} {o.blocks_per_sm:9} {o.limiter}", flush=True)
        try:
            loop = main_loop(*instructions(compiled.asm["sass"]))
        except SystemExit:  # no tensor-core loop
            continue
        mix = ", ".join(f"{name} {count}" for name, count in classify(loop).most_common())
        print(f"    main loop, {len(loop)} instructions: {mix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
