"""cuTile's byte packing, block-scaled mma, compile-time assertions and launch-ordering hints."""
from typing import Annotated

import ml_dtypes
import numpy as np
import pytest

import tileworkbench.tile as ct

E8M0, E4M3, FP4 = ml_dtypes.float8_e8m0fnu, ml_dtypes.float8_e4m3fn, ml_dtypes.float4_e2m1fn


@ct.kernel
def round_trip(x, packed, back, N: ct.Constant[int]):
    b = ct.pack_to_bytes(ct.load(x, (0,), (N,)))
    ct.store(packed, (0,), b)
    ct.store(back, (0,), ct.unpack_from_bytes(b, back.dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.float16, ml_dtypes.bfloat16,
                                   np.float32, np.float64, E4M3], ids=lambda d: np.dtype(d).name)
def test_pack_to_bytes_gives_the_little_endian_bytes_and_unpack_inverts_it(dtype):
    x = np.random.default_rng(3).standard_normal(8).astype(np.float64)
    x = (x * 1e4).astype(dtype) if np.dtype(dtype).kind in "iu" else x.astype(dtype)
    packed, back = np.zeros(8 * np.dtype(dtype).itemsize, np.uint8), np.zeros_like(x)
    ct.launch(None, (1,), round_trip, (x, packed, back, 8))
    np.testing.assert_array_equal(packed, x.view(np.uint8))
    np.testing.assert_array_equal(back.view(np.uint8), x.view(np.uint8))


def test_pack_and_unpack_match_cutiles_examples():
    assert ct.evaluate(lambda: ct.pack_to_bytes(ct.full((1,), 0x04030201, ct.int32))).tolist() == [1, 2, 3, 4]
    got = ct.evaluate(lambda: ct.unpack_from_bytes(ct.arange(4, dtype=ct.uint8) + 1, ct.int32))
    assert got.tolist() == [0x04030201]


def test_unpack_from_bytes_refuses_a_byte_count_that_is_not_whole_values():
    with pytest.raises(ct.TileTypeError, match="2 bytes do not hold a whole number of int32 values"):
        ct.evaluate(lambda: ct.unpack_from_bytes(ct.arange(2, dtype=ct.uint8), ct.int32))
    with pytest.raises(ct.TileTypeError, match="expects a 1-D uint8 tile, got int8"):
        ct.evaluate(lambda: ct.unpack_from_bytes(ct.arange(4, dtype=ct.int8), ct.int32))


@ct.kernel
def scaled(a, sa, b, sb, c, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int], KS: ct.Constant[int]):
    acc = ct.load(c, (0, 0), (M, N))
    ct.store(c, (0, 0), ct.mma_scaled(ct.load(a, (0, 0), (M, K)), ct.load(sa, (0, 0), (M, KS)),
                                      ct.load(b, (0, 0), (K, N)), ct.load(sb, (0, 0), (KS, N)), acc))


def scaled_reference(a, sa, b, sb, c):
    block = a.shape[1] // sa.shape[1]
    x = a.astype(np.float64) * np.repeat(sa.astype(np.float64), block, axis=1)
    y = b.astype(np.float64) * np.repeat(sb.astype(np.float64), block, axis=0)
    return x @ y + c


@pytest.mark.parametrize("dtype, scale, block", [(E4M3, E8M0, 32), (ml_dtypes.float8_e5m2, E8M0, 32),
                                                  (FP4, E8M0, 16), (FP4, E8M0, 32), (FP4, E4M3, 16)])
