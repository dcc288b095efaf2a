"""Parameter lists (`'T x, raw T y, float32 z'`) and how a call's arguments fix their types.

A one-character type is a placeholder; the types of placeholders come from the output arrays
given in the call first, then from the input arrays (scalars fix nothing), as in CuPy:

    in 'T x, T y', out 'T z';  call (float32 array, 5)  ->  T = float32, y = float32(5)
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass

import numpy as np

from ..arguments import is_array_like
from ..ir.types import DType, to_dtype
from .cdtypes import SUPPORTED, param_dtype

RESERVED = ("i",)


@dataclass(frozen=True)
class Param:
    name: str
    dtype: DType | None       # None: a placeholder
    placeholder: str | None
    raw: bool = False

    @property
    def py(self) -> str:
        """The generated kernel's parameter: the C name, unless Python or the kernel's module names need it."""
        return f"{self.name}_" if keyword.iskeyword(self.name) or self.name in ("ct", "cops") else self.name


def parse_params(text: str, what: str) -> tuple[Param, ...]:
    """`'T x, raw T y'` -> Params. Mistakes raise ValueError naming the item."""
    params = []
    for item in (p.strip() for p in text.split(",")) if text.strip() else ():
        words = item.split()
        raw = bool(words) and words[0] == "raw"
        words = words[1:] if raw else words
        if len(words) != 2:
            raise ValueError(f"{what}: {item!r} is not `[raw] <type> <name>`")
        type_name, name = words
        if not name.isidentifier():
            raise ValueError(f"{what}: {name!r} is not a valid parameter name")
        if name in RESERVED or name.startswith("_"):
            raise ValueError(f"{what}: the name {name!r} is reserved (i and names starting with _ are)")
        if any(p.name == name for p in params):
            raise ValueError(f"{what}: parameter {name!r} appears twice")
        if len(type_name) == 1:
            params.append(Param(name, None, type_name, raw))
        else:
            try:
                params.append(Param(name, param_dtype(type_name), None, raw))
            except TypeError as e:
                raise ValueError(f"{what}: {e}") from None
    return tuple(params)


def array_dtype(x) -> DType:
    dtype = to_dtype(x.dtype)
    if dtype not in SUPPORTED:
        raise TypeError(f"Arrays of dtype {x.dtype} are not supported (bool, int8-64, uint8-64, float16/32/64)")
    return dtype


def resolve_types(in_params, out_params, in_args, out_args, name: str) -> tuple[list, list, dict]:
    """Each parameter's dtype for this call, and the placeholders' (outputs decide first)."""
    placeholders: dict[str, DType] = {}

    def visit(params, args):
        for p, a in zip(params, args):
            if not is_array_like(a):
                continue
            dtype = array_dtype(a)
            want = p.dtype or placeholders.get(p.placeholder)
            if want is not None and want is not dtype:
                kind = f"type {want}" if p.dtype else f"{p.placeholder} = {want}"
                raise TypeError(f"{name}: argument {p.name!r} is a {dtype} array, but {kind}")
            if p.dtype is None:
                placeholders[p.placeholder] = dtype
    visit(out_params, out_args)
    visit(in_params, in_args)
    unresolved = sorted({p.placeholder for p in in_params + out_params
                         if p.dtype is None and p.placeholder not in placeholders})
    if unresolved:
        raise TypeError(f"{name}: the type of {', '.join(unresolved)} cannot be determined from the arguments: "
                        f"pass an array for it (outputs too)")
    types = [[p.dtype or placeholders[p.placeholder] for p in params] for params in (in_params, out_params)]
    return types[0], types[1], placeholders


def scalar_value(value, dtype: DType, param: Param, name: str):
    """A scalar argument as its parameter's type."""
    if not isinstance(value, (bool, int, float, np.generic)):
        raise TypeError(f"{name}: argument {param.name!r} must be an array or a scalar, not {type(value).__name__}")
    if param.raw:
        raise TypeError(f"{name}: the raw argument {param.name!r} must be an array")
    return dtype.numpy.type(value)
