"""Every IR op, declared once: its name, what it does, and its type rule (shapes and dtypes).

The frontend parses and checks the user's call (constants, tuples, broadcasting, promotion),
then emits the op; the rule here computes the result type and checks what must hold in any
well-formed program. The interpreter (interp/rules.py) and the code generator have one row per
op name: `grep -rn '"gather"'` finds the declaration, both implementations and the tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .types import ArrayType, DType, TileType, bool_, int32, scalar

DOCS = "https://docs.nvidia.com/cuda/cutile-python/generated/cuda.tile.{}.html"


class TypeRuleError(Exception):
    """A broken shape/dtype rule; the frontend reports it at the user's line as a TileTypeError."""


@dataclass(frozen=True)
class OpDecl:
    name: str
    summary: str
    rule: Callable  # (operand types, attrs) -> list of result types
    effects: bool = False  # writes memory or yields: never removed as dead code
    doc: str = ""


OPS: dict[str, OpDecl] = {}


def declare(name, summary, rule, effects=False, doc=None):
    OPS[name] = OpDecl(name, summary, rule, effects, DOCS.format(doc) if doc else "")


def infer_result_types(name: str, operand_types, attrs) -> list:
    return OPS[name].rule(operand_types, attrs)


def _check(cond, message):
    if not cond:
        raise TypeRuleError(message)


# ---- rules shared by several ops ------------------------------------------------------------

def _same(types, attrs):
    _check(all(t == types[0] for t in types), "operands must have one type: " + ", ".join(map(str, types)))
    return [types[0]]


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

UNARY = {
    "neg": "-x", "abs": "|x|", "exp": "e^x", "exp2": "2^x", "log": "ln x", "log2": "log2 x",
    "sqrt": "square root", "rsqrt": "1/sqrt(x)", "sin": "sine", "cos": "cosine", "tan": "tangent",
    "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine", "tanh": "hyperbolic tangent",
    "floor": "round toward -inf", "ceil": "round toward +inf", "bitwise_not": "~x",
}
PREDICATES = {"isnan": "x is NaN", "isinf": "x is +inf or -inf", "isfinite": "x is neither NaN nor inf"}
BINARY = {
    "add": "x + y", "sub": "x - y", "mul": "x * y", "truediv": "x / y",
    "floordiv": "x // y (rounds toward -inf)", "mod": "x % y (sign of y)", "pow": "x ** y",
    "minimum": "min(x, y), NaN ignored", "maximum": "max(x, y), NaN ignored", "atan2": "atan2(x, y)",
    "bitwise_and": "x & y", "bitwise_or": "x | y", "bitwise_xor": "x ^ y",
    "lshift": "x << y", "rshift": "x >> y (arithmetic when signed)",
}
COMPARISONS = {"eq": "x == y", "ne": "x != y", "lt": "x < y", "le": "x <= y", "gt": "x > y", "ge": "x >= y"}

for _name, _summary in UNARY.items():
    declare(_name, _summary, _same, doc=_name)
for _name, _summary in PREDICATES.items():
    declare(_name, _summary, _predicate, doc=_name)
for _name, _summary in BINARY.items():
    declare(_name, _summary, _same, doc=_name)
for _name, _summary in COMPARISONS.items():
    declare(_name, _summary, _predicate)


def _where(types, attrs):
    cond, x, y = types
    _check(cond.dtype is bool_ and cond.shape == x.shape, "where: condition must be a bool tile of the result shape")
    return _same([x, y], attrs)


declare("where", "cond ? x : y, elementwise", _where, doc="where")

# ---- tile creation and casts ----------------------------------------------------------------

declare("constant", "a tile filled with one compile-time value", _from_attrs)
declare("iota", "0, 1, ..., n-1 along a 1-D tile", _from_attrs, doc="arange")


def _astype(types, attrs):
    return [types[0].with_dtype(attrs["dtype"])]


