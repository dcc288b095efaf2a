// A line highlighted in the code editor of the %%tilekernel cell whose output holds the view
// (JupyterLab 4 and Notebook 7 edit cells with CodeMirror 6). CodeMirror owns its content DOM and
// redraws it at will (edits, scrolling: it renders only the lines near the viewport), so the
// highlight is an element of its own in the editor's scroller, under the text, placed from the
// line element's box, and placed again whenever CodeMirror redraws or resizes. It shows only while
// the cell reads as the code the kernel was defined from (stepper.py `_cell`): not in another
// cell, and not once the cell is edited. Inlined into stepper.js (see widgets/_base.py `static`).
// @ts-check

const HEADER = "%%tilekernel";
const ATTACH_TRIES = 50, ATTACH_WAIT_MS = 100;   // the output area may attach the view after render

/** The highlighter of the view drawn in `el`: `show(cell)` with the data's `cell` ({lines, line},
 * or null for none), `dispose()` when the view goes. */
export function cellLineHighlighter(el) {
  let cell = null, editor = null, mark = null, frame = 0, retry = 0, tries = 0;
  const redraws = new MutationObserver(schedule), resizes = new ResizeObserver(schedule);

  function schedule() {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; place(); });
  }

  /** Follow CodeMirror's redraws and resizes of `next` (a .cm-editor, or null: none). */
  function watch(next) {
    if (next === editor) return;
    redraws.disconnect();
    resizes.disconnect();
    editor = next;
    if (!editor) return;
    const content = editor.querySelector(".cm-content");
    redraws.observe(content, { childList: true, subtree: true, characterData: true });
    resizes.observe(content);
    resizes.observe(editor.querySelector(".cm-scroller"));
  }

  function remove() {
    mark?.remove();
    mark = null;
  }

  function place() {
    clearTimeout(retry);
    if (cell && !el.isConnected && tries++ < ATTACH_TRIES) {
      retry = setTimeout(place, ATTACH_WAIT_MS);
      return;
    }
    watch(cell && el.isConnected ? editorOf(el) : null);
    const line = editor && cell.line ? lineElement(editor, cell.lines, cell.line) : null;
    const scroller = editor?.querySelector(".cm-scroller");
    const box = line?.getBoundingClientRect();
    if (!line || !scroller || !box?.height) return remove();   // not rendered, or the input is hidden
    if (mark?.parentNode !== scroller) {
      remove();
      mark = highlight();
      scroller.appendChild(mark);
    }
    const origin = scroller.getBoundingClientRect();
    mark.style.top = `${box.top - origin.top - scroller.clientTop + scroller.scrollTop}px`;
    mark.style.height = `${box.height}px`;
    mark.style.width = `${scroller.scrollWidth}px`;
    mark.dataset.line = String(cell.line);
  }

  return {
    show(next) {
      cell = next && next.line ? next : null;
      tries = 0;
      place();
    },
    dispose() {
      cell = null;
      clearTimeout(retry);
      cancelAnimationFrame(frame);
      watch(null);
      remove();
    },
  };
}

/** The code editor (.cm-editor) of the notebook cell whose output holds `el`, or null. */
function editorOf(el) {
  return el.closest(".jp-CodeCell")?.querySelector(".jp-InputArea-editor .cm-editor") ?? null;
}

/** The rendered element of 1-based `line` of the editor, where the editor reads as `lines` (line 1
 * being the %%tilekernel header) up to there, and to its end where every line is rendered; null
 * otherwise. Past a gap (lines CodeMirror did not render) the lines are not known: null there. */
function lineElement(editor, lines, line) {
  const rendered = editor.querySelector(".cm-content").children;
  let found = null, k = 0;
  for (; k < rendered.length; k++) {
    const child = rendered[k];
    if (!child.classList.contains("cm-line")) return found;
    if (!reads(child.textContent, lines, k)) return null;
    if (k + 1 === line) found = child;
  }
  return k >= lines.length ? found : null;
}

/** Whether the editor's line `k` (0-based) is the cell's: IPython gives the magic the cell with one
 * newline at its end, so the editor may show one empty line more. */
function reads(text, lines, k) {
  if (k === 0) return text.startsWith(HEADER);
  return k < lines.length ? text === lines[k] : k === lines.length && text === "";
}

function highlight() {
  const mark = document.createElement("div");
  mark.className = "tileworkbench-cell-line";
  // under the text and the selection (CodeMirror's selection layer is at z-index -1)
  mark.style.cssText = "position: absolute; left: 0; z-index: -2; pointer-events: none; " +
    "background: rgba(255, 235, 59, 0.45); box-shadow: inset 3px 0 #f9a825;";
  return mark;
}
