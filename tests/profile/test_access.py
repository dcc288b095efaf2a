"""The memory-access analysis against hand-computed cases: sectors per request of coalesced and
strided reads, shared-memory wavefronts of a transpose with and without the skew, and the L2 reuse
of a matmul grid in row order and in grouped order."""
import re

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.kernels import matmul, row_gather, softmax, transpose
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


@ct.kernel
def affine_gather(x, y, start, TILE: ct.Constant[int]):
    i = start + ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(y, i, ct.gather(x, i))



def test_a_gather_and_scatter_of_adjacent_aligned_elements_move_16_byte_vectors_like_a_copy():
    x = np.arange(4096, dtype=np.float32)
    report = analyze(affine_gather, (4,), (x, np.zeros_like(x), 0, 1024))
    for op in report.global_ops:
        assert (op.requests, op.sectors_per_request, op.efficiency, op.access_bytes) == (4 * 4 * 2, 16.0, 1.0, 16)


def test_a_gather_of_adjacent_but_unaligned_elements_moves_them_one_by_one():
    x = np.arange(4096 + 1, dtype=np.float32)
    report = analyze(affine_gather, (4,), (x, np.zeros_like(x), 1, 1024))
    gather = report.global_ops[0]
    assert gather.access_bytes == 4 and gather.requests == 4 * 4 * 8


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
    trace = interpret(kernel, (2, 2), args, trace=True)
    fn = kernel.specialize(args)
    skewed = analyze_trace(fn, trace).shared_ops
    plain = analyze_trace(fn, trace, skew=False).shared_ops
    assert [(s.phase, s.requests, s.wavefronts, s.conflicts, s.executions) for s in skewed] == \
        [("store", 32, 32, 0, 4), ("load", 32, 32, 0, 4)]
    assert [(s.phase, s.ways, s.conflicts) for s in plain] == [("store", 4.0, 96), ("load", 8.0, 224)]
    assert np.array_equal(args[1], x.T)


@ct.kernel
def swap_leading(x, y, T: ct.Constant[int], C: ct.Constant[int]):
    ct.store(y, (0, 0, 0), ct.permute(ct.load(x, (0, 0, 0), (T, T, C)), (1, 0, 2)))


@pytest.mark.parametrize("dtype", [np.float16, np.int8])
def test_16_bit_and_8_bit_transposes_store_whole_16_byte_chunks_and_read_without_conflicts(dtype):
    # f16 64x64 on 256 threads (two 8-element chunks each), int8 128x128 on 512 threads (two 16-element
    # chunks): rows of 8 chunks. Each chunk is one 16-byte store, a warp's 32 chunks fill 512 contiguous
    # bytes of lines whose chunks are permuted: 4 wavefronts, the ideal. The transposed read: lane l of
    # a warp reads element i of result chunk l, at input row V c + i, c = l % (T / V); the XOR key of a
    # chunk is its row / V, so the chunks V rows apart sit in distinct slots of their lines: one
    # wavefront. With the skew, 2-byte stores of f16 were 1.5-way and the reads 2-way.
    tile = 64 if dtype == np.float16 else 128
    x = np.arange(4 * tile * tile).astype(dtype).reshape(2 * tile, 2 * tile)
    args = (x, np.zeros_like(x), tile)
    report = analyze(transpose, (2, 2), args)
    threads, vec, stores, loads = {np.float16: (256, 8, 16, 128), np.int8: (512, 16, 32, 512)}[dtype]
    assert (report.threads, report.vec) == (threads, vec)
    assert [g.access_bytes for g in report.global_ops] == [16, 16]
    assert [(s.phase, s.requests, s.wavefronts, s.conflicts) for s in report.shared_ops] == \
        [("store", stores, 4 * stores, 0), ("load", loads, loads, 0)]
    assert np.array_equal(args[1], x.T)


def test_a_narrow_transposing_permute_keeps_the_skew():
    # 32x32 f16: rows of 4 chunks, fewer than the 8 the XOR keys need to stay one per result chunk
    x = np.arange(64 * 64).astype(np.float16).reshape(64, 64)
    args = (x, np.zeros_like(x), 32)
    report = analyze(transpose, (2, 2), args)
    assert [(s.phase, s.requests) for s in report.shared_ops] == [("store", 32), ("load", 32)]
    assert np.array_equal(args[1], x.T)


