"""The access analysis's shared-memory numbers against Nsight Compute's per-instruction counts on the
GPU: instructions and bank conflicts of shared loads, stores and ldmatrix, exactly. Needs ncu permitted
to read the counters (skipped otherwise). This file is also the program ncu profiles:
`python test_access_ncu.py CASE` launches one case once."""
import sys
from pathlib import Path

import numpy as np
import pytest

if __name__ == "__main__":  # run by ncu as a script: this checkout's tileworkbench, whatever PYTHONPATH says
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import tileworkbench.tile as ct  # noqa: E402
from tileworkbench.kernels import matmul, softmax, transpose
from tileworkbench.profile.access import analyze


@ct.kernel
def rows_sum(x, y):
    ct.store(y, (ct.bid(0), 0), ct.sum(ct.load(x, (ct.bid(0), 0), (32, 128)), axis=1, keepdims=True))


@ct.kernel
def half_mma(a, b, c):
    i = ct.bid(0)
    acc = ct.mma(ct.load(a, (i, 0), (64, 32)), ct.load(b, (0, 0), (32, 64)), ct.zeros((64, 64), ct.float32))
    ct.store(c, (i, 0), acc)


def _rng(*shape, dtype=np.float32):
    return np.random.default_rng(0).random(shape).astype(dtype)


# name -> (kernel, grid, arguments)
CASES = {
    "transpose": (transpose, (8, 8), lambda: (_rng(256, 256), np.zeros((256, 256), np.float32), 32)),
    "softmax": (softmax, (64,), lambda: (_rng(64, 1024), np.zeros((64, 1024), np.float32), 1024)),
    "rows_sum": (rows_sum, (16,), lambda: (_rng(512, 128), np.zeros((512, 1), np.float32))),
    # float32 operands: the CUDA cores
    "cuda_core_matmul": (matmul, (2, 2), lambda: (_rng(128, 256), _rng(256, 128), np.zeros((128, 128), np.float32),
                                                  64, 64, 32)),
    "half_mma": (half_mma, (4,), lambda: (_rng(256, 32, dtype=np.float16), _rng(32, 64, dtype=np.float16),
                                          np.zeros((256, 64), np.float32))),
    # cp.async stages and ldmatrix (sm_80) or TMA stages and wgmma (sm_90a); a cp.async loop also issues dummy shared
    # loads the model does not count (LDS RZ, [RZ]), so only its conflicts are compared
    "pipelined_matmul": (matmul, (4, 4), lambda: (_rng(256, 128, dtype=np.float16), _rng(128, 256, dtype=np.float16),
                                                  np.zeros((256, 256), np.float16), 64, 64, 32)),
}


def launch(name):
    import cupy
    kernel, grid, make = CASES[name]
    args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in make())
    ct.launch(cupy.cuda.get_current_stream(), grid, kernel, args)
    cupy.cuda.get_current_stream().synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("name", CASES)
def test_shared_instructions_and_conflicts_are_what_ncu_counts_per_instruction(name):
    from tileworkbench.profile.ncu import NcuUnavailable, collect
    from tileworkbench.runtime.driver import device_arch
    kernel, grid, make = CASES[name]
    report = analyze(kernel, grid, make(), arch=device_arch())   # the code the launch compiles for this GPU
    try:
        (measured,) = collect([sys.executable, __file__, name], kernel=kernel.name, source_lines=False)
    except NcuUnavailable as e:
        pytest.skip(str(e))

    def model(phase, field):
        return sum(getattr(s, field) * s.executions for s in report.shared_ops if s.phase == phase)
    if name != "pipelined_matmul":
        assert (measured.shared_load_instructions, measured.shared_store_instructions) == \
            (model("load", "requests"), model("store", "requests"))
    assert (measured.shared_load_wavefronts_sass, measured.shared_store_wavefronts_sass) == \
        (model("load", "wavefronts"), model("store", "wavefronts"))
    assert (measured.ldmatrix_conflicts_sass or 0) == model("ldsm", "conflicts")
    assert (measured.cp_async_conflicts_sass or 0) == model("ldgsts", "conflicts")


if __name__ == "__main__":
    launch(sys.argv[1])
