"""Multiply-adds fused by cuTile's rule, so that a kernel rounds where cuTile's rounds.

cuTile's compiler turns a float `x * y` whose one use is an add or a subtract into one fused
multiply-add (`fma`, rounded once): `x * y + z`, `z + x * y`, `x * y - z` (as fma(x, y, -z)) and
`z - x * y` (as fma(-x, y, z)), when both ops round the same way and flush subnormals alike. It looks
at the add's left operand first: when that is a float multiply used elsewhere too, nothing is fused
(the right operand is not tried). Every other multiply and add rounds on its own, on the interpreter
and on the GPU (the tile kernel's CUDA writes an add a product reaches as an _rn intrinsic, which
NVRTC never fuses).

Negating is exact, so the negated operand leaves the one rounding of the result unchanged.
"""
from __future__ import annotations

from collections import Counter

from .core import Block, Function, Op, Value, walk_block

_ROUNDING_ATTRS = ("rounding", "approx", "flush_to_zero")


def fuse_multiply_adds(fn: Function) -> None:
    """Rewrite `fn` in place: each add or subtract that takes a fusable multiply becomes an fma."""
    uses = Counter(v for op in walk_block(fn.body) for v in op.operands)
    fused: dict[Op, tuple[Op, bool]] = {}  # add/sub -> (its multiply, whether that is the right operand)
    for op in walk_block(fn.body):
        found = _fusable(op, uses)
        if found is not None:
            fused[op] = found
    if fused:
        _rewrite(fn.body, fused, {mul for mul, _ in fused.values()})


def _float_multiply(v: Value) -> Op | None:
    op = v.owner
    return op if op is not None and op.name == "mul" and op.result.dtype.is_float else None


def _fusable(op: Op, uses: Counter) -> tuple[Op, bool] | None:
    if op.name not in ("add", "sub") or not op.result.dtype.is_float:
        return None
    lhs, rhs = op.operands
    mul, on_right = _float_multiply(lhs), False
    if mul is None:
        mul, on_right = _float_multiply(rhs), True
    if mul is None or uses[mul.result] != 1:
        return None
    if any(op.attrs.get(a) != mul.attrs.get(a) for a in _ROUNDING_ATTRS):
        return None
    return mul, on_right


def _rewrite(block: Block, fused: dict, multiplies: set) -> None:
    ops = []
    for op in block.ops:
        for region in op.regions:
            _rewrite(region, fused, multiplies)
        if op in multiplies:
            continue
        if op not in fused:
            ops.append(op)
            continue
        mul, on_right = fused[op]
        x, y = mul.operands
        z = op.operands[0] if on_right else op.operands[1]
        if op.name == "sub":
            if on_right:  # z - x * y = fma(-x, y, z)
                x = _negated(x, op, ops)
            else:  # x * y - z = fma(x, y, -z)
                z = _negated(z, op, ops)
        attrs = {a: op.attrs[a] for a in _ROUNDING_ATTRS if a in op.attrs}
        fma = Op("fma", [x, y, z], attrs, op.results, op.loc)
        op.result.owner = fma
        ops.append(fma)
    block.ops = ops


def _negated(v: Value, at: Op, ops: list) -> Value:
    result = Value(v.type)
    ops.append(Op("neg", [v], {}, [result], at.loc))
    result.owner = ops[-1]
    return result
