"""The code view: IR / CUDA / PTX / resources of a specialization, and the diff of two."""
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tileworkbench.kernels import vector_add
from tileworkbench.runtime.sass import find_nvdisasm
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


needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="needs nvdisasm (pip install nvidia-cuda-nvdisasm)")


def _sass(view):
    return next(t for t in view.data["tabs"] if t["name"] == "SASS")


@needs_nvdisasm
def test_sass_tab_opens_in_program_order_with_runs_under_their_lines(view):
    sass = view.tab("SASS").splitlines()
    assert sass[0].startswith("// ") and "instructions:" in sass[0]
    offsets = [int(m.group(1), 16) for line in sass if (m := re.match(r"\s+/\*([0-9a-f]+)\*/", line))]
    assert offsets == sorted(offsets) and len(offsets) == len(set(offsets))
    heading, loads = None, 0
    for line in sass:
        heading = line if line.startswith("// ") else heading
        if " LDG" in line:   # each global load sits in a run under the line that loads
            assert heading.startswith("// line ") and "ct.load" in heading
            loads += 1
    assert loads > 0
    assert any(line.startswith("// generated code, no kernel line") for line in sass)


@needs_nvdisasm
def test_sass_tab_holds_both_orders_for_the_toggle(view):
    listing = _sass(view)["listing"]
    assert listing["order"] == "program" and set(listing["orders"]) == {"program", "line"}
    assert not listing["measured"] and all(r["heat"] is None for r in listing["orders"]["program"])
    program, by_line = (listing["orders"][k] for k in ("program", "line"))
    assert sorted(r["text"] for r in program if r["kind"] == "instruction") == \
        sorted(r["text"] for r in by_line if r["kind"] == "instruction")
    headings = [r["line"] for r in by_line if r["kind"] == "line"]
    assert headings[:-1] == sorted(headings[:-1]) and headings[-1] is None   # line order, generated code last
    grouped = CodeView(vector_add, args(256), sass_order="line")
    assert grouped.tab("SASS") == "\n".join(r["text"] for r in by_line) + "\n"
    assert _sass(grouped)["listing"]["order"] == "line"
    with pytest.raises(ValueError, match="sass_order must be one of"):
        CodeView(vector_add, args(256), sass_order="cubin")


@needs_nvdisasm
def test_ncu_samples_shade_the_instructions_they_were_taken_at(view):
    from tileworkbench.profile.ncu import NcuMetrics
    from tileworkbench.runtime.launch import build
    from tileworkbench.runtime.sass import Samples, disassemble, parse_listing
    compiled = build(vector_add.specialize(args(256)), "sm_90")
    instructions = compiled.instructions
    store = next(i for i in instructions if i.base == "STG")
    samples = {i.offset: Samples(0.0, {}, i.text) for i in instructions} | {
        store.offset: Samples(40.0, {"drain": 30.0}, store.text)}
    measured = CodeView(vector_add, args(256), ncu=NcuMetrics("vector_add", {}, sass_samples=samples))
    listing = _sass(measured)["listing"]
    assert listing["measured"]
    (hot,) = [r for r in listing["orders"]["program"] if r["heat"] and r["kind"] == "instruction"]
    assert hot["heat"] == 1.0 and hot["stalls"] == {"drain": 30.0} and f"/*{store.offset:04x}*/" in hot["text"]
    hot_lines = {r["line"] for r in listing["orders"]["line"] if r["heat"] and r["kind"] == "line"}
    assert hot_lines == {hot["line"]}   # the line's heading carries its instructions' samples
    assert "[40 samples: drain 30]" in measured.tab("SASS")
    svg = measured.to_svg(lines=400, tab="SASS")
    assert 'fill-opacity="0.450"' in svg and "program order" in svg
    unmeasured = CodeView(vector_add, args(256), ncu=NcuMetrics("vector_add", {}))
    assert unmeasured.data == view.data   # no samples: nothing changes


@needs_nvdisasm
def test_sass_svg_draws_the_listing_in_either_order(view):
    root = ET.fromstring(view.to_svg(lines=400, tab="SASS", sass_order="line"))
    texts = [t.text or "" for t in root.iter() if t.tag.endswith("text")]
    assert texts[0].endswith("[SASS, by kernel line]")
    headings = [t for t in texts if t.startswith("// line ")]   # the summaries are drawn in full
    assert headings and all(re.search(r"\[\d+ instructions?: \d+ memory, \d+ tensor, \d+ other\]$", t) for t in headings)


def test_sass_tab_says_how_to_get_nvdisasm_where_it_is_missing(monkeypatch):
    from tileworkbench.runtime import sass
    monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    view = CodeView(vector_add, args(512))
    assert view.tab("SASS").startswith("No SASS: SASS needs nvdisasm: pip install nvidia-cuda-nvdisasm")


@needs_nvdisasm
def test_ncu_sass_page_of_this_cubin_lines_up_with_the_listing():
    # the source page as ncu prints it for this kernel: loaded addresses, its own text of each instruction
    from tileworkbench.profile.ncu import parse_sass_source
    from tileworkbench.runtime.launch import build
    from tileworkbench.runtime.sass import disassemble, parse_listing
    compiled = build(vector_add.specialize(args(256)), "sm_90")
    instructions = compiled.instructions
    base = 0x7F3C5E000100
    page = [["Kernel Name", "vector_add"], ["Address", "Source", "Warp Stall Sampling (All Samples)", "stall_long_sb"]]
    page += [[hex(base + i.offset), f"      {i.text} ", str(7 if i.base == "FADD" else 0), str(5 if i.base == "FADD" else 0)]
             for i in instructions]
    text = "\n".join(",".join(f'"{c}"' for c in row) for row in page)
    view = CodeView(vector_add, args(256), ncu=parse_sass_source(text))
    rows = [r for r in _sass(view)["listing"]["orders"]["program"] if r["kind"] == "instruction"]
    assert any(r["heat"] for r in rows)
    assert [" FADD" in r["text"] for r in rows] == [r["heat"] == 1.0 for r in rows]
    assert all(r["stalls"] == {"long_sb": 5.0} for r in rows if r["heat"])
