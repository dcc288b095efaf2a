"""Views' ES modules: shared code lives once in static/ and is inlined where a view imports it
(anywidget loads each module from a Blob URL, where relative imports cannot resolve)."""
import json
import re
import shutil
import subprocess

import pytest

from tileworkbench.widgets._base import STATIC, static

VIEWS = sorted(p.name for p in STATIC.glob("*.js") if not p.name.startswith("_"))
SHARED = {"_data.js": ("typed",), "_cells.js": ("cellAt", "outline", "statusLine"),
          "_cell_line.js": ("cellLineHighlighter",),
          "_svg.js": ("svg",),
          "_picture.js": ("hidePicture", "pictureOf", "pointIn", "renderView")}
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node to check the JavaScript")


@pytest.mark.parametrize("name", VIEWS)
def test_a_view_module_has_what_it_imports_inlined_once_and_no_relative_import(name):
    source = (STATIC / name).read_text()
    imported = re.findall(r'^import \{[^}]*\} from "\./(_\w+\.js)";', source, re.M)
    module = static(name)
    assert not re.search(r'^import .* from "\./', module, re.M)
    for shared in imported:
        for function in SHARED[shared]:
            assert module.count(f"function {function}(") == 1, (shared, function)
    assert module.count("export default") == 1 and "export function" not in module and "export const" not in module


def test_the_views_drawn_in_python_show_that_picture_and_import_the_shared_modules():
    from tileworkbench.widgets import coverage, index_map, launch_report, stepper, sweep, tile_space, transform
    from tileworkbench.widgets._base import SvgView
    drawn = {"coverage.js": coverage.CoverageView, "index_map.js": index_map.IndexMapView,
             "launch_report.js": launch_report.LaunchReportView, "sweep.js": sweep.SweepView,
             "tile_space.js": tile_space.TileSpaceView, "transform.js": transform.TransformView,
             "stepper.js": stepper.StepperView}
    assert all(issubclass(cls, SvgView) for cls in drawn.values())
    assert {name for name in VIEWS if "pictureOf" in (STATIC / name).read_text()} == set(drawn)
    assert {name for name in VIEWS if "./_cells.js" in (STATIC / name).read_text()} == {"coverage.js", "index_map.js",
                                                                                        "stepper.js", "transform.js"}


@pytest.mark.parametrize("name", VIEWS)
def test_every_view_renders_through_the_shared_skeleton(name):
    """Hiding the picture, drawing on a trait's change and letting go of the model: once, in _picture.js."""
    source = (STATIC / name).read_text()
    assert re.search(r'^  render: renderView\("\w+", \(\{ model, el \}\) => \{$', source, re.M)
    assert "hidePicture(" not in source and 'model.off("change:svg"' not in source


def test_each_shared_function_is_written_once_in_static():
    for shared, functions in SHARED.items():
        for function in functions:
            defining = [p.name for p in STATIC.glob("*.js") if f"function {function}(" in p.read_text()]
            assert defining == [shared], (function, defining)


@needs_node
@pytest.mark.parametrize("name", VIEWS)
def test_the_inlined_module_parses(name, tmp_path):
    copy = tmp_path / name.replace(".js", ".mjs")
    copy.write_text(static(name))
    result = subprocess.run(["node", "--check", str(copy)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@needs_node
def test_the_source_modules_link_against_the_shared_module(tmp_path):
    """node resolves the relative imports of the files as written: every imported name is exported."""
    for path in STATIC.glob("*.js"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "package.json").write_text(json.dumps({"type": "module"}))
    script = "; ".join(f"await import('./{name}')" for name in VIEWS)
    result = subprocess.run(["node", "--input-type=module", "-e", script], cwd=tmp_path, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
