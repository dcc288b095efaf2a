"""Property tests: the interpreter agrees with plain NumPy formulations of each tile op.

Shapes, dtypes, tile shapes (powers of two), grids and data are random; array extents are
usually not multiples of the tile shape. Kernels live at module level and take their shapes,
orders and op choices as `ct.Constant` ints, so each distinct choice compiles once.
"""
import functools
import operator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import tileworkbench.tile as ct

BOOL = np.dtype(bool)
INT_DTYPES = tuple(np.dtype(n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))
FLOAT_DTYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32), np.dtype(np.float64))
ALL_DTYPES = (BOOL,) + INT_DTYPES + FLOAT_DTYPES

P = ct.PaddingMode
PADDINGS = (P.ZERO, P.NEG_ZERO, P.NEG_INF, P.NAN, P.POS_INF)  # a kernel picks one by its position here
FILLS = {P.ZERO: 0.0, P.NEG_ZERO: -0.0, P.NEG_INF: -np.inf, P.NAN: np.nan, P.POS_INF: np.inf}

POW2 = st.sampled_from([1, 2, 4, 8])
SEEDS = st.integers(0, 2**32 - 1)
FAST = settings(max_examples=60, deadline=None)


# ---- helpers shared by the kernels (inlined into tile code) -----------------------------------

def block_index(n):
    return (ct.bid(0), ct.bid(1), ct.bid(2))[:n]


def origin(n):
    return (0, 0, 0, 0)[:n]


# ---- host helpers -------------------------------------------------------------------------------

def is_float(dtype) -> bool:
    return dtype in FLOAT_DTYPES


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def consts(values, n=3, fill=1) -> tuple:
    """A tuple padded to `n` entries, for kernels taking (S0, S1, S2)-style Constant parameters."""
    return tuple(values) + (fill,) * (n - len(values))


def random_values(rng, dtype, shape, specials=True) -> np.ndarray:
    """Random elements of `dtype`, mixed with edge values (min/max/0/-1, or inf/nan/-0.0)."""
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        v = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
        edges = np.array([info.min, info.min + 1, info.max, info.max - 1, 0, 1] + ([-1] if info.min else []), dtype)
    else:
        v = (rng.standard_normal(shape) * 4).astype(dtype)
        edges = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], np.float64).astype(dtype)
    if not specials:
        return v
    return np.where(rng.random(shape) < 0.2, rng.choice(edges, size=shape), v).astype(dtype)


def comparable(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) if is_float(a.dtype) else a


def assert_values_equal(actual, expected, where=None):
    """Same dtype, same values (NaN equals NaN, -0.0 differs from 0.0); with `where`, only those elements."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    a, e = comparable(actual), comparable(expected)
    if where is not None:
        a, e = a[where], e[where]
    np.testing.assert_array_equal(a, e)
    if is_float(actual.dtype):
        np.testing.assert_array_equal(np.signbit(a) & (a == 0), np.signbit(e) & (e == 0), err_msg="signs of zeros")


def assert_bits_equal(actual, expected):
    """Bit-for-bit equality (distinguishes -0.0 and NaN payloads)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if actual.dtype == BOOL:
        np.testing.assert_array_equal(actual, expected)
    else:
        bits = np.dtype(f"u{actual.dtype.itemsize}")
        np.testing.assert_array_equal(actual.view(bits), expected.view(bits))


def fill_is_specified(dtype, mode) -> bool:
    """Padding is a value we can check: zeros always, NaN/inf only for floats."""
    return mode in (P.ZERO, P.NEG_ZERO) or is_float(dtype)


def fill_array(shape, dtype, mode) -> np.ndarray:
    """The padding `mode` reads, where it is specified (zeros stand in elsewhere)."""
    return np.full(shape, FILLS[mode] if fill_is_specified(dtype, mode) else 0).astype(dtype)


def all_of(masks) -> np.ndarray:
    """Broadcasting AND of boolean arrays."""
    return functools.reduce(np.logical_and, masks)


def normalize_order(order, ndim):
    return tuple(reversed(range(ndim))) if order == "F" else tuple(a % ndim for a in order)


def order_consts(order):
    return (True, (0, 1, 2)) if order == "F" else (False, consts(order, fill=0))


@st.composite
def orders(draw, ndim):
    """'F' or a permutation of range(ndim), some axes written as negative numbers."""
    if draw(st.booleans()) and draw(st.booleans()):
        return "F"
    perm = draw(st.permutations(range(ndim)))
    return tuple(a - ndim if draw(st.booleans()) else a for a in perm)


