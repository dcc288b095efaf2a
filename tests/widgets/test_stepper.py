"""The block stepper: its model (op order, values, who wrote an element) and its picture."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp import run
from tileworkbench.widgets.stepper import NoValuesError, StepperView, heat_fills, steps_of, writer_of


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
    return run(shifted_sum, (3,), (x, y, 4), values=True), x, y


def test_stepping_a_block_walks_its_loop_iterations_and_shows_each_ops_tile():
    trace, x, _ = _trace()
    view = StepperView.from_trace(trace, block=(1,))
    loads = [k for k, s in enumerate(steps_of(trace, (1,))) if s.op == "load"]
    view.step = loads[1]
    assert view.current.loops == ((14, 1),)
    tile = view.data["panels"][0]
    assert tile["kind"] == "tile" and tile["hover"][0] == "[0] = 8.0 \u2190 x[8] loaded"
    # the last two lanes read past the end of x: NaN padding, outlined as padded
    assert tile["labels"] == ["8", "9", "NaN", "NaN"] and tile["padded"].tolist() == [2, 3]
    assert "line 15: load (iteration 1 of the loop on line 14)" in view.to_svg()


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
    assert "y[9] was written by block (2,) at op 9 (line 16)" in view.to_svg()
    assert view.select("x", (3,)) is None
    assert "x[3]: no block of this launch wrote it" in view.to_svg()


def test_nan_infinities_and_booleans_get_colours_no_finite_value_gets():
    fills = heat_fills(np.array([0.0, 1.0, np.nan, np.inf, -np.inf], np.float32))
    finite, special = {tuple(f) for f in fills[:2]}, [tuple(f) for f in fills[2:]]
    assert len(set(special)) == 3 and not finite & set(special)
    assert len({tuple(f) for f in heat_fills(np.array([True, False]))}) == 2


def test_a_trace_without_values_names_how_to_record_them():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    trace = run(shifted_sum, (2,), (x, y, 4), trace=True)
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
    trace = run(transpose_load, (1,), (x, np.zeros((2, 4), np.int32)), values=True)
    view = StepperView.from_trace(trace)
    tile = view.data["panels"][0]
    assert view.current.op == "load" and tile["labels"] == ["0", "2", "4", "6", "1", "3", "5", "7"]
    assert tile["hover"][1] == "[0, 1] = 2 \u2190 x[1, 0] loaded"


def test_a_kernel_defined_in_a_file_has_no_cell_to_highlight_a_line_in():
    trace, _, _ = _trace()
    assert StepperView.from_trace(trace, block=(1,)).data["cell"] is None
