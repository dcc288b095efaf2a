"""What the code generator does for row kernels (layer norm and its backward pass: row statistics,
16-bit rows with ragged edges, a spin lock around a shared accumulator), compiled offline for sm_80
and sm_90."""
import re

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.codegen import generate
from tileworkbench.kernels import layernorm, softmax

from ..gpu.cases import CASES
from .test_compile import _nvrtc_missing

runtime = pytest.importorskip("tileworkbench.runtime.launch")
pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
ARCHS = ["sm_80", "sm_90"]
BF16 = ct.bfloat16.numpy


def _build(case_id: str, arch: str):
    case = next(c for c in CASES if c.id == case_id)
    return runtime.build(case.kernel.specialize(case.args()), arch)


def _layernorm(rows=8, cols=4096):
    x, w = np.zeros((rows, cols), BF16), np.zeros(cols, BF16)
    return layernorm.specialize((x, w, w, x, cols))


@ct.kernel
def _scaled_rows(x, w, y, N: ct.Constant[int]):
    row = ct.load(x, (ct.bid(0), 0), (1, N))
    ct.store(y, (ct.bid(0), 0), row * ct.load(w, (0,), (N,)))  # (1, N) * (N,)


def test_a_broadcast_that_stretches_nothing_is_not_emitted():
    """(N,) weights against a (1, N) row: the reshape to (1, N) is the whole broadcast, so the
    weights do not go through shared memory."""
    x, w = np.zeros((4, 1024), BF16), np.zeros(1024, BF16)
    fn = _scaled_rows.specialize((x, w, x, 1024))
    assert [op.name for op in fn.walk() if op.name in ("reshape", "broadcast")] == ["reshape"]
    assert generate(fn, arch="sm_90").smem_bytes == 0


def test_the_weights_load_above_the_reductions_so_their_latency_overlaps_the_statistics():
    source = generate(_layernorm(), arch="sm_90").source
    first_sum = source.index("tw::sum<")
    assert source.index("tw::load<tw::shape<4096>>(w") < first_sum
    assert source.index("tw::load<tw::shape<4096>>(b") < first_sum


@pytest.mark.parametrize("arch", ARCHS)
def test_ordered_atomics_carry_their_order_on_the_instruction(arch):
    """The spin lock's acquire CAS and release exchange are atom.acquire / atom.release, with no
    sequentially consistent fence (fence.sc waits for every earlier store to reach every partition)."""
    compiled = _build("atomic-spin-lock-accumulate", arch)
    assert re.search(r"atom\.cas\.acquire\.gpu", compiled.asm["ptx"])
    assert re.search(r"atom\.exch\.release\.gpu", compiled.asm["ptx"])
    assert re.search(r"atom\.add\.acq_rel\.gpu", compiled.asm["ptx"])  # ct.atomic_add's default order
    assert not re.search(r"fence\.sc|membar\.gl", compiled.asm["ptx"])


@pytest.mark.parametrize("case_id", ["atomic-add-release-float16", "atomic-cas-acq_rel-float32",
                                     "atomic-xor-acquire-int32", "atomic-min-release-uint64"])
def test_every_ordered_atomic_compiles_without_a_sequentially_consistent_fence(case_id):
    compiled = _build(case_id, "sm_90")
    assert not re.search(r"fence\.sc|membar\.gl", compiled.asm["ptx"])


def test_an_atomic_whose_old_values_go_unused_waits_for_nothing():
    """The release exchange and the counter's add are statements: no thread reads their old values
    back (no shared-memory broadcast, no barrier after them)."""
    compiled = _build("atomic-spin-lock-accumulate", "sm_90")
    statements = [line.strip() for line in compiled.asm["cuda"].splitlines()]
    assert ("tw::atomic_rmw<tw::atomic_kind::xchg, tw::memory_order::release, tw::memory_scope::device, false>"
            "(lock, tw::make_scalar<int32_t>(0), tw::make_scalar<int32_t>(0));") in statements
    assert any(s.startswith("tw::atomic_rmw<tw::atomic_kind::add, tw::memory_order::acq_rel, "
                            "tw::memory_scope::device, false>(counter,") for s in statements)


