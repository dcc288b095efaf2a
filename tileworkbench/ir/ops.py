"""Every IR op, declared once: what it does, its type rule, and what every layer needs to know of it.

The frontend parses and checks the user's call (constants, tuples, broadcasting, promotion),
then emits the op; the rule here computes the result type and checks what must hold in any
well-formed program. The declaration also states the op's category, which tile function emits
it, which operand dtypes an elementwise op accepts, its flops and the bytes it moves, and the
view `--viz` draws of it: every list of ops elsewhere is derived from these (`ops_in`).
The interpreter (interp/rules.py, interp/memory.py) and the code generator (codegen/cuda.py)
have one row per op name: `grep -rn '"gather"'` finds the declaration, both rows and the tests.
"""
from __future__ import annotations

import enum
import math
from typing import Callable, NamedTuple

from .types import ArrayType, DType, TileType, bool_, complex64, complex128, float64, int32, part_dtype, scalar

DOCS = "https://docs.nvidia.com/cuda/cutile-python/generated/cuda.tile.{}.html"


class TypeRuleError(Exception):
    """A broken shape/dtype rule; the frontend reports it at the user's line as a TileTypeError."""


class Category(enum.Enum):
    ELEMENTWISE = "elementwise"  # result element e from element e of each operand (casts included)
    CREATION = "creation"        # a tile from attributes alone
    SHAPE = "shape"              # moves elements within tiles; traces record where each came from
    REDUCTION = "reduction"      # folds axes
    SCAN = "scan"                # prefix along an axis
    MMA = "mma"                  # matrix multiply-accumulate
    GRID = "grid"                # reads the launch: block coordinates, grid and array extents
    MEMORY = "memory"            # reads or writes an array
    CONTROL = "control"          # structured control flow; the interpreter's executor runs it itself
    DEBUG = "debug"              # output for people


class Accepts(enum.Enum):
    """The operand dtypes an elementwise op takes (the frontend checks and converts by this)."""
    NUMERIC = "numeric"          # any arithmetic dtype
    FLOAT_MATH = "float math"    # floats; int and bool operands are converted to float32 first
    FLOATS = "floats"            # floats only
    INTEGERS = "integers"        # ints and bool only


class ViewKind(enum.Enum):
    """What `%%tilekernel --viz` draws for an op's trace events."""
    TILE_SPACE = "tile space"    # the array's tiles and which elements each block touched
    INDEX_MAP = "index map"      # per-lane indices into the array
    TRANSFORM = "transform"      # where each output element came from


class OpDecl(NamedTuple):
    """The one declaration of a tile op: its type rule, category, memory access, costs and docs."""

    name: str
    summary: str
    rule: Callable                 # (operand types, attrs) -> list of result types
    category: Category
    stub: str | None = None        # the tile function whose lowering emits it (None: the frontend emits it itself)
    arity: int = 0                 # elementwise ops: operands per element
    accepts: Accepts | None = None
    flops: Callable | None = None  # (op) -> floating-point results of one execution in one block
    access: str | None = None      # memory ops: "read" or "write"
    moved: Callable | None = None  # memory ops: (op) -> the tile type one execution moves
    view: ViewKind | None = None
    effects: bool = False          # writes memory or yields: never removed as dead code
    no_emitter: str = ""           # why the code generator has no rule for it, if it has none
    numpy: str | None = None       # elementwise ops: the interpreter's function (see the elementwise section)
    c: tuple[str, ...] = ()        # elementwise ops: CUDA's math functions for it, double first
    params: tuple | None = None    # elementwise ops: (operand names, option names) of the tile function
    complex: bool = True           # takes complex operands (COMPLEX lists the compute ops that do)
    doc: str = ""


OPS: dict[str, OpDecl] = {}


# The compute ops defined on complex numbers; the others (ordering comparisons, max, floor, ...)
# refuse complex operands in their type rule. Ops that move or select elements take any dtype.
COMPLEX = frozenset({"neg", "abs", "exp", "log", "conj", "real", "imag", "add", "sub", "mul", "truediv", "eq", "ne",
                     "where", "astype", "sum", "prod", "reduce"})
