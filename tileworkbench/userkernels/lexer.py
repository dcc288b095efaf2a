"""Tokens of a CUDA C snippet (a kernel body, a map or reduce expression, a preamble), read by C's
translation phases (C11 5.1.1.2), as NVRTC reads them:

1. line splicing: a backslash before a line break (LF, CRLF or CR) joins the two lines, so a `//`
   comment ended by a backslash goes on over the next line;
2. comments become one space: `//` to the end of the (spliced) line, `/* ... */` across lines;
3. tokens: identifiers are ASCII letters, digits and `_` (NVRTC rejects other characters).

A `Snippet` is one piece of C text a user handed over, with a name saying which piece it is; every
token keeps its offsets into that text as written, so any later error renders the user's line
with a caret:

    Unsupported operator '<<='
      "<squared_diff operation>", line 1, col 3-5, in squared_diff:
        z <<= 2
          ^^^
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cached_property

from ..errors import SourceLoc, TileError, TileSyntaxError

LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SPLICE = re.compile(r"\\(?:\r\n|\r|\n)")


@dataclass(frozen=True)
class Snippet:
    """C text plus how to name it in errors (`<name part>`)."""

    text: str
    kernel: str
    part: str

    @cached_property
    def line_starts(self) -> list[int]:
        return [0] + [m.end() for m in LINE_BREAK.finditer(self.text)]

    def line_of(self, offset: int) -> int:
        """1-based line of an offset into the text as written."""
        return bisect.bisect_right(self.line_starts, offset)

    def loc(self, start: int, end: int) -> SourceLoc:
        line = self.line_of(start)
        line_start = self.line_starts[line - 1]
        found = LINE_BREAK.search(self.text, start)
        line_end = len(self.text) if found is None else found.start()
        col = start - line_start
        end_col = max(col + 1, min(end, line_end) - line_start)
        return SourceLoc(f"<{self.kernel} {self.part}>", line, col, line, end_col, self.kernel,
                         self.text[line_start:line_end])

    def error(self, cls: type[TileError], message: str, start: int, end: int) -> TileError:
        return cls(message, self.loc(start, end))


@dataclass(frozen=True)
class Token:
    kind: str      # 'name', 'int', 'float', 'string', 'op', 'end'
    text: str      # as C reads it (splices removed)
    start: int     # offsets into the snippet's text as written
    end: int


# Longest operators first: the regex alternation takes the first that matches.
_OPERATORS = sorted(["<<=", ">>=", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>", "<=",
                     ">=", "==", "!=", "&&", "||", "->", "::", "(", ")", "[", "]", "{", "}", ",", ";", "?", ":",
                     "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "."], key=len, reverse=True)
_TOKEN = re.compile(r"""
    (?P<space>[ \t\n\r\v\f]+|//[^\r\n]*|/\*.*?(?:\*/|\Z))
  | (?P<float>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFlL]?(?![\w.])
              |(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFlL]?(?![\w.])|[0-9]+[eE][+-]?[0-9]+[fFlL]?(?![\w.])
              |[0-9]+[fF](?![\w.]))
  | (?P<int>(?:0[xX][0-9a-fA-F]+|[0-9]+)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)?(?![\w.]))
  | (?P<badnumber>\.?[0-9](?:[eEpP][+-]|[\w.])*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<string>"(?:[^"\\\r\n]|\\.)*"|'(?:[^'\\\r\n]|\\.)*')
  | (?P<op>""" + "|".join(re.escape(op) for op in _OPERATORS) + ")", re.VERBOSE | re.DOTALL | re.ASCII)


def splice(text: str) -> tuple[str, list[int]]:
    """Phase 1: the text with backslash-newlines removed, and for each of its characters (and its
    end) the offset in `text` it came from."""
    pieces, origin, pos = [], [], 0
    for m in _SPLICE.finditer(text):
        pieces.append(text[pos:m.start()])
        origin.extend(range(pos, m.start()))
        pos = m.end()
    pieces.append(text[pos:])
    origin.extend(range(pos, len(text) + 1))
    return "".join(pieces), origin


def tokenize(snippet: Snippet) -> list[Token]:
    """The snippet's tokens, ending with an 'end' token; a character C does not take is a TileSyntaxError."""
    text, origin = splice(snippet.text)
    tokens, pos = [], 0

    def fail(message: str, start: int, end: int):
        raise snippet.error(TileSyntaxError, message, origin[start], origin[max(start, end - 1)] + 1)

    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            ch = text[pos]
            if ch == "#":
                found = LINE_BREAK.search(text, pos)
                fail("Preprocessor directives are not supported: write constants as `const` variables or "
                     "functions", pos, len(text) if found is None else found.start())
            if ch in "\"'":
                fail("Unterminated string or character literal", pos, pos + 1)
            if not ch.isascii():
                fail(f"Character {ch!r} (U+{ord(ch):04X}) is not allowed: CUDA C names are ASCII letters, digits "
                     f"and '_' (NVRTC rejects this text)", pos, pos + 1)
            fail(f"Unexpected character {ch!r}", pos, pos + 1)
        if m.group().startswith("/*") and (len(m.group()) < 4 or not m.group().endswith("*/")):
            fail("Unterminated comment: '/*' without '*/'", pos, pos + 2)
        if m.lastgroup == "badnumber":
            fail(f"Invalid number '{m.group()}'", m.start(), m.end())
        if m.lastgroup != "space":
            tokens.append(Token(m.lastgroup, m.group(), origin[m.start()], origin[m.end() - 1] + 1))
        pos = m.end()
    tokens.append(Token("end", "", len(snippet.text), len(snippet.text)))
    return tokens
