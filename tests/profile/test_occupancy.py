"""Theoretical occupancy against results worked out with the CUDA occupancy calculator's rules.

Each case gives the calculator's arithmetic (cuda_occupancy.h of CUDA 13.0): registers are allocated
per warp in units of 256, a sub-partition (a quarter of the SM) holds 16K of them; shared memory per
block adds the driver's 1 KB and rounds up to 128 bytes.
"""
import pytest

from tileworkbench.profile import ARCH_LIMITS, occupancy_curve, theoretical_occupancy

CASES = [
    # arch, threads, registers, shared -> blocks, warps, occupancy, limiter
    # 8 warps per block; 64 warps per SM allow 8 blocks; 32 regs = 1024 per warp, 16 warps per sub-partition.
    ("sm_90", 256, 32, 0, 8, 64, 1.0, "warps"),
    # 128 regs = 4096 per warp: 4 warps per sub-partition, 16 per SM, 2 blocks of 8 warps.
    ("sm_90", 256, 128, 0, 2, 16, 0.25, "registers"),
    # 64 regs = 2048 per warp: 8 warps per sub-partition, 32 per SM, 4 blocks.
    ("sm_90", 256, 64, 0, 4, 32, 0.5, "registers"),
    # 40 regs round to 1280 per warp: 12 warps per sub-partition, 48 per SM -> 16 blocks of 3 warps
    # (the whole register file alone would suggest 51 warps, 17 blocks).
    ("sm_90", 96, 40, 0, 16, 48, 0.75, "registers"),
    # 1024 threads x 64 regs uses the whole register file: one block.
    ("sm_90", 1024, 64, 0, 1, 32, 0.5, "registers"),
    # 255 regs round to 256: 32 warps x 8192 registers exceed the 64K per block, so no block fits.
    ("sm_90", 1024, 255, 0, 0, 0, 0.0, "registers"),
    # 100 KB + 1 KB reserved per block; 228 KB per SM hold 2 blocks (opt-in beyond 48 KB).
    ("sm_90", 256, 32, 100 * 1024, 2, 16, 0.25, "shared memory"),
    # 48 KB + 1 KB per block, 164 KB per SM: 3 blocks.
    ("sm_80", 128, 32, 48 * 1024, 3, 12, 0.1875, "shared memory"),
    # Ampere GA10x: 48 warps per SM, 6 blocks of 8 warps.
    ("sm_86", 256, 32, 0, 6, 48, 1.0, "warps"),
    # One-warp blocks hit the 16 resident blocks of sm_86, the 24 of sm_89, the 32 of sm_90.
    ("sm_86", 32, 32, 0, 16, 16, 1 / 3, "blocks"),
    ("sm_89", 32, 32, 0, 24, 24, 0.5, "blocks"),
    ("sm_90", 32, 32, 0, 32, 32, 0.5, "blocks"),
    # More shared memory than sm_86 lets one block opt in to (99 KB).
    ("sm_86", 256, 32, 100 * 1024, 0, 0, 0.0, "shared memory"),
    # More than 1024 threads cannot launch.
    ("sm_90", 1056, 32, 0, 0, 0, 0.0, "threads"),
    # Blackwell: sm_100 like sm_90; sm_120 like sm_89 but with 24 resident blocks of its own.
    ("sm_100", 128, 168, 4352, 3, 12, 0.1875, "registers"),
    ("sm_120", 64, 32, 0, 24, 48, 1.0, "warps"),
]


@pytest.mark.parametrize("arch, threads, registers, shared, blocks, warps, occupancy, limiter", CASES)
def test_matches_the_calculator(arch, threads, registers, shared, blocks, warps, occupancy, limiter):
    result = theoretical_occupancy(arch, threads, registers, shared)
    assert (result.blocks_per_sm, result.warps_per_sm, result.limiter) == (blocks, warps, limiter)
    assert result.occupancy == pytest.approx(occupancy)


def test_every_limit_is_reported():
    limits = theoretical_occupancy("sm_90", 256, 128, 4352).limits
    # 4352 + 1024 bytes round to 5376: 233472 // 5376 = 43 blocks.
    assert limits == {"warps": 8, "threads": 8, "blocks": 32, "registers": 2, "shared memory": 43}


def test_arch_specific_variants_share_the_base_limits():
    variant, base = theoretical_occupancy("sm_90a", 256, 128, 0), theoretical_occupancy("sm_90", 256, 128, 0)
    assert (variant.arch, variant.blocks_per_sm, variant.limits) == ("sm_90a", base.blocks_per_sm, base.limits)


def test_unknown_arch_is_refused():
    with pytest.raises(ValueError, match="sm_80, sm_86"):
        theoretical_occupancy("sm_70", 256, 32, 0)


def test_table_has_the_documented_archs():
    assert set(ARCH_LIMITS) == {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"}
    assert {a: l.max_warps_per_sm for a, l in ARCH_LIMITS.items()} == {
        "sm_80": 64, "sm_86": 48, "sm_89": 48, "sm_90": 64, "sm_100": 64, "sm_120": 48}


def test_register_curve_steps_down_at_allocation_boundaries():
    curve = occupancy_curve("sm_90", "registers", threads_per_block=256)
    by_registers = dict(zip(curve["values"], curve["occupancy"]))
    assert by_registers[32] == 1.0 and by_registers[40] == 0.75 and by_registers[128] == 0.25
    assert by_registers[255] == 0.125
    assert curve["occupancy"] == sorted(curve["occupancy"], reverse=True)
    assert set(curve["limiter"]) == {"warps", "registers"}


def test_shared_curve_covers_zero_to_the_opt_in_maximum():
    curve = occupancy_curve("sm_80", "shared", threads_per_block=128)
    assert curve["values"][0] == 0 and curve["values"][-1] == 163 * 1024
    assert curve["blocks_per_sm"][-1] == 1 and curve["limiter"][-1] == "shared memory"


def test_thread_curve_with_explicit_values():
    curve = occupancy_curve("sm_86", "threads", registers_per_thread=64, values=[64, 128, 512])
    assert curve["values"] == [64, 128, 512]
    # 64 regs: 2048 per warp, 8 warps per sub-partition, 32 per SM.
    assert curve["warps_per_sm"] == [32, 32, 32] and curve["blocks_per_sm"] == [16, 8, 2]


def test_unknown_curve_variable_is_refused():
    with pytest.raises(ValueError, match="registers, shared, threads"):
        occupancy_curve("sm_90", "bandwidth")
