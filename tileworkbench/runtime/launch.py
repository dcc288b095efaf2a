"""Compile a kernel specialization for the current GPU, load it, and launch it.

    generate (IR -> CUDA C++) -> NVRTC (cached in memory and on disk) -> cubin -> driver module -> launch

The cubin is loaded with the driver's cuModuleLoadData (`driver.py`), so any arch NVRTC can target
(sm_90a included) works, and no array framework is imported to load or launch. Launches go straight
to cuLaunchKernelEx (see Launcher).
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..arguments import argument_leaves, is_cupy_array, is_torch_tensor, normalize_grid, param_spec
from ..codegen import HEADER_VERSION, INCLUDE_DIR, GeneratedKernel, generate, line_file
from ..errors import ArgumentValueError
from ..ir.core import Function
from ..ir.types import int64
from . import driver, native_launch, tensor_maps
from .arrays import device_array, stream_handle
from .nvrtc import NvrtcError

if TYPE_CHECKING:
    from .compiled import CompiledKernel

COMPILE_OPTIONS = ()  # the NVRTC layer adds -arch, -lineinfo and --std=c++17


class GpuKernel(NamedTuple):
    """A compiled kernel loaded on one device."""

    compiled: CompiledKernel
    function: driver.Function
    arch: str  # the device's arch it was asked for (the record's may be sm_90a where the code needs it)


TOOLKIT_HOMES = ("CUDA_HOME", "CUDA_PATH")  # environment variables naming a CUDA toolkit, before /usr/local/cuda
DEFAULT_TOOLKIT = "/usr/local/cuda"


def cuda_header_dirs() -> list[str]:
    """Every directory holding CUDA's headers (cuda_fp16.h), in the order they are preferred: the
    nvidia-* wheels' include directories under each sys.path entry, then a CUDA toolkit
    ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda)."""
    import glob
    import sys
    candidates = []
    for entry in sys.path:
        root = os.path.join(entry or ".", "nvidia")
        candidates += sorted(glob.glob(os.path.join(root, "cu*", "include")), reverse=True)
        candidates.append(os.path.join(root, "cuda_runtime", "include"))
    candidates += [os.path.join(home, "include") for home in
                   (*(os.environ.get(name) for name in TOOLKIT_HOMES), DEFAULT_TOOLKIT) if home]
    found = [os.path.realpath(d) for d in candidates if os.path.exists(os.path.join(d, "cuda_fp16.h"))]
    return list(dict.fromkeys(found))  # a site directory reached twice (a symlink, a repeated entry) once


def cuda_headers_version(directory: str) -> tuple[int, int] | None:
    """(major, minor) of the CUDA headers in `directory`: CUDART_VERSION in cuda_runtime_api.h (13040
    is 13.4), else the version marker NVRTC writes beside its extracted headers; None when neither says."""
    import re
    for name, pattern in (("cuda_runtime_api.h", r"^\s*#\s*define\s+CUDART_VERSION\s+(\d+)"),
                          (".nvrtc_headers_version", r"^cuda_major=(\d+)\s+cuda_minor=(\d+)")):
        try:
            with open(os.path.join(directory, name), errors="replace") as f:
                match = re.search(pattern, f.read(), re.M)
        except OSError:
            continue
        if match and match.lastindex == 2:
            return int(match.group(1)), int(match.group(2))
        if match:
            return int(match.group(1)) // 1000, int(match.group(1)) % 1000 // 10
    return None


def cuda_include_dirs() -> tuple[str, ...]:
    """Where cuda_fp16.h and cuda_bf16.h live: the nvidia-cuda-runtime wheel, else a CUDA toolkit
    (the first of `cuda_header_dirs()`)."""
    found = cuda_header_dirs()
    if not found:
        raise RuntimeError("CUDA headers (cuda_fp16.h) not found: pip install nvidia-cuda-runtime, or set CUDA_HOME")
    return (found[0],)


def tma_enabled() -> bool:
    """Whether sm_90 pipelines may fill their stages by TMA: yes unless TILEWORKBENCH_NO_TMA is set
    (to 1, say), which keeps them on cp.async. Read when a kernel is loaded."""
    return not os.environ.get("TILEWORKBENCH_NO_TMA")


def build(fn: Function, arch: str, threads: int | None = None, tma: bool | None = None) -> CompiledKernel:
    """Generate and compile (through the cache) one specialization for `arch`; no GPU needed. The
    record holds every stage's text, the resources, the occupancy and the generator's notes.
    A compile error is raised at the kernel source line it comes from. `tma` (default:
    `tma_enabled()`) lets sm_90 pipelines fill their stages by TMA.

    Where the kernel leaves the blocks per SM to the compiler, ptxas spends registers freely (a 16K-element
    row softmax took 80 and ran one block of 512 threads per SM), so a kernel whose registers keep blocks
    off its SMs is compiled again asking for more blocks per SM (the most that 32 registers would allow
    first, three tries at most), and the first compile that spills no more than the free one is taken
    (an `occupancy` hint is the least asked for)."""
    from ..ir import print_function
    from .compiled import CompiledKernel
    tma = tma_enabled() if tma is None else tma
    generated, module = _compile(fn, arch, threads, tma, None)
    for blocks in _occupancy_aims(generated, module, arch):
        candidate = _compile(fn, arch, threads, tma, blocks)
        if _spills(candidate) <= _spills((generated, module)):
            generated, module = candidate
            break
    texts = {"ir": print_function(fn), "cuda": generated.source, "ptx": module.ptx, "log": module.log}
    return CompiledKernel.from_cubin(generated.name, module.cubin, module.arch, generated.threads, kernel=fn.name,
                                     texts=texts, resources=module.kernels[generated.name],
                                     dynamic_shared_bytes=generated.smem_bytes, notes=tuple(generated.notes),
                                     tensor_maps=tuple(generated.tensor_maps), generated=generated)


def _compile(fn: Function, arch: str, threads: int | None, tma: bool, min_blocks: int | None):
    from .cache import compile_cached
    generated = generate(fn, threads=threads, arch=arch, tma=tma, min_blocks=min_blocks)
    try:
        module = compile_cached(generated.source, arch=generated.arch or arch, options=COMPILE_OPTIONS,
                                header_version=HEADER_VERSION, include_paths=(str(INCLUDE_DIR), *cuda_include_dirs()))
    except NvrtcError as e:
        raise _at_source_line(e, fn, generated) from None
    return generated, module


def _spills(compiled) -> tuple[int, int]:
    resources = compiled[1].kernels[compiled[0].name]
    return resources.local_bytes, (resources.spill_stores or 0) + (resources.spill_loads or 0)


def _occupancy_aims(generated: GeneratedKernel, module, arch: str) -> list[int]:
    """Blocks per SM to ask ptxas for, most first, three at most: those that fewer registers than the free
    compile's (in ptxas's steps of 8) would let onto an SM (none where the tensor-core plan decides)."""
    from .occupancy import theoretical_occupancy
    if not generated.free_blocks:
        return []
    resources = module.kernels[generated.name]
    shared = resources.shared_static_bytes + generated.smem_bytes
    now = theoretical_occupancy(arch, generated.threads, resources.registers, shared).blocks_per_sm
    blocks = {theoretical_occupancy(arch, generated.threads, cap, shared).blocks_per_sm
              for cap in range(32, resources.registers, 8)}
    return sorted((b for b in blocks if b > now), reverse=True)[:3]


def _at_source_line(error: NvrtcError, fn: Function, generated: GeneratedKernel) -> NvrtcError:
    """The error located at the kernel line of its first diagnostic that the #line directives of the
    generated code (or a template's instantiation point) lead back to."""
    locs = {}
    for op in fn.walk():
        if op.loc:
            locs.setdefault((op.loc.filename, op.loc.line), op.loc)
    for d in error.diagnostics:
        for filename in {f for f, _ in locs}:
            line = d.line_in(line_file(filename))
            loc = locs.get((filename, generated.line_map.get((filename, line), line)))
            if loc is not None:
                return NvrtcError(f"CUDA compilation of kernel `{fn.name}` failed: {d.message}\n"
                                  f"(in the CUDA generated for this line: `--show cuda` shows it)",
                                  error.log, error.diagnostics, loc)
    return error


# Loaded kernels by (program fingerprint, arch, device): keyed on content, so a kernel redefined
# in a notebook cell never finds the module of the one it replaced, and equal programs share one.
_loaded: dict = {}


def load(fn: Function, arch: str | None = None, tma: bool | None = None) -> GpuKernel:
    arch = arch or driver.device_arch()
    tma = tma_enabled() if tma is None else tma
    key = (fn.fingerprint(), arch, driver.current_device(), tma)
    kernel = _loaded.get(key)
    if kernel is None:
        compiled = build(fn, arch, tma=tma)
        function = driver.load_function(compiled.cubin, compiled.name, compiled.dynamic_shared_bytes)
        kernel = _loaded[key] = GpuKernel(compiled, function, arch)
    return kernel


# ---- the launch fast path -------------------------------------------------------------------------
#
# A launch packs its configuration (grid, block, shared memory, stream) and its arguments into one
# buffer allocated once, with one precompiled struct.Struct, and calls cuLaunchKernelEx with four
# arguments that never change: no per-launch objects, and the cheapest foreign call ctypes makes.


# struct codes of the scalar parameter types; bfloat16 and fp8 travel as their bits
_STRUCT_CODES = {"bool_": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
                 "uint32": "I", "uint64": "Q", "float16": "e", "float32": "f", "float64": "d"}
# Python floats strictly inside this bound round to a finite float32, which struct's "f" packs exactly
# as NumPy rounds; at it or beyond (and for nan) NumPy converts, giving inf with its overflow warning.
FLOAT32_FINITE = float.fromhex("0x1.ffffffp+127")


def _scalar_expression(name: str, dtype, example, env: dict, read: str | None = None) -> tuple[str, str]:
    """(struct code, Python expression of what it packs) for the scalar argument `name` (read as
    `read`, an item of a tuple say), whose launches pass values of the type of `example`."""
    read = read or name
    code = _STRUCT_CODES.get(dtype.name)
    if code is not None and (dtype.is_integral or dtype.name == "bool_" or type(example) is dtype.numpy.type):
        return code, read  # struct checks an int's range; a NumPy scalar of the parameter's own dtype is exact
    if code is not None:  # rounded (and overflowing to inf) as NumPy does
        env[f"make_{name}"], env["FLOAT32_FINITE"] = dtype.numpy.type, FLOAT32_FINITE
        if dtype.name == "float32" and type(example) is float:
            return code, f"({read} if -FLOAT32_FINITE < {read} < FLOAT32_FINITE else make_{name}({read}))"
        return code, f"make_{name}({read})"
    if type(example) is dtype.numpy.type:  # a bfloat16 or fp8 scalar: its bytes, the cheapest read of its bits
        return f"{dtype.itemsize}s", f"{read}.tobytes()"
    bits = np.dtype(f"uint{dtype.bitwidth}")  # converted to bfloat16 or fp8 first
    env[f"bits_{name}"] = lambda value, numpy=dtype.numpy: np.array(value, dtype=numpy).view(bits).item()
    return bits.char, f"bits_{name}({read})"


def _array_expressions(name: str, position: int, example, ndim: int, env: dict,
                       read: str | None = None) -> tuple[list[str], str, list[str]]:
    """(checks, reads, expressions): what the argument `name` (read as `read`, an item of a list
    say) must be for this launcher, a statement that reads what its values need, and its pointer,
    shape and strides in elements, each read the cheapest way its framework allows (whole tuples
    read once and indexed: a call with `*tuple` arguments costs as much as the pack itself; the
    shape, read in the checks, tells the rank too)."""
    read = read or name
    env[f"dtype_{name}"] = example.dtype
    dims = range(ndim)
    shape = [f"shape_{name}[{d}]" for d in dims]
    if is_cupy_array(example):  # its shape and strides are tuples built at each read
        return ([f"{read}.dtype == dtype_{name}", f"len(shape_{name} := {read}.shape) == {ndim}"],
                f"strides_{name} = {read}.strides",
                [f"{read}.data.ptr"] + shape + [f"strides_{name}[{d}] // {example.itemsize}" for d in dims])
    if is_torch_tensor(example):  # torch dtypes are singletons
        return ([f"{read}.dtype is dtype_{name}", f"len(shape_{name} := {read}.shape) == {ndim}", f"{read}.is_cuda"],
                f"stride_{name} = {read}.stride()",
                [f"{read}.data_ptr()"] + shape + [f"stride_{name}[{d}]" for d in dims])
    env[f"describe_{name}"] = lambda value: device_array(value, position)
    return ([f"{read}.dtype == dtype_{name}", f"{read}.ndim == {ndim}"], f"described_{name} = describe_{name}({read})",
            [f"described_{name}.ptr"] + [f"described_{name}.shape[{d}]" for d in dims]
            + [f"described_{name}.strides[{d}]" for d in dims])


class Launcher:
    """One argument profile of a kernel, ready to launch: the loaded kernel, its launch buffer, and
    functions generated for the profile (as dataclasses generate theirs): `matches(args)`, whether
    arguments have this profile, and `relaunch(stream, grid, args)`, which checks the same, writes
    the grid, the stream and the arguments into the buffer with one precompiled struct and launches,
    or returns False. `launcher.source` shows the generated functions."""

    def __init__(self, fn: Function, gpu: GpuKernel, args, device: int):
        self.fn, self.gpu, self.device = fn, gpu, device
        self.threads = gpu.compiled.threads
        self.smem = gpu.compiled.dynamic_shared_bytes
        self.function = int(gpu.function.ptr)  # the CUfunction
        self.fallback = None  # the launcher of the cp.async variant, for arrays no tensor map describes
        names = [f"a{k}" for k in range(len(args))]
        env, checks, reads, values, codes = {}, [], [], [], []
        arrays = {}  # runtime parameter position -> (dtype name, pointer, shape and stride expressions)
        params, taken, lists = iter(fn.params), [], []
        # what the C launcher needs: per argument (kind, type, dtype or value, rank or struct code,
        # itemsize, index of its first value among `codes`), and runtime array position -> argument
        native_arguments, native_arrays, native_fits = [], {}, True

        def add(value, key: str, read: str, position: int):
            """What the argument read as `read` must be, and what of it is packed: a list or tuple
            item by item, each array or scalar in it being the next of the specialization's params."""
            nonlocal native_fits
            env[f"type_{key}"] = type(value)
            checks.append(f"type({read}) is type_{key}")
            if isinstance(value, (list, tuple)):
                native_fits = False  # lists and tuples of arrays: the Python path
                if isinstance(value, list):
                    lists.append(read)
                checks.append(f"len({read}) == {len(value)}")
                for i, item in enumerate(value):
                    add(item, f"{key}_{i}", f"{read}[{i}]", position)
                return
            p = next(params)
            taken.append(p)
            if p.kind == "constant":
                env[f"value_{key}"] = value
                checks.append(f"{read} == value_{key}")
                native_arguments.append((native_launch.CONSTANT, type(value), value, 0, 0, len(codes)))
            elif p.kind == "array":
                kind = native_launch.array_kind(value)
                native_fits = native_fits and kind is not None
                native_arrays[fn.runtime_params.index(p)] = len(native_arguments)
                native_arguments.append((kind, type(value), value.dtype, p.type.ndim,
                                         getattr(value, "itemsize", 1), len(codes)))
                array_checks, array_read, expressions = _array_expressions(key, position, value, p.type.ndim, env,
                                                                           read)
                checks.extend(array_checks)
                reads.append(array_read)
                values.extend(expressions)
                codes.extend(["Q"] + ["i"] * (2 * p.type.ndim))
                arrays[fn.runtime_params.index(p)] = (p.type.dtype.name, expressions)
            else:
                code, expression = _scalar_expression(key, p.type.dtype, value, env, read)
                native_fits = native_fits and native_launch.packs_scalar(code, p.type.dtype, value)
                native_arguments.append((native_launch.SCALAR, type(value), None, ord(code[-1]), 0, len(codes)))
                values.append(expression)
                codes.append(code)
        parameters = []  # the kernel's parameter names, for the legend
        for k, (value, name) in enumerate(zip(args, names)):
            first = len(taken)
            add(value, name, name, k)
            parameters.append(taken[first].name.split("[")[0] if len(taken) > first else "()")
        maps = []  # one expression per tensor map parameter: its bytes, or None
        native_maps = []  # (argument, dtype name, box, swizzle, index among `codes`)
        for param in gpu.compiled.tensor_maps:
            dtype, (ptr, *rest) = arrays[param.array]
            ndim = len(rest) // 2
            maps.append(f"encode({dtype!r}, {ptr}, ({', '.join(rest[:ndim])},), ({', '.join(rest[ndim:])},), "
                        f"{param.box!r}, {param.swizzle})")
            native_maps.append((native_arrays[param.array], dtype, tuple(param.box), param.swizzle, len(codes)))
            codes.append(_TENSOR_MAP_CODE)
        self.struct, self.buffer, params, offsets = _launch_buffer(codes)
        legend = ", ".join(f"{name}: {parameter}" for name, parameter in zip(names, parameters))
        # With one device every context is on it, and asking costs a driver call per launch
        device_check = ["get_device() == device"] if driver.device_count() > 1 else []
        conditions = " and\n            ".join(checks + device_check) or "True"
        configuration = f"grid[0], grid[1], grid[2], {self.threads}, 1, 1, {self.smem}, stream"
        launch_call = "launch_kernel(buffer, function, params, None)"
        env.update(pack_into=self.struct.pack_into, buffer=self.buffer, lock=threading.Lock(), params=params,
                   launch_kernel=driver.launch_kernel_function(), function=ctypes.c_void_p(self.function),
                   get_device=driver.current_device, device=device, stream_handle=stream_handle,
                   failed=self._failed, encode=tensor_maps.encode, fallback=self._fallback,
                   is_capturing=driver.stream_is_capturing, normalize_grid=normalize_grid)
        unpack = (f"    try:\n        {', '.join(names)}, = args\n    except ValueError:  # another count\n"
                  f"        return False\n" if names else "    if args:\n        return False\n")
        # tensor maps, encoded (or found in the cache) at each launch: an array none describes
        # launches the cp.async variant instead
        encoding = (f"    maps = ({', '.join(maps)},)\n"
                    f"    if None in maps:\n        return fallback(stream, grid, args)\n") if maps else ""
        # cuTile refuses lists in graph capture; refusing them here too keeps such programs portable
        refuse_capture = (f"        if is_capturing(stream):\n            raise RuntimeError({_LIST_IN_GRAPH!r})\n"
                          if lists else "")
        packed = [configuration] + values + [f"maps[{k}]" for k in range(len(maps))]
        self.source = (
            f"# {fn.name}({legend})\n"
            f"def matches(args):\n{unpack}    return ({conditions})\n\n"
            f"def relaunch(stream, grid, args):\n"
            f"    if not isinstance(args, tuple):\n        return False\n"
            f"    grid = normalize_grid(grid)\n{unpack}"
            f"    if not ({conditions}):\n        return False\n"
            + "".join(f"    {read}\n" for read in reads)
            + f"{encoding}"
            f"    lock.acquire()  # one buffer: pack and launch as one step\n"
            f"    try:\n"
            f"        if type(stream) is not int:\n            stream = stream_handle(stream)\n"
            f"{refuse_capture}"
            f"        pack_into(buffer, 0, {', '.join(packed)})\n"
            f"        status = {launch_call}\n"
            f"        if status == {driver.CUDA_ERROR_INVALID_CONTEXT}:  # a thread that has not used CUDA yet\n"
            f"            get_device()  # makes the device's primary context current\n"
            f"            status = {launch_call}\n"
            f"    except Exception as error:\n        status = error\n"
            f"    finally:\n        lock.release()\n"
            f"    if status:\n        failed(status, grid, args)\n"
            f"    return True\n")
        exec(compile(self.source, f"<launcher of {fn.name}>", "exec"), env)
        self.params = params
        self.matches, self.relaunch = env["matches"], env["relaunch"]
        # the same launch from C where it builds here (runtime/native_launch.py): the Python relaunch stays
        # behind it for whatever C leaves to Python
        self.native = None
        self.driver_call = driver.launch_kernel_function()  # the C launcher calls it by address: kept alive here
        if native_fits and not device_check:
            self.native = native_launch.launcher(self.function, self.threads, self.smem, offsets, native_arguments,
                                                 native_maps, self.relaunch, later=self._launch_from_c)
        if self.native is not None:
            self._launch_from_c(self.native)

    def _launch_from_c(self, native) -> None:
        """Launch by `native` (the same launch from C) from now on: ct.launch calls `relaunch`."""
        self.native, self.relaunch = native, native.relaunch

    def __call__(self, stream, grid, args):
        if not self.relaunch(stream, grid, args):
            raise TypeError(f"Arguments do not fit this launcher of `{self.fn.name}` (or another device is current)")

    def _fallback(self, stream, grid, args) -> bool:
        """Launch the kernel's cp.async variant (loaded on first need) with these arguments."""
        if self.fallback is None:
            self.fallback = Launcher(self.fn, load(self.fn, self.gpu.arch, tma=False), args, self.device)
        return self.fallback.relaunch(stream, grid, args)

    def _failed(self, failure, grid, args):
        """A launch that raised (a value that does not fit its parameter, an unknown stream) or that
        the driver refused (a CUresult)."""
        if isinstance(failure, int):
            raise LaunchError(self.describe_failure(str(driver.CudaDriverError(failure, "cuLaunchKernelEx")),
                                                    grid)) from None
        if isinstance(failure, struct.error):
            raise self._misfit(args) from None
        raise failure

    def _misfit(self, args) -> Exception:
        """The error naming the argument that does not fit its parameter (struct only says that one did not)."""
        positions = [k for k, value in enumerate(args) for _ in argument_leaves((value,))]
        for p, value, position in zip(self.fn.params, argument_leaves(args), positions):
            if p.kind == "scalar" and p.type.dtype.is_integral:
                try:  # the range check of the first launch, with its message
                    param_spec(p.name, value, position, constant=False, int64_scalar=p.type.dtype == int64)
                except ArgumentValueError as error:
                    return error
            elif p.kind == "array":
                array = device_array(value, position)
                if any(not -2**31 <= v < 2**31 for v in array.shape + array.strides):
                    return ArgumentValueError(f"Invalid kernel argument #{position}: shape {array.shape} and strides "
                                              f"{array.strides} (in elements) must fit 32 bits (parameter {p.name})")
        return ArgumentValueError("The stream handle does not fit 64 bits")

    def describe_failure(self, error: str, grid) -> str:
        config = (f"kernel `{self.gpu.compiled.name}`, grid {tuple(grid)}, {self.threads} threads per block, "
                  f"{self.smem} bytes of dynamic shared memory, {self.gpu.compiled.registers} registers per thread")
        hint = _HINTS.get(error.split(":")[0].strip(), "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing launch")
        return f"{error}\n  {config}\n  hint: {hint}"


_LIST_IN_GRAPH = ("List argument in CUDAGraph isn't supported yet: a launch with a list of arrays cannot be "
                  "captured into a CUDA graph; pass the arrays as separate arguments")


# cuLaunchKernelEx's CUlaunchConfig (cuda.h), at the start of a launcher's buffer: grid x, y, z,
# block x, y, z, dynamic shared bytes (uint32 each), the stream (at byte 32), then no attributes
# (a null pointer and a count of 0, 16 bytes of zeros). The kernel's parameters follow it.
LAUNCH_CONFIG = "7I4xQ16x"
LAUNCH_CONFIG_BYTES = struct.calcsize("=" + LAUNCH_CONFIG)
_TENSOR_MAP_CODE = f"{tensor_maps.TENSOR_MAP_BYTES}s"  # a CUtensorMap's bytes, 64-byte aligned


def _launch_buffer(codes: list[str]):
    """A struct for the launch configuration followed by the kernel's parameters, laid out as the
    CUDA ABI lays them (each at its natural alignment from the first parameter, a tensor map at 64
    bytes), a buffer for it, the array of pointers to each parameter that cuLaunchKernelEx takes,
    and each parameter's offset from the first.
    The buffer is placed so that the parameters start at a 64-byte aligned address: a tensor map's
    bytes are then 64-byte aligned in host memory too, as a CUtensorMap is."""
    fmt, offsets, end = "=" + LAUNCH_CONFIG, [], 0  # `end`: bytes of parameters so far
    for code in codes:
        size = struct.calcsize("=" + code)
        pad = -end % (64 if code == _TENSOR_MAP_CODE else size)
        fmt += "x" * pad + code
        offsets.append(LAUNCH_CONFIG_BYTES + end + pad)
        end += pad + size
    memory = ctypes.create_string_buffer(LAUNCH_CONFIG_BYTES + end + 63)
    shift = -(ctypes.addressof(memory) + LAUNCH_CONFIG_BYTES) % 64
    buffer = (ctypes.c_char * (LAUNCH_CONFIG_BYTES + end)).from_buffer(memory, shift)  # keeps `memory` alive
    base = ctypes.addressof(buffer)
    params = (ctypes.c_void_p * max(len(offsets), 1))(*(base + o for o in offsets))
    return struct.Struct(fmt), buffer, params, [o - LAUNCH_CONFIG_BYTES for o in offsets]


class LaunchError(RuntimeError):
    """A GPU launch failed; the message names the kernel, its launch configuration and a likely cause."""


_HINTS = {
    "CUDA_ERROR_OUT_OF_RESOURCES": "too many registers or too much shared memory for this block size: "
                                   "use smaller tiles",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "an access outside an array: run the same launch on NumPy arrays (the "
                                  "interpreter's checked mode names the line and the index)",
    "CUDA_ERROR_INVALID_VALUE": "the grid or the shared memory exceeds the device's limits",
}


def launch_device() -> int:
    """The device a launch goes to (0 with one device: then nothing is asked); a clear error without one."""
    try:  # with one device there is nothing to ask (launchers then make a context current where needed)
        return driver.current_device() if driver.device_count() > 1 else 0
    except Exception as e:
        raise RuntimeError(f"No CUDA GPU is available ({type(e).__name__}: {e}). To run the kernel on the "
                           f"interpreter, pass NumPy arrays to ct.launch.") from None


def launcher(fn: Function, args, device: int) -> Launcher:
    """A launcher of the specialization `fn` for arguments of the profile of `args` on `device`
    (compiled and loaded on first need): what ct.launch keeps per argument profile."""
    return Launcher(fn, load(fn), args, device)
