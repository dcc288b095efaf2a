"""CuPy: its library calls (copyto, take, matmul), an ElementwiseKernel, and RawKernels
(cupy_kernels.py) where CuPy has no call for the op. CuPy arrays are views of the torch tensors;
bfloat16 ones are viewed as int16 (CuPy has no bfloat16)."""
import functools

FAMILY = "CuPy"


def _view(t):
    import cupy
    import torch
    return cupy.asarray(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)


def copy(p):
    import cupy
    x, y = _view(p.x), _view(p.y)
    return lambda: cupy.copyto(y, x)


@functools.cache
def _add_kernel():
    import cupy
    return cupy.ElementwiseKernel("float32 a, float32 b", "float32 y", "y = a + b", "peer_add")


def add(p):
    kernel, a, b, y = _add_kernel(), _view(p.a), _view(p.b), _view(p.y)
    return lambda: kernel(a, b, y)


def transpose(p):
    import cupy

    from .cupy_kernels import TRANSPOSE, macros
    x, y = _view(p.x), _view(p.y)
    rows, cols = x.shape
    kernel = cupy.RawKernel(TRANSPOSE, "transpose", options=macros(T="float" if x.itemsize == 4 else "short"))
    library = "copyto(y, x.T)" + ("" if x.itemsize == 4 else " on int16 views")
    return {"RawKernel, 32x32 tile": lambda: kernel((cols // 32, rows // 32), (32, 8), (x, y, rows, cols)),
            library: lambda: cupy.copyto(y, x.T)}


def gather(p):
    import cupy
    table, ids, y = _view(p.table), _view(p.ids), _view(p.y)
    return lambda: cupy.take(table, ids, axis=0, out=y)


def softmax(p):
    import cupy

    from .cupy_kernels import SOFTMAX, macros, row_threads
    x, y = _view(p.x), _view(p.y)
    rows, cols = x.shape
    out = {}
    for t in row_threads(cols, 4):
        kernel = cupy.RawKernel(SOFTMAX, "softmax_rows", options=macros(COLS=cols, THREADS=t))
        out[f"threads={t}"] = lambda kernel=kernel, t=t: kernel((rows,), (t,), (x, y))
    return out


def layernorm(p):
    import cupy

    from .cupy_kernels import LAYERNORM, macros, row_threads
    x, w, b, y = _view(p.x), _view(p.w), _view(p.b), _view(p.y)
    rows, cols = x.shape
    out = {}
    for t in row_threads(cols, 8):
        kernel = cupy.RawKernel(LAYERNORM, "layernorm_rows", options=macros(COLS=cols, THREADS=t))
        out[f"threads={t}"] = lambda kernel=kernel, t=t: kernel((rows,), (t,), (x, w, b, y))
    return out


def matmul(p):
    """cupy.matmul (cuBLAS) on float16 copies of the bfloat16 inputs (exact for these values)."""
    import cupy
    import torch
    p.a16, p.b16 = p.a.half(), p.b.half()
    p.y = torch.empty_like(p.a16)  # the check reads the float16 result
    a, b, c = cupy.asarray(p.a16), cupy.asarray(p.b16), cupy.asarray(p.y)
    return lambda: cupy.matmul(a, b, out=c)


OFFERS = {"copy": ("CuPy copyto", copy), "add": ("CuPy ElementwiseKernel", add), "transpose": ("CuPy", transpose),
          "gather": ("CuPy take", gather), "softmax": ("CuPy RawKernel", softmax),
          "layernorm": ("CuPy RawKernel", layernorm), "matmul": ("CuPy matmul (f16: no bf16 in CuPy)", matmul)}
