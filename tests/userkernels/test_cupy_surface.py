"""What CuPy's own tests ask of user kernels: its error texts, raw-array members, local arrays and
structured dtypes."""
import numpy as np
import pytest

from tileworkbench import ElementwiseKernel, ReductionKernel
from tileworkbench.errors import TileStaticAssertionError, TileTypeError

A = np.array([1, 2], np.float32)


def noop(inputs, outputs):
    return ElementwiseKernel(", ".join(inputs), ", ".join(outputs), "", "kernel")


@pytest.mark.parametrize("kernel, args, size, message", [
    (noop(["raw float32 x"], ["float32 y"]), (A,), None, "^Loop size is undecided\\.$"),
    (noop(["float32 x"], ["float32 y"]), (A,), 2, "^Specified 'size' can be used only if all of the ndarray are"),
    (noop(["float32 x"], ["raw float32 y"]), (A, A), 2, "^Specified 'size' can"),
    (noop([], ["raw float32 y"]), (A,), None, "^Loop size is undecided\\.$"),
    (noop(["raw float32 x"], ["raw float32 y"]), (A,), None, "^Loop size is undecided\\.$"),
])
def test_cupy_size_rules_and_texts(kernel, args, size, message):
    with pytest.raises(ValueError, match=message):
        kernel(*args, size=size)


def test_cupy_call_validations_and_texts():
    add = ElementwiseKernel("T x, T y", "T z", "z = x + y", "add")
    with pytest.raises(ValueError, match="^block_size must be greater than zero$"):
        add(A, A, block_size=0)
    with pytest.raises(TypeError, match="^Wrong number of arguments for 'add'. It must be either 2 or 3"):
        add(A)
    with pytest.raises(ValueError, match="^Out shape is mismatched$"):
        ElementwiseKernel("T x", "T y", "y += x", "acc")(np.ones((3, 4), np.float32), np.ones(4, np.float32))
    with pytest.raises(TypeError, match="^Output arguments type must be cupy.ndarray$"):
        add(A, A, 3.0)
    np.testing.assert_array_equal(add(A, 1, block_size=1), A + 1)
    with pytest.raises(ValueError, match="^Out shape is mismatched$"):
        ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "s")(np.ones((2, 3), np.float32),
                                                                       np.ones(3, np.float32))


@pytest.mark.parametrize("name", ["1", "a b", "", "k\u00e9"])
def test_invalid_kernel_names_are_refused_as_cupy_refuses_them(name):
    with pytest.raises(ValueError, match="Invalid kernel name"):
        ElementwiseKernel("T x", "", "", name)
    with pytest.raises(ValueError, match="Invalid kernel name"):
        ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", name)


def test_cached_codes_count_the_specializations_compiled():
    kernel = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "cached")
    assert len(kernel._cached_codes) == 0
    kernel(np.arange(10))
    kernel(np.arange(10))
    assert len(kernel._cached_codes) == 1
    kernel(np.arange(10, dtype=np.float32))
    assert len(kernel._cached_codes) == 2


def test_raw_array_members_give_size_shape_and_byte_strides():
    x = np.arange(24, dtype=np.int32).reshape(4, 6)[::2, 1::2]   # not contiguous: strides (48, 8)
    members = ElementwiseKernel("raw int32 x", "int64 s, int64 n, int64 st", "s = x.size(); n = x.shape()[i]; "
                                "st = x.strides()[i];", "members")
    s, n, st = members(x, size=2)
    np.testing.assert_array_equal(s, [6, 6])
    np.testing.assert_array_equal(n, [2, 3])
    np.testing.assert_array_equal(st, [48, 8])


def test_a_local_array_indexes_a_raw_array_one_index_per_dimension():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    kernel = ElementwiseKernel("raw T x", "int32 y", "ptrdiff_t idx[] = {i / 12, i / 4 % 3, i % 4}; y = x[idx]",
                               "by_index")
    np.testing.assert_array_equal(kernel(x, np.empty_like(x)), x)
    with pytest.raises(TileTypeError, match="its index array needs 3 elements, not 2"):
        ElementwiseKernel("raw T x", "int32 y", "ptrdiff_t idx[2] = {0, 1}; y = x[idx]", "short")(x, size=1)


def test_local_arrays_are_read_and_written_at_constant_and_varying_indexes():
    x = np.arange(8, dtype=np.int32)
    body = """int a[4] = {10, 20};
              a[3] = x;
              if (x % 2) a[x % 4] += 100;
              z = a[x % 4] + a[3];"""
    got = ElementwiseKernel("int32 x", "int32 z", body, "local")(x)
    expected = []
    for v in x:
        a = [10, 20, 0, int(v)]
        if v % 2:
            a[v % 4] += 100
        expected.append(a[v % 4] + a[3])
    np.testing.assert_array_equal(got, expected)


def test_structured_fields_are_read_and_written_by_index():
    kernel = ElementwiseKernel("T in", "T out", """
        static_assert(T::field_count == 2, "expected 2 fields");
        out.at<1>() = -in.at<0>();""", "fields")
    x, y = np.array([1, 2, 3], dtype="i,i"), np.array([4, 5, 6], dtype="i,i")
    kernel(x, y)
    np.testing.assert_array_equal(y, np.array([(4, -1), (5, -2), (6, -3)], dtype="i,i"))
    mixed = ElementwiseKernel("T a", "U b", "b = a;", "copy_fields")
    got = mixed(np.array([(1, 2.5)], dtype="i4,f8"), np.zeros(1, "f4,i2"))
    np.testing.assert_array_equal(got, np.array([(1.0, 2)], dtype="f4,i2"))


def test_structured_mistakes_are_clear_errors():
    x = np.array([(1, 2)], dtype="i,i")
    with pytest.raises(TileStaticAssertionError, match="three"):
        ElementwiseKernel("T in", "T out", 'static_assert(T::field_count == 3, "three");', "k")(x, x.copy())
    with pytest.raises(TileTypeError, match="'out' has 2 fields: there is no field 2"):
        ElementwiseKernel("T in", "T out", "out.at<2>() = 1;", "k")(x, x.copy())
    with pytest.raises(TileTypeError, match="float32 is not a structured dtype"):
        ElementwiseKernel("T x", "T z", "z = T::field_count;", "k")(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="field 'f1' of dtype .* is not supported"):
        ElementwiseKernel("T x", "T z", "z = x;", "k")(np.zeros(2, "i4,(2,)f4"))
