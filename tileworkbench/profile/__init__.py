"""Performance numbers: launch timing and throughput, occupancy (theoretical and from the driver),
and the memory traffic and math of a launch read off the IR."""
from .bench import DevicePeaks, LaunchReport, Timing, benchmark, device_peaks, time_launches
from .occupancy import ARCH_LIMITS, Occupancy, arch_limits, occupancy_curve, percent, theoretical_occupancy
from .work import Work, launch_work

__all__ = ["ARCH_LIMITS", "DevicePeaks", "LaunchReport", "Occupancy", "Timing", "Work", "arch_limits", "benchmark",
           "device_peaks", "launch_work", "occupancy_curve", "percent", "theoretical_occupancy", "time_launches"]
