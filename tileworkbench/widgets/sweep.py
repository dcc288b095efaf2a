"""Sweep explorer: a kernel over sets of Constant values (tile shapes), as a heatmap and a table.

    view = SweepView.run(matmul, grid_fn, args_fn, space={"TM": [64, 128], "TN": [64, 128]})

The heatmap shows time (with a GPU) or theoretical occupancy (without) over two swept names, with
its colour scale; the table sorts by any column (no timing columns without a GPU); failed
configurations show their reason; the best one is outlined. The heatmap is drawn here (`to_svg`, for
the axes `x` and `y` chosen); the script shows it and adds the axis choice and the table.
`SweepView.run` shows the view at once and fills it in as configurations finish.
"""
from __future__ import annotations

import json
import textwrap
import time
from xml.sax.saxutils import escape

import numpy as np
import traitlets

from ..profile.occupancy import percent
from ..profile.sweep import SweepResult, sweep
from ._base import Data, SvgView, static
from .svg import ink_of, svg_document, text_width


def sweep_data(result: SweepResult) -> dict:
    records = [{**r, "occupancy_text": "" if r["occupancy"] is None else percent(r["occupancy"])}
               for r in result.records()]
    best = result.best_or_none()
    names = list(result.space)
    metric = "time_ms" if result.timed else "occupancy"
    return {"kernel": result.kernel, "arch": result.arch, "names": names, "rows": records,
            "best": result.rows.index(best) if best else -1, "metric": metric,
            "lower_is_better": metric == "time_ms", "note": result.note, "device": result.device,
            "columns": names + ["status"] + (["time_ms", "gbs", "tflops"] if result.timed else []) +
            ["occupancy", "limiter", "registers", "shared_bytes", "threads"] +
            (["device", "host"] if result.timed else []) + ["reason"]}


def _colour(t: float) -> str:
    """Light yellow (t = 0) to dark blue (t = 1)."""
    stops = [(255, 255, 204), (161, 218, 180), (65, 182, 196), (44, 127, 184), (37, 52, 148)]
    t = min(1.0, max(0.0, t)) * (len(stops) - 1)
    k = min(int(t), len(stops) - 2)
    f = t - k
    r, g, b = (round(a + (c - a) * f) for a, c in zip(stops[k], stops[k + 1]))
    return f"#{r:02x}{g:02x}{b:02x}"


