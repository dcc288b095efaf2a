"""The %%tilekernel cell magic: a tile kernel per cell, compiled, shown, launched and measured.

    %load_ext tileworkbench

    %%tilekernel --grid "(ct.cdiv(n, 1024),)" --args "a, b, c, 1024" --show ir
    def add(a, b, c, TILE: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))

The cell defines one kernel (the last `def`, or the one named on the header line) and any helper
functions it calls; `ct` is the tile language without an import. The kernel lands in the
notebook's namespace under its name; running the cell again redefines it. Line numbers in errors
and diagnostics are the cell's own (the %%tilekernel header is line 1).

A cell without a `def` may instead define a CuPy-style kernel, pasted as is: its `cupy.` (or
`cp.`) `ElementwiseKernel`/`ReductionKernel` are tileworkbench's. `--args` are then the call's
arguments; `--show`, `--viz`, `--bench` and `--sweep "TILE=256,1024"` (reductions: TM, TK) act on
the tile kernel the call runs, and without them the cell calls the kernel and shows its result.

`--lang cpp` cells hold CUDA C++ instead: one translation unit with the tile header library
(`#include <tileworkbench/tile.cuh>`) on the include path, compiled by NVRTC as the cell runs;
the last `__global__` function (or the named one) becomes a `CppKernel` launched with `--grid`,
`--block` and `--args` on the GPU.

Every run ends with a record of the kernel (specializations, resources, occupancy, last timing)
that the JupyterLab extension's kernel inspector reads (see inspector.py).
"""
from __future__ import annotations

import ast
import itertools
import linecache
import math
import shlex

from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .. import tile as ct
from ..errors import TileError, TileSyntaxError, UserInputError
from ..frontend.source import cell_filename
from ..runtime.nvrtc import NvrtcUnavailableError
from ..runtime.tile_cpp import TileCompilerUnavailableError
from ..userkernels.base import UserKernel
from .diagnostics import DIAGNOSTICS_MIME, TileKernelCellError, diagnostics_bundle, in_cell
from .inspector import KERNEL_MIME, LiveRecords

_cell_numbers = itertools.count(1)


def _unquote(text):
    if text and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _parse_sweep(text: str) -> dict[str, list]:
    """"TM=32,64,128 TN=32,64" -> {"TM": [32, 64, 128], "TN": [32, 64]}"""
    space = {}
    try:
        parts = shlex.split(text)
    except ValueError as e:
        raise TileKernelCellError(f"--sweep {text!r}: {e}", []) from None
    for part in parts:
        name, _, values = part.partition("=")
        if not name.isidentifier() or not values:
            raise TileKernelCellError(f"--sweep expects NAME=v1,v2,... items, got {part!r}", [])
        try:
            space[name] = [ast.literal_eval(v) for v in values.split(",")]
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise TileKernelCellError(f"--sweep {part!r}: each value must be a Python literal such as 64 or "
                                      f"1.5", []) from None
        for value in space[name]:
            _check_sweep_value(part, value)
    return space


def _check_sweep_value(part: str, value) -> None:
    """Values a kernel can take and the sweep's table can show: finite numbers a 64-bit int or a
    float holds (1e400 reads as inf, 10**30 fits no kernel parameter)."""
    if isinstance(value, (tuple, list)):
        for v in value:
            _check_sweep_value(part, v)
    elif isinstance(value, float) and not math.isfinite(value):
        raise TileKernelCellError(f"--sweep {part!r}: {value} is not a finite number", [])
    elif isinstance(value, int) and not -2**63 <= value < 2**64:
        raise TileKernelCellError(f"--sweep {part!r}: {value} does not fit in 64 bits", [])
    elif isinstance(value, complex):
        raise TileKernelCellError(f"--sweep {part!r}: {value} is complex; tile kernels take no complex numbers", [])


