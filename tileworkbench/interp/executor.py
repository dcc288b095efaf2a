"""Execute a kernel's IR on NumPy arrays over the whole grid at once.

Blocks run together as a batch: every value carries a leading axis over the blocks (or length
1 when it is the same everywhere). Where control flow diverges, the batch splits: an `if` runs
each branch on the blocks that take it and merges the results; a `for` whose trip count differs
between blocks runs each iteration on the blocks still looping. Large grids run in chunks so a
batch never holds more than about 2^22 elements per value. A kernel whose blocks wait for each other
(a `while` loop around an atomic: a spin lock or a flag) runs one block at a time, in grid order, so
that a block holding a lock finishes before the next one asks for it; run together, the waiting
blocks would never let the holder go on.
"""
from __future__ import annotations

import math
import os
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ArgumentValueError, TileInternalError, TileValueError
from ..ir.core import Block, Function, Value, walk_block
from ..ir.ops import Category, ops_in
from ..ir.types import TileType
from .host import written_params
from .memory import MEMORY_RULES, ArrayChoice, ArrayView, chosen, per_block
from .rules import RULES
from .steps import CONTROL, StepLog, written_operand
from .trace import MAX_TRACE_BYTES, Event, Status, Trace, padding_scalar, view_bytes

BATCH_ELEMENTS = 1 << 22
# the most blocks a launch runs unless told more (run(max_blocks=...), TILEWORKBENCH_INTERP_MAX_BLOCKS):
# a grid of (2**24 - 1, 2**24 - 1) is valid on a GPU and would run here for ever
MAX_BLOCKS = 1 << 22
MAX_BLOCKS_VARIABLE = "TILEWORKBENCH_INTERP_MAX_BLOCKS"
SHAPE_OPS = ops_in(Category.SHAPE)  # traced: where each output element came from


class Env:
    """Values by SSA identity; a child sees its parent's values, restricted to a subset of blocks."""

    def __init__(self, parent: Env | None = None, rows: np.ndarray | None = None):
        self.values: dict[Value, np.ndarray] = {}
        self.parent, self.rows = parent, rows

    def __getitem__(self, v: Value):
        if v in self.values:
            return self.values[v]
        x = self.parent[v]
        # arrays are global memory, shared by every block; only per-block values (slice bounds too)
        # are restricted
        if self.rows is not None and isinstance(x, (ArrayView, ArrayChoice)):
            x = x.restricted(self.rows)
        elif self.rows is not None and not v.is_array and x.shape[0] != 1:
            x = x[self.rows]
        self.values[v] = x
        return x

    def __setitem__(self, v: Value, x):
        self.values[v] = x


@dataclass
class Context:
    """What the rules may ask about the launch: the blocks in the batch, the grid, tracing."""

    fn: Function
    grid: tuple[int, int, int]
    bids: np.ndarray            # (B, 3) int32: the blocks of the current (sub-)batch
    arrays: dict                # array Value -> (parameter name, numpy array)
    checked: bool
    trace: Trace | None
    strict_padding: bool = False
    steps: StepLog | None = None   # per-op values for the block stepper, when recorded
    op_numbers: dict = field(default_factory=dict)   # op -> its place in fn.walk(): which op an event is of
    budget: TraceBudget | None = None

    @property
    def size(self) -> int:
        return self.bids.shape[0]

    @property
    def tracing(self) -> bool:
        return self.trace is not None

    def array_name(self, array) -> str:
        """The parameter name of the argument an array value is (or views, through slices)."""
        base = array.base if isinstance(array, ArrayView) else array
        return next(name for name, arg in self.arrays.values() if arg is base)

    def subset(self, rows) -> Context:
        return replace(self, bids=self.bids[rows])

    def iteration(self, op, k: int):
        """The steps of iteration `k` of loop `op` (when values are recorded)."""
        return self.steps.iteration(op, k) if self.steps is not None else nullcontext()

    def record(self, op, array_name, coords, status, full, padding_mode=None, padding=None):
        """One memory op's event; `padding` is what its padded lanes read (a scalar or per lane)."""
        if self.trace is None:
            return
        stacked = np.zeros(tuple(full) + (len(coords),), np.int32)  # a 0-d array's lanes have no coordinates
        for d, c in enumerate(coords):
            stacked[..., d] = c
        if padding is not None:
            padding = np.asarray(padding).item() if np.ndim(padding) == 0 else \
                padding_scalar(np.array(np.broadcast_to(padding, full)))
        self.add_event(op, Event(op.name, array_name, op.loc.line if op.loc else 0, op.loc.col if op.loc else 0,
                                 op.loc.source_line if op.loc else "", self.bids.copy(), stacked,
                                 np.asarray(status, np.uint8), padding_mode=padding_mode, padding_value=padding))

    def add_event(self, op, event: Event) -> None:
        event.op_number = self.op_numbers[op]
        self.budget.spend(event.nbytes, op)
        self.trace.events.append(event)


