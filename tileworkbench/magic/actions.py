"""What %%tilekernel does once the kernel is defined: show code, launch, visualize, measure, sweep."""
from __future__ import annotations

import linecache
import os
from html import escape

import numpy as np
from IPython.display import display

from .. import tile as ct
from ..arguments import is_array_like
from ..ir import print_function
from ..runtime import device
from ..runtime.occupancy import percent
from .diagnostics import TileKernelCellError


CODE_STYLE = "white-space:pre;overflow-x:auto;margin:0;font-family:var(--jp-code-font-family,monospace)"


def show_code(text: str) -> None:
    """IR, CUDA, PTX, SASS or a compiler log as an output that scrolls sideways: Jupyter wraps
    printed text anywhere (word-break: break-all), which cuts tokens and comments ("# lin e 7")."""
    display({"text/plain": text, "text/html": f'<pre class="tw-code" style="{CODE_STYLE}">{escape(text)}</pre>'},
            raw=True)


def show(kernel, args, what: str, arch: str | None):
    fn = kernel.specialize(args)
    if what == "ir":
        show_code(print_function(fn))
        return
    arch = device.target_arch(arch)
    if what == "cuda":
        from ..codegen import generate
        show_code(generate(fn, arch=arch).source)
        return
    from ..runtime.launch import build
    compiled = build(fn, arch)
    if what in ("ptx", "log"):
        show_code(_stage_text(compiled, what))
        return
    c, occupancy = compiled, compiled.occupancy
    print(f"{c.name} for {arch}: {c.threads} threads/block, {c.registers} registers/thread, "
          f"{c.shared_bytes} B shared memory, {c.local_bytes} B local memory, "
          f"spills {c.spill_stores or 0} stores / {c.spill_loads or 0} loads\n"
          f"theoretical occupancy {percent(occupancy.occupancy)} ({occupancy.blocks_per_sm} blocks, "
          f"{occupancy.warps_per_sm} warps per SM), limited by {occupancy.limiter}")
    for line, text in c.notes:
        print(f"  line {line}: {text}")


def _stage_text(compiled, what: str) -> str:
    """--show ptx or --show log of a compiled record."""
    if what == "log":
        return compiled.asm["log"].strip() or "(the compiler printed nothing)"
    return compiled.asm[what]


def show_cpp(kernel, what: str, arch: str | None):
    arch = device.target_arch(arch)
    if what == "cuda":
        show_code(kernel.compile_source)
        return
    compiled = kernel.compiled(arch)
    if what == "ptx" and kernel.dialect == "cuda::tiles":
        from ..runtime.tile_cpp import no_tile_ir_text
        show_code("// Tile IR: what NVRTC's tile mode hands tileiras (CUDA Tile C++ has no PTX of its own)\n"
                  + (_without_locations(compiled.asm["ir"]) or f"// {no_tile_ir_text()}"))
    elif what in ("ptx", "log"):
        show_code(_stage_text(compiled, what))
    elif what == "sass":
        show_code(cpp_sass_text(kernel, arch))
    else:
        print(_cpp_resources_text(kernel, arch))


def _without_locations(tile_ir: str) -> str:
    """Tile IR as tileirdisasm prints it without -g: no `loc(...)` notes, no location table."""
    import re
    lines = [re.sub(r" loc\(#loc\d*\)", "", line) for line in tile_ir.splitlines() if not line.startswith(("#loc", "#di"))]
    return "\n".join(lines).rstrip()


def cpp_sass_text(kernel, arch: str) -> str:
    """The kernel's SASS in program order, each run of instructions under the cell line it came from."""
    from ..runtime.sass import SassUnavailableError, disassemble, parse_listing
    try:
        instructions = kernel.compiled(arch).instructions
    except SassUnavailableError as e:
        return f"No SASS: {e}"
    lines = kernel.source.splitlines()
    out, last = [], object()
    for i in instructions:
        line = next((n for f, n in reversed(i.inlined) if os.path.basename(f) == "cell"), None)
        if line != last:
            text = lines[line - kernel.first_line].strip() if line and 0 <= line - kernel.first_line < len(lines) else ""
            out.append(f"// cell line {line}: {text}" if line else "// (no cell line)")
            last = line
        out.append(f"  /*{i.offset:04x}*/  {i.text}")
    return "\n".join(out)


