// Software-pipelined mma operands: a K loop's operand tiles are copied by cp.async straight from
// global into shared memory, STAGES - 1 iterations ahead of the mma that reads them, so loads and
// tensor-core math overlap (docs/architecture.md, "Pipelined mma loops").
//
// Shared-memory layout of one R x C operand tile (16-bit elements): each row is cut into panels of
// P = min(128, 2C) bytes; panel p holds all R rows of P bytes; inside a panel, 16-byte chunk c of
// row r is stored at chunk c ^ ((r * P / 128) % (P / 16)). This is the 128/64/32-byte swizzle that
// wgmma descriptors name, and it also lets the 8 row addresses of an ldmatrix hit distinct banks.
#pragma once

namespace tw {

// ---- cp.async ------------------------------------------------------------------------------------

__device__ inline void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_address(dst)), "l"(src) : "memory");
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int Pending> __device__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory"); }

// Shared memory this thread wrote (cp.async or plain stores) becomes visible to the tensor cores'
// asynchronous proxy, which is how wgmma reads it. Needed before the barrier that publishes a stage.
__device__ inline void fence_proxy_async() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// ---- the swizzled operand layout -----------------------------------------------------------------

template <class T, int R, int C>
struct swizzled {
  static_assert(sizeof(T) == 2, "pipelined mma operands are 16-bit");
  static constexpr int row_bytes = C * 2;
  static constexpr int P = row_bytes < 128 ? row_bytes : 128;  // panel width in bytes
  static_assert(P == 32 || P == 64 || row_bytes % 128 == 0, "rows of 32, 64 or a multiple of 128 bytes");
  static constexpr int bytes = R * row_bytes;
  unsigned char* base;

  // Byte offset of the 16-byte chunk holding elements (r, 8k .. 8k + 7).
  __device__ static int chunk_offset(int r, int k) {
    constexpr int per_panel = P / 16;
    const int o = r * P + k % per_panel * 16;
    return k / per_panel * (R * P) + (o ^ ((o >> 7) & (per_panel - 1)) << 4);
  }
};

// STAGES buffers of one operand, each 1024-byte aligned (a swizzle pattern repeats every 1024 bytes).
template <class T, int R, int C, int STAGES>
struct operand_stages {
  static constexpr int stage_bytes = (swizzled<T, R, C>::bytes + 1023) / 1024 * 1024;
  static constexpr int bytes = STAGES * stage_bytes;
  unsigned char* base;
  __device__ swizzled<T, R, C> operator[](int stage) const { return {base + stage * stage_bytes}; }
};

// One 16-byte chunk of elements (i, j .. j + 7) the slow way: element by element, the padding value
// outside the array. Out of line, so the bounds bookkeeping holds no registers in the K loop; the
// array by value, as a reference would keep the caller's copy (a plane of an N-d array) on the stack,
// stored there in every iteration.
template <class T>
__device__ __noinline__ void load_chunk_checked(unsigned char* dst, const array<T, 2> a, long long i, long long j, T pad) {
  T v[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const bool inside = i >= 0 && i < a.shape[0] && j + e >= 0 && j + e < a.shape[1];
    v[e] = inside ? a.ptr[i * a.stride[0] + (j + e) * a.stride[1]] : pad;
  }
  copy_chunk<16>(dst, v);
}

