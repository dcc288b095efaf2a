"""CUDA Tile C++ compiled without a GPU: seed 002's examples as written, the type-trait tables, the
toolchain's messages, and parameters read from the declarations."""
import numpy as np
import pytest

from tileworkbench.runtime import tile_cpp
from tileworkbench.runtime.nvrtc import NvrtcError
from tileworkbench.runtime.tile_cpp import TileCppKernel, is_tile_cpp

from .tile_cpp_seed import EXAMPLES, TRAITS, cell, matrix_cells, result_cells, result_shape

pytestmark = pytest.mark.skipif(tile_cpp.unavailable_reason() is not None,
                                reason=str(tile_cpp.unavailable_reason()))

# NumPy's account of each example's result: the documented pictures are checked against it, so the GPU
# test's comparison with them compares against the right thing
NUMPY_RESULTS = {
    "full": np.full((2, 2), 42), "iota": np.arange(8).reshape(2, 4), "ones": np.ones((2, 2), int),
    "zeros": np.zeros((2, 2)), "isinf": np.array([True, True, False, False]),
    "isnan": np.array([False, False, True, False]), "reshape": np.arange(8).reshape(4, 2),
    "permute": np.arange(16).reshape(4, 2, 2).transpose(2, 0, 1), "transpose": np.arange(16).reshape(4, 2, 2).transpose(1, 0, 2),
    "cat": np.concatenate([np.zeros((4, 2), int), np.ones((4, 2), int)], 1), "select": np.array([0, -1, 2, -3]),
    "extract": np.arange(16).reshape(4, 4)[0:2, 2:4], "broadcast": np.broadcast_to(np.arange(4)[:, None], (4, 4)),
    "element_cast": np.arange(4.0).reshape(4, 1), "element_bitcast": np.full((4, 1), -1, np.int8),
}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_a_seed_example_compiles_as_written_to_a_cubin_with_its_kernel(example):
    kernel = TileCppKernel(cell(example), "<cell>")
    module = kernel.compile("sm_90")
    assert kernel.cubin_name("sm_90") in module.kernels and module.cubin[:4] == b"\x7fELF"
    assert kernel.block_threads("sm_90") >= 32  # the tile compiler's choice, recorded in the cubin
    assert "entry @" + kernel.cubin_name("sm_90") in module.ptx  # the Tile IR stage is kept


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_a_seed_documented_result_is_what_numpy_computes(example):
    expected = NUMPY_RESULTS[example.name]
    assert result_cells(expected.reshape(result_shape(example))) == matrix_cells(example.documented)


def test_the_seed_type_trait_tables_hold_in_nvidias_header():
    TileCppKernel(TRAITS, "<cell>").compile("sm_90")
    wrong = TRAITS.replace("ct::tile<int, ct::shape<16, 2, 8, 4>>", "ct::tile<int, ct::shape<2, 16, 8, 4>>")
    with pytest.raises(NvrtcError, match="static assertion failed") as info:
        TileCppKernel(wrong, "<cell>").compile("sm_90")
    assert info.value.loc.line == 6  # the static_assert's own line of the cell


def test_the_seed_ones_and_zeros_with_an_argument_do_not_compile_as_their_signature_says():
    source = cell(EXAMPLES[2]._replace(code="auto r = ct::ones<ct::tile<int, ct::shape<2, 2>>>(42);"))
    with pytest.raises(NvrtcError, match="no instance of function template"):
        TileCppKernel(source, "<cell>").compile("sm_90")


def test_a_cell_says_which_cpp_it_is_by_what_it_writes():
    assert is_tile_cpp("#include <cuda_tile.h>\n")
    assert is_tile_cpp("namespace ct = ::cuda::tiles;")
    assert is_tile_cpp("__tile_global__ void f(float* x) {}")
    assert not is_tile_cpp('#include <tileworkbench/tile.cuh>\n__global__ void f(float* x) { tw::load(x); }')


