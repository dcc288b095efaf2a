"""The differential fuzzer against real cuTile (differential.py): its program families and its
comparison here on the interpreter; under cuTile on a GPU where one is set up."""
import importlib.util
import os

import ml_dtypes
import numpy as np
import pytest

from .differential import differential, load_kernel, main, refusal, same
from .families import FAMILIES, accumulation_bits, mma_tolerance
from .programs import FLOAT_DTYPES, INT_DTYPES, in_integer_range, random_program, with_cpp_names

SECONDS = float(os.environ.get("TILEWORKBENCH_DIFFERENTIAL_SECONDS", "5"))


def test_every_family_matches_its_numpy_expectation_on_the_interpreter():
    stats = differential(SECONDS, seed=11, interpreter_only=True)
    report = "\n\n".join(f"#{k}: {found}\n{source}" for _, k, found, source in stats.mismatches[:3])
    assert not stats.mismatches, f"{stats}\n{report}"
    assert stats.checked >= 20


def _with_cpp_names(rng):
    return with_cpp_names(random_program(rng), rng)


def _nvrtc_with_a_fresh_cache(tmp_path, monkeypatch):
    """The runtime module, with a kernel cache of the test's own; skips where NVRTC or headers are missing."""
    runtime = pytest.importorskip("tileworkbench.runtime.launch")
    try:
        runtime.cuda_include_dirs()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"needs NVRTC and the CUDA headers ({e})")
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return runtime


@pytest.mark.parametrize("family", FAMILIES + (_with_cpp_names,), ids=lambda f: f.__name__)
def test_every_family_compiles_with_nvrtc(family, tmp_path, monkeypatch):
    runtime = _nvrtc_with_a_fresh_cache(tmp_path, monkeypatch)
    program = family(np.random.default_rng(4))
    kernel = load_kernel(program.source, "tileworkbench.tile", tmp_path, 0)
    runtime.build(kernel.specialize(program.fresh_args()), "sm_90")


def test_compile_only_compiles_each_program_with_nvrtc(tmp_path, monkeypatch):
    _nvrtc_with_a_fresh_cache(tmp_path, monkeypatch)
    stats = differential(60, seed=5, limit=2, compile_only=True)
    assert stats.checked + stats.refused_by_cutile == 2 and not stats.mismatches


def test_the_report_opens_with_the_comparison_rules_and_the_counts(tmp_path, capsys):
    report = tmp_path / "report.txt"
    assert main(["--interpreter-only", "--minutes", "0.01", "--report", str(report)]) == 0
    head = report.read_text().splitlines()
    assert head[0].startswith("# interpreter only") and "--minutes 0.01 --seed 1" in head[0]
    assert any("ftoi" in line for line in head) and any("kernels checked" in line for line in head)


def test_a_refusal_is_summed_up_by_the_compilers_first_error():
    e = RuntimeError("Return code 3\nerror at offset 21: padding_value neg_zero can only be used with floating point"
                     "\nerror at offset 80: failed to get result type 0")
    assert refusal(e) == "RuntimeError: padding_value neg_zero can only be used with floating point"
    assert refusal(TypeError("Unsupported input dtype")) == "TypeError: Unsupported input dtype"
    assert refusal(RuntimeError("Return code 3\n'cuda_tile.divi' op rounding mode")) == \
        "RuntimeError: 'cuda_tile.divi' op rounding mode"


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


def test_elements_cutile_leaves_undefined_are_not_compared():
    cutile = np.array([0, 32, 5], np.uint32)
    ours = np.array([0, 0, 5], np.uint32)  # a saturated NaN
    assert "1 elements differ, first at (1,)" in same(cutile, ours, True, 0.0)
    assert same(cutile, ours, True, 0.0, defined=np.array([True, False, True])) is None
    assert same(cutile, ours + 1, True, 0.0, defined=np.array([True, False, True])) is not None


def test_a_float_to_integer_conversion_is_defined_in_cutile_only_within_the_integers_range():
    values = np.array([np.nan, np.inf, -np.inf, 127.9, 128.0, -128.9, -129.0, -0.5])
    assert in_integer_range(values, "int8").tolist() == [False, False, False, True, False, True, False, True]
    assert in_integer_range(values, "uint8").tolist() == [False, False, False, True, True, False, False, True]


