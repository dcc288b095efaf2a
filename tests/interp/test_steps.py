"""Per-op values for the block stepper: program order per block, loop iterations, bounded memory."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.interp import run


@ct.kernel
def prefix_rows(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.zeros((TILE,), ct.float32)
    for k in range(i + 1):
        acc = acc + ct.load(x, (k,), (TILE,))
    ct.store(y, (i,), acc)


def _launch(**options):
    x = np.arange(12, dtype=np.float32)
    y = np.zeros(12, np.float32)
    return run(prefix_rows, (3,), (x, y, 4), **options), x, y


def test_a_block_steps_through_its_ops_in_program_order_once_per_loop_iteration():
    trace, _, _ = _launch(values=True)
    steps = trace.steps.for_block((2,))
    assert [s.op for s in steps] == ["bid", "constant", "add"] + ["load", "add"] * 3 + ["store"]
    assert [s.loops for s in steps if s.op == "load"] == [((12, 0),), ((12, 1),), ((12, 2),)]
    assert [s.number for s in steps] == list(range(len(steps)))
    # block 0 loops once: its own, shorter program order, though the blocks ran as one batch
    assert [s.op for s in trace.steps.for_block((0,))] == ["bid", "constant", "add", "load", "add", "store"]


def test_each_step_holds_the_blocks_own_tile_and_a_write_holds_the_tile_it_stores():
    trace, x, y = _launch(values=True)
    steps = trace.steps.for_block((1,))
    assert int(steps[0].value) == 1                        # bid(0) of block 1
    sums = [s.value.tolist() for s in steps if s.op == "add" and s.loops]
    assert sums == [x[:4].tolist(), (x[:4] + x[4:8]).tolist()]
    assert steps[-1].op == "store" and steps[-1].value.tolist() == y[4:8].tolist()
    assert [e.op for e in steps[-1].events] == ["store"] and steps[-1].events[0].coords[0, :, 0].tolist() == [4, 5, 6, 7]


def test_values_are_opt_in_and_a_trace_without_them_has_no_steps():
    assert _launch(trace=True)[0].steps is None
    assert _launch()[0] is None


def test_values_past_the_budget_are_dropped_with_a_message_saying_how_to_keep_more():
    trace, _, _ = _launch(values=True, values_max_bytes=64)
    log = trace.steps
    assert log.held_bytes <= 64 and "values_max_bytes" in log.truncated
    steps = log.for_block((2,))
    assert steps[0].value is not None and steps[-1].value is None
    assert [s.op for s in steps][-1] == "store"   # the ops are still all there


@ct.kernel
def even_doubles(x, y):
    i = ct.bid(0)
    t = ct.load(x, (i,), (2,))
    if i % 2 == 0:
        t = t * 2.0
    else:
        t = t - 1.0
    ct.store(y, (i,), t)


def test_a_block_steps_only_through_the_branch_it_took():
    x = np.arange(8, dtype=np.float32)
    trace = run(even_doubles, (4,), (x, np.zeros_like(x)), values=True)
    even, odd = trace.steps.for_block((2,)), trace.steps.for_block((3,))
    assert [s.op for s in even if s.op in ("mul", "sub")] == ["mul"] and even[-1].value.tolist() == [8.0, 10.0]
    assert [s.op for s in odd if s.op in ("mul", "sub")] == ["sub"] and odd[-1].value.tolist() == [5.0, 6.0]
