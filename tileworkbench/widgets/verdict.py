"""Verdict: the same launch on the interpreter and on the GPU, compared element by element.

    verdict = verify(kernel, grid, args)        # NumPy args; copies run on both
    VerdictView(verdict)

A mismatch is located by the interpreter's trace: the store that wrote the element gives the
block and the element's position inside that block's tile.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arguments import grid_rank
from ..interp import Status
from ..ir.ops import OPS
from ..profile.check import agreement
from ..runtime import device
from ._base import Data, View, static
from .svg import svg_document, svg_text, text



@dataclass
class Mismatch:
    array: str
    element: tuple
    expected: float
    actual: float
    block: tuple | None = None
    tile_position: tuple | None = None
    line: int | None = None


@dataclass
class ArrayVerdict:
    array: str
    elements: int
    matching: int
    max_abs_error: float
    max_rel_error: float

    @property
    def match_fraction(self) -> float:
        return self.matching / self.elements if self.elements else 1.0


@dataclass
class Verdict:
    kernel: str
    arrays: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)   # the first ones, located
    message: str = ""

    @property
    def ok(self) -> bool:
        return not self.message and all(a.matching == a.elements for a in self.arrays)


def _writer(trace, array: str, element: tuple):
    """(block, position in the tile, line) of the last write of `element` in the interpreter's trace."""
    for event in reversed(trace.events if trace else []):
        if OPS[event.op].access != "write" or event.array != array:
            continue
        hit = np.all(event.coords == np.asarray(element, np.int32), axis=-1) & (event.status == Status.STORED)
        if hit.any():
            lane = np.argwhere(hit)[-1]
            block = tuple(int(b) for b in event.blocks[lane[0]])[:grid_rank(trace.grid)]   # as block_text writes it
            return block, tuple(int(i) for i in lane[1:]), event.line
    return None, None, None


def compare(kernel_name: str, expected: dict, actual: dict, trace=None, rtol=None, atol=None, first: int = 10) -> Verdict:
    """Compare two result sets (array name -> NumPy array); locate the first mismatches through `trace`."""
    verdict = Verdict(kernel_name)
    for name, want in expected.items():
        close, error = agreement(want, actual[name], rtol, atol)
        w, g = want.astype(np.float64), np.asarray(actual[name]).astype(np.float64)
        rel = error / np.maximum(np.abs(w), np.finfo(np.float64).tiny)
        verdict.arrays.append(ArrayVerdict(name, want.size, int(close.sum()), float(np.nanmax(error, initial=0)),
                                           float(np.nanmax(np.where(close, 0, rel), initial=0))))
        for element in map(tuple, np.argwhere(~close)[:max(0, first - len(verdict.mismatches))]):
            block, position, line = _writer(trace, name, element)
            verdict.mismatches.append(Mismatch(name, tuple(int(i) for i in element), float(w[element]),
                                               float(g[element]), block, position, line))
    return verdict


def verify(kernel, grid, args, rtol=None, atol=None) -> Verdict:
    """Run the launch on the interpreter (traced) and on the GPU, and compare every array argument."""
    from .. import tile as ct
    names = [p.name for p in kernel.parameters]
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    trace = ct.interpret(kernel, grid, tuple(host), trace=True)
    reason = device.unavailable_reason()
    if reason is not None:
        return Verdict(kernel.name, message=f"The GPU side needs a CUDA GPU ({reason}); the interpreter ran alone.")
    import cupy

    gpu = [device.to_device(a) for a in args]
    stream = cupy.cuda.get_current_stream()
    ct.launch(stream, grid, kernel, tuple(gpu))
    stream.synchronize()
    expected = {n: h for n, h in zip(names, host) if isinstance(h, np.ndarray)}
    actual = {n: device.to_host(d) for n, h, d in zip(names, host, gpu) if isinstance(h, np.ndarray)}
    return compare(kernel.name, expected, actual, trace, rtol, atol)


NOT_COMPARED = "#555555"   # the headline of a verdict without a comparison (no GPU): neither agree nor mismatch


def verdict_data(v: Verdict) -> dict:
    return {"kernel": v.kernel, "ok": v.ok, "message": v.message, "compared": bool(v.arrays),
            "arrays": [{"array": a.array, "elements": a.elements, "matching": a.matching,
                        "match": a.match_fraction, "max_abs_error": a.max_abs_error,
                        "max_rel_error": a.max_rel_error} for a in v.arrays],
            "mismatches": [m.__dict__ for m in v.mismatches]}


class VerdictView(View):
    _esm = static("verdict.js")
    data = Data({})

    def __init__(self, verdict: Verdict, **kwargs):
        super().__init__(data=verdict_data(verdict), **kwargs)

    def __repr__(self) -> str:
        d = self.data
        return f"VerdictView({d['kernel']}: {'agree' if d['ok'] else d['message'] or 'mismatch'})"

    def to_svg(self) -> str:
        d = self.data
        lines = [f"{d['kernel']}: " + ("GPU and interpreter agree" if d["ok"] else d["message"] or "MISMATCH")]
        for a in d["arrays"]:
            lines.append(f"{a['array']}: {a['match']:.2%} of {a['elements']} match; max abs error "
                         f"{a['max_abs_error']:.3g}, max rel error {a['max_rel_error']:.3g}")
        for m in d["mismatches"]:
            lines.append(f"{m['array']}{list(m['element'])}: expected {m['expected']:.6g}, got {m['actual']:.6g}"
                         + (f" (block {m['block']}, tile position {tuple(m['tile_position'])}, line {m['line']})"
                            if m["block"] else ""))
        colour = "#2ca02c" if d["ok"] else "#d62728" if d["compared"] else NOT_COMPARED
        body = [svg_text(text(10, 24, lines[0], size=13, weight="bold"), colour)]
        body += [svg_text(text(10, 24 + 18 * k, line)) for k, line in enumerate(lines[1:], 1)]
        return svg_document(max(760, 10 + 7 * max(map(len, lines))), 24 + 18 * len(lines), body)
