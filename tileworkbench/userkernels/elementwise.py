"""`ElementwiseKernel`: CuPy's user-defined elementwise kernel as a tile kernel.

    squared_diff = ElementwiseKernel('float32 x, float32 y', 'float32 z', 'z = (x - y) * (x - y)', 'squared_diff')
    squared_diff(x, 5)        # NumPy arrays: the interpreter; CuPy arrays: the GPU

A call broadcasts its non-raw array arguments to one shape and runs the body once per element
of it, element `i` of `_ind.size()`. The generated tile kernel has one of three layouts, chosen
per call profile:

- flat: every array is C-contiguous in that shape (CuPy would reduce it to one dimension), and
  it is 1-D or its rows are not a whole number of tiles; each block loads and stores TILE
  consecutive elements as 1-D tiles.
- rows: the last dimension is long (ROWS_MIN or more); each block takes TILE elements of one
  row and loads each array as it is, a (1, ..., 1, TILE) tile at the row's coordinates, the
  dimensions an array is broadcast along read at 0 (a long last dimension is read as vectors,
  and a call makes no views).
- gather: otherwise each element's coordinates are computed, and each array, as it is, is
  gathered from and scattered to at them (a dimension it is broadcast along read at 0).

Only the flat layout makes views of the arguments (1-D ones, where the loop has more dimensions).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..arguments import is_array_like
from ..errors import ArgumentTypeError, ArgumentValueError
from ..ir.types import bool_, int32, int64
from . import syntax as s
from .base import (CallPlan, UserKernel, default_stream, nothing_to_finish, output_layout, pow2_at_least,
                   python_name)
from .lexer import Snippet
from .params import StructType, array_dtype, parse_params, resolve_types, scalar_converter
from .parser import parse_declarations, parse_statements
from .pyast import Names, assign, dtype_node, function_source, py, py_stmt
from .translate import CValue, NeedsInitialValue, Output, RawArray, StructValue, Translator

TILES = [128, 256, 512, 1024, 2048, 4096]
# The default TILE. The CUDA backend gives each thread chunks of 16 bytes of the narrowest array (and
# as many elements of each other array), two chunks a thread, 32 threads at least. Where every array
# has one width a block holds 4 KB of each: 128 threads moving two 16-byte vectors of each array
# (1024 float32, 256 complex128). A wider array's chunk is 32 bytes or more, each of its 16-byte
# accesses half of a 32-byte sector: where one is moved a block takes one chunk a thread (32 threads,
# 128 elements for float32 with float64, as many as a block of CuPy's), which kept fewer such
# accesses in flight and ran float32 with float64 10% faster on the H200 than 1024 elements did.
TILE_BYTES, MIXED_TILE_BYTES = 4096, 512   # of the narrowest array
ROWS_MIN = 128   # the shortest last dimension the rows layout takes (shorter ones leave most lanes idle)


class ElementwiseKernel(UserKernel):
    """User-defined elementwise kernel, with CuPy's constructor and call.

    in_params / out_params: `'T x, raw T y'`; operation: the C body; name: the kernel's name.
    `reduce_dims`, `options` and `no_return` are accepted for compatibility; `loop_prep` holds
    declarations the body may use. `tile` fixes the elements per block (default: chosen per call,
    or what `sweep` found fastest).
    """

    call_keywords = ("size", "block_size")

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, loop_prep="", after_loop="", options=(), tile=None, **kwargs):
        if kwargs:
            raise ArgumentTypeError(f"ElementwiseKernel got unexpected keyword arguments {sorted(kwargs)}")
        self.in_params = parse_params(in_params, "in_params")
        self.out_params = parse_params(out_params, "out_params")
        clash = {p.name for p in self.in_params} & {p.name for p in self.out_params}
        if clash:
            raise ArgumentValueError(f"{sorted(clash)} appear in both in_params and out_params")
        self.params = self.in_params + self.out_params
        placeholders = {p.placeholder for p in self.params if p.placeholder}
        super().__init__(name, preamble, placeholders)
        self.operation, self.loop_prep, self.after_loop = operation, loop_prep, after_loop
        self.no_return, self.return_tuple = no_return, return_tuple
        self.reduce_dims, self.options, self.tile = reduce_dims, options, tile
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        self._prep, types = parse_declarations(Snippet(loop_prep, name, "loop_prep"), self._types)
        self._body = parse_statements(Snippet(operation, name, "operation"), types)
        if after_loop.strip():
            parse_statements(Snippet(after_loop, name, "after_loop"), types)
            raise ArgumentValueError("after_loop: code after the loop can only write raw arrays once per thread, which "
                             "has no tile-kernel equivalent; move it into the operation")
        self._uses_strides = any(isinstance(n, s.Member) and n.member == "strides"
                                 for n in s.walk(self._body + self._prep + self._preamble_nodes))
        if not placeholders:  # every type is known: a body that cannot be typed is refused now
            self.generate({}, [p.dtype for p in self.params], tuple(1 if p.raw else True for p in self.params),
                          "flat", 1, int32)

    def __repr__(self) -> str:
        return f"<ElementwiseKernel {self.name}>"

    def __call__(self, *args, size=None, block_size=None, stream=None):
        if size is None and block_size is None:
            return self.call(args, {}, stream)
        return self.call(args, {"size": size, "block_size": block_size}, stream)

    # ---- planning a call -------------------------------------------------------------------------

    def plan(self, *args, size=None, block_size=None) -> CallPlan:
        if block_size is not None and block_size <= 0:
            raise ArgumentValueError("block_size must be greater than zero")
        if len(args) not in (self.nin, self.nargs):
            raise ArgumentTypeError(f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} or "
                            f"{self.nargs} (with outputs), but given {len(args)}.")
        in_args, out_args = list(args[:self.nin]), list(args[self.nin:])
        for a in out_args:
            if not is_array_like(a):
                raise ArgumentTypeError("Output arguments type must be cupy.ndarray")
        xp = _array_module(args, self.name)
        in_types, out_types, placeholders = resolve_types(self.in_params, self.out_params, in_args, out_args,
                                                          self.name)
        shape = self._loop_shape(in_args + out_args, size)
        allocate = ()   # (shape, dtype) of each output the call makes
        if not out_args:
            if size is None and any(p.raw for p in self.out_params):
                raise ArgumentValueError("Output array size is Undecided")
            allocate = tuple((shape, t.dtype if isinstance(t, StructType) else t.numpy) for t in out_types)
            out_args = [output_layout(s, d) for s, d in allocate]
        for p, a in zip(self.out_params, out_args):
            if not p.raw and tuple(a.shape) != shape:
                raise ArgumentValueError("Out shape is mismatched")
        args = in_args + out_args
        types = in_types + out_types
        n = int(np.prod(shape, dtype=np.int64))
        for p, t in zip(self.params, types):
            if p.raw and isinstance(t, StructType):
                raise ArgumentTypeError(f"{self.name}: the raw argument {p.name!r} has the structured dtype {t.name}: "
                                        f"structured arrays are supported as non-raw arguments only")
        arrays = [(p, t.views(a) if isinstance(t, StructType) else [a]) for p, a, t in zip(self.params, args, types)
                  if is_array_like(a) and not p.raw]   # a structured array as its fields' views
        views = [v for _, field_views in arrays for v in field_views]
        most = _most_elements(views, [a for p, a in zip(self.params, args) if p.raw and is_array_like(a)], shape)
        layout = _layout(views, shape, most)
        steps = [self._step(p, a, t, layout, shape) for p, a, t in zip(self.params, args, types)]
        for step, a in zip(steps, args):
            if not is_array_like(a):   # a scalar that does not fit is refused before any compiling
                step(a)
        index_type = int32 if n < 2**31 else int64
        ranks = tuple(a.ndim if p.raw else _follows(a.shape, shape) if layout != "flat" and is_array_like(a)
                      else is_array_like(a) for p, a in zip(self.params, args))
        key = (tuple(t.name for t in types), ranks, layout, len(shape), index_type.name)   # (True == 1)
        dims = () if layout == "flat" else tuple(index_type.numpy.type(d) for d in shape)
        strides = tuple(np.int64(st) for p, a in zip(self.params, args) if p.raw and self._uses_strides
                        for st in a.strides)
        tail = (np.int64(n),) + dims + strides
        kernel = None
        if n > 0:
            kernel = self.tile_kernel(key, lambda: self.generate(placeholders, types, ranks, layout, len(shape),
                                                                 index_type))
        nin, empty = self.nin, xp.empty

        def outputs_of(args) -> list:
            return [empty(s, d) for s, d in allocate] if allocate else list(args[nin:])

        if all(step is _itself for step in steps) and allocate:   # every argument an array passed as it is
            def bind(args, _kwargs):
                outputs = [empty(s, d) for s, d in allocate]
                return (*args, *outputs, *tail), outputs, nothing_to_finish
        elif all(step is _itself for step in steps):
            def bind(args, _kwargs):
                return tuple(args) + tail, list(args[nin:]), nothing_to_finish
        else:
            def bind(args, _kwargs):
                outputs = outputs_of(args)
                values = []
                for step, a in zip(steps, (*args[:nin], *outputs)):
                    values += step(a)
                return tuple(values) + tail, outputs, nothing_to_finish
        if layout == "rows":
            rows, row = int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]
            default = {"TILE": self.tile or min(most, pow2_at_least(row))}

            def grid_fn(config):
                return (max(1, rows * -(-row // config["TILE"])),)
        else:
            default = {"TILE": self.tile or min(most, max(128, pow2_at_least(n)))}

            def grid_fn(config):
                return (max(1, -(-n // config["TILE"])),)
        return CallPlan(kernel, key, self.tuned_config(key, default), grid_fn, {"TILE": TILES}, bind, default_stream(xp))

    def _step(self, p, a, t, layout: str, shape: tuple):
        """How a call's argument for `p` (like `a`) becomes the kernel's values: a scalar of its
        type; a raw array itself; the other arrays (a structured one as its fields) flattened
        where the flat layout has more than one dimension, else as they are."""
        if not is_array_like(a):
            convert = scalar_converter(a, t, p, self.name)
            return lambda a: (convert(a),)
        if p.raw:
            return _itself
        view_step = _flattened if layout == "flat" and len(shape) != 1 else _itself
        if isinstance(t, StructType):
            return lambda a: [value for v in t.views(a) for value in view_step(v)]
        return view_step

    def _loop_shape(self, args, size) -> tuple:
        """CuPy's rule: the non-raw arrays broadcast to the loop's shape, or, where every array is
        raw, `size` gives it."""
        shapes = [tuple(a.shape) for p, a in zip(self.params, args) if is_array_like(a) and not p.raw]
        if size is not None:
            if shapes:
                raise ArgumentValueError("Specified 'size' can be used only if all of the ndarray are 'raw'.")
            return (int(size),)
        if not shapes:
            raise ArgumentValueError("Loop size is undecided.")
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise ArgumentValueError(f"{self.name}: the shapes {', '.join(map(str, shapes))} do not broadcast") from None

    # ---- the generated tile kernel ---------------------------------------------------------------

    def generate(self, placeholders, types, ranks, layout: str, ndim: int, index_type) -> str:
        """The tile-language source of one specialization (see the module docstring)."""
        preload: set = set()
        while True:  # outputs the body reads before assigning them are loaded first
            try:
                return self._generate(placeholders, types, ranks, layout, ndim, index_type, preload)
            except NeedsInitialValue as e:
                preload.add(e.name)

    def _generate(self, placeholders, types, ranks, layout, ndim, index_type, preload) -> str:
        names = Names()
        block, index, n = names.fresh("block"), names.fresh("index"), names.fresh("n")
        dims = [] if layout == "flat" else [names.fresh(f"d{k}") for k in range(ndim)]
        strides = {p.name: tuple(names.fresh(f"{p.name}_stride{d}") for d in range(r))
                   for p, r in zip(self.params, ranks) if p.raw and self._uses_strides}
        inputs, outputs, raws = {}, {}, {}
        arrays, loads, kernel_params = {}, {}, []   # arrays: an input, output or field -> its kernel parameter
        follows = {}   # rows: an input, output or field -> which of its dimensions follow the loop's
        for p, t, r in zip(self.params, types, ranks):   # r: False for a scalar (a 0-d array's is ())
            is_input = p in self.in_params
            if isinstance(t, StructType) and r is not False and not p.raw:   # one kernel array per field
                fields = []
                for k, field_type in enumerate(t.fields):
                    key = f"{p.name}.at<{k}>"
                    arrays[key], follows[key] = names.fresh(f"{p.name}_f{k}"), r
                    kernel_params.append(arrays[key])
                    fields.append(self._slot(names, key, field_type, is_input, key in preload, loads, outputs))
                if is_input:
                    inputs[p.name] = StructValue(t, tuple(fields))
                continue
            kernel_params.append(p.py)
            if p.raw:
                raws[p.name] = RawArray(p.py, t, r, not is_input,
                                        tuple(CValue(py(st), int64, None, False) for st in strides.get(p.name, ())))
            elif r is False:
                inputs[p.name] = CValue(py(p.py), t, None, varies=False)
            else:
                arrays[p.name], follows[p.name] = p.py, r
                value = self._slot(names, p.name, t, is_input, p.name in preload, loads, outputs)
                if is_input:
                    inputs[p.name] = value
        i_name, col = names.fresh("i"), names.fresh("col")
        in_range = f"{col} < {dims[-1]}" if layout == "rows" else f"{index} < {n}"
        specials = {"i": CValue(py(i_name), int64), "_ind.size()": CValue(py(n), int64, None, False),
                    "in_range": CValue(py(in_range), bool_), "shape": "(TILE,)"}
        translator = Translator(Snippet(self.operation, self.name, "operation"), placeholders, inputs, outputs,
                                raws, specials, self.functions(), names)
        self.declare_preamble_constants(translator)
        translator.snippet = Snippet(self.loop_prep, self.name, "loop_prep")
        translator.statements(self._prep)
        translator.snippet = Snippet(self.operation, self.name, "operation")
        translator.statements(self._body)
        lanes = py("ct.arange(TILE, dtype=t)", t=dtype_node(index_type))
        indexed = translator.used_specials & {"i", "in_range"} or raws
        body = [assign(block, py("ct.bid(0)"))]
        if layout == "rows":
            place, row_body = _rows(names, block, dims)
            body += row_body
            if indexed:
                body += [assign(col, py(f"{place.column} * TILE + lanes", lanes=lanes)),
                         assign(index, py(f"{place.row} * {dims[-1]} + {col}"))]
        else:
            if layout == "gather" or indexed:
                body.append(assign(index, py(f"{block} * TILE + lanes", lanes=lanes)))
            place = block if layout == "flat" else _coordinates(names, index, dims, body)
        if "i" in translator.used_specials:
            body.append(assign(i_name, py(index) if index_type is int64 else py(f"{index}.astype(ct.int64)")))
        for key, var in loads.items():
            body.append(assign(var, _load(layout, arrays[key], place, follows.get(key))))
        body += translator.body
        for name, out in translator.outputs.items():
            if out.value is None:
                continue   # never assigned: its memory is left as it was
            code = out.value.code if out.value.varies else py("ct.broadcast_to(v, (TILE,))", v=out.value.code)
            body.append(_store(layout, arrays[name], place, ndim, code))
        params = kernel_params + [n] + dims + [st for group in strides.values() for st in group]
        return function_source(python_name(self.name), params, ["TILE"], body)

    @staticmethod
    def _slot(names, key: str, dtype, is_input: bool, preloaded: bool, loads: dict, outputs: dict) -> CValue | None:
        """An array input's loaded value, or an output (loaded first where the body reads it before
        assigning it)."""
        if is_input or preloaded:
            loads[key] = names.fresh(f"{key.replace('.at<', '_f').rstrip('>')}_val")
        value = CValue(py(loads[key]), dtype) if key in loads else None
        if not is_input:
            outputs[key] = Output(key, dtype, value)
        return value


@dataclass
class _RowPlace:
    """Where a rows-layout block is: its row's coordinates (names) and its tile of the row."""
    row: str
    coords: list
    column: str


