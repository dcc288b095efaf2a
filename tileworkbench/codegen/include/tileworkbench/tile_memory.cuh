// Global memory: arrays, tile-space load/store, gather/scatter and advanced indexing.
//
// Each thread moves its own chunks of V consecutive tile elements. When a chunk lies in one row of
// a unit-stride array, is inside the array and is aligned, it moves as 16-byte (or 8/4-byte)
// vector accesses; otherwise element by element with a bounds check. Elements outside the array
// read `pad` and are never written.
#pragma once

namespace tw {

template <class T> struct same { using type = T; };  // a parameter that takes part in no deduction

// (a 0-d array, one element, keeps one unused extent: C++ has no arrays of length 0)
template <class T, int Rank>
struct array {
  T* ptr;
  int32_t shape[Rank > 0 ? Rank : 1];
  int32_t stride[Rank > 0 ? Rank : 1];  // in elements
};

// array.slice(axis, start, stop): the same memory from start to stop along axis (no copy)
template <class T, int Rank>
__device__ array<T, Rank> slice(const array<T, Rank>& a, int axis, int32_t start, int32_t stop) {
  array<T, Rank> view = a;
  view.ptr = a.ptr + int64_t(start) * a.stride[axis];
  view.shape[axis] = stop - start;
  return view;
}

// As[index] of a list argument (its arrays, in order) at an index known at run time. Past either
// end (undefined in cuTile) it is an empty array: loads read padding and stores write nothing.
template <class T, int Rank, class... More>
__device__ array<T, Rank> list_item(long long index, const array<T, Rank>& first, const More&... more) {
  const array<T, Rank> items[] = {first, more...};
  array<T, Rank> item{};
#pragma unroll
  for (int k = 0; k <= int(sizeof...(More)); ++k)  // a select per item: the list stays in registers
    if (k == index) item = items[k];
  return item;
}

// A tile-space index or a start position: tw::at(i, j)
template <int Rank>
struct coords {
  int32_t v[Rank > 0 ? Rank : 1];
  __device__ int32_t operator[](int d) const { return v[d]; }
};
template <class... I>
__device__ coords<sizeof...(I)> at(I... i) { return {{int32_t(i)...}}; }

// Copy one chunk of Bytes bytes with the widest aligned accesses.
template <int Bytes>
__device__ void copy_chunk(void* dst, const void* src) {
  if constexpr (Bytes % 16 == 0) {
#pragma unroll
    for (int i = 0; i < Bytes / 16; ++i) static_cast<uint4*>(dst)[i] = static_cast<const uint4*>(src)[i];
  } else if constexpr (Bytes % 8 == 0) {
#pragma unroll
    for (int i = 0; i < Bytes / 8; ++i) static_cast<uint2*>(dst)[i] = static_cast<const uint2*>(src)[i];
  } else if constexpr (Bytes % 4 == 0) {
#pragma unroll
    for (int i = 0; i < Bytes / 4; ++i) static_cast<uint32_t*>(dst)[i] = static_cast<const uint32_t*>(src)[i];
  } else {
#pragma unroll
    for (int i = 0; i < Bytes; ++i) static_cast<uint8_t*>(dst)[i] = static_cast<const uint8_t*>(src)[i];
  }
}

template <int Bytes>
__device__ bool aligned(const void* p) {
  constexpr int a = Bytes % 16 == 0 ? 16 : Bytes % 8 == 0 ? 8 : Bytes % 4 == 0 ? 4 : 1;
  return reinterpret_cast<unsigned long long>(p) % a == 0;
}

// ---- chunks off their size's alignment -------------------------------------------------------------
//
// Rows of an odd length (3965 bf16 elements) start most chunks off a 16-byte boundary. Such a chunk,
// wholly inside the array, still moves in 16-byte accesses. Read, it is the middle of the aligned
// 16-byte blocks that hold it, shifted into place (every block holds bytes of the chunk, so no read
// leaves the array's pages). Written, each lane writes the aligned block that starts inside its chunk,
// completed with the first bytes of the next lane's chunk (warp shuffles); only where no neighbour's
// chunk continues its own (the ends of a row, of a warp's run of chunks) does a lane write the rest of
// a block, in aligned pieces of 8, 4, 2 and 1 bytes. The shift is the same for every chunk of a row,
// so the branches are uniform across a warp.

// w[i + q] (0 where outside w) for a shift q known at run time, 0 <= q < Q: selects, no local memory.
template <int Q, int N>
__device__ uint32_t word_at(const uint32_t (&w)[N], int i, int q) {
  uint32_t x = 0;
#pragma unroll
  for (int c = 0; c < Q; ++c)
    if (i + c >= 0 && i + c < N && q == c) x = w[i + c];
  return x;
}

// Copy Bytes (a multiple of 16) from src, inside the array and not 16-byte aligned, to registers.
// Unit: the element size, which src is aligned to (4-byte elements then shift by whole words).
template <int Bytes, int Unit>
__device__ void copy_chunk_shifted(void* dst, const void* src) {
  constexpr int N = Bytes / 16;
  const unsigned m = unsigned(reinterpret_cast<unsigned long long>(src) % 16) / Unit * Unit;
  const uint4* block = reinterpret_cast<const uint4*>(static_cast<const char*>(src) - m);
  uint32_t w[4 * N + 4];
#pragma unroll
  for (int b = 0; b <= N; ++b) {
    const uint4 v = block[b];
    w[4 * b] = v.x, w[4 * b + 1] = v.y, w[4 * b + 2] = v.z, w[4 * b + 3] = v.w;
  }
  const int q = m / 4, s = (m % 4) * 8;
  uint32_t out[4 * N];
#pragma unroll
  for (int i = 0; i < 4 * N; ++i) out[i] = __funnelshift_r(word_at<4>(w, i, q), word_at<4>(w, i + 1, q), s);
#pragma unroll
  for (int i = 0; i < N; ++i) static_cast<uint4*>(dst)[i] = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
}

// Write the bytes [from, to) of the aligned 16-byte block at `block`, whose words are w, in aligned
// pieces of Unit (the element size: from and to are multiples of it) to 8 bytes, widest where alignment allows.
template <int Unit>
__device__ void store_block_range(char* block, const uint32_t (&w)[4], int from, int to) {
  int pos = from;
  auto piece = [&](int width) {
    const uint32_t word = word_at<4>(w, 0, pos / 4);
    if (width == 8) *reinterpret_cast<uint2*>(block + pos) = make_uint2(word, word_at<4>(w, 1, pos / 4));
    else if (width == 4) *reinterpret_cast<uint32_t*>(block + pos) = word;
    else if (width == 2) *reinterpret_cast<uint16_t*>(block + pos) = uint16_t(word >> (pos % 4) * 8);
    else *reinterpret_cast<uint8_t*>(block + pos) = uint8_t(word >> (pos % 4) * 8);
    pos += width;
  };
#pragma unroll
  for (int width = Unit; width <= 8; width *= 2)  // up to the next 8-byte boundary
    if ((pos & width) && pos + width <= to) piece(width);
#pragma unroll
  for (int width = 8; width >= Unit; width /= 2)  // then down to `to`
    if (pos + width <= to) piece(width);
}

// This lane's chunk of Bytes (a multiple of 16) at dst, not 16-byte aligned, written from registers
// src where `shifted`; every lane of the warp calls it (see above). `continues`: the next lane's chunk,
// where shifted too, starts where this one ends. Unit: the element size.
template <int Bytes, int Unit>
__device__ void store_chunk_shifted(void* dst, const void* src, bool shifted, bool continues) {
  constexpr int N = Bytes / 16;
  const unsigned lane = threadIdx.x % 32;
  const uint32_t* c = static_cast<const uint32_t*>(src);
  uint32_t e[4 * N + 4];  // this chunk's words, then the first four of the next lane's
#pragma unroll
  for (int i = 0; i < 4 * N; ++i) e[i] = c[i];
#pragma unroll
  for (int i = 0; i < 4; ++i) e[4 * N + i] = __shfl_down_sync(0xffffffffu, c[i], 1);
  const bool next_shifted = __shfl_down_sync(0xffffffffu, int(shifted), 1);
  const bool joined_next = shifted && next_shifted && continues && lane != 31;
  const bool joined_previous = __shfl_up_sync(0xffffffffu, int(joined_next), 1) && lane != 0;
  if (!shifted) return;
  const unsigned m = unsigned(reinterpret_cast<unsigned long long>(dst) % 16) / Unit * Unit;
  const int q = m / 4, s = (m % 4) * 8;
  char* block = static_cast<char*>(dst) - m;
  auto shifted_word = [&](int j) { return word_at<4>(e, j - 3, 3 - q); };  // e[j - q]
#pragma unroll
  for (int b = 0; b <= N; ++b) {  // block b's word i is chunk bytes 16b + 4i - m ..
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = __funnelshift_l(shifted_word(4 * b + i - 1), shifted_word(4 * b + i), s);
    if (b == 0) {
      if (!joined_previous) store_block_range<Unit>(block, w, m, 16);  // else the previous lane wrote it whole
    } else if (b < N || joined_next) {
      reinterpret_cast<uint4*>(block)[b] = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      store_block_range<Unit>(block + 16 * b, w, 0, m);
    }
  }
}

// Read a chunk of V elements wholly inside the array at src into registers: one vector access where
// aligned, shifted vectors where not; false where neither applies (the caller reads element by element).
template <int V, class T>
__device__ bool read_chunk(T* dst, const T* src) {
  constexpr int Bytes = V * sizeof(T);
  if (aligned<Bytes>(src)) {
    copy_chunk<Bytes>(dst, src);
    return true;
  }
  if constexpr (Bytes % 16 == 0) {
    copy_chunk_shifted<Bytes, sizeof(T)>(dst, src);
    return true;
  }
  return false;
}

// Whether p holds in any lane of the warp (all of whose lanes call it): __any_sync's vote, written as
// an asm statement that touches no memory (not volatile either), since the compiler takes the builtin,
// or a volatile asm, for a write that could alias any array, and then reads none through the
// read-only cache (LDG.CONSTANT).
__device__ inline bool warp_any(bool p) {
  unsigned any;
  asm("{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n vote.sync.any.pred q, p, 0xffffffff;\n selp.u32 %0, 1, 0, q;\n}"
      : "=r"(any) : "r"(unsigned(p)));
  return any;
}

// Write a chunk of V elements from registers src to dst where `whole` (wholly inside the array,
// unmasked, contiguous); every lane of the warp calls it. `continues`: the next lane's chunk, where
// whole too, starts where this one ends. False where the caller writes the chunk element by element.
template <int V, class T>
__device__ bool write_chunk(T* dst, const T* src, bool whole, bool continues) {
  constexpr int Bytes = V * sizeof(T);
  if constexpr (V > 1 && Bytes % 16 == 0 && TW_THREADS % 32 == 0) {  // (whole warps: every lane calls)
    const bool shifted = whole && !aligned<16>(dst);
    if (warp_any(shifted)) store_chunk_shifted<Bytes, sizeof(T)>(dst, src, shifted, continues);
    if (shifted) return true;
  }
  if (whole && aligned<Bytes>(dst)) {
    copy_chunk<Bytes>(dst, src);
    return true;
  }
  return false;
}

// Where a chunk starting at tile element e0 sits in the array: its offset, and whether all of it
// is inside the array along every axis but the last (and from `coord_last` along the last).
template <class S, class T, int Rank>
struct chunk_place {
  static_assert(S::rank == Rank, "a tile has the rank of the array it is loaded from or stored to");
  long long offset;
  int last;        // array coordinate of the chunk's first element along the last axis
  bool rows_inside;
  __device__ chunk_place(const array<T, Rank>& a, const coords<Rank>& index, int e0) {
    int c[Rank];
    S::unflatten(e0, c);
    offset = 0;
    rows_inside = true;
#pragma unroll
    for (int d = 0; d < Rank; ++d) {
      int x = index[d] * S::dim(d) + c[d];
      if (d < Rank - 1) rows_inside = rows_inside && x >= 0 && x < a.shape[d];
      offset += (long long)x * a.stride[d];
      if (d == Rank - 1) last = x;
    }
  }
  __device__ bool inside(const array<T, Rank>& a, int j) const {
    return rows_inside && last + j >= 0 && last + j < a.shape[Rank - 1];
  }
};

// The tile at `index` of the array's tile space (identity order: other orders are a permute).
template <class S, class T, int Rank>
__device__ tile<T, S> load(const array<T, Rank>& a, const coords<Rank>& index, typename same<T>::type pad) {
  using Tile = tile<T, S>;
  constexpr int V = Tile::V;
  constexpr bool rows_of_chunks = S::dim(Rank - 1) % V == 0;  // a chunk never crosses a row
  Tile out;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += V) {
    chunk_place<S, T, Rank> p(a, index, Tile::elem(r0));
    if (rows_of_chunks && V > 1 && p.inside(a, 0) && p.inside(a, V - 1) && a.stride[Rank - 1] == 1 &&
        read_chunk<V>(&out.v[r0], a.ptr + p.offset))
      continue;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if constexpr (rows_of_chunks) {  // element j is j steps along the chunk's row
        out.v[r0 + j] = p.inside(a, j) ? a.ptr[p.offset + (long long)j * a.stride[Rank - 1]] : pad;
      } else {
        chunk_place<S, T, Rank> q(a, index, Tile::elem(r0 + j));
        out.v[r0 + j] = q.inside(a, 0) ? a.ptr[q.offset] : pad;
      }
    }
  }
  return out;
}

