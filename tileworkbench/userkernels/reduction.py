"""`ReductionKernel`: CuPy's user-defined reduction kernel as a tile kernel.

    l2norm = ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = sqrt(a)', '0', 'l2norm')
    l2norm(x, axis=1)

A call broadcasts the input arrays, moves the reduced axes last and views the inputs as
(M, K): M outputs, each reducing K mapped values. Each block of the generated tile kernel owns
TM outputs and walks K in (TM, TK) tiles: map, replace the padding lanes by the identity and
combine the tile lane by lane with a running (TM, TK) tile; after the loop one reduction of its
rows (the block's only exchange between threads) gives the TM values the post-map expression
writes to the outputs. `a` and `b` are of `reduce_type` (default: the first output's type).

The reduce expression must be one the tile language reduces (`a + b`, `a * b`, `max(a, b)`,
`min(a, b)` and their f-variants); the combination order differs from CuPy's, so float sums
may differ in the last bits.
"""
from __future__ import annotations

import numpy as np

from ..arguments import is_array_like
from ..errors import ArgumentTypeError, ArgumentValueError, TileTypeError, TileUnsupportedFeatureError, UserInputError
from ..ir.types import DType
from . import syntax as s
from .base import (CallPlan, UserKernel, default_stream, nothing_to_finish, output_layout, pow2_at_least,
                   python_name)
from .cdtypes import C_SPELLING, C_TYPES
from .lexer import Snippet
from .params import parse_params, resolve_types, scalar_converter
from .parser import parse_expression, parse_statements
from .pyast import Loop, Names, assign, comment, const, dtype_node, function_source, py, py_stmt
from .translate import CValue, NeedsInitialValue, Output, Translator, literal

TMS = [1, 2, 4, 8, 16, 32]
TKS = [32, 64, 128, 256, 512, 1024, 2048, 4096]
BLOCKS = 1024   # blocks that keep every SM of a large GPU busy (see _default_tiles)

# reduce expression -> (tile reduction, how two tiles of partial results combine lane by lane)
_REDUCTIONS = {"+": ("ct.sum", "({acc} + {part})"), "*": ("ct.prod", "({acc} * {part})"),
               "max": ("ct.max", "ct.maximum({acc}, {part})"), "min": ("ct.min", "ct.minimum({acc}, {part})")}
_CALLS = {"max": "max", "fmax": "max", "fmaxf": "max", "min": "min", "fmin": "min", "fminf": "min"}


def _reduction_of(node: s.Node, snippet: Snippet) -> str:
    """Which of _REDUCTIONS the reduce expression is."""
    def operands(*nodes):
        return sorted(n.id for n in nodes if isinstance(n, s.Name)) == ["a", "b"]
    if isinstance(node, s.Binary) and node.op in ("+", "*") and operands(node.left, node.right):
        return node.op
    if isinstance(node, s.Call) and node.func in _CALLS and len(node.args) == 2 and operands(*node.args):
        return _CALLS[node.func]
    raise snippet.error(TileUnsupportedFeatureError, "The reduce expression must be a + b, a * b, max(a, b) or "
                        "min(a, b) (or fmax/fmin): those are the reductions tile kernels have", node.start, node.end)


