"""`%%tilekernel --lang cpp` cells in CUDA Tile C++ (cuda::tiles), and compile errors of both C++
dialects: each leaves a kernel record stopped at its line, and `--show log` prints the whole log."""
import pytest
from IPython.utils.capture import capture_output

from tileworkbench.magic import DIAGNOSTICS_MIME, KERNEL_MIME
from tileworkbench.magic.diagnostics import TileKernelCellError
from tileworkbench.runtime import device, tile_cpp
from tileworkbench.runtime.tile_cpp import TileCppKernel

from .test_cpp_and_inspector import SCALE, records, run

pytestmark = pytest.mark.skipif(tile_cpp.unavailable_reason() is not None,
                                reason=str(tile_cpp.unavailable_reason()))

AXPY = """#include <cuda_tile.h>
namespace ct = ::cuda::tiles;

template <int TILE>
__tile_global__ void axpy(const float* x, float* y, float a, int n) {
  auto i = int(ct::bid().x) * TILE + ct::iota<ct::tile<int, ct::shape<TILE>>>();
  auto in = i < n;
  ct::store_masked(y + i, a * ct::load_masked(x + i, in) + ct::load_masked(y + i, in), in);
}
"""


def test_a_cuda_tile_cell_compiles_through_the_tile_compiler_and_shows_its_resources(shell):
    out = run(shell, '--lang cpp "axpy<1024>" --show resources', AXPY)
    kernel = shell.user_ns["axpy"]
    assert isinstance(kernel, TileCppKernel) and kernel.dialect == "cuda::tiles"
    threads = kernel.block_threads("sm_90")
    assert out.stdout.startswith("axpy<1024> (_Z4axpyILi1024EEvPKfPffi in the cubin) for sm_90: ")
    assert "parameters (as compiled): x: .u64, y: .u64, a: .f32, n: .s32" in out.stdout
    assert f"theoretical occupancy with {threads}-thread blocks" in out.stdout
    (record,) = records(out)
    (spec,) = record["specializations"]
    assert record["lang"] == "cpp" and record["stopped"] is None
    assert spec["threads"] == threads and spec["registers"] > 0 and "__tile_global__" in spec["cuda"]


def test_a_cuda_tile_cell_shows_its_tile_ir_and_its_sass_by_cell_line(shell):
    out = run(shell, '--lang cpp "axpy<1024>" --show ptx --show sass', AXPY)
    tile_ir, sass = [o.data["text/plain"] for o in out.outputs if "tw-code" in o.data.get("text/html", "")]
    assert "// Tile IR" in tile_ir and "entry @_Z4axpyILi1024EEvPKfPffi" in tile_ir
    assert "loc(#loc" not in tile_ir  # the locations the trace reads are not shown
    assert "// cell line 9: ct::store_masked(y + i, a * ct::load_masked(x + i, in)" in sass
    assert "LDG" in sass and "STG" in sass


def test_a_cuda_tile_cell_launches_one_thread_per_block_and_refuses_block(shell):
    with capture_output(), pytest.raises(TileKernelCellError, match="--block: a CUDA Tile C\\+\\+ kernel launches "
                                                                   "with one thread per block"):
        shell.run_cell_magic("tilekernel", '--lang cpp "axpy<1024>" --block 128', AXPY)
    with capture_output(), pytest.raises(TileKernelCellError, match="needs --args"):
        shell.run_cell_magic("tilekernel", '--lang cpp "axpy<1024>" --grid 4', AXPY)


@pytest.mark.skipif(device.gpu_available(), reason="checks the message shown without a GPU")
def test_a_cuda_tile_launch_without_a_gpu_says_so(shell):
    with capture_output(), pytest.raises(TileKernelCellError, match="run on a GPU only"):
        shell.run_cell_magic("tilekernel", '--lang cpp "axpy<1024>" --grid 1 --args "0, 0, 2.0, 8"', AXPY)


