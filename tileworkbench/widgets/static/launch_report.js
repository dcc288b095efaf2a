// Launch report: shows the picture that launch_report.py drew (the card, the roofline and the
// occupancy what-if curves) and reads a curve out under the mouse.
// @ts-check

import { renderView, pictureOf, pointIn } from "./_picture.js";

/** The read-out of a curve at x (in picture coordinates) over its plot area. */
function readOut(curve, area, x) {
  const x0 = Number(area.getAttribute("x")), pw = Number(area.getAttribute("width"));
  const vmin = Math.min(...curve.values), vmax = Math.max(...curve.values);
  const v = vmin + (x - x0) / pw * (vmax - vmin);
  let best = 0;
  curve.values.forEach((value, i) => { if (Math.abs(value - v) < Math.abs(curve.values[best] - v)) best = i; });
  return `${curve.values[best]}: ${curve.occupancy_text[best]}, ` +
    `${curve.blocks_per_sm[best]} blocks, ${curve.limiter[best]}`;
}

export default {
  render: renderView("svg", ({ model, el }) => {
    const draw = () => {
      const d = model.get("data");
      el.replaceChildren();
      if (!d) return;
      const picture = pictureOf(model);
      for (const area of picture.querySelectorAll("rect.curve-area")) {
        if (!(area instanceof SVGElement)) continue;
        const key = area.dataset.curve ?? "", curve = d.curves[key];
        const tip = picture.querySelector(`text.curve-tip[data-curve="${key}"]`);
        if (!curve || !tip) continue;
        area.addEventListener("mousemove", (ev) => { tip.textContent = readOut(curve, area, pointIn(picture, ev).x); });
        area.addEventListener("mouseleave", () => { tip.textContent = ""; });
      }
      el.appendChild(picture);
    };
    return draw;
  }),
};
