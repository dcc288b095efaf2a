"""The implementations: one module per library, each a table from a case's op to its display name
and a function that takes the case's `Problem` and returns its configurations `{label: run}` (or a
single `run`); `run()` launches once on the current stream and writes `problem.y`.

    FAMILY = "Triton"
    OFFERS = {"add": ("Triton", add), "softmax": ("Triton", softmax), ...}

The tables import no GPU library: each function imports its library (and compiles its kernels) when
called, so a library missing here fails its implementations with the reason and the run goes on.
"""
from . import cupy_impls, cutile_impls, tileworkbench_impls, torch_impls, triton_impls

MODULES = (tileworkbench_impls, cutile_impls, triton_impls, cupy_impls, torch_impls)
FAMILIES = tuple(m.FAMILY for m in MODULES)


def offers(op: str, families: list[str] | None = None) -> list[tuple[str, str, object]]:
    """(implementation name, family, function) of every library implementing `op`, optionally only
    those of `families` (matched case-insensitively)."""
    wanted = {f.lower() for f in families or []}
    return [(m.OFFERS[op][0], m.FAMILY, m.OFFERS[op][1]) for m in MODULES
            if op in m.OFFERS and (not wanted or m.FAMILY.lower() in wanted)]
