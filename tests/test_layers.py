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


# ---- control flows top-down: nothing below the tile layer calls back into a tile Kernel ---------

LOWER = ("runtime", "interp", "codegen", "frontend", "ir")
# A Kernel's names that lower layers use for their own, unrelated things (`parameters`: inspect's
# Signature has them too), or that mark a kernel (the frontend tells a kernel from a helper
# function by `__tile_kernel__`, never calling it)
SHARED_NAMES = {"name", "options", "parameters", "__tile_kernel__", "__wrapped__", "__doc__", "__call__", "__init__", "__new__",
                "__repr__", "__module__", "__dict__", "__weakref__", "__qualname__", "__firstlineno__",
                "__static_attributes__"}


def kernel_names() -> set[str]:
    """Every attribute a tile Kernel has: its class's methods and properties, an instance's fields."""
    from tileworkbench.tile import Kernel

    def probe(x):
        pass
    return (set(vars(Kernel)) | set(vars(Kernel(probe)))) - SHARED_NAMES


def _own_names(tree: ast.AST) -> set[str]:
    """The attributes a module gives objects of its own: methods and fields of its classes, and
    every `x.name = ...` it writes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def kernel_callbacks(source: str, filename: str = "<source>") -> list[str]:
    """Where `source` (a module of a lower layer) reaches into a tile Kernel: an attribute only a
    Kernel has (one the module does not define itself), or an import of the tile layer."""
    tree = ast.parse(source)
    names = kernel_names() - _own_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append(f"{filename}:{node.lineno} reads .{node.attr} of a Kernel")
        elif isinstance(node, ast.ImportFrom) and "tile" in (node.module or "").split(".") + [
                a.name for a in node.names if not node.module or node.module == "tileworkbench"]:
            found.append(f"{filename}:{node.lineno} imports the tile layer")
        elif isinstance(node, ast.Import) and any(a.name.split(".")[:2] == ["tileworkbench", "tile"]
                                                  for a in node.names):
            found.append(f"{filename}:{node.lineno} imports the tile layer")
    return found


def private_kernel_reads(source: str, filename: str = "<source>") -> list[str]:
    """Where `source` (outside tile/) reads a private attribute of a Kernel (`kernel._signature`)."""
    tree = ast.parse(source)
    private = {n for n in kernel_names() if n.startswith("_") and not n.startswith("__")} - _own_names(tree)
    return [f"{filename}:{node.lineno} reads .{node.attr} of a Kernel" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in private]


def test_lower_layers_never_call_back_into_a_kernel():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in LOWER:
            found += kernel_callbacks(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    assert found == []


def test_nothing_outside_the_tile_layer_reads_a_kernel_private_attribute():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] != "tile":
            found += private_kernel_reads(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    assert found == []


def test_the_callback_check_finds_a_runtime_that_asks_the_kernel_for_its_specialization():
    bad = ("def launch(kernel, stream, grid, args):\n"
           "    fn = kernel.specialize(args)\n"
           "    kernel.use_launcher(None)\n")
    assert kernel_callbacks(bad, "bad.py") == ["bad.py:2 reads .specialize of a Kernel",
                                               "bad.py:3 reads .use_launcher of a Kernel"]
    assert kernel_callbacks("from ..tile import launch\n", "bad.py") == ["bad.py:1 imports the tile layer"]
    assert kernel_callbacks("def run(fn, grid, args):\n    return fn.params\n") == []


def test_the_private_read_check_finds_a_signature_read_outside_the_tile_layer():
    assert private_kernel_reads("names = list(kernel._signature.parameters)\n", "bad.py") == \
        ["bad.py:1 reads ._signature of a Kernel"]
    assert private_kernel_reads("def _signature(kernel):\n    return kernel._signature\n", "bad.py") == \
        ["bad.py:2 reads ._signature of a Kernel"]   # a function of the same name is no excuse
    assert private_kernel_reads("names = [p.name for p in kernel.parameters]\n") == []
