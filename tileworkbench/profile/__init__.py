"""Performance numbers for compiled kernels: theoretical occupancy (timing and sweeps come later)."""
from .occupancy import ARCH_LIMITS, Occupancy, arch_limits, occupancy_curve, theoretical_occupancy

__all__ = ["ARCH_LIMITS", "Occupancy", "arch_limits", "occupancy_curve", "theoretical_occupancy"]
