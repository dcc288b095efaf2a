"""Longer fuzzing runs for development:

    python -m tests.fuzz --minutes 10 --seed 1 --nvrtc-every 20   # random kernels (each trace saved and loaded)
    python -m tests.fuzz traces --minutes 10 --seed 1               # mutated trace files

print what was checked, and each finding (a kernel's mismatch with its source, a trace file's crash)."""
import argparse
import os
import sys
import tempfile

from .engine import fuzz
from .trace_files import fuzz_trace_files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", choices=["kernels", "traces"], default="kernels")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nvrtc-every", type=int, default=20, help="compile every N-th kernel with NVRTC (0: none)")
    args = parser.parse_args(argv)
    if args.target == "traces":
        checked, findings = fuzz_trace_files(args.minutes * 60, args.seed)
        for case, found in findings:
            print(f"--- seed {args.seed} case {case}:\n{found}")
        print(f"{checked} mutated trace files checked, {len(findings)} findings")
        return 1 if findings else 0
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TILEWORKBENCH_CACHE_DIR"] = cache  # keep the user's compile cache clean
        stats = fuzz(args.minutes * 60, args.seed, nvrtc_every=args.nvrtc_every)
    for seed, k, found, source in stats.mismatches:
        print(f"--- seed {seed} #{k}: {found}\n{source}")
    print(stats)
    return 1 if stats.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
