"""%%tilekernel in a real IPython shell: definition, options, errors at cell lines, diagnostics."""
import dataclasses
import math
import re

import numpy as np
import pytest
from IPython.utils.capture import capture_output

import tileworkbench.tile as ct
from tileworkbench.magic import DIAGNOSTICS_MIME, KERNEL_MIME
from tileworkbench.magic.diagnostics import SOURCE_CHARS, TileKernelCellError, source_window
from tileworkbench.runtime import device

from .conftest import ADD


def cell(shell, line, body):
    with capture_output() as captured:
        result = shell.run_cell_magic("tilekernel", line, body)
    return result, captured


def test_the_cell_defines_a_kernel_in_the_namespace_and_redefines_it(shell):
    cell(shell, "", ADD)
    first = shell.user_ns["add"]
    assert isinstance(first, ct.kernel) and first.name == "add"
    cell(shell, "", ADD.replace("+", "-"))
    assert shell.user_ns["add"] is not first


def test_grid_and_args_launch_on_the_interpreter(shell):
    cell(shell, '--grid "(ct.cdiv(10, 4),)" --args "a, b, c, 4"', ADD)
    np.testing.assert_array_equal(shell.user_ns["c"], np.arange(10) + 1)


def code_shown(out) -> list[str]:
    """The code outputs (--show ir/cuda/ptx/log) of a cell, as text."""
    return [o.data["text/plain"] for o in out.outputs if 'class="tw-code"' in o.data.get("text/html", "")]


def test_show_ir_and_cuda_show_the_code(shell):
    _, out = cell(shell, '--args "a, b, c, 4" --show ir --show cuda', ADD)
    ir, cuda = code_shown(out)
    assert "kernel add(%a: array<float32, 1d>" in ir
    assert 'extern "C" __global__ void __launch_bounds__' in cuda
    assert "// line 4: ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))" in cuda


def test_code_is_shown_unwrapped_so_that_no_token_or_comment_is_cut(shell):
    _, out = cell(shell, '--args "a, b, c, 4" --show ir', ADD)
    (html,) = [o.data["text/html"] for o in out.outputs if "tw-code" in o.data.get("text/html", "")]
    assert html.startswith('<pre class="tw-code" style="white-space:pre;overflow-x:auto;')
    assert "# line 4" in html and "%a: array&lt;float32, 1d&gt;" in html   # escaped, whole


def test_errors_point_at_the_cells_line_with_a_caret_and_a_diagnostics_bundle(shell):
    body = ADD.replace("(TILE,)) + ct.load(b", "(3,)) + ct.load(b")
    with capture_output() as out, pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", '--grid "(3,)" --args "a, b, c, 4"', body)
    text = info.value._render_traceback_()
    assert text[0].startswith("TileTypeError: Tile shape (3,) must have power-of-two dimensions")
    assert text[1] == "  cell line 4, in add:"
    assert text[2].startswith("     4 |     ct.store(c, (i,), ct.load(a, (i,), (3,))")
    assert text[3].index("^") == text[2].index("(3,)") and text[3].count("^") == 4
    bundle = next(o.data for o in out.outputs if DIAGNOSTICS_MIME in o.data)[DIAGNOSTICS_MIME]
    assert bundle["kernel"] == "add"
    (d,) = bundle["diagnostics"]
    assert (d["line"], d["endLine"], d["kind"]) == (4, 4, "TileTypeError")
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
    for option in ("--cpu", "--arch", "--show", "--grid", "--args", "--viz", "--bench", "--ncu", "--sweep",
                   "--workers", "--executor"):
        assert option in doc


TRANSPOSE = '''def tr(x, y, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (T, T), order="F"))
'''
SWEEP = '--grid "(64 // T, 64 // T)" --args "x, y, T" --sweep "T=16,32,64" --arch sm_80'


