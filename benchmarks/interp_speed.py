"""Interpreter speed on this machine: vector add (2^22 float32, 1024-element tiles, 4096 blocks),
the same with tracing, and a 256^3 float32 matmul with 64x64x32 tiles.

    python benchmarks/interp_speed.py

Each case runs once to compile, then is timed as the median of several runs. The NumPy
one-liner doing the same arithmetic is timed alongside, as a yardstick for the machine.
"""
import statistics
import time

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.kernels import matmul, vector_add


def timed(fn, repeat=5):
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    rng = np.random.default_rng(0)
    n = 1 << 22
    a, b = rng.random(n, np.float32), rng.random(n, np.float32)
    c = np.empty_like(a)
    grid = (n // 1024,)
    rows = [
        ("vector add 2^22 f32, tile 1024", timed(lambda: ct.launch(None, grid, vector_add, (a, b, c, 1024))),
         timed(lambda: np.add(a, b, out=c)), 1.0),
        ("  with tracing", timed(lambda: interpret(vector_add, grid, (a, b, c, 1024), trace=True)), None, 3.0),
    ]
    assert np.array_equal(c, a + b)
    A, B = rng.random((256, 256), np.float32), rng.random((256, 256), np.float32)
    C = np.empty((256, 256), np.float32)
    rows.append(("matmul 256^3 f32, tiles 64x64x32", timed(lambda: ct.launch(None, (4, 4), matmul, (A, B, C, 64, 64, 32))),
                 timed(lambda: np.matmul(A, B, out=C)), 1.0))
    np.testing.assert_allclose(C, A @ B, rtol=1e-5)
    print(f"{'case':36} {'interpreter':>12} {'numpy':>10} {'target':>8}")
    for name, t, ref, target in rows:
        ref_text = f"{ref * 1e3:8.2f}ms" if ref else " " * 10
        print(f"{name:36} {t * 1e3:10.1f}ms {ref_text} {'<' + str(target) + ' s':>8}")


if __name__ == "__main__":
    main()
