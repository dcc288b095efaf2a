// Matrix multiply: a generic path for any shape and dtype, and a tensor-core path.
//
// The tensor-core path keeps the accumulator in mma_layout<WM, WN>: the block's WM x WN warps
// tile the (M, N) accumulator, warp w owning rows [w / WN * M/WM, ...) and columns
// [w % WN * N/WN, ...). Inside its part a warp holds 16x8 fragments of mma.sync (m16n8k16 for
// 16-bit operands, m16n8k8 for tfloat32: the same accumulator fragments; row-major order over
// fragments); in each fragment lane l holds
//
//     (l / 4,     2 * (l % 4) + {0, 1})   in registers 0, 1
//     (l / 4 + 8, 2 * (l % 4) + {0, 1})   in registers 2, 3
//
// The A and B operands arrive blocked (as loaded); mma copies them to shared memory in padded rows
// (mma_format: strides that keep each warp's fragment reads free of bank conflicts), then each warp
// reads its fragments (16 bits: ldmatrix for A, ldmatrix.trans for B stored K-major; tfloat32: 8-
// and 4-byte shared loads). Two operand buffers alternate between calls, so a K loop needs one
// barrier per step; they sit above every other shared-memory use (TW_MMA_SMEM_BASE), so no other
// op's staging can race with them. Where two do not fit in the block's shared memory,
// TW_MMA_BUFFERS 1 keeps one, refilled after a barrier.
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

template <class X, class Y> struct same_type { static constexpr bool value = false; };
template <class X> struct same_type<X, X> { static constexpr bool value = true; };

