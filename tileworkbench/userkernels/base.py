"""What elementwise and reduction kernels share: generated tile kernels, launches, sweeps.

A call is planned as a `Launch` of a generated tile kernel: its arguments, its tile-shape
constants (`config`), its grid for any config, and the space a sweep tries. Generated kernels
are compiled once per specialization key (argument types, which are arrays, ranks, path) and
kept on the user kernel; a sweep on a GPU makes its fastest config the default for that key.
"""
from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArgumentTypeError, ArgumentValueError
from .. import tile as ct
from . import csemantics
from .lexer import Snippet
from .params import C_IDENTIFIER
from .parser import parse_preamble
from .pyast import user_name


@dataclass
class Launch:
    """One call of a user kernel as a tile-kernel launch."""

    kernel: ct.Kernel | None               # None: nothing to do (no elements)
    values: tuple                          # array and scalar arguments, in the kernel's order
    config: dict                           # tile-shape constants, appended to the arguments
    grid_fn: Callable[[dict], tuple]
    space: dict                            # what a sweep tries by default
    outputs: list
    key: tuple
    finish: Callable[[], None] = field(default=lambda: None)   # copies results back where needed

    @property
    def grid(self) -> tuple:
        return self.grid_of(self.config)

    @property
    def args(self) -> tuple:
        return self.args_of(self.config)

    def grid_of(self, config: dict) -> tuple:
        """The grid for `config` (names it leaves out keep this launch's values)."""
        return self.grid_fn({**self.config, **config})

    def args_of(self, config: dict) -> tuple:
        config = {**self.config, **config}
        return self.values + tuple(config[name] for name in self.config)

    def run(self, stream=None):
        """Launch on the interpreter (NumPy arrays) or the GPU (`stream`, default CuPy's current one)."""
        if stream is None and any(hasattr(v, "__cuda_array_interface__") for v in self.values):
            import cupy
            stream = cupy.cuda.get_current_stream()
        ct.launch(stream, self.grid, self.kernel, self.args)
        self.finish()


def python_name(name: str) -> str:
    """The generated tile kernel's function name (the kernel's, as pyast.user_name gives it)."""
    return user_name(name)


def compile_tile_kernel(name: str, source: str) -> ct.Kernel:
    """Define the generated tile-language function and make it a tile kernel; its source is
    registered with linecache so errors, traces and views show its lines."""
    filename = f"<{name} tile kernel {hashlib.sha1(source.encode()).hexdigest()[:10]}>"  # same text, same name
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"ct": ct, "cops": csemantics}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the generated tile-language source
    return ct.kernel(namespace[python_name(name)])


def pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class UserKernel:
    """Base of ElementwiseKernel and ReductionKernel: the preamble, generated kernels, sweeps."""

    name: str
    call_keywords: tuple = ()        # the keywords of a call (`axis`, `size`, ...), as opposed to a sweep's

    def __init__(self, name: str, preamble: str, placeholders: set):
        if not isinstance(name, str) or not C_IDENTIFIER.fullmatch(name):
            raise ArgumentValueError(f'Invalid kernel name: "{name}"')
        self.name = name
        self.preamble = preamble
        self._preamble_nodes = parse_preamble(Snippet(preamble, name, "preamble"), placeholders) if preamble else ()
        self._kernels: dict = {}      # specialization key -> (tile kernel, generated source)
        self._tuned: dict = {}        # specialization key -> config chosen by a sweep
        self.last_tile_kernel = None  # the tile kernel of the last call planned (the kernel inspector shows it)

    @property
    def _cached_codes(self) -> dict:
        """The generated source of each specialization compiled so far (CuPy's name)."""
        return {key: source for key, (_, source) in self._kernels.items()}

    def param(self, name: str):
        return next(p for p in self.params if p.name == name)

    def functions(self) -> dict:
        from .syntax import Function
        snippet = Snippet(self.preamble, self.name, "preamble")
        return {f.name.id: (f, snippet) for f in self._preamble_nodes if isinstance(f, Function)}

    def declare_preamble_constants(self, translator):
        from .syntax import Declaration
        constants = [d for d in self._preamble_nodes if isinstance(d, Declaration)]
        translator.declare_globals(constants, Snippet(self.preamble, self.name, "preamble"))

    def tile_kernel(self, key, generate: Callable[[], str]) -> ct.Kernel:
        if key not in self._kernels:
            source = generate()
            self._kernels[key] = (compile_tile_kernel(self.name, source), source)
        self.last_tile_kernel = self._kernels[key][0]
        return self.last_tile_kernel

    def launch_plan(self, *args, **kwargs) -> Launch:
        raise NotImplementedError

    def __call__(self, *args, stream=None, **kwargs):
        launch = self.launch_plan(*args, **kwargs)
        if launch.kernel is not None:
            launch.run(stream)
        return launch.outputs[0] if len(launch.outputs) == 1 else tuple(launch.outputs)

    def source(self, *args, **kwargs) -> str:
        """The tile-language source generated for a call with these arguments."""
        launch = self.launch_plan(*args, **kwargs)
        return self._kernels[launch.key][1]

    def ir(self, *args, **kwargs) -> str:
        """The typed tile IR of the kernel a call with these arguments runs."""
        launch = self.launch_plan(*args, **kwargs)
        return launch.kernel.ir(launch.args)

    def trace(self, *args, **kwargs):
        """Run a call on the interpreter with an access trace; returns (outputs, trace, arrays before)."""
        from ..tile import interpret
        launch = self.launch_plan(*args, **kwargs)
        names = [p.name for p in launch.kernel.parameters]
        before = {n: np.array(a, copy=True) for n, a in zip(names, launch.args) if isinstance(a, np.ndarray)}
        trace = interpret(launch.kernel, launch.grid, launch.args, trace=True)
        launch.finish()
        return launch.outputs, trace, before

    def views(self, *args, **kwargs) -> list:
        """The workbench's views of a call run on the interpreter (coverage, tile spaces, ...)."""
        from ..widgets.views import views_of_trace
        _, trace, before = self.trace(*args, **kwargs)
        return views_of_trace(trace, before)

    def sweep(self, *args, space: dict | None = None, apply: bool = True, **options):
        """Compile (and with a GPU check and time) a call's tile kernel for every tile shape in
        `space` (default: the kernel's own); with timings, the fastest becomes this call's
        default (`apply=False` keeps the current one). The call's own keywords (`axis=1`) pass
        to the call; the other `options` go to profile.sweep.sweep."""
        from ..profile.sweep import sweep
        call = {k: options.pop(k) for k in self.call_keywords if k in options}
        launch = self.launch_plan(*args, **call)
        result = sweep(launch.kernel, launch.grid_of, launch.args_of, space or launch.space, **options)
        best = result.best()
        if apply and result.timed and best is not None:
            self._tuned[launch.key] = dict(best.config)
        return result

    def tuned_config(self, key, default: dict) -> dict:
        return dict(self._tuned.get(key, default))
