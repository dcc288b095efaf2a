"""The block stepper: its model (op order, values, who wrote an element) and its picture."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp import Status
from tileworkbench.kernels import matmul
from tileworkbench.widgets.stepper import (NAN, NEG_INF, POS_INF, TOUCH_TEXT, NoValuesError, StepperView, bin_tile,
                                           heat_fills, selected_cells, stepper_data, steps_of, writer_of)

from ..interp.test_steps import reads_the_next_blocks_output


@ct.kernel
def shifted_sum(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.zeros((TILE,), ct.float32)
    for k in range(2):
        acc = acc + ct.load(x, (i + k,), (TILE,), padding_mode=ct.PaddingMode.NAN)
    ct.store(y, (i,), acc)


def _trace():
    x = np.arange(10, dtype=np.float32)
    x[1] = np.inf
    y = np.zeros(12, np.float32)
    return ct.interpret(shifted_sum, (3,), (x, y, 4), values=True), x, y


def test_stepping_a_block_walks_its_loop_iterations_and_shows_each_ops_tile():
    trace, x, _ = _trace()
    view = StepperView.from_trace(trace, block=(1,))
    loads = [k for k, s in enumerate(steps_of(trace, (1,))) if s.op == "load"]
    view.step = loads[1]
    assert view.current.loops == ((18, 1),)
    tile = view.data["panels"][0]
    assert tile["kind"] == "tile" and tile["hover"][0] == "[0] = 8.0 \u2190 x[8] loaded"
    # the last two lanes read past the end of x: NaN padding, outlined as padded
    assert tile["labels"] == ["8", "9", "NaN", "NaN"] and tile["padded"].tolist() == [2, 3]
    assert "line 19: load (iteration 1 of the loop on line 18)" in view.to_svg()


def test_memory_touched_so_far_grows_with_the_steps_and_outlines_the_current_ops_lanes():
    trace, _, _ = _trace()
    view = StepperView.from_trace(trace, block=(0,))
    loads = [k for k, s in enumerate(steps_of(trace, (0,))) if s.op == "load"]
    view.step = loads[0]
    x_panel = next(p for p in view.data["panels"] if p["name"] == "x")
    assert x_panel["now_read"].tolist() == [0, 1, 2, 3]
    assert [h.endswith("read") for h in x_panel["hover"][:5]] == [True] * 4 + [False]
    view.step = loads[1]
    x_panel = next(p for p in view.data["panels"] if p["name"] == "x")
    assert [h.endswith("read") for h in x_panel["hover"][:9]] == [True] * 8 + [False]
    y_panel = next(p for p in view.data["panels"] if p["name"] == "y")
    assert all(h.endswith("not touched yet") for h in y_panel["hover"])


def test_selecting_an_element_jumps_to_the_block_and_op_that_wrote_it():
    trace, _, _ = _trace()
    assert writer_of(trace, "y", (9,)) == ((2, 0, 0), 8)
    view = StepperView.from_trace(trace, block=(0,))
    assert view.select("y", (9,)) == ((2, 0, 0), 8)
    assert view.block == [2, 0, 0] and view.current.op == "store"
    assert "y[9] was written by block (2,) at op 9 (line 20)" in view.to_svg()
    assert view.select("x", (3,)) is None
    assert "x[3]: no block of this launch wrote it" in view.to_svg()


def test_nan_infinities_and_booleans_get_colours_no_finite_value_gets():
    fills = heat_fills(np.array([0.0, 1.0, np.nan, np.inf, -np.inf], np.float32))
    finite, special = {tuple(f) for f in fills[:2]}, [tuple(f) for f in fills[2:]]
    assert len(set(special)) == 3 and not finite & set(special)
    assert len({tuple(f) for f in heat_fills(np.array([True, False]))}) == 2


def test_a_trace_without_values_names_how_to_record_them():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    trace = ct.interpret(shifted_sum, (2,), (x, y, 4), trace=True)
    with pytest.raises(NoValuesError, match="values=True"):
        StepperView.from_trace(trace)


def test_a_block_outside_the_grid_is_refused():
    trace, _, _ = _trace()
    with pytest.raises(ValueError, match=r"block \(5,\) is outside the grid"):
        StepperView.from_trace(trace, block=(5,))


@ct.kernel
def transpose_load(x, y):
    t = ct.load(x, (0, 0), (2, 4), order="F")
    ct.store(y, (0, 0), t)


def test_a_lane_of_a_load_in_another_order_names_the_element_it_read():
    x = np.arange(8, dtype=np.int32).reshape(4, 2)
    trace = ct.interpret(transpose_load, (1,), (x, np.zeros((2, 4), np.int32)), values=True)
    view = StepperView.from_trace(trace)
    tile = view.data["panels"][0]
    assert view.current.op == "load" and tile["labels"] == ["0", "2", "4", "6", "1", "3", "5", "7"]
    assert tile["hover"][1] == "[0, 1] = 2 \u2190 x[1, 0] loaded"


def test_a_kernel_defined_in_a_file_has_no_cell_to_highlight_a_line_in():
    trace, _, _ = _trace()
    assert StepperView.from_trace(trace, block=(1,)).data["cell"] is None


def _same_data(a, b) -> bool:
    """Figure data equal, NumPy arrays element by element."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_data(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_data(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _replayed_bins(steps, upto: int, panel) -> np.ndarray:
    """READ (1) | WRITE (2) per bin of an array panel, replaying the block's events 0..upto element by element."""
    shape = tuple(panel["shape"])
    bits = np.zeros(shape, np.uint8)
    for step in steps[:upto + 1]:
        for e in step.events:
            if e.array == panel["name"] and len(e.blocks):
                for kind, codes in ((1, [Status.LOADED]), (2, [Status.STORED, Status.COLLISION])):
                    lanes = np.isin(e.status[0], codes)
                    np.bitwise_or.at(bits, tuple(e.coords[0][lanes].T), kind)
    view = (int(np.prod(shape[:-2])), shape[-2], shape[-1])
    factors, binned = panel["factors"], panel["binned"]
    grid = np.zeros([b * f for b, f in zip(binned, factors)], np.uint8)
    grid[:view[0], :view[1], :view[2]] = bits.reshape(view)
    blocks = grid.reshape(binned[0], factors[0], binned[1], factors[1], binned[2], factors[2])
    return np.bitwise_or.reduce(np.bitwise_or.reduce(np.bitwise_or.reduce(blocks, 5), 3), 1).ravel()


