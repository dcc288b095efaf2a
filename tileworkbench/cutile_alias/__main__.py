"""`python -m tileworkbench.cutile_alias [--cpu] SCRIPT [ARGS]` or `... [--cpu] -m MODULE [ARGS]`: run
a cuTile program with `import cuda.tile` resolving to tileworkbench (see the package's docstring);
--cpu runs it without a GPU (see cpu.py)."""
import os
import runpy
import sys

from . import ENV, CuTileInstalledError, install_from_environment, reach_subprocesses

USAGE = "usage: python -m tileworkbench.cutile_alias [--cpu] (SCRIPT | -m MODULE) [ARGS...]"


def main(argv: list[str]) -> None:
    if argv[:1] == ["--cpu"]:   # also for the program's own Python children (reach_subprocesses)
        argv = argv[1:]
        os.environ[ENV] = ",".join(w for w in (os.environ.get(ENV, ""), "cpu") if w)
    if not argv or argv[0] in ("-h", "--help") or argv[0] == "-m" and len(argv) < 2:
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    try:
        install_from_environment()
    except (CuTileInstalledError, ImportError) as e:   # the message names the file and the way out
        raise SystemExit(f"{type(e).__name__}: {e}") from None
    reach_subprocesses()  # the program's own `python ...` children import cuda.tile the same way
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))  # as `python SCRIPT` does
        runpy.run_path(argv[0], run_name="__main__")


main(sys.argv[1:])
