"""`%%tilekernel --lang cpp` cells, and the kernel record every cell run leaves for the inspector."""
import pytest
from IPython.utils.capture import capture_output

from tileworkbench.magic import DIAGNOSTICS_MIME, KERNEL_MIME
from tileworkbench.magic.diagnostics import TileKernelCellError
from tileworkbench.runtime import device

from .conftest import ADD

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")

SCALE = '''#include <tileworkbench/tile.cuh>
extern "C" __global__ void scale(const float* x, float* y, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
'''


def run(shell, line, body):
    with capture_output() as captured:
        shell.run_cell_magic("tilekernel", line, body)
    return captured


def records(captured) -> list[dict]:
    return [o.data[KERNEL_MIME] for o in captured.outputs if KERNEL_MIME in o.data]


def test_a_cpp_cell_defines_a_kernel_and_shows_what_the_compiler_made_of_it(shell):
    out = run(shell, "--lang cpp --show resources", SCALE)
    assert repr(shell.user_ns["scale"]) == "<C++ tile kernel scale(const float* x, float* y, int n, float a)>"
    assert "parameters (as compiled): x: .u64, y: .u64, n: .u32, a: .f32" in out.stdout
    assert "theoretical occupancy with 256-thread blocks:" in out.stdout
    (record,) = records(out)
    assert record["lang"] == "cpp" and record["signature"] == "(const float* x, float* y, int n, float a)"
    (spec,) = record["specializations"]
    assert spec["error"] is None and spec["threads"] == 256 and spec["registers"] > 0 and "y[i] = a * x[i]" in spec["cuda"]


def test_a_cpp_compile_error_is_a_diagnostic_at_the_cell_line(shell):
    with capture_output() as out, pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", "--lang cpp", SCALE.replace("a * x[i]", "a * xs[i]"))
    (bundle,) = [o.data[DIAGNOSTICS_MIME] for o in out.outputs if DIAGNOSTICS_MIME in o.data]
    assert bundle["diagnostics"] == [{"line": 5, "col": 25, "endLine": 5, "endCol": 27, "kind": "NvrtcError",
                                      "message": 'identifier "xs" is undefined', "severity": "error"}]
    assert info.value._render_traceback_()[1:3] == ["  cell line 5, in scale:", "     5 |   if (i < n) y[i] = a * xs[i];"]


TEMPLATE = '''template <typename T, int TILE>
__global__ void scale(const T* x, T* y, int n, T a) {
  int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
'''


def test_a_cpp_cell_names_the_template_instance_it_compiles_on_its_header(shell):
    out = run(shell, '--lang cpp "scale<float, 256>" --block 128 --show resources', TEMPLATE)
    assert repr(shell.user_ns["scale"]) == "<C++ tile kernel scale<float, 256>(const T* x, T* y, int n, T a)>"
    assert out.stdout.startswith("scale<float, 256> (_Z5scaleIfLi256EEvPKT_PS0_iS0_ in the cubin) for ")
    assert "theoretical occupancy with 128-thread blocks" in out.stdout  # the cell's --block, before any launch
    (record,) = records(out)
    assert record["kernel"] == "scale<float, 256>" and record["specializations"][0]["threads"] == 128
    with capture_output() as out, pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", '--lang cpp "scale<float, 2.5>"', TEMPLATE)
    (bundle,) = [o.data[DIAGNOSTICS_MIME] for o in out.outputs if DIAGNOSTICS_MIME in o.data]
    (diagnostic,) = bundle["diagnostics"]
    assert (diagnostic["line"], diagnostic["col"], diagnostic["endCol"]) == (1, 26, 43)  # the name, in quotes
    assert diagnostic["message"].startswith("the kernel name `scale<float, 2.5>`: ")
    assert info.value._render_traceback_()[2] == '     1 | %%tilekernel --lang cpp "scale<float, 2.5>"'
    with capture_output(), pytest.raises(TileKernelCellError, match="`scale` is a function template"):
        shell.run_cell_magic("tilekernel", "--lang cpp", TEMPLATE)


def test_cpp_cells_refuse_what_needs_the_tile_language_and_launches_need_grid_block_args(shell):
    for line, message in [("--lang cpp --viz", "--viz needs the tile language"),
                          ("--lang cpp --show ir", "--show ir needs the tile language"),
                          ("--lang cpp --grid 4 --args 'a, b, 8, 2.0'", "needs --block"),
                          ("--block 128", "--block and --smem are for --lang cpp cells")]:
        with capture_output(), pytest.raises(TileKernelCellError, match=message):
            shell.run_cell_magic("tilekernel", line, SCALE if "cpp" in line else ADD)


@pytest.mark.skipif(device.gpu_available(), reason="checks the message shown without a GPU")
def test_without_a_gpu_a_cpp_launch_says_it_needs_one(shell):
    with capture_output(), pytest.raises(TileKernelCellError, match="run on a GPU only, and there is none here"):
        shell.run_cell_magic("tilekernel", "--lang cpp --grid 1 --block 256 --args 'a, b, 8, 2.0'", SCALE)


