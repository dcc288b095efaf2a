"""CUDA C++ of the CuPy RawKernels, written as a CUDA programmer would for each op: one block per row
with the row in registers (softmax, layernorm), a shared-memory tile (transpose). bfloat16 is handled
as its bits, since CuPy has no bfloat16 type. They need no header: `macros` are their -D options.

    cupy.RawKernel(SOFTMAX, "softmax_rows", options=macros(COLS=4096, THREADS=512))
"""

BLOCK_REDUCE = r"""
template <bool MAX> __device__ __forceinline__ float combine(float a, float b) { return MAX ? fmaxf(a, b) : a + b; }

// Every thread gets the block's max or sum of v. THREADS is a multiple of 32.
template <bool MAX> __device__ float block_reduce(float v) {
    __shared__ float partial[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = combine<MAX>(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();  // the previous reduction has read partial
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    v = partial[0];
    for (int w = 1; w < THREADS / 32; ++w) v = combine<MAX>(v, partial[w]);
    return v;
}
"""

SOFTMAX = BLOCK_REDUCE + r"""
// One block per row of COLS floats; each thread holds PER float4s of it, read once, written once.
#define PER (COLS / (4 * THREADS))

extern "C" __global__ void __launch_bounds__(THREADS) softmax_rows(const float4* __restrict__ x, float4* __restrict__ y) {
    const long long base = (long long)blockIdx.x * (COLS / 4) + threadIdx.x;
    float4 v[PER];
    float m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        v[k] = x[base + k * THREADS];
        m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    m = block_reduce<true>(m);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        v[k].x = __expf(v[k].x - m);
        v[k].y = __expf(v[k].y - m);
        v[k].z = __expf(v[k].z - m);
        v[k].w = __expf(v[k].w - m);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    const float inv = 1.0f / block_reduce<false>(s);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        v[k].x *= inv;
        v[k].y *= inv;
        v[k].z *= inv;
        v[k].w *= inv;
        y[base + k * THREADS] = v[k];
    }
}
"""

LAYERNORM = BLOCK_REDUCE + r"""
// One block per row of COLS bfloat16s, statistics in float32; each thread holds PER uint4s (8 values each).
#define PER (COLS / (8 * THREADS))

__device__ __forceinline__ void unpack(uint4 u, float* f) {
    const unsigned int w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

__device__ __forceinline__ unsigned int bf16_bits(float f) {  // round to nearest even (finite values)
    const unsigned int u = __float_as_uint(f);
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

__device__ __forceinline__ uint4 pack(const float* f) {
    uint4 u;
    u.x = bf16_bits(f[0]) | (bf16_bits(f[1]) << 16);
    u.y = bf16_bits(f[2]) | (bf16_bits(f[3]) << 16);
    u.z = bf16_bits(f[4]) | (bf16_bits(f[5]) << 16);
    u.w = bf16_bits(f[6]) | (bf16_bits(f[7]) << 16);
    return u;
}

extern "C" __global__ void __launch_bounds__(THREADS) layernorm_rows(const uint4* __restrict__ x, const uint4* __restrict__ w,
                                                                    const uint4* __restrict__ b, uint4* __restrict__ y) {
    const long long base = (long long)blockIdx.x * (COLS / 8) + threadIdx.x;
    float v[PER][8];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        unpack(x[base + k * THREADS], v[k]);
#pragma unroll
        for (int j = 0; j < 8; ++j) s += v[k][j];
    }
    const float mean = block_reduce<false>(s) / COLS;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            v[k][j] -= mean;
            q += v[k][j] * v[k][j];
        }
    }
    const float rstd = rsqrtf(block_reduce<false>(q) / COLS + 1e-5f);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        float scale[8], shift[8], out[8];
        unpack(w[k * THREADS + threadIdx.x], scale);
        unpack(b[k * THREADS + threadIdx.x], shift);
#pragma unroll
        for (int j = 0; j < 8; ++j) out[j] = v[k][j] * rstd * scale[j] + shift[j];
        y[base + k * THREADS] = pack(out);
    }
}
"""

TRANSPOSE = r"""
// y = x.T through a 32 x 33 shared-memory tile (the padding avoids bank conflicts); blocks of 32 x 8 threads.
extern "C" __global__ void transpose(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
    __shared__ T tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int r = blockIdx.y * 32 + k;
        if (r < rows && c < cols) tile[k][threadIdx.x] = x[(long long)r * cols + c];
    }
    __syncthreads();
    const int r = blockIdx.y * 32 + threadIdx.x;  // a row of x is a column of y
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int yc = blockIdx.x * 32 + k;
        if (yc < cols && r < rows) y[(long long)yc * rows + r] = tile[threadIdx.x][k];
    }
}
"""

EMPTY = r'extern "C" __global__ void empty(float* x) {}'


def macros(**values) -> tuple[str, ...]:
    """NVRTC options defining the macros: macros(COLS=4096) == ("-DCOLS=4096",)."""
    return tuple(f"-D{k}={v}" for k, v in values.items())


def row_threads(cols: int, values_per_vector: int) -> list[int]:
    """Block sizes for a row of `cols` held in registers: 1 to 8 vectors of `values_per_vector` a thread."""
    return [t for t in (128, 256, 512, 1024) if cols % (values_per_vector * t) == 0
            and 1 <= cols // (values_per_vector * t) <= 8]