class ReductionKernel(UserKernel):
    """User-defined reduction kernel, with CuPy's constructor and call (`axis`, `keepdims`, `out`)."""

    call_keywords = ("axis", "keepdims", "out")

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 reduce_type=None, reduce_dims=True, preamble="", options=(), tiles=None):
        self.in_params = parse_params(in_params, "in_params")
        self.out_params = parse_params(out_params, "out_params")
        if not self.out_params:
            raise ArgumentValueError("out_params: a reduction needs an output")
        if any(p.raw for p in self.in_params + self.out_params):
            raise ArgumentValueError("raw arguments are not supported in reduction kernels")
        self.params = self.in_params + self.out_params
        placeholders = {p.placeholder for p in self.params if p.placeholder}
        super().__init__(name, preamble, placeholders)
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity = None if identity is None else str(identity)
        first_out = self.out_params[0]
        self.reduce_type = reduce_type or first_out.placeholder or C_SPELLING[first_out.dtype]
        self.reduce_dims, self.options, self.tiles = reduce_dims, options, tiles
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        self._snippets = {part: Snippet(text, name, part) for part, text in
                          (("map_expr", map_expr), ("reduce_expr", reduce_expr), ("post_map_expr", post_map_expr),
                           ("identity", self.identity or ""))}
        self._map = parse_expression(self._snippets["map_expr"], self._types)
        self._reduction = _reduction_of(parse_expression(self._snippets["reduce_expr"], self._types),
                                        self._snippets["reduce_expr"])
        self._post = parse_statements(self._snippets["post_map_expr"], self._types)
        self._identity = parse_expression(self._snippets["identity"], self._types) if self.identity else None
        if not placeholders:  # every type is known: expressions that cannot be typed are refused now
            self.generate({}, [p.dtype for p in self.params], (True,) * len(self.params), self._reduce_type({}))

    def __repr__(self) -> str:
        return f"<ReductionKernel {self.name}>"

    def __call__(self, *args, axis=None, keepdims=False, out=None, stream=None):
        keywords = {"axis": axis}   # (the others only where given: a shorter profile)
        if keepdims is not False:
            keywords["keepdims"] = keepdims
        if out is not None:
            keywords["out"] = out
        return self.call(args, keywords, stream)

    def _reduce_type(self, placeholders: dict) -> DType:
        """`reduce_type` is C: a placeholder or a C type name (default: the first output's type)."""
        if self.reduce_type in placeholders:
            return placeholders[self.reduce_type]
        dtype = C_TYPES.get(tuple(self.reduce_type.split()))
        if dtype is None:
            raise ArgumentTypeError(f"{self.name}: reduce_type {self.reduce_type!r} is neither a C type nor a placeholder "
                            f"of the parameters")
        return dtype

    # ---- planning a call -------------------------------------------------------------------------

    def plan(self, *args, axis=None, keepdims=False, out=None) -> CallPlan:
        if len(args) not in (self.nin, self.nargs):
            raise ArgumentTypeError(f"Wrong number of arguments for {self.name}")
        in_args, out_args = list(args[:self.nin]), list(args[self.nin:])
        if out is not None:
            if out_args:
                raise ArgumentValueError("cannot specify 'out' as both a positional and keyword argument")
            if self.nout != 1:
                raise NotImplementedError("out= is for kernels with one output; pass the outputs positionally")
            out_args = [out]
        from .elementwise import _array_module
        xp = _array_module(args + ((out,) if out is not None else ()), self.name)
        in_types, out_types, placeholders = resolve_types(self.in_params, self.out_params, in_args, out_args,
                                                          self.name)
        reduce_type = self._reduce_type(placeholders)
        arrays = [a for a in in_args if is_array_like(a)]
        if not arrays:
            raise ArgumentValueError("Loop size is undecided.")
        try:
            shape = tuple(np.broadcast_shapes(*(tuple(a.shape) for a in arrays)))
        except ValueError:
            raise ArgumentValueError(f"{self.name}: the input shapes do not broadcast") from None
        reduce_axes = _normalize_axis(axis, len(shape))
        kept = [d for d in range(len(shape)) if d not in reduce_axes]
        out_shape = tuple(1 if d in reduce_axes else shape[d] for d in range(len(shape))) if keepdims else \
            tuple(shape[d] for d in kept)
        m = int(np.prod([shape[d] for d in kept], dtype=np.int64))
        k = int(np.prod([shape[d] for d in reduce_axes], dtype=np.int64))
        for p, a in zip(self.out_params, out_args):
            if not is_array_like(a):
                raise ArgumentTypeError("Output arguments type must be cupy.ndarray")
            if tuple(a.shape) != out_shape:
                raise ArgumentValueError("Out shape is mismatched")
        if k == 0 and self.identity is None and m > 0:
            raise ArgumentValueError(f"zero-size array to reduction operation {self.name} which has no identity")
        order = kept + list(reduce_axes)
        steps = [_input_step(a, t, p, self.name, shape, order, (m, k), xp) for p, a, t in
                 zip(self.in_params, in_args, in_types)]
        allocate = () if out_args else tuple(t.numpy for t in out_types)
        for step, a in zip(steps, in_args):
            if not is_array_like(a):   # a scalar that does not fit is refused before any compiling
                step(a)
        out_steps = [_output_step(a, m, xp) for a in out_args or [output_layout(out_shape, d) for d in allocate]]
        nin = self.nin

        def outputs_of(args, kwargs) -> list:
            return [xp.empty(out_shape, d) for d in allocate] if allocate else list(args[nin:]) or [kwargs["out"]]

        if all(step is _same for step in steps) and all(step is _same_output for step in out_steps):
            def bind(args, kwargs):   # every argument an array the kernel takes as it is
                outputs = outputs_of(args, kwargs)
                return (*args[:nin], *outputs), outputs, nothing_to_finish
        else:
            def bind(args, kwargs):
                outputs = outputs_of(args, kwargs)
                values, finishers = [step(a) for step, a in zip(steps, args)], []
                for step, a in zip(out_steps, outputs):
                    value, finish = step(a)
                    values.append(value)
                    if finish is not None:
                        finishers.append(finish)
                return tuple(values), outputs, (lambda: [f() for f in finishers]) if finishers else nothing_to_finish
        types = in_types + out_types
        ranks = tuple(is_array_like(a) for a in in_args) + (True,) * self.nout
        key = (tuple(t.name for t in types), ranks, reduce_type.name)
        kernel = None
        if m > 0:
            kernel = self.tile_kernel(key, lambda: self.generate(placeholders, types, ranks, reduce_type))
        along_rows = all(_reduces_along_rows(step(a), k) for step, a in zip(steps, in_args) if is_array_like(a))
        tm, tk = self.tiles or _default_tiles(m, k, along_rows)
        return CallPlan(kernel, key, self.tuned_config(key, {"TM": tm, "TK": tk}),
                        lambda config: (max(1, -(-m // config["TM"])),), {"TM": TMS, "TK": TKS}, bind, default_stream(xp))

    # ---- the generated tile kernel ---------------------------------------------------------------

    def generate(self, placeholders, types, ranks, reduce_type: DType) -> str:
        if reduce_type.is_complex and self._reduction in ("max", "min"):
            raise self._snippets["reduce_expr"].error(
                TileTypeError, f"A {self._reduction} reduction of {C_SPELLING[reduce_type]}: complex numbers have no "
                               f"order (reduce abs() or real() instead)", 0, len(self.reduce_expr))
        names = Names()
        block, k, acc, valid, part = (names.fresh(n) for n in ("block", "k", "acc", "valid", "part"))
        first = next(p.py for p, r in zip(self.in_params, ranks) if r)
        inputs, loads = {}, []
        for p, t, r in zip(self.in_params, types, ranks):
            if r:
                loaded = names.fresh(f"{p.name}_val")
                loads.append(assign(loaded, py(f"ct.load(a, ({block}, {k}), (TM, TK), "
                                               f"padding_mode=ct.PaddingMode.ZERO)", a=p.py)))
                inputs[p.name] = CValue(py(loaded), t)
            else:
                inputs[p.name] = CValue(py(p.py), t, None, varies=False)
        scalars = {name: value for name, value in inputs.items() if not value.varies}
        identity = self.constant_identity(placeholders, reduce_type)
        tile_fn, combine = _REDUCTIONS[self._reduction]
        mapper = Translator(self._snippets["map_expr"], placeholders, inputs, {}, {}, {}, self.functions(), names)
        self.declare_preamble_constants(mapper)
        mapper.emit(comment(f"map_expr: {self.map_expr}"))
        mapped = mapper.convert(mapper.expr(self._map), reduce_type)
        if not mapped.varies:
            mapped = CValue(py("ct.broadcast_to(v, (TM, TK))", v=mapped.code), reduce_type)
        loop_body = loads + mapper.body + [
            assign(valid, py(f"({k} * TK + ct.arange(TK, dtype=ct.int32))[None, :] < a.shape[1]", a=first)),
            assign(part, py(f"ct.where({valid}, v, e)", v=mapped.code, e=identity.code)),
            assign(acc, py(combine.format(acc=acc, part=part)))]
        loop = py_stmt(f"for {k} in range(ct.num_tiles(a, 1, (TM, TK))): pass", a=first)
        reduced = names.fresh("reduced")
        body = [assign(block, py("ct.bid(0)")),
                assign(acc, py("ct.full((TM, TK), v, t)", v=const(identity.const), t=dtype_node(reduce_type))),
                Loop(loop, loop_body), assign(reduced, py(f"{tile_fn}({acc}, axis=1)"))]
        outputs = {p.name: Output(p.name, t) for p, t in zip(self.out_params, types[self.nin:])}
        poster = Translator(self._snippets["post_map_expr"], placeholders,
                            {**scalars, "a": CValue(py(reduced), reduce_type)}, outputs, {}, {}, self.functions(), names)
        self.declare_preamble_constants(poster)
        try:
            poster.statements(self._post)
        except NeedsInitialValue as e:
            raise self._snippets["post_map_expr"].error(
                TileTypeError, f"The post-map expression reads the output '{e.name}' before assigning it (or "
                               f"assigns it on some paths only)", 0, len(self.post_map_expr)) from None
        body += poster.body
        for name, out in poster.outputs.items():
            if out.value is not None:
                code = out.value.code if out.value.varies else py("ct.broadcast_to(v, (TM,))", v=out.value.code)
                body.append(py_stmt(f"ct.store(a, ({block},), v)", a=self.param(name).py, v=code))
        return function_source(python_name(self.name), [p.py for p in self.params], ["TM", "TK"], body)

    def constant_identity(self, placeholders, reduce_type: DType) -> CValue:
        """The identity as a constant of the reduce type; without one, the reduction's own neutral
        element fills the padding lanes (an empty reduction without identity is an error)."""
        if self._identity is None:
            neutral = {"+": 0, "*": 1}.get(self._reduction)
            if neutral is None:
                info = np.finfo if reduce_type.is_float else np.iinfo
                extreme = info(reduce_type.numpy)
                neutral = (-np.inf if self._reduction == "max" else np.inf) if reduce_type.is_float else \
                    (int(extreme.min) if self._reduction == "max" else int(extreme.max))
            return literal(neutral, reduce_type)
        translator = Translator(self._snippets["identity"], placeholders, {}, {}, {}, {}, {}, Names())
        value = translator.convert(translator.expr(self._identity), reduce_type)
        if value.const is None:
            raise self._snippets["identity"].error(TileTypeError, "The identity must be a constant",
                                                   self._identity.start, self._identity.end)
        return value


def _default_tiles(m: int, k: int, along_rows: bool) -> tuple[int, int]:
    """(TM, TK) by default. Where every input's reduced values are contiguous (rows of the (M, K)
    view), a tile holds up to 4096 elements of as few rows as leave the grid BLOCKS blocks (one
    exchange between threads per block, and enough blocks to fill a large GPU). Otherwise the
    outputs are what is contiguous, and a block takes several (TM) so its loads read runs of
    them: tiles of up to 1024 elements along K."""
    tk = min(4096 if along_rows else 1024, max(32, pow2_at_least(k)))
    tm = max(1, min(pow2_at_least(m), 4096 // tk))
    while along_rows and tm > 1 and -(-m // tm) < BLOCKS:
        tm //= 2
    return tm, tk


def _reduces_along_rows(view, k: int) -> bool:
    """Whether the (M, K) view of an input holds each output's values contiguously."""
    return k <= 1 or view.strides[1] == view.itemsize


def _input_step(a, t, p, name: str, shape: tuple, order: list, mk: tuple, xp):
    """How a call's input (like `a`) becomes the kernel's value: a scalar of its type, or the array
    broadcast to the loop's shape, its reduced axes moved last, viewed as (M, K) (each step
    left out where the array already is what it makes)."""
    if not is_array_like(a):
        return scalar_converter(a, t, p, name)
    broadcast = tuple(a.shape) != shape
    moved = order != sorted(order)
    reshaped = mk != tuple(shape[d] for d in order)
    if not (broadcast or moved or reshaped):
        return _same

    def step(a):
        if broadcast:
            a = xp.broadcast_to(a, shape)
        if moved:
            a = a.transpose(order)
        return a.reshape(mk) if reshaped else a
    return step


def _output_step(a, m: int, xp):
    """How a call's output (like `a`) becomes the kernel's (M,) array, and what copies the results
    back: a contiguous output is viewed as (M,); a strided one gets a contiguous buffer, copied
    into it after the launch."""
    if a.flags.c_contiguous:
        return _same_output if tuple(a.shape) == (m,) else (lambda a: (a.reshape(m), None))

    def buffered(a):
        buffer = xp.empty(m, a.dtype)
        return buffer, lambda: a.__setitem__(Ellipsis, buffer.reshape(a.shape))
    return buffered


def _same(a):
    return a


def _same_output(a) -> tuple:
    return a, None


class AxisError(UserInputError, np.exceptions.AxisError):
    """NumPy's (and CuPy's) error for an axis out of range, shown in the notebook without a stack."""


def _normalize_axis(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not all(isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) for a in axes):
        raise ArgumentTypeError(f"axis must be an int or a tuple of ints, got {axis!r}")
    normalized = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise AxisError(a, ndim)
        normalized.append(a % ndim)
    if len(set(normalized)) != len(normalized):
        raise ArgumentValueError("duplicate value in 'axis'")
    return tuple(sorted(normalized))
