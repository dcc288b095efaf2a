"""Which views a traced launch gets (what `%%tilekernel --viz` shows), in kernel order:
a coverage view of the whole launch, then one view per memory or shape op line, the kind each
op's declaration names (`OpDecl.view`)."""
from __future__ import annotations

from ..ir.ops import OPS, ViewKind


def views_of_trace(trace, values: dict | None = None, limit: int = 6) -> list:
    """Views for a Trace: coverage, then tile spaces, index maps and transforms (at most `limit`).
    `values`: the arrays' contents before the launch, by parameter name, for hover read-outs."""
    from .coverage import CoverageView
    from .index_map import IndexMapView
    from .tile_space import TileSpaceView
    from .transform import TransformView
    views = [CoverageView.from_trace(trace)]
    seen = set()
    first_block = tuple(int(b) for b in trace.events[0].blocks[0]) if trace.events else (0, 0, 0)
    for event in sorted(trace.events, key=lambda e: e.line):
        key = (event.op, event.array, event.line)
        if key in seen or len(views) >= limit:
            continue
        seen.add(key)
        array_values = (values or {}).get(event.array)
        ndim = len(trace.arrays[event.array]["shape"]) if event.array else 0
        block = first_block[:max(1, ndim)] if event.array else first_block[:1]
        # the op of this line, not the first op of its kind: a kernel may load an array twice
        index = next((k for k, e in enumerate(trace.by_op(event.op)) if e is event), 0)
        view = OPS[event.op].view
        if view is ViewKind.TILE_SPACE:
            views.append(TileSpaceView.from_trace(trace, op=event.op, array=event.array, block=block,
                                                  values=array_values, line=event.line))
        elif view is ViewKind.INDEX_MAP:
            views.append(IndexMapView.from_trace(trace, op=event.op, block=block, values=array_values, index=index))
        elif view is ViewKind.TRANSFORM:
            views.append(TransformView.from_trace(trace, op=event.op, block=first_block[:1], index=index))
    return views
