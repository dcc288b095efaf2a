"""How a %%tilekernel error reaches the user: a short box at the cell's line, never a stack trace,
and a machine-readable bundle that the JupyterLab extension reads to underline the range.

The bundle (MIME type application/vnd.tileworkbench.diagnostics+json):
    {"kernel": "add", "diagnostics": [{"line": 4, "col": 26, "endLine": 4, "endCol": 30,
                                       "message": "...", "severity": "error", "kind": "TileValueError"}]}
Lines are the cell's (1-based, the %%tilekernel header is line 1); columns are 1-based, endCol exclusive.
"""
from __future__ import annotations

from ..errors import SourceLoc, TileError
from ..frontend.source import is_cell_file

DIAGNOSTICS_MIME = "application/vnd.tileworkbench.diagnostics+json"


def in_cell(loc: SourceLoc) -> bool:
    return is_cell_file(loc.filename)


def diagnostics_bundle(error: TileError, kernel: str) -> dict:
    cell_frames = [f for f in error.frames if in_cell(f)]
    loc = cell_frames[-1] if cell_frames else None  # the innermost place inside the cell
    diagnostics = []
    if loc is not None:
        diagnostics.append({"line": loc.line, "col": loc.col + 1, "endLine": loc.end_line, "endCol": loc.end_col + 1,
                            "message": error.message, "severity": "error", "kind": type(error).__name__})
    # the error box itself is the exception's traceback; front ends without the extension show this line
    where = f" at cell line {loc.line}, column {loc.col + 1}" if loc is not None else ""
    return {DIAGNOSTICS_MIME: {"kernel": kernel, "diagnostics": diagnostics},
            "text/plain": f"{type(error).__name__} in kernel `{kernel}`{where}"}


SOURCE_CHARS = 80   # the most of a source line the box shows: an output that wraps longer lines would move the caret


def render(error: TileError) -> str:
    """The error box: the message, then each frame as `cell line N` (or file:line) with a caret."""
    lines = [f"{type(error).__name__}: {error.message}"]
    for f in error.frames:
        where = f"cell line {f.line}" if in_cell(f) else f"{f.filename}:{f.line}"
        lines.append(f"  {where}, in {f.function}:")
        if f.source_line:
            number = f"{f.line:>4} | "
            end = f.end_col if f.end_line == f.line else len(f.source_line)
            shown, col, width = source_window(f.source_line.rstrip(), f.col, end)
            lines.append(f"  {number}{shown}")
            lines.append(f"  {' ' * (len(number) - 2)}| {' ' * col}{'^' * width}")
    return "\n".join(lines)


def source_window(line: str, col: int, end: int, chars: int = SOURCE_CHARS) -> tuple[str, int, int]:
    """The part of `line` around columns [col, end) that fits in `chars` characters, with an ellipsis
    where it was cut; returns it with the caret's column and width in it.

    >>> source_window("x = " + "a + " * 30 + "oops", 124, 128, 20)
    ('\u2026a + a + a + a + oops', 17, 4)
    """
    end = max(end, col + 1)
    if len(line) <= chars:
        return line, col, min(end, max(len(line), col + 1)) - col
    indent = min(len(line) - len(line.lstrip()), col)   # a long line is shown without its indentation
    line, col, end = line[indent:], col - indent, end - indent
    start = max(0, min(col - max(0, chars - (end - col)) // 2, len(line) - chars, col))
    stop = min(len(line), start + chars)
    lead = "\u2026" if start else ""
    shown = lead + line[start:stop] + ("\u2026" if stop < len(line) else "")
    return shown, col - start + len(lead), max(1, min(end, stop) - col)


class TileKernelCellError(Exception):
    """Raised by %%tilekernel so that run-all stops; IPython shows only the box, not a stack."""

    def __init__(self, text: str, frames):
        super().__init__(text)
        self.text = text
        self.frames = list(frames)

    @classmethod
    def from_tile_error(cls, error: TileError) -> "TileKernelCellError":
        return cls(render(error), error.frames)

    def _render_traceback_(self) -> list[str]:
        return self.text.splitlines()