// A 16-byte chunk of a row outside the array: all padding, one store.
template <class T>
__device__ void fill_chunk(unsigned char* dst, T pad) {
  T v[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = pad;
  copy_chunk<16>(dst, v);
}

// Start copying the 16-byte chunk of row i, columns j .. j + 7, into a stage at `dst`: by cp.async
// where it lies inside a row-major array with 16-byte aligned rows, as one store of padding where
// the row is outside the array, else element by element.
template <class T>
__device__ void chunk_async(unsigned char* dst, const array<T, 2>& a, long long i, long long j, bool rows_aligned,
                            T pad) {
  if (rows_aligned && i >= 0 && i < a.shape[0] && j >= 0 && j + 8 <= a.shape[1])
    cp_async_16(dst, a.ptr + i * a.stride[0] + j);
  else if (i < 0 || i >= a.shape[0])
    fill_chunk(dst, pad);
  else
    load_chunk_checked(dst, a, i, j, pad);
}

// Start copying tile `index` (shape R x C) of a 2-D array into `dst`. A tile wholly inside a
// row-major array with 16-byte aligned rows goes by cp.async, chunk by chunk; any other (edges,
// padding, other strides) is checked chunk by chunk and copied element by element where needed.
template <class T, int R, int C>
__device__ void load_async(swizzled<T, R, C> dst, const array<T, 2>& a, const coords<2>& index, T pad) {
  constexpr int chunks = R * C / 8, per_row = C / 8;
  const long long i0 = (long long)index[0] * R, j0 = (long long)index[1] * C;
  const bool rows_aligned = a.stride[1] == 1 && a.stride[0] % 8 == 0 && aligned<16>(a.ptr);
  if (rows_aligned && i0 >= 0 && j0 >= 0 && i0 + R <= a.shape[0] && j0 + C <= a.shape[1]) {
    const T* tile = a.ptr + i0 * a.stride[0] + j0;
#pragma unroll
    for (int q0 = 0; q0 < chunks; q0 += TW_THREADS) {
      const int q = q0 + threadIdx.x;
      if (chunks % TW_THREADS != 0 && q >= chunks) break;
      cp_async_16(dst.base + dst.chunk_offset(q / per_row, q % per_row), tile + q / per_row * a.stride[0] + q % per_row * 8);
    }
    return;
  }
  for (int q = threadIdx.x; q < chunks; q += TW_THREADS)
    chunk_async(dst.base + dst.chunk_offset(q / per_row, q % per_row), a, i0 + q / per_row, j0 + q % per_row * 8,
                rows_aligned, pad);
}

// The same for a tile of shape (1, ..., 1, R, C) of an N-d array: the leading indices pick one
// plane (an index outside the array leaves an empty plane, so the tile is all padding).
template <class T, int R, int C, int Rank>
__device__ void load_async(swizzled<T, R, C> dst, const array<T, Rank>& a, const coords<Rank>& index, T pad) {
  static_assert(Rank > 2, "a 2-d array takes the overload above");
  long long offset = 0;
  bool inside = true;
#pragma unroll
  for (int d = 0; d < Rank - 2; ++d) {
    offset += (long long)index[d] * a.stride[d];
    inside = inside && index[d] >= 0 && index[d] < a.shape[d];
  }
  const array<T, 2> plane{a.ptr + (inside ? offset : 0), {inside ? a.shape[Rank - 2] : 0, a.shape[Rank - 1]},
                          {a.stride[Rank - 2], a.stride[Rank - 1]}};
  load_async(dst, plane, coords<2>{{index[Rank - 2], index[Rank - 1]}}, pad);
}

// A gathered operand's row indices, written to shared memory once before its loop: the threads that
// fill a stage copy chunks of any row, and the index tile is spread over the block.
template <class I, class S>
__device__ void store_row_table(long long* table, const tile<I, S>& rows) {
  static_assert(S::size == S::dim(0), "a row table is made from a 1-d tile");
  if (!rows.owner()) return;
#pragma unroll
  for (int r = 0; r < tile<I, S>::R; ++r) table[tile<I, S>::elem(r)] = (long long)rows.v[r];
}

// Start copying tile[r, c] = a[rows[r], j0 + c] (shape R x C) into `dst`: chunks of a row inside
// a row-major array with 16-byte aligned rows go by cp.async, any other chunk (a row outside the
// array, the edge of the columns) is copied element by element with the padding value.
// Where the tile's columns all lie inside aligned rows, the row alone decides a chunk's path: one
// unsigned compare per chunk instead of the four of chunk_async (the MoE sample's gathered tokens).
template <class T, int R, int C>
__device__ void gather_rows_async(swizzled<T, R, C> dst, const array<T, 2>& a, const long long* rows, long long j0,
                                  T pad) {
  constexpr int chunks = R * C / 8, per_row = C / 8;
  const bool rows_aligned = a.stride[1] == 1 && a.stride[0] % 8 == 0 && aligned<16>(a.ptr);
  const bool columns_inside = rows_aligned && j0 >= 0 && j0 + C <= a.shape[1];
#pragma unroll
  for (int q0 = 0; q0 < chunks; q0 += TW_THREADS) {
    const int q = q0 + threadIdx.x;
    if (chunks % TW_THREADS != 0 && q >= chunks) break;
    unsigned char* to = dst.base + dst.chunk_offset(q / per_row, q % per_row);
    const long long i = rows[q / per_row], j = j0 + q % per_row * 8;
    if (columns_inside && (unsigned long long)i < (unsigned long long)a.shape[0])
      cp_async_16(to, a.ptr + i * a.stride[0] + j);
    else
      chunk_async(to, a, i, j, rows_aligned, pad);
  }
}

// An operand stage that holds the transpose of the operand: the B operand (K x N) of `q @ k.T`
// staged as the (N x K) tile it was loaded as. mma reads its fragments without the .trans ldmatrix.
template <class S>
struct transposed {
  S stage;
};
template <class S>
__device__ transposed<S> transpose_stage(S stage) { return {stage}; }

// Wait until the stage of the current iteration has landed and publish it to every thread (and to
// the tensor cores' proxy). `Pending` copy groups, those of later iterations, may still be in flight.
template <int Pending>
__device__ void stage_ready() {
  cp_async_wait<Pending>();
  fence_proxy_async();
  __syncthreads();
}

// ---- mma.sync from swizzled stages (sm_80 and later) ----------------------------------------------
//
// One template for every place the operands can be: A in a stage or in registers (a previous
// mma's result in mma_layout<WM, 1>), B in a stage as K x N or as its transpose (N x K). The
// fragment loaders below fill mma.sync's A fragment of 16-row block i and B fragments of the 8-column
// blocks j and j + 1, for the k step starting at k0.

template <class T, int M, int K>
__device__ void a_fragment(uint32_t (&af)[4], swizzled<T, M, K> a, int warp_row, int i, int k0) {
  const int lane = threadIdx.x % 32;
  ldmatrix_x4(af, a.base + a.chunk_offset(warp_row + i * 16 + lane % 16, k0 / 8 + lane / 16), false);
}
template <class T, int M, int K, int WM>
__device__ void a_fragment(uint32_t (&af)[4], const tile<T, shape<M, K>, mma_layout<WM, 1>>& a, int, int i, int k0) {
  const T* lo = &a.v[(i * (K / 8) + k0 / 8) * 4];  // the accumulator-layout fragments of k0 .. k0 + 7
  const T* hi = lo + 4;                             // and of k0 + 8 .. k0 + 15
  af[0] = pack_pair(lo[0], lo[1]), af[1] = pack_pair(lo[2], lo[3]);
  af[2] = pack_pair(hi[0], hi[1]), af[3] = pack_pair(hi[2], hi[3]);
}

// B fragments of the 8-column blocks at col and col + 8 (Pair) or at col only.
template <bool Pair, class T, int K, int N>
__device__ void b_fragments(uint32_t (&b0)[2], uint32_t (&b1)[2], swizzled<T, K, N> b, int col, int k0) {
  const int lane = threadIdx.x % 32;  // lanes 0-15: rows k0 .. k0 + 15 of block col; 16-31: of block col + 8
  const unsigned char* at = b.base + b.chunk_offset(k0 + lane % 16, col / 8 + (Pair ? lane / 16 : 0));
  if constexpr (Pair) {
    uint32_t r[4];
    ldmatrix_x4(r, at, true);
    b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
  } else {
    ldmatrix_x2_trans(b0, at);
  }
}
template <bool Pair, class T, int N, int K>
__device__ void b_fragments(uint32_t (&b0)[2], uint32_t (&b1)[2], transposed<swizzled<T, N, K>> b, int col, int k0) {
  // lanes 8q .. 8q + 7 address matrix q: columns col + 8 * (q / 2), k half q % 2 (rows of the stage are columns)
  const int lane = threadIdx.x % 32;
  const unsigned char* at = b.stage.base + b.stage.chunk_offset(col + (Pair ? lane / 16 * 8 : 0) + lane % 8,
                                                                k0 / 8 + lane / 8 % 2);
  if constexpr (Pair) {
    uint32_t r[4];
    ldmatrix_x4(r, at, false);
    b0[0] = r[0], b0[1] = r[1], b1[0] = r[2], b1[1] = r[3];
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(b0[0]), "=r"(b0[1]) : "r"(smem_address(at)));
  }
}

