"""Kernels and launches: `@ct.kernel`, `ct.Constant[...]` and `ct.launch`.

A kernel is specialized per argument profile (array dtypes and ranks, scalar dtypes, the values
of `Constant` parameters); each specialization is compiled to IR once and cached on the kernel.
"""
from __future__ import annotations

import functools
import inspect
import re
import typing
from typing import Annotated

import numpy as np

from ..arguments import (ParamSpec, argument_leaves, interpret_requested, is_array_like, is_host_tensor,
                         known_array_type, normalize_grid, param_spec, profile_key)
# interpret_requested's first test, inlined in ct.launch's fast path: is TILEWORKBENCH_INTERPRET set at all
from ..arguments import _ENVIRON_DATA, _INTERPRET_KEY
from ..errors import ArgumentTypeError
from ..ir import print_function


class ConstantAnnotation:
    """Marks a parameter whose value is embedded at compile time (one specialization per value)."""

    def __repr__(self) -> str:
        return "ConstantAnnotation()"


class _ConstantFactory:
    def __getitem__(self, item):
        return Annotated[item, ConstantAnnotation()]

    def __repr__(self) -> str:
        return "ct.Constant"


Constant = _ConstantFactory()


class ScalarInt64Annotation:
    """A non-constant Python int parameter passed as int64 (int32 otherwise)."""


ScalarInt64 = Annotated[int, ScalarInt64Annotation()]


def _has(annotation, cls) -> bool:
    if annotation is Constant or annotation is cls:
        return cls is ConstantAnnotation
    if isinstance(annotation, str):
        return "Constant" in annotation if cls is ConstantAnnotation else "ScalarInt64" in annotation
    return any(isinstance(m, cls) for m in getattr(annotation, "__metadata__", ()))


EARLIER_LAUNCHERS = 3  # launchers ct.launch tries after the last one, before finding one by argument profile


