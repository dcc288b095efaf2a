"""C syntax trees -> tile-language syntax trees, with C's types and conversions made explicit.

The translator types every expression as C does (integer promotion, the usual arithmetic
conversions, the types of literals) and builds code whose operands already have the types C
gives them, so the tile language's own promotion never decides anything:

    C:     int8 a, b;  float z = a / b + 0.5;
    tile:  _z = (cops.c_div(a.astype(ct.int32), b.astype(ct.int32)).astype(ct.float64)
                 + ct.full((), 0.5, ct.float64)).astype(ct.float32)

A C value is one tile per kernel element (or a scalar where it is the same everywhere); a local
array is a tuple of them. `if` statements are if-converted: both branches run, and every
variable either assigns is merged with `ct.where` on the condition; raw-array stores inside a
branch are masked by it. Code is built as Python syntax trees (pyast), each C statement
preceded by a comment with its text. Preamble functions are inlined at each call, within
MAX_EXPANSION translated expressions per kernel.
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field

import numpy as np

from ..errors import (
    TileStaticAssertionError,
    TileSyntaxError,
    TileTypeError,
    TileUnsupportedFeatureError,
    TileValueError,
)
from ..ir.types import DType, bool_, float32, float64, int32, int64, uint32
from . import syntax as s
from .cdtypes import C_SPELLING, C_TYPES, SUPPORTED, arithmetic, convert_constant, int_literal_type, integer_promotion
from .lexer import Snippet
from .params import StructType
from .parser import MAX_LOCAL_ARRAY
from .pyast import Names, assign, comment, const, dtype_node, py, py_stmt, too_deep

MAX_EXPANSION = 5_000     # expressions translated per kernel, inlined preamble functions included
_MAX_DEPTH = 12           # deeper expression trees are bound to variables


@dataclass(frozen=True)
class CValue:
    """A translated expression: its Python syntax tree, its C type, and what is known about it."""

    code: ast.expr
    type: DType
    const: object = None      # the value, when known while translating
    varies: bool = True       # False: the same in every element (a constant, a scalar argument)


@dataclass(frozen=True)
class LocalArray:
    """A local C array (or `x.shape()`): one value per element."""

    type: DType
    items: tuple[CValue, ...]


@dataclass(frozen=True)
class StructValue:
    """A structured input: one value per field."""

    type: StructType
    fields: tuple[CValue, ...]


@dataclass(frozen=True)
class RawArray:
    """A `raw` parameter: indexed by hand with a flat (C-order) index or one index per dimension."""

    name: str                 # the kernel parameter
    type: DType
    ndim: int
    writable: bool
    strides: tuple = ()       # CValues of its strides in bytes, where the kernel receives them


@dataclass
class Output:
    """An output variable (or a field of a structured output, named `out.at<k>`): unset until
    the body assigns it (then its last value is stored)."""

    name: str
    type: DType
    value: CValue | None = None


class NeedsInitialValue(Exception):
    """The body reads an output before assigning it, or assigns it on some paths only: the
    kernel must load the output's current contents first."""

    def __init__(self, name: str):
        self.name = name


# Named constants CUDA's headers define, as (type, value).
CONSTANTS = {"true": (bool_, True), "false": (bool_, False), "CUDART_INF_F": (float32, np.inf),
             "CUDART_INF": (float64, np.inf), "INFINITY": (float32, np.inf), "CUDART_NAN_F": (float32, np.nan),
             "CUDART_NAN": (float64, np.nan), "NAN": (float32, np.nan), "CUDART_PI_F": (float32, np.pi),
             "CUDART_PI": (float64, np.pi), "M_PI": (float64, np.pi),
             "FLT_MAX": (float32, float(np.finfo(np.float32).max)), "DBL_MAX": (float64, float(np.finfo(np.float64).max)),
             "INT_MAX": (int32, 2**31 - 1), "INT_MIN": (int32, -2**31), "UINT_MAX": (uint32, 2**32 - 1),
             "LLONG_MAX": (int64, 2**63 - 1), "LLONG_MIN": (int64, -2**63)}

# Math functions: name -> (tile function, arity, the float type the function is fixed to or None).
_MATH = {}
for _base in ("sqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tan", "sinh", "cosh", "tanh", "floor", "ceil",
              "rsqrt"):
    _MATH[_base] = (f"ct.{_base}", 1, None)
    _MATH[_base + "f"] = (f"ct.{_base}", 1, float32)
