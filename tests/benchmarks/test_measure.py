"""Checking, tuning and round-robin timing, with fake launches: a run sets `y` to its error."""
import math

import pytest

import benchmarks.peers as peers
import time

from benchmarks.peers import Entry, prepare, prepare_within, time_round_robin


class FakeTimer:
    """A configuration's samples are its `cost`; counts the launches it times."""

    def __init__(self):
        self.launches = 0

    def samples(self, run, repetitions):
        for _ in range(repetitions):
            run()
            self.launches += 1
        return [run.cost] * repetitions


class FakeProblem:
    def poison(self):
        self.y = math.nan


PROBLEM = FakeProblem()
CASE = type("FakeCase", (), {"tolerance": 1e-5, "make": staticmethod(lambda: PROBLEM),
                             "reference": staticmethod(lambda p: 0.0)})()


def launch(error, cost, calls=None, raises=None):
    """A configuration whose launch writes `error` into the problem's output and is timed as `cost`."""
    def run():
        if raises:
            raise raises
        if calls is not None:
            calls.append(cost)
        PROBLEM.y = error
    run.cost = cost
    return run


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    monkeypatch.setattr(peers, "_synchronize", lambda: None)
    monkeypatch.setattr(peers, "relative_error", lambda got, expected: got)


def test_the_fastest_correct_configuration_is_kept_and_warmed_up():
    calls = []
    runs = {"slow": launch(0.0, 2.0), "fast": launch(1e-6, 1.0, calls), "wrong": launch(1.0, 0.5),
            "unwritten": launch(math.nan, 0.1), "broken": launch(0.0, 0.1, raises=RuntimeError("no tileiras"))}
    entry = Entry("lib", "lib", lambda p: runs)
    prepare(entry, CASE, FakeTimer(), tune_reps=3, warmup=4)
    assert entry.config == "fast" and entry.run is runs["fast"] and entry.error is None
    assert len(calls) == 1 + 3 + 4  # the check, the brief timing, the warm-up
    assert entry.tuning["slow"] == 2.0 and entry.tuning["fast"] == 1.0
    assert entry.tuning["wrong"] == "wrong result: relative error 1.00e+00 > 1e-05"
    assert "NaN" in entry.tuning["unwritten"]
    assert entry.tuning["broken"] == "RuntimeError: no tileiras"


def test_an_implementation_whose_only_configuration_fails_reports_its_reason():
    runs = {"": launch(0.5, 1.0)}
    entry = Entry("lib", "lib", lambda p: runs[""])
    prepare(entry, CASE, FakeTimer(), tune_reps=1, warmup=1)
    assert entry.run is None and entry.error == "wrong result: relative error 5.00e-01 > 1e-05"
    assert entry.result() == {"impl": "lib", "family": "lib", "tuning": {"": entry.error}, "status": "failed",
                              "error": entry.error}


def test_every_configuration_failing_is_reported_with_each_reason():
    runs = {"a": launch(0.5, 1.0), "b": launch(0.0, 1.0, raises=ValueError("bad grid"))}
    entry = Entry("lib", "lib", lambda p: runs)
    prepare(entry, CASE, FakeTimer(), tune_reps=1, warmup=1)
    assert entry.error.startswith("every configuration failed: a: wrong result") and "b: ValueError: bad grid" in entry.error


def test_a_library_that_cannot_make_its_launches_is_reported_not_fatal():
    def offer(p):
        raise ModuleNotFoundError("No module named 'cuda.tile'")
    entry = Entry("cuTile", "cuTile", offer)
    prepare(entry, CASE, FakeTimer(), tune_reps=1, warmup=1)
    assert entry.error == "ModuleNotFoundError: No module named 'cuda.tile'"


def test_round_robin_gives_every_prepared_entry_its_samples_and_survives_a_failure():
    good, flaky = Entry("good", "a", None), Entry("flaky", "b", None)
    good.run = launch(0.0, 1.0)
    flaky.run = launch(0.0, 1.0, raises=RuntimeError("illegal memory access"))
    idle = Entry("idle", "c", None, error="not here")
    time_round_robin([good, flaky, idle], FakeTimer(), rounds=3, repetitions=4, seconds=60)
    assert good.samples == [1.0] * 12
    assert flaky.run is None and flaky.error == "failed while timed: RuntimeError: illegal memory access"
    result = good.result()
    assert result["status"] == "ok" and result["samples"] == 12 and result["ms"] == 1.0


def test_an_implementation_past_its_time_limit_loses_its_row_not_the_run():
    def slow_offer(p):
        time.sleep(5)
    slow, fast = Entry("slow", "a", slow_offer), Entry("fast", "b", lambda p: launch(0.0, 1.0))
    settings = {"implementation_seconds": 0.2, "tune_repetitions": 1, "warmup": 1}
    started = time.perf_counter()
    prepare_within(slow, CASE, FakeTimer(), settings)
    prepare_within(fast, CASE, FakeTimer(), settings)
    assert time.perf_counter() - started < 2
    assert slow.run is None and slow.error == "checking and tuning: over the time limit of 0.2 s"
    assert fast.run is not None and fast.error is None


def test_timing_past_the_limit_stops_that_entry_only():
    stuck, good = Entry("stuck", "a", None), Entry("good", "b", None)
    stuck.run, good.run = launch(0.0, 1.0), launch(0.0, 1.0)

    class SlowTimer(FakeTimer):
        def samples(self, run, repetitions):
            if run is stuck.run:
                time.sleep(5)
            return super().samples(run, repetitions)
    time_round_robin([stuck, good], SlowTimer(), rounds=2, repetitions=2, seconds=0.2)
    assert stuck.run is None and stuck.error == "failed while timed: OverTime: over the time limit of 0.2 s"
    assert good.samples == [1.0] * 4


def test_the_first_launch_row_reads_the_warm_cache_run_of_the_launch_benchmark(monkeypatch):
    from benchmarks import launch_overhead as lo
    first_launch = lo.first_launch
    monkeypatch.setattr(lo, "first_launch", lambda samples, mock: first_launch(samples, mock=True))
    monkeypatch.setattr(lo, "tileworkbench_cases", lambda mock: [])
    monkeypatch.setattr(lo, "peer_cases", lambda: [])
    rows = peers.launch_latency(launches=1, samples=1)
    assert [(r["impl"], r["status"]) for r in rows] == [("tileworkbench", "ok")]
    assert 0 < rows[0]["ms"] < 10_000
