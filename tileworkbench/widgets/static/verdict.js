// Verdict: interpreter vs GPU for one launch: match per array, errors, and the first mismatches.

import { renderView } from "./_picture.js";

/** Coordinates as Python writes a tuple, as every view writes a block: (0,) and (2, 1). */
const tuple = (xs) => `(${xs.join(", ")}${xs.length === 1 ? "," : ""})`;

export default {
  render: renderView("data", ({ model, el }) => {
    const draw = () => {
      const d = model.get("data");
      el.replaceChildren();
      const head = document.createElement("div");
      head.style.cssText = `font:bold 13px sans-serif;color:${d.ok ? "#2ca02c" : d.compared ? "#d62728" : "#555"}`;
      head.textContent = `${d.kernel}: ` + (d.ok ? "GPU and interpreter agree" : d.message || "mismatch");
      el.appendChild(head);
      if (!d.compared) return;   // nothing was compared (no GPU): the headline says why
      const table = document.createElement("table");
      table.style.cssText = "font:12px monospace;border-collapse:collapse;margin-top:4px";
      const row = (cells, header) => {
        const tr = table.insertRow();
        for (const c of cells) {
          const td = document.createElement(header ? "th" : "td");
          td.textContent = c; td.style.padding = "1px 10px"; td.style.textAlign = "left"; tr.appendChild(td);
        }
      };
      row(["array", "match", "elements", "max abs error", "max rel error"], true);
      for (const a of d.arrays) {
        row([a.array, `${(a.match * 100).toFixed(2)}%`, a.elements, a.max_abs_error.toPrecision(3), a.max_rel_error.toPrecision(3)]);
      }
      el.appendChild(table);
      if (d.mismatches.length) {
        const list = document.createElement("table");
        list.style.cssText = "font:12px monospace;border-collapse:collapse;margin-top:6px;color:#b00";
        const tr0 = list.insertRow();
        for (const h of ["array", "element", "expected", "GPU", "block", "tile position", "line"]) {
          const th = document.createElement("th"); th.textContent = h; th.style.padding = "1px 10px"; tr0.appendChild(th);
        }
        for (const m of d.mismatches) {
          const tr = list.insertRow();
          for (const c of [m.array, `[${m.element}]`, m.expected, m.actual, m.block ? tuple(m.block) : "",
                           m.tile_position ? `(${m.tile_position})` : "", m.line ?? ""]) {
            const td = tr.insertCell(); td.textContent = c; td.style.padding = "1px 10px";
          }
        }
        el.appendChild(list);
      }
    };
    return draw;
  }),
};
