"""Checking a puzzle's answer on the interpreter, and the hint for a wrong one: which elements differ
and which blocks wrote them (from the trace's store events)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..interp import Status, Trace
from ..tile import interpret
from .catalogue import PUZZLES, Puzzle

WRITES = ("store", "scatter", "store_adv")
WRITTEN = (Status.STORED, Status.COLLISION)
SHOWN = 8  # differing elements listed in a hint


@dataclass(frozen=True)
class Difference:
    array: str
    index: tuple[int, ...]
    got: float
    expected: float
    writers: tuple[tuple[int, ...], ...]   # the blocks that stored to this element (none: never written)


@dataclass
class Result:
    """The verdict on one answer: `status` is "solved", "not solved yet" (the kernel writes none of the
    outputs), "wrong" (with the differences and the trace behind them) or "correct but not efficient"
    (the puzzle's requirement on the memory-access analysis is not met: `note` says what)."""
    puzzle: Puzzle
    status: str
    outputs: dict[str, int]                                  # output -> number of elements
    wrong: dict[str, int] = field(default_factory=dict)    # output -> number of differing elements
    differences: list[Difference] = field(default_factory=list)  # the first few, per output
    trace: Trace | None = None
    note: str = ""

    @property
    def solved(self) -> bool:
        return self.status == "solved"

    def text(self) -> str:
        head = f"{self.puzzle.title}: {self.status}"
        if self.status == "solved":
            return head + "."
        if self.note:
            return f"{head}: {self.note}."
        if self.status == "not solved yet":
            return head + f" (the kernel stores nothing to {', '.join(self.outputs)})."
        lines = [head + "."]
        for array, count in self.wrong.items():
            total = self.outputs[array]
            lines.append(f"{array}: {count} of {total} elements differ.")
        for d in self.differences:
            who = ("written by no block" if not d.writers
                   else "written by block" + ("s " if len(d.writers) > 1 else " ") + ", ".join(map(str, d.writers)))
            lines.append(f"  {d.array}{list(d.index)}: got {d.got:.6g}, expected {d.expected:.6g} ({who})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _ipython_display_(self):
        from IPython.display import display
        print(self.text())
        if self.status == "wrong":
            from ..widgets.coverage import CoverageView
            display(CoverageView.from_trace(self.trace, arrays=list(self.wrong)))


def check(name: str, kernel, *, seed: int = 0) -> Result:
    """Run `kernel` on puzzle `name`'s inputs on the interpreter and compare with the NumPy answer.

    >>> check("add_ten", add_ten).solved
    True
    """
    puzzle = PUZZLES[name] if name in PUZZLES else _unknown(name)
    arrays = puzzle.inputs(np.random.default_rng(seed))
    expected = puzzle.expected({k: v.copy() for k, v in arrays.items()})
    args = tuple(arrays[p] if p in arrays else puzzle.constants[p] for p in puzzle.argument_names)
    trace = interpret(kernel, puzzle.grid, args, trace=True)
    writes = [e for e in trace.events if e.op in WRITES and e.array in expected]
    sizes = {k: int(v.size) for k, v in expected.items()}
    if not writes:
        return Result(puzzle, "not solved yet", sizes, trace=trace)
    wrong, differences = {}, []
    for name_, want in expected.items():
        got = arrays[name_]
        bad = ~np.isclose(got, want, rtol=puzzle.rtol, atol=puzzle.atol, equal_nan=True)
        if bad.any():
            wrong[name_] = int(bad.sum())
            shown = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:SHOWN]]
            who = _writers(trace, name_, shown, len(puzzle.grid))
            differences += [Difference(name_, ix, float(got[ix]), float(want[ix]), who[ix]) for ix in shown]
    if wrong:
        return Result(puzzle, "wrong", sizes, wrong, differences, trace)
    if puzzle.requirement is not None:
        from ..profile.access import analyze_trace
        note = puzzle.requirement(analyze_trace(kernel.specialize(args), trace))
        if note:
            return Result(puzzle, "correct but not efficient", sizes, trace=trace, note=note)
    return Result(puzzle, "solved", sizes, trace=trace)


def _writers(trace: Trace, array: str, elements: list[tuple[int, ...]], grid_rank: int) -> dict[tuple, tuple]:
    """For each element, the blocks (in launch order, without repeats) whose store lanes wrote it."""
    shape = tuple(trace.arrays[array]["shape"])
    wanted = np.ravel_multi_index(np.array(elements).T, shape) if elements else np.zeros(0, np.int64)
    found: dict[int, list] = {int(w): [] for w in wanted}
    for event in trace.events:
        if event.op not in WRITES or event.array != array:
            continue
        lanes = event.status.reshape(len(event.blocks), -1)
        coords = event.coords.reshape(len(event.blocks), -1, len(shape))
        written = np.isin(lanes, WRITTEN)
        flat = np.full(lanes.shape, -1, np.int64)
        flat[written] = np.ravel_multi_index(tuple(coords[written].T), shape)
        for row, col in zip(*np.nonzero(np.isin(flat, wanted))):
            block = tuple(int(b) for b in event.blocks[row][:grid_rank])
            who = found[int(flat[row, col])]
            if block not in who:
                who.append(block)
    return {ix: tuple(found[int(w)]) for ix, w in zip(elements, wanted)}


def _unknown(name: str):
    raise KeyError(f"No puzzle named {name!r}; the puzzles are {', '.join(PUZZLES)}")
