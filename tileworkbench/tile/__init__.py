"""The tile language: `import tileworkbench.tile as ct`, source-compatible with cuTile Python.

    @ct.kernel
    def add(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))

    ct.launch(None, (ct.cdiv(n, 1024),), add, (a, b, c, 1024))   # NumPy arrays: the interpreter
"""
from ..errors import (StaticException, TileAssertionError, TileCompilerExecutionError, TileCompilerTimeoutError, TileError,
                      TileInternalError, TileOutOfBoundsError, TileRecursionError, TileStaticAssertionError,
                      TileStaticEvalError, TileSyntaxError, TileTypeError, TileUndeterminedPaddingError,
                      TileUnsupportedFeatureError, TileValueError)
from ..ir.types import (DType, bfloat16, bool_, complex64, complex128, float4_e2m1fn, float8_e4m3fn, float8_e5m2,
                        float8_e5m3fnu, float8_e8m0fnu, float16, float32, float64, int8, int16, int32, int64, tfloat32,
                        uint8, uint16, uint32, uint64)
from ._evaluate import evaluate
from ._kernel import ByTarget, Constant, ConstantAnnotation, Kernel, ScalarInt64, function, interpret, kernel, launch
from ._stubs import *  # noqa: F401,F403 - the tile functions
from ._stubs import MemoryOrder, MemoryScope, PaddingMode, RoundingMode, Slice
from ._surface import *  # noqa: F401,F403 - array annotations, TiledView


class Array:
    """Annotation for array parameters (arrays are passed, never created, in tile code)."""


class Tile:
    """Annotation for tiles."""


class Scalar:
    """Annotation for scalars."""


def compiler_timeout(timeout_sec: float):
    """`with ct.compiler_timeout(10): ...`: each compile started inside takes at most `timeout_sec`
    seconds (TileCompilerTimeoutError beyond); see tileworkbench.runtime.nvrtc.compiler_timeout."""
    from ..runtime.nvrtc import compiler_timeout as limit  # imported on use: the language loads no GPU layer
    return limit(timeout_sec)


def __getattr__(name: str):
    """`ct.tune`, imported on first use: a program that only launches never pays for the autotuner."""
    if name == "tune":
        import importlib
        return importlib.import_module(f"{__name__}.tune")  # binds it here: no second call
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
