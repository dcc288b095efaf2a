"""Each op of the tile language, run on the interpreter and compared with a plain NumPy formulation.

Most tests go through two helpers: `compute(fn, *inputs)` loads each input array as one whole tile,
applies `fn` inside a kernel and returns the stored result after checking (at compile time) that
the result tile has exactly the expected dtype and shape; `evaluate` does the same but hands `fn`
the array parameters themselves (for memory ops). `launch_on(fn, *arrays)` runs `fn` on array
parameters for its side effects (stores, scatters).
"""
import inspect

import ml_dtypes
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile import interpret

P = ct.PaddingMode


# ---- helpers ----------------------------------------------------------------------------------------

def _whole_tiles(arrays, shapes):
    tiles = ()
    for k in (0, 1, 2)[:len(arrays)]:
        tiles = tiles + (ct.load(arrays[k], (0,) * len(shapes[k]), shapes[k]),)
    return tiles


def evaluate(fn, *arrays, dtype, shape, as_tiles=False):
    """Run a one-block kernel that stores `fn(*arrays)`; return what it stored (a NumPy array of `shape`).

    The result must be a tile of exactly `dtype` and `shape` (checked when the kernel compiles)."""
    n = len(arrays)
    shapes = tuple(a.shape for a in arrays)
    out_shape = shape or (1,)

    @ct.kernel
    def kernel(a, b, c, out):
        params = (a, b, c)[:n]
        if as_tiles:
            params = _whole_tiles(params, shapes)
        r = fn(*params)
        ct.static_assert(r.dtype == dtype and r.shape == shape,
                         f"the result is {r.dtype}{r.shape}, expected {dtype}{shape}")
        ct.store(out, (0,) * len(out_shape), r)

    out = np.zeros(out_shape, dtype.numpy)
    ct.launch(None, (1,), kernel, (*arrays, *[np.zeros(1, np.float32)] * (3 - n), out))
    return out.reshape(shape)


def compute(fn, *inputs, dtype, shape):
    """`evaluate` with each input array loaded as one whole tile."""
    return evaluate(fn, *inputs, dtype=dtype, shape=shape, as_tiles=True)


def launch_on(fn, *arrays):
    """Run `fn(*arrays)` (array parameters) in a one-block kernel; the arrays are updated in place."""
    n = len(arrays)

    @ct.kernel
    def kernel(a, b, c, d):
        fn(*(a, b, c, d)[:n])

    ct.launch(None, (1,), kernel, (*arrays, *[np.zeros(1, np.float32)] * (4 - n)))


def line_of(kernel, text):
    """The file line number of the first source line of `kernel` containing `text`."""
    lines, first = inspect.getsourcelines(kernel._pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


def arange(shape, dtype=np.int32, start=0):
    """A NumPy array of `shape` holding start, start + 1, ... in C order."""
    return (np.arange(int(np.prod(shape))) + start).astype(dtype).reshape(shape)


def iota(n, start=0):
    """Tile code: the int32 tile [start, start + 1, ..., start + n - 1]."""
    return ct.arange(n, dtype=ct.int32, start=start)


BF16 = ml_dtypes.bfloat16


# ---- load / store: tile-space indexing ---------------------------------------------------------------

@ct.kernel
def copy_tiles(src, dst, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(dst, (i, j), ct.load(src, (i, j), (TM, TN)))


def test_load_store_copy_over_the_tile_space_covers_a_ragged_array():
    src = arange((10, 13), np.float32)
    dst = np.full_like(src, -1)
    ct.launch(None, (ct.cdiv(10, 4), ct.cdiv(13, 8)), copy_tiles, (src, dst, 4, 8))
    np.testing.assert_array_equal(dst, src)


def test_load_index_is_a_tile_space_index_not_an_element_offset():
    a = arange((8, 16))
    t = evaluate(lambda x: ct.load(x, (1, 2), (2, 4)), a, dtype=ct.int32, shape=(2, 4))
    np.testing.assert_array_equal(t, a[2:4, 8:12])


def test_load_accepts_a_single_scalar_index_and_an_int_shape_for_1d():
    a = arange((32,))
    t = evaluate(lambda x: ct.load(x, 3, 4), a, dtype=ct.int32, shape=(4,))
    np.testing.assert_array_equal(t, a[12:16])


def test_load_with_empty_shape_reads_one_element_as_a_0d_tile():
    a = arange((4, 8))
    t = evaluate(lambda x: ct.load(x, (2, 3), ()), a, dtype=ct.int32, shape=())
    assert t == a[2, 3]


@pytest.mark.parametrize("order", ["C", (0, 1), (-2, -1)])
def test_load_order_C_and_the_identity_tuple_keep_the_axes(order):
    a = arange((8, 16))
    t = evaluate(lambda x: ct.load(x, (1, 2), (2, 4), order=order), a, dtype=ct.int32, shape=(2, 4))
    np.testing.assert_array_equal(t, a[2:4, 8:12])


def test_load_order_F_reverses_the_axes():
    a = arange((4, 4))
    t = evaluate(lambda x: ct.load(x, (0, 0), (1, 4), order="F"), a, dtype=ct.int32, shape=(1, 4))
    assert t.tolist() == [[0, 4, 8, 12]]


@pytest.mark.parametrize("order", ["F", (1, 0), (-1, -2)])
def test_load_order_spellings_of_the_transpose_agree(order):
    a = arange((8, 4))
    t = evaluate(lambda x: ct.load(x, (1, 0), (2, 4), order=order), a, dtype=ct.int32, shape=(2, 4))
    np.testing.assert_array_equal(t, a.T[2:4, 0:4])


def test_load_order_tuple_permutes_the_array_axes_before_tiling():
    a = arange((4, 4, 8))
    t = evaluate(lambda x: ct.load(x, (1, 0, 1), (2, 4, 2), order=(2, 0, 1)), a, dtype=ct.int32, shape=(2, 4, 2))
    np.testing.assert_array_equal(t, np.transpose(a, (2, 0, 1))[2:4, 0:4, 2:4])


def test_store_order_F_writes_the_tile_transposed():
    dst = np.zeros((2, 4), np.int32)
    launch_on(lambda y: ct.store(y, (0, 0), ct.reshape(iota(8), (4, 2)), order="F"), dst)
    np.testing.assert_array_equal(dst, arange((4, 2)).T)


def test_store_drops_the_lanes_outside_the_array():
    dst = np.full(6, -1, np.int32)
    launch_on(lambda y: ct.store(y, (1,), iota(4, 10)), dst)
    assert dst.tolist() == [-1, -1, -1, -1, 10, 11]


def test_store_of_a_scalar_writes_one_element_at_the_index():
    dst = np.zeros((3, 3), np.int32)
    launch_on(lambda y: ct.store(y, (1, 2), tile=3), dst)
    assert dst.tolist() == [[0, 0, 0], [0, 0, 3], [0, 0, 0]]


def test_store_casts_the_tile_implicitly_to_the_array_dtype():
    dst = np.zeros(4, np.float32)
    launch_on(lambda y: ct.store(y, (0,), ct.arange(4, dtype=ct.int16)), dst)
    assert dst.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_store_refuses_a_narrowing_cast():
    with pytest.raises(ct.TileTypeError, match="cannot implicitly cast float32 to int32"):
        launch_on(lambda y: ct.store(y, (0,), ct.zeros((4,), ct.float32)), np.zeros(4, np.int32))


# ---- load: padding on a ragged edge --------------------------------------------------------------------

@pytest.mark.parametrize("mode, pad", [(P.ZERO, 0.0), (P.NEG_ZERO, -0.0), (P.NAN, np.nan), (P.POS_INF, np.inf),
                                       (P.NEG_INF, -np.inf), (P.UNDETERMINED, 0.0)])
def test_load_padding_mode_fills_the_ragged_edge_of_a_float_array(mode, pad):
    a = np.arange(1, 7, dtype=np.float32)
    t = evaluate(lambda x: ct.load(x, (0,), (8,), padding_mode=mode), a, dtype=ct.float32, shape=(8,))
    np.testing.assert_array_equal(t[:6], a)
    np.testing.assert_array_equal(t[6:], [pad, pad])
    assert np.signbit(t[6:]).tolist() == [np.signbit(pad)] * 2


@pytest.mark.parametrize("dtype", [ct.float16, ct.float64, ct.bfloat16, ct.int8, ct.int32, ct.int64, ct.uint8,
                                   ct.uint16, ct.bool_])
def test_load_undetermined_padding_reads_zero_as_on_the_gpu(dtype):
    a = np.ones(3, dtype.numpy)
    t = evaluate(lambda x: ct.load(x, (0,), (4,), padding_mode=P.UNDETERMINED), a, dtype=dtype, shape=(4,))
    assert t.astype(np.float64).tolist() == [1.0, 1.0, 1.0, 0.0] and not np.signbit(t[3].astype(np.float32))


def test_load_default_padding_is_undetermined():
    a = np.arange(1, 4, dtype=np.float32)
    t = evaluate(lambda x: ct.load(x, (0,), (4,)), a, dtype=ct.float32, shape=(4,))
    assert t.tolist() == [1.0, 2.0, 3.0, 0.0]


@ct.kernel
def copy_4(x, y):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (4,)))


def test_strict_padding_names_the_load_that_reads_undetermined_padding():
    x, y = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    with pytest.raises(ct.TileUndeterminedPaddingError, match=r"reads UNDETERMINED padding: block \(1,\) reads "
                                                                r"element \(6,\) outside an array of shape \(6,\)"):
        interpret(copy_4, (2,), (x, y), strict_padding=True)
    interpret(copy_4, (1,), (x, y), strict_padding=True)  # no padding read: no error
    assert y[:4].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_strict_padding_accepts_a_chosen_padding_mode():
    @ct.kernel
    def copy_zero_padded(x, y):
        ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (4,), padding_mode=P.ZERO))
    x, y = np.arange(6, dtype=np.float32), np.zeros(8, np.float32)
    interpret(copy_zero_padded, (2,), (x, y), strict_padding=True)
    assert y.tolist() == [0, 1, 2, 3, 4, 5, 0, 0]


def test_load_pads_both_ragged_dims_of_a_2d_tile():
    a = arange((3, 3), np.float32, start=1)
    t = evaluate(lambda x: ct.load(x, (0, 0), (4, 4), padding_mode=P.ZERO), a, dtype=ct.float32, shape=(4, 4))
    expected = np.zeros((4, 4), np.float32)
    expected[:3, :3] = a
    np.testing.assert_array_equal(t, expected)


# ---- check_bounds=False and the checked mode --------------------------------------------------------------

@ct.kernel
def unchecked_load(x, y):
    t = ct.load(x, (0, 0), (4, 8), check_bounds=False)
    ct.store(y, (0, 0), t)


@ct.kernel
def unchecked_store(x, y):
    ct.store(y, (0, 0), ct.load(x, (0, 0), (4, 8)), check_bounds=False)


@ct.kernel
def unchecked_gather(x, y):
    t = ct.gather(x, iota(4, -1), check_bounds=False)
    ct.store(y, (0,), t)


@ct.kernel
def unchecked_scatter(x, y):
    ct.scatter(y, (iota(4), 0), ct.load(x, (0,), (4,)), check_bounds=False)


@pytest.mark.parametrize("kernel, x, y, element", [
    (unchecked_load, np.zeros((3, 5), np.float32), np.zeros((4, 8), np.float32), "(0, 5)"),
    (unchecked_store, np.zeros((4, 8), np.float32), np.zeros((3, 5), np.float32), "(0, 5)"),
    (unchecked_gather, np.zeros(6, np.float32), np.zeros(4, np.float32), "(-1,)"),
    (unchecked_scatter, np.zeros(4, np.float32), np.zeros((3, 5), np.float32), "(3, 0)"),
])
def test_check_bounds_false_outside_the_array_raises_in_checked_mode_naming_line_and_index(kernel, x, y, element):
    with pytest.raises(ct.TileOutOfBoundsError) as info:
        interpret(kernel, (1,), (x, y))
    message = str(info.value)
    assert f"line {line_of(kernel, 'check_bounds=False')}" in message
    assert element in message


def test_launch_runs_the_interpreter_in_checked_mode():
    with pytest.raises(ct.TileOutOfBoundsError):
        ct.launch(None, (1,), unchecked_load, (np.zeros((3, 5), np.float32), np.zeros((4, 8), np.float32)))


def test_check_bounds_false_inside_the_array_behaves_like_a_checked_access():
    x = arange((4, 8), np.float32)
    y = np.zeros((4, 8), np.float32)
    interpret(unchecked_load, (1,), (x, y))
    np.testing.assert_array_equal(y, x)


def test_check_bounds_false_ignores_masked_off_lanes():
    x = arange((4,), np.float32)
    t = evaluate(lambda a: ct.gather(a, iota(8), mask=iota(8) < 4, check_bounds=False, padding_value=-1),
                 x, dtype=ct.float32, shape=(8,))
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, -1.0, -1.0, -1.0, -1.0]


def test_unchecked_mode_treats_check_bounds_false_as_bounds_checked():
    x = arange((4, 8), np.float32)
    y = np.zeros((3, 5), np.float32)
    interpret(unchecked_store, (1,), (x, y), checked=False)
    np.testing.assert_array_equal(y, x[:3, :5])


