"""C's arithmetic types as the tile dtypes that hold them, and C's conversion rules on them.

CUDA C on Linux is LP64: `long` is 64 bits, `char` is signed. CuPy's `float16` is a class whose
operators on two halves compute in float and round to half; mixed with any other type a half
converts to float first.

    arithmetic(int8, int8) -> int32        arithmetic(int32, uint32) -> uint32
    arithmetic(int64, uint32) -> int64     arithmetic(float16, int32) -> float32
    arithmetic(complex64, double) -> complex128 (thrust::complex's operators: the complex of the
    parts' arithmetic type)
"""
from __future__ import annotations

import functools

import numpy as np

from ..ir.types import (
    DType,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    part_dtype,
    to_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)

# Type names a C snippet may spell, as tuples of words (`unsigned long long`).
C_TYPES: dict[tuple[str, ...], DType] = {
    ("bool",): bool_, ("char",): int8, ("signed", "char"): int8, ("unsigned", "char"): uint8,
    ("short",): int16, ("short", "int"): int16, ("unsigned", "short"): uint16, ("unsigned", "short", "int"): uint16,
    ("int",): int32, ("signed",): int32, ("signed", "int"): int32, ("unsigned",): uint32,
    ("unsigned", "int"): uint32, ("long",): int64, ("long", "int"): int64, ("long", "long"): int64,
    ("long", "long", "int"): int64, ("unsigned", "long"): uint64, ("unsigned", "long", "long"): uint64,
    ("unsigned", "long", "int"): uint64, ("unsigned", "long", "long", "int"): uint64,
    ("float",): float32, ("double",): float64, ("float16",): float16, ("half",): float16,
    ("size_t",): uint64, ("ptrdiff_t",): int64, ("ssize_t",): int64,
    ("int8_t",): int8, ("int16_t",): int16, ("int32_t",): int32, ("int64_t",): int64,
    ("uint8_t",): uint8, ("uint16_t",): uint16, ("uint32_t",): uint32, ("uint64_t",): uint64,
    ("complex<float>",): complex64, ("complex<double>",): complex128,  # the parser reads complex<...> as one word
}
TEMPLATES = {"complex"}  # type names that take a type argument
TYPE_WORDS = {word for words in C_TYPES for word in words} | TEMPLATES

# How CuPy spells each dtype in the C it generates (and how errors here name them).
C_SPELLING = {bool_: "bool", int8: "signed char", uint8: "unsigned char", int16: "short", uint16: "unsigned short",
              int32: "int", uint32: "unsigned int", int64: "long long", uint64: "unsigned long long",
              float16: "float16", float32: "float", float64: "double", complex64: "complex<float>",
              complex128: "complex<double>"}
SUPPORTED = frozenset(C_SPELLING)
SUPPORTED_NAMES = "bool, int8-64, uint8-64, float16/32/64, complex64/128"


def param_dtype(name: str) -> DType:
    """A parameter list's type name is a NumPy dtype's own name, as in CuPy (`float32`, not `float`)."""
    try:
        dtype = to_dtype(np.dtype(name)) if np.dtype(name).name == name else None
    except TypeError:
        dtype = None
    if dtype not in SUPPORTED:
        raise TypeError(f"{name!r} is not the name of a dtype these kernels support ({SUPPORTED_NAMES})")
    return dtype


def integer_promotion(t: DType) -> DType:
    """bool, char and short become int before any arithmetic."""
    return int32 if (t.is_integral or t is bool_) and t.bitwidth < 32 else t


def arithmetic(a: DType, b: DType) -> DType:
    """The usual arithmetic conversions: the type both operands of a binary operator take."""
    if a.is_complex or b.is_complex:
        return complex128 if arithmetic(part_dtype(a), part_dtype(b)) is float64 else complex64
    if a is float16 and b is float16:
        return float16
    a, b = (float32 if t is float16 else integer_promotion(t) for t in (a, b))
    for wide in (float64, float32):
        if wide in (a, b):
            return wide
    if a is b:
        return a
    if a.is_signed == b.is_signed:
        return a if a.bitwidth > b.bitwidth else b
    unsigned, signed = (a, b) if not a.is_signed else (b, a)
    return unsigned if unsigned.bitwidth >= signed.bitwidth else signed


def int_literal_type(value: int, suffix: str, decimal: bool) -> DType:
    """C's rule: the first of the suffix's candidate types that holds the value."""
    suffix = suffix.lower()
    unsigned = "u" in suffix
    long = "l" in suffix
    if unsigned:
        candidates = [uint64] if long else [uint32, uint64]
    elif decimal:
        candidates = [int64] if long else [int32, int64]
    else:  # hex and octal literals may also become unsigned
        candidates = [int64, uint64] if long else [int32, uint32, int64, uint64]
    for t in candidates:
        info = np.iinfo(t.numpy)
        if info.min <= value <= info.max:
            return t
    raise OverflowError(f"integer literal {value} is too large for any C integer type")


@functools.cache
@functools.cache
def _finite_max(dtype: DType) -> float:
    try:
        return float(np.finfo(dtype.numpy).max)
    except (TypeError, ValueError):
        return -1.0   # not known: every value takes the guarded conversion


@functools.cache
def _int_range(dtype: DType) -> tuple[int, int]:
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def value_range(dtype: DType) -> tuple:
    """The values an integer or float type holds (finite ones), where converting to it needs no
    wrapping or overflow rule; an empty range where that is not known."""
    if dtype.is_integral:
        return _int_range(dtype)
    high = _finite_max(dtype)
    return -high, high


def convert_constant(value, to: DType):
    """A compile-time value converted as C converts it (wrapping integers, truncating floats)."""
    if to.is_complex:
        return complex(to.numpy.type(value))
    if isinstance(value, complex):  # to a real type: the real part, as thrust::complex converts
        value = value.real
    if to is bool_:
        return bool(value)
    if to.is_float:
        if abs(value) <= _finite_max(to):   # in range (every call's scalar, nearly): nothing to silence
            return float(to.numpy.type(value))
        with np.errstate(over="ignore"):   # as C: out of range becomes infinity
            return float(to.numpy.type(value))
    if isinstance(value, float):
        value = int(value)
    low, high = _int_range(to)
    if low <= value <= high:   # nothing to wrap
        return int(value)
    return int(np.array(int(value) & ((1 << 64) - 1), dtype=np.uint64).astype(to.numpy))
