"""NVRTC compilation on a machine without a GPU: outputs, names, errors, architectures."""
import _thread
import sys
import threading
import time

import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import TileCompilerExecutionError, TileCompilerTimeoutError
from tileworkbench.runtime import nvrtc
from tileworkbench.runtime.nvrtc import (
    Diagnostic,
    NvrtcError,
    NvrtcUnavailableError,
    compile_cuda,
    parse_diagnostics,
    supported_archs,
    unavailable_reason,
)

NVRTC_MISSING = unavailable_reason()
pytestmark = pytest.mark.skipif(NVRTC_MISSING is not None, reason=f"needs NVRTC: {NVRTC_MISSING}")

ADD = 'extern "C" __global__ void add(float* x, float y, int n) { int i = threadIdx.x; if (i < n) x[i] += y; }'


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_extern_c_kernel_compiles_to_ptx_and_cubin(arch):
    module = compile_cuda(ADD, arch=arch)
    assert f".target {arch}" in module.ptx and ".entry add(" in module.ptx
    assert module.cubin[:4] == b"\x7fELF"
    assert set(module.kernels) == {"add"} and module.kernels["add"].registers > 0
    assert module.kernels["add"].spill_stores == 0  # from ptxas -v in the log
    assert module.options[:4] == (f"-arch={arch}", "-lineinfo", "--std=c++17", "--ptxas-options=-v")
    assert len(module.nvrtc_version) == 2 and module.nvrtc_version[0] >= 12
    assert module.source == ADD and module.arch == arch


def test_name_expressions_give_lowered_names():
    source = "template <class T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }"
    module = compile_cuda(source, arch="sm_80", name_expressions=["scale<float>", "scale<int>"])
    assert module.lowered_names == {"scale<float>": "_Z5scaleIfEvPT_S0_", "scale<int>": "_Z5scaleIiEvPT_S0_"}
    assert set(module.kernels) == set(module.lowered_names.values())


def test_error_carries_the_line_a_line_directive_names():
    source = '#line 5 "cell"\n__global__ void f(float* y) {\n    y[0] = x;\n}\n'
    with pytest.raises(NvrtcError) as caught:
        compile_cuda(source, arch="sm_90")
    assert caught.value.diagnostics == [Diagnostic("cell", 6, 'identifier "x" is undefined')]
    assert 'cell(6): error: identifier "x" is undefined' in caught.value.log
    assert "cell:6: identifier" in str(caught.value)
    assert isinstance(caught.value, TileCompilerExecutionError)


def test_error_without_line_directive_names_the_file():
    with pytest.raises(NvrtcError) as caught:
        compile_cuda("__global__ void f() {\n  int a = ;\n}\n", arch="sm_80", name="gen.cu")
    assert [(d.filename, d.line) for d in caught.value.diagnostics] == [("gen.cu", 2)]


def test_diagnostics_parser_reads_errors_only():
    log = ('k.cu(3): warning #177-D: variable "v" was declared but never referenced\n'
           'k.cu(7): error: expected a ";"\n'
           'cell(2): catastrophic error: cannot open source file "missing.h"\n')
    assert parse_diagnostics(log) == [Diagnostic("k.cu", 7, 'expected a ";"'),
                                      Diagnostic("cell", 2, 'cannot open source file "missing.h"')]


def test_warnings_stay_in_the_log():
    module = compile_cuda('extern "C" __global__ void k() { int unused = 1; }', arch="sm_80")
    assert "declared but never referenced" in module.log


def test_include_paths_are_searched(tmp_path):
    (tmp_path / "twice.h").write_text("__device__ inline float twice(float v) { return 2 * v; }\n")
    source = '#include "twice.h"\nextern "C" __global__ void k(float* x) { x[0] = twice(x[0]); }'
    assert "k" in compile_cuda(source, arch="sm_80", include_paths=[str(tmp_path)]).kernels


@pytest.mark.parametrize("arch", ["sm_86", "sm_89", "sm_90a", "sm_100", "sm_120"])
def test_newer_archs_compile_where_nvrtc_supports_them(arch):
    if arch.rstrip("a") not in supported_archs():
        pytest.skip(f"NVRTC {nvrtc.nvrtc_version()} does not support {arch}")
    assert f".target {arch}" in compile_cuda(ADD, arch=arch).ptx


@pytest.mark.parametrize("arch", ["sm_13", "compute_90", "90"])
def test_unknown_or_virtual_arch_is_refused(arch):
    with pytest.raises(ValueError, match="sm_90"):
        compile_cuda(ADD, arch=arch)


@pytest.fixture
def nvrtc_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)  # import now fails
    nvrtc._load.cache_clear()
    yield
    monkeypatch.undo()
    nvrtc._load.cache_clear()


def test_missing_nvrtc_says_what_to_install(nvrtc_missing):
    with pytest.raises(NvrtcUnavailableError, match="pip install cuda-bindings nvidia-cuda-nvrtc"):
        compile_cuda(ADD)
    assert "pip install" in unavailable_reason()


def test_template_errors_carry_their_instantiation_lines():
    source = ('template <class T> __device__ T twice(T x) { static_assert(sizeof(T) == 2, "16-bit only"); return x; }\n'
              '#line 7 "<cell>"\n'
              'extern "C" __global__ void k(float* a) { a[0] = twice(a[1]); }\n')
    with pytest.raises(NvrtcError) as caught:
        compile_cuda(source, arch="sm_80")
    (d,) = caught.value.diagnostics
    assert (d.filename, d.line) == ("kernel.cu", 1) and "16-bit only" in d.message
    assert d.context == (("<cell>", 7),)
    assert d.line_in("<cell>") == 7 and d.line_in("kernel.cu") == 1 and d.line_in("other.py") is None


def test_ctrl_c_ends_the_wait_for_a_compile_at_once(monkeypatch):
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def endless_compile(*args):  # stands in for NVRTC: blocks without holding the GIL
        started.set()
        release.wait()
        finished.set()
        return "", b"", "", {}
    monkeypatch.setattr(nvrtc, "_compile", endless_compile)

    def press_ctrl_c():
        started.wait()
        time.sleep(0.3)  # let the main thread settle into its wait
        _thread.interrupt_main()
    ctrl_c = threading.Thread(target=press_ctrl_c)
    ctrl_c.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            compile_cuda('extern "C" __global__ void k() {}', arch="sm_80")
        assert not finished.is_set()  # the wait ended, the compile had not
    finally:
        release.set()
        ctrl_c.join()


def test_a_compile_past_the_compiler_timeout_raises_and_the_setting_is_restored(monkeypatch):
    release = threading.Event()

    def endless_compile(*args):  # stands in for a slow NVRTC compile
        release.wait()
        return "", b"", "", {}
    monkeypatch.setattr(nvrtc, "_compile", endless_compile)
    monkeypatch.delenv(nvrtc.TIMEOUT_ENV, raising=False)
    try:
        with ct.compiler_timeout(0.2):
            assert nvrtc.compile_timeout_s() == 0.2
            with pytest.raises(TileCompilerTimeoutError, match="within 0.2 s"):
                compile_cuda('extern "C" __global__ void k() {}', arch="sm_80")
    finally:
        release.set()
    assert nvrtc.compile_timeout_s() is None


@pytest.mark.parametrize("seconds", [0, -1, "10", True])
def test_compiler_timeout_needs_a_positive_number_of_seconds(seconds):
    with pytest.raises(ValueError, match="positive number of seconds"):
        with ct.compiler_timeout(seconds):
            pass
