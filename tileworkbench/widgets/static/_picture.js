// A displayed view is two outputs: its static picture (for saved notebooks, which have no kernel),
// then the live widget (see widgets/_base.py). Where the widget renders, it hides that picture.
// Inlined into every view (see widgets/_base.py `static`).
// @ts-check

/** Hide the picture output just before this view's output, if it is this view's (same key). */
export function hidePicture(el, model) {
  const picture = `.tileworkbench-picture-${model.get("_picture_key")}`;
  const hide = () => {
    const output = el.closest(".jp-OutputArea-child");
    if (!output) return false;
    const before = output.previousElementSibling;
    if (before instanceof HTMLElement && before.querySelector(picture)) before.style.display = "none";
    return true;
  };
  // the output area may attach the view's element to the page after render returns
  let tries = 0;
  const timer = setInterval(() => {
    if (hide() || ++tries > 50) clearInterval(timer);
  }, 100);
}

/** The view's picture (the `svg` trait, drawn in Python) as an SVG element, scaled to fit its output. */
export function pictureOf(model) {
  const doc = new DOMParser().parseFromString(model.get("svg"), "image/svg+xml");
  const root = /** @type {SVGSVGElement} */ (document.importNode(doc.documentElement, true));
  root.style.maxWidth = "100%";
  root.style.height = "auto";
  return root;
}

/** A point of the page in the picture's own coordinates (it may be shown scaled). */
export function pointIn(root, ev) {
  const box = root.getBoundingClientRect(), view = root.viewBox.baseVal;
  return { x: (ev.clientX - box.left) * view.width / box.width, y: (ev.clientY - box.top) * view.height / box.height };
}

/**
 * A view's `render`: hides its picture, runs `setup({ model, el })` once, then draws now and again
 * whenever the model's `trait` changes. `setup` returns the draw function, or `{ draw, dispose }`
 * where `dispose` runs when the view goes; a draw may return a function that undoes it (listeners it
 * added), run before the next draw.
 */
export function renderView(trait, setup) {
  return ({ model, el }) => {
    hidePicture(el, model);
    const made = setup({ model, el });
    const { draw, dispose } = typeof made === "function" ? { draw: made, dispose: null } : made;
    let undo = draw();
    const redraw = () => {
      if (typeof undo === "function") undo();
      undo = draw();
    };
    model.on(`change:${trait}`, redraw);
    return () => {
      if (typeof undo === "function") undo();
      if (dispose) dispose();
      model.off(`change:${trait}`, redraw);
    };
  };
}
