"""Where a kernel's code lives: its parsed AST and how AST positions map to the user's lines."""
from __future__ import annotations

import ast
import collections
import functools
import inspect
import linecache
import textwrap
import threading
from dataclasses import dataclass

from ..errors import SourceLoc, TileSyntaxError


def cell_filename(number: int) -> str:
    """The file name a %%tilekernel cell's code is compiled under (its lines are the cell's, the
    header being line 1)."""
    return f"<tilekernel-{number}>"


def is_cell_file(filename: str) -> bool:
    """Whether code of `filename` was written in a %%tilekernel cell."""
    return filename.startswith("<tilekernel-")


@dataclass
class FuncSource:
    """A parsed Python function with what is needed to point at its lines."""

    node: ast.FunctionDef | ast.Lambda
    filename: str
    line_offset: int   # added to AST line numbers to get file lines
    col_offset: int    # indentation removed before parsing
    lines: list[str]   # the file's lines
    name: str
    globals: dict
    closure: dict

    def loc(self, node: ast.AST) -> SourceLoc:
        line = getattr(node, "lineno", self.node.lineno) + self.line_offset
        end_line = (getattr(node, "end_lineno", None) or node.lineno) + self.line_offset
        col = getattr(node, "col_offset", 0) + self.col_offset
        end_col = (getattr(node, "end_col_offset", None) or col) + self.col_offset
        text = self.lines[line - 1].rstrip("\n") if 0 < line <= len(self.lines) else ""
        return SourceLoc(self.filename, line, col, end_line, end_col, self.name, text)


SOURCE_CACHE_SIZE = 512   # parsed definitions kept (about 13 KiB each); a fuzzer defines millions of kernels
_cache: collections.OrderedDict = collections.OrderedDict()   # least recently used first
_cache_lock = threading.Lock()   # launches may come from several threads (sweeps)


def _code_key(pyfunc):
    # Code objects compare by content (bytecode, constants, names, line table): an edited and
    # re-run definition is a new key even where its file name and first line are reused.
    code = pyfunc.__code__
    return (code.co_filename, code)


def source_of(pyfunc) -> FuncSource:
    """Parse a Python function (a kernel or a helper) once; the last SOURCE_CACHE_SIZE parsed are
    kept, by code object. The entry keeps what parsing found, not the function's globals or
    closure (they are the caller's and may hold big arrays): those are read from `pyfunc` each time."""
    key = _code_key(pyfunc)
    with _cache_lock:
        parsed = _cache.get(key)
        if parsed is not None:
            _cache.move_to_end(key)
    if parsed is None:
        parsed = _parse(pyfunc)
        with _cache_lock:
            _cache[key] = parsed
            if len(_cache) > SOURCE_CACHE_SIZE:
                _cache.popitem(last=False)
    return FuncSource(*parsed, pyfunc.__globals__, _closure_of(pyfunc))


def _parse(pyfunc) -> tuple:
    """(node, filename, line_offset, col_offset, lines, name) of a function's definition."""
    filename = pyfunc.__code__.co_filename
    if pyfunc.__name__ == "<lambda>":
        found = _lambda_source(pyfunc)
        if found is not None:
            return found
    try:
        lines, first = _definition_lines(pyfunc)
    except (OSError, TypeError):
        raise TileSyntaxError(f"Cannot read the source of {pyfunc.__qualname__}: tile code must be defined in a "
                              f"file, a notebook cell or a %%tilekernel cell") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    col_shift = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
    tree = ast.parse(dedented)
    node = tree.body[0]
    if isinstance(node, ast.Assign) or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = next(n for n in ast.walk(tree) if isinstance(n, ast.Lambda))
    all_lines = linecache.getlines(filename) or lines
    offset = first - 1 if linecache.getlines(filename) else 0
    return node, filename, offset, col_shift, all_lines, pyfunc.__name__


def _definition_lines(pyfunc) -> tuple[list[str], int]:
    """The lines of the definition of `pyfunc` (decorators included) and its first line, as
    inspect.getsourcelines gives them. Found in the parsed file (cached per text) by the line its
    code starts at, which spares a first launch inspect's scan of every loaded module's path and
    its tokenizer; inspect answers where the file does not parse."""
    code = pyfunc.__code__
    linecache.checkcache(code.co_filename)  # as inspect does: a file edited since it was read
    lines = linecache.getlines(code.co_filename, pyfunc.__globals__)
    tree = _parse_file("".join(lines)) if lines else None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if first == code.co_firstlineno:
                return lines[first - 1:node.end_lineno], first
    return inspect.getsourcelines(code)  # not unwrapped: a decorator's wrapper is itself


@functools.lru_cache(maxsize=32)
def _parse_file(text: str):
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):  # e.g. a notebook cell with IPython syntax
        return None


def _lambda_source(pyfunc) -> tuple | None:
    """A lambda, found in its whole file or cell: several lambdas may share a line, and a lambda may
    start inside a call that spans lines, so the lambda's own lines do not parse on their own."""
    code = pyfunc.__code__
    lines = linecache.getlines(code.co_filename)
    tree = _parse_file("".join(lines))
    if tree is None:
        return None
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    same = [n for n in candidates if _signature_of(_compiled_lambda(n, code.co_filename)) == _signature_of(code)]
    # bytecode is no test: compiled alone, `ct.max(x)` may load a method where the file loaded an attribute
    columns = {col for line, _, col, _ in code.co_positions() if line == code.co_firstlineno and col is not None}
    at_column = [n for n in same if any(n.col_offset <= col < n.end_col_offset for col in columns)]
    for node in at_column or same:
        return node, code.co_filename, 0, 0, lines, "<lambda>"
    return None


def _compiled_lambda(node: ast.Lambda, filename: str):
    compiled = compile(ast.Expression(body=node), filename, "eval")
    return next(c for c in compiled.co_consts if isinstance(c, type(compiled)))


def _signature_of(code) -> tuple:
    """What tells lambdas of one line apart: the names, constants and variables they use."""
    return code.co_names, code.co_consts, code.co_varnames, code.co_argcount


def _closure_of(pyfunc) -> dict:
    if not pyfunc.__closure__:
        return {}
    out = {}
    for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell: the name is not bound yet
            pass
    return out