template <class S, class T, int Rank>
__device__ void store(const array<T, Rank>& a, const coords<Rank>& index, const tile<T, S>& x) {
  using Tile = tile<T, S>;
  constexpr int V = Tile::V;
  constexpr bool rows_of_chunks = S::dim(Rank - 1) % V == 0;
  if (!x.owner()) return;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += V) {
    chunk_place<S, T, Rank> p(a, index, Tile::elem(r0));
    const bool whole = rows_of_chunks && V > 1 && p.inside(a, 0) && p.inside(a, V - 1) && a.stride[Rank - 1] == 1;
    // the next lane holds the next chunk of the tile: in the same row of the array unless a new row starts
    const bool continues = (Tile::elem(r0) + V) % S::dim(Rank - 1) != 0;
    if (write_chunk<V>(a.ptr + p.offset, &x.v[r0], whole, continues)) continue;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      chunk_place<S, T, Rank> q(a, index, Tile::elem(r0 + j));
      if (q.inside(a, 0)) a.ptr[q.offset] = x.v[r0 + j];
    }
  }
}

// A 0-d array's one element, as a tile of shape<> (its only tile-space index is ())
template <class S, class T>
__device__ tile<T, S> load(const array<T, 0>& a, const coords<0>&, typename same<T>::type) {
  return full<T, S>(a.ptr[0]);
}

