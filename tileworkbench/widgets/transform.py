"""Transform panels: a shape op (or an ordered load) drawn before and after, every element tracked.

Each input element gets a colour from a map over its flat position (all operands numbered one
after the other), and each output element takes the colour of the element it came from, so the
pattern visibly moves. Hovering any cell lights up every cell with the same source: where it came
from and everywhere it went.

    >>> view = TransformView.of(lambda t: ct.permute(t, (2, 0, 1)), (4, 2, 2))
    >>> view.data["panels"][1]["text"].reshape(2, 4, 2)[0].tolist()
    [[0, 2], [4, 6], [8, 10], [12, 14]]

The picture (pixel positions, fills, labels, legend) is computed here once; the JS module and the
SVG export only draw it. `figure_svg` and the layout helpers are shared with the coverage view.
"""
from __future__ import annotations

import inspect
import math
import re

import numpy as np
import traitlets

import tileworkbench.tile as ct

from ..interp import Status
from ._base import Data, SvgView, static
from .svg import (
    DARK_INK,
    LABEL_H,
    LIGHT_INK,
    MIN_FONT,
    PAD,
    TITLE_CHARS,
    TITLE_H,
    clip,
    hex_colour,
    legend_svg,
    legend_width,
    light_ink,
    svg_document,
    svg_text,
    text,
    text_width,
)

ALIASES = {"transpose": "permute", "broadcast_to": "broadcast"}
SLICE_CAPS = (8, 32, 32)   # the most slices, rows and columns drawn; bigger tiles are sampled
# turbo (Google's rainbow map, perceptually ordered): neighbours differ, so a moved pattern shows
TURBO = np.array([[48, 18, 59], [70, 98, 215], [54, 170, 249], [26, 228, 182], [114, 254, 94],
                  [199, 239, 52], [250, 187, 57], [246, 107, 25], [202, 42, 4], [122, 4, 3]], float)
NO_SOURCE = (200, 200, 200)


# ---- shared drawing helpers (also used by coverage.py) --------------------------------------------

def as_slices(shape) -> tuple[int, int, int]:
    """(slices, rows, columns) of a shape: 1-D is one row, 3-D and up a row of 2-D slices."""
    shape = tuple(int(d) for d in shape) or (1,)
    if len(shape) == 1:
        return 1, 1, shape[0]
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def cell_size(rows: int, cols: int) -> int:
    """Pixels per cell: big enough for a label on small arrays, smaller as they grow."""
    side = max(rows, cols)
    return 30 if side <= 8 else 22 if side <= 16 else 14 if side <= 32 else 8


def slice_cells(view_shape, cell: int, x0: int, y0: int):
    """Top-left pixel of every cell of a (slices, rows, cols) grid in C order, slices side by side."""
    s, r, c = view_shape
    ss, rr, cc = np.meshgrid(np.arange(s), np.arange(r), np.arange(c), indexing="ij")
    cx = x0 + ss * (c * cell + PAD) + cc * cell
    cy = y0 + rr * cell
    width = s * c * cell + (s - 1) * PAD
    return cx.ravel().astype(np.int32), cy.ravel().astype(np.int32), width, r * cell


def slice_texts(view_shape, shape, cell, x0, y0) -> list[dict]:
    """'[k]' above each 2-D slice of a 3-D-or-more array (k over the leading axes)."""
    s, _, c = view_shape
    if len(shape) < 3:
        return []
    lead = shape[:-2]
    return [text(x0 + k * (c * cell + PAD), y0 - 3, "[" + ", ".join(map(str, np.unravel_index(k, lead))) + "]",
                 size=10) for k in range(s)]


def figure_svg(fig: dict, outlines=()) -> str:
    """A figure ({width, height, cell, texts, panels: [{cx, cy, fill, ink, text}], legend}) as SVG.

    outlines: (panel number, cell numbers, colour) to stroke on top (a highlight)."""
    cell, out = fig["cell"], [svg_text(t) for t in fig["texts"]]
    font = max(MIN_FONT, int(cell * 0.45))
    for k, p in enumerate(fig["panels"]):
        out.append(f'<g class="panel" data-panel="{k}" stroke="white" stroke-width="1">')
        out.extend(f'<rect class="cell" data-cell="{i}" x="{p["cx"][i]}" y="{p["cy"][i]}" width="{cell}" '
                   f'height="{cell}" fill="{hex_colour(p["fill"][i])}"/>' for i in range(len(p["cx"])))
        out.append("</g>")
        if font <= cell - 2:   # labels only where they fit their cells at a legible size
            out.append(f'<g font-size="{font}" text-anchor="middle" dominant-baseline="central" '
                       f'pointer-events="none">')
            for i in range(len(p["cx"])):
                if p["text"][i] >= 0 and len(str(p["text"][i])) * font * 0.6 <= cell - 2:
                    colour = LIGHT_INK if p["ink"][i] else DARK_INK
                    out.append(f'<text x="{p["cx"][i] + cell // 2}" y="{p["cy"][i] + cell // 2}" fill="{colour}">'
                               f'{p["text"][i]}</text>')
            out.append("</g>")
    for k, cells, colour in outlines:
        p = fig["panels"][k]
        out.append(f'<g class="outline" fill="none" stroke="{colour}" stroke-width="2" pointer-events="none">')
        out.extend(f'<rect x="{p["cx"][i] + 1}" y="{p["cy"][i] + 1}" width="{cell - 2}" height="{cell - 2}"/>'
                   for i in cells)
        out.append("</g>")
    out += legend_svg(fig["legend"], PAD, fig["height"] + 4)
    legend_h = 22 if fig["legend"] else 0
    return svg_document(max(fig["width"], legend_width(fig["legend"])), fig["height"] + legend_h, out)


