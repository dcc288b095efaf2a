// The tileworkbench tile library: tiles spread over the threads of a block.
//
// A tile<T, shape<...>, L> is a small array with a static shape; the layout L says which thread
// holds which element. The default, `blocked`, deals the elements, numbered in C order, to the
// TW_THREADS threads of the block in chunks of V consecutive elements:
//
//     element e  lives in  thread (e / V) % TW_THREADS,  register (e / V / TW_THREADS) * V + e % V
//
// so neighbouring threads own neighbouring chunks and a row-major load or store is coalesced
// (V = TW_VEC, 16 bytes of the kernel's narrowest memory dtype). The layout depends on the
// element count only, never on the dtype: elementwise ops, casts and C-order reshapes are pure
// register code. A tile with fewer elements than threads is replicated (thread t holds element
// t % N); scalars are tiles of shape<> held by every thread. The other layout, the tensor-core
// accumulator layout mma_layout<WM, WN>, is described in tile_mma.cuh; elementwise ops and casts
// work in any layout, everything else takes blocked tiles, and convert_layout moves between them.
//
// Everything that moves elements between threads (permute, broadcast, reductions, mma...) goes
// through the block's dynamic shared memory; the generated kernel's header comment states how many bytes
// it needs, and the launcher passes that many (GeneratedKernel.smem_bytes).
#pragma once

#ifndef TW_THREADS
#define TW_THREADS 128
#endif
#ifndef TW_VEC
#define TW_VEC 4
#endif

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else
#include <cstdint>
#endif

namespace tw {

// ---- element traits (no std headers: NVRTC compiles this without a system include path) -----------

template <class T> struct traits {
  static constexpr bool is_float = false;
  static constexpr bool is_half = false;
  static constexpr bool is_signed = T(-1) < T(0);
};
template <> struct traits<float> { static constexpr bool is_float = true, is_half = false, is_signed = true; };
template <> struct traits<double> { static constexpr bool is_float = true, is_half = false, is_signed = true; };
template <> struct traits<__half> { static constexpr bool is_float = true, is_half = true, is_signed = true; };
template <> struct traits<__nv_bfloat16> { static constexpr bool is_float = true, is_half = true, is_signed = true; };
// fp8 types are storage: loaded, stored, cast through float and fed to mma
template <> struct traits<__nv_fp8_e4m3> { static constexpr bool is_float = true, is_half = true, is_signed = true; };
template <> struct traits<__nv_fp8_e5m2> { static constexpr bool is_float = true, is_half = true, is_signed = true; };
template <> struct traits<__nv_fp8_e8m0> { static constexpr bool is_float = true, is_half = true, is_signed = false; };

// complex64/complex128 (complex.cuh, included once the float math they use is defined)
template <class R> struct complex;
template <class T> struct is_complex { static constexpr bool value = false; };
template <class R> struct is_complex<complex<R>> { static constexpr bool value = true; };

template <int... I> struct int_seq {};
template <int N, int... I> struct make_seq : make_seq<N - 1, N - 1, I...> {};
template <int... I> struct make_seq<0, I...> { using type = int_seq<I...>; };

// ---- shapes ----------------------------------------------------------------------------------

template <int... Ns>
struct shape {
  static constexpr int rank = sizeof...(Ns);
  static constexpr int size = (1 * ... * Ns);
  __host__ __device__ static constexpr int dim(int i) {
    constexpr int d[] = {Ns..., 0};
    return d[i];
  }
  // C-order coordinates of flat index e (never negative: unsigned, so powers of two are shifts and masks)
  __device__ static void unflatten(int e, int* coord) {
    for (int i = rank - 1; i >= 0; --i) {
      coord[i] = e % dim(i);
      e /= dim(i);
    }
  }
  // elements between neighbours along axis i (C order)
  __host__ __device__ static constexpr int stride(int i) { return i + 1 < rank ? dim(i + 1) * stride(i + 1) : 1; }
  __device__ static int flatten(const int* coord) {
    int e = 0;
    for (int i = 0; i < rank; ++i) e = e * dim(i) + coord[i];
    return e;
  }
};

// ---- tiles -----------------------------------------------------------------------------------

struct blocked {
  template <class S> __host__ __device__ static constexpr int registers() {
    return S::size >= TW_THREADS ? S::size / TW_THREADS : 1;
  }
  template <class S> __host__ __device__ static constexpr int vec() {
    return registers<S>() < TW_VEC ? registers<S>() : TW_VEC;
  }
  // the element held in register r of this thread (a tile smaller than the block is replicated)
  template <class S> __device__ static int elem(int r) {
    constexpr int V = vec<S>();
    return S::size < TW_THREADS ? int(threadIdx.x) % S::size : ((r / V) * TW_THREADS + int(threadIdx.x)) * V + r % V;
  }
  // whether this thread writes its elements back (each element has exactly one owner)
  template <class S> __device__ static bool owner() { return S::size >= TW_THREADS || int(threadIdx.x) < S::size; }
};

template <class L> constexpr bool is_blocked = false;
template <> constexpr bool is_blocked<blocked> = true;

template <class T, class S, class L = blocked>
struct tile {
  using element_type = T;
  using shape_type = S;
  using layout = L;
  static constexpr int N = S::size;
  static constexpr int R = L::template registers<S>();  // registers per thread
  static constexpr int V = L::template vec<S>();        // consecutive elements per chunk
  T v[R];

