"""The same random programs under real cuTile and under tileworkbench (on the GPU and on the
interpreter), each result classified by what the semantics determine:

    source .cutile/setup.sh                      # cuTile and its compiler (benchmarks/prepare_cutile.sh)
    python -m tests.fuzz.differential --minutes 10 --report differential.txt

prints the kernels checked and the mismatches (each with its kernel's source); the report file opens
with these rules and the counts. A program cuTile refuses is counted apart (where cuTile refuses what
the tile-operations specification defines, tileworkbench follows the specification); one tileworkbench
refuses and cuTile runs is a mismatch. Without a GPU or without cuTile, `--interpreter-only` checks the
programs' NumPy expectations; `--compile-only` also compiles each one for sm_90 with NVRTC and with
cuTile's compiler (ahead-of-time export, where cuTile is importable: Python 3.12), so a program cuTile
compiles and tileworkbench refuses shows without a GPU.

How results are compared (`RULES`, written at the head of the report):

- bit for bit where the result is determined: integers, casts, loads, stores, gathers, scatters,
  atomics, exactly computed floats (any NaN equals any NaN; -0.0 equals 0.0, as IEEE leaves the sign
  of min(-0.0, 0.0) open);
- float sums and transcendental functions within float rounding of the largest value involved;
- mma and matmul of floats within `families.mma_tolerance`: the implementations sum K products in
  their own order and grouping, so two correct results lie within 2 (K + 1) units of the accumulation's
  last kept bit of sum_k |x_ik||y_kj| + |acc_ij| (Higham's dot-product bound; float32 operands are
  float32 in the bound: rounding them to tfloat32 would be a mismatch), plus one step of the result's
  dtype where the sum is rounded to it. tileworkbench's interpreter and GPU still agree bit for bit
  where both compute the tensor cores' model (16-bit, float8 and tfloat32 operands into float32);
- against cuTile, elements computed from a float -> integer conversion of NaN, an infinity or a value
  past the integer's range are not compared: cuTile emits an unsaturated `ftoi`, which the Tile IR
  specification leaves undefined there. tileworkbench defines it (truncation, saturation, NaN -> 0),
  so its interpreter and GPU are checked on those elements against the NumPy expectation; so are
  elements computed from `abs` of an unsigned integer with its top bit set, which cuTile negates
  (its `absi` reads the operand as signed) and tileworkbench leaves as NumPy does.

Programs come from programs.py (elementwise, reductions, scans, gathers, scatters, shape ops,
every padding mode, ragged shapes) and families.py (integer division and shifts of every width,
fp8 and tfloat32, mma of every operand dtype, atomics), arguments spelled by keyword or position;
a third of them have their parameters and variables renamed to C++ and CUDA names (`new`, `int`,
`template`, `threadIdx`, ...).
"""
from __future__ import annotations

import argparse
import collections
import datetime
import importlib.util
import itertools
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .engine import difference
from .families import FAMILIES
from .programs import Program, random_program, with_cpp_names

GENERATORS = (random_program,) * 4 + FAMILIES  # programs.py's mix drawn as often as all the families
CPP_NAMES_SHARE = 1 / 3  # of the programs, renamed to C++ and CUDA names

RULES = """\
Compared bit for bit where the result is determined (integers, casts, loads, stores, gathers,
scatters, atomics, exactly computed floats; NaN equals NaN, -0.0 equals 0.0); float sums and
transcendental functions within float rounding; float mma and matmul within 2 (K + 1) units of the
accumulation's last bit of sum_k |x_ik||y_kj| + |acc_ij| (float32 operands as float32), plus one step
of the result's dtype where rounded to it. Against cuTile, elements computed from a float -> integer
conversion of NaN, an infinity or an out-of-range value are not compared (undefined in cuTile's
Tile IR `ftoi`; tileworkbench saturates, checked against NumPy on its interpreter and GPU), nor
those computed from the abs of an unsigned integer with its top bit set (cuTile's `absi` reads it
as signed; tileworkbench gives the integer, as NumPy does, checked on its interpreter and GPU)."""


