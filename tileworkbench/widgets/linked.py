"""Linked views: one block and one selected element shared by every view of a launch.

A `LaunchSelection` holds the block and the element ({"array", "index"}); `link_views` ties each
view of a trace to it with traitlets' own links (`traitlets.link`, `observe`), in the kernel: a
view's script changes its trait (a slider, a click), the link carries it to the selection and on
to every other view, and each redraws in Python from the trace.

    views = views_of_trace(trace)          # linked already: coverage, tile spaces, index maps, stepper
    views[0].block = [2, 0, 0]             # every view now shows that block
    selection_of(views[0]).element = {"array": "y", "index": [5]}   # outlined wherever y[5] is drawn

What each kind of view does with them:
- coverage and stepper: both traits are their own (the stepper jumps to the block that wrote a
  selected element, which moves every other view too); clicks in a tile space (an element) or an
  index map (a lane's element) select too;
- tile space and index map: redrawn for the block from the trace (a view whose op the block did not
  execute keeps the block it shows); the element is outlined (tile space) or its lanes lit (index
  map, through its own `lane` highlight);
- transform panels: a shape op's map is the same in every block, so they keep their picture.
"""
from __future__ import annotations

import numpy as np
import traitlets

from .coverage import SELECTED_OUTLINE, CoverageView
from .index_map import IndexMapView
from .stepper import StepperView
from .svg import with_outlines
from .tile_space import TileSpaceView

class LaunchSelection(traitlets.HasTraits):
    """The block and element every view of one launch shows."""
    block = traitlets.List([0, 0, 0])
    element = traitlets.Dict()     # {"array": name, "index": [...]}, {} for none


def selection_of(view) -> LaunchSelection | None:
    """The selection a view is linked to, None where it is not linked."""
    return getattr(view, "_launch_selection", None)


def link_views(trace, views, block=(0, 0, 0), origins=None) -> LaunchSelection:
    """Link `views` of `trace` through one LaunchSelection starting at `block`. `origins`: per view,
    the from_trace keyword arguments (op, array, line or index, values) of tile-space and
    index-map views, which they are rebuilt with for another block."""
    selection = LaunchSelection(block=[int(b) for b in tuple(block) + (0,) * (3 - len(block))])
    for view, origin in zip(views, origins or [None] * len(views)):
        view._launch_selection = selection
        if isinstance(view, (CoverageView, StepperView)):
            traitlets.link((selection, "block"), (view, "block"))
            traitlets.link((selection, "element"), (view, "selected"))
        elif isinstance(view, (TileSpaceView, IndexMapView)) and origin is not None:
            traitlets.link((selection, "element"), (view, "selected"))
            _follow(selection, view, trace, origin)
    return selection


def _follow(selection, view, trace, origin):
    """A tile-space or index-map view redrawn for the selection's block and element."""
    def redraw_block(change=None):
        block = tuple(selection.block)
        try:
            fresh = type(view).from_trace(trace, block=block, **origin)
        except ValueError:   # the block did not execute this op: keep the picture
            fresh = None
        if fresh is not None:
            view.data = fresh.data
        mark_element()

    def mark_element(change=None):
        element = selection.element
        if isinstance(view, IndexMapView):
            view.lane = _lane_of(view.data, element)
            view.svg = view.to_svg()
        else:
            view.svg = with_outlines(view.to_svg(), _tile_space_marks(view.data, element), SELECTED_OUTLINE)

    selection.observe(redraw_block, names=["block"])
    selection.observe(mark_element, names=["element"])
    redraw_block()


def _lane_of(data: dict, element) -> int:
    """The first lane of an index map that touched the element, -1 for none."""
    if not element or element.get("array") != data["array"] or len(element["index"]) != data["ndim"]:
        return -1
    hits = np.nonzero((np.asarray(data["coords"]) == np.asarray(element["index"])).all(axis=1)
                      & (np.asarray(data["elem"]) >= 0))[0]
    return int(hits[0]) if len(hits) else -1


def _tile_space_marks(data: dict, element) -> list[tuple[float, float, float]]:
    """(x, y, size) of the selected element in a tile-space picture, if it is drawn there."""
    if not element or element.get("array") != data["array"]:
        return []
    index = [int(i) for i in element["index"]]
    if len(index) != data["ndim"] or index[:-2] != list(data["lead"]):
        return []
    r, c = (0, index[0]) if len(index) == 1 else index[-2:]
    lo, ext, cell = data["lo"], data["ext"], data["cell"]
    if not (lo[0] <= r < lo[0] + ext[0] and lo[1] <= c < lo[1] + ext[1]):
        return []
    return [(data["x0"] + (c - lo[1]) * cell, data["y0"] + (r - lo[0]) * cell, cell)]

