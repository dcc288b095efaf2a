"""`ElementwiseKernel`: CuPy's user-defined elementwise kernel as a tile kernel.

    squared_diff = ElementwiseKernel('float32 x, float32 y', 'float32 z', 'z = (x - y) * (x - y)', 'squared_diff')
    squared_diff(x, 5)        # NumPy arrays: the interpreter; CuPy arrays: the GPU

A call broadcasts its non-raw array arguments to one shape and runs the body once per element
of it, element `i` of `_ind.size()`. The generated tile kernel gives each block TILE
consecutive elements. When every array is C-contiguous in that shape (CuPy would reduce it to
one dimension) the block loads and stores 1-D tiles; otherwise it computes each element's
coordinates and gathers and scatters (broadcast inputs have zero strides).
"""
from __future__ import annotations

import numpy as np

from ..arguments import is_array_like
from ..ir.types import int32, int64
from .base import Launch, UserKernel, pow2_at_least, python_name
from .lexer import Snippet
from .params import array_dtype, parse_params, resolve_types, scalar_value
from .parser import parse_statements
from .translate import CValue, NeedsInitialValue, Output, RawArray, Translator

TILES = [128, 256, 512, 1024, 2048, 4096]


class ElementwiseKernel(UserKernel):
    """User-defined elementwise kernel, with CuPy's constructor and call.

    in_params / out_params: `'T x, raw T y'`; operation: the C body; name: the kernel's name.
    `reduce_dims`, `options` and `no_return` are accepted for compatibility; `loop_prep` holds
    declarations the body may use. `tile` fixes the elements per block (default: chosen per call,
    or what `sweep` found fastest).
    """

    call_keywords = ("size",)

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, loop_prep="", after_loop="", options=(), tile=None, **kwargs):
        if kwargs:
            raise TypeError(f"ElementwiseKernel got unexpected keyword arguments {sorted(kwargs)}")
        self.in_params = parse_params(in_params, "in_params")
        self.out_params = parse_params(out_params, "out_params")
        clash = {p.name for p in self.in_params} & {p.name for p in self.out_params}
        if clash:
            raise ValueError(f"{sorted(clash)} appear in both in_params and out_params")
        self.params = self.in_params + self.out_params
        if {"TILE"} & {p.name for p in self.params}:
            raise ValueError("'TILE' names the tile size of the generated kernel: rename that parameter")
        placeholders = {p.placeholder for p in self.params if p.placeholder}
        super().__init__(name, preamble, placeholders)
        self.operation, self.loop_prep, self.after_loop = operation, loop_prep, after_loop
        self.no_return, self.return_tuple = no_return, return_tuple
        self.reduce_dims, self.options, self.tile = reduce_dims, options, tile
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        self._body = parse_statements(Snippet(operation, name, "operation"), placeholders)
        self._prep = parse_statements(Snippet(loop_prep, name, "loop_prep"), placeholders) if loop_prep else ()
        if after_loop.strip():
            parse_statements(Snippet(after_loop, name, "after_loop"), placeholders)
            raise ValueError("after_loop: code after the loop can only write raw arrays once per thread, which "
                             "has no tile-kernel equivalent; move it into the operation")
        if not placeholders:  # every type is known: a body that cannot be typed is refused now
            self.generate({}, [p.dtype for p in self.params], tuple(1 if p.raw else True for p in self.params),
                          True, 1, int32)

    def __repr__(self) -> str:
        return f"<ElementwiseKernel {self.name}>"

    def __call__(self, *args, size=None, block_size=None, stream=None):
        outputs = super().__call__(*args, size=size, stream=stream)
        if self.no_return:
            return None
        if self.return_tuple and not isinstance(outputs, tuple):
            return (outputs,)
        return outputs

    # ---- planning a call -------------------------------------------------------------------------

    def launch_plan(self, *args, size=None) -> Launch:
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name}: {len(args)} given, {self.nin} inputs and "
                            f"{self.nout} outputs")
        in_args, out_args = list(args[:self.nin]), list(args[self.nin:])
        xp = _array_module(args, self.name)
        in_types, out_types, placeholders = resolve_types(self.in_params, self.out_params, in_args, out_args,
                                                          self.name)
        shape = self._loop_shape(in_args + out_args, size)
        if not out_args:
            out_args = [xp.empty(shape, t.numpy) for t in out_types]
        for p, a in zip(self.out_params, out_args):
            if not is_array_like(a):
                raise TypeError(f"{self.name}: output {p.name!r} must be an array")
            if not p.raw and tuple(a.shape) != shape:
                raise ValueError(f"{self.name}: output {p.name!r} has shape {tuple(a.shape)}, the loop's is {shape}")
        args = in_args + out_args
        types = in_types + out_types
        n = int(np.prod(shape, dtype=np.int64))
        flat = all(a.flags.c_contiguous and tuple(a.shape) == shape for p, a in zip(self.params, args)
                   if is_array_like(a) and not p.raw)
        values = []
        for p, a, t in zip(self.params, args, types):
            if not is_array_like(a):
                values.append(scalar_value(a, t, p, self.name))
            elif p.raw or p in self.out_params and not flat:
                values.append(a)
            elif flat:
                values.append(a.reshape(-1))
            else:
                values.append(xp.broadcast_to(a, shape))
        index_type = int32 if n < 2**31 else int64
        ranks = tuple(a.ndim if p.raw else is_array_like(a) for p, a in zip(self.params, args))
        key = (tuple(t.name for t in types), ranks, flat or len(shape), index_type.name)
        dims = () if flat else tuple(index_type.numpy.type(d) for d in shape)
        kernel = None
        if n > 0:
            kernel = self.tile_kernel(key, lambda: self.generate(placeholders, types, ranks, flat, len(shape),
                                                                 index_type))
        default = {"TILE": self.tile or min(1024, max(128, pow2_at_least(n)))}
        return Launch(kernel, tuple(values) + (np.int64(n),) + dims, self.tuned_config(key, default),
                      lambda config: (max(1, -(-n // config["TILE"])),), {"TILE": TILES}, out_args, key)

    def _loop_shape(self, args, size) -> tuple:
        shapes = [tuple(a.shape) for p, a in zip(self.params, args) if is_array_like(a) and not p.raw]
        if size is not None:
            if shapes:
                raise ValueError(f"{self.name}: `size` is only for kernels whose arguments are all raw or scalars")
            return (int(size),)
        if not shapes:
            raise ValueError(f"{self.name}: the loop size cannot be told from the arguments (all raw or scalars): "
                             f"pass size=")
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise ValueError(f"{self.name}: the shapes {', '.join(map(str, shapes))} do not broadcast") from None

    # ---- the generated tile kernel ---------------------------------------------------------------

    def generate(self, placeholders, types, ranks, flat: bool, ndim: int, index_type) -> str:
        """The tile-language source of one specialization (see the module docstring)."""
        array_params = [p for p, r in zip(self.params, ranks) if r and not p.raw]
        dims = [] if flat else [f"_d{k}" for k in range(ndim)]
        signature = [p.py for p in self.params] + ["_n"] + dims + ["TILE: ct.Constant[int]"]
        names = {p.py for p in self.params} | {"ct", "cops", "_block", "_index", "_n", "TILE", *dims}
        inputs, outputs, raws = {}, {}, {}
        loaded: dict[str, str] = {}
        for p, t, r in zip(self.params, types, ranks):
            is_input = p in self.in_params
            if p.raw:
                raws[p.name] = RawArray(p.py, t, r, writable=not is_input)
            elif not r:
                inputs[p.name] = CValue(p.py, t, None, varies=False)
            elif is_input:
                loaded[p.name] = f"{p.py}_val"
                inputs[p.name] = CValue(f"{p.py}_val", t)
            else:
                outputs[p.name] = Output(p.name, t)
        names |= {f"{p.py}_val" for p in array_params}
        specials = {"i": CValue("i", int64), "_ind.size()": CValue("_n", int64),
                    "in_range": CValue("(_index < _n)", index_type), "shape": "(TILE,)"}
        preload: set = set()
        while True:  # outputs the body reads before assigning them are loaded first
            translator = Translator(Snippet(self.operation, self.name, "operation"), placeholders, inputs,
                                    {name: Output(o.name, o.type) for name, o in outputs.items()}, raws, specials,
                                    self.functions(), set(names))
            for name in preload:
                translator.outputs[name].value = CValue(f"{self.param(name).py}_val", outputs[name].type)
            try:
                self.declare_preamble_constants(translator)
                translator.snippet = Snippet(self.loop_prep, self.name, "loop_prep")
                translator.statements(self._prep)
                translator.snippet = Snippet(self.operation, self.name, "operation")
                translator.statements(self._body)
                break
            except NeedsInitialValue as e:
                preload.add(e.name)
        lines = [f"def {python_name(self.name)}({', '.join(signature)}):", "    _block = ct.bid(0)"]
        uses_index = not flat or translator.used_specials & {"i", "in_range"} or raws
        if uses_index:
            lines.append(f"    _index = _block * TILE + ct.arange(TILE, dtype=ct.{index_type.name})")
        if "i" in translator.used_specials:
            lines.append(f"    i = _index{'.astype(ct.int64)' if index_type is not int64 else ''}")
        coords = ""
        if not flat:
            rest = "_index"
            parts = []
            for k in reversed(range(1, ndim)):
                lines.append(f"    _c{k} = {rest} % _d{k}")
                lines.append(f"    _rest{k} = {rest} // _d{k}")
                parts.insert(0, f"_c{k}")
                rest = f"_rest{k}"
            parts.insert(0, rest)
            coords = f"({', '.join(parts)}{',' * (len(parts) == 1)})"
        for p in array_params:
            if p.name in loaded or p.name in preload:
                var = f"{p.py}_val"
                if flat:
                    lines.append(f"    {var} = ct.load({p.py}, (_block,), (TILE,), "
                                 f"padding_mode=ct.PaddingMode.ZERO)")
                else:
                    lines.append(f"    {var} = ct.gather({p.py}, {coords})")
        lines += translator.lines
        for name, out in translator.outputs.items():
            if out.value is None:
                continue   # never assigned: its memory is left as it was
            code = out.value.code if out.value.varies else f"ct.broadcast_to({out.value.code}, (TILE,))"
            if flat:
                lines.append(f"    ct.store({self.param(name).py}, (_block,), {code})")
            else:
                lines.append(f"    ct.scatter({self.param(name).py}, {coords}, {code})")
        return "\n".join(lines) + "\n"


def _array_module(args, name: str):
    on_gpu = [hasattr(a, "__cuda_array_interface__") for a in args if is_array_like(a)]
    if any(on_gpu):
        if not all(on_gpu):
            raise TypeError(f"{name}: NumPy and GPU arrays cannot be mixed in one call")
        import cupy
        return cupy
    return np


__all__ = ["ElementwiseKernel", "array_dtype"]