@ct.kernel
def _square(x, y):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (128,)) ** 2)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_square_is_one_multiply_not_the_pow_routine(arch):
    x = np.zeros(256, np.float32)
    compiled = runtime.build(_square.specialize((x, x)), arch)
    arithmetic = set(re.findall(r"^\s+((?:add|sub|mul|fma|rcp|cvt\.rni|lg2|ex2)\S*f32)", compiled.asm["ptx"], re.M))
    assert arithmetic == {"mul.f32"}  # powf: a logarithm and an exponential in extended precision


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("case_id", ["ragged-16-bit-rows-bfloat16", "copy-ragged-bfloat16"])
def test_ragged_16_bit_rows_keep_their_chunks_in_registers(arch, case_id):
    """The element-by-element path at the edges loops over a chunk without putting it in local
    memory, and the chunks inside the array still move as 16-byte vectors."""
    compiled = _build(case_id, arch)
    resources = compiled.resources
    assert resources.local_bytes == 0 and not resources.spill_stores
    assert re.search(r"ld\.global(\.nc)?\.v4\.(u32|b32)", compiled.asm["ptx"])
    assert re.search(r"st\.global\.v4\.(u32|b32)", compiled.asm["ptx"])


# (shape, reduced axes, threads, TW_VEC): folded into several rows, into one row (the result), over two
# leading axes, and not at all: a trailing axis reduced, one chunk per thread, chunks on distinct outputs
FOLDS = [((32, 1024), (0,), 512, 8), ((8, 2048), (0,), 512, 4), ((4, 8, 256), (0, 1), 512, 4),
         ((1, 32, 1024), (0, 1), 512, 8), ((512, 128), (0,), 512, 4), ((32, 1024), (1,), 512, 8),
         ((16, 64), (0,), 256, 4), ((2, 16384), (0,), 512, 4), ((64, 64), (0,), 128, 8)]


