"""What every view shares: NumPy arrays synced to JavaScript as binary buffers, and static export.

A view is one Python class (an anywidget) plus one ES module in static/ (code that several views
share lives in static/_*.js, imported by relative path and inlined by `static`). The Python side turns a
trace or a launch record into plain data with a pure function (tested without a browser); the
JavaScript only draws that data. Each view can also render itself to SVG with no browser and no
kernel, so docs and saved notebooks show it.

Displaying a view makes two outputs: its picture (SVG, as an image in HTML too), then the live widget.
A saved notebook keeps the picture, which every viewer shows without a kernel (JupyterLab and
Notebook 7 reopened, nbconvert, GitHub), while the widget's model is gone once the kernel is. Where
the widget does render, its script hides the picture just before it. Every view's `render` is
`renderView(trait, setup)` of `static/_picture.js`: it hides the picture, draws now and on each
change of the trait the view draws from, and lets go of the model when the view goes.

    class TileSpaceView(View):
        _esm = static("tile_space.js")
        data = Data()                      # a dict of lists / numbers / NumPy arrays
        def to_svg(self) -> str: ...
"""
from __future__ import annotations

import base64
import pathlib
import re
import uuid
from xml.sax.saxutils import quoteattr

import anywidget
import numpy as np
import traitlets

STATIC = pathlib.Path(__file__).parent / "static"


# `import { a, b } from "./shared.js";` at the start of a line: the only import form the views use
_RELATIVE_IMPORT = re.compile(r'^import \{[\w\s,]*\} from "\./([\w.-]+\.js)";\n', re.MULTILINE)


def static(name: str) -> str:
    """A view's ES module as the browser gets it. anywidget loads each view from a Blob URL, where a
    relative import cannot resolve, so `import { ... } from "./x.js";` lines are replaced by x.js
    itself (its `export` keywords dropped, its own imports inlined the same way, each module once):
    static/ keeps one copy of shared code.

        >>> 'from "./_cells.js"' in static("coverage.js"), "function cellAt(" in static("coverage.js")
        (False, True)
    """
    return _inline((STATIC / name).read_text(), set())


def _inline(source: str, seen: set) -> str:
    def shared(m):
        name = m.group(1)
        if name in seen:
            return ""
        seen.add(name)
        body = _inline(re.sub(r"^export ", "", (STATIC / name).read_text(), flags=re.MULTILINE), seen)
        return f"// ---- inlined from static/{name}\n{body}// ---- end of static/{name}\n"
    return _RELATIVE_IMPORT.sub(shared, source)


def _to_json(value, widget=None):
    """Plain data for the wire; NumPy arrays travel as binary buffers ({dtype, shape, buffer})."""
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        if a.dtype == np.bool_ or a.dtype.kind not in "iuf" or a.dtype.itemsize == 8 and a.dtype.kind in "iu":
            a = a.astype(np.float64 if a.dtype.kind == "f" else np.int32)  # JS has no 64-bit int arrays here
        if a.dtype == np.float16 or a.dtype.name == "bfloat16":
            a = a.astype(np.float32)
        return {"dtype": str(a.dtype), "shape": list(a.shape), "buffer": memoryview(a)}
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if all(type(v) is str for v in value):   # hover texts, labels: thousands per picture
            return list(value)
        return [_to_json(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _from_json(value, widget=None):
    return value


def Data(default=None):
    """A synced trait holding a dict/list of plain values and NumPy arrays."""
    return traitlets.Any(default).tag(sync=True, to_json=_to_json, from_json=_from_json)


class View(anywidget.AnyWidget):
    """Base class of the views: data in, SVG out."""

    # names this view's static picture, so that the live drawing can hide that one and no other
    _picture_key = traitlets.Unicode().tag(sync=True)

    @traitlets.default("_picture_key")
    def _new_picture_key(self) -> str:
        return uuid.uuid4().hex

    def to_svg(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} has no static export")

    def save_svg(self, path) -> None:
        pathlib.Path(path).write_text(self.to_svg())

    def to_text(self) -> str:
        """What a text-only front end shows (a terminal, `print` of the bundle): the repr by default."""
        return repr(self)

    def picture_bundle(self) -> dict:
        """The static output shown before the live widget: the SVG, the same SVG as an image in HTML
        and the text. Front ends render an untrusted notebook's HTML sanitized, which keeps an image
        from a data URL but no inline SVG, and refuse its SVG output: the HTML shows everywhere. Its
        class names the view's key, by which the live widget finds the picture to hide."""
        svg = self.to_svg()
        source = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
        html = (f'<div class="tileworkbench-picture tileworkbench-picture-{self._picture_key}">'
                f'<img src="{source}" alt={quoteattr(self.to_text())} style="max-width: 100%"></div>')
        return {"text/html": html, "image/svg+xml": svg, "text/plain": self.to_text()}

    def _ipython_display_(self):
        from IPython.display import publish_display_data
        publish_display_data(self.picture_bundle())
        widget = super()._repr_mimebundle_()
        widget = widget[0] if isinstance(widget, tuple) else widget
        widget["text/plain"] = ""   # the picture's output already says it in text
        publish_display_data(widget)

    def _repr_mimebundle_(self, **kwargs):
        # what a front end that asks for one bundle gets (IPython uses _ipython_display_): the live
        # widget, with the SVG for viewers without a widget manager and text for text-only ones
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/plain"] = self.to_text()
        data["image/svg+xml"] = self.to_svg()
        return bundle


class SvgView(View):
    """A view whose picture is drawn once, in Python: the `svg` trait is `to_svg()` of the current
    data, which the view's JavaScript shows and adds interaction to (`static/_picture.js`)."""

    svg = traitlets.Unicode().tag(sync=True)

    @traitlets.observe("data")   # also when the constructor sets it
    def _redraw(self, change):
        self.svg = self.to_svg()