@st.composite
def ragged_layouts(draw, max_tiles=3):
    """(array shape, tile shape, order): each extent 1..max_tiles tiles of its tile-space axis."""
    ndim = draw(st.integers(1, 3))
    order = draw(orders(ndim))
    tile = tuple(draw(POW2) for _ in range(ndim))
    perm = normalize_order(order, ndim)
    view_shape = tuple(draw(st.integers(1, max_tiles * t)) for t in tile)
    shape = [0] * ndim
    for k, a in enumerate(perm):  # tile-space axis k walks array axis perm[k]
        shape[a] = view_shape[k]
    return tuple(shape), tile, order


def as_index(values, dtype) -> np.ndarray:
    """Index values in `dtype`; negative values in an unsigned dtype wrap to huge (out of bounds) ones."""
    return np.asarray(values, np.int64).astype(dtype)


def in_bounds(index: np.ndarray, extent: int) -> np.ndarray:
    if index.dtype.kind == "u":
        return index < np.uint64(extent)
    return (index >= 0) & (index < extent)


def clipped(index: np.ndarray, ok) -> np.ndarray:
    return np.where(ok, index, 0).astype(np.int64)


# ---- load / store --------------------------------------------------------------------------------

@ct.kernel
def copy_tiles(x, y, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
               F: ct.Constant[bool], O0: ct.Constant[int], O1: ct.Constant[int], O2: ct.Constant[int]):
    idx = block_index(N)
    shape = (S0, S1, S2)[:N]
    if F:
        ct.store(y, idx, ct.load(x, idx, shape, order="F"), order="F")
    else:
        order = (O0, O1, O2)[:N]
        ct.store(y, idx, ct.load(x, idx, shape, order=order), order=order)


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), layout=ragged_layouts(), data=st.data(), seed=SEEDS)
def test_copy_over_tile_space_is_exact_where_the_grid_reaches_and_leaves_the_rest(dtype, layout, data, seed):
    shape, tile, order = layout
    ndim = len(shape)
    perm = normalize_order(order, ndim)
    view_shape = tuple(shape[a] for a in perm)
    grid = tuple(data.draw(st.integers(1, cdiv(n, t)), label=f"grid[{k}]")
                 for k, (n, t) in enumerate(zip(view_shape, tile)))
    rng = np.random.default_rng(seed)
    x = random_values(rng, dtype, shape)
    y = random_values(rng, dtype, shape)
    expected = y.copy()
    reached = tuple(slice(0, g * t) for g, t in zip(grid, tile))
    np.transpose(expected, perm)[reached] = np.transpose(x, perm)[reached]
    f, o = order_consts(order)
    ct.launch(None, grid, copy_tiles, (x, y, ndim, *consts(tile), f, *o))
    assert_bits_equal(y, expected)


@ct.kernel
def load_tile_space(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
                    F: ct.Constant[bool], O0: ct.Constant[int], O1: ct.Constant[int], O2: ct.Constant[int],
                    PAD: ct.Constant[int]):
    idx = block_index(N)
    shape = (S0, S1, S2)[:N]
    if F:
        t = ct.load(x, idx, shape, order="F", padding_mode=PADDINGS[PAD])
    else:
        t = ct.load(x, idx, shape, order=(O0, O1, O2)[:N], padding_mode=PADDINGS[PAD])
    ct.store(out, idx, t)


@pytest.mark.parametrize("pad", range(len(PADDINGS)), ids=[m.name for m in PADDINGS])
@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), layout=ragged_layouts(), seed=SEEDS)
def test_load_with_order_is_the_transposed_array_cut_into_tiles_and_padded(dtype, layout, pad, seed):
    shape, tile, order = layout
    perm = normalize_order(order, len(shape))
    x = random_values(np.random.default_rng(seed), dtype, shape)
    view = np.transpose(x, perm)
    grid = tuple(cdiv(n, t) for n, t in zip(view.shape, tile))
    out = np.zeros(tuple(g * t for g, t in zip(grid, tile)), dtype)
    mode = PADDINGS[pad]
    expected = fill_array(out.shape, dtype, mode)
    inside = tuple(slice(0, n) for n in view.shape)
    expected[inside] = view
    f, o = order_consts(order)
    ct.launch(None, grid, load_tile_space, (x, out, len(shape), *consts(tile), f, *o, pad))
    if fill_is_specified(dtype, mode):
        assert_values_equal(out, expected)
    else:
        assert_values_equal(out[inside], expected[inside])


# ---- gather / scatter ------------------------------------------------------------------------------

def collapsed(bits, K, T0, T1, T2):
    """The shape (T0, T1, T2)[:K] with dimension k set to 1 where bit k of `bits` is set."""
    return (1 if bits & 1 else T0, 1 if bits & 2 else T1, 1 if bits & 4 else T2)[:K]


