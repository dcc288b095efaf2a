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
// other shared-memory use (TW_MMA_SMEM_BASE), so no other op's staging can race with them. Where two
// do not fit in the block's shared memory, TW_MMA_BUFFERS 1 keeps one, refilled after a barrier.
#pragma once

namespace tw {

#ifndef TW_MMA_SMEM_BASE
#define TW_MMA_SMEM_BASE 0
#endif
#ifndef TW_MMA_BUFFERS
#define TW_MMA_BUFFERS 2
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

// The rows of an mma_layout<WM, 1> accumulator: an (M, 1) or (M,) tile, element i held by the four
// lanes that hold row i of the accumulator (lane l: rows l / 4 and l / 4 + 8 of each 16-row
// fragment, register 2 * fragment + {0, 1}). A row reduction of the accumulator lands here without
// shared memory, and broadcasting back along the row is register code, which is what chained
// softmax-style code (max, exp, sum, rescale) needs between two mmas.
template <int WM>
struct mma_rows {
  static constexpr int warps = WM;
  template <class S> __host__ __device__ static constexpr int registers() { return S::size / (8 * WM); }
  template <class S> __host__ __device__ static constexpr int vec() { return 1; }
  template <class S> __device__ static int elem(int r) {
    constexpr int WTM = S::size / WM;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    return warp * WTM + r / 2 * 16 + lane / 4 + r % 2 * 8;
  }
  template <class S> __device__ static bool owner() { return threadIdx.x % 4 == 0; }  // one lane per quad writes
};

// Reduce along the rows of an mma_layout<WM, 1> tile (a warp holds whole rows): each thread folds
// its registers of a row, then the quad of lanes sharing the row combines with two shuffles.
template <class S2, int Passes, class A, class T, int M, int N, int WM, class Lift, class Combine, class Finish>
__device__ auto reduce(const tile<T, shape<M, N>, mma_layout<WM, 1>>& x, A identity, Lift lift, Combine combine,
                       Finish finish) {
  static_assert(S2::size == M, "an accumulator layout reduces along its rows only");
  using Rows = tile<decltype(finish(identity)), S2, mma_rows<WM>>;
  constexpr int NI = N / 8;
  constexpr int P = NI % 4 == 0 ? 4 : NI % 2 == 0 ? 2 : 1;  // independent folds per row: short dependency chains
  const int lane = threadIdx.x % 32;
  A acc[Rows::R][P];
#pragma unroll
  for (int r = 0; r < tile<T, shape<M, N>, mma_layout<WM, 1>>::R; ++r) {
    const int f = r / 4, c = r % 4, k = f / NI * 2 + c / 2, j = f % NI;
    const A v = lift(x.v[r], j * 8 + lane % 4 * 2 + c % 2);
    acc[k][j % P] = j < P && c % 2 == 0 ? v : combine(acc[k][j % P], v);  // a fold's first element starts it
  }
  Rows out;
#pragma unroll
  for (int k = 0; k < Rows::R; ++k) {
    A a = acc[k][0];
#pragma unroll
    for (int p = 1; p < P; ++p) a = combine(a, acc[k][p]);
    a = combine(a, shuffle_xor(a, 1));
    a = combine(a, shuffle_xor(a, 2));
    out.v[k] = finish(combine(identity, a));  // once a row, as the interpreter folds it
  }
  return out;
}

// A row of the accumulator that folded to NaN holds NaNs only: its result becomes its first element
// (column 0, register k / 2 * NI * 4 + k % 2 * 2 of the row's quad leader), the NaN NumPy returns.
template <class T, class S2, int M, int N, int WM>
__device__ void keep_first_of_nan_rows(tile<T, S2, mma_rows<WM>>& folded, const tile<T, shape<M, N>, mma_layout<WM, 1>>& x) {
  constexpr int NI = N / 8;
  const int leader = threadIdx.x % 32 / 4 * 4;
#pragma unroll
  for (int k = 0; k < tile<T, S2, mma_rows<WM>>::R; ++k) {
    const T first = __shfl_sync(0xffffffffu, x.v[k / 2 * NI * 4 + k % 2 * 2], leader);
    folded.v[k] = op::isnan(folded.v[k]) ? first : folded.v[k];
  }
}

// Each row value along the row: (M, 1) rows to an (M, N) accumulator-layout tile, in registers.
template <class S2, class L2, class T, int M, int WM>
__device__ tile<T, S2, mma_layout<WM, 1>> broadcast(const tile<T, shape<M, 1>, mma_rows<WM>>& x) {
  static_assert(S2::rank == 2 && S2::dim(0) == M, "broadcasts along the row");
  using Out = tile<T, S2, mma_layout<WM, 1>>;
  constexpr int NI = S2::dim(1) / 8;
  Out out;
#pragma unroll
  for (int r = 0; r < Out::R; ++r) out.v[r] = x.v[r / 4 / NI * 2 + r % 4 / 2];
  return out;
}

// (M,) and (M, 1) rows are the same registers.
template <class S2, class T, class S, int WM>
__device__ tile<T, S2, mma_rows<WM>> reshape(const tile<T, S, mma_rows<WM>>& x) {
  static_assert(S2::size == S::size, "reshape keeps the element count");
  tile<T, S2, mma_rows<WM>> out;
#pragma unroll
  for (int r = 0; r < tile<T, S, mma_rows<WM>>::R; ++r) out.v[r] = x.v[r];
  return out;
}

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

template <class L> constexpr bool is_mma_layout = false;
template <int WM, int WN> constexpr bool is_mma_layout<mma_layout<WM, WN>> = true;

// A 2-D tile of 2- or more-byte elements changes layout between blocked and an mma layout through
// rows padded by 8 elements: a lane's two neighbouring elements of a fragment move as one access, and
// the rows of 4 lanes that the banks serve together (8 rows of 4-byte pairs per warp; 4 rows of
// 8-byte pairs per half-warp) start on distinct bank groups (the accumulator epilogue); a blocked
// chunk moves as 16-byte vectors.
template <class T> constexpr int padded_row_extra = 8;

template <class T, class S, class L>
constexpr bool stages_padded_rows = S::rank == 2 && sizeof(T) >= 2 &&
                                    (is_mma_layout<L> || (is_blocked<L> && S::dim(1) % tile<T, S, L>::V == 0));

// A 32-byte chunk moves as two 16-byte accesses; lanes 4-7 of each quarter-warp (which the banks
// serve together) take its second half first, so a quarter's first accesses land on distinct 16-byte
// bank groups where chunks 32 bytes apart would meet two by two. Selects, not a run-time register index.
__device__ inline void copy_32_staggered(void* dst, const void* src, bool shared_dst) {
  const bool swap = (threadIdx.x >> 2) & 1;
  const uint4* s = static_cast<const uint4*>(src);
  uint4* d = static_cast<uint4*>(dst);
  if (shared_dst) {
    const uint4 lo = s[0], hi = s[1];
    d[swap] = swap ? hi : lo;
    d[!swap] = swap ? lo : hi;
  } else {
    const uint4 first = s[swap], second = s[!swap];
    d[0] = swap ? second : first;
    d[1] = swap ? first : second;
  }
}

template <class T, class S, class L>
__device__ void padded_rows_access(T* buf, tile<T, S, L>& x, bool write) {
  using Tile = tile<T, S, L>;
  constexpr int Cols = S::dim(1), V = is_blocked<L> ? Tile::V : 2;  // an mma layout: pairs of columns
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += V) {
    const int e = Tile::elem(r0);
    T* at = buf + e / Cols * (Cols + padded_row_extra<T>) + e % Cols;
    if constexpr (V * sizeof(T) == 32) copy_32_staggered(write ? (void*)at : (void*)&x.v[r0],
                                                         write ? (const void*)&x.v[r0] : (const void*)at, write);
    else if (write) copy_chunk<V * sizeof(T)>(at, &x.v[r0]);
    else copy_chunk<V * sizeof(T)>(&x.v[r0], at);
  }
}

