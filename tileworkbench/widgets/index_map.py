"""Gather/scatter index map: one block's index tiles, mask and result (or values) side by side,
the array below, and a line from every lane to the element it read or wrote.

Every lane is coloured by its outcome (the trace's Status): loaded/stored, masked off, out of
bounds (negative indices included; they read padding_value or are dropped), and for a scatter,
collisions where several lanes wrote one element. Out-of-bounds lanes point at a dashed ghost
cell just outside the array's edge. Hovering a lane (or setting `view.lane`) highlights it, its
target and, for a collision, every lane that wrote the same element.

    >>> view = IndexMapView.from_trace(run(embed, (4,), (table, ids, out), trace=True), op="gather",
    ...                                block=(1,), values=table_before)

Arrays over 64 elements along an axis are drawn in bins of several elements (a lane points at
its bin), and a 1-D array of more than 16 (elements or bins) in rows of 16; the mask is not recorded by the trace, it is read back from the MASKED lanes. What a
masked or out-of-bounds gather lane reads is the trace's recorded padding_value (per lane when
it differs between lanes).
"""
from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape

import numpy as np
import traitlets

from ..arguments import block_text
from ..interp import Status
from ..ir.ops import OPS, ViewKind
from ._base import Data, SvgView, static
from .svg import (
    LABEL_H,
    MIN_FONT,
    PAD,
    TITLE_CHARS,
    TITLE_H,
    clip,
    fmt,
    ink_of,
    legend_svg,
    legend_width,
    svg_document,
    svg_text,
    text,
)
from .tile_space import STATUS_COLOURS, STATUS_LABELS
from .transform import as_slices, cell_size, slice_cells

ARRAY_CAP = 64          # the most array cells drawn along an axis; bigger arrays are binned
ROW_CELLS = 16          # a longer 1-D array is drawn in rows of this many cells: big enough for their numbers
ROW_W = 1100            # the widest the row of lane panels may get, in pixels
MAX_LINES = 64          # tiles with more lanes draw no lines until one is hovered
LINK_ROOM = 90          # pixels between the lanes and the array where lines are drawn: they fan out steeply
LINK_STYLE = 'stroke-width="1.2" stroke-opacity="0.85"'   # as legible as the cells' own outlines
PALETTE = {"untouched": "#eceff1", "read": "#90caf9", "mask_on": "#cfd8dc", "line": "#546e7a",
           "hover": "#d81b60", "ghost": STATUS_COLOURS[Status.OUT_OF_BOUNDS]}


def padding_value_of(source: str):
    """The padding_value written in a gather's source line, for version 1 traces (which do not
    record it); 0, the default, when the line names none; None for a name the picture cannot
    evaluate."""
    m = re.search(r"padding_value\s*=\s*([-+]?[\w.]+)", source)
    try:
        return float(m.group(1)) if m else 0
    except ValueError:
        return None


def _label(v) -> str:
    v = v.item() if isinstance(v, np.generic) else v
    return str(v) if isinstance(v, (int, bool)) else f"{v:.4g}"


def _padding_labels(event, padding_value, n: int) -> list[str]:
    """What each lane of a gather reads where it pads: the trace's record, else `padding_value`."""
    if event.padding_value is not None:
        return [_label(v) for v in event.padding_of_lanes()[0].ravel()]
    return ["?" if padding_value is None else _label(padding_value)] * n


