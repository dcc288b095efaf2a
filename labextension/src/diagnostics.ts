/*
 * Inline compile diagnostics: the %%tilekernel magic displays a bundle of type DIAGNOSTICS_MIME
 * (see tileworkbench/magic/diagnostics.py), e.g.
 *   {"kernel": "add", "diagnostics": [{"line": 4, "col": 26, "endLine": 4, "endCol": 30, "message": "..."}]}
 * with cell lines 1-based (the header is line 1) and columns 1-based, endCol exclusive.
 * Each cell editor holds them in a StateField of decorations: the line is marked and the
 * range underlined, the message shown as a title tooltip.
 */
import { StateEffect, StateField, Text } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView } from '@codemirror/view';
import { IOutputAreaModel } from '@jupyterlab/outputarea';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

export const DIAGNOSTICS_MIME = 'application/vnd.tileworkbench.diagnostics+json';

export interface IDiagnostic {
  line: number;
  col: number;
  endLine: number;
  endCol: number;
  message: string;
  severity?: string;
  kind?: string;
}

/** Every diagnostic found in a cell's outputs; none once the outputs no longer hold the bundle. */
export function readDiagnostics(outputs: IOutputAreaModel): IDiagnostic[] {
  const found: IDiagnostic[] = [];
  for (let i = 0; i < outputs.length; i++) {
    const bundle = outputs.get(i).data[DIAGNOSTICS_MIME] as
      | { diagnostics?: IDiagnostic[] }
      | undefined;
    found.push(...(bundle?.diagnostics ?? []));
  }
  return found;
}

const setDiagnostics = StateEffect.define<IDiagnostic[]>();

/** A document offset for a 1-based line and column, clamped to the document. */
function offset(doc: Text, line: number, col: number): number {
  const l = doc.line(Math.min(Math.max(line, 1), doc.lines));
  return l.from + Math.min(Math.max(col - 1, 0), l.length);
}

function decorate(doc: Text, diagnostics: IDiagnostic[]): DecorationSet {
  const ranges = [];
  for (const d of diagnostics) {
    const attributes = { title: d.kind ? `${d.kind}: ${d.message}` : d.message };
    const from = offset(doc, d.line, d.col);
    // An empty range (or one past the line's end) still gets one visible character.
    const to = Math.max(offset(doc, d.endLine, d.endCol), Math.min(from + 1, doc.lineAt(from).to));
    ranges.push(
      Decoration.line({ class: 'cm-tilekernel-error-line', attributes }).range(doc.lineAt(from).from)
    );
    if (to > from) {
      ranges.push(Decoration.mark({ class: 'cm-tilekernel-error', attributes }).range(from, to));
    }
  }
  return Decoration.set(ranges, true);
}

/** The extension to inject into each cell editor once. */
export const diagnosticsExtension = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(decorations, tr) {
    for (const effect of tr.effects) {
      if (effect.is(setDiagnostics)) {
        return decorate(tr.state.doc, effect.value);
      }
    }
    return decorations.map(tr.changes);
  },
  provide: field => EditorView.decorations.from(field)
});

export function showDiagnostics(view: EditorView, diagnostics: IDiagnostic[]): void {
  // Editors whose extension is not injected yet are updated once it is.
  if (view.state.field(diagnosticsExtension, false) !== undefined) {
    view.dispatch({ effects: setDiagnostics.of(diagnostics) });
  }
}

/**
 * The diagnostics bundle's output: the editor already underlines the range and the traceback
 * shows the error box, so the output itself stays out of sight (its text/plain line is for
 * front ends without this extension).
 */
export class HiddenRenderer extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('tw-hidden-output');
  }

  async renderModel(): Promise<void> {
    return;
  }
}