class TraceBudget:
    """The bytes a trace being recorded may still take: its events, and what its views will allocate."""

    def __init__(self, limit: int, grid, arrays: dict):
        self.limit, self.spent = limit, 0
        self.spend(view_bytes(grid, arrays), None, f"viewing a grid of {tuple(grid)} and arrays of shapes "
                                                   f"{[tuple(a['shape']) for a in arrays.values()]} takes")

    def spend(self, nbytes: int, op, what: str = "recording the trace reached") -> None:
        self.spent += nbytes
        if self.spent > self.limit:
            raise TileValueError(
                f"Tracing this launch takes more than trace_max_bytes={self.limit} bytes ({what} {self.spent} "
                f"here): trace a smaller grid, or pass run(..., trace_max_bytes=...) for more", op.loc if op else None)


def _elements_per_block(fn: Function) -> int:
    biggest = 1
    for op in fn.walk():
        for r in op.results:
            if isinstance(r.type, TileType):
                biggest = max(biggest, r.type.size)
    return biggest


def _blocks_wait_for_each_other(fn: Function) -> bool:
    """Whether a `while` loop of the kernel spins on an atomic (the way blocks wait for one another)."""
    return any(op.name == "while" and any(inner.name.startswith("atomic_") for inner in walk_block(op.regions[0]))
               for op in fn.walk())


