"""Block stepper: one block of a traced launch, op by op in program order (loop iterations
included), with the op's tile as a heatmap and the memory the block has touched so far.

    trace = run(kernel, grid, args, values=True)      # values=True keeps every op's tile
    view = StepperView.from_trace(trace, block=(1, 0))
    view.step = 5                                      # the sixth op block (1, 0) executed
    view.select("y", (3, 4))                           # jump to the block (and op) that wrote y[3, 4]

The picture shows the kernel's lines (the current one highlighted; in a notebook, also in the editor of
the %%tilekernel cell that defined the kernel, when the view is that cell's output), the op's tile (finite values
on a colour scale; NaN, +inf, -inf and padded lanes drawn distinctly; the exact value on hover)
and every array the block touched, coloured by what it did up to this op (the op's own lanes
outlined). Buttons step back and forward and play; clicking an element of an array, or a lane of
a load or store, jumps to the block that wrote that element, at the op that wrote it.
"""
from __future__ import annotations

import linecache
import math

import numpy as np
import traitlets

from ..frontend.source import is_cell_file
from ..interp import Status
from ._base import Data, SvgView, static
from .coverage import SELECTED_OUTLINE, WRITE, _bin_of, _bins, blocks_at, element_cell, grid_rank, next_block
from .svg import (
    DARK_INK,
    LIGHT_INK,
    MIN_FONT,
    PAD,
    TITLE_CHARS,
    clip,
    hex_colour,
    legend_svg,
    legend_width,
    light_ink,
    svg_document,
    svg_text,
    text,
)
from .transform import as_slices, slice_cells

TILE_CAPS = (4, 32, 64)      # the most slices, rows and columns of a tile drawn
CODE_CHARS = 90              # the longest kernel line shown
LINE_H = 16
CELL = 28
MEMORY_W = 256               # an array's panel is about this wide at most (bigger arrays are binned too)
ROW_W = 720                  # array panels sit side by side up to this width
# colours: finite values on a blue-to-yellow scale; the special values and lanes in their own
SCALE = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], float)
NAN, POS_INF, NEG_INF, FALSE, TRUE = (255, 64, 255), (183, 28, 28), (13, 71, 161), (236, 239, 241), (38, 50, 56)
PADDING, DROPPED_LANE = "#fb8c00", "#9e9e9e"
UNTOUCHED, READ_SO_FAR, WRITTEN_SO_FAR, BOTH_SO_FAR = (238, 238, 238), (144, 202, 249), (129, 199, 132), (77, 182, 172)
CURRENT_WRITE, CURRENT_READ, CURRENT_LINE = "#000000", "#d81b60", "#fff59d"
READ = 1
PADDED_LANES = (Status.PADDED, Status.MASKED, Status.OUT_OF_BOUNDS)


class NoValuesError(ValueError):
    """The trace was recorded without per-op values."""


def steps_of(trace, block) -> list:
    """The ops block `block` executed, in its program order (interp.steps.BlockStep)."""
    if trace.steps is None:
        raise NoValuesError("the stepper needs every op's values: run(kernel, grid, args, values=True) "
                            "(or %%tilekernel --viz) records them")
    block = tuple(int(b) for b in block) + (0,) * (3 - len(block))
    if any(not 0 <= b < g for b, g in zip(block, trace.grid)):
        raise ValueError(f"block {block[:grid_rank(trace.grid)]} is outside the grid {tuple(trace.grid)}")
    return trace.steps.for_block(block)


def writer_of(trace, array: str, index, current_block=(0, 0, 0)) -> tuple[tuple[int, int, int], int] | None:
    """(block, step number) of the op that wrote element `index` of `array`: the (next, after
    `current_block`) block that wrote it, at its last op that did. None if no block wrote it."""
    block = next_block(blocks_at(trace, array, tuple(index), WRITE), tuple(current_block) + (0,) * 3)
    if block is None:
        return None
    index = np.asarray(index, np.int32)
    for step in reversed(steps_of(trace, block)):
        for e in step.events:
            if e.array != array:
                continue
            hit = (e.coords[0] == index).all(axis=-1) & np.isin(e.status[0], (Status.STORED, Status.COLLISION))
            if hit.any():
                return block, step.number
    return None


