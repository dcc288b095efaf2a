// What the canvas views (coverage.js, transform.js) share: a crisp canvas, the figure's texts, panels of labelled cells, the legend, and hit testing.
// A view imports it with `import { ... } from "./_cells.js";`; widgets/_base.py inlines it into the
// view's module, because anywidget loads each view from a Blob URL, where relative imports cannot
// resolve.
// @ts-check

/** A canvas of width x height CSS pixels at the screen's resolution, and its 2-D context. */
export function canvasOf(width, height) {
  const canvas = document.createElement("canvas");
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  return { canvas, ctx };
}

/** The figure's texts ({x, y, text, size, weight, anchor}, as Python's `text()` makes them). */
export function drawTexts(ctx, texts) {
  for (const t of texts) {
    ctx.font = `${t.weight} ${t.size}px sans-serif`;
    ctx.textAlign = t.anchor === "middle" ? "center" : t.anchor === "end" ? "right" : "left";
    ctx.textBaseline = "alphabetic";
    ctx.fillStyle = "black";
    ctx.fillText(t.text, t.x, t.y);
  }
}

/** One panel's cells: `fill` is RGB per cell, `text` a number label (-1: none), `ink` 1 for white text. */
export function drawCells(ctx, p, cell) {
  const font = Math.max(7, Math.floor(cell * 0.42));
  for (let i = 0; i < p.cx.length; i++) {
    ctx.fillStyle = `rgb(${p.fill[3 * i]},${p.fill[3 * i + 1]},${p.fill[3 * i + 2]})`;
    ctx.fillRect(p.cx[i], p.cy[i], cell - 1, cell - 1);
    const label = String(p.text[i]);
    if (cell >= 14 && p.text[i] >= 0 && label.length * font * 0.6 <= cell) {
      ctx.font = `${font}px sans-serif`;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillStyle = p.ink[i] ? "white" : "black";
      ctx.fillText(label, p.cx[i] + cell / 2, p.cy[i] + cell / 2);
    }
  }
}

/** The legend as HTML swatches ({label, colour}), then an optional hint in grey. */
export function legendOf(items, note = "") {
  const div = document.createElement("div");
  div.style.cssText = "font: 12px sans-serif; display: flex; gap: 14px; flex-wrap: wrap; margin: 4px 12px;";
  for (const item of items) {
    const span = document.createElement("span");
    span.innerHTML = `<span style="display:inline-block;width:12px;height:12px;border:1px solid #444;` +
      `vertical-align:middle;background:${item.colour}"></span> ${item.label}`;
    div.appendChild(span);
  }
  if (note) {
    const hint = document.createElement("span");
    hint.style.color = "#555";
    hint.textContent = note;
    div.appendChild(hint);
  }
  return div;
}

/** The cell under (x, y): [panel, cell] or null. */
export function hit(panels, cell, x, y) {
  for (let k = 0; k < panels.length; k++) {
    const p = panels[k];
    for (let i = 0; i < p.cx.length; i++) {
      if (x >= p.cx[i] && x < p.cx[i] + cell && y >= p.cy[i] && y < p.cy[i] + cell) return [k, i];
    }
  }
  return null;
}
