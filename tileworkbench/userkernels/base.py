"""What elementwise and reduction kernels share: generated tile kernels, launches, sweeps.

A call is planned as a `CallPlan`: everything its argument profile fixes (the checks passed, the
generated tile kernel, its tile-shape constants (`config`), grid, the outputs to allocate and how
each argument becomes the kernel's values). Plans are kept per profile (each array's type, dtype,
shape and strides, each scalar's type, the call's keywords), so a repeat call only looks its plan
up, allocates the outputs, makes the views the kernel takes and launches. Generated kernels are
compiled once per specialization key (argument types, which are arrays, ranks, path) and kept on
the user kernel; a sweep on a GPU makes its fastest config the default for that key.

A repeat call of the last profile is one check: each kept plan carries a function generated for
its profile (`profile_matcher`, as dataclasses generate their methods) that compares the call's
arguments with it, without building and hashing the profile's key.
"""
from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..arguments import is_array_like, is_torch_tensor
from ..errors import ArgumentTypeError, ArgumentValueError
from .. import tile as ct
from . import csemantics
from .lexer import Snippet
from .params import C_IDENTIFIER
from .parser import parse_declarations
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


def nothing_to_finish():
    pass


@dataclass
class CallPlan:
    """What an argument profile fixes for a call: `bind(args, kwargs)` makes one call's
    (values, outputs, finish): outputs allocated, the views and scalars the kernel takes."""

    kernel: ct.Kernel | None               # None: nothing to do (no elements)
    key: tuple                             # the tile kernel's specialization key
    config: dict
    grid_fn: Callable[[dict], tuple]
    space: dict
    bind: Callable[[tuple, dict], tuple]
    default_stream: Callable | None        # device arrays: CuPy's get_current_stream; None: the interpreter
    matches: Callable[[tuple, dict], bool] | None = None   # set where the plan is kept (profile_matcher)

    def __post_init__(self):
        self.grid = self.grid_fn(self.config)
        self.config_values = tuple(self.config.values())

    def launch(self, args, kwargs) -> Launch:
        values, outputs, finish = self.bind(args, kwargs)
        return Launch(self.kernel, values, self.config, self.grid_fn, self.space, outputs, self.key, finish)


# argument type -> True: an array profiled by (type, dtype, shape, strides); False: a scalar
# profiled by its type (a keyword's value by itself). Learned from calls planned without error.
_PROFILED: dict[type, bool] = {}
MAX_PLANS = 1024   # call profiles a user kernel keeps plans for


def _profile(args, kwargs) -> tuple | None:
    """The call's profile key, or None where an argument's type has no profile (yet)."""
    key = []
    for a in args:
        array = _PROFILED.get(type(a))
        if array is None:
            return None
        key.append((type(a), a.dtype, a.shape, a.strides) if array else type(a))
    for name, v in kwargs.items():   # by name (`out=` is not a positional output), a value with its type
        array = _PROFILED.get(type(v))
        if array is None:
            return None
        key.append((name, type(v), v.dtype, v.shape, v.strides) if array else (name, type(v), v))
    return tuple(key)


def _learn_types(args, kwargs) -> None:
    for a in (*args, *kwargs.values()):
        if type(a) not in _PROFILED:
            if not is_array_like(a):
                _PROFILED[type(a)] = False
            elif type(a) is np.ndarray or hasattr(type(a), "__cuda_array_interface__") and not is_torch_tensor(a):
                _PROFILED[type(a)] = True


def profile_matcher(args, kwargs) -> Callable[[tuple, dict], bool] | None:
    """`matches(args, kwargs)`: whether a call's arguments have the profile of these (the
    comparisons of `_profile`'s keys, made directly); None where an argument has no profile.

        matches = profile_matcher((x, 2.0), {})   # x a float32 array of shape (8,)
        matches((x + 1, 3.0), {})                 # True: same type, dtype, shape, strides; a float
    """
    env, checks = {"MISSING": object()}, []

    def check(read: str, value, name: str, keyword: bool) -> bool:
        array = _PROFILED.get(type(value))
        if array is None:
            return False
        env[f"t{name}"] = type(value)
        checks.append(f"type({read}) is t{name}")
        if array:
            env[f"p{name}"] = (value.dtype, value.shape, value.strides)
            checks.append(f"({read}.dtype, {read}.shape, {read}.strides) == p{name}")
        elif keyword:   # a keyword's value is its profile
            env[f"v{name}"] = value
            checks.append(f"{read} == v{name}")
        return True
    names = [f"a{k}" for k in range(len(args))]
    if not all(check(n, a, n, False) for n, a in zip(names, args)):
        return None
    checks.append(f"len(kwargs) == {len(kwargs)}")
    for k, (keyword, value) in enumerate(kwargs.items()):
        checks.append(f"(k{k} := kwargs.get({keyword!r}, MISSING)) is not MISSING")
        if not check(f"k{k}", value, f"k{k}", True):
            return None
    unpack = f"    try:\n        {', '.join(names)}, = args\n    except ValueError:\n        return False\n" \
        if names else "    if args:\n        return False\n"
    source = f"def matches(args, kwargs):\n{unpack}    return bool({' and '.join(checks)})\n"
    exec(compile(source, "<user kernel call profile>", "exec"), env)  # noqa: S102 - generated above
    return env["matches"]


