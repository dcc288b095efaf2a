"""PyTorch's own operators (cuBLAS for matmul). Those that return a new tensor store it in `p.y`."""
FAMILY = "torch"


def copy(p):
    return lambda: p.y.copy_(p.x)


def add(p):
    import torch
    return lambda: torch.add(p.a, p.b, out=p.y)


def transpose(p):
    return lambda: p.y.copy_(p.x.t())


def gather(p):
    import torch
    ids = p.ids.long()
    return lambda: torch.index_select(p.table, 0, ids, out=p.y)


def softmax(p):
    import torch

    def run():
        p.y = torch.softmax(p.x, dim=1)
    return run


def layernorm(p):
    from torch.nn.functional import layer_norm
    shape = (p.x.shape[1],)

    def run():
        p.y = layer_norm(p.x, shape, p.w, p.b, 1e-5)
    return run


def matmul(p):
    import torch
    return lambda: torch.matmul(p.a, p.b, out=p.y)


OFFERS = {"copy": ("torch copy_", copy), "add": ("torch.add", add), "transpose": ("torch copy_(x.t())", transpose),
          "gather": ("torch index_select", gather), "softmax": ("torch.softmax", softmax),
          "layernorm": ("torch layer_norm", layernorm), "matmul": ("torch.matmul (cuBLAS)", matmul)}
