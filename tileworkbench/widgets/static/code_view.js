// Code view: tabs IR / CUDA / PTX / SASS / resources of one specialization, or a unified diff per tab.
// The SASS tab switches between program order and by-line grouping, and shades measured hot spots.

import { renderView } from "./_picture.js";

const ORDER_NAMES = { program: "program order", line: "by kernel line" };
const SASS_STYLES = { line: "color:#1f4e9c;font-weight:bold", label: "color:#8a3ab9;font-weight:bold",
                      instruction: "color:#222" };
const LOOP_STYLE = "color:#b35900;font-weight:bold";   // a jump back to a loop head

function sassRows(pre, rows) {
  for (const row of rows) {
    const span = document.createElement("span");
    span.textContent = row.text + "\n";
    span.style.cssText = row.loop ? LOOP_STYLE : SASS_STYLES[row.kind] || "";
    if (row.heat) span.style.background = `rgba(214,39,40,${(0.45 * row.heat).toFixed(3)})`;
    if (row.stalls) span.title = Object.entries(row.stalls).map(([r, n]) => `${r}: ${n}`).join("\n");
    pre.appendChild(span);
  }
}

export default {
  render: renderView("data", ({ model, el }) => {
    let current = 0;
    let order = null;
    const draw = () => {
      const d = model.get("data");
      el.replaceChildren();
      const head = document.createElement("div");
      head.style.cssText = "font:bold 13px sans-serif;margin-bottom:4px";
      head.textContent = d.title;
      el.appendChild(head);
      const bar = document.createElement("div");
      bar.style.cssText = "display:flex;gap:2px;border-bottom:1px solid #ccc";
      const orders = document.createElement("div");
      orders.style.cssText = "font:12px sans-serif;margin:4px 0;display:none;gap:6px;align-items:center";
      const pre = document.createElement("pre");
      pre.style.cssText = "font:12px/1.35 monospace;margin:0;padding:6px;max-height:480px;overflow:auto;" +
                          "background:#fafafa;border:1px solid #ddd;border-top:none;white-space:pre";
      const show = (i) => {
        current = i;
        const tab = d.tabs[i];
        [...bar.children].forEach((b, j) => {
          b.style.background = j === i ? "#fff" : "#eee";
          b.style.fontWeight = j === i ? "bold" : "normal";
        });
        pre.replaceChildren();
        orders.replaceChildren();
        orders.style.display = "none";
        if (d.mode === "diff" && !tab.text) {
          pre.textContent = "(no change)";
          return;
        }
        const listing = tab.listing;
        if (d.mode !== "diff" && listing && Object.keys(listing.orders).length) {
          order = order || listing.order;
          orders.style.display = "flex";
          orders.append("SASS:");
          for (const name of Object.keys(listing.orders)) {
            const b = document.createElement("button");
            b.textContent = ORDER_NAMES[name] || name;
            b.style.cssText = "font:12px sans-serif;padding:1px 8px;cursor:pointer;border:1px solid #bbb;" +
                              (name === order ? "background:#fff;font-weight:bold" : "background:#eee");
            b.addEventListener("click", () => { order = name; show(i); });
            orders.appendChild(b);
          }
          if (listing.measured) orders.append("shaded: measured stall samples (hover an instruction for reasons)");
          sassRows(pre, listing.orders[order]);
          return;
        }
        if (d.mode !== "diff") {
          pre.textContent = tab.text;
          return;
        }
        for (const line of tab.text.split("\n")) {
          const span = document.createElement("span");
          span.textContent = line + "\n";
          if (line.startsWith("+++") || line.startsWith("---")) span.style.color = "#555";
          else if (line.startsWith("+")) span.style.cssText = "color:#1a7f1a;background:#e6ffec";
          else if (line.startsWith("-")) span.style.cssText = "color:#b00;background:#ffebe9";
          else if (line.startsWith("@@")) span.style.color = "#1f77b4";
          pre.appendChild(span);
        }
      };
      d.tabs.forEach((tab, i) => {
        const b = document.createElement("button");
        let label = tab.name;
        if (d.mode === "diff") label += tab.text ? ` (+${tab.added} −${tab.removed})` : " (same)";
        else label += ` (${tab.lines})`;
        b.textContent = label;
        b.style.cssText = "font:12px sans-serif;border:1px solid #ccc;border-bottom:none;padding:3px 10px;cursor:pointer";
        b.addEventListener("click", () => show(i));
        bar.appendChild(b);
      });
      el.appendChild(bar);
      el.appendChild(orders);
      el.appendChild(pre);
      show(Math.min(current, d.tabs.length - 1));
    };
    return draw;
  }),
};
