"""IR -> CUDA C++ over the tile library in include/tileworkbench/ (one emission rule per op).

The generated kernel reads like the tile program it came from: one C++ variable per SSA value,
named after the user's variable, one statement per op, and a comment per kernel source line:

    // line 4: ta = ct.load(a, (i,), (TILE,))
    const tw::tile<float, tw::shape<1024>> ta = tw::load<tw::shape<1024>>(a, (int32_t[]){i.item()}, NAN);

Thread layout, shared-memory use and the lowering of mma are described in docs/architecture.md.
"""
from __future__ import annotations

from collections import Counter
import hashlib
import math
import re

import numpy as np
import struct
from dataclasses import dataclass, field
from typing import NamedTuple
from pathlib import Path

from ..errors import TileUnsupportedFeatureError
from ..ir.attrs import padding_value
from ..ir.core import Function, Op, Value
from ..ir.ops import OPS, Category, Rules, ops_in
from ..ir.types import ArrayType, DType, TileType, bool_, float32, float64, part_dtype, tfloat32
from .names import is_reserved
from .layout import (PADDED_ROW_ELEMENTS, LayoutPlan, MmaLayout, RowLayout, mma_stage_bytes, plan_layouts,
                     row_table_bytes, shared_budget, skewed, wanted_layout)

INCLUDE_DIR = Path(__file__).parent / "include"