  __device__ static int elem(int r) { return L::template elem<S>(r); }
  __device__ static bool owner() { return L::template owner<S>(); }
  __device__ T item() const { return v[0]; }
};

template <class T>
using scalar = tile<T, shape<>>;

template <class T, class S, class L = blocked>
__device__ tile<T, S, L> full(T value) {
  tile<T, S, L> out;
#pragma unroll
  for (int r = 0; r < tile<T, S, L>::R; ++r) out.v[r] = value;
  return out;
}

template <class T>
__device__ scalar<T> make_scalar(T value) { return full<T, shape<>>(value); }

// A 16- or 8-bit float from its bits (generated code writes their constants this way).
template <class T>
__device__ T from_bits(unsigned bits) {
  if constexpr (sizeof(T) == 1) {
    union { unsigned char from; T to; } u{static_cast<unsigned char>(bits)};
    return u.to;
  } else {
    union { unsigned short from; T to; } u{static_cast<unsigned short>(bits)};
    return u.to;
  }
}

// NumPy's quiet NaN (0x7fc00000) and infinity: padded lanes match the interpreter bit for bit.
__device__ inline float quiet_nan_f() { return __int_as_float(0x7fc00000); }
__device__ inline float infinity_f() { return __int_as_float(0x7f800000); }
__device__ inline double quiet_nan_d() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ inline double infinity_d() { return __longlong_as_double(0x7ff0000000000000LL); }

template <class T, class S>
__device__ tile<T, S> zeros() { return full<T, S>(T(0)); }

template <class T, class S>
__device__ tile<T, S> ones() { return full<T, S>(T(1)); }

// 0, 1, ..., N-1 in C order
template <class T, class S>
__device__ tile<T, S> iota() {
  tile<T, S> out;
#pragma unroll
  for (int r = 0; r < tile<T, S>::R; ++r) out.v[r] = T(tile<T, S>::elem(r));
  return out;
}

// A tile of N scalars in C order (ct.astile).
template <class T, class S, int N>
__device__ tile<T, S> from_elements(const T (&elements)[N]) {
  static_assert(N == S::size, "one element per position");
  tile<T, S> out;
#pragma unroll
  for (int r = 0; r < tile<T, S>::R; ++r) out.v[r] = elements[tile<T, S>::elem(r) % N];
  return out;
}

// Apply f elementwise; every operand has the same shape and layout.
template <class F, class T, class S, class L, class... Ts>
__device__ auto map(F f, const tile<T, S, L>& a, const tile<Ts, S, L>&... b) {
  using U = decltype(f(a.v[0], b.v[0]...));
  tile<U, S, L> out;
#pragma unroll
  for (int r = 0; r < tile<T, S, L>::R; ++r) out.v[r] = f(a.v[r], b.v[r]...);
  return out;
}

// ---- scalar conversions and math (16-bit floats compute in float and round once) -----------------

template <class T> __device__ float widen(T x) { return float(x); }
template <> __device__ inline float widen(__half x) { return __half2float(x); }
template <> __device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

// To fp8, rounded to nearest without saturating: past the largest finite value e4m3 reads NaN
// and e5m2 infinity (as NumPy's ml_dtypes and PyTorch convert); e8m0 keeps its constructor.
template <class From> __device__ __nv_fp8_e4m3 to_fp8(From x, __nv_fp8_e4m3) {
  __nv_fp8_e4m3 r;
  if constexpr (sizeof(From) == 8) r.__x = __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E4M3);
  else r.__x = __nv_cvt_float_to_fp8(float(x), __NV_NOSAT, __NV_E4M3);
  return r;
}
template <class From> __device__ __nv_fp8_e5m2 to_fp8(From x, __nv_fp8_e5m2) {
  __nv_fp8_e5m2 r;
  if constexpr (sizeof(From) == 8) r.__x = __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E5M2);
  else r.__x = __nv_cvt_float_to_fp8(float(x), __NV_NOSAT, __NV_E5M2);
  return r;
}
template <class From> __device__ __nv_fp8_e8m0 to_fp8(From x, __nv_fp8_e8m0) { return __nv_fp8_e8m0(float(x)); }

template <class T> struct is_bool { static constexpr bool value = false; };
template <> struct is_bool<bool> { static constexpr bool value = true; };

// The range of an integer type, without std headers.
template <class T> __device__ constexpr T int_max() {
  return traits<T>::is_signed ? T((uint64_t(1) << (sizeof(T) * 8 - 1)) - 1) : T(~T(0));
}
template <class T> __device__ constexpr T int_min() { return traits<T>::is_signed ? T(-int_max<T>() - 1) : T(0); }

// float -> integer: truncate toward zero, saturating to To's range, NaN -> 0 (what cvt.rzi.sat does),
// spelled out so every integer width agrees with the interpreter's float_to_int.
template <class To, class From>
__device__ To float_to_int(From x) {
  const double v = double(x);
  if (v != v) return To(0);
  if (v >= double(int_max<To>()) + 1.0) return int_max<To>();  // the first power of two out of range
  if (v < double(int_min<To>())) return int_min<To>();
  return To(v);
}

// Element conversion: C++ semantics (int -> bool is x != 0, int -> int wraps) except float -> int,
// which saturates (float_to_int); 16-bit floats go through float, double goes to them in one rounding.
// Complex -> real takes the real part (CuPy's and NumPy's cast), -> bool asks for a nonzero part.
template <class To, class From>
__device__ To convert(From x) {
  if constexpr (is_complex<To>::value && is_complex<From>::value) return To(x);
  else if constexpr (is_complex<To>::value) return To(convert<decltype(To::re)>(x));
  else if constexpr (is_complex<From>::value && is_bool<To>::value) return x.re != 0 || x.im != 0;
  else if constexpr (is_complex<From>::value) return convert<To>(x.re);
  else if constexpr (traits<From>::is_half && traits<To>::is_half && sizeof(To) == 1) return to_fp8(widen(x), To());
  else if constexpr (traits<From>::is_half && traits<To>::is_half) return To(widen(x));
  else if constexpr (traits<From>::is_half) return convert<To>(widen(x));
  else if constexpr (traits<To>::is_half && sizeof(To) == 1) return to_fp8(x, To());
  else if constexpr (traits<To>::is_half && sizeof(From) == 8 && traits<From>::is_float) return To(x);
  else if constexpr (traits<To>::is_half) return To(float(x));
  else if constexpr (traits<From>::is_float && !traits<To>::is_float && !is_bool<To>::value)
    return float_to_int<To>(x);
  else return To(x);
}

