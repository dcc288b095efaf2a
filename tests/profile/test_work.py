"""The work model counts a launch's bytes and flops from the IR, loops included."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.profile import launch_work

from tileworkbench.kernels import matmul, vector_add


def test_vector_add_reads_two_arrays_and_writes_one():
    x = np.zeros(1 << 20, np.float32)
    work = launch_work(vector_add.specialize((x, x, x, 1024)), (1024, 1, 1), {n: x.shape for n in "abc"})
    assert (work.bytes_read, work.bytes_written, work.flops) == (2 * x.nbytes, x.nbytes, x.size)   # one add each


def test_matmul_flops_count_every_loop_iteration():
    A = np.zeros((256, 512), np.float16)
    B = np.zeros((512, 128), np.float16)
    C = np.zeros((256, 128), np.float16)
    fn = matmul.specialize((A, B, C, 64, 64, 32))
    work = launch_work(fn, (4, 2, 1), {"A": A.shape, "B": B.shape, "C": C.shape})
    assert work.flops == 2 * 256 * 512 * 128
    # each of the 8 blocks reads 16 tiles of A and of B (64x32 and 32x64 halves) and writes one C tile
    assert work.bytes_read == 8 * 16 * 2 * 64 * 32 * 2
    assert work.bytes_written == C.nbytes


@ct.kernel
def branchy(x, y):
    if ct.bid(0) == 0:
        ct.store(y, (0,), ct.load(x, (0,), (256,)))
    else:
        ct.store(y, (0,), ct.zeros((256,), ct.float32))


def test_a_runtime_if_counts_its_heavier_branch():
    x = np.zeros(256, np.float32)
    work = launch_work(branchy.specialize((x, x)), (1, 1, 1), {"x": x.shape, "y": x.shape})
    assert (work.bytes_read, work.bytes_written) == (1024, 1024)


@ct.kernel
def exp_scan_max(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i,), (TILE,))
    e = ct.exp(t * 2.0 - 1.0)          # mul, sub, exp: 3 flops per element
    c = ct.cumsum(e, 0)                # a scan: 1 per element
    m = ct.max(c, 0)                   # a reduction: 1 per input element
    ct.store(y, (i,), m / 2.0)         # a float scalar: 1


def test_elementwise_math_reductions_and_scans_count_one_flop_per_element():
    x, y = np.zeros(4 * 64, np.float32), np.zeros(4, np.float32)
    work = launch_work(exp_scan_max.specialize((x, y, 64)), (4, 1, 1), {"x": x.shape, "y": y.shape})
    assert work.flops == 4 * (3 * 64 + 64 + 64 + 1)


@ct.kernel
def no_flops(x, y, n, TILE: ct.Constant[int]):
    i = ct.bid(0)
    k = ct.arange(TILE, dtype=ct.int32) * 3 + i * n      # integer arithmetic
    t = ct.load(x, (i,), (TILE,))
    u = ct.where((k > 5) & ~ct.isnan(t), t, ct.zeros((TILE,), ct.float32))   # comparisons, predicates, where
    ct.store(y, (i,), ct.astype(u, ct.float16))           # a cast
    ct.store(y, (i + 1,), ct.astype(ct.argmax(t, 0) + k, ct.float16))


def test_integer_math_comparisons_where_casts_and_argmax_are_not_flops():
    x, y = np.zeros(256, np.float32), np.zeros(256, np.float16)
    work = launch_work(no_flops.specialize((x, y, 2, 64)), (2, 1, 1), {"x": x.shape, "y": y.shape})
    assert work.flops == 0


@ct.kernel
def scaled_matmul(a, b, c):
    acc = ct.mma(ct.load(a, (0, 0), (32, 16)), ct.load(b, (0, 0), (16, 8)), ct.zeros((32, 8), ct.float32))
    ct.store(c, (0, 0), acc * 0.5 + 1.0)   # the epilogue: 2 flops per element of C


def test_mma_and_its_elementwise_epilogue_both_count():
    a, b, c = np.zeros((32, 16), np.float16), np.zeros((16, 8), np.float16), np.zeros((32, 8), np.float32)
    work = launch_work(scaled_matmul.specialize((a, b, c)), (1, 1, 1), {"a": a.shape, "b": b.shape, "c": c.shape})
    assert work.flops == 2 * 32 * 16 * 8 + 2 * 32 * 8


@ct.kernel
def copy_lists(sources, targets, n, N: ct.Constant[int]):
    for i in range(len(sources)):
        ct.store(targets[(i + n) % len(targets)], (0,), ct.load(sources[i], (0,), (N,)))


@ct.kernel
def into_a_slice(x, y, start, stop, T: ct.Constant[int]):
    ct.store(y.slice(0, start, stop), (0,), ct.load(x, (0,), (T,)))


def test_written_arrays_are_those_stored_into_through_list_items_and_slices():
    from tileworkbench.profile.work import written_arrays
    x = np.zeros(64, np.float32)
    fn = copy_lists.specialize(([x, x], [x, x, x], 1, 8))
    assert written_arrays(fn) == {"targets[0]", "targets[1]", "targets[2]"}
    assert written_arrays(into_a_slice.specialize((x, x, 0, 16, 16))) == {"y"}
    assert written_arrays(vector_add.specialize((x, x, x, 16))) == {"c"}
