import pytest

from benchmarks.peers import add_ratios, draw_chart, latency_bars, speed_bars


def test_speed_bars_give_each_library_its_fastest_per_case(doc):
    add_ratios(doc["cases"])
    titles, bars = speed_bars(doc)
    assert titles == ["copy", "softmax 4096", "matmul 4096"]
    assert list(bars) == ["tileworkbench", "cuTile", "Triton", "CuPy", "torch"]
    assert bars["tileworkbench"] == [0, 0.8, 0.8] and bars["cuTile"] == [0, 0, 0] and bars["torch"] == [1.0, 0, 1.0]


def test_latency_bars_give_each_library_its_median_per_measure(doc):
    measures, bars = latency_bars(doc)
    assert measures == ["cold compile"] and bars == {"tileworkbench": [450.0], "cuTile": [0]}


def test_the_chart_is_a_png(doc, tmp_path):
    pytest.importorskip("matplotlib")
    add_ratios(doc["cases"])
    draw_chart(doc, str(tmp_path / "chart.png"))
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