@ct.kernel
def gather_kernel(x, i0, i1, i2, m, pad, out, N: ct.Constant[int], K: ct.Constant[int], T0: ct.Constant[int],
                  T1: ct.Constant[int], T2: ct.Constant[int], B0: ct.Constant[int], B1: ct.Constant[int],
                  B2: ct.Constant[int], MB: ct.Constant[int], MASKED: ct.Constant[bool]):
    at = origin(K)
    idx = (ct.load(i0, at, collapsed(B0, K, T0, T1, T2)), ct.load(i1, at, collapsed(B1, K, T0, T1, T2)),
           ct.load(i2, at, collapsed(B2, K, T0, T1, T2)))[:N]
    p = ct.load(pad, (0,), ())
    if MASKED:
        t = ct.gather(x, idx, mask=ct.load(m, at, collapsed(MB, K, T0, T1, T2)), padding_value=p)
    else:
        t = ct.gather(x, idx, padding_value=p)
    ct.store(out, at, t)


@ct.kernel
def scatter_kernel(x, i0, i1, i2, m, v, N: ct.Constant[int], K: ct.Constant[int], T0: ct.Constant[int],
                   T1: ct.Constant[int], T2: ct.Constant[int], MASKED: ct.Constant[bool]):
    shape = (T0, T1, T2)[:K]
    at = origin(K)
    idx = (ct.load(i0, at, shape), ct.load(i1, at, shape), ct.load(i2, at, shape))[:N]
    if MASKED:
        ct.scatter(x, idx, ct.load(v, at, shape), mask=ct.load(m, at, shape))
    else:
        ct.scatter(x, idx, ct.load(v, at, shape))


@st.composite
def element_access(draw):
    """(array shape, index-tile shape, index dtype, masked?)"""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(ndim))
    k = draw(st.integers(1, 3))
    tile = tuple(draw(POW2) for _ in range(k))
    return shape, tile, draw(st.sampled_from(INT_DTYPES)), draw(st.booleans())


def index_arrays(idx):
    """Three index arrays for the kernel (unused slots repeat the first)."""
    return tuple(idx) + (idx[0],) * (3 - len(idx))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), access=element_access(), collapse_bits=st.lists(st.integers(0, 7),
       min_size=4, max_size=4), seed=SEEDS)
def test_gather_reads_in_bounds_unmasked_lanes_and_pads_the_rest_negative_indices_included(dtype, access,
                                                                                        collapse_bits, seed):
    """Index tiles and the mask broadcast together (some of their dimensions are 1)."""
    shape, tile, index_dtype, masked = access
    *index_bits, mask_bits = collapse_bits
    index_bits = index_bits[:len(shape)]
    mask_bits |= functools.reduce(operator.and_, index_bits)  # the mask broadcasts *to* the index shape
    rng = np.random.default_rng(seed)
    x = random_values(rng, dtype, shape)
    idx = [as_index(rng.integers(-n - 3, 2 * n + 3, size=collapsed(b, len(tile), *consts(tile))), index_dtype)
           for n, b in zip(shape, index_bits)]
    mask = rng.random(collapsed(mask_bits, len(tile), *consts(tile))) < 0.7
    pad = random_values(rng, dtype, (1,))
    *lanes, lane_mask = np.broadcast_arrays(*idx, mask if masked else np.ones((1,) * len(tile), bool))
    out = np.zeros(lane_mask.shape, dtype)
    ok = all_of([in_bounds(i, n) for i, n in zip(lanes, shape)]) & lane_mask
    expected = np.where(ok, x[tuple(clipped(i, ok) for i in lanes)], pad[0]).astype(dtype)
    ct.launch(None, (1,), gather_kernel, (x, *index_arrays(idx), mask, pad, out, len(shape), len(tile),
                                          *consts(tile), *consts(index_bits, fill=0), mask_bits, masked))
    assert_bits_equal(out, expected)


def out_of_bounds_index(rng, extent: int) -> int:
    return int(rng.choice([rng.integers(-extent - 3, 0), rng.integers(extent, 2 * extent + 3)]))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), access=element_access(), seed=SEEDS)
def test_scatter_with_unique_indices_writes_exactly_the_in_bounds_unmasked_lanes(dtype, access, seed):
    shape, tile, index_dtype, masked = access
    rng = np.random.default_rng(seed)
    lanes, size = int(np.prod(tile)), int(np.prod(shape))
    inside = rng.random(lanes) < 0.7
    inside[np.cumsum(inside) > size] = False  # at most one lane per element
    flat = np.zeros(lanes, np.int64)
    flat[inside] = rng.choice(size, size=int(inside.sum()), replace=False)
    coords = np.unravel_index(flat, shape)
    outside_dim = rng.integers(0, len(shape), size=lanes)
    idx = []
    for d, n in enumerate(shape):
        values = np.array([c if inside[j] or outside_dim[j] != d else out_of_bounds_index(rng, n)
                           for j, c in enumerate(coords[d])])
        idx.append(as_index(values.reshape(tile), index_dtype))
    mask = rng.random(tile) < 0.7
    x = random_values(rng, dtype, shape)
    v = random_values(rng, dtype, tile)
    expected = x.copy()
    ok = inside.reshape(tile) & (mask if masked else True)
    expected[tuple(c.reshape(tile)[ok] for c in coords)] = v[ok]
    ct.launch(None, (1,), scatter_kernel, (x, *index_arrays(idx), mask, v, len(shape), len(tile),
                                           *consts(tile), masked))
    assert_bits_equal(x, expected)


