// Sweep explorer: a heatmap over two swept names and a sortable table of every configuration.
import { hidePicture } from "./_picture.js";
import { SVG, inkOf } from "./_svg.js";

function colour(t) {  // light yellow (0) to dark blue (1)
  const stops = [[255, 255, 204], [161, 218, 180], [65, 182, 196], [44, 127, 184], [37, 52, 148]];
  t = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const k = Math.min(Math.floor(t), stops.length - 2), f = t - k;
  const c = stops[k].map((a, i) => Math.round(a + (stops[k + 1][i] - a) * f));
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

function format(v, column) {
  if (v === null || v === undefined) return "";
  if (column === "occupancy") return `${Math.round(v * 100)}%`;
  if (typeof v === "number" && !Number.isInteger(v)) return v.toPrecision(3);
  return String(v);
}

function heatmap(data, x, y) {
  const rows = data.rows, metric = data.metric, best = rows[data.best];
  const xs = [...new Set(rows.map((r) => r[x]))], ys = y ? [...new Set(rows.map((r) => r[y]))] : [null];
  const fixed = data.names.filter((n) => n !== x && n !== y);
  const pick = (xv, yv) => rows.find((r) => r[x] === xv && (y ? r[y] === yv : true) &&
    fixed.every((n) => !best || r[n] === best[n]));
  const values = rows.filter((r) => r.status === "ok" && r[metric] !== null).map((r) => r[metric]);
  const lo = Math.min(...values), hi = Math.max(...values);
  const cell = 56, left = 80, top = 10;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("font-family", "sans-serif");
  svg.setAttribute("width", left + cell * xs.length + 10);
  svg.setAttribute("height", top + cell * ys.length + 30);
  const text = (tx, ty, s, anchor = "middle") => {
    const t = document.createElementNS(SVG, "text");
    t.setAttribute("x", tx); t.setAttribute("y", ty); t.setAttribute("text-anchor", anchor);
    t.setAttribute("font-size", "12"); t.setAttribute("pointer-events", "none");  // hovers reach the cells
    t.textContent = s; svg.appendChild(t); return t;
  };
  ys.forEach((yv, j) => {
    if (y) text(8, top + j * cell + cell / 2 + 4, `${y}=${yv}`, "start");
    xs.forEach((xv, i) => {
      const r = pick(xv, yv), rect = document.createElementNS(SVG, "rect");
      const ok = r && r.status === "ok" && r[metric] !== null;
      let t = hi === lo ? 0.5 : ok ? (r[metric] - lo) / (hi - lo) : 0;
      if (data.lower_is_better) t = 1 - t;
      rect.setAttribute("x", left + i * cell); rect.setAttribute("y", top + j * cell);
      rect.setAttribute("width", cell); rect.setAttribute("height", cell);
      const fill = ok ? colour(t) : "#eeeeee";
      rect.setAttribute("fill", fill);
      rect.setAttribute("stroke", r === best ? "#d62728" : "#fff");
      rect.setAttribute("stroke-width", r === best ? 3 : 1);
      rect.setAttribute("class", "sweep-cell");
      const title = document.createElementNS(SVG, "title");
      title.textContent = r ? `${JSON.stringify(Object.fromEntries(data.names.map((n) => [n, r[n]])))}: ` +
        (ok ? format(r[metric], metric) : `${r.status} ${r.reason}`) : "not run";
      rect.appendChild(title); svg.appendChild(rect);
      text(left + i * cell + cell / 2, top + j * cell + cell / 2 + 4, ok ? format(r[metric], metric) : "✕")
        .setAttribute("fill", inkOf(fill));
    });
  });
  xs.forEach((xv, i) => text(left + i * cell + cell / 2, top + ys.length * cell + 18, `${x}=${xv}`));
  return svg;
}

function table(data, state, redraw) {
  const t = document.createElement("table");
  t.className = "twb-sweep-table";
  t.style.cssText = "border-collapse:collapse;font:12px monospace;margin-top:8px";
  const head = t.insertRow();
  data.columns.forEach((c) => {
    const th = document.createElement("th");
    th.textContent = c + (state.sort === c ? (state.descending ? " ▼" : " ▲") : "");
    th.style.cssText = "cursor:pointer;padding:2px 8px;border-bottom:1px solid #999;text-align:left";
    th.onclick = () => { state.descending = state.sort === c ? !state.descending : false; state.sort = c; redraw(); };
    head.appendChild(th);
  });
  const rows = data.rows.map((r, i) => [r, i]);
  if (state.sort) {
    const key = (r) => (r[state.sort] === null ? Infinity : r[state.sort]);
    rows.sort(([a], [b]) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0) * (state.descending ? -1 : 1));
  }
  rows.forEach(([r, i]) => {
    const tr = t.insertRow();
    if (i === data.best) tr.style.background = "#fde2e2";
    if (r.status !== "ok") tr.style.color = "#b00";
    data.columns.forEach((c) => { const td = tr.insertCell(); td.textContent = format(r[c], c); td.style.padding = "1px 8px"; });
  });
  return t;
}

export default {
  render({ model, el }) {
    hidePicture(el, model);
    const state = { sort: null, descending: false };
    const draw = () => {
      const data = model.get("data");
      el.replaceChildren();
      const title = document.createElement("div");
      title.style.cssText = "font:bold 13px sans-serif;margin-bottom:4px";
      title.textContent = `${data.kernel} on ${data.arch}: ${data.metric === "time_ms" ? "time (ms)" : "theoretical occupancy"}`;
      el.appendChild(title);
      const controls = document.createElement("div");
      for (const axis of ["x", "y"]) {
        const select = document.createElement("select");
        for (const n of (axis === "y" ? [""] : []).concat(data.names)) {
          const o = document.createElement("option"); o.value = n; o.textContent = n || "(none)"; select.appendChild(o);
        }
        select.value = model.get(axis);
        select.onchange = () => { model.set(axis, select.value); model.save_changes(); };
        controls.append(` ${axis}: `, select);
      }
      el.appendChild(controls);
      el.appendChild(heatmap(data, model.get("x"), model.get("y")));
      if (data.note) { const n = document.createElement("div"); n.style.color = "#666"; n.textContent = data.note; el.appendChild(n); }
      el.appendChild(table(data, state, draw));
    };
    draw();
    model.on("change:data", draw);
    model.on("change:x", draw);
    model.on("change:y", draw);
    return () => ["data", "x", "y"].forEach((name) => model.off(`change:${name}`, draw));
  },
};
