"""Linked views: one block and one selected element shared by every view of a launch."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.widgets.coverage import CoverageView
from tileworkbench.widgets.index_map import IndexMapView
from tileworkbench.widgets.linked import selection_of
from tileworkbench.widgets.stepper import StepperView
from tileworkbench.widgets.tile_space import TileSpaceView
from tileworkbench.widgets.views import views_of_trace


@ct.kernel
def copy_and_gather(x, y, z, idx):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (4,)))
    ct.store(z, (i,), ct.gather(x, ct.load(idx, (i,), (4,))))


def _views():
    x = np.arange(12, dtype=np.float32)
    idx = np.arange(12)[::-1].copy()
    trace = interpret(copy_and_gather, (3,), (x, np.zeros_like(x), np.zeros_like(x), idx), values=True)
    views = views_of_trace(trace, {"x": x})
    kinds = (CoverageView, TileSpaceView, IndexMapView, StepperView)
    return {kind: next(v for v in views if isinstance(v, kind)) for kind in kinds}, views


def test_every_view_of_a_launch_follows_the_block_chosen_in_one_of_them():
    by_kind, views = _views()
    selection = selection_of(views[0])
    assert all(selection_of(v) is selection for v in views)
    by_kind[CoverageView].block = [2, 0, 0]     # as its slider does
    assert selection.block == [2, 0, 0] and by_kind[StepperView].block == [2, 0, 0]
    assert by_kind[IndexMapView].data["block"][0] == 2
    tile_space = [v for v in views if isinstance(v, TileSpaceView)]
    assert all(v.data["index"] == [2] for v in tile_space)
    by_kind[StepperView].block = [1, 0, 0]      # as its block field does
    assert by_kind[CoverageView].block == [1, 0, 0] and all(v.data["index"] == [1] for v in tile_space)


def test_an_element_selected_in_one_view_is_highlighted_in_all_and_the_stepper_jumps_to_its_writer():
    by_kind, views = _views()
    by_kind[CoverageView].selected = {"array": "z", "index": [9]}   # as a click on z[9] does
    stepper = by_kind[StepperView]
    assert stepper.block == [2, 0, 0] and stepper.current.op == "store" and stepper.current.events[0].array == "z"
    assert by_kind[CoverageView].block == [2, 0, 0]
    # the index map of the gather (block 2 now) lights the lane that read the selected element
    selection_of(stepper).element = {"array": "x", "index": [1]}
    index_map = by_kind[IndexMapView]
    assert index_map.data["coords"][index_map.lane].tolist() == [1]
    assert 'stroke="#ff6f00"' in by_kind[CoverageView].svg
    tile_space = next(v for v in views if isinstance(v, TileSpaceView) and v.data["array"] == "x")
    assert 'class="selected"' in tile_space.svg


def test_a_lane_clicked_in_an_index_map_selects_its_element_everywhere():
    by_kind, views = _views()
    by_kind[IndexMapView].selected = {"array": "x", "index": [10]}   # as a click on a lane that read x[10] does
    assert selection_of(views[0]).element == {"array": "x", "index": [10]}
    assert by_kind[StepperView].selected == {"array": "x", "index": [10]}
    assert "x[10]: no block of this launch wrote it" in by_kind[StepperView].svg


def test_an_element_clicked_in_a_tile_space_moves_the_stepper_to_its_writer():
    by_kind, views = _views()
    store_y = next(v for v in views if isinstance(v, TileSpaceView) and v.data["array"] == "y")
    store_y.selected = {"array": "y", "index": [5]}   # as a click on y[5] does
    assert by_kind[StepperView].block == [1, 0, 0] and by_kind[StepperView].current.op == "store"
    assert by_kind[CoverageView].block == [1, 0, 0] and store_y.data["index"] == [1]
