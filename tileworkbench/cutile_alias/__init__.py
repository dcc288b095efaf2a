"""Run cuTile programs unchanged: make `import cuda.tile as ct` import tileworkbench's tile language.

Opt-in, per process, and never silently over a real cuTile install:

    python -m tileworkbench.cutile_alias my_cutile_script.py --its-args     # a script
    python -m tileworkbench.cutile_alias --cpu my_cutile_script.py          # without a GPU (cpu.py)
    python -m tileworkbench.cutile_alias -m pytest path/to/tests            # any module
    pytest -p tileworkbench.cutile_alias ...                                # as a pytest plugin
    %load_ext tileworkbench.cutile_alias                                    # a notebook
    import tileworkbench.cutile_alias; tileworkbench.cutile_alias.install() # anywhere

If a real `cuda.tile` is importable, install() refuses (CuTileInstalledError) unless asked to
shadow it: install(force=True), or TILEWORKBENCH_CUTILE_ALIAS=force for the runner, the plugin and
the extension. Only `cuda.tile` and its submodules are redirected; other `cuda.*` packages (the
CUDA Python bindings) import as usual.

cuTile's public modules map to tileworkbench's: `cuda.tile` and `cuda.tile._stub` (the language), `cuda.tile._exception`
(the error classes), `cuda.tile._numeric_semantics` (RoundingMode, PaddingMode),
`cuda.tile._datatype` (the dtypes), `cuda.tile.tune` (the autotuner). Other submodules are cuTile's
internals (its bytecode writer, compiler driver, C extension): importing one raises
ModuleNotFoundError naming it, unless install(internals="placeholders"), which the conformance
runner uses so that cuTile's test helpers import: placeholders are inert stand-ins (see
_Placeholder), never used by tileworkbench.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

ENV = "TILEWORKBENCH_CUTILE_ALIAS"  # "force": shadow a real cuTile; "placeholders": stand-ins for internals
PACKAGE = "cuda.tile"
PUBLIC_MODULES = {
    "cuda.tile": "tileworkbench.tile",
    "cuda.tile._stub": "tileworkbench.tile",  # where cuTile defines its public functions and annotations
    "cuda.tile._exception": "tileworkbench.errors",
    "cuda.tile._numeric_semantics": "tileworkbench.tile._stubs",
    "cuda.tile._memory_model": "tileworkbench.tile._stubs",
    "cuda.tile._datatype": "tileworkbench.ir.types",
    "cuda.tile.tune": "tileworkbench.tile.tune",
}

# cuTile's `_exception` module also names its error classes by their older names: the same classes.
SYNONYMS = {
    "cuda.tile._exception": {"TypeCheckingError": "TileTypeError", "UnsupportedSyntaxError": "TileSyntaxError",
                             "InvalidValueError": "TileValueError", "UnsupportedFeatureError": "TileUnsupportedFeatureError",
                             "RecursionLimitError": "TileRecursionError", "InternalError": "TileInternalError",
                             "StaticEvalError": "TileStaticEvalError", "StaticAssertionError": "TileStaticAssertionError",
                             "CompilerExecutionError": "TileCompilerExecutionError",
                             "CompilerTimeoutError": "TileCompilerTimeoutError"},
}


# Internals cuTile's tests call as helpers (dtype conversion, the implicit-cast rule), answered by
# tileworkbench's equivalents in placeholder mode.
INTERNAL_EQUIVALENTS = {
    "cuda.tile._ir.typing_support": {"to_dtype": "tileworkbench.ir.types:to_dtype"},
    "cuda.tile._ir.cast_ops": {"_is_implicit_cast_ok": "tileworkbench.ir.types:can_cast_implicitly"},
}


class CuTileInstalledError(RuntimeError):
    """A real cuTile is importable, and shadowing it was not asked for."""


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `cuda.tile` and its submodules to tileworkbench (and `cuda` itself where no real
    `cuda` package exists)."""

    def __init__(self, internals: str):
        self.internals = internals

    def find_spec(self, name, path=None, target=None):
        if name == "cuda":
            found = importlib.machinery.PathFinder.find_spec(name)
            if found is None:
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            _refuse_a_shadowing_module(found.origin, found.submodule_search_locations)
            return None  # the real namespace package (cuda-python) holds cuda.tile's parent
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        name = spec.name
        if name == "cuda":
            return types.ModuleType("cuda")
        if name in PUBLIC_MODULES:
            return _view(name, importlib.import_module(PUBLIC_MODULES[name]))
        if self.internals == "placeholders":
            return _PlaceholderModule(name)
        raise ModuleNotFoundError(f"{name} is internal to cuTile; tileworkbench provides only cuTile's public API "
                                  f"(cuda.tile and {', '.join(sorted(PUBLIC_MODULES)[1:])})", name=name)

    def exec_module(self, module):
        pass  # a view of a tileworkbench module (already executed), or a placeholder


def _refuse_a_shadowing_module(origin, package_path) -> None:
    """A module (not a package) named `cuda`, such as a stray cuda.py in the working folder, hides
    the package cuda.tile lives in; Python would only say "'cuda' is not a package"."""
    if package_path is None:
        raise ImportError(f"cannot import cuda.tile: {origin or 'a module named cuda'} is a module named `cuda` that "
                          f"shadows the `cuda` package cuda.tile lives in; rename or remove it", name="cuda",
                          path=origin)


