"""Block stepper: one block of a traced launch, op by op in program order (loop iterations
included), with the op's tile as a heatmap and the memory the block has touched so far.

    trace = run(kernel, grid, args, values=True)      # values=True keeps every op's tile
    view = StepperView.from_trace(trace, block=(1, 0))
    view.step = 5                                      # the sixth op block (1, 0) executed
    view.select("y", (3, 4))                           # jump to the block (and op) that wrote y[3, 4]

The picture shows the kernel's lines (the current one highlighted; in a notebook, also in the editor of
the %%tilekernel cell that defined the kernel, when the view is that cell's output), the op's tile (finite values
on a colour scale; NaN, +inf, -inf and padded lanes drawn distinctly; the exact value on hover;
a big tile whole, in bins that keep those visible) and every array the block touched, coloured by
what it did up to this op (the op's own lanes outlined; kept per block as BlockMemory, so a step
replays nothing). Buttons step back and forward and play; clicking an element of an array, or a lane of
a load or store, jumps to the block that wrote that element, at the op that wrote it.
"""
from __future__ import annotations

import linecache
import math
from collections import OrderedDict

import numpy as np
import traitlets

from ..frontend.source import is_cell_file
from ..interp import Status
from ..interp.steps import budget_text
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

TILE_CAPS = (4, 32, 64)      # the most slices, rows and columns of cells a tile is drawn in
TILE_W = 900                 # a tile's cells shrink (to 8 pixels at least) to fit about this width
CHECKPOINT = 32              # steps between the stored states of a block's memory panels
BLOCKS_KEPT = 4              # blocks whose steps and memory states a view keeps
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


