"""Views' ES modules: shared code lives once in static/ and is inlined where a view imports it
(anywidget loads each module from a Blob URL, where relative imports cannot resolve)."""
import json
import re
import shutil
import subprocess

import pytest

from tileworkbench.widgets._base import STATIC, static

CANVAS_VIEWS = ("coverage.js", "transform.js")
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node to check the JavaScript")


@pytest.mark.parametrize("name", CANVAS_VIEWS)
def test_a_view_module_has_its_shared_code_inlined_once_and_no_relative_import(name):
    assert 'from "./_cells.js"' in (STATIC / name).read_text()
    module = static(name)
    assert not re.search(r'^import .* from "\./', module, re.M)
    for function in ("typed", "canvasOf", "drawTexts", "drawCells", "legendOf", "hit"):
        assert module.count(f"function {function}(") == 1
    assert module.count("export default") == 1 and "export function" not in module


def test_each_shared_function_is_written_once_in_static():
    for function in ("drawCells", "legendOf", "hit", "canvasOf"):
        defining = [p.name for p in STATIC.glob("*.js") if f"function {function}(" in p.read_text()]
        assert defining == ["_cells.js"], (function, defining)


@needs_node
@pytest.mark.parametrize("name", CANVAS_VIEWS)
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
    script = "; ".join(f"await import('./{name}')" for name in CANVAS_VIEWS)
    result = subprocess.run(["node", "--input-type=module", "-e", script], cwd=tmp_path, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