@pytest.mark.parametrize("dialect, source, bad, line", [
    ("tw::", SCALE, ("a * x[i]", "a * xs[i]"), 5),
    ("cuda::tiles", AXPY, ("int(ct::bid().x)", "int(ct::bid().w)"), 7),
])
def test_a_compile_error_leaves_a_record_stopped_at_its_line_and_show_log_prints_the_log(shell, dialect, source,
                                                                                          bad, line):
    header = "--lang cpp --show log" + ' "axpy<1024>"' * (dialect == "cuda::tiles")
    with capture_output() as out, pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", header, source.replace(*bad))
    (bundle,) = [o.data[DIAGNOSTICS_MIME] for o in out.outputs if DIAGNOSTICS_MIME in o.data]
    assert bundle["diagnostics"][0]["line"] == line
    (record,) = records(out)
    assert record["stopped"].startswith(f"cell line {line}: NvrtcError: ")
    (spec,) = record["specializations"]
    assert spec["error"].startswith("NvrtcError: ")
    assert "error" in out.stdout and bad[1].split("[")[0].split(".")[-1].rstrip("()") in out.stdout  # the log
    assert f"cell line {line}" in info.value.text


def test_a_cuda_tile_cell_without_the_tile_compiler_says_what_to_install(shell, monkeypatch):
    monkeypatch.setattr(tile_cpp, "unavailable_reason", lambda: "CUDA Tile C++ needs NVIDIA's tile compiler ...")
    with capture_output() as out, pytest.raises(TileKernelCellError, match="needs NVIDIA's tile compiler"):
        shell.run_cell_magic("tilekernel", '--lang cpp "axpy<1024>"', AXPY)
    assert [o for o in out.outputs if KERNEL_MIME in o.data]


def test_a_cuda_tile_cell_shows_the_views_of_its_launch_without_a_gpu(shell):
    import numpy as np
    shell.user_ns.update(x=np.arange(3000, dtype=np.float32), y=np.zeros(3000, np.float32))
    out = run(shell, '--lang cpp "axpy<1024>" --viz --grid 3 --args "x, y, 2.0, 3000"', AXPY)
    widgets = [o.data for o in out.outputs if "application/vnd.jupyter.widget-view+json" in o.data]
    assert len(widgets) == 4  # coverage, then an index map for each pointer-tile load and the store
    (record,) = records(out)
    assert record["stopped"] is None
    assert (shell.user_ns["y"] == 0).all()  # traced, not run


def test_without_tileirdisasm_a_cell_compiles_and_its_tile_ir_view_and_viz_say_what_is_missing(shell, monkeypatch):
    import numpy as np
    chain = tile_cpp.Toolchain(tile_cpp.toolchain().bin_dir)
    chain.disassembler = None
    monkeypatch.setattr(tile_cpp, "toolchain", lambda: chain)
    out = run(shell, '--lang cpp "axpy<1024>" --show ptx --show resources', AXPY)
    (tile_ir,) = [o.data["text/plain"] for o in out.outputs if "tw-code" in o.data.get("text/html", "")]
    assert "No Tile IR text: tileirdisasm is not beside tileiras" in tile_ir and "entry @" not in tile_ir
    assert "registers/thread" in out.stdout  # compiled all the same
    shell.user_ns.update(x=np.zeros(3000, np.float32), y=np.zeros(3000, np.float32))
    with capture_output(), pytest.raises(TileKernelCellError, match="No Tile IR text: .* --viz need"):
        shell.run_cell_magic("tilekernel", '--lang cpp "axpy<1024>" --viz --grid 3 --args "x, y, 2.0, 3000"', AXPY)


def test_a_corpus_kernel_named_with_a_type_and_a_size_traces_from_a_cell_with_bf16_arrays(shell):
    import ml_dtypes
    import numpy as np

    from benchmarks.tile_cpp import cases
    case = next(c for c in cases(quick=True) if c.name == "layer norm")
    sizes = {"rows": 2, "cols": 1000}
    arrays = [np.zeros(shape, ml_dtypes.bfloat16) for shape in [(2, 1000), 1000, 1000, (2, 1000)]]
    shell.user_ns.update(grid=case.grid(sizes), args=case.cpp_args(arrays, sizes))
    out = run(shell, f'--lang cpp "{case.expression}" --viz --grid grid --args "*args"', case.source)
    assert shell.user_ns["layer_norm"].expression == "layer_norm<__nv_bfloat16, 1024>"
    widgets = [o.data for o in out.outputs if "application/vnd.jupyter.widget-view+json" in o.data]
    assert len(widgets) == 5  # coverage, tile spaces of x and y, index maps of w and b (1-D under a 2-D view)
    (record,) = records(out)
    assert record["stopped"] is None
