"""Kernel arguments as every layer sees them: grids, arrays of any framework, and the argument
profile that selects a specialization (array dtypes and ranks, scalar dtypes, Constant values).

The language (`tile`), the interpreter and the GPU runtime all read arguments through here, so
they agree on what an array is and on which specialization a launch takes. Array frameworks are
recognised by their classes, looked up only where the framework is already imported: nothing
here imports CuPy or PyTorch.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ArgumentTypeError, ArgumentValueError
from .ir.types import ArrayType, bool_, complex64, float32, int32, int64, scalar, to_dtype


def framework_class(module: str, name: str):
    """`module.name` if that framework is imported already, else None (then no object is one)."""
    loaded = sys.modules.get(module)
    return getattr(loaded, name, None) if loaded is not None else None


def is_torch_tensor(obj) -> bool:
    tensor = framework_class("torch", "Tensor")
    return tensor is not None and isinstance(obj, tensor)


def is_cupy_array(obj) -> bool:
    ndarray = framework_class("cupy", "ndarray")
    return ndarray is not None and isinstance(obj, ndarray)


def is_host_tensor(obj) -> bool:
    """A PyTorch tensor in host memory (it runs on the interpreter, in place)."""
    return type(obj).__module__.startswith("torch") and hasattr(obj, "is_cuda") and not obj.is_cuda


INTERPRET_ENV = "TILEWORKBENCH_INTERPRET"
# Launches ask at every call, and os.environ.get of an unset variable raises and catches a KeyError,
# which costs as much as the rest of a launch; the mapping os.environ keeps its variables in (and
# updates in place when they change) answers "unset" without one.
_ENVIRON_DATA, _INTERPRET_KEY = os.environ._data, os.environ.encodekey(INTERPRET_ENV)


def interpret_requested() -> bool:
    """Whether the environment asks for every launch to run on the interpreter (read at each launch,
    so setting it in a running notebook takes effect at the next launch)."""
    if _INTERPRET_KEY not in _ENVIRON_DATA:
        return False
    return os.environ.get(INTERPRET_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def is_array_like(obj) -> bool:
    """NumPy arrays, and anything with __cuda_array_interface__ or DLPack."""
    if type(obj) in _ARRAY_TYPES:  # launches ask this for every argument: remember the array types
        return True
    if is_torch_tensor(obj):  # its __cuda_array_interface__ raises for fp8 and for tensors that require grad
        _ARRAY_TYPES.add(type(obj))
        return True
    if isinstance(obj, np.ndarray) or not isinstance(obj, np.generic) and (
            hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__")):
        if hasattr(type(obj), "__cuda_array_interface__") or hasattr(type(obj), "__dlpack__"):
            _ARRAY_TYPES.add(type(obj))  # a class-level protocol: every instance is an array
        return True
    return False


_ARRAY_TYPES: set = set()


def host_numpy(tensor) -> np.ndarray:
    """A NumPy view of a PyTorch tensor in host memory; bfloat16 and fp8, which NumPy lacks, through
    their bits, as the ml_dtypes types of the same names."""
    dtype = to_dtype(tensor.dtype)
    if dtype.numpy.kind != "V" and dtype.numpy.type.__module__ == "numpy":
        return tensor.detach().numpy()
    import torch
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[dtype.itemsize]
    return tensor.detach().view(bits).numpy().view(dtype.numpy)


def host_tensor(array: np.ndarray):
    """A PyTorch host tensor sharing a NumPy array's memory; bfloat16 and fp8 (ml_dtypes) through
    their bits, as the PyTorch dtypes of the same names."""
    import torch
    if array.dtype.type.__module__ == "numpy":
        return torch.from_numpy(array)
    bits = {1: np.uint8, 2: np.int16, 4: np.int32}[array.dtype.itemsize]
    return torch.from_numpy(array.view(bits)).view(getattr(torch, array.dtype.name))


def known_array_type(cls) -> bool:
    """Whether instances of `cls` were seen to be arrays (a cheap check for the launch path)."""
    return cls in _ARRAY_TYPES


def array_dtype(value):
    """The NumPy (or ml_dtypes) dtype of an array argument."""
    if isinstance(value, np.ndarray) or is_torch_tensor(value):
        return value.dtype
    if hasattr(value, "__cuda_array_interface__"):
        dtype = np.dtype(value.__cuda_array_interface__["typestr"])
        if dtype.kind == "V":
            raise TypeError(f"Array of dtype {dtype} ({type(value).__name__}): its element type cannot be told from "
                            f"__cuda_array_interface__; pass bfloat16/fp8 arrays as PyTorch tensors")
        return dtype
    return value.dtype


def grid_rank(grid) -> int:
    """How many axes a grid is written with in views and messages: up to the last one longer than 1
    (at least one)."""
    return max([k + 1 for k, g in enumerate(grid) if g > 1] or [1])


def block_text(block, grid) -> str:
    """A block as every view and error message writes it: "block (2,)" in a grid of one axis,
    "block (2, 1)" in one of two (grid_rank), whether the block is given with 1, 2 or 3 coordinates."""
    coords = tuple(int(b) for b in block) + (0,) * (3 - len(block))
    return f"block {coords[:grid_rank(grid)]}"


def normalize_grid(grid) -> tuple[int, int, int]:
    """A grid of 1-3 positive ints as (x, y, z)."""
    if type(grid) is tuple:  # launch loops repeat their grids
        known = _valid_grids.get(grid)
        if known is not None:
            # (1.0,) and (True,) equal (1,) as dict keys: only plain ints may take the cached answer
            for value in grid:  # inline, not a call: launches pass here every time
                if type(value) is not int:
                    break
            else:
                return known
    if not isinstance(grid, tuple):
        raise ArgumentTypeError(f"Grid must be a tuple, got {type(grid).__name__}")
    if not 1 <= len(grid) <= 3:
        raise ArgumentValueError(f"Grid must have 1 to 3 dimensions, got {len(grid)}: {grid!r}")
    for i, g in enumerate(grid):
        if not isinstance(g, (int, np.integer)) or isinstance(g, (bool, np.bool_)) or g < 1:
            raise ArgumentValueError(f"Grid[{i}] must be a positive integer, got {g!r}")
        if g > 2**24 - 1:
            raise ArgumentValueError(f"Grid[{i}] exceeds 24-bit limit: {g}")
    normalized = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    if len(_valid_grids) < 4096 and _plain_ints(grid):
        _valid_grids[grid] = normalized
    return normalized


_valid_grids: dict = {}


def _plain_ints(values) -> bool:
    for value in values:  # a loop, not all(...): no generator per launch
        if type(value) is not int:
            return False
    return True


@dataclass(frozen=True)
class ParamSpec:
    """How one argument specializes the kernel."""

    name: str
    kind: str          # 'array', 'scalar', 'constant', 'list' (of arrays), 'tuple'
    type: Any = None
    value: Any = None
    items: tuple = ()  # a list or tuple: each item's spec, named `As[0]`, `As[1]`, ...

    def key(self):
        if self.kind == "constant":
            return ("constant", type(self.value).__name__, self.value)
        if self.kind in ("list", "tuple"):
            return (self.kind, tuple(item.key() for item in self.items))
        return (self.kind, str(self.type))


def param_spec(name: str, value, position: int, *, constant: bool, int64_scalar: bool) -> ParamSpec:
    """The spec of argument #`position` for parameter `name`."""
    if constant:
        if isinstance(value, (np.bool_, np.integer, np.floating)):
            value = value.item()  # np.int64(4) specializes as 4 does
        if not isinstance(value, (bool, int, float)) and value is not None:
            raise ArgumentTypeError(f"Invalid kernel argument #{position}: a Constant parameter takes bool, int or "
                                    f"float, not '{type(value).__name__}' (parameter {name})")
        return ParamSpec(name, "constant", value=value)
    if is_array_like(value):
        return ParamSpec(name, "array", ArrayType(_argument_dtype(array_dtype(value), name, position), value.ndim))
    if isinstance(value, list):
        return _list_spec(name, value, position)
    if isinstance(value, tuple):  # its items are arguments of their own, indexed by constants in the kernel
        return ParamSpec(name, "tuple", items=tuple(param_spec(f"{name}[{i}]", item, position, constant=False,
                                                               int64_scalar=int64_scalar)
                                                    for i, item in enumerate(value)))
    if isinstance(value, (bool, np.bool_)):
        return ParamSpec(name, "scalar", scalar(bool_))
    if isinstance(value, int):
        dtype = int64 if int64_scalar else int32
        lo, hi = np.iinfo(dtype.numpy).min, np.iinfo(dtype.numpy).max
        if not lo <= value <= hi:
            raise ArgumentValueError(f"Invalid kernel argument #{position}: {value} does not fit {dtype} "
                                     f"(parameter {name})")
        return ParamSpec(name, "scalar", scalar(dtype))
    if isinstance(value, np.generic):
        return ParamSpec(name, "scalar", scalar(_argument_dtype(value.dtype, name, position)))
    if isinstance(value, float):
        return ParamSpec(name, "scalar", scalar(float32))
    if isinstance(value, complex):  # as a float is float32
        return ParamSpec(name, "scalar", scalar(complex64))
    raise ArgumentTypeError(f"Invalid kernel argument #{position}: Objects of type '{type(value).__name__}' are not "
                            f"supported. (parameter {name})")


