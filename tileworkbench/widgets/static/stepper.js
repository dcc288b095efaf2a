// Block stepper: shows the picture that stepper.py drew for the current op of the current block,
// and drives the `step`, `block` and `selected` traits from buttons, a play timer, a block field,
// arrow keys, clicks on code lines and clicks on elements (Python then jumps to the block that
// wrote the element). The controls stay while the picture is redrawn for each step. The current
// op's line is also highlighted in the editor of the kernel's %%tilekernel cell (_cell_line.js).
// @ts-check

import { cellLineHighlighter } from "./_cell_line.js";
import { renderView, pictureOf, pointIn } from "./_picture.js";
import { cellAt, statusLine } from "./_cells.js";
import { typed } from "./_data.js";

function button(label, cls, title) {
  const b = document.createElement("button");
  b.textContent = label;
  b.className = cls;
  b.title = title;
  b.style.cssText = "font: 13px sans-serif; padding: 2px 8px; cursor: pointer;";
  return b;
}

export default {
  render: renderView("svg", ({ model, el }) => {
    const root = document.createElement("div");
    root.className = "tileworkbench-stepper";
    root.tabIndex = 0;   // arrow keys step once the view has the focus
    // and are not the notebook's shortcuts then (Notebook 7 binds the arrows; Lumino skips such subtrees)
    root.dataset.lmSuppressShortcuts = "true";
    el.appendChild(root);
    let timer = null;
    const cellLine = cellLineHighlighter(el);

    const controls = document.createElement("div");
    controls.style.cssText = "font: 13px sans-serif; display: flex; gap: 8px; align-items: center; margin: 4px 12px;";
    const first = button("\u00ab first", "step-first", "first op"), back = button("\u25c0 back", "step-back", "previous op (\u2190)");
    const next = button("next \u25b6", "step-next", "next op (\u2192)"), play = button("\u25b6 play", "step-play", "play");
    const slider = document.createElement("input");
    slider.type = "range";
    slider.min = "0";
    slider.className = "step-slider";
    const counter = document.createElement("span");
    counter.className = "step-counter";
    const blockField = document.createElement("input");
    blockField.className = "block-field";
    blockField.size = 10;
    blockField.title = "the block to step through (grid coordinates, comma separated; Enter)";
    const blockLabel = document.createElement("label");
    blockLabel.append("block ", blockField);
    controls.append(first, back, next, play, slider, counter, blockLabel);
    const holder = document.createElement("div");
    const status = statusLine();
    status.className = "step-status";
    root.append(controls, holder, status);

    const steps = () => model.get("data").steps;
    function setStep(step) {
      model.set("step", Math.max(0, Math.min(steps() - 1, step)));
      model.save_changes();
    }
    function stop() {
      if (timer) clearInterval(timer);
      timer = null;
      play.textContent = "\u25b6 play";
    }
    // stepping by hand stops playing
    first.addEventListener("click", () => { stop(); setStep(0); });
    back.addEventListener("click", () => { stop(); setStep(model.get("step") - 1); });
    next.addEventListener("click", () => { stop(); setStep(model.get("step") + 1); });
    slider.addEventListener("input", () => { stop(); setStep(Number(slider.value)); });
    play.addEventListener("click", () => {
      if (timer) return stop();
      if (model.get("step") + 1 >= steps()) setStep(0);   // at the end: play from the start
      play.textContent = "\u23f8 pause";
      timer = setInterval(() => {
        const step = model.get("step") + 1;
        setStep(step);
        if (step + 1 >= steps()) stop();
      }, model.get("interval_ms"));
    });
    function applyBlock() {
      const data = model.get("data");
      const coords = blockField.value.split(",").map((s) => Number(s.trim()));
      if (coords.length !== data.rank || coords.some((c, k) => !Number.isInteger(c) || c < 0 || c >= data.grid[k])) {
        status.textContent = `a block is ${data.rank} coordinate(s) within the grid (${data.grid.slice(0, data.rank)})`;
        return;
      }
      stop();
      model.set("block", [...coords, 0, 0, 0].slice(0, 3));
      model.save_changes();
    }
    blockField.addEventListener("change", applyBlock);
    blockField.addEventListener("keydown", (ev) => {
      ev.stopPropagation();   // typing here is not a notebook shortcut (Enter would enter a cell)
      if (ev.key === "Enter") applyBlock();
    });
    root.addEventListener("keydown", (ev) => {
      if (ev.target instanceof HTMLInputElement) return;
      if (ev.key === "ArrowRight") setStep(model.get("step") + 1);
      else if (ev.key === "ArrowLeft") setStep(model.get("step") - 1);
      else return;
      stop();
      ev.preventDefault();
    });

    function draw() {
      const data = model.get("data");
      if (!data) return;
      slider.max = String(data.steps - 1);
      slider.value = String(data.step);
      counter.textContent = `op ${data.step + 1} / ${data.steps}`;
      if (document.activeElement !== blockField) blockField.value = data.block.slice(0, data.rank).join(", ");
      const picture = pictureOf(model);
      const panels = data.panels.map((p) => ({ ...p, elements: typed(p.elements) }));
      picture.addEventListener("mousemove", (ev) => {
        const found = cellAt(ev);
        status.textContent = found ? panels[found[0]].hover[found[1]] : "";
      });
      picture.addEventListener("click", (ev) => {
        const found = cellAt(ev);
        if (found) {
          const p = panels[found[0]];
          const n = p.elements.length / p.hover.length;
          if (!p.array || n === 0) return;
          stop();
          model.set("selected", { array: p.array, index: Array.from(p.elements.subarray(found[1] * n, found[1] * n + n)) });
          model.save_changes();
          return;
        }
        // a click on a code line: the next op of that line (after the current one, cycling)
        const at = pointIn(picture, ev);
        const line = data.code.find((c) => at.y >= c.y && at.y < c.y + 16 && at.x < data.code_w);
        if (!line) return;
        const lines = typed(data.step_lines);
        for (let k = 1; k <= data.steps; k++) {
          const s = (data.step + k) % data.steps;
          if (lines[s] === line.line) return setStep(s);
        }
      });
      holder.replaceChildren(picture);
      cellLine.show(data.cell);
    }

    return {
      draw,
      dispose: () => {
        stop();
        cellLine.dispose();
      },
    };
  }),
};