def test_memory_panels_at_any_step_in_any_order_equal_a_replay_of_the_blocks_events():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 40 * 8)).astype(np.float16)   # 40 K iterations: more steps than a checkpoint spans
    b = rng.standard_normal((40 * 8, 64)).astype(np.float16)
    trace = ct.interpret(matmul, (2, 2), (a, b, np.zeros((64, 64), np.float32), 32, 32, 8), values=True)
    view = StepperView.from_trace(trace, block=(1, 0))
    steps = steps_of(trace, (1, 0))
    order = [0, 1, 2, 60, 59, 31, 32, 33, 120, len(steps) - 1, 5, 64, 63]
    for step in order:
        view.step = step
        assert _same_data(view.data, stepper_data(trace, (1, 0), step))   # kept per block = made afresh
        for panel in view.data["panels"][1:]:
            kinds = _replayed_bins(steps, step, panel)
            assert [h.rsplit(": ", 1)[1] for h in panel["hover"]] == [TOUCH_TEXT[k] for k in kinds]
            now = _replayed_bins(steps[step:], 0, panel)
            assert panel["now_read"].tolist() == np.flatnonzero(now & 1).tolist()
            assert panel["now_written"].tolist() == np.flatnonzero(now & 2).tolist()


@ct.kernel
def big_tile(x, y):
    t = ct.load(x, (0, 0), (128, 128), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (0, 0), t)


def test_a_128x128_tile_is_drawn_whole_in_bins_that_keep_nan_infinities_and_padding_visible():
    x = np.arange(126 * 128, dtype=np.float32).reshape(126, 128)   # rows 126 and 127 of the tile pad
    x[0, 1], x[5, 9], x[70, 3] = np.nan, np.inf, -np.inf
    trace = ct.interpret(big_tile, (1,), (x, np.zeros((128, 128), np.float32)), values=True)
    view = StepperView.from_trace(trace, step=[s.op for s in steps_of(trace, (0,))].index("load"))
    tile = view.data["panels"][0]
    assert len(tile["fill"]) == 32 * 64 and "in bins of 4 x 2" in view.to_svg()   # the whole tile: 32 x 64 bins
    nan_bin, inf_bin, neg_bin = 0, 1 * 64 + 4, 17 * 64 + 1
    assert [tuple(tile["fill"][k]) for k in (nan_bin, inf_bin, neg_bin)] == [NAN, POS_INF, NEG_INF]
    finite = {tuple(f) for k, f in enumerate(tile["fill"]) if k not in (nan_bin, inf_bin, neg_bin)}
    assert not finite & {NAN, POS_INF, NEG_INF}
    assert tile["hover"][nan_bin].startswith("[0, 0]..[3, 1] (8 elements): min 0.0, max 385.0, 1 NaN")
    assert tile["hover"][inf_bin].startswith("[4, 8]..[7, 9] (8 elements): min 520.0, max 905.0, 1 +inf")
    assert tile["padded"].tolist() == list(range(31 * 64, 32 * 64))   # the bins of rows 124..127
    assert "4 padded" in tile["hover"][31 * 64] and "padded" not in tile["hover"][30 * 64]
    assert tile["hover"][31 * 64].endswith("\u2190 x[124, 0] (first lane) loaded")


