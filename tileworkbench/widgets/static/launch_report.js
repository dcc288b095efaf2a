// Launch report: the card (timing, throughput, occupancy, resources), a log-log roofline and
// occupancy what-if curves over block size, registers and shared memory.

import { hidePicture } from "./_picture.js";
const SVG = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmtBytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return i === 0 ? `${n.toFixed(0)} B` : `${n.toFixed(1)} ${units[i]}`;
}

function pct(x, digits) { return x === null || x === undefined ? "" : ` (${(x * 100).toFixed(digits)}% of peak)`; }

function card(d) {
  const o = d.occupancy, r = d.resources, w = d.work, t = d.timing, th = d.throughput;
  const rows = [["kernel", `${d.kernel}  grid (${d.grid.join(", ")})  ${d.threads} threads  ${d.arch}`]];
  if (t) {
    rows.push(["time", `${(t.median_ms * 1e3).toFixed(2)} us median  (p10 ${(t.p10_ms * 1e3).toFixed(2)}, ` +
                       `p90 ${(t.p90_ms * 1e3).toFixed(2)}; ${t.repetitions} runs${t.l2_flushed ? ", L2 flushed" : ""})`]);
    rows.push(["throughput", `${th.gbs.toFixed(1)} GB/s${pct(th.gbs_fraction, 0)}   ` +
                             `${th.tflops.toFixed(3)} TFLOP/s${pct(th.tflops_fraction, 1)}`]);
  } else {
    rows.push(["time", d.message]);
  }
  rows.push(["work", `${fmtBytes(w.bytes_read)} read  ${fmtBytes(w.bytes_written)} written  ${w.flops.toLocaleString()} flop`]);
  rows.push(["occupancy", `${o.blocks_per_sm} blocks, ${o.warps_per_sm}/${o.max_warps_per_sm} warps per SM ` +
                          `(${(o.occupancy * 100).toFixed(0)}%), limited by ${o.limiter}`]);
  rows.push(["limits", Object.entries(o.limits).map(([k, v]) => `${k} ${v}`).join(" · ") + " blocks"]);
  if (o.driver_blocks_per_sm !== null && o.driver_blocks_per_sm !== undefined) {
    rows.push(["driver", `${o.driver_blocks_per_sm} blocks per SM${o.agrees ? "" : " (differs from theory)"}`]);
  }
  rows.push(["resources", `${r.registers} registers/thread  ${fmtBytes(r.shared_bytes)} shared  ` +
                          `${fmtBytes(r.local_bytes)} local  ${r.spill_stores ?? "-"} spill stores` +
                          (r.spill_loads === null || r.spill_loads === undefined ? "" : `, ${r.spill_loads} spill loads`)]);
  const table = document.createElement("table");
  table.style.cssText = "font:12px sans-serif;border-collapse:collapse";
  for (const [label, value] of rows) {
    const tr = table.insertRow();
    const a = tr.insertCell(); a.textContent = label; a.style.cssText = "color:#666;padding:1px 10px 1px 0";
    const b = tr.insertCell(); b.textContent = value; b.style.padding = "1px 0";
    if (label === "time" && !d.timed) b.style.color = "#b45f06";
    if (label === "resources" && r.spill_stores) b.style.color = "#d62728";
  }
  return table;
}

// The plot's geometry and label positions come from Python (roofline_layout): labels never overlap.
function roofline(d) {
  const rl = d.roofline, lay = rl.layout;
  const x0 = 60, y0 = 10, pw = lay.width, ph = lay.height, W = x0 + pw + 20, H = y0 + ph + 50;
  const svg = svgEl("svg", { width: W, height: H, "font-family": "sans-serif", "font-size": 10 });
  svg.appendChild(svgEl("rect", { x: x0, y: y0, width: pw, height: ph, fill: "none", stroke: "#999" }));
  for (const t of lay.x_ticks) svg.appendChild(svgEl("text", { x: x0 + t.x, y: y0 + ph + 12, "text-anchor": "middle" }, t.text));
  for (const t of lay.y_ticks) svg.appendChild(svgEl("text", { x: x0 - 4, y: y0 + t.y + 3, "text-anchor": "end" }, t.text));
  svg.appendChild(svgEl("text", { x: x0 + pw / 2, y: H - 20, "text-anchor": "middle", "font-size": 11 }, rl.x_label));
  svg.appendChild(svgEl("text", { x: 12, y: y0 + ph / 2, transform: `rotate(-90 12 ${y0 + ph / 2})`, "text-anchor": "middle", "font-size": 11 }, rl.y_label));
  for (const line of lay.lines) {
    svg.appendChild(svgEl("polyline", { points: line.points.map(([a, b]) => `${x0 + a},${y0 + b}`).join(" "),
      fill: "none", stroke: line.colour, "stroke-width": 2 }));
  }
  const p = rl.point;
  if (lay.dot) {
    const dot = svgEl("circle", { cx: x0 + lay.dot.x, cy: y0 + lay.dot.y, r: 5, fill: "#d62728" });
    dot.appendChild(svgEl("title", {}, `${p.x.toPrecision(3)} flop/B, ${p.y.toPrecision(3)} TFLOP/s`));
    svg.appendChild(dot);
  } else {
    svg.appendChild(svgEl("line", { x1: x0 + lay.dashed_x, y1: y0, x2: x0 + lay.dashed_x, y2: y0 + ph, stroke: "#d62728",
      "stroke-dasharray": "4 3" }));
  }
  for (const t of lay.labels) {
    svg.appendChild(svgEl("text", { x: x0 + t.x, y: y0 + t.y, "text-anchor": t.anchor, fill: t.colour,
      stroke: "white", "stroke-width": 3, "paint-order": "stroke" }, t.text));  // readable over a line
  }
  return svg;
}