class kernel:
    """A tile kernel: `@ct.kernel` or `@ct.kernel(occupancy=2)` (any option may be a ByTarget).
    Launch it with `ct.launch(stream, grid, kernel, args)`; never call it. A class, as in cuTile, so
    that `isinstance(k, ct.kernel)` tells a kernel."""

    __tile_kernel__ = True  # how the frontend tells a kernel from a helper function

    def __new__(cls, pyfunc=None, /, **options):
        if pyfunc is None:  # `@ct.kernel(...)`: the options first, the function next
            return functools.partial(cls, **options)
        return super().__new__(cls)

    def __init__(self, pyfunc, /, *, num_ctas=None, occupancy=None, opt_level=3, num_worker_warps=None):
        _check_option("num_ctas", num_ctas, lambda v: isinstance(v, int) and v in (1, 2, 4, 8, 16),
                      "a power of two in [1, 16]")
        _check_option("occupancy", occupancy, lambda v: isinstance(v, int) and 1 <= v <= 32, "in [1, 32]")
        _check_option("opt_level", opt_level, lambda v: isinstance(v, int) and 0 <= v <= 3, "in [0, 3]")
        options = dict(num_ctas=num_ctas, occupancy=occupancy, opt_level=opt_level, num_worker_warps=num_worker_warps)
        if getattr(pyfunc, "__name__", None) == "<lambda>" or not inspect.isfunction(pyfunc):
            raise ArgumentTypeError(f"ct.kernel needs a function defined with `def`, got "
                                    f"{'a lambda' if inspect.isfunction(pyfunc) else type(pyfunc).__name__}")
        self._pyfunc = pyfunc
        self.options = options
        self.name = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__
        self.__wrapped__ = pyfunc
        self._signature = inspect.signature(pyfunc)
        self._params = tuple(self._signature.parameters.values())
        try:
            hints = typing.get_type_hints(pyfunc, include_extras=True)
        except Exception:  # unresolvable string annotations: fall back to the raw ones
            hints = {}
        self._annotations = {p.name: hints.get(p.name, p.annotation) for p in self._params}
        self._specializations: dict = {}
        self._constant_mask = tuple(self.is_constant_param(p.name) for p in self._params)
        self.launchers: dict = {}  # (device, argument profile) -> the GPU runtime's ready launcher
        self.last_launcher = None  # the one used last: ct.launch tries it first
        self.earlier_launchers = ()  # the few used before it, latest first: ct.launch tries them next
        self.last_timing = None    # a measured launch (profile.bench), shown by the kernel inspector
        self.last_sweep = None     # the last sweep's outcome (profile.sweep), shown there too

    def __call__(self, *args, **kwargs):
        raise ArgumentTypeError("Tile kernels cannot be called directly. Use tileworkbench.tile.launch() instead.")

    def use_launcher(self, launcher) -> None:
        """Make `launcher` the one ct.launch tries first, the one used before it among the next."""
        if launcher is not self.last_launcher:
            earlier = [self.last_launcher] if self.last_launcher is not None else []
            earlier += [other for other in self.earlier_launchers if other is not launcher]
            self.last_launcher, self.earlier_launchers = launcher, tuple(earlier[:EARLIER_LAUNCHERS])

    def relaunch_earlier(self, stream, grid, args) -> bool:
        """Launch by the first of the earlier launchers whose profile the arguments have (a program
        alternating between a few argument profiles keeps to the fast path); False if none has."""
        for launcher in self.earlier_launchers:
            if launcher.relaunch(stream, grid, args):
                self.use_launcher(launcher)
                return True
        return False

    @property
    def parameters(self) -> tuple[inspect.Parameter, ...]:
        """The kernel function's parameters, in order (`inspect.Parameter`: name, annotation as
        written, default), e.g. `[p.name for p in kernel.parameters]` names the arguments of a launch."""
        return self._params

    def replace_hints(self, **hints) -> kernel:
        """The same kernel with other options (`occupancy`, `num_ctas`, ...), specialized anew."""
        return kernel(self._pyfunc, **{**self.options, **hints})

    def __repr__(self) -> str:
        return f"<tile kernel {self.name}{self._signature}>"

    def is_constant_param(self, name: str) -> bool:
        return _has(self._annotations[name], ConstantAnnotation)

    def param_specs(self, args) -> list[ParamSpec]:
        if not isinstance(args, tuple):
            raise ArgumentTypeError(f"Kernel arguments must be a tuple, got {type(args).__name__}")
        if len(args) != len(self._params):
            names = [p.name for p in self._params]
            detail = f"missing {', '.join(names[len(args):])}" if len(args) < len(names) else \
                f"{len(args) - len(names)} too many"
            raise ArgumentTypeError(f"Kernel expects {len(names)} arguments but {len(args)} were given: "
                                    f"{self.name}({', '.join(names)}) is {detail}")
        return [param_spec(p.name, value, i, constant=constant,
                           int64_scalar=_has(self._annotations[p.name], ScalarInt64Annotation))
                for i, (p, value, constant) in enumerate(zip(self._params, args, self._constant_mask))]

    def profile_key(self, args) -> tuple:
        """A cheap key of the specialization these arguments select (see arguments.profile_key)."""
        return profile_key(self._constant_mask, args)

    def specialize(self, args):
        """The IR Function for these arguments (compiled on first use, then cached)."""
        return self.specialize_specs(self.param_specs(args))

    def specialize_specs(self, specs):
        key = tuple(s.key() for s in specs)
        fn = self._specializations.get(key)
        if fn is None:
            from ..frontend import compile_kernel
            fn = compile_kernel(self._pyfunc, specs, {k: v for k, v in self.options.items() if v is not None})
            self._specializations[key] = fn
        return fn

    @property
    def specializations(self) -> list:
        return list(self._specializations.values())

    def ir(self, args) -> str:
        """The printed IR of the specialization these arguments select."""
        return print_function(self.specialize(args))


Kernel = kernel  # the name tileworkbench's own code uses for the type


class ByTarget:
    """A kernel option whose value depends on the GPU: `ByTarget(sm_90=2, default=1)`."""

    def __init__(self, *, default=None, **value_by_target):
        for arch in value_by_target:
            if not re.fullmatch(r"sm_\d{2,3}", arch):
                raise ValueError(f"Invalid GPU architecture name: {arch}, expected sm_<major><minor>")
        self.default, self.by_target = default, value_by_target

    def values(self) -> list:
        return list(self.by_target.values()) + ([self.default] if self.default is not None else [])

    def resolve(self, arch: str | None):
        """The value for `arch` (e.g. "sm_90"; a suffix like sm_90a counts as sm_90)."""
        return self.by_target.get((arch or "").rstrip("af"), self.default)

    def __repr__(self) -> str:
        return "ByTarget(" + ", ".join(f"{k}={v!r}" for k, v in {**self.by_target, "default": self.default}.items()) + ")"


def _check_option(name, value, ok, expected):
    for v in value.values() if isinstance(value, ByTarget) else [value]:
        if v is not None and not ok(v):
            raise ValueError(f"{name} must be {expected}, got {v!r}")


