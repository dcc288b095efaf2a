"""Where a kernel's code is read from: functions and lambdas, several on one line included."""
import inspect
import linecache

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.frontend.source import _definition_lines
from tileworkbench.tile import evaluate


def test_lambdas_on_one_line_that_differ_only_in_the_functions_they_call_are_not_confused():
    m = np.arange(8, dtype=np.int32).reshape(2, 4)
    biggest, smallest = evaluate(lambda x: ct.max(x, axis=0), m), evaluate(lambda x: ct.min(x, axis=0), m)
    assert biggest.tolist() == [4, 5, 6, 7] and smallest.tolist() == [0, 1, 2, 3]


def test_lambdas_on_one_line_that_differ_only_in_their_constants_are_not_confused():
    twice, thrice = evaluate(lambda x: x * 2, np.ones(2, np.int32)), evaluate(lambda x: x * 3, np.ones(2, np.int32))
    assert twice.tolist() == [2, 2] and thrice.tolist() == [3, 3]


@ct.kernel(
    occupancy=2)
def _decorated_over_lines(x):
    ct.store(x, (0,), ct.full((4,), 1.0, x.dtype))


def _make_nested():
    def fill(x):
        ct.store(x,
                 (0,), ct.full((4,), 2.0, x.dtype))
    return fill


def _twice(x):
    return x * 2


def _twice(x):  # noqa: F811 - redefined: the second definition's lines are the ones it runs
    return x * 2 + 0


@pytest.mark.parametrize("function", [_decorated_over_lines._pyfunc, _make_nested(), _twice], ids=lambda f: f.__name__)
def test_a_definition_is_read_from_the_lines_inspect_would_give(function, monkeypatch):
    expected = inspect.getsourcelines(function.__code__)
    monkeypatch.setattr(inspect, "getsourcelines", None)  # the parsed file answers alone
    assert _definition_lines(function) == expected


def test_a_file_that_does_not_parse_falls_back_to_inspect(tmp_path, monkeypatch):
    path = tmp_path / "cell.py"
    path.write_text("def k(x):\n    return x\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    path.write_text("def k(x):\n    return x\n%magic\n")  # a cell with IPython syntax
    linecache.checkcache(str(path))
    assert _definition_lines(namespace["k"]) == (["def k(x):\n", "    return x\n"], 1)


@pytest.mark.slow   # about 7 s: Python compiles 5,000 definitions
def test_defining_five_thousand_kernels_keeps_the_source_cache_bounded():
    from tileworkbench.frontend import source
    for k in range(5000):
        filename = f"<many kernels {k}>"
        text = f"def many_{k}(x):\n    ct.store(x, (0,), ct.full((4,), {k}, x.dtype))\n"
        linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
        scope = {"ct": ct}
        exec(compile(text, filename, "exec"), scope)
        try:
            assert source.source_of(ct.kernel(scope[f"many_{k}"])._pyfunc).name == f"many_{k}"
        finally:
            del linecache.cache[filename]
    assert len(source._cache) <= source.SOURCE_CACHE_SIZE


def test_the_source_cache_keeps_no_closure_alive():
    import gc
    import weakref

    from tileworkbench.frontend import source

    class Big:
        pass
    big = Big()

    def helper(x):
        return x + len(captured)   # noqa: F821 - bound below, as a closure
    captured = [big]
    assert source.source_of(helper).closure["captured"] == [big]
    alive = weakref.ref(big)
    del helper, captured, big
    gc.collect()
    assert alive() is None