# ---- gather / scatter -------------------------------------------------------------------------------------

IDX = np.array([3, 0, 2, 1], np.int32)


def test_gather_with_a_tuple_of_index_tiles_reads_those_elements():
    a = arange((4, 5))
    cols = np.array([4, 0, 1, 3], np.int32)
    t = evaluate(lambda x, i, j: ct.gather(x, (ct.load(i, (0,), (4,)), ct.load(j, (0,), (4,)))),
                 a, IDX, cols, dtype=ct.int32, shape=(4,))
    np.testing.assert_array_equal(t, a[IDX, cols])


def test_gather_with_scalar_indices_gives_a_0d_tile():
    a = arange((4, 5))
    assert evaluate(lambda x: ct.gather(x, (2, 3)), a, dtype=ct.int32, shape=()) == a[2, 3]


def test_gather_on_a_1d_array_takes_a_bare_scalar():
    a = arange((8,), start=10)
    assert evaluate(lambda x: ct.gather(x, 5), a, dtype=ct.int32, shape=()) == 15


def test_gather_on_a_1d_array_takes_a_bare_tile():
    a = arange((8,), start=10)
    t = evaluate(lambda x, i: ct.gather(x, ct.load(i, (0,), (4,))), a, IDX, dtype=ct.int32, shape=(4,))
    np.testing.assert_array_equal(t, a[IDX])


def test_gather_broadcasts_a_scalar_index_against_a_tile_index():
    a = arange((4, 5))
    t = evaluate(lambda x: ct.gather(x, (1, iota(4))), a, dtype=ct.int32, shape=(4,))
    np.testing.assert_array_equal(t, a[1, :4])


def test_gather_broadcasts_index_shapes_to_a_common_shape():
    a = arange((4, 8))
    t = evaluate(lambda x: ct.gather(x, (iota(4)[:, None], iota(8)[None, :])), a, dtype=ct.int32, shape=(4, 8))
    np.testing.assert_array_equal(t, a)


def test_gather_accepts_unsigned_index_tiles():
    a = arange((8,), start=10)
    t = evaluate(lambda x: ct.gather(x, ct.arange(4, dtype=ct.uint32, start=4)), a, dtype=ct.int32, shape=(4,))
    np.testing.assert_array_equal(t, a[4:8])


@pytest.mark.parametrize("indices, expected", [
    (np.array([255, 0, 200, 1], np.uint8), [255, 0, 200, 1]),            # 255 is not -1
    (np.array([2**64 - 1, 2**63, 299, 300], np.uint64), [-1, -1, 299, -1]),  # huge values are out of bounds
])
def test_gather_unsigned_indices_are_never_negative(indices, expected):
    a = arange((300,))
    t = evaluate(lambda x, i: ct.gather(x, ct.load(i, (0,), (4,)), padding_value=-1), a, indices,
                 dtype=ct.int32, shape=(4,))
    assert t.tolist() == expected


def test_gather_refuses_float_indices():
    with pytest.raises(ct.TileTypeError, match="non-integer"):
        evaluate(lambda x: ct.gather(x, ct.arange(4, dtype=ct.float32)), arange((8,)), dtype=ct.int32, shape=(4,))


def test_gather_mask_tile_reads_padding_where_false():
    a = arange((8,), np.float32, start=1)
    t = evaluate(lambda x: ct.gather(x, iota(4), mask=iota(4) % 2 == 0, padding_value=-1.0),
                 a, dtype=ct.float32, shape=(4,))
    assert t.tolist() == [1.0, -1.0, 3.0, -1.0]


def test_gather_scalar_false_mask_reads_padding_everywhere():
    a = arange((8,), np.float32, start=1)
    t = evaluate(lambda x: ct.gather(x, iota(4), mask=False, padding_value=9),
                 a, dtype=ct.float32, shape=(4,))
    assert t.tolist() == [9.0] * 4


def test_gather_mask_broadcasts_to_the_index_shape():
    a = arange((2, 4))
    rows = np.array([[True], [False]])
    t = evaluate(lambda x, m: ct.gather(x, (iota(2)[:, None], iota(4)), mask=ct.load(m, (0, 0), (2, 1))),
                 a, rows, dtype=ct.int32, shape=(2, 4))
    assert t.tolist() == [[0, 1, 2, 3], [0, 0, 0, 0]]


def test_gather_padding_value_tile_broadcasts_and_fills_out_of_bounds_lanes():
    a = arange((4,), np.float32)
    t = evaluate(lambda x: ct.gather(x, iota(8), padding_value=ct.arange(8, dtype=ct.float32) * 10),
                 a, dtype=ct.float32, shape=(8,))
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 40.0, 50.0, 60.0, 70.0]


def test_gather_index_past_the_end_reads_zero_by_default():
    a = arange((4,), start=1)
    t = evaluate(lambda x: ct.gather(x, iota(4, 2)), a, dtype=ct.int32, shape=(4,))
    assert t.tolist() == [3, 4, 0, 0]


def test_gather_negative_index_is_out_of_bounds():
    a = arange((8,), start=1)
    t = evaluate(lambda x: ct.gather(x, iota(4, -2), padding_value=-7),
                 a, dtype=ct.int32, shape=(4,))
    assert t.tolist() == [-7, -7, 1, 2]


def test_gather_padding_constant_out_of_the_dtype_range_is_refused():
    with pytest.raises(ct.TileValueError, match="out of range of int8"):
        evaluate(lambda x: ct.gather(x, iota(4), padding_value=128),
                 np.zeros(4, np.int8), dtype=ct.int8, shape=(4,))


def test_gather_from_a_bool_array_pads_with_false_by_default():
    a = np.array([True, True], bool)
    t = evaluate(lambda x: ct.gather(x, iota(4)), a, dtype=ct.bool_, shape=(4,))
    assert t.tolist() == [True, True, False, False]


def test_scatter_with_a_tuple_of_index_tiles_writes_those_elements():
    y = np.zeros((4, 5), np.int32)
    cols = np.array([4, 0, 1, 3], np.int32)
    launch_on(lambda dst, i, j: ct.scatter(dst, (ct.load(i, (0,), (4,)), ct.load(j, (0,), (4,))),
                                           iota(4, 1)), y, IDX, cols)
    expected = np.zeros((4, 5), np.int32)
    expected[IDX, cols] = [1, 2, 3, 4]
    np.testing.assert_array_equal(y, expected)


def test_scatter_broadcasts_a_scalar_value_and_casts_it_to_the_array_dtype():
    y = np.zeros(8, np.float32)
    launch_on(lambda dst, i: ct.scatter(dst, ct.load(i, (0,), (4,)), 7), y, IDX)
    assert y.tolist() == [7.0, 7.0, 7.0, 7.0, 0.0, 0.0, 0.0, 0.0]


def test_scatter_with_a_scalar_index_writes_one_element():
    y = np.zeros((2, 3), np.int32)
    launch_on(lambda dst: ct.scatter(dst, (1, 2), 5), y)
    assert y.tolist() == [[0, 0, 0], [0, 0, 5]]


def test_scatter_mask_skips_masked_lanes():
    y = np.full(4, -1, np.int32)
    launch_on(lambda dst: ct.scatter(dst, iota(4), iota(4), mask=iota(4) >= 2), y)
    assert y.tolist() == [-1, -1, 2, 3]


def test_scatter_drops_out_of_bounds_lanes_including_negative_indices():
    y = np.zeros(4, np.int32)
    launch_on(lambda dst: ct.scatter(dst, iota(8, -2), iota(8, 1)), y)
    assert y.tolist() == [3, 4, 5, 6]


# ---- load_advanced_indexing / store_advanced_indexing -----------------------------------------------------

ROWS = np.array([5, 0, 7, 2], np.int32)


def test_load_advanced_indexing_sparse_rows_and_a_dense_slice():
    a = arange((8, 8))
    t = evaluate(lambda x, r: ct.load_advanced_indexing(x, (ct.load(r, (0,), (4,)), ct.Slice(1, 4))),
                 a, ROWS, dtype=ct.int32, shape=(4, 4))
    np.testing.assert_array_equal(t, a[ROWS, 1:5])


def test_load_advanced_indexing_sparse_columns_may_repeat():
    a = arange((8, 8))
    cols = np.array([7, 0, 3, 3], np.int32)
    t = evaluate(lambda x, c: ct.load_advanced_indexing(x, (ct.Slice(2, 2), ct.load(c, (0,), (4,)))),
                 a, cols, dtype=ct.int32, shape=(2, 4))
    np.testing.assert_array_equal(t, a[2:4][:, cols])


def test_load_advanced_indexing_slice_start_may_be_a_runtime_scalar():
    a = arange((8, 8))
    start = np.array([3], np.int32)
    t = evaluate(lambda x, s: ct.load_advanced_indexing(x, (iota(2), ct.Slice(ct.load(s, (0,), ()), 4))),
                 a, start, dtype=ct.int32, shape=(2, 4))
    np.testing.assert_array_equal(t, a[0:2, 3:7])


def test_load_advanced_indexing_on_a_3d_array():
    a = arange((4, 8, 4))
    t = evaluate(lambda x, r: ct.load_advanced_indexing(x, (ct.Slice(1, 2), ct.load(r, (0,), (4,)), ct.Slice(2, 2))),
                 a, ROWS, dtype=ct.int32, shape=(2, 4, 2))
    np.testing.assert_array_equal(t, a[1:3][:, ROWS][:, :, 2:4])


def test_load_advanced_indexing_pads_out_of_bounds_sparse_and_dense_elements():
    a = arange((4, 4), np.float32, start=1)
    rows = np.array([1, -1, 4, 3], np.int32)
    def padded_rows(x, r):
        return ct.load_advanced_indexing(x, (ct.load(r, (0,), (4,)), ct.Slice(2, 4)), padding_mode=P.ZERO)

    t = evaluate(padded_rows, a, rows, dtype=ct.float32, shape=(4, 4))
    assert t.tolist() == [[7.0, 8.0, 0.0, 0.0], [0.0] * 4, [0.0] * 4, [15.0, 16.0, 0.0, 0.0]]


def test_load_advanced_indexing_default_padding_is_undetermined():
    a = arange((4, 4), np.float32)
    t = evaluate(lambda x: ct.load_advanced_indexing(x, (iota(2), ct.Slice(2, 4))),
                 a, dtype=ct.float32, shape=(2, 4))
    assert t[:, :2].tolist() == a[0:2, 2:4].tolist() and (t[:, 2:] == 0).all()


def test_load_advanced_indexing_needs_exactly_one_sparse_index():
    with pytest.raises(ct.TileTypeError, match="exactly one index"):
        evaluate(lambda x: ct.load_advanced_indexing(x, (iota(2), iota(2))),
                 arange((4, 4)), dtype=ct.int32, shape=(2, 2))


def test_store_advanced_indexing_writes_rows_and_drops_out_of_bounds_elements():
    y = np.zeros((4, 4), np.int32)
    rows = np.array([2, -1, 0, 9], np.int32)
    launch_on(lambda dst, r: ct.store_advanced_indexing(dst, (ct.load(r, (0,), (4,)), ct.Slice(2, 4)),
                                                        ct.reshape(iota(16, 1), (4, 4))),
              y, rows)
    assert y.tolist() == [[0, 0, 9, 10], [0, 0, 0, 0], [0, 0, 1, 2], [0, 0, 0, 0]]


def test_store_advanced_indexing_needs_the_exact_indexed_shape():
    with pytest.raises(ct.TileTypeError, match="must equal the indexed shape"):
        launch_on(lambda dst: ct.store_advanced_indexing(dst, (iota(4), ct.Slice(0, 4)),
                                                         ct.zeros((4, 1), ct.int32)), np.zeros((4, 4), np.int32))


# ---- creation --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, start, step, expected", [
    (ct.int32, 0, 1, [0, 1, 2, 3]),
    (ct.int32, 5, 3, [5, 8, 11, 14]),
    (ct.int32, 10, -3, [10, 7, 4, 1]),
    (ct.float32, 0.5, 0.25, [0.5, 0.75, 1.0, 1.25]),
    (ct.int16, 8.5, 1, [8, 9, 10, 11]),  # a float start is truncated to the integer dtype
    (ct.uint8, 0, 2, [0, 2, 4, 6]),
])
def test_arange_is_start_plus_step_times_iota(dtype, start, step, expected):
    assert evaluate(lambda: ct.arange(4, dtype=dtype, start=start, step=step), dtype=dtype, shape=(4,)).tolist() == expected


def test_arange_start_and_step_may_be_runtime_scalars():
    params = np.array([100, -2], np.int32)
    t = evaluate(lambda p: ct.arange(4, dtype=ct.int32, start=ct.load(p, (0,), ()), step=ct.load(p, (1,), ())),
                 params, dtype=ct.int32, shape=(4,))
    assert t.tolist() == [100, 98, 96, 94]


def test_arange_size_must_be_a_power_of_two():
    with pytest.raises(ct.TileTypeError, match="power of 2"):
        evaluate(lambda: ct.arange(3, dtype=ct.int32), dtype=ct.int32, shape=(3,))


