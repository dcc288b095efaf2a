"""Theoretical occupancy: how many blocks of a kernel fit on one SM, and which resource limits them.
Computed once per compiled kernel, by its record (runtime/compiled.py); profile/ draws what-if curves with it.

    >>> theoretical_occupancy("sm_90", threads_per_block=256, registers_per_thread=128, shared_bytes_per_block=0)
    Occupancy(arch='sm_90', blocks_per_sm=2, warps_per_sm=16, occupancy=0.25, limiter='registers', ...)

The rules are those of the CUDA occupancy calculator (CUDA 13.0 `include/cuda_occupancy.h`,
`cudaOccMaxActiveBlocksPerMultiprocessor`), with the device's default state: the largest shared-memory
carveout, and the large-shared-memory opt-in taken whenever a block needs more than 48 KB (the
launcher sets it). Limits on named barriers and cluster launches are not modelled. On an H100 the
driver's cuOccupancyMaxActiveBlocksPerMultiprocessor agreed on all 651 configurations tried (11
kernels of 14-168 registers and up to 4 KB static shared memory, 32-1024 threads, 0-200 KB dynamic
shared memory).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ..targets import WARP_SIZE, ArchLimits, arch_limits

# Which limit to name when several allow the same number of blocks: the hardware's warp and block
# slots first (no tuning beats them), then the resources a kernel can change.
LIMITERS = ("warps", "threads", "blocks", "registers", "shared memory")


def percent(fraction: float) -> str:
    """An occupancy as every view and record writes it: a whole percent, halves rounded up
    (0.625 -> "63%"). The views' scripts show this text and never round an occupancy themselves,
    so the heatmap, the tables, the records and the side panel agree.

        >>> percent(0.625), percent(0.5), percent(1.0)
        ('63%', '50%', '100%')
    """
    return f"{math.floor(fraction * 100 + 0.5)}%"


class Occupancy(NamedTuple):
    arch: str
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # resident warps / the SM's maximum
    limiter: str  # one of LIMITERS
    limits: dict[str, int]  # blocks per SM each limit alone allows


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _register_limit(limits: ArchLimits, warps: int, registers: int) -> int:
    per_warp = _round_up(max(registers, 1) * WARP_SIZE, limits.register_allocation_unit)
    # The hardware checks a block as if its warps were spread over all sub-partitions.
    assumed = per_warp * _round_up(warps, limits.register_sub_partitions)
    if registers > limits.max_registers_per_thread or assumed > limits.max_registers_per_block:
        return 0
    per_sub_partition = limits.registers_per_sm // limits.register_sub_partitions // per_warp
    return per_sub_partition * limits.register_sub_partitions // warps


def _shared_limit(limits: ArchLimits, shared: int) -> int:
    per_block = _round_up(shared + limits.reserved_shared_per_block, limits.shared_allocation_unit)
    allowed = limits.shared_per_block_optin if shared > limits.shared_per_block else limits.shared_per_block
    if per_block > allowed + limits.reserved_shared_per_block:
        return 0
    return limits.shared_per_sm // per_block


def theoretical_occupancy(arch: str, threads_per_block: int, registers_per_thread: int,
                          shared_bytes_per_block: int) -> Occupancy:
    """Resident blocks and warps per SM for one launch configuration (shared = static + dynamic)."""
    if threads_per_block < 1:
        raise ValueError(f"threads_per_block must be positive, got {threads_per_block}")
    limits = arch_limits(arch)
    warps = -(-threads_per_block // WARP_SIZE)
    too_big = threads_per_block > limits.max_threads_per_block
    by_limit = {
        "warps": limits.max_warps_per_sm // warps,
        "threads": 0 if too_big else limits.max_threads_per_sm // threads_per_block,
        "blocks": limits.max_blocks_per_sm,
        "registers": _register_limit(limits, warps, registers_per_thread),
        "shared memory": _shared_limit(limits, shared_bytes_per_block),
    }
    blocks = min(by_limit.values())
    limiter = next(name for name in LIMITERS if by_limit[name] == blocks)
    return Occupancy(arch, blocks, blocks * warps, blocks * warps / limits.max_warps_per_sm, limiter, by_limit)