for _c, _tile in (("fabs", "ct.abs"), ("trunc", "cops.c_trunc")):
    _MATH[_c] = (_tile, 1, None)
    _MATH[_c + "f"] = (_tile, 1, float32)
for _c, _tile in (("pow", "ct.pow"), ("atan2", "ct.atan2"), ("fmin", "ct.minimum"), ("fmax", "ct.maximum")):
    _MATH[_c] = (_tile, 2, None)
    _MATH[_c + "f"] = (_tile, 2, float32)
_GENERIC = {"min": ("ct.minimum", 2, None), "max": ("ct.maximum", 2, None), "abs": ("ct.abs", 1, None)}  # any type
_PREDICATES = {name: (f"ct.{name}", 1, None) for name in ("isnan", "isinf", "isfinite")}


def math_function(name: str):
    """(tile function, arity, fixed float type or None) of a C math function, or None."""
    return _MATH.get(name) or _GENERIC.get(name) or _PREDICATES.get(name)


_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}
_PY_OPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "&": ast.BitAnd, "|": ast.BitOr, "^": ast.BitXor,
           "<<": ast.LShift, ">>": ast.RShift}
_PY_COMPARE = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}


def literal(value, dtype: DType) -> CValue:
    """A C constant, converted to `dtype` as C converts it."""
    value = convert_constant(value, dtype)
    return CValue(py("ct.full((), v, t)", v=const(value), t=dtype_node(dtype)), dtype, value, varies=False)


def binop(op: str, a: ast.expr, b: ast.expr) -> ast.expr:
    if op in _PY_COMPARE:
        return ast.Compare(a, [_PY_COMPARE[op]()], [b])
    return ast.BinOp(a, _PY_OPS[op](), b)


@dataclass(eq=False)
class Scope:
    names: dict = field(default_factory=dict)   # C name -> CValue or LocalArray
    parent: Scope | None = None

    def lookup(self, name):
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope
            scope = scope.parent
        return None


