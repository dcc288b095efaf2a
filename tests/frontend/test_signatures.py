"""Every tile function takes its arguments as cuTile's compiler takes them: bound by the Python
signature of its stub, so names, kinds (positional-only, keyword-only) and defaults must be
cuTile's. The elementwise functions are made from their op declarations (ir/ops.py); the table
below records the signatures of cuTile 1.6's `cuda.tile._stub` (1.7's for its newer names) for the functions both define."""
import inspect

import pytest

import tileworkbench.tile as ct
from tileworkbench.frontend.lowering import LOWERINGS, _matches_stub
from tileworkbench.ir import stubs
from tileworkbench.ir.ops import OPS, OPTIONS, Category, Rules

P = inspect.Parameter

CUTILE = {
    "bid": "axis",
    "num_blocks": "axis",
    "num_tiles": "array, /, axis, shape, order='C'",
    "load": "array, /, index, shape, *, order='C', padding_mode=PaddingMode.UNDETERMINED, check_bounds=True, latency=None, allow_tma=None, memory_order=MemoryOrder.WEAK, memory_scope=MemoryScope.NONE",
    "store": "array, /, index, tile, *, order='C', check_bounds=True, latency=None, allow_tma=None, memory_order=MemoryOrder.WEAK, memory_scope=MemoryScope.NONE",
    "load_advanced_indexing": "array, indices, /, *, padding_mode=PaddingMode.UNDETERMINED, latency=None, allow_tma=None",
    "store_advanced_indexing": "array, indices, tile, /, *, latency=None, allow_tma=None",
    "gather": "array, indices, /, *, mask=None, padding_value=0, check_bounds=True, latency=None",
    "scatter": "array, indices, value, /, *, mask=None, check_bounds=True, latency=None",
    "atomic_cas": "array, indices, expected, desired, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "atomic_xchg": "array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "atomic_add": "array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "atomic_max": "array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "atomic_min": "array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "atomic_and": "array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "atomic_or": "array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "atomic_xor": "array, indices, update, /, *, check_bounds=True, memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE",
    "arange": "size, /, *, dtype, start=0, step=1",
    "full": "shape, fill_value, dtype",
    "ones": "shape, dtype",
    "zeros": "shape, dtype",
    "astile": "value, /, *, dtype",
    "mma": "x, y, /, acc, *, use_fast_acc=False",
    "matmul": "x, y, /",
    "expand_dims": "x, /, axis",
    "cat": "tiles, /, axis",
    "broadcast_to": "x, /, shape",
    "reshape": "x, /, shape",
    "permute": "x, /, axes",
    "transpose": "x, /, axis0=None, axis1=None",
    "astype": "x, dtype, /, *, rounding_mode=None",
    "bitcast": "x, /, dtype",
    "sum": "x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False",
    "max": "x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False",
    "min": "x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False",
    "prod": "x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False",
    "argmax": "x, /, axis=None, *, keepdims=False, propagate_nan=False",
    "argmin": "x, /, axis=None, *, keepdims=False, propagate_nan=False",
    "reduce": "x, /, axis, func, identity, *, keepdims=False",
    "cumsum": "x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False",
    "cumprod": "x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False",
    "scan": "x, /, axis, func, identity, *, reverse=False",
    "add": "x, y, /, *, rounding_mode=None, flush_to_zero=False",
    "sub": "x, y, /, *, rounding_mode=None, flush_to_zero=False",
    "mul": "x, y, /, *, rounding_mode=None, flush_to_zero=False",
    "truediv": "x, y, /, *, rounding_mode=None, flush_to_zero=False",
    "floordiv": "x, y, /",
    "pow": "x, y, /",
    "atan2": "x1, x2, /",
    "mod": "x, y, /",
    "divmod": "x, y, /",
    "bitwise_and": "x, y, /",
    "bitwise_or": "x, y, /",
    "bitwise_xor": "x, y, /",
    "bitwise_lshift": "x, y, /",
    "bitwise_rshift": "x, y, /",
    "bitwise_not": "x, /",
    "minimum": "x, y, /, *, flush_to_zero=False, propagate_nan=False",
    "maximum": "x, y, /, *, flush_to_zero=False, propagate_nan=False",
    "cdiv": "x, y, /",
    "greater": "x, y, /",
    "greater_equal": "x, y, /",
    "less": "x, y, /",
    "less_equal": "x, y, /",
    "equal": "x, y, /",
    "not_equal": "x, y, /",
    "exp": "x, /, *, rounding_mode=None",
    "exp2": "x, /, *, flush_to_zero=False",
    "log": "x, /",
    "log2": "x, /",
    "sqrt": "x, /, *, rounding_mode=None, flush_to_zero=False",
    "rsqrt": "x, /, *, flush_to_zero=False",
    "sin": "x, /",
    "cos": "x, /",
    "tan": "x, /",
    "sinh": "x, /",
    "cosh": "x, /",
    "tanh": "x, /, *, rounding_mode=None",
    "floor": "x, /",
    "ceil": "x, /",
    "abs": "x, /",
    "negative": "x, /",
    "isnan": "x, /",
    "where": "cond, x, y, /",
    "extract": "x, /, index, shape",
    "insert": "x, /, index, value",
    "printf": "format, *args",
    "print": "*args, sep=' ', end='\\n'",
    "assert_": "cond, /, message=None",
    "static_eval": "expr, /",
    "static_assert": "condition, message=None, /",
    "static_iter": "iterable",
    "static_exception": "exc, /",
    "ensure_constant": "value, /",
    "assume_divisible_by": "x, divisor",
    "pack_to_bytes": "x, /",
    "unpack_from_bytes": "x, /, dtype",
    "mma_scaled": "x, x_scale, y, y_scale, /, acc",
    "grid_dependency_control_wait": "",
    "grid_dependency_control_launch_dependents": "",
}


