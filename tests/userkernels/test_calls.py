"""Calls: broadcasting, scalars, outputs, reductions over axes, views and sweeps of the generated kernels."""
import numpy as np
import pytest

from tileworkbench import ElementwiseKernel, ReductionKernel
from tileworkbench.errors import TileSyntaxError

ADD = ElementwiseKernel("T x, T y", "T z", "z = x + y", "add")


def test_broadcasting_over_strided_inputs_and_outputs():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]          # non-contiguous
    y = np.arange(4, dtype=np.float32).reshape(4, 1)
    got = ADD(x, y)
    np.testing.assert_array_equal(got, x + y)
    out = np.zeros((3, 4), np.float32).T                               # a strided output
    ADD(x, y, out)
    np.testing.assert_array_equal(out, x + y)


def test_a_mismatched_array_type_is_refused():
    with pytest.raises(TypeError, match="'y' is a float64 array, but T = float32"):
        ADD(np.ones(3, np.float32), np.ones(3, np.float64))


def test_shapes_that_do_not_broadcast_are_refused():
    with pytest.raises(ValueError, match="do not broadcast"):
        ADD(np.ones(3, np.float32), np.ones(4, np.float32))


def test_an_empty_loop_returns_empty_outputs():
    assert ADD(np.ones((0, 3), np.float32), np.ones(3, np.float32)).shape == (0, 3)


def test_zero_dimensional_arrays_and_large_tiles():
    got = ADD(np.array(2.0, np.float32), np.array(3.0, np.float32))
    assert got.shape == () and got == 5.0
    x = np.arange(5000, dtype=np.int32)
    np.testing.assert_array_equal(ElementwiseKernel("T x", "T z", "z = x * 3", "triple", tile=4096)(x), x * 3)


SUM = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_kernel")
MAX = ReductionKernel("T x", "T y", "x", "max(a, b)", "y = a", "-CUDART_INF_F", "max_kernel")


