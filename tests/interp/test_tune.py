"""ct.tune.exhaustive_search on the interpreter: every configuration runs once, failures are kept
with their errors, the fastest is chosen (GPU timing is exercised in tests/gpu)."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.tile.tune import Measurement, TuningResult


@ct.kernel
def double(x, y, TILE: ct.Constant[int]):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (TILE,)) * 2)


def search(configs, **kwargs):
    x = np.arange(64, dtype=np.float32)
    outputs = {}

    def args(tile):
        outputs[tile] = np.zeros(64, np.float32)
        return (x, outputs[tile], tile)
    return ct.tune.exhaustive_search(configs, None, lambda tile: (64 // tile,), double, args, quiet=True,
                                     **kwargs), outputs


def test_every_configuration_runs_and_the_fastest_is_best():
    result, outputs = search([8, 16, 32])
    assert [m.config for m in result.successes] == [8, 16, 32] and result.failures == ()
    assert result.best == min(result.successes, key=lambda m: m.mean_us)
    assert all(m.num_samples == 1 and m.mean_us > 0 for m in result.successes)
    assert all((out == np.arange(64) * 2).all() for out in outputs.values())


def test_a_failing_configuration_is_recorded_with_its_error_and_the_search_goes_on():
    result, _ = search([3, 16])
    assert [m.config for m in result.successes] == [16]
    ((config, kind, message),) = result.failures
    assert config == 3 and kind is ct.TileTypeError and "3 is not a power of two" in message
    assert "1 succeeded, 1 failed" in result.summary()


def test_no_configuration_that_runs_is_an_error_naming_the_first_failure():
    with pytest.raises(ValueError, match=r"No valid config found in search space\.\nConfig: 3"):
        search([3, 5])
    with pytest.raises(ValueError, match="Search space is empty"):
        search([])


def test_hints_and_a_kernel_per_configuration_are_used():
    chosen = []

    def kernel_for(tile):
        chosen.append(tile)
        return double
    hinted = []
    x = np.ones(16, np.float32)

    def hints(tile):
        hinted.append(tile)
        return {"occupancy": 2}
    result = ct.tune.exhaustive_search([8, 16], None, lambda t: (16 // t,), kernel_for,
                                       lambda t: (x, np.zeros(16, np.float32), t), hints, quiet=True)
    assert chosen == [8, 16] and hinted == [8, 16] and isinstance(result, TuningResult)
    assert isinstance(result.best, Measurement)


def test_the_result_is_printed_unless_quiet(capsys):
    x = np.ones(16, np.float32)
    ct.tune.exhaustive_search([16], None, lambda t: (1,), double, lambda t: (x, np.zeros(16, np.float32), t))
    assert "1 succeeded, 0 failed" in capsys.readouterr().out
