"""A timed sweep of the tensor-core matmul (4096^3 float16, checked against a float32 reference;
not against the interpreter, which would run each launch on the CPU) on one GPU, then spread over
every GPU of the host, both from a warm compile cache; prints both wall times, the speedup and the
merged record.

    python benchmarks/sweep_gpus.py            # on a machine with several GPUs of one model

Each row of the record names the GPU that timed it.
"""
import time

import numpy as np

from tileworkbench.kernels import matmul
from tileworkbench.profile.sweep import sweep

M = N = K = 4096
SPACE = {"TM": [64, 128], "TN": [64, 128, 256], "TK": [32, 64]}


def main():
    import cupy
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16))
    reference = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)

    def run(**options):
        start = time.perf_counter()
        result = sweep(matmul, lambda c: (M // c["TM"], N // c["TN"]),
                       lambda c: (a, b, np.zeros((M, N), np.float16), c["TM"], c["TN"], c["TK"]), SPACE,
                       reference=lambda c: [reference], check=False, progress=False, **options)
        return result, time.perf_counter() - start

    run(gpus=[cupy.cuda.runtime.getDevice()])            # warm the compile cache
    _, one_s = run(gpus=[cupy.cuda.runtime.getDevice()])
    spread, spread_s = run()
    gpus = sorted({r.device for r in spread.rows if r.device})
    print(f"{len(spread.rows)} configurations on {spread.device}")
    print(f"one GPU:           {one_s:6.1f} s")
    print(f"{len(gpus)} GPUs:           {spread_s:6.1f} s  ({one_s / spread_s:.2f}x)")
    for record in spread.records():
        time_ms = f"{record['time_ms']:.3f} ms" if record["time_ms"] else record["status"]
        print(f"  TM={record['TM']:<4} TN={record['TN']:<4} TK={record['TK']:<3} {time_ms:>12}  {record['device']}")


if __name__ == "__main__":
    main()
