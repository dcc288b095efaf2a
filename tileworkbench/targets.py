"""What the GPUs kernels are compiled for can hold: per-SM and per-block limits by arch.

The code generator sizes pipelines and warp counts by these; the occupancy model (profile/)
counts blocks per SM with them.
"""
from __future__ import annotations

from typing import NamedTuple

KB = 1024
WARP_SIZE = 32


class ArchLimits(NamedTuple):
    """What one SM and one block of an architecture hold: threads, blocks, shared memory, registers."""

    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int  # bytes, the largest carveout
    shared_per_block_optin: int  # bytes, the most one block may opt in to
    shared_per_block: int = 48 * KB  # without the opt-in
    reserved_shared_per_block: int = 1 * KB  # the driver's, from sm_80 on
    shared_allocation_unit: int = 128
    registers_per_sm: int = 64 * KB
    max_registers_per_block: int = 64 * KB
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256  # registers, allocated to whole warps
    register_sub_partitions: int = 4  # each holds a quarter of the register file and of the warps
    max_threads_per_block: int = 1024

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // WARP_SIZE


# Per-SM limits. Threads, shared memory per SM and the per-block opt-in maximum: CUDA C++ Programming
# Guide, "Technical Specifications per Compute Capability" (the same numbers as CCCL's
# cuda/__device/arch_traits.h). Blocks per SM, the allocation units (256 registers per warp, 128 bytes
# of shared memory), the 4 register sub-partitions and the 1 KB reserved per block: cuda_occupancy.h
# of CUDA 13.0. The two disagree on sm_120's resident blocks (arch_traits.h: 32); the calculator's 24 is used.
ARCH_LIMITS: dict[str, ArchLimits] = {
    "sm_80": ArchLimits(max_threads_per_sm=2048, max_blocks_per_sm=32,
                        shared_per_sm=164 * KB, shared_per_block_optin=163 * KB),
    "sm_86": ArchLimits(max_threads_per_sm=1536, max_blocks_per_sm=16,
                        shared_per_sm=100 * KB, shared_per_block_optin=99 * KB),
    "sm_89": ArchLimits(max_threads_per_sm=1536, max_blocks_per_sm=24,
                        shared_per_sm=100 * KB, shared_per_block_optin=99 * KB),
    "sm_90": ArchLimits(max_threads_per_sm=2048, max_blocks_per_sm=32,
                        shared_per_sm=228 * KB, shared_per_block_optin=227 * KB),
    "sm_100": ArchLimits(max_threads_per_sm=2048, max_blocks_per_sm=32,
                         shared_per_sm=228 * KB, shared_per_block_optin=227 * KB),
    "sm_120": ArchLimits(max_threads_per_sm=1536, max_blocks_per_sm=24,
                         shared_per_sm=100 * KB, shared_per_block_optin=99 * KB),
}


def arch_limits(arch: str) -> ArchLimits:
    """The limits of an arch; arch-specific variants ("sm_90a") share their base arch's."""
    base = arch.rstrip("af")
    if base not in ARCH_LIMITS:
        raise ValueError(f"no occupancy limits for {arch!r}; known: {', '.join(ARCH_LIMITS)}")
    return ARCH_LIMITS[base]
