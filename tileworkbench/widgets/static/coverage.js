// Block scrubber and coverage: draws the figure that coverage.py computed, outlines the current
// block's footprint, and drives the `block` trait from sliders, a play timer and clicks.
// @ts-check

import { hidePicture } from "./_picture.js";
import { canvasOf, drawCells, drawTexts, hit, legendOf } from "./_cells.js";
import { typed } from "./_data.js";

const WRITE = 2;

function panelsOf(data) {
  return data.panels.map((p) => ({ ...p, cx: typed(p.cx), cy: typed(p.cy), fill: typed(p.fill),
    ink: typed(p.ink), text: typed(p.text), fpStart: typed(p.fp_start), fpCells: typed(p.fp_cells),
    fpKind: typed(p.fp_kind), whoStart: typed(p.who_start), who: typed(p.who) }));
}

const linear = (grid, b) => b[0] + grid[0] * (b[1] + grid[1] * b[2]);
const blockOf = (grid, n) => [n % grid[0], Math.floor(n / grid[0]) % grid[1], Math.floor(n / (grid[0] * grid[1]))];

function drawFigure(ctx, data, panels, block, legendColours) {
  const cell = data.cell;
  ctx.fillStyle = "white";
  ctx.fillRect(0, 0, data.width, data.height);
  drawTexts(ctx, data.texts);
  const b = linear(data.grid, block);
  for (const p of panels) {
    drawCells(ctx, p, cell);
    ctx.lineWidth = 2;
    for (let j = p.fpStart[b]; j < p.fpStart[b + 1]; j++) {
      const i = p.fpCells[j];
      ctx.strokeStyle = p.fpKind[j] & WRITE ? legendColours.write : legendColours.read;
      ctx.strokeRect(p.cx[i] + 1, p.cy[i] + 1, cell - 3, cell - 3);
    }
  }
}

/** The element (or the first element of the bin) that cell i of panel p stands for. */
function elementOf(p, i) {
  const [S, R, C] = p.binned;
  const [fs, fr, fc] = p.factors;
  const s = Math.floor(i / (R * C)) * fs, r = (Math.floor(i / C) % R) * fr, c = (i % C) * fc;
  const view = p.shape.length <= 1 ? [1, 1, p.shape[0] || 1] : null;
  const cols = view ? view[2] : p.shape[p.shape.length - 1], rows = view ? 1 : p.shape[p.shape.length - 2];
  let flat = (s * rows + r) * cols + c;
  const index = [];
  for (let k = p.shape.length - 1; k >= 0; k--) {
    index.unshift(flat % p.shape[k]);
    flat = Math.floor(flat / p.shape[k]);
  }
  return index;
}

export default {
  render({ model, el }) {
    hidePicture(el, model);
    const root = document.createElement("div");
    el.appendChild(root);
    let timer = null;

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const panels = panelsOf(data);
      const grid = data.grid;
      const colours = { write: data.legend.find((l) => l.label.startsWith("block writes")).colour,
        read: data.legend.find((l) => l.label.startsWith("block reads")).colour };

      const controls = document.createElement("div");
      controls.style.cssText = "font: 12px sans-serif; display: flex; gap: 12px; align-items: center; margin: 4px 12px;";
      const play = document.createElement("button");
      play.textContent = timer ? "\u23f8 pause" : "\u25b6 play";
      controls.appendChild(play);
      const sliders = [];
      for (let axis = 0; axis < data.rank; axis++) {
        const label = document.createElement("label");
        const slider = document.createElement("input");
        slider.type = "range";
        slider.min = "0";
        slider.max = String(grid[axis] - 1);
        const value = document.createElement("span");
        label.append(`bid(${axis}) `, slider, value);
        slider.addEventListener("input", () => {
          const block = [...model.get("block")];
          block[axis] = Number(slider.value);
          setBlock(block);
        });
        sliders.push([slider, value]);
        controls.appendChild(label);
      }

      const { canvas, ctx } = canvasOf(data.width, data.height);
      canvas.style.cursor = "pointer";
      const status = document.createElement("div");
      status.style.cssText = "font: 12px monospace; margin: 2px 12px; min-height: 16px; color: #333;";

      function setBlock(block) {
        model.set("block", block.map(Number));
        model.save_changes();
      }
      function paint() {
        const block = model.get("block");
        sliders.forEach(([slider, value], axis) => {
          slider.value = String(block[axis]);
          value.textContent = ` ${block[axis]} / ${grid[axis] - 1}`;
        });
        drawFigure(ctx, data, panels, block, colours);
      }
      function writersOf(p, i) {
        return Array.from(p.who.subarray(p.whoStart[i], p.whoStart[i + 1]));
      }

      play.addEventListener("click", () => {
        if (timer) {
          clearInterval(timer);
          timer = null;
          play.textContent = "\u25b6 play";
          return;
        }
        play.textContent = "\u23f8 pause";
        const total = grid[0] * grid[1] * grid[2];
        timer = setInterval(() => {
          setBlock(blockOf(grid, (linear(grid, model.get("block")) + 1) % total));
        }, model.get("interval_ms"));
      });
      canvas.addEventListener("mousemove", (ev) => {
        const r = canvas.getBoundingClientRect();
        const found = hit(panels, data.cell, ev.clientX - r.left, ev.clientY - r.top);
        if (!found) {
          status.textContent = "";
          return;
        }
        const p = panels[found[0]];
        const blocks = writersOf(p, found[1]).map((n) => `(${blockOf(grid, n).slice(0, data.rank)})`);
        const what = p.factors.every((f) => f === 1) ? `${p.name}[${elementOf(p, found[1])}]`
          : `${p.name} bin from [${elementOf(p, found[1])}]`;
        status.textContent = `${what}: ${p.written ? "written" : "read"} by ${blocks.length} block(s) ` +
          `${blocks.slice(0, 8).join(" ")}${blocks.length > 8 ? " \u2026" : ""} (click: select, again: next)`;
      });
      canvas.addEventListener("click", (ev) => {
        const r = canvas.getBoundingClientRect();
        const found = hit(panels, data.cell, ev.clientX - r.left, ev.clientY - r.top);
        if (!found) return;
        const who = writersOf(panels[found[0]], found[1]);
        if (!who.length) return;
        const at = who.indexOf(linear(grid, model.get("block")));
        setBlock(blockOf(grid, who[(at + 1) % who.length]));
      });

      model.on("change:block", paint);
      paint();
      root.append(controls, canvas, legendOf(data.legend), status);
      return () => model.off("change:block", paint);
    }

    let undraw = draw();
    const redraw = () => {
      if (undraw) undraw();
      undraw = draw();
    };
    model.on("change:data", redraw);
    return () => {
      if (timer) clearInterval(timer);
      if (undraw) undraw();
      model.off("change:data", redraw);
    };
  },
};
