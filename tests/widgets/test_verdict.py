"""The verdict compares two result sets and locates mismatches by block and tile position."""
import xml.etree.ElementTree as ET

import numpy as np

from tileworkbench.tile import interpret
from tileworkbench.kernels import vector_add
from tileworkbench.runtime import device
from tileworkbench.widgets.verdict import NOT_COMPARED, VerdictView, compare, verify

SVG = "{http://www.w3.org/2000/svg}"


def launch():
    a, b = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    c = np.zeros(100, np.float32)
    trace = interpret(vector_add, (4,), (a, b, c, 32), trace=True)
    return c, trace


def test_identical_results_agree():
    c, trace = launch()
    v = compare("vector_add", {"c": c}, {"c": c.copy()}, trace)
    assert v.ok and v.arrays[0].match_fraction == 1.0 and not v.mismatches


def test_an_injected_error_is_found_with_its_block_and_tile_position():
    c, trace = launch()
    wrong = c.copy()
    wrong[70] += 1
    v = compare("vector_add", {"c": c}, {"c": wrong}, trace)
    assert not v.ok and v.arrays[0].matching == 99
    (m,) = v.mismatches
    assert m.element == (70,) and m.block == (2,) and m.tile_position == (6,)
    assert m.expected == 71.0 and m.actual == 72.0 and m.line is not None


def test_without_a_gpu_the_verdict_says_so(monkeypatch):
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    v = verify(vector_add, (4,), (np.zeros(100, np.float32), np.zeros(100, np.float32), np.zeros(100, np.float32), 32))
    assert not v.ok and v.message.startswith("The GPU side needs a CUDA GPU (no CUDA device found)")
    view = VerdictView(v)
    assert view.data["compared"] is False   # the script draws the headline only, no empty table
    headline = ET.fromstring(view.to_svg()).find(f"{SVG}text")
    assert headline.get("fill") == NOT_COMPARED and "needs a CUDA GPU" in headline.text


def test_svg_lists_the_mismatches():
    c, trace = launch()
    wrong = c.copy()
    wrong[3] = -1
    root = ET.fromstring(VerdictView(compare("vector_add", {"c": c}, {"c": wrong}, trace)).to_svg())
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("99.00% of 100 match" in t for t in texts) and any("c[3]" in t and "block (0,)" in t for t in texts)
