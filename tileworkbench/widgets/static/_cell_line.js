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
  let cell = null, notebookCell = null, editor = null, mark = null, frame = 0, retry = 0, tries = 0;
  const changes = new MutationObserver(schedule), resizes = new ResizeObserver(schedule);

  function schedule() {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; place(); });
  }

  /** Follow the edits, redraws and resizes of the editor of `next` (a .jp-CodeCell, or null: none),
   * and the notebook marking it edited since it ran. */
  function watch(next) {
    if (next === notebookCell && editorOf(next) === editor) return;
    changes.disconnect();
    resizes.disconnect();
    notebookCell = next;
    editor = editorOf(next);
    if (!editor) return;
    const content = editor.querySelector(".cm-content");
    changes.observe(notebookCell, { attributes: true, attributeFilter: ["class"] });
    changes.observe(content, { childList: true, subtree: true, characterData: true });
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
    watch(cell && el.isConnected ? el.closest(".jp-CodeCell") : null);
    // JupyterLab and Notebook 7 mark a cell edited since it ran with jp-mod-dirty
    const edited = notebookCell?.classList.contains("jp-mod-dirty");
    const line = editor && !edited ? lineElement(editor, cell.lines, cell.line) : null;
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

/** The code editor (.cm-editor) of a notebook cell (.jp-CodeCell, or null), or null. */
function editorOf(notebookCell) {
  return notebookCell?.querySelector(".jp-InputArea-editor .cm-editor") ?? null;
}

/** The rendered element of the editor's 1-based `line`, where the rendered lines read as the cell's
 * `lines` (line 1 being the %%tilekernel header); null otherwise. CodeMirror renders the lines near
 * the viewport (and the cursor's), leaving gaps for the others: the lines before the first gap
 * are numbered from the top, those after the last gap from the end, those between not at all. */
function lineElement(editor, lines, line) {
  const rendered = [...editor.querySelector(".cm-content").children];
  const isGap = (child) => !child.classList.contains("cm-line");
  const firstGap = rendered.findIndex(isGap);
  if (firstGap < 0) {   // every line: as many as the cell's
    const same = rendered.length >= lines.length && rendered.every((child, k) => reads(child, lines, k));
    return same ? rendered[line - 1] ?? null : null;
  }
  const top = rendered.slice(0, firstGap), tail = rendered.slice(rendered.findLastIndex(isGap) + 1);
  const end = lines.length + (tail.length && tail[tail.length - 1].textContent === "" ? 1 : 0);
  const first = end - tail.length;   // the index of the tail's first line
  if (!top.every((child, k) => reads(child, lines, k)) || !tail.every((child, j) => reads(child, lines, first + j))) {
    return null;
  }
  return top[line - 1] ?? (line - 1 >= first ? tail[line - 1 - first] : null) ?? null;
}

/** Whether `child`, the editor's line `k` (0-based), is the cell's: IPython gives the magic the
 * cell with one newline at its end, so where the editor's text ends in one it shows an empty line more. */
function reads(child, lines, k) {
  const text = child.textContent;
  if (k === 0) return text.startsWith(HEADER);
  return k < lines.length ? text === lines[k] : k === lines.length && text === "";
}

function highlight() {
  const mark = document.createElement("div");
  mark.className = "tileworkbench-cell-line";
  // under the text and the selection (CodeMirror draws its selection layer at z-index -1, JupyterLab at -2)
  mark.style.cssText = "position: absolute; left: 0; z-index: -3; pointer-events: none; " +
    "background: rgba(255, 235, 59, 0.45); box-shadow: inset 3px 0 #f9a825;";
  return mark;
}
