"""CUDA Tile C++ (`cuda::tiles`, `__tile_global__`) cells, compiled by NVRTC's tile mode and tileiras.

    kernel = TileCppKernel(source, "<cell>")       # the cell as written: #include <cuda_tile.h>, ...
    module = kernel.compile("sm_90")                # NVRTC -enable-tile -> Tile IR -> tileiras -> cubin
    kernel.launch(grid, None, (x, y, n))            # on the GPU, with one thread per block

NVIDIA's tile compiler, not a look-alike header, gives the cell its meaning: NVRTC (13.4+) compiles
the cell to Tile IR bytecode (`nvrtcGetTileIR`), and `tileiras` (the compiler cuTile uses, with
`ptxas` beside it and libnvvm) turns that into a cubin. Both run without a GPU, so the cache,
resources, occupancy and SASS work on any machine. The tile compiler chooses the threads of a block
(recorded in the cubin); the launch asks for one, as `kernel<<<grid, 1>>>` does in CUDA.

The module returned is the same `CompiledModule` the tile header's C++ cells get, with the Tile IR
assembly (tileirdisasm's text) where those have PTX: the stage between the source and the cubin.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ..errors import TileCompilerExecutionError
from .cpp import CppKernel, CppParameter, _split_parameters
from .cubin import read_resources

TILE_VERSION = "13.4"  # tileiras 13.4 cubins run on the CUDA 13.0 driver; NVRTC must write its bytecode
INSTALL_HINT = (f'pip install "nvidia-cuda-nvrtc=={TILE_VERSION}.*" "nvidia-cuda-tileiras=={TILE_VERSION}.*" '
                f'"nvidia-cuda-nvcc=={TILE_VERSION}.*" "nvidia-nvvm=={TILE_VERSION}.*" '
                f'"nvidia-cuda-runtime=={TILE_VERSION}.*"  (or: pip install "tileworkbench[nvrtc]")')
OPTIONS = ("-enable-tile", "-std=c++20", "-lineinfo")

# What NVRTC lacks that NVIDIA's kernels take from the C++ library (<cstdint>, <type_traits>, <cmath>);
# the includes of those headers resolve to nothing, so a cell pasted from an nvcc build compiles.
PRELUDE = """\
using int8_t = signed char; using uint8_t = unsigned char; using int16_t = short; using uint16_t = unsigned short;
using int32_t = int; using uint32_t = unsigned int; using int64_t = long long; using uint64_t = unsigned long long;
using size_t = decltype(sizeof(0)); using ptrdiff_t = decltype((int*)0 - (int*)0);
namespace std {
using ::int8_t; using ::uint8_t; using ::int16_t; using ::uint16_t; using ::int32_t; using ::uint32_t;
using ::int64_t; using ::uint64_t; using ::size_t; using ::ptrdiff_t;
template <bool C, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool C, class T, class F> using conditional_t = typename conditional<C, T, F>::type;
template <class A, class B> inline constexpr bool is_same_v = false;
template <class A> inline constexpr bool is_same_v<A, A> = true;
}
#define INFINITY __builtin_huge_valf()
#define NAN __builtin_nanf("")
"""
EMPTY_HEADERS = ("cstdint", "stdint.h", "cstddef", "stddef.h", "type_traits", "cmath", "math.h", "cstdio")

# `__tile_global__` kernels or the names of NVIDIA's header: what tells such a cell from a `tw::` one
_TILE_MARKERS = re.compile(r"__tile_global__|#\s*include\s*[<\"]cuda_tile\.h[>\"]|\bcuda\s*::\s*tiles\b")


def is_tile_cpp(source: str) -> bool:
    """Whether a C++ cell is CUDA Tile C++ (cuda_tile.h, cuda::tiles, __tile_global__) rather than
    SIMT C++ over the project's `tw::` header."""
    return bool(_TILE_MARKERS.search(source))


class TileCompilerUnavailableError(RuntimeError):
    """tileiras (or what it needs) is missing or does not match NVRTC; the message says what to install."""


