"""The compile cache: hits and misses, disk entries across processes, corruption, atomic writes."""
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tileworkbench
from tileworkbench.runtime import cache as cache_module
from tileworkbench.runtime.cache import CompileCache, cache_key, compile_cached, default_directory
from tileworkbench.runtime.cubin import Resources
from tileworkbench.runtime.nvrtc import CompiledModule, NvrtcUnavailableError, compiler_version, unavailable_reason

NVRTC_MISSING = unavailable_reason()
SOURCE = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2; }'


@pytest.fixture(autouse=True)
def compiler_known():
    try:
        compiler_version()
    except NvrtcUnavailableError as e:  # no wheel to read the version from, and no NVRTC to ask
        pytest.skip(f"the cache key needs the NVRTC version: {e}")


class FakeCompiler:
    """Stands in for compile_cuda and counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, source, arch, options, name_expressions=()):
        self.calls += 1
        return CompiledModule(
            source=source, arch=arch, options=tuple(options),
            ptx=f".version 9.0\n.target {arch}\n.visible .entry k(\n.param .u64 k_param_0\n)\n{{\n\tret;\n}}\n",
            cubin=b"\x7fELF" + bytes(range(256)) * 4 + b"\0.text.k\0k\0", log="ptxas info    : Used 8 registers",
            nvrtc_version=(13, 0), kernels={"k": Resources(8, 4352, 16, 0, 0, 128)}, lowered_names={"k": "k"})


def get(cache, compiler, source=SOURCE, arch="sm_90", options=("-DX=1",), header="1"):
    return cache.get_or_compile(source, arch, options, header, compiler)


def entry_path(cache):
    (entry,) = cache.entries()
    return os.path.join(cache.directory, entry.key + ".kernel")


def test_second_call_is_a_memory_hit(tmp_path):
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    first = get(cache, compiler)
    assert get(cache, compiler) is first
    stats = cache.stats()
    assert (compiler.calls, stats.misses, stats.memory_hits, stats.disk_hits, stats.entries) == (1, 1, 1, 0, 1)
    assert stats.bytes == os.path.getsize(entry_path(cache))


def test_disk_entry_round_trips_every_field(tmp_path):
    compiler = FakeCompiler()
    stored = get(CompileCache(str(tmp_path)), compiler)
    fresh = CompileCache(str(tmp_path))
    assert get(fresh, compiler) == stored
    assert (compiler.calls, fresh.stats().disk_hits, fresh.stats().misses) == (1, 1, 0)


def test_key_covers_every_input_but_option_order():
    base = {"source": SOURCE, "arch": "sm_90", "options": ["-DA", "-DB"], "header_version": "1",
            "compiler": "13.5.37"}
    key = cache_key(**base)
    assert cache_key(**{**base, "options": ["-DB", "-DA"]}) == key
    for change in [{"source": SOURCE + " "}, {"arch": "sm_80"}, {"options": ["-DA"]},
                   {"header_version": "2"}, {"compiler": "13.5.38"}, {"name_expressions": ["k<int>"]}]:
        assert cache_key(**{**base, **change}) != key


def test_a_fresh_process_hits_the_disk_in_milliseconds(tmp_path):
    get(CompileCache(str(tmp_path)), FakeCompiler())
    script = f"""
import sys, time
from tileworkbench.runtime.cache import CompileCache
def refuse(*args, **kwargs):
    raise AssertionError("compiled on a disk hit")
cache = CompileCache({str(tmp_path)!r})
start = time.perf_counter()
module = cache.get_or_compile({SOURCE!r}, "sm_90", ("-DX=1",), "1", refuse)
elapsed = time.perf_counter() - start
print(elapsed, cache.stats().disk_hits, module.kernels["k"].shared_static_bytes, "cuda.bindings.nvrtc" in sys.modules)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(tileworkbench.__file__).parents[1])
    elapsed, disk_hits, shared, nvrtc_loaded = run.stdout.split()
    assert (disk_hits, shared, nvrtc_loaded) == ("1", "4352", "False")
    assert float(elapsed) < 0.25  # measured ~1.5 ms on a 2-core machine; generous for slow CI disks