def test_bin_aggregates_count_special_values_and_padded_lanes_and_keep_integer_extremes_exact():
    value = np.array([[2 ** 60 + 1, 3], [-(2 ** 60) - 1, 7]] * 2, np.int64).reshape(4, 2)
    status = np.full((4, 2), Status.LOADED, np.uint8)
    status[3, 1] = Status.PADDED
    bins = bin_tile(value, status)
    assert bins["factors"] == (1, 1, 1) and bins["padded"].tolist() == [0] * 7 + [1]
    big = np.zeros((64, 128), np.float32)
    big[0, 0], big[0, 1], big[1, 0] = np.nan, np.inf, -5.5
    bins = bin_tile(big)
    assert bins["factors"] == (1, 2, 2) and bins["count"][0] == 4
    assert (bins["nan"][0], bins["pos_inf"][0], bins["min"][0], bins["max"][0]) == (1, 1, -5.5, 0.0)
    ints = bin_tile(np.array([2 ** 60 + 1, -(2 ** 60) - 1] * 64, np.int64))
    assert ints["factors"] == (1, 1, 2) and ints["min"][0] == -(2 ** 60) - 1 and ints["max"][0] == 2 ** 60 + 1


@ct.kernel
def stack_of_tiles(x, y):
    t = ct.load(x, (0, 0, 0), (8, 4, 4))
    ct.store(y, (0, 0, 0), t)


def test_a_3d_tile_is_a_row_of_2d_slices_binned_along_the_leading_axes():
    x = np.arange(128, dtype=np.float32).reshape(8, 4, 4)
    trace = ct.interpret(stack_of_tiles, (1,), (x, np.zeros_like(x)), values=True)
    tile = StepperView.from_trace(trace).data["panels"][0]
    assert "tile (8, 4, 4) float32 (8 slices of 4 x 4 side by side), in bins of 2 x 1 x 1" in tile["caption"]
    assert len(tile["fill"]) == 4 * 4 * 4
    assert tile["hover"][0] == "[0, 0, 0]..[1, 0, 0] (2 elements): min 0.0, max 16.0 \u2190 x[0, 0, 0] (first lane) loaded"


def test_a_block_past_the_values_budget_is_shown_from_a_rerun_with_the_same_tiles():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((32, 64)).astype(np.float16), rng.standard_normal((64, 32)).astype(np.float16)
    full = ct.interpret(matmul, (2, 2), (a, b, np.zeros((32, 32), np.float32), 16, 16, 16), values=True)
    part = ct.interpret(matmul, (2, 2), (a, b, np.zeros((32, 32), np.float32), 16, 16, 16), values=True,
               values_max_bytes=full.steps.held_bytes // 3)
    for step in range(len(steps_of(full, (1, 1)))):
        shown, recorded = stepper_data(part, (1, 1), step), stepper_data(full, (1, 1), step)
        unplaced = [[{k: v for k, v in p.items() if k != "cy"} for p in d["panels"]] for d in (shown, recorded)]
        assert _same_data(*unplaced)   # the same tiles and memory, one line lower under the note
    assert "re-running it alone" in shown["values"][0] and "re-running it alone" in StepperView.from_trace(
        part, block=(1, 1)).to_svg()


def test_a_block_past_the_budget_that_reads_another_blocks_writes_is_shown_from_a_rerun_of_the_launch():
    x, y = np.arange(12, dtype=np.float32), np.zeros(12, np.float32)
    trace = ct.interpret(reads_the_next_blocks_output, (3,), (x, y), values=True, values_max_bytes=100)
    view = StepperView.from_trace(trace, block=(0,), step=4)
    assert view.current.value is not None and "re-running the whole launch" in view.data["values"][0]
    assert "re-running the whole launch" in view.to_svg()


def test_a_block_whose_own_tiles_exceed_the_budget_says_so_in_place_of_the_missing_ones():
    trace = ct.interpret(shifted_sum, (3,), (np.arange(10, dtype=np.float32), np.zeros(12, np.float32), 4), values=True,
                values_max_bytes=40)
    view = StepperView.from_trace(trace, block=(2,), step=len(steps_of(trace, (2,))) - 1)
    assert view.current.value is None and "values_max_bytes" in view.to_svg()


def test_a_selected_element_is_outlined_in_the_bin_of_a_big_tile_that_holds_it():
    x = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    trace = ct.interpret(big_tile, (1,), (x, np.zeros_like(x)), values=True)
    view = StepperView.from_trace(trace, step=[s.op for s in steps_of(trace, (0,))].index("load"))
    view.select("x", (6, 9))   # not a bin's first element: row 6 of rows 4..7, column 9 of columns 8..9
    tile = view.data["panels"][0]
    assert selected_cells(tile, view.data["selected"]) == [1 * 64 + 4]