class Toolchain:
    """Where tileiras and what it runs with were found, and the Tile IR versions it reads."""

    def __init__(self, bin_dir: str):
        self.bin_dir = bin_dir
        self.tileiras = os.path.join(bin_dir, "tileiras")
        disassembler = os.path.join(bin_dir, "tileirdisasm")  # the Tile IR as text, with its cell lines
        self.disassembler = disassembler if os.path.isfile(disassembler) else None
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        # tileiras loads $CUDA_HOME/nvvm/lib64/libnvvm.so before the libnvvm beside it: a CUDA_HOME
        # naming another (older) toolkit makes every compile fail with "failed to compile Tile IR
        # program". So it runs with its own root as CUDA_HOME where that root is laid out as a
        # toolkit, else without one (the wheels' layout: libnvvm in ../lib).
        root = os.path.dirname(os.path.abspath(bin_dir))
        self.env.pop("CUDA_HOME", None)
        if os.path.exists(os.path.join(root, "nvvm", "lib64", "libnvvm.so")):
            self.env["CUDA_HOME"] = root

    @functools.cached_property
    def version(self) -> str:
        """tileiras's release, e.g. "13.4.92" (cache keys and the version check)."""
        out = self._run("--version").stdout
        match = re.search(r"V(\d+\.\d+\.\d+)", out)
        return match.group(1) if match else out.strip().splitlines()[-1]

    @functools.cached_property
    def bytecode_versions(self) -> tuple[str, ...]:
        return tuple(self._run("--list-versions").stdout.split())

    def _run(self, *args, **kwargs):
        return subprocess.run([self.tileiras, *args], capture_output=True, text=True, env=self.env, **kwargs)


@functools.cache
def toolchain() -> Toolchain:
    """tileiras with ptxas beside it (or on PATH) and libnvvm at ../lib, from the nvidia-* wheels, a
    CUDA toolkit (CUDA_HOME) or PATH; raises TileCompilerUnavailableError saying what to install."""
    candidates = [os.path.join(p, "nvidia", "cu13", "bin") for p in sys.path if p]
    candidates += [os.path.join(h, "bin") for h in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if h]
    on_path = shutil.which("tileiras")
    candidates += [os.path.dirname(on_path)] if on_path else []
    found = next((d for d in candidates if os.path.isfile(os.path.join(d, "tileiras"))), None)
    if found is None:
        raise TileCompilerUnavailableError(f"CUDA Tile C++ needs NVIDIA's tile compiler, tileiras, which is not "
                                           f"installed. Install it with `{INSTALL_HINT}`")
    missing = [what for what, ok in (
        ("ptxas", os.path.isfile(os.path.join(found, "ptxas")) or shutil.which("ptxas")),
        ("libnvvm", any(os.path.exists(os.path.join(found, "..", lib, "libnvvm.so.4"))
                        for lib in ("lib", "lib64", os.path.join("nvvm", "lib64")))))
        if not ok]
    if missing:
        raise TileCompilerUnavailableError(f"tileiras ({found}) needs {' and '.join(missing)} beside it. Install "
                                           f"them with `{INSTALL_HINT}`")
    return Toolchain(found)


def no_tile_ir_text() -> str:
    """Why a compiled tile cell has no Tile IR text (tileirdisasm is missing or failed), and what to do."""
    chain = toolchain()
    where = (f"tileirdisasm is not beside tileiras ({chain.bin_dir})" if chain.disassembler is None else
             "tileirdisasm could not read the cell's Tile IR (`--show log` has its message)")
    return (f"No Tile IR text: {where}. The cell compiles and runs; --show ptx and --viz need the text. "
            f"tileirdisasm comes with tileiras: `{INSTALL_HINT}`")


def check_versions(chain: Toolchain) -> None:
    """NVRTC writes Tile IR of its own version; tileiras reads only the versions it lists."""
    from .nvrtc import _load, nvrtc_version
    major, minor = nvrtc_version()
    if (major, minor) < (13, 4):
        raise TileCompilerUnavailableError(f"NVRTC {major}.{minor} has no tile mode (13.4 or newer has). Install "
                                           f"it with `{INSTALL_HINT}`")
    if not hasattr(_load(), "nvrtcGetTileIR"):
        import importlib.metadata
        raise TileCompilerUnavailableError(
            f"cuda-bindings {importlib.metadata.version('cuda-bindings')} cannot read NVRTC's Tile IR "
            f"(nvrtcGetTileIR, new in 13.2): install a newer one with `pip install \"cuda-bindings>=13.3,<14\"`")
    if f"{major}.{minor}" not in chain.bytecode_versions:
        raise TileCompilerUnavailableError(
            f"NVRTC {major}.{minor} writes Tile IR {major}.{minor}, which tileiras {chain.version} cannot read (it "
            f"reads {', '.join(chain.bytecode_versions)}): install matching versions with `{INSTALL_HINT}`")


