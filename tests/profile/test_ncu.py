"""Nsight Compute collection: a clear message where ncu is absent or not permitted, and the parsing of
its CSV pages."""
import pytest

from tileworkbench.profile import ncu
from tileworkbench.profile.ncu import METRICS, NcuUnavailable, collect, parse_raw, parse_source, unavailable_reason


def test_absent_ncu_says_so_and_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(ncu, "DEFAULT_CUDA_ROOT", str(tmp_path))
    assert ncu.find_ncu() is None
    with pytest.raises(NcuUnavailable, match=r"Nsight Compute \(ncu\) is not installed here.*needs no GPU"):
        collect(["python", "-c", "pass"], kernel="k")


def test_ncu_on_path_is_found(monkeypatch, tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ncu.find_ncu() == str(fake)


def test_counters_not_permitted_names_the_fix(monkeypatch, tmp_path):
    fake = tmp_path / "ncu"   # what ncu prints when the driver restricts the counters to administrators
    fake.write_text("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                    "NVIDIA GPU Performance Counters on the target device 0.'\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NcuUnavailable, match="not permitted.*NVreg_RestrictProfilingToAdminUsers=0"):
        collect(["true"], kernel="k")
    assert unavailable_reason("==PROF== Disconnected\n") is None


def test_raw_page_gives_metrics_and_stalls_per_launch():
    names = ["ID", "Kernel Name", METRICS["load_requests"], METRICS["load_sectors"],
             METRICS["achieved_occupancy"], "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
             "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"]
    units = ["", "", "", "sector", "%", "ratio", "ratio"]
    rows = [["0", "copy", "128", "512", "87.5", "0.25", "3.5"], ["1", "copy", "64", "2,048", "50", "0", "1"]]
    text = "==PROF== Connected to process\nprogram output\n" + "\n".join(
        ",".join(f'"{c}"' for c in r) for r in [names, units, *rows])
    first, second = parse_raw(text)
    assert first.kernel == "copy" and first.achieved_occupancy == 87.5
    assert first.load_sectors_per_request == 4.0 and second.load_sectors_per_request == 32.0
    assert list(first.stalls) == ["long_scoreboard", "barrier"] and first.stalls["barrier"] == 0.25
    assert first.store_sectors_per_request is None and first.dram_throughput is None


def test_source_page_gives_hot_lines_hottest_first():
    text = "\n".join(",".join(f'"{c}"' for c in r) for r in [
        ["#", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)"],
        ["1", "i = ct.bid(0)", "0", "0"], ["2", "t = ct.load(x, (i,), (16,))", "120", "100"],
        ["3", "ct.store(y, (i,), t)", "30", "20"]])
    assert parse_source(text) == [("t = ct.load(x, (i,), (16,))", 120.0), ("ct.store(y, (i,), t)", 30.0)]


def _csv(rows):
    return "\n".join(",".join(f'"{c}"' for c in r) for r in rows)


# `ncu --page source --csv --print-source sass` as Nsight Compute prints it: a kernel-name row, the header,
# one row per instruction at its loaded address (columns cut to those read, plus one that is not)
SASS_PAGE = _csv([
    ["Kernel Name", "running_sum"],
    ["Address", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)",
     "Instructions Executed", "stall_long_sb", "stall_wait", "stall_long_sb (Not Issued)"],
    ["0x7fc48541d900", "      LDC R1, c[0x0][0x28] ", "2", "0", "8", "0", "2", "0"],
    ["0x7fc48541d910", "      @!P0 LDG.E.CONSTANT R30, desc[UR6][R12.64] ", "120", "100", "64", "100", "20", "90"],
    ["0x7fc48541d920", "      FADD R8, R8, R30 ", "1,024", "3", "64", "0", "1,024", "0"],
])


def test_sass_page_gives_samples_per_instruction_offset():
    found = ncu.parse_sass_source("==PROF== Connected\nprogram output\n" + SASS_PAGE)
    assert list(found) == [0x00, 0x10, 0x20]
    assert found[0x10].samples == 120 and found[0x10].stalls == {"long_sb": 100, "wait": 20}
    assert found[0x10].instruction == "@!P0 LDG.E.CONSTANT R30, desc[UR6][R12.64]"
    assert found[0x20].samples == 1024 and found[0x20].stalls == {"wait": 1024}
    assert found[0x00].stalls == {"wait": 2}
    assert ncu.parse_sass_source("==PROF== Disconnected\n") == {}


def test_collect_profiles_once_and_reads_the_source_page_per_line_and_per_instruction(monkeypatch, tmp_path):
    raw = _csv([["ID", "Kernel Name", METRICS["achieved_occupancy"]], ["", "", "%"], ["0", "running_sum", "50"]])
    cuda_page = _csv([["#", "Source", "Warp Stall Sampling (All Samples)"], ["1", "acc = acc + ct.load(x)", "1146"]])
    for name, text in (("raw", raw), ("cuda", cuda_page), ("sass", SASS_PAGE)):
        (tmp_path / f"{name}.csv").write_text(text + "\n")
    fake = tmp_path / "ncu"   # answers each kind of call the way ncu does, and logs its arguments
    fake.write_text(f"""#!/bin/sh
echo "$@" >> {tmp_path}/calls
case "$*" in
  *"--page raw"*) cat {tmp_path}/raw.csv ;;
  *"--import"*"--print-source cuda"*) cat {tmp_path}/cuda.csv ;;
  *"--import"*"--print-source sass"*) cat {tmp_path}/sass.csv ;;
  *"-o "*) echo "==PROF== Report written" ;;
esac
""")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    (measured,) = collect(["python", "launch.py"], kernel="running_sum")
    assert measured.achieved_occupancy == 50
    assert measured.hot_lines == [("acc = acc + ct.load(x)", 1146.0)]
    assert measured.sass_samples[0x10].samples == 120
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 4 and sum("python launch.py" in c for c in calls) == 2   # profiled twice, read back twice
    assert "--section SourceCounters" in calls[1] and "-k regex:^running_sum$" in calls[1]


def test_hot_lines_come_from_the_instruction_samples_through_the_cubins_line_table():
    import numpy as np

    from tileworkbench.kernels import running_sum
    from tileworkbench.runtime.sass import Samples, sass_by_line
    fn = running_sum.specialize((np.ones(1 << 16, np.float32), np.zeros(512, np.float32), 512))
    lines = {line.source: line for line in sass_by_line(fn, arch="sm_90") if line.line is not None}
    load = next(line for source, line in lines.items() if "ct.load(" in source)
    store = next(line for source, line in lines.items() if "ct.store(" in source)
    samples = {load.instructions[0].offset: Samples(900.0), load.instructions[-1].offset: Samples(100.0),
               store.instructions[0].offset: Samples(20.0)}
    assert ncu.hot_lines_from_sass(fn, "sm_90", samples) == [(load.source, 1000.0), (store.source, 20.0)]