def test_cutile_sample_shape_f16_transpose_has_2_way_reads_instead_of_8_way():
    # 128x128 f16 on 512 threads: a warp reads 16 result chunks of two result rows j, j + 1 (one 4-byte
    # word for both): 16 distinct words at one offset of their chunks fall in 8 slots, 2 wavefronts
    # where the skew made 8 (rows 8 apart, 1056 elements: 2 banks); unswizzled chunks, 16 (one bank)
    x = np.arange(128 * 128).astype(np.float16).reshape(128, 128)
    args = (x, np.zeros_like(x), 128)
    trace = interpret(permuted, (1, 1), args, trace=True)
    fn = permuted.specialize(args)
    assert [(s.phase, s.requests, s.wavefronts, s.conflicts) for s in analyze_trace(fn, trace).shared_ops] == \
        [("store", 64, 256, 0), ("load", 512, 1024, 512)]
    assert [(s.phase, s.ways) for s in analyze_trace(fn, trace, skew=False).shared_ops] == \
        [("store", 4.0), ("load", 16.0)]


def test_a_permute_that_keeps_the_last_axis_moves_16_byte_chunks_both_ways():
    x = np.arange(16 * 16 * 64).astype(np.float16).reshape(16, 16, 64)
    args = (x, np.zeros_like(x), 16, 64)
    report = analyze(swap_leading, (1,), args)
    assert [(s.phase, s.requests, s.wavefronts, s.conflicts) for s in report.shared_ops] == \
        [("store", 64, 256, 0), ("load", 64, 256, 0)]
    assert np.array_equal(args[1], x.transpose(1, 0, 2))


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
        estimates.append(l2_estimate(interpret(kernel, (64,), (a, b, c, 32, 32, 16, *extra), trace=True), 40 * 1024))
        np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    row, grouped = estimates
    assert row.accesses == grouped.accesses == 64 * 640 and row.writes == grouped.writes == 64 * 128
    assert (row.misses, grouped.misses) == (18432, 10240)
    assert grouped.dram_bytes < row.dram_bytes and grouped.hit_rate == pytest.approx(1 - 10240 / 40960)
    assert row.dram_bytes == (18432 + 256 * 256 * 4 // SECTOR) * SECTOR   # misses read, C written back once


def test_l2_starts_cold_reads_miss_once_and_writes_hit():
    # a copy: every sector of x is read once (a miss), every sector of y written once (a hit): 50 %
    x = np.arange(4096, dtype=np.float32)
    estimate = l2_estimate(interpret(copy, (4,), (x, np.zeros_like(x), 1024), trace=True))
    assert (estimate.accesses, estimate.misses, estimate.writes, estimate.hit_rate) == (1024, 512, 512, 0.5)
    # a gather of rows 0, 1, 0, 1: each row's 8 sectors miss on the first read and hit on the second
    table, rows = np.arange(8 * 64, dtype=np.float32).reshape(8, 64), np.array([0, 1, 0, 1], np.int32)
    out = np.zeros((4, 64), np.float32)
    estimate = l2_estimate(interpret(row_gather, (4,), (table, rows, out, 64), trace=True))
    np.testing.assert_array_equal(out, table[rows])
    assert (estimate.accesses, estimate.misses, estimate.writes) == (4 * 8 + 4 * 8 + 4, 2 * 8 + 1, 4 * 8)


@ct.kernel
def tile_sum(x, y, STEPS: ct.Constant[int]):
    acc = ct.zeros((32,), ct.float32)
    for k in range(STEPS):
        acc = acc + ct.load(x, (k,), (32,))
    ct.store(y, (ct.bid(0),), acc)


@ct.kernel
def own_then_shared(x, s, t, y):
    own = ct.load(x, (ct.bid(0),), (32,))
    first = ct.load(s, (0,), (32,))
    second = ct.load(t, (0,), (32,))
    ct.store(y, (ct.bid(0),), own + first + second)


def test_one_wave_asking_for_the_same_tiles_misses_once_per_partition_after_its_first_fill():
    # 8 blocks read the same 3 tiles of 4 sectors (steps 0, 1, 2) and write 4 sectors each.
    # One after another: each sector misses once (12). All 8 at once, in lockstep: step 0's requests
    # are staggered by the launches (one miss per sector, the others find it on its way); the 8 blocks
    # waited on the same fills, so they ask for the tiles of steps 1 and 2 together: once per L2
    # partition, 2 * 8 more misses. In two waves of 4, the second finds everything in L2.
    x = np.arange(96, dtype=np.float32)
    trace = interpret(tile_sum, (8,), (x, np.zeros(256, np.float32), 3), trace=True)
    one_by_one, one_wave, two_waves, one_partition = (
        l2_estimate(trace, resident=r, partitions=p) for r, p in ((1, 2), (8, 2), (4, 2), (8, 1)))
    assert one_by_one.accesses == one_wave.accesses == 8 * (3 * 4 + 4)
    assert (one_by_one.misses, one_by_one.together) == (12, 0)
    assert (one_wave.misses, one_wave.together, one_wave.resident) == (4 + 2 * 8, 8, 8)
    assert (two_waves.misses, two_waves.together) == (4 + 2 * 8, 8)
    assert one_partition.misses == 12
    assert one_wave.hit_rate < one_by_one.hit_rate


def test_blocks_that_shared_no_fill_ask_staggered_and_miss_once():
    # step 0: each block its own tile (4 misses each, no fill shared); step 1: all ask for tile s at
    # once but were launched apart: 4 misses; step 2: having waited on s's fills together, they ask
    # for tile t together: 2 misses per sector
    x, s, t = (np.arange(n, dtype=np.float32) for n in (256, 32, 32))
    trace = interpret(own_then_shared, (8,), (x, s, t, np.zeros(256, np.float32)), trace=True)
    estimate = l2_estimate(trace, resident=8)
    assert (estimate.misses, estimate.together) == (8 * 4 + 4 + 2 * 4, 4)
    assert estimate.writes == 8 * 4 and estimate.accesses == 8 * (4 + 4 + 4 + 4)


def test_first_wave_is_the_grid_where_it_fits_else_sms_times_blocks_per_sm():
    x = np.arange(4096, dtype=np.float32)
    assert analyze(tile_sum, (8,), (x, np.zeros(256, np.float32), 3)).l2.resident == 8
    # 128 blocks of one warp on one SM: the SM holds 32 blocks (sm_90's limit per SM)
    report = analyze(copy, (128,), (x, np.zeros_like(x), 32), arch="sm_90", sms=1)
    assert report.threads == 32 and report.l2.resident == 32
    assert report.l2.misses == 512   # nothing shared: the wave changes nothing


def test_l2_reasoning_says_which_blocks_ask_together():
    x = np.arange(96, dtype=np.float32)
    summary = analyze(tile_sum, (8,), (x, np.zeros(256, np.float32), 3)).summary()
    assert summary["l2_reasoning"] == ("first wave: 8 blocks run at once; a sector several ask for misses once, "
                                       "except 8 sectors requested together by blocks that waited on the same "
                                       "fill: once per L2 partition (2)")
    trace = interpret(tile_sum, (8,), (x, np.zeros(256, np.float32), 3), trace=True)
    assert l2_estimate(trace).reasoning.startswith("blocks one after another")


def test_summary_is_plain_numbers_per_op():
    x = np.arange(4096, dtype=np.float32)
    summary = analyze(copy, (4,), (x, np.zeros_like(x), 1024)).summary()
    assert summary["bytes_moved"] == 2 * 4096 * 4 and summary["global_sectors_per_request"] == 16.0
    assert summary["shared_bank_conflicts"] == 0 and summary["dram_bytes_estimate"] == 2 * 4096 * 4
    assert summary["l2_hit_rate"] == 0.5 and summary["shared_unmodeled"] == []
    assert [(o["op"], o["line"]) for o in summary["ops"]] == [("load", 20), ("store", 20)]


@ct.kernel
def rows_sum(x, y):
    ct.store(y, (0, 0), ct.sum(ct.load(x, (0, 0), (32, 128)), axis=1, keepdims=True))


@ct.kernel
def half_mma(a, b, c, K: ct.Constant[int]):
    acc = ct.mma(ct.load(a, (0, 0), (64, K)), ct.load(b, (0, 0), (K, 64)), ct.zeros((64, 64), ct.float32))
    ct.store(c, (0, 0), acc.astype(c.dtype))


@ct.kernel
def tf32_mma(a, b, c, K: ct.Constant[int]):
    acc = ct.mma(ct.astype(ct.load(a, (0, 0), (64, K)), ct.tfloat32), ct.astype(ct.load(b, (0, 0), (K, 64)), ct.tfloat32),
                 ct.zeros((64, 64), ct.float32))
    ct.store(c, (0, 0), acc)


@ct.kernel
def half_mma_one_line(a, b, c, K: ct.Constant[int]):
    ct.store(c, (0, 0), ct.mma(ct.load(a, (0, 0), (64, K)), ct.load(b, (0, 0), (K, 64)),
                               ct.zeros((64, 64), ct.float32)).astype(c.dtype))


def _phases(report, op):
    return [(s.phase, s.executions, s.requests, s.wavefronts, s.conflicts) for s in report.shared_ops if s.op == op]


def test_block_reduction_stores_one_partial_per_warp_and_reads_them_as_one_broadcast_vector():
    # softmax of 1024-element rows, 128 threads (4 warps): each reduction's lane 0 of every warp
    # stores a float (one request per warp), then every thread reads the 4 partials as one 16-byte
    # vector at the same address (a broadcast, served a half-warp at a time: two wavefronts per warp,
    # as ncu counts on the H100); once per block, 8 blocks
    x = np.random.default_rng(0).random((8, 1024), dtype=np.float32)
    report = analyze(softmax, (8,), (x, np.zeros_like(x), 1024))
    assert report.threads == 128 and report.unmodeled == []
    for op in ("max", "sum"):
        assert _phases(report, op) == [("store", 8, 4, 4, 0), ("load", 8, 4, 8, 0)]
    assert {s.source for s in report.shared_ops if s.op == "max"} == {"e = ct.exp(t - ct.max(t, axis=1, keepdims=True))"}


def test_row_sum_with_two_rows_per_warp_has_2_way_conflicts_that_the_skew_does_not_remove():
    # (32, 128) f32 summed along rows by 512 threads: 16 threads per row. Staging: thread t writes
    # elements 4t..4t+3 per register (skewed banks 4(t%8) + t/8: distinct; unskewed 4t % 32: 4-way).
    # Folding: a warp holds rows o and o + 1, lane l reads element 128o + l + 16i, skewed bank
    # 4o + l + c and 4(o + 1) + l + c: 12 banks get a word of each row (2-way); unskewed both rows
    # read banks l + c (2-way). The 32 results: 16 threads store one each (a request per warp); the
    # result goes only to a store, so only its 32 owners (one warp) read result[t] back: ncu counts
    # that one read on the H100, the compiler having dropped the other warps' unused copies.
    x = np.random.default_rng(0).random((32, 128), dtype=np.float32)
    args = (x, np.zeros((32, 1), np.float32))
    trace = interpret(rows_sum, (1,), args, trace=True)
    fn = rows_sum.specialize(args)
    assert analyze_trace(fn, trace).threads == 512
    assert _phases(analyze_trace(fn, trace), "sum") == [
        ("store", 1, 128, 128, 0), ("load", 1, 128, 256, 128), ("store", 1, 16, 16, 0), ("load", 1, 1, 1, 0)]
    assert _phases(analyze_trace(fn, trace, skew=False), "sum")[:2] == [("store", 1, 128, 512, 384),
                                                                        ("load", 1, 128, 256, 128)]
    np.testing.assert_allclose(args[1][:, 0], x.sum(axis=1), rtol=1e-5)


def test_cuda_core_mma_stages_both_operands_and_reads_them_k_by_k_without_conflicts_thanks_to_the_skew():
    # 64x32 @ 32x64 f32 in a K loop of 2 steps, 4 blocks of 512 threads (16 warps): A and B are
    # written 4 floats per thread (4 requests per warp each); each of the 8 result registers then
    # reads A[i, k] (2 rows per warp: skewed banks i + k and i + 1 + k) and B[k, j] (16 columns 4
    # apart, with their skew: distinct banks) for k < 32: 256 requests per warp per operand, one
    # wavefront each. Without the skew both rows of A sit in bank k, and columns j and j + 32 of B
    # share a bank: 2-way.
    rng = np.random.default_rng(0)
    a, b = rng.random((128, 64), dtype=np.float32), rng.random((64, 128), dtype=np.float32)
    args = (a, b, np.zeros((128, 128), np.float32), 64, 64, 32)
    trace = interpret(row_matmul, (4,), args, trace=True)
    fn = row_matmul.specialize(args)
    skewed_phases = _phases(analyze_trace(fn, trace), "mma")
    assert skewed_phases == [("store", 8, 64, 64, 0)] * 2 + [("load", 8, 4096, 4096, 0)] * 2
    plain = _phases(analyze_trace(fn, trace, skew=False), "mma")
    assert [p[3:] for p in plain[2:]] == [(8192, 4096), (8192, 4096)]


def test_tensor_core_mma_writes_16_byte_chunks_into_padded_rows_and_ldmatrix_reads_without_conflicts():
    # 64x32 @ 32x64 f16 on 2 warps (mma<1x2>), 8 halves per 16-byte chunk; 16-byte stores are served
    # a quarter-warp (8 chunks) at a time. A's rows are 40 halves (80 bytes, 5 units of 16 bytes)
    # apart: a quarter holds rows r and r + 1 at units 5r..5r+3 and 5r+5..5r+8, and 5r + 8 is on the
    # bank group of 5r: 2 wavefronts per quarter, 8 per instruction against the ideal 4 (as ncu counts
    # on the H100). B's rows are 72 halves
    # (9 units) apart: a quarter is one row, 8 consecutive units: the ideal. ldmatrix: per k step of
    # 16, 4 A fragments (x4) and 2 B fragment pairs (x4.trans) per warp, each of 8-row matrices on
    # 8 distinct bank groups: 4 wavefronts.
    rng = np.random.default_rng(0)
    a, b = rng.random((64, 32)).astype(np.float16), rng.random((32, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    report = analyze(half_mma, (1,), (a, b, c, 32))
    assert (report.threads, report.vec) == (64, 8)
    assert _phases(report, "mma") == [("store", 1, 8, 64, 32), ("store", 1, 8, 32, 0), ("ldsm", 1, 24, 96, 0)]


def test_tfloat32_tensor_core_mma_reads_its_fragments_with_8_and_4_byte_loads_without_conflicts():
    # 64x32 @ 32x64 tfloat32 on 4 warps (mma<2x2>, 32x32 each), 4 k steps of 8. A's rows are 40 words
    # apart (8 mod 16): a half-warp's 8-byte loads of rows g..g+3, columns 2t, 2t+1 cover 32 banks,
    # 2 wavefronts (the ideal) per warp-wide load; per k step 2 fragment rows x rows g and g + 8: 16
    # loads per warp. B's rows are 68 words apart (4 mod 8): the 4-byte loads of rows 2t (or 2t + 1),
    # column g, cover 32 banks, 1 wavefront; per k step 4 fragments x 2 rows: 32 loads per warp.
    rng = np.random.default_rng(0)
    a, b = rng.random((64, 32), dtype=np.float32), rng.random((32, 64), dtype=np.float32)
    c = np.zeros((64, 64), np.float32)
    report = analyze(tf32_mma, (1,), (a, b, c, 32))
    assert report.threads == 128
    assert _phases(report, "mma") == [("store", 1, 16, 64, 0), ("store", 1, 16, 64, 0),
                                      ("load", 1, 64, 128, 0), ("load", 1, 128, 128, 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_storing_a_tensor_core_accumulator_goes_through_padded_rows_without_conflicts(dtype):
    # the 64x64 accumulator of mma<1x2> (64 registers per thread, f16 after the cast): each lane's pair
    # of neighbouring columns is one store (8 or 4 bytes), 8 rows of 4 lanes per instruction. Rows
    # 16 bytes longer than the tile's start on distinct 16-byte bank groups: 2 wavefronts for 256
    # bytes of f32, 1 for 128 bytes of f16, the ideal (the skew made f32 4-way: bank
    # 2 (l / 4 + l % 4) + const). The blocked tile then reads 8-element chunks, one 16-byte access
    # per 16 bytes, also at the ideal.
    rng = np.random.default_rng(0)
    a, b = rng.random((64, 32)).astype(np.float16), rng.random((32, 64)).astype(np.float16)
    c = np.zeros((64, 64), dtype)
    report = analyze(half_mma, (1,), (a, b, c, 32))
    assert (report.threads, report.vec) == (64, 8)
    wide = dtype == np.float32
    assert _phases(report, "convert_layout") == [("store", 1, 64, 128 if wide else 64, 0),
                                                 ("load", 1, 32 if wide else 16, 128 if wide else 64, 0)]
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3)


def test_model_uses_the_tile_librarys_skew_and_mma_row_padding():
    from tileworkbench.codegen import INCLUDE_DIR
    from tileworkbench.codegen.layout import MMA_ROW_PADDING, SKEW_PERIOD, mma_row_stride
    from tileworkbench.ir.types import float16, tfloat32
    library = INCLUDE_DIR / "tileworkbench"
    shift = re.search(r"int skew\(int i\) \{ return i \+ \(i >> (\d+)\); \}", (library / "tile.cuh").read_text())
    assert shift and 1 << int(shift.group(1)) == SKEW_PERIOD
    mma = (library / "tile_mma.cuh").read_text()
    # mma_format's row strides, 16-bit then tfloat32, as the code generator and this model take them
    strides = re.findall(r"([ab])_stride\(int ([KN])\) \{ return ([^;]+); \}", mma)
    assert [operand for operand, _, _ in strides] == ["a", "b", "a", "b"]
    for k, (operand, name, body) in enumerate(strides):
        dtype = float16 if k < 2 else tfloat32
        for cols in range(8, 264, 8):
            assert eval(body, {name: cols}) == mma_row_stride(dtype, cols, operand)
    assert mma_row_stride(float16, 64, "a") == 64 + MMA_ROW_PADDING


def test_model_uses_the_mma_staging_row_padding():
    from tileworkbench.codegen import INCLUDE_DIR
    from tileworkbench.codegen.layout import PADDED_ROW_ELEMENTS, padded_row_index
    mma = (INCLUDE_DIR / "tileworkbench" / "tile_mma.cuh").read_text()
    extra = re.search(r"constexpr int padded_row_extra = (\d+);", mma)
    assert extra and int(extra.group(1)) == PADDED_ROW_ELEMENTS
    assert "buf + e / Cols * (Cols + padded_row_extra<T>) + e % Cols" in mma
    assert padded_row_index(64 + 3, 64, 4) == 72 + 3 and padded_row_index(2 * 32 + 1, 32, 2) == 2 * 40 + 1


def test_model_uses_the_tile_librarys_chunk_slots():
    from tileworkbench.codegen import INCLUDE_DIR
    from tileworkbench.codegen.layout import chunk_shift, chunk_slot, stages_chunks
    tile = (INCLUDE_DIR / "tileworkbench" / "tile.cuh").read_text()
    assert "__device__ int chunk_slot(int q) { return q ^ ((q >> Shift) & 7); }" in tile
    assert ("sizeof(T) < 4 && tile<T, S>::V * int(sizeof(T)) == 16 && S::size >= TW_THREADS &&\n"
            "    (Step == 1 || (Step % (8 * tile<T, S>::V) == 0 && (Step & (Step - 1)) == 0));") in tile
    assert "if constexpr (stages_chunks<T, S, step> && S2::dim(S2::rank - 1) % tile<T, S>::V == 0) {" in tile
    assert "int shift = 3;\n  while ((2 << shift) <= step) ++shift;" in tile
    assert [chunk_shift(s) for s in (0, 1, 8, 15, 16, 128, 200)] == [3, 3, 3, 3, 4, 7, 7]
    assert sorted(chunk_slot(np.arange(64), 3)) == list(range(64)) and chunk_slot(9, 3) == 8
    # (itemsize, size, threads, TW_VEC, step, result row): f16 64x64 transposed, f32, too small, 32 wide, int8
    assert stages_chunks(2, 4096, 256, 8, 64, 64) and stages_chunks(2, 4096, 256, 8, 1, 64)
    assert not stages_chunks(4, 4096, 256, 4, 64, 64) and not stages_chunks(2, 1024, 256, 8, 64, 64)
    assert not stages_chunks(2, 1024, 32, 8, 32, 32) and not stages_chunks(1, 4096, 128, 16, 64, 64)
    assert stages_chunks(1, 16384, 512, 16, 128, 128)


def test_model_uses_the_pipeline_stages_swizzle():
    # swizzled::chunk_offset in tile_pipeline.cuh, and the Python twin on the chunks of a 128-byte-row stage:
    # chunk c of row r at c ^ (r % 8)
    from tileworkbench.codegen import INCLUDE_DIR
    from tileworkbench.codegen.layout import swizzled_chunk_offset
    pipeline = (INCLUDE_DIR / "tileworkbench" / "tile_pipeline.cuh").read_text()
    assert "const int o = r * P + k % per_panel * 16;" in pipeline
    assert "return k / per_panel * (R * P) + (o ^ ((o >> 7) & (per_panel - 1)) << 4);" in pipeline
    rows, cols = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
    assert np.array_equal(swizzled_chunk_offset(rows, cols, 16, 64), rows * 128 + (cols ^ rows % 8) * 16)
    # rows of 64 bytes: panels of 64 bytes, the pattern changes every 2 rows
    assert swizzled_chunk_offset(3, 1, 64, 32) == 3 * 64 + (1 ^ 1) * 16
    assert swizzled_chunk_offset(0, 8, 64, 128) == 64 * 128   # 256-byte rows: the second panel of 128 bytes


@ct.kernel
def column_sums(x, y, f, TM: ct.Constant[int], TN: ct.Constant[int]):
    t = ct.load(x, (0, 0), (TM, TN))
    ct.store(y, (0, 0), ct.sum(t, axis=0, keepdims=True).astype(y.dtype))
    ct.store(f, (0, 0), ct.max(t, axis=0, keepdims=True))


def test_a_reduction_over_leading_axes_stages_only_the_chunks_each_thread_folded():
    # (32, 1024) float32 with a bfloat16 output: 512 threads of 8-element chunks, 4096 elements apart, so
    # a thread's 8 chunks share their 8 columns and fold into 1 in registers: a (4, 1024) tile goes
    # through shared memory (4096 scalar stores, 1 per register, 8 per thread), not the (32, 1024) one;
    # each thread then reads 4 rows of its 2 columns
    x = np.zeros((32, 1024), np.float32)
    report = analyze(column_sums, (1,), (x, np.zeros((1, 1024), ct.bfloat16.numpy), np.zeros((1, 1024), np.float32),
                                         32, 1024))
    assert (report.threads, report.vec) == (512, 8)
    for line in {s.line for s in report.shared_ops}:
        staged = [s for s in report.shared_ops if s.line == line]
        assert [(s.phase, s.requests) for s in staged] == [("store", 16 * 8), ("load", 16 * 2 * 4)]
    # (8, 2048) float32: 4-element chunks 2048 apart, each thread's 8 chunks land on the same 4 columns,
    # and the folded chunks are the result as it lies: nothing through shared memory
    report = analyze(column_sums, (1,), (np.zeros((8, 2048), np.float32), np.zeros((1, 2048), np.float32),
                                         np.zeros((1, 2048), np.float32), 8, 2048))
    assert report.shared_ops == [] and not report.unmodeled


SASS_CASES = {
    "column_sums": (column_sums, lambda: (np.zeros((32, 1024), np.float32), np.zeros((1, 1024), ct.bfloat16.numpy),
                                          np.zeros((1, 1024), np.float32), 32, 1024)),
    "transpose": (transpose, lambda: (np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32), 32)),
    "transpose_f16": (transpose, lambda: (np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16), 64)),
    "transpose_int8": (permuted, lambda: (np.zeros((128, 128), np.int8), np.zeros((128, 128), np.int8), 128)),
    "transpose_f16_narrow": (transpose, lambda: (np.zeros((32, 32), np.float16), np.zeros((32, 32), np.float16), 32)),
    "permute_keeping_last_axis": (swap_leading, lambda: (np.zeros((16, 16, 64), np.float16),
                                                         np.zeros((16, 16, 64), np.float16), 16, 64)),
    "softmax": (softmax, lambda: (np.zeros((2, 1024), np.float32), np.zeros((2, 1024), np.float32), 1024)),
    "cuda_core_mma": (row_matmul, lambda: (np.zeros((128, 64), np.float32), np.zeros((64, 128), np.float32),
                                           np.zeros((128, 128), np.float32), 64, 64, 32)),
    # one k step of 16 (the listing has the k loop's body once: it is not unrolled)
    "tensor_core_mma": (half_mma, lambda: (np.zeros((64, 16), np.float16), np.zeros((16, 64), np.float16),
                                           np.zeros((64, 64), np.float32), 16)),
    # one k step of 8: 8-byte A and 4-byte B fragment loads
    "tensor_core_mma_tf32": (tf32_mma, lambda: (np.zeros((64, 8), np.float32), np.zeros((8, 64), np.float32),
                                                np.zeros((64, 64), np.float32), 8)),
    # (on one line: the compiler gives this kernel's operand stores the line of the store)
    "tensor_core_mma_f16_out": (half_mma_one_line, lambda: (np.zeros((64, 16), np.float16),
                                                            np.zeros((16, 64), np.float16),
                                                            np.zeros((64, 64), np.float16), 16)),
}


@pytest.mark.parametrize("case", SASS_CASES)
def test_modelled_shared_requests_per_warp_are_the_compiled_kernels_shared_instructions(case):
    # the model's warp-wide requests per execution are the SASS shared loads and stores of that line
    # (kernels whose shared accesses the compiler unrolls: the listing counts each instruction once)
    from tileworkbench.runtime.sass import find_nvdisasm, sass_by_line
    if find_nvdisasm() is None:
        pytest.skip("nvdisasm is not installed")
    kernel, make = SASS_CASES[case]
    args = make()
    report = analyze(kernel, (1,), args)
    warps = report.threads // 32
    sass = {line.line: line.counts for line in sass_by_line(kernel.specialize(args), arch="sm_90")}
    lines = {s.line for s in report.shared_ops}
    assert lines
    for line in lines:
        for phase, opcode in (("store", "STS"), ("load", "LDS"), ("ldsm", "LDSM")):
            requests = sum(s.requests for s in report.shared_ops if s.line == line and s.phase == phase)
            assert requests == sass[line][opcode] * warps, (line, phase)


def test_mma_layout_elements_give_each_lane_the_fragment_places_tile_mma_describes():
    from tileworkbench.codegen.layout import MmaLayout
    thread, register, element = MmaLayout(2, 2).elements((64, 32))   # warps of 32x16: 2x2 fragments
    assert sorted(element) == list(range(64 * 32)) and register.max() == 64 * 32 // 128 - 1
    place = {(t, r): divmod(e, 32) for t, r, e in zip(thread, register, element)}
    # lane 5 of warp 0, first fragment: (5 / 4, 2 (5 % 4) + {0, 1}), then 8 rows down
    assert [place[5, r] for r in range(4)] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert place[5, 4] == (1, 10)                       # the next fragment to the right
    assert place[32 + 5, 0] == (1, 18) and place[64 + 5, 0] == (33, 2)   # warp 1 right, warp 2 below


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_pipelined_mma_copies_chunks_into_swizzled_stages_and_ldmatrix_reads_them_without_conflicts(arch):
    # f16 matmul, 64x64x32 tiles, 16 blocks of 4 K steps. sm_80: cp.async and mma.sync. A's stage is 64
    # rows of 64 bytes: chunk c of row r at 16-byte unit 4r + (c ^ (r / 2 % 4)); a warp's 32
    # consecutive chunks fill 8 whole rows: 512 contiguous bytes, 4 wavefronts per cp.async (the
    # ideal). ldmatrix reads 8 rows of one chunk column: units 4r + (c ^ (r / 2 % 4)) fall in 8
    # distinct bank groups. sm_90: TMA fills the stages and wgmma reads them through descriptors (no
    # thread's shared access). Either way the accumulator (f16 after the cast) then goes through
    # padded rows in shared memory for the store, a 4-byte pair per lane: conflict-free.
    rng = np.random.default_rng(0)
    a, b = rng.random((256, 128)).astype(np.float16), rng.random((128, 256)).astype(np.float16)
    c = np.zeros((256, 256), np.float16)
    report = analyze(matmul, (4, 4), (a, b, c, 64, 64, 32), arch=arch)
    hopper = arch == "sm_90"
    cp_async = [(s.phase, s.executions, s.requests, s.wavefronts, s.conflicts) for s in report.shared_ops
                if s.phase == "ldgsts"]
    assert cp_async == ([] if hopper else [("ldgsts", 64, 256 // 32, 32, 0)] * 2)  # 256 chunks per tile, 4 wavefronts each
    assert [g.copied_by for g in report.global_ops] == ["tma" if hopper else "cp.async"] * 2 + [None]
    ldmatrix = [(s.requests, s.conflicts) for s in report.shared_ops if s.phase == "ldsm"]
    assert ldmatrix == ([] if hopper else [(2 * 2 * (4 + 2), 0)])   # per warp and k step: 4 A x4, 2 B x4.trans
    store = [s for s in report.shared_ops if s.op == "convert_layout" and s.phase == "store"]
    assert [(s.requests, s.ways) for s in store] == [(64 * 64 // 64, 1.0)]   # a request per register pair per warp
    np.testing.assert_allclose(c, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16), rtol=2e-3)
