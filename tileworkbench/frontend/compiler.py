"""Python AST -> tile IR, by partial evaluation.

The walker evaluates the kernel's body once per specialization. Every expression evaluates to
either a compile-time Python value (a literal, a `Constant` parameter, `t.shape`, a dtype, a
tuple...) or an IR `Value` (a tile, a scalar, an array). Constant `if`s pick their branch while
walking; runtime ones become `if` ops; `for ... in range(...)` becomes a `for` op whose carried
values are the variables the body reassigns. Helper functions are inlined; an error inside one
reports the whole chain of call sites.
"""
from __future__ import annotations

import ast
import builtins
import enum
import functools
import math
import operator
import re
import sys
import types

import numpy as np

from ..arguments import is_array_like
from ..errors import (StaticException, TileError, TileInternalError, TileRecursionError, TileStaticAssertionError, TileStaticEvalError,
                      TileSyntaxError, TileTypeError, TileValueError)
from ..ir.core import Block, Builder, Function, Param, Value
from ..ir.fuse import fuse_multiply_adds
from ..ir.ops import TypeRuleError, is_pure
from ..ir.types import DType, TileType, bool_, int32, to_dtype
from ..ir.verify import verify
from . import coerce
from ..ir import stubs
from .lowering import (LOWERINGS, SliceValue, bind_call, lower_binary, lower_call, lower_method, lower_unary,
                       positive, static_extent, where)
from . import surface  # noqa: F401 - registers the lowerings of byte packing, mma_scaled, tiled views, ...
from .source import FuncSource, source_of

MAX_INLINE_DEPTH = 1000  # helper calls nested deeper are taken for runaway recursion (as cuTile does)
_FRAMES_PER_INLINE = 30  # Python frames the walker uses per nested helper call (measured about 20)
MAX_STATIC_ITERATIONS = 1000
# The most elements a tile may have: 2**24 is 64 MiB of float32 per block on the interpreter, far
# past any tile a GPU block holds (the CUDA backend's own limit is lower, see codegen/cuda.py).
MAX_TILE_ELEMENTS = 1 << 24


class _Undefined:
    """A name that is defined on some paths only (after a runtime `if`, or assigned in a loop)."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why


class _Return(Exception):
    def __init__(self, value, node):
        self.value, self.node = value, node


class ArrayList(tuple):
    """A list of arrays passed to the kernel: its length is part of the specialization, so `len()`,
    iteration and constant indexes are resolved while compiling; an index known only at run time
    (`As[i]` in a loop, `As[bid]`) becomes a `list_item` op."""

    @property
    def described(self) -> str:
        return f"a list of {len(self)} arrays"


class LocalFunction:
    """A `def` or `lambda` written inside tile code: inlined where it is called. Like Python, it
    reads the variables of the scope it was defined in when called, and its defaults as they were
    when it was defined."""

    def __init__(self, node, source: FuncSource, scope: dict, defaults: tuple):
        self.node, self.source, self.scope, self.defaults = node, source, scope, defaults


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or",
           ast.BitXor: "bitwise_xor", ast.LShift: "lshift", ast.RShift: "rshift", ast.MatMult: "matmul"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_PY_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
              ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
              ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.MatMult: operator.matmul}
_PY_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
              ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
              ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
# Host functions that tile code may call on compile-time constants.
_CONST_CALLABLES = {builtins.abs, builtins.min, builtins.max, builtins.len, builtins.int, builtins.float,
                    builtins.bool, builtins.round, builtins.divmod, builtins.tuple, builtins.pow, builtins.range,
                    builtins.sum, builtins.isinstance, builtins.str, builtins.zip, builtins.enumerate, builtins.list}
_CONST_MODULES = (math, np)


def compile_kernel(pyfunc, specs, hints: dict | None = None) -> Function:
    """Build and verify the IR of one specialization of a kernel (`hints`: its options). A function
    marked `fp_contract = True` (the tile kernel of a CuPy-style kernel, whose C NVRTC compiles
    as CuPy does) lets NVRTC fuse multiply-adds of its own; in the others, only the IR's fma is fused
    (the code generator writes their other float + - * so that NVRTC cannot fuse them)."""
    source = source_of(pyfunc)
    hints = {**(hints or {}), **({"fp_contract": True} if getattr(pyfunc, "fp_contract", False) else {})}
    params, args = [], []

    def bind(spec):
        """The value the kernel's code sees for a parameter; each array and scalar in it a Param."""
        if spec.kind == "list":
            return ArrayList(map(bind, spec.items))
        if spec.kind == "tuple":
            return tuple(map(bind, spec.items))
        params.append(Param(spec.name, spec.kind, spec.type, spec.value))
        if spec.kind == "constant":
            return spec.value
        args.append(Value(spec.type, re.sub(r"\[(\d+)\]", r"_\1", spec.name)))  # As[0] prints as %As_0
        return args[-1]
    scope = {spec.name: bind(spec) for spec in specs}
    body = Block(args=args)
    fn = Function(pyfunc.__name__, params, body, "".join(source.lines), source.filename, source.line_offset + 1,
                  hints=hints)
    lowerer = Lowerer(source, Builder(body))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _FRAMES_PER_INLINE * MAX_INLINE_DEPTH + 2000))
    try:
        lowerer.run_kernel(scope)
    finally:
        sys.setrecursionlimit(limit)
    _remove_dead_code(body)
    fuse_multiply_adds(fn)
    try:
        verify(fn)
    except TileInternalError as e:
        raise TileInternalError(f"{e.message} (this is a bug in tileworkbench; please report it)", e.loc) from None
    return fn


def _remove_dead_code(block: Block) -> set[Value]:
    """Drop pure ops whose results nobody uses (e.g. `a.shape` read for one dimension)."""
    used: set[Value] = set()
    for op in reversed(block.ops):
        for region in op.regions:
            used |= _remove_dead_code(region)
    changed = True
    while changed:
        used = {v for op in _all_ops(block) for v in op.operands}
        keep = [op for op in block.ops if not is_pure(op) or any(r in used for r in op.results)]
        changed = len(keep) != len(block.ops)
        block.ops = keep
    return used


def _all_ops(block):
    for op in block.ops:
        yield op
        for r in op.regions:
            yield from _all_ops(r)


