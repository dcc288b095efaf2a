"""The launch fast path in C (native_launch.c): built with the system C compiler, kept beside the
kernel cache, and loaded from there by later processes.

On the H100 host the driver's launch call takes about 3 us; ct.launch's Python work (reading the
tensor, the stream, packing, the ctypes call) took about 2.5 us more, and takes about 0.8 us from C
(benchmarks/probe/launch_host_path.py). A machine's first launch does not wait for the compiler
(half a second): the module is built in the background, launchers made once it is ready launch from
C, and those made before switch to C when it is. Where it cannot be built (no C compiler, no Python headers, a cache directory that cannot be
written) or is turned off (TILEWORKBENCH_NATIVE_LAUNCH=0), launches take the Python path, which does
the same work with the same answers: `unavailable()` says why.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
from pathlib import Path

SOURCE = Path(__file__).with_name("native_launch.c")
MODULE_NAME = "tileworkbench_native_launch"
ENV = "TILEWORKBENCH_NATIVE_LAUNCH"


class NativeLaunchUnavailable(Exception):
    """Why the C launcher cannot be used here."""


def turned_off() -> bool:
    return os.environ.get(ENV, "").strip().lower() in ("0", "false", "no", "off")


@functools.cache
def _built():
    """The loaded module, or the NativeLaunchUnavailable saying why not (built once per process)."""
    try:
        return _load(_compiled_path())
    except NativeLaunchUnavailable as reason:
        return reason


def module():
    """The C launcher's module, or None (see `unavailable`)."""
    if turned_off():
        return None
    built = _built()
    return None if isinstance(built, NativeLaunchUnavailable) else built


_background_build = None  # the thread building the module for launchers made before it is ready
_when_built: list = []    # what that thread calls once the build has ended (launchers to switch to C)
_when_built_lock = threading.Lock()


def ready_module(when_built=None):
    """The C launcher's module where it is built, else None, with a build started in the background:
    a machine's first launch does not wait for the C compiler (half a second), and launchers made
    once it is done launch from C. `when_built()` is called (on the building thread) once a build
    this call found under way has ended. Built and loaded once per process."""
    global _background_build
    if turned_off():
        return None
    if _built.cache_info().currsize or _target().exists():  # answered, or loads in a fraction of a millisecond
        return module()
    with _when_built_lock:
        if _built.cache_info().currsize:  # ended meanwhile: its callbacks are being called, or were
            return module()
        if when_built is not None:
            _when_built.append(when_built)
        if _background_build is None:
            _background_build = threading.Thread(target=_build_in_background, name="tileworkbench C launcher build",
                                                 daemon=True)
            _background_build.start()
    return None


def _build_in_background() -> None:
    _built()
    with _when_built_lock:
        waiting = list(_when_built)
        _when_built.clear()
    for when_built in waiting:
        when_built()


def unavailable() -> str | None:
    """Why launches take the Python path, or None where they take the C one."""
    if turned_off():
        return f"turned off by {ENV}"
    built = _built()
    return str(built) if isinstance(built, NativeLaunchUnavailable) else None


def _compiler() -> list[str]:
    import shutil
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate.split()[0]):
            return candidate.split()
    raise NativeLaunchUnavailable("no C compiler (cc, gcc or clang) on PATH")


def _target() -> Path:
    """Where the module built from this source for this interpreter lives in the cache directory."""
    from .cache import default_directory
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]  # this interpreter's, e.g. .cpython-312-x86_64-linux-gnu.so
    key = hashlib.sha256(SOURCE.read_bytes() + sys.version.encode() + suffix.encode()).hexdigest()[:24]
    return Path(default_directory()) / "native" / f"launch-{key}{suffix}"


def _compiled_path() -> Path:
    """The built module in the cache directory, built there first if it is not (atomically: a
    process building it beside another never loads a half-written file)."""
    target = _target()
    if not target.exists():
        try:
            _build(target)
        except OSError as e:  # a cache directory that cannot be written, say
            raise NativeLaunchUnavailable(f"cannot build {target}: {e}") from None
    return target


