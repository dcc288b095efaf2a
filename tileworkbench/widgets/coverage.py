"""Block scrubber and coverage: how often every element was written and read, over all blocks,
and what one block touched.

Outputs are coloured by write count (0: a hole, 2 or more: an overlap), inputs by read count.
A slider per grid axis (and a play button) picks the block whose footprint is outlined; clicking
an element selects the block that wrote it (clicking again cycles through several writers).

    >>> view = CoverageView.from_trace(run(copy, (3,), (x, y, 4), trace=True))
    >>> view.block = [1, 0, 0]

Arrays bigger than 32x32 (64 for 1-D, 4 slices for 3-D) are drawn in bins of several elements:
a bin shows its worst element (a hole before an overlap before a single write).
"""
from __future__ import annotations

import math

import numpy as np
import traitlets

from ..arguments import block_text, grid_rank  # noqa: F401 - grid_rank: the views import it from here
from ..interp import Status
from ._base import Data, SvgView, static
from .svg import LABEL_H, MIN_FONT, PAD, TITLE_H, clip, hex_colour, legend_width, light_ink, text, with_outlines
from .transform import as_slices, cell_size, figure_svg, slice_cells

READ, WRITE = 1, 2
CAPS = (4, 32, 32)
PANEL_TEXT_CHARS = 110   # the longest source summary under a panel's title
CAPS_1D = (1, 1, 64)
HOLE, ONCE, TWICE, MORE = (229, 57, 53), (129, 199, 132), (255, 183, 77), (142, 36, 170)
UNREAD, READ_LIGHT, READ_DARK = (238, 238, 238), (187, 222, 251), (41, 98, 255)
WRITE_OUTLINE, READ_OUTLINE, SELECTED_OUTLINE = "#000000", "#d81b60", "#ff6f00"


def linear_block(grid, block) -> int:
    """The block's number, axis 0 fastest (as the interpreter and CUDA number them)."""
    b = tuple(block) + (0,) * (3 - len(block))
    return int(b[0] + grid[0] * (b[1] + grid[1] * b[2]))


def block_of(grid, linear: int) -> tuple[int, int, int]:
    return (linear % grid[0], linear // grid[0] % grid[1], linear // (grid[0] * grid[1]))


def lanes(trace, name: str):
    """Every element access of array `name`: (block numbers, flat element indices, WRITE or READ)."""
    shape = tuple(trace.arrays[name]["shape"])
    strides = np.array([math.prod(shape[k + 1:]) for k in range(len(shape))], np.int64)
    parts = []
    for e in trace.by_array(name):
        status = e.status.reshape(len(e.blocks), -1)
        # a collision lane wrote too: which value won is unspecified
        written = (status == Status.STORED) | (status == Status.COLLISION)
        touched = written | (status == Status.LOADED)
        blocks = e.blocks[:, 0] + trace.grid[0] * (e.blocks[:, 1] + trace.grid[1] * e.blocks[:, 2])
        rows = np.repeat(blocks.astype(np.int64), status.shape[1])
        # flat indices by strides: coordinates of untouched lanes may lie outside the array
        coords = e.coords.reshape(-1, len(shape))
        flat = sum(coords[:, k] * strides[k] for k in range(len(shape))) if shape else np.zeros(status.size, np.int64)
        kind = (written.ravel() + np.int8(READ)).astype(np.int8)   # READ 1, WRITE 2
        if not touched.all():
            keep = touched.ravel()
            rows, flat, kind = rows[keep], flat[keep], kind[keep]
        parts.append((rows, flat, kind))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8)
    return parts[0] if len(parts) == 1 else tuple(np.concatenate(p) for p in zip(*parts))


def access_counts(trace, name: str, accesses=None) -> tuple[np.ndarray, np.ndarray]:
    """(reads, writes) per element of array `name`, over all blocks, in the array's shape
    (`accesses`: what `lanes` returns for it, when already at hand)."""
    shape = tuple(trace.arrays[name]["shape"])
    _, flat, kind = lanes(trace, name) if accesses is None else accesses
    size = math.prod(shape)
    reads = np.bincount(flat[kind == READ], minlength=size).reshape(shape)
    writes = np.bincount(flat[kind == WRITE], minlength=size).reshape(shape)
    return reads, writes


