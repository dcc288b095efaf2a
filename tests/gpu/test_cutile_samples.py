"""cuTile's samples, unchanged, through the cuda.tile alias on the GPU and with the interpreter
switch: each passes its own --correctness-check. The samples are fetched separately (never part of
this repository): TILEWORKBENCH_CUTILE_SAMPLES names their folder, else .cutile/samples here."""
import os
from pathlib import Path

import pytest

from benchmarks.cutile_samples import SAMPLES, run_sample

ROOT = Path(__file__).resolve().parents[2]
SAMPLES_DIR = Path(os.environ.get("TILEWORKBENCH_CUTILE_SAMPLES", ROOT / ".cutile" / "samples"))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["gpu", "interpret"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_cutile_sample_passes_its_correctness_check(sample, mode):
    pytest.importorskip("torch")
    if not (SAMPLES_DIR / f"{sample}.py").exists():
        pytest.skip(f"cuTile's samples are not at {SAMPLES_DIR} (set TILEWORKBENCH_CUTILE_SAMPLES)")
    run = run_sample(SAMPLES_DIR, sample, mode, timeout=1800)
    assert run.outcome == "pass", f"{sample} [{mode}]: {run.error}"
    assert run.checks >= 1
