"""CUDA Tile C++ kernels in NVIDIA's usual style, timed against the same computation in the Python tile
language (tileworkbench's, and cuTile's where `cuda.tile` imports), all in one run:

    python3 benchmarks/tile_cpp.py [--quick]          # on a GPU: checks each against torch, then times it
    python3 benchmarks/tile_cpp.py --dry-run          # no GPU: compiles every C++ kernel, prints its resources

The kernels (RMSNorm, LayerNorm on bf16, row softmax, SwiGLU, GeGLU, column sums split over blocks,
RoPE, GEMM in f16, bf16 and tf32) use `tensor_span` and `partition_view` with `.load`, `.load_masked`
and `.store_masked`, 1-D and 2-D pointer tiles with masks, `atomic_add_masked`, `bid()`,
`num_blocks()`, `irange`, `assume_aligned`, `sum`, `reduce_max`, `select`, `exp`, `exp2`, `tanh`,
`rsqrt`, `mma`, rounding tags and `[[ using cutile : hint(...) ]]`. tests/runtime/test_tile_cpp_kernels.py compiles
them all without a GPU; tests/gpu/test_tile_cpp.py checks them against torch on one.

Each implementation is checked against the torch reference (its output poisoned with NaN first)
before it is timed: CUDA events, L2 flushed, median of 50 launches after warm-up.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Callable

RMS_NORM = """#include <cuda_tile.h>
namespace ct = cuda::tiles;
using namespace ct::literals;

// y = x / sqrt(mean(x^2) + eps) * w, one row per block; a row's columns fit one tile
template <int TILE>
__tile_global__ void rms_norm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                              int rows, int cols, float eps) {
  x = ct::assume_aligned(x, 16_ic);
  w = ct::assume_aligned(w, 16_ic);
  y = ct::assume_aligned(y, 16_ic);
  auto xs = ct::partition_view{ct::tensor_span{x, ct::extents{rows, cols}}, ct::shape<1, TILE>{}};
  auto ys = ct::partition_view{ct::tensor_span{y, ct::extents{rows, cols}}, ct::shape<1, TILE>{}};
  auto ws = ct::partition_view{ct::tensor_span{w, ct::extents{cols}}, ct::shape<TILE>{}};
  int row = ct::bid().x;
  auto t = xs.template load_masked<ct::view_padding::zero>(row, 0);
  auto mean_square = ct::sum(t * t, 1_ic) / float(cols);
  auto scale = ct::rsqrt(mean_square + eps);
  auto weight = ct::reshape<ct::shape<1, TILE>>(ws.load_masked(0));
  ys.store_masked(t * scale * weight, row, 0);
}
"""

LAYER_NORM = """#include <cuda_tile.h>
#include <cuda_bf16.h>
namespace ct = cuda::tiles;
using namespace ct::literals;

// y = (x - mean) / sqrt(var + eps) * w + b in float, one row per block, for 16-bit x, w, b and y
template <typename T, int TILE>
__tile_global__ void layer_norm(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                T* __restrict__ y, int rows, int cols, float eps) {
  using Row = ct::tile<float, ct::shape<1, TILE>>;
  auto xs = ct::partition_view{ct::tensor_span{ct::assume_aligned<16>(x), ct::extents{rows, cols}}, ct::shape<1, TILE>{}};
  auto ys = ct::partition_view{ct::tensor_span{ct::assume_aligned<16>(y), ct::extents{rows, cols}}, ct::shape<1, TILE>{}};
  auto ws = ct::partition_view{ct::tensor_span{w, ct::extents{1, cols}}, ct::shape<1, TILE>{}};
  auto bs = ct::partition_view{ct::tensor_span{b, ct::extents{1, cols}}, ct::shape<1, TILE>{}};
  int row = ct::bid().x;
  auto t = ct::element_cast<float>(xs.template load_masked<ct::view_padding::zero>(row, 0));
  auto mean = ct::sum(t, 1_ic) / float(cols);
  auto inside = ct::iota<ct::tile<int, ct::shape<1, TILE>>>() < cols;  // the padding is not a column
  auto centered = ct::select(inside, t - mean, ct::zeros<Row>());
  auto variance = ct::sum(centered * centered, 1_ic) / float(cols);
  auto scale = ct::rsqrt(variance + eps, ct::round_subnormals_to_zero_t{});
  auto weight = ct::element_cast<float>(ws.template load_masked<ct::view_padding::zero>(0, 0));
  auto bias = ct::element_cast<float>(bs.template load_masked<ct::view_padding::zero>(0, 0));
  ys.store_masked(ct::element_cast<T>(centered * scale * weight + bias), row, 0);
}
"""

SOFTMAX = """#include <cuda_tile.h>
namespace ct = cuda::tiles;
using namespace ct::literals;

