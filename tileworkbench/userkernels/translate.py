"""C syntax trees -> tile-language syntax trees, with C's types and conversions made explicit.

The translator types every expression as C does (integer promotion, the usual arithmetic
conversions, the types of literals) and builds code whose operands already have the types C
gives them, so the tile language's own promotion never decides anything:

    C:     int8 a, b;  float z = a / b + 0.5;
    tile:  _z = (cops.c_div(a.astype(ct.int32), b.astype(ct.int32)).astype(ct.float64)
                 + ct.full((), 0.5, ct.float64)).astype(ct.float32)

A C value is one tile per kernel element (or a scalar where it is the same everywhere); a local
array is a tuple of them (arrays.py has the rules for arrays and structured values, values.py
what they are). `if` statements are if-converted: both branches run, and every
variable either assigns is merged with `ct.where` on the condition; raw-array stores inside a
branch are masked by it. Code is built as Python syntax trees (pyast), each C statement
preceded by a comment with its text. Preamble functions are inlined at each call, at most
MAX_INLINE_DEPTH calls deep and within MAX_EXPANSION translated expressions per kernel.
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
from ..ir.ops import COMPLEX, OPS, PARTS, PREDICATES
from ..ir.types import DType, bool_, float32, float64, int32, int64, part_dtype, uint32
from . import syntax as s
from .cdtypes import C_SPELLING, C_TYPES, SUPPORTED, arithmetic, convert_constant, int_literal_type, integer_promotion
from .arrays import ArrayRules
from .lexer import Snippet
from .params import StructType
from .pyast import Names, assign, comment, dtype_node, py, too_deep
from .values import CValue, LocalArray, NeedsInitialValue, Output, RawArray, StructValue, binop, field_key, literal

__all__ = ["CValue", "NeedsInitialValue", "Output", "RawArray", "StructValue", "Translator", "literal"]

MAX_EXPANSION = 5_000     # expressions translated per kernel, inlined preamble functions included
MAX_INLINE_DEPTH = 32     # preamble functions calling preamble functions
_MAX_DEPTH = 12           # deeper expression trees are bound to variables


# Named constants CUDA's headers define, as (type, value).
CONSTANTS = {"true": (bool_, True), "false": (bool_, False), "CUDART_INF_F": (float32, np.inf),
             "CUDART_INF": (float64, np.inf), "INFINITY": (float32, np.inf), "CUDART_NAN_F": (float32, np.nan),
             "CUDART_NAN": (float64, np.nan), "NAN": (float32, np.nan), "CUDART_PI_F": (float32, np.pi),
             "CUDART_PI": (float64, np.pi), "M_PI": (float64, np.pi),
             "FLT_MAX": (float32, float(np.finfo(np.float32).max)), "DBL_MAX": (float64, float(np.finfo(np.float64).max)),
             "INT_MAX": (int32, 2**31 - 1), "INT_MIN": (int32, -2**31), "UINT_MAX": (uint32, 2**32 - 1),
             "LLONG_MAX": (int64, 2**63 - 1), "LLONG_MIN": (int64, -2**63)}

def math_functions() -> dict:
    """CUDA's math functions a snippet may call, as the op table spells them (ir/ops.py): C name ->
    (tile function, arity, the dtype it computes in: None for the argument's, double for an integer).
    expf is ct.exp in float32; trunc, which has no tile op, is the C helper."""
    table = {"trunc": ("cops.c_trunc", 1, None), "truncf": ("cops.c_trunc", 1, float32)}
    for decl in OPS.values():
        for k, name in enumerate(decl.c):
            table[name] = (f"ct.{decl.stub}", decl.arity, float32 if k else None)
    return table


_MATH = math_functions()
_PREDICATES = frozenset(name for op in PREDICATES for name in OPS[op].c)  # bool results
_GENERIC = {"min": ("ct.minimum", 2, None), "max": ("ct.maximum", 2, None), "abs": ("ct.abs", 1, None)}  # any type
_OP_OF = {f"ct.{decl.stub}": name for name, decl in OPS.items() if decl.stub} | {"cops.c_trunc": "trunc"}


def math_function(name: str):
    """(tile function, arity, fixed float type or None) of a C math function, or None."""
    return _MATH.get(name) or _GENERIC.get(name)


_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}


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


class Translator(ArrayRules):
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
        if "p" in text.lower() or not is_hex and (any(c in text for c in ".eE") or text[-1] in "fF"):
            body = text.rstrip("fFlL")
            value = float.fromhex(body) if is_hex else float(body)
            return literal(value, float32 if text[-1] in "fF" else float64)
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
            if t.is_complex and op not in ("==", "!="):
                raise self.error(TileTypeError, f"'{op}' does not apply to {C_SPELLING[t]}: complex numbers have no "
                                 f"order (compare real(), imag() or abs())", node)
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
        if node.imag is not None:  # complex<float>(re, im): the parser allows two values for complex types only
            re, im = (self.convert(v, part_dtype(to), node) for v in (value, self.expr(node.imag)))
            if re.const is not None and im.const is not None:
                return literal(complex(re.const, im.const), to)
            return CValue(py("ct.make_complex(a, b)", a=re.code, b=im.code), to, None, re.varies or im.varies)
        return value if to is None else self.convert(value, to, node)

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
        elif name not in _GENERIC and not t.is_float and not t.is_complex:
            t = float64                  # a math function of an integer: double
        op = _OP_OF[tile_fn]
        if t.is_complex and op not in COMPLEX:
            raise self.error(TileUnsupportedFeatureError, f"{name}() of {C_SPELLING[t]} is not supported; on complex "
                             f"values: exp, log, abs, conj, real and imag", node)
        converted = [self.convert(a, t) for a in args]
        varies = any(a.varies for a in converted)
        code = ast.Call(py(tile_fn), [a.code for a in converted], [])
        result = bool_ if name in _PREDICATES else part_dtype(t) if op in PARTS else t
        return CValue(code, result, None, varies)

    def inline(self, node: s.Call) -> CValue:
        """A preamble function call: its body translated in a scope of its own."""
        function, snippet = self.functions[node.func]
        if any(name == node.func for name, _, _ in self.inlining):
            raise self.error(TileUnsupportedFeatureError, f"'{node.func}' calls itself: recursion is not supported",
                             node)
        if len(node.args) != len(function.params):
            raise self.error(TileTypeError, f"{node.func}() takes {len(function.params)} arguments, got "
                             f"{len(node.args)}", node)
        if len(self.inlining) >= MAX_INLINE_DEPTH:
            _, outermost, snippet = self.inlining[0]
            raise snippet.error(TileUnsupportedFeatureError, f"Preamble functions call each other more than "
                                f"{MAX_INLINE_DEPTH} levels deep from here (each call is inlined)", outermost.start,
                                outermost.end)
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
            if self.inlining:
                self.statement(node)
                continue
            try:
                self.statement(node)
            except RecursionError:   # the limits above make this rare: deep nesting in every helper
                raise self.error(TileUnsupportedFeatureError, "This statement nests too deeply to translate "
                                 "(its expressions and the preamble functions it calls): split it with "
                                 "variables", node) from None

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

    def assigned_value(self, node: s.Assign) -> CValue:
        if node.op == "=":
            return self.expr(node.value)
        op = {"++": "+", "--": "-"}.get(node.op, node.op[:-1])
        right = node.value or s.Number(node.end, node.end, "1")
        return self.expr(s.Binary(node.start, node.end, op, node.target, right))

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


def _fits(value: float, to: DType) -> bool:
    info = np.iinfo(to.numpy)
    return bool(np.isfinite(value)) and info.min - 1 < value < info.max + 1
