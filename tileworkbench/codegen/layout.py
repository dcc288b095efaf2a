"""Layout assignment: which tiles live in a tensor-core accumulator layout instead of `blocked`.

Rule: an mma that runs on tensor cores produces its result in the mma layout of its warp
arrangement; the values that share a C++ variable with it (loop-carried values, `for` and `if`
results) take the same layout; an elementwise op with an operand in an mma layout stays in it; a
constant tile all of whose uses want one layout is built in it. Every other tile is blocked, and
the emitter converts (through shared memory) where an operand's layout is not the one its use
wants.

    %z = constant 0.0 : tile<float32, 128x128>        mma<2x4>  (its one use wants it)
    %acc = for %k ... iter(%c = %z) {                  mma<2x4>
      %a = load %A, ... : tile<bfloat16, 128x32>       blocked   (tensor-core mma takes blocked operands)
      %r = mma %a, %b, %c                              mma<2x4>
      yield %r
    }
    %h = astype %acc : tile<bfloat16, 128x128>         mma<2x4>
    store %C, ..., %h                                  converted to blocked, then stored

When an mma result is reduced along its rows or feeds another mma (attention: Q @ K^T, a row
softmax, then P @ V), every mma takes the warps-over-rows arrangement mma<W x 1>, so a warp holds
whole rows: a row reduction lands in the rows layout mma_rows<W> (no shared memory), a rows tile
broadcasts back along the row in registers, and a 16-bit tile in mma<W x 1> is the next mma's A
operand as it is. A loop-invariant A operand (Q) is converted once, where it is defined.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.core import Function, Op, Value, walk_block
from ..ir.ops import Category, ops_in
from ..ir.types import DType, bfloat16, float16, float32, tfloat32
from ..targets import arch_limits

# ops that work elementwise in any layout
ELEMENTWISE = ops_in(Category.ELEMENTWISE)

MAX_WARPS = 8

# operand dtypes of the tensor-core mma.sync path -> the k of one instruction (tile_mma.cuh mma_format)
MMA_K = {float16: 16, bfloat16: 16, tfloat32: 8}

# How the tile library addresses shared memory: the code generator sizes buffers by these and the
# access analysis (profile/access.py) lays accesses on them; tests/codegen hold them to the headers.
SKEW_PERIOD = 32     # tile.cuh skew(i) = i + i / 32: one element of padding every 32 spreads strides over banks
MMA_ROW_PADDING = 8  # tile_mma.cuh mma_format: 16-bit operand rows are Cols + 8 elements apart (ldmatrix rows on distinct banks)
PADDED_ROW_ELEMENTS = 8  # tile_mma.cuh padded_row_extra: rows staged for a change to or from an mma layout


def mma_row_stride(dtype: DType, cols: int, operand: str) -> int:
    """tile_mma.cuh mma_format a_stride / b_stride: elements between the staged rows of a tensor-core
    mma operand ("a": K columns, "b": N columns). tfloat32 rows are 8 mod 16 words apart for A and
    4 mod 8 for B, so a warp's 8- and 4-byte fragment loads meet no bank twice."""
    if dtype is not tfloat32:
        return cols + MMA_ROW_PADDING
    return cols + 8 + cols % 16 if operand == "a" else cols + 4


def mma_stage_bytes(dtype: DType, a_rows: int, n: int, k: int) -> int:
    """tile_mma.cuh mma_stage_bytes: one operand buffer of a tensor-core mma (a_rows 0: A in registers)."""
    nbytes = (a_rows * mma_row_stride(dtype, k, "a") + k * mma_row_stride(dtype, n, "b")) * dtype.itemsize
    return (nbytes + 127) // 128 * 128


