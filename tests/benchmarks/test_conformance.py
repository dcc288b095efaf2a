"""The cuTile conformance runner (benchmarks/cutile_conformance.py): its table, its failure groups,
and a run over a small stand-in for cuTile's test/ folder (no GPU, no cuTile)."""
import textwrap

from benchmarks.cutile_conformance import format_report, main, reason_group, summarize

CONFTEST = textwrap.dedent("""
    from cuda.tile._bytecode.version import BytecodeVersion   # an internal: a placeholder here
    import cuda.tile as ct
""")
TESTS = textwrap.dedent("""
    import numpy as np
    import pytest
    import cuda.tile as ct

    @ct.kernel
    def double(x):
        ct.store(x, (0,), ct.load(x, (0,), (4,)) * 2)

    def test_runs():
        x = np.ones(4, np.float32)
        ct.launch(None, (1,), double, (x,))
        assert (x == 2).all()

    @pytest.mark.parametrize("n", [3, 5])
    def test_wrong(n):
        assert n == 4, f"got {n} items"

    @pytest.mark.skip(reason="not here")
    def test_skipped():
        pass
""")


def record(file, outcome, reason=""):
    return {"file": file, "test": f"{file}::t", "outcome": outcome, "reason": reason}


def test_reasons_that_differ_only_in_values_form_one_group():
    assert reason_group("AssertionError: got 3 items") == reason_group("AssertionError: got 5 items")
    assert reason_group("KeyError: 'a'") == reason_group("KeyError: 'b'")
    assert reason_group("shape (4, 8) is bad") == reason_group("shape (16,) is bad")
    assert reason_group("TypeError: x") != reason_group("ValueError: x")


def test_counts_per_file_and_groups_most_common_first():
    records = [record("test_a.py", "passed"), record("test_a.py", "failed", "E: 1"),
               record("test_b.py", "failed", "E: 2"), record("test_b.py", "error", "F"),
               record("test_b.py", "skipped", "why")]
    per_file, groups = summarize(records)
    assert per_file["test_a.py"] == {"passed": 1, "failed": 1}
    assert [len(members) for _, members in groups] == [2, 1]
    report = format_report(records)
    assert "| a | 1 | 1 | 0 | 0 |" in report and "| b | 0 | 1 | 1 | 1 |" in report
    assert "| **total** | 1 | 2 | 1 | 1 |" in report
    assert "ran 4; passed 1 = 25.0%" in report


def test_a_run_over_a_test_folder_prints_the_table(tmp_path, capsys):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_small.py").write_text(TESTS)
    assert main([str(tmp_path), "--json", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out
    assert "| small | 1 | 2 | 0 | 1 |" in out
    assert "2  AssertionError: got 3 items" in out
    assert (tmp_path / "out.json").exists()
