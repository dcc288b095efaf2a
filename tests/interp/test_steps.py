"""Per-op values for the block stepper: program order per block, loop iterations, bounded memory."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile import interpret


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
    return interpret(prefix_rows, (3,), (x, y, 4), **options), x, y


def test_a_block_steps_through_its_ops_in_program_order_once_per_loop_iteration():
    trace, _, _ = _launch(values=True)
    steps = trace.steps.for_block((2,))
    assert [s.op for s in steps] == ["bid", "constant", "add"] + ["load", "add"] * 3 + ["store"]
    assert [s.loops for s in steps if s.op == "load"] == [((13, 0),), ((13, 1),), ((13, 2),)]
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
    assert log.steps[0].value is not None and log.steps[-1].value is None
    assert [s.op for s in log.steps][-1] == "store"   # the ops are still all there


def _same_steps(a, b) -> bool:
    """Two blocks' step lists hold the same ops, tiles (bit for bit) and memory events (a shape op's
    event is recorded for a batch's first block only, the same map for all)."""
    return len(a) == len(b) and all(
        (x.op, x.line, x.loops) == (y.op, y.line, y.loops) and
        (x.value is None) == (y.value is None) and (
         x.value is None or x.value.dtype == y.value.dtype and np.array_equal(x.value, y.value, equal_nan=x.value.dtype.kind == "f")) and
        [e.array for e in x.events] == [e.array for e in y.events] and
        all(np.array_equal(e.coords, f.coords) and np.array_equal(e.status, f.status)
            for e, f in zip(x.events, y.events) if e.array is not None)
        for x, y in zip(a, b))


def test_a_block_past_the_budget_is_rerun_alone_with_the_values_a_full_recording_has():
    full = _launch(values=True)[0].steps
    log = _launch(values=True, values_max_bytes=160)[0].steps   # the launch needs 280 bytes, a block fewer than 160
    for block in [(0,), (1,), (2,)]:   # loops of 1, 2 and 3 iterations in one batch
        assert log.values_source(block) == "block" and log.missing(block) is None
        assert _same_steps(log.for_block(block), full.for_block(block))


def test_a_matmul_and_a_softmax_rerun_block_by_block_equal_the_full_recording():
    from tileworkbench.kernels import matmul, softmax
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((48, 80)).astype(np.float16), rng.standard_normal((80, 40)).astype(np.float16)
    x = rng.standard_normal((5, 20)).astype(np.float32)
    x[2, 3] = np.nan
    # budgets that one block fits in and the launch does not
    for kernel, grid, args, budget in [
            (matmul, (3, 3), lambda: (a, b, np.zeros((48, 40), np.float32), 16, 16, 32), 16384),
            (softmax, (5,), lambda: (x, np.zeros_like(x), 32), 2048)]:
        full = interpret(kernel, grid, args(), values=True).steps
        log = interpret(kernel, grid, args(), values=True, values_max_bytes=budget).steps
        blocks = [(i, j) for i in range(grid[0]) for j in range(grid[1] if len(grid) > 1 else 1)]
        assert log.truncated and all(log.values_source(blk) == "block" for blk in blocks[1:])
        assert all(_same_steps(log.for_block(blk), full.for_block(blk)) for blk in blocks)


@ct.kernel
def reads_the_next_blocks_output(x, y):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (4,)))
    ct.store(x, (i,), ct.load(y, (i + 1,), (4,), padding_mode=ct.PaddingMode.ZERO))


def test_a_block_reading_what_another_block_writes_gets_its_values_from_a_rerun_of_the_launch():
    def launch(**values):
        x, y = np.arange(12, dtype=np.float32), np.zeros(12, np.float32)
        return interpret(reads_the_next_blocks_output, (3,), (x, y), values=True, **values).steps
    full, log = launch(), launch(values_max_bytes=100)   # the launch needs about 200 bytes, a block 70
    # alone, block 0 would read y[4] before block 1 stored it: only the whole launch gives its values
    assert log.values_source((0,)) == "launch" and log.missing((0,)) is None
    assert log.values_source((2,)) == "block"   # the last block reads only padding past y's end and its own x
    for block in [(0,), (1,), (2,)]:
        assert _same_steps(log.for_block(block), full.for_block(block))


@ct.kernel
def count_positive(x, counts):
    t = ct.load(x, (ct.bid(0),), (4,))
    old = ct.atomic_add(counts, ct.where(t > 0, 1, 0), 1)
    ct.store(x, (ct.bid(0),), old)


def test_a_kernel_with_atomics_gets_a_blocks_values_from_a_rerun_of_the_launch_in_its_order():
    def launch(**values):
        x, counts = np.arange(-4, 12, dtype=np.int32), np.zeros(2, np.int32)
        return interpret(count_positive, (4,), (x, counts), values=True, **values).steps
    full, log = launch(), launch(values_max_bytes=250)   # the launch needs 380 bytes, a block about 170
    assert log.values_source((3,)) == "launch"
    assert _same_steps(log.for_block((3,)), full.for_block((3,)))
    assert [s.value.tolist() for s in log.for_block((3,)) if s.op == "atomic_add"] == [[7, 8, 9, 10]]


def test_a_block_whose_own_values_exceed_the_budget_keeps_its_first_ones_and_says_so():
    log = _launch(values=True, values_max_bytes=40)[0].steps
    steps = log.for_block((2,))
    assert steps[0].value is not None and steps[-1].value is None
    assert "re-run for this block only, its values still exceed the 40 bytes budget" in log.missing((2,))


def test_the_launch_inputs_are_kept_only_where_values_were_dropped():
    assert _launch(values=True)[0].steps.replay is None
    assert _launch(values=True, values_max_bytes=64)[0].steps.replay is not None


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
    trace = interpret(even_doubles, (4,), (x, np.zeros_like(x)), values=True)
    even, odd = trace.steps.for_block((2,)), trace.steps.for_block((3,))
    assert [s.op for s in even if s.op in ("mul", "sub")] == ["mul"] and even[-1].value.tolist() == [8.0, 10.0]
    assert [s.op for s in odd if s.op in ("mul", "sub")] == ["sub"] and odd[-1].value.tolist() == [5.0, 6.0]


def test_the_arrays_an_atomic_updates_count_as_written():
    from tileworkbench.interp.host import written_params
    x, counts = np.zeros(4, np.int32), np.zeros(2, np.int32)
    assert written_params(count_positive.specialize((x, counts))) == {"x", "counts"}


@ct.kernel
def shift_down(x, y):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i + 1,), (4,), padding_mode=ct.PaddingMode.ZERO))


@pytest.mark.parametrize("views", [lambda a: (a[:12],) * 2, lambda a: (a[4:], a[:12])], ids=["same", "overlapping"])
def test_a_launch_on_one_array_passed_twice_is_rerun_whole_for_a_blocks_values(views):
    def launch(**values):
        x, y = views(np.arange(16, dtype=np.float32))
        return interpret(shift_down, (3,), (x, y), values=True, **values).steps   # block 0 reads what another writes
    full, log = launch(), launch(values_max_bytes=60)
    assert log.values_source((0,)) == "launch"
    assert all(_same_steps(log.for_block(b), full.for_block(b)) for b in [(0,), (1,), (2,)])
