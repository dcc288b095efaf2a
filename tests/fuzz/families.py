"""More random programs for the differential fuzzer (differential.py): the op families that
programs.py does not draw, each spelled with keyword or positional arguments at random.

- integers: //, %, cdiv, << and >> of every width and sign (expected from tests/integer_model.py);
- narrow floats: fp8 operands computed in float32 and rounded back; tfloat32 rounding;
- mma: float16, bfloat16, float8 and tfloat32 operands into float32, int8 into int32 (no NumPy
  expectation: compared between implementations only);
- atomics: add, max, min, and, or, xor with indices that collide across blocks (the final array
  does not depend on the order: integers, and floats holding small integers).

Each returns a programs.Program whose kernel is `fuzz(x, y, out)`.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from .. import integer_model
from .programs import INT_DTYPES, Program


def _spell(rng, fn: str, positional: list[str], keywords: dict[str, str], tail: str = "") -> str:
    """`ct.fn(...)` with the arguments after the first positionally or by keyword, at random."""
    by_keyword = bool(rng.integers(2))
    args = [positional[0]]
    for (name, value), plain in zip(keywords.items(), positional[1:]):
        args.append(f"{name}={value}" if by_keyword else plain)
    return f"ct.{fn}({', '.join(args)}{tail})"


def _kernel(lines: list[str]) -> str:
    return "@ct.kernel\ndef fuzz(x, y, out):\n" + "\n".join(f"    {line}" for line in lines) + "\n"


def _load(rng, array, n, padding="ZERO"):
    return _spell(rng, "load", [array, "(ct.bid(0),)", f"({n},)"], {"index": "(ct.bid(0),)", "shape": f"({n},)"},
                  f", padding_mode=ct.PaddingMode.{padding}")


def _store(rng, value):
    return _spell(rng, "store", ["out", "(ct.bid(0),)", value], {"index": "(ct.bid(0),)", "tile": value})


def integer_program(rng) -> Program:
    dtype = np.dtype(INT_DTYPES[int(rng.integers(len(INT_DTYPES)))]).type
    name = list(integer_model.OPS)[int(rng.integers(len(integer_model.OPS)))]
    n, blocks = int(rng.choice([4, 8, 16, 32])), int(rng.integers(1, 4))
    size = blocks * n - int(rng.integers(0, n))  # ragged: the last tile's padded lanes are never stored
    x, y = integer_model.edge_operands(dtype, size, rng)
    if "shift" in name:  # cuTile leaves shifts by the width or more undefined
        y = integer_model.shift_amounts(dtype, size, rng) % (np.dtype(dtype).itemsize * 8)
    else:  # and division by zero, and the minimum by -1 (which overflows) at any width
        y[(y == 0) | ((x == np.iinfo(dtype).min) & (y == np.array(-1).astype(dtype)))] = 1
    spelled = {"floordiv": "a // b", "mod": "a % b", "cdiv": "ct.cdiv(a, b)", "lshift": "a << b", "rshift": "a >> b"}
    if rng.integers(2):
        spelled.update(floordiv="ct.floordiv(a, b)", mod="ct.mod(a, b)", lshift="ct.bitwise_lshift(a, b)",
                       rshift="ct.bitwise_rshift(a, b)")
    lines = [f"a = {_load(rng, 'x', n)}", f"b = {_load(rng, 'y', n)}", _store(rng, spelled[name])]
    expected = integer_model.expected(name, x, y, dtype)
    return Program(_kernel(lines), (blocks,), (x, y, np.zeros(size, dtype)), expected, True, 0.0, [f"int-{name}"])


_FP8 = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}


def narrow_float_program(rng) -> Program:
    n, blocks = int(rng.choice([8, 16, 32])), int(rng.integers(1, 4))
    size = blocks * n - int(rng.integers(0, n))
    if rng.integers(3) == 0:  # tfloat32: float32 values rounded to 10 mantissa bits (to nearest, ties to even)
        x = (rng.standard_normal(size) * 3).astype(np.float32)
        lines = [f"a = {_load(rng, 'x', n)}", _store(rng, "a.astype(ct.tfloat32).astype(ct.float32)")]
        bits = x.view(np.uint32)
        rest, kept = bits & np.uint32(0x1FFF), bits & np.uint32(0xFFFFE000)
        up = (rest > 0x1000) | ((rest == 0x1000) & ((bits & np.uint32(0x2000)) != 0))
        expected = np.where(up, kept + np.uint32(0x2000), kept).astype(np.uint32).view(np.float32)
        return Program(_kernel(lines), (blocks,), (x, x.copy(), np.zeros(size, np.float32)), expected, True, 0.0,
                       ["tf32-round"])
    name = list(_FP8)[int(rng.integers(2))]
    dtype = _FP8[name]
    x, y = (rng.standard_normal(size) * 4).astype(dtype), (rng.standard_normal(size) * 4).astype(dtype)
    c = float(rng.choice([0.5, 1.0, -2.0]))
    lines = [f"a = {_load(rng, 'x', n)}.astype(ct.float32)", f"b = {_load(rng, 'y', n)}.astype(ct.float32)",
             _store(rng, f"(a * b + {c}).astype(ct.{name})")]
    expected = (x.astype(np.float32) * y.astype(np.float32) + np.float32(c)).astype(dtype)
    return Program(_kernel(lines), (blocks,), (x, y, np.zeros(size, dtype)), expected, True, 0.0, [f"{name}-fma"])


_MMA = [("float16", "float32"), ("bfloat16", "float32"), ("float8_e4m3fn", "float32"), ("float8_e5m2", "float32"),
        ("tfloat32", "float32"), ("int8", "int32")]


def mma_program(rng) -> Program:
    operand, acc = _MMA[int(rng.integers(len(_MMA)))]
    m, n, k = (int(rng.choice(c)) for c in ([16, 32, 64], [16, 32, 64], [16, 32, 64, 128]))
    storage = "float32" if operand == "tfloat32" else operand
    np_dtype = np.dtype(getattr(ml_dtypes, storage, None) or storage)
    if operand == "int8":
        x, y = rng.integers(-20, 20, (m, k)).astype(np.int8), rng.integers(-20, 20, (k, n)).astype(np.int8)
    else:
        x, y = rng.standard_normal((m, k)).astype(np_dtype), rng.standard_normal((k, n)).astype(np_dtype)
    cast = ".astype(ct.tfloat32)" if operand == "tfloat32" else ""
    load_x = _spell(rng, "load", ["x", "(0, 0)", f"({m}, {k})"], {"index": "(0, 0)", "shape": f"({m}, {k})"})
    load_y = _spell(rng, "load", ["y", "(0, 0)", f"({k}, {n})"], {"index": "(0, 0)", "shape": f"({k}, {n})"})
    exact, eps = True, 0.0
    if operand != "int8" and rng.integers(2):  # matmul: the result in the operands' dtype
        result = "ct.matmul(a, b).astype(ct.float32)" if operand == "tfloat32" else "a @ b"
        out = np.zeros((m, n), np.float32 if operand == "tfloat32" else np_dtype)
        if operand in ("float16", "float8_e4m3fn", "float8_e5m2"):  # a float16 accumulator: its rounding is
            exact, eps = False, float(ml_dtypes.finfo(np_dtype).eps)  # the hardware's, not modelled bit for bit
    else:
        result = f"ct.mma(a, b, {'acc=' if rng.integers(2) else ''}ct.zeros(({m}, {n}), ct.{acc}))"
        out = np.zeros((m, n), acc)
    lines = [f"a = {load_x}{cast}", f"b = {load_y}{cast}",
             _spell(rng, "store", ["out", "(0, 0)", result], {"index": "(0, 0)", "tile": result})]
    return Program(_kernel(lines), (1,), (x, y, out), None, exact, eps, [f"mma-{operand}"])


_ATOMICS = {"atomic_add": np.add, "atomic_max": np.maximum, "atomic_min": np.minimum, "atomic_and": np.bitwise_and,
            "atomic_or": np.bitwise_or, "atomic_xor": np.bitwise_xor}


def atomic_program(rng) -> Program:
    name = list(_ATOMICS)[int(rng.integers(len(_ATOMICS)))]
    dtype = np.dtype(rng.choice(["int32", "int64", "uint32"] + (["float32", "float64"] if name == "atomic_add" else [])))
    n, blocks, size = int(rng.choice([4, 8, 16])), int(rng.integers(1, 5)), int(rng.integers(3, 20))
    step = int(rng.integers(1, 4))
    values = rng.integers(0, 50, blocks * n).astype(dtype)  # small integers: float sums are exact in any order
    start = rng.integers(0, 50, size).astype(dtype)
    index = f"(ct.arange({n}, dtype=ct.int32) * {step} + ct.bid(0)) % {size}"
    update = _spell(rng, "load", ["x", "(ct.bid(0),)", f"({n},)"], {"index": "(ct.bid(0),)", "shape": f"({n},)"})
    order = ["", ", memory_order=ct.MemoryOrder.RELAXED", ", memory_scope=ct.MemoryScope.DEVICE"][int(rng.integers(3))]
    lines = [f"v = {update}", f"ct.{name}(out, {index}, v{order})"]
    expected = start.copy()
    for b in range(blocks):
        for lane in range(n):
            i = (lane * step + b) % size
            expected[i] = _ATOMICS[name](expected[i], values[b * n + lane])
    return Program(_kernel(lines), (blocks,), (values, values.copy(), start), expected, True, 0.0, [name])


FAMILIES = (integer_program, narrow_float_program, mma_program, atomic_program)
