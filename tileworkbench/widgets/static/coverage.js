// Block scrubber and coverage: draws the figure that coverage.py computed, outlines the current
// block's footprint, and drives the `block` trait from sliders, a play timer and clicks.
// @ts-check

const TYPES = { int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array,
  int32: Int32Array, uint32: Uint32Array, float32: Float32Array, float64: Float64Array };
const WRITE = 2;

/** A {dtype, shape, buffer: DataView} from Python as a typed array. */
function typed(a) {
  const T = TYPES[a.dtype];
  return new T(a.buffer.buffer, a.buffer.byteOffset, a.buffer.byteLength / T.BYTES_PER_ELEMENT);
}

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
  for (const t of data.texts) {
    ctx.font = `${t.weight} ${t.size}px sans-serif`;
    ctx.textAlign = t.anchor === "middle" ? "center" : t.anchor === "end" ? "right" : "left";
    ctx.textBaseline = "alphabetic";
    ctx.fillStyle = "black";
    ctx.fillText(t.text, t.x, t.y);
  }
  const font = Math.max(7, Math.floor(cell * 0.42));
  const b = linear(data.grid, block);
  for (const p of panels) {
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
    ctx.lineWidth = 2;
    for (let j = p.fpStart[b]; j < p.fpStart[b + 1]; j++) {
      const i = p.fpCells[j];
      ctx.strokeStyle = p.fpKind[j] & WRITE ? legendColours.write : legendColours.read;
      ctx.strokeRect(p.cx[i] + 1, p.cy[i] + 1, cell - 3, cell - 3);
    }
  }
}

function legendOf(items) {
  const div = document.createElement("div");
  div.style.cssText = "font: 12px sans-serif; display: flex; gap: 14px; flex-wrap: wrap; margin: 4px 12px;";
  for (const item of items) {
    const span = document.createElement("span");
    span.innerHTML = `<span style="display:inline-block;width:12px;height:12px;border:1px solid #444;` +
      `vertical-align:middle;background:${item.colour}"></span> ${item.label}`;
    div.appendChild(span);
  }
  return div;
}

/** [panel, cell] under (x, y), or null. */
function hit(panels, cell, x, y) {
  for (let k = 0; k < panels.length; k++) {
    const p = panels[k];
    for (let i = 0; i < p.cx.length; i++) {
      if (x >= p.cx[i] && x < p.cx[i] + cell && y >= p.cy[i] && y < p.cy[i] + cell) return [k, i];
    }
  }
  return null;
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

      const canvas = document.createElement("canvas");
      const dpr = window.devicePixelRatio || 1;
      canvas.width = data.width * dpr;
      canvas.height = data.height * dpr;
      canvas.style.width = `${data.width}px`;
      canvas.style.height = `${data.height}px`;
      canvas.style.cursor = "pointer";
      const ctx = canvas.getContext("2d");
      ctx.scale(dpr, dpr);
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