_UNORDERED = {"lt", "le", "gt", "ge", "max", "min", "argmax", "argmin", "minimum", "maximum", "atomic_max", "atomic_min"}


def declare(name, summary, rule, category, *, doc=None, **facts):
    computes = category in (Category.ELEMENTWISE, Category.REDUCTION, Category.SCAN, Category.MMA)
    facts.setdefault("complex", name in COMPLEX or not computes)
    OPS[name] = OpDecl(name, summary, rule, category, doc=DOCS.format(doc) if doc else "", **facts)


class Rules(dict):
    """A layer's table of rules, one per key (an op name, or a tile function for the frontend).

    `@RULES.add("exp", "log")` registers a function under each key; a second rule for a key is an
    error at import. `check(key, fn)` (optional) vets each registration."""

    def __init__(self, check: Callable | None = None):
        super().__init__()
        self._check = check

    def add(self, *keys):
        def register(fn):
            for key in keys:
                if key in self:
                    raise ValueError(f"a second rule for {getattr(key, '__name__', key)!r}: {fn.__qualname__}")
                if self._check is not None:
                    self._check(key, fn)
                self[key] = fn
            return fn
        return register


def ops_in(*categories: Category) -> frozenset[str]:
    """The names of the ops of these categories."""
    return frozenset(name for name, decl in OPS.items() if decl.category in categories)


def infer_result_types(name: str, operand_types, attrs) -> list:
    decl = OPS[name]
    if not decl.complex:
        for t in operand_types:
            if isinstance(t, (TileType, ArrayType)) and t.dtype.is_complex:
                why = "complex numbers have no order" if name in _UNORDERED else \
                    "complex tiles take + - * /, ==, !=, exp, log, abs, conj, real, imag, where, astype, sum and prod"
                raise TypeRuleError(f"{decl.stub or name}() does not take complex operands ({t.dtype}): {why}")
    return decl.rule(operand_types, attrs)


def _check(cond, message):
    if not cond:
        raise TypeRuleError(message)


# ---- flop rules: what counts as a floating-point operation ------------------------------------

def per_float_result(op) -> int:
    """One flop per element of a float result (elementwise math; a transcendental counts one)."""
    t = op.result.type
    return t.size if t.dtype.is_float else 0


def per_float_input(op) -> int:
    """One flop per element of a float operand (a sum of n elements counts n)."""
    t = op.operands[0].type
    return t.size if t.dtype.is_float else 0


def _mma_flops(op) -> int:
    a, b = op.operands[0].type, op.operands[1].type
    return 2 * math.prod(a.shape) * b.shape[-1]


# ---- rules shared by several ops ------------------------------------------------------------

def _same(types, attrs):
    _check(all(t == types[0] for t in types), "operands must have one type: " + ", ".join(map(str, types)))
    return [types[0]]


def _part(types, attrs):
    """abs, real, imag: a complex operand gives its parts' float type, any other its own."""
    t = _same(types, attrs)[0]
    return [t.with_dtype(part_dtype(t.dtype))]


def _complex_of(types, attrs):
    """make_complex: float64 parts make a complex128, narrower floats a complex64."""
    t = _same(types, attrs)[0]
    _check(t.dtype.is_float, f"make_complex: the parts must be floats, got {t.dtype}")
    return [t.with_dtype(complex128 if t.dtype is float64 else complex64)]


def _predicate(types, attrs):
    return [_same(types, attrs)[0].with_dtype(bool_)]


def _from_attrs(types, attrs):
    return [TileType(attrs["dtype"], tuple(attrs["shape"]))]


def _int32_scalar(types, attrs):
    return [scalar(int32)]


def _nothing(types, attrs):
    return []


def _reduced_shape(shape, axes, keepdims):
    return tuple((1 if keepdims else None) if d in axes else n for d, n in enumerate(shape) if keepdims or d not in axes)