template <class S, class T>
__device__ void store(const array<T, 0>& a, const coords<0>&, const tile<T, S>& x) {
  if (x.owner()) a.ptr[0] = x.v[0];
}

struct no_mask {};

__device__ inline bool mask_at(const no_mask&, int) { return true; }
template <class S>
__device__ bool mask_at(const tile<bool, S>& m, int r) { return m.v[r]; }

// A mask that is `start + ct.arange(n) < bound` along Axis of the gather's or scatter's tile S
// (`mask=cols < n`): each element's bit from its coordinate, no tile made; a chunk of V elements
// along the last axis is unmasked when its last element is and no value wraps between its ends.
template <class I, class S, int Axis>
struct affine_mask {
  I start, bound;
  __device__ I value(int r) const {
    int c[S::rank];
    S::unflatten(tile<bool, S>::elem(r), c);
    return I(start + I(c[Axis]));
  }
};
template <class I, class S, int Axis>
__device__ bool mask_at(const affine_mask<I, S, Axis>& m, int r) { return m.value(r) < m.bound; }

// Whether all V elements of the chunk at register r0 (in one row of the tile) are unmasked.
template <int V, class M>
__device__ bool chunk_unmasked(const M& mask, int r0) {
  bool all = true;
#pragma unroll
  for (int j = 0; j < V; ++j) all = all && mask_at(mask, r0 + j);
  return all;
}
template <int V, class I, class S, int Axis>
__device__ bool chunk_unmasked(const affine_mask<I, S, Axis>& mask, int r0) {
  if constexpr (Axis == S::rank - 1) return mask.value(r0) <= mask.value(r0 + V - 1) && mask_at(mask, r0 + V - 1);
  else return mask_at(mask, r0);
}