def test_mma_scaled_multiplies_each_k_block_by_its_scales(dtype, scale, block):
    rng = np.random.default_rng(11)
    m, n, k = 16, 8, 64
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    sa = (2.0 ** rng.integers(-4, 4, (m, k // block))).astype(scale)
    sb = (2.0 ** rng.integers(-4, 4, (k // block, n))).astype(scale)
    c = rng.standard_normal((m, n)).astype(np.float32)
    expected = scaled_reference(a, sa, b, sb, c)
    ct.launch(None, (1,), scaled, (a, sa, b, sb, c, m, n, k, k // block))
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_mma_scaled_refuses_a_block_size_cutile_does_not_offer():
    a, b = np.zeros((16, 64), E4M3), np.zeros((64, 8), E4M3)
    with pytest.raises(ct.TileTypeError, match="takes blocks of 32"):
        ct.launch(None, (1,), scaled, (a, np.zeros((16, 4), E8M0), b, np.zeros((4, 8), E8M0),
                                       np.zeros((16, 8), np.float32), 16, 8, 64, 4))


@ct.kernel
def hints(x, out):
    n = ct.assume_divisible_by(ct.bid(0) * 4, 4)
    ct.grid_dependency_control_wait()
    if ct.ensure_constant(2 > 1):
        ct.store(out, (ct.bid(0),), ct.load(x, (n // 4,), (4,)))
    ct.grid_dependency_control_launch_dependents()


def test_assume_divisible_by_and_the_launch_hints_leave_the_computation_unchanged():
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    ct.launch(None, (2,), hints, (x, out))
    np.testing.assert_array_equal(out, x)


@ct.kernel
def not_constant(out):
    ct.store(out, (0,), ct.full((1,), ct.ensure_constant(ct.bid(0)), ct.int32))


def test_ensure_constant_refuses_a_runtime_value():
    with pytest.raises(ct.TileStaticAssertionError, match="not a compile-time constant"):
        ct.launch(None, (1,), not_constant, (np.zeros(1, np.int32),))
    assert ct.ensure_constant(3) == 3  # on the host


def test_array_annotations_are_checked_as_cutile_checks_them():
    assert ct.IndexedWithInt64.__metadata__ == (ct.ArrayAnnotation(index_dtype=ct.int64),)
    with pytest.raises(ValueError, match="`index_dtype` must be int32 or int64"):
        ct.ArrayAnnotation(index_dtype=ct.int16)
    with pytest.raises(TypeError, match="Element #0 of `static_shape_dims` must be int"):
        ct.ArrayAnnotation(static_shape_dims=(True,))
    assert ct.ListAnnotation(element=ct.IndexedWithInt64).element == ct.ArrayAnnotation(index_dtype=ct.int64)
    with pytest.raises(TypeError, match="must be an ArrayAnnotation"):
        ct.ListAnnotation(element=3)


@ct.kernel
def annotated(big: ct.IndexedWithInt64, small: Annotated[ct.Array, ct.ArrayAnnotation(static_shape_dims=(0,))]):
    ct.store(small, (0,), ct.load(big, (0,), (4,)))


def test_annotated_array_parameters_take_arrays():
    big, small = np.arange(4, dtype=np.int32), np.zeros(4, np.int32)
    ct.launch(None, (1,), annotated, (big, small))
    np.testing.assert_array_equal(small, big)


@ct.kernel
def views(x, out, counts):
    tv = x.tiled_view((2, 4))
    ct.store(out, (0, 0), tv.load((1, 0)))
    overlapping = x.tiled_view((2, 4), traversal_steps=(1, 4), padding_mode=ct.PaddingMode.NEG_INF)
    ct.store(out, (1, 0), overlapping.load((3, 1)))
    ct.store(counts, (0,), ct.full((1,), overlapping.num_tiles(0), ct.int32))
    ct.store(counts, (1,), ct.full((1,), tv.num_tiles(axis=1), ct.int32))


def test_a_tiled_view_loads_tiles_at_index_times_traversal_steps_with_its_padding():
    x, out, counts = np.arange(32, dtype=np.float32).reshape(4, 8), np.zeros((4, 4), np.float32), np.zeros(2, np.int32)
    ct.launch(None, (1,), views, (x, out, counts))
    np.testing.assert_array_equal(out[:2], x[2:4, :4])
    np.testing.assert_array_equal(out[2:], [x[3, 4:], [-np.inf] * 4])  # row 4 is past the end: padded
    assert counts.tolist() == [4, 2]  # cdiv(4 rows, step 1), cdiv(8 columns, step 4)


@ct.kernel
def view_stores(y, z):
    tv = y.tiled_view(4)
    tv.store(1, ct.full((4,), 99, ct.int32))
    tv.atomic_store_add(0, 5)
    gaps = z.tiled_view((2,), traversal_steps=(3,))
    gaps.store(index=ct.bid(0), tile=ct.arange(2, dtype=ct.int32) + 1)
    one = y.tiled_view(())
    one.store(15, one.load(14) + 1)


def test_a_tiled_view_stores_broadcast_tiles_and_updates_atomically():
    y, z = np.zeros(16, np.int32), np.zeros(9, np.int32)
    ct.launch(None, (3,), view_stores, (y, z))
    assert y.tolist() == [15] * 4 + [99] * 4 + [0] * 7 + [1]
    assert z.tolist() == [1, 2, 0] * 3  # tiles 3 elements apart: gaps between them


@ct.kernel
def bad_view(x, out):
    ct.store(out, (0,), x.tiled_view((4,)).load((0, 0)))


def test_a_tiled_view_index_of_another_rank_is_refused():
    with pytest.raises(ct.TileTypeError, match="Index size 2 does not match the tiled view's rank 1"):
        ct.launch(None, (1,), bad_view, (np.zeros(4, np.float32), np.zeros(4, np.float32)))


@ct.kernel
def raising(out, N: ct.Constant[int]):
    if N > 4:
        raise ct.static_exception(ValueError(f"N={N} is too large"))
    ct.store(out, (0,), ct.full((4,), N, ct.int32))


def test_raise_static_exception_fails_the_compile_only_where_it_is_reached():
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), raising, (out, 3))
    assert out.tolist() == [3] * 4
    with pytest.raises(ct.StaticException, match=r"Exception was raised at compile time \(ValueError: N=8 is too "
                                                 r"large\)"):
        ct.launch(None, (1,), raising, (out, 8))


@ct.kernel
def plain_raise(out):
    raise ValueError("no")


def test_any_other_raise_is_unsupported_syntax():
    with pytest.raises(ct.TileSyntaxError, match="only `raise ct.static_exception"):
        ct.launch(None, (1,), plain_raise, (np.zeros(4, np.int32),))
