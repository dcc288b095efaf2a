"""The IR's printed form is readable and stable; the verifier rejects malformed programs."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.errors import TileInternalError
from tileworkbench.ir import Block, Builder, Function, Param, TileType, Value, print_function, verify
from tileworkbench.ir.ops import OPS
from tileworkbench.ir.types import ArrayType, float32, int32


@ct.kernel
def scale(x, y, factor, TILE: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(x, (i,), (TILE,))
    ct.store(y, (i,), t * factor)


@ct.kernel
def accumulate(x, y, TILE: ct.Constant[int]):
    total = ct.zeros((TILE,), ct.float32)
    for k in range(ct.num_tiles(x, 0, (TILE,))):
        total = total + ct.load(x, (k,), (TILE,))
    if ct.bid(0) == 0:
        ct.store(y, (0,), total)


X = np.zeros(64, np.float32)


def test_printed_ir_uses_the_users_names_types_and_lines():
    text = scale.ir((X, X, 2.0, 16))
    first_line = scale._pyfunc.__code__.co_firstlineno
    assert text.splitlines()[0] == ("kernel scale(%x: array<float32, 1d>, %y: array<float32, 1d>, %factor: float32)"
                                    " {TILE=16} {")
    assert "%i = bid {axis=0} : int32" in text
    assert f"# line {first_line + 2}" in text
    assert "%t = load %x, %i {shape=(16,), order=(0,), padding=UNDETERMINED, check_bounds=True} : tile<float32, 16>" in text
    assert "store %y, %i," in text


def test_printed_ir_shows_structured_control_flow():
    text = accumulate.ir((X, X, 16))
    assert "= for %k in range(" in text and "carry(%total" in text
    assert "if %" in text and "} else {" in text
    assert text.count("yield") == 3


def test_each_constant_value_is_its_own_specialization():
    for tile in (8, 16, 32, 16):
        scale.ir((X, X, 1.0, tile))
    assert sorted(p.value for f in scale.specializations for p in f.params if p.name == "TILE") == [8, 16, 32]


def test_fingerprint_changes_with_the_program():
    a = scale.specialize((X, X, 1.0, 8)).fingerprint()
    b = scale.specialize((X, X, 1.0, 16)).fingerprint()
    assert a != b and a == scale.specialize((X, X, 1.0, 8)).fingerprint()


def test_every_op_declares_a_rule_and_a_summary():
    for name, decl in OPS.items():
        assert decl.summary and callable(decl.rule), name


def _function_with(ops_builder):
    arg = Value(ArrayType(float32, 1), "a")
    body = Block(args=[arg])
    ops_builder(Builder(body), arg)
    return Function("k", [Param("a", "array", arg.type)], body)


def test_verifier_rejects_use_before_definition():
    index, tile = Value(TileType(int32, ()), "index"), Value(TileType(float32, (4,)), "tile")
    fn = _function_with(lambda b, a: b.emit("store", [a, index, tile], {"order": (0,), "check_bounds": True}))
    with pytest.raises(TileInternalError, match="used before it is defined"):
        verify(fn)


def test_verifier_rejects_wrong_result_types():
    def build(b, a):
        op = b.emit("iota", [], {"shape": (4,), "dtype": int32})
        op.results[0].type = TileType(int32, (8,))
    with pytest.raises(TileInternalError, match="result types"):
        verify(_function_with(build))


def test_verifier_rejects_a_region_without_yield():
    def build(b, a):
        cond = b.emit("constant", [], {"value": True, "dtype": ct.bool_, "shape": ()}).result
        b.emit("if", [cond], {"result_types": []}, regions=[Block(), Block()])
    with pytest.raises(TileInternalError, match="does not end in yield"):
        verify(_function_with(build))


def test_verifier_accepts_every_compiled_kernel():
    verify(accumulate.specialize((X, X, 16)))
    text = print_function(accumulate.specialize((X, X, 16)), locations=False)
    assert "# line" not in text