def _list_spec(name: str, items: list, position: int) -> ParamSpec:
    """A list of arrays: one dtype and one rank (the kernel indexes it at run time), any shapes and strides."""
    def refuse(what: str):
        raise ArgumentTypeError(f"Invalid kernel argument #{position}: {what} (parameter {name})")
    if not items:
        refuse("Empty lists are not supported as kernel arguments")
    specs = []
    for i, item in enumerate(items):
        if not is_array_like(item):
            refuse(f"Expected list items to be arrays, got {type(item).__name__} (item #{i})")
        spec = ParamSpec(f"{name}[{i}]", "array", ArrayType(_argument_dtype(array_dtype(item), name, position),
                                                             item.ndim))
        if specs and spec.type.dtype is not specs[0].type.dtype:
            refuse(f"Arrays in list vary in data type ({specs[0].type.dtype} and {spec.type.dtype} at item #{i})")
        if specs and spec.type.ndim != specs[0].type.ndim:
            refuse(f"Arrays in list vary in rank ({specs[0].type.ndim} and {spec.type.ndim} at item #{i})")
        specs.append(spec)
    return ParamSpec(name, "list", items=tuple(specs))


def argument_leaves(args) -> tuple:
    """The arguments with lists and tuples opened, in the order of a specialization's parameters
    (`Function.params`: each array or scalar of a list or tuple argument is one of them)."""
    if not any(isinstance(value, (list, tuple)) for value in args):
        return args
    return tuple(leaf for value in args
                 for leaf in (argument_leaves(value) if isinstance(value, (list, tuple)) else (value,)))


def _argument_dtype(dtype, name: str, position: int):
    try:
        return to_dtype(dtype)
    except TypeError:
        raise ArgumentTypeError(f"Invalid kernel argument #{position}: dtype {dtype} is not a tile dtype; bool, "
                                f"integers, float16/32/64, complex64/128, bfloat16 and float8 are (parameter {name})") from None


def profile_key(constant_mask, args) -> tuple:
    """What selects a specialization, cheaply: array dtypes and ranks, scalar types, Constant values,
    the items of lists and tuples likewise."""
    return tuple((type(value), value) if constant else _argument_key(value)
                 for constant, value in zip(constant_mask, args))


def _argument_key(value) -> tuple:
    if type(value) in _PYTHON_SCALARS:  # no getattr that raises inside
        return (type(value),)
    if isinstance(value, (list, tuple)):
        return type(value), tuple(map(_argument_key, value))
    return type(value), getattr(value, "dtype", None), getattr(value, "ndim", None)


_PYTHON_SCALARS = frozenset({bool, int, float})
