"""The notebooks in notebooks/ run top to bottom on the interpreter and show what they promise."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"


def execute(name: str):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def text_of(cell) -> str:
    parts = []
    for out in cell.outputs:
        parts.append(out.get("text", "") or out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


@pytest.mark.slow
def test_quickstart_runs_and_shows_result_ir_and_trace():
    nb = execute("00_quickstart.ipynb")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "100., 101., 102., 103., 104., 105., 106., 107., 108., 109." in text_of(code[1]).replace("\n", "").replace("  ", " ")
    assert "kernel vector_add(%a: array<float32, 1d>" in text_of(code[2])
    assert "load a {'LOADED': 10, 'PADDED': 2}" in text_of(code[3])
    assert "store c {'STORED': 10, 'DROPPED': 2}" in text_of(code[3])
    assert "[ 8  9 10 11]" in text_of(code[3])


def test_notebooks_are_committed_without_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), path.name
        assert "widgets" not in nb.metadata, path.name
