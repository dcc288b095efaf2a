"""Rules of cuTile's language that its own tests check: which user errors raise which class (and
words), and the programs it accepts that need more than a literal reading of the code."""
import enum
import functools
import re

import numpy as np
import pytest

import tileworkbench.tile as ct

F32 = np.zeros(16, np.float32)


def launch(kernel, *args):
    ct.launch(None, (1,), kernel, args)


def raises(cls, match, kernel, *args):
    with pytest.raises(cls, match=match) as info:
        launch(kernel, *args)
    return info.value


# ---- the kernel decorator ------------------------------------------------------------------------

def test_a_kernel_is_an_instance_of_ct_kernel_with_or_without_options():
    @ct.kernel
    def plain(x):
        pass

    @ct.kernel(occupancy=2)
    def tuned(x):
        pass
    assert isinstance(plain, ct.kernel) and isinstance(tuned, ct.kernel)
    assert tuned.options["occupancy"] == 2 and not isinstance(plain._pyfunc, ct.kernel)


def test_bad_kernel_options_are_refused_when_the_kernel_is_made():
    with pytest.raises(ValueError, match="occupancy must be in"):
        ct.kernel(occupancy=64)(lambda_free_function)


def lambda_free_function(x):
    pass


# ---- diagnostics ---------------------------------------------------------------------------------

@ct.kernel
def fast_acc_on_f16(a, c):
    t = ct.load(a, (0, 0), (16, 16))
    ct.store(c, (0, 0), ct.mma(t, t, ct.load(c, (0, 0), (16, 16)), use_fast_acc=True))


def test_mma_fast_accumulation_needs_fp8_inputs():
    a, c = np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float32)
    raises(ct.TileTypeError, "use_fast_acc is only supported for fp8 input dtypes", fast_acc_on_f16, a, c)


@ct.kernel
def mma_of(a, b, c):
    ct.store(c, (0, 0), ct.mma(ct.load(a, (0, 0), (16, 16)), ct.load(b, (0, 0), (16, 16)), ct.load(c, (0, 0), (16, 16))))


@pytest.mark.parametrize("a, b, c, message", [
    (np.float16, ct.bfloat16.numpy, np.float32, "x and y must have the same dtype"),
    (np.int16, np.int16, np.float32, "Unsupported input dtype int16"),
    (ct.bfloat16.numpy, ct.bfloat16.numpy, np.float16, "Unsupported acc dtype float16"),
])
def test_mma_names_the_dtype_it_refuses(a, b, c, message):
    raises(ct.TileTypeError, message, mma_of, np.zeros((16, 16), a), np.zeros((16, 16), b), np.zeros((16, 16), c))


@pytest.mark.parametrize("fn", [ct.sum, ct.prod, ct.cumsum, ct.cumprod])
@pytest.mark.parametrize("mode", [ct.RoundingMode.FULL, ct.RoundingMode.APPROX, ct.RoundingMode.RZI])
def test_sums_and_products_refuse_the_rounding_modes_of_neither_add_nor_mul(fn, mode):
    @ct.kernel
    def kernel(x):
        fn(ct.load(x, (0,), (16,)), 0, rounding_mode=mode)
    raises(ct.TileTypeError, f"Rounding mode {mode.value} is not supported for {fn.__name__}", kernel, F32)


@pytest.mark.parametrize("fn", [ct.sum, ct.cumsum])
def test_a_directed_rounding_of_a_sum_is_refused_as_not_implemented(fn):
    @ct.kernel
    def kernel(x):
        fn(ct.load(x, (0,), (16,)), 0, rounding_mode=ct.RoundingMode.RZ)
    raises(ct.TileUnsupportedFeatureError, "rounding mode RZ is not supported yet", kernel, F32)


def test_a_sum_in_the_default_rounding_mode_runs():
    @ct.kernel
    def kernel(x, y):
        ct.store(y, (0,), ct.full((1,), ct.sum(ct.load(x, (0,), (16,)), rounding_mode=ct.RoundingMode.RN),
                                  ct.float32))
    y = np.zeros(1, np.float32)
    launch(kernel, np.arange(16, dtype=np.float32), y)
    assert y[0] == 120


