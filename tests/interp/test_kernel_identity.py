"""A kernel redefined again and again (as re-running a notebook cell does) always runs its own
code: nothing is keyed on the identity of an object that can die and be replaced at the same
address."""
import numpy as np

from ..kernel_variants import expected, launch, redefine_until_addresses_repeat


def test_redefined_kernels_run_their_own_code_on_the_interpreter():
    x = np.arange(64, dtype=np.float32)

    def run(kernel, variant):
        y = np.full_like(x, np.nan)
        launch(kernel, x, y)
        return np.array_equal(y, expected(variant, x))
    wrong, repeated = redefine_until_addresses_repeat(run)
    assert wrong == [] and repeated > 0