def _rows(names: Names, block: str, dims: list) -> tuple[_RowPlace, list]:
    """The rows layout's block: TILE elements of one row (which tile of the row, which row, the
    row's coordinates), computed once per block."""
    tiles, row, column = names.fresh("row_tiles"), names.fresh("row"), names.fresh("row_tile")
    body = [assign(tiles, py(f"ct.cdiv({dims[-1]}, TILE)")), assign(row, py(f"{block} // {tiles}")),
            assign(column, py(f"{block} % {tiles}"))]
    coords = []
    rest = row
    for k in reversed(range(1, len(dims) - 1)):
        c, next_rest = names.fresh(f"r{k}"), names.fresh(f"rest{k}")
        body += [assign(c, py(f"{rest} % {dims[k]}")), assign(next_rest, py(f"{rest} // {dims[k]}"))]
        coords.insert(0, c)
        rest = next_rest
    return _RowPlace(row, [rest, *coords], column), body


def _coordinates(names: Names, index: str, dims: list, body: list) -> list:
    """The gather layout's coordinates of each element of the block (appended to `body`): names."""
    rest, parts = index, []
    for k in reversed(range(1, len(dims))):
        c, next_rest = names.fresh(f"c{k}"), names.fresh(f"rest{k}")
        body += [assign(c, py(f"{rest} % {dims[k]}")), assign(next_rest, py(f"{rest} // {dims[k]}"))]
        parts.insert(0, c)
        rest = next_rest
    return [rest, *parts]


