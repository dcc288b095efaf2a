"""The worked examples of the seed documents (/work/shared/seeds), each checked against the output printed there.

000 cuTile `gather`, 001 cuTile `load`, 002 the C++ `cuda::tiles` tile operations (spelled the Python way:
select = where, broadcast = broadcast_to, element_cast = astype, element_bitcast = bitcast, iota = arange),
003 cuTile `load_advanced_indexing`, 004 CuPy's user-defined kernels (tileworkbench.ElementwiseKernel and
ReductionKernel).
"""
import numpy as np
import pytest

import tileworkbench
import tileworkbench.tile as ct


def evaluate(fn, *arrays, dtype, shape):
    """Run a one-block kernel that stores `fn(*arrays)` (fn gets the array parameters) and return what it
    stored. The result must be a tile of exactly `dtype` and `shape`, checked when the kernel compiles."""
    n = len(arrays)
    out_shape = shape or (1,)

    @ct.kernel
    def kernel(a, b, c, out):
        r = fn(*(a, b, c)[:n])
        ct.static_assert(r.dtype == dtype and r.shape == shape,
                         f"the result is {r.dtype}{r.shape}, expected {dtype}{shape}")
        ct.store(out, (0,) * len(out_shape), r)

    out = np.zeros(out_shape, dtype.numpy)
    ct.launch(None, (1,), kernel, (*arrays, *[np.zeros(1, np.float32)] * (3 - n), out))
    return out.reshape(shape)


def iota(shape, dtype=ct.int32):
    """ct::iota<tile<dtype, shape>>(): 0, 1, ..., N-1 in row-major order."""
    n = 1
    for d in shape:
        n *= d
    return ct.reshape(ct.arange(n, dtype=dtype), shape)


# ---- 000: cuda.tile.gather ------------------------------------------------------------------------

def test_000_gather_result_follows_the_broadcast_index_formula():
    array = np.arange(60, dtype=np.int32).reshape(6, 10)
    rng = np.random.default_rng(0)
    ind0 = rng.integers(0, 6, size=(2, 4, 1)).astype(np.int32)  # (M, N, 1)
    ind1 = rng.integers(0, 10, size=(2, 1, 8)).astype(np.int32)  # (M, 1, K)
    t = evaluate(lambda a, i0, i1: ct.gather(a, (ct.load(i0, (0, 0, 0), (2, 4, 1)), ct.load(i1, (0, 0, 0), (2, 1, 8)))),
                 array, ind0, ind1, dtype=ct.int32, shape=(2, 4, 8))
    for i in range(2):
        for j in range(4):
            for k in range(8):
                assert t[i, j, k] == array[ind0[i, j, 0], ind1[i, 0, k]]


def test_000_gather_on_1d_array_takes_a_bare_tile_as_a_one_tuple():
    array = np.arange(100, 116, dtype=np.float32)
    idx = np.array([3, 0, 15, 7], np.int32)
    bare = evaluate(lambda a, i: ct.gather(a, ct.load(i, (0,), (4,))), array, idx, dtype=ct.float32, shape=(4,))
    tupled = evaluate(lambda a, i: ct.gather(a, (ct.load(i, (0,), (4,)),)), array, idx, dtype=ct.float32, shape=(4,))
    assert bare.tolist() == tupled.tolist() == [103.0, 100.0, 115.0, 107.0]


def test_000_gather_mask_false_returns_padding_value():
    array = np.arange(8, dtype=np.int32) + 10
    mask = np.array([True, False, True, False], bool)
    t = evaluate(lambda a, m: ct.gather(a, ct.arange(4, dtype=ct.int32), mask=ct.load(m, (0,), (4,)), padding_value=-1),
                 array, mask, dtype=ct.int32, shape=(4,))
    assert t.tolist() == [10, -1, 12, -1]


def test_000_gather_effective_mask_is_custom_mask_and_bounds():
    array = np.arange(4, dtype=np.int32) + 10
    idx = np.array([0, 1, 5, 6], np.int32)  # the last two are out of bounds
    mask = np.array([True, False, True, False], bool)
    t = evaluate(lambda a, i, m: ct.gather(a, ct.load(i, (0,), (4,)), mask=ct.load(m, (0,), (4,)), padding_value=7),
                 array, idx, mask, dtype=ct.int32, shape=(4,))
    assert t.tolist() == [10, 7, 7, 7]


