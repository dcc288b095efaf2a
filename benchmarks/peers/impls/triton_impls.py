"""Triton: the kernels of triton_kernels.py; block sizes and warps tried where the tutorials leave
them open, matmul autotuned by Triton itself."""
FAMILY = "Triton"


def _k():
    from . import triton_kernels
    return triton_kernels


def add(p):
    k, n = _k(), p.a.shape[0]
    return {f"BLOCK={blk}": (lambda blk=blk: k.add[(n // blk,)](p.a, p.b, p.y, n, BLOCK=blk)) for blk in (1024, 4096)}


def transpose(p):
    k, s = _k(), p.x.shape[0]
    return {f"B={blk}": (lambda blk=blk: k.transpose[(s // blk, s // blk)](p.x, p.y, s, s, B=blk)) for blk in (32, 64)}


def gather(p):
    k, (rows, width) = _k(), p.y.shape
    return lambda: k.gather[(rows,)](p.table, p.ids, p.y, D=width)


def _row_warps(cols):
    return [w for w in (4, 8, 16) if cols // (32 * w) >= 4 or w == 4]


def softmax(p):
    k, (rows, cols) = _k(), p.x.shape
    return {f"warps={w}": (lambda w=w: k.softmax[(rows,)](p.x, p.y, cols, BLOCK=cols, num_warps=w))
            for w in _row_warps(cols)}


def layernorm(p):
    k, (rows, cols) = _k(), p.x.shape
    return {f"warps={w}": (lambda w=w: k.layernorm[(rows,)](p.x, p.w, p.b, p.y, cols, 1e-5, BLOCK=cols, num_warps=w))
            for w in _row_warps(cols)}


def matmul(p):
    k, s = _k(), p.a.shape[0]

    def grid(meta):
        return (-(-s // meta["BM"]) * -(-s // meta["BN"]),)
    return {"autotuned": lambda: k.matmul[grid](p.a, p.b, p.y, s, s, s)}


OFFERS = {"add": ("Triton", add), "transpose": ("Triton", transpose), "gather": ("Triton", gather),
          "softmax": ("Triton", softmax), "layernorm": ("Triton", layernorm), "matmul": ("Triton (autotuned)", matmul)}
