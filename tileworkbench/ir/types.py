"""Types of the tile IR: element dtypes, tiles (static power-of-two shapes) and arrays.

Promotion follows cuTile: within a category the wider type wins; across categories
bool < integer < float < complex, and as NumPy, a complex with a wider float widens to the complex
of that width (complex64 + float64 -> complex128). Mixing signed with unsigned, float16 with bfloat16, or a restricted
float with anything else is an error that asks for an explicit cast.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class DType:
    """An element type. `kind` is 'b' (bool), 'i' (signed), 'u' (unsigned), 'f' (float), 'c'
    (complex: a pair of floats, real part first, as NumPy stores it) or 'r' (restricted float:
    tf32/fp8/fp4, only loaded, stored, cast and fed to mma)."""

    name: str
    bitwidth: int
    kind: str
    scalar_type: type | str  # NumPy's scalar type, or the name of ml_dtypes' (imported on first use)
    ctype: str  # the CUDA C++ spelling

    @functools.cached_property
    def numpy(self) -> np.dtype:
        """The NumPy dtype. ml_dtypes (bfloat16, fp8, fp4) is imported the first time one of its
        dtypes is asked for: a program of float32 tensors never loads it."""
        if isinstance(self.scalar_type, str):
            import ml_dtypes
            if not hasattr(ml_dtypes, self.scalar_type):
                raise TypeError(f"{self.name} has no NumPy dtype: arrays and tiles cannot hold it")
            return np.dtype(getattr(ml_dtypes, self.scalar_type))
        return np.dtype(self.scalar_type)

    def __repr__(self) -> str:
        return f"<DType '{self.name}'>"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (dtype_named, (self.name,))

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_integral(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def is_arithmetic(self) -> bool:
        return self.kind != "r"

    @property
    def itemsize(self) -> int:
        return max(1, self.bitwidth // 8)


def _dt(name, bits, kind, scalar_type, ctype):
    return DType(name, bits, kind, scalar_type, ctype)


bool_ = _dt("bool_", 8, "b", np.bool_, "bool")
int8 = _dt("int8", 8, "i", np.int8, "int8_t")
int16 = _dt("int16", 16, "i", np.int16, "int16_t")
int32 = _dt("int32", 32, "i", np.int32, "int32_t")
int64 = _dt("int64", 64, "i", np.int64, "int64_t")
uint8 = _dt("uint8", 8, "u", np.uint8, "uint8_t")
uint16 = _dt("uint16", 16, "u", np.uint16, "uint16_t")
uint32 = _dt("uint32", 32, "u", np.uint32, "uint32_t")
uint64 = _dt("uint64", 64, "u", np.uint64, "uint64_t")
float16 = _dt("float16", 16, "f", np.float16, "__half")
bfloat16 = _dt("bfloat16", 16, "f", "bfloat16", "__nv_bfloat16")
float32 = _dt("float32", 32, "f", np.float32, "float")
float64 = _dt("float64", 64, "f", np.float64, "double")
tfloat32 = _dt("tfloat32", 32, "r", np.float32, "float")
float8_e4m3fn = _dt("float8_e4m3fn", 8, "r", "float8_e4m3fn", "__nv_fp8_e4m3")
float8_e5m2 = _dt("float8_e5m2", 8, "r", "float8_e5m2", "__nv_fp8_e5m2")
float8_e8m0fnu = _dt("float8_e8m0fnu", 8, "r", "float8_e8m0fnu", "__nv_fp8_e8m0")
# complex: the tile library's pair of floats (codegen/include/tileworkbench/complex.cuh)
complex64 = _dt("complex64", 64, "c", np.complex64, "tw::complex64")
complex128 = _dt("complex128", 128, "c", np.complex128, "tw::complex128")
# 4-bit floats: one per byte in memory here (NumPy's and ml_dtypes' layout); loaded, stored and cast
float4_e2m1fn = _dt("float4_e2m1fn", 4, "r", "float4_e2m1fn", "__nv_fp4_e2m1")

ALL_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64, complex64, complex128, tfloat32, float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float4_e2m1fn)
# cuTile's unsigned 8-bit float (5 exponent, 3 mantissa bits), a scale format of Blackwell's
# block-scaled mma: a name only, as no NumPy type (ml_dtypes included) holds it.
float8_e5m3fnu = _dt("float8_e5m3fnu", 8, "r", "float8_e5m3fnu", "__nv_fp8_e5m3")
_BY_NAME = {d.name: d for d in ALL_DTYPES} | {"bool": bool_, "float8_e5m3fnu": float8_e5m3fnu}
# NumPy dtypes map back to ours; tfloat32 has no NumPy type of its own, so float32 wins. ml_dtypes'
# dtypes are found by name (an array of one means ml_dtypes is imported already).
_BY_NUMPY = {d.numpy: d for d in reversed(ALL_DTYPES) if d is not tfloat32 and not isinstance(d.scalar_type, str)}
_ML_DTYPES = {d.name: d for d in ALL_DTYPES if isinstance(d.scalar_type, str)}


def dtype_named(name: str) -> DType:
    return _BY_NAME[name]


def to_dtype(obj) -> DType:
    """Accept a DType, a NumPy/ml_dtypes dtype or scalar type, a torch dtype, or a dtype name."""
    if isinstance(obj, DType):
        return obj
    if isinstance(obj, str) and obj in _BY_NAME:
        return _BY_NAME[obj]
    if type(obj).__module__.startswith("torch"):
        return _BY_NAME[{"bool": "bool_"}.get(str(obj).split(".")[-1], str(obj).split(".")[-1])]
    try:
        dtype = np.dtype(obj)
    except TypeError:
        raise TypeError(f"Not a tile dtype: {obj!r}") from None
    found = _BY_NUMPY.get(dtype)
    if found is None:
        found = _ML_DTYPES.get(dtype.name)
        if found is None or found.numpy != dtype:
            raise TypeError(f"Not a tile dtype: {obj!r}")
    return found


class PromotionError(Exception):
    """Raised by `promote`; the frontend turns it into a TileTypeError at the user's line."""


