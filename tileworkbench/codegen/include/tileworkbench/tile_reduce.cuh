// Reductions and scans (matrix multiply is in tile_mma.cuh).
//
// A reduction to several outputs writes the tile to shared memory in C order (in slices, when it
// is larger than the stage the code generator allows), then each output is combined by a group of
// threads: each thread folds a strided share of the output's elements, then the group combines
// with warp shuffles (and through shared memory when a group spans several warps). The results are
// dealt back into the output tile's layout.
#pragma once

namespace tw {

template <class V>
struct indexed {  // a value and where it came from, for argmax/argmin
  V value;
  int index;
};

template <class A>
__device__ A shuffle_xor(A x, int mask) {
  if constexpr (sizeof(A) == 1) return A(__shfl_xor_sync(0xffffffffu, int(x), mask));
  else return __shfl_xor_sync(0xffffffffu, x, mask);
}
template <class V>
__device__ indexed<V> shuffle_xor(indexed<V> x, int mask) {
  return {shuffle_xor(x.value, mask), __shfl_xor_sync(0xffffffffu, x.index, mask)};
}

// Element (o, j) of S: output o (C order over the keepdims shape S2) and j, its rank among o's
// L reduced elements (C order over the reduced axes).
template <class S, class S2>
__device__ int reduced_element(int o, int j) {
  int c[S::rank > 0 ? S::rank : 1];
  for (int d = S::rank - 1; d >= 0; --d) {
    if (S2::dim(d) == 1 && S::dim(d) != 1) {
      c[d] = j % S::dim(d);
      j /= S::dim(d);
    } else {
      c[d] = o % S2::dim(d);
      o /= S2::dim(d);
    }
  }
  return S::flatten(c);
}

// A reduction over leading axes (S2 is 1 along the first axes and S's along the rest) sends element
// e to output e % S2::size, reduced element j = e / S2::size. A thread's register chunks lie
// TW_THREADS * V elements apart, so chunks whose distance is a multiple of the output count land on
// the same outputs: they fold in registers first, into the chunks of a smaller tile of shape
// <folded size / outputs, outputs> (chunk q into chunk q % folded_chunks). Returns folded_chunks, or
// 0 where nothing folds. A (32, 1024) float column sum on 512 threads of 8-element chunks folds each
// thread's 8 chunks into 1: a (4, 1024) tile, 16 KB instead of 128 KB through shared memory. Where the
// folded tile is one row, it is the result as it lies, and nothing goes through shared memory
// (codegen.cuda.folded_reduction is the same rule, for the shared memory the kernel asks for).
template <class S, class S2>
__host__ __device__ constexpr int folded_chunks() {
  constexpr int R = blocked::registers<S>(), V = blocked::vec<S>(), K = S2::size;
  constexpr int chunks = R / V, stride = TW_THREADS * V;  // a thread's chunks, elements between them
  int leading = 0;  // the axes reduced (or of size 1) before the first one kept
  while (leading < S::rank && S2::dim(leading) == 1) ++leading;
  for (int d = leading; d < S::rank; ++d)
    if (S2::dim(d) != S::dim(d)) return 0;
  if (S::size < TW_THREADS || chunks < 2) return 0;
  const int folded = K % stride == 0 ? (K / stride < chunks ? K / stride : chunks) : 1;  // else stride % K == 0
  return folded < chunks ? folded : 0;
}

// Reduce x to the keepdims shape S2: lift(x_e, j) makes each element's accumulator, combine folds
// two accumulators, finish turns the accumulator into the result element.
//
// Several outputs: the tile is staged in shared memory in C order, in Passes slices of the element
// range (a slice is a range of every thread's registers), so that a tile larger than shared memory
// still reduces; the threads of each output fold its elements slice by slice.
template <class S2, int Passes, class A, class T, class S, class Lift, class Combine, class Finish>
__device__ auto reduce(const tile<T, S>& x, A identity, Lift lift, Combine combine, Finish finish) {
  using R = decltype(finish(identity));
  using Tile = tile<T, S>;
  constexpr int K = S2::size, L = S::size / S2::size;
  if constexpr (K == 1) {
    // One output: fold this thread's registers, then the warp with shuffles, then the warps.
    A* buf = reinterpret_cast<A*>(smem());
    A acc = identity;
    if (x.owner()) {
#pragma unroll
      for (int r = 0; r < Tile::R; ++r) acc = combine(acc, lift(x.v[r], Tile::elem(r)));
    }
#pragma unroll
    for (int m = 16; m > 0; m /= 2) acc = combine(acc, shuffle_xor(acc, m));
    __syncthreads();
    if (threadIdx.x % 32 == 0) buf[threadIdx.x / 32] = acc;
    __syncthreads();
    acc = identity;
#pragma unroll
    for (int w = 0; w < TW_THREADS / 32; ++w) acc = combine(acc, buf[w]);
    return full<R, S2>(finish(acc));
  } else if constexpr (folded_chunks<S, S2>() > 0) {
    constexpr int F = folded_chunks<S, S2>() * Tile::V, N = F * TW_THREADS;  // registers, elements folded
    static_assert(Passes == 1, "a folded reduction stages its folded tile at once");
    tile<A, shape<N / K, K>> folded;
#pragma unroll
    for (int r = 0; r < F; ++r) folded.v[r] = lift(x.v[r], Tile::elem(r) / K);
#pragma unroll
    for (int r = F; r < Tile::R; ++r) folded.v[r % F] = combine(folded.v[r % F], lift(x.v[r], Tile::elem(r) / K));
    tile<R, S2> out;
    if constexpr (N == K) {  // each output once, in the result's own place (from the identity, as any fold)
#pragma unroll
      for (int r = 0; r < F; ++r) out.v[r] = finish(combine(identity, folded.v[r]));
    } else {
      const auto rest = reduce<shape<1, K>, 1>(folded, identity, [](A a, int) { return a; }, combine, finish);
#pragma unroll
      for (int r = 0; r < tile<R, S2>::R; ++r) out.v[r] = rest.v[r];
    }
    return out;
  } else {
    static_assert(Passes == 1 || Tile::R % (Passes * Tile::V) == 0, "a pass stages whole register chunks");
    constexpr int C = S::size / Passes;         // elements staged per pass
    constexpr int RP = Tile::R / Passes;        // registers per pass
    T* buf = reinterpret_cast<T*>(smem());
    A* partial = reinterpret_cast<A*>(smem() + ((C + C / 32 + 1) * int(sizeof(T)) + 15) / 16 * 16);
    constexpr bool by_thread = K >= TW_THREADS;  // each thread folds its own outputs; else G threads per output
    constexpr int G = by_thread ? 1 : TW_THREADS / K;
    constexpr int OR = by_thread ? tile<R, S2>::R : 1;  // outputs this thread folds
    int t = threadIdx.x, lane = t % G;
    A acc[OR];
#pragma unroll
    for (int k = 0; k < OR; ++k) acc[k] = identity;
    for (int pass = 0; pass < Passes; ++pass) {
      const int first = pass * C;
      __syncthreads();
      if (x.owner()) {
#pragma unroll
        for (int r = 0; r < RP; ++r) buf[skew(Tile::elem(pass * RP + r) - first)] = x.v[pass * RP + r];
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < OR; ++k) {
        const int o = by_thread ? tile<R, S2>::elem(k) : t / G;
        for (int j = lane; j < L; j += G) {
          const int e = reduced_element<S, S2>(o, j);
          if (Passes == 1 || (e >= first && e < first + C)) acc[k] = combine(acc[k], lift(buf[skew(e - first)], j));
        }
      }
    }
    tile<R, S2> out;
    if constexpr (by_thread) {
#pragma unroll
      for (int k = 0; k < OR; ++k) out.v[k] = finish(acc[k]);
      return out;
    } else {
      A folded = acc[0];
#pragma unroll
      for (int m = (G < 32 ? G : 32) / 2; m > 0; m /= 2) folded = combine(folded, shuffle_xor(folded, m));
      if constexpr (G > 32) {  // one partial per warp, then each thread folds its output's warps
        __syncthreads();
        if (t % 32 == 0) partial[t / 32] = folded;
        __syncthreads();
        folded = identity;
        for (int w = 0; w < G / 32; ++w) folded = combine(folded, partial[(t / G) * (G / 32) + w]);
      }
      R* result = reinterpret_cast<R*>(partial + TW_THREADS / 32 + 1);
      __syncthreads();
      if (lane == 0) result[t / G] = finish(folded);
      __syncthreads();
      out.v[0] = result[int(threadIdx.x) % K];
      return out;
    }
  }
}

template <class T> __device__ T lowest() {
  if constexpr (traits<T>::is_float) return convert<T>(-__int_as_float(0x7f800000));
  else if constexpr (traits<T>::is_signed) return T(T(1) << (sizeof(T) * 8 - 1));
  else return T(0);
}
template <class T> __device__ T highest() {
  if constexpr (traits<T>::is_float) return convert<T>(__int_as_float(0x7f800000));
  else if constexpr (traits<T>::is_signed) return T(~lowest<T>());
  else return T(~T(0));
}

// Sums and products accumulate 16-bit floats in float and round once.
template <class T> struct accumulator { using type = T; };
template <> struct accumulator<__half> { using type = float; };
template <> struct accumulator<__nv_bfloat16> { using type = float; };

template <class S2, int Passes = 1, class T, class S, class L, class Combine>
__device__ auto reduce(const tile<T, S, L>& x, T identity, Combine combine) {
  return reduce<S2, Passes>(x, identity, [](T v, int) { return v; }, combine, [](T a) { return a; });
}

template <class S2, int Passes = 1, class T, class S, class L>
__device__ auto sum(const tile<T, S, L>& x) {
  using A = typename accumulator<T>::type;
  return reduce<S2, Passes>(x, A(0), [](T v, int) { return convert<A>(v); }, [](A a, A b) { return A(a + b); },
                    [](A a) { return convert<T>(a); });
}
template <class S2, int Passes = 1, class T, class S, class L>
__device__ auto prod(const tile<T, S, L>& x) {
  using A = typename accumulator<T>::type;
  return reduce<S2, Passes>(x, A(1), [](T v, int) { return convert<A>(v); }, [](A a, A b) { return A(a * b); },
                    [](A a) { return convert<T>(a); });
}
// max/min ignore NaN unless PropagateNan; a float fold starts from NaN, which any number
// replaces, so a slice of NaNs only is NaN
template <class T, class Otherwise> __device__ T nan_or(Otherwise otherwise) {
  if constexpr (traits<T>::is_float) return convert<T>(__int_as_float(0x7fffffff));
  else return otherwise();
}
// float32 folds take fmaxf/fminf, one instruction an element (FMNMX, as cuTile's), not the
// comparisons of op::maximum/minimum. They differ on two NaNs only: a slice of NaNs only gives the
// canonical NaN (0x7fffffff; the interpreter's max/min rule too). Which of +0 and -0 they keep,
// the comparisons too leave to the fold order.
template <class T> struct folds_by_fminmax { static constexpr bool value = false; };
template <> struct folds_by_fminmax<float> { static constexpr bool value = true; };
template <class S2, int Passes = 1, bool PropagateNan = false, class T, class S, class L>
__device__ auto max(const tile<T, S, L>& x) {
  auto f = [](T a, T b) { return PropagateNan ? op::maximum_nan(a, b) : op::maximum(a, b); };
  T identity = PropagateNan ? lowest<T>() : nan_or<T>(lowest<T>);
  if constexpr (!PropagateNan && folds_by_fminmax<T>::value) {
    return reduce<S2, Passes>(x, identity, [](T a, T b) { return fmaxf(a, b); });
  } else {
    return reduce<S2, Passes>(x, identity, [](T v, int) { return v; }, f, [](T a) { return a; });
  }
}
template <class S2, int Passes = 1, bool PropagateNan = false, class T, class S, class L>
__device__ auto min(const tile<T, S, L>& x) {
  auto f = [](T a, T b) { return PropagateNan ? op::minimum_nan(a, b) : op::minimum(a, b); };
  T identity = PropagateNan ? highest<T>() : nan_or<T>(highest<T>);
  if constexpr (!PropagateNan && folds_by_fminmax<T>::value) {
    return reduce<S2, Passes>(x, identity, [](T a, T b) { return fminf(a, b); });
  } else {
    return reduce<S2, Passes>(x, identity, [](T v, int) { return v; }, f, [](T a) { return a; });
  }
}

// argmax/argmin: ties go to the smaller index; NaN is the worst value unless PropagateNan, where
// the first NaN wins. Values compare as themselves, 16- and 8-bit floats as float (never all as
// float: 64-bit integers, and 32-bit ones past 2**24, would tie where they differ).
template <class T> __device__ auto ordered(T x) {
  if constexpr (traits<T>::is_half) return widen(x);
  else return x;
}
template <bool Max, bool PropagateNan, class T>
__device__ indexed<T> pick(indexed<T> a, indexed<T> b) {
  bool an = op::isnan(a.value), bn = op::isnan(b.value);
  if (an || bn) {
    if (an && bn) return a.index <= b.index ? a : b;
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    return (an == PropagateNan) ? a : b;
  }
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  const auto x = ordered(a.value), y = ordered(b.value);
  bool b_better = Max ? x < y : y < x;
  bool tie = !(x < y) && !(y < x);
  return b_better || (tie && b.index < a.index) ? b : a;
}
template <class S2, int Passes = 1, bool PropagateNan = false, class T, class S, class L>
__device__ auto argmax(const tile<T, S, L>& x) {
  return reduce<S2, Passes>(x, indexed<T>{T(0), -1}, [](T v, int j) { return indexed<T>{v, j}; },
                    [](indexed<T> a, indexed<T> b) { return pick<true, PropagateNan>(a, b); },
                    [](indexed<T> a) { return int32_t(a.index < 0 ? 0 : a.index); });
}
template <class S2, int Passes = 1, bool PropagateNan = false, class T, class S, class L>
__device__ auto argmin(const tile<T, S, L>& x) {
  return reduce<S2, Passes>(x, indexed<T>{T(0), -1}, [](T v, int j) { return indexed<T>{v, j}; },
                    [](indexed<T> a, indexed<T> b) { return pick<false, PropagateNan>(a, b); },
                    [](indexed<T> a) { return int32_t(a.index < 0 ? 0 : a.index); });
}

// Inclusive scan along Axis (Reverse: from the end): each output folds the elements up to it
// with combine, starting from identity; lift makes an element's accumulator, finish the result.
template <int Axis, bool Reverse, class A, class T, class S, class Lift, class Combine, class Finish>
__device__ auto scan_by(const tile<T, S>& x, A identity, Lift lift, Combine combine, Finish finish) {
  using R = decltype(finish(identity));
  constexpr int L = S::dim(Axis);
  T* buf = reinterpret_cast<T*>(smem());
  __syncthreads();
  to_smem(x, buf);
  __syncthreads();
  tile<R, S> out;
#pragma unroll
  for (int r = 0; r < tile<R, S>::R; ++r) {
    int c[S::rank];
    S::unflatten(tile<R, S>::elem(r), c);
    int at = c[Axis];
    A acc = identity;
    for (int j = Reverse ? L - 1 : 0; Reverse ? j >= at : j <= at; j += Reverse ? -1 : 1) {
      c[Axis] = j;
      acc = combine(acc, lift(buf[skew(S::flatten(c))]));
    }
    out.v[r] = finish(acc);
  }
  return out;
}
template <int Axis, bool Reverse, class T, class S, class Combine>
__device__ tile<T, S> scan(const tile<T, S>& x, T identity, Combine combine) {
  return scan_by<Axis, Reverse>(x, identity, [](T v) { return v; }, combine, [](T a) { return a; });
}
template <int Axis, bool Reverse, bool Product, class T, class S>
__device__ tile<T, S> scan(const tile<T, S>& x) {
  using A = typename accumulator<T>::type;
  return scan_by<Axis, Reverse>(x, Product ? A(1) : A(0), [](T v) { return convert<A>(v); },
                                [](A a, A b) { return Product ? A(a * b) : A(a + b); },
                                [](A a) { return convert<T>(a); });
}
// ---- several tiles at once: reduce/scan over a tuple of tiles ----------------------------------
// A pack holds one element of each tile; zip makes a tile of packs (blocked tiles of one shape hold
// the same elements in the same registers), which reduce and scan fold like any element, with a
// combine function over packs; unzip takes one tile back out.
// The last member holds no empty pack: sizeof(pack<float, int>) is 8, as the code generator's
// shared-memory sizes assume (at most the member count times the widest member).
template <class... T> struct pack;
template <class H> struct pack<H> {
  H head;
};
template <class H, class N, class... T> struct pack<H, N, T...> {
  H head;
  pack<N, T...> rest;
};

template <class H>
__device__ pack<H> make_pack(H head) { return {head}; }
template <class H, class N, class... T>
__device__ pack<H, N, T...> make_pack(H head, N next, T... rest) { return {head, make_pack(next, rest...)}; }

template <int I, class H, class... T>
__device__ auto get(const pack<H, T...>& p) {
  if constexpr (I == 0) return p.head;
  else return get<I - 1>(p.rest);
}

template <class H>
__device__ pack<H> shuffle_xor(const pack<H>& p, int mask) { return {shuffle_xor(p.head, mask)}; }
template <class H, class N, class... T>
__device__ pack<H, N, T...> shuffle_xor(const pack<H, N, T...>& p, int mask) {
  return {shuffle_xor(p.head, mask), shuffle_xor(p.rest, mask)};
}

template <class S, class... T>
__device__ tile<pack<T...>, S> zip(const tile<T, S>&... xs) {
  tile<pack<T...>, S> out;
#pragma unroll
  for (int r = 0; r < tile<pack<T...>, S>::R; ++r) out.v[r] = make_pack(xs.v[r]...);
  return out;
}

template <int I, class S, class... T>
__device__ auto unzip(const tile<pack<T...>, S>& x) {
  tile<decltype(get<I>(x.v[0])), S> out;
#pragma unroll
  for (int r = 0; r < tile<pack<T...>, S>::R; ++r) out.v[r] = get<I>(x.v[r]);
  return out;
}

template <int Axis, bool Reverse = false, class T, class S>
__device__ tile<T, S> cumsum(const tile<T, S>& x) { return scan<Axis, Reverse, false>(x); }
template <int Axis, bool Reverse = false, class T, class S>
__device__ tile<T, S> cumprod(const tile<T, S>& x) { return scan<Axis, Reverse, true>(x); }

}  // namespace tw