def _check_sweep_names(space: dict, *expressions: str) -> None:
    """Each swept name must appear in --grid or --args: a name neither uses would run the same
    launch for every value (and name a 'best' value that changed nothing)."""
    used = set()
    for text in expressions:
        try:
            used |= {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
        except SyntaxError:
            return   # evaluating the expression reports it
    unused = [name for name in space if name not in used]
    if unused:
        raise TileKernelCellError(f"--sweep: {', '.join(unused)} appears in neither --grid nor --args, so every "
                                  f"configuration would be the same launch; use the swept name there, e.g. --args "
                                  f"\"a, b, c, {unused[0]}\"", [])


def _check_arch(arch: str | None) -> None:
    from ..profile.occupancy import ARCH_LIMITS
    if arch is not None and arch.rstrip("af") not in ARCH_LIMITS:
        raise TileKernelCellError(f"--arch {arch!r} is not a GPU architecture the workbench knows; use one of "
                                  f"{', '.join(ARCH_LIMITS)}", [])


@magics_class
class TileKernelMagics(Magics):
    def __init__(self, shell=None, **kwargs):
        super().__init__(shell, **kwargs)
        self.records = LiveRecords()   # load_ipython_extension refreshes them after every cell

    @magic_arguments()
    @argument("name", nargs="?", help="the kernel to define, when the cell has several functions (default: the "
              "last); in a --lang cpp cell, a template's instance too, e.g. \"scale<float, 256>\"")
    @argument("--lang", choices=["python", "cpp"], default="python",
              help="the cell's language: the Python tile language (default) or CUDA C++ over the tile header")
    @argument("--block", default=None, help="threads per block for --lang cpp launches, a Python expression, e.g. 256 "
                                            "or \"(32, 8)\"")
    @argument("--smem", type=int, default=0, help="dynamic shared memory bytes for --lang cpp launches")
    @argument("--cpu", action="store_true", help="run on the NumPy interpreter even where a GPU is available")
    @argument("--arch", default=None, help="GPU architecture for --show cuda/ptx/resources, --sweep, and "
                                           "--bench without a GPU, e.g. sm_90 (default: the GPU's, or sm_90 "
                                           "without one)")
    @argument("--show", action="append", choices=["ir", "cuda", "ptx", "resources", "log", "sass"], default=[],
              help="print the kernel's IR, generated CUDA, PTX (Tile IR for CUDA Tile C++), resources, compiler "
                   "log or (--lang cpp) SASS by cell line (repeatable; tile kernels need --args)")
    @argument("--grid", default=None, help="launch grid, a Python expression, e.g. \"(ct.cdiv(n, 256),)\"")
    @argument("--args", default=None, help="launch arguments, a Python expression, e.g. \"a, b, c, 256\"")
    @argument("--viz", action="store_true", help="launch on the interpreter with tracing and show the views, linked, with a "
                                                 "block stepper")
    @argument("--bench", action="store_true", help="measure the launch and show the launch report (without a GPU: "
                                                          "compile-time resources and occupancy for --arch)")
    @argument("--ncu", action="store_true", help="the launch report with Nsight Compute's measurements of one launch "
              "(achieved occupancy, DRAM and L2 throughput, sectors per request, stall reasons, hot lines), profiled "
              "in a process of its own; where ncu is absent or not permitted, a one-line message says why")
    @argument("--sweep", default=None, help="sweep Constant parameters: \"TM=32,64,128 TN=32,64\"")
    @argument("--workers", type=int, default=None, help="processes that compile a --sweep (default: one per CPU; 1 "
                                                        "compiles in the notebook's process)")
    @argument("--executor", default=None, help="run a --sweep on this concurrent.futures.Executor (or Dask Client) "
                                               "of the notebook, e.g. client for a Dask cluster")
    @cell_magic
    def tilekernel(self, line, cell):
        """Define (and optionally compile, show, launch, visualize and measure) a tile kernel."""
        args = parse_argstring(self.tilekernel, line)
        for option in ("name", "grid", "args", "sweep", "block"):  # IPython's splitter keeps the quotes
            setattr(args, option, _unquote(getattr(args, option)))
        _check_arch(args.arch)
        if not args.sweep and (args.workers is not None or args.executor):
            raise TileKernelCellError("--workers and --executor say where a --sweep runs: add --sweep", [])
        if args.lang == "python" and (args.block or args.smem):
            raise TileKernelCellError("--block and --smem are for --lang cpp cells: tile kernels choose their own "
                                      "block size and shared memory", [])
        kernel = self.define_cpp(cell, args, line) if args.lang == "cpp" else self.define(cell, args.name)
        stopped = None
        try:
            return self.act_on(kernel, args)
        except Exception as error:
            stopped = stopped_at(error)
            raise
        finally:  # also after an error: the inspector then shows what did compile, and why not
            self.publish(kernel, args.arch, stopped)

    def act_on(self, kernel, args):
        """Do what the header line asks of the defined kernel; errors become one box without a stack."""
        try:
            if args.ncu and (args.lang == "cpp" or isinstance(kernel, UserKernel)):
                raise TileKernelCellError("--ncu profiles a tile kernel the cell defines with def", [])
            if args.lang == "cpp":
                return self.act_cpp(kernel, args)
            if isinstance(kernel, UserKernel):
                return self.act_user(kernel, args)
            if not (args.show or args.grid or args.args or args.viz or args.bench or args.ncu or args.sweep):
                return None
            return self.act(kernel, args)
        except TileError as error:
            self.report(error, kernel.name)
        except NvrtcUnavailableError as error:  # nothing is wrong with the kernel: one line, no stack
            raise TileKernelCellError(f"Compiling the kernel needs NVRTC, the CUDA compiler. {error}", []) from None
        except TileCompilerUnavailableError as error:
            raise TileKernelCellError(str(error), []) from None
        except UserInputError as error:  # its message says it all: no stack
            raise TileKernelCellError(f"{type(error).__name__}: {error}", []) from None

    def publish(self, kernel, arch: str | None, stopped: str | None = None):
        """The kernel's record for the kernel inspector, as a display output of this cell; `stopped`
        says where and why the run stopped, if it did."""
        from ..runtime import device
        if isinstance(kernel, UserKernel):  # what its last call ran, if it ran
            kernel = kernel.last_tile_kernel
            if kernel is None:
                return
        self.records.show(kernel, device.target_arch(arch), stopped)

    # ---- defining the kernel -----------------------------------------------------------------------

    def define(self, cell: str, name: str | None):
        filename = cell_filename(next(_cell_numbers))
        source = "\n" + cell  # line 1 is the %%tilekernel header: cell lines == file lines
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            tree = ast.parse(source, filename)
        except SyntaxError as e:
            self.report(TileSyntaxError(f"invalid Python: {e.msg}", _syntax_loc(e, source, filename)), name or "kernel")
        functions = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not functions:
            return self.define_user_kernel(tree, filename, name)
        kernel_name = name or functions[-1]
        if kernel_name not in functions:
            raise TileKernelCellError(f"The cell defines no function named {kernel_name!r} (it defines "
                                      f"{', '.join(functions)})", [])
        namespace = dict(self.shell.user_ns)
        namespace["ct"] = ct
        exec(compile(tree, filename, "exec"), namespace)  # defines the functions (decorators run here)
        pyfunc = namespace[kernel_name]
        kernel = pyfunc if isinstance(pyfunc, ct.Kernel) else ct.kernel(pyfunc)
        for fn_name in functions:  # helpers are useful on their own too
            if fn_name != kernel_name:
                self.shell.user_ns[fn_name] = namespace[fn_name]
        self.shell.user_ns[kernel_name] = kernel
        return kernel

    def define_user_kernel(self, tree, filename: str, name: str | None):
        """A cell that assigns a CuPy-style kernel (`k = cupy.ElementwiseKernel(...)`)."""
        from .. import userkernels
        assigned = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
        namespace = dict(self.shell.user_ns)
        namespace.update(ct=ct, cupy=userkernels, cp=userkernels)
        try:
            exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - the cell, as IPython would run it
        except TileError as error:
            self.report(error, name or "kernel")
        except UserInputError as error:  # a bad parameter list or kernel name: its message says it all
            raise TileKernelCellError(f"{type(error).__name__}: {error}", []) from None
        kernels = [n for n in assigned if isinstance(namespace.get(n), UserKernel)]
        if not kernels:
            raise TileKernelCellError("A %%tilekernel cell must define a function (def name(...): ...) or assign a "
                                      "CuPy-style kernel (k = cupy.ElementwiseKernel(...))", [])
        kernel_name = name or kernels[-1]
        if kernel_name not in kernels:
            raise TileKernelCellError(f"The cell assigns no kernel named {kernel_name!r} (it assigns "
                                      f"{', '.join(kernels)})", [])
        self.shell.user_ns[kernel_name] = namespace[kernel_name]
        return namespace[kernel_name]

    def act_user(self, kernel, args):
        from . import actions
        if args.grid:
            raise TileKernelCellError("--grid: a CuPy-style kernel's grid follows from its arguments; give --args "
                                      "only", [])
        if not args.args:
            if args.show or args.viz or args.bench or args.sweep or args.cpu:
                raise TileKernelCellError("This option needs the kernel's call arguments: add --args \"x, y\"", [])
            return None
        call_args = self.evaluate(f"({args.args},)", "args")
        space = _parse_sweep(args.sweep) if args.sweep else None
        return actions.user_kernel(kernel, call_args, args.show, args.viz, args.bench, space, args.arch,
                                   self.sweep_where(args))

    def define_cpp(self, cell: str, args, line: str):
        """A CppKernel over the tile header (`tw::`), or a TileCppKernel where the cell is CUDA Tile C++
        (cuda_tile.h, cuda::tiles, __tile_global__). Compiled by act_cpp, so that a compile error leaves
        the kernel's record, stopped at its line."""
        from ..runtime.cpp import CppKernel
        from ..runtime.tile_cpp import TileCppKernel, is_tile_cpp
        filename = cell_filename(next(_cell_numbers))
        kind = TileCppKernel if is_tile_cpp(cell) else CppKernel
        try:
            kernel = kind(cell, filename, args.name, first_line=2, name_at=(1, f"%%tilekernel {line}"))
        except TileError as error:
            raise TileKernelCellError(error.message, []) from None
        self.shell.user_ns[kernel.name] = kernel
        return kernel

    def compile_cpp(self, kernel, args):
        """Compile now (errors belong to the cell that has them); `--show log` prints the whole log of a
        failed compile too. Without NVRTC the cell still defines the kernel, for a GPU machine later;
        a CUDA Tile C++ cell says at once what it needs."""
        from ..runtime import nvrtc, tile_cpp
        from ..runtime.device import target_arch
        tile = isinstance(kernel, tile_cpp.TileCppKernel)
        reason = nvrtc.unavailable_reason() or (tile_cpp.unavailable_reason() if tile else None)
        if reason is not None:
            if tile:
                raise TileKernelCellError(reason, [])
            return
        try:
            kernel.compile(target_arch(args.arch))
        except nvrtc.NvrtcError:
            if "log" in args.show:
                print(kernel.last_log.strip())
            raise

    def act_cpp(self, kernel, args):
        from ..runtime.tile_cpp import TileCppKernel
        from . import actions
        tile = isinstance(kernel, TileCppKernel)
        if tile and args.block:
            raise TileKernelCellError("--block: a CUDA Tile C++ kernel launches with one thread per block (the tile "
                                      "compiler chooses its threads, as kernel<<<grid, 1>>> in CUDA); drop --block", [])
        self.compile_cpp(kernel, args)
        if tile and args.viz:  # traced on the CPU from the Tile IR: needs no GPU
            if not (args.grid and args.args):
                raise TileKernelCellError("--viz needs --grid and --args (NumPy arrays for the pointers)", [])
            for what in args.show:
                actions.show_cpp(kernel, what, args.arch)
            return actions.visualize_tile_cpp(kernel, self.evaluate(args.grid, "grid"),
                                              self.evaluate(f"({args.args},)", "args"))
        if args.viz or args.sweep or args.cpu or "ir" in args.show:
            option = "--viz" if args.viz else "--sweep" if args.sweep else "--cpu" if args.cpu else "--show ir"
            raise TileKernelCellError(f"{option} needs the tile language: --lang cpp kernels have no IR and run on "
                                      f"the GPU only", [])
        if args.block:  # what --show resources and the inspector assume, launched or not
            from ..runtime.cpp import launch_dims
            try:
                kernel.block = launch_dims(self.evaluate(args.block, "block"), "--block")
            except ValueError as e:
                raise TileKernelCellError(str(e), []) from None
        for what in args.show:
            actions.show_cpp(kernel, what, args.arch)
        if not (args.grid or args.args or args.bench):
            return None
        needed = ("grid", "args") if tile else ("grid", "block", "args")
        missing = [f"--{o}" for o in needed if not getattr(args, o)]
        if missing:
            example = "--grid \"(ct.cdiv(n, 256),)\"" + " --block 256" * (not tile) + " --args \"x, y, n\""
            raise TileKernelCellError(f"A --lang cpp launch needs {', '.join(missing)} (e.g. {example})", [])
        grid = self.evaluate(args.grid, "grid")
        block = 1 if tile else self.evaluate(args.block, "block")
        launch_args = self.evaluate(f"({args.args},)", "args")
        if args.bench:
            return actions.bench_cpp(kernel, grid, block, launch_args, args.smem, args.arch)
        actions.launch_cpp(kernel, grid, block, launch_args, args.smem)
        return None

    # ---- acting on it ------------------------------------------------------------------------------

    def evaluate(self, expression: str, what: str):
        namespace = dict(self.shell.user_ns)
        namespace.setdefault("ct", ct)
        try:
            return eval(expression, namespace)
        except Exception as e:
            raise TileKernelCellError(f"--{what} {expression!r}: {type(e).__name__}: {e}", []) from None

    def sweep_where(self, args) -> dict:
        from . import actions
        return actions.sweep_where(args.workers, self.evaluate(args.executor, "executor") if args.executor else None)

    def act(self, kernel, args):
        from . import actions
        if args.sweep:  # grid and args are evaluated per configuration, with the swept names bound
            if not (args.grid and args.args):
                raise TileKernelCellError("--sweep needs --grid and --args (expressions that may use the swept "
                                          "names)", [])
            space = _parse_sweep(args.sweep)
            _check_sweep_names(space, args.grid, f"({args.args},)")
            return actions.sweep(kernel, args.grid, args.args, space, self.shell.user_ns, args.arch,
                                 self.sweep_where(args))
        launch_args = self.evaluate(f"({args.args},)" if args.args else "()", "args")
        if (args.show or args.viz or args.bench or args.ncu or args.grid) and not args.args:
            raise TileKernelCellError("This option needs the kernel's arguments: add --args \"...\"", [])
        grid = self.evaluate(args.grid, "grid") if args.grid else None
        if isinstance(grid, int):
            grid = (grid,)
        for what in args.show:
            actions.show(kernel, launch_args, what, args.arch)
        if grid is None:
            if args.viz or args.bench or args.ncu:
                raise TileKernelCellError("--viz, --bench and --ncu need --grid", [])
            return None
        if args.viz:
            return actions.visualize(kernel, grid, launch_args)
        if args.ncu:
            return actions.bench_with_ncu(kernel, grid, launch_args, args.arch)
        if args.bench:
            return actions.bench(kernel, grid, launch_args, args.arch)
        actions.launch(kernel, grid, launch_args, cpu=args.cpu)
        return None

    def report(self, error: TileError, kernel_name: str):
        """Show the error as a short box at the cell's line, with a machine-readable diagnostics bundle."""
        display(diagnostics_bundle(error, kernel_name), raw=True)
        raise TileKernelCellError.from_tile_error(error) from None


def stopped_at(error: Exception) -> str:
    """One line for the kernel record: the cell line a run stopped at (where known) and the error."""
    text = error.text if isinstance(error, TileKernelCellError) else f"{type(error).__name__}: {error}"
    first = text.splitlines()[0] if text.strip() else type(error).__name__
    lines = [f.line for f in getattr(error, "frames", ()) if in_cell(f)]
    return f"cell line {lines[-1]}: {first}" if lines else first


def _syntax_loc(e: SyntaxError, source: str, filename: str):
    from ..errors import SourceLoc
    lines = source.splitlines()
    line = e.lineno or 1
    col = max(0, (e.offset or 1) - 1)
    end = (e.end_offset or col + 2) - 1 if (e.end_lineno or line) == line else col + 1
    return SourceLoc(filename, line, col, line, max(end, col + 1), "cell", lines[line - 1] if line <= len(lines) else "")


__all__ = ["DIAGNOSTICS_MIME", "KERNEL_MIME", "TileKernelMagics"]
