"""A float multiply is fused into its one add or subtract as cuTile's compiler fuses it: by use
count, left operand first, only where both round alike (tileworkbench/ir/fuse.py)."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.ir import print_function


def _ops(kernel, dtype=np.float32):
    args = tuple(np.zeros(16, dtype) for _ in range(4))
    fn = kernel.specialize(args)
    return [op.name for op in fn.walk()], print_function(fn)


def _load3(x, y, z):
    return ct.load(x, (0,), (16,)), ct.load(y, (0,), (16,)), ct.load(z, (0,), (16,))


@ct.kernel
def added(x, y, z, out):
    a, b, c = _load3(x, y, z)
    ct.store(out, (0,), a * b + c)


@ct.kernel
def subtracted_from(x, y, z, out):
    a, b, c = _load3(x, y, z)
    ct.store(out, (0,), c - a * b)


@ct.kernel
def product_used_twice(x, y, z, out):
    a, b, c = _load3(x, y, z)
    p = a * b
    ct.store(out, (0,), (p + c) + p)


@ct.kernel
def left_product_used_again(x, y, z, out):
    a, b, c = _load3(x, y, z)
    p = a * b
    ct.store(out, (0,), p + c * b + p)


@ct.kernel
def roundings_differ(x, y, z, out):
    a, b, c = _load3(x, y, z)
    ct.store(out, (0,), ct.mul(a, b, rounding_mode=ct.RoundingMode.RZ) + c)


@ct.kernel
def roundings_agree(x, y, z, out):
    a, b, c = _load3(x, y, z)
    ct.store(out, (0,), ct.add(ct.mul(a, b, rounding_mode=ct.RoundingMode.RZ), c, rounding_mode=ct.RoundingMode.RZ))


@ct.kernel
def across_a_loop(x, y, z, out):
    a, b, c = _load3(x, y, z)
    p = a * b
    for _ in range(3):
        c = c + p  # p's one use, inside the loop: fused there
    ct.store(out, (0,), c)


@pytest.mark.parametrize("dtype", [np.float16, ct.bfloat16.numpy, np.float32, np.float64])
def test_a_product_with_one_use_in_an_add_is_one_fma_in_every_float_dtype(dtype):
    names, _ = _ops(added, dtype)
    assert names.count("fma") == 1 and "mul" not in names and "add" not in names


def test_integer_multiply_adds_are_left_alone():
    names, _ = _ops(added, np.int32)
    assert "fma" not in names and names.count("mul") == 1


def test_a_product_subtracted_from_is_fused_with_its_left_factor_negated():
    names, text = _ops(subtracted_from)
    assert names.count("fma") == 1 and names.count("neg") == 1 and "sub" not in names
    fma_line = next(line for line in text.splitlines() if " fma " in line)
    neg_result = next(line for line in text.splitlines() if " neg " in line).split(" = ")[0].strip()
    assert fma_line.split(" fma ")[1].startswith(neg_result)


def test_a_product_used_twice_is_not_fused():
    names, _ = _ops(product_used_twice)
    assert "fma" not in names and names.count("add") == 2


def test_the_left_operand_decides_as_in_cutile_so_a_right_product_with_one_use_stays_apart():
    names, _ = _ops(left_product_used_again)
    assert "fma" not in names and names.count("mul") == 2


def test_products_fuse_only_with_adds_that_round_the_same_way():
    assert "fma" not in _ops(roundings_differ)[0]
    names, text = _ops(roundings_agree)
    assert names.count("fma") == 1 and "rounding=RZ" in next(line for line in text.splitlines() if " fma " in line)


def test_a_product_whose_one_use_is_inside_a_loop_is_fused_there():
    names, _ = _ops(across_a_loop)
    assert names.count("fma") == 1 and "mul" not in names
