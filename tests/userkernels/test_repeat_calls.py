"""Repeat calls: a call with an argument profile seen before reuses its plan, and anything that
changes the profile (shape, strides, dtype, keywords) plans anew; values are read at every call."""
import numpy as np
import pytest

from tileworkbench import ElementwiseKernel, ReductionKernel


def counting_plans(kernel, monkeypatch) -> list:
    """Record each call the kernel plans from scratch."""
    planned, plan = [], kernel.plan

    def counted(*args, **kwargs):
        planned.append(1)
        return plan(*args, **kwargs)
    monkeypatch.setattr(kernel, "plan", counted)
    return planned


def test_a_repeat_call_with_the_same_profile_is_not_planned_again(monkeypatch):
    axpy = ElementwiseKernel("T x, T y, T a", "T z", "z = a * x + y", "axpy_repeat")
    planned = counting_plans(axpy, monkeypatch)
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    for a in (1.0, 2.0, 3.0, 4.0, 5.0):
        np.testing.assert_array_equal(axpy(x, y, a), a * x + y)   # the scalar is read at every call
    assert len(planned) == 1
    axpy(x[::2], y[::2], 1.0)
    axpy(x[::2], y[::2], 2.0)
    assert len(planned) == 2


def test_a_new_shape_stride_or_dtype_is_planned_and_computed_anew():
    add = ElementwiseKernel("T x, T y", "T z", "z = x + y", "add_repeat")
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    for _ in range(3):
        cases = [(base, base), (base[:, ::2], base[:, :4]), (base[:, :1], base[0]),
                 (base.astype(np.int64), base.astype(np.int64)), (base.T, base.T)]
        for x, y in cases:
            got = add(x, y)
            np.testing.assert_array_equal(got, x + y)
            assert got.dtype == x.dtype and got.shape == np.broadcast_shapes(x.shape, y.shape)


def test_each_call_gets_its_own_outputs():
    double = ElementwiseKernel("T x", "T y", "y = x * 2", "double_repeat")
    x = np.arange(5, dtype=np.float64)
    first, second = double(x), double(x + 1)
    np.testing.assert_array_equal(first, x * 2)
    np.testing.assert_array_equal(second, (x + 1) * 2)


def test_a_scalar_that_does_not_fit_is_refused_after_calls_that_fit():
    shift = ElementwiseKernel("int8 x, int8 s", "int8 y", "y = x + s", "shift_repeat")
    x = np.zeros(4, np.int8)
    for s in (1, 2, 3):
        np.testing.assert_array_equal(shift(x, s), np.full(4, s, np.int8))
    with pytest.raises(TypeError, match="'s'"):
        shift(x, "3")
    with pytest.raises(TypeError, match="complex scalar"):
        shift(x, 1j)


def test_a_mismatched_output_is_refused_after_calls_that_fit():
    add = ElementwiseKernel("T x, T y", "T z", "z = x + y", "add_out_repeat")
    x = np.ones(6, np.float32)
    out = np.empty(6, np.float32)
    for _ in range(3):
        add(x, x, out)
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(ValueError, match="Out shape is mismatched"):
        add(x, x, np.empty(1, np.float32))   # broadcasts, but an output must have the loop's shape
    with pytest.raises(TypeError, match="'x' is a float32 array, but T = float64"):   # outputs decide T
        add(x, x, np.empty(6, np.float64))


def test_raw_arguments_with_size_repeat_with_their_own_values():
    reverse = ElementwiseKernel("raw T x, int32 n", "T y", "y = x[n - 1 - i]", "reverse_repeat")
    for n in (4, 4, 7, 7):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(reverse(x, n, size=n), x[::-1])


def test_structured_arrays_repeat():
    dtype = np.dtype([("re", np.float32), ("im", np.float32)])
    swap = ElementwiseKernel("T x", "T y", "y.at<0>() = x.at<1>(); y.at<1>() = x.at<0>()", "swap_repeat")
    for k in range(3):
        x = np.zeros(5, dtype)
        x["re"], x["im"] = np.arange(5) + k, -np.arange(5)
        y = swap(x)
        np.testing.assert_array_equal(y["re"], x["im"])
        np.testing.assert_array_equal(y["im"], x["re"])


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_reductions_repeat_over_axes_and_strided_outputs(axis):
    total = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total_repeat")
    for k in range(3):
        x = np.arange(24, dtype=np.float64).reshape(4, 6) + k
        np.testing.assert_allclose(total(x, axis=axis), x.sum(axis=axis))
        np.testing.assert_allclose(total(x.T, axis=axis), x.T.sum(axis=axis))
    out = np.zeros((6, 2))[:, 0]          # a strided output: written through a buffer
    for k in range(3):
        x = np.full((4, 6), float(k))
        total(x, axis=0, out=out)
        np.testing.assert_allclose(out, x.sum(axis=0))


