"""The printed form of the IR, meant for people: the user's variable names, one op per line, and
the kernel source line each op came from.

    kernel add(%a: array<float32, 1d>, %b: array<float32, 1d>, %c: array<float32, 1d>) {TILE=16}
      %pid = bid {axis=0} : int32                                            # line 3
      %ta = load %a, %pid {shape=(16,), order=(0,), padding=UNDETERMINED} : tile<float32, 16>  # line 4
"""
from __future__ import annotations

import enum

from .core import Block, Function, Op, Value


class _Names:
    def __init__(self):
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def define(self, v: Value) -> str:
        base = v.name if v.name and v.name.isidentifier() else ""
        name = base
        if not name or name in self.used:
            while True:
                name = f"{base}{self.counter}" if base else str(self.counter)
                self.counter += 1
                if name not in self.used:
                    break
        self.used.add(name)
        self.names[v] = "%" + name
        return "%" + name

    def __getitem__(self, v: Value) -> str:
        return self.names.get(v, "%?")


def _attr(value) -> str:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (list, tuple)) and not isinstance(value, str):
        inner = ", ".join(_attr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return str(value)


def _attrs(op: Op) -> str:
    shown = {k: v for k, v in op.attrs.items() if k not in ("result_types", "text")}
    if not shown:
        return ""
    return " {" + ", ".join(f"{k}={_attr(v)}" for k, v in shown.items()) + "}"


def specialization_label(fn: Function) -> str:
    """`a: float32[1], n: int32, TILE=1024`: the argument profile this specialization was made for."""
    return ", ".join(f"{p.name}={p.value!r}" if p.kind == "constant" else f"{p.name}: {p.type}" for p in fn.params)


def print_function(fn: Function, locations: bool = True) -> str:
    names = _Names()
    params = []
    consts = []
    for p, arg in zip(fn.runtime_params, fn.body.args):
        params.append(f"{names.define(arg)}: {arg.type}")
    for p in fn.params:
        if p.kind == "constant":
            consts.append(f"{p.name}={p.value!r}")
    head = f"kernel {fn.name}({', '.join(params)})"
    if consts:
        head += " {" + ", ".join(consts) + "}"
    lines = [head + " {"]
    _print_block(fn.body, names, lines, "  ", locations)
    lines.append("}")
    return "\n".join(lines)


def _print_block(block: Block, names: _Names, lines: list[str], indent: str, locations: bool):
    for op in block.ops:
        _print_op(op, names, lines, indent, locations)


def _print_op(op: Op, names: _Names, lines: list[str], indent: str, locations: bool):
    operands = ", ".join(names[v] for v in op.operands)
    loc = f"  # line {op.loc.line}" if locations and op.loc else ""
    results = ", ".join(names.define(r) for r in op.results)
    lhs = f"{results} = " if results else ""
    if op.name == "for":
        lo, hi, step, *init = op.operands
        body = op.regions[0]
        iv, *carried = body.args
        header = f"{indent}{lhs}for {names.define(iv)} in range({names[lo]}, {names[hi]}, {names[step]})"
        if carried:
            pairs = ", ".join(f"{names.define(c)} = {names[i]}" for c, i in zip(carried, init))
            header += f" carry({pairs})"
        lines.append(header + " {" + loc)
        _print_block(body, names, lines, indent + "  ", locations)
        lines.append(indent + "}")
    elif op.name == "if":
        types = ", ".join(map(str, op.attrs["result_types"]))
        lines.append(f"{indent}{lhs}if {operands}" + (f" -> ({types})" if types else "") + " {" + loc)
        _print_block(op.regions[0], names, lines, indent + "  ", locations)
        lines.append(indent + "} else {")
        _print_block(op.regions[1], names, lines, indent + "  ", locations)
        lines.append(indent + "}")
    elif op.name == "while":
        pairs = ", ".join(f"{names.define(c)} = {names[i]}" for c, i in zip(op.regions[0].args, op.operands))
        lines.append(f"{indent}{lhs}while carry({pairs})" + " {" + loc)
        _print_block(op.regions[0], names, lines, indent + "  ", locations)
        lines.append(indent + "}")
    elif op.regions:  # reduce, scan: the combine function's arguments, then its body
        args = ", ".join(names.define(a) for a in op.regions[0].args)
        lines.append(f"{indent}{lhs}{op.name} {operands}{_attrs(op)} combine({args})" + " {" + loc)
        _print_block(op.regions[0], names, lines, indent + "  ", locations)
        lines.append(indent + "}")
    else:
        types = ", ".join(str(r.type) for r in op.results)
        text = f"{indent}{lhs}{op.name}{(' ' + operands) if operands else ''}{_attrs(op)}"
        if op.name == "print":
            text += f" {op.attrs['text']!r}"
        if types:
            text += f" : {types}"
        lines.append(f"{text:<72}{loc}" if loc else text)