// A signed or unsigned index is inside [0, n) exactly when its unsigned 64-bit value is below n.
template <class I>
__device__ bool in_range(I i, int n) {
  if constexpr (traits<I>::is_signed) return i >= 0 && (long long)i < n;
  else return (unsigned long long)i < (unsigned long long)n;
}

// An index operand of a gather or scatter that broadcasts a smaller tile (shape SX, equal rank, its
// size-1 axes stretched to S): the smaller tile sits in shared memory, written once by index_table,
// and each element's index is read from it where it is used. A (128, 1) x (1, 128) outer product of
// row and column indices then holds no 128 x 128 index tiles in registers.
template <class I, class SX, class S>
struct broadcast_index {
  using shape_type = S;
  const I* table;  // SX's elements in C order, skewed as to_smem writes them
  __device__ I operator[](int r) const {
    int c[S::rank];
    S::unflatten(tile<I, S>::elem(r), c);
#pragma unroll
    for (int i = 0; i < S::rank; ++i) c[i] = SX::dim(i) == 1 ? 0 : c[i];
    return table[skew(SX::flatten(c))];
  }
};

// Write x to shared memory at `offset` bytes for the gather or scatter of shape S that reads it.
// The caller puts a barrier before (the memory is the layout changes') and after (all are written).
template <class S, class I, class SX>
__device__ broadcast_index<I, SX, S> index_table(const tile<I, SX>& x, int offset) {
  static_assert(SX::rank == S::rank, "an index broadcasts at equal rank");
  I* table = reinterpret_cast<I*>(smem() + offset);
  to_smem(x, table);
  return {table};
}

// An index operand that is `start + ct.arange(n)` broadcast along Axis of the gather's or scatter's
// tile S: each element's index is its coordinate plus start, nothing stored or read.
template <class I, class S, int Axis>
struct affine_index {
  using shape_type = S;
  I start;
  __device__ I operator[](int r) const {
    int c[S::rank];
    S::unflatten(tile<I, S>::elem(r), c);
    return start + I(c[Axis]);
  }
};

// An index operand that is one scalar broadcast to the gather's or scatter's tile S (`row` in
// `ct.gather(x, (row, cols))`): the same index for every element, no tile made.
template <class I, class S>
struct uniform_index {
  using shape_type = S;
  I value;
};

template <class I, class S>
__device__ I index_at(const tile<I, S>& index, int r) { return index.v[r]; }
template <class I, class S>
__device__ I index_at(const uniform_index<I, S>& index, int) { return index.value; }
template <class I, class SX, class S>
__device__ I index_at(const broadcast_index<I, SX, S>& index, int r) { return index[r]; }
template <class I, class S, int Axis>
__device__ I index_at(const affine_index<I, S, Axis>& index, int r) { return index[r]; }

// How an index operand changes along the last axis of its tile, which a chunk of V consecutive
// elements walks: `constant` (a broadcast of a tile of one column, or an affine index along another
// axis), `step` (an affine index along that axis: +1 per element), else `any`.
enum class along_last { any, constant, step };
template <class Index> constexpr along_last along_last_of = along_last::any;
template <class I, class SX, class S>
constexpr along_last along_last_of<broadcast_index<I, SX, S>> =
    SX::dim(SX::rank - 1) == 1 ? along_last::constant : along_last::any;
