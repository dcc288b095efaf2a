"""The interpreter's model of the tensor cores' arithmetic (interp/tensor_cores.py): steps of a block of
products aligned to the largest exponent, truncated, summed exactly and truncated; float8 partial sums."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.interp.tensor_cores import BLOCK_ADDERS, tensor_core_mma
from tileworkbench.tile import evaluate

F8 = ct.float8_e4m3fn.numpy
ZERO = np.zeros((1, 1), np.float32)


def dot(pairs, k, fmt, acc=ZERO):
    """acc + the products of (position, a, b) pairs, the rest of the k positions zero."""
    dtype = {"float16": np.float16, "bfloat16": ct.bfloat16.numpy, "tfloat32": np.float32,
             "float8_e4m3fn": F8, "float8_e5m2": ct.float8_e5m2.numpy}[fmt]
    a, b = np.zeros((1, k), dtype), np.zeros((k, 1), dtype)
    for position, x, y in pairs:
        a[0, position], b[position, 0] = x, y
    return tensor_core_mma(a, b, acc, fmt)[0, 0]


@pytest.mark.parametrize("fmt", ["float16", "bfloat16", "tfloat32"])
def test_a_step_sums_its_products_exactly_and_the_next_step_starts_from_the_truncated_sum(fmt):
    terms = BLOCK_ADDERS[fmt].terms
    big = 4096.0  # big * big + 1 needs 25 bits
    assert dot([(0, big, big), (1, 1, 1), (terms - 1, big, -big)], 2 * terms, fmt) == 1
    assert dot([(0, big, big), (1, 1, 1), (terms, big, -big)], 2 * terms, fmt) == 0


def test_a_step_truncates_toward_zero_where_float32_would_round_up():
    # 1 + 0.75 ulp: float32 rounds to 1 + ulp, the tensor cores truncate to 1
    quarter_ulp = 2.0 ** -25
    result = dot([(0, 1, 1), (1, 3 * 2 ** -13, 2 ** -12)], 16, "float16")
    assert 1 + 3 * quarter_ulp == 1 + 3 * 2 ** -25 and result == np.float32(1)
    assert np.float32(1 + 3 * quarter_ulp) == np.float32(1) + np.float32(2 ** -23)


def test_terms_more_than_two_bits_below_the_lead_are_dropped_before_the_sum():
    # sixteen products of 2**-27 sum to one float32 ulp of 1, but each is below the 2**-25 the adder keeps
    tiny = [(k, 2 ** -13, 2 ** -14) for k in range(1, 16)]
    assert dot([(0, 1, 1)] + tiny, 16, "float16") == 1
    assert dot(tiny, 16, "float16") == np.float32(15 * 2 ** -27)  # alone, they lead: exact


def test_float8_steps_keep_14_significant_bits():
    # 256 + 1/16 needs 13 bits: kept; 256 + 1/64 needs 15: truncated
    assert dot([(0, 16, 16), (1, 0.25, 0.25)], 32, "float8_e4m3fn") == 256.0625
    assert dot([(0, 16, 16), (1, 0.125, 0.125)], 32, "float8_e4m3fn") == 256


def test_float8_partial_sums_restart_every_128_products_and_add_in_float32():
    # within 128 products the 14-bit accumulator loses 1/64 next to 256; a new partial sum keeps it
    same_partial = dot([(0, 16, 16), (64, 0.125, 0.125)], 256, "float8_e4m3fn")
    next_partial = dot([(0, 16, 16), (128, 0.125, 0.125)], 256, "float8_e4m3fn")
    assert (same_partial, next_partial) == (256, 256.015625)


def test_nan_and_infinities_are_what_ieee_arithmetic_gives():
    assert np.isnan(dot([(0, np.inf, 0)], 16, "float16"))
    assert dot([(0, np.inf, 1), (20, 1, 1)], 32, "float16") == np.inf
    assert np.isnan(dot([(0, np.inf, 1), (1, -np.inf, 1)], 16, "float16"))
    largest = np.finfo(np.float32).max  # truncation toward zero never overflows a finite sum
    assert dot([(0, 60000, 60000)], 16, "float16", acc=np.full((1, 1), largest, np.float32)) == largest


def test_small_integer_sums_are_exact_and_batches_broadcast_the_accumulator():
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (3, 8, 40)).astype(np.float16)
    b = rng.integers(-3, 4, (3, 40, 8)).astype(np.float16)
    acc = rng.integers(-8, 9, (1, 8, 8)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64) + acc
    np.testing.assert_array_equal(tensor_core_mma(a, b, acc, "float16"), want.astype(np.float32))


def test_the_interpreters_mma_uses_the_model_for_tensor_core_formats_into_float32_only(monkeypatch):
    from tileworkbench.interp import rules
    formats = []
    model = rules.tensor_core_mma
    monkeypatch.setattr(rules, "tensor_core_mma", lambda *args: formats.append(args[-1]) or model(*args))
    ones = np.ones((16, 16), np.float32)
    for x, acc in [(ones.astype(np.float16), ones), (ones, ones), (ones.astype(np.float16), ones.astype(np.float16)),
                   (ones.astype(F8), ones)]:
        result = evaluate(lambda a, b, c: ct.mma(a, b, c), x, x, acc)
        np.testing.assert_array_equal(result, np.full((16, 16), 17))
    assert formats == ["float16", "float8_e4m3fn"]
