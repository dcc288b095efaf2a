"""The trace-file fuzzer, bounded for the default test run: TILEWORKBENCH_TRACE_FUZZ_EXAMPLES
(default 120) mutated trace files, each of which must load and render or be refused with one
InvalidTraceError naming the file. Longer runs: `python -m tests.fuzz traces --minutes 10`."""
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .trace_files import check_file, mutate, seed_traces

EXAMPLES = int(os.environ.get("TILEWORKBENCH_TRACE_FUZZ_EXAMPLES", "120"))


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    directory = tmp_path_factory.mktemp("seed-traces")
    return directory, [open(p, "rb").read() for p in seed_traces(str(directory))]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False), which=st.integers(0, 100), times=st.integers(1, 3))
def test_a_mutated_trace_file_loads_and_renders_or_is_refused_naming_the_file(seeds, rng, which, times):
    directory, files = seeds
    data = files[which % len(files)]
    for _ in range(times):
        data = mutate(rng, data)
    path = directory / "case.npz"
    path.write_bytes(data)
    assert check_file(str(path)) is None


def test_every_seed_trace_loads_and_renders(seeds):
    directory, files = seeds
    for k, data in enumerate(files):
        path = directory / f"unchanged{k}.npz"
        path.write_bytes(data)
        assert check_file(str(path)) is None


def test_the_trace_fuzzer_reports_a_crash_in_a_view(seeds, monkeypatch):
    from tileworkbench.interp import Event
    monkeypatch.setattr(Event, "counts", lambda self: 1 / 0)
    directory, files = seeds
    path = directory / "crash.npz"
    path.write_bytes(files[0])
    assert "ZeroDivisionError" in check_file(str(path))


def test_mutations_change_the_file_and_are_reproducible(seeds):
    _, files = seeds
    first = [mutate(random.Random(k), files[0]) for k in range(20)]
    assert first == [mutate(random.Random(k), files[0]) for k in range(20)]
    assert all(m != files[0] for m in first)