template <class L2, class T, class S, class L>
__device__ tile<T, S, L2> convert_through_padded_rows(tile<T, S, L> x) {
  T* buf = reinterpret_cast<T*>(smem());
  __syncthreads();
  if (x.owner()) padded_rows_access(buf, x, true);
  __syncthreads();
  tile<T, S, L2> out;
  padded_rows_access(buf, out, false);
  return out;
}

template <class L2, class T, int M, int N, int WM, int WN>
__device__ tile<T, shape<M, N>, L2> convert_layout(const tile<T, shape<M, N>, mma_layout<WM, WN>>& x) {
  if constexpr (stages_padded_rows<T, shape<M, N>, L2>) return convert_through_padded_rows<L2>(x);
  else return convert_through_smem<L2>(x);
}

template <class L2, class T, int M, int N>
__device__ tile<T, shape<M, N>, L2> convert_layout(const tile<T, shape<M, N>, blocked>& x) {
  if constexpr (is_mma_layout<L2> && stages_padded_rows<T, shape<M, N>, blocked>)
    return convert_through_padded_rows<L2>(x);
  else return convert_through_smem<L2>(x);
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
  T* abuf = reinterpret_cast<T*>(smem() + TW_MMA_SMEM_BASE + (stage++ % TW_MMA_BUFFERS) * stage_bytes);
  T* bbuf = abuf + M * (K + 8);
  if (TW_MMA_BUFFERS == 1) __syncthreads();  // every warp has read the previous call's operands
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

// Two 16-bit elements as one mma operand register (the lower column in the low half).
template <class T>
__device__ uint32_t pack_pair(T lo, T hi) {
  unsigned short l, h;
  memcpy(&l, &lo, 2);
  memcpy(&h, &hi, 2);
  return uint32_t(l) | uint32_t(h) << 16;
}

// acc + a @ b on tensor cores with `a` already in registers, in the accumulator layout of the same
// warps (typically a previous mma's result, cast to 16 bits): fragments (i, 2t) and (i, 2t + 1) of
// that layout are exactly mma.sync's A fragment of rows i and k step t, so only `b` goes through
// shared memory. This is how P @ V follows Q @ K^T in attention without a round trip.
template <class T, int M, int N, int K, int WM>
__device__ tile<float, shape<M, N>, mma_layout<WM, 1>> mma(const tile<T, shape<M, K>, mma_layout<WM, 1>>& a,
                                                          const tile<T, shape<K, N>>& b,
                                                          tile<float, shape<M, N>, mma_layout<WM, 1>> acc, int& stage) {
  static_assert(traits<T>::is_half, "tensor-core mma takes float16 or bfloat16 operands");
  constexpr int WTM = M / WM, MI = WTM / 16, NI = N / 8, KI = K / 8;
  static_assert(M % (16 * WM) == 0 && N % 8 == 0 && K % 16 == 0, "shape does not fit the warps");
  constexpr int stage_bytes = (K * (N + 8) * int(sizeof(T)) + 127) / 128 * 128;
  T* bbuf = reinterpret_cast<T*>(smem() + TW_MMA_SMEM_BASE + (stage++ % TW_MMA_BUFFERS) * stage_bytes);
  if (TW_MMA_BUFFERS == 1) __syncthreads();  // every warp has read the previous call's operand
  to_padded_smem(b, bbuf);
  __syncthreads();
  const int lane = threadIdx.x % 32;
  const T* b_rows = bbuf + (lane % 16) * (N + 8) + lane / 16 * 8;
#pragma unroll
  for (int t = 0; t < K / 16; ++t) {
    uint32_t af[MI][4], bf[NI][2];
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const T* lo = &a.v[(i * KI + 2 * t) * 4];  // k columns 16t .. 16t + 7
      const T* hi = lo + 4;                       // k columns 16t + 8 .. 16t + 15
      af[i][0] = pack_pair(lo[0], lo[1]), af[i][1] = pack_pair(lo[2], lo[3]);
      af[i][2] = pack_pair(hi[0], hi[1]), af[i][3] = pack_pair(hi[2], hi[3]);
    }
#pragma unroll
    for (int j = 0; j < NI; j += 2) {
      if (j + 1 < NI) {
        uint32_t r[4];
        ldmatrix_x4(r, b_rows + t * 16 * (N + 8) + j * 8, true);
        bf[j][0] = r[0], bf[j][1] = r[1], bf[j + 1][0] = r[2], bf[j + 1][1] = r[3];
      } else {
        ldmatrix_x2_trans(bf[j], b_rows + t * 16 * (N + 8) + j * 8);
      }
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j) mma_16816<T>(&acc.v[(i * NI + j) * 4], af[i], bf[j]);
  }
  return acc;
}

