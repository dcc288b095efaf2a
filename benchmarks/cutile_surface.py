"""cuTile's public surface against tileworkbench's: every public name of `cuda.tile` and of the
submodules user code imports, with parameter kinds, defaults and enum members.

Runs wherever cuTile's wheel is importable (no GPU needed: only names and signatures are read,
nothing compiles). It imports the real cuTile and tileworkbench's modules side by side (the
alias's module map, tileworkbench/cutile_alias, says which of ours answers for which of cuTile's)
and writes a report: the differences, each marked documented where docs/api_coverage.md names it.

    PYTHONPATH=/path/to/cuda_tile_wheel python benchmarks/cutile_surface.py --out benchmarks/results/DATE-MACHINE-cutile-surface.md
    source .cutile/setup.sh && python benchmarks/cutile_surface.py      # on the GPU machine

cuTile's wheel carries a CPython 3.12 extension: run it with a Python 3.12 that has tileworkbench's
dependencies (CUTILE_ROOT=/tmp/somewhere source .cutile/setup.sh puts cuTile on the path on any machine).
"""
from __future__ import annotations

import argparse
import datetime
import enum
import importlib
import inspect
import platform
import re
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileworkbench.cutile_alias import PUBLIC_MODULES, _view  # noqa: E402 - the modules as cuTile code sees them

# The submodules cuTile code imports, beyond the package itself; `compilation` has no counterpart.
MODULES = ["cuda.tile", "cuda.tile._stub", "cuda.tile._datatype", "cuda.tile._numeric_semantics",
           "cuda.tile._memory_model", "cuda.tile._exception", "cuda.tile.tune", "cuda.tile.compilation"]
COVERAGE = ROOT / "docs" / "api_coverage.md"
SECTION = "## Surface differences"


def public_names(module) -> list[str]:
    """`__all__`, else the public names the module defines (not those it imports from elsewhere)."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    own = []
    for name, value in vars(module).items():
        if name.startswith("_") or inspect.ismodule(value):
            continue
        home = getattr(value, "__module__", None) or getattr(type(value), "__module__", "")
        if home.startswith("cuda.tile"):
            own.append(name)
    return own


def signature_of(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def describe_default(value) -> str:
    if value is inspect.Parameter.empty:
        return "(required)"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)


def compare_signatures(theirs, ours) -> list[str]:
    """What a call valid under cuTile's signature may do that ours refuses or reads otherwise."""
    a, b = signature_of(theirs), signature_of(ours)
    if a is None or b is None:
        return [] if a is None else ["cuTile's has a signature, ours none"]
    problems = []
    mine = b.parameters
    for name, p in a.parameters.items():
        if p.kind is p.VAR_KEYWORD:
            if not any(q.kind is q.VAR_KEYWORD for q in mine.values()):
                problems.append(f"**{name}: cuTile takes any keyword arguments, ours not")
            continue
        if p.kind is p.VAR_POSITIONAL:
            if not any(q.kind is q.VAR_POSITIONAL for q in mine.values()):
                problems.append(f"*{name}: cuTile takes extra positional arguments, ours not")
            continue
        q = mine.get(name)
        if q is None:
            problems.append(f"{name}: missing")
            continue
        if p.kind is not q.kind:
            problems.append(f"{name}: {p.kind.description} in cuTile, {q.kind.description} here")
        if describe_default(p.default) != describe_default(q.default):
            problems.append(f"{name}: default {describe_default(p.default)} in cuTile, {describe_default(q.default)} here")
    for name, q in mine.items():
        if name not in a.parameters and q.default is q.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            problems.append(f"{name}: required here, unknown to cuTile")
    return problems


def compare_enum(theirs, ours) -> list[str]:
    """Member names (what code spells); the values only as a whole (code rarely reads them)."""
    if not (isinstance(ours, type) and issubclass(ours, enum.Enum)):
        return ["an enum in cuTile, not here"]
    a = {m.name: m.value for m in theirs}
    b = {m.name: m.value for m in ours}
    problems = [f"member {n} missing" for n in a if n not in b]
    if any(a[n] != b[n] for n in a if n in b):
        problems.append(f"member values differ ({', '.join(f'{n}={a[n]!r}' for n in list(a)[:2])}, ... in cuTile; "
                        f"{', '.join(f'{n}={b[n]!r}' for n in list(b)[:2])}, ... here)")
    return problems


