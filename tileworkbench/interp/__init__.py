"""The NumPy reference interpreter: runs the IR over the whole grid and records access traces."""
from __future__ import annotations

from ..ir.core import Function
from .executor import MAX_BLOCKS, execute
from .steps import VALUES_MAX_BYTES, BlockStep, Step, StepLog
from .trace import MAX_TRACE_BYTES, Event, InvalidTraceError, Status, Trace


def run(fn: Function, grid, args, *, checked: bool = True, trace: bool = False,
        strict_padding: bool = False, values: bool = False, values_max_bytes: int = VALUES_MAX_BYTES,
        max_blocks: int | None = None, trace_max_bytes: int = MAX_TRACE_BYTES) -> Trace | None:
    """Run the kernel specialization `fn` (an IR Function: `kernel.specialize(args)`) on NumPy arrays
    (lists and tuples of them too) over `grid` (a tuple of 1-3 ints); arrays are updated in place.
    `ct.interpret(kernel, grid, args, ...)` resolves the specialization and runs it here.

    checked: an access outside an array made with check_bounds=False raises TileOutOfBoundsError
             (naming the op's line and the index) instead of being padded or dropped.
    trace:   return a Trace of every memory and shape op.
    values:  also keep every op's tile per block, in program order (`trace.steps`, a StepLog: what
             the block stepper shows); implies trace. At most `values_max_bytes` of tiles are kept,
             the log's `truncated` says where it stopped; past it, `trace.steps.for_block(block)`
             re-runs the block (alone where that is exact, else the launch) for its values.
    strict_padding: a load that reads UNDETERMINED padding (zero here and on the GPU, unspecified in
             cuTile) raises TileUndeterminedPaddingError naming the line, the block and the element.
    max_blocks: a grid of more blocks is refused (ArgumentValueError); default MAX_BLOCKS (2**22), or
             $TILEWORKBENCH_INTERP_MAX_BLOCKS.
    trace_max_bytes: a trace (its events, and what its views will allocate) that would take more
             stops the launch with a TileValueError at the op where it ran out; default 1 GiB, what
             Trace.load reads by default, so a recorded trace always loads again.

    >>> trace = run(add.specialize((a, b, c, 16)), (4,), (a, b, c, 16), trace=True)
    >>> trace.by_array("c")[0].counts()
    {'STORED': 64}
    """
    from ..arguments import argument_leaves, normalize_grid
    if not isinstance(fn, Function):
        raise TypeError(f"interp.run takes a kernel specialization (an IR Function), not a "
                        f"{type(fn).__name__}: run a kernel with ct.interpret(kernel, grid, args, ...)")
    grid = normalize_grid(grid)
    return execute(fn, grid, argument_leaves(args), checked=checked, trace=trace, strict_padding=strict_padding,
                   values_max_bytes=values_max_bytes if values else None, max_blocks=max_blocks,
                   trace_max_bytes=trace_max_bytes)


__all__ = ["MAX_BLOCKS", "MAX_TRACE_BYTES", "BlockStep", "Event", "InvalidTraceError", "Status", "Step", "StepLog",
           "Trace", "execute", "run"]
