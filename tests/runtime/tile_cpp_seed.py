"""Seed 002's CUDA Tile C++ examples, as the seed writes them, with the outputs the seed documents.

Each example's code runs as written inside a one-block `__tile_global__` kernel that stores its
result tile `r` in row-major order; `documented` is the seed's picture of that result (the right of
its arrow), compared as text: `matrix_cells` reads the seed's LaTeX, `result_cells` writes a NumPy
result the same way. The type-trait examples are compile-time facts: `static_assert`s that NVRTC
checks without a GPU.
"""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np


class SeedExample(NamedTuple):
    name: str
    code: str        # the seed's code, as written
    element: str     # the C++ element type of the result, and of the output buffer
    documented: str  # the seed's LaTeX of the result


EXAMPLES = [
    SeedExample("full", "auto r = ct::full<ct::tile<int, ct::shape<2, 2>>>(42);", "int",
                r"\begin{pmatrix} 42 & 42 \\ 42 & 42 \end{pmatrix}"),
    SeedExample("iota", "auto r = ct::iota<ct::tile<int, ct::shape<2, 4>>>();", "int",
                r"\begin{pmatrix} 0 & 1 & 2 & 3 \\ 4 & 5 & 6 & 7 \end{pmatrix}"),
    SeedExample("ones", "auto r = ct::ones<ct::tile<int, ct::shape<2, 2>>>();", "int",
                r"\begin{pmatrix} 1 & 1 \\ 1 & 1 \end{pmatrix}"),
    SeedExample("zeros", "auto r = ct::zeros<ct::tile<double, ct::shape<2, 2>>>();", "double",
                r"\begin{pmatrix} 0.0 & 0.0 \\ 0.0 & 0.0 \end{pmatrix}"),
    SeedExample("isinf", """namespace ct = ::cuda::tiles;
using i32x4 = ct::tile<int, ct::shape<4>>;

float xData[4] = {
  1.0  / 0.0,  // positive inf
  -1.0 / 0.0,  // negative inf
  0.0  / 0.0,  // NaN
  1.0,         // finite
};

auto x = ct::load(&xData[0] + ct::iota<i32x4>());
auto r = ct::isinf(x);""", "bool",
                r"\begin{pmatrix} \text{true} \\ \text{true} \\ \text{false} \\ \text{false} \end{pmatrix}"),
    SeedExample("isnan", """namespace ct = ::cuda::tiles;
using i32x4 = ct::tile<int, ct::shape<4>>;

float xData[4] = {
  1.0  / 0.0,  // positive inf
  -1.0 / 0.0,  // negative inf
  0.0  / 0.0,  // NaN
  1.0,         // finite
};

auto x = ct::load(&xData[0] + ct::iota<i32x4>());
auto r = ct::isnan(x);""", "bool",
                r"\begin{pmatrix} \text{false} \\ \text{false} \\ \text{true} \\ \text{false} \end{pmatrix}"),
    SeedExample("reshape", """namespace ct = ::cuda::tiles;
using namespace ct::literals;

auto x = ct::iota<ct::tile<int, ct::shape<2, 4>>>();
auto y = ct::reshape(x, ct::shape{4_ic, 2_ic});
auto r = y;""", "int", r"\begin{pmatrix} 0 & 1 \\ 2 & 3 \\ 4 & 5 \\ 6 & 7 \end{pmatrix}"),
    SeedExample("permute", """namespace ct = ::cuda::tiles;
using namespace ct::literals;
auto x = ct::iota<ct::tile<int, ct::shape<4, 2, 2>>>();
auto r = ct::permute(x, ct::dimension_map{2_ic, 0_ic, 1_ic});""", "int",
                r"\begin{pmatrix} \begin{pmatrix} 0 & 2 \end{pmatrix} & \begin{pmatrix} 4 & 6 \end{pmatrix} & "
                r"\begin{pmatrix} 8 & 10 \end{pmatrix} & \begin{pmatrix} 12 & 14 \end{pmatrix} \\ \begin{pmatrix} 1 & 3 "
                r"\end{pmatrix} & \begin{pmatrix} 5 & 7 \end{pmatrix} & \begin{pmatrix} 9 & 11 \end{pmatrix} & "
                r"\begin{pmatrix} 13 & 15 \end{pmatrix} \\ \end{pmatrix}"),
    SeedExample("transpose", """namespace ct = ::cuda::tiles;
auto x = ct::iota<ct::tile<int, ct::shape<4, 2, 2>>>();
auto r = ct::transpose(x);""", "int",
                r"\begin{pmatrix} \begin{pmatrix} 0 & 1 \end{pmatrix} & \begin{pmatrix} 4 & 5 \end{pmatrix} & "
                r"\begin{pmatrix} 8 & 9 \end{pmatrix} & \begin{pmatrix} 12 & 13 \end{pmatrix} \\ \begin{pmatrix} 2 & 3 "
                r"\end{pmatrix} & \begin{pmatrix} 6 & 7 \end{pmatrix} & \begin{pmatrix} 10 & 11 \end{pmatrix} & "
                r"\begin{pmatrix} 14 & 15 \end{pmatrix} \\ \end{pmatrix}"),
    SeedExample("cat", """namespace ct = ::cuda::tiles;
using namespace ct::literals;
auto x = ct::full<ct::tile<int, ct::shape<4, 2>>>(0);
auto y = ct::full<ct::tile<int, ct::shape<4, 2>>>(1);
auto r = ct::cat(x, y, 1_ic);""", "int",
                r"\begin{pmatrix} 0 & 0 & 1 & 1 \\ 0 & 0 & 1 & 1 \\ 0 & 0 & 1 & 1 \\ 0 & 0 & 1 & 1 \\ \end{pmatrix}"),
    SeedExample("select", """namespace ct = ::cuda::tiles;
using i32x4 = ct::tile<int, ct::shape<4>>;
bool cData[4] = {true, false, true, false};

auto c = ct::load(&cData[0] + ct::iota<i32x4>());
auto x = ct::iota<i32x4>();
auto y = -ct::iota<i32x4>();

auto r = ct::select(c, x, y);""", "int", r"\begin{pmatrix} 0 \\ -1 \\ 2 \\ -3 \end{pmatrix}"),
    SeedExample("extract", """namespace ct = ::cuda::tiles;
using namespace ct::literals;
auto x = ct::iota<ct::tile<int, ct::shape<4, 4>>>();
auto r = ct::extract(x, ct::shape{2_ic, 2_ic}, 0, 1);""", "int",
                r"\begin{pmatrix} 2 & 3 \\ 6 & 7 \end{pmatrix}"),
    SeedExample("broadcast", """namespace ct = ::cuda::tiles;
using namespace ct::literals;
auto x = ct::iota<ct::tile<int, ct::shape<4, 1>>>();
auto r = ct::broadcast(x, ct::shape{4_ic, 4_ic});""", "int",
                r"\begin{pmatrix} 0 & 0 & 0 & 0 \\ 1 & 1 & 1 & 1 \\ 2 & 2 & 2 & 2 \\ 3 & 3 & 3 & 3 \end{pmatrix}"),
    SeedExample("element_cast", """namespace ct = ::cuda::tiles;
auto x = ct::iota<ct::tile<int, ct::shape<4, 1>>>();
auto r = ct::element_cast<double>(x);""", "double",
                r"\begin{pmatrix} 0.0 \\ 1.0 \\ 2.0 \\ 3.0 \end{pmatrix}"),
    SeedExample("element_bitcast", """namespace ct = ::cuda::tiles;
auto x = ct::full<ct::tile<unsigned char, ct::shape<4, 1>>>(255);
auto r = ct::element_bitcast<signed char>(x);""", "signed char",
                r"\begin{pmatrix} -1 \\ -1 \\ -1 \\ -1 \end{pmatrix}"),
]

