"""C syntax trees -> tile-language source, with C's types and conversions made explicit.

The translator types every expression as C does (integer promotion, the usual arithmetic
conversions, the types of literals) and writes code whose operands already have the types C
gives them, so the tile language's own promotion never decides anything:

    C:     int8 a, b;  float z = a / b + 0.5;
    tile:  z_val = ((cops.c_div(a_val.astype(ct.int32), b_val.astype(ct.int32))).astype(ct.float64)
                    + ct.full((), 0.5, ct.float64)).astype(ct.float32)

A C value is one tile per kernel element (or a scalar where it is the same everywhere). `if`
statements are if-converted: both branches run, and every variable either assigns is merged
with `ct.where` on the condition; raw-array stores inside a branch are masked by it. Each C
statement becomes a comment with its text followed by its Python lines.
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass, field

import numpy as np

from ..errors import TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, TileValueError
from ..ir.ops import OPS, PREDICATES
from ..ir.types import DType, bool_, float32, float64, int32, int64, uint32
from . import syntax as s
from .cdtypes import C_SPELLING, C_TYPES, SUPPORTED, arithmetic, convert_constant, int_literal_type, integer_promotion
from .lexer import Snippet


@dataclass(frozen=True)
class CValue:
    """A translated expression: Python code, its C type, and what is known about it."""

    code: str
    type: DType
    const: object = None      # the value, when known while translating
    varies: bool = True       # False: the same in every element (a constant, a scalar argument)


@dataclass(frozen=True)
class RawArray:
    """A `raw` parameter: indexed by hand with a flat (C-order) index."""

    name: str                 # the kernel parameter
    type: DType
    ndim: int
    writable: bool


@dataclass
class Output:
    """An output variable: unset until the body assigns it (then its last value is stored)."""

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
_ARITHMETIC_OPS = ("+", "-", "*", "/", "%", "&", "|", "^")
_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


def python_literal(value) -> str:
    return f"float('{value}')" if isinstance(value, float) and not np.isfinite(value) else repr(value)


def literal(value, dtype: DType) -> CValue:
    """A C constant, converted to `dtype` as C converts it."""
    value = convert_constant(value, dtype)
    return CValue(f"ct.full((), {python_literal(value)}, ct.{dtype.name})", dtype, value, varies=False)


@dataclass(eq=False)
class Scope:
    names: dict = field(default_factory=dict)   # C name -> CValue
    parent: Scope | None = None

    def lookup(self, name):
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope
            scope = scope.parent
        return None


class Translator:
    """Translates the statements and expressions of one kernel, appending Python lines to `lines`.

    `inputs` maps C names to their values (loaded tiles or scalar arguments), `outputs` to
    `Output`s, `raws` to `RawArray`s; `specials` gives `i` and `_ind.size()`.
    """

    def __init__(self, snippet: Snippet, placeholders: dict, inputs: dict, outputs: dict, raws: dict,
                 specials: dict, functions: dict, names: set, indent: str = "    "):
        self.snippet = snippet
        self.placeholders = placeholders
        self.inputs, self.outputs, self.raws = inputs, outputs, raws
        self.specials = specials
        self.functions = functions           # preamble: name -> (Function, Snippet)
        self.used_names = names              # Python names already taken
        self.indent = indent
        self.lines: list[str] = []
        self.globals = Scope()               # the preamble's constants: seen by its functions too
        self.scope = Scope(parent=self.globals)
        self.predicate: CValue | None = None  # the conditions of the enclosing ifs
        self.inlining: list[str] = []
        self.used_specials: set = set()

    # ---- helpers ---------------------------------------------------------------------------------

    def error(self, cls, message: str, node: s.Node):
        return self.snippet.error(cls, message, node.start, node.end)

    def fresh(self, base: str) -> str:
        base = base if base.isidentifier() and not keyword.iskeyword(base) else f"c_{base}"
        name, k = base, 0
        while name in self.used_names:
            k += 1
            name = f"{base}_{k}"
        self.used_names.add(name)
        return name

    def emit(self, line: str):
        self.lines.append(self.indent + line)

    def bind(self, base: str, value: CValue) -> CValue:
        """Give a value a Python variable (constants stay inline)."""
        if value.const is not None or value.code.isidentifier():
            return value
        name = self.fresh(base)
        self.emit(f"{name} = {value.code}")
        return CValue(name, value.type, None, value.varies)

    def resolve_type(self, type_: s.TypeName) -> DType | None:
        """The dtype a written type names; None for `auto`."""
        if type_.words == ("auto",):
            return None
        if len(type_.words) == 1 and type_.words[0] in self.placeholders:
            return self.placeholders[type_.words[0]]
        dtype = C_TYPES.get(type_.words)
        if dtype is None:
            raise self.error(TileTypeError, f"Unknown type '{' '.join(type_.words)}'", type_)
        return dtype

    # ---- conversions -----------------------------------------------------------------------------

    def convert(self, value: CValue, to: DType) -> CValue:
        if value.type is to:
            return value
        if value.const is not None:
            return literal(value.const, to)
        if to is bool_:
            return CValue(f"({value.code} != {literal(0, value.type).code})", bool_, None, value.varies)
        return CValue(f"{value.code}.astype(ct.{to.name})", to, None, value.varies)

    def truth(self, value: CValue) -> CValue:
        return self.convert(value, bool_)

    # ---- expressions ---------------------------------------------------------------------------

    def expr(self, node: s.Node) -> CValue:
        method = getattr(self, f"expr_{type(node).__name__}")
        return method(node)

    def expr_Number(self, node: s.Number) -> CValue:
        text = node.text
        is_hex = text.lower().startswith("0x")
        if not is_hex and (any(c in text for c in ".eE") or text[-1] in "fF"):
            body = text.rstrip("fFlL")
            return literal(float(body), float32 if text[-1] in "fF" else float64)
        digits = text.rstrip("uUlL")
        suffix = text[len(digits):]
        if is_hex:
            value, decimal = int(digits, 16), False
        elif len(digits) > 1 and digits.startswith("0"):
            value, decimal = int(digits, 8), False
        else:
            value, decimal = int(digits), True
        try:
            return literal(value, int_literal_type(value, suffix, decimal))
        except OverflowError as e:
            raise self.error(TileValueError, str(e), node) from None

    def expr_Name(self, node: s.Name) -> CValue:
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

    def expr_IndexSize(self, node: s.IndexSize) -> CValue:
        self.used_specials.add("_ind.size()")
        if "_ind.size()" not in self.specials:
            raise self.error(TileUnsupportedFeatureError, "_ind.size() is not available here", node)
        return self.specials["_ind.size()"]

    def expr_Unary(self, node: s.Unary) -> CValue:
        operand = self.expr(node.operand)
        if node.op == "!":
            b = self.truth(operand)
            if b.const is not None:
                return literal(not b.const, bool_)
            return CValue(f"({b.code} == {literal(False, bool_).code})", bool_, None, b.varies)
        self.check_arithmetic(operand, node.operand, node.op)
        t = integer_promotion(operand.type)
        if node.op == "~":
            if not t.is_integral:
                raise self.error(TileTypeError, f"'~' needs an integer operand, not {C_SPELLING[t]}", node)
            v = self.convert(operand, t)
            return CValue(f"(~{v.code})", t, None, v.varies)
        v = self.convert(operand, t)
        if node.op == "+":
            return v
        if v.const is not None:
            return literal(np.negative(np.array(v.const, t.numpy)).item(), t)
        return CValue(f"(-{v.code})", t, None, v.varies)

    def check_arithmetic(self, value: CValue, node: s.Node, op: str):
        if value.type not in SUPPORTED:
            raise self.error(TileTypeError, f"'{op}' does not apply to {value.type}", node)

    def expr_Binary(self, node: s.Binary) -> CValue:
        left, right = self.expr(node.left), self.expr(node.right)
        op = node.op
        if op in ("&&", "||"):
            a, b = self.truth(left), self.truth(right)
            return CValue(f"({a.code} {'&' if op == '&&' else '|'} {b.code})", bool_, None, a.varies or b.varies)
        if op in ("<<", ">>"):
            t = integer_promotion(left.type)
            if not (t.is_integral and integer_promotion(right.type).is_integral):
                raise self.error(TileTypeError, f"'{op}' needs integer operands", node)
            a, b = self.convert(left, t), self.convert(right, t)
            return CValue(f"({a.code} {op} {b.code})", t, None, a.varies or b.varies)
        t = arithmetic(left.type, right.type)
        a, b = self.convert(left, t), self.convert(right, t)
        varies = a.varies or b.varies
        if op in _COMPARISONS:
            return CValue(f"({a.code} {op} {b.code})", bool_, None, varies)
        if op in ("%", "&", "|", "^") and not t.is_integral:
            hint = " (fmod is not supported)" if op == "%" else ""
            raise self.error(TileTypeError, f"'{op}' needs integer operands, not {C_SPELLING[t]}{hint}", node)
        if op == "/" and t.is_integral:
            return CValue(f"cops.c_div({a.code}, {b.code})", t, None, varies)
        if op == "%":
            return CValue(f"cops.c_rem({a.code}, {b.code})", t, None, varies)
        return CValue(f"({a.code} {op} {b.code})", t, None, varies)

    def expr_Conditional(self, node: s.Conditional) -> CValue:
        cond = self.truth(self.expr(node.cond))
        a, b = self.expr(node.then), self.expr(node.orelse)
        t = a.type if a.type is b.type else arithmetic(a.type, b.type)
        a, b = self.convert(a, t), self.convert(b, t)
        if cond.const is not None:
            return a if cond.const else b
        return CValue(f"ct.where({cond.code}, {a.code}, {b.code})", t, None, True)

    def expr_Cast(self, node: s.Cast) -> CValue:
        to = self.resolve_type(node.type)
        value = self.expr(node.operand)
        return value if to is None else self.convert(value, to)

    def expr_Subscript(self, node: s.Subscript) -> CValue:
        raw = self.raws.get(node.array.id)
        if raw is None:
            raise self.error(TileTypeError, f"Only raw arrays can be indexed; '{node.array.id}' is not declared "
                             f"`raw`", node.array)
        coords = self.coordinates(raw, node.index)
        return CValue(f"ct.gather({raw.name}, {coords})", raw.type, None, True)

    def coordinates(self, raw: RawArray, index_node: s.Node) -> str:
        """The C-order coordinates of a flat index into a raw array, as a Python tuple."""
        index = self.expr(index_node)
        if not integer_promotion(index.type).is_integral:
            raise self.error(TileTypeError, f"An array index must be an integer, not {C_SPELLING[index.type]}",
                             index_node)
        flat = self.bind("index", self.convert(index, int64))
        coords = []
        for dim in reversed(range(raw.ndim)):
            if dim == 0:
                coords.insert(0, flat.code)
                break
            extent = f"{raw.name}.shape[{dim}]"
            coords.insert(0, f"{flat.code} % {extent}")
            flat = self.bind("index", CValue(f"{flat.code} // {extent}", int64))
        return f"({', '.join(coords)}{',' * (len(coords) == 1)})"

    def expr_Call(self, node: s.Call) -> CValue:
        if node.func in self.functions:
            return self.inline(node)
        name = node.func
        known = _MATH.get(name) or _GENERIC.get(name)
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
        code = f"{tile_fn}({', '.join(a.code for a in converted)})"
        return CValue(code, bool_ if name in _PREDICATES else t, None, varies)

    def inline(self, node: s.Call) -> CValue:
        """A preamble function call: its body translated in a scope of its own."""
        function, snippet = self.functions[node.func]
        if node.func in self.inlining:
            raise self.error(TileUnsupportedFeatureError, f"'{node.func}' calls itself: recursion is not supported",
                             node)
        if len(node.args) != len(function.params):
            raise self.error(TileTypeError, f"{node.func}() takes {len(function.params)} arguments, got "
                             f"{len(node.args)}", node)
        args = [self.expr(a) for a in node.args]
        outer_snippet, outer_scope = self.snippet, self.scope
        self.snippet, self.scope = snippet, Scope(parent=self.globals)
        self.inlining.append(node.func)
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
            self.emit(f"# {self.snippet.text[node.start:node.end].strip()}".replace("\n", " "))
        getattr(self, f"stmt_{type(node).__name__}")(node)

    def stmt_Declaration(self, node: s.Declaration):
        to = self.resolve_type(node.type)
        for name, init in node.names:
            if name.id in self.scope.names:
                raise self.error(TileSyntaxError, f"'{name.id}' is already declared in this scope", name)
            if init is None:
                if to is None:
                    raise self.error(TileTypeError, "`auto` needs an initializer", name)
                value = literal(0, to)   # reading it before assigning it is undefined in C: zero here
            else:
                value = self.expr(init)
                value = value if to is None else self.convert(value, to)
            self.scope.names[name.id] = self.bind(name.id, value)

    def stmt_Assign(self, node: s.Assign):
        if isinstance(node.target, s.Subscript):
            self.store_raw(node)
            return
        name = node.target.id
        current_type = self.assigned_type(node.target)
        if node.op == "=":
            value = self.expr(node.value)
        else:
            op = {"++": "+", "--": "-"}.get(node.op, node.op[:-1])
            right = node.value or s.Number(node.end, node.end, "1")
            value = self.expr(s.Binary(node.start, node.end, op, node.target, right))
        self.assign(name, self.bind(name, self.convert(value, current_type)))

    def assigned_type(self, target: s.Name) -> DType:
        scope = self.scope.lookup(target.id)
        if scope is not None:
            return scope.names[target.id].type
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
        raw = self.raws.get(node.target.array.id)
        if raw is None or not raw.writable:
            why = "is not a raw array" if raw is None else "is a raw input: inputs are read-only"
            raise self.error(TileTypeError, f"'{node.target.array.id}' {why}", node.target.array)
        if node.op != "=":
            raise self.error(TileUnsupportedFeatureError, f"'{node.op}' on a raw array element is not supported: "
                             f"write `{raw.name}[k] = {raw.name}[k] ...`", node)
        coords = self.coordinates(raw, node.target.index)
        value = self.convert(self.expr(node.value), raw.type)
        if not value.varies:
            value = CValue(f"ct.broadcast_to({value.code}, {self.specials['shape']})", value.type)
        mask = self.specials["in_range"] if self.predicate is None else \
            CValue(f"({self.specials['in_range'].code} & {self.predicate.code})", bool_)
        self.used_specials.add("in_range")
        self.emit(f"ct.scatter({raw.name}, {coords}, {value.code}, mask={mask.code})")

    def stmt_If(self, node: s.If):
        cond = self.bind("cond", self.truth(self.expr(node.cond)))
        self.emit(f"# if ({self.snippet.text[node.cond.start:node.cond.end]})")
        outer_predicate = self.predicate
        branches = []
        for body, taken in ((node.then, cond), (node.orelse, None)):
            if taken is None:
                taken = self.bind("not_cond", CValue(f"({cond.code} == {literal(False, bool_).code})", bool_))
            self.predicate = taken if outer_predicate is None else \
                self.bind("taken", CValue(f"({outer_predicate.code} & {taken.code})", bool_))
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
            merged = CValue(f"ct.where({cond.code}, {a.code}, {b.code})", a.type) if cond.const is None else \
                (a if cond.const else b)
            self.assign_key(key, self.bind(name, merged))

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
