"""Integer arithmetic as cuTile defines it, in plain Python ints: the model the interpreter and the
GPU are checked against, and inputs that cover every sign and the edges of each width."""
import numpy as np

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def wrap(value: int, dtype) -> int:
    """`value` reduced to `dtype`'s range, two's complement."""
    bits = np.dtype(dtype).itemsize * 8
    value &= (1 << bits) - 1
    signed = np.dtype(dtype).kind == "i"
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def floordiv(a, b, dtype):
    return 0 if b == 0 else wrap(a // b, dtype)


def mod(a, b, dtype):
    return 0 if b == 0 else wrap(a % b, dtype)


def cdiv(a, b, dtype):
    return 0 if b == 0 else wrap(-((-a) // b), dtype)


def lshift(a, b, dtype):
    """The amount read as unsigned: from the width on, 0."""
    bits = np.dtype(dtype).itemsize * 8
    return 0 if wrap(b, np.dtype(f"u{bits // 8}")) >= bits else wrap(a << b, dtype)


def rshift(a, b, dtype):
    """Arithmetic for signed, logical for unsigned; from the width on, the sign fill."""
    bits = np.dtype(dtype).itemsize * 8
    return (-1 if a < 0 else 0) if wrap(b, np.dtype(f"u{bits // 8}")) >= bits else a >> b


OPS = {"floordiv": floordiv, "mod": mod, "cdiv": cdiv, "lshift": lshift, "rshift": rshift}


def undefined(a, b, dtype) -> bool:
    """The quotient of the most negative value by -1 overflows: undefined for 32 and 64 bits, as in
    C and cuTile (narrower types compute in int32 and wrap)."""
    info = np.iinfo(dtype)
    return info.min < 0 and info.bits >= 32 and a == info.min and b == -1


def edge_operands(dtype, n, rng):
    """`n` pairs (x, y) of `dtype`: signs mixed, the range's ends, zero divisors and exact quotients,
    the undefined pair left out."""
    info = np.iinfo(dtype)
    edges = [info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3, 7]
    if info.min < 0:
        edges += [-1, -2, -3, -7]
    edges = np.array(edges, dtype)

    def draw():
        return np.concatenate([edges[rng.integers(0, len(edges), n // 2)],
                               rng.integers(info.min, info.max, n - n // 2, dtype=dtype, endpoint=True)])
    x, y = draw(), draw()
    rng.shuffle(y)
    bad = np.array([undefined(int(a), int(b), dtype) for a, b in zip(x, y)])
    y[bad] = 3
    return x, y


def shift_amounts(dtype, n, rng):
    """Amounts below the width mostly, some past it, and (signed) some negative."""
    bits = np.dtype(dtype).itemsize * 8
    low = -3 if np.dtype(dtype).kind == "i" else 0
    return rng.integers(low, 2 * bits, n).astype(dtype)


def expected(op, x, y, dtype):
    return np.array([OPS[op](int(a), int(b), dtype) for a, b in zip(x, y)], dtype)
