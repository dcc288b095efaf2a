"""Memory-bound kernels in the idioms of third-party cuTile code, under tileworkbench and cuTile.

    python benchmarks/idioms.py                    # GPU: every idiom in bf16 and f32; a table last (< 3 min)
    python benchmarks/idioms.py --only softmax --dtypes bfloat16,float16
    python benchmarks/idioms.py --smoke            # no GPU: tiny sizes on the interpreter, against NumPy

The kernels are in benchmarks/idiom_kernels.py, written as cuTile users write them: rows gathered
and scattered at `(row, ct.arange(TILE))` with bounds checks, whole-row tiles converted to float32
and back, `(1, TILE)` loads padded with zeros, APPROX divisions flushing to zero, persistent loops,
`occupancy=` hints, dropout with a hash of the element index as its random numbers, RoPE. The same
file runs under tileworkbench (its `cuda.tile` bound to tileworkbench) and, where `cuda.tile` is a
real cuTile (`source .cutile/setup.sh`, see benchmarks/prepare_cutile.sh), under cuTile.

Each run is checked first (its output poisoned with NaN; rows at both ends compared with a NumPy
reference, and no NaN anywhere), then timed with CUDA events around each launch, the L2 flushed
before it, median of the repetitions. Reported: GB/s (bytes each kernel must read and write once),
the ratio to a torch copy of the same number of bytes, and the ratio to cuTile (above 1: faster).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
if REPO not in sys.path:  # run as a script: tileworkbench from this checkout
    sys.path.insert(0, REPO)

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idiom_kernels.py")
NAMES = ("softmax_gather", "softmax_gather_persistent", "softmax_load", "swiglu", "silu_and_mul", "dropout", "rope")
DTYPES = ("bfloat16", "float16", "float32")
DEFAULT_DTYPES = ("bfloat16", "float32")  # (float16 moves as bfloat16 does)
TOLERANCE = {"bfloat16": 2e-2, "float16": 4e-3, "float32": 2e-5}  # relative norm error of the rows checked
CHECKED_ROWS = 64  # rows (dropout: blocks of elements) checked at each end
DROP_P = 0.1


def next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


# ---- the problems: shapes, launch arguments and NumPy references -------------------------------------

@dataclass
class Idiom:
    """One kernel at one size: its arrays (name -> (shape, dtype; None: the run's dtype)), the outputs
    among them, the launch grid and arguments, and a reference of the outputs from the inputs' rows.
    `key` names it at every size."""
    key: str
    name: str
    kernel: str
    arrays: dict
    outputs: tuple
    grid: Callable  # (arrays, SM count) -> grid
    args: Callable  # arrays -> the kernel's arguments
    reference: Callable  # (input rows, first row's index) -> {output: rows}, in float64

    def nbytes(self, dtype: str) -> int:
        return sum(int(np.prod(shape)) * np.dtype(_numpy_dtype(d or dtype)).itemsize
                   for shape, d in self.arrays.values())


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _silu_mul(g, u):
    return g / (1 + np.exp(-g)) * u


def hash_uniform(index: np.ndarray, seed: int) -> np.ndarray:
    """idiom_kernels._uniform in NumPy: the same 32-bit hash of index + seed, as float32 in [0, 1)."""
    h = (index.astype(np.int64) + seed).astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x7FEB352D)
    h ^= h >> np.uint32(15)
    h *= np.uint32(0x2C1B3C6D)
    h ^= h >> np.uint32(16)
    return (h >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / (1 << 24))


def idioms(smoke: bool) -> list[Idiom]:
    """Every idiom at its benchmark size (smoke: a tiny one for the interpreter)."""
    rows, cols = (6, 64) if smoke else (16384, 4096)
    wide_rows, wide = (3, 300) if smoke else (4096, 16384)
    d = 24 if smoke else 4096
    n = 3000 if smoke else 1 << 24
    block = 256 if smoke else 1024
    seq, heads, half = (5, 4, 8) if smoke else (4096, 32, 64)
    seed = 1234

    def softmax_rows(key, name, kernel, m, c, persistent=False):
        tile = next_pow2(c)
        args = (lambda a: (a["x"], a["y"], m, c, tile)) if persistent else (lambda a: (a["x"], a["y"], c, tile))
        return Idiom(key, name, kernel, {"x": ((m, c), None), "y": ((m, c), None)}, ("y",),
                     (lambda a, sms: (min(m, 4 * sms),)) if persistent else (lambda a, sms: (m,)), args,
                     lambda x, first: {"y": _softmax(x["x"])})

    out = [
        softmax_rows("softmax_gather", f"softmax gather {cols}", "softmax_gather", rows, cols),
        softmax_rows("softmax_gather_wide", f"softmax gather {wide}", "softmax_gather", wide_rows, wide),
        softmax_rows("softmax_gather_masked", f"softmax gather {cols - cols // 32 - 3} (masked)", "softmax_gather",
                     rows, cols - cols // 32 - 3),
        softmax_rows("softmax_gather_persistent", f"softmax gather persistent {cols}", "softmax_gather_persistent",
                     rows, cols, persistent=True),
        Idiom("softmax_load", f"softmax load {cols}", "softmax_load", {"x": ((rows, cols), None), "y": ((rows, cols), None)}, ("y",),
              lambda a, sms: (rows,), lambda a: (a["x"], a["y"], cols),
              lambda x, first: {"y": _softmax(x["x"])}),
        Idiom("swiglu", f"swiglu {cols}", "swiglu", {"a": ((rows, cols), None), "b": ((rows, cols), None),
                                           "c": ((rows, cols), None)}, ("c",),
              lambda a, sms: (min(rows, 4 * sms),), lambda a: (a["a"], a["b"], a["c"], next_pow2(cols)),
              lambda x, first: {"c": _silu_mul(x["a"], x["b"])}),
        Idiom("silu_and_mul", f"silu and mul {d}", "silu_and_mul", {"x": ((rows // 2, 2 * d), None), "y": ((rows // 2, d), None)},
              ("y",), lambda a, sms: (rows // 2,), lambda a: (a["x"], a["y"], d, next_pow2(d)),
              lambda x, first: {"y": _silu_mul(x["x"][:, :d], x["x"][:, d:])}),
        Idiom("dropout", f"dropout {n}", "dropout", {"x": ((n,), None), "y": ((n,), None)}, ("y",),
              lambda a, sms: (-(-n // block),), lambda a: (a["x"], a["y"], n, seed, DROP_P, block),
              lambda x, first: {"y": np.where(hash_uniform(np.arange(first, first + len(x["x"])), seed) >= DROP_P,
                                              x["x"] / (1 - DROP_P), 0.0)}),
        Idiom("rope", f"rope {seq}x{heads}x{2 * half}", "rope",
              {"x": ((seq, heads, 2 * half), None), "cos": ((seq, half), "float32"), "sin": ((seq, half), "float32"),
               "y": ((seq, heads, 2 * half), None)}, ("y",),
              lambda a, sms: (seq,), lambda a: (a["x"], a["cos"], a["sin"], a["y"], heads, half),
              lambda x, first: {"y": _rope(x["x"], x["cos"], x["sin"])}),
    ]
    return out


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2, c, s = x[..., :half], x[..., half:], cos[:, None, :], sin[:, None, :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def _numpy_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return np.dtype(name)


def _rows(idiom: Idiom, host: dict, first: int, count: int) -> dict:
    """Rows first .. first + count of every array (axis 0), as float64."""
    return {k: np.asarray(v[first:first + count], dtype=np.float64) for k, v in host.items()}


def check(idiom: Idiom, host: dict, dtype: str) -> str | None:
    """None when the outputs (host arrays of the run) match the reference at both ends, else why not."""
    length = len(next(iter(host.values())))
    count = CHECKED_ROWS * (1024 if idiom.kernel == "dropout" else 1)
    for first in sorted({0, max(0, length - count)}):
        got = _rows(idiom, host, first, count)
        for name, expected in idiom.reference(got, first).items():
            if np.isnan(got[name]).any():
                return f"{name}: NaN in rows {first}..{first + count} (not every element written)"
            error = np.linalg.norm(got[name] - expected) / max(np.linalg.norm(expected), 1e-300)
            if not error <= TOLERANCE[dtype]:
                return f"{name}: relative error {error:.2e} > {TOLERANCE[dtype]:.0e} in rows {first}..{first + count}"
    return None


def load_kernels(cuda_tile: str):
    """idiom_kernels.py as a module, its `cuda.tile` being cuTile or tileworkbench."""
    from benchmarks.published import load
    return load(KERNELS, list(NAMES), cuda_tile=cuda_tile)


# ---- the interpreter (no GPU) ------------------------------------------------------------------------

def smoke(dtypes=DTYPES, only=()) -> list[tuple]:
    """Every idiom at its tiny size on the interpreter (NumPy arrays), checked: [(idiom, dtype, verdict)]."""
    import tileworkbench.tile as ct
    module = load_kernels("tileworkbench")
    rng = np.random.default_rng(0)
    results = []
    for idiom in idioms(smoke=True):
        if only and not any(w in idiom.name for w in only):
            continue
        for dtype in dtypes:
            host = {k: (rng.standard_normal(shape) if k not in idiom.outputs else np.full(shape, np.nan))
                    .astype(_numpy_dtype(d or dtype)) for k, (shape, d) in idiom.arrays.items()}
            ct.launch(None, idiom.grid(host, 2), getattr(module, idiom.kernel), idiom.args(host))
            results.append((idiom.name, dtype, check(idiom, host, dtype) or "ok"))
    return results


# ---- the GPU -----------------------------------------------------------------------------------------

def _device_arrays(idiom: Idiom, dtype: str, generator) -> dict:
    import torch
    arrays = {}
    for k, (shape, d) in idiom.arrays.items():
        t = getattr(torch, d or dtype)
        arrays[k] = (torch.full(shape, float("nan"), dtype=t, device="cuda") if k in idiom.outputs
                     else torch.randn(shape, dtype=torch.float32, device="cuda", generator=generator).to(t))
    return arrays


def _host(arrays: dict, idiom: Idiom) -> dict:
    """The arrays' rows at both ends on the host (float32): what check() reads."""
    count = CHECKED_ROWS * (1024 if idiom.kernel == "dropout" else 1)
    out = {}
    for k, v in arrays.items():
        if len(v) <= 2 * count:
            out[k] = v.float().cpu().numpy()
        else:  # the middle is not checked: keep the ends at their places, NaN between
            host = np.full(tuple(v.shape), np.nan, np.float32)
            host[:count], host[-count:] = v[:count].float().cpu().numpy(), v[-count:].float().cpu().numpy()
            out[k] = host
    return out


def _no_nan(arrays: dict, idiom: Idiom) -> bool:
    return not any(bool(arrays[k].isnan().any()) for k in idiom.outputs)


def bench(dtypes=DEFAULT_DTYPES, only=(), repetitions: int = 20) -> list[dict]:
    """Every idiom on the GPU under tileworkbench and cuTile (where importable), and a torch copy of the
    same bytes: one row per idiom and dtype."""
    import torch

    from benchmarks.peers import Timer, describe
    timer, sms = Timer(), torch.cuda.get_device_properties().multi_processor_count
    implementations = {"tileworkbench": load_kernels("tileworkbench")}
    launch = {"tileworkbench": __import__("tileworkbench.tile", fromlist=["launch"]).launch}
    try:
        implementations["cuTile"] = load_kernels("cuTile")
        launch["cuTile"] = __import__("cuda.tile", fromlist=["launch"]).launch
    except Exception as e:
        print(f"# cuTile not measured: {describe(e)}", flush=True)
    generator = torch.Generator(device="cuda").manual_seed(0)
    copies: dict = {}
    rows = []
    for idiom in idioms(smoke=False):
        if only and not any(w in idiom.name for w in only):
            continue
        for dtype in dtypes:
            started = time.perf_counter()
            nbytes = idiom.nbytes(dtype)
            row = {"idiom": idiom.name, "dtype": dtype, "bytes": nbytes}
            arrays = _device_arrays(idiom, dtype, generator)
            for impl, module in implementations.items():
                kernel, stream = getattr(module, idiom.kernel), torch.cuda.current_stream()
                grid, args = idiom.grid(arrays, sms), idiom.args(arrays)

                def run():
                    launch[impl](stream, grid, kernel, args)
                try:
                    for k in idiom.outputs:
                        arrays[k].fill_(float("nan"))
                    run()
                    torch.cuda.synchronize()
                    reason = None if _no_nan(arrays, idiom) else "output has NaN (not every element written)"
                    reason = reason or check(idiom, _host(arrays, idiom), dtype)
                    if reason:
                        row[impl] = f"wrong: {reason}"
                        continue
                    run()
                    row[impl] = float(np.median(timer.samples(run, repetitions)))
                except Exception as e:
                    row[impl] = describe(e)
            if nbytes not in copies:
                source = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
                target = torch.empty_like(source)
                copies[nbytes] = float(np.median(timer.samples(lambda: target.copy_(source), repetitions)))
            row["copy"] = copies[nbytes]
            del arrays
            rows.append(row)
            print(f"# {idiom.name} {dtype}: {time.perf_counter() - started:.1f} s", flush=True)
    return rows


def table(rows: list[dict]) -> str:
    """The results as a text table: ms and GB/s per implementation, tileworkbench vs copy and vs cuTile."""
    head = f"{'idiom':40s} {'dtype':9s} {'tileworkbench':>22s} {'cuTile':>22s} {'x copy':>7s} {'x cuTile':>8s}"
    lines = [head, "-" * len(head)]

    def cell(row, impl):
        v = row.get(impl)
        if isinstance(v, float):
            return f"{v * 1e3:8.1f} us {row['bytes'] / v / 1e6:6.0f} GB/s"
        return "-" if v is None else "failed"
    for row in rows:
        tw, cu = row.get("tileworkbench"), row.get("cuTile")
        x_copy = f"{row['copy'] / tw:7.2f}" if isinstance(tw, float) else f"{'-':>7s}"
        x_cutile = f"{cu / tw:8.2f}" if isinstance(tw, float) and isinstance(cu, float) else f"{'-':>8s}"
        lines.append(f"{row['idiom']:40s} {row['dtype']:9s} {cell(row, 'tileworkbench'):>22s} "
                     f"{cell(row, 'cuTile'):>22s} {x_copy} {x_cutile}")
    failures = [f"  {r['idiom']} {r['dtype']} {impl}: {r[impl]}" for r in rows
                for impl in ("tileworkbench", "cuTile") if isinstance(r.get(impl), str)]
    return "\n".join(lines + (["failures:"] + failures if failures else []))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the interpreter (no GPU)")
    parser.add_argument("--only", default="", help="comma-separated words: idioms whose name has one")
    parser.add_argument("--dtypes", default=None,
                        help=f"comma-separated, of {', '.join(DTYPES)} (default: {', '.join(DEFAULT_DTYPES)} on the "
                             f"GPU, all with --smoke)")
    parser.add_argument("--repetitions", type=int, default=20)
    args = parser.parse_args(argv)
    only = tuple(w for w in args.only.split(",") if w)
    dtypes = tuple(d for d in (args.dtypes or ",".join(DTYPES if args.smoke else DEFAULT_DTYPES)).split(",") if d)
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        parser.error(f"unknown --dtypes {', '.join(unknown)} (known: {', '.join(DTYPES)})")
    if args.smoke:
        results = smoke(dtypes, only)
        for name, dtype, verdict in results:
            print(f"{name:40s} {dtype:9s} {verdict}")
        return 0 if all(v == "ok" for *_, v in results) else 1
    rows = bench(dtypes, only, args.repetitions)
    print(table(rows))
    return 0 if all(isinstance(r.get("tileworkbench"), float) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