def block_footprint(trace, block) -> dict[str, np.ndarray]:
    """What one block touched: per array, a uint8 array of its shape, READ | WRITE bits per element."""
    target, out = linear_block(trace.grid, block), {}
    for name, meta in trace.arrays.items():
        rows, flat, kind = lanes(trace, name)
        mask = np.zeros(math.prod(meta["shape"]), np.uint8)
        np.bitwise_or.at(mask, flat[rows == target], kind[rows == target].astype(np.uint8))
        out[name] = mask.reshape(meta["shape"])
    return out


def blocks_at(trace, name: str, index, kind: int = WRITE) -> list[tuple[int, int, int]]:
    """The blocks that wrote (kind=READ: read) element `index` of array `name`, in block order."""
    rows, flat, kinds = lanes(trace, name)
    target = np.ravel_multi_index(tuple(index), trace.arrays[name]["shape"])
    return [block_of(trace.grid, int(b)) for b in np.unique(rows[(flat == target) & (kinds == kind)])]


def next_block(candidates, current):
    """Clicking cycles: the candidate after `current`, or the first one."""
    candidates = [tuple(c) for c in candidates]
    if not candidates:
        return None
    current = tuple(current)
    return candidates[(candidates.index(current) + 1) % len(candidates)] if current in candidates else candidates[0]


