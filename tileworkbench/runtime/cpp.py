"""Kernels written in CUDA C++ (`%%tilekernel --lang cpp` cells) over the tile header library.

    kernel = CppKernel(source, "<cell>")           # parses the __global__ functions, compiles nothing
    module = kernel.compile("sm_90")                # NVRTC through the compile cache; no GPU needed
    kernel.compiled("sm_90")                        # its record: texts, resources, occupancy (runtime.compiled)
    kernel.parameters("sm_90")                      # what the compiler made of each parameter (from PTX)
    kernel.launch(grid, block, (x, y, n))           # on the GPU: arrays become device pointers

The source is compiled as one translation unit with `tileworkbench/tile.cuh` and CUDA's fp16/bf16
headers on the include path. Parameters are read back from the PTX entry (`.param .u64 .ptr`,
`.param .f32`, `.param .align 2 .b8 h[2]`...), so arguments are packed exactly as the compiler laid
them out, and a wrong argument is refused before the launch with the C++ declaration it missed.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import SourceLoc, TileCompilerExecutionError
from .compiled import CompiledKernel
from .nvrtc import NvrtcError

# `extern "C" __global__ void __launch_bounds__(256) scale(const float* x, ...)`: after `__global__`,
# the first `identifier(` that is not an attribute names the kernel
_CALL = re.compile(r"(\w+)\s*\(")
_ATTRIBUTES = {"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "__declspec", "alignas"}
# one PTX entry parameter: `.param .u64 .ptr .global .align 1 scale_param_0` or `.param .align 2 .b8 p[2]`
_PTX_PARAM = re.compile(r"\.param\s+(?P<attrs>(?:\.\w+\s+)*?)(?:\.align\s+(?P<align>\d+)\s+)?(?P<type>\.[a-z]\d+)"
                        r"(?P<more>(?:\s+\.\w+)*(?:\s+\.align\s+\d+)?)\s+\w+(?:\[(?P<count>\d+)\])?")
_SCALAR_CODES = {".u8": "B", ".s8": "b", ".b8": "B", ".u16": "H", ".s16": "h", ".b16": "H", ".u32": "I",
                 ".s32": "i", ".b32": "I", ".u64": "Q", ".s64": "q", ".b64": "Q", ".f32": "f", ".f64": "d"}


@dataclass(frozen=True)
class CppParameter:
    """One kernel parameter: its C++ declaration and the PTX parameter the compiler made of it."""

    declaration: str   # as written: "const float* __restrict__ x"
    ptx_type: str      # ".u64", ".f32", ".s32", ".f16"/".bf16" (declared so), or ".b8" for parameters passed as bytes
    size: int          # bytes
    align: int
    pointer: bool      # declared with a `*` (PTX does not always mark pointers)

    @property
    def name(self) -> str:
        match = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", self.declaration)
        return match.group(1) if match else self.declaration


class CppKernel:
    """A `__global__` function of a C++ cell. `name` picks one when the source defines several, and
    names what NVRTC instantiates: "scale", "scale<float, 256>" (a template's instance),
    "ops::scale" (in a namespace). `name_at` is (line, text) where `name` is written, for errors."""

    lang = "cpp"
    dialect = "tw::"  # the project's tile header; TileCppKernel is NVIDIA's cuda::tiles
    marker = "__global__"
    assembly_stage = "ptx"  # the stage whose text NVRTC hands the assembler

    def __init__(self, source: str, filename: str, name: str | None = None, first_line: int = 1,
                 name_at: tuple[int, str] | None = None):
        self.source, self.filename, self.first_line, self.name_at = source, filename, first_line, name_at
        kernels = {found.name: found for found in _kernels(source, self.marker)}
        if not kernels:
            raise TileCompilerExecutionError(
                f"A --lang cpp cell must define a kernel: {self.marker} void name(...) {{ ... }}")
        base = re.sub(r"<.*", "", name).split("::")[-1].strip() if name else None
        if base is not None and base not in kernels:
            raise TileCompilerExecutionError(f"The cell defines no {self.marker} function named {base!r} "
                                             f"(it defines {', '.join(kernels)})")
        self.name = base or list(kernels)[-1]  # the Python name it is bound to
        self.template = template = kernels[self.name].template
        if template and "<" not in (name or ""):
            raise TileCompilerExecutionError(
                f"`{self.name}` is a function template {template}: name the instance to compile, e.g. "
                f"%%tilekernel --lang cpp \"{self.name}<{', '.join(_example_arguments(template))}>\"")
        self.expression = name or self.name  # what NVRTC is asked to instantiate and name
        self.declarations = [d.strip() for d in _split_parameters(kernels[self.name].parameters)]
        self.signature = f"({', '.join(self.declarations)})"
        self._modules: dict = {}   # arch -> CompiledModule
        self._errors: dict = {}    # arch -> the located compile error
        self._functions: dict = {}  # (arch, device) -> (cupy Module, its Function)
        self.last_timing = None  # set by a measured launch (--bench), read by the kernel inspector
        self.block = None   # (x, y, z) of the last launch, or the cell's --block: occupancy reports assume it
        self.last_log = None  # the whole compiler log of the last failed compile (`--show log` prints it)

    def __repr__(self) -> str:
        return f"<C++ tile kernel {self.expression}{self.signature}>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"C++ kernels are launched, not called: {self.name}.launch(grid, block, args)")

    # ---- compiling -------------------------------------------------------------------------------

    @property
    def compile_source(self) -> str:
        """What NVRTC compiles: the cell's text, numbered as the cell is (errors come back at cell lines)."""
        return f'#line {self.first_line} "{_FILE}"\n{self.source}'

    def compile(self, arch: str):
        """The compiled module for `arch` (through the compile cache). A compile error is raised at
        the cell line NVRTC names, with the quoted token it complains about underlined."""
        module = self._modules.get(arch)
        if module is None:
            if arch in self._errors:  # the source cannot change: the same error, without compiling again
                raise self._errors[arch]
            try:
                module = self._compile_module(arch)
            except NvrtcError as e:
                self.last_log = e.log
                self._errors[arch] = self._located(e, arch)
                raise self._errors[arch] from None
            self._modules[arch] = module
        return module

    def _compile_module(self, arch: str):
        from ..codegen import HEADER_VERSION, INCLUDE_DIR
        from .cache import compile_cached
        from .launch import cuda_include_dirs
        return compile_cached(self.compile_source, arch=arch, header_version=HEADER_VERSION,
                              include_paths=(str(INCLUDE_DIR), *cuda_include_dirs()),
                              name_expressions=(self.expression,))

    def _located(self, error: NvrtcError, arch: str) -> NvrtcError:
        """The first error in the cell at its line; else one about the kernel's name at `name_at`."""
        lines = self.source.splitlines()
        others = len(error.diagnostics) - 1
        more = f" (and {others} more error{'s' * (others > 1)}: `--show log` lists them)" if others else ""
        for d in error.diagnostics:
            line = d.line_in(_FILE)
            if line is None or not self.first_line <= line < self.first_line + len(lines):
                continue
            text = lines[line - self.first_line]
            col, end = _token_range(text, d.message)
            loc = SourceLoc(self.filename, line, col, line, end, self.name, text)
            return NvrtcError(f"{d.message}{more}", error.log, error.diagnostics, loc)
        for d in error.diagnostics:
            if d.filename == _NAME_MAP:  # NVRTC's own file of name expressions: the name is wrong
                message = f"the kernel name `{self.expression}`: {d.message}"
                loc = None
                if self.name_at:
                    line, text = self.name_at
                    col = text.find(self.expression)
                    col, end = (col, col + len(self.expression)) if col >= 0 else (0, len(text))
                    loc = SourceLoc(self.filename, line, col, line, end, self.name, text)
                return NvrtcError(message, error.log, error.diagnostics, loc)
        return error

    def cubin_name(self, arch: str) -> str:
        """The kernel's name in the cubin: its own when extern "C", else the mangled one NVRTC lowered."""
        return self.compile(arch).lowered_names[self.expression]

    def resources(self, arch: str):
        return self.compile(arch).kernels[self.cubin_name(arch)]

    def block_threads(self, arch: str) -> int:
        """The threads per block reports assume (the block is chosen at launch): the last launch's
        (or the cell's --block), else the kernel's __launch_bounds__, else 256."""
        if self.block:
            x, y, z = self.block
            return x * y * z
        try:
            bound = self.resources(arch).max_threads
        except Exception:  # a compile error: reported where the record is asked for
            bound = None
        return bound or 256

    def compiled(self, arch: str, threads: int | None = None, dynamic_shared_bytes: int = 0) -> CompiledKernel:
        """The record of this kernel compiled for `arch` (the same a tile kernel's build gives),
        launched with `threads` per block (default: `block_threads`) and `dynamic_shared_bytes`."""
        module = self.compile(arch)
        name = self.cubin_name(arch)
        return CompiledKernel.from_cubin(name, module.cubin, arch, threads or self.block_threads(arch),
                                         kernel=self.expression, resources=module.kernels[name],
                                         texts={"cuda": self.source, self.assembly_stage: module.ptx, "log": module.log},
                                         dynamic_shared_bytes=dynamic_shared_bytes)

    def parameters(self, arch: str) -> list[CppParameter]:
        """The kernel's parameters as the compiler laid them out."""
        ptx = self.compile(arch).ptx
        entry = re.search(rf"\.entry\s+{re.escape(self.cubin_name(arch))}\s*\(([^)]*)\)", ptx)
        found = list(_PTX_PARAM.finditer(entry.group(1))) if entry else []
        if len(found) != len(self.declarations):  # e.g. an unnamed or macro-made parameter list
            raise TileCompilerExecutionError(f"Cannot match the PTX parameters of `{self.name}` ({len(found)}) "
                                             f"to its declaration ({len(self.declarations)} parameters)")
        parameters = []
        for declaration, m in zip(self.declarations, found):
            ptx_type = m.group("type")
            width = int(ptx_type[2:]) // 8
            count = int(m.group("count") or 1)
            more_align = re.search(r"\.align\s+(\d+)", m.group("more") or "")
            align = int(m.group("align") or (more_align.group(1) if more_align else width))
            parameters.append(CppParameter(declaration, ptx_type, width * count, align, "*" in declaration))
        return parameters

    # ---- launching -------------------------------------------------------------------------------

    def pack(self, args, arch: str) -> bytes:
        """The parameter buffer for `args`, each at its alignment, as cuLaunchKernel reads it."""
        parameters = self.parameters(arch)
        if not isinstance(args, tuple):
            raise TypeError(f"Kernel arguments must be a tuple, got {type(args).__name__}")
        if len(args) != len(parameters):
            raise TypeError(f"`{self.name}{self.signature}` takes {len(parameters)} arguments, {len(args)} were given")
        buffer = bytearray()
        for k, (p, value) in enumerate(zip(parameters, args)):
            buffer += b"\0" * (-len(buffer) % p.align)
            buffer += _pack_one(p, value, k)
        return bytes(buffer)

    def function(self, arch: str):
        import cupy
        key = (arch, cupy.cuda.runtime.getDevice())
        loaded = self._functions.get(key)
        if loaded is None:
            module = cupy.cuda.function.Module()
            module.load(self.compile(arch).cubin)
            loaded = self._functions[key] = (module, module.get_function(self.cubin_name(arch)))  # module kept alive
        return loaded[1]

    def launch(self, grid, block, args, *, shared_bytes: int = 0, stream=None) -> None:
        """Launch on the current GPU: `grid` and `block` are ints or tuples of up to three ints."""
        import ctypes

        import cupy

        from .arrays import stream_handle
        from .driver import device_arch
        arch = device_arch()
        grid, block = launch_dims(grid, "grid"), launch_dims(block, "block")
        self.block = block
        function = self.function(arch)
        data = self.pack(args, arch)
        buffer = ctypes.create_string_buffer(data, max(len(data), 8))
        size = ctypes.c_size_t(len(data))
        # cuLaunchKernel's `extra`: the whole parameter buffer at once, laid out as packed above
        extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buffer), 2, ctypes.addressof(size), 0)
        handle = stream_handle(stream) if stream is not None else cupy.cuda.get_current_stream().ptr
        cupy.cuda.driver.launchKernel(int(function.ptr), *grid, *block, shared_bytes, handle, 0,
                                      ctypes.addressof(extra))


