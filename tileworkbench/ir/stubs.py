"""The tile functions as Python sees them: signatures and docs, no bodies (cuTile's `_stub`).

Each signature is cuTile's, and it is the one source of truth for the arguments: the frontend
binds the user's call against it, as cuTile's compiler does (so a parameter that is not
positional-only may be passed by keyword: `ct.bid(axis=0)`), and hands the bound values by name
to the lowering registered for the same function object (frontend/lowering.py). The elementwise
functions are made from their op declarations (ir/ops.py). Called from host code, a tile
function refuses.
"""
from __future__ import annotations

import inspect

from .attrs import MemoryOrder, MemoryScope, PaddingMode, RoundingMode
from .ops import OPS, OPTIONS, Accepts, Category
from .types import int32


class Slice:
    """A dense range [start, start + length) of one dimension, for load_advanced_indexing."""

    __tile_op__ = "Slice"  # in tile code, lowered to the frontend's SliceValue

    def __init__(self, start, length):
        self.start = start
        self.length = length

    def __repr__(self) -> str:
        return f"Slice({self.start!r}, {self.length!r})"


FUNCTIONS: dict = {}  # name -> tile function, every one of them


def tile_function(name: str, signature: inspect.Signature, doc: str | None):
    """A function that only tile code may call: `signature` binds the calls, `__tile_op__` marks it."""
    def refuse(*args, **kwargs):
        raise RuntimeError("Device functions can only be called from device code.")
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = doc
    refuse.__signature__ = signature
    refuse.__tile_op__ = name
    FUNCTIONS[name] = refuse
    return refuse


def _stub(fn):
    return tile_function(fn.__name__, inspect.signature(fn), fn.__doc__)


UNDETERMINED = PaddingMode.UNDETERMINED

# ---- grid ----------------------------------------------------------------------------------


@_stub
def bid(axis):
    """This block's index along grid axis 0, 1 or 2 (an int32 scalar)."""


@_stub
def num_blocks(axis):
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

# ---- elementwise math: from the op declarations ---------------------------------------------------

_NOTES = {Accepts.FLOAT_MATH: " (integer operands are converted to float32)", Accepts.FLOATS: " (floats only)",
          Accepts.INTEGERS: " (integers and bool only)"}


def _elementwise(decl):
    operands, options = decl.params
    P = inspect.Parameter
    params = [P(n, P.POSITIONAL_ONLY) for n in operands] + [P(n, P.KEYWORD_ONLY, default=OPTIONS[n]) for n in options]
    return tile_function(decl.stub, inspect.Signature(params), f"Elementwise {decl.summary}{_NOTES.get(decl.accepts, '')}.")


for _decl in OPS.values():
    if _decl.category is Category.ELEMENTWISE and _decl.params is not None:
        globals()[_decl.stub] = _elementwise(_decl)


@_stub
def divmod(x, y, /):  # cuTile's name
    """(x // y, x % y) for integer tiles (also spelled `divmod(x, y)`)."""


def cdiv(x, y, /):
    """ceil(x / y) for integers of either sign (cdiv(7, -2) == -3); works on the host and in kernels."""
    return -((-x) // y)


cdiv.__tile_op__ = "cdiv"
FUNCTIONS["cdiv"] = cdiv

# ---- reductions, scans, matrix multiply --------------------------------------------------------


@_stub
def sum(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):  # noqa: A001
    """Sum over `axis` (None: all); the result keeps the input dtype."""


@_stub
def prod(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
    """Product over `axis` (None: all)."""


@_stub
def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):  # noqa: A001
    """Maximum over `axis` (None: all); NaN is ignored unless propagate_nan."""


@_stub
def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):  # noqa: A001
    """Minimum over `axis` (None: all); NaN is ignored unless propagate_nan."""


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
def printf(format, *args):
    """C-style formatted print from every block."""


@_stub
def assert_(cond, /, message=None):
    """Stop the kernel where an element of the bool tile `cond` is false (on the GPU a device
    assert, which ends the CUDA context; on the interpreter a TileAssertionError naming the block)."""


@_stub
def static_eval(expr, /):
    """Evaluate a Python expression at compile time (full Python: comprehensions, any function of
    constants); tiles and arrays in it stand for themselves. Its result is a constant or a tile."""


@_stub
def static_iter(iterable):
    """`for x in ct.static_iter(expr)`: expr evaluated as static_eval does, the loop unrolled."""


@_stub
def static_assert(condition, message=None, /):
    """Fail compilation when a compile-time condition is false."""

# ---- byte packing, block-scaled mma, compile-time checks, launch hints ----------------------------
# Their lowerings compose other ops (frontend/surface.py).


@_stub
def pack_to_bytes(x, /):
    """The tile's elements in C order as little-endian bytes: a 1-D uint8 tile of size * itemsize.

    >>> ct.pack_to_bytes(ct.full((1,), 0x04030201, ct.int32))   # [1, 2, 3, 4]
    """


@_stub
def unpack_from_bytes(x, /, dtype):
    """The inverse of pack_to_bytes: a 1-D uint8 tile read as little-endian values of `dtype`."""


@_stub
def mma_scaled(x, x_scale, y, y_scale, /, acc):
    """Block-scaled x @ y + acc: result[i, j] = sum_k x[i, k] * x_scale[i, k // B] * y[k, j] *
    y_scale[k // B, j] + acc[i, j], with B = K // x_scale.shape[-1] (fp8 with e8m0 scales: B 32;
    fp4 with e8m0: 16 or 32; fp4 with e4m3: 16). Computed in float32 on any GPU."""


@_stub
def assume_divisible_by(x, divisor):
    """x, with the promise that it is a multiple of the constant `divisor` (unchecked)."""


def ensure_constant(value, /):
    """`value`, which must be a compile-time constant (TileStaticAssertionError otherwise); on the host, value."""
    return value


def static_exception(exc, /):
    """`raise ct.static_exception(ValueError("..."))` in tile code: `exc`, evaluated at compile time as
    static_eval does, raised there as a StaticException naming it. Only in a raise statement."""
    return exc


for _host in (ensure_constant, static_exception):  # tile functions that also run on the host
    _host.__tile_op__ = _host.__name__
    FUNCTIONS[_host.__name__] = _host


@_stub
def grid_dependency_control_wait():
    """Wait for the kernel this one depends on in a programmatic dependent launch. tileworkbench
    starts a kernel after its stream predecessor has finished, so the wait is already satisfied."""


@_stub
def grid_dependency_control_launch_dependents():
    """Let a programmatically dependent kernel start scheduling (a permission; nothing to do here)."""


# ---- methods of arrays in tile code (not module functions) -----------------------------------------

def tiled_view(array, /, tile_shape, *, padding_mode=UNDETERMINED, traversal_steps=None):
    """`array.tiled_view(tile_shape, ...)`: the array as tiles of `tile_shape` whose index i starts at
    element i * traversal_steps (default: tile_shape), with .load(index), .store(index, tile),
    .num_tiles(axis), .atomic_store_add(index, update), ..."""


ARRAY_METHODS = {"tiled_view": tiled_view}  # name -> signature; `slice` is the frontend's own


INDEX_DTYPE = int32
__all__ = ["INDEX_DTYPE", "MemoryOrder", "MemoryScope", "PaddingMode", "RoundingMode", "Slice", "UNDETERMINED",
           *FUNCTIONS]
