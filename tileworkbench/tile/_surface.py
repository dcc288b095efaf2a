"""cuTile's array annotations, and TiledView (what `array.tiled_view(...)` gives in tile code). The
newer tile functions (byte packing, mma_scaled, ...) are declared with the others in ir/stubs.py."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, get_origin

from ..frontend.surface import TiledView
from ..ir.types import DType, int32, int64

__all__ = ["TiledView", "ArrayAnnotation", "ListAnnotation", "IndexedWithInt64"]


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
