"""Dtypes from NumPy, ml_dtypes, PyTorch names and strings map to the IR's; ml_dtypes is imported
only when one of its dtypes is asked for."""
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tileworkbench.ir.types import ALL_DTYPES, bfloat16, float8_e4m3fn, float32, tfloat32, to_dtype

REPO = Path(__file__).parents[2]


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d is not tfloat32], ids=str)
def test_every_dtype_maps_back_from_its_numpy_dtype_and_scalar_type(dtype):
    assert to_dtype(dtype.numpy) is dtype and to_dtype(dtype.numpy.type) is dtype and to_dtype(dtype.name) is dtype


def test_ml_dtypes_dtypes_are_ml_dtypes_own():
    assert bfloat16.numpy == np.dtype(ml_dtypes.bfloat16) and float8_e4m3fn.numpy == np.dtype(ml_dtypes.float8_e4m3fn)
    assert to_dtype(np.zeros(2, ml_dtypes.bfloat16).dtype) is bfloat16 and to_dtype(np.float32) is float32


@pytest.mark.parametrize("obj", [np.clongdouble, np.dtype("V2"), "bogus", object])
def test_other_dtypes_are_refused(obj):
    with pytest.raises(TypeError, match="Not a tile dtype"):
        to_dtype(obj)


def test_ml_dtypes_is_imported_when_one_of_its_dtypes_is_asked_for():
    code = ("import sys\nfrom tileworkbench.ir.types import bfloat16, float32\n"
            "before = 'ml_dtypes' in sys.modules\nfloat32.numpy\nmiddle = 'ml_dtypes' in sys.modules\n"
            "bfloat16.numpy\nprint(before, middle, 'ml_dtypes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["False", "False", "True"]
