"""python -m tileworkbench.puzzles [folder]: write the puzzle notebooks (default notebooks/puzzles)."""
import sys
from pathlib import Path

from .notebooks import write_notebooks

for path in write_notebooks(Path(sys.argv[1] if len(sys.argv) > 1 else "notebooks/puzzles")):
    print(path)
