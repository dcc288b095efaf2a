"""Where a kernel's code is read from: functions and lambdas, several on one line included."""
import numpy as np

import tileworkbench.tile as ct
from tileworkbench.tile import evaluate


def test_lambdas_on_one_line_that_differ_only_in_the_functions_they_call_are_not_confused():
    m = np.arange(8, dtype=np.int32).reshape(2, 4)
    biggest, smallest = evaluate(lambda x: ct.max(x, axis=0), m), evaluate(lambda x: ct.min(x, axis=0), m)
    assert biggest.tolist() == [4, 5, 6, 7] and smallest.tolist() == [0, 1, 2, 3]


def test_lambdas_on_one_line_that_differ_only_in_their_constants_are_not_confused():
    twice, thrice = evaluate(lambda x: x * 2, np.ones(2, np.int32)), evaluate(lambda x: x * 3, np.ones(2, np.int32))
    assert twice.tolist() == [2, 2] and thrice.tolist() == [3, 3]
