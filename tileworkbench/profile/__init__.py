"""Performance numbers: launch timing and throughput, the launch report, occupancy (theoretical,
from the driver, and what-if curves), and the memory traffic and math of a launch read off the IR."""
from ..targets import DevicePeaks
from .bench import benchmark, device_peaks, time_launches
from .occupancy import ARCH_LIMITS, Occupancy, arch_limits, occupancy_curve, percent, theoretical_occupancy
from .report import LaunchReport, Timing, compile_report
from .work import Work, launch_work

__all__ = ["ARCH_LIMITS", "DevicePeaks", "LaunchReport", "Occupancy", "Timing", "Work", "arch_limits", "benchmark",
           "compile_report", "device_peaks", "launch_work", "occupancy_curve", "percent", "theoretical_occupancy",
           "time_launches"]