def _view(name: str, target: types.ModuleType) -> types.ModuleType:
    """A module named `name` showing `target`'s names (the same objects). A module of its own, so
    that cuTile's submodules attach to it and not to tileworkbench's modules."""
    module = types.ModuleType(name, target.__doc__)
    module.__dict__.update({k: v for k, v in vars(target).items() if not k.startswith("__")})
    module.__dict__.update({k: getattr(target, v) for k, v in SYNONYMS.get(name, {}).items()})
    module.__getattr__ = lambda attr: getattr(target, attr)
    return module


class _Placeholder:
    """Stands for a name from cuTile's internals, inertly: attributes, calls and subscripts give
    further placeholders (cuTile's test helpers use some at import time), truth and comparisons are
    False, containers are empty. A test that depends on cuTile's internals fails where it uses one
    (its repr names the internal)."""

    def __init__(self, path: str):
        self._path = path

    def __repr__(self):
        return f"<cuTile internal {self._path} (placeholder)>"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(f"{self._path}.{name}")

    def __call__(self, *args, **kwargs):
        return _Placeholder(f"{self._path}()")

    def __getitem__(self, key):
        return _Placeholder(f"{self._path}[...]")

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __lt__(self, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__


class _PlaceholderModule(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        equivalent = INTERNAL_EQUIVALENTS.get(self.__name__, {}).get(name)
        if equivalent is not None:
            module, attr = equivalent.split(":")
            return getattr(importlib.import_module(module), attr)
        return _Placeholder(f"{self.__name__}.{name}")


def _real_cutile():
    """Where a real cuda.tile would be imported from, or None."""
    if installed():
        return None
    if any(n == PACKAGE or n.startswith(PACKAGE + ".") for n in sys.modules):
        return getattr(sys.modules.get(PACKAGE), "__file__", "an already imported cuda.tile")
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    return None if spec is None else (spec.origin or "a cuda.tile package")


def installed() -> bool:
    """Whether `import cuda.tile` currently resolves to tileworkbench."""
    return any(isinstance(f, _Finder) for f in sys.meta_path)


def install(*, force: bool = False, internals: str = "error") -> None:
    """Make `import cuda.tile` import tileworkbench's tile language in this process.

    force: shadow a real cuTile that is importable (an already imported one is never replaced).
    internals: "error" (importing cuTile's internal modules fails) or "placeholders".
    """
    if internals not in ("error", "placeholders"):
        raise ValueError(f"internals must be 'error' or 'placeholders', got {internals!r}")
    if installed():
        return
    parent = sys.modules.get("cuda")
    if parent is not None:
        _refuse_a_shadowing_module(getattr(parent, "__file__", None), getattr(parent, "__path__", None))
    else:
        found = importlib.machinery.PathFinder.find_spec("cuda")   # found, not imported: a stray one is not run
        if found is not None:
            _refuse_a_shadowing_module(found.origin, found.submodule_search_locations)
    real = _real_cutile()
    if real is not None:
        if any(n == PACKAGE or n.startswith(PACKAGE + ".") for n in sys.modules):
            raise CuTileInstalledError(f"cuda.tile is already imported from {real}; install the alias before "
                                       f"anything imports cuTile")
        if not force:
            raise CuTileInstalledError(f"a real cuTile is installed ({real}); pass force=True (or set {ENV}=force) "
                                       f"to run cuda.tile code on tileworkbench anyway")
    sys.meta_path.insert(0, _Finder(internals))


def uninstall() -> None:
    """Undo install(): `import cuda.tile` finds whatever it found before."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    parent = sys.modules.get("cuda")
    if parent is None:
        return
    if isinstance(getattr(parent, "__loader__", None), _Finder):
        del sys.modules["cuda"]   # the alias made it: `import cuda` finds whatever it found before
    elif isinstance(getattr(parent, "tile", None), types.ModuleType):
        del parent.tile           # `from cuda import tile` reads the attribute the import set


def install_from_environment() -> None:
    """install() as TILEWORKBENCH_CUTILE_ALIAS asks: "force", "placeholders", "cpu" (CUDA tensors in
    host memory, every launch on the interpreter: see cpu.py), comma separated."""
    words = {w.strip().lower() for w in os.environ.get(ENV, "").split(",")}
    install(force="force" in words, internals="placeholders" if "placeholders" in words else "error")
    if "cpu" in words:
        from .cpu import run_on_host
        run_on_host()


SITE_DIR = os.path.join(os.path.dirname(__file__), "site")  # holds a sitecustomize that installs the alias


def reach_subprocesses() -> None:
    """Make the Python processes this one starts install the alias as this one did: ENV and, first
    on PYTHONPATH, SITE_DIR (whose sitecustomize installs it when ENV is set)."""
    os.environ.setdefault(ENV, "")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SITE_DIR]
    os.environ["PYTHONPATH"] = os.pathsep.join([SITE_DIR, *paths])


def load_ipython_extension(ipython) -> None:
    """`%load_ext tileworkbench.cutile_alias` in a notebook."""
    install_from_environment()


def pytest_load_initial_conftests(early_config, parser, args) -> None:
    """`pytest -p tileworkbench.cutile_alias`: installed before any conftest imports cuda.tile."""
    install_from_environment()