# ---- advanced indexing -----------------------------------------------------------------------------

def advanced_index(idx, s0, s1, s2, N, SD, L0, L1, L2):
    """The indices tuple: the sparse tile at dim SD, ct.Slice(start, length) elsewhere."""
    slices = (ct.Slice(s0, L0), ct.Slice(s1, L1), ct.Slice(s2, L2))
    return (slices[:SD] + (idx,) + slices[SD + 1:])[:N]


@ct.kernel
def load_advanced(x, index, out, s0, s1, s2, N: ct.Constant[int], SD: ct.Constant[int], L0: ct.Constant[int],
                  L1: ct.Constant[int], L2: ct.Constant[int], PAD: ct.Constant[int]):
    idx = ct.load(index, (0,), ((L0, L1, L2)[SD],))
    t = ct.load_advanced_indexing(x, advanced_index(idx, s0, s1, s2, N, SD, L0, L1, L2),
                                  padding_mode=PADDINGS[PAD])
    ct.store(out, origin(N), t)


@ct.kernel
def store_advanced(y, index, v, s0, s1, s2, N: ct.Constant[int], SD: ct.Constant[int], L0: ct.Constant[int],
                   L1: ct.Constant[int], L2: ct.Constant[int]):
    idx = ct.load(index, (0,), ((L0, L1, L2)[SD],))
    ct.store_advanced_indexing(y, advanced_index(idx, s0, s1, s2, N, SD, L0, L1, L2),
                               ct.load(v, origin(N), (L0, L1, L2)[:N]))


@st.composite
def advanced_access(draw):
    """(array shape, sparse dim, lengths, dense starts, index dtype); starts may run past the edge."""
    ndim = draw(st.integers(2, 3))
    shape = tuple(draw(st.integers(1, 10)) for _ in range(ndim))
    sd = draw(st.integers(0, ndim - 1))
    lengths = tuple(draw(POW2) for _ in range(ndim))
    starts = tuple(0 if d == sd else draw(st.integers(-2, n)) for d, n in enumerate(shape))
    return shape, sd, lengths, starts, draw(st.sampled_from(INT_DTYPES))


def outer(vectors) -> list:
    """1-D arrays reshaped to broadcast along their own axis (np.ix_ that also takes bool vectors)."""
    n = len(vectors)
    return [np.reshape(v, [-1 if d == k else 1 for d in range(n)]) for k, v in enumerate(vectors)]


def advanced_coords(sparse, shape, sd, lengths, starts):
    return [sparse if d == sd else np.arange(s, s + n) for d, (s, n) in enumerate(zip(starts, lengths))]


@pytest.mark.parametrize("pad", range(len(PADDINGS)), ids=[m.name for m in PADDINGS])
@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), access=advanced_access(), seed=SEEDS)
def test_load_advanced_indexing_is_numpy_fancy_indexing_with_padding(dtype, access, pad, seed):
    shape, sd, lengths, starts, index_dtype = access
    rng = np.random.default_rng(seed)
    x = random_values(rng, dtype, shape)
    sparse = as_index(rng.integers(-3, shape[sd] + 3, size=lengths[sd]), index_dtype)
    out = np.zeros(lengths, dtype)
    coords = advanced_coords(sparse, shape, sd, lengths, starts)
    oks = [in_bounds(c, n) for c, n in zip(coords, shape)]
    ok = all_of(outer(oks))
    mode = PADDINGS[pad]
    expected = np.where(ok, x[tuple(outer([clipped(c, o) for c, o in zip(coords, oks)]))],
                        fill_array((), dtype, mode)).astype(dtype)
    ct.launch(None, (1,), load_advanced, (x, sparse, out, *consts(starts, fill=0), len(shape), sd, *consts(lengths),
                                          pad))
    if fill_is_specified(dtype, mode):
        assert_values_equal(out, expected)
    else:
        assert_values_equal(out, expected, where=ok)


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), access=advanced_access(), seed=SEEDS)
def test_store_advanced_indexing_writes_the_in_bounds_part_of_the_numpy_fancy_index(dtype, access, seed):
    shape, sd, lengths, starts, index_dtype = access
    rng = np.random.default_rng(seed)
    n = shape[sd]
    inside = rng.random(lengths[sd]) < 0.7
    inside[np.cumsum(inside) > n] = False  # unique in-bounds rows
    sparse_values = np.array([out_of_bounds_index(rng, n) for _ in range(lengths[sd])])
    sparse_values[inside] = rng.choice(n, size=int(inside.sum()), replace=False)
    sparse = as_index(sparse_values, index_dtype)
    y = random_values(rng, dtype, shape)
    v = random_values(rng, dtype, lengths)
    coords = advanced_coords(sparse, shape, sd, lengths, starts)
    ok = all_of(outer([in_bounds(c, n) for c, n in zip(coords, shape)]))
    ok = np.broadcast_to(ok, lengths)
    grids = np.meshgrid(*(c.astype(np.int64) for c in coords), indexing="ij")
    expected = y.copy()
    expected[tuple(g[ok] for g in grids)] = v[ok]
    ct.launch(None, (1,), store_advanced, (y, sparse, v, *consts(starts, fill=0), len(shape), sd, *consts(lengths)))
    assert_bits_equal(y, expected)


