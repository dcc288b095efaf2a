"""User-defined kernels defined the same way for tileworkbench and for CuPy (both modules have
ElementwiseKernel and ReductionKernel with the same constructors), with their arguments.

`exact`: the results must be bit-identical to CuPy's (no float reduction order, no multiply-add
that the compiler may contract differently); otherwise they agree within the dtype's tolerance.
"""
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

RNG = np.random.default_rng(2026)


def _floats(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _complex(shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


@dataclass
class UserKernelCase:
    id: str
    define: Callable          # module -> kernel
    args: Callable            # () -> tuple of NumPy arrays and scalars
    kwargs: dict = field(default_factory=dict)
    exact: bool = True


CASES = [
    UserKernelCase("squared_diff-broadcast", lambda m: m.ElementwiseKernel(
        "float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff"),
        lambda: (_floats((300, 500)), _floats(500))),
    UserKernelCase("generic-rows-3d-broadcast-and-transposed", lambda m: m.ElementwiseKernel(
        "T x, T y, T w", "T z", "z = (x - y) * w + i", "rows_generic"),
        lambda: (_floats((3, 4, 700)), _floats((3, 1, 700)), _floats((700, 4)).T), exact=False),
    UserKernelCase("complex-rows-broadcast-column", lambda m: m.ElementwiseKernel(
        "T x, T y", "T z", "z = x * y + x", "rows_complex"),
        lambda: (_complex((64, 300)), _complex((64, 1)))),
    UserKernelCase("squared_diff-scalar", lambda m: m.ElementwiseKernel(
        "float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff"),
        lambda: (_floats(100_000), 5)),
    UserKernelCase("generic-locals-float64", lambda m: m.ElementwiseKernel(
        "T x, T y", "T z", "T diff = x - y; z = diff * diff;", "squared_diff_generic"),
        lambda: (_floats((64, 33), np.float64), _floats((64, 1), np.float64))),
    UserKernelCase("add_reverse-raw", lambda m: m.ElementwiseKernel(
        "T x, raw T y", "T z", "z = x + y[_ind.size() - i - 1]", "add_reverse"),
        lambda: (_floats(10_001), _floats(10_001))),
    UserKernelCase("int-division-remainder-shift", lambda m: m.ElementwiseKernel(
        "int32 x, int32 y", "int32 z", "z = x / y + x % y - (x >> 1)", "int_ops"),
        lambda: (RNG.integers(-1000, 1000, 50_000).astype(np.int32),
                 RNG.choice([-9, -2, -1, 1, 3, 7], 50_000).astype(np.int32))),
    UserKernelCase("promotion-int8-uint", lambda m: m.ElementwiseKernel(
        "int8 x, uint32 y", "int64 z, bool c", "z = x * x - y; c = x < y", "promote"),
        lambda: (RNG.integers(-128, 127, 4096).astype(np.int8), RNG.integers(0, 9, 4096).astype(np.uint32))),
    UserKernelCase("if-else-ternary", lambda m: m.ElementwiseKernel(
        "float32 x", "float32 z", "float t; if (x > 0.5f) t = x; else if (x < -1) t = -x; else t = 0; "
        "z = t > 1.5f ? 1.5f : t", "branches"),
        lambda: (_floats(70_000),)),
    UserKernelCase("math-functions", lambda m: m.ElementwiseKernel(
        "float32 x", "float32 z", "z = sqrtf(fabsf(x)) + expf(-x * x) + max(x, 0.25f)", "math"),
        lambda: (_floats(70_000),), exact=False),
    UserKernelCase("math-functions-erf-log1p-expm1-erfc-cbrt-hypot", lambda m: m.ElementwiseKernel(
        "float32 x, float32 y", "float32 z, float64 w",
        "z = erff(x) + log1pf(fabsf(x)) + expm1f(x) - erfcf(y) + cbrtf(y) + hypotf(x, y); "
        "w = erf((double)x) + log1p(fabs((double)y)) + expm1((double)y) + erfc((double)x) + cbrt((double)x) "
        "+ hypot((double)x, (double)y)", "more_math"),
        lambda: (_floats(70_000), _floats(70_000)), exact=False),
    UserKernelCase("float16-generic", lambda m: m.ElementwiseKernel(
        "T x, T y", "T z", "z = x * y + x", "half_ops"),
        lambda: (_floats(4096, np.float16), _floats(4096, np.float16)), exact=False),
    UserKernelCase("vector-add-1m", lambda m: m.ElementwiseKernel(
        "T x, T y", "T z", "z = x + y", "vector_add"),
        lambda: (_floats(1 << 20), _floats(1 << 20))),
    UserKernelCase("l2norm-axis1", lambda m: m.ReductionKernel(
        "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm"),
        lambda: (_floats((300, 1000)),), {"axis": 1}, exact=False),
    UserKernelCase("int-sum-axis0-keepdims", lambda m: m.ReductionKernel(
        "T x", "T y", "x", "a + b", "y = a", "0", "int_sum"),
        lambda: (RNG.integers(-100, 100, (500, 70)).astype(np.int32),), {"axis": 0, "keepdims": True}),
    UserKernelCase("max-all", lambda m: m.ReductionKernel(
        "T x", "T y", "x", "max(a, b)", "y = a", "-CUDART_INF_F", "max_all"),
        lambda: (_floats((123, 457)),)),
    UserKernelCase("raw-members-size-shape-strides", lambda m: m.ElementwiseKernel(
        "raw int32 x", "int64 s, int64 n, int64 st", "s = x.size(); n = x.shape()[i]; st = x.strides()[i];",
        "members"), lambda: (np.arange(6, dtype=np.int32).reshape(2, 3),), {"size": 2}),
    UserKernelCase("local-array-as-raw-index", lambda m: m.ElementwiseKernel(
        "raw T x", "int32 y", "ptrdiff_t idx[] = {i / 12, i / 4 % 3, i % 4}; y = x[idx]", "by_index"),
        lambda: (RNG.integers(-50, 50, (2, 3, 4)).astype(np.int32),), {"size": 24}),
    UserKernelCase("local-array-read-write", lambda m: m.ElementwiseKernel(
        "int32 x", "int32 z", "int a[4] = {10, 20}; a[3] = x; if (x % 2) a[x % 4] += 100; z = a[x % 4] + a[3];",
        "local_array"), lambda: (RNG.integers(-1000, 1000, 50_000).astype(np.int32),)),
    UserKernelCase("structured-fields", lambda m: m.ElementwiseKernel(
        "T in", "T out", 'static_assert(T::field_count == 2, "two fields"); out.at<0>() = in.at<1>(); '
        "out.at<1>() = -in.at<0>();", "fields"),
        lambda: (np.array([(k, k * 0.75) for k in range(-500, 500)], dtype="i4,f4"),)),
    UserKernelCase("complex64-add-scalar", lambda m: m.ElementwiseKernel(
        "T x, T y", "T z", "z = x + y", "complex_add"),
        lambda: (_complex((4, 5)), np.complex64(2 - 1j))),
    UserKernelCase("complex-math", lambda m: m.ElementwiseKernel(
        "T x, T y", "T z, float64 r", "z = exp(x) * conj(y) - log(x) / y + complex<double>(imag(y), 0.5); r = abs(x) + real(y) * imag(x)",
        "complex_math"),
        lambda: (_complex(10_000, np.complex128), _complex(10_000, np.complex128)), exact=False),
    UserKernelCase("complex64-sum-axis1", lambda m: m.ReductionKernel(
        "T x", "T y", "x * conj(x) + x", "a + b", "y = a", "0", "complex_sum"),
        lambda: (_complex((300, 1000)),), {"axis": 1}, exact=False),
]