@pytest.mark.parametrize("mode", [ct.RoundingMode.RM, ct.RoundingMode.RA])
def test_a_conversion_from_an_fp8_format_takes_the_default_rounding_only(mode):
    @ct.kernel
    def kernel(x):
        ct.full((16,), 2.0, ct.float8_e8m0fnu).astype(ct.float32, rounding_mode=mode)
    raises(ct.TileTypeError, f"rounding_mode={mode} is not supported for conversion from float8_e8m0fnu to float32",
           kernel, F32)


@ct.kernel
def slice_whole_2d(x):
    t = ct.load(x, (0, 0), (4, 4))
    t[:]


def test_indexing_a_2d_tile_with_one_slice_is_direct_indexing():
    raises(ct.TileTypeError, "Directly indexing a tile is not supported", slice_whole_2d, np.zeros((4, 4), np.float32))


@ct.kernel
def item_of_two(x):
    ct.load(x, (0,), (2,)).item()


def test_item_of_a_tile_of_two_elements_cannot_reshape_it():
    raises(ct.TileTypeError, re.escape("Cannot reshape (2,) to ()"), item_of_two, F32)


@ct.kernel
def runtime_extent(x, n: int):
    ct.full((n,), 1.0, ct.float32)


def test_a_runtime_tile_shape_names_the_call_and_argument():
    raises(ct.TileTypeError, 'Invalid argument "shape" of full\\(\\): Expected a constant', runtime_extent, F32, 4)


GLOBAL_ARRAY = np.zeros(16, np.float32)


@ct.kernel
def reads_a_global_array(y):
    ct.store(y, (0,), ct.load(GLOBAL_ARRAY, (0,), (16,)))


def test_an_array_from_a_global_cannot_be_a_constant():
    raises(ct.TileTypeError, "Cannot create constant from value of type numpy.ndarray", reads_a_global_array, F32)


GLOBAL_SIZE = 16


@ct.kernel
def reads_a_local_before_assigning_it(x):
    t = ct.load(x, (0,), (GLOBAL_SIZE,))  # noqa: F823 (the point of the test)
    GLOBAL_SIZE = 8  # noqa: F841
    ct.store(x, (0,), t)


def test_reading_a_local_before_its_assignment_does_not_read_the_global():
    raises(ct.TileSyntaxError, "Undefined variable GLOBAL_SIZE used before it is assigned",
           reads_a_local_before_assigning_it, F32)


class Color(enum.Enum):
    RED = 1
    BLUE = 2


@ct.kernel
def orders_enum_members(x):
    if Color.RED < Color.BLUE:
        ct.store(x, (0,), ct.zeros((16,), ct.float32))


def test_a_failing_constant_expression_of_the_wrong_types_is_a_type_error():
    raises(ct.TileTypeError, "'<' not supported", orders_enum_members, F32)


@ct.kernel
def gathers_with_a_short_mask(x):
    ct.gather(x, ct.arange(8, dtype=ct.int32), mask=ct.arange(4, dtype=ct.int32) > 0)


def test_a_mask_of_another_shape_is_not_broadcastable():
    raises(ct.TileTypeError, "Custom mask shape \\(4,\\) is not broadcastable", gathers_with_a_short_mask, F32)


@ct.kernel
def calls_an_unknown_tile_function(x):
    ct.no_such_function(x)


def test_an_unknown_module_attribute_is_a_type_error():
    raises(ct.TileTypeError, "has no attribute 'no_such_function'", calls_an_unknown_tile_function, F32)


def test_a_dtype_called_on_a_string_is_a_type_error():
    @ct.kernel
    def kernel(x):
        ct.full((16,), np.float32("text"), ct.float32)
    raises(ct.TileTypeError, "float32", kernel, F32)


# ---- helpers -------------------------------------------------------------------------------------

def int_or_float(x):
    if ct.bid(0) == 0:
        return 3
    else:
        return 5.0


@ct.kernel
def returns_int_or_float(x):
    int_or_float(x)


def test_a_helper_returning_another_type_on_another_path_is_refused():
    raises(ct.TileTypeError, "Type of return value depends on path taken", returns_int_or_float, F32)


def returns_from_a_for_loop(n):
    for i in range(n):
        if i > 2:
            return i
    return 0


