"""What the interpreter refuses to start: grids of more blocks than it runs, traces past their budget."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import ArgumentValueError, TileValueError
from tileworkbench.interp import MAX_BLOCKS, Trace, executor
from tileworkbench.tile import interpret
from tileworkbench.interp.trace import view_bytes


@ct.kernel
def fill(a):
    ct.store(a, (ct.bid(0),), ct.full((64,), 1.0, a.dtype))


def test_a_grid_of_more_blocks_than_the_interpreter_runs_is_refused_naming_the_limit():
    a = np.zeros(64, np.float32)
    for launch in (lambda g: interpret(fill, g, (a,)), lambda g: ct.launch(None, g, fill, (a,))):
        with pytest.raises(ArgumentValueError, match=r"Grid \(16777215, 16777215, 1\) has 281,474,943,156,225 "
                                                     r"blocks, more than the 4,194,304 the interpreter runs"):
            launch((2**24 - 1, 2**24 - 1))
    assert MAX_BLOCKS == 4_194_304 and not a.any()


def test_the_block_limit_is_overridden_per_run_and_by_the_environment(monkeypatch):
    a = np.zeros(64 * 8, np.float32)
    with pytest.raises(ArgumentValueError, match="more than the 4 the interpreter runs"):
        interpret(fill, (8,), (a,), max_blocks=4)
    monkeypatch.setenv(executor.MAX_BLOCKS_VARIABLE, "4")
    with pytest.raises(ArgumentValueError, match="set TILEWORKBENCH_INTERP_MAX_BLOCKS for more"):
        ct.launch(None, (8,), fill, (a,))
    interpret(fill, (8,), (a,), max_blocks=8)
    assert a.all()
    monkeypatch.setenv(executor.MAX_BLOCKS_VARIABLE, "lots")
    with pytest.raises(ArgumentValueError, match="TILEWORKBENCH_INTERP_MAX_BLOCKS='lots' is not a positive number"):
        interpret(fill, (1,), (a,))


def test_a_trace_past_its_budget_stops_naming_the_budget_and_the_line():
    a = np.zeros(64 * 4096, np.float32)
    with pytest.raises(TileValueError, match=r"more than trace_max_bytes=5000000 bytes \(recording the trace reached") as info:
        interpret(fill, (4096,), (a,), trace=True, trace_max_bytes=5_000_000)
    assert info.value.loc.source_line.strip().startswith("ct.store(a")


def test_a_trace_whose_views_would_not_fit_its_budget_is_refused_before_running():
    a = np.zeros(1 << 20, np.float32)
    with pytest.raises(TileValueError, match=r"viewing a grid of \(1, 1, 1\) and arrays of shapes \[\(1048576,\)\]"):
        interpret(fill, (1,), (a,), trace=True, trace_max_bytes=1 << 20)
    assert not a.any()


def test_a_trace_recorded_within_a_budget_loads_within_the_same_budget(tmp_path):
    a = np.zeros(64 * 100, np.float32)
    trace = interpret(fill, (100,), (a,), trace=True)
    spent = view_bytes(trace.grid, trace.arrays) + sum(e.nbytes for e in trace.events)
    interpret(fill, (100,), (a,), trace=True, trace_max_bytes=spent).save(tmp_path / "t.npz")
    assert len(Trace.load(tmp_path / "t.npz", max_bytes=spent).events) == 1
