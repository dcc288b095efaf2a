// Matrix multiply: a generic path for any shape and dtype, and a tensor-core path.
//
// The tensor-core path keeps the accumulator in mma_layout<WM, WN>: the block's WM x WN warps
// tile the (M, N) accumulator, warp w owning rows [w / WN * M/WM, ...) and columns
// [w % WN * N/WN, ...). Inside its part a warp holds 16x8 fragments of mma.sync.m16n8k16
// (row-major order over fragments); in each fragment lane l holds
//
//     (l / 4,     2 * (l % 4) + {0, 1})   in registers 0, 1
//     (l / 4 + 8, 2 * (l % 4) + {0, 1})   in registers 2, 3
//
// The A and B operands arrive blocked (as loaded); mma copies them to shared memory with rows
// padded by 16 bytes (so the 8 row addresses of an ldmatrix hit distinct banks), then each warp
// reads its fragments with ldmatrix (A) and ldmatrix.trans (B, stored K-major). Two operand
// buffers alternate between calls, so a K loop needs one barrier per step; they sit above every
// other shared-memory use (TW_MMA_SMEM_BASE), so no other op's staging can race with them.
#pragma once

namespace tw {

#ifndef TW_MMA_SMEM_BASE
#define TW_MMA_SMEM_BASE 0
#endif

template <int WM, int WN>
struct mma_layout {
  static constexpr int warps = WM * WN;
  template <class S> __host__ __device__ static constexpr int registers() { return S::size / (32 * warps); }
  template <class S> __host__ __device__ static constexpr int vec() { return 2; }
  template <class S> __device__ static int elem(int r) {
    constexpr int M = S::dim(0), N = S::dim(1), WTM = M / WM, WTN = N / WN, NI = WTN / 8;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, f = r / 4, c = r % 4;
    int row = warp / WN * WTM + f / NI * 16 + lane / 4 + c / 2 * 8;
    int col = warp % WN * WTN + f % NI * 8 + lane % 4 * 2 + c % 2;
    return row * N + col;
  }
  template <class S> __device__ static bool owner() { return true; }
};

// ---- the tensor-core instructions -------------------------------------------------------------------

__device__ inline uint32_t smem_address(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

__device__ inline void ldmatrix_x4(uint32_t* r, const void* p, bool trans) {
  if (trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_address(p)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_address(p)));
}

__device__ inline void ldmatrix_x2_trans(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem_address(p)));
}

template <class T> struct is_fp16 { static constexpr bool value = false; };
template <> struct is_fp16<__half> { static constexpr bool value = true; };

// d += a @ b for one 16x8x16 fragment, float accumulators (float16 or bfloat16 operands)
template <class T>
__device__ void mma_16816(float* d, const uint32_t* a, const uint32_t* b) {
  if constexpr (is_fp16<T>::value)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One k step of 16 for a warp's MI x NI accumulator fragments: ldmatrix the A fragments (a_at(i):
// this lane's row address of fragment row i) and the B fragments (b_at(j): this lane's row address
// for the fragment pair j, j + 1, B stored K-major), then one mma.sync per fragment.
template <class T, int MI, int NI, class AAt, class BAt>
__device__ void mma_k16(float* acc, AAt a_at, BAt b_at) {
  uint32_t af[MI][4], bf[NI][2];
#pragma unroll
  for (int i = 0; i < MI; ++i) ldmatrix_x4(af[i], a_at(i), false);
#pragma unroll
  for (int j = 0; j < NI; j += 2) {
    if (j + 1 < NI) {
      uint32_t r[4];
      ldmatrix_x4(r, b_at(j), true);
      bf[j][0] = r[0], bf[j][1] = r[1], bf[j + 1][0] = r[2], bf[j + 1][1] = r[3];
    } else {
      ldmatrix_x2_trans(bf[j], b_at(j));
    }
  }
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) mma_16816<T>(&acc[(i * NI + j) * 4], af[i], bf[j]);
}

// A blocked (Rows, Cols) tile into shared memory, rows Cols + 8 elements apart, chunk by chunk.
template <class T, int Rows, int Cols>
__device__ void to_padded_smem(const tile<T, shape<Rows, Cols>>& x, T* buf) {
  using Tile = tile<T, shape<Rows, Cols>>;
  if (!x.owner()) return;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += Tile::V) {
    int e = Tile::elem(r0);
    copy_chunk<Tile::V * sizeof(T)>(buf + e / Cols * (Cols + 8) + e % Cols, &x.v[r0]);
  }
}