def _reduce(types, attrs):
    (t,) = types
    return [TileType(t.dtype, _reduced_shape(t.shape, attrs["axes"], attrs["keepdims"]))]


def _argreduce(types, attrs):
    (t,) = types
    return [TileType(int32, _reduced_shape(t.shape, attrs["axes"], attrs["keepdims"]))]


# ---- elementwise ----------------------------------------------------------------------------
# Operands arrive broadcast to one shape and promoted to one dtype by the frontend.
#
# Each op also has its spellings: `numpy`, the function the interpreter applies (`np.<numpy>`, or
# "math.<name>": Python's, per element in float64, where NumPy has none; None: the interpreter has
# a rule of its own); `c`, CUDA's math functions for it, which CuPy-style kernels call: the first
# takes the argument's type (double for an integer), the others compute in float32 ("expf"). The
# code generator calls the tile library's tw::<op name>, which picks the function for each dtype
# (16-bit floats compute in float). `params`: the tile function's parameters as cuTile spells
# them: the operands (positional only), then its keyword-only options (OPTIONS).

E, F = Category.ELEMENTWISE, per_float_result
N, FM, FL, I = Accepts.NUMERIC, Accepts.FLOAT_MATH, Accepts.FLOATS, Accepts.INTEGERS
OPTIONS = {"rounding_mode": None, "flush_to_zero": False, "propagate_nan": False}  # name: default
RD, FTZ, NAN = "rounding_mode", "flush_to_zero", "propagate_nan"


def _c(name):
    """CUDA's double and float spellings: exp, expf."""
    return (name, name + "f")


