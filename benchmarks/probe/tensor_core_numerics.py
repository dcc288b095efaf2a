"""The tensor cores' arithmetic against the interpreter's model of it, cuBLAS and the tile library.

    python3 benchmarks/probe/tensor_core_numerics.py

Needs a GPU of sm_90, CuPy and PyTorch. Prints, one line per check, how many results agree bit for
bit (and how many fall outside torch.testing.assert_close's default tolerance, as cuTile's MatMul and
BatchMatMul samples check):

- mma.sync, one warp per 16x8 output tile along K in order, for float16, bfloat16 and tfloat32 inputs
  into float32, against `interp.tensor_cores.tensor_core_mma` (small integers first: every order sums
  them exactly, so that line checks the fragment layouts);
- cuBLAS (torch) at the sample's float16 and bfloat16 size against the model, and against one rounding
  of the exact float64 sum (what the interpreter did before the model);
- float8_e4m3fn: torch._scaled_mm (cuBLAS's fp8 GEMM, on the tensor cores) against the model, which
  starts every 128 products from zero;
- the tile library's mma on the CUDA cores (a batched matmul of 3-D tile loads, which the code generator
  does not give the tensor cores) for float16 and float8_e4m3fn against cuBLAS, at BatchMatMul's sizes.
"""
from __future__ import annotations

import argparse

import cupy as cp
import numpy as np
import torch

import tileworkbench.tile as ct
from tileworkbench.interp.tensor_cores import tensor_core_mma


@ct.kernel
def batch_matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """c[z] = a[z] @ b[z] in (TM, TN) tiles, 3-D loads (so the mma runs on the CUDA cores)."""
    z, i, j = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.cdiv(a.shape[2], TK)):
        x = ct.reshape(ct.load(a, (z, i, k), (1, TM, TK), padding_mode=ct.PaddingMode.ZERO), (TM, TK))
        y = ct.reshape(ct.load(b, (z, k, j), (1, TK, TN), padding_mode=ct.PaddingMode.ZERO), (TK, TN))
        acc = ct.mma(x, y, acc)
    ct.store(c, (z, i, j), ct.reshape(ct.astype(acc, c.dtype), (1, TM, TN)))

SOURCE = r"""
#include <cuda_fp16.h>
typedef unsigned int u32;
typedef unsigned short u16;

__device__ u32 pack16(const u16* p, int a, int b) { return (u32)p[a] | ((u32)p[b] << 16); }

// Fragment layouts of the PTX ISA: g = lane / 4 picks rows (A, C) or columns (B), t = lane % 4.
#define TILE_SETUP                                                                    \
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;                              \
    int m0 = blockIdx.y * 16, n0 = blockIdx.x * 8;                                    \
    float acc[4];                                                                     \
    int rows[4] = {m0 + g, m0 + g, m0 + g + 8, m0 + g + 8};                           \
    int cols[4] = {n0 + 2 * t, n0 + 2 * t + 1, n0 + 2 * t, n0 + 2 * t + 1};           \
    for (int i = 0; i < 4; ++i) acc[i] = C[rows[i] * N + cols[i]];

#define TILE_STORE                                                                    \
    for (int i = 0; i < 4; ++i) D[rows[i] * N + cols[i]] = acc[i];

#define MMA16(kind)                                                                   \
extern "C" __global__ void mma_##kind(const u16* A, const u16* B, const float* C, float* D,     \
                                      int M, int N, int K) {                          \
    TILE_SETUP                                                                        \
    for (int k = 0; k < K; k += 16) {                                                 \
        const u16* a = A + (m0 + g) * K + k + 2 * t;                                  \
        u32 a0 = pack16(a, 0, 1), a1 = pack16(a, 8 * K, 8 * K + 1);                   \
        u32 a2 = pack16(a, 8, 9), a3 = pack16(a, 8 * K + 8, 8 * K + 9);               \
        const u16* b = B + (k + 2 * t) * N + n0 + g;                                  \
        u32 b0 = pack16(b, 0, N), b1 = pack16(b, 8 * N, 9 * N);                       \
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." #kind "." #kind ".f32 " \
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"          \
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])         \
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));         \
    }                                                                                 \
    TILE_STORE                                                                        \
}
MMA16(f16)
MMA16(bf16)

extern "C" __global__ void mma_tf32(const u32* A, const u32* B, const float* C, float* D,
                                    int M, int N, int K) {
    TILE_SETUP
    for (int k = 0; k < K; k += 8) {
        const u32* a = A + (m0 + g) * K + k + t;
        const u32* b = B + (k + t) * N + n0 + g;
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                     : "r"(a[0]), "r"(a[8 * K]), "r"(a[4]), "r"(a[8 * K + 4]), "r"(b[0]), "r"(b[4 * N]));
    }
    TILE_STORE
}
"""

FORMATS = {  # name: (kernel, torch dtype, the same bits as a dtype CuPy takes)
    "float16": ("mma_f16", torch.float16, torch.int16),
    "bfloat16": ("mma_bf16", torch.bfloat16, torch.int16),
    "tfloat32": ("mma_tf32", torch.float32, torch.int32),
}