def test_a_reduction_axis_list_is_accepted_at_every_call():
    total = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total_list_repeat")
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for _ in range(3):
        np.testing.assert_allclose(total(x, axis=[0, 2]), x.sum(axis=(0, 2)))


def test_setting_the_tile_applies_to_the_next_call(monkeypatch):
    import tileworkbench.tile as ct
    launches, launch = [], ct.launch

    def recorded(stream, grid, kernel, args):
        launches.append((grid, args[-1]))
        launch(stream, grid, kernel, args)
    monkeypatch.setattr(ct, "launch", recorded)
    double = ElementwiseKernel("T x", "T y", "y = x * 2", "double_tile_repeat")
    x = np.arange(1000, dtype=np.float32)
    double(x)
    double(x)
    double.tile = 128
    np.testing.assert_array_equal(double(x), x * 2)
    assert launches == [((1,), 1024), ((1,), 1024), ((8,), 128)]


def test_repeat_scalars_convert_as_c_does_in_and_out_of_their_types_range():
    wrap = ElementwiseKernel("int8 x, int8 s", "int8 z", "z = x + s", "wrap_repeat")
    x = np.zeros(2, np.int8)
    assert [wrap(x, s)[0] for s in (5, 300, -129, 127)] == [5, 44, 127, 127]   # 300 and -129 wrap, as C
    to_float = ElementwiseKernel("float32 x, float32 s", "float32 z", "z = x + s", "float_repeat")
    y = np.zeros(2, np.float32)
    got = [to_float(y, s)[0] for s in (0.1, 1e39, 2**70, float("nan"), -1e39)]
    assert got[0] == np.float32(0.1) and got[1] == np.inf and got[2] == np.float32(2**70)
    assert np.isnan(got[3]) and got[4] == -np.inf


def test_a_repeat_call_of_the_last_profile_is_one_check_without_a_profile_key(monkeypatch):
    from tileworkbench.userkernels import base
    keys, profile = [], base._profile
    monkeypatch.setattr(base, "_profile", lambda args, kwargs: keys.append(1) or profile(args, kwargs))
    axpy = ElementwiseKernel("T x, T y, T a", "T z", "z = a * x + y", "axpy_one_check")
    total = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total_one_check")
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    axpy(x, x, 2.0)
    total(x, axis=1)
    built = len(keys)
    for a in (3.0, 4.0):
        np.testing.assert_array_equal(axpy(x, x, a), a * x + x)
        np.testing.assert_array_equal(total(x, axis=1), x.sum(axis=1))
    assert len(keys) == built
    np.testing.assert_array_equal(total(x, axis=0), x.sum(axis=0))   # another keyword value: looked up
    assert len(keys) > built


def _profiles():
    """Calls (args, kwargs) that differ in one thing each, and some alike."""
    x = np.zeros((4, 6), np.float32)
    return [((x, 1.0), {}), ((x.copy(), 2.0), {}), ((x, 1), {}), ((x.astype(np.float64), 1.0), {}),
            ((x[:, ::2], 1.0), {}), ((x.T, 1.0), {}), ((x[:2], 1.0), {}), ((x,), {}), ((x, 1.0, x), {}),
            ((x, 1.0), {"axis": 1}), ((x, 1.0), {"axis": 0}), ((x, 1.0), {"axis": 1, "keepdims": True}),
            ((x, 1.0), {"axis": (0, 1)}), ((x, 1.0), {"out": x}), ((x, 1.0), {"out": x[:, :1]}),
            ((x, 1.0), {"axis": 1.0}), ((x, np.float32(1)), {})]


def test_the_repeat_check_tells_apart_exactly_the_calls_the_profile_key_tells_apart():
    from tileworkbench.userkernels.base import _learn_types, _profile, profile_matcher
    calls = _profiles()
    for args, kwargs in calls:
        _learn_types(args, kwargs)
    assert len({_profile(args, kwargs) for args, kwargs in calls}) == len(calls) - 1   # (x, 1.0) and (x.copy(), 2.0)
    for args, kwargs in calls:
        matches = profile_matcher(args, kwargs)
        for other_args, other_kwargs in calls:
            same = _profile(args, kwargs) == _profile(other_args, other_kwargs)
            assert matches(other_args, other_kwargs) == same, (args, kwargs, other_args, other_kwargs)


def test_a_repeat_call_with_a_complex_scalar_converts_it_each_time():
    scale = ElementwiseKernel("T x, complex128 a", "T z", "z = x * a", "scale_complex_repeat")
    x = np.arange(4, dtype=np.complex128)
    for a in (2j, 1 + 1j, 3, 0.5):
        np.testing.assert_array_equal(scale(x, a), x * a)