# name: (summary, tile function, accepted dtypes, numpy, c, options)
UNARY = {
    "neg": ("-x", "negative", N, "negative", (), ()),
    "abs": ("|x|", "abs", N, "abs", ("fabs", "fabsf"), ()),
    "exp": ("e^x", "exp", FM, "exp", _c("exp"), (RD,)),
    "exp2": ("2^x", "exp2", FM, "exp2", _c("exp2"), (FTZ,)),
    "expm1": ("e^x - 1, accurate near 0", "expm1", FM, "expm1", _c("expm1"), ()),
    "log": ("ln x", "log", FM, "log", _c("log"), ()),
    "log2": ("log2 x", "log2", FM, "log2", _c("log2"), ()),
    "log1p": ("ln(1 + x), accurate near 0", "log1p", FM, "log1p", _c("log1p"), ()),
    "sqrt": ("square root", "sqrt", FM, "sqrt", _c("sqrt"), (RD, FTZ)),
    "rsqrt": ("1/sqrt(x)", "rsqrt", FM, None, _c("rsqrt"), (FTZ,)),
    "cbrt": ("cube root", "cbrt", FM, "cbrt", _c("cbrt"), ()),
    "sin": ("sine", "sin", FM, "sin", _c("sin"), ()),
    "cos": ("cosine", "cos", FM, "cos", _c("cos"), ()),
    "tan": ("tangent", "tan", FM, "tan", _c("tan"), ()),
    "sinh": ("hyperbolic sine", "sinh", FM, "sinh", _c("sinh"), ()),
    "cosh": ("hyperbolic cosine", "cosh", FM, "cosh", _c("cosh"), ()),
    "tanh": ("hyperbolic tangent", "tanh", FM, "tanh", _c("tanh"), (RD,)),
    "erf": ("error function, 2/sqrt(pi) * integral of e^(-t^2) from 0 to x", "erf", FM, "math.erf", _c("erf"), ()),
    "erfc": ("complementary error function, 1 - erf(x), accurate for large x", "erfc", FM, "math.erfc",
             _c("erfc"), ()),
    "floor": ("round toward -inf", "floor", FL, "floor", _c("floor"), ()),
    "ceil": ("round toward +inf", "ceil", FL, "ceil", _c("ceil"), ()),
    "bitwise_not": ("~x", "bitwise_not", I, "invert", (), ()),
    "conj": ("complex conjugate (a real x is itself)", "conj", N, "conj", ("conj",), ()),
    "real": ("real part (a real x is itself)", "real", N, "real", ("real",), ()),
    "imag": ("imaginary part (0 for a real x)", "imag", N, "imag", ("imag",), ()),
}
NO_FLOPS = {"bitwise_not", "conj", "real", "imag", "neg"}  # a sign flip folds into the instruction that reads it
PARTS = {"abs", "real", "imag"}  # complex operand, float result
PREDICATES = {"isnan": "x is NaN", "isinf": "x is +inf or -inf", "isfinite": "x is neither NaN nor inf"}
# name: (summary, tile function, accepted dtypes, numpy, c, options); accepts None: any (the
# frontend promotes by cuTile's rules for each operator)
BINARY = {
    "add": ("x + y", "add", None, "add", (), (RD, FTZ)), "sub": ("x - y", "sub", None, "subtract", (), (RD, FTZ)),
    "mul": ("x * y", "mul", None, "multiply", (), (RD, FTZ)),
    "truediv": ("x / y", "truediv", None, "true_divide", (), (RD, FTZ)),
    "floordiv": ("x // y (rounds toward -inf)", "floordiv", None, None, (), ()),
    "mod": ("x % y (sign of y)", "mod", None, "mod", (), ()), "pow": ("x ** y", "pow", FL, "power", _c("pow"), ()),
    "cdiv": ("ceil(x / y), integers (rounds toward +inf)", "cdiv", I, None, (), ()),
    "minimum": ("min(x, y), NaN ignored", "minimum", None, None, ("fmin", "fminf"), (FTZ, NAN)),
    "maximum": ("max(x, y), NaN ignored", "maximum", None, None, ("fmax", "fmaxf"), (FTZ, NAN)),
    "atan2": ("atan2(x, y)", "atan2", FM, "arctan2", _c("atan2"), ()),
    "hypot": ("sqrt(x^2 + y^2) without overflow or underflow on the way", "hypot", FM, "hypot", _c("hypot"), ()),
    "make_complex": ("x + y*i, from the real and imaginary parts", "make_complex", FM, None, (), ()),
    "bitwise_and": ("x & y", "bitwise_and", None, "bitwise_and", (), ()),
    "bitwise_or": ("x | y", "bitwise_or", None, "bitwise_or", (), ()),
    "bitwise_xor": ("x ^ y", "bitwise_xor", None, "bitwise_xor", (), ()),
    "lshift": ("x << y", "bitwise_lshift", None, "left_shift", (), ()),
    "rshift": ("x >> y (arithmetic when signed)", "bitwise_rshift", None, "right_shift", (), ()),
}
NO_FLOPS |= {"cdiv", "bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift"}
HOST = {"cdiv"}  # tile functions that run on the host too, written out in ir/stubs.py
OPERANDS = {"atan2": ("x1", "x2"), "where": ("cond", "x", "y"), "make_complex": ("real", "imag")}  # cuTile's names where not x (, y)
COMPARISONS = {"eq": ("x == y", "equal", "equal"), "ne": ("x != y", "not_equal", "not_equal"),
               "lt": ("x < y", "less", "less"), "le": ("x <= y", "less_equal", "less_equal"),
               "gt": ("x > y", "greater", "greater"), "ge": ("x >= y", "greater_equal", "greater_equal")}


def _params(name, arity, options=()):
    return OPERANDS.get(name, ("x", "y")[:arity]), tuple(options)


for _name, (_summary, _stub, _accepts, _numpy, _cnames, _options) in UNARY.items():
    declare(_name, _summary, _part if _name in PARTS else _same, E, stub=_stub, arity=1, accepts=_accepts,
            flops=None if _name in NO_FLOPS else F, numpy=_numpy, c=_cnames, params=_params(_name, 1, _options),
            doc=None if _name in ("conj", "real", "imag") else _stub)
for _name, _summary in PREDICATES.items():
    declare(_name, _summary, _predicate, E, stub=_name, arity=1, accepts=FL, numpy=_name, c=(_name,),
            params=_params(_name, 1), doc=_name)