def _cpp_resources_text(kernel, arch: str) -> str:
    compiled = kernel.compiled(arch)
    r, threads, occupancy = compiled.resources, compiled.threads, compiled.occupancy
    parameters = ", ".join(f"{p.name}: {p.ptx_type}{f'[{p.size}]' if p.ptx_type == '.b8' else ''}"
                           for p in kernel.parameters(arch))
    named = kernel.expression if compiled.name == kernel.expression else \
        f"{kernel.expression} ({compiled.name} in the cubin)"
    return (f"{named} for {arch}: {r.registers} registers/thread, {compiled.static_shared_bytes} B static "
            f"shared memory, {r.local_bytes} B local memory, spills {r.spill_stores or 0} stores / "
            f"{r.spill_loads or 0} loads{f', at most {r.max_threads} threads/block' if r.max_threads else ''}\n"
            f"parameters (as compiled): {parameters}\n"
            f"theoretical occupancy with {threads}-thread blocks: {percent(occupancy.occupancy)} "
            f"({occupancy.blocks_per_sm} blocks, {occupancy.warps_per_sm} warps per SM), limited by {occupancy.limiter}")


def _needs_gpu(what: str):
    reason = device.unavailable_reason()
    if reason is not None:
        raise TileKernelCellError(f"{what}: --lang cpp kernels run on a GPU only, and there is none here "
                                  f"({reason}). `--show resources` reports what the compiler made of it.", [])


def launch_cpp(kernel, grid, block, args, shared_bytes: int):
    _needs_gpu("launch")
    kernel.launch(grid, block, args, shared_bytes=shared_bytes)


def bench_cpp(kernel, grid, block, args, shared_bytes: int, arch: str | None):
    """--bench for a C++ kernel: CUDA-event timing (L2 flushed) and the occupancy of this launch."""
    if device.unavailable_reason() is not None:
        print(_cpp_resources_text(kernel, device.target_arch(arch)))
        print(f"timings need a GPU ({device.unavailable_reason()})")
        return None
    import cupy

    from ..profile.bench import time_launches, timing_record
    stream = cupy.cuda.get_current_stream()
    timing = time_launches(lambda: kernel.launch(grid, block, args, shared_bytes=shared_bytes, stream=stream),
                           stream=stream)
    arch = device.target_arch(None)
    kernel.last_timing = timing_record(timing, _grid3(grid), "as written")
    driver = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
        kernel.function(arch).ptr, cpp_threads(kernel), shared_bytes)
    print(f"{kernel.name}: grid {_grid3(grid)}, block {kernel.block}: median {timing.median_ms * 1e3:.2f} us "
          f"(p10 {timing.p10_ms * 1e3:.2f}, p90 {timing.p90_ms * 1e3:.2f}; {timing.repetitions} runs, L2 flushed)\n"
          f"{_cpp_resources_text(kernel, arch)}\ndriver: {driver} resident blocks per SM")
    return None


def cpp_threads(kernel) -> int:
    x, y, z = kernel.block
    return x * y * z


def _grid3(grid) -> tuple:
    dims = (grid,) if isinstance(grid, int) else tuple(grid)
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def _is_numpy_launch(args) -> bool:
    return any(isinstance(a, np.ndarray) for a in args)


def launch(kernel, grid, args, cpu: bool):
    if cpu and not _is_numpy_launch(args) and any(map(is_array_like, args)):
        raise TileKernelCellError("--cpu runs the interpreter, which needs NumPy arrays: pass host copies", [])
    ct.launch(None if _is_numpy_launch(args) else 0, grid, kernel, args)


def visualize(kernel, grid, args):
    if not _is_numpy_launch(args):
        raise TileKernelCellError("--viz runs the interpreter with tracing, which needs NumPy arrays", [])
    from ..widgets.views import views_of_trace
    before = {p.name: np.array(a, copy=True) for p, a in zip(kernel.parameters, args) if isinstance(a, np.ndarray)}
    trace = ct.interpret(kernel, grid, args, values=True)   # every op's tile too, for the block stepper
    if not trace.steps.steps:
        raise TileKernelCellError(f"--viz: {kernel.name} executed no tile op in any block (no load, store or "
                                  f"computation), so there is nothing to show", [])
    views = views_of_trace(trace, before)
    for view in views:
        display(view)
    return None


def visualize_tile_cpp(kernel, grid, args):
    """--viz for a CUDA Tile C++ cell: the views of what the launch touches, from its Tile IR."""
    if not _is_numpy_launch(args):
        raise TileKernelCellError("--viz traces the launch on the CPU, which needs NumPy arrays for the pointers", [])
    from ..runtime.tile_ir_trace import trace_launch
    from ..widgets.views import views_of_trace
    before = {p.name: np.array(a, copy=True) for p, a in zip(kernel.parameters("sm_90"), args)
              if isinstance(a, np.ndarray)}
    for view in views_of_trace(trace_launch(kernel, _grid3(grid), args), before):
        display(view)
    return None