def stages_chunks(itemsize: int, size: int, threads: int, vec: int, step: int, last: int) -> bool:
    """tile.cuh permute: whether a blocked tile of `size` elements permuted with input stride `step`
    along the result's rows (of `last` elements) is staged in whole 16-byte chunks at chunk_slot():
    1- or 2-byte elements in 16-byte chunks, and the result chunks read whole (step 1) or as V
    elements of one XOR key (step a power of two, a multiple of 8 chunks)."""
    v = min(size // threads, vec)
    if itemsize >= 4 or size < threads or v * itemsize != 16 or last % v:
        return False
    return step == 1 or (step % (8 * v) == 0 and step & (step - 1) == 0)


def chunk_shift(step: int) -> int:
    """tile.cuh chunk_shift: log2 of a permute's input stride along the output's rows, at least 3."""
    return max(3, int(step).bit_length() - 1)


def chunk_slot(q, shift: int):
    """tile.cuh chunk_slot: where chunk q of a tile staged in 16-byte chunks sits (ints or NumPy arrays):
    q ^ ((q >> shift) & 7), a permutation inside each 128-byte line."""
    return q ^ ((q >> shift) & 7)


def stages_padded_rows(shape: tuple, itemsize: int, blocked_vec: int | None) -> bool:
    """tile_mma.cuh stages_padded_rows: a 2-D tile of 2- or more-byte elements changing layout between
    blocked (chunks of `blocked_vec`; None: no blocked side) and an mma layout goes through rows
    PADDED_ROW_ELEMENTS longer, a fragment's pair of columns and a blocked chunk moved whole."""
    return len(shape) == 2 and itemsize >= 2 and (blocked_vec is None or shape[1] % blocked_vec == 0)


def padded_row_index(e, cols: int, itemsize: int):
    """Where element e of a (rows, cols) tile staged in padded rows sits (ints or NumPy arrays)."""
    return e // cols * (cols + PADDED_ROW_ELEMENTS) + e % cols


def skewed(i):
    """tile.cuh's skew(): where index `i` of a staged tile sits in shared memory (ints or NumPy arrays)."""
    return i + i // SKEW_PERIOD


def swizzled_chunk_offset(r, k, rows: int, cols: int):
    """tile_pipeline.cuh swizzled::chunk_offset: the byte offset of the 16-byte chunk holding elements
    (r, 8k .. 8k + 7) of a rows x cols 16-bit operand stage. Rows are cut into panels of
    P = min(128, 2 cols) bytes; inside a panel, chunk c of row r sits at chunk c ^ (r P / 128 % (P / 16))."""
    panel = min(128, 2 * cols)
    per_panel = panel // 16
    o = r * panel + k % per_panel * 16
    return k // per_panel * (rows * panel) + (o ^ (((o >> 7) & (per_panel - 1)) << 4))


@dataclass(frozen=True)
class MmaLayout:
    """The accumulator layout of mma.sync m16n8k16 over wm x wn warps (tile_mma.cuh)."""

    wm: int
    wn: int

    @property
    def alias(self) -> str:
        return f"mma_{self.wm}x{self.wn}"

    @property
    def cpp(self) -> str:
        return f"tw::mma_layout<{self.wm}, {self.wn}>"

    def elements(self, shape: tuple[int, int]):
        """(thread, register, element) of every register of an (M, N) tile in this layout, as
        mma_layout::elem computes them: warp w holds the (M / wm) x (N / wn) part at (w / wn, w % wn),
        in 16x8 fragments in row-major order, lane l holding (l / 4 + {0, 8}, 2 (l % 4) + {0, 1})."""
        m, n = shape
        wtm, wtn = m // self.wm, n // self.wn
        fragments_n = wtn // 8
        thread, register = np.divmod(np.arange(m * n), m * n // (32 * self.wm * self.wn))
        warp, lane, f, c = thread // 32, thread % 32, register // 4, register % 4
        row = warp // self.wn * wtm + f // fragments_n * 16 + lane // 4 + c // 2 * 8
        col = warp % self.wn * wtn + f % fragments_n * 8 + lane % 4 * 2 + c % 2
        return thread, register, row * n + col


@dataclass(frozen=True)
class RowLayout:
    """The rows of an mma<wm x 1> accumulator: an (M, 1) or (M,) tile held by the lanes that hold
    each row (tile_mma.cuh mma_rows)."""

    wm: int

    @property
    def alias(self) -> str:
        return f"mma_rows_{self.wm}"

    @property
    def cpp(self) -> str:
        return f"tw::mma_rows<{self.wm}>"


ROW_REDUCTIONS = ops_in(Category.REDUCTION)


@dataclass
class Pipeline:
    """A loop whose mma operand loads are software-pipelined: copied by cp.async into shared-memory
    stages ahead of the iteration that uses them (tile_pipeline.cuh). `loads` are ops of the body."""

    loop: Op
    loads: list
    # (mma, operand position) -> (load, transposed): where each staged operand waits; transposed when
    # the stage holds the (N x K) tile a `k.T`-style operand was loaded as. An A operand absent
    # here comes from registers.
    operands: dict = field(default_factory=dict)
    chains: set = field(default_factory=set)  # reshape/permute ops between a staged load and its mma
    invariant: list = field(default_factory=list)  # loads before the loop staged once (an A operand)
    stages: int = 0  # shared-memory buffers per operand
    in_flight: bool = False  # wgmma accumulating in place, one group left running (cp.async loads run one less ahead)
    tma: bool = False  # the loads copied by TMA into stages guarded by mbarriers (tile_tma.cuh), not cp.async
    gathers: dict = field(default_factory=dict)  # gather Op among `loads` -> its RowGather

    @property
    def ahead(self) -> int:
        """How many iterations ahead the loads run: every stage but the one read now (and, with
        cp.async, the one the wgmma group still running reads: TMA copies are issued after that
        group completes, at the end of the iteration)."""
        return self.stages - 1 - (self.in_flight and not self.tma)

    @property
    def mmas(self) -> list:
        return list(dict.fromkeys(mma for mma, _ in self.operands))

    def wgmma_refusal(self, tma: bool) -> str | None:
        """Why these mmas cannot run as wgmma (None: they can). wgmma takes A staged as loaded
        (K-major) or in registers. With A in registers and stages filled by cp.async, an N-major B of
        several 128-byte panels needs them at most 8 KB apart: panels 16 KB apart (a 128-row stage)
        gave wrong results on the H100 where the same stage read with A staged, or filled by TMA, was
        right, so such loops keep mma.sync unless TMA fills their stages."""
        for m in self.mmas:
            if (m, 0) in self.operands:
                if self.operands[m, 0][1]:
                    return "its A operand is loaded transposed (wgmma reads A K-major)"
                continue
            load, transposed = self.operands[m, 1]
            rows, cols = self.stage_shape(load)
            if not tma and not transposed and cols * 2 > 128 and rows * 128 > 8192:
                return (f"with A in registers and stages filled by cp.async, wgmma is used only where an N-major "
                        f"B stage has at most 64 rows (this one is {rows} x {cols})")
        return None

    @staticmethod
    def stage_shape(load: Op) -> tuple[int, int]:
        """The (rows, columns) a load's stage holds: its tile's last two axes in the array's order
        (a gather of rows: its tile)."""
        if load.name == "gather":
            return load.result.shape
        shape, order = load.result.shape, load.attrs["order"]
        return (shape[-1], shape[-2]) if order[-2:] == (len(order) - 1, len(order) - 2) else shape[-2:]

    @property
    def invariant_bytes(self) -> int:
        """The stages loaded once and the row tables of gathered operands (ROW_TABLE_BYTES a row)."""
        return sum(_stage_bytes(l) for l in self.invariant) + sum(
            row_table_bytes(g.result.shape[0]) for g in self.gathers)

    @property
    def stage_bytes(self) -> int:
        """One stage of every operand, each buffer 1024-byte aligned (tile_pipeline.cuh)."""
        return sum(_stage_bytes(l) for l in self.loads)


def row_table_bytes(rows: int) -> int:
    """Shared memory for a gathered operand's row indices (64-bit each), 1024-byte aligned."""
    return (rows * 8 + 1023) // 1024 * 1024


@dataclass
class RowGather:
    """An mma operand gathered row by row: tile[r, c] = array[rows[r], start + c] (`rows` a 1-d tile
    made before the loop, `start` a scalar of the loop variable and values from outside it), padded
    with `pad` outside the array. Its stages are filled like a load's, 16-byte chunk by chunk, each
    row's address read from a row table written to shared memory once, before the loop."""
    rows: Value
    start: Value
    pad: Value
    unneeded: list  # the ops in the loop that only made its index and padding tiles


def _stage_bytes(load: Op) -> int:
    return (load.result.type.size * load.result.dtype.itemsize + 1023) // 1024 * 1024


@dataclass
class LayoutPlan:
    """Warps per block (None: no tensor-core mma), and the layout of every non-blocked value."""

    warps: int | None
    layouts: dict  # Value -> MmaLayout
    tensor_core: dict  # mma Op -> MmaLayout
    operands: set = None  # results of 2-D loads used only as tensor-core mma operands
    pipelines: dict = field(default_factory=dict)  # for Op -> Pipeline
    staged: dict = field(default_factory=dict)  # load result -> its Pipeline
    wgmma: set = field(default_factory=set)  # mma Ops that run as sm_90a wgmma
    pipelined: dict = field(default_factory=dict)  # mma Op -> the Pipeline staging its operands
    fused: set = field(default_factory=set)  # reshape/permute Ops folded into how an operand is staged
    blocks_per_sm: int = 1  # blocks per SM the registers are capped for (__launch_bounds__)
    why_not: dict = field(default_factory=dict)  # mma Op -> why it missed a faster path (codegen notes)
    register_a: set = field(default_factory=set)  # mma Ops that take their A operand from registers
    hoisted: dict = field(default_factory=dict)  # blocked Value -> layout it is converted to where defined
    unneeded: set = field(default_factory=set)  # Ops whose results only a staged gather read: not emitted
    # a gather's or scatter's index operand made by a broadcast -> the tile it broadcasts, which goes
    # to shared memory as a table read per element (tile_memory.cuh broadcast_index)
    index_tables: dict = field(default_factory=dict)
    # one that is `start + ct.arange(n)`, as it is or broadcast along an axis -> (axis, start): computed
    # from each element's coordinate (tile_memory.cuh affine_index)
    affine_indices: dict = field(default_factory=dict)
    # one made by broadcasting a scalar (`row` in `ct.gather(x, (row, cols))`) -> that scalar: the same
    # index for every element, no tile made (tile_memory.cuh uniform_index)
    uniform_indices: dict = field(default_factory=dict)
    # a gather's or scatter's mask `start + ct.arange(n) < bound` -> (axis, start, bound): each element's
    # bit from its coordinate, a chunk checked at its ends (tile_memory.cuh affine_mask)
    affine_masks: dict = field(default_factory=dict)

    def of(self, v: Value):
        return self.layouts.get(v)


def _mma_shape(op: Op):
    """(M, N, K) when this mma can run on tensor cores (any warp arrangement aside), else None."""
    a, b, acc = op.operands
    if len(a.shape) != 2 or a.dtype not in MMA_K or b.dtype is not a.dtype:
        return None
    if acc.dtype is not float32 or op.result.dtype is not float32:
        return None
    (m, k), n = a.shape, b.shape[1]
    return (m, n, k) if m % 16 == 0 and n % 8 == 0 and k % MMA_K[a.dtype] == 0 else None


def _wanted_warps(m: int, n: int, itemsize: int) -> int:
    """About 2048 accumulator elements (64 float registers) per warp for 16-bit operands, at most
    MAX_WARPS warps; half as many for 4-byte (tfloat32) operands, whose tiles take twice the
    registers on their way to shared memory."""
    warps = 1
    while warps < MAX_WARPS and m * n * itemsize // (warps * 4) >= 2048:
        warps *= 2
    return warps


def _arrangement(m: int, n: int, warps: int) -> MmaLayout | None:
    """The wm x wn split of `warps` with the squarest warp tile (fewest ldmatrix per k step)."""
    best = None
    for wm in (w for w in (1, 2, 4, 8, 16, 32) if w <= warps and warps % w == 0):
        wn = warps // wm
        if m % (16 * wm) or n % (8 * wn):
            continue
        cost = m // wm // 16 + (n // wn + 15) // 16
        if best is None or cost < best[0]:
            best = (cost, MmaLayout(wm, wn))
    return best[1] if best else None


def plan_layouts(fn: Function, threads: int | None = None, arch: str | None = None, *, max_stages: int = 4,
                 blocks_per_sm: int | None = None, tma: bool = True) -> LayoutPlan:
    """Choose the warp count from the tensor-core mmas, find the loops to software-pipeline, then
    propagate layouts to a fixpoint. On sm_90 a pipelined mma of 64 or 128 rows runs as wgmma, its
    stages filled by TMA where the loads allow it (and `tma` does). Broadcast gather and scatter
    indices are read from tables (_index_tables)."""
    plan = _plan_layouts(fn, threads, arch, max_stages=max_stages, blocks_per_sm=blocks_per_sm, tma=tma)
    _index_tables(fn, plan)
    return plan


def _index_tables(fn: Function, plan: LayoutPlan):
    """A gather's or scatter's index operand that is a scalar broadcast, or `start + ct.arange(n)`
    (as it is, or broadcast along an axis), is computed where each element needs it; one made by
    another broadcast used nowhere else is not made: the tile it broadcasts goes to shared memory and
    each element reads its index there. So `a[row, cols]` and outer products of row and column indices
    (`a[rows[:, None], cols[None, :]]`) hold no full index tiles, and a chunk of a thread's elements
    whose indices step along a row is checked and moved as one vector."""
    uses = _use_counts(fn)
    for op in fn.walk():
        if op.name not in ("gather", "scatter") or op.results and op.results[0] in plan.staged:
            continue
        if op.attrs["has_mask"] and plan.of(op.operands[-1]) is None:
            mask = _affine_mask(op.operands[-1])
            if mask is not None:
                plan.affine_masks[op.operands[-1]] = mask
        for v in op.operands[1:1 + op.operands[0].type.ndim]:
            made = v.owner
            if made is None or plan.of(v) is not None:
                continue
            scalar = _splat_of(v) if v.shape else None
            if scalar is not None:
                plan.uniform_indices[v] = scalar
                if uses[v] == 1:
                    plan.unneeded.add(made)
                continue
            if made.name != "broadcast":
                affine = _affine_along(v)
                if affine is not None:
                    plan.affine_indices[v] = affine
                continue
            if uses[v] != 1 or made.operands[0].type.size <= 1:
                continue
            affine = _affine_along(made.operands[0])
            if affine is not None:
                plan.affine_indices[v] = affine
            else:
                plan.index_tables[v] = made.operands[0]
            plan.unneeded.add(made)


def _affine_mask(m: Value):
    """(axis, start, bound) when the mask m is `start + ct.arange(n) < bound` (the arange as it is or
    reshaped, `bound` a scalar broadcast), else None."""
    op = m.owner
    if op is None or op.name != "lt" or op.operands[0].shape != m.shape:
        return None
    affine, bound = _affine_along(op.operands[0]), _splat_of(op.operands[1])
    return None if affine is None or bound is None else (*affine, bound)


def _affine_along(x: Value):
    """(axis, start) when x is `start + ct.arange(n)` (or `ct.arange(n)`: start None) reshaped to have
    n along `axis` only, else None."""
    along = [k for k, d in enumerate(x.shape) if d != 1]
    if len(along) != 1:
        return None
    while x.owner is not None and x.owner.name == "reshape":
        x = x.owner.operands[0]
    add = x.owner
    if add is not None and add.name == "iota":
        return along[0], None
    if add is None or add.name != "add" or len(x.shape) != 1:
        return None
    iota = next((y for y in add.operands if y.owner is not None and y.owner.name == "iota"), None)
    start = next((_splat_of(y) for y in add.operands if y is not iota), None)
    return None if iota is None or start is None else (along[0], start)


def _plan_layouts(fn: Function, threads: int | None, arch: str | None, *, max_stages: int,
                  blocks_per_sm: int | None, tma: bool) -> LayoutPlan:
    shapes = {op: s for op in fn.walk() if op.name == "mma" and (s := _mma_shape(op))}
    why_not = {op: _tensor_core_refusal(op) for op in fn.walk() if op.name == "mma" and op not in shapes}
    coupled = _row_coupled(fn, shapes)
    staged = {op: s for op, s in shapes.items() if op.operands[0].dtype is not tfloat32}
    why_not.update((op, "not pipelined: pipeline stages hold 16-bit operands") for op in shapes
                   if op not in staged and _loop_of(fn, op) is not None)
    pipelines = _pipelines(fn, staged, a_in_registers=coupled, why_not=why_not)
    pipelined = {op for p in pipelines.values() for op in p.mmas}
    wgmma_rows = {shapes[i][0] for i in pipelined} if pipelined else set()
    refusal = _wgmma_refusal(fn, threads, arch, shapes, pipelined, pipelines, wgmma_rows, tma)
    use_wgmma = refusal is None
    if refusal and pipelined and (arch or "").startswith("sm_90"):
        why_not.update((op, f"mma.sync, not wgmma: {refusal}") for op in pipelined)
    rows = not use_wgmma and coupled
    if threads is not None:
        warps = threads // 32 if threads % 32 == 0 else None
    elif use_wgmma:
        warps = wgmma_rows.pop() // 16  # one warpgroup per 64 rows
    elif rows:
        warps = min(MAX_WARPS, min(m for m, _, _ in shapes.values()) // 16)  # 16 rows or more per warp
    else:
        warps = max((_wanted_warps(m, n, op.operands[0].dtype.itemsize) for op, (m, n, _) in shapes.items()),
                    default=None)
    tensor_core = {}
    if warps:
        for op_id, (m, n, _) in shapes.items():
            if use_wgmma or (rows and m % (16 * warps) == 0):
                layout = MmaLayout(warps, 1)
            else:
                layout = _arrangement(m, n, warps)
            if layout is not None:
                tensor_core[op_id] = layout
    hint = occupancy_hint(fn, arch)
    plan = LayoutPlan(warps if tensor_core else None, {}, tensor_core, set(), blocks_per_sm=hint or 1, why_not=why_not)
    if not tensor_core:
        return plan
    for op in fn.walk():
        if op.name == "load" and len(op.result.shape) == 2 and op.attrs["order"] == (0, 1):
            if _mma_operand_only(fn, op.result, tensor_core):
                plan.operands.add(op.result)
    if blocks_per_sm is None:
        blocks_per_sm = hint or (2 if two_blocks_per_sm(fn, plan) else 1)
        if blocks_per_sm > 1 and pipelines and all(_stages(p, arch, blocks_per_sm, max_stages) < 2
                                                   for p in pipelines.values()):
            blocks_per_sm = 1  # staged operands do not fit that many blocks: one block with its pipeline wins
    plan.blocks_per_sm = blocks_per_sm
    for key, pipeline in pipelines.items():
        pipeline.stages = _stages(pipeline, arch, blocks_per_sm, max_stages)
        if pipeline.stages < 2:
            why_not.update((op, f"not pipelined: two stages of its operands ({pipeline.stage_bytes} B each) do not "
                                f"fit the shared memory of {blocks_per_sm} block(s) per SM") for op in pipeline.mmas)
        if pipeline.stages >= 2 and all(op in tensor_core and (tensor_core[op].wn == 1 or (op, 0) in pipeline.operands)
                                        for op in pipeline.mmas):
            plan.pipelines[key] = pipeline
            plan.staged.update((load.result, pipeline) for load in pipeline.loads)
            plan.pipelined.update((mma, pipeline) for mma in pipeline.mmas)
            plan.fused.update(pipeline.chains)
            plan.fused.update(pipeline.invariant)
            plan.unneeded.update(op for gather in pipeline.gathers.values() for op in gather.unneeded)
            if use_wgmma:
                plan.wgmma.update(pipeline.mmas)
                # A lone block per SM leaves its tensor cores idle at each barrier unless a wgmma
                # group stays in flight (measured on the H100: 128x256x64 tiles 488 -> 588 TFLOP/s);
                # with two blocks per SM the other block fills those gaps and the deeper prefetch wins.
                pipeline.in_flight = (blocks_per_sm == 1 and pipeline.stages >= 3
                                      and _accumulates_in_place(pipeline))
                refusal = "the kernel was generated without TMA" if not tma else _tma_refusal(fn, pipeline)
                pipeline.tma = refusal is None
                if refusal:
                    why_not.update((op, f"cp.async, not TMA: {refusal}") for op in pipeline.mmas)
    cheap = _cheap_anywhere(fn)
    changed = True
    while changed:
        changed = False
        for op in fn.walk():
            for value, layout in _implied(plan, op):
                if layout is not None and value not in plan.layouts:
                    plan.layouts[value] = layout
                    changed = True
        for op in fn.walk():  # values cheap to make in any layout take the one all their uses want
            if len(op.results) == 1 and op.result in cheap and op.result not in plan.layouts:
                wants = {wanted_layout(plan, user, v) for user, v in _uses(fn, op.result)}
                if len(wants) == 1 and None not in wants:
                    plan.layouts[op.result] = wants.pop()
                    changed = True
    _registers_as_a(fn, plan)
    _hoist_invariant_conversions(fn, plan)
    return plan


def _mma_operand_only(fn: Function, v: Value, tensor_core: dict) -> bool:
    """Whether every use of v is as an A or B operand of a tensor-core mma, directly or through its
    astype to tfloat32 (float32 data on the tensor cores)."""
    uses = [user for user, _ in _uses(fn, v)]
    return bool(uses) and all(
        (u in tensor_core and v is not u.operands[2])
        or (u.name == "astype" and u.result.dtype is tfloat32 and _mma_operand_only(fn, u.result, tensor_core))
        for u in uses)


def _cheap_anywhere(fn: Function) -> set:
    """Tiles as cheap to make in any layout as in blocked: constants, broadcasts (a splat costs
    nothing; a small tile stretched costs its own staging either way), and elementwise ops of such
    tiles and scalars. A mask built from broadcast index vectors is made in the accumulator layout
    it is applied in, instead of being converted whole."""
    cheap = set()
    for op in fn.walk():
        if len(op.results) != 1 or op.result.is_array or not op.result.shape:
            continue
        if op.name in ("constant", "broadcast") or (
                op.name in ELEMENTWISE and all(not v.shape or v in cheap for v in op.operands)):
            cheap.add(op.result)
    return cheap


def _tensor_core_refusal(op: Op) -> str:
    """Why this mma runs as a loop on CUDA cores."""
    a, b, acc = op.operands
    if len(a.shape) != 2:
        return "CUDA cores: a batched (rank > 2) mma runs as a loop"
    if a.dtype not in MMA_K or b.dtype is not a.dtype:
        return (f"CUDA cores: tensor cores take float16, bfloat16 or tfloat32 operands here, not {a.dtype} @ {b.dtype}"
                + (" (ct.astype both to ct.tfloat32 for tensor cores)" if a.dtype is float32 is b.dtype else ""))
    if acc.dtype is not float32:
        return f"CUDA cores: tensor cores accumulate in float32 here, not {acc.dtype}"
    (m, k), n = a.shape, b.shape[1]
    return f"CUDA cores: {m} x {n} x {k} is not a multiple of 16 x 8 x {MMA_K[a.dtype]}"


def _wgmma_refusal(fn, threads, arch, shapes, pipelined, pipelines, wgmma_rows, tma: bool) -> str | None:
    """Why the pipelined mmas do not run as sm_90 wgmma (None: they do); `tma` whether TMA may fill
    the stages (each pipeline's loads still have to allow it)."""
    if threads is not None:
        return "a thread count was requested"
    if arch is None or not arch.startswith("sm_90"):
        return "wgmma needs sm_90"
    if pipelined != set(shapes):
        return "every tensor-core mma of the kernel must be pipelined"
    for p in pipelines.values():
        if (reason := p.wgmma_refusal(tma and _tma_refusal(fn, p) is None)) is not None:
            return reason
    if len(wgmma_rows) != 1 or not wgmma_rows <= {64, 128}:
        return f"wgmma here takes 64 or 128 rows, not {sorted(wgmma_rows)}"
    if any(shapes[i][1] > 256 for i in shapes):
        return "wgmma takes at most 256 columns"
    return None


def _row_coupled(fn: Function, shapes: dict) -> bool:
    """Whether some tensor-core mma's result, through elementwise ops and loop-carried values,
    is reduced along its rows or is the A operand of another mma."""
    carried = {}  # value -> where it flows: a for's result and body argument, an if's result
    for op in fn.walk():
        if op.name == "for":
            body = op.regions[0]
            for k, result in enumerate(op.results):
                for v in (op.operands[3 + k], body.ops[-1].operands[k]):
                    carried.setdefault(v, []).extend([result, body.args[1 + k]])
        elif op.name == "if":
            for region in op.regions:
                if region.ops and region.ops[-1].name == "yield":
                    for v, result in zip(region.ops[-1].operands, op.results):
                        carried.setdefault(v, []).append(result)
    users = {}
    for op in fn.walk():
        for v in op.operands:
            users.setdefault(v, []).append(op)
    seen, todo = set(), [op.result for op in shapes]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        todo.extend(carried.get(v, []))
        for user in users.get(v, []):
            if user.name in ROW_REDUCTIONS and len(v.shape) == 2 and _reduces_rows(user):
                return True
            if user in shapes and user.operands[0] is v:
                return True
            if user.name in ELEMENTWISE and user.result.shape == v.shape:
                todo.append(user.result)
    return False


def _reduces_rows(op: Op) -> bool:
    """A reduction of a 2-D tile along its last axis only."""
    axes = op.attrs.get("axes", (op.attrs.get("axis"),))
    return len(op.operands) == 1 and tuple(axes) == (1,)


def _loop_of(fn: Function, target: Op):
    """The innermost for/while loop whose body holds `target` (None: not in a loop)."""
    def walk(block, loop):
        for op in block.ops:
            if op is target:
                return loop
            for region in op.regions:
                found = walk(region, op if op.name in ("for", "while") else loop)
                if found is not None:
                    return found
        return None
    return walk(fn.body, None)


def _inside(loop: Op, v: Value) -> bool:
    """Whether v is defined in the loop's body (a body argument or a result of an op in it)."""
    return any(v in region.args or any(v in op.results for op in walk_block(region)) for region in loop.regions)


def _registers_as_a(fn: Function, plan: LayoutPlan):
    """Tensor-core mmas of mma<W x 1> whose A operand is (or can be made, once, outside the
    loop) a tile in that layout read straight from registers. A pipelined mma whose A operand is
    not staged takes it from registers in any case (converted where it is used, if need be)."""
    for op, layout in plan.tensor_core.items():
        a = op.operands[0]
        pipeline = plan.pipelined.get(op)
        if layout.wn != 1 or (pipeline and (op, 0) in pipeline.operands):
            continue
        if plan.of(a) == layout or pipeline:
            plan.register_a.add(op)
        if plan.of(a) == layout:
            continue
        loop = _loop_of(fn, op)
        if plan.of(a) is not None or loop is None or _inside(loop, a) or a.owner is None:
            continue
        uses = list(_uses(fn, a))
        if all(u in plan.tensor_core and plan.tensor_core[u] == layout and u.operands[0] is a
               and a is not u.operands[1] for u, _ in uses):
            plan.hoisted[a] = layout
            plan.register_a.update(u for u, _ in uses)


def _hoist_invariant_conversions(fn: Function, plan: LayoutPlan):
    """A blocked tile made outside a loop whose every use, in loops that do not make it, wants one
    other layout is converted once where it is made instead of in every iteration (causal
    attention's query row indices, compared with each key tile's columns in the accumulator layout)."""
    for op in fn.walk():
        for v in op.results:
            if v.is_array or not v.shape or plan.of(v) is not None or v in plan.hoisted:
                continue
            users = [user for user, _ in _uses(fn, v)]
            wants = {wanted_layout(plan, user, v) for user in users}
            if len(wants) == 1 and None not in wants and all(
                    (loop := _loop_of(fn, user)) is not None and not _inside(loop, v) for user in users):
                plan.hoisted[v] = wants.pop()


def occupancy_hint(fn: Function, arch: str | None) -> int | None:
    """The blocks per SM the kernel's `occupancy` option asks for on `arch` (None: no wish)."""
    occupancy = fn.hints.get("occupancy")
    if hasattr(occupancy, "resolve"):  # a ByTarget: the value for this GPU
        occupancy = occupancy.resolve(arch)
    return occupancy


def two_blocks_per_sm(fn: Function, plan: LayoutPlan) -> bool:
    """Two blocks per SM let one block's loads overlap the other's mma: aimed for (128 registers per
    thread) where the tensor-core accumulators, and mma operands held in registers, take at most
    64 of them."""
    threads = 32 * plan.warps
    held = sum(op.result.type.size for op in fn.walk() if op in plan.tensor_core)
    held += sum(op.operands[0].type.size * op.operands[0].dtype.itemsize // 4 for op in plan.register_a)
    return held <= 64 * threads


def shared_budget(arch: str | None, blocks_per_sm: int) -> int:
    """Shared memory one block may use so that `blocks_per_sm` blocks fit an SM of `arch` (no arch:
    the smallest shared memory of the supported GPUs)."""
    try:
        limits = arch_limits(arch or "sm_86")
    except ValueError:
        limits = arch_limits("sm_86")
    return min(limits.shared_per_block_optin, limits.shared_per_sm // blocks_per_sm - limits.reserved_shared_per_block)


def _stages(pipeline: Pipeline, arch: str | None, blocks_per_sm: int, max_stages: int = 4) -> int:
    """As many stages (2 to `max_stages`) as the shared memory of `blocks_per_sm` blocks allows."""
    return min(max_stages, (shared_budget(arch, blocks_per_sm) - pipeline.invariant_bytes) // pipeline.stage_bytes)


def _panel_fits(shape) -> bool:
    """A 16-bit operand tile the swizzled stage layout can hold: rows of 32, 64 or k * 128 bytes."""
    rows, cols = shape
    return rows % 8 == 0 and (cols * 2 in (32, 64) or cols * 2 % 128 == 0)


def _pipelines(fn: Function, shapes: dict, a_in_registers: bool = False, why_not: dict | None = None) -> dict:
    """Loops whose tensor-core mmas take their B operand (and their A operand, unless
    `a_in_registers` lets it come from registers) straight from loads in the loop body: each load
    indexed by the loop variable and by values from outside the loop, used by such mmas only
    (possibly through a reshape that drops unit axes and a transpose of the last two axes). Those
    loads can be issued iterations ahead."""
    found = {}
    uses = _use_counts(fn)
    for loop in fn.walk():
        if loop.name != "for":
            continue
        body = loop.regions[0]
        iv = body.args[0]
        inside = {r for op in body.ops for r in op.results} | set(body.args)

        def can_run_ahead(load: Op) -> bool:
            if load.name == "gather":  # _row_gather checked its indices
                return load.operands[0] not in inside
            array, *index = load.operands
            if array in inside or any(x is not iv and x in inside and not _scalar_constant(x) for x in index):
                return False
            return _stageable(load)

        pipeline = Pipeline(loop, [])
        for mma in (op for op in body.ops if op in shapes):
            sources = {k: _staged_source(mma.operands[k], body.ops, uses) for k in (0, 1)}
            gathered = _row_gather(mma.operands[0], body, uses, iv, inside) if sources[0] is None else None
            if gathered is not None:
                sources[0] = (gathered[0], False, [])
            if any(src and not can_run_ahead(src[0]) for src in sources.values()):
                sources = {k: None for k in sources}
            if sources[0] is not None and sources[0][1]:  # stages are read with A's K axis contiguous only
                sources[0] = None
                if not a_in_registers:
                    if why_not is not None:
                        why_not[mma] = "not pipelined: its A operand is loaded transposed (a staged A is read K-major)"
                    continue
            if sources[0] is None and sources[1] is not None:  # an A operand loaded before the loop: staged once
                outside = [op for op in fn.walk() if not any(r is not None and _inside(loop, r) for r in op.results)]
                sources[0] = _staged_source(mma.operands[0], outside, uses)
                if sources[0] is not None and sources[0][1]:  # stages are read with A's K axis contiguous only
                    sources[0] = None
                    if not a_in_registers:
                        if why_not is not None:
                            why_not[mma] = ("not pipelined: its A operand, loaded before the loop, is transposed "
                                            "(a staged A is read K-major)")
                        continue
                if sources[0] is not None and not _stageable(sources[0][0]):
                    sources[0] = None
                if sources[0] is not None:
                    pipeline.invariant.append(sources[0][0])
            if sources[1] is None or (sources[0] is None and not a_in_registers):
                if why_not is not None:
                    k = 1 if sources[1] is None else 0
                    why_not[mma] = (f"not pipelined: its {'AB'[k]} operand "
                                    f"{_unstageable(mma.operands[k], body, uses, iv, inside)}")
                continue
            for k, src in sources.items():
                if src is not None:
                    load, transposed, chain = src
                    pipeline.operands[mma, k] = (load, transposed)
                    pipeline.chains.update(chain)
            if gathered is not None and (mma, 0) in pipeline.operands:
                pipeline.gathers[gathered[0]] = gathered[1]
        loads = list(dict.fromkeys(load for load, _ in pipeline.operands.values() if load in body.ops))
        if loads:
            pipeline.loads = sorted(loads, key=body.ops.index)
            found[loop] = pipeline
    return found


# padding modes whose value is the zero TMA fills elements outside the array with
TMA_PADDING = ("ZERO", "UNDETERMINED")


def _tma_refusal(fn: Function, pipeline: Pipeline) -> str | None:
    """Why the pipeline's loads cannot be copied by TMA (None: they can). The host encodes a tensor
    map per load for an array argument of up to 5 axes; a box has at most 256 rows."""
    for load in pipeline.loads:
        array, name = load.operands[0], load.operands[0].name or "an array"
        if load.name == "gather":
            return f"the rows of `{name}` are gathered (a tensor copy moves boxes)"
        if array not in fn.body.args:
            return f"`{name}` is not a kernel argument (tensor maps are made for arguments)"
        if load.attrs["padding"].name not in TMA_PADDING:
            return f"the load of `{name}` pads with {load.attrs['padding'].name} (TMA fills with zeros)"
        if array.type.ndim > 5:
            return f"`{name}` has {array.type.ndim} axes (a tensor map at most 5)"
        rows, _ = Pipeline.stage_shape(load)
        if rows > 256:
            return f"the load of `{name}` has {rows} rows (a TMA box at most 256)"
    return None


def _unstageable(v: Value, body, uses: dict, iv: Value, inside: set) -> str:
    """Why the mma operand v cannot be copied ahead into pipeline stages."""
    while v.owner is not None and v.owner in body.ops and v.owner.name in ("reshape", "permute"):
        if uses[v] != 1:
            return "is also used elsewhere (a staged tile feeds the mma only)"
        v = v.owner.operands[0]
    load = v.owner
    if load is None or load not in body.ops or load.name != "load":
        what = "a gather" if load is not None and load.name == "gather" else "computed"
        return f"is {what} in the loop, not a tile load (ct.load) the loop can issue ahead"
    array, *index = load.operands
    if array in inside or any(x is not iv and x in inside and not _scalar_constant(x) for x in index):
        return "is loaded at an index computed in the loop body (it must depend on the loop variable only)"
    if uses[v] != 1:
        return "is also used elsewhere (a staged tile feeds the mma only)"
    rows, cols = Pipeline.stage_shape(load)
    return (f"tile ({rows} x {cols}, rows of {cols * load.result.dtype.itemsize} bytes) is not one the swizzled "
            f"stages hold (rows of 32, 64 or a multiple of 128 bytes, unit leading axes)")


def _splat_of(v: Value):
    """The scalar a tile made by reshapes and broadcasts of one scalar holds (None: not such a tile)."""
    while v.shape and v.owner is not None and v.owner.name in ("reshape", "broadcast"):
        v = v.owner.operands[0]
    return None if v.shape else v


def _stretched(v: Value, axis: int):
    """The 1-d tile that reshapes and broadcasts of it stretch along `axis` of v's 2-d shape, and
    those ops (None: v is not made so)."""
    ops = []
    while v.owner is not None and v.owner.name in ("reshape", "broadcast") and len(v.shape) == 2:
        ops.append(v.owner)
        v = v.owner.operands[0]
    if len(_squeezed(v.shape)) != 1 or not ops or ops[-1].name != "reshape":
        return None
    made = ops[-1].result.shape   # the 1-d tile as a column (n, 1) or a row (1, n)
    return (v, ops) if made[1 - axis] == 1 and made[axis] == v.shape[0] else None


def _affine_scalar(v: Value, iv: Value, inside: set) -> bool:
    """Whether the scalar v is made from the loop variable, constants and values from outside the
    loop by integer + - * only (so it can be computed for an iteration ahead)."""
    if v is iv or v not in inside or _scalar_constant(v):
        return not v.shape
    op = v.owner
    return (op is not None and op.name in ("add", "sub", "mul") and not v.shape
            and all(_affine_scalar(x, iv, inside) for x in op.operands))


def _row_gather(v: Value, body, uses: dict, iv: Value, inside: set):
    """(gather, RowGather) when the mma operand v is `ct.gather(a, (rows[:, None], cols[None, :]))` of
    a 2-d 16-bit array, unmasked, where `rows` is made before the loop and `cols` is
    `start + ct.arange(C)` with `start` computable ahead (_affine_scalar); else None."""
    gather = v.owner
    if gather is None or gather.name != "gather" or gather not in body.ops or uses[v] != 1:
        return None
    array, *rest = gather.operands
    if array.type.ndim != 2 or gather.attrs["has_mask"] or v.dtype.itemsize != 2 or not _panel_fits(v.shape):
        return None
    row_index, col_index, pad_tile = rest
    rows, cols, pad = _stretched(row_index, 0), _stretched(col_index, 1), _splat_of(pad_tile)
    if rows is None or cols is None or pad is None or not _scalar_constant(pad) or rows[0] in inside:
        return None
    col_ops, cols = cols[1], cols[0]
    add = cols.owner
    if add is None or add.name != "add" or add not in body.ops:
        return None
    iota = next((x for x in add.operands if x.owner is not None and x.owner.name == "iota"), None)
    start = next((_splat_of(x) for x in add.operands if x is not iota), None)
    if iota is None or start is None or not _affine_scalar(start, iv, inside):
        return None
    made = [*rows[1], *col_ops, add, iota.owner]
    unneeded = _only_for(gather, made + [o for o in body.ops if o.results and _splat_of(o.results[0]) is not None],
                         uses)
    return gather, RowGather(rows[0], start, pad, unneeded)


def _only_for(consumer: Op, candidates: list, uses: dict) -> list:
    """The candidate ops every use of whose result is by `consumer` or by another such op."""
    chosen = set()
    changed = True
    while changed:
        changed = False
        for op in candidates:
            if op in chosen or not op.results:
                continue
            users = [u for u in _users_among(op.results[0], candidates + [consumer])]
            if len(users) == uses.get(op.results[0], 0) and all(u is consumer or u in chosen for u in users):
                chosen.add(op)
                changed = True
    return [op for op in candidates if op in chosen]


def _users_among(v: Value, ops: list) -> list:
    return [op for op in ops for x in op.operands if x is v]


def _stageable(load: Op) -> bool:
    """A tile of shape (1, ..., 1, R, C) whose (R, C) the swizzled stage layout holds."""
    shape, order = load.result.shape, load.attrs["order"]
    n = len(shape)
    if any(d != 1 for d in shape[:-2]) or order[:-2] != tuple(range(n - 2)):
        return False
    return _panel_fits(Pipeline.stage_shape(load))


def _staged_source(v: Value, ops, uses: dict):
    """(load, transposed, chain ops) when the mma operand v is a load among `ops`, possibly
    reshaped (unit axes dropped) and transposed (last two axes swapped), each step used once."""
    chain, transposed = [], False
    while v.owner is not None and v.owner in ops and v.owner.name in ("reshape", "permute") and uses[v] == 1:
        op, (x,) = v.owner, v.owner.operands
        if op.name == "reshape" and not (_squeezed(x.shape) == _squeezed(v.shape) and len(_squeezed(v.shape)) == 2
                                         and x.shape[-2:] == v.shape[-2:]):
            return None
        if op.name == "permute":
            n = len(v.shape)
            if op.attrs["axes"] != tuple(range(n - 2)) + (n - 1, n - 2):
                return None
            transposed = not transposed
        chain.append(op)
        v = x
    load = v.owner
    if load is None or load not in ops or load.name != "load" or uses[v] != 1:
        return None
    order = load.attrs["order"]
    if order[-2:] == (len(order) - 1, len(order) - 2):
        transposed = not transposed
    return load, transposed, chain


def _scalar_constant(v: Value) -> bool:
    return v.owner is not None and v.owner.name == "constant" and not v.shape


def _squeezed(shape) -> tuple:
    return tuple(d for d in shape if d != 1)


def _use_counts(fn: Function) -> dict:
    counts = {}
    for op in fn.walk():
        for v in op.operands:
            counts[v] = counts.get(v, 0) + 1
    return counts


def _accumulates_in_place(pipeline: Pipeline) -> bool:
    """One mma in the loop, accumulating into a loop-carried value and yielding the sum back to it
    with no other use: it can update the accumulator registers in place."""
    body = pipeline.loop.regions[0]
    mmas = pipeline.mmas
    if len(mmas) != 1:
        return False
    mma = mmas[0]
    yielded = body.ops[-1].operands if body.ops and body.ops[-1].name == "yield" else []
    carried = body.args[1:]
    uses = [op for op in body.ops for v in op.operands if v is mma.result]
    return (any(mma.operands[2] is arg and k < len(yielded) and yielded[k] is mma.result
                for k, arg in enumerate(carried))
            and len(uses) == 1 and uses[0].name == "yield"
            and sum(1 for op in body.ops for v in op.operands if v is mma.operands[2]) == 1)


def _implied(plan: LayoutPlan, op: Op):
    """(value, layout) pairs that follow from the layouts already known."""
    if op in plan.tensor_core:
        yield op.result, plan.tensor_core[op]
    elif op.name in ELEMENTWISE and op.result.shape:
        yield op.result, next((plan.of(v) for v in op.operands if plan.of(v)), None)
    elif op.name in ROW_REDUCTIONS and len(op.operands) == 1 and _reduces_rows(op):
        layout = plan.of(op.operands[0])
        if isinstance(layout, MmaLayout) and layout.wn == 1:
            yield op.result, RowLayout(layout.wm)
    elif op.name == "broadcast" and isinstance(plan.of(op.operands[0]), RowLayout):
        m, shape = op.operands[0].shape[0], op.result.shape
        if len(shape) == 2 and shape[0] == m and shape[1] % 8 == 0:
            yield op.result, MmaLayout(plan.of(op.operands[0]).wm, 1)
    elif op.name == "reshape" and isinstance(plan.of(op.operands[0]), RowLayout):
        if op.result.shape in ((op.operands[0].shape[0],), (op.operands[0].shape[0], 1)):
            yield op.result, plan.of(op.operands[0])
    elif op.name == "for":
        body = op.regions[0]
        yielded = body.ops[-1].operands
        for k, result in enumerate(op.results):
            layout = plan.of(op.operands[3 + k]) or plan.of(yielded[k])
            yield result, layout
            yield body.args[1 + k], layout
    elif op.name == "if":
        for k, result in enumerate(op.results):
            yield result, next((plan.of(r.ops[-1].operands[k]) for r in op.regions if plan.of(r.ops[-1].operands[k])),
                               None)


def _uses(fn: Function, value: Value):
    """(user op, the enclosing op for a yield) for each use of value."""
    def walk(block, parent):
        for op in block.ops:
            if any(v is value for v in op.operands):
                yield (parent if op.name == "yield" else op), value
            for region in op.regions:
                yield from walk(region, op)
    yield from walk(fn.body, None)


def wanted_layout(plan: LayoutPlan, op: Op, operand: Value):
    """The layout `op` takes `operand` in (None: blocked). For a for/if, the one of its results."""
    if op in plan.tensor_core:
        if operand is op.operands[2] or (op in plan.register_a and operand is op.operands[0]):
            return plan.tensor_core[op]
        return None
    if op.name in ELEMENTWISE and op.result.shape:
        return plan.of(op.result)
    if op.name in ROW_REDUCTIONS and isinstance(plan.of(op.results[0]), RowLayout):  # (a tuple: several results)
        return MmaLayout(plan.of(op.result).wm, 1)
    if op.name == "broadcast" and isinstance(plan.of(op.result), MmaLayout) and operand.type.size > 1:
        return RowLayout(plan.of(op.result).wm) if plan.of(op.result).wn == 1 and operand.shape[-1] == 1 else None
    if op.name == "reshape" and isinstance(plan.of(op.result), RowLayout):
        return plan.of(op.result)
    if op.name == "for":
        k = next((k for k, v in enumerate(op.operands[3:]) if v is operand), None)
        if k is None:  # a value yielded by the body
            k = next(k for k, v in enumerate(op.regions[0].ops[-1].operands) if v is operand)
        return plan.of(op.results[k])
    if op.name == "if":
        k = next((k for r in op.regions for k, v in enumerate(r.ops[-1].operands) if v is operand), None)
        return plan.of(op.results[k]) if k is not None else None
    return None

