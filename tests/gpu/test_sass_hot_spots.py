"""Nsight Compute's stall samples per SASS instruction, next to the code view's listing of the same
cubin: every sampled offset holds the instruction ncu printed there, and in a memory-bound loop the
hottest kernel line is the one that loads and adds. Needs ncu permitted to read the counters
(skipped otherwise). This file is also the program ncu profiles: `python test_sass_hot_spots.py`."""
import sys

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import running_sum

GRID = (132,)


def arguments():
    return np.ones(1 << 22, np.float32), np.zeros(GRID[0] * 512, np.float32), 512


def launch():
    import cupy
    args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in arguments())
    ct.launch(cupy.cuda.get_current_stream(), GRID, running_sum, args)
    cupy.cuda.get_current_stream().synchronize()


@pytest.mark.gpu
def test_ncu_samples_land_on_the_code_views_instructions_and_the_load_line_is_hottest():
    from tileworkbench.profile.ncu import NcuUnavailable, collect
    from tileworkbench.runtime.driver import device_arch
    from tileworkbench.widgets.code_view import CodeView
    try:
        (measured,) = collect([sys.executable, __file__], kernel=running_sum.name)
    except NcuUnavailable as e:
        pytest.skip(str(e))
    assert measured.sass_samples and sum(s.samples for s in measured.sass_samples.values()) > 0
    view = CodeView(running_sum, arguments(), arch=device_arch(), ncu=measured)   # refuses samples of another cubin
    listing = next(t for t in view.data["tabs"] if t["name"] == "SASS")["listing"]
    assert listing["measured"]
    hottest = max((r for r in listing["orders"]["line"] if r["kind"] == "line"), key=lambda r: r["heat"])
    assert "ct.load(" in hottest["text"]


if __name__ == "__main__":
    launch()