class Translator:
    """Translates the statements and expressions of one kernel, appending to `body` (comments
    and Python statements).

    `inputs` maps C names to their values (loaded tiles or scalar arguments), `outputs` to
    `Output`s, `raws` to `RawArray`s; `specials` gives `i`, `_ind.size()`, the in-range mask and
    the tile shape. `names` hands out the kernel's generated names.
    """

    def __init__(self, snippet: Snippet, placeholders: dict, inputs: dict, outputs: dict, raws: dict,
                 specials: dict, functions: dict, names: Names):
        self.snippet = snippet
        self.placeholders = placeholders
        self.inputs, self.outputs, self.raws = inputs, outputs, raws
        self.specials = specials
        self.functions = functions           # preamble: name -> (Function, Snippet)
        self.names = names
        self.body: list = []
        self.globals = Scope()               # the preamble's constants: seen by its functions too
        self.scope = Scope(parent=self.globals)
        self.predicate: CValue | None = None  # the conditions of the enclosing ifs
        self.inlining: list = []             # (function name, call node, the caller's snippet), outermost first
        self.used_specials: set = set()
        self.expanded = 0

    # ---- helpers ---------------------------------------------------------------------------------

    def error(self, cls, message: str, node: s.Node):
        return self.snippet.error(cls, message, node.start, node.end)

    def emit(self, stmt: ast.stmt | str):
        self.body.append(stmt)

    def bind(self, base: str, value: CValue) -> CValue:
        """Give a value a Python variable (constants and names stay inline)."""
        if value.const is not None or isinstance(value.code, ast.Name):
            return value
        name = self.names.fresh(base)
        self.emit(assign(name, value.code))
        return CValue(ast.Name(name, ast.Load()), value.type, None, value.varies)

    def resolve_type(self, type_: s.TypeName) -> DType | None:
        """The dtype a written type names; None for `auto`."""
        if type_.words == ("auto",):
            return None
        if len(type_.words) == 1 and type_.words[0] in self.placeholders:
            dtype = self.placeholders[type_.words[0]]
            if isinstance(dtype, StructType):
                raise self.error(TileUnsupportedFeatureError, f"'{type_.words[0]}' is the structured dtype "
                                 f"{dtype.name}: only its fields are values (x.at<k>())", type_)
            return dtype
        dtype = C_TYPES.get(type_.words)
        if dtype is None:
            raise self.error(TileTypeError, f"Unknown type '{' '.join(type_.words)}'", type_)
        return dtype

    # ---- conversions -----------------------------------------------------------------------------

    def convert(self, value: CValue, to: DType, node: s.Node | None = None) -> CValue:
        if value.type is to:
            return value
        if value.const is not None:
            if isinstance(value.const, float) and to.is_integral and not _fits(value.const, to):
                raise self.error(TileValueError, f"Converting {value.const} to {C_SPELLING[to]} is undefined in C "
                                 f"(out of its range)", node or s.Node(0, 0))
            return literal(value.const, to)
        if to is bool_:
            return CValue(binop("!=", value.code, literal(0, value.type).code), bool_, None, value.varies)
        return CValue(py("v.astype(t)", v=value.code, t=dtype_node(to)), to, None, value.varies)

    def truth(self, value: CValue) -> CValue:
        return self.convert(value, bool_)

    # ---- expressions ---------------------------------------------------------------------------

    def expr(self, node: s.Node) -> CValue:
        value = self.value(node)
        if isinstance(value, LocalArray):
            raise self.error(TileTypeError, "An array is not a value here: index it", node)
        if isinstance(value, StructValue):
            raise self.error(TileTypeError, f"A value of structured dtype {value.type.name} is read by field: "
                             f"x.at<k>()", node)
        return value

    def value(self, node: s.Node) -> CValue | LocalArray:
        """A value or a local array."""
        self.expanded += 1
        if self.expanded > MAX_EXPANSION:
            where = self.inlining[0][1] if self.inlining else node
            snippet = self.inlining[0][2] if self.inlining else self.snippet
            raise snippet.error(TileUnsupportedFeatureError, f"This kernel grows past {MAX_EXPANSION} operations "
                                f"(each call of a preamble function is inlined, with its body): call fewer "
                                f"functions from functions", where.start, where.end)
        return self.shallow(getattr(self, f"expr_{type(node).__name__}")(node))

    def shallow(self, value):
        if isinstance(value, CValue) and value.const is None and too_deep(value.code, _MAX_DEPTH):
            return self.bind("t", value)
        return value

    def expr_Number(self, node: s.Number) -> CValue:
        text = node.text
        is_hex = text.lower().startswith("0x")
        if not is_hex and (any(c in text for c in ".eE") or text[-1] in "fF"):
            body = text.rstrip("fFlL")
            return literal(float(body), float32 if text[-1] in "fF" else float64)
        digits = text.rstrip("uUlL")
        suffix = text[len(digits):]
        if len(digits) > 24:   # no C integer type holds it (and Python limits int() of long strings)
            raise self.error(TileValueError, f"Integer literal {digits[:12]}... is too large for any C integer type",
                             node)
        if is_hex:
            value, decimal = int(digits, 16), False
        elif len(digits) > 1 and digits.startswith("0"):
            if set(digits) - set("01234567"):
                raise self.error(TileSyntaxError, f"Invalid octal literal '{text}'", node)
            value, decimal = int(digits, 8), False
        else:
            value, decimal = int(digits), True
        try:
            return literal(value, int_literal_type(value, suffix, decimal))
        except OverflowError as e:
            raise self.error(TileValueError, str(e), node) from None

    def expr_Name(self, node: s.Name) -> CValue | LocalArray:
        scope = self.scope.lookup(node.id)
        if scope is not None:
            return scope.names[node.id]
        if node.id in self.inputs:
            return self.inputs[node.id]
        if node.id in self.outputs:
            out = self.outputs[node.id]
            if out.value is None:
                raise NeedsInitialValue(node.id)
            return out.value
        if node.id in self.specials:
            self.used_specials.add(node.id)
            return self.specials[node.id]
        if node.id in self.raws:
            raise self.error(TileTypeError, f"'{node.id}' is a raw array: index it (`{node.id}[i]`)", node)
        if node.id in CONSTANTS:
            dtype, value = CONSTANTS[node.id]
            return literal(value, dtype)
        raise self.error(TileSyntaxError, f"Undefined name '{node.id}'", node)

    def expr_Member(self, node: s.Member) -> CValue | LocalArray:
        if node.obj.id == "_ind":
            self.used_specials.add("_ind.size()")
            if "_ind.size()" not in self.specials:
                raise self.error(TileUnsupportedFeatureError, "_ind.size() is not available here", node)
            return self.specials["_ind.size()"]
        raw = self.raws.get(node.obj.id)
        if raw is None:
            raise self.error(TileTypeError, f"{node.member}() is a member of raw arrays; '{node.obj.id}' is not "
                             f"declared `raw`", node.obj)
        extents = tuple(CValue(py("a.shape[d]", a=raw.name, d=ast.Constant(d)), int64, None, False)
                        for d in range(raw.ndim))
        if node.member == "shape":
            return LocalArray(int64, extents)
        if node.member == "strides":
            return LocalArray(int64, raw.strides)
        size = literal(1, int64)
        for extent in extents:
            size = CValue(binop("*", size.code, extent.code), int64, None, False)
        return size

    def expr_Field(self, node: s.Field) -> CValue:
        key = field_key(node)
        if key in self.outputs:
            out = self.outputs[key]
            if out.value is None:
                raise NeedsInitialValue(key)
            return out.value
        value = self.value(node.obj)
        if not isinstance(value, StructValue):
            raise self.error(TileTypeError, f"'{node.obj.id}' has no fields: .at<k>() reads a field of a structured "
                             f"dtype", node)
        if node.index >= len(value.fields):
            raise self.error(TileTypeError, f"'{node.obj.id}' has {len(value.fields)} fields: there is no field "
                             f"{node.index}", node)
        return value.fields[node.index]

    def expr_FieldCount(self, node: s.FieldCount) -> CValue:
        dtype = self.placeholders.get(node.type.words[0]) if len(node.type.words) == 1 else None
        if not isinstance(dtype, StructType):
            what = dtype if dtype is not None else " ".join(node.type.words)
            raise self.error(TileTypeError, f"{what} is not a structured dtype: it has no field_count", node)
        return literal(len(dtype.fields), int32)

    def expr_Unary(self, node: s.Unary) -> CValue:
        operand = self.expr(node.operand)
        if node.op == "!":
            b = self.truth(operand)
            if b.const is not None:
                return literal(not b.const, bool_)
            return CValue(binop("==", b.code, literal(False, bool_).code), bool_, None, b.varies)
        self.check_arithmetic(operand, node.operand, node.op)
        t = integer_promotion(operand.type)
        if node.op == "~":
            if not t.is_integral:
                raise self.error(TileTypeError, f"'~' needs an integer operand, not {C_SPELLING[t]}", node)
            v = self.convert(operand, t)
            return CValue(ast.UnaryOp(ast.Invert(), v.code), t, None, v.varies)
        v = self.convert(operand, t)
        if node.op == "+":
            return v
        if v.const is not None:
            return literal(np.negative(np.array(v.const, t.numpy)).item(), t)
        return CValue(ast.UnaryOp(ast.USub(), v.code), t, None, v.varies)

    def check_arithmetic(self, value: CValue, node: s.Node, op: str):
        if value.type not in SUPPORTED:
            raise self.error(TileTypeError, f"'{op}' does not apply to {value.type}", node)

    def expr_Binary(self, node: s.Binary) -> CValue:
        spine = []
        while isinstance(node, s.Binary):  # a long chain (a + b + c + ...) is a loop, not a recursion
            spine.append(node)
            node = node.left
        value = self.expr(node)
        for b in reversed(spine):
            value = self.shallow(self.binary(b, value, self.expr(b.right)))
        return value

    def binary(self, node: s.Binary, left: CValue, right: CValue) -> CValue:
        op = node.op
        if op in ("&&", "||"):
            a, b = self.truth(left), self.truth(right)
            if a.const is not None and b.const is not None:
                return literal(a.const and b.const if op == "&&" else a.const or b.const, bool_)
            return CValue(binop("&" if op == "&&" else "|", a.code, b.code), bool_, None, a.varies or b.varies)
        if op in ("<<", ">>"):
            t = integer_promotion(left.type)
            if not (t.is_integral and integer_promotion(right.type).is_integral):
                raise self.error(TileTypeError, f"'{op}' needs integer operands", node)
            a, b = self.convert(left, t), self.convert(right, t)
            return CValue(binop(op, a.code, b.code), t, None, a.varies or b.varies)
        t = arithmetic(left.type, right.type)
        a, b = self.convert(left, t), self.convert(right, t)
        varies = a.varies or b.varies
        if op in _COMPARISONS:
            if a.const is not None and b.const is not None:   # folded: static_assert needs it
                return literal(_COMPARE[op](a.const, b.const), bool_)
            return CValue(binop(op, a.code, b.code), bool_, None, varies)
        if op in ("%", "&", "|", "^") and not t.is_integral:
            hint = " (fmod is not supported)" if op == "%" else ""
            raise self.error(TileTypeError, f"'{op}' needs integer operands, not {C_SPELLING[t]}{hint}", node)
        if op == "/" and t.is_integral:
            return CValue(py("cops.c_div(a, b)", a=a.code, b=b.code), t, None, varies)
        if op == "%":
            return CValue(py("cops.c_rem(a, b)", a=a.code, b=b.code), t, None, varies)
        if op == "/":
            return CValue(ast.BinOp(a.code, ast.Div(), b.code), t, None, varies)
        return CValue(binop(op, a.code, b.code), t, None, varies)

    def expr_Conditional(self, node: s.Conditional) -> CValue:
        cond = self.truth(self.expr(node.cond))
        a, b = self.expr(node.then), self.expr(node.orelse)
        t = a.type if a.type is b.type else arithmetic(a.type, b.type)
        a, b = self.convert(a, t), self.convert(b, t)
        if cond.const is not None:
            return a if cond.const else b
        return CValue(py("ct.where(c, a, b)", c=cond.code, a=a.code, b=b.code), t, None, True)

    def expr_Cast(self, node: s.Cast) -> CValue:
        to = self.resolve_type(node.type)
        value = self.expr(node.operand)
        return value if to is None else self.convert(value, to, node)

    def expr_InitList(self, node: s.InitList):
        raise self.error(TileSyntaxError, "An initializer list only initializes a local array", node)

    def expr_Subscript(self, node: s.Subscript) -> CValue:
        if isinstance(node.array, s.Name) and node.array.id in self.raws:
            raw = self.raws[node.array.id]
            coords = self.coordinates(raw, node.index)
            return CValue(py("ct.gather(a, c)", a=raw.name, c=coords), raw.type, None, True)
        array = self.local_array(node.array)
        index = self.index(node.index)
        return self.select(array.items, index)

    def local_array(self, node: s.Node) -> LocalArray:
        if isinstance(node, s.Name) and self.scope.lookup(node.id) is None and node.id not in self.raws:
            if node.id in self.inputs or node.id in self.outputs:
                raise self.error(TileTypeError, f"Only raw arrays can be indexed; '{node.id}' is not declared "
                                 f"`raw`", node)
        array = self.value(node)
        if not isinstance(array, LocalArray):
            raise self.error(TileTypeError, f"'{self.snippet.text[node.start:node.end]}' is not an array", node)
        return array

    def index(self, node: s.Node) -> CValue:
        index = self.expr(node)
        if not integer_promotion(index.type).is_integral:
            raise self.error(TileTypeError, f"An array index must be an integer, not {C_SPELLING[index.type]}", node)
        return self.convert(index, int64)

    def select(self, items: tuple, index: CValue) -> CValue:
        """items[index]: a constant index picks the item, a varying one selects among them."""
        if index.const is not None:
            return items[index.const] if 0 <= index.const < len(items) else literal(0, items[0].type)
        index = self.bind("k", index)
        value = items[0]
        for k, item in enumerate(items[1:], 1):
            value = CValue(py("ct.where(k == j, a, b)", k=index.code, j=ast.Constant(k), a=item.code, b=value.code),
                           item.type, None, True)
        return self.bind("item", value)

    def coordinates(self, raw: RawArray, index_node: s.Node) -> ast.expr:
        """The coordinates of an index into a raw array: one index per dimension (a local array),
        or a flat C-order index split by the extents."""
        value = self.value(index_node)
        if isinstance(value, LocalArray):
            if len(value.items) != raw.ndim:
                raise self.error(TileTypeError, f"'{raw.name}' has {raw.ndim} dimensions: its index array needs "
                                 f"{raw.ndim} elements, not {len(value.items)}", index_node)
            if not integer_promotion(value.type).is_integral:
                raise self.error(TileTypeError, "An array index must be an integer", index_node)
            return ast.Tuple([self.convert(v, int64).code for v in value.items], ast.Load())
        if not integer_promotion(value.type).is_integral:
            raise self.error(TileTypeError, f"An array index must be an integer, not {C_SPELLING[value.type]}",
                             index_node)
        flat = self.bind("index", self.convert(value, int64))
        coords = []
        for dim in reversed(range(raw.ndim)):
            if dim == 0:
                coords.insert(0, flat.code)
                break
            extent = py("a.shape[d]", a=raw.name, d=ast.Constant(dim))
            coords.insert(0, ast.BinOp(flat.code, ast.Mod(), extent))
            flat = self.bind("index", CValue(ast.BinOp(flat.code, ast.FloorDiv(), extent), int64))
        return ast.Tuple(coords, ast.Load())

    def expr_Call(self, node: s.Call) -> CValue:
        if node.func in self.functions:
            return self.inline(node)
        name = node.func
        known = math_function(name)
        if known is None:
            raise self.error(TileUnsupportedFeatureError, f"Unknown function '{name}' (see docs/cupy_kernels.md for "
                             f"the supported math functions)", s.Name(node.start, node.func_end, name))
        tile_fn, arity, fixed = known
        args = [self.expr(a) for a in node.args]
        if len(args) != arity:
            raise self.error(TileTypeError, f"{name}() takes {arity} argument{'s' * (arity > 1)}, got {len(args)}",
                             node)
        t = integer_promotion(args[0].type) if arity == 1 else arithmetic(args[0].type, args[1].type)
        if fixed is not None:
            t = fixed                    # sqrtf, fminf, ...: float
        elif name not in _GENERIC and not t.is_float:
            t = float64                  # a math function of an integer: double
        converted = [self.convert(a, t) for a in args]
        varies = any(a.varies for a in converted)
        code = ast.Call(py(tile_fn), [a.code for a in converted], [])
        return CValue(code, bool_ if name in _PREDICATES else t, None, varies)

    def inline(self, node: s.Call) -> CValue:
        """A preamble function call: its body translated in a scope of its own."""
        function, snippet = self.functions[node.func]
        if any(name == node.func for name, _, _ in self.inlining):
            raise self.error(TileUnsupportedFeatureError, f"'{node.func}' calls itself: recursion is not supported",
                             node)
        if len(node.args) != len(function.params):
            raise self.error(TileTypeError, f"{node.func}() takes {len(function.params)} arguments, got "
                             f"{len(node.args)}", node)
        args = [self.expr(a) for a in node.args]
        outer_snippet, outer_scope = self.snippet, self.scope
        self.inlining.append((node.func, node, self.snippet))
        self.snippet, self.scope = snippet, Scope(parent=self.globals)
        try:
            for (type_, pname), arg in zip(function.params, args):
                to = self.resolve_type(type_)
                self.scope.names[pname.id] = self.bind(pname.id, arg if to is None else self.convert(arg, to))
            *body, last = function.body or (None,)
            if not isinstance(last, s.Return):
                raise self.error(TileUnsupportedFeatureError, "A preamble function must end with `return "
                                 "<expression>;` (and return nowhere else)", function.name)
            self.statements(body)
            value = self.expr(last.value)
            to = self.resolve_type(function.return_type)
            return value if to is None else self.convert(value, to)
        finally:
            self.inlining.pop()
            self.snippet, self.scope = outer_snippet, outer_scope

    # ---- statements ------------------------------------------------------------------------------

    def declare_globals(self, declarations, snippet: Snippet):
        """The preamble's `const` variables, visible to the body and the preamble's functions."""
        outer_snippet, outer_scope = self.snippet, self.scope
        self.snippet, self.scope = snippet, self.globals
        try:
            self.statements(declarations)
        finally:
            self.snippet, self.scope = outer_snippet, outer_scope

    def statements(self, body):
        for node in body:
            self.statement(node)

    def statement(self, node: s.Node):
        if isinstance(node, s.Block):
            outer = self.scope
            self.scope = Scope(parent=outer)
            try:
                self.statements(node.body)
            finally:
                self.scope = outer
            return
        if isinstance(node, s.Return):
            raise self.error(TileUnsupportedFeatureError, "`return` is only allowed at the end of a preamble "
                             "function", node)
        if not isinstance(node, s.If):
            self.emit(self.source_comment(node.start, node.end))
        getattr(self, f"stmt_{type(node).__name__}")(node)

    def source_comment(self, start: int, end: int) -> str:
        return comment(f"{self.snippet.part} line {self.snippet.line_of(start)}: {self.snippet.text[start:end]}")

    def stmt_StaticAssert(self, node: s.StaticAssert):
        cond = self.truth(self.expr(node.cond))
        if cond.const is None:
            raise self.error(TileTypeError, "static_assert needs a condition known when the kernel is compiled",
                             node.cond)
        if not cond.const:
            raise self.error(TileStaticAssertionError, node.message or "static assertion failed", node)

    def stmt_Declaration(self, node: s.Declaration):
        to = self.resolve_type(node.type)
        for d in node.names:
            if d.name.id in self.scope.names:
                raise self.error(TileSyntaxError, f"'{d.name.id}' is already declared in this scope", d.name)
            if d.array:
                self.scope.names[d.name.id] = self.local_array_declaration(d, to)
            elif d.init is None:
                if to is None:
                    raise self.error(TileTypeError, "`auto` needs an initializer", d.name)
                self.scope.names[d.name.id] = literal(0, to)   # reading it before assigning it is undefined in C
            else:
                value = self.expr(d.init)
                value = value if to is None else self.convert(value, to, d.init)
                self.scope.names[d.name.id] = self.bind(d.name.id, value)

    def local_array_declaration(self, d: s.Declarator, to: DType | None) -> LocalArray:
        if to is None:
            raise self.error(TileTypeError, "A local array needs its element type (not `auto`)", d.name)
        length = None
        if d.length is not None:
            n = self.expr(d.length)
            if n.const is None or not n.type.is_integral or not 0 < n.const <= MAX_LOCAL_ARRAY:
                raise self.error(TileTypeError, f"A local array's length must be a constant from 1 to "
                                 f"{MAX_LOCAL_ARRAY}", d.length)
            length = n.const
        items = ()
        if d.init is not None:
            if not isinstance(d.init, s.InitList):
                raise self.error(TileSyntaxError, "A local array is initialized with a list: `{a, b, c}`", d.init)
            items = tuple(self.bind(d.name.id, self.convert(self.expr(v), to, v)) for v in d.init.items)
        length = len(items) if length is None else length
        if len(items) > length:
            raise self.error(TileTypeError, f"Too many initializers for an array of {length}", d.init)
        if length == 0:
            raise self.error(TileTypeError, "A local array needs at least one element", d)
        return LocalArray(to, items + (literal(0, to),) * (length - len(items)))

    def stmt_Assign(self, node: s.Assign):
        target = node.target
        if isinstance(target, s.Subscript) and target.array.id in self.raws:
            self.store_raw(node)
            return
        if isinstance(target, s.Subscript):
            self.store_local(node)
            return
        if isinstance(target, s.Field):
            key = field_key(target)
            if key not in self.outputs:
                count = sum(k.startswith(f"{target.obj.id}.at<") for k in self.outputs)
                raise self.error(TileTypeError, f"'{target.obj.id}' has {count} fields: there is no field "
                                 f"{target.index}" if count else f"'{target.obj.id}' is not a structured output: "
                                 f"only those fields can be assigned", target)
            self.outputs[key].value = self.bind(target.obj.id, self.convert(self.assigned_value(node),
                                                                            self.outputs[key].type, node))
            return
        if f"{target.id}.at<0>" in self.outputs and node.op == "=":
            self.assign_struct(target, self.value(node.value), node)
            return
        name = target.id
        current_type = self.assigned_type(target)
        self.assign(name, self.bind(name, self.convert(self.assigned_value(node), current_type, node)))

    def assign_struct(self, target: s.Name, value, node: s.Assign):
        """`out = in;` for structured values: field by field."""
        keys = [k for k in self.outputs if k.startswith(f"{target.id}.at<")]
        if not isinstance(value, StructValue) or len(value.fields) != len(keys):
            raise self.error(TileTypeError, f"'{target.id}' is structured: assign a structured value with "
                             f"{len(keys)} fields, or its fields (x.at<k>() = ...)", node)
        for k, field in enumerate(value.fields):
            key = f"{target.id}.at<{k}>"
            self.outputs[key].value = self.convert(field, self.outputs[key].type, node)

    def assigned_value(self, node: s.Assign) -> CValue:
        if node.op == "=":
            return self.expr(node.value)
        op = {"++": "+", "--": "-"}.get(node.op, node.op[:-1])
        right = node.value or s.Number(node.end, node.end, "1")
        return self.expr(s.Binary(node.start, node.end, op, node.target, right))

    def store_local(self, node: s.Assign):
        name = node.target.array.id
        scope = self.scope.lookup(name)
        array = scope.names[name] if scope is not None else None
        if not isinstance(array, LocalArray):
            self.local_array(node.target.array)   # the error for what it is instead
        index = self.index(node.target.index)
        value = self.bind(name, self.convert(self.assigned_value(node), array.type, node))
        if index.const is not None:
            if not 0 <= index.const < len(array.items):
                raise self.error(TileValueError, f"Index {index.const} is out of bounds for '{name}' of "
                                 f"{len(array.items)} elements", node.target.index)
            items = tuple(value if k == index.const else v for k, v in enumerate(array.items))
        else:
            index = self.bind("k", index)
            items = tuple(self.bind(name, CValue(py("ct.where(k == j, a, b)", k=index.code, j=ast.Constant(k),
                                                    a=value.code, b=v.code), array.type))
                          for k, v in enumerate(array.items))
        scope.names[name] = LocalArray(array.type, items)

    def assigned_type(self, target: s.Name) -> DType:
        scope = self.scope.lookup(target.id)
        if scope is not None:
            value = scope.names[target.id]
            if isinstance(value, LocalArray):
                raise self.error(TileTypeError, f"'{target.id}' is an array: assign its elements", target)
            return value.type
        if target.id in self.outputs:
            return self.outputs[target.id].type
        if target.id in self.inputs:
            raise self.error(TileTypeError, f"'{target.id}' is an input: inputs are read-only", target)
        if target.id in self.raws:
            raise self.error(TileTypeError, f"'{target.id}' is a raw array: assign its elements "
                             f"(`{target.id}[i] = ...`)", target)
        raise self.error(TileSyntaxError, f"Undefined name '{target.id}' (declare it with a type)", target)

    def assign(self, name: str, value: CValue):
        scope = self.scope.lookup(name)
        if scope is not None:
            scope.names[name] = value
        else:
            self.outputs[name].value = value

    def store_raw(self, node: s.Assign):
        raw = self.raws[node.target.array.id]
        if not raw.writable:
            raise self.error(TileTypeError, f"'{node.target.array.id}' is a raw input: inputs are read-only",
                             node.target.array)
        if node.op != "=":
            raise self.error(TileUnsupportedFeatureError, f"'{node.op}' on a raw array element is not supported: "
                             f"write `{node.target.array.id}[k] = {node.target.array.id}[k] ...`", node)
        coords = self.coordinates(raw, node.target.index)
        value = self.convert(self.expr(node.value), raw.type, node)
        if not value.varies:
            value = CValue(py("ct.broadcast_to(v, s)", v=value.code, s=py(self.specials["shape"])), value.type)
        mask = self.specials["in_range"] if self.predicate is None else \
            CValue(binop("&", self.specials["in_range"].code, self.predicate.code), bool_)
        self.used_specials.add("in_range")
        self.emit(py_stmt("ct.scatter(a, c, v, mask=m)", a=raw.name, c=coords, v=value.code, m=mask.code))

    def stmt_If(self, node: s.If):
        cond = self.bind("cond", self.truth(self.expr(node.cond)))
        self.emit(comment(f"{self.snippet.part} line {self.snippet.line_of(node.start)}: if "
                          f"({self.snippet.text[node.cond.start:node.cond.end]})"))
        outer_predicate = self.predicate
        branches = []
        for body, taken in ((node.then, cond), (node.orelse, None)):
            if taken is None:
                taken = self.bind("not_cond", CValue(binop("==", cond.code, literal(False, bool_).code), bool_))
            self.predicate = taken if outer_predicate is None else \
                self.bind("taken", CValue(binop("&", outer_predicate.code, taken.code), bool_))
            before = self.snapshot()
            self.statement(s.Block(node.start, node.end, body))
            branches.append(self.snapshot())
            self.restore(before)
        self.predicate = outer_predicate
        then, orelse = branches
        for key in then:
            a, b = then[key], orelse[key]
            if a is b:
                continue
            name = key[1]
            if a is None or b is None:
                raise NeedsInitialValue(name)
            self.assign_key(key, self.merge(name, cond, a, b))

    def merge(self, name: str, cond: CValue, a, b):
        if isinstance(a, LocalArray):
            return LocalArray(a.type, tuple(self.merge(name, cond, x, y) for x, y in zip(a.items, b.items)))
        if a is b:
            return a
        if cond.const is not None:
            return a if cond.const else b
        return self.bind(name, CValue(py("ct.where(c, a, b)", c=cond.code, a=a.code, b=b.code), a.type))

    def snapshot(self) -> dict:
        """Every variable visible now (outputs included), keyed by where it lives."""
        state = {}
        scope = self.scope
        while scope is not None:
            for name, value in scope.names.items():
                state.setdefault((scope, name), value)
            scope = scope.parent
        for name, out in self.outputs.items():
            state[("out", name)] = out.value
        return state

    def restore(self, state: dict):
        for key, value in state.items():
            self.assign_key(key, value)

    def assign_key(self, key, value):
        where, name = key
        if where == "out":
            self.outputs[name].value = value
            return
        where.names[name] = value


def field_key(node: s.Field) -> str:
    return f"{node.obj.id}.at<{node.index}>"


def _fits(value: float, to: DType) -> bool:
    info = np.iinfo(to.numpy)
    return bool(np.isfinite(value)) and info.min - 1 < value < info.max + 1
