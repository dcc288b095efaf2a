// A displayed view is two outputs: its static picture (for saved notebooks, which have no kernel),
// then the live widget (see widgets/_base.py). Where the widget renders, it hides that picture.
// Inlined into every view (see widgets/_base.py `static`).
// @ts-check

/** Hide the picture output just before this view's output, if it is this view's (same key). */
export function hidePicture(el, model) {
  const key = model.get("_picture_key");
  const hide = () => {
    const output = el.closest(".jp-OutputArea-child");
    if (!output) return false;
    const before = output.previousElementSibling;
    if (key && before instanceof HTMLElement && before.innerHTML.includes(key)) before.style.display = "none";
    return true;
  };
  // the output area may attach the view's element to the page after render returns
  let tries = 0;
  const timer = setInterval(() => {
    if (hide() || ++tries > 50) clearInterval(timer);
  }, 100);
}
