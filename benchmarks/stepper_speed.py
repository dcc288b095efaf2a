"""How long the block stepper takes to change step: a 128x128 matmul block with a 64-iteration K
loop, a 64x64 one with a 256-iteration K loop, a row softmax and a row layer norm (all on the
interpreter, no GPU).

    python benchmarks/stepper_speed.py

For each kernel: the time to open the view, then the median time of a step forward, a step back
and a jump (to the last op, then to the middle), each covering everything a step change does in
Python (the figure's data, its SVG, and the data as the widget sends it).
"""
import statistics
import time

import numpy as np

from tileworkbench.tile import interpret
from tileworkbench.kernels import layernorm, matmul, softmax
from tileworkbench.widgets._base import _to_json
from tileworkbench.widgets.stepper import StepperView


def _ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def _set_step(view, step):
    def change():
        view.step = step
        _to_json(view.data)   # what the widget sends to the notebook
    return change


def measure(name, trace, block):
    opened = _ms(lambda: StepperView.from_trace(trace, block=block))
    view = StepperView.from_trace(trace, block=block)
    n = view.data["steps"]
    middle = n // 2
    forward = [_ms(_set_step(view, s)) for s in range(middle, middle + 8)]
    back = [_ms(_set_step(view, s)) for s in range(middle + 8, middle, -1)]
    jump = [_ms(_set_step(view, s)) for s in (n - 1, middle, 0, n - 1, middle)]
    print(f"{name:38s} {n:5d} ops  open {opened:7.1f} ms  forward {statistics.median(forward):7.1f} ms  "
          f"back {statistics.median(back):7.1f} ms  jump {statistics.median(jump):7.1f} ms")


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 64 * 32)).astype(np.float16)
    b = rng.standard_normal((64 * 32, 256)).astype(np.float16)
    trace = interpret(matmul, (2, 2), (a, b, np.zeros((256, 256), np.float32), 128, 128, 32), values=True)
    measure("matmul 256x2048x256, 128x128x32 tiles", trace, (1, 0))
    a = rng.standard_normal((128, 256 * 16)).astype(np.float16)
    b = rng.standard_normal((256 * 16, 128)).astype(np.float16)
    trace = interpret(matmul, (2, 2), (a, b, np.zeros((128, 128), np.float32), 64, 64, 16), values=True)
    measure("matmul 128x4096x128, 64x64x16 tiles", trace, (1, 0))
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    trace = interpret(softmax, (64,), (x, np.zeros_like(x), 1024), values=True)
    measure("softmax 64x1000", trace, (3,))
    w, bias = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    trace = interpret(layernorm, (64,), (x, w, bias, np.zeros_like(x), 1024), values=True)
    measure("layernorm 64x1000", trace, (3,))


if __name__ == "__main__":
    main()