#define TW_FLOAT_MATH(name, fexpr, dexpr)                                                  \
  __device__ inline float name(float x) { return fexpr; }                                  \
  __device__ inline double name(double x) { return dexpr; }                                \
  __device__ inline __half name(__half x) { return __float2half(name(__half2float(x))); } \
  __device__ inline __nv_bfloat16 name(__nv_bfloat16 x) { return __float2bfloat16(name(__bfloat162float(x))); }

namespace op {
TW_FLOAT_MATH(exp, expf(x), ::exp(x))
TW_FLOAT_MATH(exp2, exp2f(x), ::exp2(x))
TW_FLOAT_MATH(expm1, expm1f(x), ::expm1(x))
// flush_to_zero: float32 subnormals read and written as zero of the same sign
__device__ inline float ftz(float x) { return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }
// 2^x with subnormals flushed: the single ex2.approx.ftz instruction (within 2 ulp)
__device__ inline float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TW_FLOAT_MATH(log, logf(x), ::log(x))
TW_FLOAT_MATH(log2, log2f(x), ::log2(x))
TW_FLOAT_MATH(log1p, log1pf(x), ::log1p(x))
TW_FLOAT_MATH(sqrt, sqrtf(x), ::sqrt(x))
TW_FLOAT_MATH(rsqrt, rsqrtf(x), ::rsqrt(x))  // as PyTorch and cuTile compute it (within 2 ulp)
TW_FLOAT_MATH(cbrt, cbrtf(x), ::cbrt(x))
TW_FLOAT_MATH(sin, sinf(x), ::sin(x))
TW_FLOAT_MATH(cos, cosf(x), ::cos(x))
TW_FLOAT_MATH(tan, tanf(x), ::tan(x))
TW_FLOAT_MATH(sinh, sinhf(x), ::sinh(x))
TW_FLOAT_MATH(cosh, coshf(x), ::cosh(x))
TW_FLOAT_MATH(tanh, tanhf(x), ::tanh(x))
TW_FLOAT_MATH(erf, erff(x), ::erf(x))
TW_FLOAT_MATH(erfc, erfcf(x), ::erfc(x))
TW_FLOAT_MATH(floor, floorf(x), ::floor(x))
TW_FLOAT_MATH(ceil, ceilf(x), ::ceil(x))

template <class T> __device__ bool isnan(T x) {
  if constexpr (!traits<T>::is_float) return false;
  else if constexpr (sizeof(T) == 8) return x != x;
  else return widen(x) != widen(x);
}
// inf - inf is NaN, finite - finite is 0
template <class T> __device__ bool isinf(T x) {
  if constexpr (!traits<T>::is_float) return false;
  else if constexpr (sizeof(T) == 8) return x == x && x - x != 0;
  else { float f = widen(x); return f == f && f - f != 0.0f; }
}
template <class T> __device__ bool isfinite(T x) { return !isnan(x) && !isinf(x); }

template <class T> __device__ T abs(T x) {
  if constexpr (traits<T>::is_half) return T(fabsf(widen(x)));
  else return x < T(0) ? T(-x) : x;
}
template <class T> __device__ T neg(T x) {
  if constexpr (traits<T>::is_half) return T(-widen(x));
  else return T(-x);
}

// Python semantics: // rounds toward -inf, % takes the sign of the divisor. Floats floor the
// quotient rounded to T (cuTile's floor(x / y)).
template <class T> __device__ T floordiv(T a, T b) {
  if constexpr (traits<T>::is_half) return T(floorf(widen(T(widen(a) / widen(b)))));
  else if constexpr (traits<T>::is_float) return ::floor(a / b);
  else if constexpr (!traits<T>::is_signed) return b == 0 ? T(0) : T(a / b);
  else {
    if (b == 0) return T(0);
    T q = T(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
  }
}
template <class T> __device__ T mod(T a, T b) {
  if constexpr (traits<T>::is_half) return T(mod(widen(a), widen(b)));
  else if constexpr (traits<T>::is_float) {
    T r = T(::fmod(double(a), double(b)));
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
  } else if constexpr (!traits<T>::is_signed) return b == 0 ? T(0) : T(a % b);
  else {
    if (b == 0) return T(0);
    T r = T(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
  }
}
// ceil(x / y) (cuTile's cdiv): the truncated quotient, plus one where inexact and the signs agree.
template <class T> __device__ T cdiv(T a, T b) {
  if (b == 0) return T(0);
  const T q = T(a / b);
  const bool inexact = T(a % b) != 0;
  if constexpr (traits<T>::is_signed) return (inexact && ((a < 0) == (b < 0))) ? T(q + 1) : q;
  else return inexact ? T(q + 1) : q;
}
// Shifts by the amount read as unsigned (a negative amount is huge): from the width on, << gives 0
// and >> the sign fill, as NumPy computes them, where C++ leaves them undefined. << shifts the
// unsigned bits, so that a negative operand is defined too.
template <class T> __device__ T lshift(T a, T b) {
  if ((unsigned long long)b >= sizeof(T) * 8) return T(0);
  return T((unsigned long long)a << b);
}
template <class T> __device__ T rshift(T a, T b) {
  if ((unsigned long long)b >= sizeof(T) * 8) return (traits<T>::is_signed && a < T(0)) ? T(-1) : T(0);
  return T(a >> b);
}
// x ** 2 (variances, norms) is one correctly rounded multiply rather than the pow routine, which is
// dozens of instructions and within 2 ulp; a constant exponent of 2 leaves no compare behind.
template <class T> __device__ T pow(T a, T b) {
  if constexpr (sizeof(T) == 8) return b == 2.0 ? a * a : ::pow(a, b);
  else {
    const float x = widen(a), y = widen(b);
    return T(y == 2.0f ? x * x : powf(x, y));
  }
}
// x + y and x - y rounded on their own: the _rn intrinsics, which NVRTC never fuses with a multiply
// into an fma. A tile kernel's adds that a product reaches take them (the IR says where a multiply-add
// fuses: ir/fuse.py); the plain operators, which NVRTC may fuse, are C's, as CuPy compiles it.
#define TW_ROUND_ALONE(name, sym, f, d, h)                                                     \
  template <class T> __device__ T name(T a, T b) {                                            \
    if constexpr (traits<T>::is_half) return h(a, b);                                         \
    else if constexpr (traits<T>::is_float && sizeof(T) == 4) return f(a, b);                 \
    else if constexpr (traits<T>::is_float && sizeof(T) == 8) return d(a, b);                 \
    else return T(a sym b);                                                                   \
  }
TW_ROUND_ALONE(add_rn, +, __fadd_rn, __dadd_rn, __hadd_rn)
TW_ROUND_ALONE(sub_rn, -, __fsub_rn, __dsub_rn, __hsub_rn)
#undef TW_ROUND_ALONE
// x * y + z rounded once: the IR's fma, a multiply fused into its one add as cuTile fuses it
__device__ inline float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ inline double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ inline __half fma(__half a, __half b, __half c) { return __hfma(a, b, c); }
__device__ inline __nv_bfloat16 fma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) { return __hfma(a, b, c); }
#define TW_FLOAT_MATH2(name, ffn, dfn)                                   \
  template <class T> __device__ T name(T a, T b) {                       \
    if constexpr (sizeof(T) == 8) return dfn(a, b);                      \
    else return T(ffn(widen(a), widen(b)));                              \
  }
TW_FLOAT_MATH2(atan2, atan2f, ::atan2)
TW_FLOAT_MATH2(hypot, hypotf, ::hypot)
// minimum/maximum ignore NaN (fmin semantics) unless asked to propagate it; of two NaNs, b. One
// unordered compare and one select, no branches.
template <class T> __device__ T minimum(T a, T b) { return (b < a || isnan(a)) ? b : a; }
template <class T> __device__ T maximum(T a, T b) { return (a < b || isnan(a)) ? b : a; }
template <class T> __device__ T minimum_nan(T a, T b) { return isnan(a) ? a : isnan(b) ? b : (b < a ? b : a); }
template <class T> __device__ T maximum_nan(T a, T b) { return isnan(a) ? a : isnan(b) ? b : (a < b ? b : a); }
}  // namespace op
}  // namespace tw

