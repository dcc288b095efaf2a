"""The tensor cores' arithmetic, bit for bit, for the interpreter's `mma`.

A tensor-core mma does not round like a chain of float32 fused multiply-adds. Each instruction step
sums a block of products and the accumulator in one multi-term adder:

1. every product is exact;
2. all terms are aligned to the largest exponent among them (the products' exponents taken as the
   sum of their factors' exponents) and truncated a fixed number of bits below the accumulator's
   last bit: `extra_bits` (negative for 8-bit floats: their adder keeps fewer bits);
3. the aligned terms are summed exactly and the sum is truncated (rounded toward zero) to the
   accumulator's precision: 24 significant bits for float32, 14 for 8-bit inputs.

The next block starts from that result. For 8-bit inputs every 128 products start from zero and
that partial sum is added to the float32 result with a float32 addition, as cuBLAS's and cuTile's
fp8 GEMMs do (without it, a long K would keep only 14 bits).

This is the sm_90 (H100) tensor core as Khattak and Mikaitis model it ("Accurate models of NVIDIA
tensor cores", 2025). On the H100 it gives the tensor cores' results bit for bit, and cuBLAS's and
cuTile's (benchmarks/probe/tensor_core_numerics.py checks it there). The tile library computes the same model where an mma runs on the CUDA cores
(`tensor_core_dot` in tile_mma.cuh). A result that is NaN or infinite in exact arithmetic is that
NaN or infinity.
"""
from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

_FLOAT32_MIN_EXPONENT = -126
_MIN_ALIGNMENT_EXPONENT = -133  # the adder's alignment exponent never goes below it
_ELEMENTS_PER_CHUNK = 1 << 21  # products held at once: bounds the interpreter's memory on big tiles


@dataclass(frozen=True)
class BlockAdder:
    """One tensor-core step for an input format: how many products it sums and how it aligns them."""
    terms: int
    extra_bits: int
    min_exponent: int  # the input format's smallest normal exponent (subnormals align as if at it)
    partial: int = 0   # products per partial sum started from zero (0: the accumulator runs through)


BLOCK_ADDERS = {
    "float16": BlockAdder(terms=16, extra_bits=2, min_exponent=-14),
    "bfloat16": BlockAdder(terms=16, extra_bits=2, min_exponent=-126),
    "tfloat32": BlockAdder(terms=8, extra_bits=2, min_exponent=-126),
    "float8_e4m3fn": BlockAdder(terms=32, extra_bits=-10, min_exponent=-6, partial=128),
    "float8_e5m2": BlockAdder(terms=32, extra_bits=-10, min_exponent=-14, partial=128),
}


def _exponent(x: np.ndarray, floor: int) -> np.ndarray:
    """floor(log2|x|), at least `floor`; zeros get a very small exponent so they never lead an alignment."""
    exponent = np.maximum(np.frexp(x)[1] - 1, floor).astype(np.int32)
    return np.where(x == 0, np.int32(-(1 << 20)), exponent)


def _truncate(values: np.ndarray, bits: int) -> np.ndarray:
    """values (exact in float64) truncated to `bits` significant bits as float32 holds them (subnormal
    below 2**-126); from 2**128 on, infinity."""
    exponent = np.maximum(np.frexp(values)[1] - 1, _FLOAT32_MIN_EXPONENT)
    quantum = np.ldexp(1.0, exponent - (bits - 1))
    truncated = np.trunc(values / quantum) * quantum
    return np.where(np.abs(truncated) >= 2.0 ** 128, np.copysign(np.inf, values), truncated)


