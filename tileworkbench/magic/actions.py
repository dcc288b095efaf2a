"""What %%tilekernel does once the kernel is defined: show code, launch, visualize, measure, sweep."""
from __future__ import annotations

import numpy as np
from IPython.display import display

from .. import tile as ct
from ..ir import print_function
from ..runtime import device
from .diagnostics import TileKernelCellError


def show(kernel, args, what: str, arch: str | None):
    fn = kernel.specialize(args)
    if what == "ir":
        print(print_function(fn))
        return
    arch = device.target_arch(arch)
    if what == "cuda":
        from ..codegen import generate
        print(generate(fn, arch=arch).source)
        return
    from ..profile import theoretical_occupancy
    from ..runtime.launch import build
    generated, module = build(fn, arch)
    if what == "ptx":
        print(module.ptx)
        return
    r = module.kernels[generated.name]
    occupancy = theoretical_occupancy(arch, generated.threads, r.registers, generated.smem_bytes + r.shared_static_bytes)
    print(f"{generated.name} for {arch}: {generated.threads} threads/block, {r.registers} registers/thread, "
          f"{generated.smem_bytes + r.shared_static_bytes} B shared memory, {r.local_bytes} B local memory, "
          f"spills {r.spill_stores or 0} stores / {r.spill_loads or 0} loads\n"
          f"theoretical occupancy {occupancy.occupancy:.0%} ({occupancy.blocks_per_sm} blocks, "
          f"{occupancy.warps_per_sm} warps per SM), limited by {occupancy.limiter}")


def _is_numpy_launch(args) -> bool:
    return any(isinstance(a, np.ndarray) for a in args)


def launch(kernel, grid, args, cpu: bool):
    if cpu and not _is_numpy_launch(args) and any(hasattr(a, "__cuda_array_interface__") for a in args):
        raise TileKernelCellError("--cpu runs the interpreter, which needs NumPy arrays: pass host copies", [])
    ct.launch(None if _is_numpy_launch(args) else 0, grid, kernel, args)


def visualize(kernel, grid, args):
    if not _is_numpy_launch(args):
        raise TileKernelCellError("--viz runs the interpreter with tracing, which needs NumPy arrays", [])
    from ..interp import run
    from ..widgets.views import views_of_trace
    before = {p: np.array(a, copy=True) for p, a in zip(kernel._signature.parameters, args)
              if isinstance(a, np.ndarray)}
    trace = run(kernel, grid, args, trace=True)
    views = views_of_trace(trace, before)
    for view in views:
        display(view)
    return None


def bench(kernel, grid, args, arch: str | None):
    """--bench: the launch report. On a GPU a measured one (NumPy arguments are copied over); without
    one, what the compiler decided for `arch`, and the report says that timings need a GPU."""
    from ..widgets.launch_report import LaunchReportView
    return LaunchReportView.measure(kernel, grid, args, arch)


def sweep(kernel, grid_text: str, args_text: str, space: dict, user_ns: dict, arch: str | None):
    """--sweep: the grid and argument expressions are evaluated per configuration, with the swept
    names bound to that configuration's values."""
    from ..widgets.sweep import SweepView

    def evaluate(text, config):
        namespace = dict(user_ns)
        namespace.setdefault("ct", ct)
        namespace.update(config)
        return eval(text, namespace)
    return SweepView.run(kernel, lambda config: evaluate(grid_text, config),
                         lambda config: evaluate(f"({args_text},)", config), space, arch=arch)
