"""Tokens of a CUDA C snippet (a kernel body, a map or reduce expression, a preamble).

A `Snippet` is one piece of C text a user handed over, with a name saying which piece it is; every
token keeps its offsets into it, so any later error renders the snippet's line with a caret:

    Unsupported operator '<<='
      "<squared_diff operation>", line 1, col 3-5, in squared_diff:
        z <<= 2
          ^^^
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import SourceLoc, TileError, TileSyntaxError


@dataclass(frozen=True)
class Snippet:
    """C text plus how to name it in errors (`<name part>`)."""

    text: str
    kernel: str
    part: str

    def loc(self, start: int, end: int) -> SourceLoc:
        line = self.text.count("\n", 0, start) + 1
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", start)
        line_end = len(self.text) if line_end < 0 else line_end
        col = start - line_start
        end_col = max(col + 1, min(end, line_end) - line_start)
        return SourceLoc(f"<{self.kernel} {self.part}>", line, col, line, end_col, self.kernel,
                         self.text[line_start:line_end])

    def error(self, cls: type[TileError], message: str, start: int, end: int) -> TileError:
        return cls(message, self.loc(start, end))


@dataclass(frozen=True)
class Token:
    kind: str      # 'name', 'int', 'float', 'op', 'end'
    text: str
    start: int
    end: int


# Longest operators first: the regex alternation takes the first that matches.
_OPERATORS = sorted(["<<=", ">>=", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "->", "::", "(", ")", "[", "]", "{", "}", ",", ";", "?", ":", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "."], key=len, reverse=True)
_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fFlL]?|\d+[eE][+-]?\d+[fFlL]?|\d+[fF](?![\w.]))
  | (?P<int>(?:0[xX][0-9a-fA-F]+|\d+)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)?(?![\w.]))
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>""" + "|".join(re.escape(op) for op in _OPERATORS) + ")", re.VERBOSE | re.DOTALL)


def tokenize(snippet: Snippet) -> list[Token]:
    """The snippet's tokens, ending with an 'end' token; an unknown character is a TileSyntaxError."""
    tokens, pos, text = [], 0, snippet.text
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos] == "#":
                end = text.find("\n", pos)
                raise snippet.error(TileSyntaxError, "Preprocessor directives are not supported: write constants "
                                    "as `const` variables or functions", pos, len(text) if end < 0 else end)
            raise snippet.error(TileSyntaxError, f"Unexpected character {text[pos]!r}", pos, pos + 1)
        if m.lastgroup != "space":
            tokens.append(Token(m.lastgroup, m.group(), m.start(), m.end()))
        pos = m.end()
    tokens.append(Token("end", "", len(text), len(text)))
    return tokens