def test_000_gather_out_of_bounds_reads_zero_by_default():
    array = np.arange(1, 5, dtype=np.float32)
    t = evaluate(lambda a: ct.gather(a, ct.arange(8, dtype=ct.int32)), array, dtype=ct.float32, shape=(8,))
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]


def test_000_gather_padding_value_may_be_a_broadcastable_tile():
    array = np.arange(1, 5, dtype=np.float32)
    t = evaluate(lambda a: ct.gather(a, ct.reshape(ct.arange(8, dtype=ct.int32), (2, 4)),
                                     padding_value=ct.full((2, 1), -5.0, ct.float32)),
                 array, dtype=ct.float32, shape=(2, 4))
    assert t.tolist() == [[1.0, 2.0, 3.0, 4.0], [-5.0, -5.0, -5.0, -5.0]]


def test_000_gather_negative_indices_are_out_of_bounds():
    array = np.arange(10, dtype=np.int32) + 1
    t = evaluate(lambda a: ct.gather(a, ct.arange(4, dtype=ct.int32, start=-2), padding_value=-100),
                 array, dtype=ct.int32, shape=(4,))
    assert t.tolist() == [-100, -100, 1, 2]


# ---- 001: cuda.tile.load --------------------------------------------------------------------------

@ct.kernel
def every_tile(array, out, out_transposed, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(array, (i, j), (TM, TN))
    ct.store(out, (i, j, 0, 0), t.reshape((1, 1, TM, TN)))
    t_transposed = ct.load(array, (j, i), shape=(TN, TM), order=(1, 0))
    ct.store(out_transposed, (i, j, 0, 0), t_transposed.reshape((1, 1, TN, TM)))


def test_001_load_tile_space_index_formula():
    tm, tn = 2, 4
    array = np.arange(48, dtype=np.float32).reshape(6, 8)
    out = np.zeros((3, 2, tm, tn), np.float32)
    out_transposed = np.zeros((3, 2, tn, tm), np.float32)
    ct.launch(None, (3, 2), every_tile, (array, out, out_transposed, tm, tn))
    for i in range(3):
        for j in range(2):
            for x in range(tm):
                for y in range(tn):
                    assert out[i, j, x, y] == array[i * tm + x, j * tn + y]
                    assert out_transposed[i, j, y, x] == array[i * tm + x, j * tn + y]


def test_001_regular_load():
    array2d = np.arange(32, dtype=np.int32).reshape(4, 8)
    tile = evaluate(lambda a: ct.load(a, (0, 0), shape=(2, 4)), array2d, dtype=ct.int32, shape=(2, 4))
    assert tile.tolist() == array2d[:2, :4].tolist()


def test_001_load_with_order_F_transposes():
    array2d = np.arange(32, dtype=np.int32).reshape(4, 8)
    tile = evaluate(lambda a: ct.load(a, (0, 0), shape=(4, 2), order='F'), array2d, dtype=ct.int32, shape=(4, 2))
    assert tile.tolist() == array2d[:2, :4].T.tolist()


def test_001_load_transposing_the_last_two_axes():
    array3d = np.arange(8 * 2 * 4, dtype=np.int32).reshape(8, 2, 4)
    tile = evaluate(lambda a: ct.load(a, (0, 0, 0), shape=(8, 4, 2), order=(0, 2, 1)),
                    array3d, dtype=ct.int32, shape=(8, 4, 2))
    assert tile.tolist() == array3d.transpose(0, 2, 1).tolist()


def test_001_load_a_single_element_as_0d_tile():
    array3d = np.arange(8 * 2 * 4, dtype=np.int32).reshape(8, 2, 4) + 5
    tile = evaluate(lambda a: ct.load(a, (0, 0, 0), shape=()), array3d, dtype=ct.int32, shape=())
    assert tile.tolist() == 5


# ---- 002: cuda::tiles tile operations ---------------------------------------------------------------

def test_002_full():
    r = evaluate(lambda: ct.full((2, 2), 42, ct.int32), dtype=ct.int32, shape=(2, 2))
    assert r.tolist() == [[42, 42], [42, 42]]


def test_002_iota():
    r = evaluate(lambda: iota((2, 4)), dtype=ct.int32, shape=(2, 4))
    assert r.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_002_ones():
    r = evaluate(lambda: ct.ones((2, 2), ct.int32), dtype=ct.int32, shape=(2, 2))
    assert r.tolist() == [[1, 1], [1, 1]]


def test_002_ones_of_bool_are_true():
    r = evaluate(lambda: ct.ones((2, 2), ct.bool_), dtype=ct.bool_, shape=(2, 2))
    assert r.tolist() == [[True, True], [True, True]]


def test_002_zeros_of_double_are_positive_zero():
    r = evaluate(lambda: ct.zeros((2, 2), ct.float64), dtype=ct.float64, shape=(2, 2))
    assert r.dtype == np.float64
    assert r.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert not np.signbit(r).any()


X_DATA = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)  # +inf, -inf, NaN, finite


