"""Memory-access analysis without a GPU: what the generated code's warps ask of global and shared memory.

The interpreter's trace says which array element every lane of every memory op touched; the code
generator's thread layout (docs/architecture.md, "The CUDA backend: thread layout") says which thread
holds which lane and how wide its accesses are. Together they give, per memory op, what Nsight Compute
measures on the GPU (docs/access.md names the metric behind each number):

- global memory: warp-wide requests, the 32-byte sectors each touches, coalescing efficiency, bytes
  moved per block and in total;
- shared memory: the wavefronts (and so bank conflicts) of the layout changes that go through shared
  memory (permutes and transposes, broadcasts, cat/extract/insert, loads and stores in another order);
- L2: a least-recently-used model of an L2 of the device's size over the blocks in launch order.

    report = analyze(matmul, (64,), (a, b, c, 32, 32, 16))
    report.global_ops[0].sectors_per_request, report.summary()
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..interp import Status, Trace, run

SECTOR = 32              # bytes: the unit L1 and L2 move
WARP = 32
BANKS, BANK_BYTES = 32, 4
H100_L2_BYTES = 50 * 2**20

TOUCHING = (Status.LOADED, Status.STORED, Status.COLLISION)   # lanes that reach memory
WRITES = {"store", "scatter", "store_adv"}
TILE_SPACE = {"load", "store"}          # chunked, vectorized where a chunk allows it
STAGED = {"permute", "broadcast", "cat", "extract", "insert"}  # shape ops that go through shared memory


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
    accesses: int             # sectors each block touches (counted once per block), summed
    misses: int

    @property
    def hits(self) -> int:
        return self.accesses - self.misses

    @property
    def hit_rate(self) -> float:
        return self.hits / self.accesses if self.accesses else 1.0

    @property
    def dram_bytes(self) -> int:
        return self.misses * SECTOR


@dataclass
class AccessReport:
    kernel: str
    grid: tuple[int, int, int]
    threads: int
    vec: int
    global_ops: list[GlobalAccess]
    shared_ops: list[SharedAccess]
    l2: L2Estimate

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
            "ops": [{"line": g.line, "op": g.op, "array": g.array, "requests": g.requests,
                     "sectors_per_request": g.sectors_per_request, "efficiency": g.efficiency,
                     "bytes_moved": g.bytes_moved} for g in self.global_ops]
                   + [{"line": s.line, "op": s.op, "phase": s.phase, "requests": s.requests * s.executions,
                       "wavefronts": s.wavefronts * s.executions, "conflicts": s.conflicts * s.executions}
                      for s in self.shared_ops],
        }


def analyze(kernel, grid, args, *, arch: str | None = None, l2_bytes: int = H100_L2_BYTES) -> AccessReport:
    """Run `kernel` on the interpreter with a trace (NumPy `args` are updated, as by a launch) and
    analyze its accesses under the thread layout the code generator picks for this specialization."""
    from ..arguments import normalize_grid
    trace = run(kernel, normalize_grid(grid), args, trace=True)
    return analyze_trace(kernel.specialize(args), trace, arch=arch, l2_bytes=l2_bytes)


def analyze_trace(fn, trace: Trace, *, arch: str | None = None, l2_bytes: int = H100_L2_BYTES,
                  skew: bool = True) -> AccessReport:
    """The analysis of a trace of `fn` (the IR Function it ran). `skew=False` models shared memory
    without the tile library's skew of one element every 32 (to show what the skew saves)."""
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
            if order is not None and tuple(order) != tuple(range(len(order))):
                shared_ops += _reordered(event, itemsize, threads, vec, order, skew)
        elif event.op in STAGED and op is not None:
            itemsize = op.result.type.dtype.itemsize
            shared_ops += _staged(event, itemsize, threads, vec, skew, trace.grid)
    return AccessReport(fn.name, trace.grid, threads, vec, global_ops, shared_ops,
                        l2_estimate(trace, l2_bytes))


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


# ---- global memory ------------------------------------------------------------------------------

def _global(event, trace, itemsize, threads, tw_vec, order) -> GlobalAccess:
    coords, status = event.coords, event.status
    if order is not None:   # the code moves the tile in the array's axis order (then permutes it)
        nd = len(order)
        axes = (0, *(1 + order.index(d) for d in range(nd)))
        coords, status = coords.transpose(*axes, nd + 1), status.transpose(*axes)
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
    if event.op in TILE_SPACE and v > 1 and tile_shape[-1] % v == 0:
        chunk_bytes = v * itemsize
        alignment = 16 if chunk_bytes % 16 == 0 else 8 if chunk_bytes % 8 == 0 else 4 if chunk_bytes % 4 == 0 else 1
        # lanes are listed element by element, so each chunk's V lanes are adjacent
        whole = lane_active.reshape(rows, -1, v).all(axis=2)
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
    return index + index // 32 if skew else index