def _value_text(v) -> str:
    """A tile element as the hover shows it: exact (the shortest text that reads back the same)."""
    return str(v.item()) if v.dtype == np.bool_ else str(v)


def _label(v) -> str:
    """A tile element as its cell shows it: short."""
    if v.dtype == np.bool_:
        return "T" if v else "F"
    if v.dtype.kind in "iu":
        return str(int(v))
    x = float(v)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.3g}"


def heat_fills(values: np.ndarray) -> np.ndarray:
    """(n, 3) uint8 fills of a flat tile: finite values on the scale between their min and max,
    NaN, +inf and -inf in their own colours, booleans two greys."""
    if values.dtype == np.bool_:
        return np.where(values[:, None], np.array(TRUE), np.array(FALSE)).astype(np.uint8)
    x = values.astype(np.float64)
    finite = np.isfinite(x)
    lo, hi = (x[finite].min(), x[finite].max()) if finite.any() else (0.0, 0.0)
    t = np.where(finite, (x - lo) / (hi - lo) if hi > lo else 0.5, 0.0) * (len(SCALE) - 1)
    k = np.clip(np.floor(t).astype(int), 0, len(SCALE) - 2)
    fill = SCALE[k] + (SCALE[k + 1] - SCALE[k]) * (t - k)[:, None]
    fill = np.select([np.isnan(x)[:, None], (x == np.inf)[:, None], (x == -np.inf)[:, None]],
                     [np.array(NAN), np.array(POS_INF), np.array(NEG_INF)], fill)
    return np.round(fill).astype(np.uint8)


def _window(shape):
    """(view (slices, rows, cols) of the tile, the part drawn) for a tile of `shape`."""
    view = as_slices(shape)
    return view, tuple(min(n, cap) for n, cap in zip(view, TILE_CAPS))


def _tile_panel(step, x0, y0) -> dict:
    """The op's tile: fills, labels, hover texts, padded/dropped lanes and, for a memory op with one
    element per lane, the element each lane touched (for the click)."""
    value = np.asarray(step.value)
    shape = value.shape
    view, drawn = _window(shape)
    window = value.reshape(view)[:drawn[0], :drawn[1], :drawn[2]]
    flat = window.reshape(-1)
    positions = np.stack(np.meshgrid(*(np.arange(n) for n in drawn), indexing="ij"), -1).reshape(-1, 3)
    tile_index = [np.unravel_index(s * view[1] * view[2] + r * view[2] + c, shape) if shape else ()
                  for s, r, c in positions]
    memory = [e for e in step.events if e.array is not None]   # shape-op events name no array
    event = memory[0] if len(memory) == 1 else None
    lanes = event is not None and len(event.blocks) and event.shape == shape
    status = event.status[0].reshape(view)[:drawn[0], :drawn[1], :drawn[2]].reshape(-1) if lanes else None
    ndim = event.coords.shape[-1] if lanes else 0
    elements = (event.coords[0].reshape(view + (ndim,))[:drawn[0], :drawn[1], :drawn[2]].reshape(-1, ndim)
                if lanes else np.zeros((len(flat), 0), np.int32))
    hover = []
    for k, (v, idx) in enumerate(zip(flat, tile_index)):
        where = f" \u2190 {event.array}[{', '.join(map(str, elements[k]))}] {Status(int(status[k])).name.lower()}" \
            if lanes else ""
        hover.append(f"[{', '.join(str(int(i)) for i in idx)}] = {_value_text(v)}{where}")
    fill = heat_fills(flat)
    cx, cy, w, h = slice_cells(drawn, CELL, x0, y0)
    part = "" if drawn == view else f", showing [{', '.join(f':{n}' for n in drawn)}] of the {view} view"
    return {"kind": "tile", "name": step.op, "cx": cx, "cy": cy, "fill": fill, "ink": light_ink(fill).astype(np.uint8),
            "labels": [_label(v) for v in flat], "hover": hover, "array": event.array if lanes else None,
            "elements": elements.astype(np.int32),
            "padded": np.isin(status, PADDED_LANES).nonzero()[0].astype(np.int32) if lanes else np.zeros(0, np.int32),
            "dropped": (status == Status.DROPPED).nonzero()[0].astype(np.int32) if lanes else np.zeros(0, np.int32),
            "caption": f"{step.op}: tile {tuple(shape)} {value.dtype}{part}", "width": w, "height": h}