for _name, (_summary, _stub, _accepts, _numpy, _cnames, _options) in BINARY.items():
    declare(_name, _summary, _complex_of if _name == "make_complex" else _same, E, stub=_stub, arity=2,
            accepts=_accepts, flops=None if _name in NO_FLOPS else F, numpy=_numpy, c=_cnames,
            params=None if _name in HOST else _params(_name, 2, _options),
            doc=None if _name == "make_complex" else _stub)
for _name, (_summary, _stub, _numpy) in COMPARISONS.items():
    declare(_name, _summary, _predicate, E, stub=_stub, arity=2, numpy=_numpy, params=_params(_name, 2), doc=_stub)


def _where(types, attrs):
    cond, x, y = types
    _check(cond.dtype is bool_ and cond.shape == x.shape, "where: condition must be a bool tile of the result shape")
    return _same([x, y], attrs)


declare("where", "cond ? x : y, elementwise", _where, E, stub="where", arity=3, params=_params("where", 3),
        doc="where")


def _fma_flops(op) -> int:
    return 2 * per_float_result(op)


# x * y + z rounded once. No tile function emits it: the frontend fuses a float multiply whose one
# use is an add or a subtract into it (ir/fuse.py), as cuTile's compiler does, so that results are
# cuTile's bit for bit and the GPU fuses nothing else.
declare("fma", "x * y + z, rounded once", _same, E, arity=3, accepts=FL, flops=_fma_flops, complex=False)

# ---- tile creation and casts ----------------------------------------------------------------

declare("constant", "a tile filled with one compile-time value", _from_attrs, Category.CREATION)
declare("iota", "0, 1, ..., n-1 along a 1-D tile", _from_attrs, Category.CREATION, stub="arange", doc="arange")


def _astile(types, attrs):
    _check(all(t == types[0] and t.shape == () for t in types), "astile: elements must be scalars of one dtype")
    _check(len(types) == TileType(types[0].dtype, tuple(attrs["shape"])).size, "astile: one element per position")
    return [TileType(types[0].dtype, tuple(attrs["shape"]))]


declare("astile", "a tile of the operand scalars in C order", _astile, Category.CREATION, stub="astile", doc="astile")


def _astype(types, attrs):
    return [types[0].with_dtype(attrs["dtype"])]


def _bitcast(types, attrs):
    (t,) = types
    _check(t.dtype.bitwidth == attrs["dtype"].bitwidth,
           f"Cannot bitcast {t.dtype} to {attrs['dtype']}: bit width is different")
    _check(bool_ not in (t.dtype, attrs["dtype"]), "Cannot bitcast to or from bool")
    return _astype(types, attrs)


declare("astype", "convert each element (float->int truncates toward zero)", _astype, E, stub="astype", arity=1,
        doc="astype")
declare("bitcast", "reinterpret each element's bits", _bitcast, E, stub="bitcast", arity=1, doc="bitcast")

# ---- shape ops ------------------------------------------------------------------------------


def _reshape(types, attrs):
    (t,) = types
    new = TileType(t.dtype, tuple(attrs["shape"]))
    _check(new.size == t.size, f"Cannot reshape {t.shape} to {new.shape}")
    return [new]


def _permute(types, attrs):
    (t,) = types
    axes = attrs["axes"]
    _check(sorted(axes) == list(range(t.ndim)), f"permute axes {axes} are not a permutation of {t.ndim} axes")
    return [t.with_shape(t.shape[a] for a in axes)]


def _broadcast(types, attrs):
    (t,) = types
    shape = tuple(attrs["shape"])
    _check(len(shape) == t.ndim and all(n in (1, m) for n, m in zip(t.shape, shape)),
           f"Cannot broadcast tile of shape {t.shape} to {shape}")
    return [t.with_shape(shape)]


def _cat(types, attrs):
    x, y = types
    axis = attrs["axis"]
    _check(x.dtype is y.dtype and x.ndim == y.ndim, "Expected tiles to have the same dtype and rank")
    _check(all(a == b for d, (a, b) in enumerate(zip(x.shape, y.shape)) if d != axis),
           "Expected tiles to have the same shape for non axis dimensions")
    return [x.with_shape(n + y.shape[d] if d == axis else n for d, n in enumerate(x.shape))]