template <class A> struct in_registers { static constexpr bool value = false; };
template <class T, class S, int WM> struct in_registers<tile<T, S, mma_layout<WM, 1>>> { static constexpr bool value = true; };

template <class T, int M, int N, int K, int WM, int WN, class A, class B>
__device__ tile<float, shape<M, N>, mma_layout<WM, WN>> mma_from(const A& a, const B& b,
                                                                tile<float, shape<M, N>, mma_layout<WM, WN>> acc) {
  constexpr int WTM = M / WM, WTN = N / WN, MI = WTM / 16, NI = WTN / 8;
  static_assert(M % (16 * WM) == 0 && N % (8 * WN) == 0 && K % 16 == 0, "shape does not fit the warps");
  const int warp = threadIdx.x / 32, warp_row = warp / WN * WTM, warp_col = warp % WN * WTN;
  // A in registers is indexed by k: unrolled. From stages, one k step's fragments live at a time.
#pragma unroll(in_registers<A>::value ? K / 16 : 1)
  for (int k0 = 0; k0 < K; k0 += 16) {
    uint32_t af[MI][4], bf[NI][2];
#pragma unroll
    for (int i = 0; i < MI; ++i) a_fragment(af[i], a, warp_row, i, k0);
#pragma unroll
    for (int j = 0; j < NI; j += 2) {
      if (j + 1 < NI) b_fragments<true>(bf[j], bf[j + 1], b, warp_col + j * 8, k0);
      else b_fragments<false>(bf[j], bf[j], b, warp_col + j * 8, k0);
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j) mma_16816<T>(&acc.v[(i * NI + j) * 4], af[i], bf[j]);
  }
  return acc;
}