def _grid_ids(grid, start: int, stop: int) -> np.ndarray:
    """Block coordinates of linear block ids start..stop-1 (axis 0 fastest, as CUDA numbers them)."""
    linear = np.arange(start, stop, dtype=np.int64)
    x = linear % grid[0]
    y = (linear // grid[0]) % grid[1]
    z = linear // (grid[0] * grid[1])
    return np.stack([x, y, z], axis=1).astype(np.int32)


def execute(fn: Function, grid, args, *, checked: bool = True, trace: bool = False,
            strict_padding: bool = False, values_max_bytes: int | None = None, blocks=None,
            values_of=None, max_blocks: int | None = None, trace_max_bytes: int = MAX_TRACE_BYTES) -> Trace | None:
    """Run specialization `fn` over `grid` with `args` in the order of `fn.params` (the arrays and
    scalars of list and tuple arguments each in its place: `arguments.argument_leaves`); arrays are
    updated in place. With `values_max_bytes` (which implies `trace`), the trace's `steps` also hold
    every op's tile (of block `values_of` only, where given). `blocks`: (n, 3) grid coordinates to
    run instead of the whole grid. A grid of more than `max_blocks` blocks (default: blocks_limit())
    is refused, and a trace stops with an error past `trace_max_bytes`."""
    if blocks is None:
        _check_grid_size(grid, blocks_limit() if max_blocks is None else max_blocks)
    trace = trace or values_max_bytes is not None
    steps = StepLog(values_max_bytes, fn.filename, only=values_of) if values_max_bytes is not None else None
    # where the values may not all fit, the arrays the launch writes as they were (the others stay as
    # they are), to re-run it with a block's values
    written = written_params(fn) if steps is not None and blocks is None and values_of is None else None
    before = None
    if written is not None:
        changing = [a for p, a in zip(fn.params, args) if isinstance(a, np.ndarray) and p.name in written]
        before = _copies(args, [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and
                                any(np.may_share_memory(a, w) for w in changing)])
    arrays, env = {}, Env()
    runtime_args = [a for p, a in zip(fn.params, args) if p.kind != "constant"]
    for param, value, arg in zip(fn.runtime_params, fn.body.args, runtime_args):
        if param.kind == "array":
            arrays[value] = (param.name, arg)
            env[value] = arg
        else:
            env[value] = np.array([arg], dtype=param.type.dtype.numpy)
    tr = Trace(fn.name, tuple(grid), {p.name: {"shape": list(a.shape), "dtype": str(p.type.dtype)}
                                      for p, a in zip(fn.runtime_params, runtime_args) if p.kind == "array"},
               steps=steps) if trace else None
    numbers = {op: k for k, op in enumerate(fn.walk())} if trace else {}
    budget = TraceBudget(trace_max_bytes, grid, tr.arrays) if trace else None
    with np.errstate(all="ignore"):  # integer division by zero, overflow: UB on the GPU, quiet here
        for bids in _batches(fn, tuple(grid), blocks):
            ctx = Context(fn, tuple(grid), bids, arrays, checked, tr, strict_padding, steps, numbers, budget)
            run_block(ctx, fn.body, Env(env))
    if before is not None and steps.truncated is not None:
        after = _copies(args, [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and k not in before])
        inputs = [before.get(k, after.get(k, a)) for k, a in enumerate(args)]
        steps.replay = Replay(fn, tuple(grid), inputs, checked, strict_padding)
    return tr.merged() if tr is not None else None


def blocks_limit() -> int:
    """The most blocks a launch on the interpreter runs: $TILEWORKBENCH_INTERP_MAX_BLOCKS, else MAX_BLOCKS."""
    text = os.environ.get(MAX_BLOCKS_VARIABLE, "").strip()
    if not text:
        return MAX_BLOCKS
    if not text.isdigit() or int(text) < 1:
        raise ArgumentValueError(f"{MAX_BLOCKS_VARIABLE}={text[:40]!r} is not a positive number of blocks")
    return int(text)


def _check_grid_size(grid, limit: int) -> None:
    blocks = math.prod(grid)
    if blocks > limit:
        raise ArgumentValueError(
            f"Grid {tuple(grid)} has {blocks:,} blocks, more than the {limit:,} the interpreter runs (a launch that "
            f"size would take hours); pass max_blocks= to ct.interpret or set {MAX_BLOCKS_VARIABLE} for more")


def _copies(args: list, which: list[int]) -> dict:
    """{k: a copy of args[k]} for k in `which`; arguments that share memory share it in the copies too
    (a kernel may be given one array twice, or two views of one)."""
    owners: list = []   # (the array owning the memory, its copy)
    out = {}
    for k in which:
        a = args[k]
        same = next((j for j in out if args[j] is a), None)
        if same is not None:   # the very same array object: the same copy (traces name it by its first name)
            out[k] = out[same]
            continue
        owner = a
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        copy = next((c for o, c in owners if o is owner), None)
        if copy is None:
            copy = owner.copy(order="K")
            owners.append((owner, copy))
        offset = a.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
        out[k] = np.ndarray(a.shape, a.dtype, buffer=copy, offset=offset, strides=a.strides)
    return out


def _batches(fn: Function, grid, blocks):
    """The blocks of the launch in batches that run together (each one alone where blocks wait for each other)."""
    if blocks is not None:
        yield np.asarray(blocks, np.int32).reshape(-1, 3)
        return
    total = grid[0] * grid[1] * grid[2]
    chunk = 1 if _blocks_wait_for_each_other(fn) else max(1, BATCH_ELEMENTS // _elements_per_block(fn))
    for start in range(0, total, chunk):
        yield _grid_ids(grid, start, min(total, start + chunk))


@dataclass
class Replay:
    """A launch's specialization, grid and arguments as they were before it ran: enough to run it, or
    one block of it alone, again with one block's values (StepLog.for_block, where the launch could
    not keep them). The interpreter is deterministic: the same blocks in the same order compute the
    same values."""

    fn: Function
    grid: tuple
    args: list
    checked: bool
    strict_padding: bool

    @property
    def has_atomics(self) -> bool:
        return any(op.name.startswith("atomic_") for op in self.fn.walk())

    @property
    def has_aliases(self) -> bool:
        """Whether two array arguments share memory (the trace names an element by one of them only)."""
        arrays = [a for a in self.args if isinstance(a, np.ndarray)]
        return any(np.may_share_memory(a, b) for k, a in enumerate(arrays) for b in arrays[k + 1:])

    def block(self, block, max_bytes: int, alone: bool) -> StepLog:
        """The steps with `block`'s values (up to `max_bytes`), on fresh copies of the arguments: of the
        block run `alone`, else of the whole launch."""
        copies = _copies(self.args, [k for k, a in enumerate(self.args) if isinstance(a, np.ndarray)])
        args = [copies.get(k, a) for k, a in enumerate(self.args)]
        block = tuple(int(b) for b in block)
        trace = execute(self.fn, self.grid, args, checked=self.checked, strict_padding=self.strict_padding,
                        values_max_bytes=max_bytes, blocks=[block] if alone else None, values_of=block)
        return trace.steps


def run_block(ctx: Context, block: Block, env: Env) -> list:
    """Execute the ops of a block; return what its `yield` yields."""
    for op in block.ops:
        if op.name == "yield":
            return [env[v] for v in op.operands]
        structured = STRUCTURED.get(op.name)
        events_before = len(ctx.trace.events) if ctx.tracing else 0
        args = None
        if structured is not None:
            results = structured(ctx, op, env)
        else:
            args = [env[v] for v in op.operands]
            rule = MEMORY_RULES.get(op.name) or RULES.get(op.name)
            if rule is None:
                raise TileInternalError(f"The interpreter has no rule for op '{op.name}'", op.loc)
            if any(isinstance(x, ArrayChoice) for x in args):
                results = _run_per_array(ctx, op, rule, args)
            else:
                out = rule(ctx, op, *args)
                results = [] if out is None else [out]
            if ctx.tracing and op.name in SHAPE_OPS:
                _record_shape_op(ctx, op, args)
        for r, x in zip(op.results, results):
            env[r] = x
        if ctx.steps is not None and op.name not in CONTROL:
            _record_step(ctx, op, results, args, events_before)
    return []


def _record_step(ctx, op, results, args, events_before):
    """The op's tile for the stepper: its (first) result, or the tile a write stores."""
    if op.name == "constant" and not getattr(op.results[0].type, "shape", ()):
        return   # a literal such as the 1 of `range(i + 1)`: nothing to step through
    written = written_operand(op)
    value = results[0] if results else args[written] if written is not None else None
    ctx.steps.record(op, value, ctx.bids, ctx.trace.events[events_before:])


def _run_per_array(ctx, op, rule, args) -> list:
    """An op on an array that differs between the blocks of the batch: run it once per group of
    blocks holding the same arrays, and merge what it returns."""
    choices = [k for k, x in enumerate(args) if isinstance(x, ArrayChoice)]
    groups: list = []  # (the arrays, the blocks holding them)
    for r in range(ctx.size):
        picks = [args[k].per_block[r] for k in choices]
        group = next((g for g in groups if all(a is b for a, b in zip(g[0], picks))), None)
        if group is None:
            group = (picks, [])
            groups.append(group)
        group[1].append(r)
    merged = None
    for picks, rows in groups:
        rows = np.array(rows)
        sub = [x.restricted(rows) if isinstance(x, ArrayView) else x if v.is_array or x.shape[0] == 1 else x[rows]
               for v, x in zip(op.operands, args)]
        for k, pick in zip(choices, picks):
            sub[k] = pick
        out = rule(ctx.subset(rows), op, *sub)
        if out is None:
            continue
        if op.result.is_array:
            merged = merged or [None] * ctx.size
            for r, a in zip(rows, per_block(out, len(rows))):
                merged[r] = a
        else:
            if merged is None:
                merged = np.empty((ctx.size,) + out.shape[1:], out.dtype)
            merged[rows] = out
    if merged is None:
        return []
    return [chosen(merged) if op.result.is_array else merged]


def _rows_merged(size: int, v: Value, parts):
    """v's value over the batch from (rows, value) parts that cover it."""
    if v.is_array:
        blocks = [None] * size
        for rows, x in parts:
            for r, a in zip(rows, per_block(x, len(rows))):
                blocks[r] = a
        return chosen(blocks)
    merged = np.empty((size,) + v.type.shape, dtype=v.type.dtype.numpy)
    for rows, x in parts:
        merged[rows] = x
    return merged


def _whole_batch(v: Value, x, size: int):
    """A loop-carried value as a batch of `size` blocks that rows of it can be written in."""
    return x if v.is_array else np.array(np.broadcast_to(x, (size,) + x.shape[1:]))


def _rows_of(v: Value, x, rows):
    if v.is_array:
        return x.restricted(rows) if isinstance(x, (ArrayView, ArrayChoice)) else x
    return x[rows]


def _update_rows(v: Value, x, rows, new, size: int):
    """x with the blocks `rows` holding `new` (tiles in place; an array value is made anew)."""
    if not v.is_array:
        x[rows] = new
        return x
    others = np.setdiff1d(np.arange(size), rows)
    return _rows_merged(size, v, [(others, _rows_of(v, x, others)), (rows, new)])


def _split(cond: np.ndarray):
    cond = np.asarray(cond).reshape(-1)
    if cond.shape[0] == 1 or cond.all() or not cond.any():
        return bool(cond[0]), None
    return None, (np.nonzero(cond)[0], np.nonzero(~cond)[0])


def _run_if(ctx, op, env):
    uniform, parts = _split(env[op.operands[0]])
    if parts is None:
        return run_block(ctx, op.regions[0 if uniform else 1], Env(env))
    outs = [run_block(ctx.subset(rows), region, Env(env, rows)) for rows, region in zip(parts, op.regions)]
    return [_rows_merged(ctx.size, r, zip(parts, xs)) for r, *xs in zip(op.results, *outs)]


def _run_for(ctx, op, env):
    lo, hi, step = (np.asarray(env[v]).astype(np.int64) for v in op.operands[:3])
    carried = [env[v] for v in op.operands[3:]]
    if np.any(step <= 0):
        raise TileValueError("range() step must be positive at run time", op.loc)
    trips = np.maximum(0, -(-(hi - lo) // step))
    body = op.regions[0]
    iv, *carried_args = body.args
    if np.all(trips == trips.reshape(-1)[0]):  # every block loops equally often: one batch
        for k in range(int(trips.reshape(-1)[0])):
            inner = Env(env)
            inner[iv] = (lo + k * step).astype(np.int32)
            for a, x in zip(carried_args, carried):
                inner[a] = x
            with ctx.iteration(op, k):
                carried = run_block(ctx, body, inner)
        return carried
    size = ctx.size
    full = [_whole_batch(a, x, size) for a, x in zip(carried_args, carried)]
    trips, lo, step = (np.broadcast_to(a, (size,)) for a in (trips, lo, step))
    for k in range(int(trips.max())):
        rows = np.nonzero(trips > k)[0]
        inner = Env(env, rows)
        inner[iv] = (lo[rows] + k * step[rows]).astype(np.int32)
        for a, x in zip(carried_args, full):
            inner[a] = _rows_of(a, x, rows)
        with ctx.iteration(op, k):
            news = run_block(ctx.subset(rows), body, inner)
        full = [_update_rows(a, x, rows, new, size) for a, x, new in zip(carried_args, full, news)]
    return full


def _run_while(ctx, op, env):
    """Run the body on the blocks still looping until each block's go-on flag is false."""
    size = ctx.size
    body = op.regions[0]
    carried = [_whole_batch(a, env[v], size) for a, v in zip(body.args, op.operands)]
    rows = np.arange(size)
    iteration = 0
    while rows.size:
        every = rows.size == size
        inner = Env(env, None if every else rows)
        for arg, x in zip(body.args, carried):
            inner[arg] = x if every else _rows_of(arg, x, rows)
        with ctx.iteration(op, iteration):
            go_on, *new = run_block(ctx if every else ctx.subset(rows), body, inner)
        iteration += 1
        if every:  # the body may yield the carried arrays themselves (swaps): take fresh ones
            carried = [_whole_batch(a, n, size) for a, n in zip(body.args, new)]
        else:  # the body saw copies (x[rows]); write its results back
            carried = [_update_rows(a, x, rows, n, size) for a, x, n in zip(body.args, carried, new)]
        rows = rows[np.broadcast_to(np.asarray(go_on).reshape(-1), rows.shape)]
    return carried


def _run_combine(ctx, op, env):
    """A custom reduce/scan: its combine region applied to every lane at once, folding along the axis
    in order (reverse order for a reverse scan), starting from the identities."""
    axis = op.attrs["axis"] + 1
    xs = [env[v] for v in op.operands]
    b = max(x.shape[0] for x in xs)
    xs = [np.moveaxis(np.broadcast_to(x, (b,) + x.shape[1:]), axis, -1) for x in xs]
    rest, n = xs[0].shape[:-1], xs[0].shape[-1]
    lanes = int(np.prod(rest))
    columns = [x.reshape(lanes, n) for x in xs]
    region = op.regions[0]
    outer = Env(env)  # a value of the enclosing code, repeated for each lane of its block
    for v in _outer_operands(region):
        x = env[v]
        if not v.is_array and x.shape[0] > 1:
            outer[v] = np.repeat(x, lanes // b, axis=0)
    acc = [np.full((lanes,), i, dtype=v.dtype.numpy) for i, v in zip(op.attrs["identities"], op.operands)]
    scanned = [np.empty((lanes, n), v.dtype.numpy) for v in op.operands]
    for j in (reversed(range(n)) if op.attrs.get("reverse") else range(n)):
        inner = Env(outer)
        for arg, x in zip(region.args, acc + [c[:, j] for c in columns]):
            inner[arg] = x
        # the region's values run over lanes, not blocks: not steps of their own
        acc = [np.broadcast_to(x, (lanes,)) for x in run_block(replace(ctx, steps=None), region, inner)]
        for out, x in zip(scanned, acc):
            out[:, j] = x
    if op.name == "scan":
        return [np.moveaxis(x.reshape(rest + (n,)), -1, axis) for x in scanned]
    reduced = [x.reshape(rest) for x in acc]
    return [np.expand_dims(x, axis) for x in reduced] if op.attrs["keepdims"] else reduced


def _outer_operands(block: Block) -> list:
    """The values a region uses that are defined outside it."""
    defined, outer = set(block.args), {}
    for op in walk_block(block):
        for v in op.operands:
            if v not in defined:
                outer[v] = None
        defined.update(op.results)
        for region in op.regions:
            defined.update(region.args)
    return list(outer)


def _c_format(spec: str, x) -> str:
    """One element as C's printf writes it (%a as a hexadecimal float)."""
    if spec.endswith(("a", "A")):
        text = float(x).hex()
        return text.upper() if spec.endswith("A") else text
    return spec % (int(x) if spec[-1] in "doxX" else float(x))


def _print_text(x, spec) -> str:
    """A tile as a nested list (a scalar bare): str() of each element, or printf's conversion."""
    if x.ndim:
        return "[" + ", ".join(_print_text(e, spec) for e in x) + "]"
    return _c_format(spec, x) if spec else str(x.item())


def _run_print(ctx, op, env):
    values = [env[v] for v in op.operands]
    pieces = op.attrs["text"]
    formats = op.attrs.get("formats") or (None,) * len(values)
    for b in range(ctx.size):
        it = iter(zip(values, formats))
        words = []
        for piece in pieces:
            if piece is not None:
                words.append(piece)
                continue
            x, spec = next(it)
            x = x[b if x.shape[0] > 1 else 0]
            words.append(_print_text(x, spec) if spec or x.ndim == 0 else str(x.tolist()))
        print(op.attrs["sep"].join(words), end=op.attrs["end"])
    return []


# The ops the executor runs itself (they own regions, or talk to the user); `yield` ends a region.
STRUCTURED = {"if": _run_if, "for": _run_for, "while": _run_while, "reduce": _run_combine, "scan": _run_combine,
              "print": _run_print}


def _record_shape_op(ctx, op, args):
    """Where each output element of a shape op came from: (operand number, flat position)."""
    positions, offset, offsets = [], 0, []
    data_operands = 2 if op.name in ("cat", "insert") else 1  # the rest are sub-tile indices
    for k, (v, x) in enumerate(zip(op.operands, args)):
        if k < data_operands:
            positions.append(np.arange(offset, offset + v.type.size, dtype=np.int64).reshape((1,) + v.type.shape))
            offsets.append(offset)
            offset += v.type.size
        else:
            positions.append(x)
    source = RULES[op.name](ctx, op, *positions)
    operand = np.searchsorted(np.array(offsets), source, side="right") - 1
    local = source - np.array(offsets)[operand]
    coords = [operand, local]
    full = source.shape
    blocks = ctx.bids if source.shape[0] > 1 else ctx.bids[:1]
    ctx.add_event(op, Event(op.name, None, op.loc.line if op.loc else 0, op.loc.col if op.loc else 0,
                            op.loc.source_line if op.loc else "", blocks.copy(),
                            np.stack([np.broadcast_to(c, full) for c in coords], -1).astype(np.int32),
                            np.full(full, Status.MOVED, np.uint8),
                            tuple(v.type.shape for v in op.operands[:data_operands])))

