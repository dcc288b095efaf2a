// Gather/scatter index map: draws the figure that index_map.py computed (lane panels, the array,
// ghost cells, links); hovering a lane or an array cell highlights the lanes that share its
// element (a scatter collision lights up every writer) and syncs the `lane` trait.
// @ts-check

import { hidePicture } from "./_picture.js";
import { typed } from "./_data.js";
import { inkOf, label, legendSvg, legendWidth, svg } from "./_svg.js";

function arraysOf(data) {
  return { laneX: typed(data.lane_x), laneY: typed(data.lane_y), status: typed(data.status),
    coords: typed(data.coords), elem: typed(data.elem), target: typed(data.target), tx: typed(data.tx),
    ty: typed(data.ty), cellX: typed(data.cell_x), cellY: typed(data.cell_y), cellFill: typed(data.cell_fill),
    ghostX: typed(data.ghost_x), ghostY: typed(data.ghost_y) };
}

function drawFigure(data, a) {
  const pal = data.palette, cell = data.cell, acell = data.acell;
  const width = Math.max(data.width, legendWidth(data.legend));
  const height = data.height + 22;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, "font-family": "sans-serif" });
  svg("rect", { width, height, fill: "white" }, root);
  for (const t of data.texts) label(root, t);
  const font = Math.max(7, Math.floor(cell * 0.42));
  for (const p of data.panels) {
    const g = svg("g", { stroke: "white", "stroke-width": 1 }, root);
    for (let i = 0; i < a.laneX.length; i++) {
      svg("rect", { x: p.x + a.laneX[i], y: a.laneY[i], width: cell, height: cell, fill: p.fill[i] }, g);
      const text = p.labels[i];
      if (cell >= 14 && text && text.length * font * 0.6 <= cell) {
        label(g, { x: p.x + a.laneX[i] + Math.floor(cell / 2), y: a.laneY[i] + Math.floor(cell / 2) + Math.floor(font / 3),
          text, size: font, weight: "normal", anchor: "middle" }, inkOf(p.fill[i]));
      }
    }
  }
  const g = svg("g", { stroke: "white", "stroke-width": 1 }, root);
  const afont = Math.max(7, Math.floor(acell * 0.38));
  for (let i = 0; i < a.cellX.length; i++) {
    const colour = data.fill_names[a.cellFill[i]];
    svg("rect", { x: a.cellX[i], y: a.cellY[i], width: acell, height: acell, fill: colour }, g);
    const text = data.array_labels ? data.array_labels[i] : "";
    if (text && text.length * afont * 0.6 <= acell) {
      label(g, { x: a.cellX[i] + Math.floor(acell / 2), y: a.cellY[i] + Math.floor(acell / 2) + Math.floor(afont / 3),
        text, size: afont, weight: "normal", anchor: "middle" }, inkOf(colour));
    }
  }
  const ghosts = svg("g", { fill: "none", stroke: pal.ghost, "stroke-dasharray": "3 2" }, root);
  for (let i = 0; i < a.ghostX.length; i++) {
    svg("rect", { x: a.ghostX[i] + 1, y: a.ghostY[i] + 1, width: acell - 2, height: acell - 2 }, ghosts);
  }
  if (data.lines) {
    const links = svg("g", { stroke: pal.line, "stroke-width": 0.8, "stroke-opacity": 0.6 }, root);
    for (let i = 0; i < a.laneX.length; i++) if (a.tx[i] >= 0) link(links, data, a, i);
  }
  legendSvg(root, data.legend, 12, data.height + 2);
  const highlight = svg("g", { fill: "none", stroke: pal.hover, "stroke-width": 2, "pointer-events": "none" }, root);
  return { root, highlight };
}

/** The line from lane i (below the result panel's cell) to what it points at. */
function link(parent, data, a, i) {
  const x = data.panels[data.panels.length - 1].x + a.laneX[i] + data.cell / 2;
  svg("line", { x1: x, y1: a.laneY[i] + data.cell, x2: a.tx[i], y2: a.ty[i] }, parent);
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
  render({ model, el }) {
    hidePicture(el, model);
    const root = document.createElement("div");
    el.appendChild(root);

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const a = arraysOf(data);
      const { root: figure, highlight: lit } = drawFigure(data, a);
      const status = document.createElement("div");
      status.style.cssText = "font: 12px monospace; margin: 2px 12px; min-height: 16px; color: #333;";
      const show = (lane, lanes) => {
        highlight(lit, data, a, lanes);
        status.textContent = lane >= 0 ? describe(data, a, lane) : "";
        if (model.get("lane") !== lane) {
          model.set("lane", lane);
          model.save_changes();
        }
      };
      figure.addEventListener("mousemove", (ev) => {
        const box = figure.getBoundingClientRect();
        const x = ev.clientX - box.left, y = ev.clientY - box.top;
        for (const p of data.panels) {
          for (let i = 0; i < a.laneX.length; i++) {
            const lx = p.x + a.laneX[i], ly = a.laneY[i];
            if (x >= lx && x < lx + data.cell && y >= ly && y < ly + data.cell) return show(i, partners(a, i));
          }
        }
        for (let c = 0; c < a.cellX.length; c++) {
          if (x >= a.cellX[c] && x < a.cellX[c] + data.acell && y >= a.cellY[c] && y < a.cellY[c] + data.acell) {
            const lanes = [];
            for (let i = 0; i < a.target.length; i++) if (a.target[i] === c) lanes.push(i);
            show(lanes.length ? lanes[0] : -1, lanes);
            if (!lanes.length) status.textContent = `no lane of this block touches this ${data.factors.some((f) => f > 1) ? "bin" : "element"}`;
            return;
          }
        }
        show(-1, []);
      });
      show(model.get("lane"), partners(a, model.get("lane")));
      root.append(figure, status);
    }

    draw();
    model.on("change:data", draw);
    return () => model.off("change:data", draw);
  },
};
