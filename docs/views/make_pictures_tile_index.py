"""Make the pictures of docs/views/tile_space.md and index_map.md from real traces.

    python docs/views/make_pictures_tile_index.py
"""
import pathlib

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.kernels import transpose
from tileworkbench.profile.access import analyze_trace
from tileworkbench.widgets.index_map import IndexMapView
from tileworkbench.widgets.tile_space import TileSpaceView

HERE = pathlib.Path(__file__).parent


@ct.kernel
def copy_ragged(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 8), padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def copy_transposed(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 8), order="F", padding_mode=ct.PaddingMode.NAN))


@ct.kernel
def gather_scatter(x, y, idx):
    index = ct.load(idx, (0,), (8,))
    values = ct.gather(x, index, mask=index != 3, padding_value=-1)
    ct.scatter(y, index, values)


def warps_picture():
    """The order="F" load of the library's transpose, coloured by the warp and thread that move each element."""
    x = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    args = (x.copy(), np.zeros((64, 32), np.float32), 32)
    trace = interpret(transpose, (2, 1), args, trace=True)
    access = analyze_trace(transpose.specialize(args), trace)
    TileSpaceView.from_trace(trace, op="load", array="x", block=(1, 0), values=x,
                             access=access).save_svg(HERE / "tile_space_warps.svg")


def main():
    x = np.arange(10 * 12, dtype=np.float32).reshape(10, 12)
    trace = interpret(copy_ragged, (3, 2), (x.copy(), np.zeros_like(x)), trace=True)
    TileSpaceView.from_trace(trace, op="load", array="x", block=(2, 1), values=x).save_svg(HERE / "tile_space_ragged.svg")
    x = np.arange(10 * 12, dtype=np.float32).reshape(10, 12)
    trace = interpret(copy_transposed, (3, 2), (x.copy(), np.zeros((12, 10), np.float32)), trace=True)
    TileSpaceView.from_trace(trace, op="load", array="x", block=(1, 1), values=x).save_svg(HERE / "tile_space_order_f.svg")

    x = np.arange(10, dtype=np.int32) * 10
    idx = np.array([0, 3, -1, 12, 5, 5, 7, 1], np.int32)
    trace = interpret(gather_scatter, (1,), (x.copy(), np.zeros(10, np.int32), idx), trace=True)
    IndexMapView.from_trace(trace, op="gather", values=x).save_svg(HERE / "index_map_gather.svg")
    view = IndexMapView.from_trace(trace, op="scatter")
    view.lane = 4   # one of the two lanes writing element 5
    view.save_svg(HERE / "index_map_scatter.svg")
    warps_picture()


if __name__ == "__main__":
    main()