def tile_bins(shape) -> tuple[tuple, tuple, tuple]:
    """(view (slices, rows, cols) of a tile of `shape`, elements per bin along each, bins along each):
    a tile bigger than TILE_CAPS is drawn whole, in bins; 3-D and up as a row of 2-D slices (the
    leading axes flattened in C order), the slices binned too where there are more than TILE_CAPS[0]."""
    view = as_slices(shape)
    factors = tuple(-(-n // cap) for n, cap in zip(view, TILE_CAPS))
    return view, factors, tuple(-(-n // f) for n, f in zip(view, factors))


def bin_tile(value: np.ndarray, status: np.ndarray | None = None) -> dict:
    """Per bin of a tile (tile_bins): how many elements, how many are NaN, +inf, -inf, and (given the
    lanes' `status`) padded or dropped, the smallest and largest finite value (exact: integers stay
    integers; None where the bin has none), the mean of the finite values, the first and last
    element (flat in the tile), and the bin of every element (`of`)."""
    view, factors, binned = tile_bins(value.shape)
    n = math.prod(binned)
    of = _bin_of_elements(np.arange(math.prod(view)), view, factors, binned)
    order = np.argsort(of, kind="stable")
    count = np.bincount(of, minlength=n)
    starts = np.concatenate([[0], np.cumsum(count)[:-1]])
    flat = np.asarray(value).reshape(-1)
    x = flat.astype(np.float64)
    finite = np.isfinite(x)
    exact = flat if flat.dtype.kind in "iub" else x   # min and max in the tile's own integers
    if exact.dtype == np.bool_:
        exact = exact.astype(np.int64)
    lowest, highest = (np.iinfo(exact.dtype).max, np.iinfo(exact.dtype).min) if exact.dtype.kind in "iu" \
        else (np.inf, -np.inf)
    lo = np.minimum.reduceat(np.where(finite, exact, lowest)[order], starts)
    hi = np.maximum.reduceat(np.where(finite, exact, highest)[order], starts)
    finite_n = np.bincount(of, finite, n)

    def per_bin(where):   # how many elements of each bin `where` holds for
        return np.bincount(of, where, n).astype(np.int64)
    no_lanes = np.zeros(len(of), bool)
    return {"view": view, "factors": factors, "binned": binned, "count": count,
            "nan": per_bin(np.isnan(x)), "pos_inf": per_bin(x == np.inf), "neg_inf": per_bin(x == -np.inf),
            "padded": per_bin(no_lanes if status is None else np.isin(status.reshape(-1), PADDED_LANES)),
            "dropped": per_bin(no_lanes if status is None else status.reshape(-1) == Status.DROPPED),
            "min": [flat.dtype.type(v) if k else None for v, k in zip(lo, finite_n)],
            "max": [flat.dtype.type(v) if k else None for v, k in zip(hi, finite_n)],
            "mean": np.bincount(of, np.where(finite, x, 0.0), n) / np.maximum(finite_n, 1),
            "of": of, "first": np.minimum.reduceat(np.arange(len(of))[order], starts),
            "last": np.maximum.reduceat(np.arange(len(of))[order], starts)}


def _bin_fills(bins, dtype) -> np.ndarray:
    """A bin's colour: NaN's where any element is NaN, else +inf's, else -inf's, else its finite
    values' mean on the scale (booleans: grey between false and true by the share of true)."""
    if dtype == np.bool_:
        share = bins["mean"][:, None]
        return np.round(np.array(FALSE) + (np.array(TRUE) - np.array(FALSE)) * share).astype(np.uint8)
    shown = np.select([bins["nan"] > 0, bins["pos_inf"] > 0, bins["neg_inf"] > 0],
                      [np.nan, np.inf, -np.inf], bins["mean"])
    return heat_fills(shown)


def _index_texts(flat, shape) -> list[str]:
    """'[i, j]' of each flat element index of a tile of `shape`."""
    if not shape:
        return ["[]"] * len(flat)
    index = np.stack(np.unravel_index(np.asarray(flat), shape), -1).tolist()
    return ["[" + ", ".join(map(str, i)) + "]" for i in index]


def _bin_texts(bins, shape, dtype) -> list[str]:
    """The hover of each bin of several elements: which, their range, and the special ones counted."""
    out = []
    specials = [(bins[key].tolist(), name) for key, name in (("nan", "NaN"), ("pos_inf", "+inf"),
                                                              ("neg_inf", "-inf"), ("padded", "padded"),
                                                              ("dropped", "dropped"))]
    for k, (first, last, count) in enumerate(zip(_index_texts(bins["first"], shape), _index_texts(bins["last"], shape),
                                                 bins["count"].tolist())):
        if dtype == np.bool_:
            parts = [f"{int(round(bins['mean'][k] * count))} true"]
        elif bins["min"][k] is None:
            parts = ["no finite value"]
        else:
            parts = [f"min {_value_text(bins['min'][k])}", f"max {_value_text(bins['max'][k])}"]
        parts += [f"{counts[k]} {name}" for counts, name in specials if counts[k]]
        out.append(f"{first}..{last} ({count} elements): {', '.join(parts)}")
    return out


def _tile_panel(step, x0, y0) -> dict:
    """The op's tile, whole (in bins where it is bigger than TILE_CAPS): fills, labels, hover texts,
    padded/dropped lanes and, for a memory op with one element per lane, the element each cell's
    (first) lane touched (for the click)."""
    value = np.asarray(step.value)
    shape = value.shape
    memory = [e for e in step.events if e.array is not None]   # shape-op events name no array
    event = memory[0] if len(memory) == 1 else None
    lanes = event is not None and len(event.blocks) and event.shape == shape
    status = event.status[0] if lanes else None
    bins = bin_tile(value, status)
    view, factors, binned = bins["view"], bins["factors"], bins["binned"]
    single = factors == (1, 1, 1)
    ndim = event.coords.shape[-1] if lanes else 0
    elements = event.coords[0].reshape(-1, ndim)[bins["first"]] if lanes else np.zeros((len(bins["first"]), 0), int)
    flat = value.reshape(-1)
    if single:
        hover = [f"{i} = {_value_text(v)}" for i, v in zip(_index_texts(bins["first"], shape), flat[bins["first"]])]
    else:
        hover = _bin_texts(bins, shape, value.dtype)
    if lanes:
        lane = "" if single else " (first lane)"
        names = [Status(k).name.lower() for k in status.reshape(-1)[bins["first"]].tolist()]
        hover = [f"{h} \u2190 {event.array}[{', '.join(map(str, e))}]{lane} {n}"
                 for h, e, n in zip(hover, elements.tolist(), names)]
    fill = heat_fills(flat) if single else _bin_fills(bins, value.dtype)
    cell = max(8, min(CELL, TILE_W // (binned[0] * binned[2])))
    cx, cy, w, h = slice_cells(binned, cell, x0, y0)
    part = "" if single else f", in bins of {' x '.join(map(str, factors[3 - min(max(len(shape), 1), 3):]))}"
    slices = f" ({view[0]} slices of {view[1]} x {view[2]} side by side)" if len(shape) > 2 else ""
    return {"kind": "tile", "name": step.op, "cx": cx, "cy": cy, "fill": fill, "ink": light_ink(fill).astype(np.uint8),
            "labels": [_label(v) for v in flat] if single else [""] * len(fill), "hover": hover,
            "array": event.array if lanes else None, "elements": elements.astype(np.int32),
            # every lane's element and cell: a selected element is outlined in the bin that holds it
            "lanes": event.coords[0].reshape(-1, ndim).astype(np.int32) if lanes else np.zeros((0, 0), np.int32),
            "lane_cells": bins["of"].astype(np.int32) if lanes else np.zeros(0, np.int32),
            "padded": np.flatnonzero(bins["padded"]).astype(np.int32),
            "dropped": np.flatnonzero(bins["dropped"]).astype(np.int32), "cell": cell,
            "caption": f"{step.op}: tile {tuple(shape)} {value.dtype}{slices}{part}", "width": w, "height": h}


class BlockMemory:
    """What one block's ops did to the arrays it touched, on the bins each array's panel draws:
    every step's own READ | WRITE bits (only the bins it touched) and, every CHECKPOINT steps, the
    bits of all the steps before. The state after any step is one checkpoint OR'd with at most
    CHECKPOINT steps, so a step costs the same wherever it is; what is held is the steps' touched
    bins plus one dense uint8 array per array and checkpoint (4096 bins at most)."""

    def __init__(self, steps, arrays: dict):
        touched = {e.array for s in steps for e in s.events if e.array is not None and len(e.blocks)}
        self.names = [n for n in arrays if n in touched]
        self.panels = {n: _memory_layout(n, arrays[n]) for n in self.names}
        self.own = [self._bins_of(step) for step in steps]
        self.checkpoints = []
        state = {n: np.zeros(self.panels[n]["cells"], np.uint8) for n in self.names}
        for k, own in enumerate(self.own):
            if k % CHECKPOINT == 0:
                self.checkpoints.append({n: b.copy() for n, b in state.items()})
            for name, (cells, bits) in own.items():
                state[name][cells] |= bits

    def _bins_of(self, step) -> dict:
        """{array: (its bins the step touched, their READ | WRITE bits)}."""
        out = {}
        for e in step.events:
            if e.array is None or not len(e.blocks):
                continue
            layout = self.panels[e.array]
            bits = np.zeros(layout["cells"], np.uint8)
            if e.array in out:
                bits[out[e.array][0]] = out[e.array][1]
            _mark(bits, e, layout["shape"], layout["bins"])
            cells = np.flatnonzero(bits).astype(np.int32)
            out[e.array] = (cells, bits[cells])
        return out

    def so_far(self, step: int) -> dict:
        """{array: READ | WRITE bits per bin} of the block's ops 0..step."""
        state = {n: b.copy() for n, b in self.checkpoints[step // CHECKPOINT].items()}
        for own in self.own[step // CHECKPOINT * CHECKPOINT:step + 1]:
            for name, (cells, bits) in own.items():
                state[name][cells] |= bits
        return state

    def now(self, step: int, name: str) -> np.ndarray:
        """READ | WRITE bits per bin of array `name` of op `step` alone."""
        out = np.zeros(self.panels[name]["cells"], np.uint8)
        cells, bits = self.own[step].get(name, ((), ()))
        out[list(cells)] = bits
        return out


def _mark(bins, event, shape, layout):
    """OR into `bins` (per bin of the array's panel) what the event's lanes did: READ, WRITE."""
    status = event.status[0].reshape(-1)
    coords = event.coords[0].reshape(-1, len(shape))
    written = np.isin(status, (Status.STORED, Status.COLLISION))
    touched = written | (status == Status.LOADED)
    flat = np.ravel_multi_index(tuple(coords[touched].T), shape) if shape else np.zeros(int(touched.sum()), np.intp)
    np.bitwise_or.at(bins, _bin_of_elements(flat, *layout), np.where(written[touched], WRITE, READ).astype(np.uint8))


def _bin_of_elements(flat, view, factors, binned) -> np.ndarray:
    """The bin of each flat element index of an array drawn as `view` (slices, rows, cols) in bins of `factors`."""
    slices, rest = np.divmod(np.asarray(flat, np.int64), view[1] * view[2])
    rows, cols = np.divmod(rest, view[2])
    return ((slices // factors[0]) * binned[1] + rows // factors[1]) * binned[2] + cols // factors[2]


def _memory_layout(name, meta) -> dict:
    """What an array's panel draws the same at every step: its bins, cells (at 0, 0), the element
    each cell stands for (its bin's first) and the start of each cell's hover."""
    shape = tuple(meta["shape"])
    view, factors, binned = _bins(shape)
    n_cells = math.prod(binned)
    cell = max(6, min(CELL, MEMORY_W // max(binned[1:])))
    cx, cy, w, h = slice_cells(binned, cell, 0, 0)
    s, r, c = np.meshgrid(*(np.arange(b) * f for b, f in zip(binned, factors)), indexing="ij")
    first = ((s * view[1] + r) * view[2] + c).ravel()
    elements = np.stack(np.unravel_index(first, shape), -1) if shape else np.zeros((n_cells, 0), np.int64)
    binning = "" if factors == (1, 1, 1) else f", bins of {' x '.join(map(str, factors[3 - min(len(shape), 3):]))}"
    return {"shape": shape, "bins": (view, factors, binned), "cells": n_cells, "cell": cell, "cx": cx, "cy": cy,
            "width": w, "height": h, "elements": elements.astype(np.int32),
            "hover": [f"{name}[{', '.join(map(str, e))}]{'' if factors == (1, 1, 1) else ' (bin)'}: " for e in elements],
            "caption": f"{name} {shape} {meta['dtype']}{binning}"}


TOUCH_TEXT = ("not touched yet", "read", "written", "read and written")   # by READ | WRITE bits


def _memory_panel(name, layout, kinds, now, x0, y0) -> dict:
    fill = np.select([kinds[:, None] == READ | WRITE, kinds[:, None] == WRITE, kinds[:, None] == READ],
                     [np.array(BOTH_SO_FAR), np.array(WRITTEN_SO_FAR), np.array(READ_SO_FAR)],
                     np.array(UNTOUCHED)).astype(np.uint8)
    return {"kind": "array", "name": name, "cx": layout["cx"] + x0, "cy": layout["cy"] + y0, "fill": fill,
            "ink": light_ink(fill).astype(np.uint8), "labels": [""] * layout["cells"],
            "hover": [h + TOUCH_TEXT[k] for h, k in zip(layout["hover"], kinds.tolist())], "array": name,
            "elements": layout["elements"],
            "now_read": ((now & READ) > 0).nonzero()[0].astype(np.int32),
            "now_written": ((now & WRITE) > 0).nonzero()[0].astype(np.int32),
            "cell": layout["cell"], "factors": list(layout["bins"][1]), "shape": list(layout["shape"]),
            "binned": list(layout["bins"][2]), "caption": layout["caption"], "width": layout["width"],
            "height": layout["height"]}


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


def stepper_data(trace, block, step: int, steps=None, *, memory: BlockMemory | None = None, message: str = "",
                 selected=None) -> dict:
    """The figure of op `step` of `block` (`steps`: steps_of(trace, block), `memory`: its BlockMemory,
    when at hand: a view keeps them per block). `selected`: {"array", "index"} of an element to
    outline where it is drawn."""
    steps = steps_of(trace, block) if steps is None else steps
    memory = BlockMemory(steps, trace.arrays) if memory is None else memory
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
    notes = values_notes(trace, block)
    for note in notes:
        texts.append(text(PAD, top + 2, clip(note, 170), size=MIN_FONT, role="values"))
        top += 16
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
        why = trace.steps.missing(block) or "this op makes no tile"
        texts.append(text(x0, y + 12, clip(why, 110), size=MIN_FONT))
        y += 20 + PAD
    so_far = memory.so_far(step)
    if memory.names:
        texts.append(text(x0, y + 12, "memory this block touched up to this op (the op's own lanes outlined)",
                          weight="bold"))
        y += 20
    x, row_h = x0, 0
    for name in memory.names:   # the arrays side by side, wrapping at ROW_W
        layout = memory.panels[name]
        panel_w = max(layout["width"], int(6.2 * len(layout["caption"])))
        if x > x0 and x + panel_w > x0 + ROW_W:
            x, y, row_h = x0, y + row_h, 0
        panel = _memory_panel(name, layout, so_far[name], memory.now(step, name), x, y + 18)
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
            "width": int(width), "height": int(height), "values": notes}


def values_notes(trace, block) -> list[str]:
    """Where the shown tiles come from, when not from the launch's own recording (a re-run), and why
    some are missing and how to record them: a line each."""
    log = trace.steps
    rerun = {"block": "re-running it alone (exact: it reads no other block's writes, no atomics)",
             "launch": "re-running the whole launch, in its order, keeping only them"}.get(log.values_source(block))
    kept = f"the launch kept the values of its first {log.kept_steps} steps ({budget_text(log.max_bytes)})"
    return [line for line in (rerun and f"{kept}; this block's are from {rerun}", log.missing(block)) if line]


def _cells_svg(k, p, cell) -> list[str]:
    out = [f'<g class="panel" data-panel="{k}" stroke="white" stroke-width="1">']
    colours, which = np.unique(p["fill"], axis=0, return_inverse=True)   # few colours: each written once
    colours = [hex_colour(c) for c in colours]
    out += [f'<rect class="cell" data-cell="{i}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
            f'fill="{colours[f]}"/>' for i, (x, y, f) in enumerate(zip(p["cx"].tolist(), p["cy"].tolist(),
                                                                       which.reshape(-1).tolist()))]
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
        return np.unique(p["lane_cells"][(p["lanes"] == np.asarray(selected["index"])).all(axis=1)]).tolist()
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
        self._blocks: OrderedDict = OrderedDict()   # block -> (its steps, its BlockMemory), the last few used
        self._steps, self._memory = self._block_state(block)
        self._message, self._jumped = "", None
        super().__init__(data=stepper_data(trace, block, step, self._steps, memory=self._memory), block=block,
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

    def _block_state(self, block) -> tuple:
        """(steps, BlockMemory) of a block, kept for the BLOCKS_KEPT blocks used last: going back to a
        block, or stepping in it, replays nothing."""
        key = tuple(int(b) for b in block)
        if key not in self._blocks:
            steps = steps_of(self._trace, key)
            self._blocks[key] = (steps, BlockMemory(steps, self._trace.arrays))
            while len(self._blocks) > BLOCKS_KEPT:
                self._blocks.popitem(last=False)
        self._blocks.move_to_end(key)
        return self._blocks[key]

    def _recompute(self, change):
        if change["name"] == "block":
            self._steps, self._memory = self._block_state(self.block)
            if self.step >= len(self._steps):
                self.step = len(self._steps) - 1   # this recomputes
                return
        self.data = stepper_data(self._trace, self.block, self.step, self._steps, memory=self._memory,
                                 message=self._message, selected=self.selected)

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
