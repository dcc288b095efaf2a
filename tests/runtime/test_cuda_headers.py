"""Which CUDA headers a cell compiles with: SIMT cells take the first found; CUDA Tile C++ cells take
headers at least as new as NVRTC (its bundled cuda_tile.h includes cuda_tf32.h, new in 13.x), else
NVRTC's own copy, else one error naming what was found and what to install."""
import os

import pytest

from tileworkbench.runtime import launch, nvrtc, tile_cpp
from tileworkbench.runtime.launch import cuda_header_dirs, cuda_headers_version, cuda_include_dirs

NVRTC_MISSING = nvrtc.unavailable_reason()  # loaded here, before a test takes sys.path away
TILE_COMPILER_MISSING = tile_cpp.unavailable_reason()  # the same: tileiras found (and kept) here


def headers(root, cudart_version=None):
    """A fake include directory: cuda_fp16.h, and cuda_runtime_api.h saying `cudart_version`."""
    root.mkdir(parents=True)
    (root / "cuda_fp16.h").write_text("")
    if cudart_version is not None:
        (root / "cuda_runtime_api.h").write_text(f"#pragma once\n#define CUDART_VERSION  {cudart_version}\n")
    return os.path.realpath(root)


@pytest.fixture
def sites(tmp_path, monkeypatch):
    """Two site directories (wheels' headers 13.0, then 13.4) and a toolkit (13.5) in $CUDA_HOME."""
    old = headers(tmp_path / "old" / "nvidia" / "cu13" / "include", 13000)
    new = headers(tmp_path / "new" / "nvidia" / "cu13" / "include", 13040)
    toolkit = headers(tmp_path / "toolkit" / "include", 13050)
    monkeypatch.setattr("sys.path", [str(tmp_path / "old"), str(tmp_path / "empty"), str(tmp_path / "new")])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "toolkit"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(launch, "DEFAULT_TOOLKIT", str(tmp_path / "no-toolkit"))
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 4))
    return {"old": old, "new": new, "toolkit": toolkit, "tmp": tmp_path}


def test_header_versions_come_from_cudart_version_or_nvrtcs_marker(tmp_path):
    assert cuda_headers_version(headers(tmp_path / "a", 13040)) == (13, 4)
    assert cuda_headers_version(headers(tmp_path / "b", 12090)) == (12, 9)
    marked = headers(tmp_path / "c")
    (tmp_path / "c" / ".nvrtc_headers_version").write_text("# marker\nformat_version=1\ncuda_major=13\ncuda_minor=4\n")
    assert cuda_headers_version(marked) == (13, 4)
    assert cuda_headers_version(headers(tmp_path / "d")) is None


def test_every_site_directory_and_the_toolkit_are_candidates_in_order(sites):
    assert cuda_header_dirs() == [sites["old"], sites["new"], sites["toolkit"]]


def test_simt_cells_keep_the_first_headers_found_whatever_their_version(sites):
    assert cuda_include_dirs() == (sites["old"],)


def test_a_tile_cell_takes_the_first_headers_as_new_as_nvrtc(sites, monkeypatch):
    assert tile_cpp.include_dirs() == (sites["new"],)
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 5))
    assert tile_cpp.include_dirs() == (sites["toolkit"],)


def test_with_only_older_headers_and_no_copy_in_nvrtc_one_error_names_them_and_what_to_install(sites, monkeypatch):
    monkeypatch.delenv("CUDA_HOME")
    unknown = headers(sites["tmp"] / "unknown" / "nvidia" / "cu13" / "include")
    monkeypatch.setattr("sys.path", [str(sites["tmp"] / "old"), str(sites["tmp"] / "unknown")])
    monkeypatch.setattr(nvrtc, "bundled_headers", lambda directory: None)
    with pytest.raises(tile_cpp.TileCompilerUnavailableError) as info:
        tile_cpp.include_dirs()
    message = str(info.value)
    assert message.startswith("CUDA Tile C++ under NVRTC 13.4 needs CUDA headers 13.4 or newer")
    assert f"{sites['old']} (CUDA 13.0); {unknown} (CUDA of unknown version)" in message
    assert message.endswith('Install them with `pip install "nvidia-cuda-runtime==13.4.*"`')


@pytest.mark.skipif(NVRTC_MISSING is not None, reason=str(NVRTC_MISSING))
def test_with_only_older_headers_a_tile_cell_takes_nvrtcs_own_copy(sites, monkeypatch):
    monkeypatch.undo()  # the real NVRTC, with only the 13.0 headers installed
    monkeypatch.setattr("sys.path", [str(sites["tmp"] / "old")])
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(launch, "DEFAULT_TOOLKIT", str(sites["tmp"] / "no-toolkit"))
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(sites["tmp"] / "cache"))
    if nvrtc.bundled_headers(str(sites["tmp"] / "probe")) is None:
        pytest.skip("this NVRTC carries no headers of its own (13.3 and newer do)")
    (directory,) = tile_cpp.include_dirs()
    assert directory.startswith(str(sites["tmp"] / "cache"))
    assert cuda_headers_version(directory) == nvrtc.nvrtc_version()
    if TILE_COMPILER_MISSING is None:  # a cell that needs cuda_tf32.h (which 13.0's headers lack) compiles
        module = tile_cpp.TileCppKernel(TF32, "<cell>").compile("sm_90")
        assert f"--include-path={directory}" in module.options


TF32 = """#include <cuda_tile.h>
#include <cuda_tf32.h>
namespace ct = cuda::tiles;
__tile_global__ void tf32(float* y) {
  using T = ct::tile<float, ct::shape<16, 16>>;
  auto p = y + ct::iota<ct::tile<int, ct::shape<16, 16>>>();
  ct::store(p, ct::mma(ct::element_cast<__nv_tf32>(ct::load(p)), ct::element_cast<__nv_tf32>(ct::load(p)), ct::zeros<T>()));
}
"""
