"""The values of op attributes that the language spells as enums, and what they mean.

`tile` re-exports them (`ct.PaddingMode.ZERO` is `PaddingMode.ZERO` here); the frontend checks
arguments against them, and the interpreter and the code generator read their semantics from
here, so every layer agrees (e.g. on what a padded load reads).
"""
from __future__ import annotations

import enum

import numpy as np


# Member values are cuTile's (code that prints or compares `.value` sees the same).
class PaddingMode(enum.Enum):
    """What a load reads where its tile hangs over the array's edge."""
    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class RoundingMode(enum.Enum):
    RN = "nearest_even"
    RZ = "zero"
    RM = "negative_inf"
    RP = "positive_inf"
    RA = "nearest_away"
    FULL = "full"
    APPROX = "approx"
    RZI = "nearest_int_to_zero"


class MemoryOrder(enum.Enum):
    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    NONE = "none"
    BLOCK = "block"
    CLUSTER = "cluster"
    DEVICE = "device"
    SYS = "sys"


def padding_value(mode: PaddingMode, dtype):
    """The value a load reads outside the array under `mode`, for an element of `dtype`."""
    name = mode.name
    if dtype.kind == "b":
        return name not in ("ZERO", "NEG_ZERO", "UNDETERMINED")
    if dtype.is_integral:  # NaN has no integer value: the one farthest from zero stands in
        info = np.iinfo(dtype.numpy)
        return {"ZERO": 0, "NEG_ZERO": 0, "UNDETERMINED": 0, "POS_INF": info.max, "NEG_INF": info.min}.get(
            name, info.min if dtype.is_signed else info.max)
    return {"ZERO": 0.0, "NEG_ZERO": -0.0, "UNDETERMINED": 0.0, "POS_INF": np.inf, "NEG_INF": -np.inf,
            "NAN": np.nan}[name]
