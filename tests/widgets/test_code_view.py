"""The code view: IR / CUDA / PTX / resources of a specialization, and the diff of two."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tileworkbench.kernels import vector_add
from tileworkbench.widgets.code_view import CODE_CHARS, TABS, CodeView

N = 4096


def args(tile):
    return np.arange(N, dtype=np.float32), np.ones(N, np.float32), np.zeros(N, np.float32), tile


@pytest.fixture(scope="module")
def view():
    return CodeView(vector_add, args(256))


def test_tabs_hold_ir_cuda_ptx_and_resources(view):
    assert [t["name"] for t in view.data["tabs"]] == list(TABS)
    assert "kernel vector_add(" in view.tab("IR")
    assert 'extern "C" __global__' in view.tab("CUDA")
    assert ".entry vector_add" in view.tab("PTX")
    assert "registers" in view.tab("resources") and "spill stores" in view.tab("resources")
    assert view.data["mode"] == "code" and "TILE=256" in view.data["title"]
    assert all(t["lines"] > 0 for t in view.data["tabs"])


def test_svg_shows_the_first_ir_lines(view):
    root = ET.fromstring(view.to_svg())
    text = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    assert "kernel vector_add(" in text


def test_the_picture_scales_to_the_output_and_ends_long_lines_with_an_ellipsis():
    long_line = "    %r = tile.add %a, %b  // " + "a long comment " * 20
    view = CodeView(vector_add, args(256))
    view.data = {**view.data, "tabs": [{**view.data["tabs"][0], "text": long_line, "lines": 1}]}
    root = ET.fromstring(view.to_svg())
    assert "max-width: 100%" in root.get("style")
    (line,) = [t.text for t in root.iter() if t.tag.endswith("text") and t.text.startswith("    %r")]
    assert line.endswith("comment\u2026") and len(line) <= CODE_CHARS


def test_diff_between_tile_sizes_has_changed_lines():
    diff = CodeView.diff(vector_add, args(256), args(1024))
    assert diff.data["mode"] == "diff" and diff.data["labels"] == ["TILE=256", "TILE=1024"]
    ir = diff.tab("IR")
    assert any(line.startswith("-") and "256" in line for line in ir.splitlines())
    assert any(line.startswith("+") and "1024" in line for line in ir.splitlines())
    ir_tab = next(t for t in diff.data["tabs"] if t["name"] == "IR")
    assert ir_tab["added"] > 0 and ir_tab["removed"] > 0
    assert diff.tab("CUDA").count("\n+") > 0
    ET.fromstring(diff.to_svg())


def test_diff_of_the_same_specialization_is_empty():
    diff = CodeView.diff(vector_add, args(256), args(256))
    assert all(t["text"] == "" for t in diff.data["tabs"])


def test_sass_tab_lists_each_kernel_line_then_its_instructions(view):
    from tileworkbench.runtime.sass import find_nvdisasm
    if find_nvdisasm() is None:
        pytest.skip("needs nvdisasm (pip install nvidia-cuda-nvdisasm)")
    sass = view.tab("SASS").splitlines()
    headers = [k for k, line in enumerate(sass) if line.startswith("// line ")]
    assert headers and sass[0].startswith("// line ")
    load_line = next(k for k in headers if "ct.load" in sass[k])
    following = sass[load_line + 1:next((k for k in headers if k > load_line), len(sass))]
    assert any("LDG" in line for line in following)   # the load's global loads sit under its line
    assert sass[-1].endswith(";") and any("setup code" in line for line in sass)


def test_sass_tab_says_how_to_get_nvdisasm_where_it_is_missing(monkeypatch):
    from tileworkbench.runtime import sass
    monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    view = CodeView(vector_add, args(512))
    assert view.tab("SASS").startswith("No SASS: SASS needs nvdisasm: pip install nvidia-cuda-nvdisasm")