function curvePlot(curve, occupancy) {
  const W = 260, H = 164, x0 = 34, y0 = 16, pw = 210, ph = 100;
  const vmax = Math.max(...curve.values), vmin = Math.min(...curve.values);
  const px = (v) => x0 + (v - vmin) / Math.max(vmax - vmin, 1) * pw;
  const py = (o) => y0 + ph - o * ph;
  const svg = svgEl("svg", { width: W, height: H, "font-family": "sans-serif", "font-size": 10 });
  svg.appendChild(svgEl("text", { x: x0, y: 11, "font-size": 11 }, `occupancy vs ${curve.label}`));
  svg.appendChild(svgEl("rect", { x: x0, y: y0, width: pw, height: ph, fill: "none", stroke: "#999" }));
  for (const o of [0, 0.5, 1]) svg.appendChild(svgEl("text", { x: x0 - 7, y: py(o) + 3, "text-anchor": "end" }, `${o * 100}%`));
  svg.appendChild(svgEl("text", { x: x0, y: y0 + ph + 12 }, `${vmin}`));
  svg.appendChild(svgEl("text", { x: x0 + pw, y: y0 + ph + 12, "text-anchor": "end" }, `${vmax}`));
  const pts = curve.values.map((v, i) => `${px(v)},${py(curve.occupancy[i])}`).join(" ");
  svg.appendChild(svgEl("polyline", { points: pts, fill: "none", stroke: "#2ca02c", "stroke-width": 1.5 }));
  const hit = svgEl("rect", { x: x0, y: y0, width: pw, height: ph, fill: "transparent" });
  // the read-out goes under the axis, between its end values, never over the title
  const tip = svgEl("text", { x: x0 + pw / 2, y: y0 + ph + 26, "text-anchor": "middle", fill: "#555" }, "");
  hit.addEventListener("mousemove", (ev) => {
    const box = svg.getBoundingClientRect();
    const v = vmin + (ev.clientX - box.left - x0) / pw * (vmax - vmin);
    let best = 0;
    curve.values.forEach((x, i) => { if (Math.abs(x - v) < Math.abs(curve.values[best] - v)) best = i; });
    tip.textContent = `${curve.values[best]}: ${(curve.occupancy[best] * 100).toFixed(0)}%, ` +
                      `${curve.blocks_per_sm[best]} blocks, ${curve.limiter[best]}`;
  });
  hit.addEventListener("mouseleave", () => { tip.textContent = ""; });
  svg.appendChild(tip);
  svg.appendChild(svgEl("circle", { cx: px(Math.min(Math.max(curve.current, vmin), vmax)), cy: py(occupancy), r: 4, fill: "#d62728" }));
  svg.appendChild(hit);
  return svg;
}

export default {
  render({ model, el }) {
    hidePicture(el, model);
    const draw = () => {
      const d = model.get("data");
      el.replaceChildren();
      const head = document.createElement("div");
      head.style.cssText = "font:bold 13px sans-serif;margin-bottom:4px";
      head.textContent = `Launch report: ${d.kernel}` + (d.device ? ` on ${d.device}` : "");
      el.appendChild(head);
      el.appendChild(card(d));
      const row = document.createElement("div");
      row.style.cssText = "display:flex;flex-wrap:wrap;gap:8px;margin-top:6px;align-items:flex-start";
      if (d.roofline) {
        row.appendChild(roofline(d));
      } else {
        const note = document.createElement("div");
        note.style.cssText = "font:13px sans-serif;color:#555;width:420px";
        note.textContent = d.no_roofline;
        row.appendChild(note);
      }
      const curves = document.createElement("div");
      curves.style.cssText = "display:flex;flex-direction:column";
      for (const key of ["threads", "registers", "shared"]) {
        if (d.curves[key]) curves.appendChild(curvePlot(d.curves[key], d.occupancy.occupancy));
      }
      row.appendChild(curves);
      el.appendChild(row);
    };
    draw();
    model.on("change:data", draw);
    return () => model.off("change:data", draw);
  },
};
