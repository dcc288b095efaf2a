"""Compile CUDA C++ to PTX and a cubin with NVRTC; no GPU needed (NVRTC is only a compiler).

    >>> m = compile_cuda('extern "C" __global__ void add(float* x) { x[threadIdx.x] += 1; }', arch="sm_80")
    >>> m.kernels["add"].registers, m.ptx.count(".entry add")
    (8, 1)

NVRTC comes from the `cuda-bindings` and `nvidia-cuda-nvrtc` wheels and is loaded by the first
compile, not on import: importing this module stays cheap and works where they are missing.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import sys
import threading
import time
from typing import NamedTuple

from ..errors import ArgumentValueError, TileCompilerExecutionError, TileCompilerTimeoutError
from .cubin import Resources, read_resources, with_spills

INSTALL_HINT = "pip install cuda-bindings nvidia-cuda-nvrtc nvidia-cuda-runtime"
# Always passed: -lineinfo lets profilers map SASS to source lines; ptxas -v is where spill counts
# come from (the cubin does not record them).
BASE_OPTIONS = ("-lineinfo", "--std=c++17", "--ptxas-options=-v")
TIMEOUT_ENV = "CUDA_TILE_COMPILER_TIMEOUT_SEC"  # cuTile's name; `ct.compiler_timeout(s)` sets it for a block


class NvrtcUnavailableError(RuntimeError):
    """The NVRTC library cannot be loaded; the message says what to install."""


class Diagnostic(NamedTuple):
    """One compiler error, at the file and line that `#line` directives name. An error inside a
    header template carries the (file, line) pairs it was instantiated from in `context`."""

    filename: str
    line: int
    message: str
    context: tuple = ()

    def line_in(self, filename: str) -> int | None:
        """The line of `filename` this error comes from: its own, or the instantiation's there."""
        if self.filename == filename:
            return self.line
        return next((line for f, line in reversed(self.context) if f == filename), None)


class NvrtcError(TileCompilerExecutionError):
    """NVRTC rejected the source. `log` is the whole compiler log, `diagnostics` its errors."""

    def __init__(self, message: str, log: str, diagnostics: list[Diagnostic], loc=None):
        super().__init__(message, loc)
        self.log = log
        self.diagnostics = diagnostics


class CompiledModule(NamedTuple):
    """What NVRTC made of one source: PTX, cubin, log and the resources of each kernel."""

    source: str
    arch: str
    options: tuple[str, ...]  # everything NVRTC was given, -arch first
    ptx: str
    cubin: bytes
    log: str  # NVRTC's log: warnings, then ptxas -v's resource report per function
    nvrtc_version: tuple[int, int]
    kernels: dict[str, Resources]  # by the name in the cubin (mangled unless extern "C")
    lowered_names: dict[str, str]  # name expression -> cubin name


@functools.cache
def _load():
    try:
        nvrtc = importlib.import_module("cuda.bindings.nvrtc")
        _call(nvrtc, nvrtc.nvrtcVersion)  # loads libnvrtc: the step that fails without the wheel
    except (ImportError, OSError, RuntimeError) as e:
        cause = " ".join(str(e).split())  # the loader's message spans lines
        raise NvrtcUnavailableError(
            f"NVRTC is not available ({type(e).__name__}: {cause}). Install it with `{INSTALL_HINT}`") from e
    return nvrtc


def _call(nvrtc, function, *args):
    """Call an NVRTC binding, raise on failure, return its results after the status."""
    status, *results = function(*args)
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{function.__name__} failed: {nvrtc.nvrtcGetErrorString(status)[1].decode()}")
    return results[0] if len(results) == 1 else tuple(results)


