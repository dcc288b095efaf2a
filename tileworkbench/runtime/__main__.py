"""Inspect or clear the compile cache:

    python -m tileworkbench.runtime list     # one line per compiled kernel on disk
    python -m tileworkbench.runtime clear
"""
import argparse
import time

from .cache import default_cache


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tileworkbench.runtime", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["list", "clear"])
    args = parser.parse_args(argv)
    cache = default_cache()
    if args.command == "clear":
        n = len(cache.entries())
        cache.clear()
        print(f"removed {n} entries from {cache.directory}")
        return 0
    entries = cache.entries()
    for e in sorted(entries, key=lambda e: e.mtime):
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.mtime))
        print(f"{e.key[:16]}  {e.arch:7} {e.size:9d} B  {stamp}  {', '.join(e.kernels)}")
    print(f"{len(entries)} entries, {sum(e.size for e in entries)} bytes in {cache.directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