template <class I, class S>
constexpr along_last along_last_of<uniform_index<I, S>> = along_last::constant;
template <class I, class S, int Axis>
constexpr along_last along_last_of<affine_index<I, S, Axis>> =
    Axis == S::rank - 1 ? along_last::step : along_last::constant;

template <int Rank, class... Index>  // index tiles of one shape (none for a 0-d array)
__device__ bool element_offset(const int32_t* shape, const int32_t* stride, int r, long long& offset,
                               const Index&... index) {
  bool inside = true;
  int d = 0;
  offset = 0;
  ((inside = inside && in_range(index_at(index, r), shape[d]), offset += (long long)index_at(index, r) * stride[d],
    ++d),
   ...);
  return inside;
}

template <int Rank>
__device__ bool element_offset(const int32_t*, const int32_t*, int, long long& offset) {  // a 0-d array
  offset = 0;
  return true;
}

template <class... Index> struct last_type;
template <class Last> struct last_type<Last> { using shape = typename Last::shape_type; };
template <class First, class... Rest> struct last_type<First, Rest...> : last_type<Rest...> {};

template <class Last>
__device__ const Last& last_of(const Last& last) { return last; }
template <class First, class... Rest>
__device__ const auto& last_of(const First&, const Rest&... rest) { return last_of(rest...); }

// Whether element r's indices are inside the array along every axis but the last.
template <int Rank, class... Index>
__device__ bool rows_in_range(const int32_t* shape, int r, const Index&... index) {
  bool inside = true;
  int d = 0;
  ((inside = inside && (d == Rank - 1 || in_range(index_at(index, r), shape[d])), ++d), ...);
  return inside;
}

// The integer type of the last of a gather's or scatter's index operands, and the type a position
// along the array's last axis is compared in: int for 32-bit signed indices (no overflow: |index| and
// extents are below 2^31), else long long.
template <class Index> struct index_of;
template <class I, class S> struct index_of<tile<I, S>> { using type = I; };
template <class I, class S> struct index_of<uniform_index<I, S>> { using type = I; };
template <class I, class S, int Axis> struct index_of<affine_index<I, S, Axis>> { using type = I; };
template <class I, class SX, class S> struct index_of<broadcast_index<I, SX, S>> { using type = I; };
template <class... Index> struct index_type { using type = int; };  // (a 0-d array: no index)
template <class Last> struct index_type<Last> : index_of<Last> {};
template <class First, class... Rest> struct index_type<First, Rest...> : index_type<Rest...> {};
template <class I> struct position_of { using type = long long; };
template <> struct position_of<int32_t> { using type = int; };
template <> struct position_of<int16_t> { using type = int; };
template <> struct position_of<int8_t> { using type = int; };

// Whether a chunk of V consecutive elements of a tile indexed by `Index...` lies in one row of the
// tile (V divides its last axis) along which every index is constant but the last, which steps by
// one (`a[row, cols]`, `a[rows[:, None], start + ct.arange(n)[None, :]]`): its elements then sit at
// one offset and the next ones along the array's last axis.
template <int V, class... Index>
__host__ __device__ constexpr bool walks_one_row() {
  if constexpr (sizeof...(Index) == 0) {
    return false;
  } else if constexpr (last_type<Index...>::shape::rank == 0) {  // scalar indices
    return false;
  } else {
    constexpr along_last kinds[] = {along_last_of<Index>...};
    using S = typename last_type<Index...>::shape;
    bool ok = S::dim(S::rank - 1) % V == 0 && kinds[sizeof...(Index) - 1] == along_last::step;
    for (int k = 0; k + 1 < int(sizeof...(Index)); ++k) ok = ok && kinds[k] == along_last::constant;
    return ok;
  }
}

// Where the V elements of a chunk (a thread's registers r0 .. r0+V-1) sit in the array, and whether
// each is inside and unmasked. The chunk is `contiguous` when all are and their offsets run
// offset(0), offset(0)+1, ...: then it moves as one vector access, so a gather or scatter whose
// indices are affine in arange (bid * T + arange(T), a row of a 2-d array) is as fast as a load.
// A chunk that walks one row is decided by its first and last elements' positions (two comparisons,
// in 32 bits for 32-bit signed indices); the positions and checks of its single elements, which only
// a chunk at an edge needs, are computed there.
template <int V, int Rank, class M, class... Index>  // index tiles of one shape (none for a 0-d array)
struct element_chunk {
  static constexpr bool one_row = walks_one_row<V, Index...>();
  // compares in the index's own width where that cannot overflow against an extent
  using position = typename position_of<typename index_type<Index...>::type>::type;
  long long offsets[one_row ? 1 : V];  // (one row: the first element's only)
  bool oks[one_row ? 1 : V];
  position last;  // (one row) the chunk's first position along the array's last axis
  int32_t extent, step;  // (one row) the array's last extent and stride
  bool rows_inside;  // (one row) the chunk's row is inside the array along the other axes
  bool contiguous;

