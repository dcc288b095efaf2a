"""Gather and scatter operands the code generator computes per element instead of holding as tiles:
a scalar broadcast (one index), `start + ct.arange(n)` (an affine index) and `start + ct.arange(n) <
bound` (an affine mask). Anything else stays a tile. Source only: no NVRTC needed."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.codegen import generate


@ct.kernel
def row_copy(x, y, shift, n, T: ct.Constant[int]):
    row = ct.bid(0)
    cols = ct.arange(T, dtype=ct.int32)
    t = ct.gather(x, (row, cols + shift), mask=cols < n, padding_value=0)
    ct.scatter(y, (row, cols), t, mask=(cols % 3) != 0)


def _source():
    x = np.zeros((4, 64), np.float16)
    return generate(row_copy.specialize((x, x, 1, 50, 64)), arch="sm_90").source


def test_a_scalar_row_index_is_one_value_and_an_arange_column_index_is_computed_from_the_coordinate():
    source = _source()
    assert source.count("tw::uniform_index<int32_t, tw::shape<64>>{row}") == 2
    assert "tw::affine_index<int32_t, tw::shape<64>, 0>{shift}" in source
    assert "tw::affine_index<int32_t, tw::shape<64>, 0>{0}" in source


def test_a_mask_comparing_an_arange_with_a_scalar_is_computed_and_any_other_mask_is_a_tile():
    gather, scatter = [line for line in _source().splitlines() if "tw::gather(" in line or "tw::scatter(" in line]
    assert "tw::affine_mask<int32_t, tw::shape<64>, 0>{0, n}" in gather
    assert "affine_mask" not in scatter and "tw::no_mask" not in scatter