def test_full_zeros_and_ones():
    halves = evaluate(lambda: ct.full((2, 4), 1.5, ct.float16), dtype=ct.float16, shape=(2, 4))
    assert halves.tolist() == [[1.5] * 4] * 2
    assert evaluate(lambda: ct.full(4, 7, ct.int8), dtype=ct.int8, shape=(4,)).tolist() == [7] * 4
    assert evaluate(lambda: ct.full((), 3, ct.int64), dtype=ct.int64, shape=()) == 3
    assert evaluate(lambda: ct.zeros((2,), ct.uint16), dtype=ct.uint16, shape=(2,)).tolist() == [0, 0]
    assert evaluate(lambda: ct.ones((2,), ct.float32), dtype=ct.float32, shape=(2,)).tolist() == [1.0, 1.0]
    assert evaluate(lambda: ct.ones((2,), ct.bool_), dtype=ct.bool_, shape=(2,)).tolist() == [True, True]


def test_full_fill_value_may_be_a_runtime_scalar():
    v = np.array([-6], np.int32)
    t = evaluate(lambda p: ct.full((2, 2), ct.load(p, (0,), ()), ct.int32), v, dtype=ct.int32, shape=(2, 2))
    assert t.tolist() == [[-6, -6], [-6, -6]]


def test_full_shape_must_have_power_of_two_dims():
    with pytest.raises(ct.TileTypeError, match="power-of-two"):
        evaluate(lambda: ct.full((2, 3), 0, ct.int32), dtype=ct.int32, shape=(2, 3))


# ---- casts -------------------------------------------------------------------------------------------------

def test_astype_float_to_int_truncates_toward_zero():
    x = np.array([-2.7, -0.5, 0.5, 2.7, -3.0, 3.99, 100.2, -100.9], np.float32)
    t = compute(lambda a: a.astype(ct.int32), x, dtype=ct.int32, shape=(8,))
    assert t.tolist() == [-2, 0, 0, 2, -3, 3, 100, -100]


@pytest.mark.parametrize("src", [np.float16, ct.bfloat16.numpy, np.float32, np.float64])
@pytest.mark.parametrize("dst, expected", [
    (ct.int32, [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, -2, 127]),
    (ct.int8, [0, 127, -128, 127, -128, -2, 127]),
    (ct.uint8, [0, 255, 0, 255, 0, 0, 127]),
    (ct.int64, [0, 2**63 - 1, -2**63, 2**63 - 1, -2**63, -2, 127]),
    (ct.uint64, [0, 2**64 - 1, 0, 2**64 - 1, 0, 0, 127]),
])
def test_astype_float_to_int_saturates_and_turns_nan_into_zero(src, dst, expected):
    with np.errstate(over="ignore"):  # 1e30 is an infinity in float16
        x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, -2.5, 127.5]).astype(src)
    got = evaluate(lambda a: ct.load(a, (0,), (8,), padding_mode=P.ZERO).astype(dst), x, dtype=dst, shape=(8,))
    assert got[:7].tolist() == expected


def test_astype_float16_to_int_truncates_toward_zero():
    x = np.array([-1.5, 1.5, -0.25, 7.75], np.float16)
    assert compute(lambda a: ct.astype(a, ct.int16), x, dtype=ct.int16, shape=(4,)).tolist() == [-1, 1, 0, 7]


def test_astype_int_to_bool_is_nonzero():
    x = np.array([0, 1, -3, 256], np.int32)
    assert compute(lambda a: a.astype(ct.bool_), x, dtype=ct.bool_, shape=(4,)).tolist() == [False, True, True, True]


def test_astype_bool_to_numbers_is_zero_or_one():
    x = np.array([True, False, True, False])
    assert compute(lambda a: a.astype(ct.int32), x, dtype=ct.int32, shape=(4,)).tolist() == [1, 0, 1, 0]
    assert compute(lambda a: a.astype(ct.float32), x, dtype=ct.float32, shape=(4,)).tolist() == [1.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("src, values, dst, expected", [
    (np.int32, [300, -1, 127, 128], ct.int8, [44, -1, 127, -128]),
    (np.int8, [-1, -128, 0, 127], ct.int32, [-1, -128, 0, 127]),
    (np.int8, [-1, -128, 0, 127], ct.uint8, [255, 128, 0, 127]),
    (np.uint8, [255, 128, 0, 1], ct.int32, [255, 128, 0, 1]),
    (np.uint8, [255, 128, 0, 1], ct.int8, [-1, -128, 0, 1]),
    (np.int32, [16777217, -16777217, 3, 0], ct.float32, [16777216.0, -16777216.0, 3.0, 0.0]),
])
def test_astype_between_integers_and_to_float_follows_the_source_signedness(src, values, dst, expected):
    x = np.array(values, src)
    assert compute(lambda a: a.astype(dst), x, dtype=dst, shape=(4,)).tolist() == expected


def test_astype_to_16_bit_floats_rounds_to_nearest():
    x = np.array([1 / 3, 1e-3, 65504.0, -2.5], np.float32)
    np.testing.assert_array_equal(compute(lambda a: a.astype(ct.float16), x, dtype=ct.float16, shape=(4,)),
                                  x.astype(np.float16))
    np.testing.assert_array_equal(compute(lambda a: a.astype(ct.bfloat16), x, dtype=ct.bfloat16, shape=(4,)),
                                  x.astype(BF16))


def test_astype_to_the_same_dtype_is_the_identity():
    x = arange((4,), np.float32)
    np.testing.assert_array_equal(compute(lambda a: a.astype(ct.float32), x, dtype=ct.float32, shape=(4,)), x)


def test_bitcast_reinterprets_the_bits():
    x = np.array([1.0, -2.0, 0.0, -0.0], np.float32)
    t = compute(lambda a: ct.bitcast(a, ct.int32), x, dtype=ct.int32, shape=(4,))
    np.testing.assert_array_equal(t, x.view(np.int32))
    h = np.array([1.0, -1.0], np.float16)
    assert compute(lambda a: ct.bitcast(a, ct.uint16), h, dtype=ct.uint16, shape=(2,)).tolist() == [0x3C00, 0xBC00]


def test_bitcast_needs_equal_bit_widths():
    with pytest.raises(ct.TileTypeError, match="bit width"):
        compute(lambda a: ct.bitcast(a, ct.int16), np.zeros(4, np.float32), dtype=ct.int16, shape=(4,))


def test_bitcast_refuses_bool():
    with pytest.raises(ct.TileTypeError, match="bool"):
        compute(lambda a: ct.bitcast(a, ct.int8), np.zeros(4, bool), dtype=ct.int8, shape=(4,))


# ---- shape ops ------------------------------------------------------------------------------------------

X248 = arange((2, 4, 8))


@pytest.mark.parametrize("fn, shape", [
    (lambda t: ct.reshape(t, (8, -1)), (8, 8)),
    (lambda t: ct.reshape(t, -1), (64,)),
    (lambda t: ct.reshape(t, (4, 16)), (4, 16)),
    (lambda t: t.reshape(2, 32), (2, 32)),
    (lambda t: t.reshape((-1, 2, 2)), (16, 2, 2)),
])
def test_reshape_keeps_c_order_and_infers_one_minus_one(fn, shape):
    np.testing.assert_array_equal(compute(fn, X248, dtype=ct.int32, shape=shape), X248.reshape(shape))


def test_reshape_one_element_tile_to_0d():
    assert compute(lambda t: ct.reshape(t, ()), np.array([[5]], np.int32), dtype=ct.int32, shape=()) == 5


@pytest.mark.parametrize("shape, message", [((-1, -1), "Only one dimension can be -1"), ((4, 4), "Cannot reshape")])
def test_reshape_refuses_bad_shapes(shape, message):
    with pytest.raises(ct.TileTypeError, match=message):
        compute(lambda t: ct.reshape(t, shape), X248, dtype=ct.int32, shape=(4, 4))


@pytest.mark.parametrize("axes", [(2, 0, 1), (1, 2, 0), (0, 2, 1), (-1, 0, 1)])
def test_permute_matches_numpy_transpose(axes):
    expected = np.transpose(X248, axes)
    np.testing.assert_array_equal(compute(lambda t: ct.permute(t, axes), X248, dtype=ct.int32, shape=expected.shape),
                                  expected)


def test_permute_method_matches_the_function():
    np.testing.assert_array_equal(compute(lambda t: t.permute((2, 0, 1)), X248, dtype=ct.int32, shape=(8, 2, 4)),
                                  np.transpose(X248, (2, 0, 1)))


@pytest.mark.parametrize("axes", [(0, 0, 1), (0, 1)])
def test_permute_refuses_non_permutations(axes):
    with pytest.raises(ct.TileTypeError):
        compute(lambda t: ct.permute(t, axes), X248, dtype=ct.int32, shape=(2, 2, 4))


def test_transpose_of_a_2d_tile():
    x = arange((4, 8))
    np.testing.assert_array_equal(compute(lambda t: ct.transpose(t), x, dtype=ct.int32, shape=(8, 4)), x.T)
    np.testing.assert_array_equal(compute(lambda t: t.transpose(), x, dtype=ct.int32, shape=(8, 4)), x.T)


def test_transpose_with_explicit_axes_swaps_those_axes():
    np.testing.assert_array_equal(compute(lambda t: ct.transpose(t, 0, 2), X248, dtype=ct.int32, shape=(8, 4, 2)),
                                  np.swapaxes(X248, 0, 2))
    np.testing.assert_array_equal(compute(lambda t: ct.transpose(t, -1, 1), X248, dtype=ct.int32, shape=(2, 8, 4)),
                                  np.swapaxes(X248, 1, 2))


def test_transpose_with_the_same_axis_twice_is_the_identity():
    np.testing.assert_array_equal(compute(lambda t: ct.transpose(t, 1, 1), X248, dtype=ct.int32, shape=(2, 4, 8)), X248)


@pytest.mark.parametrize("shape", [(2, 4, 8), (2, 4, 2, 2)])
def test_transpose_without_axes_swaps_the_first_two_dims_of_any_rank(shape):
    x = arange(shape)
    expected = np.swapaxes(x, 0, 1)
    np.testing.assert_array_equal(compute(lambda t: ct.transpose(t), x, dtype=ct.int32, shape=expected.shape), expected)


def test_transpose_of_rank_below_2_is_unchanged():
    x = arange((8,))
    np.testing.assert_array_equal(compute(lambda t: ct.transpose(t), x, dtype=ct.int32, shape=(8,)), x)
    assert compute(lambda t: ct.transpose(t.reshape(())), np.array([4], np.int32), dtype=ct.int32, shape=()) == 4


def test_transpose_with_one_axis_is_refused():
    with pytest.raises(ct.TileTypeError, match="both"):
        compute(lambda t: ct.transpose(t, 0), X248, dtype=ct.int32, shape=(4, 2, 8))


X4 = arange((4,))


@pytest.mark.parametrize("fn, shape", [
    (lambda t: ct.expand_dims(t, 0), (1, 4)),
    (lambda t: ct.expand_dims(t, 1), (4, 1)),
    (lambda t: ct.expand_dims(t, -1), (4, 1)),
    (lambda t: t[None], (1, 4)),
    (lambda t: t[:, None], (4, 1)),
    (lambda t: t[..., None], (4, 1)),
    (lambda t: t[None, :, None], (1, 4, 1)),
])
def test_expand_dims_and_none_indexing_insert_a_size_1_axis(fn, shape):
    np.testing.assert_array_equal(compute(fn, X4, dtype=ct.int32, shape=shape), X4.reshape(shape))


def test_indexing_a_tile_with_an_integer_is_refused():
    with pytest.raises(ct.TileTypeError, match="Directly indexing a tile"):
        compute(lambda t: t[0], X4, dtype=ct.int32, shape=())


@pytest.mark.parametrize("src_shape, shape", [((4, 1), (4, 4)), ((4,), (2, 4)), ((1,), (8,)), ((1, 4), (2, 2, 4))])
def test_broadcast_to_follows_numpy(src_shape, shape):
    x = arange(src_shape)
    np.testing.assert_array_equal(compute(lambda t: ct.broadcast_to(t, shape), x, dtype=ct.int32, shape=shape),
                                  np.broadcast_to(x, shape))


def test_broadcast_to_of_a_0d_tile():
    t = evaluate(lambda: ct.broadcast_to(ct.full((), 3, ct.int32), (2, 2)), dtype=ct.int32, shape=(2, 2))
    assert t.tolist() == [[3, 3], [3, 3]]


def test_broadcast_to_an_incompatible_shape_is_refused():
    with pytest.raises(ct.TileTypeError, match="broadcast"):
        compute(lambda t: ct.broadcast_to(t, (4, 2)), arange((1, 4)), dtype=ct.int32, shape=(4, 2))


A24, B24 = arange((2, 4)), arange((2, 4), start=100)


@pytest.mark.parametrize("axis, shape", [(0, (4, 4)), (1, (2, 8)), (-1, (2, 8))])
def test_cat_concatenates_two_tiles_along_an_axis(axis, shape):
    np.testing.assert_array_equal(compute(lambda a, b: ct.cat((a, b), axis), A24, B24, dtype=ct.int32, shape=shape),
                                  np.concatenate([A24, B24], axis))


def test_cat_of_one_tile_returns_it():
    np.testing.assert_array_equal(compute(lambda a: ct.cat((a,), 0), A24, dtype=ct.int32, shape=(2, 4)), A24)


@pytest.mark.parametrize("fn, error", [
    (lambda a, b: ct.cat((a, b, a, b), 0), ct.TileTypeError),
    (lambda a, b: ct.cat((a, b.astype(ct.int16)), 0), ct.TileTypeError),
    (lambda a, b: ct.cat((a, ct.cat((b, b), 0)), 0), ct.TileTypeError),  # 2 + 4 rows is not a power of two
    (lambda a, b: ct.cat((a, ct.cat((b, b), 1)), 0), ct.TileTypeError),  # 4 vs 8 columns
])
def test_cat_refuses_incompatible_tiles(fn, error):
    with pytest.raises(error):
        compute(fn, A24, B24, dtype=ct.int32, shape=(4, 4))


def test_where_broadcasts_condition_and_operands():
    cond = np.array([[True], [False]])
    x = arange((1, 4))
    t = compute(lambda c, a: ct.where(c, a, -1), cond, x, dtype=ct.int32, shape=(2, 4))
    np.testing.assert_array_equal(t, np.where(cond, x, -1))


@pytest.mark.parametrize("fn, dtype, expected", [
    (lambda c, i, f: ct.where(c, i, f), ct.float32, [1.0, 1.5, 3.0, 3.5]),
    (lambda c, i, f: ct.where(c, 1.0, -1.0), ct.float32, [1.0, -1.0, 1.0, -1.0]),
    (lambda c, i, f: ct.where(c, f.astype(ct.float16), 0.0), ct.float16, [0.5, 0.0, 2.5, 0.0]),
    (lambda c, i, f: ct.where(c, i.astype(ct.int8), 1), ct.int8, [1, 1, 3, 1]),
    (lambda c, i, f: ct.where(c, i, 2.5), ct.float32, [1.0, 2.5, 3.0, 2.5]),
])
def test_where_promotes_the_two_choices(fn, dtype, expected):
    cond = np.array([True, False, True, False])
    i = np.array([1, 2, 3, 4], np.int32)
    f = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    assert compute(fn, cond, i, f, dtype=dtype, shape=(4,)).tolist() == expected


def test_where_treats_an_integer_condition_as_nonzero():
    c = np.array([0, 3, -1, 0], np.int32)
    assert compute(lambda m: ct.where(m, 1, 0), c, dtype=ct.int32, shape=(4,)).tolist() == [0, 1, 1, 0]


X48 = arange((4, 8))


def test_extract_returns_the_subtile_at_a_subtile_grid_index():
    np.testing.assert_array_equal(compute(lambda t: ct.extract(t, (1, 1), (2, 4)), X48, dtype=ct.int32, shape=(2, 4)),
                                  X48[2:4, 4:8])
    np.testing.assert_array_equal(compute(lambda t: t.extract((0, 3), (4, 2)), X48, dtype=ct.int32, shape=(4, 2)),
                                  X48[:, 6:8])


def test_extract_index_may_be_a_runtime_scalar():
    k = np.array([3], np.int32)
    t = compute(lambda t, i: ct.extract(t, (0, i.item()), (4, 2)), X48, k, dtype=ct.int32, shape=(4, 2))
    np.testing.assert_array_equal(t, X48[:, 6:8])


@ct.kernel
def subtile_per_block(x, extracted, inserted):
    i = ct.bid(0)
    t = ct.load(x, (0, 0), (4, 8))
    ct.store(extracted, (i, 0), ct.extract(t, (i, 1), (2, 4)))
    ct.store(inserted, (i, 0, 0), ct.insert(t, (i, 1), ct.full((2, 4), -1, ct.int32)).reshape((1, 4, 8)))


def test_extract_and_insert_index_may_differ_per_block():
    extracted, inserted = np.zeros((4, 4), np.int32), np.zeros((2, 4, 8), np.int32)
    ct.launch(None, (2,), subtile_per_block, (X48, extracted, inserted))
    np.testing.assert_array_equal(extracted, X48[:, 4:8])
    for i in range(2):
        expected = X48.copy()
        expected[2 * i:2 * i + 2, 4:8] = -1
        np.testing.assert_array_equal(inserted[i], expected)


@ct.kernel
def extract_second_half(x, out):
    t = ct.load(x, (ct.bid(0),), (8,))
    ct.store(out, (ct.bid(0),), ct.extract(t, (1,), (4,)))


def test_extract_with_a_constant_index_takes_each_blocks_own_subtile():
    out = np.zeros(8, np.int32)
    ct.launch(None, (2,), extract_second_half, (np.arange(16, dtype=np.int32), out))
    assert out.tolist() == [4, 5, 6, 7, 12, 13, 14, 15]


def test_extract_with_empty_shape_returns_one_element():
    assert compute(lambda t: ct.extract(t, (2, 5), ()), X48, dtype=ct.int32, shape=()) == X48[2, 5]


def test_extract_constant_index_out_of_range_is_refused():
    with pytest.raises(ct.TileTypeError, match="out of bounds"):
        compute(lambda t: ct.extract(t, (2, 0), (2, 4)), X48, dtype=ct.int32, shape=(2, 4))


def test_insert_replaces_the_subtile_at_a_subtile_grid_index():
    t = compute(lambda t: ct.insert(t, (1, 0), ct.full((2, 4), -1, ct.int32)), X48, dtype=ct.int32, shape=(4, 8))
    expected = X48.copy()
    expected[2:4, 0:4] = -1
    np.testing.assert_array_equal(t, expected)


def test_insert_of_a_scalar_replaces_one_element():
    t = compute(lambda t: t.insert((1, 2), 99), X48, dtype=ct.int32, shape=(4, 8))
    expected = X48.copy()
    expected[1, 2] = 99
    np.testing.assert_array_equal(t, expected)


def test_insert_refuses_a_different_dtype():
    with pytest.raises(ct.TileTypeError, match="Cannot insert"):
        compute(lambda t: ct.insert(t, (0, 0), ct.zeros((2, 4), ct.int16)), X48, dtype=ct.int32, shape=(4, 8))


# ---- elementwise: classification, operators, promotion -----------------------------------------------------

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 6e4, -0.0, 1.0], np.float32)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("op, reference", [(ct.isnan, np.isnan), (ct.isinf, np.isinf), (ct.isfinite, np.isfinite)])
def test_float_classification_gives_bool(op, reference, np_dtype):
    x = SPECIAL.astype(np_dtype)
    np.testing.assert_array_equal(compute(lambda t: op(t), x, dtype=ct.bool_, shape=(8,)), reference(x))


