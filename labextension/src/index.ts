import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Cell, CodeCell, ICodeCellModel } from '@jupyterlab/cells';
import {
  CodeMirrorEditor,
  IEditorLanguageRegistry
} from '@jupyterlab/codemirror';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { cppLanguage } from '@codemirror/lang-cpp';

import {
  DIAGNOSTICS_MIME,
  diagnosticsExtension,
  HiddenRenderer,
  readDiagnostics,
  showDiagnostics
} from './diagnostics';
import { InspectorPanel, KERNEL_MIME, KernelRecordRenderer } from './inspector';
import { tileKernelLanguage } from './language';

const HEADER = /^%%tilekernel\b(.*)$/;
const MIME_PYTHON = 'text/x-tilekernel';
const MIME_CPP = 'text/x-tilekernel-cpp';

/**
 * The MIME type a cell should have: ours when its first line is a `%%tilekernel` header
 * (C++ with `--lang cpp`), otherwise the notebook's own.
 */
function cellMimeType(source: string, notebookMime: string): string {
  const header = HEADER.exec(source.split('\n', 1)[0]);
  if (!header) {
    return notebookMime;
  }
  return /--lang[\s=]+cpp\b/.test(header[1]) ? MIME_CPP : MIME_PYTHON;
}

function isOurs(mime: string): boolean {
  return mime === MIME_PYTHON || mime === MIME_CPP;
}

/**
 * Keep one code cell's mime type and diagnostics in step with its source and outputs.
 * The notebook resets every cell's mimeType when the kernel language changes, hence the
 * mimeTypeChanged listener: it puts ours back.
 */
function trackCell(panel: NotebookPanel, cell: CodeCell): void {
  const model = cell.model as ICodeCellModel;
  const updateMime = () => {
    const wanted = cellMimeType(model.sharedModel.getSource(), panel.content.codeMimetype);
    if (model.mimeType !== wanted && (isOurs(wanted) || isOurs(model.mimeType))) {
      model.mimeType = wanted;
    }
  };
  const updateDiagnostics = () => {
    const editor = cell.editor as CodeMirrorEditor | null;
    if (editor) {
      showDiagnostics(editor.editor, readDiagnostics(model.outputs));
    }
  };
  model.sharedModel.changed.connect(updateMime);
  model.mimeTypeChanged.connect(updateMime);
  model.outputs.changed.connect(updateDiagnostics);
  updateMime();

  // The editor exists only once the cell is rendered (notebooks render lazily).
  void cell.ready.then(() => {
    const editor = cell.editor as CodeMirrorEditor | null;
    if (editor) {
      editor.injectExtension(diagnosticsExtension);
      updateDiagnostics();
    }
  });
}

function trackNotebook(panel: NotebookPanel): void {
  const seen = new WeakSet<Cell>();
  const scan = () => {
    for (const cell of panel.content.widgets) {
      if (cell instanceof CodeCell && !seen.has(cell)) {
        seen.add(cell);
        trackCell(panel, cell);
      }
    }
  };
  panel.content.model?.cells.changed.connect(scan);
  void panel.context.ready.then(scan);
  scan();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'tileworkbench-labextension:plugin',
  description:
    `Highlights %%tilekernel cells, underlines the ranges of ${DIAGNOSTICS_MIME} outputs, ` +
    `and lists the notebook's ${KERNEL_MIME} records in the kernel inspector.`,
  autoStart: true,
  requires: [INotebookTracker, IEditorLanguageRegistry, IRenderMimeRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    languages: IEditorLanguageRegistry,
    rendermime: IRenderMimeRegistry
  ) => {
    languages.addLanguage({
      name: 'tilekernel',
      mime: MIME_PYTHON,
      load: async () => {
        const python = await languages.getLanguage('python');
        if (!python?.support) {
          throw new Error('tileworkbench: the python language is not registered');
        }
        return tileKernelLanguage(python.support.language, 'tilekernel');
      }
    });
    languages.addLanguage({
      name: 'tilekernel-cpp',
      mime: MIME_CPP,
      load: async () => tileKernelLanguage(cppLanguage, 'tilekernel-cpp')
    });
    tracker.widgetAdded.connect((_, panel) => trackNotebook(panel));
    tracker.forEach(trackNotebook);

    const inspector = new InspectorPanel(tracker);
    app.shell.add(inspector, 'right', { rank: 700 });
    const openInspector = (kernel: string) => {
      app.shell.activateById(inspector.id);
      inspector.reveal(kernel);
    };
    // Records are plain JSON rendered as text nodes: safe in untrusted (e.g. just opened) notebooks.
    // Ranked before text/plain, which is what front ends without this extension show.
    rendermime.addFactory(
      {
        safe: true,
        mimeTypes: [KERNEL_MIME],
        defaultRank: 50,
        createRenderer: () => new KernelRecordRenderer(openInspector)
      },
      50
    );
    rendermime.addFactory(
      { safe: true, mimeTypes: [DIAGNOSTICS_MIME], defaultRank: 50, createRenderer: () => new HiddenRenderer() },
      50
    );
  }
};

export default plugin;
