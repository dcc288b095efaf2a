"""The names a kernel's Python variables must not take in the generated CUDA C++.

A Python name is kept as written unless C++, CUDA or the headers the generated code includes
give it a meaning: `do = ct.load(...)` is legal Python and a syntax error in C++, `threadIdx` a
builtin the generated code reads, `min` a function it may call, `FLT_MAX` a macro. Those are
renamed (`do` -> `do_`, see cuda.cpp_identifier). The lists are tested by compiling kernels
whose every variable and parameter takes one of these names (tests/codegen/test_names.py).
"""
import keyword
import re

# C++20 keywords, alternative operator spellings and identifiers with special meaning; C keywords
CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq final override import module restrict inline typeof
""".split()) | frozenset(keyword.kwlist)

# CUDA's builtin variables, vector types and their make_ functions, and device functions that
# generated code or the headers call without a namespace
_VECTOR_BASES = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong", "ulonglong",
                 "float", "double")
CUDA_NAMES = frozenset(
    "threadIdx blockIdx blockDim gridDim warpSize clusterIdx clusterDim dim3 cudaError_t half half2 nv_bfloat16 "
    "nv_bfloat162 clock clock64 printf malloc free memcpy memset assert offsetof min max abs fabs fabsf labs llabs "
    "sqrt sqrtf rsqrt rsqrtf exp expf exp2 exp2f log logf log2 log2f sin sinf cos cosf tan tanf sinh sinhf cosh "
    "coshf tanh tanhf erf erff floor floorf ceil ceilf fmin fminf fmax fmaxf fmod fmodf pow powf atan2 atan2f "
    "fma fmaf trunc truncf round roundf rint rintf isnan isinf isfinite signbit copysign copysignf ldexp ldexpf "
    "frexp frexpf nan nanf "
    "atomicAdd atomicSub atomicExch atomicMin atomicMax atomicInc atomicDec atomicCAS atomicAnd atomicOr atomicXor "
    "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t size_t ptrdiff_t "
    "std cuda nvcuda tw main".split()
) | frozenset(f"{base}{n}" for base in _VECTOR_BASES for n in (1, 2, 3, 4)) | frozenset(
    f"make_{base}{n}" for base in _VECTOR_BASES for n in (1, 2, 3, 4))

# Macros: the C library's and the CUDA headers' (NVRTC defines no lowercase ones, but GCC-style
# `linux`/`unix` are kept out as a compiler may), and the generated code's own TW_ ones
MACROS = frozenset("NAN INFINITY NULL EOF HUGE_VAL HUGE_VALF CHAR_BIT WARP_SZ linux unix i386".split())
# ...and anything spelled like one: an all-capitals name with an underscore (FLT_MAX, M_PI,
# IF_DEVICE_OR_CUDACC) or a CUDA/NV/TW prefix
MACRO_LIKE = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]*|(TW|CUDA|CUDART|NV)_?\w*")

# the generated code's own variables (the pipelined loop's stage counters)
GENERATED = frozenset({"stage", "use", "load_stage"})

RESERVED = CPP_KEYWORDS | CUDA_NAMES | MACROS | GENERATED


def is_reserved(name: str) -> bool:
    """Whether `name` means something in the generated CUDA C++ and needs renaming."""
    return name in RESERVED or MACRO_LIKE.fullmatch(name) is not None
