// Transform panels: shows the picture that transform.py drew; hovering a cell outlines every cell
// with the same source (where it came from, where it went).
// @ts-check

import { renderView, pictureOf } from "./_picture.js";
import { cellAt, outline, statusLine } from "./_cells.js";
import { typed } from "./_data.js";

function panelsOf(data) {
  return data.panels.map((p) => ({ cx: typed(p.cx), cy: typed(p.cy), ids: typed(p.ids) }));
}

export default {
  render: renderView("svg", ({ model, el }) => {
    const root = document.createElement("div");
    el.appendChild(root);
    const status = statusLine();

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const figure = { ...data, panels: panelsOf(data) };
      const offsets = typed(data.offsets);
      const picture = pictureOf(model);

      function show(source) {
        outline(picture, figure, source < 0 ? [] : figure.panels.map((p, k) =>
          [k, Array.from(p.ids.keys()).filter((i) => p.ids[i] === source), "black"]));
        let operand = 0;
        while (operand + 1 < offsets.length - 1 && offsets[operand + 1] <= source) operand++;
        status.textContent = source < 0 ? "hover a cell: its source and every copy are outlined" :
          `source: operand ${operand}, position ${source - offsets[operand]} (outlined everywhere it went)`;
      }

      picture.addEventListener("mousemove", (ev) => {
        const found = cellAt(ev);
        const source = found ? figure.panels[found[0]].ids[found[1]] : -1;
        if (source === model.get("hovered")) return;
        show(source);
        model.set("hovered", source);
        model.save_changes();
      });
      picture.addEventListener("mouseleave", () => {
        show(-1);
        model.set("hovered", -1);  // re-entering the same cell must draw it again
        model.save_changes();
      });
      show(model.get("hovered"));
      root.append(picture, status);
    }

    return draw;
  }),
};
