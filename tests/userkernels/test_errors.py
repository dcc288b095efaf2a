"""A body outside the C subset is refused when the kernel is defined, with a caret under the offending token."""
import numpy as np
import pytest

from tileworkbench import ElementwiseKernel, ReductionKernel
from tileworkbench.errors import TileSyntaxError, TileTypeError, TileUnsupportedFeatureError


def caret_under(error, token: str) -> bool:
    """The error's last frame shows the snippet line with carets exactly under `token`."""
    *_, line, carets = str(error).splitlines()
    start = carets.index("^")
    return line[start:start + len(carets.strip())] == token


@pytest.mark.parametrize("body, token, cls, message", [
    ("z = x ** y", "*", TileSyntaxError, "Expected an expression"),
    ("for (int k = 0; k < 3; k++) z = x", "for", TileUnsupportedFeatureError, "Loops"),
    ("z = x + y\n  w = 1", "w", TileSyntaxError, "Expected ';'"),
    ("z = x @ y", "@", TileSyntaxError, "Unexpected character"),
    ("z = x; x + y;", "x + y", TileSyntaxError, "no effect"),
    ("#define SQ(v) v * v\nz = SQ(x)", "#define SQ(v) v * v", TileSyntaxError, "Preprocessor"),
    ("z = x.real", ".", TileUnsupportedFeatureError, "Member access"),
    ("U v = x; z = v", "U", TileSyntaxError, "Unknown type 'U'"),
    ("goto done; z = x", "goto", TileUnsupportedFeatureError, "^`goto` is not in the supported C subset"),
    ("using U = decltype(x); z = x", "decltype", TileUnsupportedFeatureError, "^`decltype` is not in the"),
    ("{ using U = float; } U v = x; z = v", "U", TileSyntaxError, "Unknown type 'U'"),   # the alias ended
    ("z = tex1D<float>(y,\n float(i))", "tex1D", TileUnsupportedFeatureError,
     r"^Texture and surface functions \(tex1D\) are not in the supported C subset: tile kernels read arrays"),
    ("z = convert<float>(x)", "convert", TileUnsupportedFeatureError, r"^Function templates \(convert<float>\)"),
])
def test_syntax_outside_the_subset_points_at_the_token(body, token, cls, message):
    with pytest.raises(cls, match=message) as info:
        ElementwiseKernel("float32 x, float32 y", "float32 z", body, "bad")
    assert caret_under(info.value, token), str(info.value)


@pytest.mark.parametrize("body, token, cls, message", [
    ("z = fmod(x, y)", "fmod", TileUnsupportedFeatureError, "Unknown function 'fmod'"),
    ("z = x % y", "x % y", TileTypeError, "'%' needs integer operands"),
    ("x = y; z = x", "x", TileTypeError, "inputs are read-only"),
    ("z = x + q", "q", TileSyntaxError, "Undefined name 'q'"),
    ("w = 1", "w", TileSyntaxError, "declare it"),
    ("z = y[i]", "y", TileTypeError, "not declared `raw`"),
])
def test_meaning_errors_point_at_the_token_when_the_types_are_known(body, token, cls, message):
    with pytest.raises(cls, match=message) as info:   # every type declared: when the kernel is defined
        ElementwiseKernel("float32 x, float32 y", "float32 z", body, "bad")
    assert caret_under(info.value, token), str(info.value)
    generic = ElementwiseKernel("T x, T y", "T z", body, "bad")
    with pytest.raises(cls, match=message) as info:   # placeholders: when a call fixes them
        generic(np.ones(4, np.float32), np.ones(4, np.float32))
    assert caret_under(info.value, token), str(info.value)


def test_the_error_names_the_snippet_and_its_line():
    with pytest.raises(TileSyntaxError) as info:
        ElementwiseKernel("float32 x", "float32 z", "float t = x;\nz = t +;", "two_lines")
    assert '"<two_lines operation>", line 2' in str(info.value)


def test_an_unsupported_reduce_expression_points_at_it():
    with pytest.raises(TileUnsupportedFeatureError, match="must be a \\+ b") as info:
        ReductionKernel("T x", "T y", "x", "a - b", "y = a", "0", "bad_reduce")
    assert caret_under(info.value, "a - b")


def test_a_non_constant_identity_is_refused():
    k = ReductionKernel("T x", "T y", "x", "a + b", "y = a", "sqrt(x)", "bad_identity")
    with pytest.raises(TileSyntaxError, match="Undefined name 'x'"):
        k(np.ones(4, np.float32))
    with pytest.raises(TileTypeError, match="identity must be a constant"):
        ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "sqrt(2.0)", "bad_identity")


@pytest.mark.parametrize("params, message", [
    ("float32", "is not `\\[raw\\] <type> <name>`"),
    ("float32 i", "Can not use .i. as a parameter name"),
    ("complex256 x", "not the name of a dtype"),
    ("float x", "not the name of a dtype"),
    ("T x, T x", "appears twice"),
])
def test_bad_parameter_lists_are_value_errors(params, message):
    with pytest.raises(ValueError, match=message):
        ElementwiseKernel(params, "float32 z", "z = 0", "bad_params")


def test_after_loop_code_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="after_loop"):
        ElementwiseKernel("float32 x", "float32 z", "z = x", "k", after_loop="z = 0;")