def shown_sweep(out):
    """The sweep view the cell showed, and its text as first shown and as finally updated."""
    from ipywidgets.widgets.widget import _instances
    pictures = [o.data["text/plain"] for o in out.outputs if o.data.get("text/plain", "").startswith("SweepView(")]
    (widget,) = [o.data for o in out.outputs if "application/vnd.jupyter.widget-view+json" in o.data]
    return _instances[widget["application/vnd.jupyter.widget-view+json"]["model_id"]], pictures[0], pictures[-1]


@pytest.fixture
def sweep_shell(shell, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    shell.user_ns.update(x=np.zeros((64, 64), np.float32), y=np.zeros((64, 64), np.float32))
    return shell


def test_sweep_shows_the_explorer_as_it_starts_and_updates_it_as_configurations_finish(sweep_shell):
    result, out = cell(sweep_shell, SWEEP + " --workers 1", TRANSPOSE)
    view, first, last = shown_sweep(out)
    assert result is None and type(view).__name__ == "SweepView"     # shown once, not again as the result
    assert first.startswith("SweepView(tr: 1 of 3 configurations ok")
    assert last.startswith("SweepView(tr: 3 of 3 configurations ok")
    assert [r["T"] for r in view.data["rows"]] == [16, 32, 64]
    assert all(r["status"] == "ok" and r["registers"] > 0 for r in view.data["rows"])


def test_sweep_runs_on_an_executor_or_a_dask_style_client_named_in_the_notebook(sweep_shell):
    from concurrent.futures import ThreadPoolExecutor

    class Client:   # what the magic takes from a Dask client: its executor
        def get_executor(self):
            return pool
    with ThreadPoolExecutor(2) as pool:
        sweep_shell.user_ns.update(pool=pool, client=Client())
        for name in ("pool", "client"):
            _, out = cell(sweep_shell, SWEEP + f" --executor {name}", TRANSPOSE)
            _, _, last = shown_sweep(out)
            assert last.startswith("SweepView(tr: 3 of 3 configurations ok")


@pytest.mark.parametrize("options, message", [
    ("--executor nothing", "--executor 'nothing': NameError"),
    ("--executor x", "--executor: a concurrent.futures.Executor or a Dask Client is needed, not ndarray"),
    ("--workers 0", "--workers 0: at least one worker is needed"),
])
def test_sweep_options_that_cannot_work_say_why(sweep_shell, options, message):
    with capture_output(), pytest.raises(TileKernelCellError, match=re.escape(message)):
        sweep_shell.run_cell_magic("tilekernel", SWEEP + " " + options, TRANSPOSE)


def test_workers_and_executor_need_a_sweep(shell):
    with capture_output(), pytest.raises(TileKernelCellError, match="--workers and --executor say where a --sweep"):
        shell.run_cell_magic("tilekernel", '--grid "(3,)" --args "a, b, c, 4" --workers 2', ADD)


def test_viz_runs_the_interpreter_with_tracing_and_shows_the_views(shell):
    shell.user_ns.update(x=np.arange(60, dtype=np.float32).reshape(6, 10), y=np.zeros((6, 10), np.float32))
    body = '''def copy(x, y):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.load(x, (i, j), (4, 4), padding_mode=ct.PaddingMode.ZERO))
'''
    _, out = cell(shell, '--grid "(2, 3)" --args "x, y" --viz', body)
    views = [o for o in out.outputs if KERNEL_MIME not in o.data]
    shown = [o.data.get("text/plain", "") for o in views]
    assert any("CoverageView" in s for s in shown) and sum("TileSpaceView" in s for s in shown) == 2
    assert any("StepperView(copy, block (1, 0), op 1 of" in s for s in shown)
    # each view: its static picture, then the live widget
    widget = "application/vnd.jupyter.widget-view+json"
    assert [("image/svg+xml" in o.data, widget in o.data) for o in views] == [(True, False), (False, True)] * 4
    np.testing.assert_array_equal(shell.user_ns["y"], shell.user_ns["x"])


def test_bench_without_a_gpu_shows_the_compile_time_report_for_the_chosen_arch(shell, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    view, _ = cell(shell, '--grid "(3,)" --args "a, b, c, 4" --bench --arch sm_80', ADD)
    assert type(view).__name__ == "LaunchReportView"
    d = view.data
    assert d["arch"] == "sm_80" and d["device"].startswith("A100") and not d["timed"]
    assert d["message"].startswith("timings need a GPU") and d["resources"]["registers"] > 0
    assert d["occupancy"]["limiter"] and d["work"]["bytes"] == 3 * 3 * 4 * 4   # 3 blocks, 3 arrays, 4-element tiles
    bundle = view._repr_mimebundle_()[0]
    text = bundle["text/plain"]
    assert text.startswith("Launch report: add") and "timings need a GPU" in text
    assert f"{d['resources']['registers']} registers/thread" in text and "sm_80" in text
    assert "timings need a GPU" in bundle["image/svg+xml"]


def test_bench_on_a_gpu_measures_device_copies_of_numpy_arguments(shell, monkeypatch):
    from tileworkbench.profile import DevicePeaks, Timing
    from tileworkbench.widgets import launch_report
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    calls = []

    class OnDevice:
        def __init__(self, a):
            self.host = a

    def benchmark(kernel, grid, args, **options):
        calls.append((kernel.name, grid, args))
        host = tuple(a.host if isinstance(a, OnDevice) else a for a in args)
        report = launch_report.compile_report(kernel, grid, host, "sm_90")
        return dataclasses.replace(report, timing=Timing(0.004, 0.0035, 0.005, 100, 10, True),
                                   driver_blocks_per_sm=report.occupancy.blocks_per_sm,
                                   peaks=DevicePeaks("NVIDIA H100 80GB HBM3", "sm_90", 132, 1980.0, 3352.0, 989.0, 67.0))
    monkeypatch.setattr(device, "unavailable_reason", lambda: None)
    monkeypatch.setattr(device, "target_arch", lambda arch=None: arch or "sm_90")  # the simulated GPU's
    monkeypatch.setattr(device, "to_device", lambda a: OnDevice(a) if isinstance(a, np.ndarray) else a)
    monkeypatch.setattr(launch_report, "benchmark", benchmark)
    view, _ = cell(shell, '--grid "(3,)" --args "a, b, c, 4" --bench', ADD)
    ((name, grid, args),) = calls
    assert name == "add" and grid == (3,)
    assert [a.host is shell.user_ns[n] for a, n in zip(args[:3], "abc")] == [True] * 3 and args[3] == 4
    d = view.data
    assert d["timed"] and d["timing"]["median_ms"] == 0.004 and d["device"] == "NVIDIA H100 80GB HBM3"
    assert d["occupancy"]["agrees"] is True and d["message"] == ""
    text = view._repr_mimebundle_()[0]["text/plain"]
    assert "4.00 us median" in text and "timings need a GPU" not in text


@pytest.mark.parametrize("line, message", [
    ('--grid "(0,)" --args "a, b, c, 4"', r"ArgumentValueError: Grid\[0\] must be a positive integer, got 0"),
    ('--grid "(1,)" --args "a, b"', (r"ArgumentTypeError: Kernel expects 4 arguments but 2 were given: "
                                     r"add\(a, b, c, TILE\) is missing c, TILE")),
    ('--grid "(1,)" --args "a, b, \'x\', 4"', r"Invalid kernel argument #2: Objects of type 'str'"),
    ('--grid "(1,)" --args "a, b, np.zeros(10, np.clongdouble), 4"', r"dtype complex256 is not a tile dtype"),
    ('--arch banana --args "a, b, c, 4" --show resources', r"--arch 'banana' is not a GPU architecture"),
    ('--arch sm_999 --args "a, b, c, 4" --show resources', r"--arch 'sm_999' is not a GPU architecture"),
    ('--sweep "TILE=" --grid "(1,)" --args "a, b, c, TILE"', r"--sweep expects NAME=v1,v2,\.\.\. items"),
    ('--sweep "TILE=abc" --grid "(1,)" --args "a, b, c, TILE"', (r"--sweep 'TILE=abc': each value must be a "
                                                                r"Python literal")),
])
def test_bad_options_and_arguments_are_one_message_without_a_stack(shell, line, message):
    with capture_output(), pytest.raises(TileKernelCellError, match=message) as info:
        shell.run_cell_magic("tilekernel", line, ADD)
    rendered = "\n".join(info.value._render_traceback_())
    assert "Traceback" not in rendered and "tileworkbench/" not in rendered


def test_a_read_only_output_is_an_error_at_the_cells_store_line(shell):
    shell.user_ns["frozen"] = np.zeros(10, np.float32)
    shell.user_ns["frozen"].flags.writeable = False
    with capture_output(), pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", '--grid "(3,)" --args "a, b, frozen, 4"', ADD)
    text = info.value._render_traceback_()
    assert text[0] == "TileValueError: store into `c`: the NumPy array is read-only (pass a writable array, e.g. a copy)"
    assert text[1] == "  cell line 4, in add:"


def test_an_error_in_a_long_line_shows_the_part_around_it_so_the_caret_stays_under_it(shell):
    long_line = ("    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) * 2.0 + ct.load(b, (i,), (TILE,)) * 3.0 + "
                 "ct.load(a, (i,), (TILE,)) * ct.load(b, (i,), (TILE,)) + math.sqrt(ct.load(a, (i,), (TILE,))))")
    body = ADD.splitlines()[0] + "\n    i = ct.bid(0)\n" + long_line + "\n"
    shell.user_ns["math"] = math
    with capture_output(), pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", '--grid "(2,)" --args "a, b, c, 4"', body)
    source, caret = info.value._render_traceback_()[2:4]
    shown = source.split(" | ", 1)[1]
    assert len(shown) <= SOURCE_CHARS + 2 and shown.startswith("\u2026") and shown.endswith("TILE,))))")
    start = caret.index("^")
    assert source[start:start + caret.count("^")] == "math.sqrt(ct.load(a, (i,), (TILE,)))"   # the call, underlined


def test_the_source_window_keeps_a_short_line_whole_and_cuts_a_long_one_with_ellipses():
    assert source_window("    x = a + b", 8, 9) == ("    x = a + b", 8, 1)
    line = "    y = " + " + ".join(f"t{k}" for k in range(60))
    col = line.index("t30")
    shown, at, width = source_window(line, col, col + 3, 40)
    assert shown[0] == shown[-1] == "\u2026" and len(shown) == 42 and shown[at:at + width] == "t30"
    shown, at, width = source_window(line, 4, 5, 40)   # at the start: the indentation goes, no ellipsis before
    assert shown.startswith("y = t0") and shown.endswith("\u2026") and (at, width) == (0, 1)


def doubled(t):
    """A helper the cell's kernel calls, defined in this file."""
    return t * 2.0


def test_the_stepper_knows_the_cell_lines_of_a_kernel_defined_in_a_cell(shell):
    from tileworkbench.tile import interpret
    from tileworkbench.widgets.stepper import StepperView
    shell.user_ns["doubled"] = doubled
    body = '''def triple(t):
    return t * 3.0

def scale(a, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(a, (i,), (TILE,))
    ct.store(c, (i,), ct.maximum(triple(t), doubled(t)))  # no add: each product is a step of its own
'''
    cell(shell, "", body)
    c = shell.user_ns["c"]
    view = StepperView.from_trace(interpret(shell.user_ns["scale"], (2,), (shell.user_ns["a"], c, 4), values=True))
    # line 1 is the %%tilekernel header, the magic's arguments, which it is not given as code
    lines = [""] + body.splitlines()
    shown = {}
    for k, step in enumerate(view._steps):
        view.step = k
        shown[step.op, step.source.strip()] = view.data["cell"]
    assert all(c["lines"] == lines for c in shown.values())
    assert shown["load", "t = ct.load(a, (i,), (TILE,))"]["line"] == 7
    assert shown["mul", "return t * 3.0"]["line"] == 3                  # a helper of the same cell
    assert shown["mul", "return t * 2.0"]["line"] == 0                  # a helper from a file: not in the cell
    assert shown["store", "ct.store(c, (i,), ct.maximum(triple(t), doubled(t)))  # no add: each product is a step of its own"]["line"] == 8
    assert all(lines[c["line"] - 1].strip() == source for (_, source), c in shown.items() if c["line"])


def test_ncu_where_ncu_is_absent_says_so_in_the_cell_and_the_report(shell, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    from tileworkbench.profile import ncu
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    view, out = cell(shell, '--grid "(3,)" --args "a, b, c, 4" --ncu --arch sm_80', ADD)
    assert out.stdout.startswith("--ncu: Nsight Compute (ncu) is not installed here") and out.stdout.count("\n") == 1
    assert view.data["measured"]["message"].startswith("Nsight Compute (ncu) is not installed here")
    assert "Nsight Compute (ncu) is not installed" in view._repr_mimebundle_()[0]["text/plain"]


def test_ncu_needs_a_grid_and_a_tile_kernel(shell):
    with pytest.raises(TileKernelCellError, match="--ncu need --grid"):
        cell(shell, '--args "a, b, c, 4" --ncu', ADD)
    with pytest.raises(TileKernelCellError, match="--ncu profiles a tile kernel"):
        cell(shell, '--args "a" --ncu', "k = cupy.ElementwiseKernel('T x', 'T y', 'y = x', 'copy')")


NOTHING = "def nothing(a, TILE: ct.Constant[int]):\n    pass\n"


@pytest.mark.parametrize("line, body, message", [
    ('--viz --grid "(2,)" --args "a, 4"', NOTHING,
     "--viz: nothing executed no tile op in any block (no load, store or computation), so there is nothing to show"),
    ('--sweep "NOPE=1,2" --grid "(1,)" --args "a, b, c, 4"', ADD,
     "--sweep: NOPE appears in neither --grid nor --args, so every configuration would be the same launch"),
    ('--sweep "TILE=1e400" --grid "(1,)" --args "a, b, c, TILE"', ADD, "--sweep 'TILE=1e400': inf is not a finite number"),
    ('--sweep "TILE=4,100000000000000000000000" --grid "(1,)" --args "a, b, c, TILE"', ADD,
     "--sweep 'TILE=4,100000000000000000000000': 100000000000000000000000 does not fit in 64 bits"),
    ('--grid "()" --args "a, b, c, 4"', ADD, "ArgumentValueError: Grid must have 1 to 3 dimensions, got 0: ()"),
    ('--lang cpp --block "(2**40,)" --show cuda', "__global__ void k(float* x) { x[0] = 1; }\n",
     "--block (1099511627776,): dimension x is 1099511627776, more than CUDA's limit of 1024"),
    ('--lang cpp --block "(64, 32)" --show cuda', "__global__ void k(float* x) { x[0] = 1; }\n",
     "--block (64, 32): 2048 threads, more than CUDA's limit of 1024 threads per block"),
])
def test_hostile_option_values_are_one_message(shell, line, body, message):
    with capture_output(), pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", line, body)
    assert info.value.text.startswith(message)


def test_a_sweep_on_a_shut_down_executor_is_one_message(sweep_shell):
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(1)
    pool.shutdown()
    sweep_shell.user_ns["pool"] = pool
    with capture_output(), pytest.raises(TileKernelCellError, match=re.escape(
            "--executor: the executor does not run jobs (RuntimeError: cannot schedule new futures after shutdown)")):
        sweep_shell.run_cell_magic("tilekernel", SWEEP + " --executor pool", TRANSPOSE)


def test_without_a_gpu_a_sweep_whose_grid_raises_counts_no_configuration_ok(sweep_shell):
    line = '--grid "T // 0" --args "x, y, T" --sweep "T=16,32,64" --arch sm_80 --workers 1'
    _, out = cell(sweep_shell, line, TRANSPOSE)
    view, _, last = shown_sweep(out)
    assert last.startswith("SweepView(tr: 0 of 3 configurations ok")
    assert {(r["status"], r["reason"]) for r in view.data["rows"]} == {("argument error", "ZeroDivisionError: integer division or modulo by zero")}
