// Sweep explorer: shows the heatmap that sweep.py drew over the two swept names chosen here, and a
// sortable table of every configuration.
import { renderView, pictureOf } from "./_picture.js";

function format(v, column, row) {
  if (v === null || v === undefined) return "";
  if (column === "occupancy") return row.occupancy_text;   // sweep.py's text: every view rounds alike
  if (typeof v === "number" && !Number.isInteger(v)) return v.toPrecision(3);
  return String(v);
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
    if (r.status !== "ok") tr.style.color = r.status === "pending" ? "#999" : "#b00";  // pending: still running
    data.columns.forEach((c) => { const td = tr.insertCell(); td.textContent = format(r[c], c, r); td.style.padding = "1px 8px"; });
  });
  return t;
}

export default {
  render: renderView("svg", ({ model, el }) => {
    const state = { sort: null, descending: false };
    const draw = () => {
      const data = model.get("data");
      el.replaceChildren();
      const controls = document.createElement("div");
      controls.style.cssText = "font:13px sans-serif;margin-bottom:4px";
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
      el.appendChild(pictureOf(model));
      el.appendChild(table(data, state, draw));
    };
    return draw;
  }),
};