// softmax of each row; the blocks stride over the rows (a persistent grid)
template <int TILE>
__tile_global__ void softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  x = ct::assume_aligned(x, 16_ic);
  y = ct::assume_aligned(y, 16_ic);
  auto xs = ct::partition_view{ct::tensor_span{x, ct::extents{rows, cols}}, ct::shape<1, TILE>{}};
  auto ys = ct::partition_view{ct::tensor_span{y, ct::extents{rows, cols}}, ct::shape<1, TILE>{}};
  for (int row : ct::irange<int>(ct::bid().x, rows, ct::num_blocks().x)) {
    auto t = xs.template load_masked<ct::view_padding::negative_inf>(row, 0);
    auto shifted = (t - ct::reduce_max(t, 1_ic)) * 1.4426950408889634f;  // exp(v) = exp2(v log2 e)
    auto e = ct::exp2(shifted, ct::round_subnormals_to_zero_t{});
    auto total = ct::sum(e, 1_ic);
    [[ using cutile : hint(900, latency=2) ]]
    ys.store_masked(ct::div(e, total, ct::round_approximate_t{}), row, 0);
  }
}
"""

SWIGLU = """#include <cuda_tile.h>
namespace ct = cuda::tiles;

// y = silu(gate) * up over n elements: pointer tiles, masked past the end
template <int TILE>
[[ using cutile : hint(900, occupancy=4) ]]
__tile_global__ void swiglu(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ y,
                            int n) {
  auto i = int(ct::bid().x) * TILE + ct::iota<ct::tile<int, ct::shape<TILE>>>();
  auto in = i < n;
  auto g = ct::load_masked(ct::assume_aligned<16>(gate) + i, in);
  auto u = ct::load_masked(ct::assume_aligned<16>(up) + i, in);
  auto silu = g / (1.0f + ct::exp(-g, ct::round_approximate_t{}));  // ex2.approx: full speed, ~2 ulp
  ct::store_masked(ct::assume_aligned<16>(y) + i, silu * u, in);
}
"""

GEGLU = """#include <cuda_tile.h>
namespace ct = cuda::tiles;

// out = gelu_tanh(x[:, :h]) * x[:, h:] for x of `rows` rows of `stride` elements: 2-D pointer tiles
// built from a row and a column iota, masked at both edges
template <int TM, int TN>
[[ using cutile : hint(900, occupancy=2) ]]
__tile_global__ void geglu(const float* __restrict__ x, float* __restrict__ out, long long rows, long long h,
                           long long stride) {
  auto r = ct::bid().x * TM + ct::reshape<ct::shape<TM, 1>>(ct::iota<ct::tile<long long, ct::shape<TM>>>());
  auto c = ct::bid().y * TN + ct::reshape<ct::shape<1, TN>>(ct::iota<ct::tile<long long, ct::shape<TN>>>());
  auto in = (r < rows) & (c < h);
  auto gate = ct::load_masked(x + r * stride + c, in);
  auto up = ct::load_masked(x + r * stride + h + c, in);
  auto inner = 0.7978845608028654f * (gate + 0.044715f * gate * gate * gate);
  auto gelu = 0.5f * gate * (1.0f + ct::tanh(inner, ct::round_approximate_t{}));
  ct::store_masked(out + r * h + c, gelu * up, in);
}
"""

COLUMN_SUM = """#include <cuda_tile.h>
namespace ct = cuda::tiles;
using namespace ct::literals;

