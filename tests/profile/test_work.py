"""The work model counts a launch's bytes and flops from the IR, loops included."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.profile import launch_work

from tileworkbench.kernels import matmul, vector_add


def test_vector_add_reads_two_arrays_and_writes_one():
    x = np.zeros(1 << 20, np.float32)
    work = launch_work(vector_add.specialize((x, x, x, 1024)), (1024, 1, 1), {n: x.shape for n in "abc"})
    assert (work.bytes_read, work.bytes_written, work.flops) == (2 * x.nbytes, x.nbytes, 0)


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