def _extract(types, attrs):
    x, *index = types
    _check(len(index) == x.ndim and all(i.shape == () for i in index), "extract: one scalar index per dimension")
    return [x.with_shape(attrs["shape"])]


def _insert(types, attrs):
    x, value, *index = types
    _check(value.dtype is x.dtype, f"Cannot insert a tile of dtype {value.dtype} into a tile of dtype {x.dtype}")
    _check(len(index) == x.ndim and all(x.shape[d] % n == 0 for d, n in enumerate(value.shape)),
           f"Cannot insert a tile of shape {value.shape} into a tile of shape {x.shape}")
    return [x]


S, T = Category.SHAPE, ViewKind.TRANSFORM
declare("reshape", "same elements in C order, new shape", _reshape, S, stub="reshape", view=T, doc="reshape")
declare("permute", "result axis k is input axis axes[k]", _permute, S, stub="permute", view=T, doc="permute")
declare("broadcast", "stretch size-1 dims to a new shape", _broadcast, S, stub="broadcast_to", view=T,
        doc="broadcast_to")
declare("cat", "concatenate two tiles along an axis", _cat, S, stub="cat", view=T, doc="cat")
declare("extract", "sub-tile number `index` of the grid of `shape` sub-tiles", _extract, S, stub="extract", view=T,
        doc="extract")
declare("insert", "replace sub-tile number `index` with value", _insert, S, stub="insert", view=T, doc="insert")

# ---- reductions, scans, matrix multiply -------------------------------------------------------

for _name in ("sum", "prod", "max", "min"):
    declare(_name, f"{_name} over axes (result keeps the input dtype)", _reduce, Category.REDUCTION, stub=_name,
            flops=per_float_input, doc=_name)
for _name in ("argmax", "argmin"):
    declare(_name, f"index of the {_name[3:]} along an axis (ties: smallest index)", _argreduce, Category.REDUCTION,
            stub=_name, doc=_name)
for _name in ("cumsum", "cumprod"):
    declare(_name, "inclusive scan along an axis", _same, Category.SCAN, stub=_name, flops=per_float_input, doc=_name)

def _combine_reduce(types, attrs):
    return [TileType(t.dtype, _reduced_shape(t.shape, (attrs["axis"],), attrs["keepdims"])) for t in types]


def _combine_scan(types, attrs):
    _check(all(t.shape == types[0].shape for t in types), "scanned tiles must share one shape")
    return list(types)


# Their region is the user's combine function over scalars: arguments (a_1..a_n, b_1..b_n), yields n.
declare("reduce", "fold tiles along an axis with a combine function (the op's region)", _combine_reduce,
        Category.REDUCTION, stub="reduce", doc="reduce")
declare("scan", "inclusive prefix along an axis with a combine function (the op's region)", _combine_scan,
        Category.SCAN, stub="scan", doc="scan")


def _mma(types, attrs):
    x, y, acc = types
    _check(x.ndim == y.ndim == acc.ndim >= 2, "mma operands must be tiles of 2 or more dimensions")
    _check(x.shape[-1] == y.shape[-2], f"mma: inner dimensions differ: {x.shape} @ {y.shape}")
    _check(acc.shape == x.shape[:-1] + y.shape[-1:],
           f"mma: accumulator shape {acc.shape} must equal the result shape {x.shape[:-1] + y.shape[-1:]}")
    return [acc]


declare("mma", "x @ y + acc, accumulated in acc's dtype", _mma, Category.MMA, stub="mma", flops=_mma_flops,
        doc="mma")

# ---- the grid and arrays ----------------------------------------------------------------------