# ---- the transform data ------------------------------------------------------------------------

def source_colours(n: int) -> np.ndarray:
    """(n, 3) uint8: the colour of source position 0..n-1 (turbo, end to end)."""
    t = np.linspace(0, 1, n) if n > 1 else np.zeros(1)
    pos = t * (len(TURBO) - 1)
    lo = np.minimum(pos.astype(int), len(TURBO) - 2)
    frac = (pos - lo)[:, None]
    return np.round(TURBO[lo] * (1 - frac) + TURBO[lo + 1] * frac).astype(np.uint8)


def called_name(op: str, source: str) -> str | None:
    """The name by which a source line calls shape op `op` (`transpose` for a permute written as
    one), or None where the line calls none of its names (an op made by another, such as a gather)."""
    names = [op] + [alias for alias, target in ALIASES.items() if target == op]
    return next((n for n in names if re.search(rf"\b{n}\s*\(", source)), None)


def written(op: str, source: str) -> bool:
    """Whether a source line writes shape op `op` itself: by name, or a reshape as a subscript with
    None (`t[:, None]`); not one that another op of the line makes (the broadcast of `x + 1`)."""
    return called_name(op, source) is not None or \
        (op == "reshape" and re.search(r"\[[^\]]*\bNone\b", source) is not None)


def mapping(event, block=None) -> dict:
    """Where each output element of one block came from: {"op", "out_shape", "operand", "position",
    "in_shapes" (None: not recorded), "names"}, operand -1 for none (a padded load lane).

    A shape op's event holds (operand, flat position); a load's holds array coordinates, which are
    turned into positions in the box of the array that the block's tile covers."""
    # a shape op's map is the same in every block: the trace records it once
    e = event.for_block(block if block is not None and event.array is not None else tuple(event.blocks[0]))
    if not len(e.blocks):
        raise ValueError(f"block {tuple(block)} did not execute this {event.op}")
    if event.array is None:
        return {"op": event.op, "out_shape": e.shape, "operand": e.coords[0, ..., 0].astype(np.int32),
                "position": e.coords[0, ..., 1].astype(np.int32),
                "in_shapes": list(event.operand_shapes) if event.operand_shapes else None, "names": None}
    coords, inside = e.coords[0], e.status[0] == Status.LOADED
    if not inside.any():
        raise ValueError(f"block {tuple(e.blocks[0])} loaded nothing from {event.array}")
    lo, hi = coords[inside].min(axis=0), coords[inside].max(axis=0) + 1
    box = tuple(int(d) for d in hi - lo)
    position = np.where(inside, np.ravel_multi_index(tuple(np.moveaxis(np.where(inside[..., None], coords - lo, 0),
                                                                        -1, 0)), box), -1)
    name = f"{event.array}[" + ", ".join(f"{a}:{b}" for a, b in zip(lo, hi)) + "]"
    return {"op": event.op, "out_shape": e.shape, "operand": np.where(inside, 0, -1).astype(np.int32),
            "position": position.astype(np.int32), "in_shapes": [box], "names": [name]}


