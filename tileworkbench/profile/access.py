"""Memory-access analysis without a GPU: what the generated code's warps ask of global and shared memory.

The interpreter's trace says which array element every lane of every memory op touched; the code
generator's thread layout (docs/architecture.md, "The CUDA backend: thread layout") says which thread
holds which lane and how wide its accesses are. Together they give, per memory op, what Nsight Compute
measures on the GPU (docs/access.md names the metric behind each number):

- global memory: warp-wide requests, the 32-byte sectors each touches, coalescing efficiency, bytes
  moved per block and in total;
- shared memory: the wavefronts (and so bank conflicts) of what goes through shared memory, laid out
  as the tile library does: layout changes (permutes and transposes, broadcasts, cat/extract/insert,
  loads and stores in another order, the generator's layout conversions), block reductions, and the
  operands of mma (CUDA cores; tensor cores: padded rows read by ldmatrix);
- L2: the hit rate Nsight Compute measures for a launch, from an LRU cache of the device's size that
  starts cold, over the blocks in launch order, the first wave of them in lockstep.

    report = analyze(matmul, (64,), (a, b, c, 32, 32, 16))
    report.global_ops[0].sectors_per_request, report.summary()
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..codegen.layout import (chunk_shift, chunk_slot, padded_row_index, skewed, stages_chunks,
                              stages_padded_rows)
from ..interp import Status, Trace, run
from ..ir import TileType
from ..ir.types import tfloat32
from ..ir.ops import ATOMICS, OPS, Category, ViewKind, ops_in
from ..targets import H100_L2_BYTES, H100_L2_PARTITIONS, H100_SMS

SECTOR = 32              # bytes: the unit L1 and L2 move
WARP = 32
BANKS, BANK_BYTES = 32, 4

TOUCHING = (Status.LOADED, Status.STORED, Status.COLLISION)   # lanes that reach memory
# From the op table: plain writes (atomics return the old values, and read as they write)
WRITES = frozenset(n for n in ops_in(Category.MEMORY) if OPS[n].access == "write") - ATOMICS.keys()
TILE_SPACE = frozenset(n for n in OPS if OPS[n].view is ViewKind.TILE_SPACE)  # chunked, vectorized where a chunk allows
ELEMENTWISE = {"gather", "scatter"}     # vectorized where a chunk's elements are adjacent in memory
STAGED = ops_in(Category.SHAPE) - {"reshape"}  # shape ops through shared memory (a reshape stays in registers)


@dataclass
class GlobalAccess:
    """One global-memory op over the whole grid (every execution of it: blocks and loop iterations)."""
    op: str
    array: str
    line: int
    source: str
    executions: int
    requests: int             # warp-wide load or store instructions
    sectors: int              # 32-byte sectors they touched, summed over requests
    bytes_requested: int      # bytes the lanes asked for
    access_bytes: int         # the widest access one thread made (16: 128-bit vectors)
    warp_requests: list[int] = field(default_factory=list)   # per warp of the block, over all executions
    warp_sectors: list[int] = field(default_factory=list)
    block_sectors: dict[tuple[int, ...], int] = field(default_factory=dict)   # block -> sectors it moved
    # how an mma operand stage is filled: "cp.async" (Nsight Compute: op_ldgsts, not op_ld) or "tma"
    # (no load instruction per thread at all); None: loaded into registers
    copied_by: str | None = None

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def efficiency(self) -> float:
        """Bytes asked for / bytes the sectors moved (1.0: every byte of every sector was used)."""
        return self.bytes_requested / (self.sectors * SECTOR) if self.sectors else 1.0

    @property
    def bytes_moved(self) -> int:
        return self.sectors * SECTOR


@dataclass
class SharedAccess:
    """One phase (the writes or the reads) of a layout change through shared memory, per execution."""
    op: str
    line: int
    source: str
    phase: str                # "store" (to shared memory) or "load" (back to registers)
    executions: int
    requests: int             # warp-wide shared-memory instructions, per execution
    wavefronts: int           # what the banks serve them in, per execution
    ideal_wavefronts: int     # without conflicts: one per 128 bytes of distinct words

    @property
    def conflicts(self) -> int:
        """Extra wavefronts per execution (Nsight Compute's bank conflicts)."""
        return self.wavefronts - self.ideal_wavefronts

    @property
    def ways(self) -> float:
        """Wavefronts per request: 1 is conflict-free for 4-byte words, 32 is every thread in one bank."""
        return self.wavefronts / self.requests if self.requests else 0.0


@dataclass
class L2Estimate:
    l2_bytes: int
    order: str                # how blocks were ordered: "launch" (x fastest)
    accesses: int             # sectors each block reads and writes (each once per block), summed
    misses: int               # reads of a sector not in L2 (writes never miss: see l2_estimate)
    writes: int = 0           # of the accesses, writes
    written: int = 0          # distinct sectors written (written back to DRAM in the end)
    resident: int = 1         # blocks of the first wave: they run at once, in lockstep
    together: int = 0         # sectors asked for at once by blocks that waited on the same fill
    partitions: int = H100_L2_PARTITIONS   # the most misses such a sector counts: one per L2 partition

    @property
    def hits(self) -> int:
        return self.accesses - self.misses

    @property
    def hit_rate(self) -> float:
        return self.hits / self.accesses if self.accesses else 1.0

    @property
    def dram_bytes(self) -> int:
        """Read misses fetched, written sectors written back."""
        return (self.misses + self.written) * SECTOR

    @property
    def reasoning(self) -> str:
        """Why the hit rate is what it is, in a phrase (`summary()` passes it on to the launch report)."""
        if self.resident <= 1:
            return "blocks one after another in launch order: each sector misses once, on its first read"
        text = f"first wave: {self.resident} blocks run at once; a sector several ask for misses once"
        if self.together:
            text += (f", except {self.together} sectors requested together by blocks that waited on the same "
                     f"fill: once per L2 partition ({self.partitions})")
        return text


@dataclass
class AccessReport:
    kernel: str
    grid: tuple[int, int, int]
    threads: int
    vec: int
    global_ops: list[GlobalAccess]
    shared_ops: list[SharedAccess]
    l2: L2Estimate
    unmodeled: list[str] = field(default_factory=list)   # "line N: what" for shared-memory staging left out

    def summary(self) -> dict:
        """Plain numbers for the launch report: totals and one row per op."""
        requests = sum(g.requests for g in self.global_ops)
        sectors = sum(g.sectors for g in self.global_ops)
        asked = sum(g.bytes_requested for g in self.global_ops)
        return {
            "threads": self.threads,
            "global_requests": requests,
            "global_sectors_per_request": sectors / requests if requests else 0.0,
            "global_efficiency": asked / (sectors * SECTOR) if sectors else 1.0,
            "bytes_moved": sectors * SECTOR,
            "shared_bank_conflicts": sum(s.conflicts * s.executions for s in self.shared_ops),
            "shared_wavefronts": sum(s.wavefronts * s.executions for s in self.shared_ops),
            "l2_hit_rate": self.l2.hit_rate,
            "dram_bytes_estimate": self.l2.dram_bytes,
            "l2_reasoning": self.l2.reasoning,
            "shared_unmodeled": list(self.unmodeled),
            "ops": [{"line": g.line, "op": g.op, "array": g.array, "requests": g.requests,
                     "sectors_per_request": g.sectors_per_request, "efficiency": g.efficiency,
                     "bytes_moved": g.bytes_moved} for g in self.global_ops]
                   + [{"line": s.line, "op": s.op, "phase": s.phase, "requests": s.requests * s.executions,
                       "wavefronts": s.wavefronts * s.executions, "conflicts": s.conflicts * s.executions}
                      for s in self.shared_ops],
        }


def analyze(kernel, grid, args, *, arch: str | None = None, l2_bytes: int = H100_L2_BYTES,
            sms: int = H100_SMS) -> AccessReport:
    """Run `kernel` on the interpreter with a trace (NumPy `args` are updated, as by a launch) and
    analyze its accesses under the thread layout the code generator picks for this specialization."""
    from ..arguments import normalize_grid
    trace = run(kernel.specialize(args), normalize_grid(grid), args, trace=True)
    return analyze_trace(kernel.specialize(args), trace, arch=arch, l2_bytes=l2_bytes, sms=sms)


def analyze_trace(fn, trace: Trace, *, arch: str | None = None, l2_bytes: int = H100_L2_BYTES,
                  sms: int = H100_SMS, skew: bool = True) -> AccessReport:
    """The analysis of a trace of `fn` (the IR Function it ran) on a GPU of `sms` SMs and an L2 of
    `l2_bytes`. `skew=False` models shared memory without the tile library's skew of one element every
    32 (to show what the skew saves)."""
    from ..codegen.cuda import generate
    generated = generate(fn, arch=arch)
    threads, vec = generated.threads, generated.vec
    ops = {(op.name, op.loc.line, op.loc.col): op for op in fn.walk() if op.loc is not None}
    global_ops, shared_ops = [], []
    for event in trace.events:
        op = ops.get((event.op, event.line, event.col))
        order = op.attrs.get("order") if op is not None and event.op in TILE_SPACE else None
        if event.array is not None:
            itemsize = np.dtype(trace.arrays[event.array]["dtype"]).itemsize
            global_ops.append(_global(event, trace, itemsize, threads, vec, order))
            pipeline = generated.plan.staged.get(op.results[0]) if op is not None and op.results else None
            global_ops[-1].copied_by = None if pipeline is None else "tma" if pipeline.tma else "cp.async"
            if order is not None and tuple(order) != tuple(range(len(order))):
                shared_ops += _reordered(event, itemsize, threads, vec, order, skew)
        elif event.op in STAGED and op is not None:
            itemsize = op.result.type.dtype.itemsize
            shared_ops += _staged(event, itemsize, threads, vec, skew, trace.grid, op.attrs.get("axes"))
    staging, unmodeled = _ir_staging(fn, trace, ops, generated, skew)
    resident = first_wave(fn, int(np.prod(trace.grid)), arch, sms)
    return AccessReport(fn.name, trace.grid, threads, vec, global_ops, shared_ops + staging,
                        l2_estimate(trace, l2_bytes, resident), unmodeled)


# ---- the thread layout --------------------------------------------------------------------------

def blocked_lanes(size: int, threads: int, tw_vec: int, *, writes: bool) -> tuple[np.ndarray, ...]:
    """(thread, element, register) of every access a `blocked` tile of `size` elements makes, and V:
    element e lives in thread (e / V) % threads, register (e / V / threads) * V + e % V. A tile smaller
    than the block is replicated (thread t holds element t % size): all threads read, owners write."""
    if size < threads:
        thread = np.arange(size if writes else threads)
        return thread, thread % size, np.zeros_like(thread), 1
    v = min(size // threads, tw_vec)
    e = np.arange(size)
    return (e // v) % threads, e, (e // v // threads) * v + e % v, v


def memory_order(order) -> tuple[int, ...]:
    """The tile's axes in the array's own axis order: tile axis k walks array axis order[k], and a load or
    store in another order moves the tile so (then permutes it in shared memory)."""
    return tuple(order.index(d) for d in range(len(order)))


def tile_threads(tile_shape, order, threads: int, tw_vec: int) -> np.ndarray:
    """The thread of the generated code that moves each element of a load's or store's tile (an array
    of `tile_shape`): the blocked layout of the tile in the array's axis order. A tile smaller than the
    block is replicated; its owner (thread e for element e, the one that stores it) is given."""
    size = int(np.prod(tile_shape))
    thread, element, _, _ = blocked_lanes(size, threads, tw_vec, writes=True)
    # tile element at each position of the memory-order tile
    tile_element = np.arange(size).reshape(tile_shape).transpose(memory_order(order)).reshape(-1)
    owner = np.empty(size, np.int64)
    owner[tile_element[element]] = thread
    return owner.reshape(tile_shape)


# ---- global memory ------------------------------------------------------------------------------

def _global(event, trace, itemsize, threads, tw_vec, order) -> GlobalAccess:
    coords, status = event.coords, event.status
    if order is not None:   # the code moves the tile in the array's axis order (then permutes it)
        axes = (0, *(1 + a for a in memory_order(order)))
        coords, status = coords.transpose(*axes, len(axes)), status.transpose(*axes)
    shape = tuple(trace.arrays[event.array]["shape"])
    rows, tile_shape = status.shape[0], status.shape[1:]
    size = int(np.prod(tile_shape))
    active = np.isin(status.reshape(rows, size), TOUCHING)
    flat = coords.reshape(rows, size, len(shape))
    offset = np.ravel_multi_index(tuple(np.moveaxis(flat, -1, 0)), shape, mode="clip") if shape else \
        np.zeros((rows, size), np.int64)
    address = offset * itemsize

    thread, element, register, v = blocked_lanes(size, threads, tw_vec, writes=event.op in WRITES)
    lane_active, lane_address = active[:, element], address[:, element]
    chunk, j = register // v, register % v
    vector = np.zeros_like(lane_active)
    tile_space = event.op in TILE_SPACE and tile_shape[-1] % v == 0
    if v > 1 and (tile_space or event.op in ELEMENTWISE):
        chunk_bytes = v * itemsize
        alignment = 16 if chunk_bytes % 16 == 0 else 8 if chunk_bytes % 8 == 0 else 4 if chunk_bytes % 4 == 0 else 1
        # lanes are listed element by element, so each chunk's V lanes are adjacent
        whole = lane_active.reshape(rows, -1, v).all(axis=2)
        if not tile_space:   # a gather's or scatter's chunk is one vector where its elements are adjacent
            steps = np.diff(lane_address.reshape(rows, -1, v), axis=2)
            whole &= (steps == itemsize).all(axis=2)
        vector = np.repeat(whole & (lane_address[:, j == 0] % alignment == 0), v, axis=1)
    access = np.where(vector, min(v * itemsize, 16), itemsize)
    # a vector chunk is one request per 16 bytes; a scalar one is one request per element
    sub = np.where(vector, j * itemsize // np.maximum(access, 1), v + j)
    warps = max(threads // WARP, 1)
    chunks = int(chunk.max()) + 1
    request = ((np.arange(rows)[:, None] * warps + thread // WARP) * chunks + chunk) * (2 * v) + sub
    request, sector = request[lane_active], (lane_address // SECTOR)[lane_active]
    pairs = np.unique(np.stack([request, sector]), axis=1)
    requests = np.unique(request)
    warp_of = requests // (2 * v) // chunks % warps
    pair_warp = pairs[0] // (2 * v) // chunks % warps
    pair_row = pairs[0] // (2 * v) // chunks // warps
    block_sectors = np.bincount(pair_row, minlength=rows)
    by_block: dict[tuple[int, ...], int] = {}
    for block, n in zip(map(tuple, event.blocks.tolist()), block_sectors.tolist()):
        by_block[block] = by_block.get(block, 0) + n
    return GlobalAccess(event.op, event.array, event.line, event.source, rows, len(requests), pairs.shape[1],
                        int(lane_active.sum()) * itemsize, int(access[lane_active].max(initial=0)),
                        np.bincount(warp_of, minlength=warps).tolist(),
                        np.bincount(pair_warp, minlength=warps).tolist(), by_block)


# ---- shared memory ------------------------------------------------------------------------------

def _skewed(index: np.ndarray, skew: bool) -> np.ndarray:
    return skewed(index) if skew else index


def _executions(event, grid) -> int:
    """A shape op that did the same in every block is traced once (for the first block): count it once
    per block of the grid then."""
    return len(event.blocks) if len(event.blocks) > 1 else int(np.prod(grid))


def _wavefronts(where, phase, executions, thread, request, address, access_bytes) -> SharedAccess:
    """Warp-wide shared accesses: `request` numbers the instruction of each access within its warp
    (thread // 32), `address` is its byte address, `access_bytes` its width. The banks (32 of 4
    bytes) serve a request's distinct words in max over banks(distinct words in the bank)
    wavefronts, the same word for several lanes once (a broadcast); the ideal is one wavefront per
    128 bytes of distinct words. Nsight Compute's bank conflicts are the difference."""
    op, line, source = where
    words_per_access = max(access_bytes // BANK_BYTES, 1)
    word = ((np.asarray(address) // BANK_BYTES)[:, None] + np.arange(words_per_access)).reshape(-1)
    instruction = (np.asarray(thread) // WARP) * (int(np.max(request, initial=0)) + 1) + request
    served = np.repeat(_served_together(phase, access_bytes, instruction, np.asarray(thread) % WARP, word,
                                        words_per_access), words_per_access)
    distinct = np.unique(np.stack([served, word]), axis=1)
    per_bank = np.unique(np.stack([distinct[0], distinct[1] % BANKS]), axis=1, return_counts=True)
    first = np.unique(per_bank[0][0], return_index=True)[1]
    wavefronts = np.maximum.reduceat(per_bank[1], first).sum() if len(first) else 0
    words = np.unique(distinct[0], return_counts=True)[1] if distinct.size else np.zeros(0, np.int64)
    ideal = int(np.ceil(words * BANK_BYTES / (BANKS * BANK_BYTES)).sum())
    requests = len(np.unique(instruction))
    return SharedAccess(op, line, source, phase, executions, requests, int(wavefronts), ideal)


def _served_together(phase, access_bytes, instruction, lane, word, words_per_access) -> np.ndarray:
    """Which lanes of an instruction the banks may serve in the same wavefronts, as ncu counts them on
    the H100: 8-byte LDS/STS a half-warp at a time; 16-byte ones a quarter-warp at a time, except that
    the two quarters of a half-warp that touch the same words are served together (a broadcast of one
    address to the warp takes two wavefronts)."""
    if phase not in ("load", "store") or access_bytes not in (8, 16):
        return instruction
    if access_bytes == 8:
        return 2 * instruction + lane // 16
    quarter = 4 * instruction + lane // 8
    words = word.reshape(-1, words_per_access)
    sets = {q: frozenset(words[quarter == q].reshape(-1).tolist()) for q in np.unique(quarter).tolist()}
    partner = quarter - quarter % 2
    same = np.array([sets.get(p) == sets[q] for p, q in zip(partner.tolist(), quarter.tolist())], bool)
    return np.where(same, partner, quarter)


def _phase(event, phase, itemsize, writes_or_reads, skew, executions) -> SharedAccess:
    """Scalar accesses of the tile library's to_smem/from_smem; writes_or_reads: (thread, register,
    element index in the buffer) per access."""
    thread, register, index = writes_or_reads
    return _wavefronts((event.op, event.line, event.source), phase, executions, thread, register,
                       _skewed(index, skew) * itemsize, itemsize)


def _staged(event, itemsize, threads, tw_vec, skew, grid, axes=None) -> list[SharedAccess]:
    """to_smem of each operand (at its offset in the buffer), then from_smem of the result, whose
    element e reads the buffer at the source the trace recorded for it (a permute by `axes`: _permuted)."""
    shapes = event.operand_shapes or ()
    sizes = [int(np.prod(s)) for s in shapes]
    if event.op == "broadcast" and sizes and sizes[0] == 1:
        return []  # a one-element tile is broadcast in registers
    offsets = np.cumsum([0, *sizes])
    executions = _executions(event, grid)
    if event.op == "permute":
        source = event.coords[0].reshape(-1, 2)[:, 1]
        where = (event.op, event.line, event.source)
        return _permuted(where, executions, itemsize, threads, tw_vec, tuple(shapes[0]), axes, source, skew)
    written = shapes[:1] if event.op == "insert" else shapes   # insert writes x, then the value over it
    phases = []
    for k, s in enumerate(written):
        thread, element, register, _ = blocked_lanes(int(np.prod(s)), threads, tw_vec, writes=True)
        phases.append(_phase(event, "store", itemsize, (thread, register, offsets[k] + element), skew, executions))
    source = event.coords[0].reshape(-1, 2)
    if event.op == "insert":
        src = np.arange(len(source))
    else:
        src = offsets[source[:, 0]] + source[:, 1]
    thread, element, register, _ = blocked_lanes(len(src), threads, tw_vec, writes=False)
    phases.append(_phase(event, "load", itemsize, (thread, register, src[element]), skew, executions))
    return phases


def _reordered(event, itemsize, threads, tw_vec, order, skew) -> list[SharedAccess]:
    """A load (store) in another axis order moves the tile in the array's order, then permutes it:
    a load by `order` (memory-order tile -> tile), a store by its inverse."""
    tile_shape = event.status.shape[1:]
    nd = len(order)
    memory_shape = tuple(tile_shape[order.index(d)] for d in range(nd))
    # tile element -> its position in the memory-order tile
    position = np.arange(int(np.prod(tile_shape))).reshape(memory_shape).transpose(order).reshape(-1)
    where = (event.op, event.line, event.source)
    if event.op == "load":
        return _permuted(where, len(event.blocks), itemsize, threads, tw_vec, memory_shape, order, position, skew)
    inverse = tuple(order.index(d) for d in range(nd))
    return _permuted(where, len(event.blocks), itemsize, threads, tw_vec, tile_shape, inverse, np.argsort(position),
                     skew)


def _permuted(where, executions, itemsize, threads, tw_vec, shape, axes, source, skew) -> list[SharedAccess]:
    """tw::permute (tile.cuh) of a blocked `shape` tile by `axes`; element e of the result reads staged
    element source[e]. Where layout.stages_chunks holds, the tile is staged chunk by chunk at chunk_slot()
    (one 16-byte store each; the reads take a whole chunk where the permute keeps the last axis, else
    an element), otherwise element by element, skewed. `skew=False`: neither skew nor slots."""
    size = int(np.prod(shape))
    thread, element, register, v = blocked_lanes(size, threads, tw_vec, writes=True)
    t2, e2, r2, _ = blocked_lanes(size, threads, tw_vec, writes=False)
    strides = np.cumprod((1, *shape[:0:-1]))[::-1]
    step = int(strides[axes[-1]]) if len(shape) else 0
    if not len(shape) or not stages_chunks(itemsize, size, threads, tw_vec, step, shape[axes[-1]]):
        return [_wavefronts(where, "store", executions, thread, register, _skewed(element, skew) * itemsize, itemsize),
                _wavefronts(where, "load", executions, t2, r2, _skewed(source[e2], skew) * itemsize, itemsize)]
    shift = chunk_shift(step) if skew else 64   # shifted past every index: the identity

    def address(e):
        return (chunk_slot(e // v, shift) * v + e % v) * itemsize
    first = register % v == 0
    phases = [_wavefronts(where, "store", executions, thread[first], register[first] // v, address(element[first]), 16)]
    if step == 1:   # each result chunk is one staged chunk
        first = r2 % v == 0
        return phases + [_wavefronts(where, "load", executions, t2[first], r2[first] // v, address(source[e2][first]), 16)]
    return phases + [_wavefronts(where, "load", executions, t2, r2, address(source[e2]), itemsize)]


# ---- shared memory of ops the trace does not record: reductions and mma ----------------------------

REDUCTIONS = {"sum", "prod", "max", "min", "argmax", "argmin", "reduce"}
LOOPS = {"for", "while"}


def _op_executions(fn, trace: Trace, ops: dict) -> dict:
    """How often each op ran over the grid: an op outside loops once per block; one in a loop as often
    as the traced memory ops of its loop body (the trace has a row per block and iteration). An op
    whose loop body has no traced op is left out (its count is unknown)."""
    loop_of = {}

    def visit(block, loop):
        for op in block.ops:
            loop_of[op] = loop
            for region in op.regions:
                visit(region, op if op.name in LOOPS else loop)
    visit(fn.body, None)
    counts = {None: int(np.prod(trace.grid))}
    for event in trace.events:
        op = ops.get((event.op, event.line, event.col))
        if event.array is not None and op is not None:
            loop = loop_of[op]
            counts[loop] = max(counts.get(loop, 0), event.status.shape[0])
    return {op: counts[loop] for op, loop in loop_of.items() if loop in counts}


def _ir_staging(fn, trace: Trace, ops: dict, generated, skew: bool) -> tuple[list[SharedAccess], list[str]]:
    """The shared-memory phases the trace does not record: the generator's layout conversions,
    reductions and mma (tile.cuh, tile_reduce.cuh, tile_mma.cuh, tile_pipeline.cuh), and (line: what)
    for staging the model leaves out."""
    from ..codegen.layout import RowLayout
    plan, threads, vec = generated.plan, generated.threads, generated.vec
    executions = _op_executions(fn, trace, ops)
    phases, unmodeled = [], []
    for line, tile, source, target in generated.conversions:
        on_line = [op for op in executions if op.loc is not None and op.loc.line == line]
        if isinstance(source, RowLayout) or isinstance(target, RowLayout) or not on_line:
            unmodeled.append(f"line {line}: a layout conversion of a {'x'.join(map(str, tile.shape))} tile")
            continue
        where = ("convert_layout", line, on_line[0].loc.source_line.strip())
        phases += _conversion(where, tile, source, target, threads, vec, max(executions[op] for op in on_line), skew)
    for op in fn.walk():
        if op.loc is None or (op.name not in REDUCTIONS and op.name not in ("mma", "scan", "cumsum", "cumprod")):
            continue
        where = (op.name, op.loc.line, op.loc.source_line.strip())
        if op.name in REDUCTIONS and isinstance(plan.of(op.results[0]), RowLayout):
            continue   # rows of an accumulator reduce in registers
        if op not in executions:
            unmodeled.append(f"line {op.loc.line}: {op.name} in a loop whose trip count the trace does not show")
        elif op.name in REDUCTIONS:
            phases += _reduction(op, where, threads, vec, executions[op], skew, _only_stored(fn, op.results[0]))
        elif op.name == "mma" and op in plan.pipelined:
            phases += _pipelined_mma(op, where, plan, threads, executions)
        elif op.name == "mma" and op in plan.tensor_core:
            phases += _tensor_core_mma(op, where, plan, threads, vec, executions[op])
        elif op.name == "mma":
            phases += _generic_mma(op, where, threads, vec, executions[op], skew)
        else:
            unmodeled.append(f"line {op.loc.line}: {op.name} (a scan's passes through shared memory)")
    return phases, unmodeled


def _reduced_positions(shape, axes) -> np.ndarray:
    """(outputs, reduced) table of flat element indices: tile_reduce.cuh's reduced_element(o, j), output
    o in C order over the kept axes, j in C order over the reduced ones."""
    kept = [d for d in range(len(shape)) if d not in axes]
    table = np.arange(int(np.prod(shape))).reshape(shape).transpose(kept + sorted(axes))
    return table.reshape(int(np.prod([shape[d] for d in kept])), -1)


def _only_stored(fn, value) -> bool:
    """Whether a tile reaches memory only through stores (after casts and reshapes): then the threads
    that own none of its elements never use their copies, and the compiler drops their reads."""
    users = [op for op in fn.walk() if any(v is value for v in op.operands)]
    return bool(users) and all(op.name in WRITES or (op.name in ("astype", "reshape") and _only_stored(fn, op.results[0]))
                               for op in users)


def _reduction(op, where, threads, vec, executions, skew, only_stored=False) -> list[SharedAccess]:
    """tw::reduce (tile_reduce.cuh). One output: each warp's lane 0 stores its partial, then every
    thread reads all of them. Several outputs: the tile is staged in C order (skewed, in passes),
    each output's group of threads reads its elements, then partials and results pass through
    shared memory as the group size needs; where the result is `only_stored`, only the threads that
    own an element read it back. A reduction over leading axes first folds each thread's chunks in
    registers (`folded_reduction`): the folded tile of accumulators is what goes through shared
    memory, reduced along its rows, or nothing where it is one row."""
    from ..codegen.cuda import folded_reduction, reduction_bytes, reduction_passes
    x = op.operands[0].type
    axes = sorted(op.attrs["axes"] if "axes" in op.attrs else (op.attrs["axis"],))
    element, acc = reduction_bytes(op)
    folded = folded_reduction(x.shape, axes, threads, vec)
    if folded:
        if folded[0] == 1:
            return []
        x, axes, element = TileType(x.dtype, folded), [0], acc
    table = _reduced_positions(x.shape, axes)
    outputs, reduced = table.shape
    warps = max(threads // WARP, 1)
    everyone = np.arange(threads)
    if outputs == 1:   # the partials lie together at the buffer's 16-byte aligned start: NVRTC reads
        leaders = np.arange(0, threads, WARP)   # them in the widest aligned vectors that tile them
        width = next(w for w in (16, 8, 4, acc) if warps * acc % w == 0 and w >= acc)
        chunks = warps * acc // width
        return [_wavefronts(where, "store", executions, leaders, np.zeros_like(leaders), leaders // WARP * acc, acc),
                _wavefronts(where, "load", executions, np.repeat(everyone, chunks), np.tile(np.arange(chunks), threads),
                            np.tile(np.arange(chunks), threads) * width, width)]
    passes, staged_bytes = reduction_passes(x, axes, threads, vec, element, acc)
    per_pass = x.size // passes
    thread, elem, register, _ = blocked_lanes(x.size, threads, vec, writes=True)
    registers_per_pass = int(register.max()) // passes + 1
    this_pass = register // registers_per_pass
    phases = [_wavefronts(where, "store", executions, thread, register,
                          _skewed(elem - this_pass * per_pass, skew) * element, element)]
    by_thread = outputs >= threads
    group = 1 if by_thread else threads // outputs
    if by_thread:   # each thread folds its own outputs (registers k of the blocked result tile)
        t, o, k, _ = blocked_lanes(outputs, threads, vec, writes=False)
        j = np.tile(np.arange(reduced), len(t))
        t, o, step = np.repeat(t, reduced), np.repeat(o, reduced), np.repeat(k, reduced) * reduced + j
    else:           # `group` threads per output, thread t folds j = t % group, + group, ...
        t = np.repeat(everyone, -(-reduced // group))
        step = np.tile(np.arange(-(-reduced // group)), threads)
        o, j = t // group, t % group + step * group
        keep = j < reduced
        t, o, j, step = t[keep], o[keep], j[keep], step[keep]
    e = table[o, j]
    phases.append(_wavefronts(where, "load", executions, t, (e // per_pass) * (int(step.max()) + 1) + step,
                              _skewed(e % per_pass, skew) * element, element))
    if not by_thread:
        partial = staged_bytes   # partials sit after the staged slice, results after the partials
        result = partial + (warps + 1) * acc
        result_bytes = op.results[0].type.dtype.itemsize
        if group > WARP:
            leaders = np.arange(0, threads, WARP)
            phases.append(_wavefronts(where, "store", executions, leaders, np.zeros_like(leaders),
                                      partial + leaders // WARP * acc, acc))
            w = np.tile(np.arange(group // WARP), threads)
            reader = np.repeat(everyone, group // WARP)
            phases.append(_wavefronts(where, "load", executions, reader, w,
                                      partial + ((reader // group) * (group // WARP) + w) * acc, acc))
        leaders = np.arange(0, threads, group)
        readers = np.arange(min(outputs, threads)) if only_stored else everyone
        phases += [_wavefronts(where, "store", executions, leaders, np.zeros_like(leaders),
                               result + leaders // group * result_bytes, result_bytes),
                   _wavefronts(where, "load", executions, readers, np.zeros_like(readers),
                               result + readers % outputs * result_bytes, result_bytes)]
    return phases


def _conversion(where, tile, source, target, threads, vec, executions, skew) -> list[SharedAccess]:
    """tw::convert_layout (tile.cuh, tile_mma.cuh): to_smem in the source layout, from_smem in the
    target one (an mma accumulator's registers as MmaLayout.elements gives them, a blocked tile's as
    blocked_lanes). A 2-D tile between blocked and an mma layout goes through padded rows instead:
    an mma register pair (two neighbouring columns) is one access, a blocked chunk one per 16 bytes."""
    size = tile.dtype.itemsize
    lanes = {}
    for phase, layout in (("store", source), ("load", target)):
        if layout is None:
            thread, elem, register, v = blocked_lanes(tile.size, threads, vec, writes=phase == "store")
        else:
            (thread, register, elem), v = layout.elements(tile.shape), 2
        lanes[phase] = thread, elem, register, v
    blocked_vec = next((lanes[p][3] for p, layout in (("store", source), ("load", target)) if layout is None), None)
    if not stages_padded_rows(tile.shape, size, blocked_vec):
        return [_wavefronts(where, phase, executions, thread, register, _skewed(elem, skew) * size, size)
                for phase, (thread, elem, register, _) in lanes.items()]
    phases = []
    for phase, (thread, elem, register, v) in lanes.items():
        chunk_bytes = v * size
        pieces = max(chunk_bytes // 16, 1)   # a 32-byte chunk moves as two 16-byte accesses,
        first = register % v == 0             # lanes 4-7 of each quarter-warp taking its second half first
        swap = (thread[first] >> 2) & 1 if pieces == 2 else np.zeros(int(first.sum()), np.int64)
        order = np.arange(pieces)
        address = (padded_row_index(elem[first], tile.shape[1], size) * size)[:, None] + (order ^ swap[:, None]) * 16
        phases.append(_wavefronts(where, phase, executions, np.repeat(thread[first], pieces),
                                  ((register[first] // v)[:, None] * pieces + order).reshape(-1), address.reshape(-1),
                                  min(chunk_bytes, 16)))
    return phases


def _pipelined_mma(op, where, plan, threads, executions) -> list[SharedAccess]:
    """A software-pipelined mma (tile_pipeline.cuh): each staged operand load copies its tile by
    cp.async, thread t taking 16-byte chunks t, t + threads, ... into the swizzled stage ("ldgsts",
    once per execution of the load), or by TMA (tile_tma.cuh: the copy engine writes the stage, no
    thread does); mma.sync then reads its fragments with ldmatrix from the stages ("ldsm"). wgmma
    reads the stages through descriptors, not as shared loads: nothing to count."""
    from ..codegen.layout import swizzled_chunk_offset as chunk_at
    pipeline = plan.pipelined[op]
    staged = {load: transposed for (mma, _), (load, transposed) in pipeline.operands.items() if mma is op}
    phases = []
    everyone = np.arange(threads)
    for load in [] if pipeline.tma else staged:
        rows, cols = pipeline.stage_shape(load)
        per_row, chunks = cols // 8, rows * cols // 8
        q = np.arange(chunks)
        phases.append(_wavefronts((load.name, load.loc.line, load.loc.source_line.strip()), "ldgsts",
                                  executions.get(load, 0), q % threads, q // threads,
                                  chunk_at(q // per_row, q % per_row, rows, cols), 16))
    if op in plan.wgmma:
        return phases
    a, b = op.operands[0].type, op.operands[1].type
    (m, k), n = a.shape, b.shape[1]
    layout = plan.tensor_core[op]
    wtm, wtn = m // layout.wm, n // layout.wn
    warp, lane = everyone // WARP, everyone % WARP
    warp_row, warp_col = warp // layout.wn * wtm, warp % layout.wn * wtn
    a_stage = pipeline.operands.get((op, 0))
    b_load, b_transposed = pipeline.operands[(op, 1)]
    addresses, requests, threads_of = [], [], []

    def ldmatrix(address, lanes):
        addresses.append(address[lanes])
        threads_of.append(everyone[lanes])
        requests.append(np.full(int(lanes.sum()), len(requests)))
    for k0 in range(0, k, 16):
        if a_stage is not None:
            for i in range(wtm // 16):
                ldmatrix(chunk_at(warp_row + i * 16 + lane % 16, k0 // 8 + lane // 16, m, k), lane >= 0)
        fragments = wtn // 8
        for j in range(0, fragments, 2):
            pair, col = j + 1 < fragments, warp_col + j * 8
            if b_transposed:
                at = chunk_at(col + (lane // 16 * 8 if pair else 0) + lane % 8, k0 // 8 + lane // 8 % 2, n, k)
            else:
                at = chunk_at(k0 + lane % 16, col // 8 + (lane // 16 if pair else 0), k, n)
            ldmatrix(at, lane >= 0 if pair else lane < 16)
    phases.append(_wavefronts(where, "ldsm", executions[op], np.concatenate(threads_of), np.concatenate(requests),
                              np.concatenate(addresses), 16))
    return phases


def _generic_mma(op, where, threads, vec, executions, skew) -> list[SharedAccess]:
    """The CUDA-core mma (tile_mma.cuh, generic path): A and B staged with to_smem (B after A, at a
    16-byte boundary), then each result element reads its row of A and column of B, k by k."""
    a, b = op.operands[0].type, op.operands[1].type
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    b_base = (int(skewed(a.size)) * a.dtype.itemsize + 15) // 16 * 16
    phases = []
    for base, t in ((0, a), (b_base, b)):
        thread, elem, register, _ = blocked_lanes(t.size, threads, vec, writes=True)
        phases.append(_wavefronts(where, "store", executions, thread, register,
                                  base + _skewed(elem, skew) * t.dtype.itemsize, t.dtype.itemsize))
    thread, elem, register, _ = blocked_lanes(op.result.type.size, threads, vec, writes=False)
    batch, i, j = elem // (m * n), elem // n % m, elem % n
    kk = np.arange(k)
    thread, request = np.repeat(thread, k), (register[:, None] * k + kk).reshape(-1)
    a_index = ((batch * m + i)[:, None] * k + kk).reshape(-1)
    b_index = ((batch * k)[:, None] + kk).reshape(-1) * n + np.repeat(j, k)
    phases += [_wavefronts(where, "load", executions, thread, request,
                           _skewed(a_index, skew) * a.dtype.itemsize, a.dtype.itemsize),
               _wavefronts(where, "load", executions, thread, request,
                           b_base + _skewed(b_index, skew) * b.dtype.itemsize, b.dtype.itemsize)]
    return phases


def _tensor_core_mma(op, where, plan, threads, vec, executions) -> list[SharedAccess]:
    """The tensor-core mma.sync path (tile_mma.cuh): the operands go to shared memory as whole
    chunks into padded rows (layout.mma_row_stride; A unless it is already in registers, then B),
    then each warp reads its fragments k step by k step: 16-bit ones with ldmatrix ("ldsm": x4, or
    x2 for a last odd B fragment), tfloat32 ones with 8-byte loads of A (two column neighbours of
    rows g and g + 8) and 4-byte loads of B (rows 2t and 2t + 1, column g)."""
    from ..codegen.layout import mma_row_stride
    a, b = op.operands[0].type, op.operands[1].type
    (m, k), n = a.shape, b.shape[1]
    size, tf32 = a.dtype.itemsize, a.dtype is tfloat32
    a_stride, b_stride = mma_row_stride(a.dtype, k, "a"), mma_row_stride(a.dtype, n, "b")
    layout = plan.tensor_core[op]
    in_registers = op in plan.register_a
    b_base = 0 if in_registers else m * a_stride * size
    phases = []
    for base, rows_of, stride, t in ([] if in_registers else [(0, k, a_stride, a)]) + [(b_base, n, b_stride, b)]:
        thread, elem, register, v = blocked_lanes(t.size, threads, vec, writes=True)
        first = register % v == 0   # one access per chunk
        address = base + (elem[first] // rows_of * stride + elem[first] % rows_of) * size
        phases.append(_wavefronts(where, "store", executions, thread[first], register[first] // v, address,
                                  min(v * size, 16)))
    warp, lane = np.arange(threads) // WARP, np.arange(threads) % WARP
    wtm, wtn = m // layout.wm, n // layout.wn
    fragments_n = wtn // 8 if not in_registers else n // 8
    reads = {}  # access bytes -> (addresses, requests, threads) of each fragment read instruction

    def read(width, address, lanes=None):
        lanes = np.ones(threads, bool) if lanes is None else lanes
        addresses, requests, threads_of = reads.setdefault(width, ([], [], []))
        addresses.append(address[lanes])
        threads_of.append(np.arange(threads)[lanes])
        requests.append(np.full(int(lanes.sum()), len(requests)))
    if tf32:
        a_lane, b_lane = lane // 4 * a_stride + lane % 4 * 2, lane % 4 * 2 * b_stride + lane // 4
    else:
        a_lane, b_lane = lane % 16 * a_stride + lane // 16 * 8, lane % 16 * b_stride + lane // 16 * 8
    a_rows = warp // layout.wn * wtm * a_stride + a_lane
    b_rows = b_base // size + (0 if in_registers else warp % layout.wn * wtn) + b_lane
    for k0 in range(0, k, 8 if tf32 else 16):
        for i in range(0 if in_registers else wtm // 16):
            at = a_rows + i * 16 * a_stride + k0
            for row in ((0, 8) if tf32 else (0,)):
                read(8 if tf32 else "ldsm", (at + row * a_stride) * size)
        for j in range(0, fragments_n, 1 if tf32 else 2):
            at = b_rows + k0 * b_stride + j * 8
            if tf32:
                read(4, at * size)
                read(4, (at + b_stride) * size)
            else:
                read("ldsm", at * size, None if j + 1 < fragments_n else lane < 16)
    for width, (addresses, requests, threads_of) in reads.items():
        phases.append(_wavefronts(where, "ldsm" if width == "ldsm" else "load", executions,
                                  np.concatenate(threads_of), np.concatenate(requests), np.concatenate(addresses),
                                  16 if width == "ldsm" else width))
    return phases


# ---- L2 -----------------------------------------------------------------------------------------

def first_wave(fn, blocks: int, arch: str | None = None, sms: int = H100_SMS) -> int:
    """How many of a launch's blocks run at once: all of them where there are no more than SMs, else
    SMs times the blocks one SM holds (the theoretical occupancy of `fn` compiled for `arch`: the
    GPU's, else sm_90; NVRTC, no GPU needed)."""
    if blocks <= sms:
        return blocks
    from ..runtime.device import target_arch
    from ..runtime.launch import build
    per_sm = build(fn, target_arch(arch)).occupancy.blocks_per_sm
    return min(blocks, sms * max(per_sm, 1))


def l2_estimate(trace: Trace, l2_bytes: int = H100_L2_BYTES, resident: int = 1,
                partitions: int = H100_L2_PARTITIONS) -> L2Estimate:
    """The L2 as Nsight Compute measures one launch (`lts__t_sector_hit_rate`): ncu flushes the caches
    before it (--cache-control all, its default), so L2 starts cold; an LRU cache of `l2_bytes`. Each
    block touches its sectors once (its own repeated reads of a sector hit its SM's L1). A read misses
    where the sector is not in L2; a write hits: L2 is write-back and takes a written sector without
    reading DRAM.

    The first `resident` blocks in launch order (x fastest) run at once and in lockstep: their k-th
    memory ops (step k) at about the same time. Of several of them asking for a sector in one step,
    the first misses and the others find the line on its way from DRAM (hits: the launches stagger
    them), unless they are blocks that waited on the same earlier fill: those got their data at the
    same moment, went on together, and ask at once; such a sector misses once per L2 partition, up
    to `partitions` (the H100's L2 is two partitions, each caching what its half of the SMs reads).
    The other blocks follow one after another, finding what the first wave left."""
    blocks = _block_accesses(trace)
    order = sorted(blocks)
    cache = _Lru(l2_bytes // SECTOR)
    wave, rest = order[:resident], order[resident:]
    synchronized = _Groups(wave)
    accesses = misses = writes = together = 0
    written: set[int] = set()
    for step in range(max((len(blocks[b]) for b in wave), default=0)):
        first_requests: dict[int, list[int]] = {}
        for block in wave:
            if step >= len(blocks[block]):
                continue
            for s, w in blocks[block][step]:
                accesses += 1
                writes += w
                if w:
                    written.add(s)
                    cache.touch(s)
                elif s in first_requests:
                    first_requests[s].append(block)
                elif not cache.touch(s):
                    first_requests[s] = [block]
        for requesters in first_requests.values():
            # the first to ask (launch order) and the blocks that go on with it arrive at once
            lead = synchronized.find(requesters[0])
            at_once = sum(synchronized.find(b) == lead for b in requesters)
            misses += min(at_once, partitions)
            together += at_once > 1
        for requesters in first_requests.values():   # they go on together after this step
            synchronized.join(requesters)
    for block in rest:
        for ops in blocks[block]:
            for s, w in ops:
                accesses += 1
                writes += w
                if w:
                    written.add(s)
                misses += not cache.touch(s) and not w
    return L2Estimate(l2_bytes, "launch", accesses, misses, writes, len(written), len(wave), together, partitions)


def _block_accesses(trace: Trace) -> dict[int, list[list[tuple[int, bool]]]]:
    """Linear block index (x fastest) -> per memory op the block executed (its steps, in program
    order), the (sector, is a write) it touches there for the first time: each once per block."""
    per_block: dict[int, list[tuple[np.ndarray, bool]]] = {}
    gx, gy, _ = trace.grid
    bases, base = {}, 0
    for name, info in trace.arrays.items():   # arrays laid out one after another, 256-byte aligned
        bases[name] = base
        base += -(-int(np.prod(info["shape"])) * np.dtype(info["dtype"]).itemsize // 256) * 256
    for event in trace.events:
        if event.array is None:
            continue
        info = trace.arrays[event.array]
        shape, itemsize = tuple(info["shape"]), np.dtype(info["dtype"]).itemsize
        rows = event.status.shape[0]
        active = np.isin(event.status.reshape(rows, -1), TOUCHING)
        flat = event.coords.reshape(rows, -1, len(shape))
        offset = np.ravel_multi_index(tuple(np.moveaxis(flat, -1, 0)), shape, mode="clip") if shape else \
            np.zeros(active.shape, np.int64)
        sectors = (bases[event.array] + offset * itemsize) // SECTOR
        linear = (event.blocks[:, 2] * gy + event.blocks[:, 1]) * gx + event.blocks[:, 0]
        for row in range(rows):
            per_block.setdefault(int(linear[row]), []).append((sectors[row][active[row]], event.op in WRITES))
    result = {}
    for block, ops in per_block.items():
        touched = np.concatenate([s for s, _ in ops])
        is_write = np.concatenate([np.full(len(s), w) for s, w in ops])
        step = np.concatenate([np.full(len(s), k) for k, (s, _) in enumerate(ops)])
        _, first = np.unique(np.stack([touched, is_write]), axis=1, return_index=True)
        first = np.sort(first)
        steps: list[list[tuple[int, bool]]] = [[] for _ in ops]
        for k, s, w in zip(step[first].tolist(), touched[first].tolist(), is_write[first].tolist()):
            steps[k].append((s, w))
        result[block] = steps
    return result


class _Lru:
    """The L2's sectors, least recently used first."""

    def __init__(self, capacity: int):
        self.capacity, self.sectors = capacity, OrderedDict()

    def touch(self, sector: int) -> bool:
        """Use a sector: whether it was there; it is there now (the oldest evicted where full)."""
        if sector in self.sectors:
            self.sectors.move_to_end(sector)
            return True
        self.sectors[sector] = None
        if len(self.sectors) > self.capacity:
            self.sectors.popitem(last=False)
        return False


class _Groups:
    """Blocks that go on together (union-find): those that waited on the same DRAM fill."""

    def __init__(self, blocks):
        self.parent = {b: b for b in blocks}

    def find(self, block: int) -> int:
        while self.parent[block] != block:
            self.parent[block] = self.parent[self.parent[block]]
            block = self.parent[block]
        return block

    def join(self, blocks: list[int]):
        root = self.find(blocks[0])
        for b in blocks[1:]:
            self.parent[self.find(b)] = root
