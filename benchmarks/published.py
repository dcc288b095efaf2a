"""Load named definitions from a published script (a Triton tutorial, a cuTile sample) without running it.

    module = load(Path(".triton_tutorials/03-matrix-multiplication.py"), ["matmul"])
    module.matmul(a, b)                       # the tutorial's own wrapper and autotuned kernel

    sample = load(Path(".cutile/samples/MatMul.py"), ["cutile_matmul"], cuda_tile="tileworkbench")
    sample.cutile_matmul(a, b)                # cuTile's sample, its `import cuda.tile` bound to tileworkbench

Tutorials and samples are scripts: besides their kernels and wrappers they test, benchmark and plot at
import time. `load` keeps, in their order, only the top-level statements that bind the names asked for
and, transitively, the module-level names those statements use (found with `symtable`, so a function's
own locals do not pull in a top-level variable of the same name); everything else is left out. The
kept text goes to a file of its own (Triton and cuTile read a kernel's source from its file) and is
imported from there.

cuda_tile="tileworkbench" binds the module's imports of `cuda.tile` and its public submodules to
tileworkbench's (as the `cuda.tile` alias does), for this module only: a real cuTile in the same
process is untouched, so one process runs a sample under both.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import re
import symtable
import sys
import tempfile
import types
from pathlib import Path


def _bound(stmt: ast.stmt) -> set[str]:
    """Module-level names a top-level statement binds (defs, classes, imports, assignment targets,
    also inside a top-level try or if), not the names bound inside its functions."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, (ast.Try, ast.If)):
        inner = stmt.body + stmt.orelse + getattr(stmt, "finalbody", []) + \
            [s for h in getattr(stmt, "handlers", []) for s in h.body]
        return set().union(*(_bound(s) for s in inner))
    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
        [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _used_globals(text: str) -> set[str]:
    """Names a statement's text reads from module scope: at its top level, and the implicit globals of
    the functions, classes, lambdas and comprehensions inside it."""
    names = set()

    def visit(table, top):
        for symbol in table.get_symbols():
            if (top and symbol.is_referenced()) or (not top and symbol.is_global()):
                names.add(symbol.get_name())
        for child in table.get_children():
            visit(child, False)
    visit(symtable.symtable(text, "<statement>", "exec"), True)
    return names


def _text(lines: list[str], stmt: ast.stmt) -> str:
    first = min([d.lineno for d in getattr(stmt, "decorator_list", [])] + [stmt.lineno])
    return "\n".join(lines[first - 1:stmt.end_lineno])


def extract(source: str, names: list[str]) -> str:
    """The source of the top-level statements that define `names` and what they use, in file order.
    Raises LookupError naming a wanted name the source does not define."""
    tree, lines = ast.parse(source), source.splitlines()
    statements = [s for s in tree.body if not isinstance(s, ast.Expr)]  # docstrings, calls: never needed
    binders = {}  # name -> indices of the statements binding it
    for i, stmt in enumerate(statements):
        for name in _bound(stmt):
            binders.setdefault(name, []).append(i)
    missing = [n for n in names if n not in binders]
    if missing:
        raise LookupError(f"not defined at the top level: {', '.join(missing)}")
    keep, todo = set(), list(names)
    while todo:
        for i in binders.get(todo.pop(), []):
            if i not in keep:
                keep.add(i)
                todo += sorted(_used_globals(ast.unparse(statements[i])) & binders.keys())
    future = {i for i, s in enumerate(statements) if isinstance(s, ast.ImportFrom) and s.module == "__future__"}
    order = sorted(future) + sorted(keep - future)
    return "\n\n".join(_text(lines, statements[i]) for i in order) + "\n"


def _tileworkbench_import(name, globals=None, locals=None, fromlist=(), level=0):
    """`__import__` with `cuda.tile` and its public submodules resolved to tileworkbench's modules."""
    from tileworkbench.cutile_alias import PACKAGE, PUBLIC_MODULES
    wanted = name == PACKAGE or name.startswith(PACKAGE + ".") or (name == "cuda" and "tile" in (fromlist or ()))
    if level or not wanted:
        return builtins.__import__(name, globals, locals, fromlist, level)
    if name != "cuda" and name not in PUBLIC_MODULES:
        raise ModuleNotFoundError(f"{name} is one of cuTile's internals; tileworkbench has no equivalent")
    if name == "cuda" or not fromlist:  # `from cuda import tile`, `import cuda.tile as ct`: the package `cuda`
        return types.SimpleNamespace(tile=importlib.import_module(PUBLIC_MODULES[PACKAGE]))
    return importlib.import_module(PUBLIC_MODULES[name])


def load(path: Path, names: list[str], cuda_tile: str = "cuTile") -> types.ModuleType:
    """A module of `names` from the script at `path` and what they need (see the module's docstring);
    cuda_tile: "cuTile" (imports as they are) or "tileworkbench"."""
    if cuda_tile not in ("cuTile", "tileworkbench"):
        raise ValueError(f"cuda_tile must be 'cuTile' or 'tileworkbench', got {cuda_tile!r}")
    path = Path(path)
    text = f"# {', '.join(names)} from {path} (the rest of the script left out)\n" + \
        extract(path.read_text(), names)
    module_name = re.sub(r"\W", "_", f"published_{path.stem}_{cuda_tile}_{'_'.join(names)}")
    folder = Path(tempfile.mkdtemp(prefix="published_"))
    (folder / f"{module_name}.py").write_text(text)
    spec = importlib.util.spec_from_file_location(module_name, folder / f"{module_name}.py")
    module = importlib.util.module_from_spec(spec)
    if cuda_tile == "tileworkbench":
        module.__builtins__ = dict(vars(builtins), __import__=_tileworkbench_import)
    sys.modules[module_name] = module  # what inspect and dataclasses look a function's module up by
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
