"""More random programs for the differential fuzzer (differential.py): the op families that
programs.py does not draw, each spelled with keyword or positional arguments at random.

- integers: //, %, cdiv, << and >> of every width and sign (expected from tests/integer_model.py);
- narrow floats: fp8 operands computed in float32 and rounded back; tfloat32 rounding;
- mma: float16, bfloat16, float8 and tfloat32 operands into float32, int8 into int32 (no NumPy
  expectation: compared between implementations only);
- atomics: add, max, min, and, or, xor with indices that collide across blocks (the final array
  does not depend on the order: integers, and floats holding small integers);
- 2-D gathers and scatters: tuples of broadcast indices past every edge, masks, padding values;
- multiply-adds: fused into one rounding where cuTile's rule fuses them, in every float dtype and
  rounding mode, and rounded twice where it does not.

Each returns a programs.Program whose kernel is `fuzz(x, y, out)`.
"""
from __future__ import annotations

from fractions import Fraction

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


# (operand, accumulator); matmul accumulates in the first accumulator cuTile lists for the operand
_MMA = [("float16", "float32"), ("float16", "float16"), ("bfloat16", "float32"), ("float8_e4m3fn", "float32"),
        ("float8_e4m3fn", "float16"), ("float8_e5m2", "float32"), ("tfloat32", "float32"), ("float32", "float32"),
        ("float64", "float64"), ("int8", "int32"), ("uint8", "int32")]
_MATMUL_ACCUMULATOR = {"float16": "float16", "float8_e4m3fn": "float16", "float8_e5m2": "float16"}


def accumulation_bits(operand: str, accumulator: str) -> int:
    """The significant bits an mma's sums keep: the accumulator's, except that Hopper's tensor cores
    sum float8 products in a 14-bit adder (tileworkbench's model restarts it every 128 products; cuTile's
    compiler may take a more precise path, as for small tiles it does)."""
    if operand.startswith("float8") and accumulator == "float32":
        return 14
    return {"float16": 11, "float32": 24, "float64": 53}[accumulator]


def mma_tolerance(x: np.ndarray, y: np.ndarray, acc: np.ndarray, bits: int, result: str | None = None) -> np.ndarray:
    """How far apart two correct results of `acc + x @ y` may lie, element by element. Each sums K
    products and the accumulator with `bits`-bit sums in its own order and grouping, so each lies
    within (K + 1) units of `bits` of sum_k |x_ik||y_kj| + |acc_ij| from the exact result (Higham's
    bound for a dot product; a unit is 2**(1 - bits), which covers truncating adders too). Two results
    lie twice that apart, plus one step of `result`'s dtype where the sum is then rounded to it."""
    x64, y64, acc64 = (a.astype(np.float64) for a in (x, y, acc))
    magnitude = np.abs(x64) @ np.abs(y64) + np.abs(acc64)
    apart = 2 * (x.shape[-1] + 1) * 2.0 ** (1 - bits) * magnitude
    if result is None:
        return apart
    # tfloat32: float32's range, 10 mantissa bits
    eps, tiny = (2.0 ** -10, 0.0) if result == "tfloat32" else \
        (float(ml_dtypes.finfo(result).eps), float(ml_dtypes.finfo(result).smallest_subnormal))
    return apart + eps * (np.abs(x64 @ y64 + acc64) + apart) + tiny


