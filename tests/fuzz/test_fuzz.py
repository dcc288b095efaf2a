"""The differential fuzzer, bounded for the default test run: random kernels with a fixed seed for
TILEWORKBENCH_FUZZ_SECONDS (default 10) on the interpreter against NumPy, each traced, saved and
loaded again, a sample of them also compiled with NVRTC for sm_80 and sm_90. Longer runs:
`python -m tests.fuzz --help`."""
import os

import numpy as np
import pytest

from .engine import check, difference, fuzz
from .programs import float_to_int, random_program

SECONDS = float(os.environ.get("TILEWORKBENCH_FUZZ_SECONDS", "10"))
SEED = int(os.environ.get("TILEWORKBENCH_FUZZ_SEED", "0"))


def _nvrtc_available() -> bool:
    try:
        from tileworkbench.runtime.launch import cuda_include_dirs
        from tileworkbench.runtime.nvrtc import nvrtc_version
        nvrtc_version()
        cuda_include_dirs()
    except Exception:  # noqa: BLE001 - any failure to load NVRTC means: compile nothing
        return False
    return True


@pytest.mark.slow
def test_random_kernels_match_their_numpy_formulation(tmp_path, monkeypatch):
    from tileworkbench.runtime import cache
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_default", None)
    nvrtc = _nvrtc_available()
    stats = fuzz(SECONDS, SEED, nvrtc_every=20 if nvrtc else 0, nvrtc_seconds=SECONDS / 3)
    report = "\n\n".join(f"seed {seed} #{k}: {found}\n{source}" for seed, k, found, source in stats.mismatches[:3])
    assert not stats.mismatches, f"{stats}\n{report}"
    assert stats.checked >= 20 and (stats.compiled > 0 or not nvrtc)


def test_the_fuzzer_notices_a_wrong_result():
    program = next(p for p in (random_program(np.random.default_rng(s)) for s in range(100))
                   if p.expected.dtype.kind in "iu" and p.expected.size)
    wrong = program.expected.copy()
    wrong.flat[0] += 1
    assert difference(program, wrong) is not None and difference(program, program.expected) is None


def test_the_fuzzer_reports_a_crash_as_a_finding():
    program = random_program(np.random.default_rng(0))
    program.source = program.source.replace("ct.store(out", "ct.store(nowhere")
    assert "nowhere" in check(program, "<fuzz crash>")


def test_the_fuzzer_reports_a_trace_that_does_not_load_as_it_was_saved(monkeypatch, tmp_path):
    from tileworkbench.interp import Trace
    program = random_program(np.random.default_rng(0))
    load = Trace.load

    def losing_an_event(path):
        trace = load(path)
        trace.events = trace.events[1:]
        return trace
    monkeypatch.setattr(Trace, "load", losing_an_event)
    assert "traced: trace header" in check(program, "<fuzz trace>", traces=str(tmp_path))


def test_the_reference_float_to_int_saturates_and_maps_nan_to_zero():
    values = np.array([np.nan, np.inf, -np.inf, 300.5, -300.5, -1.9])
    assert float_to_int(values, "int8").tolist() == [0, 127, -128, 127, -128, -1]
    assert float_to_int(values, "uint16").tolist() == [0, 65535, 0, 300, 0, 0]