# ---- shape ops ----------------------------------------------------------------------------------------

def load_whole(x, N, S0, S1, S2):
    return ct.load(x, origin(N), (S0, S1, S2)[:N])


@ct.kernel
def reshape_kernel(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
                   M: ct.Constant[int], R0: ct.Constant[int], R1: ct.Constant[int], R2: ct.Constant[int]):
    ct.store(out, origin(M), ct.reshape(load_whole(x, N, S0, S1, S2), (R0, R1, R2)[:M]))


@ct.kernel
def permute_kernel(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
                   A0: ct.Constant[int], A1: ct.Constant[int], A2: ct.Constant[int]):
    ct.store(out, origin(N), ct.permute(load_whole(x, N, S0, S1, S2), (A0, A1, A2)[:N]))


@ct.kernel
def transpose_kernel(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
                     DEFAULT: ct.Constant[bool], A0: ct.Constant[int], A1: ct.Constant[int]):
    t = load_whole(x, N, S0, S1, S2)
    if DEFAULT:
        ct.store(out, origin(N), ct.transpose(t))
    else:
        ct.store(out, origin(N), ct.transpose(t, A0, A1))


@ct.kernel
def broadcast_kernel(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
                     M: ct.Constant[int], B0: ct.Constant[int], B1: ct.Constant[int], B2: ct.Constant[int]):
    ct.store(out, origin(M), ct.broadcast_to(load_whole(x, N, S0, S1, S2), (B0, B1, B2)[:M]))


@ct.kernel
def expand_dims_kernel(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int],
                       S2: ct.Constant[int], AXIS: ct.Constant[int]):
    ct.store(out, origin(N + 1), ct.expand_dims(load_whole(x, N, S0, S1, S2), AXIS))


@ct.kernel
def cat_kernel(x, y, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
               AXIS: ct.Constant[int]):
    ct.store(out, origin(N), ct.cat((load_whole(x, N, S0, S1, S2), load_whole(y, N, S0, S1, S2)), AXIS))


@ct.kernel
def extract_kernel(x, out, e0, e1, e2, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int],
                   S2: ct.Constant[int], E0: ct.Constant[int], E1: ct.Constant[int], E2: ct.Constant[int]):
    t = load_whole(x, N, S0, S1, S2)
    ct.store(out, origin(N), ct.extract(t, (e0, e1, e2)[:N], (E0, E1, E2)[:N]))


@ct.kernel
def insert_kernel(x, w, out, e0, e1, e2, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int],
                  S2: ct.Constant[int], E0: ct.Constant[int], E1: ct.Constant[int], E2: ct.Constant[int]):
    t = ct.insert(load_whole(x, N, S0, S1, S2), (e0, e1, e2)[:N], load_whole(w, N, E0, E1, E2))
    ct.store(out, origin(N), t)


@st.composite
def tile_shapes(draw, min_rank=1, max_rank=3, dims=POW2):
    return tuple(draw(dims) for _ in range(draw(st.integers(min_rank, max_rank))))


def run_shape_op(kernel, dtype, shape, out_shape, args, seed, extra_inputs=0):
    """Load random tiles of `shape`, run `kernel`, return (inputs, result)."""
    rng = np.random.default_rng(seed)
    inputs = [random_values(rng, dtype, shape) for _ in range(1 + extra_inputs)]
    out = np.zeros(out_shape, dtype)
    ct.launch(None, (1,), kernel, (*inputs, out, *args))
    return inputs, out


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), shape=tile_shapes(), data=st.data(), seed=SEEDS)
def test_reshape_is_numpy_c_order_reshape(dtype, shape, data, seed):
    bits = int(np.log2(np.prod(shape)))
    rank = data.draw(st.integers(1, 3), label="rank")
    cuts = sorted(data.draw(st.lists(st.integers(0, bits), min_size=rank - 1, max_size=rank - 1), label="cuts"))
    target = tuple(2 ** (b - a) for a, b in zip([0] + cuts, cuts + [bits]))
    spelled = list(target)
    if data.draw(st.booleans(), label="use -1"):
        spelled[data.draw(st.integers(0, rank - 1), label="-1 at")] = -1
    (x,), out = run_shape_op(reshape_kernel, dtype, shape, target,
                             (len(shape), *consts(shape), rank, *consts(spelled)), seed)
    assert_bits_equal(out, x.reshape(target))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), shape=tile_shapes(), data=st.data(), seed=SEEDS)
