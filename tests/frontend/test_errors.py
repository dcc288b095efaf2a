"""Every user mistake is a TileError that shows the kernel's line with a caret under the culprit."""
import math
import re

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import ArgumentTypeError, ArgumentValueError, TileError, TileRecursionError

F32 = np.zeros(64, np.float32)


def compile_error(kernel, args=(F32,)) -> TileError:
    with pytest.raises(TileError) as info:
        ct.launch(None, (1,), kernel, args)
    return info.value


def underlined(err: TileError, frame: int = -1) -> str:
    """The source text the caret of a frame points at."""
    loc = err.frames[frame]
    text = loc.frame_text().splitlines()
    source, caret = text[1], text[2]
    start = caret.index("^")
    return source[start:start + caret.count("^")]


def helper_with_bad_shape(x):
    return ct.load(x, (0,), (3,))


@ct.kernel
def non_pow2_shape(a):
    ct.load(a, (0,), (3,))


@ct.kernel
def shape_rank_mismatch(a):
    ct.load(a, (0,), (4, 4))


@ct.kernel
def index_rank_mismatch(a):
    ct.load(a, (0, 1), (4,))


@ct.kernel
def broadcast_failure(a):
    ct.load(a, (0,), (4,)) + ct.load(a, (0,), (8,))


@ct.kernel
def f16_plus_bf16(a, b):
    ct.load(a, (0,), (4,)) + ct.load(b, (0,), (4,))


@ct.kernel
def runtime_shape(a, n):
    ct.load(a, (0,), (n,))


@ct.kernel
def with_statement(a):
    with open("log"):
        pass


@ct.kernel
def error_in_helper(a):
    helper_with_bad_shape(a)


@ct.kernel
def subscript_array(a):
    a[0]


@ct.kernel
def kernel_returns(a):
    return 1


@ct.kernel
def path_dependent_type(a):
    x = ct.load(a, (0,), (4,))
    if ct.bid(0) == 0:
        x = ct.load(a, (0,), (8,))
    ct.store(a, (0,), x)


@ct.kernel
def loop_changes_type(a):
    x = ct.zeros((4,), ct.float32)
    for i in range(3):
        x = ct.zeros((8,), ct.float32)
    ct.store(a, (0,), x)


@ct.kernel
def undefined_name(a):
    ct.store(a, (0,), y)  # noqa: F821


@ct.kernel
def int8_constant_out_of_range(a):
    ct.load(a, (0,), (4,)) + 300


@ct.kernel
def store_narrowing(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (4,)))


@ct.kernel
def bad_order(a):
    ct.load(a, (0, 0), (4, 4), order=(0, 0))


@ct.kernel
def bad_latency(a):
    ct.load(a, (0,), (4,), latency=11)


@ct.kernel
def tile_indexing(a):
    t = ct.load(a, (0,), (4,))
    t[1]


@ct.kernel
def lambda_call_kernel(a):
    non_pow2_shape(a)


@ct.kernel
def gather_float_index(a):
    ct.gather(a, ct.zeros((4,), ct.float32))


@ct.kernel
def gather_int_mask(a):
    ct.gather(a, ct.arange(4, dtype=ct.int32), mask=ct.arange(4, dtype=ct.int32))


@ct.kernel
def arange_non_pow2(a):
    ct.arange(6, dtype=ct.int32)


@ct.kernel
def reshape_two_unknowns(a):
    ct.reshape(ct.zeros((4, 4), ct.float32), (-1, -1))


@ct.kernel
def negative_step(a):
    for i in range(0, 4, -1):
        pass


@ct.kernel
def try_statement(a):
    try:
        pass
    except Exception:
        pass


def test_non_power_of_two_shape_points_at_the_shape():
    err = compile_error(non_pow2_shape)
    assert type(err).__name__ == "TileTypeError"
    assert "3 is not a power of two" in err.message
    assert underlined(err) == "(3,)"
    assert err.loc.line == non_pow2_shape._pyfunc.__code__.co_firstlineno + 2


def test_shape_length_must_match_array_rank():
    err = compile_error(shape_rank_mismatch)
    assert "Expected shape of length 1" in err.message and underlined(err) == "(4, 4)"


def test_index_length_must_match_array_rank():
    err = compile_error(index_rank_mismatch)
    assert err.message == "Index size 2 does not match the array rank 1"
    assert underlined(err) == "(0, 1)"


def test_broadcast_failure_names_both_shapes():
    err = compile_error(broadcast_failure)
    assert err.message == "Cannot broadcast shapes (4,) and (8,)"
    assert underlined(err) == "ct.load(a, (0,), (4,)) + ct.load(a, (0,), (8,))"