def _build(target: Path) -> None:
    import subprocess
    import sysconfig
    import tempfile
    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        raise NativeLaunchUnavailable(f"no Python headers (Python.h) in {include}")
    compiler = _compiler()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        done = subprocess.run([*compiler, "-O2", "-shared", "-fPIC", f"-I{include}", "-o", str(built), str(SOURCE)],
                              capture_output=True, text=True)
        if done.returncode:
            raise NativeLaunchUnavailable(f"{' '.join(compiler)} failed on {SOURCE.name}:\n{done.stderr.strip()}")
        os.replace(built, target)


def _load(path: Path):
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, str(path), loader=loader)
    try:
        loaded = importlib.util.module_from_spec(spec)
        loader.exec_module(loaded)
    except ImportError as e:
        raise NativeLaunchUnavailable(f"{path} does not load: {e}") from None
    return loaded


# ---- what a Launcher of native_launch.c is made of ------------------------------------------------

# argument kinds, as native_launch.c's enum ArgumentKind
TORCH_TENSOR, CUPY_ARRAY, SCALAR, CONSTANT = range(4)
_FLOAT_CODES = {"float16": "e", "float32": "f", "float64": "d"}


def array_kind(example) -> int | None:
    """How C reads an array like `example`: a PyTorch tensor or a CuPy array; None for others
    (Numba's, or any __cuda_array_interface__ or DLPack array), which take the Python path."""
    from ..arguments import is_cupy_array, is_torch_tensor
    return TORCH_TENSOR if is_torch_tensor(example) else CUPY_ARRAY if is_cupy_array(example) else None


def packs_scalar(code: str, dtype, example) -> bool:
    """Whether C packs a scalar parameter of `dtype` passed values like `example` as the Python
    launcher does: integers and bools (range-checked as struct checks them), and floats that are
    Python floats or NumPy scalars of the parameter's own type. bfloat16 and fp8 scalars, and
    values converted from another type, take the Python path."""
    if len(code) != 1:  # bfloat16 and fp8 travel as bytes
        return False
    if dtype.is_integral or dtype.name == "bool_":
        return True
    return _FLOAT_CODES.get(dtype.name) == code and (type(example) is float or type(example) is dtype.numpy.type)


def launcher(function: int, threads: int, shared_bytes: int, offsets: list[int], arguments: list[tuple],
             maps: list[tuple], python_relaunch, later=None):
    """A C Launcher of one argument profile (see native_launch.c), or None where C is not available
    or the driver's launch entry is not a C function (a stand-in driver, say). Where the module is
    still being built, `later(c_launcher)` is called once it is (if it builds)."""
    import ctypes

    from . import driver, tensor_maps
    from .arrays import _stream_attributes, stream_handle

    def when_built():
        native = launcher(function, threads, shared_bytes, offsets, arguments, maps, python_relaunch)
        if native is not None:
            later(native)
    built = ready_module(when_built if later is not None else None)
    if built is None:
        return None
    try:
        address = ctypes.cast(driver.launch_kernel_function(), ctypes.c_void_p).value
    except ctypes.ArgumentError:  # not a C function
        return None
    parameter_bytes = max(offsets, default=0) + tensor_maps.TENSOR_MAP_BYTES  # room for the widest last one
    specs = tuple((kind, type_, expected, rank, itemsize, 0 if kind == CONSTANT else offsets[first])
                  for kind, type_, expected, rank, itemsize, first in arguments)
    tensor_map_specs = tuple((argument, dtype, box, swizzle, offsets[index])
                             for argument, dtype, box, swizzle, index in maps)
    torch = sys.modules.get("torch") if any(spec[0] == TORCH_TENSOR for spec in specs) else None
    to_dlpack = getattr(getattr(torch, "_C", None), "_to_dlpack", None)  # one call reads a whole tensor
    return built.Launcher(address, function, threads, shared_bytes, parameter_bytes, tuple(offsets), specs,
                          tensor_map_specs, python_relaunch, stream_handle, _stream_attributes, tensor_maps.encode,
                          to_dlpack)