def _tuple(items: list) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _load(layout: str, array: str, place, follows: tuple | None) -> ast.expr:
    """The block's (TILE,) values of an input (or an output read before it is assigned). Outside
    the flat layout the array is as the call passed it, its dimensions the loop's last ones; one it
    is broadcast along (size 1) is read at 0."""
    if layout == "flat":
        return py(f"ct.load(a, ({place},), (TILE,), padding_mode=ct.PaddingMode.ZERO)", a=array)
    if not any(follows):   # one element: a 0-d array, or one broadcast along all of its dimensions
        return _one_element(array, ["0"] * len(follows))
    if layout == "gather":
        coords = [c if f else "0" for c, f in zip(place[len(place) - len(follows):], follows)]
        return py(f"ct.gather(a, {_tuple(coords)})", a=array)
    lead = [c if f else "0" for c, f in zip(place.coords[len(place.coords) - len(follows) + 1:], follows)]
    if not follows[-1]:
        return _one_element(array, [*lead, "0"])
    tile = py(f"ct.load(a, {_tuple([*lead, place.column])}, ({'1, ' * len(lead)}TILE,), "
              f"padding_mode=ct.PaddingMode.ZERO)", a=array)
    return py("ct.reshape(v, (TILE,))", v=tile) if lead else tile