def test_permute_is_numpy_transpose_with_axes(dtype, shape, data, seed):
    n = len(shape)
    axes = tuple(a - n if data.draw(st.booleans()) else a for a in data.draw(st.permutations(range(n))))
    expected_shape = np.transpose(np.empty(shape), axes).shape
    (x,), out = run_shape_op(permute_kernel, dtype, shape, expected_shape,
                             (n, *consts(shape), *consts(axes, fill=0)), seed)
    assert_bits_equal(out, np.transpose(x, axes))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), shape=tile_shapes(min_rank=2), data=st.data(), seed=SEEDS)
def test_transpose_swaps_two_axes_and_defaults_to_the_first_two_of_a_2d_tile(dtype, shape, data, seed):
    n = len(shape)
    default = n == 2 and data.draw(st.booleans(), label="no axes")
    a0, a1 = (0, 1) if default else (data.draw(st.integers(-n, n - 1), label="axis0"),
                                     data.draw(st.integers(-n, n - 1), label="axis1"))
    expected = np.swapaxes(np.empty(shape), a0, a1)
    (x,), out = run_shape_op(transpose_kernel, dtype, shape, expected.shape,
                             (n, *consts(shape), default, a0, a1), seed)
    assert_bits_equal(out, np.swapaxes(x, a0, a1))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), shape=tile_shapes(dims=st.sampled_from([1, 1, 2, 4])), data=st.data(),
       seed=SEEDS)
def test_broadcast_to_is_numpy_broadcast_to(dtype, shape, data, seed):
    rank = data.draw(st.integers(len(shape), 3), label="rank")
    lead = tuple(data.draw(POW2) for _ in range(rank - len(shape)))
    target = lead + tuple(data.draw(POW2) if n == 1 else n for n in shape)
    (x,), out = run_shape_op(broadcast_kernel, dtype, shape, target,
                             (len(shape), *consts(shape), rank, *consts(target)), seed)
    assert_bits_equal(out, np.broadcast_to(x, target))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), shape=tile_shapes(), data=st.data(), seed=SEEDS)
def test_expand_dims_is_numpy_expand_dims(dtype, shape, data, seed):
    n = len(shape)
    axis = data.draw(st.integers(-n - 1, n), label="axis")
    expected_shape = np.expand_dims(np.empty(shape), axis).shape
    (x,), out = run_shape_op(expand_dims_kernel, dtype, shape, expected_shape, (n, *consts(shape), axis), seed)
    assert_bits_equal(out, np.expand_dims(x, axis))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), shape=tile_shapes(), data=st.data(), seed=SEEDS)
def test_cat_is_numpy_concatenate(dtype, shape, data, seed):
    n = len(shape)
    axis = data.draw(st.integers(-n, n - 1), label="axis")
    expected_shape = np.concatenate([np.empty(shape)] * 2, axis).shape
    (x, y), out = run_shape_op(cat_kernel, dtype, shape, expected_shape, (n, *consts(shape), axis), seed,
                               extra_inputs=1)
    assert_bits_equal(out, np.concatenate([x, y], axis))


@st.composite
def subtiles(draw):
    """(tile shape, sub-tile shape dividing it, sub-tile grid index)"""
    shape = draw(tile_shapes())
    sub = tuple(n >> draw(st.integers(0, int(np.log2(n)))) for n in shape)
    index = tuple(draw(st.integers(0, n // m - 1)) for n, m in zip(shape, sub))
    return shape, sub, index


def subtile_slices(sub, index):
    return tuple(slice(i * m, (i + 1) * m) for i, m in zip(index, sub))


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), case=subtiles(), seed=SEEDS)
def test_extract_is_the_numpy_slice_of_subtile_index(dtype, case, seed):
    shape, sub, index = case
    rng = np.random.default_rng(seed)
    x = random_values(rng, dtype, shape)
    out = np.zeros(sub, dtype)
    ct.launch(None, (1,), extract_kernel, (x, out, *consts(index, fill=0), len(shape), *consts(shape), *consts(sub)))
    assert_bits_equal(out, x[subtile_slices(sub, index)])


@FAST
@given(dtype=st.sampled_from(ALL_DTYPES), case=subtiles(), seed=SEEDS)
def test_insert_replaces_exactly_the_numpy_slice_of_subtile_index(dtype, case, seed):
    shape, sub, index = case
    rng = np.random.default_rng(seed)
    x, w = random_values(rng, dtype, shape), random_values(rng, dtype, sub)
    out = np.zeros(shape, dtype)
    expected = x.copy()
    expected[subtile_slices(sub, index)] = w
    ct.launch(None, (1,), insert_kernel, (x, w, out, *consts(index, fill=0), len(shape), *consts(shape),
                                          *consts(sub)))
    assert_bits_equal(out, expected)


# ---- reductions and scans ----------------------------------------------------------------------------

REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "cumsum")


