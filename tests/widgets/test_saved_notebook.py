"""A saved notebook keeps every view's picture: displaying a view makes a static picture output (SVG,
and the same SVG as an image in HTML) followed by the live widget, and nbconvert's HTML shows the
picture whether or not the notebook saved widget state."""
import base64
import re
import xml.etree.ElementTree as ET

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from nbformat.v4 import new_code_cell, new_notebook

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.widgets.coverage import CoverageView
from tileworkbench.widgets.stepper import StepperView
from tileworkbench.widgets.tile_space import TileSpaceView

WIDGET = "application/vnd.jupyter.widget-view+json"

CELLS = ['''\
import numpy as np
import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.profile.access import analyze_trace
from tileworkbench.widgets.coverage import CoverageView
from tileworkbench.widgets.index_map import IndexMapView
from tileworkbench.widgets.stepper import StepperView
from tileworkbench.widgets.tile_space import TileSpaceView
from tileworkbench.widgets.transform import TransformView

@ct.kernel
def copy(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 4), padding_mode=ct.PaddingMode.ZERO))

@ct.kernel
def gather(table, idx, got):
    i = ct.load(idx, (0,), (8,))
    ct.store(got, (0,), ct.gather(table, i, padding_value=-1.0))

x = np.arange(60, dtype=np.float32).reshape(6, 10)
trace = interpret(copy, (2, 3), (x, np.zeros_like(x)), trace=True)''',
         'TileSpaceView.from_trace(trace, op="load", array="x", block=(1, 2), values=x)',
         ('TileSpaceView.from_trace(trace, op="load", array="x", block=(1, 2), values=x, '
          'access=analyze_trace(copy.specialize((x, np.zeros_like(x))), trace))'),
         'CoverageView.from_trace(trace)',
         'TransformView.of(lambda t: ct.permute(t, (1, 0)), (2, 4))',
         '''table = np.arange(10, dtype=np.float32)
IndexMapView.from_trace(interpret(gather, (1,), (table, np.array([0, 3, -1, 12, 5, 5, 7, 9], np.int32),
                                           np.zeros(8, np.float32)), trace=True), op="gather", values=table)''',
         'StepperView.from_trace(interpret(copy, (2, 3), (x, np.zeros_like(x)), values=True), block=(1, 2), step=1)']


@pytest.fixture(scope="module")
def executed():
    nb = new_notebook(cells=[new_code_cell(c) for c in CELLS],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return nb


@pytest.mark.slow
def test_each_view_cell_saves_its_picture_then_the_live_widget(executed):
    for cell in executed.cells[1:]:
        picture, widget = cell.outputs
        assert picture.output_type == widget.output_type == "display_data"
        svg, page = picture.data["image/svg+xml"], picture.data["text/html"]
        ET.fromstring(svg)
        key, image = re.fullmatch(r'<div class="tileworkbench-picture tileworkbench-picture-(\w+)">'
                                  r'<img src="data:image/svg\+xml;base64,([\w+/=]+)" .*', page).groups()
        assert base64.b64decode(image).decode() == svg and picture.data["text/plain"]
        assert WIDGET in widget.data and "image/svg+xml" not in widget.data
        # the widget's script finds its picture by the key, which the widget state carries
        state = executed.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
        assert state[widget.data[WIDGET]["model_id"]]["state"]["_picture_key"] == key


@pytest.mark.slow
@pytest.mark.parametrize("widget_state", [True, False], ids=["with widget state", "without widget state"])
def test_nbconvert_html_shows_every_views_picture(executed, widget_state):
    nb = nbformat.from_dict(executed)
    if not widget_state:   # as JupyterLab saves a notebook by default
        del nb.metadata["widgets"]
    body, _ = HTMLExporter().from_notebook_node(nb)
    pictures = re.findall(r'<div class="tileworkbench-picture tileworkbench-picture-(\w+)"><img [^>]*'
                          r'src="data:image/svg\+xml;base64,', body)
    assert len(set(pictures)) == len(CELLS) - 1


@ct.kernel
def copy_ragged(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 4)))


def test_the_picture_is_the_static_export_the_live_widget_shows_and_scales_to_the_output_width():
    x = np.ones((6, 10), np.float32)
    trace = interpret(copy_ragged, (2, 3), (x, np.zeros_like(x)), values=True)
    for view in (TileSpaceView.from_trace(trace, array="x", block=(1, 1)), CoverageView.from_trace(trace),
                 StepperView.from_trace(trace, block=(1, 1), step=2)):
        picture = view.picture_bundle()
        assert picture["image/svg+xml"] == view.to_svg() == view.svg
        assert "max-width: 100%" in ET.fromstring(picture["image/svg+xml"]).get("style")
        assert 'style="max-width: 100%"' in picture["text/html"]
