// Tile space: draws the figure that tile_space.py computed (regions, tile lines, the block's lanes),
// reports the element under the mouse, and drives the `index` / `tile_shape` traits from sliders
// (Python re-runs the load through the interpreter and sends new data).
// @ts-check

import { hidePicture } from "./_picture.js";
import { typed } from "./_data.js";
import { inkOf, label, legendSvg, legendWidth, svg } from "./_svg.js";

const PADDED = 2;

function formatValue(v) {
  return Number.isInteger(v) ? String(v) : Number(v).toPrecision(5);
}

function drawFigure(data) {
  const pal = data.palette, cell = data.cell;
  const outside = data.op === "store" ? "dropped" : data.padding_mode;
  const width = Math.max(data.width, legendWidth(data.legend)), height = data.height + 22;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, "font-family": "sans-serif" });
  svg("rect", { width, height, fill: "white" }, root);
  for (const t of data.texts) label(root, t);
  const regions = typed(data.regions);
  for (let i = 0; i < regions.length; i += 7) {
    const [x, y, w, h, kind] = regions.subarray(i, i + 5);
    svg("rect", kind === 0 ? { x, y, width: w, height: h, fill: pal.inside }
      : { x, y, width: w, height: h, fill: pal[outside], "fill-opacity": data.region_opacity }, root);
  }
  for (const [lines, colour, w] of [[typed(data.fine), pal.element_line, 1], [typed(data.lines), pal.tile_line, 1.5]]) {
    const g = svg("g", { stroke: colour, "stroke-width": w }, root);
    for (let i = 0; i < lines.length; i += 4) {
      svg("line", { x1: lines[i], y1: lines[i + 1], x2: lines[i + 2], y2: lines[i + 3] }, g);
    }
  }
  const xs = typed(data.lane_x), ys = typed(data.lane_y), status = typed(data.lane_status);
  const lanes = svg("g", { stroke: "white", "stroke-width": 0.5 }, root);
  for (let k = 0; k < xs.length; k++) {
    const colour = status[k] === PADDED ? pal[outside] : data.status_colours[status[k]];
    svg("rect", { x: xs[k], y: ys[k], width: cell, height: cell, fill: colour }, lanes);
    if (cell >= 16) {
      label(lanes, { x: xs[k] + cell / 2, y: ys[k] + cell / 2 + 4, text: String(k), size: Math.floor(cell * 0.4),
        weight: "normal", anchor: "middle" }, inkOf(colour));
    }
  }
  const x0 = Math.min(...xs), y0 = Math.min(...ys);
  svg("rect", { x: x0, y: y0, width: Math.max(...xs) - x0 + cell, height: Math.max(...ys) - y0 + cell,
    fill: "none", stroke: pal.tile, "stroke-width": 2.5 }, root);
  legendSvg(root, data.legend, 12, data.height + 2);
  const hover = svg("rect", { fill: "none", stroke: pal.hover, "stroke-width": 2, visibility: "hidden",
    "pointer-events": "none" }, root);
  return { root, hover };
}

/** What the mouse is over: array element, tile coordinate, lane within the tile, value. */
function describe(data, values, r, c) {
  const [M, N] = data.shape2, [th, tw] = data.box2;
  const arrayTile = [Math.floor(r / th), Math.floor(c / tw)], offset = [r - arrayTile[0] * th, c - arrayTile[1] * tw];
  // tile-space axis k walks array axis order[k] (a 1-D array is drawn as row 0 of a 2-D one)
  const axis = (k) => data.order[k] + (data.ndim === 1 ? 1 : 0);
  const tile = data.order.map((_, k) => arrayTile[axis(k)]), lane = data.order.map((_, k) => offset[axis(k)]);
  const element = data.ndim === 1 ? [c] : [r, c];
  const inside = r >= 0 && r < M && c >= 0 && c < N;
  const inTiles = r >= 0 && c >= 0 && r < data.tiles2[0] * th && c < data.tiles2[1] * tw;
  let what;
  if (inside) {
    what = values ? `= ${formatValue(values[r * N + c])}` : "(inside)";
  } else if (inTiles) {
    what = data.op === "store" ? "(outside: a store drops it)" : `(padding: reads ${data.padding_text})`;
  } else {
    what = "(outside the tile grid)";
  }
  const mine = tile.every((t, k) => t === data.index[k]) ? "  \u2190 the block's tile" : "";
  return `${data.array}[${element.join(", ")}] ${what}   tile (${tile.join(", ")}) lane (${lane.join(", ")})${mine}`;
}

function slider(text, min, max, value, show, onInput) {
  const wrap = document.createElement("label");
  const input = document.createElement("input");
  Object.assign(input, { type: "range", min: String(min), max: String(max), value: String(value) });
  const shown = document.createElement("span");
  shown.textContent = ` ${show(value)}`;
  input.addEventListener("input", () => {
    shown.textContent = ` ${show(Number(input.value))}`;
  });
  input.addEventListener("change", () => onInput(Number(input.value)));
  wrap.append(text, input, shown);
  return wrap;
}

function controlsOf(model, data) {
  const div = document.createElement("div");
  div.style.cssText = "font: 12px sans-serif; display: flex; gap: 14px; flex-wrap: wrap; margin: 4px 12px;";
  const set = (name, k, v) => {
    const list = [...model.get(name)];
    list[k] = v;
    model.set(name, list);
    model.save_changes();
  };
  data.tile_space_dims.forEach((dim, k) => {
    const tiles = Math.ceil(dim / data.tile_shape[k]);
    div.appendChild(slider(`index[${k}] `, 0, Math.max(0, tiles - 1), data.index[k], (v) => `${v} / ${tiles - 1}`,
      (v) => set("index", k, v)));
    const most = Math.max(0, Math.ceil(Math.log2(dim)));
    div.appendChild(slider(`shape[${k}] `, 0, most, Math.log2(data.tile_shape[k]), (v) => `${2 ** v}`,
      (v) => set("tile_shape", k, 2 ** v)));
  });
  return div;
}

export default {
  render({ model, el }) {
    hidePicture(el, model);
    const root = document.createElement("div");
    el.appendChild(root);

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const values = data.values ? typed(data.values) : null;
      const { root: figure, hover } = drawFigure(data);
      const status = document.createElement("div");
      status.style.cssText = "font: 12px monospace; margin: 2px 12px; min-height: 16px; color: #333;";
      figure.addEventListener("mousemove", (ev) => {
        const box = figure.getBoundingClientRect();
        const c = Math.floor((ev.clientX - box.left - data.x0) / data.cell) + data.lo[1];
        const r = Math.floor((ev.clientY - box.top - data.y0) / data.cell) + data.lo[0];
        if (r < data.lo[0] || c < data.lo[1] || r >= data.lo[0] + data.ext[0] || c >= data.lo[1] + data.ext[1]) {
          hover.setAttribute("visibility", "hidden");
          status.textContent = "";
          return;
        }
        Object.entries({ x: data.x0 + (c - data.lo[1]) * data.cell, y: data.y0 + (r - data.lo[0]) * data.cell,
          width: data.cell, height: data.cell, visibility: "visible" }).forEach(([k, v]) => hover.setAttribute(k, String(v)));
        status.textContent = describe(data, values, r, c);
      });
      figure.addEventListener("mouseleave", () => {
        hover.setAttribute("visibility", "hidden");
        status.textContent = "";
      });
      root.append(controlsOf(model, data), figure, status);
    }

    draw();
    model.on("change:data", draw);
    return () => model.off("change:data", draw);
  },
};
