"""The SVG every view draws with: texts, the document, the legend row, colours and the one rule for
text on a coloured fill. A view's picture is drawn once, here in Python, as a pure function of its
plain data; the view's JavaScript shows that SVG and adds interaction on top of it, and the static
export (`to_svg`, the picture saved in a notebook) is the same SVG.
"""
from __future__ import annotations

from xml.sax.saxutils import escape

import numpy as np

PAD = 12          # pixels around and between panels
TITLE_H = 22
LABEL_H = 18
MIN_FONT = 11     # the smallest text a figure uses: still legible on a projector
TITLE_CHARS = 100  # the longest title: a longer source line is cut at a word, with an ellipsis
DARK_INK, LIGHT_INK = "#222222", "#ffffff"


def text(x, y, s, *, size=12, weight="normal", anchor="start", role=None) -> dict:
    """One text of a figure, as plain data (the views' data carries them). `role` names it for the
    view's script (a class), where the script rewrites it."""
    t = {"x": int(x), "y": int(y), "text": str(s), "size": max(MIN_FONT, size), "weight": weight, "anchor": anchor}
    return t | {"role": role} if role else t


def text_width(s: str, size: float, bold: bool = False) -> float:
    """A generous estimate of a sans-serif line's width in pixels (no font metrics here)."""
    return (0.62 if bold else 0.56) * size * len(s)


def clip(s: str, chars: int) -> str:
    """`s` cut to `chars` characters at a word boundary, with an ellipsis where it was cut."""
    if len(s) <= chars:
        return s
    cut = s[:chars - 1]
    return (cut[:cut.rfind(" ")] if " " in cut[chars // 2:] else cut).rstrip(" ,;") + "\u2026"


def svg_text(t: dict, fill: str = DARK_INK) -> str:
    role = f' class="{t["role"]}"' if t.get("role") else ""
    return (f'<text{role} x="{t["x"]}" y="{t["y"]}" font-size="{t["size"]}" font-weight="{t["weight"]}" '
            f'text-anchor="{t["anchor"]}" fill="{fill}">{escape(t["text"])}</text>')


def fmt(v) -> str:
    """A pixel coordinate for SVG: at most two decimals."""
    return f"{float(v):.2f}".rstrip("0").rstrip(".")


def svg_document(width, height, body: list[str]) -> str:
    """The figure: `width` x `height` pixels at most, scaled down to the width it is shown in."""
    width, height = int(np.ceil(width)), int(np.ceil(height))
    return "\n".join([(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                       f'viewBox="0 0 {width} {height}" font-family="sans-serif" '
                       f'style="max-width: 100%; height: auto">'),
                      f'<rect width="{width}" height="{height}" fill="white"/>', *body, "</svg>"])


def with_outlines(svg: str, squares, colour: str, cls: str = "selected") -> str:
    """The picture `svg` with squares (x, y, side) outlined on top, in a group of class `cls`: a
    highlight drawn after the picture (the views' scripts redraw their own outlines, not these)."""
    if not squares:
        return svg
    rects = "".join(f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{fmt(s)}" height="{fmt(s)}"/>' for x, y, s in squares)
    group = f'<g class="{cls}" fill="none" stroke="{colour}" stroke-width="3" pointer-events="none">{rects}</g>'
    return svg.replace("</svg>", group + "\n</svg>")


def legend_item_width(label: str) -> int:
    return 28 + int(6.6 * len(label))


def legend_width(legend) -> int:
    return PAD + sum(legend_item_width(item["label"]) for item in legend)


def legend_svg(legend, x: float, y: float) -> list[str]:
    """The legend ({label, colour}) as a row of swatches from (x, y)."""
    out = []
    for item in legend:
        out.append(f'<rect class="legend" x="{fmt(x)}" y="{fmt(y)}" width="12" height="12" fill="{item["colour"]}" '
                   f'stroke="#444"/>')
        out.append(svg_text(text(x + 16, y + 10, item["label"], size=MIN_FONT)))
        x += legend_item_width(item["label"])
    return out


def hex_colour(rgb) -> str:
    r, g, b = (int(v) for v in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def rgb_of(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[k:k + 2], 16) for k in (1, 3, 5))


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB colours (..., 3) in 0..255."""
    c = np.asarray(rgb, float) / 255
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def light_ink(rgb: np.ndarray) -> np.ndarray:
    """True where white text contrasts more than dark text with the fill (rgb: (..., 3) in 0..255):
    the one contrast rule of every view."""
    lum = _luminance(rgb)
    dark = _luminance(rgb_of(DARK_INK))
    return (1.05 / (lum + 0.05)) > (lum + 0.05) / (dark + 0.05)


def ink_of(colour: str) -> str:
    """The text colour for a label on `colour` ("#rrggbb")."""
    return LIGHT_INK if light_ink(np.array(rgb_of(colour))) else DARK_INK
