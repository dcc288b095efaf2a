// Code view: tabs IR / CUDA / PTX / resources of one specialization, or a unified diff per tab.

import { hidePicture } from "./_picture.js";

export default {
  render({ model, el }) {
    hidePicture(el, model);
    let current = 0;
    const draw = () => {
      const d = model.get("data");
      el.replaceChildren();
      const head = document.createElement("div");
      head.style.cssText = "font:bold 13px sans-serif;margin-bottom:4px";
      head.textContent = d.title;
      el.appendChild(head);
      const bar = document.createElement("div");
      bar.style.cssText = "display:flex;gap:2px;border-bottom:1px solid #ccc";
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
        if (d.mode === "diff" && !tab.text) {
          pre.textContent = "(no change)";
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
      el.appendChild(pre);
      show(Math.min(current, d.tabs.length - 1));
    };
    draw();
    model.on("change:data", draw);
    return () => model.off("change:data", draw);
  },
};
