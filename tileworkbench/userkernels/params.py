"""Parameter lists (`'T x, raw T y, float32 z'`) and how a call's arguments fix their types.

A one-character type is a placeholder; the types of placeholders come from the output arrays
given in the call first, then from the input arrays (scalars fix nothing), as in CuPy:

    in 'T x, T y', out 'T z';  call (float32 array, 5)  ->  T = float32, y = float32(5)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..arguments import is_array_like
from ..errors import ArgumentTypeError, ArgumentValueError
from ..ir.types import DType, to_dtype
from .cdtypes import SUPPORTED, SUPPORTED_NAMES, convert_constant, param_dtype, value_range
from .pyast import user_name

C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Param:
    name: str
    dtype: DType | None       # None: a placeholder
    placeholder: str | None
    raw: bool = False

    @property
    def py(self) -> str:
        """The generated kernel's parameter (pyast.user_name)."""
        return user_name(self.name)


def parse_params(text: str, what: str) -> tuple[Param, ...]:
    """`'T x, raw T y'` -> Params. Mistakes raise ValueError naming the item."""
    params = []
    for item in (p.strip() for p in text.split(",")) if text.strip() else ():
        words = item.split()
        raw = bool(words) and words[0] == "raw"
        words = words[1:] if raw else words
        if len(words) != 2:
            raise ArgumentValueError(f"{what}: {item!r} is not `[raw] <type> <name>`")
        type_name, name = words
        if not C_IDENTIFIER.fullmatch(name):
            raise ArgumentValueError(f"{what}: {name!r} is not a valid parameter name (C names are ASCII letters, digits "
                             f"and '_')")
        if name == "i":
            raise ArgumentValueError("Can not use 'i' as a parameter name")
        if name.startswith("_"):
            raise ArgumentValueError(f"{what}: the name {name!r} is reserved (names starting with _ are)")
        if any(p.name == name for p in params):
            raise ArgumentValueError(f"{what}: parameter {name!r} appears twice")
        if len(type_name) == 1:
            params.append(Param(name, None, type_name, raw))
        else:
            try:
                params.append(Param(name, param_dtype(type_name), None, raw))
            except TypeError as e:
                raise ArgumentValueError(f"{what}: {e}") from None
    return tuple(params)


@dataclass(frozen=True)
class StructType:
    """A structured dtype: its fields, read and written by index (`x.at<1>()`) as in CuPy. The
    kernel receives each field as an array of its own (a strided view)."""

    dtype: np.dtype
    fields: tuple[DType, ...]

    @property
    def name(self) -> str:
        return str(self.dtype)

    def views(self, array) -> list:
        return [array[name] for name in self.dtype.names]


def array_dtype(x) -> DType | StructType:
    if x.dtype.names is not None:
        return struct_type(x.dtype)
    try:
        dtype = to_dtype(x.dtype)
    except TypeError:
        dtype = None
    if dtype not in SUPPORTED:
        raise ArgumentTypeError(f"Arrays of dtype {x.dtype} are not supported ({SUPPORTED_NAMES})")
    return dtype


def struct_type(dtype: np.dtype) -> StructType:
    fields = []
    for name in dtype.names:
        field = dtype.fields[name][0]
        try:
            fields.append(to_dtype(field) if field.names is None and not field.shape else None)
        except TypeError:
            fields.append(None)
        if fields[-1] not in SUPPORTED:
            raise ArgumentTypeError(f"Structured dtype {dtype}: field {name!r} of dtype {field} is not supported "
                                    f"(fields are {SUPPORTED_NAMES}; no nested or sub-arrays)")
    return StructType(dtype, tuple(fields))


def resolve_types(in_params, out_params, in_args, out_args, name: str) -> tuple[list, list, dict]:
    """Each parameter's dtype for this call, and the placeholders' (outputs decide first)."""
    placeholders: dict[str, DType] = {}

    def visit(params, args):
        for p, a in zip(params, args):
            if not is_array_like(a):
                continue
            dtype = array_dtype(a)
            want = p.dtype or placeholders.get(p.placeholder)
            if want is not None and want != dtype:
                kind = f"type {want}" if p.dtype else f"{p.placeholder} = {want}"
                raise ArgumentTypeError(f"{name}: argument {p.name!r} is a {dtype} array, but {kind}")
            if p.dtype is None:
                placeholders[p.placeholder] = dtype
    visit(out_params, out_args)
    visit(in_params, in_args)
    unresolved = sorted({p.placeholder for p in in_params + out_params
                         if p.dtype is None and p.placeholder not in placeholders})
    if unresolved:
        raise ArgumentTypeError(f"{name}: the type of {', '.join(unresolved)} cannot be determined from the arguments: "
                        f"pass an array for it (outputs too)")
    types = [[p.dtype or placeholders[p.placeholder] for p in params] for params in (in_params, out_params)]
    return types[0], types[1], placeholders


def scalar_converter(example, dtype, param: Param, name: str):
    """scalar_value for a call's scalars of `example`'s type: values of the parameter's own NumPy
    type as they are; Python ints and floats in the type's range by its constructor (what C's
    conversion gives there); anything else by scalar_value."""
    def convert(value):
        return scalar_value(value, dtype, param, name)
    if not isinstance(dtype, DType) or param.raw:
        return convert
    to = dtype.numpy.type
    if type(example) is to:
        return _same
    if dtype.is_complex and type(example) in (int, float, complex):   # each part rounded, as C converts
        return to
    if type(example) is int and dtype.is_integral or type(example) in (int, float) and dtype.is_float:
        low, high = value_range(dtype)

        def in_range(value):
            return to(value) if low <= value <= high else convert(value)
        return in_range
    return convert


def _same(value):
    return value


def scalar_value(value, dtype: DType, param: Param, name: str):
    """A scalar argument as its parameter's type."""
    if isinstance(value, (complex, np.complexfloating)) and not (isinstance(dtype, DType) and dtype.is_complex):
        raise ArgumentTypeError(f"{name}: argument {param.name!r}: a complex scalar for a parameter of type {dtype}: "
                                f"pass its real part (.real) or make the parameter complex")
    if not isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
        raise ArgumentTypeError(f"{name}: argument {param.name!r} must be an array or a scalar, not {type(value).__name__}")
    if param.raw or isinstance(dtype, StructType):
        raise ArgumentTypeError(f"{name}: the argument {param.name!r} must be an array")
    try:   # as C converts it: integers wrap
        return dtype.numpy.type(convert_constant(value.item() if isinstance(value, np.generic) else value, dtype))
    except (OverflowError, ValueError):
        raise ArgumentValueError(f"{name}: argument {param.name!r} = {value!r} cannot be converted to {dtype}") from None