// y[j] += the sum of column j over the block's rows: the row blocks split each sum (y starts at zero)
template <int TM, int TN>
__tile_global__ void column_sum(const float* __restrict__ x, float* __restrict__ y, int m, int n) {
  auto xs = ct::partition_view{ct::tensor_span{x, ct::extents{m, n}}, ct::shape<TM, TN>{}};
  auto [i, j, z] = ct::bid();
  auto part = ct::reshape<ct::shape<TN>>(ct::sum(xs.template load_masked<ct::view_padding::zero>(i, j), 0_ic));
  auto cols = int(j) * TN + ct::iota<ct::tile<int, ct::shape<TN>>>();
  ct::atomic_add_masked(y + cols, part, cols < n, ct::memory_order_relaxed_t{}, ct::thread_scope_device_t{});
}
"""

ROPE = """#include <cuda_tile.h>
namespace ct = cuda::tiles;

// rotates the halves (x1, x2) of each row of q in place: (x1 c - x2 s, x2 c + x1 s); cos, sin: HALF per row
template <int HALF>
__tile_global__ void rope(float* __restrict__ q, const float* __restrict__ cos, const float* __restrict__ sin,
                          int rows) {
  q = ct::assume_aligned<16>(q);
  int row = ct::bid().x;
  auto qs = ct::partition_view{ct::tensor_span{q, ct::extents{rows, 2, HALF}}, ct::shape<1, 1, HALF>{}};
  auto cs = ct::partition_view{ct::tensor_span{cos, ct::extents{rows, HALF}}, ct::shape<1, HALF>{}};
  auto ss = ct::partition_view{ct::tensor_span{sin, ct::extents{rows, HALF}}, ct::shape<1, HALF>{}};
  auto x1 = ct::reshape<ct::shape<1, HALF>>(qs.load(row, 0, 0));
  auto x2 = ct::reshape<ct::shape<1, HALF>>(qs.load(row, 1, 0));
  auto c = cs.load(row, 0);
  auto s = ss.load(row, 0);
  qs.store(ct::reshape<ct::shape<1, 1, HALF>>(x1 * c - x2 * s), row, 0, 0);
  qs.store(ct::reshape<ct::shape<1, 1, HALF>>(x2 * c + x1 * s), row, 1, 0);
}
"""

GEMM = """#include <cuda_tile.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_tf32.h>
namespace ct = cuda::tiles;