template <class T, int M, int N, int K, int WM, int WN>
__device__ tile<float, shape<M, N>, mma_layout<WM, WN>> mma(swizzled<T, M, K> a, swizzled<T, K, N> b,
                                                           tile<float, shape<M, N>, mma_layout<WM, WN>> acc) {
  return mma_from<T, M, N, K>(a, b, acc);
}
template <class T, int M, int N, int K, int WM, int WN>
__device__ tile<float, shape<M, N>, mma_layout<WM, WN>> mma(swizzled<T, M, K> a, transposed<swizzled<T, N, K>> b,
                                                           tile<float, shape<M, N>, mma_layout<WM, WN>> acc) {
  return mma_from<T, M, N, K>(a, b, acc);
}
template <class T, int M, int N, int K, int WM>
__device__ tile<float, shape<M, N>, mma_layout<WM, 1>> mma(const tile<T, shape<M, K>, mma_layout<WM, 1>>& a,
                                                          swizzled<T, K, N> b, tile<float, shape<M, N>, mma_layout<WM, 1>> acc) {
  return mma_from<T, M, N, K>(a, b, acc);
}
template <class T, int M, int N, int K, int WM>
__device__ tile<float, shape<M, N>, mma_layout<WM, 1>> mma(const tile<T, shape<M, K>, mma_layout<WM, 1>>& a,
                                                          transposed<swizzled<T, N, K>> b,
                                                          tile<float, shape<M, N>, mma_layout<WM, 1>> acc) {
  return mma_from<T, M, N, K>(a, b, acc);
}

// ---- wgmma from swizzled stages (sm_90a) -----------------------------------------------------------
//
// A warpgroup (4 warps) computes 64 rows x all N columns: warpgroup g owns rows [64g, 64g + 64), so
// the accumulators are in mma_layout<W, 1> (W warps, each 16 rows). wgmma_op<N, T>::ss and ::rs
// (tile_wgmma.cuh) is one wgmma.mma_async.m64nNk16 with its N / 2 accumulator registers.