def test_programs_mark_the_elements_an_out_of_range_conversion_or_an_unsigned_abs_reaches():
    programs = [random_program(np.random.default_rng(s)) for s in range(400)]
    marked = [p for p in programs if p.defined is not None]

    def float_to_int(op):
        return op.startswith("astype-") and op.split("-")[1] in FLOAT_DTYPES and op.split("-")[2] in INT_DTYPES
    assert any(any(map(float_to_int, p.ops)) for p in marked)
    for p in marked:
        assert any(float_to_int(op) or op == "abs" for op in p.ops)
        assert p.defined.shape == p.expected.shape and not p.defined.all()


def test_an_unsigned_abs_marks_the_values_cutile_reads_as_negative():
    from .programs import signed_abs_agrees
    values = np.array([0, 1, 127, 128, 200, 255], np.uint8)
    assert signed_abs_agrees(values).tolist() == [True, True, True, False, False, False]


@pytest.mark.parametrize("operand, accumulator", [("float16", "float32"), ("bfloat16", "float32"),
                                                  ("tfloat32", "float32"), ("float8_e4m3fn", "float32")])
def test_the_tensor_core_model_lies_within_half_the_mma_tolerance_of_the_exact_sum(operand, accumulator):
    from tileworkbench.interp.tensor_cores import tensor_core_mma
    rng = np.random.default_rng(0)
    storage = np.float32 if operand == "tfloat32" else getattr(ml_dtypes, operand, None) or np.dtype(operand)
    x, y = (rng.standard_normal(s).astype(storage) for s in ((32, 128), (128, 16)))
    if operand == "tfloat32":  # values of tfloat32: 10 mantissa bits
        x, y = (a.astype(ml_dtypes.bfloat16).astype(np.float32) for a in (x, y))
    acc = np.full((32, 16), 1.5, np.float32)
    model = tensor_core_mma(x, y, acc, operand)
    exact = x.astype(np.float64) @ y.astype(np.float64) + acc
    assert (np.abs(model - exact) <= mma_tolerance(x, y, acc, accumulation_bits(operand, accumulator)) / 2).all()


def test_an_mma_that_drops_one_product_is_outside_the_tolerance():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((16, 64)).astype(np.float32), rng.standard_normal((64, 16)).astype(np.float32)
    acc = np.zeros((16, 16), np.float32)
    tolerance = mma_tolerance(x, y, acc, accumulation_bits("float32", "float32"))
    right = (x.astype(np.float64) @ y).astype(np.float32)
    dropped = (x[:, 1:].astype(np.float64) @ y[1:]).astype(np.float32)
    assert same(right, right.copy(), False, 0.0, tolerance) is None
    assert "differ" in same(right, dropped, False, 0.0, tolerance)


def test_float32_operands_rounded_to_tfloat32_are_outside_the_float32_tolerance():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((32, 16)).astype(np.float32)
    tf32 = [a.astype(ml_dtypes.bfloat16).astype(np.float32) for a in (x, y)]  # coarser still: a clear case
    tolerance = mma_tolerance(x, y, np.zeros((16, 16)), accumulation_bits("float32", "float32"))
    right = (x.astype(np.float64) @ y).astype(np.float32)
    assert "differ" in same(right, (tf32[0].astype(np.float64) @ tf32[1]).astype(np.float32), False, 0.0, tolerance)


@pytest.mark.gpu
@pytest.mark.skipif(importlib.util.find_spec("cuda.tile") is None,
                    reason="needs real cuTile: source .cutile/setup.sh (benchmarks/prepare_cutile.sh)")
def test_random_programs_agree_with_cutile():
    pytest.importorskip("torch")
    stats = differential(60, seed=0)
    report = "\n\n".join(f"#{k}: {found}\n{source}" for _, k, found, source in stats.mismatches[:5])
    assert not stats.mismatches, f"{stats}\n{report}"