def include_dirs() -> tuple[str, ...]:
    """The CUDA headers a tile cell compiles with. NVRTC's bundled cuda_tile.h includes headers of its
    own release (cuda_tf32.h), so: the first installed headers at least as new as NVRTC, else NVRTC's
    own copy of them, extracted into the compile cache's directory (a torch build may pin older
    runtime headers). SIMT cells take the first headers found, whatever their version. Raises
    TileCompilerUnavailableError naming what was found and what to install."""
    from .cache import default_directory
    from .launch import cuda_header_dirs, cuda_headers_version
    from .nvrtc import bundled_headers, nvrtc_version
    needed = nvrtc_version()
    found = [(d, cuda_headers_version(d)) for d in cuda_header_dirs()]
    for directory, version in found:
        if version is not None and version >= needed:
            return (directory,)
    bundled = bundled_headers(default_directory())
    if bundled is not None:
        return (bundled,)
    release = ".".join(map(str, needed))
    seen = "; ".join(f"{d} (CUDA {'.'.join(map(str, v)) if v else 'of unknown version'})" for d, v in found)
    raise TileCompilerUnavailableError(
        f"CUDA Tile C++ under NVRTC {release} needs CUDA headers {release} or newer; found "
        f"{seen or 'no CUDA headers'}. Install them with `pip install \"nvidia-cuda-runtime=={release}.*\"`")


def unavailable_reason() -> str | None:
    """None when CUDA Tile C++ compiles here, else why not, with what to install."""
    from .nvrtc import NvrtcUnavailableError
    try:
        check_versions(toolchain())
        include_dirs()
    except (TileCompilerUnavailableError, NvrtcUnavailableError) as e:
        return str(e)
    return None


def tile_arch(arch: str) -> str:
    """tileiras's target for `arch`: the family (sm_90 for sm_90a); it picks arch-specific code itself."""
    return re.sub(r"[af]$", "", arch)


def compile_tile_cpp(source: str, *, arch: str = "sm_90", options=(), name_expressions=()):
    """Compile CUDA Tile C++ to a cubin for `arch`: NVRTC's tile mode, then tileiras. Errors in the
    source raise NvrtcError (with the whole log); a failing tileiras raises TileCompilerExecutionError."""
    from .nvrtc import CompiledModule, _interruptible, _load, compile_timeout_s, nvrtc_version, run_program
    chain = toolchain()
    check_versions(chain)
    nvrtc = _load()
    arch = tile_arch(arch)
    options = (f"-arch={arch}", *options)

    def tile_ir(program):
        from .nvrtc import _read
        return _read(nvrtc, program, nvrtc.nvrtcGetTileIRSize, nvrtc.nvrtcGetTileIR)
    bytecode, log, lowered = _interruptible(
        lambda: run_program(nvrtc, source, arch, options, "cell.cu", name_expressions, tile_ir,
                            headers={h: "" for h in EMPTY_HEADERS}), timeout_s=compile_timeout_s())
    cubin, assembly, tileiras_log = _assemble(chain, bytecode, arch)
    log = "\n".join(part for part in (log.strip(), tileiras_log.strip()) if part)
    return CompiledModule(source=source, arch=arch, options=options, ptx=assembly, cubin=cubin, log=log,
                          nvrtc_version=nvrtc_version(), kernels=read_resources(cubin), lowered_names=lowered)


def _assemble(chain: Toolchain, bytecode: bytes, arch: str) -> tuple[bytes, str, str]:
    """(cubin, Tile IR assembly, tileiras's output) of NVRTC's bytecode."""
    with tempfile.TemporaryDirectory(prefix="tileworkbench-tile-") as work:
        bc, cubin = os.path.join(work, "cell.tilebc"), os.path.join(work, "cell.cubin")
        with open(bc, "wb") as f:
            f.write(bytecode)
        done = chain._run(f"--gpu-name={arch}", "--lineinfo", "-o", cubin, bc)
        if done.returncode != 0:
            raise TileCompilerExecutionError(f"tileiras could not compile the cell's Tile IR for {arch}: "
                                             f"{(done.stderr or done.stdout).strip()}")
        log = done.stdout + done.stderr
        text = ""  # without tileirdisasm: no text, which --show ptx and --viz explain (no_tile_ir_text)
        if chain.disassembler is not None:
            # -g: each operation with its source location, which the access trace (tile_ir_trace) reads
            listing = subprocess.run([chain.disassembler, "-g", bc], capture_output=True, text=True, env=chain.env)
            text = listing.stdout if listing.returncode == 0 else ""
            log += "" if listing.returncode == 0 else f"\ntileirdisasm: {(listing.stderr or listing.stdout).strip()}"
        with open(cubin, "rb") as f:
            return f.read(), text, log