@ct.kernel
def reduce_kernel(x, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
                  OP: ct.Constant[int], NAXES: ct.Constant[int], A0: ct.Constant[int], A1: ct.Constant[int],
                  KEEP: ct.Constant[bool], REVERSE: ct.Constant[bool], OUT_N: ct.Constant[int]):
    t = load_whole(x, N, S0, S1, S2)
    axis = None if NAXES == 0 else A0 if NAXES == 1 else (A0, A1)
    if OP == 0:
        r = ct.sum(t, axis, keepdims=KEEP)
    elif OP == 1:
        r = ct.prod(t, axis, keepdims=KEEP)
    elif OP == 2:
        r = ct.max(t, axis, keepdims=KEEP)
    elif OP == 3:
        r = ct.min(t, axis, keepdims=KEEP)
    elif OP == 4:
        r = ct.argmax(t, axis, keepdims=KEEP)
    elif OP == 5:
        r = ct.argmin(t, axis, keepdims=KEEP)
    else:
        r = ct.cumsum(t, A0, reverse=REVERSE)
    ct.store(out, origin(OUT_N), r)


@st.composite
def reduction_cases(draw, op):
    """(tile shape, axis: None, an int or a pair, keepdims, reverse)"""
    shape = draw(tile_shapes())
    n = len(shape)
    if op == "cumsum" or (op.startswith("arg") and draw(st.booleans())) or draw(st.booleans()):
        axis = draw(st.integers(-n, n - 1))
    elif op.startswith("arg") or n == 1 or draw(st.booleans()):
        axis = None
    else:
        first, second = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
        axis = (first - n if draw(st.booleans()) else first, second)
    return shape, axis, draw(st.booleans()), draw(st.booleans())


def reduction_input(rng, dtype, shape, op, clustered):
    """Random inputs; `clustered` ones take few distinct values (ties) and, for max/min/arg*, NaNs."""
    if op == "prod" and is_float(dtype):  # magnitudes near 1 keep 64-element products finite in float16
        x = rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.9, 1.1, size=shape)
        return x.astype(dtype)
    if not clustered:
        return random_values(rng, dtype, shape, specials=False)
    low = 0 if dtype == BOOL or dtype.kind == "u" else -2
    x = rng.integers(low, 2 if dtype == BOOL else 3, size=shape).astype(dtype)
    if is_float(dtype) and op in ("max", "min", "argmax", "argmin"):
        x[rng.random(shape) < 0.25] = np.nan
    return x


def eps(dtype) -> float:
    return float(ml_dtypes.finfo(dtype).eps)


def expected_reduction(x, op, axis, keepdims, reverse):
    """(expected, float64 reference, tolerance) by cuTile's rules: the result keeps the input dtype.

    Exact ops give (expected, None, None); float sums and products are compared with their float64
    reference within n * eps of the dtype, scaled by the sum of magnitudes (or the product's magnitude).
    """
    dtype = x.dtype
    if op in ("argmax", "argmin"):
        worst = -np.inf if op == "argmax" else np.inf  # NaN never wins unless propagate_nan
        v = np.where(np.isnan(x.astype(np.float64)), worst, x.astype(np.float64)) if is_float(dtype) else x
        return getattr(np, op)(v, axis=axis, keepdims=keepdims).astype(np.int32), None, None
    if op in ("max", "min"):
        fn = {"max": np.fmax, "min": np.fmin}[op]  # NaN is ignored unless propagate_nan
        axes = tuple(range(x.ndim)) if axis is None else axis
        with np.errstate(invalid="ignore"):  # an all-NaN slice is NaN, as intended
            return np.asarray(fn.reduce(x, axis=axes, keepdims=keepdims)), None, None
    if op == "cumsum":
        flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
        if not is_float(dtype):
            return flip(np.cumsum(flip(x), axis=axis, dtype=dtype)), None, None
        x64 = flip(x.astype(np.float64))
        ref = flip(np.cumsum(x64, axis=axis))
        return ref.astype(dtype), ref, x.shape[axis] * eps(dtype) * flip(np.cumsum(np.abs(x64), axis=axis))
    fn = {"sum": np.sum, "prod": np.prod}[op]
    if not is_float(dtype):
        return np.asarray(fn(x, axis=axis, keepdims=keepdims, dtype=dtype)), None, None
    x64 = x.astype(np.float64)
    ref = np.asarray(fn(x64, axis=axis, keepdims=keepdims))
    n = x.size // ref.size
    scale = np.sum(np.abs(x64), axis=axis, keepdims=keepdims) if op == "sum" else 2 * np.abs(ref)
    return ref.astype(dtype), ref, n * eps(dtype) * scale