  template <class T>
  __device__ element_chunk(const array<T, Rank>& a, const M& mask, int r0, const Index&... index) {
    if constexpr (one_row) {
      last = position(index_at(last_of(index...), r0));
      extent = a.shape[Rank - 1];
      step = a.stride[Rank - 1];
      element_offset<Rank>(a.shape, a.stride, r0, offsets[0], index...);
      rows_inside = rows_in_range<Rank>(a.shape, r0, index...);
      contiguous = V > 1 && step == 1 && rows_inside && last >= 0 && last <= position(extent) - V &&
                   chunk_unmasked<V>(mask, r0);
    } else {
      contiguous = V > 1;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        oks[j] = element_offset<Rank>(a.shape, a.stride, r0 + j, offsets[j], index...) && mask_at(mask, r0 + j);
        contiguous = contiguous && oks[j] && offsets[j] == offsets[0] + j;
      }
    }
  }
  __device__ long long offset(int j) const {
    if constexpr (one_row) return offsets[0] + (long long)j * step;
    else return offsets[j];
  }
  __device__ bool ok(int j, const M& mask, int r0) const {  // (the mask and r0 the chunk was made with)
    if constexpr (one_row) return rows_inside && last + j >= 0 && last + j < extent && mask_at(mask, r0 + j);
    else return oks[j];
  }
};

template <int V, int Rank, class T, class M, class... Index>
__device__ element_chunk<V, Rank, M, Index...> chunk_at(const array<T, Rank>& a, const M& mask, int r0,
                                                        const Index&... index) {
  return {a, mask, r0, index...};
}

// t[...] = a[index0[...], index1[...], ...] where inside and unmasked, else pad
template <class T, int Rank, class S, class M, class... Index>  // index tiles, or broadcast_index of shape S
__device__ tile<T, S> gather(const array<T, Rank>& a, const tile<T, S>& pad, const M& mask, const Index&... index) {
  using Tile = tile<T, S>;
  constexpr int V = Tile::V;
  Tile out;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += V) {
    const auto c = chunk_at<V>(a, mask, r0, index...);
    if (c.contiguous && read_chunk<V>(&out.v[r0], a.ptr + c.offset(0))) continue;
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[r0 + j] = c.ok(j, mask, r0) ? a.ptr[c.offset(j)] : pad.v[r0 + j];
  }
  return out;
}

template <class T, int Rank, class S, class M, class... Index>
__device__ void scatter(const array<T, Rank>& a, const tile<T, S>& value, const M& mask, const Index&... index) {
  using Tile = tile<T, S>;
  constexpr int V = Tile::V;
  if (!value.owner()) return;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += V) {
    const auto c = chunk_at<V>(a, mask, r0, index...);
    // (one row: the next lane's chunk is the next along the same array row unless a new tile row starts)
    constexpr int row = S::rank > 0 ? S::dim(S::rank - 1) : 1;
    const bool continues = c.one_row && (Tile::elem(r0) + V) % row != 0;
    if (write_chunk<V>(a.ptr + c.offset(0), &value.v[r0], c.contiguous, continues)) continue;
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (c.ok(j, mask, r0)) a.ptr[c.offset(j)] = value.v[r0 + j];
  }
}

// ---- atomics: per element, indexed like gather/scatter, returning the old values ------------------
//
// A tile's atomic is one step of the block's program: in release order every thread's earlier memory
// operations come before it (a barrier, then each element's read-modify-write releasing), in acquire
// order every thread's later ones come after it (each element's read-modify-write acquiring, then a
// barrier). The order rides on the atomic instruction itself (atom.acquire: no fence at all; atom.release:
// the lighter fence.acq_rel), not on a sequentially consistent fence around it, which waits for every
// earlier store of the thread to reach every memory partition.

enum class atomic_kind { cas, xchg, add, max, min, bit_and, bit_or, bit_xor };
enum class memory_order { relaxed, acquire, release, acq_rel };
enum class memory_scope { block, device, sys };

template <memory_order Order>
constexpr bool releases = Order == memory_order::release || Order == memory_order::acq_rel;
template <memory_order Order>
constexpr bool acquires = Order == memory_order::acquire || Order == memory_order::acq_rel;

template <int Bytes> struct word;  // the unsigned integer the bit-level intrinsics take
template <> struct word<4> { using type = unsigned; };
template <> struct word<8> { using type = unsigned long long; };

// The hardware's relaxed read-modify-write.
template <atomic_kind Kind, class T>
__device__ T atomic_element(T* p, T value, T expected) {
  using W = typename word<sizeof(T) >= 4 ? sizeof(T) : 4>::type;
  if constexpr (Kind == atomic_kind::add && (traits<T>::is_float || sizeof(T) == 4)) return atomicAdd(p, value);
  else if constexpr (Kind == atomic_kind::add) return T(atomicAdd(reinterpret_cast<W*>(p), W(value)));  // wraps
  else if constexpr ((Kind == atomic_kind::max || Kind == atomic_kind::min) && sizeof(T) == 8 && traits<T>::is_signed) {
    long long* q = reinterpret_cast<long long*>(p);
    return T(Kind == atomic_kind::max ? atomicMax(q, (long long)value) : atomicMin(q, (long long)value));
  } else if constexpr (Kind == atomic_kind::max) return atomicMax(p, value);
  else if constexpr (Kind == atomic_kind::min) return atomicMin(p, value);
  else if constexpr (Kind == atomic_kind::bit_and) return T(atomicAnd(reinterpret_cast<W*>(p), W(value)));
  else if constexpr (Kind == atomic_kind::bit_or) return T(atomicOr(reinterpret_cast<W*>(p), W(value)));
  else if constexpr (Kind == atomic_kind::bit_xor) return T(atomicXor(reinterpret_cast<W*>(p), W(value)));
  else if constexpr (Kind == atomic_kind::xchg) return bitcast<T>(atomicExch(reinterpret_cast<W*>(p), bitcast<W>(value)));
  else return bitcast<T>(atomicCAS(reinterpret_cast<W*>(p), bitcast<W>(expected), bitcast<W>(value)));  // bits compared
}

