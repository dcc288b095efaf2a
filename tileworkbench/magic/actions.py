"""What %%tilekernel does once the kernel is defined: show code, launch, visualize, measure, sweep."""
from __future__ import annotations

import numpy as np
from IPython.display import display

from .. import tile as ct
from ..ir import print_function
from .diagnostics import TileKernelCellError


def gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def default_arch(arch: str | None) -> str:
    if arch:
        return arch
    if gpu_available():
        from ..runtime.launch import device_arch
        return device_arch()
    return "sm_90"


def show(kernel, args, what: str, arch: str | None):
    fn = kernel.specialize(args)
    if what == "ir":
        print(print_function(fn))
        return
    if what == "cuda":
        from ..codegen import generate
        print(generate(fn).source)
        return
    from ..profile import theoretical_occupancy
    from ..runtime.launch import build
    arch = default_arch(arch)
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


def bench(kernel, grid, args):
    """--bench: a measured launch report on a GPU; without one, what the compiler decided."""
    if not gpu_available() or _is_numpy_launch(args):
        show(kernel, args, "resources", None)
        print("timings need a GPU (and device arrays): these are compile-time resources for sm_90")
        return None
    from ..profile import benchmark
    r = benchmark(kernel, grid, args)
    t = r.timing
    print(f"{r.kernel}: median {t.median_ms:.4f} ms (p10 {t.p10_ms:.4f}, p90 {t.p90_ms:.4f}, "
          f"{t.repetitions} runs, L2 flushed: {t.l2_flushed})\n"
          f"{r.gbs:.0f} GB/s of {r.peaks.bandwidth_gbs:.0f}; {r.tflops:.1f} TFLOP/s\n"
          f"{r.threads} threads, {r.registers} registers, {r.shared_bytes} B shared, {r.local_bytes} B local; "
          f"occupancy {r.occupancy.occupancy:.0%} (theoretical, limited by {r.occupancy.limiter}), "
          f"{r.driver_blocks_per_sm} blocks/SM from the driver")
    return None


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
