"""A kernel redefined again and again (as re-running a notebook cell does) always runs its own
code: nothing is keyed on the identity of an object that can die and be replaced at the same
address."""
import gc

import numpy as np

from ..kernel_variants import VARIANTS, define_variant, expected, launch


def test_redefined_kernels_run_their_own_code_on_the_interpreter():
    x = np.arange(64, dtype=np.float32)
    wrong = []
    for serial in range(800):
        variant = serial % len(VARIANTS)
        kernel = define_variant(variant, serial)
        y = np.full_like(x, np.nan)
        launch(kernel, x, y)
        if not np.array_equal(y, expected(variant, x)):
            wrong.append((serial, variant))
        del kernel
        if serial % 8 == 0:
            gc.collect()  # frees the old kernels' IR, so new objects reuse their addresses
    assert wrong == []