def test_002_isinf():
    r = evaluate(lambda x: ct.isinf(ct.gather(x, ct.arange(4, dtype=ct.int32))), X_DATA, dtype=ct.bool_, shape=(4,))
    assert r.tolist() == [True, True, False, False]


def test_002_isnan():
    r = evaluate(lambda x: ct.isnan(ct.gather(x, ct.arange(4, dtype=ct.int32))), X_DATA, dtype=ct.bool_, shape=(4,))
    assert r.tolist() == [False, False, True, False]


def test_002_reshape():
    r = evaluate(lambda: ct.reshape(iota((2, 4)), (4, 2)), dtype=ct.int32, shape=(4, 2))
    assert r.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]


@pytest.mark.parametrize("shape, axes, expected", [
    ((), (), ()),                                      # Example 2: tile<int, shape<>>, dimension_map<>
    ((4, 2, 16, 8), (2, 1, 3, 0), (16, 2, 8, 4)),      # Example 3
])
def test_002_permutation_type(shape, axes, expected):
    r = evaluate(lambda: ct.permute(ct.zeros(shape, ct.int32), axes), dtype=ct.int32, shape=expected)
    assert r.shape == expected


def test_002_permutation_type_of_a_scalar_is_the_scalar():  # Example 1: int, dimension_map<>
    r = evaluate(lambda: ct.permute(ct.bid(0), ()), dtype=ct.int32, shape=())
    assert r.tolist() == 0


def test_002_permute():
    r = evaluate(lambda: ct.permute(iota((4, 2, 2)), (2, 0, 1)), dtype=ct.int32, shape=(2, 4, 2))
    assert r.tolist() == [[[0, 2], [4, 6], [8, 10], [12, 14]],
                          [[1, 3], [5, 7], [9, 11], [13, 15]]]


@pytest.mark.parametrize("shape, expected", [
    ((), ()),                                 # Example 2: tile<int, shape<>>
    ((4, 2, 16, 8), (2, 4, 16, 8)),           # Example 3
])
def test_002_transpose_type_swaps_the_first_two_dims(shape, expected):
    r = evaluate(lambda: ct.transpose(ct.zeros(shape, ct.int32)), dtype=ct.int32, shape=expected)
    assert r.shape == expected


def test_002_transpose_type_of_a_scalar_is_the_scalar():  # Example 1: int
    r = evaluate(lambda: ct.transpose(ct.bid(0) + 3), dtype=ct.int32, shape=())
    assert r.tolist() == 3


def test_002_transpose_of_a_rank_1_tile_returns_it_unmodified():
    r = evaluate(lambda: ct.transpose(iota((4,))), dtype=ct.int32, shape=(4,))
    assert r.tolist() == [0, 1, 2, 3]


def test_002_transpose():
    r = evaluate(lambda: ct.transpose(iota((4, 2, 2))), dtype=ct.int32, shape=(2, 4, 2))
    assert r.tolist() == [[[0, 1], [4, 5], [8, 9], [12, 13]],
                          [[2, 3], [6, 7], [10, 11], [14, 15]]]


@pytest.mark.parametrize("axis, expected", [(0, (4, 4)), (1, (2, 8))])
def test_002_concatenation_type(axis, expected):
    r = evaluate(lambda: ct.cat((ct.zeros((2, 4), ct.int32), ct.zeros((2, 4), ct.int32)), axis),
                 dtype=ct.int32, shape=expected)
    assert r.shape == expected