def infer_operand_shapes(op: str, operand: np.ndarray, position: np.ndarray) -> list[tuple[int, ...]]:
    """Operand shapes of a shape op, read back from its map (the trace does not record them).

    Exact for permute, broadcast, cat and insert; a reshape's input is shown flat, and an
    extract's input is the smallest shape holding the elements taken."""
    out = operand.shape
    if op == "reshape":
        return [(operand.size,)]
    if op in ("cat", "insert"):
        second = operand == 1
        if op == "insert":
            idx = np.nonzero(second)
            return [out, tuple(int(i.max() - i.min() + 1) for i in idx)]
        axis = next(k for k in range(len(out)) if (np.diff(operand, axis=k) != 0).any())
        line = operand[(0,) * axis + (slice(None),) + (0,) * (len(out) - axis - 1)]
        first = int((line == 0).sum())
        return [out[:axis] + (first,) + out[axis + 1:], out[:axis] + (out[axis] - first,) + out[axis + 1:]]
    origin = int(position.flat[0])
    steps = [int(position[(0,) * k + (1,) + (0,) * (len(out) - k - 1)]) - origin if out[k] > 1 else 0
             for k in range(len(out))]
    if op == "permute":
        order = sorted(range(len(out)), key=lambda k: -steps[k])
        return [tuple(out[k] for k in order)]
    if op == "broadcast":
        return [tuple(d if s else 1 for d, s in zip(out, steps))]
    strides = [s or 0 for s in steps]     # extract: the input's strides, outermost first
    shape, inner = list(out), 1
    for k in range(len(out) - 1, 0, -1):
        strides[k] = strides[k] or inner
        shape[k] = (strides[k - 1] // strides[k]) if strides[k - 1] else out[k]
        inner = strides[k] * shape[k]
    strides[0] = strides[0] or inner
    rows = int(position.max()) // strides[0] + 1
    shape[0] = -(-rows // out[0]) * out[0]
    return [tuple(shape)]


def transform_data(m: dict, *, title: str = "") -> dict:
    """The figure of a mapping (see `mapping`): input panels in a column, the result to the right.

    Panel cells carry `ids` (the global source position; -1 none) for hovering and `text` (the
    position inside its operand, the value of an iota tile) for labels."""
    in_shapes = m["in_shapes"] or infer_operand_shapes(m["op"], m["operand"], m["position"])
    names = m["names"] or [f"operand {k}" for k in range(len(in_shapes))]
    sizes = [math.prod(s) for s in in_shapes]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    colours = source_colours(int(offsets[-1]))
    out_ids = np.where(m["operand"] >= 0, offsets[np.maximum(m["operand"], 0)] + m["position"], -1).ravel()
    views = [as_slices(s) for s in in_shapes] + [as_slices(m["out_shape"])]
    strides = [tuple(-(-d // cap) for d, cap in zip(v, SLICE_CAPS)) for v in views]
    shown = [tuple(-(-d // st) for d, st in zip(v, s)) for v, s in zip(views, strides)]
    cell = min(cell_size(v[1], v[2]) for v in shown)
    texts, panels, y = [text(PAD, 16, title, size=13, weight="bold")], [], TITLE_H + 8
    left_w = 0
    for k, shape in enumerate(in_shapes):
        ids, top = offsets[k] + np.arange(sizes[k]), y + LABEL_H + _slice_label_h(shape)
        panel, w, h = _panel(ids, ids - offsets[k], colours, shape, views[k], strides[k], cell, PAD, top)
        label = text(PAD, y + 12, f"{names[k]} {tuple(shape)}", weight="bold")
        texts += [label] + slice_texts(shown[k], shape, cell, PAD, top)
        panels.append(panel)
        left_w, y = max(left_w, w, text_width(label["text"], label["size"], bold=True)), top + h + PAD
    x_out = PAD + int(left_w) + 3 * PAD + 10   # past the widest input panel or its label: headers never overlap
    result = text(x_out, TITLE_H + 20, f"{m['op']} result {tuple(m['out_shape'])}", weight="bold")
    texts.append(text(x_out - 2 * PAD, TITLE_H + 8 + LABEL_H + 12, "\u2192", size=18, anchor="middle"))
    texts.append(result)
    top = TITLE_H + 8 + LABEL_H + _slice_label_h(m["out_shape"])
    texts += slice_texts(shown[-1], m["out_shape"], cell, x_out, top)
    local = np.where(out_ids >= 0, m["position"].ravel(), -1)
    panel, w, h = _panel(out_ids, local, colours, m["out_shape"], views[-1], strides[-1], cell, x_out, top)
    panels.append(panel)
    width = max(x_out + w + PAD, x_out + text_width(result["text"], result["size"], bold=True) + PAD,
                PAD + text_width(title, 13, bold=True))
    legend = [{"label": "source position 0", "colour": hex_colour(colours[0])},
              {"label": f"\u2026 {int(offsets[-1]) - 1}", "colour": hex_colour(colours[-1])}]
    if (out_ids < 0).any():
        legend.append({"label": "no source (padding)", "colour": hex_colour(NO_SOURCE)})
    if any(s != (1, 1, 1) for s in strides):
        legend.append({"label": "large tile: every k-th element shown", "colour": "#ffffff"})
    return {"title": title, "op": m["op"], "cell": cell, "width": int(width), "height": int(max(y, top + h + PAD)),
            "texts": texts, "panels": panels, "legend": legend, "offsets": offsets.astype(np.int32)}


def _slice_label_h(shape) -> int:
    return 12 if len(shape) > 2 else 0


def _panel(ids, labels, colours, shape, view, stride, cell, x0, y0):
    """One panel's cells (sampled with `stride` on big tiles), placed at (x0, y0)."""
    s, r, c = (np.arange(0, d, st) for d, st in zip(view, stride))
    picked = np.ravel_multi_index(np.meshgrid(s, r, c, indexing="ij"), view).ravel()
    cx, cy, w, h = slice_cells((len(s), len(r), len(c)), cell, x0, y0)
    ids, labels = np.asarray(ids)[picked], np.asarray(labels)[picked]
    fill = np.where((ids >= 0)[:, None], colours[np.maximum(ids, 0)], np.array(NO_SOURCE, np.uint8))
    fill = fill.astype(np.uint8)
    return ({"shape": list(shape), "cx": cx, "cy": cy, "ids": ids.astype(np.int32), "text": labels.astype(np.int32),
             "fill": fill, "ink": light_ink(fill).astype(np.uint8)}, w, h)


def same_source(data: dict, panel: int, cell: int) -> list[tuple[int, list[int]]]:
    """What hovering a cell lights up: (panel, cells) of every cell with the same source."""
    target = data["panels"][panel]["ids"][cell]
    if target < 0:
        return []
    return [(k, np.nonzero(p["ids"] == target)[0].tolist()) for k, p in enumerate(data["panels"])]


# ---- the view ------------------------------------------------------------------------------------

class TransformView(SvgView):
    """Before and after of one shape op or ordered load, every element coloured by its source."""

    _esm = static("transform.js")
    data = Data()
    hovered = traitlets.Int(-1).tag(sync=True)   # the global source position under the mouse, -1 none

    @classmethod
    def from_trace(cls, trace, op: str = "permute", block=None, *, index: int = 0, input_shapes=None,
                   names=None) -> TransformView:
        """The `index`-th `op` event of a trace (ops: reshape, permute/transpose, broadcast/broadcast_to,
        cat, extract, insert, load). A shape op's operand shapes are those the trace recorded (inferred
        for traces that lack them), unless `input_shapes` says otherwise."""
        name = ALIASES.get(op, op)
        events = trace.by_op(name)
        if not events:
            raise ValueError(f"the trace of {trace.kernel} has no {op} (it has "
                             f"{', '.join(sorted({e.op for e in trace.events}))})")
        event = events[index]
        m = mapping(event, block)
        if input_shapes is not None:
            m["in_shapes"] = [tuple(s) for s in input_shapes]
        m["names"] = names or m["names"]
        what = called_name(name, event.source) or name
        what = what if event.array is None else f"{what} {event.array}"
        title = clip(f"{trace.kernel}: {what}, line {event.line}: {event.source.strip()}", TITLE_CHARS)
        return cls(data=transform_data(m, title=title))

    @classmethod
    def of(cls, fn, *input_shapes, dtype=ct.int32, index: int = -1) -> TransformView:
        """Run `fn` on iota tiles of `input_shapes` in a real one-block kernel and show its shape op.

        >>> TransformView.of(lambda a, b: ct.cat((a, b), 1), (4, 2), (4, 2))
        """
        trace = iota_trace(fn, input_shapes, dtype)
        events = [e for e in trace.events if e.array is None][:-1]   # the last one is iota_trace's own
        if not events:
            raise ValueError("fn applied no shape op (reshape, permute, broadcast_to, cat, extract, insert)")
        event = events[index]
        shapes = [tuple(s) for s in input_shapes] if event is events[0] else None
        names = list(inspect.signature(fn).parameters)[:len(input_shapes)] if shapes else None
        return cls.from_trace(trace, event.op, index=trace.by_op(event.op).index(event), input_shapes=shapes,
                              names=names)

    def to_svg(self) -> str:
        return figure_svg(self.data)


def iota_trace(fn, input_shapes, dtype=ct.int32):
    """The trace of a one-block kernel that loads iota tiles of `input_shapes` and applies `fn`."""
    if not 1 <= len(input_shapes) <= 2:
        raise ValueError("TransformView.of takes one or two input shapes")
    shapes = [tuple(s) for s in input_shapes]

    def transform_of(x0, x1, y):
        a = ct.load(x0, (0,) * len(shapes[0]), shapes[0])
        if len(shapes) == 1:
            r = fn(a)
        else:
            r = fn(a, ct.load(x1, (0,) * len(shapes[-1]), shapes[-1]))
        ct.store(y, (0,), ct.reshape(ct.sum(r), (1,)))   # a use, so the ops are not removed as dead

    transform_of.__name__ = getattr(fn, "__name__", "fn").replace("<lambda>", "lambda")
    xs = [np.arange(math.prod(s)).astype(dtype.numpy).reshape(s) for s in shapes]
    return ct.interpret(ct.kernel(transform_of), (1,), (xs[0], xs[-1], np.zeros(1, dtype.numpy)), trace=True)