// A shared-memory matrix descriptor: start address (p, then `offset` bytes on, a multiple of 16),
// leading and stride byte offsets, swizzle. Shared addresses are below 256 KB, so the start address
// field never carries: the offset, a constant per k step, is one add to the low word of p's
// descriptor, which the compiler builds once per stage rather than once per wgmma.
__device__ inline uint64_t wgmma_descriptor(const void* p, int offset, int leading_bytes, int stride_bytes,
                                            int panel_bytes) {
  const uint32_t swizzle = panel_bytes == 128 ? 1 : panel_bytes == 64 ? 2 : 3;
  const uint32_t low = (smem_address(p) >> 4 & 0x3FFF) | uint32_t(leading_bytes >> 4 & 0x3FFF) << 16;
  const uint32_t high = uint32_t(stride_bytes >> 4 & 0x3FFF) | swizzle << 30;
  return uint64_t(high) << 32 | (low + uint32_t(offset >> 4));
}

// A (M x K, K contiguous: "K-major"), rows [row0, row0 + 64), columns [k0, k0 + 16): core
// matrices of 8 rows sit 8 * P bytes apart; a 16-column step inside a panel moves the start by 32
// bytes (the hardware applies the swizzle to the address).
template <class T, int R, int C>
__device__ uint64_t k_major_descriptor(swizzled<T, R, C> s, int row0, int k0) {
  constexpr int P = swizzled<T, R, C>::P;
  return wgmma_descriptor(s.base + row0 * P, k0 * 2 / P * (R * P) + k0 * 2 % P, 16, 8 * P, P);
}

// B (K x N, N contiguous: "MN-major"), rows [k0, k0 + 16): panels of P / 2 columns sit R * P bytes
// apart (the leading offset), groups of 8 rows 8 * P bytes apart (the stride offset).
template <class T, int R, int C>
__device__ uint64_t mn_major_descriptor(swizzled<T, R, C> s, int k0) {
  constexpr int P = swizzled<T, R, C>::P;
  return wgmma_descriptor(s.base, k0 * P, R * P, 8 * P, P);
}

// Keep the compiler from moving accumulator reads or writes across the asynchronous wgmma.
template <class Tile>
__device__ void fence_registers(Tile& t) {
#pragma unroll
  for (int r = 0; r < Tile::R; ++r) asm volatile("" : "+f"(t.v[r])::"memory");
}

// B's descriptor for k rows [k0, k0 + 16), and whether wgmma reads it transposed (N-major).
template <class T, int K, int N>
__device__ uint64_t b_descriptor(swizzled<T, K, N> b, int k0) { return mn_major_descriptor(b, k0); }
template <class T, int N, int K>
__device__ uint64_t b_descriptor(transposed<swizzled<T, N, K>> b, int k0) { return k_major_descriptor(b.stage, 0, k0); }
template <class B> struct n_major { static constexpr int value = 1; };
template <class S> struct n_major<transposed<S>> { static constexpr int value = 0; };

// acc += a @ b, issued as one wgmma group (K / 16 instructions) and committed; waits for all but the
// last `InFlight` groups before returning. A comes from its stage (a K-major descriptor of this
// warpgroup's 64 rows) or from registers: then all its fragments are packed first and fenced until the
// wait, since wgmma reads them asynchronously and the compiler must not reuse those registers sooner.
template <int InFlight, class T, int M, int N, int K, int W, class B>
__device__ void wgmma_group(swizzled<T, M, K> a, const B& b, tile<float, shape<M, N>, mma_layout<W, 1>>& acc) {
  static_assert(M == 16 * W && W % 4 == 0 && N % 8 == 0 && N <= 256 && K % 16 == 0, "wgmma shape");
  fence_registers(acc);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16)
    wgmma_op<N, T>::template ss<n_major<B>::value>(acc.v, k_major_descriptor(a, threadIdx.x / 128 * 64, k0),
                                                   b_descriptor(b, k0));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(InFlight) : "memory");
  fence_registers(acc);
}