def test_float16_with_bfloat16_needs_an_explicit_cast():
    err = compile_error(f16_plus_bf16, (np.zeros(4, np.float16), np.zeros(4, ct.bfloat16.numpy)))
    assert isinstance(err, ct.TileTypeError)
    assert "Implicit promotion of float16 and bfloat16 is not supported" in err.message


def test_runtime_value_where_a_constant_is_required():
    err = compile_error(runtime_shape, (F32, 4))
    assert "must be a compile-time constant, got a runtime int32" in err.message
    assert underlined(err) == "(n,)"


def test_unsupported_python_is_a_syntax_error():
    err = compile_error(with_statement)
    assert isinstance(err, ct.TileSyntaxError) and "with statement" in err.message
    err = compile_error(try_statement)
    assert isinstance(err, ct.TileSyntaxError) and "try statement" in err.message


def test_error_in_helper_shows_every_call_site():
    err = compile_error(error_in_helper)
    assert len(err.frames) == 2
    assert underlined(err, 0) == "helper_with_bad_shape(a)"
    assert underlined(err, 1) == "(3,)"
    assert [f.function for f in err.frames] == ["error_in_helper", "helper_with_bad_shape"]


def test_arrays_are_not_subscriptable():
    err = compile_error(subscript_array)
    assert err.message == "Arrays are not directly subscriptable. Use load() or gather() instead."


def test_tiles_cannot_be_indexed_directly():
    err = compile_error(tile_indexing)
    assert "use extract() or item() instead" in err.message


def test_kernels_cannot_return_values():
    err = compile_error(kernel_returns)
    assert "cannot return values" in err.message and underlined(err) == "return 1"


def test_type_depending_on_the_path_taken():
    err = compile_error(path_dependent_type)
    assert "Type of `x` depends on path taken" in err.message


def test_loop_carried_variable_must_keep_its_type():
    err = compile_error(loop_changes_type)
    assert "Variable x has changed its type inside a loop" in err.message


def test_undefined_name():
    err = compile_error(undefined_name)
    assert err.message == "Undefined variable y used" and underlined(err) == "y"


def test_loose_integer_constant_is_range_checked():
    err = compile_error(int8_constant_out_of_range, (np.zeros(4, np.int8),))
    assert isinstance(err, ct.TileValueError)
    assert err.message == "Integer constant 300 is out of range of int8"


def test_store_refuses_a_narrowing_cast():
    err = compile_error(store_narrowing, (np.zeros(4, np.float32), np.zeros(4, np.float16)))
    assert "cannot implicitly cast float32 to float16" in err.message


def test_order_must_be_a_permutation():
    err = compile_error(bad_order, (np.zeros((4, 4), np.float32),))
    assert "axis 0 is used at least twice" in err.message and underlined(err) == "(0, 0)"


def test_latency_hint_is_range_checked():
    err = compile_error(bad_latency)
    assert err.message == "Latency must be between 1 and 10, got 11"


def test_kernel_cannot_call_a_kernel():
    err = compile_error(lambda_call_kernel)
    assert "cannot be called from tile code" in err.message


def test_gather_needs_integer_indices_and_a_bool_mask():
    assert "non-integer data type" in compile_error(gather_float_index).message
    assert "Custom mask must have boolean dtype" in compile_error(gather_int_mask).message


def test_arange_size_must_be_a_power_of_two():
    err = compile_error(arange_non_pow2)
    assert err.message == "Result tile shape must be power of 2, got 6" and underlined(err) == "6"


def test_reshape_allows_one_unknown_dimension():
    assert compile_error(reshape_two_unknowns).message == "Only one dimension can be -1"


def test_constant_range_step_must_be_positive():
    assert compile_error(negative_step).message == "Step must be positive, got -1"


def test_error_text_has_location_header_source_and_caret():
    err = compile_error(non_pow2_shape)
    lines = str(err).splitlines()
    assert lines[0] == err.message
    assert re.fullmatch(r'  ".*test_errors\.py", line \d+, col 22-25, in non_pow2_shape:', lines[1])
    assert lines[2].strip() == "ct.load(a, (0,), (3,))"
    assert lines[3].strip() == "^^^^"


def test_error_frames_show_the_line_as_written_and_end_their_lines():
    text = str(compile_error(non_pow2_shape))
    lines = text.split("\n")
    assert text.endswith("\n") and lines[2] == "        ct.load(a, (0,), (3,))"
    assert lines[3] == " " * 25 + "^^^^"