_FILE = "cell"  # the name NVRTC reports errors under; fixed so that the compile cache sees the same text
_NAME_MAP = "__nv_name_map"  # where NVRTC reports errors in a name expression


class _Global(NamedTuple):
    name: str
    parameters: str   # the parameter list's text
    template: str     # "<typename T, int TILE>" when declared under `template <...>`, else ""


# a string or character literal (kept), or a comment (blanked)
_COMMENTS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def _without_comments(source: str) -> str:
    """`source` with each comment blanked to spaces (newlines kept), so offsets and lines still hold:
    a parameter's comment (`const float* x,  // input, row-major`) is not a parameter, and a kernel
    commented out is not a kernel."""
    return _COMMENTS.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else re.sub(r"[^\n]", " ", m.group(0)),
                         source)


def _kernels(source: str, marker: str = "__global__"):
    """Each kernel (a function declared with `marker`), in order."""
    source = _without_comments(source)
    for found in re.finditer(rf"(?<!\w){marker}\b", source):
        # the declaration's start: after the previous statement or brace
        start = max(source.rfind(c, 0, found.start()) for c in ";{}") + 1
        template = re.search(r"\btemplate\s*(<.*>)", source[start:found.start()], re.S)
        template = " ".join(template.group(1).split()) if template else ""
        for call in _CALL.finditer(source, found.end()):
            if call.group(1) in _ATTRIBUTES:
                continue
            depth, end = 1, call.end()
            while end < len(source) and depth:
                depth += {"(": 1, ")": -1}.get(source[end], 0)
                end += 1
            yield _Global(call.group(1), source[call.end():end - 1], template)
            break


