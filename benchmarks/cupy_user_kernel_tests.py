"""CuPy's own user-kernel tests against tileworkbench's ElementwiseKernel and ReductionKernel.

    python benchmarks/cupy_user_kernel_tests.py                        # downloads the files at CUPY_TAG
    python benchmarks/cupy_user_kernel_tests.py --cupy /tmp/cupy       # a checkout of cupy/cupy (or a
                                                                       # folder holding the five files)
    python benchmarks/cupy_user_kernel_tests.py --json out.json -- -k carray
    python benchmarks/cupy_user_kernel_tests.py --gpu                  # on a GPU, with CuPy installed

CPU (default): the test files (FILES) run unedited in a pytest subprocess with
benchmarks/cupy_shim.py as `cupy` (NumPy arrays, tileworkbench's kernel classes); each test is
pass, fail, complex (fails for complex dtypes only) or n/a (needs CuPy internals or GPU arrays,
or builds no user kernel), printed per file with the reasons.

--gpu: the same files with the real CuPy, whose ElementwiseKernel and ReductionKernel are
replaced by twins (benchmarks/cupy_twin.py): every definition a test makes is built by CuPy and
by tileworkbench, every call runs on both with the same CuPy arrays, and the results are
compared (bit for bit for elementwise kernels and integer reductions; float reductions combine
in another order, so their largest relative difference is reported); the tests keep CuPy's
results. Then the user guide's kernels and complex elementwise kernels are timed on both.
The files are never copied into this repository: they are read from the checkout or downloaded
into a temporary folder.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter
from pathlib import Path

CUPY_TAG = "v14.2.0"
FILES = ("test_userkernel.py", "test_elementwise.py", "test_reduction.py", "test_carray.py", "test_structured.py")
TEST_DIR = "tests/cupy_tests/core_tests"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def test_files(checkout: Path | None, into: Path) -> Path:
    """The test files in a fresh folder (from a checkout or a folder holding them, or downloaded at
    CUPY_TAG)."""
    for name in FILES:
        if checkout is not None:
            text = (checkout / name if (checkout / name).exists() else checkout / TEST_DIR / name).read_text()
        else:
            url = f"https://raw.githubusercontent.com/cupy/cupy/{CUPY_TAG}/{TEST_DIR}/{name}"
            with urllib.request.urlopen(url, timeout=60) as response:   # noqa: S310 - a fixed https URL
                text = response.read().decode()
        (into / name).write_text(text)
    return into


def run(folder: Path, plugin: str, report: Path, extra: list[str]) -> dict:
    env = {**os.environ, "CUPY_SHIM_REPORT": str(report), "CUPY_TWIN_REPORT": str(report),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-p", plugin, "-p", "no:cacheprovider", "--rootdir", str(folder),
               "-q", "-rN", "-m", "not slow", "--tb=no", "-o", "addopts=", *[str(folder / f) for f in FILES], *extra]
    subprocess.run(command, env=env, cwd=folder, check=False)
    return json.loads(report.read_text()) if report.exists() else {}


def table(results: dict) -> str:
    lines, totals = [], Counter()
    for name in FILES:
        rows = {k: v for k, v in results.items() if k.split("::")[0].endswith(name)}
        counts = Counter(kind for kind, _ in rows.values())
        totals += counts
        lines.append(f"{name:24} " + "  ".join(f"{kind} {counts[kind]:3}" for kind in ("pass", "fail", "complex", "n/a")))
        for test, (kind, why) in sorted(rows.items()):
            if kind != "pass":
                lines.append(f"    {kind:7} {test.split('::', 1)[1]}: {why}")
    lines.append(f"{'total':24} " + "  ".join(f"{kind} {totals[kind]:3}" for kind in ("pass", "fail", "complex", "n/a")))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cupy", type=Path, help="a checkout of cupy/cupy (default: download the files at "
                        f"{CUPY_TAG})")
    parser.add_argument("--gpu", action="store_true", help="compare with the real CuPy on a GPU and time both")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = test_files(args.cupy, Path(tmp))
        report = Path(tmp) / "report.json"
        results = run(folder, "cupy_twin" if args.gpu else "cupy_shim", report, args.pytest_args)
    if args.gpu:
        sys.path.insert(0, str(ROOT))
        from cupy_twin import print_report, time_guide_kernels
        results["timings"] = time_guide_kernels()
        print_report(results)
    else:
        print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    failed = results.get("comparisons", {}) if args.gpu else {k: v for k, v in results.items() if v[0] == "fail"}
    return 1 if (args.gpu and any(not c["match"] for c in failed.values())) or (not args.gpu and failed) else 0


if __name__ == "__main__":
    sys.exit(main())
