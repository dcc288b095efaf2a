"""The extension's header highlighting knows which of the magic's options take a value."""
import re
from pathlib import Path

from tileworkbench.magic import TileKernelMagics

LANGUAGE_TS = Path(__file__).parents[2] / "labextension" / "src" / "language.ts"


def test_the_header_parser_knows_the_magics_options_that_take_no_value():
    flags = re.search(r"const FLAGS = new Set\(\[([^\]]*)\]\)", LANGUAGE_TS.read_text()).group(1)
    in_extension = set(re.findall(r"'(--[\w-]+)'", flags))
    parser = TileKernelMagics.tilekernel.parser
    in_magic = {option for action in parser._actions if action.nargs == 0
                for option in action.option_strings if option.startswith("--") and option != "--help"}
    assert in_extension == in_magic
