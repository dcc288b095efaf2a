"""Tile space: an array drawn as its grid of tiles for one `load`/`store`, the block's tile on top.

The array is drawn in its own axis order (rows = axis 0; a 1-D array is one row) with the tile
boundaries of the op's tile space. Edge tiles are split into the part inside the array and the
part hanging over the edge, which a load fills per `padding_mode` (a store drops it). The lanes of
the block's tile are drawn from the trace, each coloured by its status and, where the cells are
big enough, numbered in tile order, so an `order="F"` load visibly walks down the columns.

    >>> view = TileSpaceView.from_trace(ct.interpret(copy, (3, 2), (x, y), trace=True), array="x", block=(2, 1))
    >>> view = TileSpaceView(array_shape=(10, 12), tile_shape=(4, 8), index=(2, 1), order="F")

Sliders over the tile index and the (power-of-two) tile shape recompute the picture by running a
one-block load through the interpreter (`probe`), so the geometry is always the interpreter's.

With `access=` (profile.access's report of the same trace) the lanes are coloured by the warp of the
generated code that moves them, lighter towards the warp's last thread, and numbered by thread:

    >>> view = TileSpaceView.from_trace(trace, array="x", block=(1, 0), access=analyze_trace(fn, trace))
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import traitlets

import tileworkbench.tile as ct

from ..arguments import block_text
from ..interp import Status
from ..tile import interpret
from ..profile.access import TOUCHING, WARP, tile_threads
from ._base import Data, SvgView, static
from .svg import (
    MIN_FONT,
    PAD,
    TITLE_CHARS,
    TITLE_H,
    clip,
    fmt,
    hex_colour,
    ink_of,
    legend_svg,
    legend_width,
    rgb_of,
    svg_document,
    svg_text,
    text,
)

MODES = tuple(m.name for m in ct.PaddingMode)
# one table for every lane status (the index map view uses it too) ...
STATUS_COLOURS = {Status.LOADED: "#1e88e5", Status.PADDED: "#fb8c00", Status.MASKED: "#9e9e9e",
                  Status.OUT_OF_BOUNDS: "#e53935", Status.STORED: "#43a047", Status.DROPPED: "#616161",
                  Status.COLLISION: "#8e24aa"}
STATUS_LABELS = {Status.LOADED: "loaded", Status.PADDED: "padded", Status.MASKED: "masked off",
                 Status.OUT_OF_BOUNDS: "out of bounds", Status.STORED: "stored", Status.DROPPED: "dropped",
                 Status.COLLISION: "collision (several lanes wrote it)"}
# ... and the tile-space picture's own colours; padding regions are drawn at REGION_OPACITY
PALETTE = {"inside": "#e3e7ee", "tile_line": "#37474f", "element_line": "#ffffff", "tile": "#000000",
           "hover": "#d81b60", "dropped": "#9e9e9e",
           "UNDETERMINED": "#e57373", "ZERO": "#ffd54f", "NEG_ZERO": "#ffb74d", "NAN": "#ba68c8",
           "POS_INF": "#4db6ac", "NEG_INF": "#81c784"}
PADDING_TEXT = {"UNDETERMINED": "undetermined (reads 0)", "ZERO": "0", "NEG_ZERO": "-0.0",
                "NAN": "NaN", "POS_INF": "+inf", "NEG_INF": "-inf"}
REGION_OPACITY = 0.45
# warps in turn (a block of more warps reuses them), each lighter towards its last thread by up to LANE_FADE
WARP_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
LANE_FADE = 0.55
MAX_W, MAX_H, MAX_CELL = 720, 520, 28     # the drawing area in pixels, and the biggest cell
MIN_CELL = 6                              # bigger arrays are drawn zoomed on the block's tile


# ---- reading a load/store event -------------------------------------------------------------------

def normalize_order(order, ndim: int) -> tuple[int, ...]:
    if order == "C":
        return tuple(range(ndim))
    if order == "F":
        return tuple(reversed(range(ndim)))
    return tuple(int(a) % ndim for a in order)


def tile_geometry(coords: np.ndarray, ndim: int):
    """(index, tile shape, order) in the op's tile space, read back from one block's lane coordinates
    (`coords`: (*tile shape, ndim), as the trace records them)."""
    shape = coords.shape[:-1]
    origin = coords[(0,) * len(shape)]
    order = [None] * len(shape)
    for k, n in enumerate(shape):
        if n > 1:   # tile axis k walks the array axis along which its first step moves
            step = coords[(0,) * k + (1,) + (0,) * (len(shape) - k - 1)] - origin
            order[k] = int(np.argmax(np.abs(step)))
    rest = iter(sorted(set(range(ndim)) - {o for o in order if o is not None}))
    order = tuple(o if o is not None else next(rest) for o in order)
    box = [0] * ndim
    for k, n in enumerate(shape):
        box[order[k]] = n
    index = tuple(int(origin[order[k]] // box[order[k]]) for k in range(len(shape)))
    return index, tuple(int(n) for n in shape), order


def padding_mode_of(source: str) -> str:
    """The padding_mode written in an op's source line, for version 1 traces (which do not record
    it); the default UNDETERMINED when the line names none."""
    m = re.search(r"padding_mode\s*=\s*(?:[\w.]*\.)?(\w+)", source)
    return m.group(1) if m and m.group(1) in MODES else "UNDETERMINED"


def padding_text(value) -> str:
    """A recorded padding value as the legend and the hover show it: NaN, +inf, -0.0, 7, True."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+inf" if value > 0 else "-inf"
        return "-0.0" if value == 0 and math.copysign(1, value) < 0 else f"{value:.6g}"
    return str(value)