// What the ordered builtins compute in: floats, and the max/min of integers, as they are; everything
// else as unsigned words (integer adds wrap, a CAS or an exchange moves bits).
template <atomic_kind Kind, class T>
constexpr bool keeps_type = traits<T>::is_float ? Kind == atomic_kind::add
                                                : Kind == atomic_kind::max || Kind == atomic_kind::min;
template <bool Keep, class T, class W> struct computed_in { using type = W; };
template <class T, class W> struct computed_in<true, T, W> { using type = T; };

// The builtins take their memory order and scope as literals: TW_ORDERED(F) returns F(order, order of a
// failed CAS, scope) with those of Order and Scope spelled out (a failed CAS writes nothing: it never releases).
#define TW_ORDERED_IN(F, SCOPE)                                                                              \
  if constexpr (Order == memory_order::acquire) return F(__NV_ATOMIC_ACQUIRE, __NV_ATOMIC_ACQUIRE, SCOPE);     \
  else if constexpr (Order == memory_order::release) return F(__NV_ATOMIC_RELEASE, __NV_ATOMIC_RELAXED, SCOPE); \
  else return F(__NV_ATOMIC_ACQ_REL, __NV_ATOMIC_ACQUIRE, SCOPE);
#define TW_ORDERED(F)                                                                                \
  if constexpr (Scope == memory_scope::block) { TW_ORDERED_IN(F, __NV_THREAD_SCOPE_BLOCK) }          \
  else if constexpr (Scope == memory_scope::device) { TW_ORDERED_IN(F, __NV_THREAD_SCOPE_DEVICE) }   \
  else { TW_ORDERED_IN(F, __NV_THREAD_SCOPE_SYSTEM) }
#define TW_RMW(ORDER, FAILURE, SCOPE) [&] {                                                                   \
    if constexpr (Kind == atomic_kind::cas) {                                                                  \
      U old = bitcast<U>(expected), desired = bitcast<U>(value);                                               \
      __nv_atomic_compare_exchange(q, &old, &desired, false, ORDER, FAILURE, SCOPE);                           \
      return bitcast<T>(old);                                                                                  \
    } else if constexpr (Kind == atomic_kind::xchg) {                                                          \
      U update = bitcast<U>(value), old;                                                                       \
      __nv_atomic_exchange(q, &update, &old, ORDER, SCOPE);                                                    \
      return bitcast<T>(old);                                                                                  \
    } else if constexpr (Kind == atomic_kind::add) return T(__nv_atomic_fetch_add(q, U(value), ORDER, SCOPE));   \
    else if constexpr (Kind == atomic_kind::max) return T(__nv_atomic_fetch_max(q, U(value), ORDER, SCOPE));     \
    else if constexpr (Kind == atomic_kind::min) return T(__nv_atomic_fetch_min(q, U(value), ORDER, SCOPE));     \
    else if constexpr (Kind == atomic_kind::bit_and) return T(__nv_atomic_fetch_and(q, U(value), ORDER, SCOPE)); \
    else if constexpr (Kind == atomic_kind::bit_or) return T(__nv_atomic_fetch_or(q, U(value), ORDER, SCOPE));   \
    else return T(__nv_atomic_fetch_xor(q, U(value), ORDER, SCOPE));                                           \
  }()

// fence.acq_rel at a scope: before a relaxed read-modify-write it releases, after one it acquires. Written
// out, as NVRTC 13.4 lowers __nv_atomic_thread_fence's release order to the sequentially consistent fence.
template <memory_scope Scope>
__device__ inline void fence_acq_rel() {
  if constexpr (Scope == memory_scope::block) asm volatile("fence.acq_rel.cta;" ::: "memory");
  else if constexpr (Scope == memory_scope::device) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  else asm volatile("fence.acq_rel.sys;" ::: "memory");
}

// A relaxed read-modify-write between fences of the order (16-bit float adds, which no ordered builtin takes).
#define TW_FENCED(ORDER, FAILURE, SCOPE) [&] {                                    \
    if constexpr (releases<Order>) fence_acq_rel<Scope>();                         \
    const T old = atomic_element<Kind>(p, value, expected);                        \
    if constexpr (acquires<Order>) fence_acq_rel<Scope>();                         \
    return old;                                                                    \
  }()

