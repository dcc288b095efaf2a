"""Dependencies point one way (docs/architecture.md): a package imports only packages of lower
layers and its own, at module level or inside functions alike."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "tileworkbench"

# lowest first; packages on one line are independent of each other
LAYERS = [
    {"errors", "targets"},
    {"ir"},
    {"arguments"},
    {"frontend"},
    {"interp", "codegen"},
    {"runtime"},
    {"tile"},
    {"profile"},
    {"widgets"},
    {"userkernels"},
    {"magic", "kernels", "puzzles", "cutile_alias"},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _imports(path: Path):
    """(line, imported top-level part of tileworkbench) for every import of the package."""
    module = path.relative_to(PACKAGE.parent).with_suffix("").parts
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                package = module[:-1]  # a module's package; for __init__.py, the package itself
                base = package[:len(package) - node.level + 1]
                target = (*base, *(node.module.split(".") if node.module else ()))
                names = [target + (alias.name,) for alias in node.names] if len(target) == 1 else [target]
            else:
                names = [tuple(node.module.split(".")) + (alias.name,) for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [tuple(alias.name.split(".")) for alias in node.names]
        else:
            continue
        for name in names:
            if name[0] == "tileworkbench" and len(name) > 1 and name[1] in RANK:
                yield node.lineno, name[1]


def test_every_part_of_the_package_has_a_layer():
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert parts - {"labextension"} == set(RANK)


def test_imports_point_down():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent == PACKAGE and path.stem == "__init__":
            continue  # the package's front door re-exports from every layer
        own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for line, imported in _imports(path):
            if imported != own and RANK[imported] >= RANK[own]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {imported} (layer {RANK[imported]} "
                             f">= {own}'s {RANK[own]})")
    assert wrong == []