def _library_version() -> str:
    """A hash of the tile library's text: compiled kernels are cached under it, so any change to
    the library (what compiled kernels do) compiles them anew."""
    digest = hashlib.sha256()
    for path in sorted((INCLUDE_DIR / "tileworkbench").glob("*.cuh")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


HEADER_VERSION = _library_version()
# A block holds its tiles in registers, and an SM has 65536 of them: a bigger tile cannot be resident
# (and NVRTC's time grows steeply with the tile: about a second at this size, minutes at 2**20).
MAX_GPU_TILE_ELEMENTS = 1 << 16
# The most bytes of parameters a kernel launch takes (CUDA 12.1 and later, Volta and later GPUs):
# a list argument passes every array's pointer, shape and strides.
MAX_PARAMETER_BYTES = 32764

def cpp_identifier(name: str) -> str:
    """`name` as a C++ identifier that means nothing else there: non-ASCII letters are spelled out
    (`α` -> `u03b1`), names that C++ reserves or a header may define as a macro (`double`, `NAN`,
    `__half`, `_Tp`) get a `v` in front or a `_` behind."""
    name = "".join(c if c.isascii() else f"u{ord(c):04x}" for c in name)
    if "__" in name or name.startswith("_"):
        name = "v" + re.sub("_{2,}", "_", name)
    return name + "_" if is_reserved(name) else name


@dataclass
class GeneratedKernel:
    """CUDA C++ for one specialization, and how to launch it."""

    name: str
    source: str
    threads: int
    smem_bytes: int
    params: list = field(default_factory=list)  # (name, kind, dtype, ndim) per runtime parameter
    arch: str | None = None  # the target it must be compiled for, where it needs a specific one
    line_map: dict = field(default_factory=dict)  # (file, line NVRTC reports) -> kernel source line
    vec: int = 1  # TW_VEC: elements per 16-byte chunk of the narrowest memory dtype
    # (kernel source line, what the generator did there that costs time, and why): the mma paths
    # taken and the layout changes through shared memory, for the launch report
    notes: list = field(default_factory=list)
    # CUtensorMap parameters, after the others, that the launcher encodes for the arrays (TMA loads)
    tensor_maps: list = field(default_factory=list)
    # which layout every tile took and which mma path each mma took (the access analysis follows it)
    plan: LayoutPlan | None = field(default=None, repr=False, compare=False)
    # (source line, tile type, from layout, to layout) of each convert_layout (None: blocked)
    conversions: list = field(default_factory=list, repr=False, compare=False)
    # whether the blocks per SM the registers are capped for may be raised (generate's min_blocks):
    # not where the tensor-core plan sets them
    free_blocks: bool = False


class TensorMapParam(NamedTuple):
    """A tensor map kernel parameter: for the array argument at `array` (its position among the
    kernel's runtime parameters, Function.runtime_params), a box of `box` elements in the array's
    axis order, with the 128/64/32-byte swizzle of `swizzle` bytes (tile_tma.cuh)."""

    array: int
    box: tuple
    swizzle: int


def tile_type(t: TileType | ArrayType, layout: MmaLayout | RowLayout | None = None) -> str:
    """Scalars are plain C++ values; tiles are tw::tile<T, tw::shape<...>> (plus a layout alias);
    arrays (chosen under an `if` or carried by a loop) are tw::array<T, rank>."""
    if isinstance(t, ArrayType):
        return f"tw::array<{t.dtype.ctype}, {t.ndim}>"
    if not t.shape:
        return t.dtype.ctype
    return f"tw::tile<{t.dtype.ctype}, {shape_type(t.shape)}{', ' + layout.alias if layout else ''}>"


def shape_type(shape) -> str:
    return f"tw::shape<{', '.join(map(str, shape))}>"


def literal(value, dtype: DType) -> str:
    """A C++ expression of `dtype` for a Python scalar."""
    if dtype is bool_:
        return "true" if value else "false"
    if dtype.is_complex:
        value, part = complex(value), part_dtype(dtype)
        return f"{dtype.ctype}({literal(value.real, part)}, {literal(value.imag, part)})"
    if dtype.is_integral:
        value = int(value)
        if dtype.bitwidth == 32 and dtype.is_signed and value > -2**31:
            return str(value)
        suffix = ("ULL" if not dtype.is_signed else "LL") if dtype.bitwidth == 64 else ""
        if value < 0 and value == -2 ** (dtype.bitwidth - 1):  # the minimum has no literal of its own
            return f"{dtype.ctype}({value + 1}{suffix} - 1)"
        return f"{dtype.ctype}({value}{suffix})"
    if dtype is float64:
        if math.isfinite(value):
            return repr(float(value))
        return _non_finite(value, "d", f"__longlong_as_double({struct.unpack('<q', struct.pack('<d', value))[0]}LL)")
    if dtype.bitwidth in (8, 16):  # exact bits, rounded as the interpreter rounds (NaN payloads included)
        bits = int(np.array(value, dtype=dtype.numpy).view(f"uint{dtype.bitwidth}"))
        return f"tw::from_bits<{dtype.ctype}>(0x{bits:0{dtype.bitwidth // 4}x})"
    if math.isfinite(value):
        return f"{float(value)!r}f"
    return _non_finite(value, "f", f"__int_as_float({struct.unpack('<i', struct.pack('<f', value))[0]})")


def _non_finite(value, suffix: str, bits: str) -> str:
    """NaN and infinities by name (NumPy's quiet NaN), other NaN payloads by their bits."""
    if math.isinf(value):
        return f"{'-' if value < 0 else ''}tw::infinity_{suffix}()"
    is_default_nan = np.isnan(value) and np.array(value, np.float64).view(np.uint64) == np.array(np.nan).view(np.uint64)
    return f"tw::quiet_nan_{suffix}()" if is_default_nan else bits


def line_file(filename: str) -> str:
    """The name a `#line` directive gives `filename`, and so the one NVRTC's errors and the PTX's
    .file entries carry: printable ASCII other than `"`, anything else becomes `_` (ptxas cannot
    parse a .file name with a quote, a newline or a non-ASCII letter)."""
    return "".join(c if " " <= c <= "~" and c != '"' else "_" for c in filename)


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _comment(text: str) -> str:
    """`text` as the body of a `//` comment that ends on its line: control characters become `?`,
    and no backslash is left at the end (it would splice the next line of C++ into the comment)."""
    return "".join(c if c.isprintable() else "?" for c in text).rstrip("\\ \t")


# Where the generated code's own lines (the kernel's signature and setup) count from. NVRTC's line info
# names them by the program (kernel.cu), and the kernel line a library call was inlined at by the program
# or a header, with the kernel's number: only the number tells the two apart (runtime/sass.py).
GENERATED_LINES = 1_000_000


class _Emitter:
    def __init__(self, fn: Function, threads: int, vec: int, plan: LayoutPlan):
        self.fn = fn
        self.threads = threads
        self.vec = vec  # TW_VEC: elements per register chunk
        self.plan = plan
        self.mma_smem = 0  # operand buffers of the tensor-core mmas, above self.smem
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.lines: list[str] = []
        self.indent = "  "
        self.last_line = None
        self.last_file = None  # the file the last #line directive named
        self.loc = None  # the op being emitted: its statements carry a #line directive to its source line
        self.presumed_line = None  # the line number NVRTC gives the next emitted line
        self.line_map: dict = {}  # (file, line NVRTC reports) -> the kernel source line it came from
        self.smem = 0
        self.stage_views: dict[Value, str] = {}  # staged load result -> its stage in the pipelined loop
        self.stage_rings: dict[Op, str] = {}  # staged load op -> its stage buffers
        self.row_tables: dict[Op, str] = {}  # staged gather op -> its row table in shared memory
        self.current: dict[Value, MmaLayout] = {}  # hoisted values: the layout their name now holds
        self.loops = 0  # how many loops enclose the op being emitted
        self.notes: dict = {}  # (line, text) -> None, in emission order
        self.tensor_maps: dict[Op, tuple[str, TensorMapParam]] = {}  # TMA load -> its parameter
        self.conversions: list = []  # (source line, tile type, from layout, to layout) of each convert_layout
        self.operands: set | None = None  # every value some op reads (is_used), gathered at the first question

    # ---- names ----------------------------------------------------------------------------------

    def define(self, v: Value, hint: str = "") -> str:
        base = re.sub(r"\[(\d+)\]", r"_\1", hint or v.name or "v").replace(".", "_")  # As[0]: an item of a list
        if not base.isidentifier():
            base = "v"
        base = name = cpp_identifier(base)
        k = 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        self.names[v] = name
        return name

    def __getitem__(self, v: Value) -> str:
        return self.names[v]

    def tile(self, v: Value) -> str:
        """v as a tile (a scalar becomes a one-element tile held by every thread)."""
        return f"tw::make_scalar<{v.dtype.ctype}>({self[v]})" if not v.shape else self[v]

    def at(self, values) -> str:
        return f"tw::at({', '.join(self[v] for v in values)})"

    def emit(self, text: str):
        # A `#line` directive at the first statement of each kernel source line makes NVRTC report
        # errors (and -lineinfo map SASS) there; it also shows that line as a comment. A later statement
        # of the same line gets a bare directive to that line again: counting on from the first would give
        # it the numbers of the next kernel lines, and a location could not tell which line it belongs to.
        loc = self.loc
        if loc is not None and (loc.line, loc.filename) != (self.last_line, self.last_file):
            # the file is named once; a directive without one keeps it
            named = f' "{_c_string(line_file(loc.filename))}"' if loc.filename != self.last_file else ""
            self.lines.append(f"{self.indent}#line {loc.line}{named}  "
                              f"// line {loc.line}: {_comment(loc.source_line.strip())}")
            self.presumed_line = self.last_line = loc.line
            self.last_file = loc.filename
        elif loc is not None and self.presumed_line != loc.line:
            self.lines.append(f"{self.indent}#line {loc.line}")
            self.presumed_line = loc.line
        if loc is not None and self.presumed_line is not None:
            self.line_map[(loc.filename, self.presumed_line)] = loc.line
        self.lines.append(self.indent + text)
        if self.presumed_line is not None:
            self.presumed_line += 1

    def note(self, text: str):
        """A codegen note at the kernel line being emitted."""
        if self.loc is not None:
            self.notes[(self.loc.line, text)] = None

    def is_used(self, v: Value) -> bool:
        """Whether any op (a yield included) reads v."""
        if self.operands is None:
            self.operands = {u for op in self.fn.walk() for u in op.operands}
        return v in self.operands

    def need_smem(self, nbytes: int):
        self.smem = max(self.smem, (nbytes + 15) // 16 * 16)

    # ---- ops --------------------------------------------------------------------------------------

    def block(self, ops):
        enclosing = self.loc  # a loop's own statements after its body (loop-carried copies) are the loop's line
        for op in ops:  # scalar constants are written where used: named up front, so loads may move above them
            if op.name == "constant" and not op.result.shape:
                _constant(self, op)
        for op in _loads_early(ops, self.threads):
            if op.name == "yield":
                continue
            self.loc = op.loc
            rule = EMIT.get(op.name)
            if rule is None:
                raise TileUnsupportedFeatureError(f"'{op.name}' in a GPU kernel: {OPS[op.name].no_emitter}", op.loc)
            if op in self.plan.unneeded:  # made only the index tiles of a gather its pipeline stages
                continue
            if op.results and op.results[0] in self.plan.staged:  # issued ahead by the pipelined loop
                self.names[op.results[0]] = self.stage_views[op.results[0]]
                continue
            if op in self.plan.fused:  # a reshape/transpose the staged operand's stage already is
                self.names[op.result] = self[op.operands[0]]
                continue
            if op.name in ("for", "if", "while"):  # their operands' layouts are settled by the rule
                self.loops += op.name != "if"
                rule(self, op)
                self.loops -= op.name != "if"
                self.loc = enclosing
                continue
            made = [v for v in op.operands  # (an index computed or read from a table is made by the rule)
                    if op.name not in ("gather", "scatter") or not _computed_index(self.plan, v)]
            own = {v: self[v] for v in made}
            for v in made:  # the rule sees each operand in the layout the op takes it in
                self.names[v] = self.in_layout(v, wanted_layout(self.plan, op, v))
            rule(self, op)
            self.names.update(own)
            for r in op.results:  # converted once here rather than at each use in a loop
                if r in self.plan.hoisted:
                    self.names[r] = self.in_layout(r, self.plan.hoisted[r])
                    self.current[r] = self.plan.hoisted[r]
        self.loc = enclosing

    def type_of(self, v: Value) -> str:
        return tile_type(v.type, self.plan.of(v))

    def in_layout(self, v: Value, layout: MmaLayout | RowLayout | None) -> str:
        """v's name, or a converted copy's when its layout is not `layout`."""
        if v.is_array or not v.shape or self.current.get(v, self.plan.of(v)) == layout:
            return self[v]
        _staged(self, v.type)
        if len(v.shape) == 2:  # tile_mma.cuh stages a 2-D tile to or from an mma layout in padded rows
            self.need_smem(v.shape[0] * (v.shape[1] + PADDED_ROW_ELEMENTS) * v.type.dtype.itemsize + 64)
        name = self.define(Value(v.type, v.name), f"{self[v]}_{layout.alias if layout else 'blocked'}")
        target = layout.alias if layout else "tw::blocked"
        source = self.current.get(v, self.plan.of(v))
        what = f"`{v.name}`" if v.name else f"the {v.owner.name} result" if v.owner is not None else "a tile"
        self.note(f"{what} ({'x'.join(map(str, v.shape))}) changes layout "
                  f"({source.alias if source else 'blocked'} to {layout.alias if layout else 'blocked'}) through shared "
                  f"memory{' in every iteration' if self.loops else ''}")
        self.emit(f"const {tile_type(v.type, layout)} {name} = tw::convert_layout<{target}>({self[v]});")
        self.conversions.append((self.loc.line if self.loc else None, v.type, source, layout))
        return name

    def assign(self, op: Op, expr: str):
        r = op.result
        self.emit(f"const {self.type_of(r)} {self.define(r)} = {expr};")

    def assign_tile_result(self, op: Op, expr: str):
        """`expr` computes a tile; a scalar result takes its one element."""
        self.assign(op, f"{expr}.item()" if not op.result.shape else expr)


def _loads_early(ops: list, threads: int) -> list:
    """The ops with each tile load moved up to just after the ops its operands come from, never
    above an op with effects (a store, scatter, atomic, loop, if, print or assert): a load issued
    early overlaps its latency with the work in between (layer norm's weights load while the row's
    statistics reduce: on the H100, keeping them below the reductions took a bf16 layer norm of
    32768 x 4096 from 0.200 to 0.211 ms, the registers it saved did not fit another block per SM).
    A load of more than a quarter of a thread's registers stays where it is: held across the ops in
    between it would push out the tiles they work on (two 32 x 1024 float32 accumulators summed from
    loads spilled 1788 bytes a thread with the loads first)."""
    out: list = []
    for op in ops:
        if op.name == "load" and op.result.shape and 4 * thread_registers(op.result.type, threads) <= \
                register_cap(threads):
            at = 0
            for k, prev in enumerate(out):
                scalar_constant = prev.name == "constant" and not prev.result.shape
                if (OPS[prev.name].effects or prev.name == "load"  # loads keep their order
                        or (not scalar_constant and any(r in op.operands for r in prev.results))):
                    at = k + 1
            out.insert(at, op)
        else:
            out.append(op)
    return out


def register_cap(threads: int) -> int:
    """The registers a thread may have when a block of `threads` is to fit an SM (65536 registers, at
    most 255 a thread)."""
    return min(255, 65536 // threads)


def thread_registers(t: TileType, threads: int) -> int:
    """The 32-bit registers a thread holds of a tile spread evenly over the block."""
    return -(-t.size * max(t.dtype.itemsize, 1) // (4 * threads))


EMIT = Rules()
emits = EMIT.add


_INFIX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "bitwise_and": "&", "bitwise_or": "|",
          "bitwise_xor": "^", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
          "gt": ">", "ge": ">="}
def _narrow(dtype) -> bool:
    """C++ promotes these to int: scalar results need a cast back."""
    return dtype.is_integral and dtype.itemsize < 4 or dtype is bool_


def _rounded(e, op) -> bool:
    """An op in a directed rounding mode: tw::<op>_rounded<tw::RZ>(...), or in APPROX:
    tw::<op>_approx<flush to zero>(...), the hardware's approximate instruction (tw::op:: for scalars)."""
    mode = op.attrs.get("rounding")
    space = "tw::op::" if not op.result.shape else "tw::"
    operands = ", ".join(e[v] for v in op.operands)
    if mode:
        e.assign(op, f"{space}{op.name}_rounded<tw::{mode}>({operands})")
    elif op.attrs.get("approx"):
        e.assign(op, f"{space}{op.name}_approx<{str(bool(op.attrs.get('flush_to_zero'))).lower()}>({operands})")
    return bool(mode) or bool(op.attrs.get("approx"))


def _flushed(e, op, expr: str | None = None) -> list[str] | str:
    """With flush_to_zero, float32 subnormals read and written as zero: the operand names wrapped
    in tw::ftz, or (given `expr`) the result's expression wrapped."""
    space = "tw::op::" if not op.result.shape else "tw::"
    ftz = op.attrs.get("flush_to_zero")
    if expr is not None:
        return f"{space}ftz({expr})" if ftz and op.result.dtype is float32 else expr
    return [f"{space}ftz({e[v]})" if ftz and v.dtype is float32 else e[v] for v in op.operands]


# Ops that hand a value on without rounding it: NVRTC sees through them to a multiply behind
_UNROUNDED = {"neg", "broadcast", "reshape", "permute", "extract", "cat", "astype"}


def _from_a_product(v: Value) -> bool:
    """Whether `v` is a float multiply's result, or one handed on unrounded (negated, moved between
    threads' registers, widened): an add of it is where NVRTC would fuse the two."""
    op = v.owner
    if op is None or not v.dtype.is_float:
        return False
    if op.name == "mul":
        return True
    if op.name == "astype" and op.operands[0].dtype.is_float and v.dtype.itemsize < op.operands[0].dtype.itemsize:
        return False  # a narrowing rounds
    return op.name in _UNROUNDED and any(map(_from_a_product, op.operands))


@emits(*_INFIX)
def _infix(e, op):
    if _rounded(e, op):
        return
    x, y = op.operands
    a, b = _flushed(e, op)
    if op.name in ("add", "sub") and op.result.dtype.is_float and not e.fn.hints.get("fp_contract") \
            and any(map(_from_a_product, op.operands)):
        # rounded alone, as the IR says: NVRTC would fuse the product into a plain `+` (the _rn add
        # stops it however the product reaches it; the multiply stays plain, which keeps registers low)
        space = "tw::op::" if not op.result.shape else "tw::"
        e.assign(op, _flushed(e, op, f"{space}{op.name}_rn({a}, {b})"))
        return
    expr = f"{a} {_INFIX[op.name]} {b}"
    if not op.result.shape and _narrow(op.result.dtype) and op.result.dtype is x.dtype:
        expr = f"{op.result.dtype.ctype}({expr})"
    e.assign(op, _flushed(e, op, expr))


@emits("bitwise_not")
def _not(e, op):
    x = op.operands[0]
    if op.result.shape:
        e.assign(op, f"~{e[x]}")
    else:
        e.assign(op, f"!{e[x]}" if x.dtype is bool_ else f"{x.dtype.ctype}(~{e[x]})")


@emits("minimum", "maximum")
def _min_max(e, op):
    space = "tw::op::" if not op.result.shape else "tw::"
    suffix = "_nan" if op.attrs.get("propagate_nan") else ""
    e.assign(op, f"{space}{op.name}{suffix}({e[op.operands[0]]}, {e[op.operands[1]]})")


@emits("where")
def _where(e, op):
    c, x, y = op.operands
    if op.result.shape:
        e.assign(op, f"tw::select({e[c]}, {e[x]}, {e[y]})")
    else:
        e.assign(op, f"{e[c]} ? {e[x]} : {e[y]}")


@emits("constant")
def _constant(e, op):
    t = op.result.type
    value = literal(op.attrs["value"], t.dtype)
    if not t.shape:  # a scalar constant is written where it is used
        e.names[op.result] = value
        return
    layout = e.plan.of(op.result)
    e.assign(op, f"tw::full<{t.dtype.ctype}, {shape_type(t.shape)}{', ' + layout.alias if layout else ''}>({value})")


@emits("iota")
def _iota(e, op):
    t = op.result.type
    e.assign(op, f"tw::iota<{t.dtype.ctype}, {shape_type(t.shape)}>()")


@emits("astile")
def _astile(e, op):
    t = op.result.type
    e.assign(op, f"tw::from_elements<{t.dtype.ctype}, {shape_type(t.shape)}>({{{', '.join(e[v] for v in op.operands)}}})")


@emits("astype")
def _astype(e, op):
    dtype, mode = op.attrs["dtype"], op.attrs.get("rounding")
    x = e.tile(op.operands[0])
    if dtype is tfloat32:
        e.assign_tile_result(op, f"tw::element_cast_tf32<tw::{mode or 'RN'}>({x})")
    elif mode:
        e.assign_tile_result(op, f"tw::element_cast_rounded<{dtype.ctype}, tw::{mode}>({x})")
    else:
        fn = "element_cast" if op.result.shape else "convert"
        e.assign(op, f"tw::{fn}<{dtype.ctype}>({e[op.operands[0]]})")


@emits("bitcast")
def _bitcast(e, op):
    fn = "element_bitcast" if op.result.shape else "bitcast"
    e.assign(op, f"tw::{fn}<{op.attrs['dtype'].ctype}>({e[op.operands[0]]})")


# Every other elementwise op is a call of the tile library's function of its name: tw::exp for
# tiles, tw::op::exp for scalars (the library picks expf, exp or a widening for each dtype).
_CALLS = sorted(ops_in(Category.ELEMENTWISE) - EMIT.keys())


@emits(*_CALLS)
def _call(e, op):
    if _rounded(e, op):
        return
    space = "tw::op::" if not op.result.shape else "tw::"
    if op.name == "exp2" and op.attrs.get("flush_to_zero") and op.result.dtype is float32:
        e.assign(op, f"{space}exp2_ftz({e[op.operands[0]]})")  # one ex2.approx.ftz, which flushes itself
        return
    e.assign(op, _flushed(e, op, f"{space}{op.name}({', '.join(_flushed(e, op))})"))


@emits("reshape")
def _reshape(e, op):
    x, shape = op.operands[0], op.result.shape
    if not shape and not x.shape:  # a scalar stays itself
        e.names[op.result] = e[x]
    elif not shape:
        e.assign(op, f"{e[x]}.item()")
    elif not x.shape:
        e.assign(op, f"tw::full<{x.dtype.ctype}, {shape_type(shape)}>({e[x]})")
    else:
        e.assign(op, f"tw::reshape<{shape_type(shape)}>({e[x]})")


def _staged(e, *tiles):
    """Shared memory for a layout change of these tiles (skewed to spread banks)."""
    e.need_smem(sum(skewed(t.size) * t.dtype.itemsize for t in tiles) + 64)


@emits("permute")
def _permute(e, op):
    _staged(e, op.operands[0].type)
    e.assign(op, f"tw::permute<{', '.join(map(str, op.attrs['axes']))}>({e[op.operands[0]]})")


@emits("broadcast")
def _broadcast(e, op):
    x, layout = op.operands[0], e.plan.of(op.result)
    if x.type.size > 1 and not isinstance(e.plan.of(x), RowLayout):
        _staged(e, x.type)
    target = f", {layout.alias}" if layout else ""
    e.assign(op, f"tw::broadcast<{shape_type(op.result.shape)}{target}>({e[x]})")


@emits("cat")
def _cat(e, op):
    x, y = op.operands
    _staged(e, x.type, y.type)
    e.assign(op, f"tw::cat<{op.attrs['axis']}>({e[x]}, {e[y]})")


@emits("extract")
def _extract(e, op):
    x, *index = op.operands
    _staged(e, x.type)
    e.assign(op, f"tw::extract<{shape_type(op.result.shape)}>({e[x]}, {e.at(index)})")


@emits("insert")
def _insert(e, op):
    x, value, *index = op.operands
    _staged(e, x.type)
    e.assign(op, f"tw::insert({e[x]}, {e[value]}, {e.at(index)})")


def _keepdims_shape(t: TileType, axes) -> tuple[int, ...]:
    return tuple(1 if d in axes else n for d, n in enumerate(t.shape))


# A reduction stages its tile in slices of at most this many bytes: every GPU from sm_80 on gives a
# block this much shared memory (sm_86 and sm_89 allow 99 KB), and a bigger tile takes more passes.
REDUCTION_STAGE_BYTES = 96 * 1024


def folded_reduction(shape, axes, threads: int, vec: int) -> tuple[int, int] | None:
    """The (rows, outputs) tile a reduction over leading axes folds each thread's register chunks into
    before anything goes through shared memory (tile_reduce.cuh `folded_chunks`: chunks a multiple of
    the output count apart land on the same outputs), or None where nothing folds. One row: the
    folded chunks are the result."""
    kept = [1 if d in axes else n for d, n in enumerate(shape)]
    leading = next((d for d, n in enumerate(kept) if n != 1), len(kept))
    size, outputs = math.prod(shape), math.prod(kept)
    registers = size // threads if size >= threads else 1
    chunk = min(vec, registers)
    chunks, stride = registers // chunk, threads * chunk
    if kept[leading:] != list(shape[leading:]) or size < threads or chunks < 2:
        return None
    folded = min(chunks, outputs // stride) if outputs % stride == 0 else 1
    return (folded * stride // outputs, outputs) if folded < chunks else None


def reduction_passes(t: TileType, axes, threads: int, vec: int, element_bytes: int, acc_bytes: int) -> tuple[int, int]:
    """(passes, bytes staged per pass) of a reduction of tile type `t` (elements of `element_bytes`,
    accumulators of `acc_bytes`) over `axes` to several outputs: a folded reduction stages its folded
    tile of accumulators, once (nothing where that is the result); any other the fewest slices of the
    tile, each a range of every thread's register chunks, that fit REDUCTION_STAGE_BYTES."""
    def staged(n, item_bytes):
        return ((n + n // 32 + 1) * item_bytes + 15) // 16 * 16
    folded = folded_reduction(t.shape, axes, threads, vec)
    if folded:
        return 1, 0 if folded[0] == 1 else staged(math.prod(folded), acc_bytes)
    registers = max(1, t.size // threads)
    chunk = min(registers, vec)
    passes = 1
    while staged(t.size // passes, element_bytes) > REDUCTION_STAGE_BYTES and registers % (2 * passes * chunk) == 0:
        passes *= 2
    return passes, staged(t.size // passes, element_bytes)


def reduction_bytes(op) -> tuple[int, int]:
    """(bytes of a staged element, bytes of an accumulator) of a reduction op in tile_reduce.cuh."""
    if op.name in ("reduce", "scan"):  # a tuple of tiles is folded as one tile of packs
        element = len(op.operands) * max(x.dtype.itemsize for x in op.operands)
        return element, element
    itemsize = op.operands[0].dtype.itemsize
    acc = max(4, itemsize)  # 16-bit floats accumulate in float
    return itemsize, 2 * acc if op.name in ("argmax", "argmin") else acc  # arg*: (value, index) pairs


@emits("sum", "prod", "max", "min", "argmax", "argmin")
def _reduce(e, op):
    (x,) = op.operands
    keep = _keepdims_shape(x.type, op.attrs["axes"])
    flags = ", true" if op.attrs.get("propagate_nan") else ""
    element, acc = reduction_bytes(op)
    outputs = math.prod(keep)
    passes, staged = reduction_passes(x.type, op.attrs["axes"], e.threads, e.vec, element, acc) if outputs > 1 \
        else (1, 0)
    if not isinstance(e.plan.of(op.result), RowLayout) and (outputs == 1 or staged):  # else all in registers
        e.need_smem(staged + (e.threads // 32 + 1) * acc + outputs * 8 + 64)
    expr = f"tw::{op.name}<{shape_type(keep)}, {passes}{flags}>({e[x]})"
    if not op.result.shape:
        expr += ".item()"
    elif keep != op.result.shape:
        expr = f"tw::reshape<{shape_type(op.result.shape)}>({expr})"
    e.assign(op, expr)


@emits("reduce", "scan")
def _combine(e, op):
    """A custom reduce/scan: the combine region becomes a device lambda over two elements. A tuple
    of tiles is folded as one tile of packs (tw::zip), each element a pack of one value per tile,
    and its results are taken back out (tw::unzip)."""
    region, axis, tiles = op.regions[0], op.attrs["axis"], op.operands
    types = [x.dtype.ctype for x in tiles]
    packed = len(tiles) > 1
    element = f"tw::pack<{', '.join(types)}>" if packed else types[0]
    element_bytes = reduction_bytes(op)[0]  # a pack's members padded at most to the widest
    base = op.results[0].name or op.name
    combine = e.define(Value(tiles[0].type), f"{base}_combine")
    args = [e.define(arg) for arg in region.args]
    if packed:
        a, b = (e.define(Value(tiles[0].type), side) for side in ("a", "b"))
        e.emit(f"const auto {combine} = [=](const {element} {a}, const {element} {b}) {{  // the combine function")
        e.indent += "  "
        for k, (name, t) in enumerate(zip(args, types * 2)):
            e.emit(f"const {t} {name} = tw::get<{k % len(tiles)}>({a if k < len(tiles) else b});")
    else:
        e.emit(f"const auto {combine} = [=](const {element} {args[0]}, const {element} {args[1]}) {{  "
               f"// the combine function")
        e.indent += "  "
    e.block(region.ops)
    e.loc = op.loc
    combined = [f"{t}({e[v]})" for t, v in zip(types, region.ops[-1].operands)]
    e.emit(f"return {_pack(combined) if packed else combined[0]};")
    e.indent = e.indent[:-2]
    e.emit("};")
    identities = [f"{t}({literal(i, x.dtype)})" for t, i, x in zip(types, op.attrs["identities"], tiles)]
    identity = _pack(identities) if packed else identities[0]
    operand = f"tw::zip({', '.join(e[x] for x in tiles)})" if packed else e[tiles[0]]
    x = tiles[0].type
    if op.name == "scan":
        e.need_smem(skewed(x.size) * element_bytes + 64)
        reverse = "true" if op.attrs["reverse"] else "false"
        expr, keep = f"tw::scan<{axis}, {reverse}>({operand}, {identity}, {combine})", x.shape
    else:
        keep = _keepdims_shape(x, (axis,))
        several = math.prod(keep) > 1
        passes, staged = reduction_passes(x, (axis,), e.threads, e.vec, element_bytes, element_bytes) if several \
            else (1, 0)
        if not isinstance(e.plan.of(op.results[0]), RowLayout) and (not several or staged):  # else in registers
            e.need_smem(staged + (e.threads // 32 + 1) * element_bytes + math.prod(keep) * max(8, element_bytes) + 64)
        expr = f"tw::reduce<{shape_type(keep)}, {passes}>({operand}, {identity}, {combine})"
    if packed:
        folded = e.define(Value(x), f"{base}_folded")
        e.emit(f"const auto {folded} = {expr};")
    for k, r in enumerate(op.results):
        part = f"tw::unzip<{k}>({folded})" if packed else expr
        if not r.shape:
            part += ".item()"
        elif keep != r.shape:
            part = f"tw::reshape<{shape_type(r.shape)}>({part})"
        e.emit(f"const {e.type_of(r)} {e.define(r)} = {part};")


def _pack(values) -> str:
    return f"tw::make_pack({', '.join(values)})"


@emits("cumsum", "cumprod")
def _scan(e, op):
    _staged(e, op.operands[0].type)
    reverse = "true" if op.attrs["reverse"] else "false"
    e.assign(op, f"tw::{op.name}<{op.attrs['axis']}, {reverse}>({e[op.operands[0]]})")


def _mma_smem_comment(nbytes: int, shared: bool) -> str:
    if not nbytes:
        return "."
    return f", {nbytes} for tensor-core mma operands" + (" (in the same memory)." if shared else ".")


def _mma_note(e, op) -> str:
    """How this mma runs, and what kept it from a faster path."""
    pipeline, why = e.plan.pipelined.get(op), e.plan.why_not.get(op)
    if op not in e.plan.tensor_core:
        return f"mma on {why or 'CUDA cores'}"
    registers = "; A from registers" if op in e.plan.register_a else ""
    if pipeline is not None:
        kind = "wgmma" if op in e.plan.wgmma else "mma.sync"
        engine = "TMA (mbarrier stages)" if pipeline.tma else "cp.async"
        text = (f"mma on tensor cores ({kind}){registers}, operands copied by {engine} {pipeline.ahead} "
                f"iteration{'s' if pipeline.ahead > 1 else ''} ahead into {pipeline.stages} shared-memory stages")
        return text + (f"; {why}" if why else "")
    return (f"mma on tensor cores (mma.sync){registers}; its operands are copied to shared memory at every call, "
            f"then a barrier" + (f"; {why}" if why else ""))


@emits("mma")
def _mma(e, op):
    a, b, acc = op.operands
    e.note(_mma_note(e, op))
    pipeline = e.plan.pipelined.get(op)
    if pipeline is not None:  # operands wait in shared-memory stages (A may be in registers)
        def operand(k, v):
            if (op, k) not in pipeline.operands:
                return e[v]
            load, transposed = pipeline.operands[op, k]
            view = e.stage_views[load.result]
            return f"tw::transpose_stage({view})" if transposed else view
        a_expr, b_expr = operand(0, a), operand(1, b)
        if pipeline.in_flight:  # into the loop-carried accumulator, in place
            e.emit(f"tw::wgmma_async({a_expr}, {b_expr}, {e[acc]});")
            e.names[op.result] = e[acc]
            return
        e.assign(op, f"tw::{'wgmma' if op in e.plan.wgmma else 'mma'}({a_expr}, {b_expr}, {e[acc]})")
        return
    if op in e.plan.tensor_core:  # two operand buffers of padded rows (tile_mma.cuh)
        (m, k), n = a.shape, b.shape[1]
        a_rows = 0 if op in e.plan.register_a else m  # an A operand in registers needs no buffer
        e.mma_smem = max(e.mma_smem, 2 * mma_stage_bytes(a.dtype, a_rows, n, k))
        e.assign(op, f"tw::mma({e[a]}, {e[b]}, {e[acc]}, mma_stage)")
        return
    e.need_smem((skewed(a.type.size) * a.type.dtype.itemsize + 15) // 16 * 16
                + skewed(b.type.size) * b.type.dtype.itemsize + 64)
    adder = "<tw::tf32_inputs>" if a.dtype is tfloat32 else ""  # tfloat32 tiles are float tiles in C++
    e.assign(op, f"tw::mma{adder}({e[a]}, {e[b]}, {e[acc]})")


_AXIS = "xyz"


@emits("bid")
def _bid(e, op):
    e.assign(op, f"int32_t(blockIdx.{_AXIS[op.attrs['axis']]})")


@emits("num_blocks")
def _num_blocks(e, op):
    e.assign(op, f"int32_t(gridDim.{_AXIS[op.attrs['axis']]})")


@emits("array_dim")
def _array_dim(e, op):
    e.assign(op, f"{e[op.operands[0]]}.shape[{op.attrs['axis']}]")


@emits("array_slice")
def _array_slice(e, op):
    array, start, stop = op.operands
    e.emit(f"const auto {e.define(op.result)} = tw::slice({e[array]}, {op.attrs['axis']}, {e[start]}, {e[stop]});")


@emits("list_item")
def _list_item(e, op):
    *items, index = op.operands
    e.assign(op, f"tw::list_item({e[index]}, {', '.join(e[item] for item in items)})")


@emits("num_tiles")
def _num_tiles(e, op):
    axis, n = op.attrs["axis"], op.attrs["shape"][op.attrs["axis"]]
    extent = f"{e[op.operands[0]]}.shape[{op.attrs['order'][axis]}]"
    e.assign(op, f"({extent} + {n - 1}) / {n}")


def _pad(op) -> str:
    dtype = op.result.dtype
    return literal(padding_value(op.attrs["padding"], dtype), dtype)


@emits("load")
def _load(e, op):
    array, *index = op.operands
    order, shape = op.attrs["order"], op.attrs["shape"]
    if order == tuple(range(len(order))):
        fn = "load_operand" if op.result in e.plan.operands else "load"
        e.assign_tile_result(op, f"tw::{fn}<{shape_type(shape)}>({e[array]}, {e.at(index)}, {_pad(op)})")
        return
    # Tile axis k walks array axis order[k]: load the tile in the array's own axis order (coalesced),
    # then permute it in shared memory.
    arr_shape, arr_index = [0] * len(shape), [None] * len(shape)
    for k, d in enumerate(order):
        arr_shape[d], arr_index[d] = shape[k], index[k]
    _staged(e, op.result.type)
    loaded = f"tw::load<{shape_type(arr_shape)}>({e[array]}, {e.at(arr_index)}, {_pad(op)})"
    e.assign(op, f"tw::permute<{', '.join(map(str, order))}>({loaded})")


@emits("store")
def _store(e, op):
    array, *index, tile = op.operands
    order = op.attrs["order"]
    if order == tuple(range(len(order))):
        e.emit(f"tw::store<{shape_type(tile.shape)}>({e[array]}, {e.at(index)}, {e.tile(tile)});")
        return
    inverse = [order.index(d) for d in range(len(order))]
    arr_shape = tuple(tile.shape[k] for k in inverse)
    arr_index = [index[k] for k in inverse]
    _staged(e, tile.type)
    e.emit(f"tw::store<{shape_type(arr_shape)}>({e[array]}, {e.at(arr_index)}, "
           f"tw::permute<{', '.join(map(str, inverse))}>({e[tile]}));")


def _indices(e, op, index, shape) -> list[str]:
    """A gather's or scatter's index operands: tiles, or tables of the tiles they broadcast
    (layout.py _index_tables), written to the layout-change memory between two barriers."""
    tables = [v for v in index if v in e.plan.index_tables]
    blocked = {v: e.in_layout(e.plan.index_tables[v], None) for v in tables}  # (a conversion stages too: first)
    if tables:
        e.emit("__syncthreads();  // the index tables reuse the layout-change memory")
    offset, names = 0, {}
    for v in tables:
        x = e.plan.index_tables[v]
        names[v] = e.define(Value(v.type), f"{e[x]}_table")
        e.emit(f"const auto {names[v]} = tw::index_table<{shape_type(shape)}>({blocked[v]}, {offset});")
        offset += (skewed(x.type.size) * x.type.dtype.itemsize + 15) // 16 * 16
    if tables:
        e.need_smem(offset)
        e.emit("__syncthreads();  // the index tables are written")
    for v in index:
        if v in e.plan.affine_indices:
            axis, start = e.plan.affine_indices[v]
            first = "0" if start is None else e[start]
            names[v] = f"tw::affine_index<{v.dtype.ctype}, {shape_type(shape)}, {axis}>{{{first}}}"
        elif v in e.plan.uniform_indices:
            names[v] = f"tw::uniform_index<{v.dtype.ctype}, {shape_type(shape)}>{{{e[e.plan.uniform_indices[v]]}}}"
    return [names[v] if v in names else e.tile(v) for v in index]


def _mask(e, mask: Value | None, shape) -> str:
    """A gather's or scatter's mask: none, `start + ct.arange(n) < bound` computed per element
    (layout.py _affine_mask), or a tile."""
    if mask is None:
        return "tw::no_mask{}"
    if mask in e.plan.affine_masks:
        axis, start, bound = e.plan.affine_masks[mask]
        first = "0" if start is None else e[start]
        return f"tw::affine_mask<{bound.dtype.ctype}, {shape_type(shape)}, {axis}>{{{first}, {e[bound]}}}"
    return e.tile(mask)


def _computed_index(plan, v: Value) -> bool:
    """Whether a gather's or scatter's index or mask operand v is not read as a tile (layout.py _index_tables)."""
    return (v in plan.index_tables or v in plan.affine_indices or v in plan.uniform_indices
            or v in plan.affine_masks)


@emits("gather")
def _gather(e, op):
    array, *rest = op.operands
    nd = array.type.ndim
    index, pad, mask = rest[:nd], rest[nd], (rest[nd + 1] if op.attrs["has_mask"] else None)
    mask_text = _mask(e, mask, op.result.shape)
    indices = _indices(e, op, index, op.result.shape)
    e.assign_tile_result(op, f"tw::gather({', '.join([e[array], e.tile(pad), mask_text] + indices)})")


@emits("scatter")
def _scatter(e, op):
    array, *rest = op.operands
    nd = array.type.ndim
    index, value, mask = rest[:nd], rest[nd], (rest[nd + 1] if op.attrs["has_mask"] else None)
    mask_text = _mask(e, mask, value.shape)
    indices = _indices(e, op, index, value.shape)
    e.emit(f"tw::scatter({', '.join([e[array], e.tile(value), mask_text] + indices)});")


@emits("assert")
def _assert(e, op):
    loc = op.loc
    where = f"{loc.filename}:{loc.line}" if loc else e.fn.name
    e.emit(f'tw::assert_all({e.tile(op.operands[0])}, "{_c_string(op.attrs["message"] or "Assertion failed")}", '
           f'"{_c_string(where)}");')


_ATOMIC_KIND = {"atomic_xchg": "xchg", "atomic_add": "add", "atomic_max": "max", "atomic_min": "min",
                "atomic_and": "bit_and", "atomic_or": "bit_or", "atomic_xor": "bit_xor"}


@emits("atomic_cas", *_ATOMIC_KIND)
def _atomic(e, op):
    array, *rest = op.operands
    nd = array.type.ndim
    index, values = rest[:nd], rest[nd:]
    t = op.result.type
    used = e.is_used(op.result)
    if used and t.size < e.threads:  # replicas read the owners' results through shared memory
        e.need_smem(t.size * t.dtype.itemsize + 64)
    order = (f"tw::memory_order::{op.attrs['memory_order'].lower()}, "
             f"tw::memory_scope::{op.attrs['memory_scope'].lower()}" + ("" if used else ", false"))
    if op.name == "atomic_cas":
        fn = f"tw::atomic_cas<{order}>"
    else:
        fn = f"tw::atomic_rmw<tw::atomic_kind::{_ATOMIC_KIND[op.name]}, {order}>"
    operands = ", ".join([e[array]] + [e.tile(v) for v in values] + [e.tile(i) for i in index])
    if used:
        e.assign_tile_result(op, f"{fn}({operands})")
    else:  # the old values are never read: no thread waits for them
        e.emit(f"{fn}({operands});")


def _advanced_operands(e, op, shape):
    sd = op.attrs["sparse_dim"]
    array, index, *starts = op.operands[:2 + len(shape) - 1]
    ones = tuple(n if d == sd else 1 for d, n in enumerate(shape))
    _staged(e, TileType(index.dtype, shape))
    full_index = f"tw::broadcast<{shape_type(shape)}>(tw::reshape<{shape_type(ones)}>({e[index]}))"
    it = iter(starts)
    start_values = ["0" if d == sd else e[next(it)] for d in range(len(shape))]
    return sd, array, full_index, f"tw::at({', '.join(start_values)})"


@emits("load_adv")
def _load_adv(e, op):
    shape = op.result.shape
    sd, array, full_index, starts = _advanced_operands(e, op, shape)
    e.assign(op, f"tw::load_advanced<{sd}, {shape_type(shape)}>({e[array]}, {full_index}, {starts}, {_pad(op)})")


@emits("store_adv")
def _store_adv(e, op):
    tile = op.operands[-1]
    sd, array, full_index, starts = _advanced_operands(e, op, tile.shape)
    e.emit(f"tw::store_advanced<{sd}>({e[array]}, {full_index}, {starts}, {e[tile]});")


@emits("if")
def _if(e, op):
    results = [e.define(r) for r in op.results]
    for r, name in zip(op.results, results):
        e.emit(f"{e.type_of(r)} {name};")
    for k, region in enumerate(op.regions):
        e.emit(f"if ({e[op.operands[0]]}) {{" if k == 0 else "} else {")
        _region(e, region, results, [e.plan.of(r) for r in op.results])
    e.emit("}")


@emits("for")
def _for(e, op):
    lo, hi, step, *init = op.operands
    body = op.regions[0]
    iv, *carried = body.args
    names = [e.define(r) for r in op.results]
    for r, name, start in zip(op.results, names, init):
        e.emit(f"{e.type_of(r)} {name} = {e.in_layout(start, e.plan.of(r))};")
        e.names[next(a for a, x in zip(carried, op.results) if x is r)] = name
    i = e.define(iv, iv.name or "i")
    if op in e.plan.pipelines:
        _pipelined_loop(e, op, e.plan.pipelines[op], i)
        return
    e.emit(f"for (int32_t {i} = {e[lo]}; {i} < {e[hi]}; {i} += {e[step]}) {{")
    _region(e, body, names, [e.plan.of(r) for r in op.results])
    e.emit("}")


@emits("while")
def _while(e, op):
    body = op.regions[0]
    names = [e.define(r) for r in op.results]
    for r, name, start, arg in zip(op.results, names, op.operands, body.args):
        e.emit(f"{e.type_of(r)} {name} = {e.in_layout(start, e.plan.of(r))};")
        e.names[arg] = name
    go_on = e.define(Value(TileType(bool_, ())), "go_on")
    e.emit(f"for (bool {go_on} = true; {go_on};) {{")
    _region(e, body, [go_on] + names, [None] + [e.plan.of(r) for r in op.results])
    e.emit("}")


def _pipelined_loop(e, op, pipeline, i):
    """The loop with its operand loads issued `ahead` iterations ahead into `stages` shared-memory
    stages: by cp.async (every thread, a barrier per iteration) or by TMA (one thread, the stages
    guarded by full/empty mbarriers)."""
    body, stages, ahead = op.regions[0], pipeline.stages, pipeline.ahead
    loc, first_line = e.loc, len(e.lines)
    operand_names = {load: mma.operands[k].name for (mma, k), (load, _) in pipeline.operands.items()}
    engine = "TMA" if pipeline.tma else "cp.async"
    e.emit(f"// software pipeline: the loads of {' and '.join(l.result.name or operand_names[l] or 'an operand' for l in pipeline.loads)} "
           f"run {ahead} iteration{'s' if ahead > 1 else ''} ahead, copied by {engine} into {stages} "
           f"shared-memory stages" + (" (full/empty mbarriers)" if pipeline.tma else ""))
    offset = 0
    for load in pipeline.loads:
        rows, cols = pipeline.stage_shape(load)
        name = load.result.name or operand_names[load] or "operand"
        ring = e.define(Value(load.result.type), f"{name}_stages")
        e.emit(f"const tw::operand_stages<{load.result.dtype.ctype}, {rows}, {cols}, {stages}> {ring}"
               f"{{tw::smem() + PIPELINE_BASE + {offset}}};")
        offset += stages * ((load.result.type.size * load.result.dtype.itemsize + 1023) // 1024 * 1024)
        e.stage_views[load.result] = f"{ring}[stage]"
        e.stage_rings[load] = ring
    for load in pipeline.invariant:
        rows, cols = pipeline.stage_shape(load)
        name = e.define(Value(load.result.type), f"{load.result.name or operand_names[load] or 'operand'}_stage")
        e.emit(f"const tw::swizzled<{load.result.dtype.ctype}, {rows}, {cols}> {name}"
               f"{{tw::smem() + PIPELINE_BASE + {offset}}};  // loaded once, before the loop")
        offset += (load.result.type.size * load.result.dtype.itemsize + 1023) // 1024 * 1024
        e.stage_views[load.result] = name
    for gather, how in pipeline.gathers.items():
        name = e.define(Value(how.rows.type), f"{how.rows.name or 'gathered'}_rows")
        e.emit(f"long long* const {name} = (long long*)(tw::smem() + PIPELINE_BASE + {offset});  "
               f"// the rows {gather.result.name or 'the operand'} gathers, for every thread")
        offset += row_table_bytes(gather.result.shape[0])
        e.row_tables[gather] = name
    if pipeline.tma:
        barriers = e.define(Value(TileType(bool_, ())), "stage_barriers")
        e.emit(f"const tw::stage_barriers<{stages}> {barriers}{{(uint64_t*)(tw::smem() + PIPELINE_BASE + {offset})}};")
        offset += 16 * stages
        _tma_load_stage(e, pipeline, i, barriers)
    else:
        _cp_async_load_stage(e, pipeline, i)
    e.loc = loc
    e.emit("__syncthreads();  // earlier ops may still read the shared memory the stages reuse")
    for gather, how in pipeline.gathers.items():
        e.loc = gather.loc
        e.emit(f"tw::store_row_table({e.row_tables[gather]}, {e.in_layout(how.rows, None)});")
    if pipeline.gathers:
        e.loc = loc
        e.emit("__syncthreads();  // the row tables are written")
    for load in pipeline.invariant:  # by cp.async, the oldest copy group (the first wait covers it too)
        e.loc = load.loc
        e.emit(f"tw::load_async({e.stage_views[load.result]}, {_load_async_operands(e, load)});")
        e.emit("tw::cp_async_commit();")
    e.loc = loc
    if pipeline.tma:
        _tma_loop(e, op, pipeline, i, barriers)
    else:
        _cp_async_loop(e, op, pipeline, i)
    outer_smem, e.smem = e.smem, 0
    _region(e, body, [e[r] for r in op.results], [e.plan.of(r) for r in op.results])
    if pipeline.tma and pipeline.in_flight:  # the previous stage is free now that its wgmma group has completed
        e.emit(f"  if (use > 0) {barriers}.release(use - 1);")
        e.emit(f"  {_tma_issue(e, op, pipeline, i)}")
    elif pipeline.tma:
        e.emit(f"  {barriers}.release(use);  // its wgmma groups have completed")
    base = (e.smem + 1023) // 1024 * 1024  # above what the loop body's own ops stage, if any
    e.smem = max(outer_smem, e.smem)
    e.need_smem(base + offset)
    e.emit("}")
    if pipeline.in_flight:
        e.emit(f"tw::wgmma_wait_all({e[op.results[0]]});  // the last wgmma group")
    if pipeline.tma:
        e.emit("__syncthreads();  // every thread is past its last barrier wait")
        e.emit(f"if (threadIdx.x == 0) {barriers}.invalidate();")
    else:
        e.emit("tw::cp_async_wait<0>();")
    e.emit("__syncthreads();  // the stages are free for the ops after the loop")
    e.lines[first_line:] = [re.sub(r"PIPELINE_BASE \+ (\d+)", lambda m: str(base + int(m.group(1))), line)
                            for line in e.lines[first_line:]]


def _cp_async_load_stage(e, pipeline, i):
    """load_stage(i, stage): every thread's share of iteration i's copies."""
    e.emit(f"const auto load_stage = [&](int32_t {i}, int stage) {{  // the loads of iteration {i}")
    e.indent += "  "
    for load in pipeline.loads:
        e.loc = load.loc
        if load in pipeline.gathers:
            how = pipeline.gathers[load]
            e.emit(f"tw::gather_rows_async({e.stage_rings[load]}[stage], {e[load.operands[0]]}, "
                   f"{e.row_tables[load]}, {_scalar_text(e, how.start)}, {_constant_text(how.pad)});")
            continue
        e.emit(f"tw::load_async({e.stage_rings[load]}[stage], {_load_async_operands(e, load)});")
    e.loc = None
    e.indent = e.indent[:-2]
    e.emit("};")


def _cp_async_loop(e, op, pipeline, i):
    """The prologue's copy groups and the loop head: wait for this iteration's stage, then a barrier
    (every thread is done with the stage the next copies overwrite), then issue them."""
    lo, hi, step = (e[v] for v in op.operands[:3])
    stages, ahead = pipeline.stages, pipeline.ahead
    e.emit(f"for (int stage = 0; stage < {ahead}; ++stage) {{")
    e.emit(f"  if ({_affine(lo, 'stage', step)} < {hi}) load_stage({_affine(lo, 'stage', step)}, stage);")
    e.emit("  tw::cp_async_commit();")
    e.emit("}")
    e.emit(f"for (int32_t {i} = {lo}, stage = 0; {i} < {hi}; {i} += {step}, stage = stage == {stages - 1} ? 0 : stage + 1) {{")
    e.emit(f"  tw::stage_ready<{ahead - 1}>();  // this iteration's stage has landed; "
           f"{'the one two back' if pipeline.in_flight else 'the previous one'} is free")
    e.emit(f"  if ({_affine(i, ahead, step)} < {hi}) load_stage({_affine(i, ahead, step)}, "
           f"stage + {ahead} < {stages} ? stage + {ahead} : stage - {stages - ahead});")
    e.emit("  tw::cp_async_commit();")


def _tma_load_stage(e, pipeline, i, barriers):
    """load_stage(i, use), run by one thread: wait until the stage of `use` is released, announce
    its bytes to its full barrier, and issue iteration i's tensor copies into it."""
    stages = pipeline.stages
    views = {load: f"{e.stage_rings[load]}[use % {stages}]" for load in pipeline.loads}
    total = " + ".join(f"tw::stage_copy_bytes<decltype({views[load]})>::value" for load in pipeline.loads)
    e.emit(f"const auto load_stage = [&](int32_t {i}, int use) {{  // the loads of iteration {i}, by one thread")
    e.indent += "  "
    e.emit(f"{barriers}.acquire(use, {total});")
    for load in pipeline.loads:
        e.loc = load.loc
        array, *_ = load.operands
        rows, cols = pipeline.stage_shape(load)
        panel = min(128, cols * load.result.dtype.itemsize)
        box = (1,) * (len(load.result.shape) - 2) + (rows, panel // load.result.dtype.itemsize)
        name = e.define(Value(array.type), f"{e[array]}_tma")
        e.tensor_maps[load] = (name, TensorMapParam(e.fn.body.args.index(array), box, panel))
        e.emit(f"tw::load_tma({views[load]}, {name}, {_array_order_index(e, load)}, {barriers}.full(use));")
    e.loc = None
    e.indent = e.indent[:-2]
    e.emit("};")


def _tma_loop(e, op, pipeline, i, barriers):
    """Barrier setup, the prologue's copies and the loop head: wait for this iteration's stage to
    land, then (one thread) issue the copies `ahead` iterations on."""
    lo, hi, step = (e[v] for v in op.operands[:3])
    stages, ahead = pipeline.stages, pipeline.ahead
    if pipeline.invariant:
        e.emit("tw::cp_async_wait<0>();")
    e.emit("tw::fence_proxy_async();  // this thread's earlier shared-memory writes come before the tensor copies'")
    e.emit(f"if (threadIdx.x == 0) {barriers}.init();")
    e.emit("__syncthreads();  // the barriers are ready" + (" and the stage loaded once has landed"
                                                              if pipeline.invariant else ""))
    e.emit(f"for (int use = 0; threadIdx.x == 0 && use < {ahead}; ++use)")
    e.emit(f"  if ({_affine(lo, 'use', step)} < {hi}) load_stage({_affine(lo, 'use', step)}, use);")
    e.emit(f"for (int32_t {i} = {lo}, use = 0; {i} < {hi}; {i} += {step}, ++use) {{")
    e.emit(f"  const int stage = use % {stages};")
    e.emit(f"  {barriers}.wait_full(use);  // this iteration's stage has landed")
    if not pipeline.in_flight:  # (with a group in flight, at the end of the iteration: see _pipelined_loop)
        e.emit(f"  {_tma_issue(e, op, pipeline, i)}")


def _tma_issue(e, op, pipeline, i) -> str:
    """Thread 0 requests the tiles `ahead` iterations on (into the stage released last)."""
    hi, step = e[op.operands[1]], e[op.operands[2]]
    at = _affine(i, pipeline.ahead, step)
    return f"if (threadIdx.x == 0 && {at} < {hi}) load_stage({at}, use + {pipeline.ahead});"


def _load_async_operands(e, load: Op) -> str:
    """array, index (in the array's axis order) and padding of a staged load."""
    return f"{e[load.operands[0]]}, {_array_order_index(e, load)}, {_pad(load)}"


def _array_order_index(e, load: Op) -> str:
    """A staged load's tile index in the array's axis order."""
    array, *index = load.operands
    for v in index:  # a constant index defined in the loop body is written in place, here too
        if v not in e.names and v.owner is not None and v.owner.name == "constant":
            _constant(e, v.owner)
    order = load.attrs["order"]
    in_array_order = [None] * len(order)  # tile axis k walks array axis order[k]
    for k, d in enumerate(order):
        in_array_order[d] = index[k]
    return e.at(in_array_order)


def _constant_text(v: Value) -> str:
    op = v.owner
    return literal(op.attrs["value"], v.dtype)


def _scalar_text(e, v: Value) -> str:
    """A scalar of the loop variable, constants and values from outside the loop (layout.py's
    _affine_scalar) as one C++ expression, for the iteration the pipeline's load_stage is given."""
    op = v.owner
    if op is None or v in e.names and op.name not in ("add", "sub", "mul", "constant"):
        return e[v]
    if op.name == "constant":
        return _constant_text(v)
    a, b = (_scalar_text(e, x) for x in op.operands)
    return f"({a} {dict(add='+', sub='-', mul='*')[op.name]} {b})"


def _affine(start: str, count, step: str) -> str:
    """`start + count * step` as C++, without the terms that are 0 or the factors that are 1."""
    term = str(count) if step == "1" else step if str(count) == "1" else f"{count} * {step}"
    return term if start == "0" else f"{start} + {term}"


def _region(e, block, targets, layouts):
    """A region's ops, then its yielded values assigned to the enclosing op's result variables."""
    e.indent += "  "
    e.block(block.ops)
    yielded = block.ops[-1].operands if block.ops and block.ops[-1].name == "yield" else []
    own = {v: e[v] for v in yielded}
    converted = [e.in_layout(v, layout) for v, layout in zip(yielded, layouts)]
    for v, name in zip(yielded, converted):
        e.names[v] = name
    if len(yielded) > 1:  # assign through temporaries: a yielded value may be another carried variable
        temps = []
        for k, v in enumerate(yielded):
            temps.append(f"next_{targets[k]}")
            e.emit(f"const auto {temps[-1]} = {e[v]};")
        for target, temp in zip(targets, temps):
            e.emit(f"{target} = {temp};")
    elif yielded:
        if e[yielded[0]] != targets[0]:
            e.emit(f"{targets[0]} = {e[yielded[0]]};")
    e.names.update(own)
    e.indent = e.indent[:-2]


def _memory_dtypes(fn: Function):
    for p in fn.runtime_params:
        if p.kind == "array":
            yield p.type.dtype


def choose_threads(fn: Function, vec: int, requested: int | None = None) -> int:
    """Threads per block: enough for two 16-byte chunks per thread of the largest tile, 32 to 512
    (on the H100, 512 rather than 256 threads took a 32768 x 16384 f32 row softmax from 1796 to
    3010 GB/s and a bf16 transpose from 2301 to 2540 GB/s; 1024 was slower again), and 1024 where a
    loop's carried tiles would take more than half a thread's registers at 512: an accumulator spread
    over more threads leaves each room for the tiles that update it (two 32 x 1024 float32
    accumulators: 1788 bytes of spills a thread at 512 threads, 652 at 1024)."""
    if requested:
        return requested
    biggest = max((r.type.size for op in fn.walk() for r in op.results if isinstance(r.type, TileType)), default=1)
    threads = 32
    while threads < 512 and threads * vec * 2 < biggest:
        threads *= 2
    if threads == 512 and 2 * _carried_registers(fn, threads) > register_cap(threads):
        threads = 1024
    return threads


def _carried_registers(fn: Function, threads: int) -> int:
    """The most registers a thread holds of the tiles one loop carries from iteration to iteration."""
    return max((sum(thread_registers(r.type, threads) for r in op.results if isinstance(r.type, TileType))
                for op in fn.walk() if op.name in ("for", "while")), default=0)


def generate(fn: Function, *, threads: int | None = None, arch: str | None = None, tma: bool = True,
             min_blocks: int | None = None) -> GeneratedKernel:
    """CUDA C++ source for one kernel specialization. `arch` tunes it for one GPU (pipeline depth by
    its shared memory; wgmma on sm_90, which then needs the sm_90a target: GeneratedKernel.arch).
    `tma=False` keeps the stages of sm_90 pipelines on cp.async (the launcher's variant for arrays a
    tensor map cannot describe). `min_blocks` asks the compiler for registers that let that many
    blocks share an SM, where the tensor-core plan does not decide it (GeneratedKernel.free_blocks),
    and the kernel's `occupancy` asks for fewer."""
    for op in fn.walk():
        for v in op.results:
            if isinstance(v.type, TileType) and v.type.size > MAX_GPU_TILE_ELEMENTS:
                raise TileUnsupportedFeatureError(
                    f"A tile of shape {v.type.shape} ({v.type.size} elements) is too big for a GPU block: the CUDA "
                    f"backend takes tiles of at most {MAX_GPU_TILE_ELEMENTS} elements (2**16, the registers of one "
                    f"SM). Use smaller tiles and more blocks; the interpreter runs it as it is", op.loc)
    _check_parameter_bytes(fn)
    itemsizes = [d.itemsize for d in _memory_dtypes(fn)] or [4]
    vec = max(1, 16 // min(itemsizes))
    # Pipeline stages are planned before the loop body's own staging is known: when both do not fit
    # the blocks per SM the plan aims for, take fewer stages, then one block per SM.
    attempts = [(stages, None) for stages in (4, 3, 2)] + [(stages, 1) for stages in (4, 3, 2)]
    for max_stages, blocks_per_sm in attempts:
        plan = plan_layouts(fn, threads, arch, max_stages=max_stages, blocks_per_sm=blocks_per_sm, tma=tma)
        kernel = _emit(fn, plan, threads, vec, arch, min_blocks)
        if not plan.pipelines or kernel.smem_bytes <= shared_budget(arch, plan.blocks_per_sm):
            break
    return kernel


def _check_parameter_bytes(fn: Function):
    by_argument = Counter()  # `As[0]`, `As[1]`, ... count for `As`
    for p in fn.runtime_params:  # an array: its pointer, shapes and strides; a scalar: 8 bytes at most, aligned
        by_argument[p.name.split("[")[0]] += 8 + 8 * p.type.ndim if p.kind == "array" else 8
    total = sum(by_argument.values())
    if total > MAX_PARAMETER_BYTES:
        raise TileUnsupportedFeatureError(
            f"The arguments of kernel `{fn.name}` need {total} bytes of kernel parameters; a GPU launch takes at "
            f"most {MAX_PARAMETER_BYTES} (each array of a list passes its pointer, shape and strides): pass fewer "
            f"arrays in `{by_argument.most_common(1)[0][0]}`, or split the launch; the interpreter runs it as it is")


def _emit(fn: Function, plan: LayoutPlan, threads: int | None, vec: int, arch: str | None,
          min_blocks: int | None) -> GeneratedKernel:
    threads = 32 * plan.warps if plan.warps else choose_threads(fn, vec, threads)
    e = _Emitter(fn, threads, vec, plan)
    signature, setup, params = [], [], []
    layouts = sorted(set(plan.tensor_core.values()), key=lambda l: l.alias)
    # the rows of every mma<wm x 1> accumulator: a conversion into them may be made where a value is used
    rows = sorted({l for l in plan.layouts.values() if isinstance(l, RowLayout)}
                  | {RowLayout(l.wm) for l in layouts if l.wn == 1}, key=lambda l: l.alias)
    for layout in layouts:
        e.used.add(layout.alias)
        setup.append(f"using {layout.alias} = {layout.cpp};  // tensor-core accumulator layout")
    for layout in rows:
        e.used.add(layout.alias)
        setup.append(f"using {layout.alias} = {layout.cpp};  // the rows of an accumulator")
    if any(op not in plan.pipelined for op in fn.walk() if op in plan.tensor_core):
        e.used.add("mma_stage")
        setup.append("int mma_stage = 0;  // alternates the tensor-core mma operand buffers")
    for p, arg in zip(fn.runtime_params, fn.body.args):
        name = e.define(arg, p.name)
        if p.kind == "array":
            e.used.update([f"{name}_ptr"] + [f"{name}_{part}{d}" for part in ("shape", "stride")
                                             for d in range(p.type.ndim)])
            t, nd = p.type.dtype.ctype, p.type.ndim
            signature.append(f"{t}* __restrict__ {name}_ptr")
            signature += [f"int32_t {name}_shape{d}" for d in range(nd)]
            signature += [f"int32_t {name}_stride{d}" for d in range(nd)]
            shapes = ", ".join(f"{name}_shape{d}" for d in range(nd))
            strides = ", ".join(f"{name}_stride{d}" for d in range(nd))
            setup.append(f"const tw::array<{t}, {nd}> {name}{{{name}_ptr, {{{shapes}}}, {{{strides}}}}};")
            params.append((p.name, "array", p.type.dtype, nd))
        else:
            signature.append(f"const {p.type.dtype.ctype} {name}")
            params.append((p.name, "scalar", p.type.dtype, 0))
    e.block(fn.body.ops)
    signature += [f"const __grid_constant__ tw::tensor_map {name}" for name, _ in e.tensor_maps.values()]
    consts = ", ".join(f"{p.name}={p.value!r}" for p in fn.params if p.kind == "constant")
    one_mma_buffer = e.mma_smem and e.smem + e.mma_smem > shared_budget(arch, 1)
    if one_mma_buffer:  # two alternating operand buffers would not fit: one, with a barrier before each refill
        e.mma_smem //= 2
    # One buffer is refilled after a barrier, and every layout change stages after one too, so the buffer
    # may share their memory where it would not fit above it; pipeline stages fill without a barrier
    mma_base = e.smem if e.smem + e.mma_smem <= shared_budget(arch, 1) or plan.pipelines else 0
    smem = max(e.smem, mma_base + e.mma_smem)
    free_blocks = not plan.tensor_core  # (the kernel's `occupancy`, if any, is then the least asked for)
    blocks = max(plan.blocks_per_sm, min_blocks or 1) if free_blocks else plan.blocks_per_sm
    bounds = f"{threads}, {blocks}" if blocks > 1 else f"{threads}"
    head = [
        "// " + _comment(f"Generated by tileworkbench from kernel `{fn.name}`" + (f" ({consts})" if consts else ""))
        + ".",
        f"// {threads} threads per block; {e.smem} bytes of shared memory for layout changes"
        + (" and pipeline stages" if plan.pipelines else "")
        + _mma_smem_comment(e.mma_smem, shared=not mma_base),
        f"#define TW_THREADS {threads}",
        f"#define TW_VEC {vec}",
    ] + ([f"#define TW_MMA_SMEM_BASE {mma_base}"] if e.mma_smem else []) + (
        ["#define TW_MMA_BUFFERS 1"] if one_mma_buffer else []) + [
        "#include <tileworkbench/tile.cuh>",
        "",
        f"#line {GENERATED_LINES}  // the generated code's own lines: numbered apart from any kernel line",
    ] + [
        f'extern "C" __global__ void __launch_bounds__({bounds}) {cpp_identifier(fn.name)}(',
        "    " + ",\n    ".join(signature) + ") {",
    ]
    body = ["  " + s for s in setup] + e.lines
    source = "\n".join(head + body + ["}", ""])
    # wgmma exists only in the arch-specific sm_90a target
    return GeneratedKernel(cpp_identifier(fn.name), source, threads, smem, params, arch="sm_90a" if plan.wgmma else None,
                           line_map=e.line_map, vec=vec, notes=list(e.notes),
                           tensor_maps=[param for _, param in e.tensor_maps.values()], plan=plan,
                           conversions=e.conversions, free_blocks=free_blocks)