#include "complex.cuh"

namespace tw {

// ---- elementwise tile operations (one line each) ----------------------------------------------------

#define TW_UNARY(name) \
  template <class T, class S, class L> __device__ auto name(const tile<T, S, L>& x) { return map([](T a) { return op::name(a); }, x); }
TW_UNARY(exp) TW_UNARY(exp2) TW_UNARY(log) TW_UNARY(log2) TW_UNARY(sqrt) TW_UNARY(rsqrt) TW_UNARY(sin)
TW_UNARY(cos) TW_UNARY(tan) TW_UNARY(sinh) TW_UNARY(cosh) TW_UNARY(tanh) TW_UNARY(erf) TW_UNARY(floor) TW_UNARY(ceil)
TW_UNARY(expm1) TW_UNARY(log1p) TW_UNARY(cbrt) TW_UNARY(erfc)
TW_UNARY(conj) TW_UNARY(real) TW_UNARY(imag)
TW_UNARY(abs) TW_UNARY(neg) TW_UNARY(isnan) TW_UNARY(isinf) TW_UNARY(isfinite) TW_UNARY(ftz) TW_UNARY(exp2_ftz)

#define TW_BINARY(name) \
  template <class T, class S, class L> __device__ auto name(const tile<T, S, L>& x, const tile<T, S, L>& y) { \
    return map([](T a, T b) { return op::name(a, b); }, x, y); }
TW_BINARY(add_rn) TW_BINARY(sub_rn)
TW_BINARY(floordiv) TW_BINARY(mod) TW_BINARY(cdiv) TW_BINARY(lshift) TW_BINARY(rshift) TW_BINARY(pow) TW_BINARY(atan2)
TW_BINARY(hypot) TW_BINARY(minimum) TW_BINARY(maximum) TW_BINARY(minimum_nan) TW_BINARY(maximum_nan) TW_BINARY(make_complex)
template <class T, class S, class L>
__device__ auto fma(const tile<T, S, L>& x, const tile<T, S, L>& y, const tile<T, S, L>& z) {
  return map([](T a, T b, T c) { return op::fma(a, b, c); }, x, y, z);
}

#define TW_OPERATOR(sym, name)                                                                  \
  template <class T, class S, class L> __device__ auto operator sym(const tile<T, S, L>& x, const tile<T, S, L>& y) { \
    return map([](T a, T b) { return T(a sym b); }, x, y); }
TW_OPERATOR(+, add) TW_OPERATOR(-, sub) TW_OPERATOR(*, mul) TW_OPERATOR(/, truediv)
TW_OPERATOR(&, bitwise_and) TW_OPERATOR(|, bitwise_or) TW_OPERATOR(^, bitwise_xor)

#define TW_COMPARISON(sym)                                                                      \
  template <class T, class S, class L> __device__ auto operator sym(const tile<T, S, L>& x, const tile<T, S, L>& y) { \
    return map([](T a, T b) { return bool(a sym b); }, x, y); }
TW_COMPARISON(==) TW_COMPARISON(!=) TW_COMPARISON(<) TW_COMPARISON(<=) TW_COMPARISON(>) TW_COMPARISON(>=)

template <class T, class S, class L>
__device__ auto operator~(const tile<T, S, L>& x) {
  return map([](T a) { return T(~a); }, x);
}
template <class S, class L>  // on bool, a logical not (C++'s ~true is -2, which is true again)
__device__ auto operator~(const tile<bool, S, L>& x) {
  return map([](bool a) { return !a; }, x);
}

// cond ? x : y, elementwise ("select" in the tile-operations specification)
template <class T, class S, class L>
__device__ tile<T, S, L> select(const tile<bool, S, L>& c, const tile<T, S, L>& x, const tile<T, S, L>& y) {
  return map([](bool p, T a, T b) { return p ? a : b; }, c, x, y);
}

// ct.assert_: a device assert (it ends the CUDA context) where an element of the condition is false
template <class S, class L>
__device__ void assert_all(const tile<bool, S, L>& condition, const char* message, const char* where) {
#pragma unroll
  for (int r = 0; r < tile<bool, S, L>::R; ++r)
    if (!condition.v[r]) __assertfail(message, where, 0, "tile kernel", 1);
}

// element_cast: convert each element (float -> int truncates toward zero)
template <class U, class T, class S, class L>
__device__ tile<U, S, L> element_cast(const tile<T, S, L>& x) {
  return map([](T a) { return convert<U>(a); }, x);
}

// Float -> float conversions in a rounding mode: to nearest (ties to even), toward zero, toward
// -inf, toward +inf; tfloat32 (a float with 10 mantissa bits) also to nearest with ties away.
enum rounding { RN, RZ, RM, RP, RA };

template <int Mode> __device__ __half round_float_to(float x, __half) {
  return Mode == RZ ? __float2half_rz(x) : Mode == RM ? __float2half_rd(x) : __float2half_ru(x);
}
template <int Mode> __device__ __nv_bfloat16 round_float_to(float x, __nv_bfloat16) {
  return Mode == RZ ? __float2bfloat16_rz(x) : Mode == RM ? __float2bfloat16_rd(x) : __float2bfloat16_ru(x);
}

// RN, RZ, RM or RP (the code generator takes RA only to tfloat32)
template <class To, int Mode, class From>
__device__ To convert_rounded(From x) {
  if constexpr (Mode == RN || sizeof(To) >= sizeof(From)) return convert<To>(x);  // widening is exact
  else if constexpr (sizeof(From) == 8 && sizeof(To) == 4) {
    return Mode == RZ ? __double2float_rz(x) : Mode == RM ? __double2float_rd(x) : __double2float_ru(x);
  } else if constexpr (sizeof(From) == 8) {
    return convert_rounded<To, Mode>(convert_rounded<float, Mode>(x));  // a directed rounding twice is one
  } else {
    return round_float_to<Mode>(x, To());
  }
}

template <int Mode>
__device__ float round_tf32(float x) {
  const unsigned bits = __float_as_uint(x), rest = bits & 0x1fffu;
  if (((bits >> 23) & 0xffu) == 0xffu) return x;  // inf and NaN stay
  // To nearest: add just under half a unit (plus the kept last bit, for ties to even) and cut; a carry
  // out of the mantissa steps the exponent, as rounding up does. Two integer ops in the mma's K loop.
  if constexpr (Mode == RN) return __uint_as_float((bits + 0xfffu + ((bits >> 13) & 1u)) & ~0x1fffu);
  if constexpr (Mode == RA) return __uint_as_float((bits + 0x1000u) & ~0x1fffu);
  const bool negative = bits >> 31;
  const bool up = Mode == RM ? negative && rest : Mode == RP && !negative && rest;  // the magnitude rounds up
  return __uint_as_float(up ? (bits & ~0x1fffu) + 0x2000u : bits & ~0x1fffu);
}

template <class U, int Mode, class T, class S, class L>
__device__ tile<U, S, L> element_cast_rounded(const tile<T, S, L>& x) {
  return map([](T a) { return convert_rounded<U, Mode>(a); }, x);
}

template <int Mode, class T, class S, class L>
__device__ tile<float, S, L> element_cast_tf32(const tile<T, S, L>& x) {
  return map([](T a) { return round_tf32<Mode>(convert<float>(a)); }, x);
}

// + - * / and sqrt rounded toward zero (RZ), -inf (RM) or +inf (RP); 16-bit floats compute in
// float and round to T the same way (two roundings in one direction are one).
namespace op {
#define TW_ROUNDED_BINARY(name, f, d)                                                             \
  template <int Mode> __device__ float name(float a, float b) {                                   \
    return Mode == RZ ? f##_rz(a, b) : Mode == RM ? f##_rd(a, b) : f##_ru(a, b);                  \
  }                                                                                               \
  template <int Mode> __device__ double name(double a, double b) {                                \
    return Mode == RZ ? d##_rz(a, b) : Mode == RM ? d##_rd(a, b) : d##_ru(a, b);                  \
  }                                                                                               \
  template <int Mode, class T> __device__ T name(T a, T b) {                                      \
    return convert_rounded<T, Mode>(name<Mode>(widen(a), widen(b)));                              \
  }
TW_ROUNDED_BINARY(add_rounded, __fadd, __dadd)
TW_ROUNDED_BINARY(sub_rounded, __fsub, __dsub)
TW_ROUNDED_BINARY(mul_rounded, __fmul, __dmul)
TW_ROUNDED_BINARY(truediv_rounded, __fdiv, __ddiv)

template <int Mode> __device__ float fma_rounded(float a, float b, float c) {
  return Mode == RZ ? __fmaf_rz(a, b, c) : Mode == RM ? __fmaf_rd(a, b, c) : __fmaf_ru(a, b, c);
}
template <int Mode> __device__ double fma_rounded(double a, double b, double c) {
  return Mode == RZ ? __fma_rz(a, b, c) : Mode == RM ? __fma_rd(a, b, c) : __fma_ru(a, b, c);
}
// 16-bit floats: the product is exact in double, and a directed rounding to double then to T is one
template <int Mode, class T> __device__ T fma_rounded(T a, T b, T c) {
  return convert_rounded<T, Mode>(fma_rounded<Mode>(double(widen(a)), double(widen(b)), double(widen(c))));
}
template <int Mode> __device__ float sqrt_rounded(float a) {
  return Mode == RZ ? __fsqrt_rz(a) : Mode == RM ? __fsqrt_rd(a) : __fsqrt_ru(a);
}
template <int Mode> __device__ double sqrt_rounded(double a) {
  return Mode == RZ ? __dsqrt_rz(a) : Mode == RM ? __dsqrt_rd(a) : __dsqrt_ru(a);
}
template <int Mode, class T> __device__ T sqrt_rounded(T a) { return convert_rounded<T, Mode>(sqrt_rounded<Mode>(widen(a))); }
// RoundingMode.APPROX (float32 only): the hardware's approximate instructions (within a few ulp),
// with subnormal operands and results flushed to zero where Ftz (flush_to_zero) says so. A division
// is one reciprocal and one multiply instead of IEEE division's refinement and slow path.
#define TW_APPROX_ASM(text, ftz_text, ...)                              \
  float y;                                                             \
  if constexpr (Ftz) asm(ftz_text : "=f"(y) : __VA_ARGS__);            \
  else asm(text : "=f"(y) : __VA_ARGS__);                              \
  return y;
template <bool Ftz> __device__ float truediv_approx(float a, float b) {
  TW_APPROX_ASM("div.approx.f32 %0, %1, %2;", "div.approx.ftz.f32 %0, %1, %2;", "f"(a), "f"(b))
}
template <bool Ftz> __device__ float exp_approx(float x) {  // e^x = 2^(x log2 e)
  const float t = x * 1.4426950408889634f;
  TW_APPROX_ASM("ex2.approx.f32 %0, %1;", "ex2.approx.ftz.f32 %0, %1;", "f"(t))
}
template <bool Ftz> __device__ float sqrt_approx(float x) {
  TW_APPROX_ASM("sqrt.approx.f32 %0, %1;", "sqrt.approx.ftz.f32 %0, %1;", "f"(x))
}
#undef TW_APPROX_ASM

}  // namespace op

#define TW_APPROX_TILE(name)                                                                    \
  template <bool Ftz, class S, class L, class... Ts>                                            \
  __device__ auto name(const tile<float, S, L>& x, const tile<Ts, S, L>&... y) {                \
    return map([](float a, Ts... b) { return op::name<Ftz>(a, b...); }, x, y...);               \
  }
TW_APPROX_TILE(truediv_approx) TW_APPROX_TILE(exp_approx) TW_APPROX_TILE(sqrt_approx)

#define TW_ROUNDED_TILE(name)                                                                     \
  template <int Mode, class T, class S, class L, class... Ts>                                     \
  __device__ auto name(const tile<T, S, L>& x, const tile<Ts, S, L>&... y) {                      \
    return map([](T a, Ts... b) { return op::name<Mode>(a, b...); }, x, y...);                    \
  }
TW_ROUNDED_TILE(add_rounded) TW_ROUNDED_TILE(sub_rounded) TW_ROUNDED_TILE(mul_rounded)
TW_ROUNDED_TILE(truediv_rounded) TW_ROUNDED_TILE(sqrt_rounded) TW_ROUNDED_TILE(fma_rounded)

template <class U, class T>
__device__ U bitcast(T a) {
  static_assert(sizeof(U) == sizeof(T), "bitcast needs types of one size");
  union { T from; U to; } bits{a};
  return bits.to;
}

// element_bitcast: reinterpret each element's bits
template <class U, class T, class S, class L>
__device__ tile<U, S, L> element_bitcast(const tile<T, S, L>& x) {
  static_assert(sizeof(U) == sizeof(T), "element_bitcast needs types of one size");
  return map([](T a) { return bitcast<U>(a); }, x);
}

// reshape: the layout depends on the element count only, so a C-order reshape moves nothing
template <class S2, class T, class S>
__device__ tile<T, S2> reshape(const tile<T, S>& x) {
  static_assert(S2::size == S::size, "reshape keeps the element count");
  tile<T, S2> out;
#pragma unroll
  for (int r = 0; r < tile<T, S>::R; ++r) out.v[r] = x.v[r];
  return out;
}

// ---- moving elements between threads, through shared memory -----------------------------------------

__device__ inline unsigned char* smem() {
  // 1024: the period of the 128-byte swizzle that pipeline stages (TMA, wgmma descriptors) assume
  extern __shared__ __align__(1024) unsigned char tw_dynamic_smem[];
  return tw_dynamic_smem;
}

// Skew shared-memory indices by one element every 32 so power-of-two strides spread over banks.
__device__ inline int skew(int i) { return i + (i >> 5); }

// Write x to shared memory at element Offset on (skewed).
template <int Offset = 0, class T, class S, class L>
__device__ void to_smem(const tile<T, S, L>& x, T* buf) {
  using Tile = tile<T, S, L>;
  constexpr int V = Tile::V;
  if (!x.owner()) return;
  if constexpr (is_blocked<L> && V > 1 && S::size >= TW_THREADS && 32 % V == 0 && Offset % V == 0) {
    // a chunk starts at a multiple of V, so the skew moves it whole: one address per chunk
#pragma unroll
    for (int r0 = 0; r0 < Tile::R; r0 += V) {
      T* run = buf + skew(Offset + x.elem(r0));
#pragma unroll
      for (int j = 0; j < V; ++j) run[j] = x.v[r0 + j];
    }
  } else {
#pragma unroll
    for (int r = 0; r < Tile::R; ++r) buf[skew(Offset + x.elem(r))] = x.v[r];
  }
}

// out[e] = source element src(e) of the tiles written to shared memory. A Step > 0 says src
// advances by Step along a row of S2; then a blocked chunk (which stays in its row) computes its
// address once when the skew keeps the steps even (Step 1 inside 32 elements, or a multiple of 32).
template <class S2, class L2 = blocked, int Step = 0, class T, class F>
__device__ tile<T, S2, L2> from_smem(const T* buf, F src) {
  using Out = tile<T, S2, L2>;
  constexpr int V = Out::V;
  constexpr bool runs = Step > 0 && V > 1 && S2::size >= TW_THREADS && S2::dim(S2::rank - 1) % V == 0 &&
                        (Step == 1 ? 32 % V == 0 : Step % 32 == 0);
  Out out;
  if constexpr (runs && is_blocked<L2>) {
    constexpr int skewed_step = Step + Step / 32;
#pragma unroll
    for (int r0 = 0; r0 < Out::R; r0 += V) {
      const T* run = buf + skew(src(Out::elem(r0)));
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[r0 + j] = run[j * skewed_step];
    }
  } else {
#pragma unroll
    for (int r = 0; r < Out::R; ++r) out.v[r] = buf[skew(src(Out::elem(r)))];
  }
  return out;
}

// The same tile in layout L2 (tile_mma.cuh stages 2-D tiles to and from an mma layout its own way).
template <class L2, class T, class S, class L>
__device__ tile<T, S, L2> convert_through_smem(const tile<T, S, L>& x) {
  T* buf = reinterpret_cast<T*>(smem());
  __syncthreads();
  to_smem(x, buf);
  __syncthreads();
  return from_smem<S, L2>(buf, [](int e) { return e; });
}

template <class L2, class T, class S, class L>
__device__ tile<T, S, L2> convert_layout(const tile<T, S, L>& x) { return convert_through_smem<L2>(x); }

// ---- staging in whole 16-byte chunks (permutes of 8- and 16-bit tiles) ---------------------------------
//
// A blocked chunk of V elements of 1 or 2 bytes is 16 bytes: staged as one 16-byte store, where the
// skew above would split it into V narrow ones. Chunk q of the C-order tile sits at chunk
// q ^ ((q >> Shift) & 7): a permutation inside each 128-byte line (a warp's 32 consecutive chunks
// stay conflict-free). A permute reads its result chunks either whole (the last axis stays: Step 1)
// or, transposing, element j of a result chunk at input element e0 + j Step; with Step a power of
// two and at least 8 chunks (Shift = log2 Step), those V elements share one XOR key, the lanes of a
// warp (consecutive result chunks, V rows of the input apart) get distinct keys, and the V reads of
// a chunk are one address plus constant offsets. Other permutes keep the skew.

template <class T, class S, int Step>
constexpr bool stages_chunks =
    sizeof(T) < 4 && tile<T, S>::V * int(sizeof(T)) == 16 && S::size >= TW_THREADS &&
    (Step == 1 || (Step % (8 * tile<T, S>::V) == 0 && (Step & (Step - 1)) == 0));

__host__ __device__ constexpr int chunk_shift(int step) {
  int shift = 3;
  while ((2 << shift) <= step) ++shift;
  return shift;
}

template <int Shift>
__device__ int chunk_slot(int q) { return q ^ ((q >> Shift) & 7); }

// where staged element e sits (unsigned: the divisions are shifts)
template <int Shift, int V>
__device__ int chunked_index(unsigned e) { return chunk_slot<Shift>(e / V) * V + e % V; }

template <int Shift, class T, class S>
__device__ void to_smem_chunks(const tile<T, S>& x, T* buf) {
  using Tile = tile<T, S>;
#pragma unroll
  for (int r0 = 0; r0 < Tile::R; r0 += Tile::V)
    *reinterpret_cast<uint4*>(buf + chunked_index<Shift, Tile::V>(x.elem(r0))) =
        *reinterpret_cast<const uint4*>(&x.v[r0]);
}

// out[e] = staged element src(e), src advancing by Step along a row of S2 (stages_chunks holds).
template <class S2, int Shift, int Step, class T, class F>
__device__ tile<T, S2> from_smem_chunks(const T* buf, F src) {
  using Out = tile<T, S2>;
  constexpr int V = Out::V;
  Out out;
#pragma unroll
  for (int r0 = 0; r0 < Out::R; r0 += V) {
    const T* run = buf + chunked_index<Shift, V>(src(Out::elem(r0)));
    if constexpr (Step == 1) {
      *reinterpret_cast<uint4*>(&out.v[r0]) = *reinterpret_cast<const uint4*>(run);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[r0 + j] = run[j * Step];
    }
  }
  return out;
}

// Result axis k is input axis Axes[k].
template <int... Axes, class T, class S>
__device__ auto permute(const tile<T, S>& x) {
  using S2 = shape<S::dim(Axes)...>;
  constexpr int axes[] = {Axes..., 0};
  constexpr int step = S::rank > 0 ? S::stride(axes[S::rank > 0 ? S::rank - 1 : 0]) : 0;  // input stride along the output's rows
  auto src = [](int e) {
    int out[S::rank > 0 ? S::rank : 1], in[S::rank > 0 ? S::rank : 1];
    S2::unflatten(e, out);
    constexpr int axes[] = {Axes..., 0};
    for (int k = 0; k < S::rank; ++k) in[axes[k]] = out[k];
    return S::flatten(in);
  };
  T* buf = reinterpret_cast<T*>(smem());
  __syncthreads();
  if constexpr (stages_chunks<T, S, step> && S2::dim(S2::rank - 1) % tile<T, S>::V == 0) {
    constexpr int shift = chunk_shift(step);
    to_smem_chunks<shift>(x, buf);
    __syncthreads();
    return from_smem_chunks<S2, shift, step>(buf, src);
  } else {
    to_smem(x, buf);
    __syncthreads();
    return from_smem<S2, blocked, step>(buf, src);
  }
}

template <class T, class S, int... I>
__device__ auto transpose_first_two(const tile<T, S>& x, int_seq<I...>) { return permute<1, 0, (I + 2)...>(x); }

// Interchange the first two dimensions (rank < 2: unchanged).
template <class T, class S>
__device__ auto transpose(const tile<T, S>& x) {
  if constexpr (S::rank < 2) return x;
  else return transpose_first_two(x, typename make_seq<S::rank - 2>::type{});
}

// Stretch size-1 dimensions (NumPy broadcasting at equal rank), into layout L2.
template <class S2, class L2 = blocked, class T, class S>
__device__ tile<T, S2, L2> broadcast(const tile<T, S>& x) {
  static_assert(S::rank == S2::rank, "broadcast at equal rank; reshape first");
  if constexpr (S::size == 1) {
    return full<T, S2, L2>(x.v[0]);
  } else {
    T* buf = reinterpret_cast<T*>(smem());
    __syncthreads();
    to_smem(x, buf);
    __syncthreads();
    return from_smem<S2, L2>(buf, [](int e) {
      int c[S2::rank];
      S2::unflatten(e, c);
      for (int i = 0; i < S::rank; ++i) c[i] = S::dim(i) == 1 ? 0 : c[i];
      return S::flatten(c);
    });
  }
}

template <int Axis, class S, class S1, int... I>
__host__ __device__ shape<(I == Axis ? S::dim(I) + S1::dim(I) : S::dim(I))...> cat_shape(int_seq<I...>);

// Concatenate x and y along Axis.
template <int Axis, class T, class S, class S1>
__device__ auto cat(const tile<T, S>& x, const tile<T, S1>& y) {
  using S2 = decltype(cat_shape<Axis, S, S1>(typename make_seq<S::rank>::type{}));
  T* buf = reinterpret_cast<T*>(smem());
  __syncthreads();
  to_smem(x, buf);
  to_smem<S::size>(y, buf);
  __syncthreads();
  return from_smem<S2>(buf, [](int e) {
    int c[S2::rank];
    S2::unflatten(e, c);
    if (c[Axis] < S::dim(Axis)) return S::flatten(c);
    c[Axis] -= S::dim(Axis);
    return S::size + S1::flatten(c);
  });
}

// Sub-tile number `index` of x split into tiles of shape S2.
template <class S2, class T, class S, class Index>
__device__ tile<T, S2> extract(const tile<T, S>& x, const Index& index) {
  T* buf = reinterpret_cast<T*>(smem());
  __syncthreads();
  to_smem(x, buf);
  __syncthreads();
  int origin[S::rank];
  for (int i = 0; i < S::rank; ++i) origin[i] = index[i] * S2::dim(i);
  return from_smem<S2>(buf, [&](int e) {
    int c[S::rank];
    S2::unflatten(e, c);
    for (int i = 0; i < S::rank; ++i) c[i] += origin[i];
    return S::flatten(c);
  });
}

// x with sub-tile number `index` (of value's shape) replaced by value.
template <class T, class S, class S2, class Index>
__device__ tile<T, S> insert(const tile<T, S>& x, const tile<T, S2>& value, const Index& index) {
  T* buf = reinterpret_cast<T*>(smem());
  __syncthreads();
  to_smem(x, buf);
  __syncthreads();
  if (value.owner()) {
    for (int r = 0; r < tile<T, S2>::R; ++r) {
      int c[S::rank];
      S2::unflatten(value.elem(r), c);
      for (int i = 0; i < S::rank; ++i) c[i] += index[i] * S2::dim(i);
      buf[skew(S::flatten(c))] = value.v[r];
    }
  }
  __syncthreads();
  return from_smem<S>(buf, [](int e) { return e; });
}

}  // namespace tw

#include "tile_reduce.cuh"
#include "tile_memory.cuh"
#include "tile_mma.cuh"
#include "tile_wgmma.cuh"
#include "tile_pipeline.cuh"
#include "tile_tma.cuh"
