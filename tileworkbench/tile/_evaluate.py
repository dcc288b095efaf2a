"""`evaluate`: tile code tried outside a kernel, in one block on the interpreter."""
from __future__ import annotations

import math

import numpy as np

from . import _stubs as ct
from ._kernel import interpret, kernel


def evaluate(fn, *inputs):
    """The tile `fn(*tiles)` returns, computed in one block on the interpreter, as a NumPy array.

    Each input (at most three NumPy arrays, every dimension a power of two) is loaded whole as a
    tile; a scalar result comes back as a 0-d array. A way to try tile functions outside a kernel:

    >>> evaluate(lambda x: ct.cumsum(x), np.arange(4, dtype=np.int32))
    array([0, 1, 3, 6], dtype=int32)
    """
    if len(inputs) > 3:
        raise ValueError(f"evaluate takes at most three input arrays, got {len(inputs)}")
    inputs = [np.asarray(x) for x in inputs]
    shapes = [x.shape for x in inputs]

    def tile_of(x0, x1, x2):
        if len(shapes) == 0:
            r = fn()
        elif len(shapes) == 1:
            r = fn(ct.load(x0, (0,) * len(shapes[0]), shapes[0]))
        elif len(shapes) == 2:
            r = fn(ct.load(x0, (0,) * len(shapes[0]), shapes[0]), ct.load(x1, (0,) * len(shapes[1]), shapes[1]))
        else:
            r = fn(ct.load(x0, (0,) * len(shapes[0]), shapes[0]), ct.load(x1, (0,) * len(shapes[1]), shapes[1]),
                   ct.load(x2, (0,) * len(shapes[2]), shapes[2]))
        return r

    def result_type(x0, x1, x2, out):  # the same tile, printed instead of stored: no dtype to know yet
        print(tile_of(x0, x1, x2))

    def one_block(x0, x1, x2, out):
        ct.store(out, (0,), ct.reshape(tile_of(x0, x1, x2), (-1,)))

    args = (*inputs, *[np.zeros(1, np.int32)] * (3 - len(inputs)))  # unused parameters get placeholders
    (printed,) = [op for op in kernel(result_type).specialize((*args, args[0])).walk() if op.name == "print"]
    if len(printed.operands) != 1:
        raise ValueError("evaluate: fn must return one tile")
    (result,) = printed.operands
    out = np.zeros(max(1, math.prod(result.shape)), result.dtype.numpy)
    interpret(kernel(one_block), (1,), (*args, out))
    return out.reshape(result.shape)