class SweepView(SvgView):
    _esm = static("sweep.js")
    data = Data({})
    x = traitlets.Unicode("").tag(sync=True)
    y = traitlets.Unicode("").tag(sync=True)

    def __init__(self, result: SweepResult, **kwargs):
        names = list(result.space)
        self.result = result
        super().__init__(data=sweep_data(result), x=names[0], y=names[1] if len(names) > 1 else "", **kwargs)

    @traitlets.observe("x", "y")
    def _axes(self, change):
        self.svg = self.to_svg()

    def __repr__(self) -> str:
        best = self.result.best_or_none()
        ok = sum(r.ok for r in self.result.rows)
        return (f"SweepView({self.result.kernel}: {ok} of {len(self.result.rows)} configurations ok, "
                f"best {best.config if best else None})")

    def refresh(self) -> None:
        """Redraw from `self.result` (the sweep fills it in as configurations finish)."""
        self.data = sweep_data(self.result)

    @classmethod
    def run(cls, kernel, grid_fn, args_fn, space: dict, *, every_s: float = 0.25, **options) -> SweepView:
        """Show the view, run the sweep (with a progress bar) and fill the view in as configurations
        finish, redrawing at most every `every_s` seconds; `options` go to `sweep`. The view is
        displayed here: assign the result (`view = SweepView.run(...)`) rather than showing it again."""
        view, picture, drawn_at = None, None, 0.0

        def on_row(result, index):
            nonlocal view, picture, drawn_at
            if view is None:
                view = cls(result)
                picture = view.show_live()
            elif time.monotonic() - drawn_at >= every_s:
                view.refresh()
            else:
                return
            drawn_at = time.monotonic()
        result = sweep(kernel, grid_fn, args_fn, space, on_row=on_row, **options)
        if view is None:  # a space with an empty list of values: no configuration
            return cls(result)
        view.refresh()
        picture.update(view.picture_bundle(), raw=True)   # a saved notebook shows the finished sweep
        return view

    def show_live(self):
        """Display the view as every view is displayed (its static picture, then the live widget),
        the picture with a display id, so that it can show the finished sweep; returns its handle."""
        import anywidget
        from IPython.display import display
        picture = display(self.picture_bundle(), raw=True, display_id=True)
        widget = anywidget.AnyWidget._repr_mimebundle_(self)   # the live widget alone
        widget = widget[0] if isinstance(widget, tuple) else widget
        display({**widget, "text/plain": ""}, raw=True)   # the picture's output already says it in text
        return picture

    def to_png(self, path) -> None:
        """The heatmap as a PNG (needs matplotlib)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        metric = self.data["metric"]
        xs, ys, values = self.result.grid(self.x, self.y or self.x, metric) if self.y else self._row_grid(metric)
        fig, ax = plt.subplots(figsize=(1 + 0.8 * len(xs), 1 + 0.6 * len(ys)))
        image = ax.imshow(values, cmap="viridis_r" if metric == "time_ms" else "viridis")
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
        ax.set_yticks(range(len(ys)), [str(v) for v in ys])
        ax.set_xlabel(self.x)
        ax.set_ylabel(self.y or "")
        fig.colorbar(image, label=metric)
        ax.set_title(f"{self.data['kernel']} on {self.data['arch']}")
        fig.savefig(path, bbox_inches="tight", dpi=120)
        plt.close(fig)

    def _row_grid(self, metric):
        xs = self.result.space[self.x]
        values = np.full((1, len(xs)), np.nan)
        for r in self.result.rows:
            if r.ok and getattr(r, metric) is not None:
                values[0, xs.index(r.config[self.x])] = getattr(r, metric)
        return xs, [""], values

    def to_svg(self) -> str:
        metric = self.data["metric"]
        xs, ys, values = self.result.grid(self.x, self.y, metric) if self.y else self._row_grid(metric)
        finite = values[np.isfinite(values)]
        lo, hi = (finite.min(), finite.max()) if finite.size else (0, 1)
        cell, left, top = 56, 70, 40
        title = (f'{self.data["kernel"]}: {metric} over {self.x}{" x " + self.y if self.y else ""} '
                 f'({self.data["arch"]})')
        width = max(left + cell * len(xs) + 20, 16 + text_width(title, 12, bold=True), MIN_WIDTH)
        best = self.result.best_or_none()
        parts = [f'<text x="8" y="18" font-weight="bold">{escape(title)}</text>']
        for j, yv in enumerate(ys):
            parts.append(f'<text x="8" y="{top + j * cell + cell / 2 + 4}">{self.y}={yv}</text>' if self.y else "")
            for i, xv in enumerate(xs):
                v = values[j, i]
                x0, y0 = left + i * cell, top + j * cell
                t = 0.5 if hi == lo else (v - lo) / (hi - lo)
                if metric == "time_ms":
                    t = 1 - t
                fill = "#eeeeee" if not np.isfinite(v) else _colour(t)
                config = {self.x: xv, **({self.y: yv} if self.y else {})}
                is_best = best is not None and all(best.config[k] == val for k, val in config.items())
                stroke = ' stroke="#d62728" stroke-width="3"' if is_best else ' stroke="#ffffff"'
                label = "—" if not np.isfinite(v) else (f"{v:.3g}" if metric == "time_ms" else percent(v))
                row = next((r for r in self.result.rows if all(r.config[k] == v for k, v in config.items())), None)
                about = (label if np.isfinite(v) else f"{row.status} {row.reason}") if row else "not run"
                parts.append(f'<rect class="sweep-cell" x="{x0}" y="{y0}" width="{cell}" height="{cell}" '
                             f'fill="{fill}"{stroke}><title>{escape(json.dumps(config))}: {escape(about)}'
                             f'</title></rect>')
                parts.append(f'<text x="{x0 + cell / 2}" y="{y0 + cell / 2 + 4}" text-anchor="middle" '
                             f'fill="{ink_of(fill)}" pointer-events="none">{label}</text>')
        for i, xv in enumerate(xs):
            parts.append(f'<text x="{left + i * cell + cell / 2}" y="{top + len(ys) * cell + 16}" '
                         f'text-anchor="middle">{self.x}={xv}</text>')
        y = top + len(ys) * cell + 40
        parts += _scale(metric, lo, hi, 8, y)
        y += 44
        failed = [r for r in self.result.rows if r.status not in ("ok", "pending")]
        reasons = [f"{_config_text(r.config)}: {r.status}: {r.reason}" for r in failed[:MAX_REASONS]]
        if len(failed) > MAX_REASONS:
            reasons.append(f"... and {len(failed) - MAX_REASONS} more failed configurations (see the table)")
        notes = [(line, "#666") for line in wrap(self.data["note"], width - 16)] + \
            [(line, "#b00") for reason in reasons for line in wrap(reason, width - 16)]
        for line, colour in notes:
            parts.append(f'<text x="8" y="{y}" fill="{colour}">{escape(line)}</text>')
            y += 16
        return svg_document(width, y - 6, [f'<g font-size="12">{"".join(parts)}</g>'])


MIN_WIDTH = 420   # wide enough for the no-GPU note in three lines
MAX_REASONS = 6   # failed configurations listed under the heatmap; the table has them all


def wrap(text: str, width: float, size: float = 12) -> list[str]:
    """`text` in lines no wider than `width` pixels, broken at spaces."""
    return textwrap.wrap(text, max(10, int(width // (0.56 * size)))) if text else []


def _scale(metric: str, lo: float, hi: float, x: float, y: float) -> list[str]:
    """The colour scale under the heatmap: from the worst value to the best."""
    show = (lambda v: f"{v:.3g} ms") if metric == "time_ms" else percent
    if lo == hi:
        return [f'<text x="{x}" y="{y}" fill="#444">colour scale: every configuration at {show(lo)}</text>']
    worst, best = (hi, lo) if metric == "time_ms" else (lo, hi)
    steps = 40
    reading = "time: darker is faster" if metric == "time_ms" else "occupancy: darker is higher"
    parts = [f'<text x="{x}" y="{y}" fill="#444">colour scale ({reading})</text>']
    parts += [f'<rect x="{x + 4 * k}" y="{y + 6}" width="4" height="12" fill="{_colour(k / (steps - 1))}"/>'
              for k in range(steps)]
    parts += [f'<text x="{x}" y="{y + 32}" fill="#444">{show(worst)}</text>',
              f'<text x="{x + 4 * steps}" y="{y + 32}" text-anchor="end" fill="#444">{show(best)}</text>']
    return parts


def _config_text(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())