class Lowerer:
    """Walks one kernel (and the helpers it calls), emitting IR through a Builder."""

    def __init__(self, source: FuncSource, builder: Builder):
        self.source = source
        self.builder = builder
        self.scope: dict = {}
        self.node: ast.AST = source.node
        self.call_stack: list = []        # SourceLocs of the helper calls we are inside
        self.runtime_depth = 0            # > 0 inside a runtime if/for region
        self.arg_nodes: dict = {}         # parameter name -> AST node of the tile call being lowered
        self.calling = ""                 # the name of the tile function being lowered
        self.combining = ""               # "reduction" or "scan" while inlining a combine function
        self.loop_depth = 0               # loops of the function being walked (for break/continue)
        self.loop_exits: list = []        # per enclosing loop: ("break" or "return", the scope there) per exit
        self.trial = False                # walking a loop body once to learn what its exits hold
        self.local_names: dict = {}       # function AST node -> the names it assigns (its locals)

    # ---- errors and emission ------------------------------------------------------------------

    def arg(self, name: str):
        """The AST node of argument `name` of the tile call being lowered (for precise carets)."""
        return self.arg_nodes.get(name)

    def loc(self, node=None):
        return self.source.loc(node or self.node)

    def fail(self, cls, message: str, node=None):
        raise cls(message, frames=tuple(self.call_stack) + (self.loc(node),))

    def emit(self, name, operands, attrs=None, regions=()) -> Value | None:
        try:
            op = self.builder.emit(name, operands, attrs, self.loc(), regions)
        except TypeRuleError as e:
            self.fail(TileTypeError, str(e))
        for v in op.results:
            if isinstance(v.type, TileType) and v.type.size > MAX_TILE_ELEMENTS:
                self.fail(TileValueError, f"A tile of shape {v.type.shape} has {v.type.size} elements; a tile holds "
                                          f"at most {MAX_TILE_ELEMENTS} (2**24): split the work into more blocks")
        return op.results[0] if len(op.results) == 1 else op

    def at(self, node):
        """Context: errors and emitted ops point at `node`."""
        lowerer = self

        class _At:
            def __enter__(self):
                self.saved = lowerer.node
                lowerer.node = node

            def __exit__(self, *exc):
                lowerer.node = self.saved
        return _At()

    # ---- entry --------------------------------------------------------------------------------

    def run_kernel(self, scope: dict):
        self.scope = scope
        self.scope["$return"] = False
        try:
            self.walk_body(self.source.node.body)
        except _Return:
            pass
        except TileError:
            raise
        except RecursionError:  # one frame, as for the inlining limit: the others repeat
            raise TileRecursionError("The kernel is nested too deeply to compile: a recursive helper, or an "
                                     "expression nested thousands of levels deep", self.loc()) from None

    # ---- statements ---------------------------------------------------------------------------

    def walk_body(self, stmts):
        """Walk statements; after a `break`, `continue` or `return` taken under a runtime condition,
        the rest of the body runs under `if not <that exit>`."""
        for k, stmt in enumerate(stmts):
            with self.at(stmt):
                self.statement(stmt)
            flags = {f: self.scope[f] for f in _EXIT_FLAGS[:3] if f in self.scope}
            if any(v is True for v in flags.values()):
                return  # the rest of this body is not reached
            pending = [f for f, v in flags.items() if isinstance(v, Value)]
            rest = stmts[k + 1:]
            if pending and rest:
                with self.at(rest[0]):
                    self.runtime_if(self.none_of(pending), rest, [], assume_false=pending)
                return

    def none_of(self, flags) -> Value:
        """`not (flag_1 or flag_2 ...)` of exit flags in scope."""
        values = [self.scope[f] for f in flags]
        any_taken = values[0]
        for v in values[1:]:
            any_taken = self.emit("bitwise_or", [any_taken, v])
        return self.emit("bitwise_xor", [any_taken, coerce.constant(self, True, bool_)])

    def statement(self, s):
        kind = type(s).__name__
        handler = getattr(self, f"stmt_{kind}", None)
        if handler is None:
            self.fail(TileSyntaxError, f"Unsupported syntax in tile code: {_syntax_name(s)}")
        handler(s)

    def stmt_Expr(self, s):
        self.expr(s.value)

    def stmt_Pass(self, s):
        pass

    def stmt_Raise(self, s):
        """`raise ct.static_exception(exc)`: exc evaluated now, as static_eval does, and raised as a
        StaticException; no other raise has a meaning in tile code."""
        call = s.exc if isinstance(s.exc, ast.Call) and s.cause is None else None
        if call is None or getattr(self.expr(call.func), "__tile_op__", None) != "static_exception":
            self.fail(TileSyntaxError, "Unsupported syntax in tile code: raise (only `raise ct.static_exception(...)`)")
        exc = self.static_eval(call, "static_exception")
        if not isinstance(exc, BaseException):
            self.fail(TileTypeError, f"'{type(exc).__name__}' is not derived from 'BaseException'")
        self.fail(StaticException, f"Exception was raised at compile time ({type(exc).__name__}"
                                   f"{': ' + str(exc) if str(exc) else ''})")

    def stmt_Assign(self, s):
        value = self.expr(s.value)
        for target in s.targets:
            self.assign(target, value)

    def stmt_AnnAssign(self, s):
        if s.value is not None:
            self.assign(s.target, self.expr(s.value))

    def stmt_AugAssign(self, s):
        current = self.expr(_as_load(s.target))
        with self.at(s):
            value = self.binary(type(s.op), current, self.expr(s.value))
        self.assign(s.target, value)

    def assign(self, target, value):
        with self.at(target):
            if isinstance(target, ast.Name):
                if isinstance(value, Value) and not value.name and value.owner is not None:
                    value.name = target.id
                self.scope[target.id] = value
            elif isinstance(target, (ast.Tuple, ast.List)):
                if not isinstance(value, tuple):
                    self.fail(TileTypeError, f"Cannot unpack {coerce.describe(value)}")
                if len(value) != len(target.elts):
                    self.fail(TileValueError, f"Cannot unpack {len(value)} values into {len(target.elts)} names")
                for t, v in zip(target.elts, value):
                    self.assign(t, v)
            elif isinstance(target, ast.Subscript):
                obj = self.expr(target.value)
                if isinstance(obj, Value) and obj.is_array:
                    self.fail(TileTypeError, "Arrays do not support item assignment. Use store() or scatter() instead.")
                self.fail(TileTypeError, "Tiles are immutable; build a new tile (where(), insert()) instead.")
            else:
                self.fail(TileSyntaxError, f"Unsupported assignment target: {_syntax_name(target)}")

    def stmt_Return(self, s):
        value = self.expr(s.value) if s.value is not None else None
        if value is not None and not self.call_stack:
            self.fail(TileSyntaxError, "Tile kernels cannot return values; store results into an array", s)
        if not self.runtime_depth:
            raise _Return(value, s)
        # under runtime control flow: the exit is a flag the enclosing bodies test (walk_body)
        self.scope["$return"] = True
        self.scope["$retval"] = value
        if self.loop_depth:
            self.loop_exits[-1].append(("return", dict(self.scope)))

    def stmt_Assert(self, s):
        cond = self.expr(s.test)
        if isinstance(cond, Value):
            self.fail(TileTypeError, "assert needs a compile-time condition (use ct.static_assert for constants)")
        if not cond:
            msg = self.expr(s.msg) if s.msg is not None else None
            self.fail(TileStaticAssertionError, "Static assertion failed" + (f": {msg}" if msg is not None else ""))

    def stmt_FunctionDef(self, s):
        if s.decorator_list:
            self.fail(TileSyntaxError, "Decorators on functions inside tile code are not supported")
        self.scope[s.name] = self.local_function(s)

    def stmt_If(self, s):
        cond = self.expr(s.test)
        if not isinstance(cond, Value):
            self.walk_body(s.body if cond else s.orelse)
            return
        self.runtime_if(self.condition(cond), s.body, s.orelse)

    def stmt_For(self, s):
        if s.orelse:
            self.fail(TileSyntaxError, "for-else is not supported")
        it = s.iter
        if isinstance(it, ast.Call) and self.expr(it.func) is builtins.range:
            self.range_loop(s, [self.expr(a) for a in it.args])
            return
        iterable = self.expr(it)
        if isinstance(iterable, (tuple, list, range)):
            self.unrolled_loop(s, iterable)
            return
        self.fail(TileSyntaxError, "A for loop in tile code must iterate over range(...) or a constant tuple")

    def stmt_Break(self, s):
        if not self.loop_depth:
            self.fail(TileSyntaxError, "'break' outside loop")
        self.loop_exits[-1].append(("break", dict(self.scope)))
        self.scope["$break"] = True

    def stmt_Continue(self, s):
        if not self.loop_depth:
            self.fail(TileSyntaxError, "'continue' not properly in loop")
        self.scope["$continue"] = True

    # ---- runtime control flow -------------------------------------------------------------------

    def condition(self, cond: Value) -> Value:
        if cond.is_array or cond.shape != ():
            self.fail(TileTypeError, f"A runtime condition must be a scalar, got {cond.type}; "
                                     f"use ct.where() for elementwise choices")
        return cond if cond.dtype is bool_ else self.emit("ne", [cond, coerce.constant(self, 0, cond.dtype)])

    def walk_region(self, stmts, block: Block, prelude=None, walk=None) -> dict:
        saved = self.builder.block, self.scope
        self.builder.block, self.scope = block, dict(self.scope)
        self.runtime_depth += 1
        try:
            if prelude:
                prelude(self.scope)
            (walk or self.walk_body)(stmts)
            return self.scope
        finally:
            self.runtime_depth -= 1
            self.builder.block, self.scope = saved

    def in_block(self, block: Block, fn):
        saved = self.builder.block
        self.builder.block = block
        try:
            return fn()
        finally:
            self.builder.block = saved

    def runtime_if(self, cond: Value, body, orelse, assume_false=()):
        """An `if` op; the names either branch reassigns become its results. `assume_false`: exit
        flags the condition has tested false, so the then-branch knows them as constants."""
        if self.combining:
            self.fail(TileSyntaxError, f"Branching inside {self.combining} body is not supported")
        then_block, else_block = Block(), Block()
        before = self.scope
        then_scope = self.walk_region(body, then_block, lambda scope: scope.update(dict.fromkeys(assume_false, False)))
        else_scope = self.walk_region(orelse, else_block)
        merged, then_vals, else_vals, rebuild = {}, [], [], []
        for name in sorted(set(then_scope) | set(else_scope)):
            t, e = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if t is before.get(name, _MISSING) and e is t:
                continue
            if name == "$retval" and t is _MISSING:  # a path that has not returned holds any value of that type
                t = self.in_block(then_block, functools.partial(self.filler, e))
            elif name == "$retval" and e is _MISSING:
                e = self.in_block(else_block, functools.partial(self.filler, t))
            if t is _MISSING or e is _MISSING or isinstance(t, _Undefined) or isinstance(e, _Undefined):
                merged[name] = _Undefined(name, "it is assigned in only one branch of a runtime if")
                continue
            pairs, build = self.merge_structure(name, t, e, then_block, else_block)
            rebuild.append((name, len(pairs), build))
            then_vals += [tv for tv, _ in pairs]
            else_vals += [ev for _, ev in pairs]
        self.in_block(then_block, lambda: self.emit("yield", then_vals))
        self.in_block(else_block, lambda: self.emit("yield", else_vals))
        op = self.emit("if", [cond], {"result_types": [v.type for v in then_vals]}, regions=[then_block, else_block])
        results = iter([op] if isinstance(op, Value) else op.results)
        self.scope.update(merged)
        for name, count, build in rebuild:
            values = [next(results) for _ in range(count)]
            for v in values:
                v.name = name.lstrip("$")
            self.scope[name] = build(values)

    def filler(self, x):
        """A value of x's type (where only its type matters)."""
        if isinstance(x, tuple):
            return tuple(self.filler(v) for v in x)
        if isinstance(x, Value) and not x.is_array:
            return coerce.constant(self, 0, x.dtype, x.shape)
        return x

    def merge_structure(self, name, t, e, then_block, else_block):
        """The leaves of both branches' values of `name` that differ, as (then, else) Value pairs of
        one type, and how to rebuild the merged value from the if's results for them."""
        if isinstance(t, tuple) and isinstance(e, tuple) and len(t) == len(e):
            parts = [self.merge_structure(f"{name}[{k}]", a, b, then_block, else_block) for k, (a, b) in enumerate(zip(t, e))]

            def build(values):
                out, it = [], iter(values)
                for pairs, part in parts:
                    out.append(part([next(it) for _ in pairs]))
                return tuple(out)
            return [p for pairs, _ in parts for p in pairs], build
        if not isinstance(t, Value) and not isinstance(e, Value) and _same_const(t, e):
            return [], lambda values: t
        if isinstance(t, Value) and t is e:
            return [], lambda values: t
        if isinstance(t, LocalFunction) and isinstance(e, LocalFunction) and t.node is e.node:
            return self.merge_closures(name, t, e, then_block, else_block)
        return [self.merge_pair(name, t, e, then_block, else_block)], lambda values: values[0]

    def merge_closures(self, name, t: LocalFunction, e: LocalFunction, then_block, else_block):
        """One function chosen at run time: the same code, its captured values and defaults merged."""
        keys = [k for k in t.scope if k in e.scope and t.scope[k] is not e.scope[k] and k.isidentifier()
                and not isinstance(t.scope[k], LocalFunction)]  # the functions it defines are code, not data
        parts = [self.merge_structure(f"{name}.{k}", t.scope[k], e.scope[k], then_block, else_block) for k in keys]
        parts.append(self.merge_structure(f"{name} defaults", t.defaults, e.defaults, then_block, else_block))

        def build(values):
            it, merged = iter(values), []
            for pairs, part in parts:
                merged.append(part([next(it) for _ in pairs]))
            return LocalFunction(t.node, t.source, {**t.scope, **dict(zip(keys, merged))}, merged[-1])
        return [p for pairs, _ in parts for p in pairs], build

    def merge_pair(self, name, t, e, then_block, else_block):
        """Both branches' values of `name` as Values of one type (loose constants adapt, except in
        what a helper returns: its paths must agree on the type, as in cuTile). An array is chosen
        among arrays of one dtype and rank."""
        for x in (t, e):
            if not isinstance(x, Value) and not coerce.is_const(x):
                self.fail(TileTypeError, f"`{name}` holds {coerce.describe(x)} that depends on a runtime condition; "
                                         f"only arrays, tiles, scalars and tuples of them can")
        if isinstance(t, Value) and t.is_array or isinstance(e, Value) and e.is_array:
            if not (isinstance(t, Value) and isinstance(e, Value) and t.type == e.type):
                self.fail(TileTypeError, f"Type of `{name}` depends on path taken: {coerce.describe(t)} in the if "
                                         f"branch, {coerce.describe(e)} in the else branch")
            return t, e
        if name.startswith("$retval"):
            t_type, e_type = (x.type if isinstance(x, Value) else coerce.scalar_type(coerce.default_dtype(x)) for x in (t, e))
            if t_type != e_type:
                self.fail(TileTypeError, f"Type of return value depends on path taken: {t_type} in the if branch, "
                                         f"{e_type} in the else branch")
        dtype = (t.dtype if isinstance(t, Value) else e.dtype if isinstance(e, Value) else coerce.common_dtype(self, t, e))
        tv = self.in_block(then_block, lambda: coerce.to_value(self, t, dtype))
        ev = self.in_block(else_block, lambda: coerce.to_value(self, e, dtype))
        if tv.type != ev.type:
            self.fail(TileTypeError, f"Type of `{name}` depends on path taken: {tv.type} in the if branch, "
                                     f"{ev.type} in the else branch")
        return tv, ev

    def unrolled_loop(self, s, iterable):
        """A loop over a compile-time sequence: the body once per item; break/continue must be
        decided at compile time."""
        outer = {f: self.scope.get(f, False) for f in ("$break", "$continue")}
        self.loop_depth += 1
        self.loop_exits.append([])
        try:
            for item in iterable:
                self.scope["$break"] = self.scope["$continue"] = False
                self.assign(s.target, item)
                self.walk_body(s.body)
                if any(isinstance(self.scope[f], Value) for f in ("$break", "$continue")):
                    self.fail(TileSyntaxError, "break/continue under a runtime condition in a loop over a constant "
                                               "sequence is not supported; loop over range(...)")
                if self.scope["$break"]:
                    break
        finally:
            self.loop_depth -= 1
            self.loop_exits.pop()
        self.scope.update(outer)

    def loop_state(self, s, exclude=()):
        """What a loop carries: the names its body reassigns that exist before it, then the exit
        flags it needs (`$return` for a return inside, `$break` for a for loop with a break)."""
        assigned = _assigned_names(s.body) - set(exclude)
        carried = [n for n in sorted(assigned) if n in self.scope and not isinstance(self.scope[n], _Undefined)]
        initial = [self.scope[n] for n in carried]
        if _exits(s.body, ast.Return):
            if self.call_stack and not self.trial and (isinstance(s, ast.For) or "$retval" not in self.scope):
                loop = "a for" if isinstance(s, ast.For) else "a while"
                self.fail(TileSyntaxError, f"Returning from {loop} loop is not supported in a helper function "
                                           f"(only from a `while True` loop); assign the result and break")
            carried.append("$return")
            initial.append(self.scope.get("$return", False))
            if self.call_stack and "$retval" in self.scope:
                carried.append("$retval")
                initial.append(self.scope["$retval"])
        if isinstance(s, ast.For) and _exits(s.body, ast.Break):
            carried.append("$break")
            initial.append(False)
        init, shapes = [], {}
        for name, v in zip(carried, initial):
            shapes[name] = _tree_shape(v)  # a tuple is carried as its leaves
            for leaf in _tree_leaves(v):
                if not isinstance(leaf, Value) and not coerce.is_const(leaf):
                    self.fail(TileTypeError, f"`{name}` holds {coerce.describe(leaf)} and is reassigned in a loop; "
                                             f"only arrays, tiles, scalars and tuples of them can change inside loops")
                init.append(leaf if isinstance(leaf, Value) and leaf.is_array else coerce.to_value(self, leaf))
        return assigned, carried, shapes, init

    def loop_region(self, s, block: Block, carried, shapes, walk, bind=None) -> tuple:
        """Walk a loop body into `block` (its last arguments are the carried values' leaves; `bind`
        names others) with `walk`; return the carried leaves at the end of the body, the body's
        scope and its exits (see loop_exits)."""
        if s.orelse:
            self.fail(TileSyntaxError, f"{type(s).__name__.lower()}-else is not supported")
        if self.combining:
            self.fail(TileSyntaxError, f"Loops inside {self.combining} body are not supported")
        leaves = block.args[len(block.args) - sum(len(_tree_leaves(shapes[n])) for n in carried):]

        def prelude(scope):
            scope["$break"] = scope["$continue"] = False
            args = iter(leaves)
            scope.update({name: _tree_build(shapes[name], args) for name in carried}, **(bind or {}))
        self.loop_depth += 1
        self.loop_exits.append([])
        try:
            body_scope = self.walk_region(s.body, block, prelude, walk)
        finally:
            self.loop_depth -= 1
            exits = self.loop_exits.pop()
        yielded, args = [], iter(leaves)
        for name in carried:
            new = body_scope.get(name, _MISSING)
            if isinstance(new, _Undefined) or new is _MISSING:
                self.fail(TileTypeError, f"`{name}` may be undefined at the end of the loop body ({new.why})")
            if _tree_shape(new) != shapes[name]:
                self.fail(TileTypeError, f"Variable {name} has changed its type inside a loop to {coerce.describe(new)}")
            for leaf in _tree_leaves(new):
                arg = next(args)
                if coerce.is_const(leaf):
                    leaf = self.in_block(block, functools.partial(coerce.to_value, self, leaf, arg.dtype))
                if not isinstance(leaf, Value) or leaf.type != arg.type:
                    self.fail(TileTypeError, f"Variable {name} has changed its type inside a loop from {arg.type} to "
                                             f"{coerce.describe(leaf)}")
                yielded.append(leaf)
        return yielded, body_scope, exits

    def loop_results(self, op, assigned, carried, shapes):
        results = iter([] if not carried else ([op] if isinstance(op, Value) else op.results))
        for name in assigned - set(carried):
            self.scope[name] = _Undefined(name, "it is assigned only inside a loop; define it before the loop")
        for name in carried:
            value = _tree_build(shapes[name], results)
            if name != "$break":  # a loop's own break flag ends with it
                for leaf in _tree_leaves(value):
                    leaf.name = name.lstrip("$")
                self.scope[name] = value

    def range_loop(self, s, args):
        if not 1 <= len(args) <= 3:
            self.fail(TileTypeError, f"range expected 1 to 3 arguments, got {len(args)}")
        lo, hi, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
        if coerce.is_const(step) and step <= 0:
            self.fail(TileTypeError, f"Step must be positive, got {step}")
        for x in (lo, hi, step):  # cuTile's words for a bound that is not a signed integer scalar
            if isinstance(x, Value) and (x.is_array or x.shape != ()):
                self.fail(TileTypeError, f"Expected a scalar for a range bound, got {coerce.describe(x)}")
            if (isinstance(x, Value) and not (x.dtype.is_signed or x.dtype is bool_)
                    or not isinstance(x, Value) and isinstance(x, (float, np.floating))):
                self.fail(TileTypeError, f"Expected a signed integer for a range bound, got {coerce.describe(x)}")
        bounds = [self.index_scalar(x, "range bound") for x in (lo, hi, step)]
        if not isinstance(s.target, ast.Name):
            self.fail(TileSyntaxError, "The target of a range loop must be a single name")
        assigned, carried, shapes, init = self.loop_state(s, exclude={s.target.id})
        body = Block(args=[Value(TileType(int32, ()), s.target.id)] + _carried_args(carried, shapes, init))

        def walk(stmts):  # an iteration after a break or a return does nothing
            exits = [f for f in ("$break", "$return") if f in carried]
            if exits:
                self.runtime_if(self.none_of(exits), stmts, [], assume_false=exits)
            else:
                self.walk_body(stmts)
        yielded, _, _ = self.loop_region(s, body, carried, shapes, walk, bind={s.target.id: body.args[0]})
        self.in_block(body, lambda: self.emit("yield", yielded))
        op = self.emit("for", bounds + init, {"result_types": [v.type for v in init]}, regions=[body])
        self.loop_results(op, assigned | {s.target.id}, carried, shapes)

    def stmt_While(self, s):
        """`while test: body` is a `while` op whose body evaluates the test, runs the user's body when
        it holds, and yields whether to go on (the test held and nothing broke or returned).

        `while True` ends only at a break or a return, so what every break agrees on holds after
        it: a name first assigned in the body and defined at every break is defined after the
        loop, and a name holding one constant at every break is that constant; in a helper, what
        its returns return is the helper's result."""
        test = self.constant_test(s)
        if test is True:
            self.seed_break_values(s)
        exits = self.while_loop(s)
        if test is True:
            breaks = [scope for kind, scope in exits if kind == "break"]
            for name in self.scope:
                first = breaks[0].get(name, _MISSING) if breaks else _MISSING
                if not name.startswith("$") and coerce.is_const(first) and \
                        all(_same_const(b.get(name, _MISSING), first) for b in breaks[1:]):
                    self.scope[name] = first

    def constant_test(self, s):
        """Whether loop `s`'s test is a constant (`True`, `1`, a constant name the loop leaves
        alone) that holds, or None when it is not such a constant; read without emitting anything."""
        if isinstance(s.test, ast.Name) and s.test.id not in _assigned_names(s.body) or isinstance(s.test, ast.Constant):
            value = self.expr(s.test)
            return None if isinstance(value, Value) else bool(value)
        return None

    def seed_break_values(self, s):
        """Before a `while True` loop: give the names its body first assigns and every break
        defines (and a helper's return value) a value of the type they hold there, so that the
        loop carries them. A first walk of the loop, into a block that is thrown away, finds them."""
        undefined = [n for n in sorted(_assigned_names(s.body))
                     if n not in self.scope or isinstance(self.scope[n], _Undefined)]
        returns = bool(self.call_stack) and _exits(s.body, ast.Return)
        if not undefined and not returns:
            return
        saved = self.builder.block, self.scope, self.trial
        self.builder.block, self.scope, self.trial = Block(), dict(self.scope), True
        try:
            exits = self.while_loop(s)
        finally:
            self.builder.block, self.scope, self.trial = saved
        breaks = [scope for kind, scope in exits if kind == "break"]
        candidates = [(n, [b.get(n, _MISSING) for b in breaks]) for n in undefined if breaks]
        if returns:
            candidates.append(("$retval", [scope.get("$retval") for kind, scope in exits if kind == "return"]))
        for name, values in candidates:
            if values and all(_same_type(v, values[0]) for v in values):
                self.scope[name] = self.filler(values[0])

    def while_loop(self, s) -> list:
        """Emit the `while` op of loop `s`; return its exits."""
        assigned, carried, shapes, init = self.loop_state(s)
        body = Block(args=_carried_args(carried, shapes, init))
        go_on = []

        def walk(stmts):
            if "$return" in carried:  # the loop ends when a return is taken: none is at an iteration's start
                self.scope["$return"] = False
            test = self.expr(s.test)
            if isinstance(test, Value):
                test = self.condition(test)
                self.runtime_if(test, stmts, [])
            elif test:
                self.walk_body(stmts)
            flags = [f for f in ("$break", "$return") if isinstance(self.scope.get(f), Value)]
            stop = self.scope["$break"] is True or self.scope.get("$return") is True
            if stop or (not isinstance(test, Value) and not test):
                go_on.append(coerce.constant(self, False, bool_))
            elif flags:
                keep = self.none_of(flags)
                go_on.append(self.emit("bitwise_and", [test, keep]) if isinstance(test, Value) else keep)
            else:
                go_on.append(test if isinstance(test, Value) else coerce.constant(self, True, bool_))
        yielded, _, exits = self.loop_region(s, body, carried, shapes, walk)
        self.in_block(body, lambda: self.emit("yield", go_on + yielded))
        op = self.emit("while", init, {"result_types": [v.type for v in init]}, regions=[body])
        self.loop_results(op, assigned, carried, shapes)
        return exits

    def combine_region(self, func, dtypes, what: str) -> Block:
        """The region of a custom reduce/scan: `func` inlined over two groups of scalars
        (a_1..a_n, b_1..b_n), yielding n scalars of `dtypes`."""
        if self.combining:
            self.fail(TileSyntaxError, "Nested scan/reduction is not supported")
        block = Block(args=[Value(TileType(d, ()), f"{side}{k}") for side in "ab" for k, d in enumerate(dtypes)])
        saved = self.builder.block
        self.builder.block, self.combining = block, what
        try:
            result = self.call(func, list(block.args), {}, self.node)
            results = result if isinstance(result, tuple) else (result,)
            if len(results) != len(dtypes):
                self.fail(TileTypeError, f"The {what} function must return {len(dtypes)} value(s), got {len(results)}")
            yielded = []
            for r, d in zip(results, dtypes):
                v = coerce.to_value(self, r, d)
                if v.shape != ():
                    self.fail(TileTypeError, f"The {what} function must return 0-d tiles, got {v.type}")
                yielded.append(coerce.cast(self, v, d))
            for op in block.ops:
                if op.name in _MEMORY_OPS or not is_pure(op):
                    self.fail(TileSyntaxError, f"Operations with memory effects are not supported inside {what} body")
            self.emit("yield", yielded)
        finally:
            self.builder.block, self.combining = saved, ""
        return block

    def index_scalar(self, x, what: str) -> Value:
        """An int32 scalar Value for a loop bound or index (ints are range checked)."""
        if isinstance(x, Value) and not x.is_array and x.shape == () and (x.dtype.is_integral or x.dtype is bool_):
            return coerce.cast(self, x, int32) if x.dtype is not int32 else x
        if coerce.is_const(x) and not isinstance(x, (float, np.floating)):
            return coerce.to_value(self, int(x), int32)
        self.fail(TileTypeError, f"A {what} must be an integer scalar, got {coerce.describe(x)}")

    # ---- expressions ----------------------------------------------------------------------------

    def expr(self, node):
        with self.at(node):
            handler = getattr(self, f"expr_{type(node).__name__}", None)
            if handler is None:
                self.fail(TileSyntaxError, f"Unsupported syntax in tile code: {_syntax_name(node)}")
            return handler(node)

    def expr_Constant(self, node):
        return node.value

    def expr_Name(self, node):
        name = node.id
        if self.unbound_local(name):
            self.fail(TileSyntaxError, f"Undefined variable {name} used before it is assigned ({name} is assigned in "
                                       f"{self.source.name}, which makes it a local variable everywhere in it)")
        for space in (self.scope, self.source.closure, self.source.globals):
            if name in space:
                value = space[name]
                if isinstance(value, _Undefined):
                    self.fail(TileTypeError, f"Undefined variable {name} used: {value.why}")
                if space is not self.scope and is_array_like(value):  # embedded, it would be a constant
                    self.fail(TileTypeError, f"Cannot create constant from value of type {type(value).__module__}."
                                             f"{type(value).__qualname__}: arrays reach a kernel as its arguments")
                return value
        if hasattr(builtins, name):
            return getattr(builtins, name)
        self.fail(TileSyntaxError, f"Undefined variable {name} used")

    def unbound_local(self, name: str) -> bool:
        """Whether `name` is a local of the function being walked (Python: assigned anywhere in it)
        that has no value yet, so that reading it must not fall back to a global."""
        if name in self.scope:
            return False
        node = self.source.node
        if node not in self.local_names:
            self.local_names[node] = _local_names(node)
        return name in self.local_names[node]

    def expr_Tuple(self, node):
        return tuple(self._elements(node.elts))

    def expr_List(self, node):
        return tuple(self._elements(node.elts))

    def expr_Dict(self, node):
        out = {}
        for key, value in zip(node.keys, node.values):
            if key is None:  # {**other}
                out.update(self.expr(value))
                continue
            k = self.expr(key)
            if isinstance(k, Value):
                self.fail(TileTypeError, "Dictionary keys in tile code must be compile-time constants")
            out[k] = self.expr(value)
        return out

    def _elements(self, elts):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                value = self.expr(e.value)
                if not isinstance(value, tuple):
                    self.fail(TileTypeError, f"Cannot unpack {coerce.describe(value)}")
                out.extend(value)
            else:
                out.append(self.expr(e))
        return out

    def expr_Attribute(self, node):
        obj = self.expr(node.value)
        attr = node.attr
        if isinstance(obj, Value):
            return self.value_attribute(obj, attr)
        if isinstance(obj, types.ModuleType):
            if not hasattr(obj, attr):
                self.fail(TileTypeError, f"Module '{obj.__name__}' has no attribute '{attr}'")
            return getattr(obj, attr)
        if isinstance(obj, SliceValue) and attr in ("start", "length"):
            return getattr(obj, attr)
        try:
            return getattr(obj, attr)
        except AttributeError:
            self.fail(TileTypeError, f"{coerce.describe(obj)} has no attribute '{attr}'")

    def value_attribute(self, v: Value, attr: str):
        if attr == "dtype":
            return v.dtype
        if attr == "ndim":
            return v.type.ndim
        if v.is_array:
            if attr == "shape":
                return tuple(static_extent(v, d) if static_extent(v, d) is not None else
                             self.emit("array_dim", [v], {"axis": d}) for d in range(v.type.ndim))
            if attr in ("slice", "tiled_view"):
                return BoundMethod(v, attr)
            self.fail(TileTypeError, f"Arrays have no attribute '{attr}' here (supported: shape, dtype, ndim, slice, "
                                     f"tiled_view)")
        if attr == "shape":
            return v.shape
        if attr in _TILE_METHODS:
            return BoundMethod(v, attr)
        self.fail(TileTypeError, f"Tiles have no attribute '{attr}'")

    def expr_Subscript(self, node):
        obj = self.expr(node.value)
        index = self.expr(node.slice)
        if isinstance(obj, ArrayList):
            return self.list_item(obj, index)
        if isinstance(obj, Value):
            if obj.is_array:
                self.fail(TileTypeError, "Arrays are not directly subscriptable. Use load() or gather() instead.")
            return self.tile_subscript(obj, index if isinstance(index, tuple) else (index,))
        if isinstance(obj, dict) and not isinstance(index, Value) and index not in obj:
            self.fail(TileTypeError, f"Key {index!r} not found in dictionary")
        try:
            return obj[index]
        except Exception as e:  # a constant container indexed at compile time
            self.fail(TileTypeError, f"Cannot index {coerce.describe(obj)} with {index!r}: {e}")

    def list_item(self, items: ArrayList, index):
        """As[index]: an integer, or an integer scalar (a 0-d tile) computed at run time."""
        if isinstance(index, Value):
            if index.is_array or index.shape != () or not index.dtype.is_integral:
                self.fail(TileTypeError, f"Index must be an integer scalar or 0D Tile, got {coerce.describe(index)}")
            return self.emit("list_item", [*items, index])
        if not isinstance(index, (int, np.integer)) or isinstance(index, (bool, np.bool_)):
            self.fail(TileTypeError, f"Index must be an integer scalar or 0D Tile, got {coerce.describe(index)}")
        if not 0 <= index < len(items):
            self.fail(TileValueError, f"List index {index} is out of range for a list of {len(items)} arrays "
                                      f"(list indexes are not wrapped: 0 <= index < {len(items)})")
        return items[index]

    def expr_Slice(self, node):
        parts = [self.expr(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        if any(isinstance(p, Value) for p in parts):
            self.fail(TileTypeError, "Slices in tile code must have constant bounds")
        return slice(*parts)

    def tile_subscript(self, v: Value, index: tuple):
        """t[None], t[:, None], t[..., None]: insert size-1 axes; anything else is refused."""
        axes_named = sum(1 for i in index if i is not None and i is not Ellipsis)
        if (index.count(Ellipsis) > 1 or not all(i is None or i is Ellipsis or i == slice(None) for i in index)
                or not (Ellipsis in index or None in index) and axes_named < v.type.ndim):  # `t[:]` of a 2-D tile
            self.fail(TileTypeError, "Directly indexing a tile is not supported; use extract() or item() instead "
                                     "(a new axis takes None and one `:` per axis, or `...`)")
        if Ellipsis in index:
            k = index.index(Ellipsis)
            fill = v.type.ndim - axes_named
            index = index[:k] + (slice(None),) * fill + index[k + 1:]
        shape, it = [], iter(v.shape)
        for i in index:
            shape.append(1 if i is None else next(it, None))
            if shape[-1] is None:
                self.fail(TileTypeError, f"Too many indices for a tile of rank {v.type.ndim}")
        shape.extend(it)
        return self.emit("reshape", [v], {"shape": tuple(shape)}) if tuple(shape) != v.shape else v

    def expr_BinOp(self, node):
        return self.binary(type(node.op), self.expr(node.left), self.expr(node.right))

    def binary(self, op_type, left, right):
        if not isinstance(left, Value) and not isinstance(right, Value):
            return self.constant_expression(_PY_BINOPS[op_type], left, right)
        return lower_binary(self, _BINOPS[op_type], left, right)

    def constant_expression(self, fn, *args):
        """Python's operator on compile-time values; its failure is the user's (a TypeError, like
        ordering enum members, is a TileTypeError)."""
        try:
            return fn(*args)
        except Exception as e:
            self.fail(TileTypeError if isinstance(e, TypeError) else TileValueError,
                      f"Constant expression failed: {type(e).__name__}: {e}")

    def expr_UnaryOp(self, node):
        x = self.expr(node.operand)
        if not isinstance(x, Value):
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                    ast.Invert: operator.invert}[type(node.op)](x)
        if isinstance(node.op, ast.Not):
            c = self.condition(x)
            return self.emit("bitwise_xor", [c, coerce.constant(self, True, bool_)])
        if isinstance(node.op, ast.UAdd):
            return positive(self, x)
        return lower_unary(self, "neg" if isinstance(node.op, ast.USub) else "bitwise_not", x)

    def expr_BoolOp(self, node):
        result = self.expr(node.values[0])
        for operand in node.values[1:]:
            is_and = isinstance(node.op, ast.And)
            if not isinstance(result, Value):
                if bool(result) != is_and:  # short circuit on a constant
                    return result
                result = self.expr(operand)
                continue
            rhs = self.expr(operand)
            if not isinstance(rhs, Value):
                if bool(rhs) == is_and:
                    continue
                return rhs
            a, b = self.condition(result), self.condition(rhs)
            result = self.emit("bitwise_and" if is_and else "bitwise_or", [a, b])
        return result

    def expr_Compare(self, node):
        left = self.expr(node.left)
        result = True
        for op, comp in zip(node.ops, node.comparators):
            right = self.expr(comp)
            if not isinstance(left, Value) and not isinstance(right, Value):
                value = self.constant_expression(_PY_CMPOPS[type(op)], left, right)
            elif type(op) not in _CMPOPS:
                self.fail(TileSyntaxError, f"Operator {type(op).__name__} is not supported on tiles")
            else:
                value = lower_binary(self, _CMPOPS[type(op)], left, right)
            result = value if result is True else self.binary(ast.BitAnd, result, value)
            left = right
        return result

    def expr_IfExp(self, node):
        cond = self.expr(node.test)
        if not isinstance(cond, Value):
            return self.expr(node.body if cond else node.orelse)
        cond = self.condition(cond)
        body, orelse = self.expr(node.body), self.expr(node.orelse)
        if isinstance(body, Value) and isinstance(orelse, Value) and body.type != orelse.type:
            # a runtime choice, as an if statement: both sides must have one type
            self.fail(TileTypeError, f"The two sides of a conditional expression on a runtime condition have different "
                                     f"types: {body.type} and {orelse.type}")
        return where(self, cond, body, orelse)

    def expr_Lambda(self, node):
        return self.local_function(node)

    def local_function(self, node) -> LocalFunction:
        return LocalFunction(node, self.source, self.scope, tuple(self.expr(d) for d in node.args.defaults))

    def expr_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(v.value)
            else:
                value = self.expr(v.value)
                if isinstance(value, Value):
                    self.fail(TileSyntaxError, "f-strings with runtime values are not supported; use print(a, b)")
                parts.append(format(value, self.expr(v.format_spec) if v.format_spec else ""))
        return "".join(parts)

    def expr_Call(self, node):
        func = self.expr(node.func)
        if getattr(func, "__tile_op__", None) in ("static_eval", "static_iter"):
            return self.static_eval(node, func.__tile_op__)
        if getattr(func, "__tile_op__", None) == "static_exception":
            self.fail(TileSyntaxError, "static_exception() can only wrap the exception of a raise statement")
        args = self._elements(node.args)
        kwargs = {}
        for kw in node.keywords:
            value = self.expr(kw.value)
            if kw.arg is None:
                if not isinstance(value, dict):
                    self.fail(TileTypeError, "** needs a dict")
                kwargs.update(value)
            else:
                kwargs[kw.arg] = value
        return self.call(func, args, kwargs, node)

    def static_eval(self, node, what: str):
        """static_eval(expr) / static_iter(expr): `expr` run as Python, now, on the constants and
        the tiles and arrays (standing for themselves) it names."""
        # cuTile's static_iter(iterable) may name its one argument; static_eval(expr, /) may not
        named = [k.value for k in node.keywords if what == "static_iter" and k.arg == "iterable"]
        expressions = node.args + named
        if len(expressions) != 1 or len(named) != len(node.keywords):
            self.fail(TileSyntaxError, f"{what}() takes exactly one expression")
        namespace = {**self.source.globals, **self.source.closure,
                     **{k: v for k, v in self.scope.items() if k.isidentifier() and not isinstance(v, _Undefined)}}
        code = compile(ast.fix_missing_locations(ast.Expression(expressions[0])), self.source.filename, "eval")
        try:
            value = eval(code, namespace)  # the user's own expression, run as Python would
            if what == "static_iter":
                value = tuple(value)
        except RuntimeError as e:
            if "Device functions" not in str(e):
                self.fail(TileStaticEvalError, f"{what}() failed: {type(e).__name__}: {e}")
            self.fail(TileSyntaxError, f"Tile functions cannot be called inside {what}()")
        except TileError:
            raise
        except Exception as e:
            self.fail(TileStaticEvalError, f"{what}() failed: {type(e).__name__}: {e}")
        if what == "static_iter" and len(value) > MAX_STATIC_ITERATIONS:
            self.fail(TileStaticEvalError, f"static_iter() iterable has more than {MAX_STATIC_ITERATIONS} items")
        return value

    def call(self, func, args, kwargs, node):
        if isinstance(func, LocalFunction) or not hasattr(func, "__tile_op__"):
            if getattr(func, "__tile_callable__", True) is False:
                self.fail(TileSyntaxError, f"{func.__name__} is a host function (ct.function(tile=False))")
            func = getattr(func, "__tile_function__", func)  # @ct.function: the function itself
        if func is builtins.print:
            func = stubs.print
        if getattr(func, "__tile_op__", None) is not None:
            if func is stubs.cdiv and all(coerce.is_const(a) for a in args):
                return func(*args)
            saved = self.arg_nodes, self.calling
            self.arg_nodes, self.calling = _argument_nodes(func, node), func.__name__
            try:
                return lower_call(self, func, args, kwargs)
            finally:
                self.arg_nodes, self.calling = saved
        if isinstance(func, BoundMethod):
            return lower_method(self, func.value, func.name, args, kwargs)
        if func in _OPERATOR_FUNCTIONS:
            if len(args) != 2 or kwargs:
                self.fail(TileTypeError, f"operator.{func.__name__}() takes two arguments")
            return self.binary(_OPERATOR_FUNCTIONS[func], *args)
        if type(func).__module__ == "torch" and type(func).__name__ == "dtype":
            func = to_dtype(func)  # torch.float32(x) reads as ct.float32(x)
        if isinstance(func, DType):
            if not args and not kwargs:  # like float(): the dtype's zero
                return coerce.constant(self, 0, func)
            if len(args) != 1 or kwargs:
                self.fail(TileTypeError, f"{func}() takes at most one argument")
            if isinstance(args[0], Value):
                return coerce.cast(self, args[0], func)
            value = args[0]
            if isinstance(value, str):  # ct.float32("-inf"), as float("-inf")
                try:
                    value = float(value)
                except ValueError:
                    pass
            if not coerce.is_const(value):
                self.fail(TileTypeError, f"Invalid argument for {func}({args[0]!r})")
            return coerce.constant(self, value, func)
        if isinstance(func, type) and issubclass(func, enum.Enum):
            if any(isinstance(a, Value) for a in list(args) + list(kwargs.values())):
                self.fail(TileTypeError, f"{func.__name__}(...) needs a compile-time value")
            try:
                return func(*args, **kwargs)
            except (ValueError, TypeError) as e:
                self.fail(TileValueError, str(e))
        if getattr(func, "__self__", None).__class__ in (dict, tuple, str) and not isinstance(func, types.FunctionType) \
                and func.__name__ in _CONTAINER_METHODS:
            return func(*args, **kwargs)  # dict.get, tuple.index, ...: no computation on tiles
        if getattr(func, "__tile_kernel__", False):
            self.fail(TileTypeError, "A tile kernel cannot be called from tile code; call a plain helper function")
        if func in (builtins.min, builtins.max, builtins.abs) and any(isinstance(a, Value) for a in args):
            return LOWERINGS[{builtins.min: stubs.minimum, builtins.max: stubs.maximum, builtins.abs: stubs.abs}[func]](
                self, **bind_call(self, {builtins.min: _minimum_stub, builtins.max: _maximum_stub,
                                         builtins.abs: _abs_stub}[func], args, kwargs))
        if func is builtins.divmod and any(isinstance(a, Value) for a in args):
            if any(isinstance(a, float) or isinstance(a, Value) and a.dtype.is_float for a in args):
                self.fail(TileTypeError, "divmod() is not implemented for floating point values")
            return (lower_binary(self, "floordiv", *args), lower_binary(self, "mod", *args))
        if func in (builtins.int, builtins.float, builtins.bool) and args and isinstance(args[0], Value):
            if args[0].owner is not None and args[0].owner.name == "constant" and not args[0].shape:
                return func(args[0].owner.attrs["value"])  # a typed constant becomes a loose one
            self.fail(TileTypeError, f"{func.__name__}() of a runtime value is not supported; use .astype()")
        if isinstance(func, LocalFunction):
            return self.inline_local(func, args, kwargs, node)
        if isinstance(func, types.FunctionType):
            return self.inline(func, args, kwargs, node)
        if (func in _CONST_CALLABLES or getattr(func, "__module__", None) in ("math", "numpy")) and \
                not any(isinstance(a, Value) for a in list(args) + list(kwargs.values())):
            try:
                return func(*args, **kwargs)
            except Exception as e:  # a wrong kind of argument (np.float32("text")) is a type error
                kind = TileTypeError if isinstance(e, TypeError) or isinstance(func, type) else TileValueError
                self.fail(kind, f"{getattr(func, '__name__', func)}() failed at compile time: {e}")
        self.fail(TileSyntaxError, f"Cannot call {_spelled(func)} from tile code{_suggestion(func)}")

    # ---- helpers ------------------------------------------------------------------------------

    def _enter(self, node):
        if len(self.call_stack) >= MAX_INLINE_DEPTH:
            # one frame, the call that went too deep: the ones above it repeat the same few lines
            raise TileRecursionError(f"Helper functions are nested more than {MAX_INLINE_DEPTH} deep: does "
                                     f"`{self.source.name}` call itself? Tile code cannot recurse", self.loc(node))
        self.call_stack.append(self.loc(node))

    def inline(self, pyfunc, args, kwargs, node):
        try:
            bound = _bind(pyfunc, args, kwargs)
        except TypeError as e:
            self.fail(TileTypeError, f"{pyfunc.__name__}(): {e}")
        self._enter(node)
        return self._run_helper(source_of(pyfunc), bound, None)

    def inline_local(self, fn: LocalFunction, args, kwargs, node):
        params = fn.node.args
        names = [a.arg for a in params.posonlyargs + params.args]
        bound = dict(zip(names[len(names) - len(fn.defaults):], fn.defaults))
        called = getattr(fn.node, "name", "lambda")
        if len(args) > len(names):
            self.fail(TileTypeError, f"{called}() takes at most {len(names)} arguments, {len(args)} were given")
        bound.update(zip(names, args))
        bound.update(kwargs)
        missing = [n for n in names if n not in bound]
        if missing:
            self.fail(TileTypeError, f"{called}() is missing argument(s): {', '.join(missing)}")
        self._enter(node)
        return self._run_helper(fn.source, bound, fn)

    def _run_helper(self, source, bound: dict, local: LocalFunction | None):
        saved = (self.source, self.scope, self.node, self.runtime_depth, self.loop_depth)
        self.source = FuncSource(local.node if local else source.node, source.filename, source.line_offset,
                                 source.col_offset, source.lines, source.name, source.globals, source.closure)
        self.scope = {k: v for k, v in local.scope.items() if k not in _EXIT_FLAGS} if local else {}
        self.scope.update(bound)
        self.scope["$return"] = False
        self.runtime_depth = self.loop_depth = 0
        try:
            if isinstance(self.source.node, ast.Lambda):
                return self.expr(self.source.node.body)
            self.walk_body(self.source.node.body)
            return self.scope.get("$retval")  # returns taken under runtime conditions, merged
        except _Return as r:
            return r.value
        finally:
            self.source, self.scope, self.node, self.runtime_depth, self.loop_depth = saved
            self.call_stack.pop()


def _spelled(func) -> str:
    """How the user most likely wrote `func`: `math.sqrt`, `np.sqrt`, `len`."""
    name = getattr(func, "__name__", None) or type(func).__name__
    module = getattr(func, "__module__", None) or ""
    prefix = {"math": "math.", "numpy": "np.", "builtins": ""}.get(module.split(".")[0], f"{module}." if module else "")
    return prefix + name


def _suggestion(func) -> str:
    """What to write instead: the tile function of the same name, or the tile way of a builtin."""
    name = getattr(func, "__name__", "")
    if name in stubs.FUNCTIONS:
        return f"; use ct.{name}"
    return {"len": "; use t.shape[0] (tile shapes are known when the kernel compiles)",
            "round": "; use ct.floor(x + 0.5) or .astype() to an integer dtype",
            "sum": "; use ct.sum", "pow": "; use x ** y"}.get(name, "")


class BoundMethod:
    """`t.reshape` and friends before they are called."""

    def __init__(self, value: Value, name: str):
        self.value, self.name = value, name


_TILE_METHODS = {"reshape", "astype", "item", "permute", "transpose", "extract", "insert", "expand_dims",
                 "broadcast_to", "sum", "max", "min", "prod", "argmax", "argmin", "bitcast"}


def _minimum_stub(x, y, /):
    pass


def _maximum_stub(x, y, /):
    pass


def _abs_stub(x, /):
    pass


_OPERATOR_FUNCTIONS = {operator.add: ast.Add, operator.sub: ast.Sub, operator.mul: ast.Mult,
                       operator.truediv: ast.Div, operator.floordiv: ast.FloorDiv, operator.mod: ast.Mod,
                       operator.pow: ast.Pow, operator.and_: ast.BitAnd, operator.or_: ast.BitOr,
                       operator.xor: ast.BitXor, operator.lshift: ast.LShift, operator.rshift: ast.RShift}
# Reading memory is an effect here too: a combine function runs in an unspecified order.
_MEMORY_OPS = ("load", "gather", "load_adv")


_MISSING = object()
_CONTAINER_METHODS = ("get", "keys", "values", "items", "index", "count")
# Scope entries (not valid Python names) for exits taken under runtime control flow; `$retval`
# holds what a helper returns.
_EXIT_FLAGS = ("$break", "$continue", "$return", "$retval")


def _carried_args(carried, shapes, init) -> list:
    """A loop body's arguments for the carried values' leaves, named after their variables."""
    names = [name.lstrip("$") for name in carried for _ in _tree_leaves(shapes[name])]
    return [Value(v.type, name) for name, v in zip(names, init)]


def _tree_leaves(x) -> list:
    """The leaves of a value that may be a (nested) tuple."""
    return [leaf for item in x for leaf in _tree_leaves(item)] if isinstance(x, tuple) else [x]


def _tree_shape(x):
    """How a value nests tuples (None for a leaf)."""
    return tuple(_tree_shape(item) for item in x) if isinstance(x, tuple) else None


def _tree_build(shape, leaves):
    """A value nested as `shape`, its leaves taken from the iterator `leaves`."""
    return tuple(_tree_build(s, leaves) for s in shape) if isinstance(shape, tuple) else next(leaves)


def _exits(stmts, kind) -> bool:
    """Whether `stmts` hold a `kind` (ast.Break or ast.Return) that leaves the loop they form the body
    of: breaks in nested loops and anything in nested functions do not."""
    for stmt in stmts:
        if isinstance(stmt, kind):
            return True
        if isinstance(stmt, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(stmt, (ast.For, ast.While)) and kind is ast.Break:
            continue
        children = [c for field in ("body", "orelse", "handlers", "finalbody") for c in getattr(stmt, field, [])]
        if isinstance(stmt, (ast.For, ast.While)):
            children = stmt.body + stmt.orelse
        if _exits(children, kind):
            return True
    return False


def _same_const(a, b) -> bool:
    return type(a) is type(b) and (a is b or a == b)


def _same_type(a, b) -> bool:
    """Whether a and b (values a name holds) are tuples of the same structure whose leaves are
    tiles of one type or constants of one Python type; arrays are not carried this way."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and all(map(_same_type, a, b))
    if isinstance(a, Value) and isinstance(b, Value):
        return not a.is_array and a.type == b.type
    return coerce.is_const(a) and type(a) is type(b)


def _bind(pyfunc, args, kwargs) -> dict:
    import inspect
    # the parameters of the code that runs: a functools.wraps wrapper's own, not the wrapped function's
    bound = inspect.signature(pyfunc, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _argument_nodes(stub, call: ast.Call) -> dict:
    """Map the stub's parameter names to the call's argument expressions."""
    import inspect
    try:
        bound = inspect.signature(stub).bind_partial(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})
    except TypeError:
        return {}
    return {name: node for name, node in bound.arguments.items() if isinstance(node, ast.AST)}


def _assigned_names(stmts) -> set[str]:
    names = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.FunctionDef):
                names.add(node.name)
    return names


def _local_names(fn) -> set[str]:
    """The names a function's body binds (Python's locals), not those of functions, lambdas and
    comprehensions inside it."""
    names, todo = set(), list(fn.body) if isinstance(fn.body, list) else []
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return names


def _as_load(target):
    node = ast.Name(id=target.id, ctx=ast.Load()) if isinstance(target, ast.Name) else target
    return ast.copy_location(node, target)


def _syntax_name(node) -> str:
    return {"While": "while loop", "Try": "try statement", "Raise": "raise", "Global": "global",
            "Nonlocal": "nonlocal", "Import": "import", "ImportFrom": "import", "With": "with statement",
            "ClassDef": "class definition", "Delete": "del", "ListComp": "list comprehension",
            "GeneratorExp": "generator expression", "DictComp": "dict comprehension", "Yield": "yield",
            "Await": "await", "NamedExpr": "assignment expression (:=)"}.get(type(node).__name__, type(node).__name__)