def _one_element(array: str, index: list) -> ast.expr:
    """The element at `index`, as a (TILE,) tile."""
    one = py(f"ct.load(a, {_tuple(index)}, {_tuple(['1'] * len(index))})", a=array)
    return py("ct.broadcast_to(ct.reshape(v, (1,)), (TILE,))", v=one)


def _store(layout: str, array: str, place, ndim: int, value: ast.expr) -> ast.stmt:
    if layout == "flat":
        return py_stmt(f"ct.store(a, ({place},), v)", a=array, v=value)
    if layout == "gather":
        return py_stmt(f"ct.scatter(a, {_tuple(place)}, v)", a=array, v=value)
    tile = py(f"ct.reshape(v, ({'1, ' * (ndim - 1)}TILE))", v=value)
    return py_stmt(f"ct.store(a, {_tuple([*place.coords, place.column])}, v)", a=array, v=tile)


def _most_elements(views: list, raws: list, shape: tuple) -> int:
    """The default TILE's bound (see TILE_BYTES). The CUDA backend's chunk is 16 bytes of the
    narrowest of all the kernel's arrays (raw ones too); the widths beside it that count are those
    of the arrays moved along the loop's last dimension (one broadcast along it is read as one element)."""
    narrowest = min((a.dtype.itemsize for a in views + raws), default=4)
    moved = [v.dtype.itemsize for v in views if shape and v.ndim and v.shape[-1] == shape[-1]]
    held = TILE_BYTES if max(moved, default=narrowest) <= narrowest else MIXED_TILE_BYTES
    return max(TILES[0], held // narrowest)


def _layout(views: list, shape: tuple, most: int) -> str:
    """flat, rows or gather (see the module docstring). Contiguous arrays whose long rows are a
    whole number of tiles take the rows layout, which needs no 1-D views."""
    rows = len(shape) >= 2 and shape[-1] >= ROWS_MIN
    if all(v.flags.c_contiguous and tuple(v.shape) == shape for v in views) and not (
            rows and shape[-1] % min(most, pow2_at_least(shape[-1])) == 0):
        return "flat"
    return "rows" if rows else "gather"


def _follows(own: tuple, shape: tuple) -> tuple:
    """Which of an array's dimensions follow the loop's (the others are broadcast: size 1)."""
    return tuple(a == b for a, b in zip(own, shape[len(shape) - len(own):]))


def _itself(a) -> tuple:
    return (a,)


def _flattened(a) -> tuple:
    return (a.reshape(-1),)


def _array_module(args, name: str):
    on_gpu = [hasattr(a, "__cuda_array_interface__") for a in args if is_array_like(a)]
    if any(on_gpu):
        if not all(on_gpu):
            raise ArgumentTypeError(f"{name}: NumPy and GPU arrays cannot be mixed in one call")
        import cupy
        return cupy
    return np


__all__ = ["ElementwiseKernel", "array_dtype"]
