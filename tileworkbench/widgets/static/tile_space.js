// Tile space: shows the picture that tile_space.py drew (regions, tile lines, the block's lanes),
// reports the element under the mouse, and drives the `index` / `tile_shape` traits from sliders
// (Python re-runs the load through the interpreter and sends new data).
// @ts-check

import { renderView, pictureOf, pointIn } from "./_picture.js";
import { typed } from "./_data.js";
import { svg } from "./_svg.js";

function formatValue(v) {
  return Number.isInteger(v) ? String(v) : Number(v).toPrecision(5);
}

/** The warp and thread of the generated code that move the block's lane at (r, c), and what the op's
 * requests cost, where the view is coloured by warp; "" elsewhere. */
function warpOf(data, threadAt, r, c) {
  const t = threadAt.get(`${r},${c}`);
  if (t === undefined) return "";
  const w = Math.floor(t / 32), perWarp = data.warps.warp_sectors_per_request[w];
  return `   warp ${w} thread ${t} (lane ${t % 32}): ${data.warps.sectors_per_request.toFixed(2)} sectors/request` +
    (perWarp === undefined ? "" : ` (warp ${w}: ${perWarp.toFixed(2)})`);
}

/** Drawn lane (r, c) -> the thread that moves it, where the view is coloured by warp. */
function threadsOf(data) {
  const map = new Map();
  if (!data.lane_thread) return map;
  const rows = typed(data.lane_r), cols = typed(data.lane_c), threads = typed(data.lane_thread);
  threads.forEach((t, i) => map.set(`${rows[i]},${cols[i]}`, t));
  return map;
}

/** What the mouse is over: array element, tile coordinate, lane within the tile, value. */
function describe(data, values, r, c) {
  const [M, N] = data.shape2, [th, tw] = data.box2;
  // the element in array axes (a 1-D array is drawn as one row, a 3-D-or-more one as a slice)
  const element = data.ndim === 1 ? [c] : [...data.lead, r, c];
  const arrayTile = element.map((v, i) => Math.floor(v / data.box[i]));
  const offset = element.map((v, i) => v - arrayTile[i] * data.box[i]);
  // tile-space axis k walks array axis order[k]
  const tile = data.order.map((a) => arrayTile[a]), lane = data.order.map((a) => offset[a]);
  const inside = r >= 0 && r < M && c >= 0 && c < N;
  const inTiles = r >= 0 && c >= 0 && r < data.tiles2[0] * th && c < data.tiles2[1] * tw;
  let what;
  if (inside) {
    const [vr, vc] = [r - data.values_lo[0], c - data.values_lo[1]], vw = data.values ? data.values.shape[1] : 0;
    what = values ? `= ${formatValue(values[vr * vw + vc])}` : "(inside)";
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
  render: renderView("svg", ({ model, el }) => {
    const root = document.createElement("div");
    el.appendChild(root);

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const values = data.values ? typed(data.values) : null;
      const threadAt = threadsOf(data);
      const figure = pictureOf(model);
      const hover = svg("rect", { fill: "none", stroke: data.palette.hover, "stroke-width": 2, visibility: "hidden",
        "pointer-events": "none" }, figure);
      const status = document.createElement("div");
      status.style.cssText = "font: 12px monospace; margin: 2px 12px; min-height: 16px; color: #333;";
      figure.addEventListener("mousemove", (ev) => {
        const at = pointIn(figure, ev);
        const c = Math.floor((at.x - data.x0) / data.cell) + data.lo[1];
        const r = Math.floor((at.y - data.y0) / data.cell) + data.lo[0];
        if (r < data.lo[0] || c < data.lo[1] || r >= data.lo[0] + data.ext[0] || c >= data.lo[1] + data.ext[1]) {
          hover.setAttribute("visibility", "hidden");
          status.textContent = "";
          return;
        }
        Object.entries({ x: data.x0 + (c - data.lo[1]) * data.cell, y: data.y0 + (r - data.lo[0]) * data.cell,
          width: data.cell, height: data.cell, visibility: "visible" }).forEach(([k, v]) => hover.setAttribute(k, String(v)));
        status.textContent = describe(data, values, r, c) + warpOf(data, threadAt, r, c);
      });
      figure.addEventListener("mouseleave", () => {
        hover.setAttribute("visibility", "hidden");
        status.textContent = "";
      });
      figure.addEventListener("click", (ev) => {   // select the element: linked views outline it
        const at = pointIn(figure, ev);
        const c = Math.floor((at.x - data.x0) / data.cell) + data.lo[1];
        const r = Math.floor((at.y - data.y0) / data.cell) + data.lo[0];
        if (r < 0 || c < 0 || r >= data.shape2[0] || c >= data.shape2[1]) return;
        model.set("selected", { array: data.array, index: data.ndim === 1 ? [c] : [...data.lead, r, c] });
        model.save_changes();
      });
      root.append(controlsOf(model, data), figure, status);
    }

    return draw;
  }),
};
