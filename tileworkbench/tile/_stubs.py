"""The tile functions as Python sees them: signatures and docs, no bodies.

Each stub's signature is the one source of truth for its arguments: the frontend binds the
user's call against it (defaults, keyword-only, positional-only) and hands the bound values to
the lowering of the same name (frontend/lowering.py). Called from host code, a stub refuses.
"""
from __future__ import annotations

import functools

from ..frontend.lowering import TILE_FUNCTIONS as _TILE_FUNCTIONS
from ..ir.attrs import MemoryOrder, MemoryScope, PaddingMode, RoundingMode  # noqa: F401 - ct.PaddingMode ...
from ..ir.types import int32


class Slice:
    """A dense range [start, start + length) of one dimension, for load_advanced_indexing."""

    __tile_op__ = "Slice"  # in tile code, lowered to the frontend's SliceValue

    def __init__(self, start, length):
        self.start = start
        self.length = length

    def __repr__(self) -> str:
        return f"Slice({self.start!r}, {self.length!r})"


def _stub(fn):
    @functools.wraps(fn)
    def refuse(*args, **kwargs):
        raise RuntimeError("Device functions can only be called from device code.")
    refuse.__tile_op__ = fn.__name__
    _TILE_FUNCTIONS[fn.__name__] = refuse  # the frontend binds method calls (t.reshape(...)) against it
    return refuse


UNDETERMINED = PaddingMode.UNDETERMINED

# ---- grid ----------------------------------------------------------------------------------


@_stub
def bid(axis, /):
    """This block's index along grid axis 0, 1 or 2 (an int32 scalar)."""


@_stub
def num_blocks(axis, /):
    """The number of blocks along grid axis 0, 1 or 2 (an int32 scalar)."""


@_stub
def num_tiles(array, /, axis, shape, order="C"):
    """cdiv(V.shape[axis], shape[axis]) where V is the array with its axes permuted by `order`."""

# ---- memory --------------------------------------------------------------------------------


@_stub
def load(array, /, index, shape, *, order="C", padding_mode=UNDETERMINED, check_bounds=True,
         latency=None, allow_tma=None, memory_order=MemoryOrder.WEAK, memory_scope=MemoryScope.NONE):
    """The tile at `index` of the array's tile space: t[x, y] = array[i*tm + x, j*tn + y].

    >>> t = ct.load(a, (i, j), (tm, tn))               # shape (tm, tn)
    >>> t = ct.load(a, (j, i), (tn, tm), order="F")     # t[y, x] = a[i*tm + x, j*tn + y]
    """


@_stub
def store(array, /, index, tile, *, order="C", check_bounds=True, latency=None, allow_tma=None,
          memory_order=MemoryOrder.WEAK, memory_scope=MemoryScope.NONE):
    """Write `tile` at `index` of the array's tile space; elements outside the array are dropped."""


@_stub
def gather(array, indices, /, *, mask=None, padding_value=0, check_bounds=True, latency=None):
    """t[i, j, k] = array[ind0[i, j, k], ind1[i, j, k]] with the index tiles broadcast together.
    Masked-off and out-of-bounds lanes (negative indices included) read `padding_value`."""


@_stub
def scatter(array, indices, value, /, *, mask=None, check_bounds=True, latency=None):
    """array[ind0[...], ind1[...]] = value[...]; masked-off and out-of-bounds lanes are dropped."""


# Atomics index like gather/scatter; each element is updated atomically (the tile as a whole is not)
# and the old values come back with the index shape. On the interpreter the blocks apply them in
# block order, the lanes of a block in C order.

