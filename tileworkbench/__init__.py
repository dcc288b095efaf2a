"""tileworkbench: a Jupyter workbench for GPU tile kernels.

    import tileworkbench.tile as ct          # the tile language (cuTile-compatible)
    %load_ext tileworkbench                  # the %%tilekernel cell magic
"""
__version__ = "0.1.0"
