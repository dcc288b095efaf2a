"""Which views a traced launch gets: one per memory or shape op line, each showing its own op."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.interp import run
from tileworkbench.widgets.tile_space import TileSpaceView
from tileworkbench.widgets.views import views_of_trace


@ct.kernel
def two_loads(x, y):
    a = ct.load(x, (0, 0), (2, 4))
    b = ct.load(x, (1, 0), (2, 4))
    ct.store(y, (0, 0), a + b)


def test_a_second_load_of_the_same_array_gets_its_own_view():
    x, y = np.arange(32, dtype=np.float32).reshape(4, 8), np.zeros((2, 4), np.float32)
    trace = run(two_loads, (1,), (x, y), trace=True)
    loads = [v for v in views_of_trace(trace) if isinstance(v, TileSpaceView) and "load" in v.to_svg()[:2000]]
    first = two_loads._pyfunc.__code__.co_firstlineno
    titles = [next(line for line in (f"line {first + 2}", f"line {first + 3}") if line in v.to_svg()) for v in loads]
    assert titles == [f"line {first + 2}", f"line {first + 3}"]
