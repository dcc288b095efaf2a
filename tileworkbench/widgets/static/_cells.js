// What the cell views (coverage.js, transform.js) share: finding the cell under the mouse in the
// picture that Python drew (transform.figure_svg: rect.cell with data-cell, in g.panel with
// data-panel), and outlining cells on top of it. Inlined into the views that import it (see
// widgets/_base.py `static`).
// @ts-check

import { svg } from "./_svg.js";

/** The [panel, cell] of the cell under the mouse event, or null. */
export function cellAt(ev) {
  const rect = ev.target instanceof Element ? ev.target.closest("rect.cell") : null;
  if (!(rect instanceof SVGElement) || !(rect.parentNode instanceof SVGElement)) return null;
  return [Number(rect.parentNode.dataset.panel), Number(rect.dataset.cell)];
}

/** Replace the picture's outlines with [panel, cells, colour] groups (cells: indices into the
 * panel's cx/cy). */
export function outline(root, data, groups) {
  root.querySelectorAll("g.outline").forEach((g) => g.remove());
  const cell = data.cell;
  for (const [k, cells, colour] of groups) {
    const p = data.panels[k];
    const g = svg("g", { class: "outline", fill: "none", stroke: colour, "stroke-width": 2, "pointer-events": "none" }, root);
    for (const i of cells) svg("rect", { x: p.cx[i] + 1, y: p.cy[i] + 1, width: cell - 2, height: cell - 2 }, g);
  }
}

/** The status line under a view. */
export function statusLine() {
  const status = document.createElement("div");
  status.style.cssText = "font: 13px monospace; margin: 2px 12px; min-height: 18px; color: #333;";
  return status;
}