def _block_step(x, y, x_exponent, y_exponent, acc, adder: BlockAdder):
    """acc + x @ y for one block of `adder.terms` finite products: x (..., M, T) and y (..., T, N), their
    exponents, acc (..., M, N) as float64. One outer product at a time: NumPy is fast over (M, N), slow
    reducing a short last axis."""
    terms = x.shape[-1]
    lead = _exponent(acc, _FLOAT32_MIN_EXPONENT)
    for k in range(terms):
        lead = np.maximum(lead, x_exponent[..., :, k, None] + y_exponent[..., k, None, :])
    shift = 23 + adder.extra_bits - np.maximum(lead, _MIN_ALIGNMENT_EXPONENT)
    # float32 holds the products and the scale exactly unless the step's values are tiny (its alignment
    # exponent below -75) or huge (above 125)
    in_float32 = shift.max(initial=0) <= 100 and shift.min(initial=0) >= 23 + adder.extra_bits - 125
    exact = np.float32 if in_float32 else np.float64
    x, y, scale = x.astype(exact, copy=False), y.astype(exact, copy=False), np.ldexp(exact(1), shift)
    # each product in units of the step's last kept bit, truncated; the sum is exact in float64 (< 2**34 units)
    units = np.trunc(np.ldexp(acc, shift))
    for k in range(terms):
        units += np.trunc(x[..., :, k, None] * y[..., k, None, :] * scale)
    return _truncate(np.ldexp(units, -shift), 24 + min(adder.extra_bits, 0))


def _steps(x, y, acc, adder: BlockAdder):
    """acc (float64) + x @ y, one step per `adder.terms` products in K order, row chunks in parallel."""
    x_exponent, y_exponent = _exponent(x, adder.min_exponent), _exponent(y, adder.min_exponent)
    x, y = x.astype(np.float32), y.astype(np.float32)  # exact: values of a tensor-core format
    rows_per_chunk = max(1, _ELEMENTS_PER_CHUNK // max(1, adder.terms * y.shape[-1] * int(np.prod(x.shape[:-2]))))

    def rows(start):
        part = slice(start, start + rows_per_chunk)
        for k in range(0, x.shape[-1], adder.terms):
            step = slice(k, k + adder.terms)
            operands = (x[..., part, step], y[..., step, :], x_exponent[..., part, step], y_exponent[..., step, :],
                        acc[..., part, :], adder)
            finite = all(np.isfinite(a).all() for a in operands[:2] + operands[4:5])
            acc[..., part, :] = _block_step(*operands) if finite else _ieee_step(*operands)
    list(_pool().map(rows, range(0, x.shape[-2], rows_per_chunk)))
    return acc


@np.errstate(invalid="ignore", over="ignore")
def _ieee_step(x, y, x_exponent, y_exponent, acc, adder: BlockAdder):
    """A step with a NaN or an infinity among its operands: the model where its sum is finite, else the
    NaN or infinity IEEE arithmetic makes (inf * 0 and inf - inf are NaN)."""
    exact = acc  # summed product by product: BLAS may skip zeros, and inf * 0 must be NaN
    for k in range(x.shape[-1]):
        exact = exact + x[..., :, k, None].astype(np.float64) * y[..., k, None, :]
    finite = [np.where(np.isfinite(a), a, 0) for a in (x, y, acc)]
    model = _block_step(finite[0], finite[1], x_exponent, y_exponent, finite[2], adder)
    return np.where(np.isfinite(exact), model, exact)


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """NumPy releases the GIL in its loops: row chunks run on every core."""
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="tensor-core-model")


def tensor_core_mma(x: np.ndarray, y: np.ndarray, acc: np.ndarray, input_format: str) -> np.ndarray:
    """acc + x @ y as the tensor cores compute it into a float32 accumulator; x and y hold values of
    `input_format` (a key of BLOCK_ADDERS), with any leading batch dimensions."""
    adder = BLOCK_ADDERS[input_format]
    x, y = x.astype(np.float64), y.astype(np.float64)
    shape = np.broadcast_shapes(x.shape[:-2], y.shape[:-2], acc.shape[:-2]) + acc.shape[-2:]
    if not adder.partial:
        return _steps(x, y, np.broadcast_to(acc, shape).astype(np.float64), adder).astype(np.float32)
    result = np.broadcast_to(acc, shape).astype(np.float32)
    for start in range(0, x.shape[-1], adder.partial):
        part = slice(start, start + adder.partial)
        zero = np.zeros(shape, np.float64)
        result = result + _steps(x[..., part], y[..., part, :], zero, adder).astype(np.float32)  # a float32 add
    return result
