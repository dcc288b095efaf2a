// Block scrubber and coverage: shows the picture that coverage.py drew, outlines the current
// block's footprint on it, and drives the `block` trait from sliders, a play timer and clicks.
// @ts-check

import { renderView, pictureOf } from "./_picture.js";
import { cellAt, outline, statusLine } from "./_cells.js";
import { typed } from "./_data.js";

const WRITE = 2;

function panelsOf(data) {
  return data.panels.map((p) => ({ ...p, cx: typed(p.cx), cy: typed(p.cy), fpStart: typed(p.fp_start),
    fpCells: typed(p.fp_cells), fpKind: typed(p.fp_kind), whoStart: typed(p.who_start), who: typed(p.who) }));
}

const linear = (grid, b) => b[0] + grid[0] * (b[1] + grid[1] * b[2]);
const blockOf = (grid, n) => [n % grid[0], Math.floor(n / grid[0]) % grid[1], Math.floor(n / (grid[0] * grid[1]))];

/** The block's footprint as outline groups: reads, then writes, per panel (as coverage.footprint_outlines). */
function footprint(data, panels, block, colours) {
  const b = linear(data.grid, block), groups = [];
  panels.forEach((p, k) => {
    const cells = Array.from(p.fpCells.subarray(p.fpStart[b], p.fpStart[b + 1]));
    const kinds = Array.from(p.fpKind.subarray(p.fpStart[b], p.fpStart[b + 1]));
    groups.push([k, cells.filter((_, j) => !(kinds[j] & WRITE)), colours.read]);
    groups.push([k, cells.filter((_, j) => kinds[j] & WRITE), colours.write]);
  });
  return groups;
}

/** The element (or the first element of the bin) that cell i of panel p stands for. */
function elementOf(p, i) {
  const [, R, C] = p.binned;
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
  render: renderView("svg", ({ model, el }) => {
    const root = document.createElement("div");
    el.appendChild(root);
    let timer = null;

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const panels = panelsOf(data);
      const figure = { ...data, panels };
      const grid = data.grid;
      const colours = { write: data.legend.find((l) => l.label.startsWith("block writes")).colour,
        read: data.legend.find((l) => l.label.startsWith("block reads")).colour };

      const controls = document.createElement("div");
      controls.style.cssText = "font: 13px sans-serif; display: flex; gap: 12px; align-items: center; margin: 4px 12px;";
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

      const picture = pictureOf(model);
      picture.style.cursor = "pointer";
      const blockLabel = picture.querySelector("text.block");
      const status = statusLine();

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
        if (blockLabel) blockLabel.textContent = `block (${block.slice(0, data.rank).join(", ")}${data.rank === 1 ? "," : ""})`;
        outline(picture, figure, footprint(data, panels, block, colours));
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
      picture.addEventListener("mousemove", (ev) => {
        const found = cellAt(ev);
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
      picture.addEventListener("click", (ev) => {
        const found = cellAt(ev);
        if (!found) return;
        const p = panels[found[0]];
        model.set("selected", { array: p.name, index: elementOf(p, found[1]) });   // linked views outline it
        model.save_changes();
        const who = writersOf(p, found[1]);
        if (!who.length) return;
        const at = who.indexOf(linear(grid, model.get("block")));
        setBlock(blockOf(grid, who[(at + 1) % who.length]));
      });

      model.on("change:block", paint);
      paint();
      root.append(controls, picture, status);
      return () => model.off("change:block", paint);
    }

    return { draw, dispose: () => { if (timer) clearInterval(timer); } };
  }),
};
