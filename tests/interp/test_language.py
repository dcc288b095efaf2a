"""Language constructs cuTile programs use, on the interpreter against NumPy: custom reductions and
scans, ct.astile, ct.divmod, dtype(), Array.slice, while/break/continue, returns under runtime
control flow, tuples chosen at run time. (The same kernels compile for the GPU: tests/gpu/cases.py.)"""
import enum
import functools
import operator

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import (
    TileOutOfBoundsError,
    TileRecursionError,
    TileStaticAssertionError,
    TileStaticEvalError,
    TileSyntaxError,
    TileTypeError,
    TileValueError,
)

from ..gpu.cases import RNG, random_array


def launch(kernel, grid, *args):
    ct.launch(None, grid, kernel, args)
    return args

# ---- custom reduce / scan -----------------------------------------------------------------------


@ct.kernel
def reduce_rows(x, y, FLAVOR: ct.Constant[int]):
    def f(a, b):
        return a + b
    t = ct.load(x, (0, 0), (4, 8))
    if FLAVOR == 0:
        r = ct.reduce(t, 1, lambda a, b: a + b, 0)
    elif FLAVOR == 1:
        r = ct.reduce(t, -1, f, 0)
    else:
        r = ct.reduce(t, 1, operator.add, 0)
    ct.store(y, (0,), r)


@pytest.mark.parametrize("flavor", [0, 1, 2], ids=["lambda", "def", "operator"])
def test_reduce_with_a_lambda_a_def_or_an_operator_sums_rows(flavor):
    x = random_array((4, 8), np.int32)
    y = np.zeros(4, np.int32)
    launch(reduce_rows, (1,), x, y, flavor)
    np.testing.assert_array_equal(y, x.sum(1))


@ct.kernel
def reduce_keepdims_capture(x, p, y):
    m = ct.gather(p, 0)
    t = ct.load(x, (0, 0), (16, 16))
    ct.store(y, (0, 0), ct.reduce(t, 0, lambda a, b: (a + b) % m, 0, keepdims=True))


def test_reduce_keeps_dims_and_uses_values_captured_from_the_kernel():
    x = np.arange(256, dtype=np.int32).reshape(16, 16)
    y = np.zeros((1, 16), np.int32)
    launch(reduce_keepdims_capture, (1,), x, np.array([5], np.int32), y)
    np.testing.assert_array_equal(y, x.sum(0, keepdims=True) % 5)


@ct.kernel
def min_with_index(x, y, yi):
    def pick(a_val, a_idx, b_val, b_idx):
        take_a = (a_val < b_val) | ((a_val == b_val) & (a_idx < b_idx))
        return ct.where(take_a, a_val, b_val), ct.where(take_a, a_idx, b_idx)
    t = ct.load(x, (0, 0), (4, 8))
    v, i = ct.reduce((t, ct.arange(8, dtype=ct.int32)), 1, pick, (2**31 - 1, 0))
    ct.store(y, (0,), v)
    ct.store(yi, (0,), i)


def test_reduce_over_a_tuple_of_tiles_finds_the_first_minimum():
    x = np.array([[5, 10, 7, 23, 8, 9, -4, 4], [2] * 8, [17, 16, 15, 14, 13, 12, 11, 10],
                  [13, 13, 12, 12, 9, 9, 11, 11]], np.int32)
    y, yi = np.zeros(4, np.int32), np.zeros(4, np.int32)
    launch(min_with_index, (1,), x, y, yi)
    np.testing.assert_array_equal(y, x.min(1))
    np.testing.assert_array_equal(yi, x.argmin(1))


