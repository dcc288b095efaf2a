"""The puzzle notebooks (notebooks/puzzles/), one per series, written from the catalogue:
`python -m tileworkbench.puzzles [folder]` rewrites them after a puzzle changes."""
from __future__ import annotations

from pathlib import Path

from .catalogue import PUZZLES_LIST, SERIES

INTRO = """Each puzzle states a task and gives a kernel with an empty body. Write the body and run the cell:
`check` runs the kernel on the CPU interpreter against an answer computed in NumPy. It says *solved*,
*not solved yet* (the kernel stores nothing to the outputs), or which elements differ and which blocks wrote
them, with the coverage view of what every block read and wrote."""

SETUP = "import math\n\nimport numpy as np\n\nimport tileworkbench.tile as ct\nfrom tileworkbench.puzzles import check"


def notebook_cells(series: str) -> list[tuple[str, str]]:
    """(cell type, source) of one series' notebook."""
    cells = [("markdown", f"# Tile puzzles: {SERIES[series].lower()}\n\n{INTRO}"), ("code", SETUP)]
    for number, puzzle in enumerate(PUZZLES_LIST, 1):
        if puzzle.series == series:
            cells.append(("markdown", f"## {number}. {puzzle.title}\n\n{puzzle.text}"))
            cells.append(("code", f"{puzzle.stub()}\n\ncheck({puzzle.name!r}, {puzzle.name})"))
    return cells


def notebook_names() -> dict[str, str]:
    """series -> file name, numbered in catalogue order."""
    return {series: f"{n:02d}_{series}.ipynb" for n, series in enumerate(SERIES, 1)}


def write_notebooks(folder: Path) -> list[Path]:
    import nbformat
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for series, name in notebook_names().items():
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
        make = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
        nb.cells = [make[kind](source) for kind, source in notebook_cells(series)]
        for number, cell in enumerate(nb.cells):
            cell.id = f"{series}-{number}"  # stable ids: regenerating changes nothing that did not change
        nbformat.write(nb, folder / name)
        written.append(folder / name)
    return written