def spelled(fn) -> str:
    """A signature as Python source spells it: `x, /, axis=None, *, keepdims=False`."""
    parts, previous = [], None
    for p in inspect.signature(fn).parameters.values():
        if previous is P.POSITIONAL_ONLY and p.kind is not P.POSITIONAL_ONLY:
            parts.append("/")
        if p.kind is P.KEYWORD_ONLY and previous not in (P.KEYWORD_ONLY, P.VAR_POSITIONAL):
            parts.append("*")
        text = {P.VAR_POSITIONAL: "*", P.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.default is not p.empty:
            d = p.default
            text += "=" + (f"{type(d).__name__}.{d.name}" if hasattr(d, "name") and hasattr(type(d), "__members__")
                           else repr(d))
        parts.append(text)
        previous = p.kind
    if previous is P.POSITIONAL_ONLY:
        parts.append("/")
    return ", ".join(parts)


def declared(decl) -> str:
    """The signature an elementwise op's declaration gives its tile function."""
    operands, options = decl.params
    return ", ".join([*operands, "/", *(["*"] if options else []), *(f"{o}={OPTIONS[o]!r}" for o in options)])


ELEMENTWISE = {decl.stub: decl for decl in OPS.values() if decl.category is Category.ELEMENTWISE and decl.params}


@pytest.mark.parametrize("name", sorted(stubs.FUNCTIONS))
def test_every_tile_function_has_cutiles_signature_or_its_declarations(name):
    fn = getattr(ct, name)
    assert fn is stubs.FUNCTIONS[name]
    assert name in CUTILE or name in ELEMENTWISE, f"ct.{name} is neither cuTile's nor made from an op declaration"
    if name in CUTILE:
        assert spelled(fn) == CUTILE[name]
    if name in ELEMENTWISE:
        assert spelled(fn) == declared(ELEMENTWISE[name])


@pytest.mark.parametrize("name", sorted(stubs.FUNCTIONS))
def test_every_tile_function_has_a_lowering_that_takes_its_parameters(name):
    fn = stubs.FUNCTIONS[name]
    if name in ("static_eval", "static_iter", "static_exception"):  # the compiler runs their expression as Python itself
        assert fn not in LOWERINGS
        return
    _matches_stub(fn, LOWERINGS[fn])


def test_a_lowering_with_a_renamed_parameter_fails_when_it_is_registered():
    table = Rules(check=_matches_stub)
    with pytest.raises(TypeError, match=r"does not take the parameters of bid\(axis\)"):
        table.add(ct.bid)(lambda lw, dim: None)
    with pytest.raises(TypeError, match="load"):
        table.add(ct.load)(lambda lw, array, index, shape: None)  # no options
    table.add(ct.bid)(lambda lw, axis: None)
    with pytest.raises(ValueError, match="a second rule for 'bid'"):
        table.add(ct.bid)(lambda lw, axis: None)


def test_tile_functions_refuse_host_calls():
    with pytest.raises(RuntimeError, match="Device functions can only be called from device code"):
        ct.log1p(1.0)