@ct.kernel
def scans(x, w, out_sum, out_max, out_b, REVERSE: ct.Constant[bool]):
    t = ct.load(x, (0, 0), (8, 16))
    s, m = ct.scan((t, t), axis=1, func=lambda a, am, b, bm: (a + b, ct.maximum(am, bm)),
                   identity=(0, -1000.0), reverse=REVERSE)
    ct.store(out_sum, (0, 0), s)
    ct.store(out_max, (0, 0), m)
    ct.store(out_b, (0, 0), ct.scan((ct.load(w, (0,), (16,)), t), -1, lambda a, b, c, d: (a + c, b * d),
                                    (0, 1))[1])


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_over_tuples_broadcasts_them_and_scans_in_either_direction(reverse):
    x = random_array((8, 16), np.float32)
    out_sum, out_max, out_b = (np.zeros((8, 16), np.float32) for _ in range(3))
    launch(scans, (1,), x, random_array(16, np.float32), out_sum, out_max, out_b, reverse)
    flip = (lambda a: a[:, ::-1]) if reverse else (lambda a: a)
    np.testing.assert_allclose(out_sum, flip(np.cumsum(flip(x), 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out_max, flip(np.maximum.accumulate(flip(x), 1)))
    np.testing.assert_allclose(out_b, np.cumprod(x, 1), rtol=1e-4)


def _combine_kernel(body):
    @ct.kernel
    def k(x, y):
        t = ct.load(x, (0, 0), (4, 4))
        ct.store(y, (0, 0), ct.scan(t, 1, body(x), 0))
    return k


def _branching(x):
    def f(a, b):
        if ct.bid(0) == 0:
            return a + b
        return a
    return f


def _looping(x):
    def f(a, b):
        r = a
        for i in range(ct.bid(0)):
            r += b
        return r
    return f


def _loading(x):
    def f(a, b):
        return ct.load(x, (0, 0), (1, 1)).item() + a + b
    return f


def _nested(x):
    def f(a, b):
        return a + b + ct.scan(ct.full((2,), 1, ct.int32), 0, lambda u, v: u + v, 0).sum()
    return f


@pytest.mark.parametrize("body, message", [
    (_branching, "Branching inside scan body is not supported"),
    (_looping, "Loops inside scan body are not supported"),
    (_loading, "Operations with memory effects are not supported inside scan body"),
    (_nested, "Nested scan/reduction is not supported"),
])
def test_a_combine_function_is_pure_straight_line_code(body, message):
    x = np.zeros((4, 4), np.int32)
    with pytest.raises(TileSyntaxError, match=message):
        launch(_combine_kernel(body), (1,), x, x.copy())


def test_reduce_axis_must_be_an_integer_constant():
    @ct.kernel
    def k(x):
        ct.store(x, (0, 0), ct.scan(ct.load(x, (0, 0), (4, 4)), None, lambda a, b: a + b, 0))
    with pytest.raises(TileTypeError, match="Expected an integer constant"):
        launch(k, (1,), np.zeros((4, 4), np.int32))

# ---- astile, divmod, dtype() ----------------------------------------------------------------------


@ct.kernel
def astiles(x, y, a: int, b: float):
    ct.store(x, (0, 0, 0), ct.astile((((1, a), (2, b)), ((3, a * 2), (4, 5))), dtype=ct.float32))
    ct.store(y, (0,), ct.astile(b, dtype=ct.int32) + ct.int32() + ct.int32(2))


def test_astile_builds_a_tile_from_nested_tuples_of_constants_and_runtime_scalars():
    x, y = np.zeros((2, 2, 2), np.float32), np.zeros(1, np.int32)
    launch(astiles, (1,), x, y, 7, 42.9)
    np.testing.assert_array_equal(x, np.array([[[1, 7], [2, 42.9]], [[3, 14], [4, 5]]], np.float32))
    assert y[0] == 44


@pytest.mark.parametrize("value, message", [
    ((), r"Tuple length 0 at value is not a power of 2"),
    (((1, 2), (3,)), r"Tuple has non-uniform inner shapes at value"),
    ((1, "a"), r"Expected scalar elements at value\[1\]"),
])
def test_astile_rejects_ragged_empty_or_non_scalar_values(value, message):
    @ct.kernel
    def k(x):
        ct.store(x, (0,), ct.astile(value, dtype=ct.int32).reshape((-1,)))
    with pytest.raises(TileTypeError, match=message):
        launch(k, (1,), np.zeros(4, np.int32))


@ct.kernel
def divmods(x, y, q, r, BUILTIN: ct.Constant[bool]):
    tx, ty = ct.load(x, (0,), (16,)), ct.load(y, (0,), (16,))
    tq, tr = divmod(tx, ty) if BUILTIN else ct.divmod(tx, ty)
    ct.store(q, (0,), tq)
    ct.store(r, (0,), tr)


@pytest.mark.parametrize("builtin", [True, False])
def test_divmod_gives_python_floor_quotient_and_remainder(builtin):
    x, y = RNG.integers(-50, 50, 16).astype(np.int16), RNG.integers(1, 9, 16).astype(np.int32) * RNG.choice([-1, 1], 16)
    q, r = np.zeros(16, np.int32), np.zeros(16, np.int32)
    launch(divmods, (1,), x, y.astype(np.int32), q, r, builtin)
    np.testing.assert_array_equal(q, x // y)
    np.testing.assert_array_equal(r, x % y)


def test_divmod_of_floats_is_refused():
    x = np.ones(16, np.float32)
    with pytest.raises(TileTypeError, match="divmod\\(\\) is not implemented for floating point values"):
        launch(divmods, (1,), x, x, x.copy(), x.copy(), False)

# ---- Array.slice ----------------------------------------------------------------------------------


@ct.kernel
def slice_copy(x, y, start: int, stop: int, T: ct.Constant[int]):
    ct.store(y.slice(-1, start, stop), (0,), ct.load(x.slice(0, start, stop), (0,), (T,)))


@pytest.mark.parametrize("start, stop", [(2, 7), (4, 4), (4, 5)])
def test_slice_bounds_what_a_tile_reads_and_writes(start, stop):
    x, y = random_array(16, np.float32), np.zeros(16, np.float32)
    launch(slice_copy, (1,), x, y, start, stop, 8)
    expected = np.zeros(16, np.float32)
    expected[start:stop] = x[start:stop]
    np.testing.assert_array_equal(y, expected)


@ct.kernel
def ragged_segments(a, b, indptr, TM: ct.Constant[int], TN: ct.Constant[int]):
    seg = ct.bid(0)
    start, end = ct.load(indptr, seg, ()), ct.load(indptr, seg + 1, ())
    sub_a, sub_b = a.slice(axis=0, start=start, stop=end), b.slice(axis=0, start=start, stop=end)
    m, _ = sub_a.shape
    for i in range(ct.cdiv(m, TM)):
        ct.store(sub_b, (i, ct.bid(1)), ct.load(sub_a, (i, ct.bid(1)), (TM, TN)) + seg)


def test_slices_with_bounds_that_differ_by_block_view_each_blocks_segment():
    a, b = random_array((12, 16), np.float32), np.zeros((12, 16), np.float32)
    indptr = np.array([0, 4, 7, 12], np.int32)
    launch(ragged_segments, (3, 2), a, b, indptr, 4, 8)
    np.testing.assert_array_equal(b, a + np.repeat([0, 1, 2], [4, 3, 5]).astype(np.float32)[:, None])


@ct.kernel
def chained_static(x, y):
    sub = x.slice(axis=0, start=4, stop=20).slice(0, 2, 10)
    ct.static_assert(sub.shape[0] == 8)
    ct.store(y, (0,), ct.load(sub, (0,), (sub.shape[0],)))


def test_constant_bounds_give_a_constant_extent_and_slices_chain():
    x, y = random_array(32, np.float32), np.zeros(8, np.float32)
    launch(chained_static, (1,), x, y)
    np.testing.assert_array_equal(y, x[6:14])


def test_runtime_bounds_give_a_runtime_extent():
    @ct.kernel
    def k(x, start: int):
        ct.static_assert(x.slice(0, start, 16).shape[0] == 14)
    with pytest.raises(TileTypeError, match="static_assert"):
        launch(k, (1,), np.zeros(32, np.float32), 2)


@ct.kernel
def slice_with(x, AXIS: ct.Constant[int], START: ct.Constant[int], STOP: ct.Constant[float]):
    x.slice(AXIS, START, STOP if STOP != 5 else 5)


@pytest.mark.parametrize("axis, start, stop, message", [
    (0, -1, 5, "Slice start must be non-negative"),
    (0, 5, 3, "Slice stop must be greater than or equal to start"),
    (0, 1, 5.5, "Expected a signed integer scalar"),
    (1, 0, 5, "Axis 1 is out of range for rank 1"),
])
def test_slice_arguments_are_checked(axis, start, stop, message):
    with pytest.raises(TileTypeError, match=message):
        launch(slice_with, (1,), np.zeros(10, np.float32), axis, start, stop)


def test_a_slice_past_the_array_is_an_error_naming_the_block():
    with pytest.raises(TileOutOfBoundsError, match="block \\(0,\\) has start=2, stop=40"):
        launch(slice_copy, (1,), np.zeros(16, np.float32), np.zeros(16, np.float32), 2, 40, 8)

# ---- loops with exits, returns, runtime-chosen tuples -----------------------------------------------


@ct.kernel
def for_exits(x, n, T: ct.Constant[int]):
    xi = ct.load(x, (ct.bid(0),), (T,))
    for index in range(n):
        for inner in range(n):
            if inner == 2:
                break
        if index == 2:
            continue
        elif index > 4 + ct.bid(0):
            break
        xi += 1
    ct.store(x, (ct.bid(0),), xi)


def _for_exits_reference(n, block):
    count = 0
    for index in range(n):
        if index == 2:
            continue
        elif index > 4 + block:
            break
        count += 1
    return count


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 6, 8])
def test_break_and_continue_in_for_loops_follow_python(n):
    x = np.zeros(64, np.float32)
    launch(for_exits, (2,), x, n, 32)
    np.testing.assert_array_equal(x, np.repeat([_for_exits_reference(n, b) for b in (0, 1)], 32))


@ct.kernel
def while_exits(x, n, T: ct.Constant[int]):
    xi = ct.load(x, (ct.bid(0),), (T,))
    count = 0
    while count < n:
        count += 1
        if count == 3:
            continue
        if count > 5 + ct.bid(0):
            break
        xi += 1
    ct.store(x, (ct.bid(0),), xi)


@pytest.mark.parametrize("n", [0, 2, 5, 9])
def test_while_loops_with_break_and_continue_follow_python(n):
    def reference(block):
        count = total = 0
        while count < n:
            count += 1
            if count == 3:
                continue
            if count > 5 + block:
                break
            total += 1
        return total
    x = np.zeros(64, np.float32)
    launch(while_exits, (2,), x, n, 32)
    np.testing.assert_array_equal(x, np.repeat([reference(0), reference(1)], 32))


def test_a_value_assigned_before_a_break_in_a_while_loop_is_the_loops_result():
    @ct.kernel
    def k(x):
        a = ct.bid(0) + 3.0
        while ct.bid(0) == 1:
            a = 10.0
            break
        ct.store(x, (ct.bid(0),), ct.full((1,), a, x.dtype))
    x = np.zeros(2, np.float32)
    launch(k, (2,), x)
    np.testing.assert_array_equal(x, [3.0, 10.0])


def pick(tx, ty, early):
    if early:
        return tx
    return tx + ty


@ct.kernel
def early_returns(x, y, out, early: bool):
    tx, ty = ct.load(x, (0,), (16,)), ct.load(y, (0,), (16,))
    ct.store(out, (0,), pick(tx, ty, early))
    if early:
        return
    ct.store(out, (0,), pick(tx, ty, early) * 3)


@pytest.mark.parametrize("early", [True, False])
def test_returns_under_a_runtime_condition_end_the_helper_or_the_kernel(early):
    x, y, out = random_array(16, np.float32), random_array(16, np.float32), np.zeros(16, np.float32)
    launch(early_returns, (1,), x, y, out, early)
    np.testing.assert_array_equal(out, x if early else (x + y) * 3)


def test_a_return_inside_a_loop_of_the_kernel_ends_the_kernel():
    @ct.kernel
    def k(x, n: int):
        for i in range(10):
            if i == n:
                return
            ct.store(x, (i,), ct.full((1,), 1, ct.int32))
        ct.store(x, (10,), ct.full((1,), 1, ct.int32))
    x = np.zeros(11, np.int32)
    launch(k, (1,), x, 4)
    np.testing.assert_array_equal(x, [1] * 4 + [0] * 7)


def test_tuples_chosen_under_a_runtime_condition_are_merged_element_by_element():
    @ct.kernel
    def k(x):
        t = ct.load(x, (0,), (1,))
        if ct.bid(0) == 0:
            a = t, (t, 2)
        else:
            a = t + 3, (t + 5, 2)
        ct.store(x, (1 + ct.bid(0),), a[0] + a[1][0] + ct.full((1,), a[1][1], x.dtype))
    x = np.array([1, 0, 0], np.float32)
    launch(k, (2,), x)
    np.testing.assert_array_equal(x, [1, 4, 12])


def test_static_assert_still_reports_failures():
    @ct.kernel
    def k(x):
        ct.static_assert(x.slice(0, 0, 4).shape[0] == 5, "four")
    with pytest.raises(TileStaticAssertionError, match="four"):
        launch(k, (1,), np.zeros(8, np.float32))

# ---- compile-time Python: enums, dicts, static_eval / static_iter, ct.function ----------------------


class Color(enum.Enum):
    RED = 0
    GREEN = 1


@ct.function
def add_one(x, out):
    ct.store(out, (0,), ct.load(x, (0,), (4,)) + 1)


def keywords(**kwargs):
    ct.static_assert(kwargs == {"foo": 1, "bar": 2})
    ct.static_assert(kwargs.get("qux") is None and "foo" in kwargs and "qux" not in kwargs)
    return kwargs.get("foo") + kwargs["bar"]


@ct.kernel(num_ctas=ct.ByTarget(sm_90=2, default=1))
def compile_time_python(x, out, COLOR: ct.Constant[int]):
    add_one(x, out)
    t = ct.load(x, (0,), (4,))
    t2 = t * 2
    acc = ct.zeros((4,), ct.float32)
    for i, tile in ct.static_iter(enumerate((t, t2), 1)):
        acc = acc + tile * i
    if Color(COLOR) == Color.GREEN:
        ct.store(out, (1,), acc + ct.static_eval(sum([i * i for i in range(4)])) + keywords(foo=1, bar=2))


def test_enums_dicts_static_eval_and_static_iter_run_at_compile_time():
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    launch(compile_time_python, (1,), x, out, 1)
    np.testing.assert_array_equal(out, np.concatenate([x[:4] + 1, 5 * x[:4] + 14 + 3]))


def test_a_device_function_refuses_host_calls():
    with pytest.raises(RuntimeError, match="Device functions can only be called from device code"):
        add_one(np.zeros(4, np.float32), np.zeros(4, np.float32))


@pytest.mark.parametrize("value, error", [(7, TileValueError), (1.5, TileValueError)])
def test_an_enum_from_a_value_it_lacks_is_a_value_error(value, error):
    with pytest.raises(error, match="is not a valid Color"):
        launch(compile_time_python, (1,), np.zeros(8, np.float32), np.zeros(8, np.float32), value)


def test_a_missing_dictionary_key_is_named():
    @ct.kernel
    def k(x):
        keywords(foo=1, bar=2, qux=3)["nothing"]
    with pytest.raises(TileStaticAssertionError):
        launch(k, (1,), np.zeros(1, np.float32))


def test_static_eval_of_a_failing_expression_is_a_static_eval_error():
    @ct.kernel
    def k(x):
        ct.static_eval(1 // 0)
    with pytest.raises(TileStaticEvalError, match="ZeroDivisionError"):
        launch(k, (1,), np.zeros(1, np.float32))


def test_a_0d_array_is_gathered_and_scattered_with_the_empty_index():
    @ct.kernel
    def k(x, y):
        ct.scatter(y, (), ct.gather(x, ()) * 3 + ct.bid(0))
    x, y = np.array(5, np.int32), np.array(0, np.int32)
    launch(k, (4,), x, y)
    assert y == 18  # every block writes; the last block's value stays


def test_replace_hints_gives_a_kernel_with_other_options_and_rejects_unknown_ones():
    faster = compile_time_python.replace_hints(occupancy=4)
    assert faster.options["occupancy"] == 4 and faster.options["num_ctas"] is compile_time_python.options["num_ctas"]
    with pytest.raises(TypeError):
        compile_time_python.replace_hints(unknown=1)


def make_adder(t):
    def add(y, extra=t * 2):
        return y + t + extra
    return add


def test_closures_chosen_under_a_runtime_condition_merge_their_captures_and_defaults():
    @ct.kernel
    def k(x):
        i = ct.bid(0)
        if i == 0:
            f = make_adder(10)
        else:
            f = make_adder(20)
        ct.scatter(x, i, f(ct.gather(x, i)))
    x = np.ones(2, np.int32)
    launch(k, (2,), x)
    np.testing.assert_array_equal(x, [31, 61])


def test_defaults_of_local_functions_are_taken_when_they_are_defined():
    @ct.kernel
    def k(x):
        n = 5
        f = lambda t, m=n: t + m
        n = 7
        ct.scatter(x, 0, f(ct.gather(x, 0)) + n)
    x = np.zeros(1, np.int32)
    launch(k, (1,), x)
    assert x[0] == 12


def count_down(t, n):
    if n > 0:
        return count_down(t, n - 1) + 1
    return t


def add_three_first(func):
    @functools.wraps(func)
    def wrapper(x):
        return func(x + 3)
    return wrapper


@add_three_first
def times_ten(x):
    return x * 10


@pytest.mark.parametrize("depth, outcome", [(109, 209), (5000, TileRecursionError)])
def test_helpers_recurse_up_to_a_thousand_calls_deep(depth, outcome):
    @ct.kernel
    def k(x, y, N: ct.Constant[int]):
        ct.scatter(y, (), count_down(ct.gather(x, ()), N) + times_ten(0) - 30)
    x, y = np.array(100, np.int32), np.zeros((), np.int32)
    if outcome is TileRecursionError:
        with pytest.raises(TileRecursionError):
            launch(k, (1,), x, y, depth)
    else:
        launch(k, (1,), x, y, depth)
        assert y == outcome  # the decorated helper runs its wrapper: (0 + 3) * 10


def test_tuples_are_carried_through_loops_and_values_swap_between_iterations():
    @ct.kernel
    def fibonacci(x, n: int):
        t = ct.load(x, (0,), (1,)), (ct.load(x, (1,), (1,)), 0)
        for i in range(n):
            t = t[1][0], (t[0] + t[1][0], i)
        k = 0
        while k < 2:
            t = t[1][0], (t[0], k)
            k += 1
        ct.store(x, (2,), t[0])
    x = np.array([1, 1, 0], np.float32)
    launch(fibonacci, (1,), x, 5)
    assert x[2] == 8  # (8, (13, 4)) after the for loop, then two swaps


# ---- arrays chosen at run time ------------------------------------------------------------------

@ct.kernel
def store_to_the_chosen_array(x, y, n: int):
    i = ct.bid(0)
    if i == 0:
        target = x
    else:
        target = y
    source, spare = x, y
    k = 0
    while k < n:
        source, spare = spare, source
        k += 1
    ct.store(target, (i,), ct.load(source, (2,), (4,)) + 1)


def test_each_block_stores_to_the_array_its_runtime_if_chose():
    x, y = np.arange(12, dtype=np.float32), np.full(12, 100, np.float32)
    ct.launch(None, (2,), store_to_the_chosen_array, (x, y, 1))  # the loop swaps once: source is y
    assert x[:4].tolist() == [101] * 4 and y[4:8].tolist() == [101] * 4
    assert x[4:].tolist() == list(range(4, 12)) and y[:4].tolist() == [100] * 4


def test_arrays_chosen_at_run_time_are_written_back_and_named_in_traces():
    from tileworkbench.tile import interpret
    from tileworkbench.interp.host import written_params
    x, y = np.zeros(12, np.float32), np.zeros(12, np.float32)
    assert written_params(store_to_the_chosen_array.specialize((x, y, 2))) == {"x", "y"}
    trace = interpret(store_to_the_chosen_array, (2,), (x, y, 2), trace=True)
    assert sorted(e.array for e in trace.by_op("store")) == ["x", "y"]
    assert {e.array for e in trace.by_op("load")} == {"x"}


@ct.kernel
def array_or_tile(x, flag: int):
    if flag:
        v = x
    else:
        v = ct.load(x, (0,), (4,))
    ct.store(x, (0,), v)


def test_an_array_on_one_path_and_a_tile_on_the_other_is_refused():
    with pytest.raises(ct.TileTypeError, match="Type of `v` depends on path taken"):
        ct.launch(None, (1,), array_or_tile, (np.zeros(4, np.float32), 1))