def test_002_scalars_are_never_concatenation_compatible():
    with pytest.raises(ct.TileTypeError):
        evaluate(lambda: ct.cat((ct.bid(0), ct.bid(0)), 0), dtype=ct.int32, shape=(2,))


def test_002_cat():
    r = evaluate(lambda: ct.cat((ct.full((4, 2), 0, ct.int32), ct.full((4, 2), 1, ct.int32)), 1),
                 dtype=ct.int32, shape=(4, 4))
    assert r.tolist() == [[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1]]


def test_002_select():
    c_data = np.array([True, False, True, False])

    def select(c_array):
        c = ct.gather(c_array, ct.arange(4, dtype=ct.int32))
        x = iota((4,))
        y = -iota((4,))
        return ct.where(c, x, y)

    r = evaluate(select, c_data, dtype=ct.int32, shape=(4,))
    assert r.tolist() == [0, -1, 2, -3]


def test_002_extractable_shapes():
    # Example 1: a scalar, shape<>; Example 2: 32x8 tile, shape<16, 2>
    assert evaluate(lambda: ct.extract(ct.bid(0) + 9, (), ()), dtype=ct.int32, shape=()).tolist() == 9
    r = evaluate(lambda: ct.extract(iota((32, 8)), (1, 3), (16, 2)), dtype=ct.int32, shape=(16, 2))
    assert r.tolist() == np.arange(256).reshape(32, 8)[16:32, 6:8].tolist()


def test_002_non_extractable_shape_is_refused():  # Example 3: 32x8 tile, shape<2, 16>
    with pytest.raises(ct.TileTypeError, match="not divisible"):
        evaluate(lambda: ct.extract(iota((32, 8)), (0, 0), (2, 16)), dtype=ct.int32, shape=(2, 16))


def test_002_extract():
    r = evaluate(lambda: ct.extract(iota((4, 4)), (0, 1), (2, 2)), dtype=ct.int32, shape=(2, 2))
    assert r.tolist() == [[2, 3], [6, 7]]


def test_002_broadcast():
    r = evaluate(lambda: ct.broadcast_to(iota((4, 1)), (4, 4)), dtype=ct.int32, shape=(4, 4))
    assert r.tolist() == [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]


def test_002_element_cast():
    r = evaluate(lambda: iota((4, 1)).astype(ct.float64), dtype=ct.float64, shape=(4, 1))
    assert r.tolist() == [[0.0], [1.0], [2.0], [3.0]]


def test_002_element_bitcast():
    r = evaluate(lambda: ct.bitcast(ct.full((4, 1), 255, ct.uint8), ct.int8), dtype=ct.int8, shape=(4, 1))
    assert r.tolist() == [[-1], [-1], [-1], [-1]]


# ---- 003: cuda.tile.load_advanced_indexing ----------------------------------------------------------

@ct.kernel
def advanced_indexing_example(x, y, col_start):
    row_indices = ct.arange(4, dtype=ct.int32)
    tile = ct.load_advanced_indexing(x, (row_indices, ct.Slice(col_start, 4)),
                                     padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (0, 0), tile)


def test_003_load_advanced_indexing_example():
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    y = np.zeros((4, 4), dtype=np.int32)
    ct.launch(None, (1,), advanced_indexing_example, (x, y, 2))
    assert y.tolist() == [[2, 3, 4, 5], [10, 11, 12, 13], [18, 19, 20, 21], [26, 27, 28, 29]]


# ---- 004: CuPy's user-defined kernels, defined and called exactly as the document does ------------

def f32(rows):
    return np.array(rows, dtype=np.float32)


def test_004_squared_diff_broadcasts_y_over_the_rows_of_x():
    squared_diff = tileworkbench.ElementwiseKernel(
        'float32 x, float32 y',
        'float32 z',
        'z = (x - y) * (x - y)',
        'squared_diff')
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    y = np.arange(5, dtype=np.float32)
    got = squared_diff(x, y)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, f32([[0., 0., 0., 0., 0.], [25., 25., 25., 25., 25.]]))