// Two 16-bit elements as one mma operand register (the lower column in the low half).
template <class T>
__device__ uint32_t pack_pair(T lo, T hi) {
  unsigned short l, h;
  memcpy(&l, &lo, 2);
  memcpy(&h, &hi, 2);
  return uint32_t(l) | uint32_t(h) << 16;
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

// The operand formats of mma.sync. Each says how many k one instruction takes, how far apart the
// staged rows of A (K-wide) and B (N-wide) lie, where a lane's fragment reads start (A: row 0 of its
// first fragment; B: its first fragment column), and how a warp loads its fragments of one k step
// and issues the instruction. The accumulator fragments are the same for all (mma_layout above).
//
// 16 bits (float16, bfloat16): m16n8k16; ldmatrix reads 8 rows of 16 bytes per matrix, so rows padded
// by 16 bytes put those 8 row addresses on distinct banks.
template <class T>
struct mma_format {
  static constexpr int k = 16;
  __host__ __device__ static constexpr int a_stride(int K) { return K + 8; }
  __host__ __device__ static constexpr int b_stride(int N) { return N + 8; }
  __device__ static int a_lane(int lane, int AS) { return lane % 16 * AS + lane / 16 * 8; }
  __device__ static int b_lane(int lane, int BS) { return lane % 16 * BS + lane / 16 * 8; }

  template <int AS> __device__ static void load_a(uint32_t* r, const T* a) { ldmatrix_x4(r, a, false); }

  // Fragments j and j + 1 of B (K-major) as one ldmatrix.x4.trans; a last odd one as x2.
  template <int NI, int BS>
  __device__ static void load_b(uint32_t (*bf)[2], const T* b) {
#pragma unroll
    for (int j = 0; j < NI; j += 2) {
      if (j + 1 < NI) {
        uint32_t r[4];
        ldmatrix_x4(r, b + j * 8, true);
        bf[j][0] = r[0], bf[j][1] = r[1], bf[j + 1][0] = r[2], bf[j + 1][1] = r[3];
      } else {
        ldmatrix_x2_trans(bf[j], b + j * 8);
      }
    }
  }

  // A fragment of k step t from an accumulator-layout tile's registers (fragment row i; KI fragments
  // per row): its fragments 2t and 2t + 1 are exactly that A fragment, packed in pairs.
  template <int KI>
  __device__ static void a_from_registers(uint32_t* r, const T* v, int i, int t) {
    const T* lo = v + (i * KI + 2 * t) * 4;  // k columns 16t .. 16t + 7
    const T* hi = lo + 4;                     // k columns 16t + 8 .. 16t + 15
    r[0] = pack_pair(lo[0], lo[1]), r[1] = pack_pair(lo[2], lo[3]);
    r[2] = pack_pair(hi[0], hi[1]), r[3] = pack_pair(hi[2], hi[3]);
  }

  __device__ static void run(float* d, const uint32_t* a, const uint32_t* b) { mma_16816<T>(d, a, b); }
};

// tfloat32 (float in C++: the IR's astype has rounded it; the tensor cores read its top 19 bits):
// m16n8k8, whose A fragment holds (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) and B fragment
// (t, g), (t + 4, g) for lane 4g + t. One instruction sums its 8 products in one exact, order-free
// step (tensor_core_step), so any permutation of a step's k applied to both A and B gives the same
// bits: here k slot t holds column 2t of the step and slot t + 4 column 2t + 1. Then a lane's two A
// values of a row are neighbours (one 8-byte load) and an accumulator fragment (g, 2t..2t + 1),
// (g + 8, 2t..2t + 1) is an A fragment as it stands. Bank-conflict free: A rows 8 mod 16 words apart
// (a half-warp's 8-byte loads cover rows g..g+3, 2t..2t+1: 32 distinct banks), B rows 4 mod 8 words
// apart (the 4-byte loads of rows 2t, columns g: 32 distinct banks).
template <>
struct mma_format<float> {
  static constexpr int k = 8;
  __host__ __device__ static constexpr int a_stride(int K) { return K + 8 + K % 16; }
  __host__ __device__ static constexpr int b_stride(int N) { return N + 4; }
  __device__ static int a_lane(int lane, int AS) { return lane / 4 * AS + lane % 4 * 2; }
  __device__ static int b_lane(int lane, int BS) { return lane % 4 * 2 * BS + lane / 4; }

  template <int AS>
  __device__ static void load_a(uint32_t* r, const float* a) {
    const uint2 lo = *reinterpret_cast<const uint2*>(a), hi = *reinterpret_cast<const uint2*>(a + 8 * AS);
    r[0] = lo.x, r[1] = hi.x, r[2] = lo.y, r[3] = hi.y;
  }

  template <int NI, int BS>
  __device__ static void load_b(uint32_t (*bf)[2], const float* b) {
#pragma unroll
    for (int j = 0; j < NI; ++j) bf[j][0] = __float_as_uint(b[j * 8]), bf[j][1] = __float_as_uint(b[j * 8 + BS]);
  }

  template <int KI>
  __device__ static void a_from_registers(uint32_t* r, const float* v, int i, int t) {
    const float* f = v + (i * KI + t) * 4;  // k columns 8t .. 8t + 7
    r[0] = __float_as_uint(f[0]), r[1] = __float_as_uint(f[2]), r[2] = __float_as_uint(f[1]), r[3] = __float_as_uint(f[3]);
  }

  __device__ static void run(float* d, const uint32_t* a, const uint32_t* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

template <class T> constexpr bool on_tensor_cores = traits<T>::is_half || same_type<T, float>::value;

// Every A fragment times every B fragment of one k step, into the warp's MI x NI accumulator fragments.
template <class T, int MI, int NI>
__device__ void mma_fragments(float* acc, const uint32_t (*af)[4], const uint32_t (*bf)[2]) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) mma_format<T>::run(&acc[(i * NI + j) * 4], af[i], bf[j]);
}

// One k step for a warp's MI x NI accumulator fragments: `a` is this lane's A address of fragment
// row 0 at the step (fragment row i 16 rows further each), `b` its B address of fragment column 0.
template <class T, int MI, int NI, int AS, int BS>
__device__ void mma_step(float* acc, const T* a, const T* b) {
  using F = mma_format<T>;
  uint32_t af[MI][4], bf[NI][2];
#pragma unroll
  for (int i = 0; i < MI; ++i) F::template load_a<AS>(af[i], a + i * 16 * AS);
  F::template load_b<NI, BS>(bf, b);
  mma_fragments<T, MI, NI>(acc, af, bf);
}

// A blocked (Rows, Cols) tile into shared memory, rows Stride elements apart, chunk by chunk.
template <int Stride, class T, int Rows, int Cols>
__device__ void to_padded_smem(const tile<T, shape<Rows, Cols>>& x, T* buf) {
  using Tile = tile<T, shape<Rows, Cols>>;
  if (!x.owner()) return;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += Tile::V) {
    int e = Tile::elem(r0);
    copy_chunk<Tile::V * sizeof(T)>(buf + e / Cols * Stride + e % Cols, &x.v[r0]);
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

// Operand buffer bytes of one tensor-core mma stage (A of ARows rows: none where A is in registers).
template <class T, int ARows, int N, int K>
__host__ __device__ constexpr int mma_stage_bytes() {
  return ((ARows * mma_format<T>::a_stride(K) + K * mma_format<T>::b_stride(N)) * int(sizeof(T)) + 127) / 128 * 128;
}

// The operand buffer of this call (`stage` counts the calls) after every warp is done with it.
template <class T, int ARows, int N, int K>
__device__ T* mma_buffer(int& stage) {
  if (TW_MMA_BUFFERS == 1) __syncthreads();  // every warp has read the previous call's operands
  return reinterpret_cast<T*>(smem() + TW_MMA_SMEM_BASE + (stage++ % TW_MMA_BUFFERS) * mma_stage_bytes<T, ARows, N, K>());
}

// acc + a @ b on tensor cores (float16, bfloat16 or tfloat32 operands, as mma_format says).
template <class T, int M, int N, int K, int WM, int WN>
__device__ tile<float, shape<M, N>, mma_layout<WM, WN>> mma(const tile<T, shape<M, K>>& a, const tile<T, shape<K, N>>& b,
                                                           tile<float, shape<M, N>, mma_layout<WM, WN>> acc, int& stage) {
  using F = mma_format<T>;
  static_assert(on_tensor_cores<T>, "tensor-core mma takes float16, bfloat16 or tfloat32 operands");
  constexpr int WTM = M / WM, WTN = N / WN, MI = WTM / 16, NI = WTN / 8, AS = F::a_stride(K), BS = F::b_stride(N);
  static_assert(M % (16 * WM) == 0 && N % (8 * WN) == 0 && K % F::k == 0, "shape does not fit the warps");
  T* abuf = mma_buffer<T, M, N, K>(stage);
  T* bbuf = abuf + M * AS;
  to_padded_smem<AS>(a, abuf);
  to_padded_smem<BS>(b, bbuf);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* a_lane = abuf + warp / WN * WTM * AS + F::a_lane(lane, AS);
  const T* b_lane = bbuf + warp % WN * WTN + F::b_lane(lane, BS);
#pragma unroll 1  // one k step's fragments live at a time: fewer registers, more blocks per SM
  for (int k0 = 0; k0 < K; k0 += F::k) mma_step<T, MI, NI, AS, BS>(acc.v, a_lane + k0, b_lane + k0 * BS);
  return acc;
}

// acc + a @ b on tensor cores with `a` already in registers, in the accumulator layout of the same
// warps (typically a previous mma's result, cast to the operand type): each k step's A fragments are
// accumulator fragments (mma_format::a_from_registers), so only `b` goes through shared memory.
// This is how P @ V follows Q @ K^T in attention without a round trip.
template <class T, int M, int N, int K, int WM>
__device__ tile<float, shape<M, N>, mma_layout<WM, 1>> mma(const tile<T, shape<M, K>, mma_layout<WM, 1>>& a,
                                                          const tile<T, shape<K, N>>& b,
                                                          tile<float, shape<M, N>, mma_layout<WM, 1>> acc, int& stage) {
  using F = mma_format<T>;
  static_assert(on_tensor_cores<T>, "tensor-core mma takes float16, bfloat16 or tfloat32 operands");
  constexpr int WTM = M / WM, MI = WTM / 16, NI = N / 8, KI = K / 8, BS = F::b_stride(N);
  static_assert(M % (16 * WM) == 0 && N % 8 == 0 && K % F::k == 0, "shape does not fit the warps");
  T* bbuf = mma_buffer<T, 0, N, K>(stage);
  to_padded_smem<BS>(b, bbuf);
  __syncthreads();
  const T* b_lane = bbuf + F::b_lane(threadIdx.x % 32, BS);
#pragma unroll
  for (int t = 0; t < K / F::k; ++t) {
    uint32_t af[MI][4], bf[NI][2];
#pragma unroll
    for (int i = 0; i < MI; ++i) F::template a_from_registers<KI>(af[i], a.v, i, t);
    F::template load_b<NI, BS>(bf, b_lane + t * F::k * BS);
    mma_fragments<T, MI, NI>(acc.v, af, bf);
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