def index_map_data(event, array_shape, *, values=None, padding_value=0, grid=None) -> dict:
    """The figure of one block's gather/scatter (`event`: the lanes of that block) on an array of
    `array_shape` (1-D or 2-D). Lane panels share one layout (`lane_x`, `lane_y` per lane, offset
    by each panel's `x`); every lane has its flat target element (`elem`, -1 when out of bounds),
    target cell (`target`) and the centre of what it points at (`tx`, `ty`: an array cell, a
    ghost cell outside the edge, or -1 for a masked lane). A gather's padded lanes read the
    event's recorded padding value; `padding_value` stands in where it has none (version 1)."""
    array_shape = tuple(int(d) for d in array_shape)
    nd = len(array_shape)
    if nd == 0:
        raise ValueError(f"the index map draws arrays of 1 or more axes; {event.array} is 0-d")
    if OPS[event.op].view is not ViewKind.INDEX_MAP:
        raise ValueError(f"the index map draws gathers, scatters and advanced indexing, not {event.op}")
    scatter = OPS[event.op].access == "write"
    status = event.status[0].ravel().astype(np.uint8)
    coords = event.coords[0].reshape(-1, nd).astype(np.int64)
    n = len(status)
    inside = np.isin(status, (Status.LOADED, Status.STORED, Status.COLLISION))
    elem = np.full(n, -1, np.int64)
    elem[inside] = np.ravel_multi_index(tuple(coords[inside].T), array_shape)

    # lane panels, in a row
    tile_shape = event.shape
    view = as_slices(tile_shape)
    on = status != Status.MASKED
    # the mask panel where the op has one (its line passes one, or lanes are masked off)
    masked = "mask" in event.source or not on.all()
    names = [f"indices[{d}]" if nd > 1 else "indices" for d in range(nd)] + ["mask"] * masked + \
        ["values" if scatter else "result"]

    def span(c):
        return view[0] * view[2] * c + (view[0] - 1) * PAD
    cell = cell_size(view[1], view[2])
    while cell > 4 and len(names) * (span(cell) + 2 * PAD) > ROW_W:
        cell -= 1
    top = TITLE_H + 2 * 16 + LABEL_H
    lane_x, lane_y, w, h = slice_cells(view, cell, 0, top)
    if values is not None and values.shape != array_shape:
        raise ValueError(f"values has shape {values.shape}, the array {array_shape}")
    if scatter:
        result, pads = [""] * n, None
    else:
        pads = _padding_labels(event, padding_value, n)
        result = [(_label(values[tuple(c)]) if values is not None else "") if s == Status.LOADED else pad
                  for c, s, pad in zip(coords, status, pads)]
    fills = [STATUS_COLOURS[Status(int(s))] for s in status]
    mask_fills = [PALETTE["mask_on"] if o else STATUS_COLOURS[Status.MASKED] for o in on]
    panels, x = [], PAD
    for k, name in enumerate(names):
        if k < nd:
            labels, fill = [str(int(v)) for v in coords[:, k]], fills
        elif name == "mask":
            labels, fill = ["1" if o else "0" for o in on], mask_fills
        else:
            labels, fill = result, fills
        panels.append({"name": name, "x": x, "labels": labels, "fill": fill})
        x += w + 2 * PAD

    # the array below, binned when big, with a ring of ghost cells when lanes go out of bounds; a 1-D
    # array is one row, a 3-D-or-more one has a row per index of its leading axes
    shape2 = (math.prod(array_shape[:-1]), array_shape[-1])
    lead_strides = np.array([math.prod(array_shape[k + 1:-1]) for k in range(nd - 1)], np.int64)
    coords2 = np.stack([coords[:, :-1] @ lead_strides, coords[:, -1]], 1)
    factors = [-(-d // ARRAY_CAP) for d in shape2]
    binned = [-(-d // f) for d, f in zip(shape2, factors)]
    oob = status == Status.OUT_OF_BOUNDS
    ring = 1 if oob.any() else 0
    cells = binned[0] * binned[1]
    per_row = ROW_CELLS if nd == 1 and binned[1] > ROW_CELLS else binned[1]
    rows_drawn = -(-cells // per_row)
    acell = min(cell_size(rows_drawn, per_row), max(4, (ROW_W - 2 * PAD) // (per_row + 2 * ring)))
    ax0 = PAD + ring * acell + 30
    ay0 = top + h + 2 * PAD + LABEL_H + ring * acell + (LINK_ROOM if n <= MAX_LINES else 0)
    bins = np.stack([np.floor_divide(coords2[:, d], factors[d]) for d in range(2)], 1)
    bins = np.stack([np.clip(bins[:, d], -1, binned[d]) for d in range(2)], 1)
    if per_row < binned[1]:   # a 1-D array in rows: bin b at (b // per_row, b % per_row); before the start, left of it
        b = bins[:, 1]
        bins = np.stack([np.where(b < 0, 0, b // per_row), np.where(b < 0, -1, b % per_row)], 1)
    target = np.where(inside, bins[:, 0] * per_row + bins[:, 1], -1)
    tx = np.where(on, ax0 + bins[:, 1] * acell + acell / 2, -1).astype(np.float32)
    ty = np.where(on, ay0 + bins[:, 0] * acell + acell / 2, -1).astype(np.float32)
    hits = np.bincount(target[inside], minlength=cells)
    collided = np.zeros_like(hits)
    np.add.at(collided, target[status == Status.COLLISION], 1)
    cell_fill = np.where(hits == 0, 0, np.where(collided > 0, 3, 2 if scatter else 1)).astype(np.uint8)
    fill_names = [PALETTE["untouched"], PALETTE["read"], STATUS_COLOURS[Status.STORED],
                  STATUS_COLOURS[Status.COLLISION]]
    ghosts = np.unique(bins[oob], axis=0) if oob.any() else np.zeros((0, 2), np.int64)
    rr, cc = np.divmod(np.arange(cells), per_row)
    array_labels = None
    if values is not None and factors == [1, 1] and acell >= 18:
        array_labels = [_label(v) for v in np.asarray(values).ravel()]

    counts = {STATUS_LABELS[Status(int(s))]: int((status == s).sum()) for s in np.unique(status)}
    title = clip(f"{event.op} {event.array}, line {event.line}: {event.source.strip()}", TITLE_CHARS)
    block = tuple(int(b) for b in event.blocks[0])   # without the grid: written to its last nonzero axis
    texts = [text(PAD, 16, title, size=13, weight="bold"),
             text(PAD, TITLE_H + 14, f"{block_text(block, grid if grid is not None else np.add(block, 1))}: {n} lanes "
                  f"of a {tuple(tile_shape)} tile into {event.array} {array_shape} \u2014 " + ", ".join(f"{v} {k}" for k, v in counts.items()), size=11)]
    texts += [text(p["x"], top - 6, p["name"], weight="bold") for p in panels]
    binning = "" if factors == [1, 1] else f" (bins of {' x '.join(map(str, factors[max(0, 2 - nd):]))} elements)"
    rows = f", a row per {event.array}[{', '.join('ijklmn'[:nd - 1])}, :]" if nd > 2 else ""
    wrapped = f", in rows of {per_row}" if per_row < binned[1] else ""
    texts.append(text(PAD, ay0 - ring * acell - 8, f"{event.array} {array_shape}{rows}{binning}{wrapped}",
                      weight="bold"))
    width = max(x, ax0 + (per_row + ring) * acell + PAD, PAD + 7 * len(title), PAD + 6 * len(texts[1]["text"]))
    present = [Status(int(s)) for s in np.unique(status)]
    padded = (Status.MASKED, Status.OUT_OF_BOUNDS)

    def reads(of):   # the distinct padding values the lanes of these statuses read, in lane order
        return list(dict.fromkeys(p for p, st in zip(pads, status) if st in of))
    legend = [{"label": STATUS_LABELS[s] + ((" (dropped)" if scatter else
                                             f" (reads padding_value {' / '.join(reads((s,)))})")
                                            if s in padded else ""),
               "colour": STATUS_COLOURS[s]} for s in present]
    legend += [{"label": "mask on", "colour": PALETTE["mask_on"]}] * masked
    legend += [{"label": "element written" if scatter else "element read", "colour": fill_names[2 if scatter else 1]},
               {"label": "untouched", "colour": PALETTE["untouched"]}]
    return {"title": title, "op": event.op, "array": event.array, "ndim": nd, "array_shape": list(array_shape),
            "tile_shape": list(tile_shape), "block": list(block), "cell": cell, "acell": acell,
            "width": math.ceil(width), "height": int(ay0 + (rows_drawn + ring) * acell + PAD),
            "texts": texts, "panels": panels, "lane_x": lane_x, "lane_y": lane_y, "panel_w": int(w),
            "status": status, "coords": coords.astype(np.int32), "elem": elem.astype(np.int32),
            "target": target.astype(np.int32), "tx": tx, "ty": ty,
            "ax0": ax0, "ay0": ay0, "factors": factors, "binned": binned, "shape2": list(shape2),
            "cell_x": (ax0 + cc * acell).astype(np.int32), "cell_y": (ay0 + rr * acell).astype(np.int32),
            "cell_fill": cell_fill.ravel(), "fill_names": fill_names, "array_labels": array_labels,
            "ghost_x": (ax0 + ghosts[:, 1] * acell).astype(np.int32), "ghost_y": (ay0 + ghosts[:, 0] * acell).astype(np.int32),
            "lines": n <= MAX_LINES, "palette": PALETTE,
            "status_labels": {int(s): t for s, t in STATUS_LABELS.items()}, "legend": legend,
            "padding_value": None if scatter or not reads(padded) else " / ".join(reads(padded))}


def partners(data: dict, lane: int) -> list[int]:
    """The lanes highlighted with `lane`: itself and every lane of the block writing (or reading)
    the same element."""
    elem = data["elem"]
    if lane < 0 or elem[lane] < 0:
        return [lane] if lane >= 0 else []
    return np.nonzero(elem == elem[lane])[0].tolist()


def index_map_svg(data: dict, lane: int = -1) -> str:
    """The picture, with `lane` and its partners highlighted (index_map.js highlights on hover the same
    way). Links end at the top edge of what they point at, under no label."""
    pal, cell, acell = data["palette"], data["cell"], data["acell"]
    body = [svg_text(t) for t in data["texts"]]
    font = max(MIN_FONT, int(cell * 0.45))
    for p in data["panels"]:
        body.append(f'<g class="panel" data-panel="{p["name"]}" stroke="white" stroke-width="1">')
        for i, (x, y) in enumerate(zip(data["lane_x"], data["lane_y"])):
            body.append(f'<rect class="lane" data-status="{Status(int(data["status"][i])).name}" data-lane="{i}" '
                        f'x="{p["x"] + x}" y="{y}" width="{cell}" height="{cell}" fill="{p["fill"][i]}"/>')
            if p["labels"][i] and len(p["labels"][i]) * font * 0.6 <= cell - 2:
                body.append(f'<text x="{p["x"] + x + cell // 2}" y="{y + cell // 2 + font // 3}" font-size="{font}" '
                            f'text-anchor="middle" stroke="none" pointer-events="none" '
                            f'fill="{ink_of(p["fill"][i])}">{escape(p["labels"][i])}</text>')
        body.append("</g>")
    result = data["panels"][-1]["x"]
    half = cell / 2
    if data["lines"]:
        body.append(f'<g class="links" stroke="{pal["line"]}" {LINK_STYLE} pointer-events="none">')
        body += [f'<line x1="{fmt(result + x + half)}" y1="{fmt(y + cell)}" x2="{fmt(tx)}" y2="{fmt(ty - acell / 2)}"/>'
                 for x, y, tx, ty in zip(data["lane_x"], data["lane_y"], data["tx"], data["ty"]) if tx >= 0]
        body.append("</g>")
    body.append('<g class="array" stroke="white" stroke-width="1">')
    afont = max(MIN_FONT, int(acell * 0.42))
    for i, (x, y, f) in enumerate(zip(data["cell_x"], data["cell_y"], data["cell_fill"])):
        colour = data["fill_names"][f]
        body.append(f'<rect class="element" data-cell="{i}" x="{x}" y="{y}" width="{acell}" height="{acell}" '
                    f'fill="{colour}"/>')
        if data["array_labels"] and len(data["array_labels"][i]) * afont * 0.6 <= acell - 2:
            body.append(f'<text x="{x + acell // 2}" y="{y + acell // 2 + afont // 3}" font-size="{afont}" '
                        f'text-anchor="middle" stroke="none" pointer-events="none" '
                        f'fill="{ink_of(colour)}">{escape(data["array_labels"][i])}</text>')
    body.append("</g>")
    body.append(f'<g class="ghosts" fill="none" stroke="{pal["ghost"]}" stroke-dasharray="3 2" pointer-events="none">')
    body += [f'<rect class="ghost" x="{x + 1}" y="{y + 1}" width="{acell - 2}" height="{acell - 2}"/>'
             for x, y in zip(data["ghost_x"], data["ghost_y"])]
    body.append("</g>")
    body.append(f'<g class="highlight" fill="none" stroke="{pal["hover"]}" stroke-width="2" pointer-events="none">')
    for i in partners(data, lane):
        x, y = data["lane_x"][i], data["lane_y"][i]
        body += [f'<rect x="{p["x"] + x + 1}" y="{y + 1}" width="{cell - 2}" height="{cell - 2}"/>'
                 for p in data["panels"]]
        if data["tx"][i] >= 0:
            body.append(f'<line x1="{fmt(result + x + half)}" y1="{fmt(y + cell)}" x2="{fmt(data["tx"][i])}" '
                        f'y2="{fmt(data["ty"][i] - acell / 2)}"/>')
            body.append(f'<rect x="{fmt(data["tx"][i] - acell / 2)}" y="{fmt(data["ty"][i] - acell / 2)}" '
                        f'width="{acell}" height="{acell}"/>')
    body.append("</g>")
    width = max(data["width"], legend_width(data["legend"]))
    body += legend_svg(data["legend"], PAD, data["height"] + 2)
    return svg_document(width, data["height"] + 22, body)


class IndexMapView(SvgView):
    """Where every lane of one block's gather/scatter went, coloured by outcome."""

    _esm = static("index_map.js")
    data = Data()
    lane = traitlets.Int(-1).tag(sync=True)    # the hovered lane (flat, in tile order), -1 none
    selected = traitlets.Dict().tag(sync=True)  # {"array", "index"} of a clicked lane's element, {} none

    @classmethod
    def from_trace(cls, trace, op: str = "gather", block=(0,), values=None, *, index: int = 0,
                   padding_value=None) -> IndexMapView:
        """The `index`-th `op` ("gather" or "scatter") of the trace, for one block. values: the
        array's contents before the launch (a gather's result labels). What masked and
        out-of-bounds gather lanes read is the trace's record; for a version 1 trace (no record)
        it is `padding_value`, or what the op's source line says."""
        events = trace.by_op(op)
        if not events:
            raise ValueError(f"the trace of {trace.kernel} has no {op} (it has "
                             f"{', '.join(sorted({e.op for e in trace.events}))})")
        event = events[index].for_block(block)
        if not len(event.blocks):
            raise ValueError(f"{block_text(block, trace.grid)} did not execute the {op} on line {events[index].line}")
        pad = padding_value if padding_value is not None else padding_value_of(event.source)
        return cls(data=index_map_data(event, trace.arrays[event.array]["shape"],
                                       values=None if values is None else np.asarray(values), padding_value=pad,
                                       grid=trace.grid))

    def to_svg(self) -> str:
        return index_map_svg(self.data, self.lane)
