"""The CUDA Tile C++ kernels of benchmarks/tile_cpp.py (RMSNorm, LayerNorm, softmax, SwiGLU, GeGLU, RoPE,
GEMM f16/bf16/tf32), written in NVIDIA's usual style, compile without a GPU, the tile compiler kept
the operations each is written with, and a launch with the benchmark's kind of arguments (arrays,
scalars, a grid) binds and writes each output element once (traced on the CPU). Their Python twins
(the benchmark's other column) run on the interpreter and match NumPy."""
import re

import ml_dtypes
import numpy as np
import pytest

import tileworkbench.tile as ct
from benchmarks.tile_cpp import cases, python_kernels
from tileworkbench.interp.trace import Status
from tileworkbench.runtime import tile_cpp
from tileworkbench.runtime.tile_ir_trace import trace_launch
from tileworkbench.runtime.tile_cpp import TileCppKernel
from tileworkbench.widgets.views import views_of_trace

needs_tile_compiler = pytest.mark.skipif(tile_cpp.unavailable_reason() is not None, reason=str(tile_cpp.unavailable_reason()))

CASES = cases(quick=True)
# Tile IR operations each kernel must hold: views or pointer tiles, reductions, loops, tensor-core mma
OPERATIONS = {
    "rms norm": {"make_partition_view", "load_view_tko", "store_view_tko", "reduce", "rsqrt", "assume"},
    "layer norm": {"make_partition_view", "load_view_tko", "store_view_tko", "reduce", "rsqrt", "select", "ftof"},
    "geglu": {"load_ptr_tko", "store_ptr_tko", "tanh", "offset"},
    "column sum": {"load_view_tko", "reduce", "atomic_rmw_tko"},
    "softmax": {"make_partition_view", "for", "reduce", "exp2", "divf", "store_view_tko"},
    "swiglu": {"load_ptr_tko", "store_ptr_tko", "exp", "assume"},
    "rope": {"make_partition_view", "load_view_tko", "store_view_tko"},
    "gemm float16": {"for", "mmaf", "load_view_tko"}, "gemm bfloat16": {"for", "mmaf", "load_view_tko"},
    "gemm float32": {"for", "mmaf", "load_view_tko"},
}


@needs_tile_compiler
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_tile_cpp_kernel_compiles_and_keeps_the_operations_it_is_written_with(case):
    kernel = TileCppKernel(case.source, f"<{case.name}>", case.expression)
    module = kernel.compile("sm_90")
    used = set(re.findall(r"= ([a-z_]+\d?)\b", module.ptx))
    assert OPERATIONS[case.name] <= used, OPERATIONS[case.name] - used
    assert kernel.block_threads("sm_90") >= 128 and kernel.resources("sm_90").registers > 0
    assert "warning" not in module.log  # hints sit where they apply


def _zeros(*shapes, dtype=np.float32):
    return [np.zeros(shape, dtype) for shape in shapes]


# Small launches of each kernel: its arguments as the benchmark passes them (arrays, then scalars), with
# sizes that leave partial tiles; elements stay opaque to the trace, so zeros do
SMALL = {
    "rms norm": ({"rows": 3, "cols": 1000}, lambda s: _zeros((3, 1000), 1000, (3, 1000))),
    "layer norm": ({"rows": 2, "cols": 1000},
                   lambda s: _zeros((2, 1000), 1000, 1000, (2, 1000), dtype=ml_dtypes.bfloat16)),
    "softmax": ({"rows": 3, "cols": 1000}, lambda s: _zeros((3, 1000), (3, 1000))),
    "swiglu": ({"n": 1500}, lambda s: _zeros(1500, 1500, 1500)),
    "geglu": ({"rows": 70, "h": 128}, lambda s: _zeros((70, 256), (70, 128))),
    "column sum": ({"rows": 150, "cols": 300}, lambda s: _zeros((150, 300), 300)),
    "rope": ({"rows": 3, "half": 64}, lambda s: _zeros((3, 2, 64), (3, 64), (3, 64))),
    "gemm float16": ({"m": 130, "n": 120, "k": 40}, lambda s: _zeros((130, 40), (40, 120), (130, 120), dtype=np.float16)),
    "gemm bfloat16": ({"m": 130, "n": 120, "k": 40},
                      lambda s: _zeros((130, 40), (40, 120), (130, 120), dtype=ml_dtypes.bfloat16)),
    "gemm float32": ({"m": 70, "n": 60, "k": 40}, lambda s: _zeros((70, 40), (40, 60), (70, 60))),
}


