"""%%tilekernel in a real IPython shell: definition, options, errors at cell lines, diagnostics."""
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from tileworkbench.magic import DIAGNOSTICS_MIME
from tileworkbench.magic.diagnostics import TileKernelCellError

ADD = '''def add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
'''


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tileworkbench")
    ip.user_ns.update(np=np, a=np.arange(10, dtype=np.float32), b=np.ones(10, np.float32), c=np.zeros(10, np.float32))
    yield ip
    ip.user_ns.clear()


def cell(shell, line, body):
    with capture_output() as captured:
        result = shell.run_cell_magic("tilekernel", line, body)
    return result, captured


def test_the_cell_defines_a_kernel_in_the_namespace_and_redefines_it(shell):
    cell(shell, "", ADD)
    first = shell.user_ns["add"]
    assert type(first).__name__ == "Kernel" and first.name == "add"
    cell(shell, "", ADD.replace("+", "-"))
    assert shell.user_ns["add"] is not first


def test_grid_and_args_launch_on_the_interpreter(shell):
    cell(shell, '--grid "(ct.cdiv(10, 4),)" --args "a, b, c, 4"', ADD)
    np.testing.assert_array_equal(shell.user_ns["c"], np.arange(10) + 1)


def test_show_ir_and_cuda_print_the_code(shell):
    _, out = cell(shell, '--args "a, b, c, 4" --show ir --show cuda', ADD)
    assert "kernel add(%a: array<float32, 1d>" in out.stdout
    assert 'extern "C" __global__ void __launch_bounds__' in out.stdout
    assert "// line 4: ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))" in out.stdout


def test_errors_point_at_the_cells_line_with_a_caret_and_a_diagnostics_bundle(shell):
    body = ADD.replace("(TILE,)) + ct.load(b", "(3,)) + ct.load(b")
    with capture_output() as out, pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", '--grid "(3,)" --args "a, b, c, 4"', body)
    text = info.value._render_traceback_()
    assert text[0].startswith("TileValueError: Tile shape (3,) must have power-of-two dimensions")
    assert text[1] == "  cell line 4, in add:"
    assert text[2].startswith("     4 |     ct.store(c, (i,), ct.load(a, (i,), (3,))")
    assert text[3].index("^") == text[2].index("(3,)") and text[3].count("^") == 4
    bundle = next(o.data for o in out.outputs if DIAGNOSTICS_MIME in o.data)[DIAGNOSTICS_MIME]
    assert bundle["kernel"] == "add"
    (d,) = bundle["diagnostics"]
    assert (d["line"], d["endLine"], d["kind"]) == (4, 4, "TileValueError")
    assert body.splitlines()[2][d["col"] - 1:d["endCol"] - 1] == "(3,)"


def test_python_syntax_errors_are_reported_at_the_cell_line(shell):
    with capture_output(), pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", "", "def broken(a):\n    x = (1,\n")
    assert info.value.text.startswith("TileSyntaxError: invalid Python")
    assert "cell line" in info.value.text


def test_the_kernel_can_be_named_among_several_functions(shell):
    body = "def twice(t):\n    return t * 2\n\n" + ADD.replace("ct.load(a, (i,), (TILE,)) +", "twice(ct.load(a, (i,), (TILE,))) +")
    body += "\ndef unused(x):\n    pass\n"
    cell(shell, 'add --grid "(3,)" --args "a, b, c, 4"', body)
    np.testing.assert_array_equal(shell.user_ns["c"], np.arange(10) * 2 + 1)
    assert callable(shell.user_ns["twice"])


def test_options_that_need_arguments_say_so(shell):
    with capture_output(), pytest.raises(TileKernelCellError, match="needs the kernel's arguments"):
        shell.run_cell_magic("tilekernel", "--show ir", ADD)


def test_help_documents_every_option(shell):
    doc = shell.find_cell_magic("tilekernel").__doc__
    for option in ("--cpu", "--arch", "--show", "--grid", "--args", "--viz", "--bench", "--sweep"):
        assert option in doc


def test_sweep_compiles_every_configuration_and_shows_the_explorer(shell):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    shell.user_ns.update(x=np.zeros((64, 64), np.float32), y=np.zeros((64, 64), np.float32))
    body = '''def tr(x, y, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (T, T), order="F"))
'''
    view, _ = cell(shell, '--grid "(64 // T, 64 // T)" --args "x, y, T" --sweep "T=16,32,64" --arch sm_80', body)
    assert type(view).__name__ == "SweepView"
    assert [r["T"] for r in view.data["rows"]] == [16, 32, 64]
    assert all(r["status"] == "ok" and r["registers"] > 0 for r in view.data["rows"])


def test_viz_runs_the_interpreter_with_tracing_and_shows_the_views(shell):
    shell.user_ns.update(x=np.arange(60, dtype=np.float32).reshape(6, 10), y=np.zeros((6, 10), np.float32))
    body = '''def copy(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 4), padding_mode=ct.PaddingMode.ZERO))
'''
    _, out = cell(shell, '--grid "(2, 3)" --args "x, y" --viz', body)
    shown = [o.data.get("text/plain", "") for o in out.outputs]
    assert any("CoverageView" in s for s in shown) and sum("TileSpaceView" in s for s in shown) == 2
    assert all("image/svg+xml" in o.data for o in out.outputs)
    np.testing.assert_array_equal(shell.user_ns["y"], shell.user_ns["x"])


def test_bench_without_a_gpu_reports_compile_time_resources_and_says_timings_need_one(shell):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    _, out = cell(shell, '--grid "(3,)" --args "a, b, c, 4" --bench', ADD)
    assert "registers/thread" in out.stdout and "timings need a GPU" in out.stdout
