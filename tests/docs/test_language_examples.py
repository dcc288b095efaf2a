"""docs/language.md shows what the language does: every `>>>` example on the page runs on the
interpreter and prints exactly what the page says (the examples share one namespace, top to bottom)."""
import __future__

import doctest
import inspect
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).parents[2] / "docs" / "language.md"
EXAMPLE_BLOCK = re.compile(r"^```pycon\n(.*?)^```", re.MULTILINE | re.DOTALL)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def example_blocks() -> list[tuple[int, str]]:
    """(first line, text) of each ```pycon block of the page."""
    text = PAGE.read_text()
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in EXAMPLE_BLOCK.finditer(text)]


def test_the_language_page_examples_print_what_the_page_says():
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=FLAGS)
    namespace: dict = {}
    for line, block in example_blocks():
        test = parser.get_doctest(block, namespace, f"language.md line {line}", str(PAGE), line - 1)
        runner.run(test, clear_globs=False)
        namespace = test.globs  # a DocTest runs in a copy of the namespace it is given
    results = runner.summarize(verbose=False)
    assert results.attempted > 100 and results.failed == 0  # each failure is printed above, with its line


def language_names() -> list[str]:
    """Every public name of `tileworkbench.tile` but the modules and `__future__` features it imports."""
    import tileworkbench.tile as ct
    return sorted(n for n, v in vars(ct).items() if not n.startswith("_") and not inspect.ismodule(v)
                  and not isinstance(v, __future__._Feature))


@pytest.mark.parametrize("name", language_names())
def test_every_name_of_the_language_is_documented_on_the_page(name):
    assert re.search(rf"[`@]ct\.{name}\b", PAGE.read_text()), name


def test_every_contents_link_of_the_page_leads_to_a_heading():
    text = PAGE.read_text()
    headings = re.findall(r"^#+ (.*)$", text, re.MULTILINE)
    slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}  # as GitHub makes them
    links = re.findall(r"\]\(#([\w-]+)\)", text)
    assert links and set(links) <= slugs, set(links) - slugs
