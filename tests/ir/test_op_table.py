"""The op table is complete: every declared op is emitted by the frontend (through its tile
function, by the frontend itself, or by its rewrite of the IR: ir/fuse.py), run by the interpreter, emitted as CUDA (or declares why
not) and drawn by the views it names. Adding an op without one of these fails here."""
from pathlib import Path

import pytest

import tileworkbench.tile as ct
from tileworkbench.codegen.cuda import EMIT
from tileworkbench.frontend.lowering import LOWERINGS
from tileworkbench.interp.executor import STRUCTURED
from tileworkbench.interp.memory import MEMORY_RULES
from tileworkbench.interp.rules import RULES
from tileworkbench.ir.ops import OPS, Category, ViewKind, ops_in

PACKAGE = Path(__file__).parents[2] / "tileworkbench"
FRONTEND = "".join(p.read_text() for p in [*(PACKAGE / "frontend").glob("*.py"), PACKAGE / "ir" / "fuse.py"])


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_is_emitted_by_the_frontend(name):
    stub = OPS[name].stub
    if stub is None:  # built by the frontend itself (constants, broadcasts, control flow, fma)
        assert f'"{name}"' in FRONTEND, f"no tile function and the frontend never emits {name}"
    else:
        assert getattr(ct, stub).__tile_op__ == stub, f"{name}: ct.{stub} is not a tile function"
        assert getattr(ct, stub) in LOWERINGS, f"{name}: ct.{stub} has no lowering"


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_has_an_interpreter_rule(name):
    assert name in RULES or name in MEMORY_RULES or name in STRUCTURED or name == "yield", name


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_has_an_emitter_or_says_why_not(name):
    assert (name in EMIT) != bool(OPS[name].no_emitter), name


@pytest.mark.parametrize("name", sorted(OPS))
def test_memory_and_shape_ops_name_their_view(name):
    decl = OPS[name]
    if decl.category is Category.SHAPE:
        assert decl.view is ViewKind.TRANSFORM
    elif decl.category is Category.MEMORY:
        assert decl.view in (ViewKind.TILE_SPACE, ViewKind.INDEX_MAP) and decl.access in ("read", "write")
        assert decl.effects == (decl.access == "write")
    else:
        assert decl.view is None and decl.access is None


def test_elementwise_ops_declare_their_arity_and_float_math_counts_flops():
    for name in ops_in(Category.ELEMENTWISE):
        assert OPS[name].arity in (1, 2, 3), name
    assert all(OPS[name].flops is not None for name in ("exp", "erf", "add", "atan2", "sum", "cumsum", "mma"))
    assert all(OPS[name].flops is None for name in ("eq", "bitwise_and", "where", "astype", "argmax", "load"))