def _example_arguments(template: str) -> list[str]:
    """An example argument for each template parameter: float for a type, 128 for a value."""
    return ["float" if re.match(r"(typename|class)\b", p.strip()) else "128"
            for p in _split_parameters(template[1:-1])]


def _split_parameters(text: str) -> list[str]:
    """Split a parameter list at top-level commas (templates' commas stay)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "<([" and 1 or (-1 if ch in ">)]" else 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip() and current.strip() != "void":
        parts.append(current)
    return parts


def _token_range(text: str, message: str) -> tuple[int, int]:
    """Columns (0-based, end exclusive) to underline: the first quoted token of NVRTC's message
    found in the line (`identifier "y" is undefined`), else the line without its indentation (also for
    `expected a ";"`: the token is the one missing)."""
    quoted = [] if message.startswith("expected") else re.findall(r'"([^"]+)"', message)  # a missing token
    for token in quoted:
        at = re.search(rf"(?<!\w){re.escape(token)}(?!\w)", text) if re.fullmatch(r"\w+", token) else None
        at = at or (re.search(re.escape(token), text) if token in text else None)
        if at:
            return at.start(), at.end()
    stripped = text.rstrip()
    start = len(stripped) - len(stripped.lstrip())
    return start, max(len(stripped), start + 1)


# CUDA's limits on every GPU the workbench targets: per dimension, and threads in a block
DIM_LIMITS = {"grid": (2**31 - 1, 65535, 65535), "block": (1024, 1024, 64)}
BLOCK_THREADS = 1024


def launch_dims(value, what: str) -> tuple[int, int, int]:
    """A grid or block (`what` names it: "grid", "block", "--block") as three ints within CUDA's limits."""
    dims = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else ()
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims):
        shown = repr(value)[:60] if isinstance(value, (int, float, str, tuple, list)) else f"a {type(value).__name__}"
        raise ValueError(f"{what} must be a positive int or a tuple of up to three, got {shown}")
    dims += (1,) * (3 - len(dims))
    limits = DIM_LIMITS[what.lstrip("-")]
    for axis, (d, limit) in enumerate(zip(dims, limits)):
        if d > limit:
            raise ValueError(f"{what} {value!r}: dimension {'xyz'[axis]} is {d}, more than CUDA's limit of {limit}")
    if what.lstrip("-") == "block" and dims[0] * dims[1] * dims[2] > BLOCK_THREADS:
        raise ValueError(f"{what} {value!r}: {dims[0] * dims[1] * dims[2]} threads, more than CUDA's limit of "
                         f"{BLOCK_THREADS} threads per block")
    return dims