G = Category.GRID
declare("bid", "this block's coordinate along an axis of the grid", _int32_scalar, G, stub="bid", doc="bid")
declare("num_blocks", "the grid's size along an axis", _int32_scalar, G, stub="num_blocks", doc="num_blocks")
declare("array_dim", "an array argument's extent along an axis", _int32_scalar, G)
declare("num_tiles", "number of tiles of `shape` along an axis of the (order-permuted) array",
        _int32_scalar, G, stub="num_tiles", doc="num_tiles")

def _array_slice(types, attrs):
    array, start, stop = types
    _check(isinstance(array, ArrayType) and 0 <= attrs["axis"] < array.ndim, "array_slice: an axis of an array")
    _check(start == stop == scalar(int32), "array_slice: bounds must be int32 scalars")
    return [array]


declare("array_slice", "a view of an array restricted to [start, stop) along an axis (extent: stop - start "
        "when both are constants)", _array_slice, Category.GRID)


def _list_item(types, attrs):
    *items, index = types
    _check(items and all(isinstance(t, ArrayType) and t == items[0] for t in items),
           "list_item: the items of a list are arrays of one dtype and rank")
    _check(isinstance(index, TileType) and index.shape == () and index.dtype.is_integral,
           "list_item: the index is an integer scalar")
    return [items[0]]


declare("list_item", "the array at a run-time index of a list argument (operands: the list's arrays, the index)",
        _list_item, Category.GRID)


# ---- memory -----------------------------------------------------------------------------------


def _array_and_index(types, n_index):
    array, *rest = types
    _check(isinstance(array, ArrayType), "expected an array operand")
    index = rest[:n_index]
    _check(all(t.shape == () and t.dtype.is_integral for t in index), "tile indices must be integer scalars")
    return array, rest[n_index:]


def _load(types, attrs):
    array, _ = _array_and_index(types, types[0].ndim)
    return [TileType(array.dtype, tuple(attrs["shape"]))]


def _store(types, attrs):
    array, (tile,) = _array_and_index(types, types[0].ndim)
    _check(tile.dtype is array.dtype and tile.ndim == array.ndim, "store: tile must match the array's dtype and rank")
    return []


def _gather(types, attrs):
    array, *rest = types
    index, rest = rest[:array.ndim], rest[array.ndim:]
    shape = (index or rest)[0].shape  # a 0-d array has no index: the padding has the shape
    _check(all(t.shape == shape and t.dtype.is_integral for t in index), "gather indices must be integer tiles of one shape")
    _check(all(t.shape == shape for t in rest), "gather mask and padding must have the index shape")
    return [TileType(array.dtype, shape)]


def _scatter(types, attrs):
    array, *rest = types
    index, (value, *mask) = rest[:array.ndim], rest[array.ndim:]
    _check(value.dtype is array.dtype and all(t.shape == value.shape for t in index + mask),
           "scatter: value, indices and mask must share one shape; value must have the array's dtype")
    return []


def _adv_shape(array, types, attrs):
    index = types[1]
    _check(index.ndim == 1 and index.dtype.is_integral, "the sparse index must be a 1-D integer tile")
    return tuple(index.shape[0] if d == attrs["sparse_dim"] else n for d, n in enumerate(attrs["lengths"]))


def _load_adv(types, attrs):
    array = types[0]
    return [TileType(array.dtype, _adv_shape(array, types, attrs))]


def _store_adv(types, attrs):
    array, tile = types[0], types[-1]
    _check(tile.shape == _adv_shape(array, types, attrs) and tile.dtype is array.dtype,
           "store_advanced_indexing: tile must have the implied shape and the array's dtype")
    return []


M = Category.MEMORY


def _result(op):
    return op.result.type


def _last_operand(op):
    return op.operands[-1].type


def _scattered(op):
    return op.operands[op.operands[0].type.ndim + 1].type


declare("load", "read the tile at a tile-space index (padding where out of bounds)", _load, M, stub="load",
        access="read", moved=_result, view=ViewKind.TILE_SPACE, doc="load")
declare("store", "write a tile at a tile-space index (dropping out-of-bounds elements)", _store, M, stub="store",
        access="write", moved=_last_operand, view=ViewKind.TILE_SPACE, effects=True, doc="store")
