// SVG elements made by the views' scripts: only what they draw on top of the picture that Python
// drew (widgets/svg.py: texts, legend, colours and contrast live there). Inlined into the views that
// import it (see widgets/_base.py `static`).
// @ts-check

export const SVG = "http://www.w3.org/2000/svg";

/** An SVG element with attributes, appended to `parent` when given. */
export function svg(tag, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}