# C++ parameter types by their size and how they are packed (the PTX-like spelling CppParameter uses)
_SCALARS = {
    "bool": (".u8", 1), "char": (".s8", 1), "signed char": (".s8", 1), "unsigned char": (".u8", 1),
    "int8_t": (".s8", 1), "uint8_t": (".u8", 1), "short": (".s16", 2), "unsigned short": (".u16", 2),
    "int16_t": (".s16", 2), "uint16_t": (".u16", 2), "int": (".s32", 4), "unsigned": (".u32", 4),
    "unsigned int": (".u32", 4), "int32_t": (".s32", 4), "uint32_t": (".u32", 4), "long": (".s64", 8),
    "unsigned long": (".u64", 8), "long long": (".s64", 8), "unsigned long long": (".u64", 8),
    "int64_t": (".s64", 8), "uint64_t": (".u64", 8), "size_t": (".u64", 8), "ptrdiff_t": (".s64", 8),
    "float": (".f32", 4), "double": (".f64", 8), "__half": (".f16", 2), "half": (".f16", 2),
    "__nv_bfloat16": (".bf16", 2), "nv_bfloat16": (".bf16", 2),
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|std::|::)\s*")


class TileCppKernel(CppKernel):
    """A `__tile_global__` function of a CUDA Tile C++ cell; see the module docstring."""

    dialect = "cuda::tiles"
    marker = "__tile_global__"
    assembly_stage = "ir"  # NVRTC's tile mode gives Tile IR, which tileiras assembles: no PTX

    @property
    def compile_source(self) -> str:
        """What NVRTC compiles: the prelude, then the cell numbered as the cell is."""
        return f"{PRELUDE}{super().compile_source}"

    def _compile_module(self, arch: str):
        from .cache import default_cache
        from .launch import cuda_headers_version
        chain = toolchain()
        headers = include_dirs()
        options = (*OPTIONS, *(f"--include-path={p}" for p in headers))
        versions = ", ".join(".".join(map(str, cuda_headers_version(p) or ("?",))) for p in headers)
        return default_cache().get_or_compile(self.compile_source, tile_arch(arch), options,
                                              f"tileiras {chain.version}, CUDA headers {versions}, "
                                              f"{'Tile IR with locations' if chain.disassembler else 'no Tile IR text'}",
                                              compile_tile_cpp, (self.expression,))

    def block_threads(self, arch: str) -> int:
        """The threads per block the tile compiler chose (the cubin's required block size)."""
        try:
            return self.resources(arch).max_threads or 1
        except Exception:  # a compile error: reported where the record is asked for
            return 1

    def parameters(self, arch: str) -> list[CppParameter]:
        """The parameters as declared (template parameters replaced by the instance's arguments)."""
        substitutions = _template_arguments(self.template, self.expression)
        parameters = []
        for declaration in self.declarations:
            text = re.sub(r"\w+", lambda m: substitutions.get(m.group(0), m.group(0)), declaration)
            pointer = "*" in text
            if pointer:
                parameters.append(CppParameter(declaration, ".u64", 8, 8, True))
                continue
            base = " ".join(_QUALIFIERS.sub(" ", re.sub(r"\w+\s*$", "", text.split("=")[0])).split())
            if base not in _SCALARS:
                raise TileCompilerExecutionError(f"`{declaration}`: a CUDA Tile C++ kernel parameter the workbench "
                                                 f"can pass is a pointer or a scalar ({', '.join(_SCALARS)})")
            ptx_type, size = _SCALARS[base]
            parameters.append(CppParameter(declaration, ptx_type, size, size, False))
        return parameters

    def launch(self, grid, block, args, *, shared_bytes: int = 0, stream=None) -> None:
        """Launch on the current GPU with one thread per block: the cubin says how many it runs."""
        from .driver import device_arch
        super().launch(grid, 1, args, shared_bytes=shared_bytes, stream=stream)
        self.block = (self.block_threads(device_arch()), 1, 1)


def _template_arguments(template: str, expression: str) -> dict[str, str]:
    """{"T": "float", "TILE": "256"} for `<typename T, int TILE>` instantiated as `name<float, 256>`."""
    if not template or "<" not in expression:
        return {}
    names = [re.findall(r"\w+", p)[-1] for p in _split_parameters(template[1:-1]) if re.findall(r"\w+", p)]
    values = [v.strip() for v in _split_parameters(expression[expression.index("<") + 1:expression.rindex(">")])]
    return dict(zip(names, values))
