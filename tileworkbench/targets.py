"""Every fact about the GPUs kernels are compiled for, in one place: per-SM and per-block limits by
arch, math rates per SM, and the datasheets of the devices reports assume without a GPU to ask.

The code generator sizes pipelines and warp counts by these; the occupancy calculator
(runtime/occupancy.py) counts blocks per SM with them; the launch report (profile/) draws its
roofline with the peaks; the memory-access model (profile/access.py) sizes its L2 by them.
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


# Dense math per SM per clock: (tensor-core 16-bit, tensor-core tf32, fp32 FMA units), counting an FMA as 2.
FLOPS_PER_SM_CLOCK = {"sm_80": (2048, 1024, 128), "sm_86": (1024, 512, 256), "sm_89": (1024, 512, 256),
                      "sm_90": (4096, 2048, 256)}


class DevicePeaks(NamedTuple):
    """What one device can do at most: the roofline's roofs."""

    name: str
    arch: str
    sms: int
    clock_mhz: float
    bandwidth_gbs: float        # from the memory clock and bus width
    tensor16_tflops: float | None
    fp32_tflops: float | None


def peaks_of(name: str, arch: str, sms: int, clock_mhz: float, bandwidth_gbs: float) -> DevicePeaks:
    """A device's peaks from what its driver reports (the math rates by arch, FLOPS_PER_SM_CLOCK)."""
    rates = FLOPS_PER_SM_CLOCK.get(arch.rstrip("af"))
    per_second = sms * clock_mhz * 1e6 / 1e12
    return DevicePeaks(name, arch, sms, clock_mhz, bandwidth_gbs, rates[0] * per_second if rates else None,
                       rates[2] * per_second if rates else None)


# The H100 SXM5 (the device reports and models assume without a GPU to ask): 132 SMs, an L2 of 50 MB in
# two partitions, each caching what the SMs of its half of the chip read.
H100_SMS = 132
H100_L2_BYTES = 50 * 2**20
H100_L2_PARTITIONS = 2

# Datasheet figures (dense, no sparsity): NVIDIA H100 SXM5 and A100 SXM4 80GB.
NOMINAL_PEAKS = {
    "sm_90": DevicePeaks("H100 SXM (datasheet)", "sm_90", H100_SMS, 1980.0, 3350.0, 989.0, 67.0),
    "sm_80": DevicePeaks("A100 SXM 80GB (datasheet)", "sm_80", 108, 1410.0, 2039.0, 312.0, 19.5),
}
