"""cuTile's own tests against tileworkbench: run a checkout of cuTile's test/ folder through the
`cuda.tile` alias and print a per-file table with the most common failure reasons.

    git clone https://github.com/NVIDIA/cutile-python /tmp/cutile-python     # never into this repo
    python benchmarks/cutile_conformance.py /tmp/cutile-python/test                  # every test_*.py
    python benchmarks/cutile_conformance.py /tmp/cutile-python/test --public-api     # PUBLIC_API_FILES
    python benchmarks/cutile_conformance.py /tmp/cutile-python/test test_scan.py test_copy.py
    python benchmarks/cutile_conformance.py /tmp/cutile-python/test --interpret      # on the interpreter
    python benchmarks/cutile_conformance.py /tmp/cutile-python/test --cpu            # no GPU at all
    python benchmarks/cutile_conformance.py /tmp/cutile-python/test --json out.json -- -x -k slice

The tests run unedited in a pytest subprocess with `-p tileworkbench.cutile_alias` and
TILEWORKBENCH_CUTILE_ALIAS=placeholders (cuTile's conftest and helpers import cuTile internals;
those become inert placeholders, so only the tests that use them fail). cuTile's tests need PyTorch
and, mostly, a CUDA device: run it on a GPU. `--interpret` also sets TILEWORKBENCH_INTERPRET=1
(every launch on the interpreter, CUDA tensors copied to the host and back). `--cpu` runs them
without a GPU: it implies --interpret and loads benchmarks/cutile_cpu_torch.py, which makes the
tests' CUDA tensors in host memory. Needs cuTile's test requirements (PyTorch, pytest-benchmark).
`--force` shadows a real cuTile install.
Not part of the test suite (pytest collects tests/ only).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

OUTCOMES = ("passed", "failed", "error", "skipped")


# cuTile's test files that reach only its public API (the rest test its compiler's internals: the
# bytecode, MLIR passes, its cache and CLI): --public-api picks them, and their pass rate is the one quoted.
PUBLIC_API_FILES = (
    "test_alias.py", "test_array_slice.py", "test_astile.py", "test_attention.py",
    "test_binary_elementwise.py", "test_cast.py", "test_cat.py", "test_closure.py",
    "test_concurrent_launch.py", "test_constant.py", "test_control_flow.py", "test_copy.py",
    "test_cudagraph.py", "test_dict.py", "test_enum.py", "test_extract.py", "test_full.py",
    "test_gather_scatter.py", "test_generate.py", "test_global_variables.py", "test_helper_function.py",
    "test_insert.py", "test_int64_kernel_args.py", "test_load_store.py",
    "test_load_store_advanced_indexing.py", "test_loose_typing.py", "test_mma.py", "test_num_tiles.py",
    "test_posponed_const_annotation.py", "test_range.py", "test_readme_example.py", "test_reduction.py",
    "test_reshape.py", "test_scan.py", "test_select.py", "test_softmax.py", "test_transpose.py",
    "test_unary_elementwise.py",
)


def pytest_command(test_dir: Path, files: list[str], junit: Path, extra: list[str], cpu: bool = False,
                   config: Path | None = None) -> list[str]:
    targets = [str(test_dir / f) for f in files] or sorted(str(p) for p in test_dir.glob("test_*.py"))
    plugins = ["-p", "tileworkbench.cutile_alias", "-p", "no:cacheprovider"] + (["-p", "cutile_cpu_torch"] if cpu else [])
    # A configuration of their own (an empty one by default): this project's (strict markers) never applies.
    configured = ["-c", str(config)] if config else []
    return [sys.executable, "-m", "pytest", *plugins, *configured, "--rootdir", str(test_dir), "-o", "junit_family=xunit1",
            f"--junitxml={junit}", "-q", "-rN", "--tb=no", "--continue-on-collection-errors", *targets, *extra]


def pytest_environment(interpret: bool, force: bool) -> dict:
    env = dict(os.environ)
    env["TILEWORKBENCH_CUTILE_ALIAS"] = "placeholders" + (",force" if force else "")
    if interpret:
        env["TILEWORKBENCH_INTERPRET"] = "1"
    here = Path(__file__).resolve().parent  # this checkout's tileworkbench first, and the --cpu plugin;
    site = here.parent / "tileworkbench" / "cutile_alias" / "site"  # the tests' `python file.py` children too
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(here.parent), str(here)] +
                                        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def read_results(junit: Path) -> list[dict]:
    """One record per test case: file, test id, outcome, and the first line of its failure."""
    records = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").split(".")[0] + ".py"
        outcome, reason = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                reason = _first_line(child.get("message") or child.text or "")
                break
        records.append({"file": Path(file).name, "test": f"{Path(file).name}::{case.get('name')}",
                        "outcome": outcome, "reason": reason})
    return records


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


def reason_group(reason: str) -> str:
    """A failure reason with the parts that differ between instances (numbers, quoted values,
    shapes, dtypes in brackets, addresses) blanked, so that one cause is one group."""
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", reason)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'?'", text)
    text = re.sub(r"\([0-9, ]*\)", "(?)", text)
    return re.sub(r"-?\d+(\.\d+)?", "N", text)


def summarize(records: list[dict]) -> tuple[dict, list]:
    """Counts per file, and the failure groups (most common first) with example test ids."""
    per_file: dict = defaultdict(Counter)
    groups: dict = defaultdict(list)
    for r in records:
        per_file[r["file"]][r["outcome"]] += 1
        if r["outcome"] in ("failed", "error"):
            groups[reason_group(r["reason"])].append(r)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return dict(sorted(per_file.items())), ranked


def format_report(records: list[dict], top: int = 15) -> str:
    per_file, groups = summarize(records)
    lines = ["| file | passed | failed | error | skipped |", "|---|---:|---:|---:|---:|"]
    totals = Counter()
    for file, counts in per_file.items():
        totals.update(counts)
        lines.append(f"| {file.removeprefix('test_').removesuffix('.py')} | "
                     + " | ".join(str(counts[o]) for o in OUTCOMES) + " |")
    lines.append("| **total** | " + " | ".join(str(totals[o]) for o in OUTCOMES) + " |")
    ran = totals["passed"] + totals["failed"] + totals["error"]
    if ran:
        lines += ["", f"ran {ran}; passed {totals['passed']} = {100 * totals['passed'] / ran:.1f}%"]
    if groups:
        lines += ["", f"Top failure reasons ({min(top, len(groups))} of {len(groups)} groups):", "```"]
        for _, members in groups[:top]:
            lines.append(f"{len(members):5d}  {members[0]['reason']}")
            lines += [f"         {m['test']}" for m in members[:2]]
        lines.append("```")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("test_dir", type=Path, help="a checkout of cuTile's test/ folder")
    parser.add_argument("files", nargs="*", help="test files in it (default: every test_*.py)")
    parser.add_argument("--public-api", action="store_true", help="the files of PUBLIC_API_FILES")
    parser.add_argument("--interpret", action="store_true", help="run every launch on the interpreter")
    parser.add_argument("--cpu", action="store_true", help="no GPU: the tests' CUDA tensors on the host, "
                                                           "every launch on the interpreter")
    parser.add_argument("--force", action="store_true", help="shadow a real cuTile install")
    parser.add_argument("--json", type=Path, help="also write every test's outcome here")
    parser.add_argument("--top", type=int, default=15, help="failure groups to show")
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)  # what follows `--` goes to pytest
    args, extra = parser.parse_intermixed_args(argv[:split]), argv[split + 1:]
    test_dir = args.test_dir.resolve()
    if not (test_dir / "conftest.py").exists():
        parser.error(f"{test_dir} does not look like cuTile's test/ folder (no conftest.py)")
    with tempfile.TemporaryDirectory() as tmp:
        junit, config = Path(tmp) / "results.xml", Path(tmp) / "pytest.ini"
        config.write_text("[pytest]\n")
        files = args.files or (list(PUBLIC_API_FILES) if args.public_api else [])
        completed = subprocess.run(pytest_command(test_dir, files, junit, extra, args.cpu, config), cwd=test_dir,
                                   env=pytest_environment(args.interpret or args.cpu, args.force), check=False)
        if not junit.exists():
            print(f"pytest wrote no results (exit status {completed.returncode})", file=sys.stderr)
            return 2
        records = read_results(junit)
    print(format_report(records, args.top))
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
