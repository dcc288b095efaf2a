"""The differential fuzzer against real cuTile (differential.py): its program families and its
comparison here on the interpreter; under cuTile on a GPU where one is set up."""
import importlib.util
import os

import numpy as np
import pytest

from .differential import differential, load_kernel, same
from .families import FAMILIES

SECONDS = float(os.environ.get("TILEWORKBENCH_DIFFERENTIAL_SECONDS", "5"))


def test_every_family_matches_its_numpy_expectation_on_the_interpreter():
    stats = differential(SECONDS, seed=11, interpreter_only=True)
    report = "\n\n".join(f"#{k}: {found}\n{source}" for _, k, found, source in stats.mismatches[:3])
    assert not stats.mismatches, f"{stats}\n{report}"
    assert stats.checked >= 20


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_every_family_compiles_with_nvrtc(family, tmp_path, monkeypatch):
    runtime = pytest.importorskip("tileworkbench.runtime.launch")
    try:
        runtime.cuda_include_dirs()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"needs NVRTC and the CUDA headers ({e})")
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    program = family(np.random.default_rng(4))
    kernel = load_kernel(program.source, "tileworkbench.tile", tmp_path, 0)
    runtime.build(kernel.specialize(program.fresh_args()), "sm_90")


def test_the_comparison_is_bitwise_for_exact_results_and_within_rounding_otherwise():
    a = np.array([1.0, np.nan, -0.0, 3.0], np.float32)
    assert same(a, a.copy(), True, 0.0) is None
    assert same(a, np.array([1.0, np.nan, 0.0, 3.0], np.float32), True, 0.0) is None  # the sign of zero is open
    nudged = a.copy()
    nudged[3] = np.nextafter(np.float32(3.0), np.float32(4.0))
    assert "1 elements differ, first at (3,)" in same(a, nudged, True, 0.0)
    assert same(a, nudged, False, 2.0 ** -23) is None
    assert "differ" in same(a, np.array([1.0, 2.0, -0.0, 3.0], np.float32), False, 2.0 ** -10)
    assert "differ" in same(np.array([7], np.int8), np.array([-7], np.int8), True, 0.0)


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("cuda.tile") is None,
                    reason="needs real cuTile: source .cutile/setup.sh (benchmarks/prepare_cutile.sh)")
def test_random_programs_agree_with_cutile():
    pytest.importorskip("torch")
    stats = differential(60, seed=0)
    report = "\n\n".join(f"#{k}: {found}\n{source}" for _, k, found, source in stats.mismatches[:5])
    assert not stats.mismatches, f"{stats}\n{report}"
