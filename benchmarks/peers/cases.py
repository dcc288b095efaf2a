"""The cases: sizes, fresh random inputs, the reference and the tolerance of each.

A case's `make()` returns a `Problem`: its inputs (torch tensors on the GPU, fresh random values)
and its output `y`, poisoned with NaN so that an element left unwritten fails the check. The
implementations (impls/*.py) read the problem's fields by name: `x, y` (copy, transpose, softmax),
`a, b, y` (vector add, matmul), `table, ids, y` (row gather), `x, w, b, y` (layernorm).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable


class Problem(SimpleNamespace):
    def poison(self):
        self.y.fill_(float("nan"))


@dataclass(frozen=True)
class Case:
    key: str            # for --only: "softmax_4096"; "softmax" selects every softmax case
    title: str
    kind: str           # "copy" (the ceiling), "memory" (memory-bound), "matmul"
    op: str             # the row of the implementations' tables
    params: dict
    bytes: int          # moved to or from memory, at least once each
    flops: int
    tolerance: float    # relative norm error against the reference; 0: bit-exact
    make: Callable
    reference: Callable


def selected(key: str, words: list[str]) -> bool:
    """Whether `--only` words select a case key: the key itself or its first part ("softmax")."""
    return not words or any(w == key or key.split("_")[0] == w for w in words)


def _torch():
    import torch
    return torch


def _randn(*shape, dtype=None):
    torch = _torch()
    return torch.randn(*shape, device="cuda", dtype=dtype or torch.float32)


def _nan(*shape, dtype=None):
    torch = _torch()
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype or torch.float32)


def copy_case(n: int) -> Case:
    return Case("copy", f"copy f32 2^{n.bit_length() - 1}", "copy", "copy", {"n": n}, 8 * n, 0, 0,
                lambda: Problem(x=_randn(n), y=_nan(n)), lambda p: p.x)


def add_case(n: int) -> Case:
    return Case("add", f"vector add f32 2^{n.bit_length() - 1}", "memory", "add", {"n": n}, 12 * n, n, 0,
                lambda: Problem(a=_randn(n), b=_randn(n), y=_nan(n)), lambda p: p.a + p.b)


def transpose_case(s: int, dtype_name: str) -> Case:
    def make():
        dtype = getattr(_torch(), dtype_name)
        return Problem(x=_randn(s, s, dtype=dtype), y=_nan(s, s, dtype=dtype))
    size = 4 if dtype_name == "float32" else 2
    short = "f32" if dtype_name == "float32" else "bf16"
    return Case(f"transpose_{short}", f"transpose {s}^2 {short}", "memory", "transpose", {"s": s},
                2 * s * s * size, 0, 0, make, lambda p: p.x.t())


def gather_case(rows: int, width: int, vocab: int) -> Case:
    def make():
        torch = _torch()
        ids = torch.randint(0, vocab, (rows,), device="cuda", dtype=torch.int32)
        return Problem(table=_randn(vocab, width), ids=ids, y=_nan(rows, width))
    return Case("gather", f"row gather {rows} of {vocab} x {width} f32", "memory", "gather",
                {"rows": rows, "width": width}, 2 * rows * width * 4 + rows * 4, 0, 0, make,
                lambda p: p.table[p.ids.long()])


def softmax_case(rows: int, cols: int) -> Case:
    return Case(f"softmax_{cols}", f"softmax {rows} x {cols} f32", "memory", "softmax",
                {"rows": rows, "cols": cols}, 2 * rows * cols * 4, 0, 1e-5,
                lambda: Problem(x=_randn(rows, cols), y=_nan(rows, cols)),
                lambda p: _torch().softmax(p.x.double(), dim=1))


def layernorm_case(rows: int, cols: int) -> Case:
    def make():
        bf16 = _torch().bfloat16
        return Problem(x=_randn(rows, cols, dtype=bf16), w=_randn(cols, dtype=bf16), b=_randn(cols, dtype=bf16),
                       y=_nan(rows, cols, dtype=bf16))

    def reference(p):
        return _torch().nn.functional.layer_norm(p.x.float(), (cols,), p.w.float(), p.b.float(), 1e-5)
    return Case("layernorm", f"layernorm {rows} x {cols} bf16 (f32 statistics)", "memory", "layernorm",
                {"rows": rows, "cols": cols}, 2 * rows * cols * 2 + 4 * cols, 0, 1e-2, make, reference)


def matmul_case(key: str, s: int) -> Case:
    def make():
        bf16 = _torch().bfloat16
        return Problem(a=_randn(s, s, dtype=bf16), b=_randn(s, s, dtype=bf16), y=_nan(s, s, dtype=bf16))
    return Case(key, f"matmul {s}^3 bf16 (f32 accumulate)", "matmul", "matmul", {"s": s}, 3 * s * s * 2,
                2 * s ** 3, 1e-2, make, lambda p: p.a.double() @ p.b.double())


def all_cases(quick: bool) -> list[Case]:
    """Every case at full size (they fill an H100), or small for a smoke test (same keys)."""
    n, s = (1 << 22, 2048) if quick else (1 << 28, 16384)
    rows = 2048 if quick else 32768
    return [copy_case(n), add_case(n), transpose_case(s, "float32"), transpose_case(s, "bfloat16"),
            gather_case(1 << 12, 256, 1 << 14) if quick else gather_case(1 << 18, 256, 1 << 20),
            *(softmax_case(rows, cols) for cols in (1024, 4096, 16384)), layernorm_case(rows, 4096),
            matmul_case("matmul_4096", 1024 if quick else 4096), matmul_case("matmul_8192", 2048 if quick else 8192)]
