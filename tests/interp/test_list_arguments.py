"""Lists of arrays as kernel arguments, on the interpreter: a loop over the list, constant indexes,
an index known only at run time (differing between blocks), and the errors of misuse.
(The same kernels run on the GPU against the interpreter: the list cases of tests/gpu/cases.py.)"""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import ArgumentTypeError, TileOutOfBoundsError, TileTypeError, TileValueError
from tileworkbench.tile import interpret

from ..gpu.cases import random_array


@ct.kernel
def add_arrays(arrays, out):
    res = ct.zeros((16, 16), dtype=out.dtype)
    for i in range(len(arrays)):
        res += ct.load(arrays[i], (0, 0), (16, 16))
    ct.store(out, (0, 0), res)


def test_a_loop_over_a_list_reads_every_array():
    arrays = [random_array((16, 16), np.int32) for _ in range(3)]
    out = np.zeros((16, 16), np.int32)
    ct.launch(None, (1,), add_arrays, (arrays, out))
    np.testing.assert_array_equal(out, sum(arrays))


@ct.kernel
def copy_lists(sources, targets, N: ct.Constant[int]):
    for i in range(len(sources)):
        ct.store(targets[i], (0,), ct.load(sources[i], (0,), (N,)))


def test_stores_through_list_items_write_the_caller_s_arrays():
    sources = [random_array(8, np.float32) for _ in range(2)]
    targets = [np.zeros(8, np.float32) for _ in range(2)]
    ct.launch(None, (1,), copy_lists, (sources, targets, 8))
    for source, target in zip(sources, targets):
        np.testing.assert_array_equal(target, source)


@ct.kernel
def pick_per_block(arrays, out, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(out, (b,), ct.load(arrays[b], (0,), (T,), padding_mode=ct.PaddingMode.ZERO) + len(arrays))


def test_an_index_that_differs_between_blocks_reads_each_block_s_array_whatever_its_shape():
    arrays = [random_array(n, np.int32) for n in (8, 3, 5)]
    out = np.zeros(24, np.int32)
    ct.launch(None, (3,), pick_per_block, (arrays, out, 8))
    want = np.concatenate([np.pad(a, (0, 8 - a.size)) for a in arrays]) + 3
    np.testing.assert_array_equal(out, want)


def test_the_trace_names_the_list_item_each_block_read():
    arrays = [random_array(8, np.int32) for _ in range(2)]
    trace = interpret(pick_per_block, (2,), (arrays, np.zeros(16, np.int32), 8), trace=True)
    assert [e.blocks[:, 0].tolist() for e in trace.by_array("arrays[1]")] == [[1]]
    assert [e.blocks[:, 0].tolist() for e in trace.by_array("arrays[0]")] == [[0]]


def test_a_run_time_index_past_the_list_is_an_error_at_its_line():
    arrays = [random_array(8, np.int32) for _ in range(2)]
    with pytest.raises(TileOutOfBoundsError, match=r"list index 2 is out of range for a list of 2 arrays \(block "
                                                   r"\(2,\)\)") as e:
        ct.launch(None, (3,), pick_per_block, (arrays, np.zeros(24, np.int32), 8))
    assert "arrays[b]" in e.value.loc.source_line


@ct.kernel
def constant_indexes(arrays, out):
    ct.static_assert(len(arrays) == 3)
    ct.store(out, (0,), ct.load(arrays[2], (0,), (4,)) - ct.load(arrays[0], (0,), (4,)))


def test_constant_indexes_and_len_are_resolved_while_compiling():
    arrays = [random_array(4, np.int16) for _ in range(3)]
    out = np.zeros(4, np.int16)
    ct.launch(None, (1,), constant_indexes, (arrays, out))
    np.testing.assert_array_equal(out, arrays[2] - arrays[0])
    ir = constant_indexes.ir((arrays, out))
    assert "list_item" not in ir and "arrays_1" in ir


@ct.kernel
def zero_d_index(arrays, out):
    first = ct.full((), 0, dtype=ct.int32)
    ct.store(out, (0,), ct.load(arrays[first + 1], (0,), (4,)) * 10 + ct.load(arrays[first], (0,), (4,)))


def test_a_0d_tile_indexes_a_list():
    arrays = [random_array(4, np.int32) for _ in range(2)]
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), zero_d_index, (arrays, out))
    np.testing.assert_array_equal(out, arrays[1] * 10 + arrays[0])


def test_a_specialization_is_made_per_list_length_not_per_shape():
    k = ct.kernel(add_arrays._pyfunc)
    out = np.zeros((16, 16), np.int32)
    for shape, n in [((16, 16), 2), ((32, 24), 2), ((16, 16), 3)]:
        ct.launch(None, (1,), k, ([np.ones(shape, np.int32)] * n, out))
        np.testing.assert_array_equal(out, n)
    assert len(k.specializations) == 2


