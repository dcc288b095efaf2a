// Gather/scatter index map: shows the picture that index_map.py drew (lane panels, the array,
// ghost cells, links); hovering a lane or an array cell highlights the lanes that share its
// element (a scatter collision lights up every writer) and syncs the `lane` trait.
// @ts-check

import { renderView, pictureOf } from "./_picture.js";
import { statusLine } from "./_cells.js";
import { typed } from "./_data.js";
import { svg } from "./_svg.js";

function arraysOf(data) {
  return { laneX: typed(data.lane_x), laneY: typed(data.lane_y), status: typed(data.status),
    coords: typed(data.coords), elem: typed(data.elem), target: typed(data.target), tx: typed(data.tx),
    ty: typed(data.ty), cellX: typed(data.cell_x), cellY: typed(data.cell_y), cellFill: typed(data.cell_fill),
    ghostX: typed(data.ghost_x), ghostY: typed(data.ghost_y) };
}

/** The line from lane i (below the result panel's cell) to what it points at. */
function link(parent, data, a, i) {
  const x = data.panels[data.panels.length - 1].x + a.laneX[i] + data.cell / 2;
  svg("line", { x1: x, y1: a.laneY[i] + data.cell, x2: a.tx[i], y2: a.ty[i] - data.acell / 2 }, parent);
}

/** Lanes lit with lane i: itself and every lane of the block on the same element (index_map.partners). */
function partners(a, i) {
  if (i < 0) return [];
  if (a.elem[i] < 0) return [i];
  const out = [];
  for (let k = 0; k < a.elem.length; k++) if (a.elem[k] === a.elem[i]) out.push(k);
  return out;
}

function highlight(g, data, a, lanes) {
  g.replaceChildren();
  const cell = data.cell, acell = data.acell;
  for (const i of lanes) {
    for (const p of data.panels) {
      svg("rect", { x: p.x + a.laneX[i] + 1, y: a.laneY[i] + 1, width: cell - 2, height: cell - 2 }, g);
    }
    if (a.tx[i] >= 0) {
      link(g, data, a, i);
      svg("rect", { x: a.tx[i] - acell / 2, y: a.ty[i] - acell / 2, width: acell, height: acell }, g);
    }
  }
}

function describe(data, a, i) {
  const nd = data.ndim;
  const index = Array.from(a.coords.subarray(i * nd, i * nd + nd));
  const status = a.status[i];
  const what = data.status_labels[status];
  const lanes = partners(a, i);
  let text = `lane ${i}: ${data.array}[${index.join(", ")}] \u2014 ${what}`;
  const result = data.panels[data.panels.length - 1].labels[i];
  if (data.op === "gather" && (what === "masked off" || what === "out of bounds")) {
    return `${text}, reads padding_value = ${result || "?"}`;
  }
  if (data.op === "scatter" && (what === "masked off" || what === "out of bounds")) text += ", dropped";
  if (what.startsWith("collision")) {
    text += lanes.length > 1 ? `: lanes ${lanes.join(", ")} write this element`
      : ": the other writer is in another block";
  }
  return result ? `${text}; result ${result}` : text;
}

export default {
  render: renderView("svg", ({ model, el }) => {
    const root = document.createElement("div");
    el.appendChild(root);

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const a = arraysOf(data);
      const figure = pictureOf(model);
      const lit = figure.querySelector("g.highlight");
      const status = statusLine();
      const show = (lane, lanes) => {
        highlight(lit, data, a, lanes);
        status.textContent = lane >= 0 ? describe(data, a, lane) : "";
        if (model.get("lane") !== lane) {
          model.set("lane", lane);
          model.save_changes();
        }
      };
      figure.addEventListener("mousemove", (ev) => {
        const target = ev.target instanceof SVGElement ? ev.target : null;
        if (target && target.classList.contains("lane")) {
          const i = Number(target.dataset.lane);
          return show(i, partners(a, i));
        }
        if (target && target.classList.contains("element")) {
          const c = Number(target.dataset.cell), lanes = [];
          for (let i = 0; i < a.target.length; i++) if (a.target[i] === c) lanes.push(i);
          show(lanes.length ? lanes[0] : -1, lanes);
          if (!lanes.length) status.textContent = `no lane of this block touches this ${data.factors.some((f) => f > 1) ? "bin" : "element"}`;
          return;
        }
        show(-1, []);
      });
      figure.addEventListener("click", (ev) => {   // a lane's element, selected: linked views outline it
        const target = ev.target instanceof SVGElement ? ev.target : null;
        if (!target || !target.classList.contains("lane") || a.elem[Number(target.dataset.lane)] < 0) return;
        const i = Number(target.dataset.lane), nd = data.ndim;
        model.set("selected", { array: data.array, index: Array.from(a.coords.subarray(i * nd, i * nd + nd)) });
        model.save_changes();
      });
      show(model.get("lane"), partners(a, model.get("lane")));
      root.append(figure, status);
    }

    return draw;
  }),
};
