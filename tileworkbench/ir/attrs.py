"""The values of op attributes that the language spells as enums, and what they mean.

`tile` re-exports them (`ct.PaddingMode.ZERO` is `PaddingMode.ZERO` here); the frontend checks
arguments against them, and the interpreter and the code generator read their semantics from
here, so every layer agrees (e.g. on what a padded load reads).
"""
from __future__ import annotations

import enum

import numpy as np


class PaddingMode(enum.Enum):
    """What a load reads where its tile hangs over the array's edge."""
    UNDETERMINED = 0
    ZERO = 1
    NEG_ZERO = 2
    NAN = 3
    POS_INF = 4
    NEG_INF = 5


class RoundingMode(enum.Enum):
    RN = 0
    RZ = 1
    RM = 2
    RP = 3
    RA = 4
    FULL = 5
    APPROX = 6
    RZI = 7


class MemoryOrder(enum.Enum):
    WEAK = 0
    RELAXED = 1
    ACQUIRE = 2
    RELEASE = 3
    ACQ_REL = 4


class MemoryScope(enum.Enum):
    NONE = 0
    BLOCK = 1
    CLUSTER = 2
    DEVICE = 3
    SYS = 4


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
