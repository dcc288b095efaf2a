"""tileworkbench's own kernels (tileworkbench/kernels.py), a few tile shapes each where the kernel
takes one; the fastest correct one is kept."""
FAMILY = "tileworkbench"


def _launcher(kernel, grid, args):
    import torch

    import tileworkbench.tile as ct
    stream = torch.cuda.current_stream()
    return lambda: ct.launch(stream, grid, kernel, args)


def add(p):
    from tileworkbench.kernels import vector_add
    n = p.a.shape[0]
    return {f"TILE={t}": _launcher(vector_add, (n // t,), (p.a, p.b, p.y, t)) for t in (1024, 4096)}


def transpose(p):
    from tileworkbench.kernels import transpose
    s = p.x.shape[0]
    return {f"T={t}": _launcher(transpose, (s // t, s // t), (p.x, p.y, t)) for t in (32, 64)}


def gather(p):
    from tileworkbench.kernels import row_gather, row_load
    rows, width = p.y.shape
    return {name: _launcher(kernel, (rows,), (p.table, p.ids, p.y, width))
            for name, kernel in (("row_load", row_load), ("row_gather", row_gather))}


def softmax(p):
    from tileworkbench.kernels import softmax
    rows, cols = p.x.shape
    return {f"N={cols}": _launcher(softmax, (rows,), (p.x, p.y, cols))}


def layernorm(p):
    from tileworkbench.kernels import layernorm
    rows, cols = p.x.shape
    return {f"N={cols}": _launcher(layernorm, (rows,), (p.x, p.w, p.b, p.y, cols))}


def matmul(p):
    from tileworkbench.kernels import matmul
    s = p.a.shape[0]
    return {f"{tm}x{tn}x{tk}": _launcher(matmul, (s // tm, s // tn), (p.a, p.b, p.y, tm, tn, tk))
            for tm, tn, tk in ((128, 256, 64), (128, 128, 64))}


OFFERS = {"add": ("tileworkbench", add), "transpose": ("tileworkbench", transpose), "gather": ("tileworkbench", gather),
          "softmax": ("tileworkbench", softmax), "layernorm": ("tileworkbench", layernorm),
          "matmul": ("tileworkbench", matmul)}