def _bins(shape):
    view = as_slices(shape)
    caps = CAPS_1D if len(shape) <= 1 else CAPS
    factors = tuple(-(-d // c) for d, c in zip(view, caps))
    return view, factors, tuple(-(-d // f) for d, f in zip(view, factors))


def element_cell(shape, index) -> int | None:
    """The cell (bin) that draws element `index` of an array of `shape`, None if it is outside."""
    shape, index = tuple(shape), tuple(int(i) for i in index)
    if len(index) != len(shape) or any(not 0 <= i < n for i, n in zip(index, shape)):
        return None
    view, factors, binned = _bins(shape)
    flat = np.ravel_multi_index(index, shape) if shape else 0
    return int(_bin_of(np.array([flat]), view, factors, binned)[0])


def _bin_of(flat, view, factors, binned):
    """The bin of each flat element index of an array drawn as `view` in bins of `factors`."""
    s, r, c = (np.arange(n, dtype=np.int32) // f for n, f in zip(view, factors))
    table = (s * (binned[1] * binned[2]))[:, None, None] + (r * binned[2])[None, :, None] + c[None, None, :]
    return table.ravel()[flat]


def _reduce(counts, view, factors, binned, how):
    """Per-bin min or max of an element array drawn as `view` in bins of `factors`."""
    padded = np.full(tuple(b * f for b, f in zip(binned, factors)), -1 if how is np.max else np.iinfo(np.int64).max)
    padded[:view[0], :view[1], :view[2]] = counts.reshape(view)
    blocks = padded.reshape(binned[0], factors[0], binned[1], factors[1], binned[2], factors[2])
    return how(blocks, axis=(1, 3, 5))


def _csr(keys, values, n):
    """Group `values` by `keys` (0..n-1): (start offsets, values sorted by key)."""
    order = np.lexsort((values, keys))
    return (np.searchsorted(keys[order], np.arange(n + 1)).astype(np.int32), values[order])


def _fills(lo, hi, written: bool, read_max: int):
    if written:
        fill = np.select([lo[:, None] == 0, hi[:, None] == 1, hi[:, None] == 2],
                         [np.array(HOLE), np.array(ONCE), np.array(TWICE)], np.array(MORE))
    else:
        t = np.clip(hi / max(read_max, 1), 0, 1)[:, None]
        fill = np.where(hi[:, None] > 0, np.array(READ_LIGHT) * (1 - t) + np.array(READ_DARK) * t, np.array(UNREAD))
    return np.round(fill).astype(np.uint8)


def _lines_of(trace, name):
    seen = {}
    for e in trace.by_array(name):
        seen.setdefault(e.line, f"{e.op} line {e.line}: {e.source.strip()}")
    return "; ".join(seen.values())


def coverage_data(trace, arrays=None) -> dict:
    """The figure of a trace: one panel per array (in `arrays`, or all touched), stacked.

    A panel carries its cells' fills and labels (write counts of written arrays, read counts of
    the others), the count summary, `fp_start`/`fp_cells`/`fp_kind` (cells touched per block
    number, READ | WRITE) and `who_start`/`who` (the block numbers that wrote, or for inputs read,
    each cell)."""
    names = list(arrays) if arrays is not None else [n for n in trace.arrays if trace.by_array(n)]
    unknown = [n for n in names if n not in trace.arrays]
    if unknown:
        raise ValueError(f"{trace.kernel} has no array {', '.join(unknown)} (it has {', '.join(trace.arrays)})")
    grid, n_blocks = tuple(trace.grid), math.prod(trace.grid)
    title = f"{trace.kernel}: coverage over grid {' x '.join(map(str, grid[:grid_rank(grid)]))}"
    texts, panels, y = [text(PAD, 16, title, size=13, weight="bold")], [], TITLE_H + 8
    shown = [_bins(tuple(trace.arrays[n]["shape"])) for n in names]
    cell = _widened(min([cell_size(b[1], b[2]) for _, _, b in shown] or [20]), [b for _, _, b in shown])
    width = PAD + 7 * len(title)
    for name, (view, factors, binned) in zip(names, shown):
        shape = tuple(trace.arrays[name]["shape"])
        rows, flat, kind = accesses = lanes(trace, name)
        reads, writes = access_counts(trace, name, accesses)
        written = bool((kind == WRITE).any())
        counts = writes if written else reads
        lo = _reduce(counts, view, factors, binned, np.min).ravel()
        hi = _reduce(counts, view, factors, binned, np.max).ravel()
        fill = _fills(lo, hi, written, int(reads.max(initial=0)))
        n_cells = math.prod(binned)
        bins = _bin_of(flat, view, factors, binned)
        # each (block, cell) pair once, with READ | WRITE: the distinct (block, cell, kind) triples, merged
        triples = np.unique((rows * n_cells + bins) * 4 + kind)
        pairs, first = np.unique(triples // 4, return_index=True)
        fp_kind = np.bitwise_or.reduceat(triples % 4, first) if len(triples) else triples
        fp_start, fp_cells = _csr(pairs // n_cells, pairs % n_cells, n_blocks)
        mine = fp_kind & (WRITE if written else READ) > 0
        who_start, who = _csr(pairs[mine] % n_cells, pairs[mine] // n_cells, n_cells)
        summary = (f"written: {int((writes == 1).sum())} once, {int((writes == 0).sum())} holes, "
                   f"{int((writes > 1).sum())} overlaps" if written else f"read: max {int(reads.max(initial=0))} "
                   f"times, {int((reads == 0).sum())} never")
        binning = "" if factors == (1, 1, 1) else f", bins of {' x '.join(map(str, factors[3 - min(len(shape), 3):]))}"
        texts.append(text(PAD, y + 12, f"{name} {shape} {trace.arrays[name]['dtype']}{binning} \u2014 {summary}",
                          weight="bold"))
        texts.append(text(PAD, y + 28, clip(_lines_of(trace, name), PANEL_TEXT_CHARS), size=MIN_FONT))
        top = y + LABEL_H + 14 + (12 if len(shape) > 2 else 0)
        cx, cy, w, h = slice_cells(binned, cell, PAD, top)
        if len(shape) > 2:
            texts += [text(PAD + k * (binned[2] * cell + PAD), top - 3, f"[{k * factors[0]}]", size=10)
                      for k in range(binned[0])]
        label = hi if factors == (1, 1, 1) else np.full(n_cells, -1)
        panels.append({"name": name, "shape": list(shape), "written": written, "factors": list(factors),
                       "binned": list(binned), "cx": cx, "cy": cy, "fill": fill,
                       "ink": light_ink(fill).astype(np.uint8),
                       "text": label.astype(np.int32), "fp_start": fp_start, "fp_cells": fp_cells.astype(np.int32),
                       "fp_kind": fp_kind.astype(np.uint8),   # pairs are sorted by block, then cell
                       "who_start": who_start, "who": who.astype(np.int32),
                       "holes": int((writes == 0).sum()) if written else 0,
                       "overlaps": int((writes > 1).sum()) if written else 0})
        width = max(width, PAD + w + PAD, PAD + 7 * len(texts[-2]["text"]))
        y = top + h + PAD + 6
    return {"title": title, "kernel": trace.kernel, "grid": list(grid), "rank": grid_rank(grid), "cell": cell,
            "width": int(width), "height": int(y), "texts": texts, "panels": panels, "legend": LEGEND}


LEGEND = [{"label": "hole (never written)", "colour": hex_colour(HOLE)},
          {"label": "written once", "colour": hex_colour(ONCE)},
          {"label": "twice", "colour": hex_colour(TWICE)},
          {"label": "3+ (overlap)", "colour": hex_colour(MORE)},
          {"label": "read (darker: more)", "colour": hex_colour(READ_DARK)},
          {"label": "block writes (outline)", "colour": WRITE_OUTLINE},
          {"label": "block reads (outline)", "colour": READ_OUTLINE}]
MAX_CELL = 40          # pixels: a small array's cells grow up to this
MAX_PANEL_H = 480      # pixels: and its panel no taller than this


def _widened(cell: int, binned: list) -> int:
    """Cells large enough that the widest array spans the legend's width (a small array would
    otherwise be a strip under a much wider legend), within MAX_CELL and MAX_PANEL_H."""
    target = legend_width(LEGEND) - 2 * PAD
    fits = [min((target - (s - 1) * PAD) // (s * c), MAX_PANEL_H // r) for s, r, c in binned]
    return max(cell, min([MAX_CELL, *fits]))


def footprint_outlines(data: dict, block) -> list[tuple[int, list[int], str]]:
    """(panel, cells, colour) outlines of one block's footprint: writes black, reads blue."""
    b = linear_block(data["grid"], block)
    out = []
    for k, p in enumerate(data["panels"]):
        cells = p["fp_cells"][p["fp_start"][b]:p["fp_start"][b + 1]]
        kinds = p["fp_kind"][p["fp_start"][b]:p["fp_start"][b + 1]]
        out.append((k, cells[kinds & WRITE == 0].tolist(), READ_OUTLINE))
        out.append((k, cells[kinds & WRITE > 0].tolist(), WRITE_OUTLINE))
    return out


class CoverageView(SvgView):
    """Write/read counts of every array over the whole grid, with a block scrubber."""

    _esm = static("coverage.js")
    data = Data()
    block = traitlets.List([0, 0, 0]).tag(sync=True)   # the block whose footprint is outlined
    selected = traitlets.Dict().tag(sync=True)          # {"array", "index"} of the clicked element, {} none
    interval_ms = traitlets.Int(500).tag(sync=True)     # play speed

    @classmethod
    def from_trace(cls, trace, arrays=None) -> CoverageView:
        return cls(data=coverage_data(trace, arrays))

    def select(self, array: str, index) -> tuple[int, int, int] | None:
        """What a click on element `index` of `array` does: select the (next) block that wrote it
        (for an array that is only read: that read it). Returns the block, None if there is none."""
        p = next(p for p in self.data["panels"] if p["name"] == array)
        view, factors, binned = _bins(tuple(p["shape"]))
        cell = int(_bin_of(np.ravel_multi_index(tuple(index), p["shape"]) if p["shape"] else 0, view, factors,
                           binned))
        who = p["who"][p["who_start"][cell]:p["who_start"][cell + 1]]
        block = next_block([block_of(self.data["grid"], int(b)) for b in who], self.block)
        if block is not None:
            self.block = [int(v) for v in block]
        return block

    def to_svg(self) -> str:
        fig = dict(self.data)
        fig["texts"] = fig["texts"] + [text(fig["width"] - PAD, 16, block_text(self.block, fig["grid"]),
                                            size=12, weight="bold", anchor="end", role="block")]
        return with_outlines(figure_svg(fig, footprint_outlines(fig, self.block)), self._selected_squares(),
                             SELECTED_OUTLINE)

    @traitlets.observe("selected")
    def _redraw_selected(self, change):
        self.svg = self.to_svg()

    def _selected_squares(self) -> list:
        """The selected element's cell (linked views select elements in each other)."""
        p = next((p for p in self.data["panels"] if p["name"] == self.selected.get("array")), None)
        cell = None if p is None else element_cell(p["shape"], self.selected["index"])
        return [] if cell is None else [(p["cx"][cell], p["cy"][cell], self.data["cell"])]
