// Block stepper: shows the picture that stepper.py drew for the current op of the current block,
// and drives the `step`, `block` and `selected` traits from buttons, a play timer, a block field,
// clicks on code lines and clicks on elements (Python jumps to the block that wrote the element).
// @ts-check

import { hidePicture, pictureOf, pointIn } from "./_picture.js";
import { cellAt, statusLine } from "./_cells.js";
import { typed } from "./_data.js";

function button(label, title) {
  const b = document.createElement("button");
  b.textContent = label;
  b.title = title;
  b.style.cssText = "font: 13px sans-serif; padding: 2px 8px; cursor: pointer;";
  return b;
}

export default {
  render({ model, el }) {
    hidePicture(el, model);
    const root = document.createElement("div");
    root.className = "tileworkbench-stepper";
    el.appendChild(root);
    let timer = null;

    function setStep(step) {
      const n = model.get("data").steps;
      model.set("step", Math.max(0, Math.min(n - 1, step)));
      model.save_changes();
    }
    function stop(play) {
      if (timer) clearInterval(timer);
      timer = null;
      if (play) play.textContent = "\u25b6 play";
    }

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const controls = document.createElement("div");
      controls.style.cssText = "font: 13px sans-serif; display: flex; gap: 8px; align-items: center; margin: 4px 12px;";
      const first = button("\u23ee", "first op"), back = button("\u25c0 back", "previous op (\u2190)");
      const next = button("next \u25b6", "next op (\u2192)"), play = button(timer ? "\u23f8 pause" : "\u25b6 play", "play");
      const slider = document.createElement("input");
      slider.type = "range";
      slider.min = "0";
      slider.max = String(data.steps - 1);
      slider.value = String(data.step);
      slider.className = "step-slider";
      const counter = document.createElement("span");
      counter.className = "step-counter";
      counter.textContent = `op ${data.step + 1} / ${data.steps}`;
      const blockField = document.createElement("input");
      blockField.className = "block-field";
      blockField.size = 10;
      blockField.value = data.block.slice(0, data.rank).join(", ");
      blockField.title = "the block to step through (grid coordinates, comma separated)";
      const blockLabel = document.createElement("label");
      blockLabel.append("block ", blockField);
      controls.append(first, back, next, play, slider, counter, blockLabel);
      first.className = "step-first";
      back.className = "step-back";
      next.className = "step-next";
      play.className = "step-play";

      first.addEventListener("click", () => setStep(0));
      back.addEventListener("click", () => setStep(model.get("step") - 1));
      next.addEventListener("click", () => setStep(model.get("step") + 1));
      slider.addEventListener("input", () => setStep(Number(slider.value)));
      play.addEventListener("click", () => {
        if (timer) return stop(play);
        play.textContent = "\u23f8 pause";
        timer = setInterval(() => {
          const step = model.get("step");
          if (step + 1 >= model.get("data").steps) return stop(play);
          setStep(step + 1);
        }, model.get("interval_ms"));
      });
      blockField.addEventListener("change", () => {
        const coords = blockField.value.split(",").map((s) => Number(s.trim()));
        if (coords.length !== data.rank || coords.some((c, k) => !Number.isInteger(c) || c < 0 || c >= data.grid[k])) {
          status.textContent = `a block is ${data.rank} coordinate(s) within the grid (${data.grid.slice(0, data.rank)})`;
          return;
        }
        model.set("block", [...coords, 0, 0, 0].slice(0, 3));
        model.save_changes();
      });

      const picture = pictureOf(model);
      const status = statusLine();
      status.className = "step-status";
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
          const index = Array.from(p.elements.subarray(found[1] * n, found[1] * n + n));
          model.set("selected", { array: p.array, index });
          model.save_changes();
          return;
        }
        // a click on a code line: the next op of that line (after the current one, cycling)
        const y = pointIn(picture, ev).y;
        const line = data.code.find((c) => y >= c.y && y < c.y + 16 && pointIn(picture, ev).x < data.code_w);
        if (!line) return;
        const lines = typed(data.step_lines);
        for (let k = 1; k <= data.steps; k++) {
          const s = (data.step + k) % data.steps;
          if (lines[s] === line.line) return setStep(s);
        }
      });
      root.append(controls, picture, status);
    }

    root.tabIndex = 0;   // arrow keys step once the view has the focus
    root.addEventListener("keydown", (ev) => {
      if (ev.target instanceof HTMLInputElement) return;
      if (ev.key === "ArrowRight") setStep(model.get("step") + 1);
      else if (ev.key === "ArrowLeft") setStep(model.get("step") - 1);
      else return;
      ev.preventDefault();
    });
    draw();
    model.on("change:svg", draw);
    return () => {
      stop(null);
      model.off("change:svg", draw);
    };
  },
};
