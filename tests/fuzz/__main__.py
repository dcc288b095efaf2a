"""A longer fuzzing run for development:

    python -m tests.fuzz --minutes 10 --seed 1 --nvrtc-every 20

prints the number of kernels checked and compiled, and each mismatch with its kernel's source."""
import argparse
import os
import sys
import tempfile

from .engine import fuzz


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nvrtc-every", type=int, default=20, help="compile every N-th kernel with NVRTC (0: none)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TILEWORKBENCH_CACHE_DIR"] = cache  # keep the user's compile cache clean
        stats = fuzz(args.minutes * 60, args.seed, nvrtc_every=args.nvrtc_every)
    for seed, k, found, source in stats.mismatches:
        print(f"--- seed {seed} #{k}: {found}\n{source}")
    print(stats)
    return 1 if stats.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