def unavailable_reason() -> str | None:
    """None when NVRTC loads, else why not, with the install hint (for UIs and test skips)."""
    try:
        _load()
    except NvrtcUnavailableError as e:
        return str(e)
    return None


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library, loading it if needed."""
    nvrtc = _load()
    return _call(nvrtc, nvrtc.nvrtcVersion)


def bundled_headers(directory: str) -> str | None:
    """NVRTC's own copy of the CUDA headers (NVRTC 13.3+ carries them), extracted once into
    `directory`/nvrtc-headers-<version>: headers that always match the NVRTC in use. None when this
    NVRTC has none or they cannot be written there.

    The C entry point is called through ctypes on the library cuda-bindings loaded: some
    cuda-bindings releases that wrap it fail on its result structure (a TypeError in the binding)."""
    import ctypes
    major, minor = nvrtc_version()
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        library = ctypes.CDLL(load_nvidia_dynamic_lib("nvrtc").abs_path)
    except (ImportError, OSError, RuntimeError):
        return None
    install = getattr(library, "nvrtcInstallBundledHeaders", None)
    if install is None:
        return None
    install.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_char_p)]
    install.restype = ctypes.c_int
    path = os.path.join(directory, f"nvrtc-headers-{major}.{minor}")
    skip_if_present = 0   # NVRTC_INSTALL_HEADERS_SKIP_IF_EXISTS: extracted once, under a file lock
    status = install(path.encode(), skip_if_present, ctypes.byref(ctypes.c_char_p()))
    return path if status == 0 and os.path.exists(os.path.join(path, "cuda_fp16.h")) else None


def supported_archs() -> list[str]:
    """The real architectures this NVRTC can build cubins for: ["sm_75", "sm_80", ...]."""
    nvrtc = _load()
    return [f"sm_{n}" for n in _call(nvrtc, nvrtc.nvrtcGetSupportedArchs)]


@functools.cache
def compiler_version() -> str:
    """The NVRTC build, for cache keys: "13.5.37", the installed wheel's version.

    Loading NVRTC to ask it costs ~150 ms (the bindings import and the library load), more than a
    whole cache hit may take, so the wheel's dist-info folder name answers instead; it also tells
    patch releases apart. Without the wheel (a CUDA toolkit install) NVRTC itself answers.
    """
    prefix, suffix = "nvidia_cuda_nvrtc-", ".dist-info"
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(suffix):
                return name[len(prefix):-len(suffix)]
    major, minor = nvrtc_version()
    return f"{major}.{minor}"


_ARCH = re.compile(r"sm_(\d+)[af]?")


def _check_arch(arch: str) -> None:
    match = _ARCH.fullmatch(arch)
    if not match:
        raise ArgumentValueError(f"arch must name a real GPU architecture such as 'sm_90' or 'sm_90a' "
                                 f"(a cubin needs one), got {arch!r}")
    known = supported_archs()
    if f"sm_{match.group(1)}" not in known:
        major, minor = nvrtc_version()
        raise ArgumentValueError(f"NVRTC {major}.{minor} cannot compile for {arch}; it supports {', '.join(known)}")


# kernel.cu(12): error: identifier "x" is undefined   /   cell(5): catastrophic error: cannot open source file "a.h"
_DIAGNOSTIC = re.compile(r"^(.+?)\((\d+)\): (?:catastrophic )?error(?: #[\w-]+)?: (.*)$", re.MULTILINE)


# the notes under an error in a template:  detected during instantiation of "..." at line 7 of <cell>
_INSTANTIATED_AT = re.compile(r"at line (\d+) of (.+)$", re.MULTILINE)


def parse_diagnostics(log: str) -> list[Diagnostic]:
    """The errors in an NVRTC log, in order, each with the instantiation lines noted under it."""
    matches = list(_DIAGNOSTIC.finditer(log))
    diagnostics = []
    for k, m in enumerate(matches):
        notes = log[m.end():matches[k + 1].start() if k + 1 < len(matches) else len(log)]
        context = tuple((f.strip(), int(line)) for line, f in _INSTANTIATED_AT.findall(notes))
        diagnostics.append(Diagnostic(m.group(1), int(m.group(2)), m.group(3).strip(), context))
    return diagnostics


def _read(nvrtc, program, get_size, get) -> bytes:
    buffer = bytearray(_call(nvrtc, get_size, program))
    _call(nvrtc, get, program, buffer)
    return bytes(buffer)


def compile_cuda(source: str, *, arch: str = "sm_90", options=(), name: str = "kernel.cu",
                 include_paths=(), name_expressions=()) -> CompiledModule:
    """Compile CUDA C++ to PTX and a cubin for `arch`, with each kernel's resource usage.

    `name_expressions` (e.g. ["scale<float>"]) name C++ kernels; `lowered_names` maps each to its
    mangled name in the cubin. `extern "C"` kernels need none. Errors raise NvrtcError.
    """
    nvrtc = _load()
    _check_arch(arch)
    options = (f"-arch={arch}", *BASE_OPTIONS, *(f"--include-path={p}" for p in include_paths), *options)
    ptx, cubin, log, lowered = _interruptible(lambda: _compile(nvrtc, source, arch, options, name, name_expressions),
                                              timeout_s=compile_timeout_s())
    return CompiledModule(
        source=source, arch=arch, options=options, ptx=ptx, cubin=cubin, log=log,
        nvrtc_version=nvrtc_version(), kernels=with_spills(read_resources(cubin), log), lowered_names=lowered)


def compile_timeout_s() -> float | None:
    """The longest a compile may take (CUDA_TILE_COMPILER_TIMEOUT_SEC), or None: no limit."""
    value = os.environ.get(TIMEOUT_ENV, "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise ArgumentValueError(f"{TIMEOUT_ENV}={value!r} is not a number of seconds") from None


@contextlib.contextmanager
def compiler_timeout(seconds: float):
    """`with ct.compiler_timeout(10): ...`: compiles started inside take at most `seconds` each
    (TileCompilerTimeoutError beyond). Sets CUDA_TILE_COMPILER_TIMEOUT_SEC for the block, so not
    thread-safe, as cuTile's."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ArgumentValueError(f"compiler_timeout needs a positive number of seconds, got {seconds!r}")
    before = os.environ.get(TIMEOUT_ENV)
    os.environ[TIMEOUT_ENV] = str(seconds)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TIMEOUT_ENV, None)
        else:
            os.environ[TIMEOUT_ENV] = before


