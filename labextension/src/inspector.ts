/*
 * The kernel inspector: a right-sidebar panel listing the tile kernels of the current notebook.
 *
 * Every %%tilekernel run leaves one output of type KERNEL_MIME (tileworkbench/magic/inspector.py):
 * the kernel's signature, its specializations with the CUDA generated for each and what the
 * compiler made of it (registers, shared memory, occupancy), and its last measured timing. The
 * panel reads those records from the notebook's cell outputs, so a saved notebook fills it
 * without a running kernel. A kernel run in several cells shows its latest run (the highest
 * execution count). Clicking a kernel's name scrolls to its cell.
 */
import { ICodeCellModel } from '@jupyterlab/cells';
import { INotebookTracker, Notebook, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

export const KERNEL_MIME = 'application/vnd.tileworkbench.kernel+json';
export const INSPECTOR_ID = 'tileworkbench-inspector';

export interface ISpecialization {
  label: string;
  threads?: number;
  registers?: number;
  shared_bytes?: number;
  local_bytes?: number;
  spills?: number;
  occupancy?: number;
  occupancy_text?: string; // the kernel's Python side rounds every occupancy it shows (profile.percent)
  blocks_per_sm?: number;
  limiter?: string;
  cuda?: string;
  error?: string | null;
  pending?: string; // not compiled yet: what to run to compile it
  best?: boolean; // the best configuration of the kernel's last sweep
}

export interface ITiming {
  median_ms: number;
  p10_ms: number;
  p90_ms: number;
  device: string;
  grid: number[] | null;
  specialization: string;
  gbs: number | null;
}

export interface ISweep {
  configurations: number;
  ok: number;
  timed: boolean;
  best: { config: string; specialization: string; by: string } | null;
}

export interface IKernelRecord {
  kernel: string;
  lang: 'python' | 'cpp';
  signature: string;
  arch: string;
  gpu: string | null;
  specializations: ISpecialization[];
  specialization_count: number; // all of them: the list holds the most recent (and a sweep's best)
  timing: ITiming | null;
  sweep: ISweep | null;
  stopped: string | null; // where and why the cell's run stopped at an error
}

/** A kernel record with the cell it came from. */
export interface IFoundKernel {
  record: IKernelRecord;
  cellIndex: number;
  executionCount: number | null;
}

/** A record as saved in an output, with the lists an older or hand-made one may lack filled in. */
export function normalizedRecord(data: unknown): IKernelRecord | undefined {
  const record = data as IKernelRecord | undefined;
  if (!record?.kernel) {
    return undefined;
  }
  const specializations = Array.isArray(record.specializations) ? record.specializations : [];
  return {
    ...record,
    specializations,
    specialization_count: record.specialization_count ?? specializations.length,
    timing: record.timing ?? null,
    sweep: record.sweep ?? null,
    stopped: record.stopped ?? null
  };
}

/** The latest record of each kernel in the notebook's outputs, in notebook order. */
export function collectKernels(notebook: Notebook): IFoundKernel[] {
  const byName = new Map<string, IFoundKernel>();
  const cells = notebook.model?.cells;
  for (let index = 0; cells && index < cells.length; index++) {
    const cell = cells.get(index);
    if (cell.type !== 'code') {
      continue;
    }
    const model = cell as ICodeCellModel;
    for (let k = 0; k < model.outputs.length; k++) {
      const record = normalizedRecord(model.outputs.get(k).data[KERNEL_MIME]);
      if (!record) {
        continue;
      }
      const found = { record, cellIndex: index, executionCount: model.executionCount };
      const known = byName.get(record.kernel);
      if (!known || (found.executionCount ?? -1) >= (known.executionCount ?? -1)) {
        byName.set(record.kernel, found);
      }
    }
  }
  return [...byName.values()].sort((a, b) => a.cellIndex - b.cellIndex);
}

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">
  <g class="jp-icon3" fill="#616161">
    <rect x="1" y="1" width="6" height="6" rx="1"/><rect x="9" y="1" width="6" height="6" rx="1"/>
    <rect x="1" y="9" width="6" height="6" rx="1"/><rect x="9" y="9" width="6" height="6" rx="1" opacity="0.45"/>
  </g></svg>`;

export const kernelIcon = new LabIcon({ name: 'tileworkbench:kernels', svgstr: ICON_SVG });

/** `h(tag, attributes, ...children)`: a DOM element, text children escaped by construction. */
function h(
  tag: string,
  attributes: Record<string, string> = {},
  ...children: (Node | string | null)[]
): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    element.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null) {
      element.append(child);
    }
  }
  return element;
}

function bytes(n: number | undefined): string {
  if (n === undefined) {
    return '';
  }
  return n >= 1024 ? `${(n / 1024).toFixed(n % 1024 ? 1 : 0)} KB` : `${n} B`;
}

export function timingText(t: ITiming): string {
  const us = (ms: number) => (ms * 1e3).toFixed(ms < 0.1 ? 2 : 1);
  const rate = t.gbs ? `, ${t.gbs.toFixed(0)} GB/s` : '';
  return `${us(t.median_ms)} µs median (p10 ${us(t.p10_ms)}, p90 ${us(t.p90_ms)})${rate} on ${t.device}`;
}

function counted(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** The sweep in one line: how many configurations succeeded, which was best and why. */
export function sweepText(sweep: ISweep): string {
  const ran = `${sweep.ok} of ${counted(sweep.configurations, 'configuration')} ok`;
  return sweep.best ? `sweep: ${ran}; best ${sweep.best.config} (${sweep.best.by})` : `sweep: ${ran}`;
}

/** One line for the record's output in the notebook, and for front ends' tooltips. */
export function recordSummary(record: IKernelRecord): string {
  const parts = [counted(record.specialization_count, 'specialization')];
  if (record.stopped) {
    parts.push(`stopped at ${record.stopped}`);
  }
  if (record.sweep?.best) {
    parts.push(`best ${record.sweep.best.config}`);
  }
  const compiled = record.specializations.filter(s => !s.error && !s.pending);
  const shown = compiled.find(s => s.best) ?? compiled[compiled.length - 1];
  if (shown) {
    parts.push(
      `${record.arch}: ${shown.threads} threads, ${shown.registers} registers, ` +
        `occupancy ${shown.occupancy_text ?? ''}`
    );
  }
  if (record.timing) {
    parts.push(`last ${(record.timing.median_ms * 1e3).toFixed(1)} µs`);
  }
  return parts.join(' · ');
}

/** One specialization: what selected it, then what the compiler made of it, then its CUDA. */
function specializationBlock(s: ISpecialization, code: HTMLDetailsElement): HTMLElement {
  const label = h(
    'div',
    { class: 'tw-spec-label', title: s.label },
    s.best ? h('span', { class: 'tw-best' }, 'best of the sweep ') : null,
    s.label
  );
  if (s.error) {
    return h('div', { class: 'tw-spec tw-spec-error' }, label, h('div', { class: 'tw-spec-message' }, s.error));
  }
  if (s.pending) {
    return h('div', { class: 'tw-spec' }, label, h('div', { class: 'tw-spec-message' }, s.pending));
  }
  const metric = (name: string, text: string, title = '') => h('span', { 'data-metric': name, title }, text);
  const occupancy = s.occupancy_text ?? '';
  const metrics = h(
    'div',
    { class: 'tw-spec-metrics' },
    metric('threads', `${s.threads} threads`),
    metric('registers', `${s.registers} regs${s.spills ? ' ⚠' : ''}`, s.spills ? `${s.spills} spilled loads/stores` : ''),
    metric('shared', `${bytes(s.shared_bytes)} smem`),
    metric('occupancy', `${occupancy} occupancy (${s.limiter})`, `${s.blocks_per_sm} blocks per SM, limited by ${s.limiter}`)
  );
  code.append(h('summary', {}, 'CUDA'), h('pre', { class: 'tw-cuda' }, s.cuda ?? ''));
  return h('div', { class: 'tw-spec' }, label, metrics, code);
}

function kernelSection(
  found: IFoundKernel,
  onOpen: (found: IFoundKernel) => void,
  details: (key: string) => HTMLDetailsElement
): HTMLElement {
  const { record } = found;
  const name = h('button', { class: 'tw-kernel-name', title: 'Scroll to the cell' }, record.kernel);
  name.addEventListener('click', () => onOpen(found));
  const cellLabel = found.executionCount ? `[${found.executionCount}]` : `cell ${found.cellIndex + 1}`;
  const where = record.gpu ? `${record.arch} (${record.gpu})` : `${record.arch}, compiled without a GPU`;
  const listed = record.specializations.length;
  const more = record.specialization_count - listed;
  const specializations = listed
    ? h(
        'div',
        {},
        h('div', { class: 'tw-where' }, where + (more > 0 ? ` · ${listed} of ${record.specialization_count} listed` : '')),
        ...record.specializations.map(s => specializationBlock(s, details(`${record.kernel}\n${s.label}`)))
      )
    : h(
        'div',
        { class: 'tw-empty-kernel' },
        record.stopped
          ? 'no specialization: the run stopped before one was made'
          : 'no specializations yet: a run with --grid and --args makes one'
      );
  return h(
    'section',
    { class: 'tw-kernel', 'data-kernel': record.kernel },
    h(
      'header',
      {},
      name,
      h('span', { class: `tw-lang tw-lang-${record.lang}` }, record.lang === 'cpp' ? 'C++' : 'tile'),
      h('span', { class: 'tw-cell' }, cellLabel)
    ),
    h('code', { class: 'tw-signature' }, `${record.kernel}${record.signature}`),
    record.stopped ? h('div', { class: 'tw-stopped' }, `stopped at ${record.stopped}`) : null,
    record.timing ? h('div', { class: 'tw-timing' }, `last timing: ${timingText(record.timing)}`) : null,
    record.sweep ? h('div', { class: 'tw-sweep' }, sweepText(record.sweep)) : null,
    specializations
  );
}

/** The right-sidebar panel; it follows the current notebook. */
export class InspectorPanel extends Widget {
  constructor(tracker: INotebookTracker) {
    super();
    this.id = INSPECTOR_ID;
    this.addClass('tw-inspector');
    this.title.icon = kernelIcon;
    this.title.caption = 'Tile kernels';
    this._tracker = tracker;
    tracker.currentChanged.connect(() => this._follow(tracker.currentWidget));
    this._follow(tracker.currentWidget);
  }

  /** Scroll to the kernel's section in the panel (from a record's output). */
  reveal(kernel: string): void {
    this._flashing = kernel;
    this.render();
    this._section(kernel)?.scrollIntoView({ block: 'nearest' });
    window.setTimeout(() => {
      if (this._flashing === kernel) {
        this._flashing = null;
        this._section(kernel)?.classList.remove('tw-flash');
      }
    }, 1200);
  }

  private _section(kernel: string): Element | null {
    return this.node.querySelector(`section[data-kernel="${CSS.escape(kernel)}"]`);
  }

  render(): void {
    const panel = this._panel;
    const found = panel ? collectKernels(panel.content) : [];
    const title = h('h2', {}, 'Tile kernels', panel ? h('span', { class: 'tw-notebook' }, ` ${panel.title.label}`) : null);
    const body = !panel
      ? h('p', { class: 'tw-empty' }, 'Open a notebook to see its tile kernels.')
      : found.length
        ? h('div', {}, ...found.map(f => kernelSection(f, k => this._open(k), key => this._details(key))))
        : h('p', { class: 'tw-empty' }, 'No kernels yet: run a %%tilekernel cell (saved outputs count too).');
    // said once, not under every kernel
    const untimed = found.length && found.every(f => !f.record.timing)
      ? h('p', { class: 'tw-untimed' }, 'No timings yet: --bench on a GPU measures a kernel.')
      : null;
    this.node.replaceChildren(...[title, untimed, body].filter((e): e is HTMLElement => e !== null));
    if (this._flashing) {  // a re-render while a revealed kernel flashes keeps the flash
      this._section(this._flashing)?.classList.add('tw-flash');
    }
  }

  /** A CUDA <details> that stays open across re-renders once the user opened it. */
  private _details(key: string): HTMLDetailsElement {
    const details = document.createElement('details');
    details.open = this._openCode.has(key);
    details.addEventListener('toggle', () => {
      if (details.open) {
        this._openCode.add(key);
      } else {
        this._openCode.delete(key);
      }
    });
    return details;
  }

  private _open(found: IFoundKernel): void {
    const notebook = this._panel?.content;
    if (!notebook) {
      return;
    }
    notebook.activeCellIndex = found.cellIndex;
    const cell = notebook.widgets[found.cellIndex];
    if (cell) {
      void notebook.scrollToCell(cell, 'start');
    }
    this._tracker.currentWidget?.activate();
  }

  private _follow(panel: NotebookPanel | null): void {
    this._panel = panel;
    if (panel && !this._watched.has(panel)) {
      this._watched.add(panel);
      const watch = () => {
        const cells = panel.content.model?.cells;
        for (let i = 0; cells && i < cells.length; i++) {
          const cell = cells.get(i);
          if (cell.type === 'code' && !this._watchedCells.has(cell)) {
            this._watchedCells.add(cell);
            (cell as ICodeCellModel).outputs.changed.connect(this._schedule, this);
          }
        }
        this._schedule();
      };
      panel.content.model?.cells.changed.connect(watch);
      panel.content.modelChanged.connect(watch);
      void panel.context.ready.then(watch);
      panel.title.changed.connect(this._schedule, this);
      watch();
    }
    this._schedule();
  }

  /** Outputs arrive one by one during a run: render once they settle. */
  private _schedule(): void {
    if (this._pending === null) {
      this._pending = window.setTimeout(() => {
        this._pending = null;
        this.render();
      }, 50);
    }
  }

  private _tracker: INotebookTracker;
  private _panel: NotebookPanel | null = null;
  private _pending: number | null = null;
  private _flashing: string | null = null;  // the kernel reveal() highlights, until its flash ends
  private _watched = new WeakSet<NotebookPanel>();
  private _watchedCells = new WeakSet<object>();
  private _openCode = new Set<string>();
}

/**
 * How a record shows in the cell's output area: one quiet line naming the kernel and what it
 * compiled to, with a button that opens the inspector at it.
 */
export class KernelRecordRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(openInspector: (kernel: string) => void) {
    super();
    this.addClass('tw-record');
    this._open = openInspector;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const record = normalizedRecord(model.data[KERNEL_MIME]);
    if (!record) {
      this.node.replaceChildren(h('span', { class: 'tw-record-name' }, 'a kernel record without a kernel name'));
      return;
    }
    const button = h('button', { class: 'tw-record-open', title: 'Show in the kernel inspector' }, 'inspect');
    button.addEventListener('click', () => this._open(record.kernel));
    this.node.replaceChildren(
      h('span', { class: 'tw-record-name' }, `${record.lang === 'cpp' ? 'C++ ' : ''}kernel ${record.kernel}`),
      h('span', { class: 'tw-record-summary' }, ` · ${recordSummary(record)} `),
      button
    );
  }

  private _open: (kernel: string) => void;
}
