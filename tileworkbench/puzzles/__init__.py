"""Tile puzzles that check themselves on the CPU interpreter (notebooks/puzzles/).

    from tileworkbench.puzzles import check
    check("add_ten", add_ten)   # "Map: solved." / "not solved yet" / which elements differ, who wrote them
"""
from .catalogue import PUZZLES, SERIES, Puzzle
from .check import Difference, Result, check

__all__ = ["PUZZLES", "SERIES", "Difference", "Puzzle", "Result", "check"]