def _interruptible(work, timeout_s: float | None = None):
    """`work()` on a worker thread, waited for so that Ctrl-C (KeyboardInterrupt) ends the wait at once,
    and at most `timeout_s` seconds (TileCompilerTimeoutError). NVRTC releases the GIL but cannot be
    stopped: an interrupted or late compile runs on in the background, owning its program, and its
    result is dropped."""
    outcome, done = {}, threading.Event()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s

    def run():
        try:
            outcome["value"] = work()
        except BaseException as e:  # handed to the waiting thread as it is
            outcome["error"] = e
        finally:
            done.set()
    threading.Thread(target=run, name="nvrtc compile", daemon=True).start()
    while not done.wait(0.1):  # an Event, not Thread.join: an interrupted join marks a running thread stopped
        if deadline is not None and time.monotonic() > deadline:
            raise TileCompilerTimeoutError(f"NVRTC did not finish compiling within {timeout_s:g} s "
                                           f"(the compiler timeout, ct.compiler_timeout or {TIMEOUT_ENV})")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _compile(nvrtc, source, arch, options, name, name_expressions):
    """(ptx, cubin, log, lowered names) of one NVRTC program, which it creates and destroys."""
    def outputs(program):
        ptx = _read(nvrtc, program, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX).rstrip(b"\0").decode()
        return ptx, _read(nvrtc, program, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
    (ptx, cubin), log, lowered = run_program(nvrtc, source, arch, options, name, name_expressions, outputs)
    return ptx, cubin, log, lowered


def run_program(nvrtc, source, arch, options, name, name_expressions, outputs, headers=None):
    """(outputs(program), log, lowered names) of one NVRTC program, which it creates and destroys;
    a compile error raises NvrtcError. `headers` maps include names to their text."""
    headers = headers or {}
    program = _call(nvrtc, nvrtc.nvrtcCreateProgram, source.encode(), name.encode(), len(headers),
                    [h.encode() for h in headers.values()], [h.encode() for h in headers])
    try:
        for expression in name_expressions:
            _call(nvrtc, nvrtc.nvrtcAddNameExpression, program, expression.encode())
        status, = nvrtc.nvrtcCompileProgram(program, len(options), [o.encode() for o in options])
        log = _read(nvrtc, program, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog)
        log = log.rstrip(b"\0").decode(errors="replace")
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            diagnostics = parse_diagnostics(log)
            summary = "\n".join(f"{d.filename}:{d.line}: {d.message}" for d in diagnostics) or log.strip()
            raise NvrtcError(f"NVRTC could not compile {name} for {arch}:\n{summary}", log, diagnostics)
        produced = outputs(program)
        lowered = {e: _call(nvrtc, nvrtc.nvrtcGetLoweredName, program, e.encode()).decode() for e in name_expressions}
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return produced, log, lowered