def compare(theirs, ours) -> list[str]:
    if typing.get_origin(theirs) is not None or isinstance(theirs, typing.TypeVar):
        return []  # a typing alias (Constant, IndexedWithInt64): used in annotations, where only presence counts
    if isinstance(theirs, type) and issubclass(theirs, enum.Enum):
        return compare_enum(theirs, ours)
    if isinstance(theirs, type):
        if not isinstance(ours, type):
            return [f"a class in cuTile, a {type(ours).__name__} here"]
        if issubclass(theirs, BaseException):
            return [] if issubclass(ours, BaseException) else ["an exception in cuTile, not here"]
        members = [m for m in vars(theirs) if not m.startswith("_")]
        fields = getattr(ours, "__dataclass_fields__", {})
        return [f"member {m} missing" for m in members if not hasattr(ours, m) and m not in fields]
    if callable(theirs) and not hasattr(theirs, "bitwidth"):
        return compare_signatures(theirs, ours) if callable(ours) else [f"callable in cuTile, {type(ours).__name__} here"]
    if hasattr(theirs, "bitwidth"):  # a dtype
        return [] if getattr(ours, "name", None) == getattr(theirs, "name", str(theirs)) else ["another dtype"]
    return []


def documented_names() -> set[str]:
    """The names the "Surface differences" section of docs/api_coverage.md writes in backticks."""
    text = COVERAGE.read_text()
    section = text[text.index(SECTION):]
    section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
    return set(re.findall(r"`(?:[\w.]+\.)?([A-Za-z_]\w*)`", section))


def survey():
    """(module, name, problems) for every public cuTile name with a difference, and counts."""
    rows, checked = [], 0
    for module_name in MODULES:
        try:
            theirs = importlib.import_module(module_name)
        except Exception as e:  # a submodule this cuTile lacks, or that needs a GPU to import
            rows.append((module_name, "(module)", [f"cuTile's does not import here: {e}"]))
            continue
        target = PUBLIC_MODULES.get(module_name)
        ours = _view(module_name, importlib.import_module(target)) if target else None
        if ours is None:
            rows.append((module_name, "(module)", ["no counterpart: importing it raises ModuleNotFoundError"]))
            continue
        for name in public_names(theirs):
            if not hasattr(theirs, name) or isinstance(getattr(theirs, name), typing.TypeVar):
                continue
            checked += 1
            if not hasattr(ours, name):
                rows.append((module_name, name, ["missing"]))
                continue
            problems = compare(getattr(theirs, name), getattr(ours, name))
            if problems:
                rows.append((module_name, name, problems))
    return rows, checked


def report(rows, checked) -> str:
    import cuda.tile
    documented = documented_names()
    version = getattr(cuda.tile, "__version__", "?")
    lines = [f"# cuTile {version} public surface vs tileworkbench",
             "", f"{datetime.date.today().isoformat()}, {platform.node()} ({platform.machine()}, Python "
             f"{platform.python_version()}); `python benchmarks/cutile_surface.py`.",
             "", f"{checked} public names checked in {len(MODULES)} modules; {len(rows)} with a difference, "
             f"{sum(1 for m, n, _ in rows if n in documented or (n == '(module)' and m.split('.')[-1] in documented))} "
             f"of them documented in docs/api_coverage.md ({SECTION[3:]}).", "",
             "| module | name | difference | documented |", "| --- | --- | --- | --- |"]
    for module, name, problems in rows:
        mark = "yes" if name in documented or (name == "(module)" and module.split(".")[-1] in documented) else "**no**"
        lines.append(f"| `{module}` | `{name}` | {'; '.join(problems)} | {mark} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the report here (default: print it)")
    args = parser.parse_args(argv)
    try:
        import cuda.tile  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"cuTile is not importable ({e}); pip install cuda-tile, or source .cutile/setup.sh")
    text = report(*survey())
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
