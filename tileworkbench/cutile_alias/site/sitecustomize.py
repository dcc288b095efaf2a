"""Python imports this at startup when this folder is on PYTHONPATH: the way the `cuda.tile` alias
reaches the Python processes a cuTile program or test starts (`subprocess.run([sys.executable,
...])`). `python -m tileworkbench.cutile_alias` and the conformance runner put it there for their
children; it installs the alias only where TILEWORKBENCH_CUTILE_ALIAS is set (as they set it)."""
import os

if "TILEWORKBENCH_CUTILE_ALIAS" in os.environ:
    from tileworkbench.cutile_alias import install_from_environment

    install_from_environment()