@pytest.mark.parametrize("damage", ["truncate", "flip a payload byte", "flip a header byte", "empty"])
def test_a_damaged_entry_is_deleted_and_rebuilt(tmp_path, damage):
    compiler = FakeCompiler()
    get(CompileCache(str(tmp_path)), compiler)
    path = entry_path(CompileCache(str(tmp_path)))
    data = bytearray(Path(path).read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "flip a payload byte":
        data[-10] ^= 0x01
    elif damage == "flip a header byte":
        data[10] ^= 0x01  # inside the format version
    else:
        data = b""
    Path(path).write_bytes(data)

    fresh = CompileCache(str(tmp_path))
    assert get(fresh, compiler).kernels["k"].registers == 8
    assert compiler.calls == 2 and fresh.stats().misses == 1 and fresh.stats().disk_hits == 0
    assert get(CompileCache(str(tmp_path)), compiler) is not None and compiler.calls == 2  # rebuilt entry is valid


def test_entry_for_another_key_is_not_trusted(tmp_path):
    compiler = FakeCompiler()
    cache = CompileCache(str(tmp_path))
    get(cache, compiler, arch="sm_80")
    renamed = os.path.join(str(tmp_path), cache_key(SOURCE, "sm_90", ["-DX=1"], "1", compiler_version()) + ".kernel")
    os.rename(entry_path(cache), renamed)
    assert get(CompileCache(str(tmp_path)), compiler).arch == "sm_90" and compiler.calls == 2


def test_writes_go_through_a_temporary_file_and_a_rename(tmp_path, monkeypatch):
    renames = []
    real_replace = os.replace

    def spy(source, destination):
        assert os.path.dirname(source) == str(tmp_path) and os.path.getsize(source) > 0
        assert not os.path.exists(destination)  # readers never see a half-written entry
        renames.append(destination)
        real_replace(source, destination)

    monkeypatch.setattr(cache_module.os, "replace", spy)
    cache = CompileCache(str(tmp_path))
    get(cache, FakeCompiler())
    assert renames == [entry_path(cache)]


def test_a_failed_write_leaves_no_file_and_still_returns_the_module(tmp_path, monkeypatch):
    def fail(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(cache_module.os, "replace", fail)
    cache = CompileCache(str(tmp_path))
    with pytest.warns(UserWarning, match="disk full"):
        module = get(cache, FakeCompiler())
    assert module.kernels["k"].registers == 8
    assert os.listdir(tmp_path) == []


def test_entries_describe_what_is_on_disk(tmp_path):
    cache = CompileCache(str(tmp_path))
    get(cache, FakeCompiler(), arch="sm_80")
    (entry,) = cache.entries()
    assert (entry.arch, entry.kernels, len(entry.key)) == ("sm_80", ("k",), 64)
    assert entry.size == os.path.getsize(entry_path(cache)) and entry.mtime <= time.time()


def test_entries_hold_no_pickle_only_json_and_bytes(tmp_path):
    cache = CompileCache(str(tmp_path))
    get(cache, FakeCompiler())
    data = Path(entry_path(cache)).read_bytes()
    assert data[:8] == b"TWBKRNL\0"
    meta_length = int.from_bytes(data[84:88], "little")
    assert json.loads(data[88:88 + meta_length])["kernels"]["k"]["shared_static_bytes"] == 4352


def test_clear_forgets_memory_and_disk(tmp_path):
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    get(cache, compiler)
    (tmp_path / ".left-by-a-crash.tmp").touch()
    cache.clear()
    assert cache.entries() == [] and os.listdir(tmp_path) == []
    assert cache.stats().entries == 0
    get(cache, compiler)
    assert compiler.calls == 2


def test_directory_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "mine"))
    assert CompileCache().directory == str(tmp_path / "mine")
    monkeypatch.delenv("TILEWORKBENCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_directory() == str(tmp_path / "xdg" / "tileworkbench")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_directory() == str(tmp_path / ".cache" / "tileworkbench")


@pytest.mark.skipif(NVRTC_MISSING is not None, reason=f"needs NVRTC: {NVRTC_MISSING}")
def test_compile_cached_compiles_once_then_reads_the_disk(tmp_path):
    start = time.perf_counter()
    cold = compile_cached(SOURCE, arch="sm_80", header_version="1", cache=CompileCache(str(tmp_path)))
    compiled = time.perf_counter() - start
    fresh = CompileCache(str(tmp_path))
    start = time.perf_counter()
    hit = compile_cached(SOURCE, arch="sm_80", header_version="1", cache=fresh)
    loaded = time.perf_counter() - start
    assert hit == cold and fresh.stats().disk_hits == 1
    assert loaded < compiled


def test_command_line_lists_and_clears_the_cache(tmp_path, monkeypatch, capsys):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc")
    from tileworkbench.runtime import __main__ as cli
    from tileworkbench.runtime import cache as cache_module
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache_module, "_default", None)
    try:
        cache_module.compile_cached('extern "C" __global__ void listed(float* x) { x[0] = 1.0f; }', arch="sm_80")
    except Exception as e:  # NVRTC present but unusable here
        pytest.skip(f"NVRTC cannot compile here: {e}")
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "sm_80" in out and "listed" in out and "1 entries" in out
    assert cli.main(["clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert cli.main(["list"]) == 0
    assert "0 entries" in capsys.readouterr().out


def test_the_key_covers_the_package_version(monkeypatch):
    before = cache_key(SOURCE, "sm_90", (), "1", "13.0")
    monkeypatch.setattr(cache_module, "__version__", "9.9.9")
    assert cache_key(SOURCE, "sm_90", (), "1", "13.0") != before


def _forge(path, change=None, cubin=None, ptx=None, cubin_bytes=None) -> None:
    """Rewrite the entry at `path` with its checksum recomputed: `change(meta)` edits its JSON."""
    key = os.path.basename(path)[:-len(".kernel")]
    data = Path(path).read_bytes()
    meta, old_cubin, old_ptx = cache_module._decode(key, data)
    cubin, ptx = old_cubin if cubin is None else cubin, old_ptx if ptx is None else ptx
    meta["cubin_bytes"] = len(cubin) if cubin_bytes is None else cubin_bytes
    if change is not None:
        change(meta)
    text = json.dumps(meta).encode()
    payload = len(text).to_bytes(4, "little") + text + cubin + ptx.encode()
    header = cache_module._HEADER.pack(cache_module.MAGIC, cache_module.FORMAT_VERSION, bytes.fromhex(key),
                                       len(payload), hashlib.sha256(payload).digest())
    Path(path).write_bytes(header + payload)


def _rebuilt_after(tmp_path, **forgery):
    """The module a fresh cache gives after the stored entry was forged, and whether it compiled again."""
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    stored = get(cache, compiler)
    _forge(entry_path(cache), **forgery)
    module = get(CompileCache(str(tmp_path)), compiler)
    assert module == stored and compiler.calls == 2
    assert get(CompileCache(str(tmp_path)), compiler) == stored and compiler.calls == 2   # the rebuilt entry is read
    return module


def test_an_entry_of_another_layout_is_deleted_and_rebuilt(tmp_path):
    _rebuilt_after(tmp_path, change=lambda meta: meta["kernels"]["k"].update(a_field_of_another_version=1))


def test_an_entry_claiming_a_longer_cubin_than_it_holds_is_rebuilt_not_a_wrong_binary(tmp_path):
    module = _rebuilt_after(tmp_path, cubin_bytes=10**9)
    assert module.ptx.startswith(".version") and module.cubin.startswith(b"\x7fELF")


@pytest.mark.parametrize("cubin_bytes", [1e9, 4, 0, -1, True])
def test_an_entry_whose_cubin_length_disagrees_with_its_contents_is_rebuilt(tmp_path, cubin_bytes):
    _rebuilt_after(tmp_path, cubin_bytes=cubin_bytes)


def test_an_entry_with_a_renamed_kernel_is_rebuilt_and_the_caller_finds_its_kernel(tmp_path):
    module = _rebuilt_after(tmp_path, change=lambda meta: meta.update(kernels={"k2": meta["kernels"]["k"]}))
    assert module.kernels["k"].registers == 8


def test_an_entry_renamed_throughout_to_a_kernel_the_source_does_not_name_is_rebuilt(tmp_path):
    cubin = b"\x7fELF" + bytes(range(256)) * 4 + b"\0.text.q\0q\0"
    ptx = ".version 9.0\n.target sm_90\n.visible .entry q(\n)\n{\n}\n"
    _rebuilt_after(tmp_path, cubin=cubin, ptx=ptx,
                   change=lambda meta: meta.update(kernels={"q": meta["kernels"]["k"]}, lowered_names={"q": "q"}))


@pytest.mark.parametrize("change", [
    lambda meta: meta.update(arch="sm_80"),
    lambda meta: meta["kernels"]["k"].update(registers="8"),
    lambda meta: meta["kernels"]["k"].update(local_bytes=-16),
    lambda meta: meta["kernels"]["k"].update(max_threads=1.5),
    lambda meta: meta.update(lowered_names={"k": "elsewhere"}),
    lambda meta: meta.update(log=None),
])
def test_an_entry_whose_claims_are_not_those_of_its_request_is_rebuilt(tmp_path, change):
    _rebuilt_after(tmp_path, change=change)


def test_an_entry_whose_cubin_is_not_an_elf_file_is_rebuilt(tmp_path):
    _rebuilt_after(tmp_path, cubin=b"\0\0\0\0k\0")


def test_an_entry_without_a_requested_name_expression_is_rebuilt(tmp_path):
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    cache.get_or_compile(SOURCE, "sm_90", (), "1", compiler, name_expressions=("k",))
    _forge(entry_path(cache), change=lambda meta: meta.update(lowered_names={}))
    module = CompileCache(str(tmp_path)).get_or_compile(SOURCE, "sm_90", (), "1", compiler, name_expressions=("k",))
    assert module.lowered_names == {"k": "k"} and compiler.calls == 2


def test_a_real_module_agrees_with_its_entry(tmp_path):
    if NVRTC_MISSING:
        pytest.skip(NVRTC_MISSING)
    source = SOURCE + "\nnamespace ns { template <typename T> __global__ void scale(T* x) { x[0] *= 2; } }"
    first = compile_cached(source, arch="sm_80", name_expressions=["ns::scale<float>"],
                           cache=CompileCache(str(tmp_path)))
    fresh = CompileCache(str(tmp_path))
    assert compile_cached(source, arch="sm_80", name_expressions=["ns::scale<float>"], cache=fresh) == first
    assert fresh.stats().disk_hits == 1


def test_stray_files_in_the_directory_are_left_alone_by_list_stats_and_clear(tmp_path):
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    get(cache, compiler)
    (tmp_path / "notes.kernel").write_text("mine")
    (tmp_path / "README").write_text("mine")
    (tmp_path / ("a" * 64 + ".kernel")).mkdir()
    assert len(cache.entries()) == 1 and cache.stats().entries == 2
    cache.clear()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README", "a" * 64 + ".kernel", "notes.kernel"]


@pytest.mark.parametrize("make", ["symlink to /dev/zero", "fifo", "huge file"])
def test_only_regular_files_of_bounded_size_are_read_as_entries(tmp_path, make, monkeypatch):
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    get(cache, compiler)
    path = entry_path(cache)
    os.remove(path)
    if make == "symlink to /dev/zero":
        os.symlink("/dev/zero", path)
    elif make == "fifo":
        os.mkfifo(path)
    else:
        monkeypatch.setattr(cache_module, "MAX_ENTRY_BYTES", 1024)
        Path(path).write_bytes(b"\0" * 2048)
    assert get(CompileCache(str(tmp_path)), compiler) is not None and compiler.calls == 2
    assert os.path.isfile(path) and not os.path.islink(path)


def test_list_and_stats_skip_entries_removed_while_they_run(tmp_path, monkeypatch):
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    get(cache, compiler)
    listed = cache._files()
    cache.clear()  # a concurrent clear, between the listing and the reads
    monkeypatch.setattr(cache, "_files", lambda: listed)
    assert cache.entries() == [] and cache.stats().entries == 0


def test_cached_only_answers_hits_and_refuses_to_compile_misses(tmp_path):
    cache, compiler = CompileCache(str(tmp_path)), FakeCompiler()
    with cache_module.cached_only(), pytest.raises(cache_module.NotCached):
        get(cache, compiler)
    assert compiler.calls == 0
    get(cache, compiler)
    with cache_module.cached_only():
        assert get(CompileCache(str(tmp_path)), compiler) is not None
    assert compiler.calls == 1