# The seed's type-trait tables (tile_permutation_t, tile_transpose_t, concatenation_t, extractable_from)
TRAITS = """#include <cuda_tile.h>
namespace ct = ::cuda::tiles;
static_assert(std::is_same_v<ct::tile_permutation_t<int, ct::dimension_map<>>, int>);
static_assert(std::is_same_v<ct::tile_permutation_t<ct::tile<int, ct::shape<>>, ct::dimension_map<>>,
                             ct::tile<int, ct::shape<>>>);
static_assert(std::is_same_v<ct::tile_permutation_t<ct::tile<int, ct::shape<4, 2, 16, 8>>, ct::dimension_map<2, 1, 3, 0>>,
                             ct::tile<int, ct::shape<16, 2, 8, 4>>>);
static_assert(std::is_same_v<ct::tile_transpose_t<int>, int>);
static_assert(std::is_same_v<ct::tile_transpose_t<ct::tile<int, ct::shape<>>>, ct::tile<int, ct::shape<>>>);
static_assert(std::is_same_v<ct::tile_transpose_t<ct::tile<int, ct::shape<4, 2, 16, 8>>>,
                             ct::tile<int, ct::shape<2, 4, 16, 8>>>);
static_assert(!ct::concatenation_compatible<int, int, 0>);
static_assert(std::is_same_v<ct::concatenation_t<ct::tile<int, ct::shape<2, 4>>, ct::tile<int, ct::shape<2, 4>>, 0>,
                             ct::tile<int, ct::shape<4, 4>>>);
static_assert(std::is_same_v<ct::concatenation_t<ct::tile<int, ct::shape<2, 4>>, ct::tile<int, ct::shape<2, 4>>, 1>,
                             ct::tile<int, ct::shape<2, 8>>>);
static_assert(ct::extractable_from<ct::shape<>, int>);
static_assert(ct::extractable_from<ct::shape<16, 2>, ct::tile<int, ct::shape<32, 8>>>);
static_assert(!ct::extractable_from<ct::shape<2, 16>, ct::tile<int, ct::shape<32, 8>>>);
__tile_global__ void traits(int* out) {}
"""

