"""docs/views/ describes every view with a picture: each View class is named on a page that shows
at least one picture, and every picture a page shows exists."""
import importlib
import inspect
import pathlib
import pkgutil
import re

import tileworkbench.widgets as widgets
from tileworkbench.widgets._base import View

PAGES = pathlib.Path(__file__).parents[2] / "docs" / "views"
PICTURE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")


def _views():
    for module in pkgutil.iter_modules(widgets.__path__):
        for name, cls in inspect.getmembers(importlib.import_module(f"tileworkbench.widgets.{module.name}"),
                                            inspect.isclass):
            if issubclass(cls, View) and cls.__module__.endswith(module.name) and "_esm" in vars(cls):
                yield name


def test_every_view_has_a_page_with_a_picture_and_every_picture_exists():
    pages = {page: page.read_text() for page in PAGES.glob("*.md")}
    for page, text in pages.items():
        for picture in PICTURE.findall(text):
            assert (PAGES / picture).is_file(), f"{page.name} shows {picture}, which does not exist"
    views = sorted(set(_views()))
    assert "StepperView" in views and "CoverageView" in views
    for view in views:
        shown = [page.name for page, text in pages.items() if re.search(rf"\b{view}\b", text) and PICTURE.search(text)]
        assert shown, f"no page of docs/views names {view} and shows a picture"
