"""Arrays in kernel bodies: raw arrays (flat or per-dimension indexes, `size()`, `shape()`,
`strides()`), local arrays (one value per element; a varying index selects among them) and the
fields of structured values (`x.at<k>()`, `T::field_count`). A mixin of the Translator."""
from __future__ import annotations

import ast

from ..errors import TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, TileValueError
from ..ir.types import DType, bool_, int32, int64
from . import syntax as s
from .cdtypes import C_SPELLING, integer_promotion
from .params import StructType
from .parser import MAX_LOCAL_ARRAY
from .pyast import py, py_stmt
from .values import CValue, LocalArray, NeedsInitialValue, RawArray, StructValue, binop, field_key, literal


class ArrayRules:
    """The Translator's rules for arrays and structured values (see the module docstring)."""

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

    def assign_struct(self, target: s.Name, value, node: s.Assign):
        """`out = in;` for structured values: field by field."""
        keys = [k for k in self.outputs if k.startswith(f"{target.id}.at<")]
        if not isinstance(value, StructValue) or len(value.fields) != len(keys):
            raise self.error(TileTypeError, f"'{target.id}' is structured: assign a structured value with "
                             f"{len(keys)} fields, or its fields (x.at<k>() = ...)", node)
        for k, field in enumerate(value.fields):
            key = f"{target.id}.at<{k}>"
            self.outputs[key].value = self.convert(field, self.outputs[key].type, node)

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
