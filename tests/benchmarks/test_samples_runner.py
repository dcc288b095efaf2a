"""The cuTile samples runner (benchmarks/cutile_samples.py): its table, the error and timing lines it
reads, and a --cpu run over a small stand-in for cuTile's samples/ folder (no GPU, no cuTile)."""
import textwrap

import pytest

from benchmarks.cutile_samples import Run, compiled, first_error, format_table, main, timings

pytest.importorskip("torch")

SAMPLE = textwrap.dedent("""
    import argparse
    import torch
    import cuda.tile as ct

    @ct.kernel
    def double(x, y, T: ct.Constant[int]):
        ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (T,)) * 2)

    parser = argparse.ArgumentParser()
    parser.add_argument("--correctness-check", action="store_true")
    args = parser.parse_args()
    x = torch.randn(256, device="cuda")
    y = torch.empty_like(x)
    assert x.is_cuda
    ct.launch(torch.cuda.current_stream(), (2,), double, (x, y, 128))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); end.record()
    print(f"double: {start.elapsed_time(end) + 1.5:.1f} ms")
    if args.correctness_check:
        torch.testing.assert_close(y, x * BY)
        print("Correctness check passed")
""")


def test_the_error_line_is_the_last_exception_of_the_output():
    output = "Traceback (most recent call last):\n  File x\nValueError: bad tile\nDuring handling...\n" \
             "AssertionError: Tensor-likes are not close!\n\nMismatched elements: 1 / 4"
    assert first_error(output) == "AssertionError: Tensor-likes are not close!"
    assert first_error("killed\n") == "killed"


def test_timing_and_compile_lines_are_read():
    assert timings("  cuTile FMHA with tuned parameters: 0.12345 ms\n  torch FMHA: 0.2 ms\n") == {
        "cuTile FMHA with tuned parameters": 0.12345, "torch FMHA": 0.2}
    assert compiled("[compile sm_90] k: ok (128 threads)\n[compile sm_90] j: failed: needs 300 bytes\n") == [
        ["k", "ok", "(128 threads)"], ["j", "failed", "needs 300 bytes"]]


def test_the_table_has_a_row_per_run_and_a_compile_column_when_asked():
    runs = [Run("FFT", "cpu", "pass", 2.0, "", 1, {}, [["fft", "ok", ""]]),
            Run("MoE", "cpu", "fail", 3.5, "ValueError: a|b", 0, {}, [["moe", "failed", "needs 9 bytes"]])]
    table = format_table(runs, "sm_90")
    assert "| FFT | cpu | pass | 1 | 2.0 | 1/1 |  |" in table
    assert "| MoE | cpu | fail | 0 | 3.5 | 0/1 moe: needs 9 bytes | ValueError: a\\|b |" in table
    assert table.endswith("1 of 2 runs pass")


@pytest.mark.parametrize("factor, outcome", [(2, "pass"), (3, "fail")])
def test_a_cpu_run_of_a_sample_folder(tmp_path, capsys, factor, outcome):
    (tmp_path / "VectorAddition.py").write_text(SAMPLE.replace("BY", str(factor)))
    status = main([str(tmp_path), "VectorAddition", "--cpu", "--timeout", "300"])
    table = capsys.readouterr().out
    assert status == (0 if outcome == "pass" else 1)
    assert f"| VectorAddition | cpu | {outcome} | {1 if outcome == 'pass' else 0} |" in table
    if outcome == "fail":
        assert "AssertionError: Tensor-likes are not close!" in table


def test_only_a_samples_folder_is_taken(tmp_path):
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--cpu"])
