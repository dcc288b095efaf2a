"""IR -> CUDA C++ over the tile library in include/ (which C++ kernels can also use directly)."""
from .cuda import HEADER_VERSION, INCLUDE_DIR, GeneratedKernel, generate, line_file

__all__ = ["HEADER_VERSION", "INCLUDE_DIR", "GeneratedKernel", "generate", "line_file"]
