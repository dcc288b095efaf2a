"""cuTile: the kernels of cutile_kernels.py, with the few tile shapes and hints (occupancy, CTAs per
cluster, rows per block, persistent blocks) that matter for each; the fastest correct one is kept."""
FAMILY = "cuTile"
_hinted = {}


def _k():
    from . import cutile_kernels
    return cutile_kernels


def _with_hints(kernel, **hints):
    """`kernel` compiled with `hints`: one kernel object (so one JIT cache) per combination."""
    hints = {k: v for k, v in hints.items() if v is not None}
    if not hints:
        return kernel
    key = (id(kernel), tuple(sorted(hints.items())))
    if key not in _hinted:
        _hinted[key] = kernel.replace_hints(**hints)
    return _hinted[key]


def _launcher(kernel, grid, args, **hints):
    import torch

    import cuda.tile as ct
    kernel, stream = _with_hints(kernel, **hints), torch.cuda.current_stream()
    return lambda: ct.launch(stream, grid, kernel, args)


def _label(base, **hints):
    return ", ".join([base] + [f"{k}={v}" for k, v in hints.items() if v is not None])


def add(p):
    k, n = _k(), p.a.shape[0]
    return {f"TILE={t}": _launcher(k.add, (n // t,), (p.a, p.b, p.y, t)) for t in (1024, 4096)}


def transpose(p):
    k, s = _k(), p.x.shape[0]
    return {f"T={t}": _launcher(k.transpose, (s // t, s // t), (p.x, p.y, t)) for t in (32, 64)}


def gather(p):
    k, (rows, width) = _k(), p.y.shape
    return {"row_load": _launcher(k.row_load, (rows,), (p.table, p.ids, p.y, width)),
            "gather, 8 rows": _launcher(k.rows_gather, (rows // 8,), (p.table, p.ids, p.y, 8, width)),
            "advanced indexing, 8 rows": _launcher(k.rows_indexed, (rows // 8,), (p.table, p.ids, p.y, 8, width))}


def _sms():
    import torch
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def softmax(p):
    k, (rows, cols) = _k(), p.x.shape
    out = {_label("row per block", occupancy=o): _launcher(k.softmax, (rows,), (p.x, p.y, cols), occupancy=o)
           for o in ((None, 2, 4) if cols <= 4096 else (None, 2))}
    for o in ((2, 4) if cols <= 4096 else (1, 2)):
        grid = (min(rows, _sms() * o),)
        out[_label("persistent", occupancy=o)] = _launcher(k.softmax_persistent, grid, (p.x, p.y, cols), occupancy=o)
    return out


def layernorm(p):
    k, (rows, cols) = _k(), p.x.shape
    return {_label("row per block", occupancy=o): _launcher(k.layernorm, (rows,), (p.x, p.w, p.b, p.y, cols), occupancy=o)
            for o in (None, 2, 4)}


_MATMUL_CONFIGS = ((128, 256, 64, {}), (128, 128, 64, {}), (256, 128, 64, {}), (128, 256, 64, {"num_ctas": 2}),
                   (128, 128, 64, {"occupancy": 2}))


def matmul(p):
    k, s = _k(), p.a.shape[0]
    return {_label(f"{tm}x{tn}x{tk}", **hints): _launcher(k.matmul, (-(-s // tm) * -(-s // tn),),
                                                           (p.a, p.b, p.y, tm, tn, tk, 8), **hints)
            for tm, tn, tk, hints in _MATMUL_CONFIGS}


OFFERS = {"add": ("cuTile", add), "transpose": ("cuTile", transpose), "gather": ("cuTile", gather),
          "softmax": ("cuTile", softmax), "layernorm": ("cuTile", layernorm), "matmul": ("cuTile", matmul)}