def _pack_one(p: CppParameter, value, position: int) -> bytes:
    import numpy as np

    from ..arguments import is_array_like
    where = f"argument #{position} for `{p.declaration}`"
    if is_array_like(value):
        if not (p.size == 8 and p.ptx_type in (".u64", ".s64", ".b64")):
            raise TypeError(f"{where}: an array is passed as a device pointer, but the parameter is not one")
        if isinstance(value, np.ndarray):
            raise TypeError(f"{where}: a NumPy array lives on the host; C++ kernels need device arrays "
                            f"(cupy.asarray(x))")
        from .arrays import device_array
        return struct.pack("=Q", device_array(value, position).ptr)
    if p.pointer:
        raise TypeError(f"{where}: expected a device array, got {type(value).__name__}")
    if p.ptx_type in (".f16", ".bf16"):  # a __half or __nv_bfloat16 known from its declaration: the value converts
        import ml_dtypes
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise TypeError(f"{where}: expected a number, got {type(value).__name__}")
        return np.asarray(float(value), np.float16 if p.ptx_type == ".f16" else ml_dtypes.bfloat16).tobytes()
    if isinstance(value, np.generic) and value.dtype.itemsize == p.size and p.ptx_type == ".b8":
        return value.tobytes()  # e.g. a np.float16 for a __half parameter
    if p.ptx_type == ".b8" and p.size == 2 and isinstance(value, (int, float)):
        return np.float16(value).tobytes()  # __half, the common 2-byte-struct parameter
    code = _SCALAR_CODES.get(p.ptx_type) if p.ptx_type != ".b8" or p.size == 1 else None
    if code is None:
        raise TypeError(f"{where}: a {p.size}-byte parameter passed as bytes; give a NumPy scalar of that size")
    if code in "fd":
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise TypeError(f"{where}: expected a number, got {type(value).__name__}")
        return struct.pack("=" + code, float(value))
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where}: expected an int, got {type(value).__name__}")
    value = int(value)
    if value < 0:
        code = code.lower()  # PTX spells int parameters .u32 too: the value decides the sign
    try:
        return struct.pack("=" + code, value)
    except struct.error:
        raise OverflowError(f"{where}: {value} does not fit {p.size * 8} bits") from None
