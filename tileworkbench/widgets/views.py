"""Which views a traced launch gets (what `%%tilekernel --viz` shows), in kernel order:
a coverage view of the whole launch, then one view per memory or shape op line, the kind each
op's declaration names (`OpDecl.view`), then the block stepper where the trace holds values; all
linked (linked.py) and starting at the block that shows the most (the first block of the first
memory op with padded, masked, dropped, out-of-bounds or colliding lanes)."""
from __future__ import annotations

import numpy as np

from ..interp import Status
from ..ir.ops import OPS, ViewKind


def telling_block(event) -> tuple[int, ...]:
    """The first block of the event with lanes that did something other than a plain load or store,
    else its first block."""
    status = event.status.reshape(len(event.blocks), -1)
    plain = ((status == Status.LOADED) | (status == Status.STORED)).all(axis=1)
    return tuple(int(b) for b in event.blocks[int(np.argmin(plain))])


def views_of_trace(trace, values: dict | None = None, limit: int = 6) -> list:
    """Views for a Trace: coverage, then tile spaces, index maps and transforms (at most `limit`),
    and the block stepper where the trace holds every op's values (run(..., values=True)); all
    linked to one block and one selected element (linked.py), starting at the first telling block.
    `values`: the arrays' contents before the launch, by parameter name, for hover read-outs."""
    from .coverage import CoverageView
    from .index_map import IndexMapView
    from .linked import link_views
    from .stepper import StepperView
    from .tile_space import TileSpaceView
    from .transform import TransformView, called_name, written
    views, origins, blocks = [CoverageView.from_trace(trace)], [None], []
    seen = set()
    element_lines = {e.line for e in trace.events if OPS[e.op].view is ViewKind.INDEX_MAP}
    for event in sorted(trace.events, key=lambda e: e.line):
        key = (event.op, event.array, event.line)
        if key in seen or len(views) >= limit:
            continue
        seen.add(key)
        view = OPS[event.op].view
        if view is ViewKind.TRANSFORM and (not written(event.op, event.source) or
                                           event.line in element_lines and not called_name(event.op, event.source)):
            continue   # made by another op of its line (an operator's broadcast, a gather), not written by the user
        array_values = (values or {}).get(event.array)
        block = telling_block(event)
        # the op of this line, not the first op of its kind: a kernel may load an array twice
        index = next((k for k, e in enumerate(trace.by_op(event.op)) if e is event), 0)
        if view is ViewKind.TILE_SPACE:
            origins.append({"op": event.op, "array": event.array, "values": array_values, "line": event.line})
            views.append(TileSpaceView.from_trace(trace, block=block, **origins[-1]))
        elif view is ViewKind.INDEX_MAP:
            origins.append({"op": event.op, "values": array_values, "index": index})
            views.append(IndexMapView.from_trace(trace, block=block, **origins[-1]))
        elif view is ViewKind.TRANSFORM:
            origins.append(None)
            views.append(TransformView.from_trace(trace, op=event.op, index=index))
        if event.array is not None:
            blocks.append(block)
    start = blocks[0] if blocks else (0, 0, 0)
    if trace.steps is not None and trace.steps.steps:   # a kernel that executes no op has nothing to step through
        views.append(StepperView.from_trace(trace, block=start))
        origins.append(None)
    link_views(trace, views, start, origins)
    return views