def test_ipython_sees_only_the_tile_error_not_a_stack():
    err = compile_error(non_pow2_shape)
    rendered = err._render_traceback_()
    assert rendered[0].startswith("TileTypeError: Tile shape (3,)")
    assert not any("Traceback" in line or "lowering.py" in line for line in rendered)


def test_wrong_number_of_launch_arguments():
    with pytest.raises(TypeError, match="Kernel expects 1 arguments but 2 were given"):
        ct.launch(None, (1,), non_pow2_shape, (F32, 1))


@ct.kernel
def copy4(x, y, TILE: ct.Constant[int]):
    ct.store(y, (0,), ct.load(x, (0,), (TILE,), padding_mode=ct.PaddingMode.ZERO))


def test_too_few_launch_arguments_name_the_missing_parameters():
    with pytest.raises(ArgumentTypeError, match=r"expects 3 arguments but 1 were given: copy4\(x, y, TILE\) is "
                                                r"missing y, TILE"):
        ct.launch(None, (1,), copy4, (F32,))


def test_a_numpy_integer_is_a_constant_like_a_python_int():
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), copy4, (np.arange(4, dtype=np.float32), out, np.int64(4)))
    assert out.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("grid", [(1.0,), (True,), (np.bool_(True),)])
def test_a_grid_of_floats_or_bools_is_refused_even_after_the_same_int_grid_ran(grid):
    ct.launch(None, (1,), copy4, (F32, np.zeros(4, np.float32), 4))
    with pytest.raises(ArgumentValueError, match=r"Grid\[0\] must be a positive integer"):
        ct.launch(None, grid, copy4, (F32, np.zeros(4, np.float32), 4))


@pytest.mark.parametrize("array, match", [
    (np.zeros(4, np.clongdouble), "dtype complex256 is not a tile dtype"),
    (np.zeros(4, object), "dtype object is not a tile dtype"),
    ([1.0, 2.0], "Expected list items to be arrays, got float"),
    ({"x": 1.0}, "Objects of type 'dict' are not supported"),
])
def test_unusable_array_arguments_are_refused_naming_the_parameter(array, match):
    with pytest.raises((ArgumentTypeError, ArgumentValueError), match=f"argument #0: {match}") as info:
        ct.launch(None, (1,), copy4, (array, np.zeros(4, np.float32), 4))
    assert "parameter x" in str(info.value)