@_stub
def atomic_cas(array, indices, expected, desired, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """Where array[indices] == expected, write desired; return the old values (`expected` out of bounds)."""


@_stub
def atomic_xchg(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
                memory_scope=MemoryScope.DEVICE):
    """array[indices] = update; return the old values."""


@_stub
def atomic_add(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """array[indices] += update; return the old values."""


@_stub
def atomic_max(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """array[indices] = max(array[indices], update) (integers); return the old values."""


@_stub
def atomic_min(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """array[indices] = min(array[indices], update) (integers); return the old values."""


@_stub
def atomic_and(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """array[indices] &= update; return the old values."""


@_stub
def atomic_or(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
              memory_scope=MemoryScope.DEVICE):
    """array[indices] |= update; return the old values."""


@_stub
def atomic_xor(array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL,
               memory_scope=MemoryScope.DEVICE):
    """array[indices] ^= update; return the old values."""


@_stub
def load_advanced_indexing(array, indices, /, *, padding_mode=UNDETERMINED, latency=None, allow_tma=None):
    """One 1-D integer tile (the sparse dim) and a `Slice` per other dim."""


@_stub
def store_advanced_indexing(array, indices, tile, /, *, latency=None, allow_tma=None):
    """The store counterpart of load_advanced_indexing; out-of-bounds elements are dropped."""

# ---- creation and casts --------------------------------------------------------------------


@_stub
def arange(size, /, *, dtype, start=0, step=1):
    """start + step * [0, 1, ..., size-1] as a 1-D tile of `dtype` (size: a power of two)."""


@_stub
def full(shape, fill_value, dtype):
    """A tile of `shape` with every element `fill_value`."""


@_stub
def zeros(shape, dtype):
    """A tile of zeros (positive zero for floats)."""


@_stub
def ones(shape, dtype):
    """A tile of ones (true for bool)."""


@_stub
def astile(value, /, *, dtype):
    """A tile from a scalar (0-d) or a nested tuple of scalars whose nesting gives the shape."""


@_stub
def astype(x, dtype, /, *, rounding_mode=None):
    """Convert elements: float->int truncates toward zero and saturates to the range (NaN -> 0,
    inf -> the largest value), int->bool is x != 0.

    >>> ct.full((2,), 3e9, ct.float32).astype(ct.int32)   # [2147483647, 2147483647]
    """


@_stub
def bitcast(x, /, dtype):
    """Reinterpret each element's bits as `dtype` (same bit width)."""

# ---- shape -----------------------------------------------------------------------------------


@_stub
def reshape(x, /, shape):
    """The same elements in C order with a new shape; one dimension may be -1."""


@_stub
def permute(x, /, axes):
    """Result axis k is input axis axes[k] (like numpy.transpose(x, axes))."""


@_stub
def transpose(x, /, axis0=None, axis1=None):
    """Swap two axes; with none given, swap the first two (rank < 2: unchanged)."""


@_stub
def expand_dims(x, /, axis):
    """Insert a size-1 axis (also spelled x[:, None])."""


@_stub
def broadcast_to(x, /, shape):
    """Stretch size-1 dimensions to `shape` (NumPy broadcasting)."""


@_stub
def cat(tiles, /, axis):
    """Concatenate a tuple of two tiles along `axis`."""


@_stub
def extract(x, /, index, shape):
    """Sub-tile number `index` when x is split into tiles of `shape`."""


@_stub
def insert(x, /, index, value):
    """x with sub-tile number `index` (of value's shape) replaced by `value`."""


@_stub
def where(cond, x, y, /):
    """Elementwise cond ? x : y, with broadcasting and promotion of x and y."""

# ---- elementwise math --------------------------------------------------------------------------


def _unary(name, doc):
    def f(x, /, *, rounding_mode=None, flush_to_zero=False):
        pass
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return _stub(f)


def _binary(name, doc):
    def f(x, y, /, *, rounding_mode=None, flush_to_zero=False):
        pass
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return _stub(f)


exp = _unary("exp", "e**x (ints are promoted to float32)")
exp2 = _unary("exp2", "2**x")
log = _unary("log", "natural logarithm")
log2 = _unary("log2", "base-2 logarithm")
sqrt = _unary("sqrt", "square root")
rsqrt = _unary("rsqrt", "1 / sqrt(x)")
sin = _unary("sin", "sine")
cos = _unary("cos", "cosine")
tan = _unary("tan", "tangent")
sinh = _unary("sinh", "hyperbolic sine")
cosh = _unary("cosh", "hyperbolic cosine")
tanh = _unary("tanh", "hyperbolic tangent")
erf = _unary("erf", "error function (ints are promoted to float32)")
floor = _unary("floor", "round toward -inf (floats only)")
ceil = _unary("ceil", "round toward +inf (floats only)")
abs = _unary("abs", "absolute value")  # noqa: A001 - cuTile's name
negative = _unary("negative", "-x")
bitwise_not = _unary("bitwise_not", "~x")
isnan = _unary("isnan", "true where x is NaN")
isinf = _unary("isinf", "true where x is +inf or -inf")
isfinite = _unary("isfinite", "true where x is neither NaN nor infinite")

add = _binary("add", "x + y")
sub = _binary("sub", "x - y")
mul = _binary("mul", "x * y")
truediv = _binary("truediv", "x / y (int / int gives float32)")
floordiv = _binary("floordiv", "x // y, rounding toward -inf")
mod = _binary("mod", "x % y with Python's sign rule (the sign of y)")
pow = _binary("pow", "x ** y")  # noqa: A001
atan2 = _binary("atan2", "atan2(x, y)")
bitwise_and = _binary("bitwise_and", "x & y")
bitwise_or = _binary("bitwise_or", "x | y")
bitwise_xor = _binary("bitwise_xor", "x ^ y")
bitwise_lshift = _binary("bitwise_lshift", "x << y")
bitwise_rshift = _binary("bitwise_rshift", "x >> y (arithmetic for signed x)")
greater = _binary("greater", "x > y")
greater_equal = _binary("greater_equal", "x >= y")
less = _binary("less", "x < y")
less_equal = _binary("less_equal", "x <= y")
equal = _binary("equal", "x == y")
not_equal = _binary("not_equal", "x != y")


@_stub
def minimum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Elementwise minimum; NaN is ignored unless propagate_nan."""


@_stub
def maximum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Elementwise maximum; NaN is ignored unless propagate_nan."""


@_stub
def divmod(x, y, /):  # cuTile's name
    """(x // y, x % y) for integer tiles (also spelled `divmod(x, y)`)."""


def cdiv(x, y, /):
    """ceil(x / y) for integers of either sign (cdiv(7, -2) == -3); works on the host and in kernels."""
    return -((-x) // y)


cdiv.__tile_op__ = "cdiv"

# ---- reductions, scans, matrix multiply --------------------------------------------------------


def _reduction(name, doc):
    def f(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False, propagate_nan=False):
        pass
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return _stub(f)


sum = _reduction("sum", "sum over `axis` (None: all); the result keeps the input dtype")  # noqa: A001
prod = _reduction("prod", "product over `axis`")
max = _reduction("max", "maximum over `axis`")  # noqa: A001
min = _reduction("min", "minimum over `axis`")  # noqa: A001


@_stub
def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """int32 index of the maximum (ties: the smallest index; axis None: of the C-order flattening)."""


@_stub
def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """int32 index of the minimum (ties: the smallest index)."""


@_stub
def cumsum(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
    """Inclusive prefix sum along `axis`."""


@_stub
def cumprod(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
    """Inclusive prefix product along `axis`."""


@_stub
def reduce(x, /, axis, func, identity, *, keepdims=False):  # cuTile's name
    """Fold a tile (or a tuple of tiles, broadcast together) along `axis` with `func`.

    `func` combines two groups of 0-d tiles into one: `lambda a, b: a + b` for one tile, or
    `f(a1, a2, b1, b2) -> (c1, c2)` for two; `identity` is its identity (a tuple for tuples).
    """


@_stub
def scan(x, /, axis, func, identity, *, reverse=False):
    """Inclusive prefix of a tile (or a tuple of tiles) along `axis` with `func` (see reduce)."""


@_stub
def mma(x, y, /, acc, *, use_fast_acc=False):
    """x @ y + acc in acc's dtype (x and y share a dtype; batch dims broadcast)."""


@_stub
def matmul(x, y, /):
    """x @ y with promoted inputs; the result has the promoted input dtype."""

# ---- utilities -------------------------------------------------------------------------------


@_stub
def print(*args, sep=" ", end="\n"):  # cuTile's name
    """Print tiles and values from every block (the same as Python's print in tile code)."""


@_stub
def printf(format, /, *args):
    """C-style formatted print from every block."""


@_stub
def assert_(condition, /, message=None):
    """Stop the kernel where an element of the bool tile `condition` is false (on the GPU a device
    assert, which ends the CUDA context; on the interpreter a TileAssertionError naming the block)."""


@_stub
def static_eval(expression, /):
    """Evaluate a Python expression at compile time (full Python: comprehensions, any function of
    constants); tiles and arrays in it stand for themselves. Its result is a constant or a tile."""


@_stub
def static_iter(iterable, /):
    """`for x in ct.static_iter(expr)`: expr evaluated as static_eval does, the loop unrolled."""


@_stub
def static_assert(condition, message=None, /):
    """Fail compilation when a compile-time condition is false."""


INDEX_DTYPE = int32
