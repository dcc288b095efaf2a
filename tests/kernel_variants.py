"""Kernels defined from text, as notebook cells define them: VARIANTS[v] is the body of variant v,
and every definition is a new kernel object (its source registered under a file name of its own)."""
import gc
import linecache

import numpy as np

import tileworkbench.tile as ct

VARIANTS = [
    ("t * 2.0 + 1.0", lambda x: x * 2 + 1),
    ("t - 3.0", lambda x: x - 3),
    ("ct.maximum(t, 10.0)", lambda x: np.maximum(x, 10)),
    ("t * t", lambda x: x * x),
    ("-t", lambda x: -x),
    ("ct.where(t > 20.0, t, 0.0)", lambda x: np.where(x > 20, x, 0)),
    ("t // 4.0", lambda x: x // 4),
    ("ct.sqrt(t) + 0.5", lambda x: np.sqrt(x) + np.float32(0.5)),
]
TILE = 16


def define_variant(variant: int, serial: int):
    """A fresh kernel `y = f(x)` computing VARIANTS[variant], defined in its own pseudo-file."""
    filename = f"<kernel-variant-{serial}>"
    source = (f"def scale(x, y):\n"
              f"    t = ct.load(x, (ct.bid(0),), ({TILE},))\n"
              f"    ct.store(y, (ct.bid(0),), {VARIANTS[variant][0]})\n")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"ct": ct}
    exec(compile(source, filename, "exec"), namespace)
    return ct.kernel(namespace["scale"])


def expected(variant: int, x: np.ndarray) -> np.ndarray:
    return VARIANTS[variant][1](x).astype(x.dtype)


def launch(kernel, x, y, stream=None):
    ct.launch(stream, (x.shape[0] // TILE,), kernel, (x, y))


def redefine_until_addresses_repeat(run, repeats: int = 64, most: int = 4000) -> tuple[list, int]:
    """Define variant after variant (dropping each, collecting garbage every 8) until a new kernel has
    taken a dead kernel's address with a different variant `repeats` times, the case an id()-keyed
    cache gets wrong; `run(kernel, variant)` launches one and says whether its result was right.
    Returns the (serial, variant) pairs that went wrong and how often an address was taken over."""
    wrong, variant_at, repeated = [], {}, 0
    for serial in range(most):
        variant = serial % len(VARIANTS)
        kernel = define_variant(variant, serial)
        if not run(kernel, variant):
            wrong.append((serial, variant))
        repeated += variant_at.get(id(kernel), variant) != variant
        variant_at[id(kernel)] = variant
        del kernel
        if serial % 8 == 0:
            gc.collect()  # frees the old kernels' IR, so new objects reuse their addresses
        if repeated >= repeats:
            break
    return wrong, repeated