@pytest.mark.parametrize("arch", ARCHS)
def test_the_folded_reduction_rule_is_the_tile_librarys(arch):
    """codegen.cuda.folded_reduction (the shared memory the kernel asks for, the access model) and
    tile_reduce.cuh's folded_chunks (what the kernel does) fold the same chunks."""
    from tileworkbench.codegen.cuda import folded_reduction
    from tileworkbench.runtime.nvrtc import compile_cuda
    by_config = {}
    for shape, axes, threads, vec in FOLDS:
        folded = folded_reduction(shape, axes, threads, vec)
        chunk = min(vec, max(1, int(np.prod(shape)) // threads))
        chunks = 0 if folded is None else folded[0] * folded[1] // (threads * chunk)
        kept = ", ".join("1" if d in axes else str(n) for d, n in enumerate(shape))
        by_config.setdefault((threads, vec), []).append(
            f"static_assert(tw::folded_chunks<tw::shape<{', '.join(map(str, shape))}>, tw::shape<{kept}>>() == "
            f"{chunks}, \"{shape} over {axes}\");")
    assert folded_reduction((8, 2048), (0,), 512, 4) == (1, 2048)
    assert folded_reduction((32, 1024), (0,), 512, 8) == (4, 1024)
    assert folded_reduction((32, 1024), (1,), 512, 8) is None
    for (threads, vec), asserts in by_config.items():
        source = "\n".join([f"#define TW_THREADS {threads}", f"#define TW_VEC {vec}",
                            "#include <tileworkbench/tile.cuh>", *asserts])
        compile_cuda(source, arch=arch, include_paths=(str(runtime.INCLUDE_DIR), *runtime.cuda_include_dirs()))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_weight_gradient_column_sum_stages_only_its_folded_rows(arch):
    """The final reduction of a LayerNorm's partial weight gradients, a (32, 1024) float32 column sum
    into bfloat16 on 512 threads: each thread folds its 8 chunks in registers, so one pass stages a
    (4, 1024) tile (16 KB for the sum, where the whole tile took 128 KB in two passes)."""
    compiled = _build("leading-axes-reductions-32x1x1024-bfloat16", arch)
    assert "tw::sum<tw::shape<1, 1, 1024>, 1>(" in compiled.asm["cuda"]
    assert compiled.dynamic_shared_bytes < 48 * 1024  # the largest: argmax's folded (value, index) pairs, 33 KB
    assert not compiled.resources.spill_stores




def test_accumulators_beyond_half_the_registers_of_512_threads_spread_over_1024():
    """Two (32, 1024) float32 accumulators summed from loads (a LayerNorm's partial weight gradients):
    at 512 threads they alone fill a thread's 128 registers; on 1024 threads each holds half as many,
    and each load stays below the add before it rather than held across it, so fewer bytes spill."""
    case = next(c for c in CASES if c.id == "summed-partials-32x1024")
    fn = case.kernel.specialize(case.args())
    generated = generate(fn, arch="sm_90")
    assert generated.threads == 1024
    body = generated.source[generated.source.index("for (int32_t"):]
    assert body.index("tw::load<tw::shape<32, 1024>>(db") > body.index("acc_w_1 +")
    assert runtime.build(fn, "sm_90").resources.spill_stores < \
        runtime.build(fn, "sm_90", threads=512).resources.spill_stores


def test_a_load_moves_above_the_work_before_it_only_when_it_takes_few_of_a_threads_registers():
    """Layer norm's (4096,) bfloat16 weights: 2 registers a thread on 1024 threads, moved above the
    row's statistics; 64 of 255 on 32 threads, left below them."""
    from tileworkbench.codegen.cuda import _loads_early
    ops = _layernorm().body.ops
    for threads, moved in ((1024, True), (32, False)):
        order = [op.name for op in _loads_early(ops, threads)]
        assert (order.index("load", order.index("load") + 1) < order.index("sum")) == moved


def test_rows_off_16_byte_boundaries_move_as_16_byte_vectors_shifted_into_place():
    """Rows of 1001 bf16 elements start most chunks off a 16-byte boundary: a whole chunk is read as the
    two aligned vectors that hold it and funnel-shifted into place, and written as the aligned vector
    that starts inside it, completed with the next lane's first bytes (a warp shuffle)."""
    compiled = _build("odd-rows-bfloat16-to-bfloat16", "sm_90")
    ptx = compiled.asm["ptx"]
    assert re.search(r"ld\.global\.nc\.v4\.(u32|b32)", ptx) and re.search(r"st\.global\.v4\.(u32|b32)", ptx)  # (read-only cache kept)
    assert re.search(r"shf\.r\.wrap\.b32", ptx) and re.search(r"shf\.l\.wrap\.b32", ptx)
    assert re.search(r"shfl\.sync\.down\.b32", ptx)
    assert compiled.local_bytes == 0


def test_a_kernel_without_tensor_cores_asks_for_the_blocks_its_registers_kept_out():
    """Left free, ptxas gives a 4096-wide bf16 row softmax on 256 threads more registers than six
    blocks per SM allow; compiled again asking for the blocks that do not spill, it holds six."""
    x = np.zeros((4, 4096), BF16)
    compiled = runtime.build(softmax.specialize((x, x, 4096)), "sm_90")
    assert "__launch_bounds__(256, 6)" in compiled.asm["cuda"]
    assert compiled.occupancy.blocks_per_sm == 6 and compiled.local_bytes == 0


def test_the_blocks_asked_for_never_cost_spills():
    """A 16K-wide float32 row softmax (IEEE division) spills at two blocks of 512 threads: it keeps the
    free compile's registers and one block per SM rather than spill."""
    x = np.zeros((4, 16384), np.float32)
    compiled = runtime.build(softmax.specialize((x, x, 16384)), "sm_90")
    assert "__launch_bounds__(512)" in compiled.asm["cuda"]
    assert compiled.local_bytes == 0 and compiled.occupancy.blocks_per_sm == 1
