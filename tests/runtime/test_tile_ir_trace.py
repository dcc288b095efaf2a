"""What a CUDA Tile C++ launch touches, traced from its Tile IR on the CPU: pointer tiles with masks,
partition views with padding, loops over blocks, and the cell lines of each access."""
import numpy as np
import pytest

from benchmarks.tile_cpp import GEMM, ROPE, SOFTMAX, SWIGLU
from tileworkbench.errors import TileCompilerExecutionError
from tileworkbench.interp import Status
from tileworkbench.runtime import tile_cpp
from tileworkbench.runtime.tile_cpp import TileCppKernel
from tileworkbench.runtime.tile_ir_trace import trace_launch
from tileworkbench.widgets.coverage import CoverageView
from tileworkbench.widgets.views import views_of_trace

pytestmark = pytest.mark.skipif(tile_cpp.unavailable_reason() is not None,
                                reason=str(tile_cpp.unavailable_reason()))


def counts(trace, array, op):
    (event,) = [e for e in trace.events if e.array == array and e.op == op]
    return event


def test_pointer_tile_loads_and_stores_are_index_maps_masked_past_the_end():
    n = 2500
    trace = trace_launch(TileCppKernel(SWIGLU, "<c>", "swiglu<1024>"), (3,),
                         (np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32), n))
    gate = counts(trace, "gate", "gather")
    assert gate.counts() == {"LOADED": n, "MASKED": 3 * 1024 - n}
    assert gate.line == 11 and gate.source.strip().startswith("auto g = ct::load_masked(")
    block2 = gate.for_block((2,))
    loaded = block2.status[0] == Status.LOADED
    np.testing.assert_array_equal(block2.coords[0][loaded, 0], np.arange(2048, n))  # the lanes' own elements
    assert counts(trace, "y", "scatter").counts() == {"STORED": n, "MASKED": 3 * 1024 - n}


def test_a_persistent_loop_reaches_every_row_once_and_pads_the_short_rows():
    rows, cols = 5, 1000
    trace = trace_launch(TileCppKernel(SOFTMAX, "<c>", "softmax<1024>"), (2,),
                         (np.zeros((rows, cols), np.float32), np.zeros((rows, cols), np.float32), rows, cols))
    loads = [e for e in trace.events if e.op == "load"]
    assert sorted(int(r) for e in loads for r in e.coords[:, 0, 0, 0]) == list(range(rows))
    assert all(e.padding_mode == "NEG_INF" and e.counts()["PADDED"] == 24 * len(e.blocks) for e in loads)
    stored = np.zeros((rows, cols), int)
    for e in trace.events:
        if e.op == "store":
            for coords, status in zip(e.coords, e.status):
                np.add.at(stored, tuple(coords[status == Status.STORED].T), 1)
    assert (stored == 1).all()
    kinds = [type(v).__name__ for v in views_of_trace(trace)]
    assert kinds[0] == "CoverageView" and "TileSpaceView" in kinds


def test_a_gemm_stores_every_output_element_once_and_reads_a_row_band_per_block():
    m, n, k = 200, 130, 96
    args = (np.zeros((m, k), np.float16), np.zeros((k, n), np.float16), np.zeros((m, n), np.float16), m, n, k)
    trace = trace_launch(TileCppKernel(GEMM, "<c>", "gemm<__half, __half, 128, 128, 32>"), (2, 2), args)
    store = counts(trace, "c", "store")
    assert store.counts()["STORED"] == m * n
    a_loads = [e.for_block((1, 0)) for e in trace.events if e.array == "a"]
    assert len(a_loads) == 3  # one per pass of the k loop
    rows = {int(r) for e in a_loads for r in e.coords[0][e.status[0] == Status.LOADED][:, 0]}
    assert rows == set(range(128, m))
    coverage = CoverageView.from_trace(trace)
    assert {p["name"] for p in coverage.data["panels"]} == {"a", "b", "c"}


def test_a_view_of_another_shape_over_an_array_is_an_index_map_into_it():
    q = np.zeros((3, 128), np.float32)
    trace = trace_launch(TileCppKernel(ROPE, "<c>", "rope<64>"), (3,), (q, np.zeros((3, 64), np.float32),
                                                                      np.zeros((3, 64), np.float32), 3))
    second_half = [e for e in trace.events if e.array == "q" and e.op == "gather"][1].for_block((1,))
    np.testing.assert_array_equal(second_half.coords.reshape(-1, 2), [[1, 64 + j] for j in range(64)])


def test_an_address_that_depends_on_loaded_values_is_refused_with_a_reason():
    source = """#include <cuda_tile.h>
namespace ct = cuda::tiles;
__tile_global__ void lookup(const int* index, float* x) {
  auto i = ct::load(index + ct::iota<ct::tile<int, ct::shape<16>>>());
  ct::store(x + i, ct::zeros<ct::tile<float, ct::shape<16>>>());
}
"""
    with pytest.raises(TileCompilerExecutionError, match="cannot trace this kernel: a pointer tile computed from "
                                                         "loaded values"):
        trace_launch(TileCppKernel(source, "<c>"), (1,), (np.zeros(16, np.int32), np.zeros(16, np.float32)))


ATOMICS = """#include <cuda_tile.h>
namespace ct = cuda::tiles;
__tile_global__ void flags(int* first, int* most, unsigned* most_masked, int n) {
  auto i = ct::iota<ct::tile<int, ct::shape<128>>>();
  auto relaxed = ct::memory_order_relaxed_t{};
  auto device = ct::thread_scope_device_t{};
  ct::atomic_compare_exchange_masked(first + i, ct::zeros<ct::tile<int, ct::shape<128>>>(), i, i < n,
                                     ct::memory_order_relaxed_t{}, ct::thread_scope_device_t{});
  ct::atomic_max(most + i, i, relaxed, device);
  ct::atomic_max_masked(most_masked + i, ct::element_cast<unsigned>(i), i < n, relaxed, device);
}
"""


def test_pointer_tile_atomics_are_events_named_as_in_python_traces_at_the_line_of_the_call():
    arrays = (np.zeros(128, np.int32), np.zeros(128, np.int32), np.zeros(128, np.uint32))
    trace = trace_launch(TileCppKernel(ATOMICS, "<c>"), (2,), (*arrays, 100))
    assert counts(trace, "first", "atomic_cas").counts() == {"STORED": 200, "MASKED": 56}
    cas = counts(trace, "first", "atomic_cas")  # written over two lines: the line the call begins on
    assert (cas.line, cas.col) == (7, 2) and cas.source.strip().startswith("ct::atomic_compare_exchange_masked(")
    assert counts(trace, "most", "atomic_max").counts() == {"STORED": 256}  # no mask; an unsigned max is a max
    assert counts(trace, "most_masked", "atomic_max").counts() == {"STORED": 200, "MASKED": 56}