@pytest.mark.parametrize("np_dtype, fn, dtype, expected", [
    (np.float16, lambda t: t * 2, ct.float16, [2.0, 4.0, 6.0, 8.0]),
    (np.float16, lambda t: t * 2.5, ct.float16, [2.5, 5.0, 7.5, 10.0]),
    (np.int8, lambda t: t + 1, ct.int8, [2, 3, 4, 5]),
    (np.int8, lambda t: t * 64, ct.int8, [64, -128, -64, 0]),  # wraps in int8
    (np.uint8, lambda t: t - 2, ct.uint8, [255, 0, 1, 2]),
    (np.int32, lambda t: t * 0.5, ct.float32, [0.5, 1.0, 1.5, 2.0]),
    (np.int64, lambda t: t + 1, ct.int64, [2, 3, 4, 5]),
    (np.bool_, lambda t: t + 1, ct.int32, [2, 2, 2, 2]),
    (BF16, lambda t: t + 1, ct.bfloat16, [2.0, 3.0, 4.0, 5.0]),
    (np.float64, lambda t: 1 - t, ct.float64, [0.0, -1.0, -2.0, -3.0]),
])
def test_loose_constants_take_the_dtype_of_the_tile_in_their_category(np_dtype, fn, dtype, expected):
    x = np.array([1, 2, 3, 4]).astype(np_dtype)
    assert compute(fn, x, dtype=dtype, shape=(4,)).tolist() == expected


def test_loose_integer_constant_out_of_the_tile_dtype_range_is_refused():
    with pytest.raises(ct.TileValueError, match="out of range of int8"):
        compute(lambda t: t + 300, np.zeros(4, np.int8), dtype=ct.int8, shape=(4,))


@pytest.mark.parametrize("a_dtype, b_dtype, dtype", [
    (np.int16, np.int32, ct.int32), (np.float16, np.float32, ct.float32), (np.uint8, np.float16, ct.float16),
    (np.int32, np.float16, ct.float16), (np.bool_, np.int8, ct.int8), (BF16, np.float32, ct.float32),
    (np.int64, BF16, ct.bfloat16), (np.uint16, np.uint32, ct.uint32),
])
def test_binary_ops_promote_two_tiles(a_dtype, b_dtype, dtype):
    a = np.array([1, 0, 1, 1]).astype(a_dtype)
    b = np.array([1, 2, 3, 4]).astype(b_dtype)
    t = compute(lambda x, y: x + y, a, b, dtype=dtype, shape=(4,))
    assert t.tolist() == [2, 2, 4, 5]


@pytest.mark.parametrize("a_dtype, b_dtype", [(np.int8, np.uint8), (np.int32, np.uint32), (np.float16, BF16)])
def test_binary_ops_refuse_implicit_promotion_across_signedness_and_half_formats(a_dtype, b_dtype):
    with pytest.raises(ct.TileTypeError, match="Implicit promotion"):
        compute(lambda x, y: x * y, np.ones(4, a_dtype), np.ones(4, b_dtype), dtype=ct.float32, shape=(4,))


@ct.kernel
def add_scalar_argument(x, out, s):
    r = ct.load(x, (0,), (4,)) + s
    ct.static_assert(r.dtype == out.dtype, f"{r.dtype} != {out.dtype}")
    ct.store(out, (0,), r)


@pytest.mark.parametrize("x_dtype, scalar, out_dtype", [(np.float16, 1.5, np.float32), (np.int8, 1, np.int32),
                                                        (np.float16, 1, np.float16)])
def test_python_scalar_arguments_are_strict_int32_or_float32_scalars(x_dtype, scalar, out_dtype):
    x = np.arange(4).astype(x_dtype)
    out = np.zeros(4, out_dtype)
    ct.launch(None, (1,), add_scalar_argument, (x, out, scalar))
    np.testing.assert_array_equal(out, x.astype(out_dtype) + scalar)


@pytest.mark.parametrize("np_dtype", [np.int8, np.int32, np.int64])
def test_true_division_of_integers_gives_float32(np_dtype):
    a = np.array([7, -7, 1, 0], np_dtype)
    b = np.array([2, 2, 4, 3], np_dtype)
    assert compute(lambda x, y: x / y, a, b, dtype=ct.float32, shape=(4,)).tolist() == [3.5, -3.5, 0.25, 0.0]


