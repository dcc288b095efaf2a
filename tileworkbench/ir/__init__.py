"""The typed tile IR: types, op declarations, the printed form, the verifier and the multiply-add fusion."""
from .core import Block, Builder, Function, Op, Param, Value
from .ops import OPS, TypeRuleError
from .printer import print_function, specialization_label
from .types import ArrayType, DType, TileType
from .verify import verify

__all__ = ["ArrayType", "Block", "Builder", "DType", "Function", "OPS", "Op", "Param", "TileType", "specialization_label",
           "TypeRuleError", "Value", "print_function", "verify"]
