"""The TileError family: every user mistake in a kernel is one of these, with a source location.

`str(error)` is the message followed by one frame per inlining level, from the kernel down to
the failing expression, each with the source line and a caret under the expression:

    Index size 1 does not match the array rank 2
      "<cell>", line 4, col 9-29, in add:
            t = ct.load(a, (i,), (16, 16))
                ^^^^^^^^^^^^^^^^^^^^^^^^^^

IPython shows exactly that text (through `_render_traceback_`), never the compiler's own stack.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A source range: 1-based lines, 0-based columns (as Python's AST gives them)."""

    filename: str
    line: int
    col: int
    end_line: int
    end_col: int
    function: str
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col + 1}"

    def frame_text(self) -> str:
        """One frame: the location header, the source line as written and a caret under the
        expression (cuTile's layout)."""
        end_col = self.end_col if self.end_line == self.line else len(self.source_line)
        head = f'  "{self.filename}", line {self.line}, col {self.col + 1}-{end_col}, in {self.function}:'
        if not self.source_line:
            return head
        lead = _display_width(self.source_line[:self.col])
        width = max(1, _display_width(self.source_line[self.col:end_col]))
        return f"{head}\n    {self.source_line.rstrip()}\n    {' ' * lead}{'^' * width}"


def _display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


class TileError(Exception):
    """A mistake in tile code, reported at its source location(s)."""

    def __init__(self, message: str, loc: SourceLoc | None = None, frames: tuple[SourceLoc, ...] = ()):
        self.message = message
        self.frames = frames or ((loc,) if loc else ())
        super().__init__(message)

    @property
    def loc(self) -> SourceLoc | None:
        """The innermost location: the expression that failed."""
        return self.frames[-1] if self.frames else None

    def with_frames(self, frames: tuple[SourceLoc, ...]) -> TileError:
        """Prepend outer (call-site) frames when the error leaves an inlined helper."""
        self.frames = tuple(frames) + self.frames
        return self

    def __str__(self) -> str:
        # each frame ends its line, as in cuTile's messages
        return "".join([self.message, *("\n" + f.frame_text() for f in self.frames)]) + ("\n" if self.frames else "")

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing the Python stack: the user sees their line only.
        return [f"{type(self).__name__}: {str(self).rstrip()}"]


class TileSyntaxError(TileError):
    """Python syntax that tile code does not support."""


class TileTypeError(TileError):
    """A type, shape or dtype rule was broken (not a subclass of the builtin TypeError, as in cuTile)."""


class TileValueError(TileError):
    """A value is out of its allowed range (a constant too big for its dtype, a bad latency hint...)."""


class TileUnsupportedFeatureError(TileError):
    """A feature this implementation does not have (yet)."""


class TileRecursionError(TileError):
    """Helper functions inlined too deeply (recursion)."""


class TileStaticAssertionError(TileError):
    """A `static_assert` failed."""


class TileStaticEvalError(TileError):
    """A `static_eval` or `static_iter` expression failed at compile time."""


class StaticException(TileStaticEvalError):
    """`raise ct.static_exception(exc)` was reached at compile time (cuTile's name)."""


class TileAssertionError(TileError):
    """A `ct.assert_` condition was false when the interpreter ran it."""


class TileInternalError(TileError):
    """A bug in tileworkbench itself, never the user's fault."""


class TileOutOfBoundsError(TileError):
    """The interpreter's checked mode found an access outside the array with check_bounds=False."""


class TileUndeterminedPaddingError(TileError):
    """The interpreter's strict padding mode found a load reading UNDETERMINED padding."""


class TileCompilerExecutionError(TileError):
    """The CUDA compiler rejected generated or user code."""


class TileCompilerTimeoutError(TileError):
    """The CUDA compiler took too long."""


class UserInputError(Exception):
    """Mixed into the TypeError/ValueError raised for a bad launch argument, grid or option: the
    message says everything, so the notebook shows it alone, without a stack."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class ArgumentTypeError(UserInputError, TypeError):
    """A launch argument of the wrong kind (a missing argument, a list for an array...)."""


class ArgumentValueError(UserInputError, ValueError):
    """A launch argument or option with a bad value (a grid of 0 blocks, an unknown GPU arch...)."""