// ---- the tensor cores' arithmetic, on the CUDA cores -------------------------------------------------

// An sm_90 tensor-core step sums a block of products and its accumulator in one adder: the terms are
// aligned to the largest exponent among them (a product's is the sum of its factors' exponents) and
// truncated `extra_bits` bits below the accumulator's last bit, summed exactly, and the sum truncated
// to the accumulator's precision (float32's 24 bits; 14 for 8-bit inputs). For 8-bit inputs the tensor
// cores start every `partial` products from zero and add that partial sum to the float32 result, as
// cuBLAS's and cuTile's fp8 GEMMs do. interp/tensor_cores.py is the same model; the generic path below
// computes it, so an mma gives the same bits on the CUDA cores, the tensor cores and the interpreter.
template <class T> struct tensor_core_adder { static constexpr bool modelled = false; };
template <int Terms, int ExtraBits, int MinExponent, int Partial>
struct block_adder {
  static constexpr bool modelled = true;
  static constexpr int terms = Terms, extra_bits = ExtraBits, min_exponent = MinExponent, partial = Partial;
};
template <> struct tensor_core_adder<__half> : block_adder<16, 2, -14, 0> {};
template <> struct tensor_core_adder<__nv_bfloat16> : block_adder<16, 2, -126, 0> {};
template <> struct tensor_core_adder<__nv_fp8_e4m3> : block_adder<32, -10, -6, 128> {};
template <> struct tensor_core_adder<__nv_fp8_e5m2> : block_adder<32, -10, -14, 128> {};
struct tf32_inputs : block_adder<8, 2, -126, 0> {};  // tfloat32 values travel as float: the code generator names it
template <class Adder, class T> struct adder_for { using type = Adder; };  // the one named, else the inputs'
template <class T> struct adder_for<void, T> { using type = tensor_core_adder<T>; };
template <class X, class Y> struct same_type { static constexpr bool value = false; };
template <class X> struct same_type<X, X> { static constexpr bool value = true; };