def _call_text(array: str, index, shape, order, mode) -> str:
    tup = lambda t: "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"
    order_text = "" if order == tuple(range(len(order))) else \
        ', order="F"' if order == tuple(reversed(range(len(order)))) else f", order={tup(order)}"
    return f"ct.load({array}, {tup(index)}, {tup(shape)}{order_text}, padding_mode=ct.PaddingMode.{mode})"


# ---- the probe: a one-block load through the interpreter ----------------------------------------

PROBE_PADDINGS = tuple(ct.PaddingMode)


@ct.kernel
def tile_space_probe(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int],
                     O0: ct.Constant[int], O1: ct.Constant[int], PAD: ct.Constant[int], i0, i1):
    t = ct.load(x, (i0, i1)[:N], (S0, S1)[:N], order=(O0, O1)[:N], padding_mode=PROBE_PADDINGS[PAD])
    ct.store(out, (0, 0)[:N], t)


def probe(array_shape, tile_shape, index, order="C", padding_mode="ZERO"):
    """The trace event of `ct.load(x, index, tile_shape, order=order, padding_mode=padding_mode)` on an
    array of `array_shape`, run by the interpreter in a one-block kernel."""
    nd = len(array_shape)
    perm = normalize_order(order, nd)
    pad = lambda t, fill: tuple(int(v) for v in t) + (fill,) * (2 - nd)
    x = np.zeros(tuple(array_shape), np.uint8)
    out = np.zeros(tuple(tile_shape), np.uint8)
    trace = interpret(tile_space_probe, (1,), (x, out, nd, *pad(tile_shape, 1), *pad(perm, 0),
                                         MODES.index(padding_mode), *pad(index, 0)), trace=True)
    # the value the probe's uint8 array pads with says nothing about the user's dtype: describe the mode
    return dataclasses.replace(trace.by_op("load")[0], padding_value=None)


# ---- the picture ---------------------------------------------------------------------------------

