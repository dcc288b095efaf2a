"""CuPy's user-defined kernels (`ElementwiseKernel`, `ReductionKernel`) as tile kernels.

The C body is read once by C's translation phases (lexer) and parsed (parser -> syntax),
translated into Python syntax trees of tile-language code with C's types and conversions made
explicit (translate, arrays, values, pyast, csemantics), and compiled by the frontend like any
tile kernel: it runs on the interpreter with NumPy arrays and on the GPU with
CuPy arrays, and the workbench's views and sweeps work on it. docs/cupy_kernels.md lists the
C subset.
"""
from .elementwise import ElementwiseKernel
from .reduction import ReductionKernel

__all__ = ["ElementwiseKernel", "ReductionKernel"]
