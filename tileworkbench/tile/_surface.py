"""cuTile's tile functions and annotations beyond the core language: byte packing, block-scaled
mma, compile-time assertions, programmatic-dependent-launch hints, and array annotations.
Their lowerings are in frontend/surface.py."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, get_origin

from ..frontend import surface as _lowerings  # registers the lowerings of these functions
from ..ir.attrs import PaddingMode
from ..ir.types import DType, int32, int64
from ._stubs import _stub

TiledView = _lowerings.TiledView  # in tile code, what `array.tiled_view(...)` gives

__all__ = ["TiledView", "ArrayAnnotation", "ListAnnotation", "IndexedWithInt64", "assume_divisible_by", "ensure_constant",
           "mma_scaled", "pack_to_bytes", "static_exception", "unpack_from_bytes", "grid_dependency_control_wait",
           "grid_dependency_control_launch_dependents"]


@_stub
def pack_to_bytes(x, /):
    """The tile's elements in C order as little-endian bytes: a 1-D uint8 tile of size * itemsize.

    >>> ct.pack_to_bytes(ct.full((1,), 0x04030201, ct.int32))   # [1, 2, 3, 4]
    """


@_stub
def unpack_from_bytes(x, /, dtype):
    """The inverse of pack_to_bytes: a 1-D uint8 tile read as little-endian values of `dtype`."""


@_stub
def mma_scaled(x, x_scale, y, y_scale, /, acc):
    """Block-scaled x @ y + acc: result[i, j] = sum_k x[i, k] * x_scale[i, k // B] * y[k, j] *
    y_scale[k // B, j] + acc[i, j], with B = K // x_scale.shape[-1] (fp8 with e8m0 scales: B 32;
    fp4 with e8m0: 16 or 32; fp4 with e4m3: 16). Computed in float32 on any GPU."""


@_stub
def tiled_view(array, /, tile_shape, *, padding_mode=PaddingMode.UNDETERMINED, traversal_steps=None):
    """`array.tiled_view(tile_shape, ...)` (a method of arrays in tile code): the array as tiles of
    `tile_shape` whose index i starts at element i * traversal_steps (default: tile_shape), with
    .load(index), .store(index, tile), .num_tiles(axis), .atomic_store_add(index, update), ..."""


@_stub
def assume_divisible_by(x, divisor):
    """x, with the promise that it is a multiple of the constant `divisor` (unchecked)."""


def static_exception(exc, /):
    """`raise ct.static_exception(ValueError("..."))` in tile code: `exc`, evaluated at compile time as
    static_eval does, raised there as a StaticException naming it. Only in a raise statement."""
    return exc


static_exception.__tile_op__ = "static_exception"


def ensure_constant(value, /):
    """`value`, which must be a compile-time constant (TileStaticAssertionError otherwise); on the host, value."""
    return value


ensure_constant.__tile_op__ = "ensure_constant"


@_stub
def grid_dependency_control_wait():
    """Wait for the kernel this one depends on in a programmatic dependent launch. tileworkbench
    starts a kernel after its stream predecessor has finished, so the wait is already satisfied."""


@_stub
def grid_dependency_control_launch_dependents():
    """Let a programmatically dependent kernel start scheduling (a permission; nothing to do here)."""


@dataclass(frozen=True, kw_only=True)
class ArrayAnnotation:
    """`Annotated[ct.Array, ct.ArrayAnnotation(...)]` on an array parameter: `index_dtype` (int32 or
    int64) for shapes and strides, `static_shape_dims` and `static_stride_dims` to specialize on.
    Accepted and checked as cuTile checks them; tileworkbench specializes on neither (shapes and
    strides stay runtime values, computed in 64 bits where they address memory)."""

    index_dtype: DType = int32
    static_shape_dims: tuple[int, ...] = ()
    static_stride_dims: tuple[int, ...] = ()

    def __post_init__(self):
        if self.index_dtype not in (int32, int64):
            raise ValueError(f"`index_dtype` must be int32 or int64, got {self.index_dtype}")
        for name in ("static_shape_dims", "static_stride_dims"):
            dims = getattr(self, name)
            if not isinstance(dims, tuple):
                raise TypeError(f"`{name}` must be a tuple of integers")
            for i, dim in enumerate(dims):
                if isinstance(dim, bool) or not isinstance(dim, int):
                    raise TypeError(f"Element #{i} of `{name}` must be int, got {dim}")


@dataclass(frozen=True, kw_only=True)
class ListAnnotation:
    """`Annotated[list, ct.ListAnnotation(element=...)]`: the ArrayAnnotation of a list's arrays."""

    element: Any

    def __post_init__(self):
        element = self.element
        if get_origin(element) is Annotated:
            found = [m for m in element.__metadata__ if isinstance(m, ArrayAnnotation)]
            if len(found) != 1:
                raise TypeError(f"`element` must contain exactly one ArrayAnnotation, found {len(found)} in "
                                f"{element!r}")
            element = found[0]
            object.__setattr__(self, "element", element)
        if not isinstance(element, ArrayAnnotation):
            raise TypeError(f"`element` must be an ArrayAnnotation, got {type(element).__name__}")


_T = TypeVar("_T")
IndexedWithInt64 = Annotated[_T, ArrayAnnotation(index_dtype=int64)]
