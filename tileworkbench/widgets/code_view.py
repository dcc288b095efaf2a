"""Code view: one specialization's IR, generated CUDA C++, PTX, SASS (under the kernel's source
lines it came from) and resources, in tabs.

    CodeView(kernel, args)                         # compiled for sm_90 with NVRTC; no GPU needed
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


def resources_text(generated, resources, arch: str) -> str:
    from ..profile.occupancy import theoretical_occupancy
    shared = generated.smem_bytes + resources.shared_static_bytes
    occ = theoretical_occupancy(arch, generated.threads, resources.registers, shared)
    lines = [
        f"kernel            {generated.name}",
        f"arch              {arch}",
        f"threads/block     {generated.threads}",
        f"registers         {resources.registers}",
        f"shared (dynamic)  {generated.smem_bytes} bytes",
        f"shared (static)   {resources.shared_static_bytes} bytes",
        f"local memory      {resources.local_bytes} bytes",
        f"spill stores      {resources.spill_stores}",
        f"spill loads       {resources.spill_loads}",
        f"occupancy         {occ.blocks_per_sm} blocks, {occ.warps_per_sm} warps per SM "
        f"({occ.occupancy:.0%}), limited by {occ.limiter}",
    ]
    return "\n".join(lines) + "\n"


def code_tabs(kernel, args, arch: str = "sm_90") -> dict[str, str]:
    """The text of each tab for one specialization: {"IR", "CUDA", "PTX", "SASS", "resources"}."""
    from ..ir import print_function
    from ..runtime.launch import build
    fn = kernel.specialize(args)
    generated, module = build(fn, arch)
    return {
        "IR": print_function(fn),
        "CUDA": generated.source,
        "PTX": module.ptx if isinstance(module.ptx, str) else module.ptx.decode(),
        "SASS": sass_text(fn, generated, module),
        "resources": resources_text(generated, module.kernels[generated.name], arch),
    }


def sass_text(fn, generated, module) -> str:
    """The cubin's SASS interleaved with the kernel's source lines, or why there is none."""
    from ..runtime.sass import SassUnavailableError, disassemble, group_by_line, interleaved, parse_listing
    try:
        listing = parse_listing(disassemble(module.cubin))
    except SassUnavailableError as e:
        return f"No SASS: {e}\n"
    return interleaved(group_by_line(fn, generated, listing[generated.name]))


def diff_tabs(tabs_a: dict, tabs_b: dict, label_a: str = "a", label_b: str = "b") -> dict[str, str]:
    """A unified diff of each tab (empty string where a tab is unchanged)."""
    out = {}
    for name in TABS:
        a, b = tabs_a[name].splitlines(keepends=True), tabs_b[name].splitlines(keepends=True)
        lines = difflib.unified_diff(a, b, f"{label_a} ({name})", f"{label_b} ({name})", n=3)
        out[name] = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out


def code_view_data(tabs: dict, title: str, mode: str = "code", labels=None) -> dict:
    entries = []
    for name in TABS:
        text = tabs[name]
        entry = {"name": name, "text": text, "lines": text.count("\n") + (0 if text.endswith("\n") or not text else 1)}
        if mode == "diff":
            body = [ln for ln in text.splitlines() if not ln.startswith(("+++", "---"))]
            entry["added"] = sum(ln.startswith("+") for ln in body)
            entry["removed"] = sum(ln.startswith("-") for ln in body)
        entries.append(entry)
    return {"title": title, "mode": mode, "labels": list(labels or []), "tabs": entries}


class CodeView(View):
    """Tabs IR / CUDA / PTX / resources of one specialization, or the diff of two."""

    _esm = static("code_view.js")
    data = Data()

    def __init__(self, kernel=None, args=None, arch: str = "sm_90", *, data: dict | None = None, **kwargs):
        if data is None:
            tabs = code_tabs(kernel, args, arch)
            label = describe_args(kernel, args)
            data = code_view_data(tabs, f"{kernel.specialize(args).name} ({label}) for {arch}", "code", [label])
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

    def to_svg(self, lines: int = 30, tab: str | None = None) -> str:
        """The first `lines` lines of a tab (default: the first) as a picture."""
        d = self.data
        first = next(t for t in d["tabs"] if t["name"] == tab) if tab else d["tabs"][0]
        shown = first["text"].splitlines()[:lines]
        width, row_h = 1000, 15
        height = 40 + row_h * (len(shown) + 1)
        parts = [f'<text x="8" y="18" font-family="sans-serif" font-weight="bold" font-size="13">'
                 f'{html.escape(d["title"])}  [{html.escape(first["name"])}]</text>']
        for i, line in enumerate(shown):
            color = "#222"
            if d["mode"] == "diff":
                color = "#2ca02c" if line.startswith("+") else "#d62728" if line.startswith("-") else \
                    "#1f77b4" if line.startswith("@@") else "#222"
            parts.append(f'<text x="8" y="{40 + i * row_h}" fill="{color}" xml:space="preserve">'
                         f'{html.escape(clip(line, CODE_CHARS))}</text>')
        if first["lines"] > len(shown):
            parts.append(f'<text x="8" y="{40 + len(shown) * row_h}" fill="#888">\u2026 '
                         f'{first["lines"] - len(shown)} more lines</text>')
        return svg_document(width, height, ['<g font-family="monospace" font-size="12">', *parts, "</g>"])
