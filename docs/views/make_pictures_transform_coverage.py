"""Make the pictures of docs/views/transform.md and coverage.md from real traces.

    python docs/views/make_pictures_transform_coverage.py
"""
import pathlib

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.widgets.coverage import CoverageView
from tileworkbench.widgets.transform import TransformView

HERE = pathlib.Path(__file__).parent


@ct.kernel
def load_transposed(x, y):
    t = ct.load(x, (0, 0), (4, 2), order="F")
    ct.store(y, (0, 0), t)


@ct.kernel
def copy_tiles(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 4)))


@ct.kernel
def copy_pairs(x, y):
    i = ct.bid(0)
    ct.store(y, (i // 2,), ct.load(x, (i // 2,), (8,)))   # blocks 2k and 2k+1 write the same tile


def main():
    TransformView.of(lambda t: ct.permute(t, (2, 0, 1)), (4, 2, 2)).save_svg(HERE / "transform_permute.svg")
    TransformView.of(lambda a, b: ct.cat((a, b), 1), (4, 2), (4, 2)).save_svg(HERE / "transform_cat.svg")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    trace = interpret(load_transposed, (1,), (x, np.zeros((4, 2), np.float32)), trace=True)
    TransformView.from_trace(trace, op="load").save_svg(HERE / "transform_load_order.svg")

    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    view = CoverageView.from_trace(interpret(copy_tiles, (3, 4), (x, np.zeros_like(x)), trace=True))
    view.block = [1, 2, 0]
    view.save_svg(HERE / "coverage_holes.svg")
    x = np.arange(32, dtype=np.float32)
    view = CoverageView.from_trace(interpret(copy_pairs, (6,), (x, np.zeros_like(x)), trace=True))
    view.block = [3, 0, 0]
    view.save_svg(HERE / "coverage_overlap.svg")


if __name__ == "__main__":
    main()
