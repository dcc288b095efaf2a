"""Python AST -> typed tile IR (name resolution, constant folding, shape/dtype rules, diagnostics)."""
from .compiler import compile_kernel

__all__ = ["compile_kernel"]