TEMPLATE = """#include <cuda_tile.h>
#include <cstdint>
namespace ct = cuda::tiles;
template <typename T, int TILE>
[[ using cutile : hint(900, occupancy=2) ]]
__tile_global__ void scale(T* __restrict__ x, T a, std::uint64_t n, const int m) {
  using Tile = ct::tile<T, ct::shape<TILE>>;
  auto i = ct::bid().x * TILE + ct::iota<ct::tile<std::uint64_t, ct::shape<TILE>>>();
  ct::store_masked(x + i, ct::load_masked(x + i, i < n) * ct::full<Tile>(a), i < n);
}
"""


def test_template_parameters_take_the_instance_arguments_and_uint64_mangles_as_nvrtc_spells_it():
    kernel = TileCppKernel(TEMPLATE, "<cell>", "scale<float, 256>")
    assert [(p.name, p.ptx_type, p.size) for p in kernel.parameters("sm_90")] == [
        ("x", ".u64", 8), ("a", ".f32", 4), ("n", ".u64", 8), ("m", ".s32", 4)]
    assert kernel.cubin_name("sm_90") == "_Z5scaleIfLi256EEvPT_S0_yi"   # the prelude's uint64_t is `y`


def test_a_compile_error_is_located_at_the_cell_line_past_the_prelude():
    source = TEMPLATE.replace("* ct::full<Tile>(a)", "* ct::ful<Tile>(a)")
    kernel = TileCppKernel(source, "<cell>", "scale<float, 256>", first_line=2)
    with pytest.raises(NvrtcError) as info:
        kernel.compile("sm_90")
    assert info.value.loc.line == 10 and info.value.loc.source_line.strip().startswith("ct::store_masked")
    assert 'namespace "cuda::tiles" has no member "ful"' in info.value.message
    assert "ful" in kernel.last_log and kernel.last_log.count("error") >= 1
    with pytest.raises(NvrtcError):  # remembered: the same error, not a second compile
        kernel.compile("sm_90")


def test_without_tileiras_one_message_says_what_to_install(monkeypatch):
    tile_cpp.toolchain.cache_clear()
    monkeypatch.setattr("sys.path", [])
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    try:
        reason = tile_cpp.unavailable_reason()
    finally:
        tile_cpp.toolchain.cache_clear()
    assert reason.startswith("CUDA Tile C++ needs NVIDIA's tile compiler, tileiras, which is not installed.")
    assert 'pip install "nvidia-cuda-nvrtc==13.4.*" "nvidia-cuda-tileiras==13.4.*"' in reason


def test_a_cuda_home_naming_another_toolkit_does_not_reach_tileiras(tmp_path, monkeypatch):
    """tileiras would load $CUDA_HOME/nvvm/lib64/libnvvm.so before its own: here an unloadable one."""
    stale = tmp_path / "cuda-13.0" / "nvvm" / "lib64"
    stale.mkdir(parents=True)
    (stale / "libnvvm.so").write_text("not a library")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda-13.0"))
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))   # a real compile, not a hit
    tile_cpp.toolchain.cache_clear()
    try:
        module = TileCppKernel(cell(EXAMPLES[0]), "<cell>").compile("sm_90")
    finally:
        tile_cpp.toolchain.cache_clear()
    assert module.cubin[:4] == b"\x7fELF"


def test_an_nvrtc_newer_than_tileiras_reads_is_named_with_the_versions_to_install(monkeypatch):
    monkeypatch.setattr("tileworkbench.runtime.nvrtc.nvrtc_version", lambda: (13, 9))
    reason = tile_cpp.unavailable_reason()
    assert reason.startswith("NVRTC 13.9 writes Tile IR 13.9, which tileiras 13.4.")
    assert "install matching versions" in reason


def test_cuda_bindings_that_cannot_read_tile_ir_are_named_with_the_version_to_install(monkeypatch):
    import types
    monkeypatch.setattr("tileworkbench.runtime.nvrtc._load", lambda: types.SimpleNamespace())
    monkeypatch.setattr("tileworkbench.runtime.nvrtc.nvrtc_version", lambda: (13, 4))
    reason = tile_cpp.unavailable_reason()
    assert reason.startswith("cuda-bindings ") and "cannot read NVRTC's Tile IR (nvrtcGetTileIR" in reason
    assert reason.endswith('`pip install "cuda-bindings>=13.3,<14"`')