@needs_tile_compiler
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_tile_cpp_kernel_launch_binds_its_arguments_and_writes_each_output_element_as_often_as_meant(case):
    sizes, arrays = SMALL[case.name]
    tensors = arrays(sizes)
    kernel = TileCppKernel(case.source, f"<{case.name}>", case.expression)
    grid = case.grid(sizes)
    trace = trace_launch(kernel, grid, case.cpp_args(tensors, sizes))
    output = kernel.parameters("sm_90")[case.output % len(tensors)].name
    writes = np.zeros(tensors[case.output].shape, int)
    for event in trace.events:
        if event.array == output and event.op in ("store", "scatter", "atomic_add"):
            np.add.at(writes, tuple(event.coords[event.status == Status.STORED].T), 1)
    meant = grid[0] if case.name == "column sum" else 1  # each block of rows adds its part of every sum
    assert (writes == meant).all(), f"{(writes != meant).sum()} elements written other than {meant} times"


@needs_tile_compiler
def test_the_views_of_a_launch_show_its_pointer_tile_atomics():
    case = next(c for c in CASES if c.name == "column sum")
    sizes, arrays = SMALL[case.name]
    kernel = TileCppKernel(case.source, f"<{case.name}>", case.expression)
    trace = trace_launch(kernel, case.grid(sizes), case.cpp_args(arrays(sizes), sizes))
    views = views_of_trace(trace)
    assert [type(v).__name__ for v in views] == ["CoverageView", "TileSpaceView", "IndexMapView"]
    assert views[2].data["title"].startswith("atomic_add y, line 12: ct::atomic_add_masked(y + cols")


def test_the_python_twins_match_numpy_on_the_interpreter():
    rng = np.random.default_rng(0)
    k = python_kernels(ct)
    x = rng.standard_normal((3, 1000)).astype(np.float32)
    w = (rng.random(1000) + 0.5).astype(np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (3,), k["rms_norm"], (x, w, y, 1e-6, 1024))
    np.testing.assert_allclose(y, x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w, rtol=1e-5, atol=1e-6)
    ct.launch(None, (2,), k["softmax"], (x, y, 1024))   # two blocks stride over three rows
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    a, b = rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 64)).astype(np.float32)
    c = np.zeros((64, 64), np.float32)
    ct.launch(None, (2, 2), k["gemm"], (a, b, c, 32, 32, 32))
    np.testing.assert_allclose(c, a @ b, rtol=1e-2, atol=1e-2)
    b16 = ml_dtypes.bfloat16
    bias = rng.standard_normal(1000).astype(np.float32)
    y16 = np.zeros((3, 1000), b16)
    ct.launch(None, (3,), k["layer_norm"], (x.astype(b16), w.astype(b16), bias.astype(b16), y16, 1e-5, 1024))
    x16, w16, bias16 = (v.astype(b16).astype(np.float32) for v in (x, w, bias))
    centered = x16 - x16.mean(1, keepdims=True)
    expected = centered / np.sqrt((centered ** 2).mean(1, keepdims=True) + 1e-5) * w16 + bias16
    np.testing.assert_allclose(y16.astype(np.float32), expected, rtol=2e-2, atol=2e-2)
    gate_up = rng.standard_normal((70, 128)).astype(np.float32)
    out = np.zeros((70, 64), np.float32)
    ct.launch(None, (3, 2), k["geglu"], (gate_up, out, 32, 32))
    gate, up = gate_up[:, :64], gate_up[:, 64:]
    gelu = 0.5 * gate * (1 + np.tanh(0.7978845608028654 * (gate + 0.044715 * gate ** 3)))
    np.testing.assert_allclose(out, gelu * up, rtol=1e-5, atol=1e-6)
    sums = np.zeros(1000, np.float32)
    ct.launch(None, (2, 8), k["column_sum"], (x, sums, 2, 128))  # two blocks of two rows: the second is padding
    np.testing.assert_allclose(sums, x.sum(0), rtol=1e-5, atol=1e-6)
