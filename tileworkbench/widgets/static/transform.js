// Transform panels: draws the figure that transform.py computed (cells, fills, labels, texts);
// hovering a cell outlines every cell with the same source (where it came from, where it went).
// @ts-check

const TYPES = { int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array,
  int32: Int32Array, uint32: Uint32Array, float32: Float32Array, float64: Float64Array };

/** A {dtype, shape, buffer: DataView} from Python as a typed array. */
function typed(a) {
  const T = TYPES[a.dtype];
  return new T(a.buffer.buffer, a.buffer.byteOffset, a.buffer.byteLength / T.BYTES_PER_ELEMENT);
}

function panelsOf(data) {
  return data.panels.map((p) => ({ cx: typed(p.cx), cy: typed(p.cy), ids: typed(p.ids),
    text: typed(p.text), fill: typed(p.fill), ink: typed(p.ink) }));
}

function drawTexts(ctx, texts) {
  for (const t of texts) {
    ctx.font = `${t.weight} ${t.size}px sans-serif`;
    ctx.textAlign = t.anchor === "middle" ? "center" : t.anchor === "end" ? "right" : "left";
    ctx.textBaseline = "alphabetic";
    ctx.fillStyle = "black";
    ctx.fillText(t.text, t.x, t.y);
  }
}

function drawCells(ctx, p, cell) {
  const font = Math.max(7, Math.floor(cell * 0.42));
  for (let i = 0; i < p.cx.length; i++) {
    ctx.fillStyle = `rgb(${p.fill[3 * i]},${p.fill[3 * i + 1]},${p.fill[3 * i + 2]})`;
    ctx.fillRect(p.cx[i], p.cy[i], cell - 1, cell - 1);
    const label = String(p.text[i]);
    if (cell >= 14 && p.text[i] >= 0 && label.length * font * 0.6 <= cell) {
      ctx.font = `${font}px sans-serif`;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillStyle = p.ink[i] ? "white" : "black";
      ctx.fillText(label, p.cx[i] + cell / 2, p.cy[i] + cell / 2);
    }
  }
}

function legendOf(items, note) {
  const div = document.createElement("div");
  div.style.cssText = "font: 12px sans-serif; display: flex; gap: 14px; flex-wrap: wrap; margin: 4px 12px;";
  for (const item of items) {
    const span = document.createElement("span");
    span.innerHTML = `<span style="display:inline-block;width:12px;height:12px;border:1px solid #444;` +
      `vertical-align:middle;background:${item.colour}"></span> ${item.label}`;
    div.appendChild(span);
  }
  const hint = document.createElement("span");
  hint.style.color = "#555";
  hint.textContent = note;
  div.appendChild(hint);
  return div;
}

/** The cell under (x, y): [panel, cell] or null. */
function hit(panels, cell, x, y) {
  for (let k = 0; k < panels.length; k++) {
    const p = panels[k];
    for (let i = 0; i < p.cx.length; i++) {
      if (x >= p.cx[i] && x < p.cx[i] + cell && y >= p.cy[i] && y < p.cy[i] + cell) return [k, i];
    }
  }
  return null;
}

export default {
  render({ model, el }) {
    const root = document.createElement("div");
    el.appendChild(root);
    const status = document.createElement("div");
    status.style.cssText = "font: 12px monospace; margin: 2px 12px; min-height: 16px; color: #333;";

    function draw() {
      const data = model.get("data");
      root.replaceChildren();
      if (!data) return;
      const panels = panelsOf(data);
      const canvas = document.createElement("canvas");
      const dpr = window.devicePixelRatio || 1;
      canvas.width = data.width * dpr;
      canvas.height = data.height * dpr;
      canvas.style.width = `${data.width}px`;
      canvas.style.height = `${data.height}px`;
      const ctx = canvas.getContext("2d");
      ctx.scale(dpr, dpr);

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
      });
      paint(model.get("hovered"));
      root.append(canvas, legendOf(data.legend, "hover a cell: its source and every copy are outlined"), status);
    }

    model.on("change:data", draw);
    draw();
    return () => model.off("change:data", draw);
  },
};