def test_floor_division_and_modulo_of_integers_follow_python_on_negative_values():
    a = np.array([-7, 7, -7, 7, 0, -1, 6, -6], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5, -4, 4], np.int32)
    pairs = list(zip(a.tolist(), b.tolist()))
    assert compute(lambda x, y: x // y, a, b, dtype=ct.int32, shape=(8,)).tolist() == [x // y for x, y in pairs]
    assert compute(lambda x, y: x % y, a, b, dtype=ct.int32, shape=(8,)).tolist() == [x % y for x, y in pairs]


def test_floor_division_and_modulo_of_floats_follow_python():
    a = np.array([-7.5, 7.5, -7.5, 7.5], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0], np.float32)
    assert compute(lambda x, y: x // y, a, b, dtype=ct.float32, shape=(4,)).tolist() == [-4.0, 3.0, 3.0, -4.0]
    assert compute(lambda x, y: x % y, a, b, dtype=ct.float32, shape=(4,)).tolist() == [0.5, 1.5, -1.5, -0.5]


def test_builtin_divmod_on_tiles_gives_floor_quotient_and_python_remainder():
    a = np.array([-7, 7, -7, 7], np.int32)
    t = compute(lambda x: ct.cat(divmod(x, 3), 0), a, dtype=ct.int32, shape=(8,))
    assert t.tolist() == [-3, 2, -3, 2, 2, 1, 2, 1]


def test_shifts_are_arithmetic_for_signed_and_logical_for_unsigned():
    s = np.array([-8, 8, 1, -128], np.int32)
    assert compute(lambda x: x >> 1, s, dtype=ct.int32, shape=(4,)).tolist() == [-4, 4, 0, -64]
    assert compute(lambda x: x << 2, s, dtype=ct.int32, shape=(4,)).tolist() == [-32, 32, 4, -512]
    u = np.array([0x80000000, 0xF0, 1, 0], np.uint32)
    assert compute(lambda x: x >> 4, u, dtype=ct.uint32, shape=(4,)).tolist() == [0x08000000, 0xF, 0, 0]
    i8 = np.array([-128, 64, -1, 3], np.int8)
    assert compute(lambda x: x >> 7, i8, dtype=ct.int8, shape=(4,)).tolist() == [-1, 0, -1, 0]


def test_shift_amounts_may_be_a_tile():
    a = np.array([1, 1, 1, 1], np.int32)
    k = np.array([0, 1, 2, 3], np.int32)
    assert compute(lambda x, y: x << y, a, k, dtype=ct.int32, shape=(4,)).tolist() == [1, 2, 4, 8]


def test_bitwise_operators_on_integers_and_bools():
    a = np.array([0b1100, 0b1010, -1, 0], np.int32)
    b = np.array([0b1010, 0b0110, 5, -1], np.int32)
    assert compute(lambda x, y: x & y, a, b, dtype=ct.int32, shape=(4,)).tolist() == (a & b).tolist()
    assert compute(lambda x, y: x | y, a, b, dtype=ct.int32, shape=(4,)).tolist() == (a | b).tolist()
    assert compute(lambda x, y: x ^ y, a, b, dtype=ct.int32, shape=(4,)).tolist() == (a ^ b).tolist()
    assert compute(lambda x: ~x, a, dtype=ct.int32, shape=(4,)).tolist() == (~a).tolist()
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    xnor = compute(lambda x, y: (x & y) | ~(x | y), p, q, dtype=ct.bool_, shape=(4,))
    assert xnor.tolist() == [True, False, False, True]


def test_bitwise_with_a_loose_constant_keeps_the_tile_dtype():
    a = np.array([0x7F, -1, 0x10, 3], np.int8)
    assert compute(lambda x: x & 0x0F, a, dtype=ct.int8, shape=(4,)).tolist() == [15, 15, 0, 3]


@pytest.mark.parametrize("a_dtype, b_dtype, message", [
    (np.int8, np.int32, "Bitwise operands must have same data type, got int8 and int32"),
    (np.bool_, np.int8, "Bitwise operands must have same data type"),
    (np.float32, np.float32, "Bitwise operations require integers or bool, got float32 and float32"),
    (np.bool_, np.float32, "Bitwise operations require integers or bool, got bool_ and float32")])
def test_bitwise_refuses_mixed_dtypes_and_floats(a_dtype, b_dtype, message):
    with pytest.raises(ct.TileTypeError, match=message):
        compute(lambda x, y: x & y, np.ones(4, a_dtype), np.ones(4, b_dtype), dtype=ct.int32, shape=(4,))


@pytest.mark.parametrize("a_dtype, b_dtype", [(np.float32, np.int32), (np.int32, np.float64), (np.int32, np.bool_)])
def test_shifts_refuse_floats_and_bool(a_dtype, b_dtype):
    with pytest.raises(ct.TileTypeError, match="Bitwise shift requires an integer operand"):
        compute(lambda x, y: x << y, np.ones(4, a_dtype), np.ones(4, b_dtype), dtype=ct.int32, shape=(4,))


def test_invert_of_a_bool_tile_is_a_logical_not():
    p = np.array([True, False, True, False])
    assert compute(lambda x: ~x, p, dtype=ct.bool_, shape=(4,)).tolist() == [False, True, False, True]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
def test_cdiv_of_narrow_integers_does_not_overflow(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.max, info.max - 1, info.max, 1, 0, info.max // 2 + 1, 7, info.max], dtype)
    y = np.array([info.max, 2, 1, info.max, 3, info.max // 2 + 1, 3, 100], dtype)
    expected = [-(-int(a) // int(b)) for a, b in zip(x, y)]
    got = compute(lambda p, q: ct.cdiv(p, q), x, y, dtype=getattr(ct, np.dtype(dtype).name), shape=(8,))
    assert got.tolist() == expected


@pytest.mark.parametrize("dtype", [ct.bfloat16, ct.float16, ct.float32])
def test_float_floordiv_floors_the_quotient_rounded_to_the_dtype(dtype):
    rng = np.random.default_rng(7)
    x = (rng.random(4096) * 100).astype(dtype.numpy)
    y = (rng.random(4096) * 100 + 1).astype(dtype.numpy)
    quotient = (x.astype(np.float64) / y.astype(np.float64)).astype(dtype.numpy)  # correctly rounded to dtype
    expected = np.floor(quotient.astype(np.float64))
    got = compute(lambda p, q: p // q, x, y, dtype=dtype, shape=(4096,)).astype(np.float64)
    np.testing.assert_array_equal(got, expected)
    assert (expected != np.floor(x.astype(np.float64) / y.astype(np.float64))).any() or dtype is ct.float32


def test_comparisons_give_bool_and_broadcast():
    a = arange((4, 1))
    b = arange((1, 4))
    np.testing.assert_array_equal(compute(lambda x, y: x < y, a, b, dtype=ct.bool_, shape=(4, 4)), a < b)
    np.testing.assert_array_equal(compute(lambda x, y: x >= y, a, b, dtype=ct.bool_, shape=(4, 4)), a >= b)
    np.testing.assert_array_equal(compute(lambda x, y: x == y, a, b, dtype=ct.bool_, shape=(4, 4)), a == b)
    np.testing.assert_array_equal(compute(lambda x, y: x != y, a, b, dtype=ct.bool_, shape=(4, 4)), a != b)


def test_comparisons_promote_mixed_operands():
    i = np.array([1, 2, 3, 4], np.int32)
    f = np.array([1.5, 2.0, 2.5, 4.5], np.float32)
    assert compute(lambda x, y: x > y, i, f, dtype=ct.bool_, shape=(4,)).tolist() == [False, False, True, False]
    assert compute(lambda x: x <= 2.5, i, dtype=ct.bool_, shape=(4,)).tolist() == [True, True, False, False]


def test_unary_minus_and_plus_turn_bool_into_int32():
    b = np.array([True, False, True, True])
    assert compute(lambda x: -x, b, dtype=ct.int32, shape=(4,)).tolist() == [-1, 0, -1, -1]
    assert compute(lambda x: +x, b, dtype=ct.int32, shape=(4,)).tolist() == [1, 0, 1, 1]


def test_abs_on_ints_and_floats_and_the_builtin():
    i = np.array([-3, 3, 0, -2**31 + 1], np.int32)
    f = np.array([-1.5, 1.5, -0.0, -np.inf], np.float32)
    assert compute(lambda x: ct.abs(x), i, dtype=ct.int32, shape=(4,)).tolist() == np.abs(i).tolist()
    np.testing.assert_array_equal(compute(lambda x: abs(x), f, dtype=ct.float32, shape=(4,)), np.abs(f))


# ---- math functions ------------------------------------------------------------------------------------------

POSITIVE = np.array([0.25, 0.5, 1.0, 2.0, 3.0, 10.0, 100.0, 1e-3], np.float32)
REALS = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0], np.float32)


@pytest.mark.parametrize("op, reference, x", [
    (ct.exp, np.exp, REALS), (ct.exp2, np.exp2, REALS), (ct.log, np.log, POSITIVE), (ct.log2, np.log2, POSITIVE),
    (ct.sqrt, np.sqrt, POSITIVE), (ct.rsqrt, lambda v: 1 / np.sqrt(v), POSITIVE), (ct.sin, np.sin, REALS),
    (ct.cos, np.cos, REALS), (ct.tanh, np.tanh, REALS), (ct.tan, np.tan, REALS), (ct.sinh, np.sinh, REALS),
    (ct.cosh, np.cosh, REALS), (ct.floor, np.floor, REALS * 1.25), (ct.ceil, np.ceil, REALS * 1.25),
])
def test_unary_math_matches_numpy_in_float32(op, reference, x):
    np.testing.assert_allclose(compute(lambda t: op(t), x, dtype=ct.float32, shape=(8,)), reference(x), rtol=2e-6)


def test_unary_math_promotes_integers_to_float32():
    x = np.array([1, 4, 9, 16], np.int32)
    assert compute(lambda t: ct.sqrt(t), x, dtype=ct.float32, shape=(4,)).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_unary_math_keeps_16_bit_floats():
    x = REALS.astype(np.float16)
    np.testing.assert_allclose(compute(lambda t: ct.exp(t), x, dtype=ct.float16, shape=(8,)).astype(np.float32),
                               np.exp(x.astype(np.float32)), rtol=1e-3)


NAN_A = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
NAN_B = np.array([2.0, 2.0, np.nan, np.nan], np.float32)


def test_minimum_and_maximum_ignore_nan_by_default():
    np.testing.assert_array_equal(compute(lambda a, b: ct.minimum(a, b), NAN_A, NAN_B, dtype=ct.float32, shape=(4,)),
                                  [1.0, 2.0, 3.0, np.nan])
    np.testing.assert_array_equal(compute(lambda a, b: ct.maximum(a, b), NAN_A, NAN_B, dtype=ct.float32, shape=(4,)),
                                  [2.0, 2.0, 3.0, np.nan])


def test_minimum_and_maximum_propagate_nan_on_request():
    np.testing.assert_array_equal(compute(lambda a, b: ct.minimum(a, b, propagate_nan=True), NAN_A, NAN_B,
                                          dtype=ct.float32, shape=(4,)), [1.0, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(compute(lambda a, b: ct.maximum(a, b, propagate_nan=True), NAN_A, NAN_B,
                                          dtype=ct.float32, shape=(4,)), [2.0, np.nan, np.nan, np.nan])


def test_builtin_min_and_max_on_tiles_promote_and_broadcast():
    i = np.array([1, 5, -3, 7], np.int32)
    assert compute(lambda x: max(x, 2), i, dtype=ct.int32, shape=(4,)).tolist() == [2, 5, 2, 7]
    assert compute(lambda x: min(x, 2.5), i, dtype=ct.float32, shape=(4,)).tolist() == [1.0, 2.5, -3.0, 2.5]


def test_pow_on_floats():
    a = np.array([2.0, 9.0, 4.0, 0.5], np.float32)
    b = np.array([3.0, 0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(compute(lambda x, y: x ** y, a, b, dtype=ct.float32, shape=(4,)), a ** b, rtol=1e-6)
    np.testing.assert_allclose(compute(lambda x, y: ct.pow(x, y), a, b, dtype=ct.float32, shape=(4,)), a ** b,
                               rtol=1e-6)
    squares = compute(lambda x: x ** 2, a.astype(np.float16), dtype=ct.float16, shape=(4,))
    assert squares.tolist() == [4.0, 81.0, 16.0, 0.25]


# ---- reductions and scans -------------------------------------------------------------------------------------

R = np.array([[3, -1, 4, 1, -5, 9, 2, -6],
              [5, 3, -5, 8, 9, -7, 9, 3],
              [2, 3, 8, -4, 6, 2, 6, 4],
              [3, 3, 8, 3, -2, 7, 9, 5]], np.int32)


@pytest.mark.parametrize("op, reference", [(ct.sum, np.sum), (ct.max, np.max), (ct.min, np.min), (ct.prod, np.prod)])
@pytest.mark.parametrize("axis, keepdims", [(0, False), (1, False), (-1, False), ((0, 1), False), (None, False),
                                            (0, True), (None, True), (-2, True)])
def test_reductions_match_numpy(op, reference, axis, keepdims):
    expected = np.asarray(reference(R, axis=axis, keepdims=keepdims)).astype(np.int32)  # NumPy widens; int32 wraps
    t = compute(lambda x: op(x, axis=axis, keepdims=keepdims), R, dtype=ct.int32, shape=expected.shape)
    np.testing.assert_array_equal(t, expected)


def test_reduction_methods_match_the_functions():
    assert compute(lambda x: x.sum(axis=1), R, dtype=ct.int32, shape=(4,)).tolist() == R.sum(axis=1).tolist()
    assert compute(lambda x: x.max(0), R, dtype=ct.int32, shape=(8,)).tolist() == R.max(axis=0).tolist()


def test_sum_keeps_the_input_dtype_so_int8_wraps():
    x = np.full(16, 100, np.int8)
    assert compute(lambda t: ct.sum(t), x, dtype=ct.int8, shape=()) == np.int8(64)  # 1600 mod 256


def test_sum_of_bools_counts_in_int32():
    x = np.array([True, False, True, True])
    assert compute(lambda t: ct.sum(t), x, dtype=ct.int32, shape=()) == 3


def test_float_sum_keeps_the_dtype():
    x = np.linspace(0, 1, 16).astype(np.float16)
    t = compute(lambda t: ct.sum(t), x, dtype=ct.float16, shape=())
    np.testing.assert_allclose(float(t), float(x.astype(np.float32).sum()), rtol=1e-3)


def test_float_max_and_min_ignore_nan_unless_asked():
    x = np.array([1.0, np.nan, 3.0, -2.0], np.float32)
    assert compute(lambda t: ct.max(t), x, dtype=ct.float32, shape=()) == 3.0
    assert compute(lambda t: ct.min(t), x, dtype=ct.float32, shape=()) == -2.0
    assert np.isnan(compute(lambda t: ct.max(t, propagate_nan=True), x, dtype=ct.float32, shape=()))


def test_argmax_and_argmin_ties_go_to_the_smallest_index():
    x = np.array([1, 7, 3, 7, -2, 0, -2, 7], np.int32)
    assert compute(lambda t: ct.argmax(t), x, dtype=ct.int32, shape=()) == 1
    assert compute(lambda t: ct.argmin(t), x, dtype=ct.int32, shape=()) == 4


@pytest.mark.parametrize("op, reference", [(ct.argmax, np.argmax), (ct.argmin, np.argmin)])
@pytest.mark.parametrize("axis, keepdims", [(0, False), (1, True), (-1, False), (None, False), (None, True)])
def test_argmax_and_argmin_match_numpy_with_int32_indices(op, reference, axis, keepdims):
    expected = reference(R, axis=axis, keepdims=keepdims)
    t = compute(lambda x: op(x, axis=axis, keepdims=keepdims), R, dtype=ct.int32, shape=np.shape(expected))
    np.testing.assert_array_equal(t, expected)


def test_argmax_treats_nan_as_the_worst_value_unless_propagating():
    x = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    assert compute(lambda t: ct.argmax(t), x, dtype=ct.int32, shape=()) == 2
    assert compute(lambda t: ct.argmin(t), x, dtype=ct.int32, shape=()) == 0
    assert compute(lambda t: ct.argmax(t, propagate_nan=True), x, dtype=ct.int32, shape=()) == 1
    assert compute(lambda t: ct.argmin(t, propagate_nan=True), x, dtype=ct.int32, shape=()) == 1


@pytest.mark.parametrize("values, argmin, argmax", [
    ([-np.inf, np.nan, 1, 2], 1, 1), ([np.inf, 3, np.nan, -np.inf], 2, 2), ([np.nan, np.nan], 0, 0)])
def test_argmin_and_argmax_propagating_nan_pick_the_first_nan_over_any_infinity(values, argmin, argmax):
    x = np.array(values, np.float32)
    n = len(values)
    assert evaluate(lambda a: ct.argmin(ct.load(a, (0,), (n,)), propagate_nan=True), x, dtype=ct.int32, shape=()) \
        == argmin
    assert evaluate(lambda a: ct.argmax(ct.load(a, (0,), (n,)), propagate_nan=True), x, dtype=ct.int32, shape=()) \
        == argmax


def test_argmin_and_argmax_prefer_an_infinity_to_a_nan_when_not_propagating():
    x = np.array([np.nan, np.inf, np.nan, -np.inf], np.float32)
    assert compute(lambda t: ct.argmin(t), x, dtype=ct.int32, shape=()) == 3
    assert compute(lambda t: ct.argmax(t), x, dtype=ct.int32, shape=()) == 1


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_is_an_inclusive_scan(axis, reverse):
    expected = np.flip(np.cumsum(np.flip(R, axis), axis), axis) if reverse else np.cumsum(R, axis)
    t = compute(lambda x: ct.cumsum(x, axis=axis, reverse=reverse), R, dtype=ct.int32, shape=R.shape)
    np.testing.assert_array_equal(t, expected)


def test_cumsum_keeps_the_input_dtype():
    x = np.full(4, 100, np.int8)
    assert compute(lambda t: ct.cumsum(t), x, dtype=ct.int8, shape=(4,)).tolist() == [100, -56, 44, -112]


def test_cumprod_is_an_inclusive_scan():
    x = np.array([1, 2, 3, 4], np.int32)
    assert compute(lambda t: ct.cumprod(t), x, dtype=ct.int32, shape=(4,)).tolist() == [1, 2, 6, 24]
    assert compute(lambda t: ct.cumprod(t, reverse=True), x, dtype=ct.int32, shape=(4,)).tolist() == [24, 24, 12, 4]


# ---- matrix multiply ------------------------------------------------------------------------------------------

RNG = np.random.default_rng(1234)
M16 = RNG.standard_normal((16, 8)).astype(np.float32)
N16 = RNG.standard_normal((8, 16)).astype(np.float32)
ACC = RNG.standard_normal((16, 16)).astype(np.float32)


def _f32_matmul(a, b):
    return np.matmul(a.astype(np.float32), b.astype(np.float32))


@pytest.mark.parametrize("in_np", [np.float16, BF16, np.float32])
def test_mma_accumulates_into_float32(in_np):
    a, b = M16.astype(in_np), N16.astype(in_np)
    t = compute(lambda x, y, c: ct.mma(x, y, c), a, b, ACC, dtype=ct.float32, shape=(16, 16))
    np.testing.assert_allclose(t, _f32_matmul(a, b) + ACC, rtol=1e-5, atol=1e-5)


def test_mma_with_a_float16_accumulator_returns_float16():
    a, b, c = M16.astype(np.float16), N16.astype(np.float16), ACC.astype(np.float16)
    t = compute(lambda x, y, z: ct.mma(x, y, z), a, b, c, dtype=ct.float16, shape=(16, 16))
    np.testing.assert_allclose(t.astype(np.float32), _f32_matmul(a, b) + c.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_mma_of_int8_accumulates_into_int32():
    a = RNG.integers(-128, 128, (16, 32)).astype(np.int8)
    b = RNG.integers(-128, 128, (32, 16)).astype(np.int8)
    c = RNG.integers(-1000, 1000, (16, 16)).astype(np.int32)
    t = compute(lambda x, y, z: ct.mma(x, y, z), a, b, c, dtype=ct.int32, shape=(16, 16))
    np.testing.assert_array_equal(t, a.astype(np.int32) @ b.astype(np.int32) + c)


def test_mma_broadcasts_batch_dims():
    a = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    b = RNG.standard_normal((8, 4)).astype(np.float32)
    c = np.zeros((2, 4, 4), np.float32)
    t = compute(lambda x, y, z: ct.mma(x, y, z), a, b, c, dtype=ct.float32, shape=(2, 4, 4))
    np.testing.assert_allclose(t, np.matmul(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_np, acc_np", [(np.float16, np.float64), (BF16, BF16), (np.float32, np.float16)])
def test_mma_refuses_unsupported_accumulators(a_np, acc_np):
    with pytest.raises(ct.TileTypeError, match="Unsupported acc dtype"):
        compute(lambda x, y, z: ct.mma(x, y, z), M16.astype(a_np), N16.astype(a_np), ACC.astype(acc_np),
                dtype=ct.float32, shape=(16, 16))


def test_mma_refuses_mixed_input_dtypes():
    with pytest.raises(ct.TileTypeError, match="same dtype"):
        compute(lambda x, y, z: ct.mma(x, y, z), M16.astype(np.float16), N16, ACC, dtype=ct.float32, shape=(16, 16))


@pytest.mark.parametrize("in_dtype, in_np, rtol", [(ct.float16, np.float16, 2e-3), (ct.bfloat16, BF16, 1e-2),
                                                   (ct.float32, np.float32, 1e-5)])
def test_matmul_returns_the_input_dtype(in_dtype, in_np, rtol):
    a, b = M16.astype(in_np), N16.astype(in_np)
    t = compute(lambda x, y: ct.matmul(x, y), a, b, dtype=in_dtype, shape=(16, 16))
    np.testing.assert_allclose(t.astype(np.float32), _f32_matmul(a, b), rtol=rtol, atol=rtol)


def test_matmul_operator_equals_matmul():
    a, b = M16.astype(np.float16), N16.astype(np.float16)
    operator = compute(lambda x, y: x @ y, a, b, dtype=ct.float16, shape=(16, 16))
    function = compute(lambda x, y: ct.matmul(x, y), a, b, dtype=ct.float16, shape=(16, 16))
    np.testing.assert_array_equal(operator, function)


def test_matmul_promotes_mixed_inputs():
    t = compute(lambda x, y: x @ y, M16.astype(np.float16), N16, dtype=ct.float32, shape=(16, 16))
    np.testing.assert_allclose(t, _f32_matmul(M16.astype(np.float16), N16), rtol=1e-5, atol=1e-5)


def test_matmul_of_float16_and_bfloat16_is_refused():
    with pytest.raises(ct.TileTypeError, match="Implicit promotion"):
        compute(lambda x, y: x @ y, M16.astype(np.float16), N16.astype(BF16), dtype=ct.float16, shape=(16, 16))


def test_matmul_squeezes_1d_operands():
    v8, v16 = M16[0], N16[:, 0]
    np.testing.assert_allclose(compute(lambda x, y: x @ y, v8, v8, dtype=ct.float32, shape=()), v8 @ v8, rtol=1e-5)
    np.testing.assert_allclose(compute(lambda x, y: x @ y, v8, N16, dtype=ct.float32, shape=(16,)), v8 @ N16,
                               rtol=1e-5)
    np.testing.assert_allclose(compute(lambda x, y: x @ y, M16, v16, dtype=ct.float32, shape=(16,)), M16 @ v16,
                               rtol=1e-5)


def test_matmul_of_int8_accumulates_in_int32_and_returns_int8():
    a = np.full((16, 32), 8, np.int8)
    b = np.full((32, 16), 9, np.int8)
    t = compute(lambda x, y: x @ y, a, b, dtype=ct.int8, shape=(16, 16))
    np.testing.assert_array_equal(t, (a.astype(np.int32) @ b.astype(np.int32)).astype(np.int8))  # 2304 wraps to 0


def test_mma_rounds_tfloat32_inputs_to_ten_mantissa_bits():
    a = np.full((16, 16), 1 + 2**-12, np.float32)
    eye = np.eye(16, dtype=np.float32)
    t = compute(lambda x, y, z: ct.mma(x.astype(ct.tfloat32), y.astype(ct.tfloat32), z), a, eye,
                np.zeros((16, 16), np.float32), dtype=ct.float32, shape=(16, 16))
    np.testing.assert_array_equal(t, np.ones((16, 16), np.float32))


def test_matmul_of_tfloat32_operands_accumulates_in_float32_and_rounds_to_tfloat32():
    a = RNG.standard_normal((16, 32)).astype(np.float32)
    b = RNG.standard_normal((32, 16)).astype(np.float32)
    got = compute(lambda x, y: ct.matmul(ct.astype(x, ct.tfloat32), ct.astype(y, ct.tfloat32)).astype(ct.float32),
                  a, b, dtype=ct.float32, shape=(16, 16))
    accumulated = compute(lambda x, y, z: ct.mma(x.astype(ct.tfloat32), y.astype(ct.tfloat32), z), a, b,
                          np.zeros((16, 16), np.float32), dtype=ct.float32, shape=(16, 16))
    rounded = compute(lambda x: x.astype(ct.tfloat32).astype(ct.float32), accumulated, dtype=ct.float32,
                      shape=(16, 16))
    np.testing.assert_array_equal(got, rounded)
    np.testing.assert_allclose(got, a @ b, rtol=2e-2, atol=2e-2)


def test_matmul_of_tfloat32_operands_gives_a_tfloat32_tile():
    with pytest.raises(ct.TileStaticAssertionError, match=r"the result is tfloat32\(16, 16\)"):
        compute(lambda x, y: ct.matmul(x.astype(ct.tfloat32), y.astype(ct.tfloat32)), np.ones((16, 16), np.float32),
                np.ones((16, 16), np.float32), dtype=ct.float32, shape=(16, 16))


def test_matmul_of_3d_tiles_is_batched():
    a = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    b = RNG.standard_normal((2, 8, 4)).astype(np.float32)
    np.testing.assert_allclose(compute(lambda x, y: x @ y, a, b, dtype=ct.float32, shape=(2, 4, 4)), a @ b, rtol=1e-5,
                               atol=1e-5)


# ---- control flow and helpers ----------------------------------------------------------------------------------

@ct.kernel
def sum_tiles(x, out, N: ct.Constant[int]):
    acc = ct.zeros((4,), ct.float32)
    for k in range(N):
        acc = acc + ct.load(x, (k,), (4,))
    ct.store(out, (0,), acc)


@ct.kernel
def sum_tiles_runtime(x, out, n):
    acc = ct.zeros((4,), ct.float32)
    for k in range(1, n, 2):
        acc += ct.load(x, (k,), (4,))
    ct.store(out, (0,), acc)


@ct.kernel
def triangular(out):
    i = ct.bid(0)
    total = 0
    for k in range(i + 1):
        total = total + k
    ct.store(out, (i,), total)


@ct.kernel
def sum_from_i_to_2i(out):
    i = ct.bid(0)
    total = 0
    for k in range(i, 2 * i):
        total = total + k
    ct.store(out, (i,), total)


def test_for_loop_with_constant_bounds():
    x = arange((32,), np.float32)
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), sum_tiles, (x, out, 5))
    np.testing.assert_array_equal(out, x[:20].reshape(5, 4).sum(axis=0))


def test_for_loop_with_runtime_bounds_and_step():
    x = arange((32,), np.float32)
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), sum_tiles_runtime, (x, out, 6))
    np.testing.assert_array_equal(out, x.reshape(8, 4)[[1, 3, 5]].sum(axis=0))


def test_for_loop_bounds_may_differ_per_block():
    out = np.zeros(6, np.int32)
    ct.launch(None, (6,), triangular, (out,))
    assert out.tolist() == [0, 1, 3, 6, 10, 15]


def test_for_loop_may_run_zero_times_in_some_blocks():
    out = np.full(4, -1, np.int32)
    ct.launch(None, (4,), sum_from_i_to_2i, (out,))
    assert out.tolist() == [0, 1, 2 + 3, 3 + 4 + 5]


@ct.kernel
def parity(x, out):
    i = ct.bid(0)
    t = ct.load(x, (i,), (4,))
    if i % 2 == 0:
        r = t * 2
    else:
        r = t - 100
    ct.store(out, (i,), r)


@ct.kernel
def three_way(x, flags, out):
    i = ct.bid(0)
    t = ct.load(x, (i,), (2,))
    f = ct.load(flags, (i,), ())
    if f > 0:
        t = t + 1
    elif f < 0:
        t = -t
    else:
        t = ct.zeros((2,), ct.int32)
    ct.store(out, (i,), t)


@ct.kernel
def branch_in_loop(out):
    i = ct.bid(0)
    acc = 0
    for k in range(4):
        if k < i:
            acc = acc + 10
        else:
            acc = acc + 1
    ct.store(out, (i,), acc)


def test_if_else_on_a_runtime_scalar_diverges_across_blocks():
    x = arange((16,))
    out = np.zeros(16, np.int32)
    ct.launch(None, (4,), parity, (x, out))
    expected = x.reshape(4, 4).copy()
    expected[0::2] *= 2
    expected[1::2] -= 100
    np.testing.assert_array_equal(out, expected.reshape(-1))


def test_if_elif_else_on_loaded_data():
    x = arange((8,), start=1)
    flags = np.array([1, -1, 0, 5], np.int32)
    out = np.zeros(8, np.int32)
    ct.launch(None, (4,), three_way, (x, flags, out))
    assert out.tolist() == [2, 3, -3, -4, 0, 0, 8, 9]


def test_if_inside_a_loop_with_per_block_conditions():
    out = np.zeros(5, np.int32)
    ct.launch(None, (5,), branch_in_loop, (out,))
    assert out.tolist() == [4, 13, 22, 31, 40]


@ct.kernel
def store_in_even_blocks(x, out):
    i = ct.bid(0)
    if i % 2 == 0:
        ct.store(out, (i,), ct.load(x, (i,), (4,)))


@ct.kernel
def load_in_odd_blocks(x, out):
    i = ct.bid(0)
    if i % 2 == 1:
        t = ct.load(x, (i,), (4,))
    else:
        t = ct.zeros((4,), ct.int32)
    ct.store(out, (i,), t)


@ct.kernel
def prefix_tiles(x, out):
    i = ct.bid(0)
    acc = ct.zeros((4,), ct.int32)
    for k in range(i + 1):
        acc = acc + ct.load(x, (k,), (4,))
    ct.store(out, (i,), acc)


@ct.kernel
def store_per_iteration(out):
    i = ct.bid(0)
    for k in range(i):
        ct.store(out, (i, k), k + 1)


def test_store_inside_a_diverging_if_writes_from_the_blocks_that_take_the_branch():
    x = arange((16,))
    out = np.full(16, -1, np.int32)
    ct.launch(None, (4,), store_in_even_blocks, (x, out))
    assert out.tolist() == [0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11, -1, -1, -1, -1]


def test_load_inside_a_diverging_if_reads_the_array():
    x = arange((16,))
    out = np.full(16, -1, np.int32)
    ct.launch(None, (4,), load_in_odd_blocks, (x, out))
    assert out.tolist() == [0, 0, 0, 0, 4, 5, 6, 7, 0, 0, 0, 0, 12, 13, 14, 15]


def test_loads_inside_a_loop_with_per_block_bounds_read_the_array():
    x = arange((16,))
    out = np.zeros(16, np.int32)
    ct.launch(None, (4,), prefix_tiles, (x, out))
    np.testing.assert_array_equal(out, np.cumsum(x.reshape(4, 4), axis=0).reshape(-1))


def test_stores_inside_a_loop_with_per_block_bounds_write_the_array():
    out = np.zeros((4, 4), np.int32)
    ct.launch(None, (4,), store_per_iteration, (out,))
    assert out.tolist() == [[0, 0, 0, 0], [1, 0, 0, 0], [1, 2, 0, 0], [1, 2, 3, 0]]


def _scaled(t, factor=2, *, offset=0):
    return t * factor + offset


def _clamp_negative(t):
    if t.dtype == ct.int32:
        return ct.maximum(t, 0)
    return t


@ct.kernel
def with_helpers(x, out):
    t = ct.load(x, (0,), (4,))

    def add_one(v):
        return v + 1

    twice = lambda v: v + v
    r = _clamp_negative(_scaled(add_one(t), 3, offset=-10))
    ct.store(out, (0,), twice(r))


def test_helper_functions_nested_defs_and_lambdas_are_inlined():
    x = np.array([0, 2, 4, 6], np.int32)
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), with_helpers, (x, out))
    # (x + 1) * 3 - 10 = [-7, -1, 5, 11], clamped at 0, then doubled
    assert out.tolist() == [0, 0, 10, 22]


INCREMENT, DOUBLE = (lambda v: v + 1), (lambda v: v * 2)


def test_a_lambda_helper_compiles_its_own_body_when_two_lambdas_share_a_line():
    assert compute(DOUBLE, arange((4,)), dtype=ct.int32, shape=(4,)).tolist() == [0, 2, 4, 6]
    assert compute(INCREMENT, arange((4,)), dtype=ct.int32, shape=(4,)).tolist() == [1, 2, 3, 4]


def test_a_lambda_helper_may_start_on_a_continuation_line():
    t = compute(
        lambda v: v + 5, arange((4,)), dtype=ct.int32, shape=(4,))
    assert t.tolist() == [5, 6, 7, 8]


def test_tile_properties_are_compile_time_constants():
    x = arange((4, 8), np.float16)
    t = compute(lambda t: ct.full((2,), t.shape[0] * 100 + t.shape[1] * 10 + t.ndim, ct.int32), x,
                dtype=ct.int32, shape=(2,))
    assert t.tolist() == [482, 482]
    assert compute(lambda t: ct.zeros((2,), t.dtype), x, dtype=ct.float16, shape=(2,)).tolist() == [0.0, 0.0]


def test_tile_methods_reshape_astype_and_item():
    x = arange((4, 8), np.float32)
    t = compute(lambda t: t.reshape((8, 4)).astype(ct.int16), x, dtype=ct.int16, shape=(8, 4))
    np.testing.assert_array_equal(t, x.reshape(8, 4))
    assert compute(lambda t: t.item(), np.array([[7.5]], np.float32), dtype=ct.float32, shape=()) == 7.5


def test_item_needs_exactly_one_element():
    with pytest.raises(ct.TileTypeError, match="one element"):
        compute(lambda t: t.item(), arange((2,)), dtype=ct.int32, shape=())


# ---- kernel specialization ----------------------------------------------------------------------------------

def _scale_kernel():
    @ct.kernel
    def scale(x, out, F: ct.Constant[int]):
        ct.store(out, (0,), ct.load(x, (0,), (4,)) * F)
    return scale


def test_one_specialization_per_distinct_constant_value():
    scale = _scale_kernel()
    x, out = arange((4,), np.float32), np.zeros(4, np.float32)
    for f in (2, 3, 2, 3, 2):
        ct.launch(None, (1,), scale, (x, out, f))
        np.testing.assert_array_equal(out, x * f)
    assert len(scale.specializations) == 2
    assert scale.ir((x, out, 2)) != scale.ir((x, out, 3))


def test_different_array_dtypes_give_different_specializations():
    scale = _scale_kernel()
    for dtype in (np.float32, np.float64, np.float32, np.int32):
        x, out = arange((4,), dtype), np.zeros(4, dtype)
        ct.launch(None, (1,), scale, (x, out, 3))
        np.testing.assert_array_equal(out, x * 3)
        assert out.dtype == dtype
    assert len(scale.specializations) == 3


def test_plain_scalar_values_share_one_specialization():
    @ct.kernel
    def shift(x, out, k):
        ct.store(out, (0,), ct.load(x, (0,), (4,)) + k)

    x, out = arange((4,)), np.zeros(4, np.int32)
    for k in (1, 7, -3):
        ct.launch(None, (1,), shift, (x, out, k))
        np.testing.assert_array_equal(out, x + k)
    assert len(shift.specializations) == 1


# ---- 0-d arrays: one element, reached with the index () ---------------------------------------------

@ct.kernel
def zero_d_gather_scatter(x, y):
    ct.scatter(y, (), ct.gather(x, ()) + 1)


@ct.kernel
def zero_d_load_store(x, y):
    ct.store(y, (), ct.load(x, (), ()) * 2)


@pytest.mark.parametrize("kernel, expected", [(zero_d_gather_scatter, 4.0), (zero_d_load_store, 6.0)])
def test_a_0d_array_is_read_and_written_through_the_empty_index(kernel, expected):
    x, y = np.array(3.0, np.float32), np.array(0.0, np.float32)
    trace = interpret(kernel, (3,), (x, y), trace=True)
    assert y[()] == expected
    assert [e.coords.shape for e in trace.events if e.op in ("gather", "scatter", "load", "store")] == [(3, 0)] * 2


# ---- rounding modes of float conversions ---------------------------------------------------------

Rounding = ct.RoundingMode


@pytest.mark.parametrize("target, ulp", [(ct.float32, 2.0 ** -23), (ct.bfloat16, 2.0 ** -7), (ct.float16, 2.0 ** -10)])
@pytest.mark.parametrize("mode, below_tie, tie, above_tie", [
    (None, "low", "low", "high"), (Rounding.RN, "low", "low", "high"), (Rounding.RZ, "low", "low", "low"),
    (Rounding.RM, "low", "low", "low"), (Rounding.RP, "high", "high", "high")])
def test_astype_rounds_in_the_rounding_mode(target, ulp, mode, below_tie, tie, above_tie):
    """Between 1 and the next float up: 0.4, 0.5 (a tie: 1 is even) and 0.6 of the way."""
    x = np.array([1 + 0.4 * ulp, 1 + 0.5 * ulp, 1 + 0.6 * ulp, 1.0], np.float64)
    x = np.concatenate([x, -x])
    got = evaluate(lambda a: ct.load(a, (0,), (8,)).astype(target, rounding_mode=mode), x, dtype=target,
                   shape=(8,)).astype(np.float64)
    value = {"low": 1.0, "high": 1.0 + ulp}
    positive = [value[below_tie], value[tie], value[above_tie], 1.0]
    # on negatives, toward -inf grows the magnitude and toward +inf shrinks it; the others mirror
    negative = {Rounding.RM: [-value["high"]] * 3 + [-1.0], Rounding.RP: [-1.0] * 4}.get(mode, [-v for v in positive])
    assert got.tolist() == positive + negative


def test_directed_rounding_past_the_largest_float32():
    x = np.array([1e39, -1e39, np.inf, np.nan], np.float64)
    big = float(np.finfo(np.float32).max)
    rz = evaluate(lambda a: ct.load(a, (0,), (4,)).astype(ct.float32, rounding_mode=Rounding.RZ), x, dtype=ct.float32,
                  shape=(4,))
    rp = evaluate(lambda a: ct.load(a, (0,), (4,)).astype(ct.float32, rounding_mode=Rounding.RP), x, dtype=ct.float32,
                  shape=(4,))
    assert rz[:3].tolist() == [big, -big, np.inf] and np.isnan(rz[3])
    assert rp[:3].tolist() == [np.inf, -big, np.inf] and np.isnan(rp[3])


@pytest.mark.parametrize("mode, tie, above_tie", [(None, 1.0, 1 + 2 ** -10), (Rounding.RN, 1.0, 1 + 2 ** -10),
                                                  (Rounding.RA, 1 + 2 ** -10, 1 + 2 ** -10), (Rounding.RZ, 1.0, 1.0)])
def test_astype_to_tfloat32_keeps_10_mantissa_bits(mode, tie, above_tie):
    x = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -12, -(1 + 2 ** -11), -(1 + 3 * 2 ** -12)], np.float32)
    got = evaluate(lambda a: ct.load(a, (0,), (4,)).astype(ct.tfloat32, rounding_mode=mode).astype(ct.float32),
                   x, dtype=ct.float32, shape=(4,))
    assert got.tolist() == [tie, above_tie, -tie, -above_tie]


@pytest.mark.parametrize("target, mode", [(ct.float32, Rounding.RA), (ct.tfloat32, Rounding.RM),
                                          (ct.float32, Rounding.APPROX)])
def test_astype_refuses_a_rounding_mode_the_conversion_lacks(target, mode):
    with pytest.raises(ct.TileTypeError, match=f"rounding_mode={mode} is not supported for conversion from float64 to"):
        evaluate(lambda a: ct.load(a, (0,), (4,)).astype(target, rounding_mode=mode).astype(ct.float32),
                 np.zeros(4), dtype=ct.float32, shape=(4,))


# ---- atomics: per element, in block order, returning the old values ----------------------------------

@ct.kernel
def histogram(x, counts, olds):
    old = ct.atomic_add(counts, ct.load(x, (ct.bid(0),), (8,)), 1)
    ct.store(olds, (ct.bid(0),), old)


def test_atomic_add_applies_the_lanes_in_block_order_and_returns_the_old_values():
    x = np.array([0, 1, 1, 3, 0, 0, 2, 1] * 2, np.int32)
    counts, olds = np.zeros(4, np.int32), np.zeros(16, np.int32)
    interpret(histogram, (2,), (x, counts, olds))
    assert counts.tolist() == np.bincount(x, minlength=4).tolist()
    seen = {}
    expected = []
    for v in x:  # each lane sees the count before its own increment
        expected.append(seen.get(v, 0))
        seen[v] = seen.get(v, 0) + 1
    assert olds.tolist() == expected


@ct.kernel
def first_block_takes_the_lock(lock, winners):
    ct.scatter(winners, ct.bid(0), ct.atomic_cas(lock, 0, 0, ct.bid(0) + 1, memory_order=ct.MemoryOrder.ACQUIRE))


def test_atomic_cas_succeeds_for_the_first_block_only():
    lock, winners = np.zeros(1, np.int32), np.full(4, -1, np.int32)
    interpret(first_block_takes_the_lock, (4,), (lock, winners))
    assert lock.tolist() == [1] and winners.tolist() == [0, 1, 1, 1]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_mma_sums_its_products_and_accumulator_exactly_before_rounding(dtype):
    # 2**24 + 1 - 2**24: a float32 product loses the 1 before the accumulator is added
    x, y = np.array([[4096, 1]], dtype), np.array([[4096], [1]], dtype)
    out = np.zeros((1, 1), np.float32)
    launch_on(lambda a, b, c: ct.store(c, (0, 0), ct.mma(ct.load(a, (0, 0), (1, 2)), ct.load(b, (0, 0), (2, 1)),
                                                          ct.full((1, 1), -2.0 ** 24, ct.float32))), x, y, out)
    assert out.tolist() == [[1.0]]


@ct.kernel
def add_under_a_lock(total, lock, order):
    while ct.atomic_cas(lock, 0, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    count = ct.load(total, (0,), (1,))
    ct.scatter(order, ct.bid(0), ct.sum(count))
    ct.store(total, (0,), count + 1)
    ct.atomic_xchg(lock, 0, 0, memory_order=ct.MemoryOrder.RELEASE)


def test_blocks_spinning_on_a_lock_each_get_it_in_grid_order():
    total, lock, order = np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(6, -1, np.int32)
    interpret(add_under_a_lock, (6,), (total, lock, order))
    assert total.tolist() == [6] and lock.tolist() == [0] and order.tolist() == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("fn, dtype, expected", [
    (ct.atomic_xchg, np.float32, [7.0, 7.0, 7.0, 7.0]), (ct.atomic_max, np.int64, [7, 9, 7, 7]),
    (ct.atomic_min, np.uint32, [5, 7, 0, 3]), (ct.atomic_and, np.int32, [5, 1, 0, 3]),
    (ct.atomic_or, np.int32, [7, 15, 7, 7]), (ct.atomic_xor, np.uint64, [2, 14, 7, 4]),
    (ct.atomic_add, np.float16, [12.0, 16.0, 7.0, 10.0])])
def test_atomic_read_modify_writes(fn, dtype, expected):
    a = np.array([5, 9, 0, 3], dtype)
    old = np.zeros(4, dtype)
    launch_on(lambda x, y: ct.store(y, (0,), fn(x, ct.arange(4, dtype=ct.int32), ct.full((4,), 7, x.dtype))), a, old)
    assert a.tolist() == expected and old.tolist() == [5, 9, 0, 3]


def test_atomics_outside_the_array_do_nothing():
    a, old = np.array([1, 2], np.int32), np.full(4, -1, np.int32)
    launch_on(lambda x, y: ct.store(y, (0,), ct.atomic_add(x, ct.arange(4, dtype=ct.int32), 10)), a, old)
    assert a.tolist() == [11, 12] and old.tolist() == [1, 2, 0, 0]
    launch_on(lambda x, y: ct.store(y, (0,), ct.atomic_cas(x, ct.arange(4, dtype=ct.int32), 5, 6)), a, old)
    assert a.tolist() == [11, 12] and old.tolist() == [11, 12, 5, 5]


def and_with_int64(x):
    return ct.atomic_and(x, 0, ct.astype(1, ct.int64))


def max_of_floats(x):
    return ct.atomic_max(x, 0, 1.0)


def add_to_int8(x):
    return ct.atomic_add(x, 0, 1)


def weak_add(x):
    return ct.atomic_add(x, 0, 1, memory_order=ct.MemoryOrder.WEAK)


@pytest.mark.parametrize("fn, array_dtype, message", [
    (and_with_int64, np.int32, (r"Bitwise atomic read-modify-write operations require the update dtype \(int64\) "
                                r"to exactly match the array dtype \(int32\)")),
    (max_of_floats, np.float32, "Unsupported array dtype: float32"),
    (add_to_int8, np.int8, "Unsupported array dtype: int8"),
    (weak_add, np.int32, "Memory order WEAK is not allowed for atomics")])
def test_atomics_refuse_what_cutile_refuses(fn, array_dtype, message):
    with pytest.raises(ct.TileTypeError, match=message):
        launch_on(fn, np.zeros(4, array_dtype))


@ct.kernel
def non_negative(x):
    ct.assert_(ct.load(x, (ct.bid(0),), (4,)) >= 0, "x must not be negative")


def test_assert_names_the_message_the_block_and_the_element():
    x = np.arange(8, dtype=np.float32)
    interpret(non_negative, (2,), (x,))
    x[6] = -1
    with pytest.raises(ct.TileAssertionError, match=r"x must not be negative \(block \(1,\) at element \(2,\)\)"):
        interpret(non_negative, (2,), (x,))


def assert_a_float(x):
    ct.assert_(ct.load(x, (0,), (4,)))


def test_assert_needs_a_bool_condition():
    with pytest.raises(ct.TileTypeError, match="Type of condition must be bool"):
        launch_on(assert_a_float, np.zeros(4, np.float32))


@ct.kernel
def printf_tiles(x):
    t = ct.load(x, (0,), (4,))
    ct.printf("block %d: %5.2f and %x, %lld %% %A\n", ct.bid(0), t, t.astype(ct.int32), ct.astype(7, ct.int64), 0.5)


def test_printf_formats_each_element_as_c_does(capsys):
    interpret(printf_tiles, (2,), (np.array([1.5, 2.25, 10, 31], np.float32),))
    line = "[ 1.50,  2.25, 10.00, 31.00] and [1, 2, a, 1f], 7 % 0X1.0000000000000P-1\n"
    assert capsys.readouterr().out == f"block 0: {line}block 1: {line}"


def printf_float_as_int(x):
    ct.printf("%d\n", ct.load(x, (0,), (4,)))


def printf_missing_argument(x):
    ct.printf("%f %f\n", ct.load(x, (0,), (4,)))


def printf_bad_conversion(x):
    ct.printf("%s\n", ct.load(x, (0,), (4,)))


@pytest.mark.parametrize("fn, message", [
    (printf_float_as_int, "conversion %d does not match an argument of dtype float32"),
    (printf_missing_argument, "has more conversions than arguments"),
    (printf_bad_conversion, "conversion %s is not supported")])
def test_printf_checks_its_conversions_against_the_arguments(fn, message):
    with pytest.raises(ct.TileTypeError, match=message):
        launch_on(fn, np.zeros(4, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ct.bfloat16.numpy])
def test_arithmetic_in_directed_rounding_modes_brackets_the_exact_result(dtype):
    """RM and RP give the neighbouring values below and above the exact rational result (equal
    where it is exact); RZ takes the one nearer zero."""
    from fractions import Fraction
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(64) * 10).astype(dtype)
    y = (rng.standard_normal(64) * 10).astype(dtype)
    y[y == 0] = 1
    exact = {ct.add: lambda p, q: p + q, ct.sub: lambda p, q: p - q, ct.mul: lambda p, q: p * q,
             ct.truediv: lambda p, q: p / q}
    for op, fn in exact.items():
        name = op.__name__
        down, up, toward_zero = (compute(lambda p, q: op(p, q, rounding_mode=m), x, y, dtype=_ct(dtype), shape=(64,))
                                 for m in (Rounding.RM, Rounding.RP, Rounding.RZ))
        for k in range(64):
            e = fn(Fraction(float(x[k])), Fraction(float(y[k])))
            lo, hi = Fraction(float(down[k])), Fraction(float(up[k]))
            assert lo <= e <= hi, (name, k)
            assert (lo == hi) == (lo == e) and (lo == e or _next_up(down[k]) == up[k]), (name, k)
            assert toward_zero[k] == (down[k] if e > 0 else up[k]), (name, k)


def _ct(dtype):
    return {np.dtype(np.float32): ct.float32, np.dtype(np.float64): ct.float64, np.dtype(np.float16): ct.float16,
            np.dtype(ct.bfloat16.numpy): ct.bfloat16}[np.dtype(dtype)]


def _next_up(v):
    """The next value of v's dtype above v, by its bits."""
    array = np.array([v])
    unsigned = f"uint{8 * array.itemsize}"
    bits = int(array.view(unsigned)[0])
    bits = bits + 1 if v > 0 else bits - 1 if v < 0 else 1
    return np.array([bits], unsigned).view(array.dtype)[0]


def test_sqrt_in_directed_rounding_modes():
    x = np.array([2, 3, 4, 0.5], np.float32)
    rz = compute(lambda t: ct.sqrt(t, rounding_mode=Rounding.RZ), x, dtype=ct.float32, shape=(4,))
    rp = compute(lambda t: ct.sqrt(t, rounding_mode=Rounding.RP), x, dtype=ct.float32, shape=(4,))
    for k, v in enumerate(x):
        assert float(rz[k]) ** 2 <= v <= float(rp[k]) ** 2
    assert rz[2] == rp[2] == 2 and (rz != rp).sum() == 3


def add_ints_rounded(x):
    return ct.add(ct.load(x, (0,), (4,)), 1, rounding_mode=ct.RoundingMode.RZ)


def add_rzi(x):
    return ct.add(ct.load(x, (0,), (4,)), 1, rounding_mode=ct.RoundingMode.RZI)


def halves_approx(x):
    return ct.truediv(ct.load(x, (0,), (4,)), 3, rounding_mode=ct.RoundingMode.APPROX)


@pytest.mark.parametrize("fn, dtype, message", [
    (add_ints_rounded, np.int32, "Rounding mode can only be used for unrestricted float types, but got int32"),
    (add_rzi, np.float32, f"Rounding mode {ct.RoundingMode.RZI.value} is not supported for add"),
    (halves_approx, np.float16, f"Rounding mode {ct.RoundingMode.APPROX.value} can only be used for float32 type")])
def test_rounding_modes_are_checked_per_op_and_dtype(fn, dtype, message):
    with pytest.raises(ct.TileTypeError, match=message):
        launch_on(fn, np.zeros(4, dtype))


# ---- bad arrays -------------------------------------------------------------------------------------------

def test_a_padded_load_and_a_gather_from_an_empty_array_read_only_padding():
    empty = np.zeros(0, np.float32)
    assert evaluate(lambda a: ct.load(a, (0,), (4,), padding_mode=P.NEG_INF), empty,
                    dtype=ct.float32, shape=(4,)).tolist() == [-np.inf] * 4
    assert evaluate(lambda a: ct.gather(a, ct.arange(4, dtype=ct.int32), padding_value=7), empty,
                    dtype=ct.float32, shape=(4,)).tolist() == [7] * 4


@ct.kernel
def store_ones(out):
    ct.store(out, (0,), ct.full((4,), 1, out.dtype))


def test_storing_into_a_read_only_array_is_an_error_at_the_store():
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(ct.TileValueError, match="store into `out`: the NumPy array is read-only") as info:
        ct.launch(None, (1,), store_ones, (out,))
    assert info.value.loc.source_line.strip().startswith("ct.store(out")


# ---- flush_to_zero: float32 subnormal operands and results read as zero ---------------------------

@ct.kernel
def exp2_and_add(x, y, out, FTZ: ct.Constant[bool]):
    a, b = ct.load(x, (0,), (4,)), ct.load(y, (0,), (4,))
    ct.store(out, (0,), ct.exp2(a, flush_to_zero=FTZ))
    ct.store(out, (1,), ct.add(b, b, flush_to_zero=FTZ))


def test_flush_to_zero_flushes_subnormal_results_and_operands_and_only_then():
    tiny = np.finfo(np.float32).tiny
    x = np.array([-130.0, -127.5, 1.0, -140.0], np.float32)  # 2^x of the first, second and last is subnormal
    y = np.array([tiny / 4, -tiny / 2, 0.0, tiny], np.float32)
    for ftz in (True, False):
        out = np.zeros(8, np.float32)
        interpret(exp2_and_add, (1,), (x.copy(), y, out, ftz))
        exact = np.exp2(x.astype(np.float64)).astype(np.float32)
        if ftz:
            assert out[:4].tolist() == [0.0, 0.0, 2.0, 0.0]
            # subnormal y reads as zero, its sign kept; 2 * tiny is normal
            assert out[4:].tolist() == [0.0, 0.0, 0.0, 2 * tiny] and np.signbit(out[5])
        else:
            assert out[:4].tolist() == exact.tolist() and out[0] > 0
            assert out[4:].tolist() == (y + y).tolist() and out[4] > 0
