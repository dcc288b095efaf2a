// Transform panels: draws the figure that transform.py computed (cells, fills, labels, texts);
// hovering a cell outlines every cell with the same source (where it came from, where it went).
// @ts-check

import { hidePicture } from "./_picture.js";
import { canvasOf, drawCells, drawTexts, hit, legendOf } from "./_cells.js";
import { typed } from "./_data.js";

function panelsOf(data) {
  return data.panels.map((p) => ({ cx: typed(p.cx), cy: typed(p.cy), ids: typed(p.ids),
    text: typed(p.text), fill: typed(p.fill), ink: typed(p.ink) }));
}

export default {
  render({ model, el }) {
    hidePicture(el, model);
    const root = document.createElement("div");
    el.appendChild(root);
    const status = document.createElement("div");
    status.style.cssText = "font: 12px monospace; margin: 2px 12px; min-height: 16px; color: #333;";

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const panels = panelsOf(data);
      const { canvas, ctx } = canvasOf(data.width, data.height);

      function paint(source) {
        ctx.fillStyle = "white";
        ctx.fillRect(0, 0, data.width, data.height);
        drawTexts(ctx, data.texts);
        for (const p of panels) drawCells(ctx, p, data.cell);
        if (source < 0) return;
        ctx.strokeStyle = "black";
        ctx.lineWidth = 2.5;
        for (const p of panels) {
          for (let i = 0; i < p.ids.length; i++) {
            if (p.ids[i] === source) ctx.strokeRect(p.cx[i] + 1, p.cy[i] + 1, data.cell - 3, data.cell - 3);
          }
        }
      }

      canvas.addEventListener("mousemove", (ev) => {
        const r = canvas.getBoundingClientRect();
        const found = hit(panels, data.cell, ev.clientX - r.left, ev.clientY - r.top);
        const source = found ? panels[found[0]].ids[found[1]] : -1;
        if (source === model.get("hovered")) return;
        paint(source);
        const offsets = typed(data.offsets);
        let operand = 0;
        while (operand + 1 < offsets.length - 1 && offsets[operand + 1] <= source) operand++;
        status.textContent = source < 0 ? "" :
          `source: operand ${operand}, position ${source - offsets[operand]} (outlined everywhere it went)`;
        model.set("hovered", source);
        model.save_changes();
      });
      canvas.addEventListener("mouseleave", () => {
        paint(-1);
        status.textContent = "";
        model.set("hovered", -1);  // re-entering the same cell must draw it again
        model.save_changes();
      });
      paint(model.get("hovered"));
      root.append(canvas, legendOf(data.legend, "hover a cell: its source and every copy are outlined"), status);
    }

    model.on("change:data", draw);
    draw();
    return () => model.off("change:data", draw);
  },
};
