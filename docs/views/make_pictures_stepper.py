"""Make the pictures of docs/views/stepper.md and the SASS picture of code_view.md from real
interpreter runs and a real compile (NVRTC and nvdisasm, no GPU needed).

    python docs/views/make_pictures_stepper.py

The screenshots (stepper_lab.png, stepper_notebook7.png, linked_lab.png) are the browser test's:
    python -m pytest -m browser tests/browser/test_stepper.py && cp tests/browser/artifacts/{stepper_lab,stepper_notebook7,linked_lab}.png docs/views/
"""
import pathlib

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.tile import interpret
from tileworkbench.kernels import matmul, running_sum
from tileworkbench.widgets.code_view import CodeView
from tileworkbench.widgets.stepper import StepperView, steps_of

HERE = pathlib.Path(__file__).parent


@ct.kernel
def window_sum(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    acc = ct.zeros((TILE,), ct.float32)
    for k in range(2):
        acc = acc + ct.load(x, (i + k,), (TILE,), padding_mode=ct.PaddingMode.NAN)
    ct.store(y, (i,), acc)


def main():
    # matmul on a 2x2 grid: block (1, 0) in the second iteration of its K loop, after the mma
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    trace = interpret(matmul, (2, 2), (a, b, np.zeros((32, 16), np.float32), 16, 8, 16), values=True)
    mma = [s.number for s in steps_of(trace, (1, 0)) if s.op == "mma"][1]
    StepperView.from_trace(trace, block=(1, 0), step=mma).save_svg(HERE / "stepper_matmul.svg")

    # a 128x128 accumulator, whole, in bins: block (1, 0) of a matmul whose A has 200 rows (the block's
    # last 56 rows pad) and a NaN in row 150, after the second mma: the NaN's row is NaN across
    a = rng.standard_normal((200, 64)).astype(np.float16)
    a[150, 40] = np.nan
    b = rng.standard_normal((64, 128)).astype(np.float16)
    trace = interpret(matmul, (2, 1), (a, b, np.zeros((200, 128), np.float32), 128, 128, 32), values=True)
    mma = [s.number for s in steps_of(trace, (1, 0)) if s.op == "mma"][1]
    StepperView.from_trace(trace, block=(1, 0), step=mma).save_svg(HERE / "stepper_big_tile.svg")

    # a ragged window: NaN padding past the end of x, and an infinity inside it
    x = np.arange(10, dtype=np.float32)
    x[9] = np.inf
    trace = interpret(window_sum, (3,), (x, np.zeros(12, np.float32), 4), values=True)
    load = [s.number for s in steps_of(trace, (2,)) if s.op == "load"][0]
    StepperView.from_trace(trace, block=(2,), step=load).save_svg(HERE / "stepper_padding.svg")

    # SASS of a kernel with a loop: in program order down to a little past the loop head, and by line
    x = np.zeros(1 << 12, np.float32)
    view = CodeView(running_sum, (x, x, 128), arch="sm_90")
    program = next(t for t in view.data["tabs"] if t["name"] == "SASS")["listing"]["orders"]["program"]
    head = next(k for k, row in enumerate(program) if "loop head" in row["text"])
    (HERE / "code_view_sass.svg").write_text(view.to_svg(lines=head + 6, tab="SASS"))
    (HERE / "code_view_sass_by_line.svg").write_text(view.to_svg(lines=30, tab="SASS", sass_order="line"))


if __name__ == "__main__":
    main()
