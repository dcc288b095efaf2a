"""Bad or unusual C text: every definition gives C's result or one clear error at the user's
source, never a wrong result, a raw Python exception, a hang or unbounded memory."""
import contextlib
import io
import keyword

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tileworkbench import ElementwiseKernel, ReductionKernel
from tileworkbench.errors import TileError, TileSyntaxError, TileTypeError, TileUnsupportedFeatureError, TileValueError

X = np.arange(4, dtype=np.float32)


def run(body, params="float32 x", out="float32 z", *args, **options):
    return ElementwiseKernel(params, out, body, options.pop("name", "k"), **options)(*(args or (X,)))


def test_a_parameter_named_like_a_generated_variable_is_its_own_value():
    got = run("z = x - x_val", "float32 x, float32 x_val", "float32 z", X, np.float32(5))
    np.testing.assert_array_equal(got, X - 5)


def test_a_local_named_like_a_generated_variable_keeps_broadcasting_right():
    a, b = np.arange(4, dtype=np.int32), np.arange(2, dtype=np.int32).reshape(2, 1)
    got = run("int _rest1 = x * 1; int _c1 = y; z = x + y;", "int32 x, int32 y", "int32 z", a, b)
    np.testing.assert_array_equal(got, a + b)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_line_comment_continued_by_a_backslash_swallows_the_next_line(newline):
    got = run(f"float v = x; // note \\{newline}v = 0;{newline}z = v;")
    np.testing.assert_array_equal(got, X)


def test_a_carriage_return_inside_a_comment_stays_in_the_comment():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        got = run("z = /*\rprint('python ran')\rdef _f(): #*/ x + 1;")
    assert printed.getvalue() == ""
    np.testing.assert_array_equal(got, X + 1)


def test_a_backslash_newline_splices_inside_a_name_and_a_number():
    np.testing.assert_array_equal(run("z = x\\\r\n + 1\\\n0;"), X + 10)


@pytest.mark.parametrize("body, params", [("z = \uff41;", "float32 a"), ("z = a;", "float32 \uff41"),
                                          ("float \u00e9 = x; z = \u00e9;", "float32 x")])
def test_non_ascii_names_are_refused_as_nvrtc_refuses_them(body, params):
    with pytest.raises((TileSyntaxError, ValueError), match="ASCII"):
        run(body, params)


def test_a_condition_over_two_lines_and_crlf_source_run_as_c():
    np.testing.assert_array_equal(run("if (x >\n 1) z = x;\r\nelse z = 0;\r\n"), np.where(X > 1, X, 0))


def test_deep_parentheses_are_one_error_at_the_token_past_the_limit():
    with pytest.raises(TileUnsupportedFeatureError, match="Nested more than 63 levels") as info:
        run("z = " + "(" * 70 + "x" + ")" * 70 + ";")
    assert '"<k operation>", line 1' in str(info.value) and "z = (((" in str(info.value)


def test_long_sums_are_loops_not_recursions():
    np.testing.assert_array_equal(run("z = " + " + ".join(["x"] * 600) + ";"), X * 600)


def test_converting_infinity_to_int_is_an_error_at_the_cast():
    with pytest.raises(TileValueError, match="Converting inf to int is undefined") as info:
        run("z = (int)INFINITY;", "float32 x", "int32 z")
    assert "(int)INFINITY" in str(info.value).splitlines()[-2]


def test_a_literal_of_thousands_of_digits_is_too_large_not_a_python_limit():
    with pytest.raises(TileValueError, match="too large for any C integer type"):
        run("z = " + "9" * 5000 + ";", "float32 x", "int64 z")


def test_parameters_named_like_python_keywords_and_their_escapes_stay_apart():
    got = run("z = lambda - lambda_ + u_lambda;", "float32 lambda, float32 lambda_, float32 u_lambda",
              "float32 z", X, X + 1, np.float32(10))
    np.testing.assert_array_equal(got, X - (X + 1) + 10)


@pytest.mark.parametrize("name", ["ct", "cops", "range", "float", "TILE", "lambda_"])
def test_a_kernel_may_be_named_like_a_python_or_generated_name(name):
    np.testing.assert_array_equal(run("z = x + 1;", name=name), X + 1)


def test_doubling_helpers_stop_at_the_expansion_budget_at_the_users_call():
    preamble = "__device__ float f0(float v) { return v + 1; }\n" + "".join(
        f"__device__ float f{k + 1}(float v) {{ return f{k}(v) + f{k}(v); }}\n" for k in range(16))
    with pytest.raises(TileUnsupportedFeatureError, match="grows past 5000 operations") as info:
        ElementwiseKernel("float32 x", "float32 z", "z = f16(x);", "k", preamble=preamble)
    assert "z = f16(x);" in str(info.value) and "<k operation>" in str(info.value)


def test_a_long_chain_of_helpers_stops_at_the_inlining_depth_at_the_users_call():
    preamble = "__device__ float f0(float v) { return v + 1; }\n" + "".join(
        f"__device__ float f{k + 1}(float v) {{ return f{k}(v); }}\n" for k in range(300))
    with pytest.raises(TileUnsupportedFeatureError, match="more than 32 levels deep") as info:
        ElementwiseKernel("float32 x", "float32 z", "z = f300(x);", "k", preamble=preamble)
    assert "z = f300(x);" in str(info.value)
    chain = ElementwiseKernel("float32 x", "float32 z", "z = f30(x);", "k", preamble=preamble)
    np.testing.assert_array_equal(chain(X), X + 1)