// c = a @ b, float accumulation on tensor cores; float inputs multiply as tf32
template <typename T, typename Out, int TM, int TN, int TK>
__tile_global__ void gemm(const T* __restrict__ a, const T* __restrict__ b, Out* __restrict__ c, int m, int n, int k) {
  using In = std::conditional_t<std::is_same_v<T, float>, __nv_tf32, T>;
  auto as = ct::partition_view{ct::tensor_span{ct::assume_aligned<16>(a), ct::extents{m, k}}, ct::shape<TM, TK>{}};
  auto bs = ct::partition_view{ct::tensor_span{ct::assume_aligned<16>(b), ct::extents{k, n}}, ct::shape<TK, TN>{}};
  auto cs = ct::partition_view{ct::tensor_span{ct::assume_aligned<16>(c), ct::extents{m, n}}, ct::shape<TM, TN>{}};
  auto [bm, bn, bz] = ct::bid();
  auto acc = ct::zeros<ct::tile<float, ct::shape<TM, TN>>>();
  for (int kk : ct::irange(0, (k + TK - 1) / TK)) {
    auto at = ct::element_cast<In>(as.template load_masked<ct::view_padding::zero>(bm, kk));
    auto bt = ct::element_cast<In>(bs.template load_masked<ct::view_padding::zero>(kk, bn));
    acc = ct::mma(at, bt, acc);
  }
  cs.store_masked(ct::element_cast<Out>(acc), bm, bn);
}
"""

# The same computations in the Python tile language (cuTile's API: `ct` is tileworkbench.tile or cuda.tile)
PYTHON = '''
def rms_norm(x, w, y, eps: float, TILE: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, TILE), padding_mode=ct.PaddingMode.ZERO)
    scale = ct.rsqrt(ct.sum(t * t, axis=1, keepdims=True) / x.shape[1] + eps)
    ct.store(y, (row, 0), t * scale * ct.reshape(ct.load(w, (0,), (TILE,), padding_mode=ct.PaddingMode.ZERO), (1, TILE)))


def layer_norm(x, w, b, y, eps: float, TILE: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.astype(ct.load(x, (row, 0), (1, TILE), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    mean = ct.sum(t, axis=1, keepdims=True) / x.shape[1]
    centered = ct.where(ct.arange(TILE, dtype=ct.int32) < x.shape[1], t - mean, 0.0)
    scale = ct.rsqrt(ct.sum(centered * centered, axis=1, keepdims=True) / x.shape[1] + eps)
    weight = ct.astype(ct.load(w, (0,), (TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    bias = ct.astype(ct.load(b, (0,), (TILE,), padding_mode=ct.PaddingMode.ZERO), ct.float32)
    ct.store(y, (row, 0), ct.astype(centered * scale * weight + bias, y.dtype))


def softmax(x, y, TILE: ct.Constant[int]):
    for row in range(ct.bid(0), x.shape[0], ct.num_blocks(0)):
        t = ct.load(x, (row, 0), (1, TILE), padding_mode=ct.PaddingMode.NEG_INF)
        e = ct.exp2((t - ct.max(t, axis=1, keepdims=True)) * 1.4426950408889634, flush_to_zero=True)
        ct.store(y, (row, 0), ct.truediv(e, ct.sum(e, axis=1, keepdims=True), rounding_mode=ct.RoundingMode.APPROX))


def swiglu(gate, up, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    g = ct.load(gate, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO)
    u = ct.load(up, (i,), (TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (i,), g / (1.0 + ct.exp(-g)) * u)


def geglu(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    gate = ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    up = ct.load(x, (i, j + out.shape[1] // TN), (TM, TN), padding_mode=ct.PaddingMode.ZERO)  # h % TN == 0
    inner = 0.7978845608028654 * (gate + 0.044715 * gate * gate * gate)
    ct.store(out, (i, j), 0.5 * gate * (1.0 + ct.tanh(inner)) * up)


def column_sum(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    part = ct.sum(ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO), axis=0)
    ct.atomic_add(y, j * TN + ct.arange(TN, dtype=ct.int32), part)


def rope(q, cos, sin, HALF: ct.Constant[int]):
    row = ct.bid(0)
    x1 = ct.reshape(ct.load(q, (row, 0, 0), (1, 1, HALF)), (1, HALF))
    x2 = ct.reshape(ct.load(q, (row, 1, 0), (1, 1, HALF)), (1, HALF))
    c = ct.load(cos, (row, 0), (1, HALF))
    s = ct.load(sin, (row, 0), (1, HALF))
    ct.store(q, (row, 0, 0), ct.reshape(x1 * c - x2 * s, (1, 1, HALF)))
    ct.store(q, (row, 1, 0), ct.reshape(x2 * c + x1 * s, (1, 1, HALF)))


def gemm(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), ct.float32)
    into = ct.tfloat32 if a.dtype == ct.float32 else a.dtype
    for kk in range(ct.cdiv(a.shape[1], TK)):
        at = ct.astype(ct.load(a, (bm, kk), (TM, TK), padding_mode=ct.PaddingMode.ZERO), into)
        bt = ct.astype(ct.load(b, (kk, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO), into)
        acc = ct.mma(at, bt, acc)
    ct.store(c, (bm, bn), ct.astype(acc, c.dtype))
'''


@dataclass(frozen=True)
class TileCppCase:
    """One kernel: its C++ source and instance, its launch, inputs, torch reference and Python twin."""

    name: str
    source: str
    expression: str           # the template instance compiled
    sizes: dict               # the problem's sizes
    grid: Callable            # sizes -> grid
    inputs: Callable          # (torch, sizes, device) -> tensors (the output last)
    cpp_args: Callable        # (tensors, sizes) -> the C++ kernel's arguments
    reference: Callable       # (torch, tensors) -> the expected output
    python: str               # the Python twin's name in PYTHON
    python_args: Callable     # (tensors, sizes) -> its arguments
    tolerance: float = 1e-4
    output: int = -1          # which tensor the kernel writes
    bytes_moved: Callable = None
    flops: Callable = None


def _rms_inputs(torch, s, device):
    return [torch.randn(s["rows"], s["cols"], device=device), torch.rand(s["cols"], device=device) + 0.5,
            torch.full((s["rows"], s["cols"]), math.nan, device=device)]


def _rms_reference(torch, t):
    x, w, _ = t
    return x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + 1e-6) * w


def _layer_norm_inputs(torch, s, device):
    bf16 = torch.bfloat16
    return [torch.randn(s["rows"], s["cols"], device=device).to(bf16), (torch.rand(s["cols"], device=device) + 0.5).to(bf16),
            torch.randn(s["cols"], device=device).to(bf16), torch.full((s["rows"], s["cols"]), math.nan, device=device).to(bf16)]


def _layer_norm_reference(torch, t):
    x, w, b, _ = (v.float() for v in t)
    return torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, eps=1e-5)


def _softmax_inputs(torch, s, device):
    return [torch.randn(s["rows"], s["cols"], device=device) * 4,
            torch.full((s["rows"], s["cols"]), math.nan, device=device)]


def _swiglu_inputs(torch, s, device):
    return [torch.randn(s["n"], device=device), torch.randn(s["n"], device=device),
            torch.full((s["n"],), math.nan, device=device)]


def _geglu_inputs(torch, s, device):
    return [torch.randn(s["rows"], 2 * s["h"], device=device), torch.full((s["rows"], s["h"]), math.nan, device=device)]


def _geglu_reference(torch, t):
    gate, up = t[0].chunk(2, dim=1)
    return torch.nn.functional.gelu(gate, approximate="tanh") * up


def _column_sum_inputs(torch, s, device):
    return [torch.randn(s["rows"], s["cols"], device=device), torch.zeros(s["cols"], device=device)]


def _rope_inputs(torch, s, device):
    angles = torch.rand(s["rows"], s["half"], device=device) * 6.28
    return [torch.randn(s["rows"], 2, s["half"], device=device), torch.cos(angles), torch.sin(angles)]


def _rope_reference(torch, t):
    q, c, s = t
    x1, x2 = q[:, 0], q[:, 1]
    return torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], dim=1)


def _gemm_inputs(dtype):
    def make(torch, s, device):
        kind = getattr(torch, dtype)
        return [torch.randn(s["m"], s["k"], device=device).to(kind), torch.randn(s["k"], s["n"], device=device).to(kind),
                torch.full((s["m"], s["n"]), math.nan, device=device).to(kind)]
    return make


def _gemm_case(dtype: str, cpp_type: str, tiles: tuple, tolerance: float, size: int) -> TileCppCase:
    tm, tn, tk = tiles
    return TileCppCase(
        f"gemm {dtype}", GEMM, f"gemm<{cpp_type}, {cpp_type}, {tm}, {tn}, {tk}>", {"m": size, "n": size, "k": size},
        lambda s: (math.ceil(s["m"] / tm), math.ceil(s["n"] / tn), 1), _gemm_inputs(dtype),
        lambda t, s: (*t, s["m"], s["n"], s["k"]),
        lambda torch, t: (t[0].float() @ t[1].float()), "gemm", lambda t, s: (*t, tm, tn, tk), tolerance,
        flops=lambda s: 2 * s["m"] * s["n"] * s["k"])


def cases(quick: bool = False) -> list[TileCppCase]:
    rows = 1024 if quick else 16384
    n = 1 << (20 if quick else 26)
    size = 1024 if quick else 4096
    return [
        TileCppCase("rms norm", RMS_NORM, "rms_norm<1024>", {"rows": rows, "cols": 1000}, lambda s: (s["rows"], 1, 1),
                    _rms_inputs, lambda t, s: (*t, s["rows"], s["cols"], 1e-6), _rms_reference, "rms_norm",
                    lambda t, s: (*t, 1e-6, 1024), bytes_moved=lambda s: 8 * s["rows"] * s["cols"]),
        TileCppCase("layer norm", LAYER_NORM, "layer_norm<__nv_bfloat16, 1024>", {"rows": rows, "cols": 1000},
                    lambda s: (s["rows"], 1, 1), _layer_norm_inputs, lambda t, s: (*t, s["rows"], s["cols"], 1e-5),
                    _layer_norm_reference, "layer_norm", lambda t, s: (*t, 1e-5, 1024), 2e-2,
                    bytes_moved=lambda s: 4 * s["rows"] * s["cols"]),
        TileCppCase("softmax", SOFTMAX, "softmax<1024>", {"rows": rows, "cols": 1000}, lambda s: (132 * 4, 1, 1),
                    _softmax_inputs, lambda t, s: (*t, s["rows"], s["cols"]),
                    lambda torch, t: torch.softmax(t[0], dim=1), "softmax", lambda t, s: (*t, 1024),
                    bytes_moved=lambda s: 8 * s["rows"] * s["cols"]),
        TileCppCase("swiglu", SWIGLU, "swiglu<1024>", {"n": n - 3}, lambda s: (math.ceil(s["n"] / 1024), 1, 1),
                    _swiglu_inputs, lambda t, s: (*t, s["n"]),
                    lambda torch, t: torch.nn.functional.silu(t[0]) * t[1], "swiglu", lambda t, s: (*t, 1024),
                    bytes_moved=lambda s: 12 * s["n"]),
        TileCppCase("geglu", GEGLU, "geglu<64, 64>", {"rows": rows * 4 - 5, "h": 1024},
                    lambda s: (math.ceil(s["rows"] / 64), s["h"] // 64, 1), _geglu_inputs,
                    lambda t, s: (*t, s["rows"], s["h"], 2 * s["h"]), _geglu_reference, "geglu",
                    lambda t, s: (*t, 64, 64), 1e-3, bytes_moved=lambda s: 12 * s["rows"] * s["h"]),
        TileCppCase("column sum", COLUMN_SUM, "column_sum<64, 128>", {"rows": rows, "cols": 1000},
                    lambda s: (math.ceil(s["rows"] / 64), math.ceil(s["cols"] / 128), 1), _column_sum_inputs,
                    lambda t, s: (*t, s["rows"], s["cols"]), lambda torch, t: t[0].sum(dim=0), "column_sum",
                    lambda t, s: (*t, 64, 128), bytes_moved=lambda s: 4 * s["rows"] * s["cols"]),
        TileCppCase("rope", ROPE, "rope<64>", {"rows": rows * 8, "half": 64}, lambda s: (s["rows"], 1, 1),
                    _rope_inputs, lambda t, s: (*t, s["rows"]), _rope_reference, "rope", lambda t, s: (*t, 64),
                    output=0, bytes_moved=lambda s: 16 * s["rows"] * s["half"]),
        _gemm_case("float16", "__half", (128, 128, 32), 2e-2, size),
        _gemm_case("bfloat16", "__nv_bfloat16", (128, 128, 32), 5e-2, size),
        _gemm_case("float32", "float", (64, 64, 32), 1e-2, size),  # tf32
    ]


def check(case: TileCppCase, torch, tensors, expected) -> float:
    """The largest error of the output against `expected`, relative to its largest magnitude."""
    got = tensors[case.output].float()
    scale = float(expected.abs().max()) or 1.0
    return float((got - expected.float()).abs().max()) / scale


def python_kernels(ct) -> dict:
    """The Python twins, compiled for the tile language module `ct`."""
    import linecache
    filename = f"{__file__}:PYTHON"  # where the compilers (and inspect) read the kernels' source
    linecache.cache[filename] = (len(PYTHON), None, PYTHON.splitlines(True), filename)
    namespace = {"ct": ct}
    exec(compile(PYTHON, filename, "exec"), namespace)  # noqa: S102 - this file's own text
    names = ("rms_norm", "layer_norm", "softmax", "swiglu", "geglu", "column_sum", "rope", "gemm")
    return {name: ct.kernel(namespace[name]) for name in names}


def implementations(case: TileCppCase):
    """(label, launch(tensors)) of each implementation that is at hand."""
    from tileworkbench.runtime.tile_cpp import TileCppKernel
    kernel = TileCppKernel(case.source, f"<{case.name}>", case.expression)
    s = case.sizes
    yield "CUDA Tile C++ (tileiras)", lambda t: kernel.launch(case.grid(s), None, case.cpp_args(t, s))
    import tileworkbench.tile as tw
    ours = python_kernels(tw)[case.python]
    yield "Python tile language (tileworkbench)", lambda t: tw.launch(0, case.grid(s), ours, case.python_args(t, s))
    try:
        import cuda.tile as cutile
    except ImportError:
        return
    theirs = python_kernels(cutile)[case.python]
    yield "cuTile", lambda t: cutile.launch(0, case.grid(s), theirs, case.python_args(t, s))


def run(quick: bool) -> list[dict]:
    import torch

    from tileworkbench.profile.bench import time_launches
    rows = []
    for case in cases(quick):
        fresh = case.inputs(torch, case.sizes, "cuda")
        expected = case.reference(torch, fresh)
        for label, launch in implementations(case):
            tensors = [t.clone() for t in fresh]
            row = {"case": case.name, "impl": label}
            try:
                launch(tensors)
                torch.cuda.synchronize()
                row["error"] = check(case, torch, tensors, expected)
                if not row["error"] <= case.tolerance:
                    row["failed"] = f"error {row['error']:.2e} > {case.tolerance:g}"
                else:
                    timing = time_launches(lambda: launch(tensors), repetitions=50)
                    row["ms"] = timing.median_ms
                    if case.bytes_moved:
                        row["GB/s"] = case.bytes_moved(case.sizes) / timing.median_ms / 1e6
                    if case.flops:
                        row["TFLOP/s"] = case.flops(case.sizes) / timing.median_ms / 1e9
            except Exception as e:  # a failing implementation is a row that says why, not the end of the run
                row["failed"] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
            rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    lines = [f"{'case':<15} {'implementation':<38} {'median ms':>10} {'GB/s or TFLOP/s':>16}  max rel. error"]
    for r in rows:
        rate = r.get("GB/s", r.get("TFLOP/s"))
        rate = f"{rate:.1f} {'GB/s' if 'GB/s' in r else 'TF'}" if rate is not None else "-"
        ms = f"{r['ms']:.4f}" if "ms" in r else "-"
        tail = r.get("failed") or f"{r['error']:.1e}"
        lines.append(f"{r['case']:<15} {r['impl']:<38} {ms:>10} {rate:>16}  {tail}")
    return "\n".join(lines)


def dry_run() -> str:
    """Without a GPU: each C++ kernel compiled for sm_90, with what the tile compiler chose."""
    from tileworkbench.runtime.tile_cpp import TileCppKernel
    lines = []
    for case in cases(quick=True):
        kernel = TileCppKernel(case.source, f"<{case.name}>", case.expression)
        r = kernel.resources("sm_90")
        lines.append(f"{case.name:<15} {case.expression:<40} {kernel.block_threads('sm_90'):>4} threads "
                     f"{r.registers:>4} registers {r.shared_static_bytes:>7} B shared")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problems")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: compile each kernel and print its resources")
    options = parser.parse_args(argv)
    print(dry_run() if options.dry_run else table(run(options.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