def test_004_squared_diff_takes_a_scalar():
    squared_diff = tileworkbench.ElementwiseKernel('float32 x, float32 y', 'float32 z', 'z = (x - y) * (x - y)',
                                                   'squared_diff')
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = squared_diff(x, 5)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, f32([[25., 16., 9., 4., 1.], [0., 1., 4., 9., 16.]]))


def test_004_squared_diff_writes_an_explicit_output_and_returns_it():
    squared_diff = tileworkbench.ElementwiseKernel('float32 x, float32 y', 'float32 z', 'z = (x - y) * (x - y)',
                                                   'squared_diff')
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    y = np.arange(5, dtype=np.float32)
    z = np.empty((2, 5), dtype=np.float32)
    got = squared_diff(x, y, z)
    assert got is z
    np.testing.assert_array_equal(z, f32([[0., 0., 0., 0., 0.], [25., 25., 25., 25., 25.]]))


def test_004_type_generic_kernel_takes_its_type_from_the_arguments():
    squared_diff_generic = tileworkbench.ElementwiseKernel(
        'T x, T y',
        'T z',
        'z = (x - y) * (x - y)',
        'squared_diff_generic')
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = squared_diff_generic(x, np.arange(5, dtype=np.float32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, f32([[0., 0., 0., 0., 0.], [25., 25., 25., 25., 25.]]))
    ints = squared_diff_generic(np.arange(10).reshape(2, 5), np.arange(5))
    assert ints.dtype == np.int64
    assert ints.tolist() == [[0] * 5, [25] * 5]


def test_004_type_placeholder_declares_a_local_in_the_body():
    squared_diff_generic = tileworkbench.ElementwiseKernel(
        'T x, T y',
        'T z',
        '''
            T diff = x - y;
            z = diff * diff;
        ''',
        'squared_diff_generic')
    x = np.arange(10, dtype=np.float64).reshape(2, 5)
    got = squared_diff_generic(x, np.arange(5, dtype=np.float64))
    assert got.dtype == np.float64
    assert got.tolist() == [[0.] * 5, [25.] * 5]


def test_004_super_generic_kernel_needs_its_output_and_uses_its_type():
    squared_diff_super_generic = tileworkbench.ElementwiseKernel(
        'X x, Y y',
        'Z z',
        'z = (x - y) * (x - y)',
        'squared_diff_super_generic')
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    y = np.arange(5, dtype=np.int32)
    with pytest.raises(TypeError, match="type of Z cannot be determined"):
        squared_diff_super_generic(x, y)
    z = np.empty((2, 5), dtype=np.float64)
    assert squared_diff_super_generic(x, y, z) is z
    assert z.tolist() == [[0.] * 5, [25.] * 5]


def test_004_add_reverse_indexes_a_raw_argument_with_i_and_ind_size():
    add_reverse = tileworkbench.ElementwiseKernel(
        'T x, raw T y', 'T z',
        'z = x + y[_ind.size() - i - 1]',
        'add_reverse')
    x = np.arange(10, dtype=np.float32)
    y = np.arange(10, dtype=np.float32) * 100
    np.testing.assert_array_equal(add_reverse(x, y), x + y[::-1])


def test_004_raw_only_kernel_needs_size():
    add_reverse = tileworkbench.ElementwiseKernel('raw T x, raw T y', 'raw T z', 'z[i] = x[i] + y[_ind.size() - i - 1]',
                                                  'add_reverse_raw')
    x = np.arange(6, dtype=np.int32)
    z = np.zeros(6, np.int32)
    with pytest.raises(ValueError, match="Loop size is undecided"):  # CuPy's words
        add_reverse(x, x, z)
    add_reverse(x, x * 10, z, size=6)
    assert z.tolist() == (x + (x * 10)[::-1]).tolist()


def test_004_l2norm_along_axis_1():
    l2norm_kernel = tileworkbench.ReductionKernel(
        'T x',  # input params
        'T y',  # output params
        'x * x',  # map
        'a + b',  # reduce
        'y = sqrt(a)',  # post-reduction map
        '0',  # identity value
        'l2norm'  # kernel name
    )
    x = np.arange(10, dtype='f').reshape(2, 5)
    got = l2norm_kernel(x, axis=1)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, f32([5.47722578, 15.96871948]))