def _bitcast(types, attrs):
    (t,) = types
    _check(t.dtype.bitwidth == attrs["dtype"].bitwidth,
           f"Cannot bitcast {t.dtype} to {attrs['dtype']}: bit width is different")
    _check(bool_ not in (t.dtype, attrs["dtype"]), "Cannot bitcast to or from bool")
    return _astype(types, attrs)


declare("astype", "convert each element (float->int truncates toward zero)", _astype, doc="astype")
declare("bitcast", "reinterpret each element's bits", _bitcast, doc="bitcast")

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


declare("reshape", "same elements in C order, new shape", _reshape, doc="reshape")
declare("permute", "result axis k is input axis axes[k]", _permute, doc="permute")
declare("broadcast", "stretch size-1 dims to a new shape", _broadcast, doc="broadcast_to")
declare("cat", "concatenate two tiles along an axis", _cat, doc="cat")
declare("extract", "sub-tile number `index` of the grid of `shape` sub-tiles", _extract, doc="extract")
declare("insert", "replace sub-tile number `index` with value", _insert, doc="insert")

# ---- reductions, scans, matrix multiply -------------------------------------------------------

for _name in ("sum", "prod", "max", "min"):
    declare(_name, f"{_name} over axes (result keeps the input dtype)", _reduce, doc=_name)
for _name in ("argmax", "argmin"):
    declare(_name, f"index of the {_name[3:]} along an axis (ties: smallest index)", _argreduce, doc=_name)
for _name in ("cumsum", "cumprod"):
    declare(_name, "inclusive scan along an axis", _same, doc=_name)


def _mma(types, attrs):
    x, y, acc = types
    _check(x.ndim == y.ndim == acc.ndim >= 2, "mma operands must be tiles of 2 or more dimensions")
    _check(x.shape[-1] == y.shape[-2], f"mma: inner dimensions differ: {x.shape} @ {y.shape}")
    _check(acc.shape == x.shape[:-1] + y.shape[-1:],
           f"mma: accumulator shape {acc.shape} must equal the result shape {x.shape[:-1] + y.shape[-1:]}")
    return [acc]


declare("mma", "x @ y + acc, accumulated in acc's dtype", _mma, doc="mma")

# ---- the grid and arrays ----------------------------------------------------------------------

declare("bid", "this block's coordinate along an axis of the grid", _int32_scalar, doc="bid")
declare("num_blocks", "the grid's size along an axis", _int32_scalar, doc="num_blocks")
declare("array_dim", "an array argument's extent along an axis", _int32_scalar)
declare("num_tiles", "number of tiles of `shape` along an axis of the (order-permuted) array",
        _int32_scalar, doc="num_tiles")

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
    shape = index[0].shape
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


declare("load", "read the tile at a tile-space index (padding where out of bounds)", _load, doc="load")
declare("store", "write a tile at a tile-space index (dropping out-of-bounds elements)", _store, True, doc="store")
declare("gather", "read elements at index tiles (masked/out of bounds -> padding)", _gather, doc="gather")
declare("scatter", "write elements at index tiles (masked/out of bounds -> dropped)", _scatter, True, doc="scatter")
declare("load_adv", "one sparse 1-D index dimension plus dense slices", _load_adv, doc="load_advanced_indexing")
declare("store_adv", "store counterpart of load_adv", _store_adv, True, doc="store_advanced_indexing")

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


declare("if", "run the then- or else-region; both yield the results", _if, True)
declare("for", "for iv in range(lo, hi, step) with loop-carried values", _for, True)
declare("yield", "end of a region: its results", _nothing, True)
declare("print", "print tiles and text from every block", _nothing, True, doc="print")


def is_pure(op) -> bool:
    return not OPS[op.name].effects


def result_type_of(name: str, operand_types, attrs) -> TileType:
    (t,) = infer_result_types(name, operand_types, attrs)
    return t


__all__ = ["OPS", "OpDecl", "TypeRuleError", "UNARY", "PREDICATES", "BINARY", "COMPARISONS",
           "infer_result_types", "is_pure", "DType"]