def _touched(steps, upto: int, arrays: dict) -> dict:
    """Per array, READ | WRITE bits per flat element: what the block's ops 0..upto did."""
    out = {}
    for step in steps[:upto + 1]:
        for e in step.events:
            if e.array is None or not len(e.blocks):
                continue
            shape = tuple(arrays[e.array]["shape"])
            mask = out.setdefault(e.array, np.zeros(math.prod(shape), np.uint8))
            _mark(mask, e, shape)
    return out


def _mark(mask, event, shape):
    status = event.status[0].reshape(-1)
    coords = event.coords[0].reshape(-1, len(shape))
    written = np.isin(status, (Status.STORED, Status.COLLISION))
    touched = written | (status == Status.LOADED)
    flat = np.ravel_multi_index(tuple(coords[touched].T), shape) if shape else np.zeros(int(touched.sum()), np.intp)
    np.bitwise_or.at(mask, flat, np.where(written[touched], WRITE, READ).astype(np.uint8))


def _per_bin(bits, bin_layout) -> np.ndarray:
    """READ | WRITE of each bin (`bin_layout`: _bins of the array): the bits any of its elements has."""
    view, factors, binned = bin_layout
    out = np.zeros(math.prod(binned), np.uint8)
    touched = np.flatnonzero(bits)   # few elements of a big array: bin only those
    np.bitwise_or.at(out, _bin_of(touched, view, factors, binned), bits[touched])
    return out