@pytest.mark.parametrize("axis", [None, 0, 1, 2, (0, 2), (-1, 0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_over_axes_matches_numpy(axis, keepdims):
    x = np.arange(3 * 5 * 70, dtype=np.int64).reshape(3, 5, 70) % 11
    got = SUM(x, axis=axis, keepdims=keepdims)
    want = x.sum(axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", ["x", (0, "y"), 1.0, True])
def test_an_axis_that_is_not_an_int_is_one_message_naming_it(axis):
    with pytest.raises(TypeError, match=r"axis must be an int or a tuple of ints, got ") as info:
        SUM(np.zeros((2, 3), np.float32), axis=axis)
    assert info.value._render_traceback_() == [f"ArgumentTypeError: {info.value}"]


def test_max_reduction_of_a_transposed_input_with_an_identity():
    x = np.random.default_rng(1).standard_normal((40, 300)).astype(np.float32).T
    np.testing.assert_array_equal(MAX(x, axis=0), x.max(axis=0))


def test_empty_reduction_gives_the_identity():
    assert SUM(np.zeros((3, 0), np.float32), axis=1).tolist() == [0, 0, 0]
    no_identity = ReductionKernel("T x", "T y", "x", "a + b", "y = a", None, "sum_no_identity")
    with pytest.raises(ValueError, match="no identity"):
        no_identity(np.zeros((3, 0), np.float32), axis=1)


def test_reduce_type_and_a_scalar_in_the_map_and_post_map():
    mean_sq = ReductionKernel("T x, float64 scale", "float32 y", "x * x", "a + b", "y = a * scale", "0", "mean_sq",
                              reduce_type="double")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = mean_sq(x, 0.25, axis=1)
    np.testing.assert_array_equal(got, ((x.astype(np.float64) ** 2).sum(axis=1) * 0.25).astype(np.float32))


def test_integer_sum_wraps_in_the_reduce_type():
    x = np.full(300, 100, np.int8)
    assert SUM(x) == x.sum(dtype=np.int8)


def test_explicit_output_keyword_and_strided_output():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    out = np.zeros((2, 4), np.float32)[0]
    assert SUM(x, axis=1, out=out) is out
    np.testing.assert_array_equal(out, x.sum(axis=1))
    strided = np.zeros(8, np.float32)[::2]
    SUM(x, strided, axis=1)
    np.testing.assert_array_equal(strided, x.sum(axis=1))


def test_views_of_an_elementwise_call_show_its_coverage():
    x = np.arange(3000, dtype=np.float32)
    outputs, trace, _ = ADD.trace(x, x)
    np.testing.assert_array_equal(outputs[0], x + x)
    stores = trace.by_array("z")
    assert sum(e.counts().get("STORED", 0) for e in stores) == 3000
    assert ADD.views(x, x)


def test_sweep_compiles_every_tile_size_without_a_gpu():
    pytest.importorskip("cuda.bindings")
    x = np.arange(5000, dtype=np.float32)
    result = ADD.sweep(x, x, space={"TILE": [256, 1024]}, arch="sm_90")
    assert [r.config["TILE"] for r in result.rows] == [256, 1024]
    assert all(r.ok and r.registers for r in result.rows), [r.reason for r in result.rows]


@pytest.mark.parametrize("dtypes, tile", [
    ((np.float32, np.float32), 1024), ((np.complex128, np.complex128), 256), ((np.float32, np.float64), 128),
    ((np.float16, np.float32), 256), ((np.int8, np.float64), 512), ((np.complex64, np.complex128), 128)])
def test_the_default_tile_holds_4_kb_of_one_width_or_16_bytes_a_thread_of_the_narrowest_of_mixed_widths(dtypes, tile):
    mixed = ElementwiseKernel("X x, Y y", "Y z", "z = x + y", "add_mixed_widths")
    n = 1 << 16
    x, y = np.ones(n, dtypes[0]), np.ones(n, dtypes[1])
    for args in ((x, y), (x.reshape(64, -1), y[:1024])):   # flat, and rows of a broadcast
        launch = mixed.launch_plan(*args)
        assert launch.config == {"TILE": tile} and launch.grid == (n // tile,)


def test_the_default_tile_counts_arrays_read_as_one_element_and_raw_arrays_only_for_the_narrowest_width():
    n = 1 << 16
    x, x64 = np.ones(n, np.float32), np.ones(n, np.float64)
    shift = ElementwiseKernel("float32 x, float64 s", "float32 z", "z = x + s", "shift_by_a_double")
    assert shift.launch_plan(x, np.ones((), np.float64)).config == {"TILE": 1024}   # s: one element
    assert shift.launch_plan(x.reshape(64, -1), np.ones((64, 1))).config == {"TILE": 1024}
    gather = ElementwiseKernel("float64 x, raw int32 k", "float64 z", "z = x + k[i]", "add_raw_ints")
    assert gather.launch_plan(x64, np.ones(n, np.int32)).config == {"TILE": 128}   # chunks of 4 float64


def test_float32_with_float64_runs_blocks_of_one_16_byte_chunk_of_the_float32_array_a_thread():
    pytest.importorskip("cuda.bindings")
    import tileworkbench.runtime.launch as runtime
    mixed = ElementwiseKernel("X x, Y y", "Y z", "z = x + y", "add_mixed_chunks")
    x, y = np.ones(4096, np.float32), np.ones(4096, np.float64)
    launch = mixed.launch_plan(x, y)
    compiled = runtime.build(launch.kernel.specialize(launch.args), "sm_90")
    assert compiled.threads * 16 // 4 == launch.config["TILE"]   # 32 threads of 4 float32 and 4 float64 each


def test_the_generated_source_and_ir_are_readable():
    x = np.arange(8, dtype=np.float32)
    source = ADD.source(x, x)
    assert "# operation line 1: z = x + y" in source and "ct.load(x, (_block,), (TILE,)" in source
    assert "add %_x_val, %_y_val" in ADD.ir(x, x)


def test_parameters_named_like_python_keywords_or_the_kernels_own_names():
    k = ElementwiseKernel("T in, T block, T ct", "T index", "index = in * block + ct", "names")
    x = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(k(x, x, x), x * x + x)
    r = ReductionKernel("T lambda", "T acc", "lambda", "a + b", "acc = a", "0", "names")
    assert r(np.arange(5, dtype=np.int32)) == 10


SQUARED_DIFF = ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")


@pytest.mark.parametrize("x_shape, y_shape", [((6, 300), (300,)), ((6, 300), (6, 1)), ((3, 4, 200), (4, 1)),
                                              ((3, 4, 200), (3, 1, 200)), ((2, 130), (1, 130))])
def test_broadcasting_along_long_rows_matches_numpy(x_shape, y_shape):
    rng = np.random.default_rng(0)
    x, y = rng.random(x_shape, dtype=np.float32), rng.random(y_shape, dtype=np.float32)
    np.testing.assert_array_equal(SQUARED_DIFF(x, y), (x - y) * (x - y))


@pytest.mark.parametrize("y_shape", [(256,), (4, 1), (), (4, 256)])
def test_a_call_with_long_rows_passes_the_arrays_themselves(y_shape):
    x, y = np.ones((4, 256), np.float32), np.full(y_shape, 2, np.float32)
    launch = SQUARED_DIFF.launch_plan(x, y)
    assert launch.values[0] is x and launch.values[1] is y   # no views made per call
    assert "ct.load(x, (_row, _row_tile), (1, TILE)" in SQUARED_DIFF.source(x, y)
    np.testing.assert_array_equal(SQUARED_DIFF(x, y), np.ones((4, 256), np.float32))


def test_contiguous_rows_that_are_not_whole_tiles_run_flat():
    x = np.arange(3000, dtype=np.float32).reshape(3, 1000)
    assert "ct.load(x, (_block,), (TILE,)" in SQUARED_DIFF.source(x, x[::-1].copy())
    np.testing.assert_array_equal(SQUARED_DIFF(x, x[::-1].copy()), (x - x[::-1]) ** 2)


def test_long_rows_of_transposed_arrays_with_a_strided_output_an_index_and_a_raw_array():
    x = np.arange(1800, dtype=np.float32).reshape(300, 6).T
    y = np.arange(1800, dtype=np.float32)
    out = np.zeros((300, 6), np.float32).T
    k = ElementwiseKernel("T x, raw T y", "T z", "z += x + y[_ind.size() - i - 1] + i", "rows")
    k(x, y, out)
    np.testing.assert_array_equal(out, x + y[::-1].reshape(x.shape) + np.arange(x.size).reshape(x.shape))


def test_type_aliases_name_their_type_to_the_end_of_their_block_and_the_later_parts_see_top_level_ones():
    x = np.arange(5, dtype=np.float32)
    body = "using U = T; typedef double D; { using U = int; U k = 7 / 2; z = k; } U w = x / 2; z += (D)w + U(1);"
    np.testing.assert_array_equal(ElementwiseKernel("T x", "T z", body, "aliases")(x), 3 + x / 2 + 1)
    preamble = "using R = double; __device__ R half_of(R v) { typedef R S; return (S)v / 2; }"
    k = ElementwiseKernel("T x", "T z", "z = half_of(x) * W(3)", "preamble_aliases", preamble=preamble,
                          loop_prep="typedef T W;")
    np.testing.assert_array_equal(k(x), x / 2 * 3)
    r = ReductionKernel("T x", "T y", "A(x) / 3", "a + b", "y = a", "0", "reduce_aliases", preamble="using A = int;")
    assert r(np.arange(7, dtype=np.int32)) == sum(v // 3 for v in range(7))


def test_an_inner_typedef_of_an_outer_alias_name_declares_that_name_anew_as_c_does():
    x = np.array([0.5, 1.5, 2.75], np.float32)
    body = "typedef float F; { typedef int F; F a = x; z = a; } F b = x; z += b;"
    np.testing.assert_array_equal(ElementwiseKernel("float32 x", "float32 z", body, "retypedef")(x), [0.5, 2.5, 4.75])


def test_a_type_alias_written_as_a_value_is_refused_as_c_refuses_it():
    with pytest.raises(TileSyntaxError, match=r"'i' names a type here \(a type alias\), not a value"):
        ElementwiseKernel("float32 x", "float32 z", "using i = int; z = x + i;", "alias_value")(np.zeros(4, np.float32))


@pytest.mark.parametrize("seed", range(6))
def test_random_broadcasts_and_strides_along_long_rows_match_numpy(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 4, rng.integers(1, 4))) + (int(rng.integers(128, 300)),)
    args = []
    for _ in range(2):
        own = tuple(1 if rng.random() < 0.3 else d for d in shape[int(rng.integers(0, len(shape))):])
        a = rng.standard_normal(own[::-1]).astype(np.float32).T if rng.random() < 0.5 else \
            rng.standard_normal(own).astype(np.float32)
        args.append(a)
    x, y = args
    expected = (x - y) * (x - y)
    np.testing.assert_array_equal(SQUARED_DIFF(x, y), expected)
    out = np.zeros(expected.shape[::-1], np.float32).T
    SQUARED_DIFF(x, y, out)
    np.testing.assert_array_equal(out, expected)


def test_default_reduction_tiles_fill_the_grid_along_rows_and_read_runs_of_outputs_down_columns():
    l2norm = ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm_tiles")
    m = np.ones((1024, 4096), np.float32)
    rows = l2norm.launch_plan(m, axis=1)
    assert rows.config == {"TM": 1, "TK": 4096} and rows.grid == (1024,)
    columns = l2norm.launch_plan(m, axis=0)   # the outputs are what is contiguous
    assert columns.config == {"TM": 4, "TK": 1024}
    np.testing.assert_allclose(l2norm(m[:8, :300], axis=0), np.sqrt(np.full(300, 8, np.float32)))