declare("gather", "read elements at index tiles (masked/out of bounds -> padding)", _gather, M, stub="gather",
        access="read", moved=_result, view=ViewKind.INDEX_MAP, doc="gather")
declare("scatter", "write elements at index tiles (masked/out of bounds -> dropped)", _scatter, M, stub="scatter",
        access="write", moved=_scattered, view=ViewKind.INDEX_MAP, effects=True, doc="scatter")


def _atomic(types, attrs):
    array, *rest = types
    index, values = rest[:array.ndim], rest[array.ndim:]
    shape = (index or values)[0].shape
    _check(all(t.shape == shape and t.dtype.is_integral for t in index), "atomic indices must be integer tiles of one shape")
    _check(all(t == TileType(array.dtype, shape) for t in values),
           "atomic operands must have the array's dtype and the index shape")
    return [TileType(array.dtype, shape)]


ATOMICS = {"atomic_cas": "where the element equals expected, write desired", "atomic_xchg": "write update",
           "atomic_add": "add update", "atomic_max": "keep the larger", "atomic_min": "keep the smaller",
           "atomic_and": "and with update", "atomic_or": "or with update", "atomic_xor": "xor with update"}
for _name, _summary in ATOMICS.items():
    declare(_name, f"atomically, per element: {_summary}; the old values", _atomic, M, stub=_name, access="write",
            moved=_result, view=ViewKind.INDEX_MAP, effects=True, complex=False, doc=_name)

declare("load_adv", "one sparse 1-D index dimension plus dense slices", _load_adv, M, stub="load_advanced_indexing",
        access="read", moved=_result, view=ViewKind.INDEX_MAP, doc="load_advanced_indexing")
declare("store_adv", "store counterpart of load_adv", _store_adv, M, stub="store_advanced_indexing",
        access="write", moved=_last_operand, view=ViewKind.INDEX_MAP, effects=True, doc="store_advanced_indexing")

# ---- structured control flow ------------------------------------------------------------------


def _results_from_attrs(types, attrs):
    return list(attrs["result_types"])


def _if(types, attrs):
    _check(types[0] == scalar(bool_), "if condition must be a bool scalar")
    return _results_from_attrs(types, attrs)


def _for(types, attrs):
    _check(all(t.shape == () and t.dtype is int32 for t in types[:3]), "range bounds must be int32 scalars")
    _check(list(types[3:]) == list(attrs["result_types"]), "loop-carried values must keep their types")
    return _results_from_attrs(types, attrs)


def _while(types, attrs):
    _check(list(types) == list(attrs["result_types"]), "loop-carried values must keep their types")
    return _results_from_attrs(types, attrs)


C = Category.CONTROL
declare("if", "run the then- or else-region; both yield the results", _if, C, effects=True)
declare("for", "for iv in range(lo, hi, step) with loop-carried values", _for, C, effects=True)
declare("while", "run the body (carried values in, a go-on flag and the carried values out) until the flag is false",
        _while, C, effects=True)
declare("yield", "end of a region: its results", _nothing, C, effects=True,
        no_emitter="the enclosing if, for or while assigns the yielded values to its results")
declare("print", "print tiles and text from every block", _nothing, Category.DEBUG, stub="printf", effects=True,
        no_emitter="printing from GPU kernels is not implemented yet; run this kernel on the interpreter",
        doc="print")



def _assert(types, attrs):
    _check(types[0].dtype is bool_, "assert: the condition must be a bool tile")
    return []


declare("assert", "stop the kernel where the condition is false", _assert, Category.DEBUG, stub="assert_",
        effects=True, doc="assert_")


def is_pure(op) -> bool:
    return not OPS[op.name].effects


def result_type_of(name: str, operand_types, attrs) -> TileType:
    (t,) = infer_result_types(name, operand_types, attrs)
    return t


__all__ = ["OPS", "Accepts", "Category", "OpDecl", "Rules", "TypeRuleError", "ViewKind", "infer_result_types", "is_pure",
           "ops_in", "DType"]