// floor(log2|x|) of a nonzero float, at least `floor`
__device__ inline int exponent_at_least(float x, int floor) {
  return ::max(int((__float_as_uint(x) >> 23) & 0xff) - 127, floor);
}

// One step: c + the products a_at(k) * b_at(k) for k in [k0, k1), as the tensor cores add them.
template <class Adder, class AAt, class BAt>
__device__ float tensor_core_step(float c, int k0, int k1, AAt a_at, BAt b_at) {
  int lead = c != 0.f ? ::max(exponent_at_least(c, -126), -133) : -133;
  for (int k = k0; k < k1; ++k) {
    float x = a_at(k), y = b_at(k);
    if (x != 0.f && y != 0.f)
      lead = ::max(lead, exponent_at_least(x, Adder::min_exponent) + exponent_at_least(y, Adder::min_exponent));
  }
  const int shift = 23 + Adder::extra_bits - lead;  // terms in units of 2^-shift, truncated
  long long units = (long long)::trunc(::ldexp(double(c), shift));
  double ieee = c;  // NaN and infinities as IEEE arithmetic makes them
  for (int k = k0; k < k1; ++k) {
    double p = double(a_at(k)) * double(b_at(k));  // exact: the factors have at most 11 significant bits
    ieee += p;
    units += (long long)::trunc(::ldexp(p, shift));
  }
  if (!::isfinite(ieee)) return float(ieee);
  double sum = ::ldexp(double(units), -shift);
  if (::fabs(sum) >= 0x1p128) return float(::copysign(__longlong_as_double(0x7ff0000000000000LL), sum));
  float r = __double2float_rz(sum);
  if (Adder::extra_bits < 0) r = __uint_as_float(__float_as_uint(r) & ~((1u << -Adder::extra_bits) - 1u));
  return r;
}

