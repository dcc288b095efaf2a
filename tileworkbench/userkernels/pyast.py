"""The generated tile kernels as Python syntax trees, so user text never becomes Python text.

Expressions are built from templates written in this package, their parts filled in as nodes:

    py("ct.where(c, a, b)", c=cond, a=x, b=y)

Names cannot collide. A C name the user wrote is used as is unless it starts with `_` or `u_`,
is a Python keyword or builtin, or is one of the names generated kernels use (`ct`, `cops`, the
tile-shape constants); those get `u_` in front (`lambda` -> `u_lambda`, `_rest1` -> `u__rest1`).
Every name the generator makes starts with `_` and comes from one `Names`, so a user's `x_val`
or `_rest1` is never a generated variable. The kernel's text (what views and errors show) is
`ast.unparse` of the trees, with each C statement as a comment whose line breaks and control
characters are spaces, so a comment can never end early.
"""
from __future__ import annotations

import ast
import builtins
import keyword
import math
from dataclasses import dataclass, field

from ..ir.types import DType

KERNEL_NAMES = frozenset({"ct", "cops", "TILE", "TM", "TK"})
_TAKEN = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | KERNEL_NAMES


def user_name(c_name: str) -> str:
    """The Python name of a C identifier (ASCII by then): the same unless it could meet a
    generated or Python name (see the module docstring)."""
    return f"u_{c_name}" if c_name.startswith(("_", "u_")) or c_name in _TAKEN else c_name


@dataclass
class Names:
    """The generated names of one kernel: all start with `_`, none twice."""

    taken: set = field(default_factory=set)

    def fresh(self, base: str) -> str:
        name, k = f"_{base.strip('_')}", 0
        while name in self.taken:
            k += 1
            name = f"_{base.strip('_')}_{k}"
        self.taken.add(name)
        return name


class _Fill(ast.NodeTransformer):
    def __init__(self, parts: dict):
        self.parts = parts

    def visit_Name(self, node: ast.Name):
        part = self.parts.get(node.id)
        if part is None:
            return node
        return ast.Name(part, ast.Load()) if isinstance(part, str) else part


def py(template: str, **parts) -> ast.expr:
    """An expression from a template of this package; a part is a node or a Python name."""
    return _Fill(parts).visit(ast.parse(template, mode="eval").body)


def py_stmt(template: str, **parts) -> ast.stmt:
    return _Fill(parts).visit(ast.parse(template).body[0])


def assign(target: str, value: ast.expr) -> ast.stmt:
    return ast.Assign([ast.Name(target, ast.Store())], value)


def const(value) -> ast.expr:
    """A Python constant; infinities and NaN as `float('inf')`, which the frontend folds."""
    if isinstance(value, float) and not math.isfinite(value):
        return py("float(v)", v=ast.Constant(str(value)))
    return ast.Constant(value)


def dtype_node(dtype: DType) -> ast.expr:
    return py(f"ct.{dtype.name}")


def comment(text: str) -> str:
    """A `# ...` line holding `text` (C source), which cannot break the line."""
    return "# " + " ".join("".join(c if c.isprintable() else " " for c in text).split())


def too_deep(node: ast.AST, limit: int) -> bool:
    """Whether the tree is deeper than `limit` (deep trees are bound to variables, so the Python
    compiler and the frontend never meet them)."""
    if limit <= 0:
        return True
    return any(too_deep(child, limit - 1) for child in ast.iter_child_nodes(node))


@dataclass
class Loop:
    """A `for` statement whose body holds comments too."""

    node: ast.For
    body: list


def render(entries: list, indent: str) -> list[str]:
    """Source lines of a body: comments, statements and loops."""
    lines = []
    for entry in entries:
        if isinstance(entry, str):
            lines.append(indent + entry)
        elif isinstance(entry, Loop):
            header = ast.fix_missing_locations(ast.For(entry.node.target, entry.node.iter, [ast.Pass()], []))
            lines.append(indent + ast.unparse(header).splitlines()[0])
            lines += render(entry.body, indent + "    ")
        else:
            lines += [indent + line for line in ast.unparse(ast.fix_missing_locations(entry)).splitlines()]
    return lines


def function_source(name: str, params: list[str], constants: list[str], body: list) -> str:
    """`def name(params, C: ct.Constant[int], ...):` over the body, as text."""
    args = [ast.arg(p) for p in params] + [ast.arg(c, py("ct.Constant[int]")) for c in constants]
    header = ast.FunctionDef(name, ast.arguments([], args, None, [], [], None, []), [ast.Pass()], [], None, None)
    header = ast.unparse(ast.fix_missing_locations(header)).splitlines()[0]
    return "\n".join([header, *render(body, "    ")]) + "\n"
