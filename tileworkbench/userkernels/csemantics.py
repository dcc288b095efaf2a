"""Tile-language helpers for the C operations whose semantics differ from the tile language's.

The code the translator generates calls these; the frontend inlines them, so every operation
still goes through the op table. The tile language's `//` and `%` follow Python (round toward
-inf, the remainder has the divisor's sign); C truncates toward zero and the remainder has the
dividend's sign:

    C:  -7 / 2 == -3   -7 % 2 == -1        Python:  -7 // 2 == -4   -7 % 2 == 1
"""
from .. import tile as ct


def c_div(a, b):
    """Integer a / b, truncated toward zero."""
    q = a // b
    return ct.where((q * b != a) & ((a < 0) != (b < 0)), q + 1, q)


def c_rem(a, b):
    """Integer a % b with the sign of a (a == (a / b) * b + a % b)."""
    return a - c_div(a, b) * b


def c_trunc(x):
    """Round a float toward zero."""
    return ct.where(x < 0, ct.ceil(x), ct.floor(x))
