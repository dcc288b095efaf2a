// What the SVG views (tile_space.js, index_map.js, sweep.js) share: elements, the figure's texts,
// text colour by luminance, and the legend row under a figure. Inlined into the views that import
// it (see widgets/_base.py `static`).
// @ts-check

export const SVG = "http://www.w3.org/2000/svg";

/** An SVG element with attributes, appended to `parent` when given. */
export function svg(tag, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

/** A text ({x, y, text, size, weight, anchor}, as Python's `text()` makes them) in `fill`. */
export function label(parent, t, fill = "black") {
  const node = svg("text", { x: t.x, y: t.y, "font-size": t.size, "font-weight": t.weight,
    "text-anchor": t.anchor, fill, stroke: "none" }, parent);
  node.textContent = t.text;
  return node;
}

/** Black or white, whichever reads better on "#rrggbb" (as tile_space.ink_of). */
export function inkOf(colour) {
  const [r, g, b] = [1, 3, 5].map((k) => parseInt(colour.slice(k, k + 2), 16));
  return 0.299 * r + 0.587 * g + 0.114 * b < 150 ? "white" : "#222";
}

const legendItemWidth = (item) => 28 + Math.floor(6.2 * item.label.length);  // as tile_space.legend_svg

/** The legend ({label, colour}) in a row from (x, y). */
export function legendSvg(parent, legend, x, y) {
  for (const item of legend) {
    svg("rect", { x, y, width: 12, height: 12, fill: item.colour, stroke: "#444" }, parent);
    label(parent, { x: x + 16, y: y + 10, text: item.label, size: 11, weight: "normal", anchor: "start" });
    x += legendItemWidth(item);
  }
}

/** How wide the legend row is, margins included (as tile_space.legend_width). */
export function legendWidth(legend) {
  return 12 + legend.reduce((w, item) => w + legendItemWidth(item), 0);
}