// The read-modify-write in memory order Order at scope Scope.
template <atomic_kind Kind, memory_order Order, memory_scope Scope, class T>
__device__ T atomic_ordered(T* p, T value, T expected) {
  if constexpr (Order == memory_order::relaxed) {
    return atomic_element<Kind>(p, value, expected);
  } else if constexpr (sizeof(T) < 4) {
    TW_ORDERED(TW_FENCED)
  } else {
    using U = typename computed_in<keeps_type<Kind, T>, T, typename word<sizeof(T)>::type>::type;
    U* q = reinterpret_cast<U*>(p);
    TW_ORDERED(TW_RMW)
  }
}
#undef TW_FENCED
#undef TW_RMW
#undef TW_ORDERED
#undef TW_ORDERED_IN

// f(r) for each register r this thread owns, as one step of the block's program in memory order Order.
// The threads holding replicas of a tile smaller than the block read the owner's result (so each element
// is updated once); where the results go unused (Used false) nobody waits for them.
template <class T, class S, memory_order Order, bool Used, class F>
__device__ tile<T, S> owned_results(F f) {
  using Tile = tile<T, S>;
  constexpr bool replicated = S::size < TW_THREADS, shared = replicated && Used;
  Tile out = full<T, S>(T(0));
  if constexpr (releases<Order> || shared) __syncthreads();  // earlier memory operations; earlier users of smem()
  if constexpr (shared) {
    T* buf = reinterpret_cast<T*>(smem());
    if (Tile::owner()) buf[Tile::elem(0)] = f(0);
    __syncthreads();
    out.v[0] = buf[Tile::elem(0)];
  } else if (Tile::owner()) {
#pragma unroll
    for (int r = 0; r < Tile::R; ++r) out.v[r] = f(r);
  }
  if constexpr (acquires<Order> && !shared) __syncthreads();  // later memory operations
  return out;
}

// Outside the array nothing is written; the result there is 0 (a CAS returns `expected`).
template <atomic_kind Kind, memory_order Order, memory_scope Scope, bool Used = true, class T, int Rank, class S,
          class... Index>
__device__ tile<T, S> atomic_rmw(const array<T, Rank>& a, const tile<T, S>& update, const Index&... index) {
  return owned_results<T, S, Order, Used>([&](int r) {
    long long offset;
    if (!element_offset<Rank>(a.shape, a.stride, r, offset, index...)) return T(0);
    return atomic_ordered<Kind, Order, Scope>(a.ptr + offset, update.v[r], update.v[r]);
  });
}

template <memory_order Order, memory_scope Scope, bool Used = true, class T, int Rank, class S, class... Index>
__device__ tile<T, S> atomic_cas(const array<T, Rank>& a, const tile<T, S>& expected, const tile<T, S>& desired,
                                 const Index&... index) {
  return owned_results<T, S, Order, Used>([&](int r) {
    long long offset;
    if (!element_offset<Rank>(a.shape, a.stride, r, offset, index...)) return expected.v[r];
    return atomic_ordered<atomic_kind::cas, Order, Scope>(a.ptr + offset, desired.v[r], expected.v[r]);
  });
}

// Advanced indexing: along SparseDim the coordinate comes from `index` (already broadcast to the
// tile's shape), along the other dims it is start[d] + the tile coordinate.
template <int SparseDim, class T, int Rank, class S, class I>
__device__ bool advanced_offset(const array<T, Rank>& a, const tile<I, S>& index, const coords<Rank>& start, int r,
                                long long& offset) {
  int c[Rank];
  S::unflatten(tile<I, S>::elem(r), c);
  bool inside = true;
  offset = 0;
#pragma unroll
  for (int d = 0; d < Rank; ++d) {
    long long x = d == SparseDim ? (long long)index.v[r] : (long long)start[d] + c[d];
    inside = inside && (d == SparseDim ? in_range(index.v[r], a.shape[d]) : (x >= 0 && x < a.shape[d]));
    offset += x * a.stride[d];
  }
  return inside;
}

template <int SparseDim, class S, class T, int Rank, class I>
__device__ tile<T, S> load_advanced(const array<T, Rank>& a, const tile<I, S>& index, const coords<Rank>& start,
                                     typename same<T>::type pad) {
  tile<T, S> out;
#pragma unroll
  for (int r = 0; r < tile<T, S>::R; ++r) {
    long long offset;
    out.v[r] = advanced_offset<SparseDim>(a, index, start, r, offset) ? a.ptr[offset] : pad;
  }
  return out;
}

template <int SparseDim, class T, int Rank, class S, class I>
__device__ void store_advanced(const array<T, Rank>& a, const tile<I, S>& index, const coords<Rank>& start,
                               const tile<T, S>& x) {
  if (!x.owner()) return;
#pragma unroll
  for (int r = 0; r < tile<T, S>::R; ++r) {
    long long offset;
    if (advanced_offset<SparseDim>(a, index, start, r, offset)) a.ptr[offset] = x.v[r];
  }
}

}  // namespace tw