def bench(kernel, grid, args, arch: str | None, ncu=None):
    """--bench: the launch report. On a GPU a measured one (NumPy arguments are copied over); without
    one, what the compiler decided for `arch`, and the report says that timings need a GPU. `ncu`:
    Nsight Compute's measurements for the report, or why there are none."""
    from ..widgets.launch_report import LaunchReportView
    return LaunchReportView.measure(kernel, grid, args, arch, ncu=ncu)


def bench_with_ncu(kernel, grid, args, arch: str | None):
    """--ncu: the launch report with Nsight Compute's measurements of one launch, profiled in a process
    of its own that rebuilds the kernel from the cell. Where ncu cannot measure (absent, not permitted,
    no GPU) the cell and the report say why in one line."""
    from ..profile.ncu import NcuUnavailable
    from ..profile.ncu_child import profile_launch
    try:
        measured = profile_launch(_cell_source(kernel), kernel.name, grid, args)
    except NcuUnavailable as e:
        measured = str(e)
        print(f"--ncu: {measured}")
    except ValueError as e:
        raise TileKernelCellError(f"--ncu: {e}", []) from None
    if not isinstance(measured, str) and not measured.hot_lines and measured.sass_samples:
        from ..profile.ncu import hot_lines_from_sass
        from ..runtime.driver import device_arch
        measured.hot_lines = hot_lines_from_sass(kernel.specialize(args), device_arch(), measured.sass_samples)
    return bench(kernel, grid, args, arch, ncu=measured)


def _cell_source(kernel) -> str:
    """The source of the cell that defined `kernel`, as the magic compiled it (its first line empty)."""
    lines = linecache.getlines(kernel.__wrapped__.__code__.co_filename)
    if not lines:
        raise TileKernelCellError(f"--ncu: the source of {kernel.name} is not at hand: define it in this cell", [])
    return "".join(lines)


def sweep(kernel, grid_text: str, args_text: str, space: dict, user_ns: dict, arch: str | None, where: dict):
    """--sweep: the grid and argument expressions are evaluated per configuration, with the swept
    names bound to that configuration's values. The view is shown as the sweep starts and fills in
    as configurations finish; `where` (see sweep_where) says where the sweep runs."""
    from ..widgets.sweep import SweepView

    def evaluate(text, config):
        namespace = dict(user_ns)
        namespace.setdefault("ct", ct)
        namespace.update(config)
        return eval(text, namespace)
    SweepView.run(kernel, lambda config: evaluate(grid_text, config), lambda config: evaluate(f"({args_text},)", config),
                  space, arch=arch, **where)


def sweep_where(workers: int | None, executor) -> dict:
    """The options of `sweep` that say where it runs, from --workers and --executor (a Dask Client
    stands for its executor)."""
    from concurrent.futures import Executor
    if executor is not None and not isinstance(executor, Executor):
        if not callable(getattr(executor, "get_executor", None)):
            raise TileKernelCellError(f"--executor: a concurrent.futures.Executor or a Dask Client is needed, not "
                                      f"{type(executor).__name__}", [])
        executor = executor.get_executor()
    if executor is not None:
        _check_running(executor)
    if workers is not None and workers < 1:
        raise TileKernelCellError(f"--workers {workers}: at least one worker is needed", [])
    return {"workers": workers, "executor": executor}


def _check_running(executor) -> None:
    """An executor that takes no more work (shut down, a closed Dask client) fails at the first job
    the sweep submits; submitting a trivial one first says so in one line."""
    try:
        executor.submit(int).result(timeout=60)
    except Exception as e:
        raise TileKernelCellError(f"--executor: the executor does not run jobs ({type(e).__name__}: {e}); make a "
                                  f"new one (a shut-down executor takes no more work)", []) from None


def user_kernel(kernel, call_args, show_what, viz: bool, bench_: bool, space: dict | None, arch: str | None,
                where: dict):
    """A CuPy-style kernel's cell: act on the tile kernel a call with `call_args` runs, or call it."""
    if not (show_what or space or viz or bench_):
        return kernel(*call_args)
    launch = kernel.launch_plan(*call_args)
    if launch.kernel is None:
        raise TileKernelCellError("The call has no elements: there is no kernel to act on", [])
    for what in show_what:
        show(launch.kernel, launch.args, what, arch)
    if space:  # the view shows itself as the sweep starts
        from ..widgets.sweep import SweepView
        unknown = [name for name in space if name not in launch.config]
        if unknown:
            raise TileKernelCellError(f"--sweep: {', '.join(unknown)} is not a tile size of this kernel; it has "
                                      f"{', '.join(f'{k}={v}' for k, v in launch.config.items())}", [])
        SweepView.run(launch.kernel, launch.grid_of, launch.args_of, space, arch=arch, **where)
        return None
    if viz:
        for view in kernel.views(*call_args):
            display(view)
        return None
    if bench_:
        return bench(launch.kernel, launch.grid, launch.args, arch)
    return None