def _executions(event, grid) -> int:
    """A shape op that did the same in every block is traced once (for the first block): count it once
    per block of the grid then."""
    return len(event.blocks) if len(event.blocks) > 1 else int(np.prod(grid))


def _phase(event, phase, itemsize, writes_or_reads, skew, executions) -> SharedAccess:
    """Wavefronts of warp-wide shared accesses; writes_or_reads: (thread, register, element index in
    the buffer) per access."""
    thread, register, index = writes_or_reads
    address = _skewed(index, skew) * itemsize
    words_per_access = max(itemsize // BANK_BYTES, 1)
    word = (address // BANK_BYTES)[:, None] + np.arange(words_per_access)
    request = np.repeat((thread // WARP) * (int(register.max(initial=0)) + 1) + register, words_per_access)
    word = word.reshape(-1)
    distinct = np.unique(np.stack([request, word]), axis=1)
    per_bank = np.unique(np.stack([distinct[0], distinct[1] % BANKS]), axis=1, return_counts=True)
    requests, first = np.unique(per_bank[0][0], return_index=True)
    wavefronts = np.maximum.reduceat(per_bank[1], first).sum() if len(first) else 0
    words = np.bincount(distinct[0].astype(np.int64) - distinct[0].min(initial=0)) if distinct.size else np.zeros(0)
    ideal = int(np.ceil(words[words > 0] * BANK_BYTES / (BANKS * BANK_BYTES)).sum())
    return SharedAccess(event.op, event.line, event.source, phase, executions, len(requests),
                        int(wavefronts), ideal)


def _staged(event, itemsize, threads, tw_vec, skew, grid) -> list[SharedAccess]:
    """to_smem of each operand (at its offset in the buffer), then from_smem of the result, whose
    element e reads the buffer at the source the trace recorded for it."""
    shapes = event.operand_shapes or ()
    sizes = [int(np.prod(s)) for s in shapes]
    if event.op == "broadcast" and sizes and sizes[0] == 1:
        return []  # a one-element tile is broadcast in registers
    offsets = np.cumsum([0, *sizes])
    executions = _executions(event, grid)
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
    """A load (store) in another axis order moves the tile in the array's order, then permutes it."""
    tile_shape = event.status.shape[1:]
    nd = len(order)
    memory_shape = tuple(tile_shape[order.index(d)] for d in range(nd))
    # tile element -> its position in the memory-order tile
    position = np.arange(int(np.prod(tile_shape))).reshape(memory_shape).transpose(order).reshape(-1)
    size = position.size
    thread, element, register, _ = blocked_lanes(size, threads, tw_vec, writes=True)
    if event.op == "load":   # write the memory-order tile, read the tile
        write = (thread, register, element)
        t2, e2, r2, _ = blocked_lanes(size, threads, tw_vec, writes=False)
        read = (t2, r2, position[e2])
    else:                    # write the tile, read the memory-order tile
        inverse = np.argsort(position)
        write = (thread, register, element)
        t2, e2, r2, _ = blocked_lanes(size, threads, tw_vec, writes=False)
        read = (t2, r2, inverse[e2])
    executions = len(event.blocks)
    return [_phase(event, "store", itemsize, write, skew, executions),
            _phase(event, "load", itemsize, read, skew, executions)]


# ---- L2 -----------------------------------------------------------------------------------------

def l2_estimate(trace: Trace, l2_bytes: int = H100_L2_BYTES) -> L2Estimate:
    """Blocks in launch order (x fastest), each touching its sectors (every array it reads or writes,
    once per block) in an LRU cache of `l2_bytes`: the misses estimate DRAM traffic. Blocks that run at
    once are taken one after another, so this shows what a block order shares, not exact traffic."""
    per_block: dict[int, list[np.ndarray]] = {}
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
            per_block.setdefault(int(linear[row]), []).append(sectors[row][active[row]])
    cache: OrderedDict[int, None] = OrderedDict()
    capacity = l2_bytes // SECTOR
    accesses = misses = 0
    for block in sorted(per_block):
        touched = np.concatenate(per_block[block])
        _, first = np.unique(touched, return_index=True)
        for s in touched[np.sort(first)].tolist():
            accesses += 1
            if s in cache:
                cache.move_to_end(s)
                continue
            misses += 1
            cache[s] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return L2Estimate(l2_bytes, "launch", accesses, misses)