def test_deep_expressions_in_every_helper_of_a_chain_are_one_error_at_the_statement():
    deep = "-(" * 30 + "{call}" + ")" * 30
    preamble = "__device__ float f0(float v) { return v; }\n" + "".join(
        f"__device__ float f{k + 1}(float v) {{ return {deep.format(call=f'f{k}(v)')}; }}\n" for k in range(31))
    with pytest.raises(TileUnsupportedFeatureError, match="nests too deeply") as info:
        ElementwiseKernel("float32 x", "float32 z", "float t = 1; z = f31(x);", "k", preamble=preamble)
    assert "z = f31(x);" in str(info.value)


def test_an_unterminated_comment_points_at_its_start():
    with pytest.raises(TileSyntaxError, match="Unterminated comment") as info:
        run("z = x; /* no end")
    assert "col 8" in str(info.value)


def test_field_access_on_plain_arrays_is_a_clear_error():
    with pytest.raises(TileTypeError, match="'out' is not a structured output"):
        run("out.at<1>() = x;", "T x", "T out")
    with pytest.raises(TileTypeError, match="'x' has no fields"):
        run("z = x.at<0>();", "T x", "T z")
    with pytest.raises(TileUnsupportedFeatureError, match="only supported in `T::field_count`"):
        run("z = x::y;")


def test_unsupported_dtypes_and_complex_scalars_for_real_parameters_are_refused_at_the_call():
    kernel = ElementwiseKernel("T x, T y", "T z", "z = x + y", "k")
    with pytest.raises(TypeError, match="Arrays of dtype complex256 are not supported"):
        kernel(np.zeros((4, 5), np.clongdouble), np.complex64(2))
    with pytest.raises(TypeError, match="a complex scalar for a parameter of type float32"):
        kernel(X, 2j)


def test_a_reduction_reads_its_snippets_by_the_same_rules():
    kernel = ReductionKernel("T x", "T y", "x /* \r */ * x", "a + b", "y = a; // done \\\n y = 0;", "0", "k")
    np.testing.assert_array_equal(kernel(X), np.float32((X * X).sum()))


# ---- fuzzing -------------------------------------------------------------------------------------

_NAMES = st.one_of(st.sampled_from(["x_val", "_rest1", "_c1", "_block", "_index", "_n", "u_x", "ct", "cops",
                                    "TILE", "range", "float", "print", "i_", "z_", *keyword.kwlist[:5]]),
                   st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True))
_C_KEYWORDS = {"if", "else", "for", "while", "do", "return", "int", "float", "double", "char", "short", "long",
               "unsigned", "signed", "bool", "true", "false", "const", "auto", "static", "inline", "switch", "case",
               "goto", "break", "continue", "struct", "class", "template", "typedef", "using", "half", "size_t",
               "ptrdiff_t", "ssize_t", "float16", "void", "sizeof", "default", "i", "static_cast",
               "reinterpret_cast", "const_cast", "__device__", "__host__", "__inline__", "__forceinline__",
               "INFINITY", "NAN", "M_PI"}
_SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(st.lists(_NAMES.filter(lambda n: n not in _C_KEYWORDS and not n.startswith("_")), min_size=3, max_size=3,
                unique=True), _NAMES.filter(lambda n: n not in _C_KEYWORDS and n != "i"))
def test_any_c_names_for_parameters_and_locals_compute_what_c_computes(params, local):
    a, b, z = params
    if local in params:
        return
    got = run(f"float {local} = {a} - {b}; {z} = {local} * 2;", f"float32 {a}, float32 {b}", f"float32 {z}",
              X, np.float32(3))
    np.testing.assert_array_equal(got, (X - 3) * 2)


_SEPARATORS = [" ", "\t", "\n", "\r\n", "\r", "/* c */", "/*\r\n*/", "// c\n", "// c \\\n more\n", "\\\n"]


@_SETTINGS
@given(st.lists(st.sampled_from(_SEPARATORS), min_size=12, max_size=12))
def test_whitespace_comments_and_splices_between_tokens_change_nothing(separators):
    tokens = ["z", "=", "(", "x", "-", "1", ")", "*", "x", "+", "2", ";"]
    body = "".join(sep + tok for sep, tok in zip(separators, tokens))
    np.testing.assert_array_equal(run(body), (X - 1) * X + 2)


@_SETTINGS
@given(st.text(alphabet="zxy=+-*/%()[]{};?:!<>&|^~.,0123456789fe \n\r\t\\\"'#ａé", max_size=40))
def test_arbitrary_text_gives_the_result_or_one_tile_error_and_runs_no_python(body):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            run(body, "float32 x, float32 y", "float32 z", X, X)
        except TileError as error:
            assert '"<k operation>", line' in str(error) or '"<k ' in str(error)
    assert printed.getvalue() == ""


def test_hex_floats_hex_and_octal_integers_are_read_as_c_reads_them():
    np.testing.assert_array_equal(run("z = x * 0x1p3 + 0x1.8p1f + 0x.8p0 + 0x1F + 010;"), X * 8 + 3 + 0.5 + 31 + 8)
    with pytest.raises(TileSyntaxError, match="Invalid octal literal"):
        run("z = 09;")
