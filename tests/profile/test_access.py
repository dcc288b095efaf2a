"""The memory-access analysis against hand-computed cases: sectors per request of coalesced and
strided reads, shared-memory wavefronts of a transpose with and without the skew, and the L2 reuse
of a matmul grid in row order and in grouped order."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp import run
from tileworkbench.kernels import row_gather, softmax, transpose
from tileworkbench.profile.access import SECTOR, analyze, analyze_trace, blocked_lanes, l2_estimate

from ..puzzles.solutions import grouped_matmul


@ct.kernel
def copy(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)))


@ct.kernel
def column(x, y, R: ct.Constant[int]):
    j = ct.bid(0)
    ct.store(y, (j, 0), ct.load(x, (0, j), (R, 1)))


@ct.kernel
def permuted(x, y, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.transpose(ct.load(x, (j, i), (T, T))))


@ct.kernel
def row_matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    block = ct.bid(0)
    cols = ct.cdiv(b.shape[1], TN)
    i, j = block // cols, block % cols
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        acc = ct.mma(ct.load(a, (i, k), (TM, TK)), ct.load(b, (k, j), (TK, TN)), acc)
    ct.store(c, (i, j), acc)


def test_blocked_layout_gives_element_e_to_thread_e_over_v_mod_threads():
    thread, element, register, v = blocked_lanes(1024, 128, 4, writes=False)
    assert v == 4 and list(element[:3]) == [0, 1, 2] and list(thread[:9]) == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert thread[512] == 0 and register[512] == 4 and register[513] == 5
    small = blocked_lanes(16, 32, 4, writes=False)
    assert list(small[1]) == list(range(16)) * 2          # replicated: every thread reads
    assert len(blocked_lanes(16, 32, 4, writes=True)[0]) == 16   # only owners write


def test_coalesced_f32_copy_with_one_element_per_thread_is_4_sectors_per_request():
    # 32-element tiles: 32 threads, one 4-byte element each: a warp reads 128 contiguous bytes
    x = np.arange(4096, dtype=np.float32)
    report = analyze(copy, (128,), (x, np.zeros_like(x), 32))
    assert report.threads == 32
    for op in report.global_ops:
        assert (op.requests, op.sectors_per_request, op.efficiency, op.access_bytes) == (128, 4.0, 1.0, 4)
        assert op.block_sectors[(5, 0, 0)] == 4 and op.bytes_moved == 4096 * 4


def test_coalesced_f32_copy_in_16_byte_vectors_is_16_sectors_per_request():
    # 1024-element tiles: 128 threads, two float4 chunks each: a warp's request covers 512 bytes
    x = np.arange(4096, dtype=np.float32)
    report = analyze(copy, (4,), (x, np.zeros_like(x), 1024))
    assert report.threads == 128
    load = report.global_ops[0]
    assert (load.requests, load.sectors_per_request, load.efficiency, load.access_bytes) == (4 * 4 * 2, 16.0, 1.0, 16)
    assert load.warp_requests == [8, 8, 8, 8] and load.warp_sectors == [128] * 4


def test_column_read_of_a_row_major_matrix_is_32_sectors_per_request():
    x = np.random.default_rng(0).random((32, 64), dtype=np.float32)
    report = analyze(column, (64,), (x, np.zeros((64 * 32, 1), np.float32), 32))
    load, store = report.global_ops
    assert (load.requests, load.sectors_per_request, load.efficiency) == (64, 32.0, 4 / SECTOR)
    assert (store.sectors_per_request, store.efficiency) == (4.0, 1.0)   # y's column is contiguous


@pytest.mark.parametrize("kernel", [transpose, permuted], ids=["load_in_f_order", "ct_transpose"])
def test_transpose_through_shared_memory_is_conflict_free_with_the_skew(kernel):
    # 32x32 f32 tile, 128 threads of 8 registers (V = 4). Writes: register r of thread t is element
    # 4t + ..., word 4t + 4t/32 with the skew: banks 4(t%8) + t/8, all distinct; without the skew
    # banks 4t % 32: 4 threads per bank (4 wavefronts). Reads of the transpose: element 4t reads
    # source 128(t%8) + t/8; skewed bank 4(t%8) + t/8 (distinct), unskewed bank t/8 (8 wavefronts).
    x = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    args = (x, np.zeros_like(x), 32)
    trace = run(kernel, (2, 2), args, trace=True)
    fn = kernel.specialize(args)
    skewed = analyze_trace(fn, trace).shared_ops
    plain = analyze_trace(fn, trace, skew=False).shared_ops
    assert [(s.phase, s.requests, s.wavefronts, s.conflicts, s.executions) for s in skewed] == \
        [("store", 32, 32, 0, 4), ("load", 32, 32, 0, 4)]
    assert [(s.phase, s.ways, s.conflicts) for s in plain] == [("store", 4.0, 96), ("load", 8.0, 224)]
    assert np.array_equal(args[1], x.T)


def test_grouped_matmul_order_reuses_l2_better_than_row_order():
    # 256x64 @ 64x256 f32, 32x32 tiles, 64 blocks; per block: A panel 8 KB (256 sectors), B panel
    # 256 sectors, C tile 128 sectors (written: hits, but they take room). With a 40 KB L2 (1280 sectors):
    # row order: A_i stays (reused by the next block), B_j comes back only 8 blocks later (evicted):
    #   read misses = 8 * 256 (A) + 64 * 256 (B) = 18432
    # grouped by 2 rows: A_2g and A_2g+1 stay, each B_j serves two consecutive blocks:
    #   read misses = 8 * 256 (A) + 4 * 8 * 256 (B) = 10240
    rng = np.random.default_rng(0)
    a, b = rng.random((256, 64), dtype=np.float32), rng.random((64, 256), dtype=np.float32)
    estimates = []
    for kernel, extra in ((row_matmul, ()), (grouped_matmul, (2,))):
        c = np.zeros((256, 256), np.float32)
        estimates.append(l2_estimate(run(kernel, (64,), (a, b, c, 32, 32, 16, *extra), trace=True), 40 * 1024))
        np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    row, grouped = estimates
    assert row.accesses == grouped.accesses == 64 * 640 and row.writes == grouped.writes == 64 * 128
    assert (row.misses, grouped.misses) == (18432, 10240)
    assert grouped.dram_bytes < row.dram_bytes and grouped.hit_rate == pytest.approx(1 - 10240 / 40960)
    assert row.dram_bytes == (18432 + 256 * 256 * 4 // SECTOR) * SECTOR   # misses read, C written back once


def test_l2_starts_cold_reads_miss_once_and_writes_hit():
    # a copy: every sector of x is read once (a miss), every sector of y written once (a hit): 50 %
    x = np.arange(4096, dtype=np.float32)
    estimate = l2_estimate(run(copy, (4,), (x, np.zeros_like(x), 1024), trace=True))
    assert (estimate.accesses, estimate.misses, estimate.writes, estimate.hit_rate) == (1024, 512, 512, 0.5)
    # a gather of rows 0, 1, 0, 1: each row's 8 sectors miss on the first read and hit on the second
    table, rows = np.arange(8 * 64, dtype=np.float32).reshape(8, 64), np.array([0, 1, 0, 1], np.int32)
    out = np.zeros((4, 64), np.float32)
    estimate = l2_estimate(run(row_gather, (4,), (table, rows, out, 64), trace=True))
    np.testing.assert_array_equal(out, table[rows])
    assert (estimate.accesses, estimate.misses, estimate.writes) == (4 * 8 + 4 * 8 + 4, 2 * 8 + 1, 4 * 8)


def test_summary_is_plain_numbers_per_op():
    x = np.arange(4096, dtype=np.float32)
    summary = analyze(copy, (4,), (x, np.zeros_like(x), 1024)).summary()
    assert summary["bytes_moved"] == 2 * 4096 * 4 and summary["global_sectors_per_request"] == 16.0
    assert summary["shared_bank_conflicts"] == 0 and summary["dram_bytes_estimate"] == 2 * 4096 * 4
    assert [(o["op"], o["line"]) for o in summary["ops"]] == [("load", 18), ("store", 18)]