@pytest.mark.parametrize("op", REDUCTIONS)
@FAST
@given(data=st.data(), dtype=st.sampled_from(ALL_DTYPES), clustered=st.booleans(), seed=SEEDS)
def test_reductions_match_numpy_in_the_input_dtype_with_bool_as_int32(op, data, dtype, clustered, seed):
    shape, axis, keepdims, reverse = data.draw(reduction_cases(op), label="shape, axis, keepdims, reverse")
    x = reduction_input(np.random.default_rng(seed), dtype, shape, op, clustered)
    note(f"x = {x!r}")
    expected, reference, tolerance = expected_reduction(x.astype(np.int32) if dtype == BOOL else x, op, axis,
                                                        keepdims, reverse)
    out = np.zeros(expected.shape or (1,), expected.dtype)
    naxes, a0, a1 = (0, 0, 0) if axis is None else (1, axis, 0) if isinstance(axis, int) else (2, *axis)
    ct.launch(None, (1,), reduce_kernel, (x, out, len(shape), *consts(shape), REDUCTIONS.index(op), naxes, a0, a1,
                                          keepdims, reverse, max(expected.ndim, 1)))
    actual = out.reshape(expected.shape)
    note(f"actual = {actual!r}, expected = {expected!r}")
    if reference is None:
        assert_values_equal(actual, expected)
    else:
        tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
        assert np.all(np.abs(actual.astype(np.float64) - reference) <= tolerance + tiny)


# ---- integer elementwise ops ---------------------------------------------------------------------------

BINARY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
              "mod": operator.mod, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
              "lshift": operator.lshift, "rshift": operator.rshift}
OP_NAMES = tuple(BINARY_OPS)


@ct.kernel
def binary_kernel(x, y, out, N: ct.Constant[int], S0: ct.Constant[int], S1: ct.Constant[int], S2: ct.Constant[int],
                  OP: ct.Constant[int]):
    a, b = load_whole(x, N, S0, S1, S2), load_whole(y, N, S0, S1, S2)
    if OP == 0:
        r = a + b
    elif OP == 1:
        r = a - b
    elif OP == 2:
        r = a * b
    elif OP == 3:
        r = a // b
    elif OP == 4:
        r = a % b
    elif OP == 5:
        r = a & b
    elif OP == 6:
        r = a | b
    elif OP == 7:
        r = a ^ b
    elif OP == 8:
        r = a << b
    else:
        r = a >> b
    ct.store(out, origin(N), r)


def wrap(value: int, dtype) -> int:
    """A Python int reduced to `dtype`'s two's-complement range."""
    bits = dtype.itemsize * 8
    value %= 1 << bits
    return value - (1 << bits) if dtype.kind == "i" and value >> (bits - 1) else value


@pytest.mark.parametrize("op", OP_NAMES)
@FAST
@given(data=st.data(), shape=tile_shapes(), seed=SEEDS)
def test_integer_binary_ops_are_bit_identical_to_python_int_arithmetic_wrapped_to_the_dtype(op, data, shape, seed):
    dtype = data.draw(st.sampled_from(INT_DTYPES + ((BOOL,) if op in ("and", "or", "xor") else ())), label="dtype")
    rng = np.random.default_rng(seed)
    x, y = random_values(rng, dtype, shape), random_values(rng, dtype, shape)
    if op in ("lshift", "rshift"):
        y = rng.integers(0, dtype.itemsize * 8, size=shape).astype(dtype)
    if op in ("floordiv", "mod"):
        y = np.where(y == 0, 1, y).astype(dtype)
        if dtype.kind == "i":  # min // -1 overflows: UB on the GPU
            y = np.where((x == np.iinfo(dtype).min) & (y == -1), 1, y).astype(dtype)
    fn = BINARY_OPS[op]
    if dtype == BOOL:
        expected = np.array([fn(bool(a), bool(b)) for a, b in zip(x.flat, y.flat)], bool).reshape(shape)
    else:
        expected = np.array([wrap(fn(int(a), int(b)), dtype) for a, b in zip(x.flat, y.flat)], dtype).reshape(shape)
    out = np.zeros(shape, dtype)
    ct.launch(None, (1,), binary_kernel, (x, y, out, len(shape), *consts(shape), OP_NAMES.index(op)))
    assert_bits_equal(out, expected)