template <int Steps>
__device__ void fence_fragments(uint32_t (&af)[Steps][4]) {
#pragma unroll
  for (int k = 0; k < Steps; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(af[k][i])::"memory");
}

template <int InFlight, class T, int M, int N, int K, int W, class B>
__device__ void wgmma_group(const tile<T, shape<M, K>, mma_layout<W, 1>>& a, const B& b,
                            tile<float, shape<M, N>, mma_layout<W, 1>>& acc) {
  static_assert(M == 16 * W && W % 4 == 0 && N % 8 == 0 && N <= 256 && K % 16 == 0, "wgmma shape");
  // One group of every k step: the fragments are A's own elements packed in pairs (K / 4 registers,
  // no more than A holds), and one wait lets the tensor cores run all steps back to back.
  uint32_t af[K / 16][4];
#pragma unroll
  for (int k = 0; k < K / 16; ++k) a_fragment(af[k], a, 0, 0, 16 * k);
  fence_fragments(af);
  fence_registers(acc);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int k = 0; k < K / 16; ++k) wgmma_op<N, T>::template rs<n_major<B>::value>(acc.v, af[k], b_descriptor(b, 16 * k));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(InFlight) : "memory");
  fence_registers(acc);
  fence_fragments(af);
}

// The operands a wgmma takes: A in a stage (K-major) or in registers, B in a stage either way.
template <class T, int M, int N, int K, int W>
__device__ tile<float, shape<M, N>, mma_layout<W, 1>> wgmma(swizzled<T, M, K> a, swizzled<T, K, N> b,
                                                           tile<float, shape<M, N>, mma_layout<W, 1>> acc) {
  wgmma_group<0, T, M, N, K>(a, b, acc);
  return acc;
}
template <class T, int M, int N, int K, int W>
__device__ tile<float, shape<M, N>, mma_layout<W, 1>> wgmma(swizzled<T, M, K> a, transposed<swizzled<T, N, K>> b,
                                                           tile<float, shape<M, N>, mma_layout<W, 1>> acc) {
  wgmma_group<0, T, M, N, K>(a, b, acc);
  return acc;
}
template <class T, int M, int N, int K, int W>
__device__ tile<float, shape<M, N>, mma_layout<W, 1>> wgmma(const tile<T, shape<M, K>, mma_layout<W, 1>>& a,
                                                           swizzled<T, K, N> b, tile<float, shape<M, N>, mma_layout<W, 1>> acc) {
  wgmma_group<0, T, M, N, K>(a, b, acc);
  return acc;
}
template <class T, int M, int N, int K, int W>
__device__ tile<float, shape<M, N>, mma_layout<W, 1>> wgmma(const tile<T, shape<M, K>, mma_layout<W, 1>>& a,
                                                           transposed<swizzled<T, N, K>> b,
                                                           tile<float, shape<M, N>, mma_layout<W, 1>> acc) {
  wgmma_group<0, T, M, N, K>(a, b, acc);
  return acc;
}

// acc += a @ b in place, leaving this wgmma group in flight: it waits only for the group before it,
// so the tensor cores have the next group queued while the block syncs and requests copies. The
// stage that group read is free once the next call returns; wgmma_wait_all ends the chain.
template <class T, int M, int N, int K, int W>
__device__ void wgmma_async(swizzled<T, M, K> a, swizzled<T, K, N> b, tile<float, shape<M, N>, mma_layout<W, 1>>& acc) {
  wgmma_group<1, T, M, N, K>(a, b, acc);
}
template <class T, int M, int N, int K, int W>
__device__ void wgmma_async(swizzled<T, M, K> a, transposed<swizzled<T, N, K>> b,
                            tile<float, shape<M, N>, mma_layout<W, 1>>& acc) {
  wgmma_group<1, T, M, N, K>(a, b, acc);
}

template <class Tile>
__device__ void wgmma_wait_all(Tile& acc) {
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  fence_registers(acc);
}

}  // namespace tw