def function(func=None, /, *, host=False, tile=True):
    """Mark a tile function: `@ct.function` (tile code only; calling it from the host raises),
    `@ct.function(host=True)` (both). Unmarked helpers are tile functions too when tile code calls them."""
    def decorate(f):
        if not tile:
            f.__tile_callable__ = False
        if host:
            return f

        @functools.wraps(f)
        def device_only(*args, **kwargs):
            raise RuntimeError("Device functions can only be called from device code.")
        device_only.__tile_function__ = f
        return device_only
    return decorate if func is None else decorate(func)


def launch(stream, grid, kernel, kernel_args, /, *, programmatic_dependent_launch=False):
    """Run `kernel` over `grid`. NumPy arrays and PyTorch CPU tensors run on the interpreter (any
    stream, None included) and are updated in place, exactly as a GPU launch updates device arrays.
    With TILEWORKBENCH_INTERPRET=1 every launch runs on the interpreter (device arrays are copied to
    the host and the ones the kernel writes copied back)."""
    # The GPU launcher used last (then the few before it) checks the arguments and the grid and
    # launches, in one call (from C where runtime/native_launch.c builds). It takes device arrays
    # only, so host tensors (which run on the interpreter) never get past its check.
    last = kernel.last_launcher if type(kernel) is Kernel else None
    if last is not None and (_INTERPRET_KEY not in _ENVIRON_DATA or not interpret_requested()) and (
            last.relaunch(stream, grid, kernel_args) or kernel.relaunch_earlier(stream, grid, kernel_args)):
        return
    if not isinstance(kernel, Kernel):
        raise ArgumentTypeError(f"Expected a tile kernel, got {type(kernel).__name__}")
    if not isinstance(kernel_args, tuple):
        raise ArgumentTypeError(f"Kernel arguments must be a tuple, got {type(kernel_args).__name__}")
    grid = normalize_grid(grid)
    switched = interpret_requested()
    # The interpreter is imported on first use: a program that launches on the GPU never loads it.
    leaves = argument_leaves(kernel_args)  # the arrays in list and tuple arguments count as arguments here
    if switched or any(map(is_host_tensor, leaves)):
        from ..interp.host import run_anywhere
        run_anywhere(kernel.specialize(kernel_args), grid, kernel_args)
        return
    types = set(map(type, leaves))
    if np.ndarray in types or not any(map(known_array_type, types)) and not any(map(is_array_like, leaves)):
        _refuse_device_arrays(kernel, kernel_args)
        from ..interp import run
        run(kernel.specialize(kernel_args), grid, kernel_args)
        return
    _launch_on_gpu(kernel, stream, grid, kernel_args)


def _launch_on_gpu(kernel, stream, grid, args) -> None:
    """The launcher of the arguments' profile on the current device (made on first use: the runtime
    compiles and loads the specialization) launches; ct.launch tries it first next time."""
    runtime = _gpu_runtime()
    device = runtime.launch_device()
    key = (device, kernel.profile_key(args))
    launcher = kernel.launchers.get(key)
    if launcher is None:
        launcher = kernel.launchers[key] = runtime.launcher(kernel.specialize(args), args, device)
    kernel.use_launcher(launcher)
    launcher(stream, grid, args)


def interpret(kernel, grid, args, /, **options):
    """Run `kernel` over `grid` on the NumPy interpreter (NumPy arrays, updated in place), with the
    interpreter's options (see tileworkbench.interp.run: `trace`, `values`, `checked`,
    `strict_padding`, `values_max_bytes`, `max_blocks`, `trace_max_bytes`); returns the access Trace where one is asked for.

        >>> trace = ct.interpret(add, (4,), (a, b, c, 16), trace=True)
        >>> trace.by_array("c")[0].counts()
        {'STORED': 64}
    """
    if not isinstance(kernel, Kernel):
        raise ArgumentTypeError(f"Expected a tile kernel, got {type(kernel).__name__}")
    from ..interp import run
    return run(kernel.specialize(args), grid, args, **options)


def _refuse_device_arrays(kernel, args):
    """A NumPy launch runs on the interpreter, which cannot read device arrays."""
    for i, (p, value) in enumerate(zip(kernel._params, args)):
        if any(not isinstance(v, np.ndarray) and is_array_like(v) for v in argument_leaves((value,))):
            raise ArgumentTypeError(f"Invalid kernel argument #{i}: a {type(value).__name__} device array among "
                                    f"NumPy arrays (parameter {p.name}); pass all arrays as NumPy (the interpreter) "
                                    f"or all as device arrays (the GPU)")


def _gpu_runtime():
    global _gpu_runtime_module
    if _gpu_runtime_module is None:  # imported on first use: the interpreter needs no GPU libraries
        from ..runtime import launch as _gpu_runtime_module
    return _gpu_runtime_module


_gpu_runtime_module = None