def _values(rng, dtype: np.dtype, shape):
    if dtype.kind in "iu":
        low = -20 if dtype.kind == "i" else 0
        return rng.integers(low, 20, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def mma_program(rng) -> Program:
    """mma and matmul of every operand dtype cuTile takes. Integers are exact; floats are compared
    within `mma_tolerance`, except that tileworkbench's interpreter and GPU agree bit for bit where
    both compute the tensor cores' model (16-bit, float8 and tfloat32 operands into float32)."""
    operand, acc = _MMA[int(rng.integers(len(_MMA)))]
    m, n, k = (int(rng.choice(c)) for c in ([16, 32, 64], [16, 32, 64], [16, 32, 64, 128]))
    storage = "float32" if operand == "tfloat32" else operand
    np_dtype = np.dtype(getattr(ml_dtypes, storage, None) or storage)
    x, y = _values(rng, np_dtype, (m, k)), _values(rng, np_dtype, (k, n))
    if operand == "uint8" and rng.integers(2):  # cuTile mixes int8 and uint8 operands
        y = rng.integers(-20, 20, (k, n)).astype(np.int8)
    cast = ".astype(ct.tfloat32)" if operand == "tfloat32" else ""
    load_x = _spell(rng, "load", ["x", "(0, 0)", f"({m}, {k})"], {"index": "(0, 0)", "shape": f"({m}, {k})"})
    load_y = _spell(rng, "load", ["y", "(0, 0)", f"({k}, {n})"], {"index": "(0, 0)", "shape": f"({k}, {n})"})
    integer = np_dtype.kind in "iu"
    if not integer and acc == "float32" and operand not in ("float32", "float64") and rng.integers(2):
        # matmul: accumulated in cuTile's first accumulator for the operand, the result in the operand's dtype
        acc, rounding = _MATMUL_ACCUMULATOR.get(operand, "float32"), operand
        result = "ct.matmul(a, b).astype(ct.float32)" if operand == "tfloat32" else "a @ b"
        out, start = np.zeros((m, n), np.float32 if operand == "tfloat32" else np_dtype), np.zeros((m, n))
    else:
        start = np.zeros((m, n), acc) if rng.integers(2) else np.full((m, n), 1.5, acc)
        fill = f"ct.zeros(({m}, {n}), ct.{acc})" if not start.any() else f"ct.full(({m}, {n}), 1.5, ct.{acc})"
        if rng.integers(2):
            fill = (f"ct.zeros(shape=({m}, {n}), dtype=ct.{acc})" if not start.any()
                    else f"ct.full(shape=({m}, {n}), fill_value=1.5, dtype=ct.{acc})")
        result = f"ct.mma(a, b, {'acc=' if rng.integers(2) else ''}{fill})"
        out, rounding = np.zeros((m, n), acc), None
    lines = [f"a = {load_x}{cast}", f"b = {load_y}{cast}",
             _spell(rng, "store", ["out", "(0, 0)", result], {"index": "(0, 0)", "tile": result})]
    if integer:
        return Program(_kernel(lines), (1,), (x, y, out), None, True, 0.0, [f"mma-{operand}"])
    tolerance = mma_tolerance(x, y, start, accumulation_bits(operand, acc), rounding)
    bitwise = acc == "float32" and operand not in ("float32", "float64")
    return Program(_kernel(lines), (1,), (x, y, out), None, bitwise, 0.0, [f"mma-{operand}-{acc}"],
                   tolerance=tolerance)


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


def gather_scatter_program(rng) -> Program:
    """A 2-D gather with a tuple of broadcast indices (a column of rows, a row of columns) that run
    past every edge, masked at random and padded, then a masked 2-D scatter of it (each block writes
    its own rows, a lane never shares an element), in a dtype of every width."""
    dtype = np.dtype(rng.choice(["float16", "float32", "float64", "int8", "int16", "uint16", "int32", "int64"]))
    dtype = np.dtype(ml_dtypes.bfloat16) if rng.integers(6) == 0 else dtype
    n, m, blocks = int(rng.choice([2, 4, 8])), int(rng.choice([4, 8, 16])), int(rng.integers(1, 4))
    shape = (int(rng.integers(1, blocks * n + 4)), int(rng.integers(1, m + 6)))
    x = (rng.standard_normal(shape) * 8).astype(dtype) if dtype.kind not in "iu" else \
        rng.integers(-50, 50, shape).astype(dtype)
    out_shape = (blocks * n - int(rng.integers(0, n)), int(rng.integers(1, m + 3)))
    step, row_offset, col_offset = int(rng.choice([1, 2, -1])), int(rng.integers(-3, 3)), int(rng.integers(-3, 4))
    out_step, out_offset = int(rng.choice([1, -1])), int(rng.integers(-2, m))
    pad = int(rng.integers(0 if dtype.kind == "u" else -3, 4))
    index = "ct.int64" if rng.integers(2) else "ct.int32"
    rows, cols = f"ct.arange({n}, dtype={index})[:, None]", f"ct.arange({m}, dtype={index})[None, :]"
    lines = [f"r = {rows}", f"c = {cols}", "i = r * %d + ct.bid(0) * %d + %d" % (step, n, row_offset),
             f"j = c + {col_offset}"]
    gather_mask, scatter_mask = bool(rng.integers(2)), bool(rng.integers(2))
    masked = ", mask=(r + c) % 3 != 1" if gather_mask else ""
    lines.append(f"t = ct.gather(x, (i, j){masked}, padding_value={pad})")
    masked = ", mask=(r * c) % 4 != 2" if scatter_mask else ""
    reverse = bool(rng.integers(2))  # the blocks write their rows in reverse order
    block = "(ct.num_blocks(axis=0) - 1 - ct.bid(axis=0))" if reverse else "ct.bid(0)"
    lines.append(f"ct.scatter(out, (r + {block} * {n}, c * {out_step} + {out_offset}), t{masked})")
    expected = np.zeros(out_shape, dtype)
    for b in range(blocks):
        for r in range(n):
            for c in range(m):
                i, j = r * step + b * n + row_offset, c + col_offset
                take = (not gather_mask or (r + c) % 3 != 1) and 0 <= i < shape[0] and 0 <= j < shape[1]
                value = x[i, j] if take else dtype.type(pad)
                o, p = r + (blocks - 1 - b if reverse else b) * n, c * out_step + out_offset
                if (not scatter_mask or (r * c) % 4 != 2) and 0 <= o < out_shape[0] and 0 <= p < out_shape[1]:
                    expected[o, p] = value
    return Program(_kernel(lines), (blocks,), (x, x.copy(), np.zeros(out_shape, dtype)), expected, True, 0.0,
                   ["gather-scatter-2d"])


_MUL_ADD_DTYPES = ("float16", "bfloat16", "float32", "float64")
_DIRECTED = ("RZ", "RM", "RP")


def _neighbour(v, up: bool):
    """The next value of v's float dtype toward +inf (up) or -inf, by its bits."""
    bits = np.array(v).view(f"u{v.dtype.itemsize}").astype(np.int64)
    sign = 1 << (v.dtype.itemsize * 8 - 1)
    if v == 0:
        return np.array(1 if up else sign | 1, f"u{v.dtype.itemsize}").view(v.dtype)[()]
    away = (v > 0) == up  # away from zero: the magnitude's bits grow
    return np.array(bits + (1 if away else -1), f"u{v.dtype.itemsize}").view(v.dtype)[()]


def rounded(exact: Fraction, dtype: np.dtype, mode: str = "RN"):
    """An exact rational rounded to `dtype` (finite, in range): to nearest with ties to even (RN),
    toward zero (RZ), -inf (RM) or +inf (RP), chosen by exact comparison among the neighbours of a
    first guess (which a conversion by way of float64 may have rounded twice)."""
    if exact == 0:
        return dtype.type(-0.0 if mode == "RM" else 0.0)
    guess = np.array(float(exact)).astype(dtype)[()]
    near = sorted({guess, _neighbour(guess, True), _neighbour(guess, False)}, key=float)
    below = max((c for c in near if Fraction(float(c)) <= exact), key=float)
    above = min((c for c in near if Fraction(float(c)) >= exact), key=float)
    if below == above or mode == "RM":
        return below
    if mode == "RP":
        return above
    if mode == "RZ":
        return below if exact > 0 else above
    low, high = exact - Fraction(float(below)), Fraction(float(above)) - exact
    if low != high:
        return below if low < high else above
    return below if int(np.array(below).view(f"u{dtype.itemsize}")) % 2 == 0 else above


def multiply_add_program(rng) -> Program:
    """A float multiply feeding an add or a subtract, in every float dtype and rounding mode: fused
    into one rounding where the product has that one use and both round alike (tileworkbench/ir/fuse.py,
    cuTile's rule), rounded twice where the product is used again or the roundings differ. The addend
    is close to minus the product, so that one rounding and two differ in most lanes."""
    dtype = np.dtype(getattr(ml_dtypes, name) if (name := _MUL_ADD_DTYPES[int(rng.integers(4))]) == "bfloat16"
                     else name)
    n, blocks = int(rng.choice([4, 8, 16])), int(rng.integers(1, 4))
    size = blocks * n - int(rng.integers(0, n))
    x, y = (rng.standard_normal(size) * 4).astype(dtype), (rng.standard_normal(size) * 4).astype(dtype)
    near = x.astype(np.float64) * y.astype(np.float64) * (1 + rng.standard_normal(size) * 2.0 ** -rng.integers(4, 40, size))
    z = np.where(rng.random(size) < 0.5, -near, rng.standard_normal(size) * 4).astype(dtype)
    form = ["p + c", "c + p", "p - c", "c - p", "(p + c) + p", "p + c * b + p"][int(rng.integers(6))]
    modes = ("RN", "RN")
    if form in ("p + c", "c + p", "p - c", "c - p") and rng.integers(3) == 0:
        modes = (str(rng.choice(_DIRECTED)),) * 2 if rng.integers(2) else (str(rng.choice(_DIRECTED)), "RN")
    mul_mode, add_mode = modes

    def spelled(op: str, u: str, v: str, mode: str) -> str:
        if mode == "RN":
            return f"{u} {op} {v}"
        fn = {"*": "mul", "+": "add", "-": "sub"}[op]
        return f"ct.{fn}({u}, {v}, rounding_mode=ct.RoundingMode.{mode})"
    lines = [f"a = {_load(rng, 'x', n)}", f"b = {_load(rng, 'y', n)}", f"c = {_load(rng, 'out', n)}",
             f"p = {spelled('*', 'a', 'b', mul_mode)}"]
    if form in ("p + c", "c + p", "p - c", "c - p"):
        lines.append(f"r = {spelled(form[2], *form.split(f' {form[2]} '), add_mode)}")
    elif form == "(p + c) + p":  # the product is used twice: nothing fuses
        lines.append("r = (p + c) + p")
    else:  # the left operand is a product used again: cuTile's rule fuses neither add
        lines.append("r = p + c * b + p")
    lines.append(_store(rng, "r"))
    fused = form in ("p + c", "c + p", "p - c", "c - p") and mul_mode == add_mode
    expected = np.empty(size, dtype)
    for k in range(size):
        a, b, c = (Fraction(float(v[k])) for v in (x, y, z))
        if fused:
            exact = {"p + c": a * b + c, "c + p": c + a * b, "p - c": a * b - c, "c - p": c - a * b}[form]
            expected[k] = rounded(exact, dtype, add_mode)
            continue
        p = Fraction(float(rounded(a * b, dtype, mul_mode)))
        if form in ("p + c", "c + p", "p - c", "c - p"):
            exact = {"p + c": p + c, "c + p": c + p, "p - c": p - c, "c - p": c - p}[form]
            expected[k] = rounded(exact, dtype, add_mode)
        elif form == "(p + c) + p":
            expected[k] = rounded(Fraction(float(rounded(p + c, dtype))) + p, dtype)
        else:
            s = p + Fraction(float(rounded(c * b, dtype)))
            expected[k] = rounded(Fraction(float(rounded(s, dtype))) + p, dtype)
    return Program(_kernel(lines), (blocks,), (x, y, z), expected, True, float(ml_dtypes.finfo(dtype).eps),
                   [f"mul-add-{dtype.name}-{form}-{mul_mode}-{add_mode}"])


FAMILIES = (integer_program, narrow_float_program, mma_program, atomic_program, gather_scatter_program,
            multiply_add_program)