def default_stream(xp) -> Callable | None:
    """What gives the stream a call on `xp`'s arrays launches on when none is passed."""
    return xp.cuda.get_current_stream if xp is not np else None


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
    function = namespace[python_name(name)]
    function.fp_contract = True  # C: NVRTC fuses multiply-adds as it does when CuPy compiles the kernel
    return ct.kernel(function)


def output_layout(shape: tuple, dtype) -> np.ndarray:
    """A stand-in for an output the call will allocate: its shape, dtype, strides and flags, no memory."""
    dtype = np.dtype(dtype)
    strides, step = [], dtype.itemsize
    for d in reversed(shape):
        strides.insert(0, step)
        step *= max(d, 1)
    return np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape, tuple(strides), writeable=False)


def pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class UserKernel:
    """Base of ElementwiseKernel and ReductionKernel: the preamble, generated kernels, sweeps."""

    name: str
    call_keywords: tuple = ()        # the keywords of a call (`axis`, `size`, ...), as opposed to a sweep's
    no_return = return_tuple = False  # CuPy's ElementwiseKernel options: return None, or a tuple of one output

    def __init__(self, name: str, preamble: str, placeholders: set):
        if not isinstance(name, str) or not C_IDENTIFIER.fullmatch(name):
            raise ArgumentValueError(f'Invalid kernel name: "{name}"')
        self.name = name
        self.preamble = preamble
        self._preamble_nodes, self._types = parse_declarations(Snippet(preamble, name, "preamble"), placeholders,
                                                               preamble=True)
        self._kernels: dict = {}      # specialization key -> (tile kernel, generated source)
        self._tuned: dict = {}        # specialization key -> config chosen by a sweep
        self._plans: dict = {}        # call profile -> CallPlan
        self._last_plan = None        # the plan of the last call (a kept one, with its matcher)
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

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name in ("tile", "tiles") and "_plans" in self.__dict__:   # plans hold the tile shapes they chose
            self.forget_plans()

    def forget_plans(self) -> None:
        """Plan every call profile anew (plans hold the tile shapes chosen when they were made)."""
        self._plans.clear()
        self._last_plan = None

    def plan(self, *args, **kwargs) -> CallPlan:
        """Check a call's arguments and plan it (see CallPlan)."""
        raise NotImplementedError

    def launch_plan(self, *args, **kwargs) -> Launch:
        return self.plan(*args, **kwargs).launch(args, kwargs)

    def call(self, args: tuple, kwargs: dict, stream=None):
        """Run on the interpreter (NumPy arrays) or the GPU (`stream`, default CuPy's current one);
        the subclasses' `__call__` passes its keywords as `kwargs` (only those given: a shorter profile)."""
        plan = self._last_plan
        if plan is None or not plan.matches(args, kwargs):
            plan = self._plan_of(args, kwargs)
        values, outputs, finish = plan.bind(args, kwargs)
        if plan.kernel is not None:
            if self.last_tile_kernel is not plan.kernel:
                self.last_tile_kernel = plan.kernel
            if stream is None and plan.default_stream is not None:
                stream = plan.default_stream()
            ct.launch(stream, plan.grid, plan.kernel, values + plan.config_values)
            finish()
        if self.no_return:
            return None
        return outputs[0] if len(outputs) == 1 and not self.return_tuple else tuple(outputs)

    def _plan_of(self, args, kwargs) -> CallPlan:
        """The kept plan of the call's profile, else a new one (kept where it passes its checks)."""
        key = _profile(args, kwargs)
        try:
            plan = self._plans.get(key) if key is not None else None
        except TypeError:   # an unhashable keyword value
            plan = None
        if plan is None:
            plan = self.plan(*args, **kwargs)
            self._keep(plan, args, kwargs)
        if plan.matches is not None:
            self._last_plan = plan
        return plan

    def _keep(self, plan: CallPlan, args, kwargs) -> None:
        """Keep the plan of a call that passed its checks, for later calls of its profile."""
        _learn_types(args, kwargs)
        key = _profile(args, kwargs)
        if key is None:
            return
        if len(self._plans) >= MAX_PLANS:   # a program of ever new shapes: start over
            self.forget_plans()
        try:
            self._plans[key] = plan
        except TypeError:   # an unhashable keyword value
            return
        plan.matches = profile_matcher(args, kwargs)

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
            self.forget_plans()   # plans hold the config they were made with
        return result

    def tuned_config(self, key, default: dict) -> dict:
        return dict(self._tuned.get(key, default))
