"""`%%tilekernel --ncu` on a GPU: the launch report holds Nsight Compute's achieved occupancy and the hottest
source lines of one launch of the cell's kernel. Skipped where ncu is absent or not permitted."""
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

ADD = '''def add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
'''


@pytest.mark.gpu
def test_ncu_report_has_achieved_occupancy_and_a_hot_line():
    n = 1 << 24
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tileworkbench")
    shell.user_ns.update(a=np.ones(n, np.float32), b=np.ones(n, np.float32), c=np.zeros(n, np.float32), n=n)
    with capture_output():
        view = shell.run_cell_magic("tilekernel", '--grid "(n // 1024,)" --args "a, b, c, 1024" --ncu', ADD)
    measured = view.data["measured"]
    if "message" in measured:
        pytest.skip(measured["message"])
    assert 0 < measured["achieved_occupancy"] <= 100
    assert measured["dram_throughput"] > 0 and measured["load_sectors_per_request"] > 0
    assert measured["hot_lines"] and measured["hot_lines"][0]["samples"] > 0
    assert "achieved occupancy" in view.to_text()