def _memory_panel(name, meta, so_far, current, x0, y0) -> dict:
    shape = tuple(meta["shape"])
    view, factors, binned = _bins(shape)
    n_cells = math.prod(binned)
    kinds, now = _per_bin(so_far, (view, factors, binned)), _per_bin(current, (view, factors, binned))
    fill = np.select([kinds[:, None] == READ | WRITE, kinds[:, None] == WRITE, kinds[:, None] == READ],
                     [np.array(BOTH_SO_FAR), np.array(WRITTEN_SO_FAR), np.array(READ_SO_FAR)],
                     np.array(UNTOUCHED)).astype(np.uint8)
    cell = max(6, min(CELL, MEMORY_W // max(binned[1:])))
    cx, cy, w, h = slice_cells(binned, cell, x0, y0)
    # the first element of each bin: what a click on the cell selects
    s, r, c = np.meshgrid(*(np.arange(b) * f for b, f in zip(binned, factors)), indexing="ij")
    first = ((s * view[1] + r) * view[2] + c).ravel()
    elements = np.stack(np.unravel_index(first, shape), -1) if shape else np.zeros((n_cells, 0), np.int64)
    binning = "" if factors == (1, 1, 1) else f", bins of {' x '.join(map(str, factors[3 - min(len(shape), 3):]))}"
    hover = [f"{name}[{', '.join(map(str, e))}]{'' if factors == (1, 1, 1) else ' (bin)'}: " +
             {0: "not touched yet", READ: "read", WRITE: "written", READ | WRITE: "read and written"}[int(k)]
             for e, k in zip(elements, kinds)]
    return {"kind": "array", "name": name, "cx": cx, "cy": cy, "fill": fill, "ink": light_ink(fill).astype(np.uint8),
            "labels": [""] * n_cells, "hover": hover, "array": name, "elements": elements.astype(np.int32),
            "now_read": ((now & READ) > 0).nonzero()[0].astype(np.int32),
            "now_written": ((now & WRITE) > 0).nonzero()[0].astype(np.int32),
            "cell": cell, "factors": list(factors), "shape": list(shape),
            "binned": list(binned),
            "caption": f"{name} {shape} {meta['dtype']}{binning}", "width": w, "height": h}


def _code_text(line: int, source: str) -> str:
    """A kernel line as the listing shows it: its number, then the line with its indentation kept
    (as no-break spaces, which SVG does not collapse)."""
    body = clip(source.strip(), CODE_CHARS)
    return f"{line}\u00a0\u00a0" + "\u00a0" * (len(source) - len(source.lstrip())) + body


def _loops_text(loops) -> str:
    return ", ".join(f"iteration {k} of the loop on line {line}" for line, k in loops)


def kernel_cell(trace) -> list[str] | None:
    """The lines of the %%tilekernel cell the traced kernel was defined in, as the magic ran them
    (line 1, the header, is ""), None where the kernel was defined elsewhere (a file)."""
    filename = trace.steps.filename
    lines = linecache.getlines(filename) if is_cell_file(filename) else []
    return [line.rstrip("\n") for line in lines] or None


def _cell(trace, current) -> dict | None:
    """What the view's script needs to highlight the op's line in the editor of the kernel's cell:
    the cell's lines (it highlights only in a cell that still reads so) and the op's line there,
    0 where the op's code is not in that cell (a helper's, from a file or another cell)."""
    lines = kernel_cell(trace)
    if lines is None:
        return None
    return {"lines": lines, "line": current.line if current.filename == trace.steps.filename else 0}


def stepper_data(trace, block, step: int, steps=None, *, message: str = "", selected=None) -> dict:
    """The figure of op `step` of `block` (`steps`: steps_of(trace, block), when at hand).
    `selected`: {"array", "index"} of an element to outline where it is drawn."""
    steps = steps_of(trace, block) if steps is None else steps
    rank = grid_rank(trace.grid)
    block = [int(b) for b in tuple(block) + (0,) * (3 - len(block))]
    if not steps:
        raise ValueError(f"block {tuple(block[:rank])} executed no op")
    step = min(max(int(step), 0), len(steps) - 1)
    current = steps[step]
    lines = sorted({(s.line, _code_text(s.line, s.source)) for s in steps if s.line})
    code_w = 2 * PAD + int(5.4 * max([len(src) for _, src in lines] or [20]))
    title = clip(f"{trace.kernel}: block {tuple(block[:rank])}, op {step + 1} of {len(steps)}", TITLE_CHARS)
    where = f"line {current.line}: {current.op}" + (f" ({_loops_text(current.loops)})" if current.loops else "")
    texts = [text(PAD, 16, title, size=13, weight="bold", role="title"), text(PAD, 34, clip(where, 110), role="where")]
    top = 52
    code = []
    for k, (line, src) in enumerate(lines):
        y = top + k * LINE_H
        code.append({"line": line, "y": y, "current": line == current.line})
        texts.append(text(PAD, y + 12, src, size=MIN_FONT))
    x0 = code_w + PAD
    panels, y = [], top
    if current.value is not None:
        panel = _tile_panel(current, x0, y + 20)
        texts.append(text(x0, y + 12, clip(panel["caption"], 90), weight="bold"))
        panels.append(panel)
        y += 20 + panel["height"] + PAD
    else:
        why = trace.steps.truncated or "this op makes no tile"
        texts.append(text(x0, y + 12, clip(why, 110), size=MIN_FONT))
        y += 20 + PAD
    so_far = _touched(steps, step, trace.arrays)
    touched = {e.array for s in steps for e in s.events if e.array is not None and len(e.blocks)}
    names = [n for n in trace.arrays if n in touched]
    if names:
        texts.append(text(x0, y + 12, "memory this block touched up to this op (the op's own lanes outlined)",
                          weight="bold"))
        y += 20
    x, row_h = x0, 0
    for name in names:   # the arrays side by side, wrapping at ROW_W
        meta = trace.arrays[name]
        now = np.zeros(math.prod(meta["shape"]), np.uint8)
        for e in current.events:
            if e.array == name and len(e.blocks):
                _mark(now, e, tuple(meta["shape"]))
        panel = _memory_panel(name, meta, so_far.get(name, np.zeros_like(now)), now, x, y + 18)
        panel_w = max(panel["width"], int(6.2 * len(panel["caption"])))
        if x > x0 and x + panel_w > x0 + ROW_W:
            x, y, row_h = x0, y + row_h, 0
            panel = _memory_panel(name, meta, so_far.get(name, np.zeros_like(now)), now, x, y + 18)
        texts.append(text(x, y + 12, panel["caption"], size=MIN_FONT))
        panels.append(panel)
        x += panel_w + 2 * PAD
        row_h = max(row_h, 18 + panel["height"] + PAD)
    y += row_h
    if message:
        texts.append(text(PAD, max(y, top + len(lines) * LINE_H + PAD) + 4, clip(message, 130), role="message"))
    height = max(y, top + len(lines) * LINE_H + PAD) + (24 if message else 0)
    legend = [{"label": "NaN", "colour": hex_colour(NAN)}, {"label": "+inf", "colour": hex_colour(POS_INF)},
              {"label": "-inf", "colour": hex_colour(NEG_INF)}, {"label": "padded lane (outline)", "colour": PADDING},
              {"label": "read so far", "colour": hex_colour(READ_SO_FAR)},
              {"label": "written so far", "colour": hex_colour(WRITTEN_SO_FAR)},
              {"label": "this op writes (outline)", "colour": CURRENT_WRITE},
              {"label": "this op reads (outline)", "colour": CURRENT_READ}]
    width = max([p["cx"].max() + p.get("cell", CELL) + PAD for p in panels] +
                [x0 + 480, PAD + 7 * len(title), legend_width(legend)])
    return {"kernel": trace.kernel, "grid": list(trace.grid), "rank": rank, "block": block, "step": step,
            "steps": len(steps), "step_lines": np.array([s.line for s in steps], np.int32),
            "step_ops": [s.op for s in steps], "texts": texts, "code": code, "code_w": code_w, "panels": panels,
            "cell": _cell(trace, current), "selected": dict(selected) if selected else None, "legend": legend,
            "width": int(width), "height": int(height), "truncated": trace.steps.truncated}


def _cells_svg(k, p, cell) -> list[str]:
    out = [f'<g class="panel" data-panel="{k}" stroke="white" stroke-width="1">']
    out += [f'<rect class="cell" data-cell="{i}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
            f'fill="{hex_colour(f)}"/>' for i, (x, y, f) in enumerate(zip(p["cx"], p["cy"], p["fill"]))]
    out.append("</g>")
    font = MIN_FONT
    if not all(len(label) * font * 0.68 <= cell - 4 for label in p["labels"]):
        return out   # labels in every cell or in none: some labelled cells would read as special
    out.append(f'<g font-size="{font}" text-anchor="middle" dominant-baseline="central" pointer-events="none">')
    for x, y, label, ink in zip(p["cx"], p["cy"], p["labels"], p["ink"]):
        if label:
            out.append(f'<text x="{x + cell // 2}" y="{y + cell // 2}" fill="{LIGHT_INK if ink else DARK_INK}">'
                       f'{label}</text>')
    out.append("</g>")
    return out


def _outline_svg(p, cells, colour, cell, cls="outline", width=2) -> list[str]:
    if not len(cells):
        return []
    return [f'<g class="{cls}" fill="none" stroke="{colour}" stroke-width="{width}" pointer-events="none">',
            *(f'<rect x="{p["cx"][i] + 1}" y="{p["cy"][i] + 1}" width="{cell - 2}" height="{cell - 2}"/>'
              for i in cells), "</g>"]


def selected_cells(p, selected) -> list[int]:
    """The cells of panel `p` that show the selected element."""
    if not selected or p["array"] != selected["array"] or not len(p["elements"]):
        return []
    if p["kind"] == "tile":
        return np.nonzero((p["elements"] == np.asarray(selected["index"])).all(axis=1))[0].tolist()
    cell = element_cell(p["shape"], selected["index"])
    return [] if cell is None else [cell]


def stepper_svg(data: dict) -> str:
    body = []
    for c in data["code"]:   # the current line's highlight, under its text
        if c["current"]:
            body.append(f'<rect class="current-line" x="{PAD - 4}" y="{c["y"]}" width="{data["code_w"] - PAD}" '
                        f'height="{LINE_H}" fill="{CURRENT_LINE}"/>')
    body += [svg_text(t) for t in data["texts"]]
    for k, p in enumerate(data["panels"]):
        cell = p.get("cell", CELL)
        body += _cells_svg(k, p, cell)
        if p["kind"] == "tile":
            body += _outline_svg(p, p["padded"], PADDING, cell, "padded", 3)
            body += _outline_svg(p, p["dropped"], DROPPED_LANE, cell, "dropped", 3)
        else:
            body += _outline_svg(p, p["now_read"], CURRENT_READ, cell)
            body += _outline_svg(p, p["now_written"], CURRENT_WRITE, cell)
        body += _outline_svg(p, selected_cells(p, data["selected"]), SELECTED_OUTLINE, cell, "selected", 3)
    body += legend_svg(data["legend"], PAD, data["height"] + 4)
    return svg_document(data["width"], data["height"] + 22, body)


class StepperView(SvgView):
    """One block of a traced launch, op by op: the line, the op's tile, the memory touched so far."""

    _esm = static("stepper.js")
    data = Data()
    block = traitlets.List([0, 0, 0]).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    selected = traitlets.Dict().tag(sync=True)       # {"array", "index"} of the clicked element, {} none
    interval_ms = traitlets.Int(600).tag(sync=True)  # play speed

    def __init__(self, trace, block=(0, 0, 0), step: int = 0, **kwargs):
        self._trace = trace
        block = [int(b) for b in tuple(block) + (0,) * (3 - len(block))]
        self._steps = steps_of(trace, block)
        self._message, self._jumped = "", None
        super().__init__(data=stepper_data(trace, block, step, self._steps), block=block,
                         step=min(step, max(0, len(self._steps) - 1)), **kwargs)
        self.observe(self._recompute, names=["block", "step"])
        self.observe(self._follow_selection, names=["selected"])

    @classmethod
    def from_trace(cls, trace, block=(0, 0, 0), step: int = 0) -> StepperView:
        """The stepper of `block` of a trace recorded with values (run(..., values=True))."""
        return cls(trace, block, step)

    @property
    def current(self):
        """The op shown now (interp.steps.BlockStep)."""
        return self._steps[self.step]

    def _recompute(self, change):
        if change["name"] == "block":
            self._steps = steps_of(self._trace, self.block)
            if self.step >= len(self._steps):
                self.step = len(self._steps) - 1   # this recomputes
                return
        self.data = stepper_data(self._trace, self.block, self.step, self._steps, message=self._message,
                                 selected=self.selected)

    def select(self, array: str, index) -> tuple | None:
        """Select element `index` of `array`: jump to the block that wrote it, at the op that did
        (cycling through several writers). Returns (block, step), None where no block wrote it."""
        self.selected = {"array": array, "index": [int(i) for i in index]}
        return self._jumped

    def _follow_selection(self, change):
        self._jumped = None
        if not self.selected:
            self._message = ""
            self._recompute({"name": "selected"})
            return
        array, index = self.selected["array"], tuple(self.selected["index"])
        element = f"{array}[{', '.join(map(str, index))}]"
        found = writer_of(self._trace, array, index, self.block)
        if found is None:
            self._message = f"{element}: no block of this launch wrote it"
            self._recompute({"name": "selected"})
            return
        block, step = found
        rank = grid_rank(self._trace.grid)
        self._message = f"{element} was written by block {tuple(block[:rank])} at op {step + 1} " \
                        f"(line {steps_of(self._trace, block)[step].line})"
        self._jumped = found
        block = [int(b) for b in block]
        if block == self.block and step == self.step:
            self._recompute({"name": "step"})   # only the message is new
            return
        with self.hold_trait_notifications():
            self.block, self.step = block, step

    def to_svg(self) -> str:
        return stepper_svg(self.data)

    def to_text(self) -> str:
        d = self.data
        return (f"StepperView({d['kernel']}, block {tuple(d['block'][:d['rank']])}, op {d['step'] + 1} of "
                f"{d['steps']}: line {d['step_lines'][d['step']]} {d['step_ops'][d['step']]})")