def _window(a: int, b: int, lo: int, hi: int, box: int, cap: int) -> tuple[int, int]:
    """The drawn range [start, end) of one axis: all of [lo, hi) when it fits in `cap` elements, else
    the block's lanes [a, b) with as many whole tiles on each side as fit (a zoom on the block)."""
    if hi - lo <= cap:
        return lo, hi
    side = max(0, cap - (b - a)) // 2 // box * box
    start, end = max(lo, a - side), min(hi, b + side)
    if start == lo:
        end = min(hi, max(end, lo + max(cap, b - lo) // box * box))
    elif end == hi:
        start = max(lo, min(start, hi - max(cap, hi - a) // box * box))
    return start, end


def _slice_of(array_shape, coords, status):
    """A 3-D-or-more access drawn as the 2-D slice (last two axes) where the block's tile starts:
    (lane coordinates, their statuses, lane numbers in the whole tile, the leading index)."""
    lanes = coords.reshape(-1, len(array_shape)).astype(np.int64)
    lead = lanes[0, :-2]
    mine = (lanes[:, :-2] == lead).all(axis=1)
    return lanes[mine][:, -2:], status.ravel()[mine], np.nonzero(mine)[0], tuple(int(v) for v in lead)


def _as_2d(array_shape, coords, status, box):
    """(shape, tile box, lane coordinates, statuses, lane numbers, leading index) drawn in 2-D: a 1-D
    array is one row, a 3-D-or-more array the slice of its last two axes where the tile starts."""
    n = status.size
    if len(array_shape) == 1:
        lanes = np.stack([np.zeros(n, np.int64), coords.reshape(-1).astype(np.int64)], 1)
        return (1, *array_shape), [1, *box], lanes, status.ravel(), np.arange(n), ()
    if len(array_shape) == 2:
        return array_shape, list(box), coords.reshape(-1, 2).astype(np.int64), status.ravel(), np.arange(n), ()
    return (array_shape[-2:], list(box[-2:]), *_slice_of(array_shape, coords, status))


def warp_fill(warp: int, lane: int) -> str:
    """The colour of thread `lane` of `warp`: the warp's colour, lighter towards lane 31."""
    base = np.array(rgb_of(WARP_COLOURS[warp % len(WARP_COLOURS)]), float)
    return hex_colour(base + (255 - base) * LANE_FADE * lane / (WARP - 1))


def _warp_layout(access, event, tile_shape, order, lane_ids, lane_status) -> dict:
    """Which thread of the generated code moves each drawn lane, and what the op's requests cost
    (`access`: profile.access's AccessReport of the trace the event comes from)."""
    g = next((g for g in access.global_ops if (g.op, g.array, g.line) == (event.op, event.array, event.line)), None)
    if g is None:
        raise ValueError(f"the access report of {access.kernel} has no {event.op} of {event.array} on line "
                         f"{event.line}: analyze the trace the event comes from")
    thread = tile_threads(tile_shape, order, access.threads, access.vec).reshape(-1)[lane_ids]
    warps = np.unique(thread[np.isin(lane_status, TOUCHING)] // WARP).tolist()
    sharing = [[w for w in warps if w % len(WARP_COLOURS) == k] for k in range(len(WARP_COLOURS))]
    legend = [{"label": ("warps " if len(ws) > 1 else "warp ") + ", ".join(map(str, ws)), "colour": colour}
              for ws, colour in zip(sharing, WARP_COLOURS) if ws]
    about = (f"coloured by warp of {access.threads} threads (lighter: later lanes; numbers: threads), "
             f"{g.sectors_per_request:.2f} sectors/request")
    return {"thread": thread.astype(np.int32), "legend": legend, "about": about,
            "info": {"threads": access.threads, "vec": access.vec, "sectors_per_request": g.sectors_per_request,
                     "warp_sectors_per_request": [s / r if r else 0.0
                                                  for s, r in zip(g.warp_sectors, g.warp_requests)]}}


def tile_space_data(event, array_shape, *, padding_mode=None, values=None, title=None, access=None) -> dict:
    """The figure of one block's `load`/`store` (`event`: the lanes of that block) on an array of
    `array_shape`: pixel geometry, tile-boundary lines, region rectangles (inside parts of the array
    and the padding parts of edge tiles), the block's lanes with statuses, the legend and,
    optionally, the array's values for hover read-outs. The padding is the event's recorded
    padding_mode and value; `padding_mode` names it where the event has none (a version 1 trace),
    UNDETERMINED by default. `access` (profile.access's AccessReport of the same trace) colours the
    lanes that reach memory by the warp and thread that move them (`lane_thread`, `warps`).

    Any size draws: an array too big for cells of MIN_CELL pixels is shown zoomed on the block's
    tile (the window from `lo`, `ext` elements, in whole tiles around it), and a 3-D-or-more array
    as the 2-D slice of its last two axes where the block's tile starts."""
    array_shape = tuple(int(d) for d in array_shape)
    nd = len(array_shape)
    if nd == 0:
        raise ValueError(f"the tile space view draws arrays of 1 or more axes; {event.array} is 0-d")
    if event.op not in ("load", "store"):
        raise ValueError(f"the tile space view draws load and store events, not {event.op}")
    padding_mode = event.padding_mode or padding_mode or "UNDETERMINED"
    if padding_mode not in MODES:
        raise ValueError(f"padding_mode must be one of {', '.join(MODES)}, not {padding_mode!r}")
    reads = PADDING_TEXT[padding_mode] if event.padding_value is None else padding_text(event.padding_value)
    coords, status = event.coords[0], event.status[0]
    if coords.shape[-1] != nd:
        raise ValueError(f"the {event.op} of {event.array} indexes {coords.shape[-1]}-D coordinates, "
                         f"not an array of shape {array_shape}")
    index, tile_shape, order = tile_geometry(coords, nd)
    box = [0] * nd
    for k, n in enumerate(tile_shape):
        box[order[k]] = n
    shape2, box2, lanes2, lane_status, lane_ids, lead = _as_2d(array_shape, coords, status, box)
    tiles = [-(-n // t) for n, t in zip(shape2, box2)]
    grid_hi = [t * b for t, b in zip(tiles, box2)]
    full_lo = np.minimum(0, lanes2.min(axis=0))
    full_hi = np.maximum(grid_hi, lanes2.max(axis=0) + 1)
    room = (MAX_H, MAX_W if nd >= 2 else MAX_W + 200)
    window = [_window(int(lanes2[:, d].min()), int(lanes2[:, d].max()) + 1, int(full_lo[d]), int(full_hi[d]),
                      box2[d], room[d] // MIN_CELL) for d in range(2)]
    lo, hi = np.array([w[0] for w in window]), np.array([w[1] for w in window])
    ext = hi - lo
    cell = float(min(MAX_CELL, room[1] / ext[1], room[0] / ext[0]))
    cell = math.floor(cell * 100) / 100 or cell
    x0, y0 = PAD + 44, TITLE_H + 2 * 18 + 22      # room for the title, two lines and the column ruler

    def px(r, c):
        return x0 + (np.asarray(c) - lo[1]) * cell, y0 + (np.asarray(r) - lo[0]) * cell

    def rect(r0, c0, r1, c1):   # [x, y, w, h] of elements [r0, r1) x [c0, c1) within the window, or None
        r0, c0, r1, c1 = max(r0, lo[0]), max(c0, lo[1]), min(r1, hi[0]), min(c1, hi[1])
        return None if r0 >= r1 or c0 >= c1 else [*px(r0, c0), (c1 - c0) * cell, (r1 - r0) * cell]

    inside = rect(0, 0, *shape2)
    regions = [inside + [0, -1, -1]] if inside else []
    # an edge tile's padding, within the window: the rows below the array's end, then the columns right of it
    shown = [range(max(0, lo[d] // box2[d]), min(tiles[d], -(-hi[d] // box2[d]))) for d in range(2)]
    for tr in shown[0]:
        for tc in shown[1]:
            r0, c0 = tr * box2[0], tc * box2[1]
            r1, c1 = min(r0 + box2[0], shape2[0]), min(c0 + box2[1], shape2[1])
            below = rect(r1, c0, r0 + box2[0], c0 + box2[1]) if r1 < r0 + box2[0] else None
            right = rect(r0, c1, r1, c0 + box2[1]) if c1 < c0 + box2[1] else None
            regions += [area + [1, tr, tc] for area in (below, right) if area]
    cols = (max(0, lo[1]), min(grid_hi[1], hi[1]))
    rows = (max(0, lo[0]), min(grid_hi[0], hi[0]))
    lines = [[*px(r, cols[0]), *px(r, cols[1])] for r in range(0, grid_hi[0] + 1, box2[0]) if lo[0] <= r <= hi[0]] + \
        [[*px(rows[0], c), *px(rows[1], c)] for c in range(0, grid_hi[1] + 1, box2[1]) if lo[1] <= c <= hi[1]]
    if (box2[0] * cell < 3 or box2[1] * cell < 3) and len(lines) > 2:   # too fine to see: the outline only
        lines = [lines[0], lines[-1]]
    fine = []
    if cell >= 8:
        fine = [[*px(r, lo[1]), *px(r, hi[1])] for r in range(lo[0] + 1, hi[0])] + \
            [[*px(lo[0], c), *px(hi[0], c)] for c in range(lo[1] + 1, hi[1])]
    store = event.op == "store"
    lane_x, lane_y = px(lanes2[:, 0], lanes2[:, 1])
    present = [Status(int(s)) for s in np.unique(status)]
    outside = "dropped" if store else padding_mode
    legend = [{"label": "array (inside)", "colour": PALETTE["inside"]}]
    if any(r[4] == 1 for r in regions) or Status.PADDED in present or Status.DROPPED in present:
        legend.append({"label": "outside the array: a store drops it" if store else
                       f"padding ({padding_mode}): reads {reads}", "colour": PALETTE[outside]})
    warps = None if access is None else _warp_layout(access, event, tile_shape, order, lane_ids, lane_status)
    if warps is not None:   # lanes that reach memory take their warp's colour; the others keep their status's
        present = [s for s in present if s not in TOUCHING]
        legend += warps["legend"]
    legend += [{"label": f"block's tile: {STATUS_LABELS[s]}",
                "colour": PALETTE[padding_mode] if s == Status.PADDED else STATUS_COLOURS[s]} for s in present]
    if title is None:
        title = clip(f"{event.op} {event.array}, line {event.line}: {event.source.strip()}", TITLE_CHARS)
    array_tile = tuple(int(v) // b for v, b in zip(coords.reshape(-1, nd)[0], box))
    counts = " x ".join(str(-(-n // b)) for n, b in zip(array_shape, box))
    about = [f"block's tile = array tile {array_tile}",
             f"{int(np.isin(status, (Status.LOADED, Status.STORED)).sum())} of {status.size} lanes inside"]
    zoomed = bool(lead) or (lo != full_lo).any() or (hi != full_hi).any()
    if zoomed:   # the part of the array drawn, as an index expression
        about.append("shown: " + event.array + "[" + ", ".join(
            [*map(str, lead), *(f"{a}:{b}" for a, b in zip(lo, hi))][-nd:]) + "]")
    if warps is not None:
        about.append(warps["about"])
    texts = [text(PAD, 16, title, size=13, weight="bold"),
             text(PAD, TITLE_H + 14, f"{event.array} {array_shape}: {counts} tiles of {tuple(box)} in array "
                  f"order; tile space order {order}, tile {index} of shape {tile_shape}"),
             text(PAD, TITLE_H + 32, "; ".join(about))]
    label_w = 7 * len(str(int(hi[1]))) + 6   # a column number at the smallest font, and a gap
    col_step = box2[1] if box2[1] * cell >= label_w else _pow2_at_least(math.ceil(label_w / cell))
    texts += [text(px(0, c)[0] + 1, y0 - 4, c, size=MIN_FONT)
              for c in range(lo[1] - lo[1] % col_step, int(hi[1]), col_step) if c >= lo[1]][:64]
    if nd >= 2:
        row_step = box2[0] if box2[0] * cell >= 14 else _pow2_at_least(math.ceil(14 / cell))
        texts += [text(x0 - 4, px(r, 0)[1] + min(cell, 14) / 2 + 4, r, size=MIN_FONT, anchor="end")
                  for r in range(lo[0] - lo[0] % row_step, int(hi[0]), row_step) if r >= lo[0]][:64]
    width = max(x0 + ext[1] * cell + PAD, PAD + 7 * len(title), PAD + 6.5 * len(texts[1]["text"]),
                PAD + 6.5 * len(texts[2]["text"]), legend_width(legend))
    data = {"title": title, "op": event.op, "array": event.array, "ndim": nd, "array_shape": list(array_shape),
            "shape2": list(shape2), "box": box, "box2": box2, "tiles2": tiles, "index": list(index),
            "tile_shape": list(tile_shape), "order": list(order), "lead": list(lead), "padding_mode": padding_mode,
            "padding_text": reads,
            "cell": cell, "x0": x0, "y0": y0, "lo": [int(v) for v in lo], "ext": [int(v) for v in ext],
            "width": math.ceil(width), "height": math.ceil(y0 + ext[0] * cell + PAD),
            "texts": texts, "regions": np.array(regions, np.float32).reshape(-1, 7),
            "lines": np.array(lines, np.float32).reshape(-1, 4), "fine": np.array(fine, np.float32).reshape(-1, 4),
            "lane_x": lane_x.astype(np.float32), "lane_y": lane_y.astype(np.float32),
            "lane_r": lanes2[:, 0].astype(np.int32), "lane_c": lanes2[:, 1].astype(np.int32),
            "lane_id": lane_ids.astype(np.int32), "lane_status": lane_status.astype(np.uint8),
            "palette": PALETTE, "status_colours": {int(s): c for s, c in STATUS_COLOURS.items()},
            "status_labels": {int(s): t for s, t in STATUS_LABELS.items()}, "region_opacity": REGION_OPACITY,
            "legend": legend, "values": None, "values_lo": [0, 0], "dtype": None,
            "tile_space_dims": [array_shape[o] for o in order],
            "lane_thread": None if warps is None else warps["thread"], "warps": None if warps is None else warps["info"]}
    if values is not None:
        values = np.asarray(values)
        if values.shape != array_shape:
            raise ValueError(f"values has shape {values.shape}, the array {array_shape}")
        # the window's values only: the hover reads what is drawn, and a big array stays at home
        r0, c0 = max(0, lo[0]), max(0, lo[1])
        drawn = values[lead].reshape(shape2)[r0:max(r0, hi[0]), c0:max(c0, hi[1])]
        data["values"], data["values_lo"], data["dtype"] = drawn, [int(r0), int(c0)], str(values.dtype)
    return data


# ---- the picture (tile_space.js shows it and draws the hover on top) ------------------------------

def tile_space_svg(data: dict) -> str:
    pal, cell = data["palette"], data["cell"]
    outside = "dropped" if data["op"] == "store" else data["padding_mode"]
    body = [svg_text(t) for t in data["texts"]]
    for x, y, w, h, kind, tr, tc in data["regions"]:
        if kind == 0:
            body.append(f'<rect class="inside" x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(h)}" '
                        f'fill="{pal["inside"]}"/>')
        else:
            body.append(f'<rect class="padding" data-tile="{int(tr)},{int(tc)}" x="{fmt(x)}" y="{fmt(y)}" '
                        f'width="{fmt(w)}" height="{fmt(h)}" fill="{pal[outside]}" '
                        f'fill-opacity="{data["region_opacity"]}"/>')
    for cls, lines, colour, width in (("fine", data["fine"], pal["element_line"], 1),
                                      ("tile-line", data["lines"], pal["tile_line"], 1.5)):
        body.append(f'<g class="{cls}" stroke="{colour}" stroke-width="{width}">')
        body += [f'<line x1="{fmt(a)}" y1="{fmt(b)}" x2="{fmt(c)}" y2="{fmt(d)}"/>' for a, b, c, d in lines]
        body.append("</g>")
    font = max(MIN_FONT, int(cell * 0.42))
    threads = data["lane_thread"]
    widest = None if threads is None else len(str(int(threads.max())))
    body.append('<g class="lanes" stroke="white" stroke-width="0.5">')
    for i, (x, y, s, k) in enumerate(zip(data["lane_x"], data["lane_y"], data["lane_status"], data["lane_id"])):
        colour = pal[outside] if s == Status.PADDED else data["status_colours"][int(s)]
        warp = ""
        if threads is not None:   # the thread that moves the lane: its warp's colour, and its number
            k = int(threads[i])
            warp = f' data-warp="{k // WARP}" data-thread="{k}"'
            if s in TOUCHING:
                colour = warp_fill(k // WARP, k % WARP)
        body.append(f'<rect class="lane" data-status="{Status(int(s)).name}" data-lane="{data["lane_id"][i]}"{warp} '
                    f'x="{fmt(x)}" y="{fmt(y)}" width="{fmt(cell)}" height="{fmt(cell)}" fill="{colour}"/>')
        # a number only where it fits its cell legibly; thread numbers all or none (a few would read as a pattern)
        if (len(str(k)) if threads is None else widest) * font * 0.6 <= cell - 2:
            body.append(f'<text x="{fmt(x + cell / 2)}" y="{fmt(y + cell / 2 + font * 0.35)}" font-size="{font}" '
                        f'text-anchor="middle" fill="{ink_of(colour)}" stroke="none">{k}</text>')
    body.append("</g>")
    xs, ys = data["lane_x"], data["lane_y"]
    body.append(f'<rect class="tile" x="{fmt(xs.min())}" y="{fmt(ys.min())}" width="{fmt(xs.max() - xs.min() + cell)}" '
                f'height="{fmt(ys.max() - ys.min() + cell)}" fill="none" stroke="{pal["tile"]}" stroke-width="2.5"/>')
    body += legend_svg(data["legend"], PAD, data["height"] + 2)
    return svg_document(data["width"], data["height"] + 22, body)


# ---- the view ------------------------------------------------------------------------------------

def _pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class TileSpaceView(SvgView):
    """An array's tile space for one load/store with the block's tile highlighted; sliders over the
    tile index and tile shape re-run a one-block load through the interpreter."""

    _esm = static("tile_space.js")
    data = Data()
    index = traitlets.List().tag(sync=True)        # the tile index, in the tile space's axis order
    tile_shape = traitlets.List().tag(sync=True)   # powers of two, in the tile space's axis order
    selected = traitlets.Dict().tag(sync=True)     # {"array", "index"} of the clicked element, {} none

    def __init__(self, array_shape=None, tile_shape=None, index=None, order="C", padding_mode="ZERO",
                 values=None, *, data=None, **kwargs):
        if data is None:
            if array_shape is None or tile_shape is None:
                raise ValueError("TileSpaceView needs array_shape and tile_shape (or use TileSpaceView.from_trace)")
            nd = len(array_shape)
            if nd not in (1, 2):
                raise ValueError(f"the tile space view draws 1-D and 2-D arrays, not shape {tuple(array_shape)}")
            if len(tile_shape) != nd:
                raise ValueError(f"tile_shape {tuple(tile_shape)} and array_shape {tuple(array_shape)} differ in rank")
            index = tuple(index) if index is not None else (0,) * nd
            data = self._probe_data(array_shape, tile_shape, index, order, padding_mode, values)
        self._array_shape, self._order = tuple(data["array_shape"]), tuple(data["order"])
        self._padding_mode, self._values = data["padding_mode"], values
        super().__init__(data=data, index=list(data["index"]), tile_shape=list(data["tile_shape"]), **kwargs)
        self.observe(self._recompute, names=["index", "tile_shape"])

    @classmethod
    def from_trace(cls, trace, op: str = "load", array: str = "a", block=(0, 0), values=None, *,
                   line: int | None = None, padding_mode: str | None = None, access=None) -> TileSpaceView:
        """The `op` ("load" or "store") of `array` executed by `block` (the first such op, or the one on
        `line`). The padding is the trace's record of the load; for a version 1 trace (no record) it
        is `padding_mode`, or what the op's source line says. values: the array's contents, for
        hover read-outs. access: profile.access's report of this trace, to colour the lanes by warp."""
        events = [e for e in trace.by_array(array) if e.op == op and (line is None or e.line == line)]
        if not events:
            raise ValueError(f"the trace of {trace.kernel} has no {op} of {array!r} (it has "
                             f"{', '.join(sorted({f'{e.op} {e.array}' for e in trace.events if e.array}))})")
        event = events[0].for_block(block)
        if not len(event.blocks):
            raise ValueError(f"{block_text(block, trace.grid)} did not execute the {op} of {array} on line "
                             f"{events[0].line}")
        mode = event.padding_mode or padding_mode or padding_mode_of(event.source)
        return cls(data=tile_space_data(event, trace.arrays[array]["shape"], padding_mode=mode, values=values,
                                        access=access), values=values)

    @staticmethod
    def _probe_data(array_shape, tile_shape, index, order, padding_mode, values):
        for n in tile_shape:
            if n < 1 or n & (n - 1):
                raise ValueError(f"tile shapes are powers of two, not {tuple(tile_shape)}")
        event = probe(array_shape, tile_shape, index, order, padding_mode)
        title = "tile space: " + _call_text("x", tuple(index), tuple(tile_shape),
                                            normalize_order(order, len(array_shape)), padding_mode)
        return tile_space_data(event, array_shape, padding_mode=padding_mode, values=values, title=title)

    def slider_ranges(self) -> dict:
        """What the sliders offer: tile indices 0..tiles-1 and tile shapes 1..the next power of two
        at least the array's extent, per tile-space axis."""
        dims = [self._array_shape[o] for o in self._order]
        return {"index_max": [max(0, -(-d // t) - 1) for d, t in zip(dims, self.tile_shape)],
                "shape_max": [_pow2_at_least(d) for d in dims]}

    def _recompute(self, change):
        shape = [int(t) for t in self.tile_shape]
        dims = [self._array_shape[o] for o in self._order]
        index = [min(int(i), max(0, -(-d // t) - 1)) for i, d, t in zip(self.index, dims, shape)]
        if index != list(self.index):
            self.index = index      # a bigger tile shape has fewer tiles; this call recomputes
            return
        self.data = self._probe_data(self._array_shape, shape, index, self._order, self._padding_mode, self._values)

    def to_svg(self) -> str:
        return tile_space_svg(self.data)
