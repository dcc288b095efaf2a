"""%%tilekernel cells holding a CuPy kernel definition pasted as is."""
import numpy as np
import pytest

from tileworkbench import ElementwiseKernel, ReductionKernel
from tileworkbench.magic import KERNEL_MIME
from tileworkbench.magic.diagnostics import TileKernelCellError
from tileworkbench.runtime import device

from .test_magic import cell, shown_sweep

SQUARED_DIFF = """squared_diff = cupy.ElementwiseKernel(
   'float32 x, float32 y',
   'float32 z',
   'z = (x - y) * (x - y)',
   'squared_diff')
"""


@pytest.fixture
def xy(shell):
    shell.user_ns.update(x=np.arange(10, dtype=np.float32).reshape(2, 5), y=np.arange(5, dtype=np.float32))
    return shell


def test_a_pasted_definition_defines_the_kernel_and_args_call_it(xy):
    assert cell(xy, "", SQUARED_DIFF)[0] is None
    assert isinstance(xy.user_ns["squared_diff"], ElementwiseKernel)
    result, out = cell(xy, '--args "x, y"', SQUARED_DIFF)
    np.testing.assert_array_equal(result, (xy.user_ns["x"] - xy.user_ns["y"]) ** 2)
    assert any(KERNEL_MIME in o.data for o in out.outputs)   # the inspector shows the tile kernel it ran


def test_reduction_kernels_paste_as_well(xy):
    body = "l2norm_kernel = cp.ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = sqrt(a)', '0', 'l2norm')\n"
    cell(xy, "", body)
    assert isinstance(xy.user_ns["l2norm_kernel"], ReductionKernel)
    got = xy.user_ns["l2norm_kernel"](xy.user_ns["x"], axis=1)
    np.testing.assert_allclose(got, np.sqrt((xy.user_ns["x"] ** 2).sum(axis=1)), rtol=1e-6)


def test_a_sweep_over_a_name_that_is_not_a_tile_size_is_one_message(xy):
    with pytest.raises(TileKernelCellError, match=r"^--sweep: NOPE is not a tile size of this kernel; it has TILE="):
        cell(xy, '--args "x, y" --sweep "NOPE=1,2" --workers 1', SQUARED_DIFF)


def test_sweep_shows_the_explorer_over_tile_sizes(xy, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    result, out = cell(xy, '--args "x, y" --sweep "TILE=128,256" --arch sm_80 --workers 2', SQUARED_DIFF)
    view, _, last = shown_sweep(out)
    assert result is None and last.startswith("SweepView(squared_diff")   # shown as it starts, not again
    assert [r["TILE"] for r in view.data["rows"]] == [128, 256]
    assert all(r["status"] == "ok" for r in view.data["rows"])


def test_viz_shows_the_views_of_the_call(xy):
    _, out = cell(xy, '--args "x, y" --viz', SQUARED_DIFF)
    shown = [o.data.get("text/plain", "") for o in out.outputs if KERNEL_MIME not in o.data]
    assert any("CoverageView" in s for s in shown)


def test_show_ir_prints_the_generated_kernels_ir(xy):
    _, out = cell(xy, '--args "x, y" --show ir', SQUARED_DIFF)
    (ir,) = [o.data["text/plain"] for o in out.outputs if "tw-code" in o.data.get("text/html", "")]
    assert "kernel squared_diff(" in ir and "gather" in ir


def test_grid_is_refused_and_a_body_error_points_at_the_snippet(xy):
    with pytest.raises(TileKernelCellError, match="--grid"):
        cell(xy, '--grid "(1,)" --args "x, y"', SQUARED_DIFF)
    with pytest.raises(TileKernelCellError, match="Expected an expression"):
        cell(xy, "", SQUARED_DIFF.replace("(x - y) * (x - y)", "(x - y) ** 2"))


def test_bench_without_a_gpu_reports_what_the_compiler_made_of_the_call(xy, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    view, _ = cell(xy, '--args "x, y" --bench --arch sm_90', SQUARED_DIFF)
    assert type(view).__name__ == "LaunchReportView" and not view.data["timed"]


@pytest.mark.parametrize("line, definition, message", [
    ('--args "x"', SQUARED_DIFF, "Wrong number of arguments for 'squared_diff'"),
    ('--args "x.astype(np.float64), y"', SQUARED_DIFF, "argument 'x' is a float64 array"),
    ("", SQUARED_DIFF.replace("'float32 x, float32 y'", "'float32 x float32 y'"), "is not `\\[raw\\] <type> <name>`"),
    ("", SQUARED_DIFF.replace("'squared_diff')", "'squared diff')"), "Invalid kernel name"),
    ('--args "x, x, x"', "l2 = cp.ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = a', '0', 'l2')\n", "Wrong number"),
])
def test_bad_calls_and_definitions_are_one_message_box(xy, line, definition, message):
    xy.user_ns["np"] = np
    with pytest.raises(TileKernelCellError, match=message) as info:
        cell(xy, line, definition)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_a_bad_axis_in_the_cell_is_one_message_box(xy):
    definition = "l2 = cp.ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = a', '0', 'l2')\nr = l2(x, axis=5)\n"
    with pytest.raises(TileKernelCellError, match="axis 5 is out of bounds"):
        cell(xy, "", definition)