// A 2-D load for an mma operand: a tile wholly inside a row-major array with aligned rows moves
// as plain 16-byte chunks; any other takes the general load, out of line, so that its bounds
// bookkeeping does not hold registers across the K loop.
template <class S, class T>
__device__ __noinline__ tile<T, S> load_checked(const array<T, 2>& a, const coords<2>& index, T pad) {
  return load<S>(a, index, pad);
}
template <class S, class T>
__device__ tile<T, S> load_operand(const array<T, 2>& a, const coords<2>& index, typename same<T>::type pad) {
  using Tile = tile<T, S>;
  constexpr int H = S::dim(0), W = S::dim(1);
  const long long i0 = (long long)index[0] * H, j0 = (long long)index[1] * W;
  const T* base = a.ptr + i0 * a.stride[0] + j0;
  bool plain = a.stride[1] == 1 && i0 >= 0 && j0 >= 0 && i0 + H <= a.shape[0] && j0 + W <= a.shape[1] &&
               a.stride[0] % Tile::V == 0 && aligned<Tile::V * sizeof(T)>(base);
  if (!plain || !Tile::owner()) return load_checked<S>(a, index, pad);
  Tile out;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += Tile::V) {
    int e = Tile::elem(r0);
    copy_chunk<Tile::V * sizeof(T)>(&out.v[r0], base + (long long)(e / W) * a.stride[0] + e % W);
  }
  return out;
}

// Operand buffer bytes of one tensor-core mma stage.
template <class T, int M, int N, int K>
__host__ __device__ constexpr int mma_stage_bytes() { return (M * (K + 8) + K * (N + 8)) * int(sizeof(T)); }

// acc + a @ b on tensor cores. `stage` counts the calls, choosing the operand buffer.
template <class T, int M, int N, int K, int WM, int WN>
__device__ tile<float, shape<M, N>, mma_layout<WM, WN>> mma(const tile<T, shape<M, K>>& a, const tile<T, shape<K, N>>& b,
                                                           tile<float, shape<M, N>, mma_layout<WM, WN>> acc, int& stage) {
  static_assert(traits<T>::is_half, "tensor-core mma takes float16 or bfloat16 operands");
  constexpr int WTM = M / WM, WTN = N / WN, MI = WTM / 16, NI = WTN / 8;
  static_assert(M % (16 * WM) == 0 && N % (8 * WN) == 0 && K % 16 == 0, "shape does not fit the warps");
  constexpr int stage_bytes = (mma_stage_bytes<T, M, N, K>() + 127) / 128 * 128;
  T* abuf = reinterpret_cast<T*>(smem() + TW_MMA_SMEM_BASE + (stage++ & 1) * stage_bytes);
  T* bbuf = abuf + M * (K + 8);
  to_padded_smem(a, abuf);
  to_padded_smem(b, bbuf);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* a_rows = abuf + (warp / WN * WTM + lane % 16) * (K + 8) + lane / 16 * 8;
  const T* b_rows = bbuf + (lane % 16) * (N + 8) + warp % WN * WTN + lane / 16 * 8;
#pragma unroll 1  // one k step's fragments live at a time: fewer registers, more blocks per SM
  for (int k0 = 0; k0 < K; k0 += 16)
    mma_k16<T, MI, NI>(acc.v, [&](int i) { return a_rows + i * 16 * (K + 8) + k0; },
                       [&](int j) { return b_rows + k0 * (N + 8) + j * 8; });
  return acc;
}

// ---- the generic path --------------------------------------------------------------------------------

// The type an mma accumulates in: float for 16-bit float accumulators, else the accumulator's.
template <class C> struct mma_accumulator { using type = C; };
template <> struct mma_accumulator<__half> { using type = float; };
template <> struct mma_accumulator<int32_t> { using type = int32_t; };

// acc + a @ b over the last two dims (leading dims are batch dims of equal extent).
template <class TA, class TB, class TC, class SA, class SB, class SC>
__device__ tile<TC, SC> mma(const tile<TA, SA>& a, const tile<TB, SB>& b, const tile<TC, SC>& acc) {
  constexpr int Rk = SA::rank, M = SA::dim(Rk - 2), K = SA::dim(Rk - 1), N = SB::dim(Rk - 1);
  using A = typename mma_accumulator<TC>::type;
  TA* abuf = reinterpret_cast<TA*>(smem());
  TB* bbuf = reinterpret_cast<TB*>(smem() + ((skew(SA::size) * sizeof(TA) + 15) / 16) * 16);
  __syncthreads();
  to_smem(a, abuf);
  to_smem(b, bbuf);
  __syncthreads();
  tile<TC, SC> out;
#pragma unroll
  for (int r = 0; r < tile<TC, SC>::R; ++r) {
    int e = tile<TC, SC>::elem(r);
    int batch = e / (M * N), i = e / N % M, j = e % N;
    A sum = convert<A>(acc.v[r]);
    for (int k = 0; k < K; ++k)
      sum += convert<A>(abuf[skew((batch * M + i) * K + k)]) * convert<A>(bbuf[skew((batch * K + k) * N + j)]);
    out.v[r] = convert<TC>(sum);
  }
  return out;
}

}  // namespace tw
