"""The surface comparison's verdicts (benchmarks/cutile_surface.py) on small stand-ins: no cuTile needed."""
import enum

from benchmarks.cutile_surface import compare, documented_names


def theirs(array, /, axis, shape, *, order="C", latency=None):
    pass


def test_a_keyword_argument_cutile_accepts_and_ours_refuses_is_a_difference():
    def ours(array, axis, /, shape, *, order="C", latency=None):
        pass
    assert compare(theirs, ours) == ["axis: positional or keyword in cuTile, positional-only here"]


def test_defaults_missing_and_extra_required_parameters_are_differences():
    def ours(array, /, axis, shape, *, order="F", fast):
        pass
    assert compare(theirs, ours) == ["order: default 'C' in cuTile, 'F' here", "latency: missing",
                                     "fast: required here, unknown to cuTile"]


def test_the_same_signature_is_no_difference():
    def ours(array, /, axis, shape, *, order="C", latency=None, extra=1):
        pass
    assert compare(theirs, ours) == []


def test_enums_compare_by_member_names_and_values():
    A = enum.Enum("A", {"X": "x", "Y": "y"})
    assert compare(A, enum.Enum("B", {"X": "x", "Y": "y"})) == []
    assert compare(A, enum.Enum("B", {"X": 0}))[0] == "member Y missing"


def test_every_name_the_section_explains_is_read_from_api_coverage():
    assert {"Array", "Tile", "is_float", "compilation", "MemorySpace"} <= documented_names()
