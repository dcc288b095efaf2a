"""Code view: one specialization's IR, generated CUDA C++, PTX, SASS (in program order under the
kernel lines it came from, or grouped by line) and resources, in tabs.

    CodeView(kernel, args)                         # compiled for sm_90 with NVRTC; no GPU needed
    CodeView(kernel, args, sass_order="line")      # the SASS tab opens grouped by kernel line
    CodeView(kernel, args, ncu=ncu.collect(...)[0])   # measured stall samples next to the SASS
    CodeView.diff(kernel, args_a, args_b)          # a unified diff per tab (e.g. TILE=256 vs TILE=1024)
"""
from __future__ import annotations

import difflib
import html

import numpy as np

from ..arguments import argument_leaves
from ._base import Data, View, static
from .svg import clip, svg_document

CODE_CHARS = 135   # a code line's characters that fit the 1000-pixel picture; a longer one ends in an ellipsis
WIDEST_CHARS = 200  # the SASS picture widens to show a heading with its summary, up to this many characters
ORDER_NAMES = {"program": "program order", "line": "by kernel line"}

TABS = ("IR", "CUDA", "PTX", "SASS", "resources")


def describe_args(kernel, args) -> str:
    """A short label for a specialization: its constants, and the arrays' dtypes and shapes."""
    fn = kernel.specialize(args)
    parts = []
    for p, a in zip(fn.params, argument_leaves(args)):
        if p.kind == "constant":
            parts.append(f"{p.name}={p.value}")
        elif isinstance(a, np.ndarray) or hasattr(a, "shape") and hasattr(a, "dtype"):
            parts.append(f"{p.name}:{np.dtype(a.dtype).name}{list(a.shape)}")
        else:
            parts.append(f"{p.name}={a!r}")
    return ", ".join(parts)


def code_tabs(kernel, args, arch: str = "sm_90", sass_order: str = "program") -> dict[str, str]:
    """The text of each tab for one specialization: {"IR", "CUDA", "PTX", "SASS", "resources"}."""
    tabs, sass = compiled_tabs(kernel, args, arch)
    return {**tabs, "SASS": sass_tab(sass, sass_order)["text"]}


def compiled_tabs(kernel, args, arch: str, samples=None) -> tuple[dict[str, str], dict | str]:
    """The texts of the tabs but SASS, and the SASS listing in each order ({order: rows}), or why there
    is none. `samples`: instruction offset -> runtime.sass.Samples, measured by a profiler."""
    from ..runtime.launch import build
    from ..runtime.sass import ORDERS, SassUnavailableError, listing
    fn = kernel.specialize(args)
    compiled = build(fn, arch)
    tabs = {"IR": compiled.asm["ir"], "CUDA": compiled.asm["cuda"], "PTX": compiled.asm["ptx"],
            "resources": compiled.resources_text()}
    try:
        instructions = compiled.instructions
    except SassUnavailableError as e:
        return tabs, f"No SASS: {e}\n"
    return tabs, {order: listing(fn, compiled.generated, instructions, order, samples) for order in ORDERS}


def sass_tab(sass: dict | str, order: str) -> dict:
    """The SASS tab's data: its text in `order`, and both listings as rows for the view to draw and
    switch between: {"text", "order", "measured", "orders": {order: [{"kind", "text", "line", "heat"}]}}.
    A row's `heat` (0 to 1; None where nothing was measured) is its samples against the hottest row of
    its kind (instructions, lines); a measured instruction's row also has its `stalls` by reason, and a
    jump back to a loop head that head's label as `loop`."""
    from ..runtime.sass import ORDERS, listing_text
    if order not in ORDERS:
        raise ValueError(f"sass_order must be one of {ORDERS}, not {order!r}")
    if isinstance(sass, str):
        return {"text": sass, "order": order, "measured": False, "orders": {}}
    measured = any(row.samples is not None for row in sass[order])
    hottest = {kind: max((r.samples or 0 for r in sass[order] if r.kind == kind), default=0) or 1
               for kind in ("line", "instruction")}

    def plain(row) -> dict:
        out = {"kind": row.kind, "text": row.text, "line": row.line,
               "heat": None if row.samples is None else row.samples / hottest[row.kind]}
        return out | ({"stalls": row.stalls} if row.stalls else {}) | ({"loop": row.loop} if row.loop else {})
    return {"text": listing_text(sass[order]), "order": order, "measured": measured,
            "orders": {name: [plain(row) for row in rows] for name, rows in sass.items()}}


def diff_tabs(tabs_a: dict, tabs_b: dict, label_a: str = "a", label_b: str = "b") -> dict[str, str]:
    """A unified diff of each tab (empty string where a tab is unchanged)."""
    out = {}
    for name in TABS:
        a, b = tabs_a[name].splitlines(keepends=True), tabs_b[name].splitlines(keepends=True)
        lines = difflib.unified_diff(a, b, f"{label_a} ({name})", f"{label_b} ({name})", n=3)
        out[name] = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out