NUMPY = {"int": np.int32, "double": np.float64, "bool": np.bool_, "signed char": np.int8}


def cell(example: SeedExample) -> str:
    """The cell a user writes for `example`: its code in a kernel that stores `r` row-major to `out`."""
    body = "\n".join(f"  {line}" if line else "" for line in example.code.splitlines())
    return f"""#include <cuda_tile.h>
namespace ct = ::cuda::tiles;

__tile_global__ void example({example.element}* out) {{
{body}
  using R = decltype(r);
  ct::store(out + ct::iota<ct::tile_with_element_t<R, int>>(), r);
}}
"""


def result_shape(example: SeedExample) -> tuple[int, ...]:
    """The result's shape, read from the documented picture (a column for a rank-1 tile)."""
    cells = matrix_cells(example.documented)
    rows, cols = len(cells), len(cells[0])
    inner = cells[0][0]
    return (rows, cols, *np.shape(inner)[1:]) if isinstance(inner, list) else (rows, cols)


def matrix_cells(latex: str):
    """The seed's `\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}` as rows of cells; a nested
    pmatrix is a cell holding its own rows."""
    tokens = re.findall(r"\\begin\{pmatrix\}|\\end\{pmatrix\}|\\\\|&|(?:\\text\{[^}]*\}|-?\\infty|[^\s&\\]+)", latex)

    def matrix(at):
        rows, row, cell = [], [], None
        while True:
            token = tokens[at]
            at += 1
            if token == r"\begin{pmatrix}":
                cell, at = matrix(at)
            elif token in ("&", "\\\\", r"\end{pmatrix}"):
                if cell is not None:
                    row.append(cell)
                cell = None
                if token != "&" and row:
                    rows.append(row)
                    row = []
                if token == r"\end{pmatrix}":
                    return rows, at
            else:
                cell = token
    assert tokens[0] == r"\begin{pmatrix}"
    return matrix(1)[0]


def result_cells(values: np.ndarray):
    """A result as the seed draws it: a rank-1 tile as a column, rank 3 as a matrix of rows."""
    def text(v) -> str:
        if isinstance(v, (bool, np.bool_)):
            return rf"\text{{{str(bool(v)).lower()}}}"
        if isinstance(v, (float, np.floating)):
            return r"\text{NaN}" if np.isnan(v) else (r"\infty" if v > 0 else r"-\infty") if np.isinf(v) else repr(float(v))
        return str(int(v))
    if values.ndim == 1:
        return [[text(v)] for v in values]
    if values.ndim == 2:
        return [[text(v) for v in row] for row in values]
    return [[[[text(v) for v in inner]] for inner in row] for row in values]
