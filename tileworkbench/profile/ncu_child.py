"""One launch of a notebook cell's tile kernel, rebuilt in a process of its own so that Nsight Compute
can profile it (`%%tilekernel --ncu`).

    with tempfile.TemporaryDirectory() as folder:
        write_launch(folder, cell_source, "add", (64,), (a, b, c, 1024))
        collect([sys.executable, "-m", "tileworkbench.profile.ncu_child", folder], kernel="add")

The folder holds the cell's source as a module (`kernel.py`, with `ct` imported on its first line, so
its line numbers are the cell's), the arrays as host copies (`arrays.npz`, raw bits with the dtype
named beside them, so that bfloat16 and fp8 travel too) and the grid, scalars and kernel name as
JSON (`launch.json`). `read_launch` rebuilds the kernel and the arguments exactly; run as a program,
the module copies the arrays to the GPU, launches once and waits for the launch to finish.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..arguments import is_array_like
from ..runtime import device

MODULE, ARRAYS, LAUNCH = "kernel.py", "arrays.npz", "launch.json"
PREAMBLE = "import tileworkbench.tile as ct"


def write_launch(folder, source: str, kernel_name: str, grid: tuple, args: tuple) -> None:
    """`source` is the cell as the magic compiled it: line 1 (the %%tilekernel header) is empty."""
    if source.split("\n", 1)[0].strip():
        raise ValueError("the cell's source must leave its first line (the %%tilekernel header) empty")
    folder = Path(folder)
    (folder / MODULE).write_text(PREAMBLE + source)
    arrays, described = {}, []
    for k, a in enumerate(args):
        if isinstance(a, (np.ndarray, np.generic)) or is_array_like(a):  # NumPy scalars keep their dtype this way
            host = np.asarray(a) if isinstance(a, np.generic) else device.to_host(a)
            arrays[f"a{k}"] = host.view(f"u{host.dtype.itemsize}") if host.dtype.itemsize in (1, 2, 4, 8) else host
            described.append({"array": f"a{k}", "dtype": host.dtype.name, "numpy_scalar": isinstance(a, np.generic)})
        elif isinstance(a, (bool, int, float)):
            described.append({"scalar": a})
        else:
            raise ValueError(f"argument {k + 1} ({type(a).__name__}) cannot be sent to the profiled process: "
                             f"arrays, ints, floats and bools can")
    np.savez(folder / ARRAYS, **arrays)
    (folder / LAUNCH).write_text(json.dumps({"kernel": kernel_name, "grid": [int(g) for g in grid], "args": described}))


def _dtype(name: str) -> np.dtype:
    """NumPy's dtype of that name, or ml_dtypes' (bfloat16, fp8), which NumPy does not know by name."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def read_launch(folder):
    """(kernel, grid, args) as `write_launch` wrote them; the arrays are NumPy arrays."""
    import tileworkbench.tile as ct
    folder = Path(folder)
    spec = importlib.util.spec_from_file_location("tileworkbench_profiled_cell", folder / MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    launch = json.loads((folder / LAUNCH).read_text())
    kernel = getattr(module, launch["kernel"])
    kernel = kernel if isinstance(kernel, ct.Kernel) else ct.kernel(kernel)
    with np.load(folder / ARRAYS) as arrays:
        args = tuple(a["scalar"] if "array" not in a else
                     arrays[a["array"]].view(_dtype(a["dtype"]))[()] if a["numpy_scalar"] else
                     arrays[a["array"]].view(_dtype(a["dtype"])) for a in launch["args"])
    return kernel, tuple(launch["grid"]), args


def profile_launch(source: str, kernel_name: str, grid: tuple, args: tuple):
    """Nsight Compute's metrics (an NcuMetrics) of one launch of the kernel `source` defines; NcuUnavailable
    says why not where ncu is absent or not permitted, or there is no GPU."""
    from .ncu import NcuUnavailable, collect, require_ncu
    require_ncu()
    if not device.gpu_available():
        raise NcuUnavailable(f"Nsight Compute needs a GPU, and there is none here ({device.unavailable_reason()})")
    with tempfile.TemporaryDirectory() as folder:
        write_launch(folder, source, kernel_name, grid, args)
        measured = collect([sys.executable, "-m", __name__, folder], kernel=kernel_name)
    if not measured:
        raise NcuUnavailable(f"Nsight Compute measured no launch of {kernel_name}")
    return measured[0]


def main(folder) -> None:
    import cupy

    import tileworkbench.tile as ct
    kernel, grid, args = read_launch(folder)
    stream = cupy.cuda.get_current_stream()
    ct.launch(stream, grid, kernel, tuple(device.to_device(a) for a in args))
    stream.synchronize()


if __name__ == "__main__":
    main(sys.argv[1])