@ct.kernel
def calls_returns_from_a_for_loop(x, n: int):
    returns_from_a_for_loop(n)


def first_fibonacci_above(n):
    a, b = 1, 1
    while True:
        a, b = b, a + b
        if b > n:
            return b


@ct.kernel
def fibonacci(y, n: int):
    ct.store(y, (0,), ct.full((1,), first_fibonacci_above(n), ct.int32))


def test_a_helper_returns_from_a_while_true_loop():
    y = np.zeros(1, np.int32)
    launch(fibonacci, y, 15)
    assert y[0] == 21


def test_returning_from_a_for_loop_of_a_helper_is_refused():
    raises(ct.TileSyntaxError, "Returning from a for loop is not supported", calls_returns_from_a_for_loop, F32, 4)


def forwarding(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


@forwarding
def times_ten(x):
    return x * 10


@ct.kernel
def calls_a_forwarding_wrapper(y):
    ct.store(y, (0,), ct.full((1,), times_ten(5), ct.int32))


def test_a_functools_wraps_wrapper_runs_with_its_own_parameters():
    y = np.zeros(1, np.int32)
    launch(calls_a_forwarding_wrapper, y)
    assert y[0] == 50


# ---- constants -----------------------------------------------------------------------------------

@ct.kernel
def break_with_a_constant(y):
    a = 0
    while True:
        if ct.bid(0) == 0:
            a = 2
            break
        a += 1
    ct.store(y, (0,), ct.full((a,), 7, ct.int32))


def test_a_name_holding_one_constant_at_every_break_of_a_while_true_loop_is_that_constant():
    y = np.zeros(2, np.int32)
    launch(break_with_a_constant, y)
    assert y.tolist() == [7, 7]


@ct.kernel
def defined_at_every_break(x):
    i = 0
    while True:
        if i > 0:
            t = ct.gather(x, ()) + i
            pair = (t, t * 2)
            break
        i += 10
    ct.scatter(x, (), pair[1])


def test_a_name_first_assigned_in_a_while_true_loop_and_defined_at_every_break_is_defined_after_it():
    x = np.ones((), np.int32)
    launch(defined_at_every_break, x)
    assert x == 22


@ct.kernel
def float_of_a_typed_constant(y):
    ct.store(y, (0,), ct.full((1,), float(ct.float32(5.0)), y.dtype))


def test_float_of_a_typed_constant_is_a_loose_constant():
    y = np.zeros(1, np.float16)
    launch(float_of_a_typed_constant, y)
    assert y[0] == 5


@ct.kernel
def typed_constants_fold(out, n: ct.Constant[int]):
    t = n + ct.int16(2)  # a loose int meets a typed one: int16
    ct.static_assert(t == 7)
    ct.static_assert(ct.int8(100) + ct.int8(100) == -56)  # wraps in its dtype, as on the GPU
    ct.static_assert(ct.float16(1.0) + ct.float16(0.0001) == 1.0)  # rounds in float16
    u = ct.int16(5) + ct.int32(7)  # promoted as tiles are
    ct.static_assert(u == 12)
    ct.static_eval(u.dtype == ct.int32)
    ct.static_assert(ct.int32(-7) // 2 == -4)
    ct.static_assert(ct.int32(-7) % 2 == 1)
    ct.static_assert(ct.float32(1.0) / 4 == 0.25)
    b = ct.arange(4, dtype=ct.int8) + t  # a typed constant promotes: int16
    ct.static_assert(b.dtype == ct.int16)
    ct.scatter(out, ct.arange(4, dtype=ct.int32), b)


def test_arithmetic_and_comparisons_of_typed_constants_fold_in_their_dtype():
    out = np.zeros(4, np.int32)
    launch(typed_constants_fold, out, 5)
    assert out.tolist() == [7, 8, 9, 10]


@ct.kernel
def static_assert_of_a_tile(x):
    ct.static_assert(ct.load(x, (0,), (16,)).sum() > 0)


def test_static_assert_of_a_value_computed_at_run_time_is_refused():
    raises(ct.TileTypeError, "static_assert\\(\\) needs a compile-time condition", static_assert_of_a_tile, F32)