class FakeDeviceArray:
    shape, ndim, dtype = (4,), 1, np.dtype(np.float32)

    @property
    def __cuda_array_interface__(self):
        return {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_numpy_and_device_arrays_in_one_launch_are_refused():
    with pytest.raises(ArgumentTypeError, match=r"argument #1: a FakeDeviceArray device array among NumPy arrays"):
        ct.launch(None, (1,), copy4, (F32, FakeDeviceArray(), 4))


def test_a_lambda_cannot_be_a_kernel():
    with pytest.raises(ArgumentTypeError, match="needs a function defined with `def`, got a lambda"):
        ct.kernel(lambda x: None)


def test_launch_argument_errors_show_no_stack_in_ipython():
    with pytest.raises(ArgumentTypeError) as info:
        ct.launch(None, (1,), copy4, (F32,))
    assert info.value._render_traceback_() == [f"ArgumentTypeError: {info.value}"]


def recurse(t):
    return recurse(t + 1)


@ct.kernel
def recursive(x):
    ct.store(x, (0,), recurse(ct.load(x, (0,), (4,))))


def test_recursion_is_reported_with_one_frame_at_the_recursive_call():
    err = compile_error(recursive)
    assert isinstance(err, TileRecursionError) and "`recurse` call itself" in err.message
    assert len(err.frames) == 1 and underlined(err) == "recurse(t + 1)"


@ct.kernel
def math_sqrt(x):
    ct.store(x, (0,), math.sqrt(ct.load(x, (0,), (4,))))


@ct.kernel
def numpy_exp(x):
    ct.store(x, (0,), np.exp(ct.load(x, (0,), (4,))))


@pytest.mark.parametrize("kernel, message", [(math_sqrt, "Cannot call math.sqrt from tile code; use ct.sqrt"),
                                             (numpy_exp, "Cannot call np.exp from tile code; use ct.exp")])
def test_calling_a_python_math_function_suggests_the_tile_function(kernel, message):
    assert compile_error(kernel).message == message


def test_wrong_kind_of_launch_argument():
    with pytest.raises(TypeError, match="Invalid kernel argument #0: Objects of type 'str' are not supported."):
        ct.launch(None, (1,), non_pow2_shape, ("x",))


def test_grid_must_be_a_tuple_within_limits():
    with pytest.raises(TypeError, match="Grid must be a tuple"):
        ct.launch(None, [1], non_pow2_shape, (F32,))
    with pytest.raises(ValueError, match="exceeds 24-bit limit"):
        ct.launch(None, (1 << 24,), non_pow2_shape, (F32,))
    with pytest.raises(ValueError, match=r"Grid must have 1 to 3 dimensions, got 0: \(\)"):
        ct.launch(None, (), non_pow2_shape, (F32,))


def test_calling_a_kernel_directly_is_refused_in_one_line_without_a_stack():
    with pytest.raises(TypeError, match="Tile kernels cannot be called directly") as info:
        non_pow2_shape(F32)
    assert info.value._render_traceback_() == ["ArgumentTypeError: Tile kernels cannot be called directly. Use "
                                               "tileworkbench.tile.launch() instead."]


def test_tile_functions_refuse_host_calls():
    with pytest.raises(RuntimeError, match="Device functions can only be called from device code"):
        ct.load(F32, (0,), (4,))


@ct.kernel
def flush_half(a, OP: ct.Constant[int]):
    t = ct.load(a, (0,), (64,))
    ops = (lambda x: ct.exp2(x, flush_to_zero=True), lambda x: ct.add(x, x, flush_to_zero=True),
           lambda x: ct.maximum(x, x, flush_to_zero=True), lambda x: ct.sum(x, flush_to_zero=True),
           lambda x: ct.cumsum(x, flush_to_zero=True))
    ct.store(a, (0,), ops[OP](t))


@pytest.mark.parametrize("op", range(5), ids=["exp2", "add", "maximum", "sum", "cumsum"])
def test_flush_to_zero_is_float32_only_for_every_op_that_takes_it(op):
    err = compile_error(flush_half, (np.zeros(64, np.float16), op))
    assert "Flush to zero can only be used for float32 type" in err.message
    assert underlined(err) == "True"  # the argument's value
    ct.launch(None, (1,), flush_half, (np.zeros(64, np.float32), op))  # and float32 takes it


@ct.kernel
def ternary_of_two_types(x, flag: bool):
    t = ct.load(x, (0,), (16,))
    t = flag if flag else t - 1
    ct.store(x, (0,), t)


def test_a_runtime_conditional_expression_needs_one_type_on_both_sides():
    err = compile_error(ternary_of_two_types, (np.zeros(16, np.float32), True))
    assert isinstance(err, ct.TileTypeError)
    assert err.message == ("The two sides of a conditional expression on a runtime condition have different types: "
                           "bool_ and tile<float32, 16>")


@ct.kernel
def float_divmod(x):
    t = ct.load(x, (0,), (16,))
    q, r = divmod(t, t)
    ct.store(x, (0,), q + r)


def test_divmod_of_floats_is_refused():
    err = compile_error(float_divmod, (np.zeros(16, np.float32),))
    assert isinstance(err, ct.TileTypeError) and err.message == "divmod() is not implemented for floating point values"


@ct.kernel
def range_over(stop, out):
    for i in range(stop):
        ct.store(out, (i,), ct.full((1,), i, ct.int32))


@pytest.mark.parametrize("stop, message", [(np.zeros(4, np.int32), "Expected a scalar for a range bound"),
                                           (1.5, "Expected a signed integer for a range bound"),
                                           (np.uint32(3), "Expected a signed integer for a range bound")])
def test_range_bounds_must_be_signed_integer_scalars(stop, message):
    err = compile_error(range_over, (stop, np.zeros(4, np.int32)))
    assert isinstance(err, ct.TileTypeError) and err.message.startswith(message)


@ct.kernel
def enormous_tile(x):
    ct.store(x, (0, 0), ct.full((1 << 16, 1 << 16), 0, ct.float32))


def test_a_tile_over_the_size_limit_is_refused_naming_the_limit():
    err = compile_error(enormous_tile, (np.zeros((4, 4), np.float32),))
    assert isinstance(err, ct.TileValueError)
    assert "4294967296 elements; a tile holds at most 16777216 (2**24)" in err.message
    assert underlined(err) == "ct.full((1 << 16, 1 << 16), 0, ct.float32)"


@ct.kernel
def local_helper_missing_argument(x):
    def twice(t, k):
        return t * k
    ct.store(x, (0,), twice(ct.load(x, (0,), (4,))))


def test_a_local_helper_called_with_too_few_arguments_is_named():
    assert compile_error(local_helper_missing_argument).message == "twice() is missing argument(s): k"
