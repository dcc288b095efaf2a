"""The puzzles: each states a task, gives the kernel's signature, and computes its inputs and the
expected outputs in NumPy. The notebooks in notebooks/puzzles/ are made from this table
(`python -m tileworkbench.puzzles`), so a puzzle's text lives here only."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Puzzle:
    name: str                        # the kernel's name in the stub, and the key of PUZZLES
    title: str
    text: str                        # the task, in Markdown
    params: str                      # the kernel's parameter list, as written in the stub
    grid: tuple[int, ...]
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]   # every array argument, outputs zeroed
    expected: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]  # output name -> expected array
    constants: dict[str, int] = field(default_factory=dict)
    rtol: float = 1e-5
    atol: float = 1e-5
    series: str = "basics"
    # for a correct answer: what the memory-access analysis must show (None: met, else what is not)
    requirement: Callable | None = None

    @property
    def argument_names(self) -> list[str]:
        return [p.split(":")[0].strip() for p in self.params.split(",")]

    def stub(self) -> str:
        return f"@ct.kernel\ndef {self.name}({self.params}):\n    pass  # your code here\n"


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _zeros_like(**outputs):
    return {name: np.zeros(shape, dtype) for name, (shape, dtype) in outputs.items()}


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _grouped_order(rows: int, cols: int, group: int) -> list[tuple[int, int]]:
    """The (tile row, tile column) that block b of a 1-D grid computes in grouped order: `group` tile
    rows at a time, column by column within the group."""
    order = []
    for b in range(rows * cols):
        first = b // (group * cols) * group
        height = min(rows - first, group)
        order.append((first + b % (group * cols) % height, b % (group * cols) // height))
    return order


def _whole_sectors_no_conflicts(report) -> str | None:
    """Every global access uses whole 32-byte sectors and shared memory has no bank conflicts."""
    for g in report.global_ops:
        if g.efficiency < 1:
            return (f"line {g.line}: the {g.op} of {g.array} uses {g.efficiency:.0%} of the bytes its sectors move "
                    f"({g.sectors_per_request:.1f} sectors per request); read and write whole rows of tiles")
    for s in report.shared_ops:
        if s.conflicts:
            return f"line {s.line}: the {s.op} has {s.conflicts} shared-memory bank conflicts per block"
    return None


def _scattered(x, perm):
    out = np.zeros_like(x)
    out[perm] = x
    return out


PUZZLES_LIST = [
    Puzzle(
        "add_ten", "Map",
        "Every block loads a `TILE`-element tile of `x` and stores `x + 10` into `out`. "
        "`x` has 64 elements, `TILE` is 16, the grid is `(4,)`: block `i` owns tile `i`.",
        "x, out, TILE: ct.Constant[int]", (4,),
        lambda rng: {"x": _f32(rng, 64), **_zeros_like(out=((64,), np.float32))},
        lambda a: {"out": a["x"] + 10}, {"TILE": 16}),
    Puzzle(
        "double_ragged", "Map over a ragged edge",
        "`out = 2 * x` for 50 elements with 16-element tiles: the last block's tile hangs over the end of "
        "the array. A load pads the missing lanes; a store drops them. Grid `(4,)`.",
        "x, out, TILE: ct.Constant[int]", (4,),
        lambda rng: {"x": _f32(rng, 50), **_zeros_like(out=((50,), np.float32))},
        lambda a: {"out": 2 * a["x"]}, {"TILE": 16}),
    Puzzle(
        "zip_mul", "Zip",
        "`out = a * b`, elementwise, 96 elements, `TILE` 32, grid `(3,)`.",
        "a, b, out, TILE: ct.Constant[int]", (3,),
        lambda rng: {"a": _f32(rng, 96), "b": _f32(rng, 96), **_zeros_like(out=((96,), np.float32))},
        lambda a: {"out": a["a"] * a["b"]}, {"TILE": 32}),
    Puzzle(
        "outer_add", "Broadcast",
        "`out[i, j] = a[i] + b[j]` for a 32 x 48 `out`, with 16 x 16 tiles and a 2-D grid `(2, 3)`: "
        "block `(i, j)` owns tile `(i, j)`. Load a column of `a` and a row of `b` and let broadcasting "
        "make the tile (`t[:, None]`, `t[None, :]`).",
        "a, b, out, T: ct.Constant[int]", (2, 3),
        lambda rng: {"a": _f32(rng, 32), "b": _f32(rng, 48), **_zeros_like(out=((32, 48), np.float32))},
        lambda a: {"out": a["a"][:, None] + a["b"][None, :]}, {"T": 16}),
    Puzzle(
        "leaky_relu", "Select",
        "`out = x` where `x > 0`, else `0.1 * x` (`ct.where`). 128 elements, `TILE` 32, grid `(4,)`.",
        "x, out, TILE: ct.Constant[int]", (4,),
        lambda rng: {"x": _f32(rng, 128), **_zeros_like(out=((128,), np.float32))},
        lambda a: {"out": np.where(a["x"] > 0, a["x"], np.float32(0.1) * a["x"])}, {"TILE": 32}),
    Puzzle(
        "row_sum", "Row reduction",
        "`out[r] = x[r, :].sum()` for an 8 x 64 `x`, one block per row: grid `(8,)`, `N` = 64.",
        "x, out, N: ct.Constant[int]", (8,),
        lambda rng: {"x": _f32(rng, 8, 64), **_zeros_like(out=((8,), np.float32))},
        lambda a: {"out": a["x"].sum(axis=1)}, {"N": 64}, series="reductions"),
    Puzzle(
        "column_max", "Column reduction",
        "`out[j] = x[:, j].max()` for an `M` x 32 `x` (`M` = 64): block `j` loads an `M` x `W` slab of "
        "columns (`W` = 8, grid `(4,)`) and reduces over axis 0.",
        "x, out, M: ct.Constant[int], W: ct.Constant[int]", (4,),
        lambda rng: {"x": _f32(rng, 64, 32), **_zeros_like(out=((32,), np.float32))},
        lambda a: {"out": a["x"].max(axis=0)}, {"M": 64, "W": 8}, series="reductions"),
    Puzzle(
        "dot", "Dot product with a loop",
        "`out[0] = (a * b).sum()` for 1000-element vectors, in one block (grid `(1,)`): loop over the "
        "`TILE`-element tiles (`ct.num_tiles`), accumulate, store once. Mind the last, partial tile.",
        "a, b, out, TILE: ct.Constant[int]", (1,),
        lambda rng: {"a": _f32(rng, 1000), "b": _f32(rng, 1000), **_zeros_like(out=((1,), np.float32))},
        lambda a: {"out": np.array([(a["a"].astype(np.float64) * a["b"]).sum()], np.float32)}, {"TILE": 128},
        rtol=1e-4, atol=1e-4, series="reductions"),
    Puzzle(
        "prefix_sum", "Scan",
        "`out[r] = cumsum(x[r])` for a 4 x 64 `x`, one block per row (grid `(4,)`, `N` = 64).",
        "x, out, N: ct.Constant[int]", (4,),
        lambda rng: {"x": _f32(rng, 4, 64), **_zeros_like(out=((4, 64), np.float32))},
        lambda a: {"out": np.cumsum(a["x"], axis=1)}, {"N": 64}, rtol=1e-4, atol=1e-4, series="reductions"),
    Puzzle(
        "softmax", "Softmax",
        "Row softmax of an 8 x 100 `x`, one block per row (grid `(8,)`). The tile must be a power of two: "
        "`N` = 128 lanes, 28 of them past the row's end. Pad them so they cannot change the max or the sum.",
        "x, out, N: ct.Constant[int]", (8,),
        lambda rng: {"x": _f32(rng, 8, 100), **_zeros_like(out=((8, 100), np.float32))},
        lambda a: {"out": _softmax(a["x"])}, {"N": 128}, series="reductions"),
    Puzzle(
        "masked_gather", "Gather with a mask",
        "`out[i] = table[idx[i]]` where `keep[i]` is true, else `-1` (`ct.gather` with `mask=` and "
        "`padding_value=`). 64 lookups into a 100-element table, `TILE` 16, grid `(4,)`.",
        "table, idx, keep, out, TILE: ct.Constant[int]", (4,),
        lambda rng: {"table": _f32(rng, 100), "idx": rng.integers(0, 100, 64).astype(np.int32),
                     "keep": rng.random(64) < 0.7, **_zeros_like(out=((64,), np.float32))},
        lambda a: {"out": np.where(a["keep"], a["table"][a["idx"]], np.float32(-1))}, {"TILE": 16},
        series="memory"),
    Puzzle(
        "stencil", "Stencil",
        "`out[i] = x[i - 1] + x[i] + x[i + 1]`, with `x` taken as 0 outside the array. 100 elements, "
        "`TILE` 32, grid `(4,)`. A gather with indices `i - 1` and `i + 1` reads the neighbours; its "
        "out-of-bounds lanes read the padding value.",
        "x, out, TILE: ct.Constant[int]", (4,),
        lambda rng: {"x": _f32(rng, 100), **_zeros_like(out=((100,), np.float32))},
        lambda a: {"out": np.convolve(a["x"], np.ones(3, np.float32), mode="same")}, {"TILE": 32},
        series="memory"),
    Puzzle(
        "inverse_permutation", "Scatter",
        "`perm` is a permutation of 0..63. Write `out[perm[i]] = x[i]` (`ct.scatter`). `TILE` 16, grid `(4,)`.",
        "x, perm, out, TILE: ct.Constant[int]", (4,),
        lambda rng: {"x": _f32(rng, 64), "perm": rng.permutation(64).astype(np.int32),
                     **_zeros_like(out=((64,), np.float32))},
        lambda a: {"out": _scattered(a["x"], a["perm"])}, {"TILE": 16}, series="memory"),
    Puzzle(
        "transpose", "Transpose",
        "`out = x.T` for a 64 x 32 `x` (so `out` is 32 x 64), with `T` x `T` tiles, `T` = 16: block `(i, j)` "
        "writes tile `(i, j)` of `out`, grid `(2, 4)`. Either load the tile transposed (`order=\"F\"`) "
        "or transpose the tile (`ct.transpose`); the memory report shows what each costs.",
        "x, out, T: ct.Constant[int]", (2, 4),
        lambda rng: {"x": _f32(rng, 64, 32), **_zeros_like(out=((32, 64), np.float32))},
        lambda a: {"out": a["x"].T.copy()}, {"T": 16}, series="memory"),
    Puzzle(
        "transpose_coalesced", "Transpose without wasted sectors or bank conflicts",
        "`out = x.T` for a 128 x 128 `x`, with 32 x 32 tiles (grid `(4, 4)`), and the check also runs the "
        "memory-access analysis on the thread layout of the generated code: every global access must use "
        "whole 32-byte sectors, and the exchange of elements between threads in shared memory must have no "
        "bank conflicts. Reading a column with a gather is correct but wastes most of each sector; "
        "a tile loaded whole and transposed in the tile is not.",
        "x, out, T: ct.Constant[int]", (4, 4),
        lambda rng: {"x": _f32(rng, 128, 128), **_zeros_like(out=((128, 128), np.float32))},
        lambda a: {"out": a["x"].T.copy()}, {"T": 32}, series="memory",
        requirement=_whole_sectors_no_conflicts),
    Puzzle(
        "matmul", "Tiled matmul",
        "`c = a @ b` for 64 x 96 times 96 x 32 float32, with `TM` x `TN` output tiles (32 x 16, grid `(2, 2)`): "
        "loop over K in `TK` = 16 steps and accumulate with `ct.mma` into a float32 tile.",
        "a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]", (2, 2),
        lambda rng: {"a": _f32(rng, 64, 96), "b": _f32(rng, 96, 32), **_zeros_like(c=((64, 32), np.float32))},
        lambda a: {"c": a["a"] @ a["b"]}, {"TM": 32, "TN": 16, "TK": 16}, rtol=1e-4, atol=1e-4,
        series="matmul"),
    Puzzle(
        "grouped_matmul", "Matmul in grouped block order",
        "The same `c = a @ b` (128 x 64 times 64 x 128, 32 x 32 tiles, `TK` 16) on a 1-D grid of 16 blocks. "
        "Block `b` computes the output tile of the grouped order: tiles are taken `GROUP` = 2 tile rows at a "
        "time, column by column inside the group, so consecutive blocks share rows of `a` and columns of "
        "`b` while they are still in L2. Block 0 is tile (0, 0), block 1 is (1, 0), block 2 is (0, 1), ..., "
        "block 8 is (2, 0).",
        "a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int], GROUP: ct.Constant[int]",
        (16,),
        lambda rng: {"a": _f32(rng, 128, 64), "b": _f32(rng, 64, 128), **_zeros_like(c=((128, 128), np.float32))},
        lambda a: {"c": a["a"] @ a["b"]}, {"TM": 32, "TN": 32, "TK": 16, "GROUP": 2}, rtol=1e-4, atol=1e-4,
        series="matmul"),
    Puzzle(
        "flash_attention", "Flash attention",
        "`out = softmax(q @ k.T / sqrt(D)) @ v` for `q` 64 x 32 and `k`, `v` 128 x 32, one block per `BM` = 16 "
        "rows of `q` (grid `(4,)`), `D` = 32. Never build the 64 x 128 score matrix: loop over `BN` = 32 keys "
        "at a time keeping a running row max `m`, a running sum `l` and an accumulator; rescale both by "
        "`exp(m_old - m_new)` when the max grows, and divide by `l` at the end.",
        "q, k, v, out, BM: ct.Constant[int], BN: ct.Constant[int], D: ct.Constant[int]", (4,),
        lambda rng: {"q": _f32(rng, 64, 32), "k": _f32(rng, 128, 32), "v": _f32(rng, 128, 32),
                     **_zeros_like(out=((64, 32), np.float32))},
        lambda a: {"out": _softmax(a["q"] @ a["k"].T / np.sqrt(32)) @ a["v"]},
        {"BM": 16, "BN": 32, "D": 32}, rtol=1e-4, atol=1e-4, series="matmul"),
]


PUZZLES = {p.name: p for p in PUZZLES_LIST}

SERIES = {
    "basics": "Maps, zips, broadcasting",
    "reductions": "Reductions, scans, softmax",
    "memory": "Gathers, scatters, stencils, transposes",
    "matmul": "Matmul, block order, flash attention",
}
