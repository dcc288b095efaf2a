"""What the translator computes with: C values as Python syntax trees with their C types, local
and raw arrays, structured values, and the outputs a kernel body assigns."""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..ir.types import DType
from . import syntax as s
from .cdtypes import convert_constant
from .params import StructType
from .pyast import const, dtype_node, py


@dataclass(frozen=True)
class CValue:
    """A translated expression: its Python syntax tree, its C type, and what is known about it."""

    code: ast.expr
    type: DType
    const: object = None      # the value, when known while translating
    varies: bool = True       # False: the same in every element (a constant, a scalar argument)


@dataclass(frozen=True)
class LocalArray:
    """A local C array (or `x.shape()`): one value per element."""

    type: DType
    items: tuple[CValue, ...]


@dataclass(frozen=True)
class StructValue:
    """A structured input: one value per field."""

    type: StructType
    fields: tuple[CValue, ...]


@dataclass(frozen=True)
class RawArray:
    """A `raw` parameter: indexed by hand with a flat (C-order) index or one index per dimension."""

    name: str                 # the kernel parameter
    type: DType
    ndim: int
    writable: bool
    strides: tuple = ()       # CValues of its strides in bytes, where the kernel receives them


@dataclass
class Output:
    """An output variable (or a field of a structured output, named `out.at<k>`): unset until
    the body assigns it (then its last value is stored)."""

    name: str
    type: DType
    value: CValue | None = None


class NeedsInitialValue(Exception):
    """The body reads an output before assigning it, or assigns it on some paths only: the
    kernel must load the output's current contents first."""

    def __init__(self, name: str):
        self.name = name


_PY_OPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "&": ast.BitAnd, "|": ast.BitOr, "^": ast.BitXor,
           "<<": ast.LShift, ">>": ast.RShift}
_PY_COMPARE = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}


def literal(value, dtype: DType) -> CValue:
    """A C constant, converted to `dtype` as C converts it."""
    value = convert_constant(value, dtype)
    return CValue(py("ct.full((), v, t)", v=const(value), t=dtype_node(dtype)), dtype, value, varies=False)


def binop(op: str, a: ast.expr, b: ast.expr) -> ast.expr:
    if op in _PY_COMPARE:
        return ast.Compare(a, [_PY_COMPARE[op]()], [b])
    return ast.BinOp(a, _PY_OPS[op](), b)


def field_key(node: s.Field) -> str:
    return f"{node.obj.id}.at<{node.index}>"