def test_every_tile_cell_run_leaves_a_record_of_its_kernel(shell, tmp_path, monkeypatch):
    from tileworkbench.runtime import cache
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_default", None)
    (record,) = records(run(shell, "", ADD))
    assert record["kernel"] == "add" and record["lang"] == "python" and record["specializations"] == []
    assert record["signature"] == "(a, b, c, TILE: ct.Constant[int])"
    out = run(shell, '--grid "(2,)" --args "a, b, c, 4" --show resources', ADD)
    (record,) = records(out)
    (spec,) = record["specializations"]
    assert spec["label"] == "a: array<float32, 1d>, b: array<float32, 1d>, c: array<float32, 1d>, TILE=4"
    assert spec["threads"] >= 32 and spec["registers"] > 0 and 0 < spec["occupancy"] <= 1
    assert 'extern "C" __global__' in spec["cuda"] and record["arch"] == device.target_arch(None)
    assert record["timing"] is None
    text = next(o.data["text/plain"] for o in out.outputs if KERNEL_MIME in o.data)
    assert text.startswith(f"tile kernel add: 1 specialization; {record['arch']}: {spec['threads']} threads")


def test_an_interpreter_run_records_its_specialization_without_compiling_it(shell, tmp_path, monkeypatch):
    from tileworkbench.runtime import cache, nvrtc
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_default", None)
    monkeypatch.setattr(nvrtc, "_compile", lambda *a: pytest.fail("the record ran NVRTC"))
    (record,) = records(run(shell, '--grid "(2,)" --args "a, b, c, 4" --cpu', ADD))
    (spec,) = record["specializations"]
    assert spec["error"] is None and "threads" not in spec
    assert spec["pending"].startswith(f"not compiled for {record['arch']}: the run used the interpreter only")
    monkeypatch.undo()
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_default", None)
    (record,) = records(run(shell, '--grid "(2,)" --args "a, b, c, 4" --cpu --show resources', ADD))
    assert record["specializations"][0]["registers"] > 0  # what the run compiled anyway


def test_a_failing_run_still_leaves_the_record_of_the_redefined_kernel(shell):
    run(shell, '--grid "(2,)" --args "a, b, c, 4"', ADD)
    with capture_output() as out, pytest.raises(TileKernelCellError):
        shell.run_cell_magic("tilekernel", '--grid "(2,)" --args "a, b, c, 3"', ADD)  # TILE=3: not a power of 2
    (record,) = records(out)
    assert record["specializations"] == []  # a new definition: nothing specialized without error


def test_a_measured_launch_becomes_the_records_last_timing(shell, monkeypatch):
    from tileworkbench.magic import inspector
    run(shell, "", ADD)
    kernel = shell.user_ns["add"]
    kernel.last_timing = {"median_ms": 0.0123, "p10_ms": 0.012, "p90_ms": 0.013, "repetitions": 100,
                          "device": "NVIDIA H100 80GB HBM3", "grid": [2, 1, 1], "specialization": "TILE=4", "gbs": 10.0}
    bundle = inspector.kernel_bundle(kernel, "sm_90")
    assert bundle[KERNEL_MIME]["timing"]["median_ms"] == 0.0123
    assert bundle["text/plain"].endswith("; last timing 12.3 us")


@pytest.fixture
def without_nvrtc(monkeypatch, tmp_path):
    """NVRTC cannot be loaded, and nothing compiled is cached: as on a machine without the wheels."""
    from tileworkbench.runtime import cache, nvrtc

    def unavailable():
        raise nvrtc.NvrtcUnavailableError(f"NVRTC is not available (ModuleNotFoundError: No module named "
                                          f"'cuda'). Install it with `{nvrtc.INSTALL_HINT}`")
    monkeypatch.setattr(nvrtc, "_load", unavailable)
    monkeypatch.setattr(cache, "_default", cache.CompileCache(str(tmp_path)))


@pytest.mark.parametrize("line, body", [("--lang cpp --show resources", SCALE),
                                        ('--args "a, b, c, 8" --show resources', ADD),
                                        ('--args "a, b, c, 8" --show ptx', ADD),
                                        ('--grid "(2,)" --args "a, b, c, 8" --bench', ADD)])
def test_without_nvrtc_a_compiling_cell_says_so_in_one_line_with_the_install_command(shell, without_nvrtc, line, body):
    with capture_output() as out, pytest.raises(TileKernelCellError) as info:
        shell.run_cell_magic("tilekernel", line, body)
    assert info.value._render_traceback_() == [(
        "Compiling the kernel needs NVRTC, the CUDA compiler. NVRTC is not available (ModuleNotFoundError: No "
        "module named 'cuda'). Install it with `pip install cuda-bindings nvidia-cuda-nvrtc nvidia-cuda-runtime`")]
    assert records(out), "the kernel's record is still published"