_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def promote(a: DType, b: DType) -> DType:
    """The common dtype of two operands (cuTile's promotion table)."""
    if a is b:
        return a
    if a.kind == "r" or b.kind == "r" or {a, b} == {float16, bfloat16} or {a.kind, b.kind} == {"i", "u"}:
        raise PromotionError(f"Implicit promotion of {a} and {b} is not supported. "
                             f"Please perform an explict cast instead.")
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if (a.is_complex or b.is_complex) and {a.kind, b.kind} <= {"f", "c"}:  # the complex of the wider part
        return complex128 if max(part_dtype(a).bitwidth, part_dtype(b).bitwidth) > 32 else complex64
    if ca != cb:
        return a if ca > cb else b
    return a if a.bitwidth >= b.bitwidth else b


def can_cast_implicitly(src: DType, dst: DType) -> bool:
    """Stores, scatters, padding values and mma accumulators cast only where promotion would."""
    try:
        return promote(src, dst) is dst
    except PromotionError:
        return False


def part_dtype(dtype: DType) -> DType:
    """The float type of a complex dtype's real and imaginary parts (what abs, real and imag
    give); any other dtype is its own."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def is_pow2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class TileType:
    """An immutable tile with a static shape; shape () is a scalar."""

    dtype: DType
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def with_dtype(self, dtype: DType) -> "TileType":
        return TileType(dtype, self.shape)

    def with_shape(self, shape) -> "TileType":
        return TileType(self.dtype, tuple(shape))

    def __str__(self) -> str:
        if not self.shape:
            return self.dtype.name
        return f"tile<{self.dtype.name}, {'x'.join(map(str, self.shape))}>"


@dataclass(frozen=True)
class ArrayType:
    """A global, strided array argument: dtype and rank are static, shape and strides are not."""

    dtype: DType
    ndim: int

    def __str__(self) -> str:
        return f"array<{self.dtype.name}, {self.ndim}d>"


def scalar(dtype: DType) -> TileType:
    return TileType(dtype, ())


def dtype_range(dtype: DType) -> tuple[int, int]:
    """The integer range of an integral (or bool) dtype."""
    if dtype is bool_:
        return 0, 1
    info = np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)
