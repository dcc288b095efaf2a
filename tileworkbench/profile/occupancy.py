"""Occupancy as one launch input varies: the what-if curves of the launch report.

The calculator itself is the runtime's (runtime/occupancy.py): a compiled kernel's record carries
its occupancy, computed once; these curves ask it about launches that were not compiled.
"""
from __future__ import annotations

from ..runtime.occupancy import LIMITERS, Occupancy, percent, theoretical_occupancy  # noqa: F401 - profile's API
from ..targets import ARCH_LIMITS, KB, WARP_SIZE, arch_limits  # noqa: F401 - part of profile's API


def occupancy_curve(arch: str, vary: str, *, threads_per_block: int = 256, registers_per_thread: int = 32,
                    shared_bytes_per_block: int = 0, values=None) -> dict[str, list]:
    """Occupancy as one input varies and the others stay fixed, as plain lists for plotting.

    vary: "registers" (default values 8, 16, ..., 248, 255), "shared" (0 to the opt-in maximum in
    1 KB steps) or "threads" (32, 64, ..., 1024).

        >>> occupancy_curve("sm_90", "registers", threads_per_block=256)["occupancy"][:3]
        [1.0, 1.0, 1.0]
    """
    limits = arch_limits(arch)
    defaults = {
        "registers": [*range(8, 256, 8), 255],
        "shared": list(range(0, limits.shared_per_block_optin + 1, KB)),
        "threads": list(range(WARP_SIZE, limits.max_threads_per_block + 1, WARP_SIZE)),
    }
    if vary not in defaults:
        raise ValueError(f"vary must be one of {', '.join(defaults)}, got {vary!r}")
    values = list(defaults[vary] if values is None else values)
    fixed = {"threads_per_block": threads_per_block, "registers_per_thread": registers_per_thread,
             "shared_bytes_per_block": shared_bytes_per_block}
    argument = {"registers": "registers_per_thread", "shared": "shared_bytes_per_block",
                "threads": "threads_per_block"}[vary]
    points = [theoretical_occupancy(arch, **{**fixed, argument: v}) for v in values]
    return {
        "values": values,
        "occupancy": [p.occupancy for p in points],
        "occupancy_text": [percent(p.occupancy) for p in points],
        "blocks_per_sm": [p.blocks_per_sm for p in points],
        "warps_per_sm": [p.warps_per_sm for p in points],
        "limiter": [p.limiter for p in points],
    }