def code_view_data(tabs: dict, title: str, mode: str = "code", labels=None, sass: dict | None = None) -> dict:
    """What the view draws. `sass` (code mode): the SASS tab's listings, as `sass_tab` gives them."""
    entries = []
    for name in TABS:
        text = sass["text"] if name == "SASS" and sass is not None else tabs[name]
        entry = {"name": name, "text": text, "lines": text.count("\n") + (0 if text.endswith("\n") or not text else 1)}
        if mode == "diff":
            body = [ln for ln in text.splitlines() if not ln.startswith(("+++", "---"))]
            entry["added"] = sum(ln.startswith("+") for ln in body)
            entry["removed"] = sum(ln.startswith("-") for ln in body)
        elif name == "SASS" and sass is not None:
            entry["listing"] = {k: sass[k] for k in ("order", "measured", "orders")}
        entries.append(entry)
    return {"title": title, "mode": mode, "labels": list(labels or []), "tabs": entries}


class CodeView(View):
    """Tabs IR / CUDA / PTX / resources of one specialization, or the diff of two."""

    _esm = static("code_view.js")
    data = Data()

    def __init__(self, kernel=None, args=None, arch: str = "sm_90", *, sass_order: str = "program", ncu=None,
                 data: dict | None = None, **kwargs):
        """`sass_order`: the SASS tab opens in "program" order or grouped by kernel "line". `ncu`: an
        `ncu.NcuMetrics` of this kernel (or its `sass_samples`): its stall samples go next to the SASS."""
        if data is None:
            samples = getattr(ncu, "sass_samples", ncu) or None
            tabs, sass = compiled_tabs(kernel, args, arch, samples)
            label = describe_args(kernel, args)
            data = code_view_data(tabs, f"{kernel.specialize(args).name} ({label}) for {arch}", "code", [label],
                                  sass_tab(sass, sass_order))
        super().__init__(data=data, **kwargs)

    @classmethod
    def diff(cls, kernel, args_a, args_b, arch: str = "sm_90") -> "CodeView":
        full_a, full_b = describe_args(kernel, args_a), describe_args(kernel, args_b)
        parts_a, parts_b = full_a.split(", "), full_b.split(", ")
        changed = [(x, y) for x, y in zip(parts_a, parts_b) if x != y]
        if changed and len(parts_a) == len(parts_b):  # name only what differs: "TILE=256" vs "TILE=1024"
            label_a, label_b = ", ".join(x for x, _ in changed), ", ".join(y for _, y in changed)
        else:
            label_a, label_b = full_a, full_b
        tabs = diff_tabs(code_tabs(kernel, args_a, arch), code_tabs(kernel, args_b, arch), label_a, label_b)
        name = kernel.specialize(args_a).name
        return cls(data=code_view_data(tabs, f"{name}: {label_a}  vs  {label_b} for {arch}", "diff",
                                       [label_a, label_b]))

    def tab(self, name: str) -> str:
        return next(t["text"] for t in self.data["tabs"] if t["name"] == name)

    def to_svg(self, lines: int = 30, tab: str | None = None, sass_order: str | None = None, start: int = 0) -> str:
        """`lines` lines of a tab (default: the first) from line `start` as a picture; the SASS tab in
        `sass_order` (default: the order it opens in), measured rows shaded by their heat."""
        d = self.data
        first = next(t for t in d["tabs"] if t["name"] == tab) if tab else d["tabs"][0]
        listing = first.get("listing") or {}
        order = sass_order or listing.get("order")
        rows = listing["orders"][order] if listing.get("orders") else \
            [{"kind": d["mode"], "text": line, "heat": None} for line in first["text"].splitlines()]
        shown = rows[start:start + lines]
        chars = min(max([CODE_CHARS, *(len(r["text"]) for r in shown)]), WIDEST_CHARS) if listing.get("orders") \
            else CODE_CHARS
        width, row_h = 1000 * chars // CODE_CHARS, 15
        height = 40 + row_h * (len(shown) + 1)
        name = f"{first['name']}, {ORDER_NAMES[order]}" if listing.get("orders") else first["name"]
        parts = [f'<text x="8" y="18" font-family="sans-serif" font-weight="bold" font-size="13">'
                 f'{html.escape(d["title"])}  [{html.escape(name)}]</text>']
        for i, row in enumerate(shown):
            y = 40 + i * row_h
            if row["heat"]:
                parts.append(f'<rect x="4" y="{y - 11}" width="{width - 8}" height="{row_h}" fill="#d62728" '
                             f'fill-opacity="{0.45 * row["heat"]:.3f}"/>')
            color, weight = _row_style(row)
            parts.append(f'<text x="8" y="{y}" fill="{color}" font-weight="{weight}" xml:space="preserve">'
                         f'{html.escape(clip(row["text"], chars))}</text>')
        if len(rows) > start + len(shown):
            parts.append(f'<text x="8" y="{40 + len(shown) * row_h}" fill="#888">\u2026 '
                         f'{len(rows) - start - len(shown)} more lines</text>')
        return svg_document(width, height, ['<g font-family="monospace" font-size="12">', *parts, "</g>"])


SASS_STYLES = {"line": ("#1f4e9c", "bold"), "label": ("#8a3ab9", "bold"), "instruction": ("#222", "normal")}
LOOP_COLOUR = "#b35900"   # a jump back to a loop head


def _row_style(row: dict) -> tuple[str, str]:
    """(colour, weight) of a row: a diff line by its sign, a SASS row by its kind."""
    text = row["text"]
    if row["kind"] == "diff":
        return ("#2ca02c" if text.startswith("+") else "#d62728" if text.startswith("-") else
                "#1f77b4" if text.startswith("@@") else "#222"), "normal"
    if row.get("loop"):
        return LOOP_COLOUR, "bold"
    return SASS_STYLES.get(row["kind"], ("#222", "normal"))