def test_a_run_stopped_by_an_error_says_where_and_why_in_its_record(shell):
    with capture_output() as out, pytest.raises(TileKernelCellError):
        shell.run_cell_magic("tilekernel", '--grid "(2,)" --args "a, b, c, 3"', ADD)   # TILE=3: not a power of 2
    (record,) = records(out)
    assert record["specializations"] == [] and record["specialization_count"] == 0
    assert record["stopped"].startswith("cell line 4: TileTypeError: Tile shape (3,) must have power-of-two")
    text = next(o.data["text/plain"] for o in out.outputs if KERNEL_MIME in o.data)
    assert "0 specializations; the run stopped at cell line 4: TileTypeError" in text
    (record,) = records(run(shell, '--grid "(2,)" --args "a, b, c, 4"', ADD))
    assert record["stopped"] is None and record["specialization_count"] == 1


TRANSPOSE_TILES = '''def transpose_tiles(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (j, i), ct.transpose(ct.load(x, (i, j), (TM, TN))))
'''


def test_after_a_sweep_the_record_counts_every_specialization_and_marks_the_best(shell, tmp_path, monkeypatch):
    import numpy as np

    from tileworkbench.magic import inspector
    from tileworkbench.runtime import cache
    monkeypatch.setattr(cache, "_default", cache.CompileCache(str(tmp_path)))
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    shell.user_ns.update(m=np.zeros((64, 64), np.float32), mt=np.zeros((64, 64), np.float32))
    (record,) = records(run(shell, '--grid "(64 // TM, 64 // TN)" --args "m, mt, TM, TN" --sweep "TM=8,16,32 '
                                   'TN=8,16,32" --arch sm_90 --workers 1', TRANSPOSE_TILES))
    specs, sweep = record["specializations"], record["sweep"]
    assert record["specialization_count"] == 9 and len(specs) == inspector.MAX_SPECIALIZATIONS
    assert (sweep["configurations"], sweep["ok"], sweep["timed"]) == (9, 9, False)
    (best,) = [s for s in specs if s.get("best")]
    assert best["label"] == sweep["best"]["specialization"]
    assert best["label"].endswith(sweep["best"]["config"].replace(" ", ", "))   # "... TM=16, TN=32"
    assert all(best["occupancy"] >= s["occupancy"] for s in specs)
    assert f"highest theoretical occupancy, {best['occupancy']:.0%}" in sweep["best"]["by"]
    text = inspector.summary(record)
    assert f"9 specializations; best of 9 configurations: {sweep['best']['config']}" in text
    assert f"{best['threads']} threads, {best['registers']} registers" in text   # the best's, not the last's
    kernel = shell.user_ns["transpose_tiles"]   # a best older than the most recent ones stays listed
    kernel.last_sweep["best"]["specialization"] = inspector.specialization_label(kernel.specializations[0])
    listed = inspector.kernel_bundle(kernel, "sm_90")[KERNEL_MIME]["specializations"]
    assert len(listed) == inspector.MAX_SPECIALIZATIONS and listed[0].get("best")


def test_a_record_is_updated_in_place_when_a_later_cell_runs_its_kernel(shell):
    with capture_output() as defined:
        shell.run_cell(f"%%tilekernel\n{ADD}")
    (shown,) = [o for o in defined.outputs if KERNEL_MIME in o.data]
    assert shown.data[KERNEL_MIME]["specialization_count"] == 0
    with capture_output() as later:
        shell.run_cell("import tileworkbench.tile\ntrace = tileworkbench.tile.interpret(add, (3,), (a, b, c, 4), trace=True)")
    (updated,) = [o for o in later.outputs if KERNEL_MIME in o.data]
    assert updated.update and updated.transient["display_id"] == shown.transient["display_id"]
    assert updated.data[KERNEL_MIME]["specialization_count"] == 1
    assert updated.data["text/plain"].startswith("tile kernel add: 1 specialization")
    with capture_output() as again:   # nothing changed: nothing is sent
        shell.run_cell("x = 1")
    assert not [o for o in again.outputs if KERNEL_MIME in o.data]


def test_a_redefined_kernel_no_longer_updates_the_old_record(shell):
    with capture_output() as first:
        shell.run_cell(f"%%tilekernel\n{ADD}")
    with capture_output() as second:
        shell.run_cell(f"%%tilekernel\n{ADD}")
    old, new = ([o.transient["display_id"] for o in out.outputs if KERNEL_MIME in o.data][0] for out in (first, second))
    with capture_output() as later:
        shell.run_cell("ct_launch = __import__('tileworkbench.tile', fromlist=['launch']).launch\n"
                       "ct_launch(None, (3,), add, (a, b, c, 4))")
    assert [o.transient["display_id"] for o in later.outputs if KERNEL_MIME in o.data] == [new] and old != new