// acc + sum over k < K of a_at(k) * b_at(k), step by step in K order, as the tensor cores compute it.
template <class Adder, class AAt, class BAt>
__device__ float tensor_core_dot(float acc, int K, AAt a_at, BAt b_at) {
  if (Adder::partial == 0) {
    for (int k0 = 0; k0 < K; k0 += Adder::terms)
      acc = tensor_core_step<Adder>(acc, k0, ::min(K, k0 + Adder::terms), a_at, b_at);
    return acc;
  }
  for (int p0 = 0; p0 < K; p0 += Adder::partial) {
    float partial = 0.f;
    for (int k0 = p0; k0 < ::min(K, p0 + Adder::partial); k0 += Adder::terms)
      partial = tensor_core_step<Adder>(partial, k0, ::min(K, k0 + Adder::terms), a_at, b_at);
    acc += partial;
  }
  return acc;
}

// ---- the generic path --------------------------------------------------------------------------------

// The type an mma accumulates in: float for 16-bit float accumulators, else the accumulator's.
template <class C> struct mma_accumulator { using type = C; };
template <> struct mma_accumulator<__half> { using type = float; };
template <> struct mma_accumulator<int32_t> { using type = int32_t; };

// acc + a @ b over the last two dims (leading dims are batch dims of equal extent). Float inputs of a
// tensor-core format into a float accumulator sum as the tensor cores do (Adder: tensor_core_adder of
// the inputs, or tf32_inputs); anything else is a chain of fused multiply-adds in K order.
template <class Adder = void, class TA, class TB, class TC, class SA, class SB, class SC>
__device__ tile<TC, SC> mma(const tile<TA, SA>& a, const tile<TB, SB>& b, const tile<TC, SC>& acc) {
  constexpr int Rk = SA::rank, M = SA::dim(Rk - 2), K = SA::dim(Rk - 1), N = SB::dim(Rk - 1);
  using A = typename mma_accumulator<TC>::type;
  using Model = typename adder_for<Adder, TA>::type;
  constexpr bool tensor_core_sum = Model::modelled && same_type<TA, TB>::value && same_type<TC, float>::value;
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
    auto a_at = [&](int k) { return convert<float>(abuf[skew((batch * M + i) * K + k)]); };
    auto b_at = [&](int k) { return convert<float>(bbuf[skew((batch * K + k) * N + j)]); };
    if constexpr (tensor_core_sum) {
      out.v[r] = tensor_core_dot<Model>(acc.v[r], K, a_at, b_at);
    } else {
      A sum = convert<A>(acc.v[r]);
      for (int k = 0; k < K; ++k) {
        const A x = convert<A>(abuf[skew((batch * M + i) * K + k)]), y = convert<A>(bbuf[skew((batch * K + k) * N + j)]);
        if constexpr (traits<A>::is_float) sum = op::fma(x, y, sum);  // a dot product: one rounding a step
        else sum += x * y;
      }
      out.v[r] = convert<TC>(sum);
    }
  }
  return out;
}

}  // namespace tw
