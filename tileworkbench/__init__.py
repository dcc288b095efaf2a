"""tileworkbench: a Jupyter workbench for GPU tile kernels.

    import tileworkbench.tile as ct          # the tile language (cuTile-compatible)
    %load_ext tileworkbench                  # the %%tilekernel cell magic
"""
__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """`%load_ext tileworkbench`: registers the %%tilekernel cell magic, and keeps the kernel
    records its cells show current as later cells run their kernels."""
    from .magic import TileKernelMagics
    magics = TileKernelMagics(ipython)
    ipython.register_magics(magics)
    ipython.events.register("post_run_cell", magics.records.refresh)


def _jupyter_labextension_paths():
    """Where the built JupyterLab extension lives (for `jupyter-builder develop --overwrite .`)."""
    return [{"src": "labextension", "dest": "tileworkbench-labextension"}]


def __getattr__(name):
    # CuPy's user-defined kernels, imported on first use: `tileworkbench.ElementwiseKernel(...)`
    if name in ("ElementwiseKernel", "ReductionKernel"):
        from . import userkernels
        return getattr(userkernels, name)
    raise AttributeError(f"module 'tileworkbench' has no attribute {name!r}")
