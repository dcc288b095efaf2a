"""CUDA Tile C++ on the GPU: seed 002's examples give exactly their documented outputs, and the
NVIDIA-style kernels of benchmarks/tile_cpp.py match torch, launched both from Python and from a
`%%tilekernel --lang cpp` cell; a cell launches and measures through %%tilekernel."""
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from benchmarks.tile_cpp import cases, check
from tests.runtime.tile_cpp_seed import EXAMPLES, NUMPY, cell, matrix_cells, result_cells, result_shape
from tileworkbench.magic import KERNEL_MIME
from tileworkbench.runtime.tile_cpp import TileCppKernel, unavailable_reason

# A GPU machine without NVIDIA's tile compiler (or with an NVRTC older than its Tile IR) says why.
pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))


@pytest.mark.gpu
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_a_seed_example_gives_its_documented_output(example):
    cp = pytest.importorskip("cupy")
    shape = result_shape(example)
    out = cp.zeros(int(np.prod(shape)), dtype=NUMPY[example.element])
    TileCppKernel(cell(example), "<cell>").launch((1,), None, (out,))
    assert result_cells(cp.asnumpy(out).reshape(shape)) == matrix_cells(example.documented)


@pytest.mark.gpu
@pytest.mark.parametrize("from_cell", [False, True], ids=["launched from python", "launched from a cell"])
@pytest.mark.parametrize("case", cases(quick=True), ids=lambda c: c.name)
def test_a_tile_cpp_kernel_matches_torch(case, from_cell):
    torch = pytest.importorskip("torch")
    tensors = case.inputs(torch, case.sizes, "cuda")
    expected = case.reference(torch, [t.clone() for t in tensors])
    grid, args = case.grid(case.sizes), case.cpp_args(tensors, case.sizes)
    if from_cell:  # the cell names the template's instance; its arguments come from the notebook's names
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "tileworkbench")
        shell.user_ns.update(grid=grid, args=args)
        with capture_output():
            shell.run_cell_magic("tilekernel", f'--lang cpp "{case.expression}" --grid grid --args "*args"',
                                 case.source)
    else:
        TileCppKernel(case.source, f"<{case.name}>", case.expression).launch(grid, None, args)
    torch.cuda.synchronize()
    assert check(case, torch, tensors, expected) <= case.tolerance


@pytest.mark.gpu
def test_a_tile_cpp_cell_launches_and_measures_from_the_magic():
    cp = pytest.importorskip("cupy")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tileworkbench")
    isinf = next(e for e in EXAMPLES if e.name == "isinf")
    shell.user_ns["out"] = out = cp.zeros(4, dtype=cp.bool_)
    with capture_output() as captured:
        shell.run_cell_magic("tilekernel", "--lang cpp --grid 1 --args out --bench", cell(isinf))
    assert cp.asnumpy(out).tolist() == [True, True, False, False]
    assert "median" in captured.stdout
    (record,) = [o.data[KERNEL_MIME] for o in captured.outputs if KERNEL_MIME in o.data]
    assert record["timing"]["median_ms"] > 0
    assert record["specializations"][0]["threads"] == shell.user_ns["example"].block_threads(record["arch"])
