"""Make the pictures of docs/views/launch_report.md, sweep.md, code_view.md and verdict.md from real
compiles (NVRTC, no GPU needed) and a real interpreter run.

    python docs/views/make_pictures_reports.py
"""
import pathlib

import numpy as np

from tileworkbench.tile import interpret
from tileworkbench.kernels import matmul, transpose, vector_add
from tileworkbench.profile.sweep import sweep
from tileworkbench.widgets.code_view import CodeView
from tileworkbench.widgets.launch_report import LaunchReportView, compile_report
from tileworkbench.widgets.sweep import SweepView
from tileworkbench.widgets.verdict import VerdictView, compare

HERE = pathlib.Path(__file__).parent
M = N = K = 2048


def matmul_args(tm, tn, tk=32):
    a, b = np.zeros((M, K), np.float16), np.zeros((K, N), np.float16)
    return a, b, np.zeros((M, N), np.float32), tm, tn, tk


def vector_args(tile):
    return np.zeros(1 << 20, np.float32), np.zeros(1 << 20, np.float32), np.zeros(1 << 20, np.float32), tile


def access_picture():
    """The report of a 512 x 512 transpose with its memory accesses modelled on the interpreter."""
    x = np.arange(512 * 512, dtype=np.float32).reshape(512, 512)
    LaunchReportView.measure(transpose, (8, 8), (x, np.zeros_like(x), 64), arch="sm_90").save_svg(
        HERE / "launch_report_access.svg")


def main():
    # No GPU here: the report is compile_report's (timing None), and says so.
    report = compile_report(matmul, (M // 64, N // 64), matmul_args(64, 64), arch="sm_90")
    LaunchReportView(report).save_svg(HERE / "launch_report_matmul.svg")
    access_picture()

    result = sweep(matmul, lambda c: (M // c["TM"], N // c["TN"]), lambda c: matmul_args(c["TM"], c["TN"]),
                   {"TM": [32, 64, 128], "TN": [32, 48, 64, 128]}, arch="sm_90")
    SweepView(result).save_svg(HERE / "sweep_matmul.svg")

    CodeView.diff(vector_add, vector_args(256), vector_args(1024)).save_svg(HERE / "code_view_diff.svg")

    # The interpreter against itself, with one element changed by hand: what a GPU mismatch looks like.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    trace = interpret(matmul, (2, 4), (a, b, c, 32, 16, 16), trace=True)
    wrong = c.copy()
    wrong[37, 21] += 0.5
    verdict = compare("matmul (interpreter vs interpreter, C[37, 21] changed by hand)", {"C": c}, {"C": wrong}, trace)
    VerdictView(verdict).save_svg(HERE / "verdict_injected.svg")


if __name__ == "__main__":
    main()
