"""cuTile's `_stub` module: the tile functions, declared in ir/stubs.py (below the frontend, which
binds calls against their signatures)."""
from ..ir.stubs import *  # noqa: F401,F403
from ..ir.stubs import __all__  # noqa: F401