@dataclass
class Stats:
    checked: int = 0
    refused_by_cutile: int = 0
    mismatches: list = field(default_factory=list)  # (seed, program index, what differs, source)
    within_tolerance: int = 0  # mma kernels compared with cuTile within mma_tolerance
    undefined_elements: int = 0  # elements cuTile leaves undefined (float -> integer out of range) or computes otherwise (abs of unsigned)
    undefined_kernels: int = 0  # kernels with at least one
    refusals: collections.Counter = field(default_factory=collections.Counter)  # cuTile's reasons

    def __str__(self) -> str:
        return (f"{self.checked} kernels checked, {self.refused_by_cutile} refused by cuTile, "
                f"{len(self.mismatches)} mismatches ({self.within_tolerance} mma kernels compared within "
                f"tolerance; {self.undefined_elements} elements of {self.undefined_kernels} kernels left "
                f"undefined by cuTile or computed otherwise by its documented rule, not compared with it)")


def load_kernel(source: str, module: str, directory: Path, k: int):
    """The program's `fuzz` kernel with `ct` bound to `module`, defined from a file (cuTile reads
    the source of its kernels)."""
    path = directory / f"fuzz_{module.replace('.', '_')}_{k}.py"
    path.write_text(f"import {module} as ct\n\n\n{source}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    namespace = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(namespace)
    return namespace.fuzz


def same(a: np.ndarray, b: np.ndarray, exact: bool, eps: float, tolerance: np.ndarray | None = None,
         defined: np.ndarray | None = None) -> str | None:
    """None where `b` equals `a`: bit for bit if `exact` (any NaN equals any NaN, and -0.0 equals 0.0:
    IEEE leaves the sign of min(-0.0, 0.0) open), within `tolerance` (per element) where given, else
    within float rounding; only where `defined` (all elements if None)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{b.dtype}{b.shape} against {a.dtype}{a.shape}"
    float_kind = a.dtype.kind == "f" or a.dtype.name in ("bfloat16",) or a.dtype.name.startswith("float8")
    if not float_kind:
        bad = a.view(np.uint8).reshape(a.shape + (-1,)) != b.view(np.uint8).reshape(b.shape + (-1,))
        bad = bad.any(axis=-1) if a.ndim else bad.any()
    else:
        x, y = a.astype(np.float64), b.astype(np.float64)
        nan = np.isnan(x)
        bad = nan != np.isnan(y)
        if tolerance is not None:
            with np.errstate(invalid="ignore"):
                bad |= ~nan & ~((x == y) | (np.abs(x - y) <= tolerance))
        elif exact:
            bad |= ~nan & (x != y)
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                scale = 1 + np.max(np.abs(x[np.isfinite(x)]), initial=0)
                bad |= ~nan & ~((x == y) | (np.abs(x - y) <= 64 * max(eps, 2 ** -23) * scale))
    bad = np.asarray(bad)
    if defined is not None:
        bad = bad & defined
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    allowed = f" (tolerance {float(tolerance[where]):.3g})" if tolerance is not None else ""
    return f"{int(bad.sum())} elements differ, first at {where}: {b[where]!r} against {a[where]!r}{allowed}"


class Device:
    """Host arrays to CUDA tensors and back (PyTorch holds every dtype, fp8 included)."""

    def __init__(self):
        import torch
        self.torch = torch

    def to(self, a: np.ndarray):
        torch = self.torch
        if a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"):
            raw = torch.from_numpy(a.view(np.int16 if a.itemsize == 2 else np.uint8).copy())
            return raw.view(getattr(torch, a.dtype.name)).cuda()
        return torch.from_numpy(a.copy()).cuda()

    def back(self, t, like: np.ndarray) -> np.ndarray:
        if like.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"):
            raw = t.cpu().view(self.torch.int16 if like.itemsize == 2 else self.torch.uint8).numpy()
            return raw.view(like.dtype)
        return t.cpu().numpy()

    def stream(self):
        return self.torch.cuda.current_stream()


def run_program(program: Program, k: int, directory: Path, device: Device | None,
                compile_only: bool = False) -> tuple[str, str | None]:
    """("checked", what differs or None) or ("refused", cuTile's reason)."""
    import tileworkbench.tile as ours
    host = program.fresh_args()
    try:
        ours.launch(None, program.grid, load_kernel(program.source, "tileworkbench.tile", directory, k), host)
    except Exception as e:  # noqa: BLE001 - a crash is a finding
        return "checked", f"interpreter: {type(e).__name__}: {e}"
    results = {"interpreter": host[2]}
    if program.expected is not None:
        found = difference(program, host[2])
        if found:
            return "checked", f"interpreter against NumPy: {found}"
    if compile_only:
        return compile_both(program, k, directory)
    if device is None:
        return "checked", None
    import cuda.tile as cutile
    for name, module, launch in (("cuTile", "cuda.tile", cutile.launch), ("tileworkbench GPU", "tileworkbench.tile",
                                                                          ours.launch)):
        args = tuple(device.to(a) for a in program.fresh_args())
        try:
            launch(device.stream(), program.grid, load_kernel(program.source, module, directory, k), args)
            device.torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            if name == "cuTile":
                return "refused", refusal(e)
            return "checked", f"{name}: {type(e).__name__}: {e}"
        results[name] = device.back(args[2], program.args[2])
    gpu = results["tileworkbench GPU"]
    # tileworkbench's own semantics on every element: its GPU as its interpreter (and as NumPy)
    found = difference(program, gpu) if program.expected is not None else None
    found = found and f"tileworkbench GPU against NumPy: {found}"
    found = found or _against("tileworkbench GPU", "interpreter", results, program.exact, program.eps,
                              None if program.exact else program.tolerance, None)
    for name in ("tileworkbench GPU", "interpreter"):
        found = found or _against(name, "cuTile", results, program.exact, program.eps, program.tolerance,
                                  program.defined)
    return "checked", found


def refusal(e: Exception) -> str:
    """cuTile's reason for refusing a program, in one line (its compiler's first error where it ran)."""
    lines = [line.strip() for line in str(e).splitlines()
             if line.strip() and not re.fullmatch(r"Return code [0-9]+", line.strip())] or [""]
    line = next((line for line in lines if "error" in line.lower()), lines[0])
    return f"{type(e).__name__}: {re.sub(r'^error at offset [0-9]+: ', '', line)[:150]}"


def importable_cutile():
    """cuTile's package, or None where it does not import (its wheel is built for Python 3.12)."""
    try:
        import cuda.tile
    except ImportError:
        return None
    return cuda.tile


def compile_both(program: Program, k: int, directory: Path) -> tuple[str, str | None]:
    """No GPU: the program through cuTile's compiler (ahead-of-time export of an sm_90 cubin, where
    cuTile is importable) and through tileworkbench's (NVRTC, sm_90). One that cuTile compiles and
    tileworkbench does not is a mismatch."""
    from tileworkbench.runtime.launch import build
    cutile = importable_cutile()
    if cutile is not None:
        import io

        from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature, export_kernel
        arrays = [ArrayConstraint(getattr(cutile, a.dtype.name), a.ndim, index_dtype=cutile.int32,
                                  stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False)
                  for a in program.args]
        try:
            export_kernel(load_kernel(program.source, "cuda.tile", directory, k),
                          [KernelSignature(arrays, CallingConvention.cutile_python_v2())], io.BytesIO(),
                          gpu_code="sm_90", output_format="cubin")
        except Exception as e:  # noqa: BLE001 - cuTile refuses it
            return "refused", refusal(e)
    try:
        build(load_kernel(program.source, "tileworkbench.tile", directory, k).specialize(program.fresh_args()),
              "sm_90")
    except Exception as e:  # noqa: BLE001 - a crash is a finding
        return "checked", f"tileworkbench's compiler: {type(e).__name__}: {e}"
    return "checked", None


def _against(name: str, reference: str, results: dict, exact: bool, eps: float, tolerance, defined) -> str | None:
    found = same(results[reference], results[name], exact, eps, tolerance, defined)
    return found and f"{name} against {reference}: {found}"


def differential(seconds: float, seed: int = 0, interpreter_only: bool = False, limit: int | None = None,
                 progress=None, compile_only: bool = False) -> Stats:
    stats = Stats()
    rng = np.random.default_rng(seed)
    device = None if interpreter_only or compile_only else Device()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as directory:
        for k in itertools.count():
            if time.monotonic() - start > seconds or (limit is not None and k >= limit):
                break
            generator = GENERATORS[int(rng.integers(len(GENERATORS)))]
            with np.errstate(all="ignore"):
                program = generator(rng)
            if rng.random() < CPP_NAMES_SHARE:
                program = with_cpp_names(program, rng)
            outcome, found = run_program(program, k, Path(directory), device, compile_only)
            stats.checked += outcome == "checked"
            stats.refused_by_cutile += outcome == "refused"
            if outcome == "refused":
                stats.refusals[found] += 1
                found = None
            if outcome == "checked" and device is not None:  # compared with cuTile's results
                stats.within_tolerance += program.tolerance is not None
                undefined = 0 if program.defined is None else int((~program.defined).sum())
                stats.undefined_elements += undefined
                stats.undefined_kernels += undefined > 0
            if found is not None:
                stats.mismatches.append((seed, k, found, program.source))
            if progress and k % 100 == 99:
                progress(stats)
    return stats


def header(args, stats: Stats) -> str:
    """The report's opening: what ran where, the comparison rules, the counts."""
    try:
        tree = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent).stdout.strip() or "?"
    except OSError:
        tree = "?"
    where = "interpreter only"
    if args.compile_only:
        cutile = "cuTile's compiler" if importable_cutile() else "no cuTile"
        where = f"no GPU: interpreter, NVRTC and {cutile}, for sm_90"
    elif not args.interpreter_only:
        import torch

        import cuda.tile
        where = f"{torch.cuda.get_device_name()}, real cuTile {getattr(cuda.tile, '__version__', '?')}"
    lines = [f"{where}, {datetime.date.today().isoformat()}, tree {tree}, {platform.node()}: "
             f"python -m tests.fuzz.differential --minutes {args.minutes:g} --seed {args.seed}"
             f"{' --compile-only' if args.compile_only else ' --interpreter-only' if args.interpreter_only else ''}", "",
             *RULES.splitlines(), "", str(stats), *(f"  refused {n}x: {why}" for why, n in stats.refusals.most_common())]
    return "\n".join(f"# {line}" if line else "#" for line in lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.differential", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--interpreter-only", action="store_true", help="no GPU or no cuTile: the NumPy expectations")
    parser.add_argument("--compile-only", action="store_true",
                        help="no GPU: also compile each program for sm_90 with NVRTC and, where importable, with "
                             "cuTile's compiler (a program cuTile compiles and tileworkbench does not is a mismatch)")
    parser.add_argument("--report", help="write each mismatch with its kernel's source to this file")
    args = parser.parse_args(argv)
    stats = differential(args.minutes * 60, args.seed, args.interpreter_only,
                         progress=lambda s: print(s, flush=True), compile_only=args.compile_only)
    text = "".join(f"--- seed {seed} #{k}: {found}\n{source}\n" for seed, k, found, source in stats.mismatches)
    if args.report:
        Path(args.report).write_text(header(args, stats) + "\n\n" + text)
    print(text[:20000])
    print(stats)
    return 1 if stats.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