def to_tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 values with their low 13 mantissa bits cleared (representable in tfloat32)."""
    return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)


def gpu_mma(module, fmt: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    kernel, _, raw = FORMATS[fmt]
    (m, k), n = a.shape, b.shape[1]
    d = torch.empty(m, n, device="cuda", dtype=torch.float32)
    a, b = (cp.asarray(t.contiguous().view(raw)) for t in (a, b))
    module.get_function(kernel)((n // 8, m // 16), (32,), (a, b, cp.asarray(c), cp.asarray(d), np.int32(m),
                                                         np.int32(n), np.int32(k)))
    torch.cuda.synchronize()
    return d


def inputs(dtype, *shapes, integers: bool = False, seed: int = 0):
    """Random tensors of `dtype` (torch.randn, or small integers), on the GPU; "tfloat32": float32 with
    the low 13 mantissa bits cleared."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    for shape in shapes:
        x = (torch.randint(-3, 4, shape, device="cuda", generator=gen).float() if integers
             else torch.randn(shape, device="cuda", generator=gen))
        yield (x.view(torch.int32) & ~0x1FFF).view(torch.float32) if dtype == "tfloat32" else x.to(dtype)


def host(t: torch.Tensor) -> np.ndarray:
    return t.float().cpu().numpy()


def model(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, fmt: str) -> torch.Tensor:
    return torch.from_numpy(tensor_core_mma(host(a), host(b), host(c), fmt))


def agreement(name: str, ours: torch.Tensor, ref: torch.Tensor):
    """Bits equal, and elements outside assert_close's default tolerance for ref's dtype."""
    ours, ref = ours.cpu().to(ref.dtype), ref.cpu()
    rtol, atol = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5)}[ref.dtype]
    raw = torch.int32 if ref.dtype == torch.float32 else torch.int16
    equal = int((ours.view(raw) == ref.view(raw)).sum())
    diff = (ours.double() - ref.double()).abs()
    outside = int((diff > atol + rtol * ref.double().abs()).sum())
    print(f"{name:<64} bits equal {equal:>8}/{ref.numel():<8} outside tolerance {outside:>8}  max diff "
          f"{diff.max().item():.3g}", flush=True)


def scaled_mm(a, b):
    """cuBLAS's fp8 GEMM as BatchMatMul's check calls it: scales 1, float32 out, B column-major."""
    one = torch.tensor(1.0, device="cuda")
    return torch.stack([torch._scaled_mm(a[i], b[i].t().contiguous().t(), scale_a=one, scale_b=one,
                                         out_dtype=torch.float32) for i in range(a.shape[0])])


def main():
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",), backend="nvrtc")
    for fmt, (_, dtype, _) in FORMATS.items():
        a, b, c = inputs("tfloat32" if fmt == "tfloat32" else dtype, (64, 256), (256, 64), (64, 64), integers=True)
        c = c.float()
        exact = torch.from_numpy(host(a).astype(np.float64) @ host(b).astype(np.float64) + host(c)).float()
        agreement(f"mma.sync {fmt}, small integers, vs exact", gpu_mma(module, fmt, a, b, c), exact)
        a, b, c = inputs("tfloat32" if fmt == "tfloat32" else dtype, (256, 768), (768, 256), (256, 256), seed=1)
        c = c.float()
        agreement(f"mma.sync {fmt} 256x768x256 vs model", gpu_mma(module, fmt, a, b, c), model(a, b, c, fmt))

    for fmt in ("float16", "bfloat16"):  # cuTile's MatMul sample: C = A @ B in 16 bits against torch
        a, b = inputs(getattr(torch, fmt), (512, 768), (768, 512), seed=2)
        zero = torch.zeros(512, 512)
        ref = a @ b
        agreement(f"cuBLAS {fmt} 512x768x512 vs model", model(a, b, zero, fmt), ref)
        once = torch.from_numpy(host(a).astype(np.float64) @ host(b).astype(np.float64))
        agreement(f"cuBLAS {fmt} 512x768x512 vs float64 rounded once", once, ref)

    for fmt in ("float16", "float8_e4m3fn"):  # cuTile's BatchMatMul sample's sizes and tiles
        dtype = getattr(torch, fmt)
        a, b = inputs(torch.float32, (4, 512, 256), (4, 256, 1024), seed=3)
        a, b = a.to(dtype), b.to(dtype)
        ref = scaled_mm(a, b) if fmt.startswith("float8") else a @ b
        if fmt.startswith("float8"):
            zero = torch.zeros(128, 256)
            sub = (0, slice(0, 128), slice(0, 256))
            agreement(f"cuBLAS {fmt} (part) vs model", model(a[sub[:2]], b[0, :, :256], zero, fmt), ref[sub])
        c = torch.empty(4, 512, 1024, device="cuda")
        ct.launch(torch.cuda.current_stream(), (4, 4, 4), batch_matmul, (a, b, c, 128, 256, 128))
        torch.cuda.synchronize()
        agreement(f"tile library (CUDA cores) {fmt} 4x512x256x1024 vs cuBLAS", c, ref)


if __name__ == "__main__":
    main()
