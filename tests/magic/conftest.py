"""A real IPython shell with the extension loaded and three small arrays, for the magic's tests."""
import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

# c = a + b, one tile of TILE elements per block
ADD = '''def add(a, b, c, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))
'''


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tileworkbench")
    ip.user_ns.update(np=np, a=np.arange(10, dtype=np.float32), b=np.ones(10, np.float32), c=np.zeros(10, np.float32))
    yield ip
    ip.user_ns.clear()