@ct.kernel
def index_with(arrays, out, HOW: ct.Constant[int]):
    index = (5, -1, 1.0, ct.full((2,), 0, ct.int32))[HOW]
    ct.store(out, (0,), ct.load(arrays[index], (0,), (4,)))


@pytest.mark.parametrize("how, error, message", [
    (0, TileValueError, "List index 5 is out of range for a list of 2 arrays"),
    (1, TileValueError, "List index -1 is out of range"),
    (2, TileTypeError, "Index must be an integer scalar or 0D Tile, got a float"),
    (3, TileTypeError, r"Index must be an integer scalar or 0D Tile, got tile<int32, 2>"),
])
def test_list_indexes_that_cannot_be_used_are_refused_at_their_line(how, error, message):
    arrays = [np.zeros(4, np.float32)] * 2
    with pytest.raises(error, match=message) as e:
        ct.launch(None, (1,), index_with, (arrays, np.zeros(4, np.float32), how))
    assert "arrays[index]" in e.value.loc.source_line


@pytest.mark.parametrize("arrays, message", [
    ([], "Empty lists are not supported as kernel arguments"),
    ([np.zeros(4, np.float32), 3], "Expected list items to be arrays, got int"),
    ([np.zeros(4, np.float32), np.zeros(4, np.int32)], "Arrays in list vary in data type"),
    ([np.zeros(4, np.float32), np.zeros((4, 1), np.float32)], "Arrays in list vary in rank"),
])
def test_lists_a_kernel_cannot_take_are_refused_as_cutile_refuses_them(arrays, message):
    with pytest.raises(ArgumentTypeError, match=message) as e:
        ct.launch(None, (1,), add_arrays, (arrays, np.zeros((16, 16), np.int32)))
    assert isinstance(e.value, TypeError) and "argument #0" in str(e.value) and "parameter arrays" in str(e.value)


def test_torch_cpu_tensors_in_a_list_run_in_place():
    torch = pytest.importorskip("torch")
    arrays = [torch.full((16, 16), k, dtype=torch.int32) for k in (1, 2, 4)]
    out = torch.zeros((16, 16), dtype=torch.int32)
    ct.launch(None, (1,), add_arrays, (arrays, out))
    assert torch.equal(out, torch.full((16, 16), 7, dtype=torch.int32))


# ---- tuples: each item an argument of its own (arrays and scalars, nested), indexed by constants ----

@ct.kernel
def tuple_items(pair, out, config):
    t = ct.load(pair[0], (0,), (8,)) + ct.load(pair[1], (0,), (8,))
    (scale, offset), bias = config
    ct.store(out, (0,), t * scale + offset + bias + len(config))


def test_tuples_of_arrays_and_nested_scalars_are_arguments_item_by_item():
    a, b = random_array(8, np.int32), random_array(8, np.int32)
    out = np.zeros(8, np.int32)
    ct.launch(None, (1,), tuple_items, ((a, b), out, ((3, 5), 7)))
    np.testing.assert_array_equal(out, (a + b) * 3 + 5 + 7 + 2)
    assert "tuple_items(%pair_0: array<int32, 1d>, %pair_1: array<int32, 1d>, %out: array<int32, 1d>, " \
           "%config_0_0: int32, %config_0_1: int32, %config_1: int32)" in tuple_items.ir(((a, b), out, ((3, 5), 7)))


@ct.kernel
def empty_tuple(out, nothing):
    ct.scatter(out, (), len(nothing) + 1)


def test_an_empty_tuple_is_an_argument():
    out = np.zeros((), np.int32)
    ct.launch(None, (1,), empty_tuple, (out, ()))
    assert out == 1


@ct.kernel
def tuple_at_run_time(pair, out):
    ct.store(out, (0,), ct.load(pair[ct.bid(0)], (0,), (8,)))


def test_a_tuple_is_indexed_by_constants_only():
    pair = (np.zeros(8, np.float32), np.zeros(8, np.float32))
    with pytest.raises(TileTypeError, match="Cannot index a tuple"):
        ct.launch(None, (1,), tuple_at_run_time, (pair, np.zeros(8, np.float32)))


@ct.kernel
def iterate_and_misuse(arrays, out, MISUSE: ct.Constant[bool]):
    if MISUSE:
        ct.store(out, (0,), ct.load(arrays, (0,), (4,)))
    total = ct.zeros((4,), out.dtype)
    for a in arrays:
        total += ct.load(a, (0,), (4,))
    ct.store(out, (0,), total)


def test_a_for_loop_over_a_list_visits_each_array():
    arrays = [random_array(4, np.int32) for _ in range(3)]
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), iterate_and_misuse, (arrays, out, False))
    np.testing.assert_array_equal(out, sum(arrays))


def test_a_list_where_an_array_is_expected_says_it_is_a_list():
    with pytest.raises(TileTypeError, match="got a list of 2 arrays"):
        ct.launch(None, (1,), iterate_and_misuse, ([np.zeros(4, np.int32)] * 2, np.zeros(4, np.int32), True))
