// Complex numbers: complex64 and complex128, a pair of floats laid out as NumPy and CuPy store them
// (real part first, aligned to the pair). Trivially constructible, so tiles of them live in shared
// memory and registers as any element does. The math follows CuPy's thrust::complex: exp is
// e^re * (cos im, sin im), log is (log |z|, arg z), |z| is hypot; division scales by the larger part
// of the divisor (Smith's method) so that it neither overflows nor underflows on the way.
#pragma once

namespace tw {

template <class R>
struct alignas(2 * sizeof(R)) complex {
  R re, im;
  complex() = default;
  __host__ __device__ constexpr complex(R r, R i = R(0)) : re(r), im(i) {}
  template <class U>
  __host__ __device__ constexpr explicit complex(complex<U> z) : re(R(z.re)), im(R(z.im)) {}
};
using complex64 = complex<float>;
using complex128 = complex<double>;

template <class R> struct traits<complex<R>> { static constexpr bool is_float = false, is_half = false, is_signed = true; };

template <class R> __device__ complex<R> operator+(complex<R> a, complex<R> b) { return {a.re + b.re, a.im + b.im}; }
template <class R> __device__ complex<R> operator-(complex<R> a, complex<R> b) { return {a.re - b.re, a.im - b.im}; }
template <class R> __device__ complex<R> operator-(complex<R> a) { return {-a.re, -a.im}; }
template <class R> __device__ complex<R> operator*(complex<R> a, complex<R> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class R> __device__ complex<R> operator/(complex<R> a, complex<R> b) {
  if (::fabs(b.re) >= ::fabs(b.im)) {
    const R ratio = b.im / b.re, d = b.re + b.im * ratio;
    return {(a.re + a.im * ratio) / d, (a.im - a.re * ratio) / d};
  }
  const R ratio = b.re / b.im, d = b.re * ratio + b.im;
  return {(a.re * ratio + a.im) / d, (a.im * ratio - a.re) / d};
}
template <class R> __device__ bool operator==(complex<R> a, complex<R> b) { return a.re == b.re && a.im == b.im; }
template <class R> __device__ bool operator!=(complex<R> a, complex<R> b) { return !(a == b); }

// A warp shuffle moves the parts one at a time (reductions of complex tiles).
template <class R> __device__ complex<R> shuffle_xor(complex<R> z, int mask) {
  return {__shfl_xor_sync(0xffffffffu, z.re, mask), __shfl_xor_sync(0xffffffffu, z.im, mask)};
}

namespace op {
__device__ inline float abs(complex64 z) { return hypotf(z.re, z.im); }
__device__ inline double abs(complex128 z) { return ::hypot(z.re, z.im); }
template <class R> __device__ complex<R> neg(complex<R> z) { return -z; }
template <class R> __device__ complex<R> exp(complex<R> z) {
  const R m = exp(z.re);
  if (z.im == R(0)) return {m, z.im};  // exp of a real stays real (keeps inf * 0 from making NaN)
  return {m * cos(z.im), m * sin(z.im)};
}
template <class R> __device__ complex<R> log(complex<R> z) { return {log(abs(z)), atan2(z.im, z.re)}; }
// On real values: the number itself, itself, and 0 (NumPy's conj, real and imag of a real array).
template <class T> __device__ T conj(T x) { return x; }
template <class T> __device__ T real(T x) { return x; }
template <class T> __device__ T imag(T) { return T(0); }
template <class R> __device__ complex<R> conj(complex<R> z) { return {z.re, -z.im}; }
template <class R> __device__ R real(complex<R> z) { return z.re; }
template <class R> __device__ R imag(complex<R> z) { return z.im; }
// From the parts: double parts make a complex128, narrower floats a complex64.
template <class T> __device__ auto make_complex(T re, T im) {
  if constexpr (sizeof(T) == 8) return complex<double>(re, im);
  else return complex<float>(widen(re), widen(im));
}
}  // namespace op

}  // namespace tw
