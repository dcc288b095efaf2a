"""Launch report: timing, throughput on a roofline, resources and occupancy with what-if curves.

    view = LaunchReportView.measure(matmul, grid, args)   # GPU: profile.benchmark; none: compile_report
    view = LaunchReportView(compile_report(matmul, grid, numpy_args, arch="sm_90"))

`launch_report_data(report)` turns a profile.LaunchReport (profile.benchmark's, or compile_report's
with timing and driver occupancy None) into plain numbers; static/launch_report.js and `to_svg`
only draw them. Without a GPU the roofline uses a datasheet's peaks for the arch (targets.NOMINAL_PEAKS).
`measure` adds the memory-access model (`modelled_access`: profile.access on the interpreter).
"""
from __future__ import annotations

import math
import textwrap
from xml.sax.saxutils import escape

import numpy as np

from ..arguments import is_array_like
from ..profile import arch_limits, benchmark, compile_report, occupancy_curve, percent
from ..profile.access import WRITES, analyze
from ..runtime import device
from ._base import Data, SvgView, static
from .svg import svg_document

NO_ROOFLINE = "no roofline: the kernel does no arithmetic (0 flop), so memory bandwidth is its only limit"
UNTIMED_MESSAGE = "timings need a GPU: compile-time resources (NVRTC), theoretical occupancy and the IR's work"
NOTE_WIDTH = 96  # characters of a codegen note per card row
MEASURED_TOP = 3  # stall reasons and hot lines the report lists
MODELLED_OPS = 8  # global memory ops the report lists one by one
# the most elements a launch may move for the report to model its accesses: the interpreter traces a
# million lanes in about a second, which `--bench` may add to a cell without being noticed
MAX_MODELLED_ELEMENTS = 1 << 20
CURVES = (("threads", "threads per block"), ("registers", "registers per thread"), ("shared", "shared bytes per block"))


def _roofline(report, intensity: float, timed: bool) -> dict:
    peaks = report.peaks
    roofs = [] if peaks is None else [{"name": name, "tflops": value} for name, value in
                                      (("tensor core 16-bit", peaks.tensor16_tflops), ("FP32", peaks.fp32_tflops))
                                      if value]
    rl = {"bandwidth_gbs": peaks.bandwidth_gbs if peaks else None,
          "compute_tflops": max((r["tflops"] for r in roofs), default=None), "roofs": roofs,
          "point": {"x": intensity, "y": report.tflops if timed else None},
          "x_label": "flop per byte (arithmetic intensity)", "y_label": "TFLOP/s",
          "peaks_source": "device" if timed else "nominal"}
    rl["layout"] = roofline_layout(rl)
    return rl


ROOF_W, ROOF_H = 360, 220          # the roofline's plot area in pixels (the SVG and the widget alike)
ROOF_COLOURS = ("#1f77b4", "#aec7e8")
POINT_COLOUR = "#d62728"


def text_width(text: str, size: float) -> float:
    """A generous estimate of a sans-serif label's width in pixels (no font metrics here)."""
    return 0.6 * size * len(text)


def roofline_layout(rl: dict, pw: float = ROOF_W, ph: float = ROOF_H) -> dict:
    """The roofline in pixels of its plot area (origin at the top left): axis ticks, the roof
    polylines, the kernel's dot (timed) or dashed line (untimed), and the labels, each put where
    it overlaps no label before it and stays inside the plot."""
    xmin, xmax = 1 / 16, 1024
    ymax = max([1] + [r["tflops"] for r in rl["roofs"]]) * 2
    ymin = ymax / 1e5
    px = lambda v: math.log10(min(max(v, xmin), xmax) / xmin) / math.log10(xmax / xmin) * pw  # noqa: E731
    py = lambda v: ph - math.log10(min(max(v, ymin), ymax) / ymin) / math.log10(ymax / ymin) * ph  # noqa: E731
    layout = {"width": pw, "height": ph,
              "x_ticks": [{"x": px(10 ** e), "text": f"{10 ** e:g}"} for e in range(-1, 4)],
              "y_ticks": [{"y": py(10 ** e), "text": f"{10 ** e:g}"} for e in range(-3, 5) if ymin <= 10 ** e <= ymax],
              "lines": [], "labels": [], "dot": None, "dashed_x": None}
    taken = []

    def place(text, colour, candidates, size=10):
        """The first candidate (x, y, anchor) whose box is inside the plot and clear of the others."""
        w = text_width(text, size)
        for x, y, anchor in candidates:
            left = x - w if anchor == "end" else x
            box = (left, y - size, left + w, y + 2)
            if box[0] >= 0 and box[2] <= pw and box[1] >= 0 and box[3] <= ph and \
                    not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
                break
        taken.append(box)
        layout["labels"].append({"x": x, "y": y, "text": text, "anchor": anchor, "colour": colour})

    bw = rl["bandwidth_gbs"]
    for i, roof in enumerate(rl["roofs"] if bw else []):
        ridge = roof["tflops"] * 1000 / bw
        colour = ROOF_COLOURS[min(i, 1)]
        layout["lines"].append({"points": [[px(xmin), py(xmin * bw / 1000)], [px(ridge), py(roof["tflops"])],
                                           [px(xmax), py(roof["tflops"])]], "colour": colour})
        y = py(roof["tflops"])
        place(f"{roof['name']} {roof['tflops']:.0f}", colour, [(pw - 4, y - 4, "end"), (pw - 4, y + 12, "end")])
    if bw:
        place(f"{bw:.0f} GB/s ({rl['peaks_source']})", ROOF_COLOURS[0], [(6, ph - 6, "start")])
    p = rl["point"]
    cx = px(p["x"] if p["x"] > 0 else xmin)
    if p["y"] is not None:
        cy = py(p["y"] or ymin)
        layout["dot"] = {"x": cx, "y": cy}
        text = f"{p['x']:.3g} flop/B, {p['y']:.3g} TFLOP/s"
        # beside the dot, then ever further above and below it
        heights = [cy + dy for k in range(ph // 12 + 1) for dy in ((-6 - 12 * k), (14 + 12 * k))]
    else:
        layout["dashed_x"] = cx
        text = f"{p['x']:.3g} flop/B"
        heights = [14 + 12 * k for k in range(ph // 12)]   # down along the line
    place(text, POINT_COLOUR, [c for y in heights for c in ((cx + 8, y, "start"), (cx - 8, y, "end"))])
    return layout


def _curves(report) -> dict:
    current = {"threads": report.threads, "registers": report.registers, "shared": report.shared_bytes}
    curves = {}
    for vary, label in CURVES:
        c = occupancy_curve(report.occupancy.arch, vary, threads_per_block=report.threads,
                            registers_per_thread=report.registers, shared_bytes_per_block=report.shared_bytes)
        curves[vary] = {**c, "label": label, "current": current[vary]}
    return curves


def measured_data(ncu) -> dict | None:
    """Nsight Compute's numbers for the report: `ncu` is a profile.ncu.NcuMetrics, a message saying why
    nothing was measured, or None (not asked for)."""
    if ncu is None or isinstance(ncu, str):
        return None if ncu is None else {"message": ncu}
    return {"achieved_occupancy": ncu.achieved_occupancy, "dram_throughput": ncu.dram_throughput,
            "l2_throughput": ncu.l2_throughput, "l2_hit_rate": ncu.l2_hit_rate,
            "load_sectors_per_request": ncu.load_sectors_per_request,
            "store_sectors_per_request": ncu.store_sectors_per_request,
            "stalls": [{"reason": r, "warps": n} for r, n in list(ncu.stalls.items())[:MEASURED_TOP]],
            "hot_lines": [{"source": text.strip(), "samples": n} for text, n in ncu.hot_lines[:MEASURED_TOP]]}


def modelled_access(kernel, grid, args, arch: str, work) -> dict:
    """The memory-access model's numbers for the report (`access_data` of profile.access.analyze, run on
    copies of the NumPy `args`), or {"message": why there are none}: a launch moving more than
    MAX_MODELLED_ELEMENTS elements (`work`: its launch_work), arguments that are not NumPy arrays, or
    the model failing. The report stands either way."""
    if work.elements > MAX_MODELLED_ELEMENTS:
        return {"message": f"not modelled: the launch moves {work.elements:,} elements, more than the "
                           f"{MAX_MODELLED_ELEMENTS:,} the interpreter traces quickly (profile.access.analyze "
                           f"models a smaller grid)"}
    try:
        host = _host_copy(args)
        return access_data(analyze(kernel, grid, host, arch=arch))
    except Exception as e:  # the model runs the kernel on the interpreter: whatever stops it, say so and go on
        return {"message": f"not modelled: {type(e).__name__}: {e}"}


def _host_copy(args):
    """The arguments with NumPy arrays copied (the interpreter writes them) and lists and tuples opened."""
    if isinstance(args, (list, tuple)):
        return type(args)(_host_copy(a) for a in args)
    if isinstance(args, np.ndarray):
        return args.copy()
    if is_array_like(args):
        raise TypeError("the model runs the interpreter, which needs NumPy arrays (pass host copies)")
    return args


def access_data(report) -> dict:
    """An AccessReport (profile.access) as the report shows it: per global op its sectors per request,
    efficiency and bytes moved; the loads' and stores' sectors per request as Nsight Compute counts them
    (op_ld: not the copies of cp.async or TMA); shared-memory wavefronts and conflicts with the worst
    op; the L2 estimate and why."""
    def per_request(ops):
        requests = sum(g.requests for g in ops)
        return sum(g.sectors for g in ops) / requests if requests else None
    loads = [g for g in report.global_ops if g.op not in WRITES and g.copied_by is None]
    stores = [g for g in report.global_ops if g.op in WRITES]
    conflicted = [s for s in report.shared_ops if s.conflicts]
    worst = max(conflicted, key=lambda s: (s.conflicts * s.executions, s.ways), default=None)
    return {
        "threads": report.threads,
        "ops": [{"line": g.line, "op": g.op, "array": g.array, "copied_by": g.copied_by,
                 "sectors_per_request": g.sectors_per_request, "efficiency": g.efficiency,
                 "bytes_moved": g.bytes_moved} for g in report.global_ops],
        "bytes_moved": sum(g.bytes_moved for g in report.global_ops),
        "load_sectors_per_request": per_request(loads), "store_sectors_per_request": per_request(stores),
        "shared": {"wavefronts": sum(s.wavefronts * s.executions for s in report.shared_ops),
                   "conflicts": sum(s.conflicts * s.executions for s in report.shared_ops),
                   "worst": None if worst is None else {"line": worst.line, "op": worst.op, "phase": worst.phase,
                                                        "ways": worst.ways}},
        "l2": {"hit_rate": report.l2.hit_rate, "dram_bytes": report.l2.dram_bytes, "reasoning": report.l2.reasoning},
        "unmodeled": list(report.unmodeled),
    }


def launch_report_data(report, ncu=None, access=None) -> dict:
    """Everything the view draws, as plain numbers and lists; `ncu` as `measured_data` takes it, `access`
    as `modelled_access` gives it (None: not modelled)."""
    t, w, o, peaks = report.timing, report.work, report.occupancy, report.peaks
    timed = t is not None
    intensity = w.flops / w.bytes if w.bytes else 0.0
    gbs, tflops = (report.gbs, report.tflops) if timed else (None, None)
    driver = report.driver_blocks_per_sm
    return {
        "kernel": report.kernel, "grid": list(report.grid), "threads": report.threads, "arch": o.arch,
        "device": peaks.name if peaks else None, "timed": timed, "message": "" if timed else UNTIMED_MESSAGE,
        "timing": None if not timed else {"median_ms": t.median_ms, "p10_ms": t.p10_ms, "p90_ms": t.p90_ms,
                                          "repetitions": t.repetitions, "warmup": t.warmup,
                                          "l2_flushed": t.l2_flushed},
        "throughput": {"gbs": gbs, "tflops": tflops,
                       "gbs_fraction": gbs / peaks.bandwidth_gbs if timed and peaks else None,
                       "tflops_fraction": tflops / peaks.tensor16_tflops
                       if timed and peaks and peaks.tensor16_tflops else None},
        "work": {"bytes_read": w.bytes_read, "bytes_written": w.bytes_written, "bytes": w.bytes, "flops": w.flops,
                 "intensity": intensity},
        "resources": {"threads": report.threads, "registers": report.registers, "shared_bytes": report.shared_bytes,
                      "local_bytes": report.local_bytes, "spill_stores": report.spill_stores,
                      "spill_loads": report.spill_loads},
        "occupancy": {"blocks_per_sm": o.blocks_per_sm, "warps_per_sm": o.warps_per_sm,
                      "max_warps_per_sm": arch_limits(o.arch).max_warps_per_sm, "occupancy": o.occupancy,
                      "limiter": o.limiter, "limits": dict(o.limits), "driver_blocks_per_sm": driver,
                      "agrees": None if driver is None else driver == o.blocks_per_sm},
        "curves": _curves(report),
        # a kernel without arithmetic has no place on a roofline (its intensity is 0): bandwidth is all
        "roofline": _roofline(report, intensity, timed) if w.flops else None,
        "no_roofline": None if w.flops else NO_ROOFLINE,
        "notes": [{"line": line, "text": text} for line, text in report.notes],
        "measured": measured_data(ncu),
        "access": access,
    }


class LaunchReportView(SvgView):
    _esm = static("launch_report.js")
    data = Data({})

    def __init__(self, report, ncu=None, access=None, **kwargs):
        self.report = report
        super().__init__(data=launch_report_data(report, ncu, access), **kwargs)

    @classmethod
    def measure(cls, kernel, grid, args, arch: str | None = None, ncu=None, **bench_options) -> "LaunchReportView":
        """On a GPU: profile.benchmark on the device's arch (NumPy arrays are copied to the GPU first).
        Without one: what the compiler decided for `arch` (default sm_90), and the view says that
        timings need a GPU. `ncu`: Nsight Compute's measurements, or why there are none. The memory
        accesses are modelled on the interpreter (`modelled_access`) for the report's arch."""
        if not device.gpu_available():
            report = compile_report(kernel, grid, args, device.target_arch(arch))
        else:
            report = benchmark(kernel, grid, tuple(device.to_device(a) for a in args), **bench_options)
        return cls(report, ncu, modelled_access(kernel, grid, args, report.occupancy.arch, report.work))

    def __repr__(self) -> str:
        d, o = self.data, self.data["occupancy"]
        head = f"median {d['timing']['median_ms']:.4g} ms" if d["timed"] else "untimed"
        return f"LaunchReportView({d['kernel']}: {head}, occupancy {percent(o['occupancy'])} limited by {o['limiter']})"

    def to_text(self) -> str:
        return report_text(self.data)

    def to_svg(self) -> str:
        return report_svg(self.data)


# ---- static export ---------------------------------------------------------------------------------

def card_lines(d: dict) -> list[tuple[str, str]]:
    """(label, text) rows of the card, as static/launch_report.js shows them."""
    o, r, w, t, th = d["occupancy"], d["resources"], d["work"], d["timing"], d["throughput"]
    rows = [("kernel", f"{d['kernel']}  grid {tuple(d['grid'])}  {d['threads']} threads  {d['arch']}")]
    if t:
        rows.append(("time", f"{t['median_ms'] * 1e3:.2f} us median (p10 {t['p10_ms'] * 1e3:.2f}, "
                             f"p90 {t['p90_ms'] * 1e3:.2f}; {t['repetitions']} runs)"))
        pct = lambda f: "" if f is None else f" ({f:.0%} of peak)"  # noqa: E731
        rows.append(("throughput", f"{th['gbs']:.1f} GB/s{pct(th['gbs_fraction'])}  "
                                   f"{th['tflops']:.3f} TFLOP/s{pct(th['tflops_fraction'])}"))
    else:
        rows.append(("time", d["message"]))
    rows.append(("work", f"{w['bytes_read']:,} B read  {w['bytes_written']:,} B written  {w['flops']:,} flop"))
    rows.append(("occupancy", f"{o['blocks_per_sm']} blocks, {o['warps_per_sm']}/{o['max_warps_per_sm']} warps per "
                              f"SM ({percent(o['occupancy'])}), limited by {o['limiter']}"))
    rows.append(("limits", " · ".join(f"{k} {v}" for k, v in o["limits"].items()) + " blocks"))
    if o["driver_blocks_per_sm"] is not None:
        rows.append(("driver", f"{o['driver_blocks_per_sm']} blocks per SM"
                               + ("" if o["agrees"] else " (differs from theory)")))
    spills = "-" if r["spill_stores"] is None else r["spill_stores"]
    rows.append(("resources", f"{r['registers']} registers/thread  {r['shared_bytes']} B shared  "
                              f"{r['local_bytes']} B local  {spills} spill stores"))
    rows += access_lines(d.get("access"), d.get("measured"))
    rows += measured_lines(d.get("measured"))
    for note in d.get("notes", []):  # how the generator compiled the costly ops: what to change, and why
        for k, part in enumerate(textwrap.wrap(f"line {note['line']}: {note['text']}", NOTE_WIDTH)):
            rows.append(("codegen" if k == 0 else "", part if k == 0 else "    " + part))
    return rows


def access_lines(a: dict | None, m: dict | None) -> list[tuple[str, str]]:
    """The "memory access (modelled)" rows; where Nsight Compute measured the launch, its sectors per
    request and L2 hit rate beside the model's."""
    if a is None:
        return []
    if "message" in a:
        return [("access" if k == 0 else "", part) for k, part in enumerate(textwrap.wrap(a["message"], NOTE_WIDTH))]
    rows = [("access", f"memory access (modelled, {a['threads']} threads): {a['bytes_moved']:,} B moved in "
                       f"32-byte sectors")]
    for g in a["ops"][:MODELLED_OPS]:
        how = f" ({g['copied_by']})" if g["copied_by"] else ""
        rows.append(("", f"line {g['line']} {g['op']} {g['array']}{how}: {g['sectors_per_request']:.2f} "
                         f"sectors/request, {g['efficiency']:.0%} efficient, {g['bytes_moved']:,} B"))
    if len(a["ops"]) > MODELLED_OPS:
        rows.append(("", f"... {len(a['ops']) - MODELLED_OPS} more global memory ops"))
    sh, worst = a["shared"], a["shared"]["worst"]
    rows.append(("shared", f"{sh['wavefronts']:,} wavefronts, {sh['conflicts']:,} bank conflicts"
                 + ("" if worst is None else f"; worst: line {worst['line']} {worst['op']}, shared "
                                            f"{worst['phase']}s {worst['ways']:.2f}-way")))
    for k, part in enumerate(textwrap.wrap(f"estimated hit rate {a['l2']['hit_rate']:.1%}, DRAM "
                                           f"{a['l2']['dram_bytes']:,} B: {a['l2']['reasoning']}", NOTE_WIDTH)):
        rows.append(("L2" if k == 0 else "", part if k == 0 else "    " + part))
    for k, what in enumerate(a["unmodeled"]):
        rows.append(("unmodelled" if k == 0 else "", what[:NOTE_WIDTH]))
    if m is not None and "message" not in m:
        per = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        pct = lambda v: "-" if v is None else f"{v:.1f}%"  # noqa: E731
        rows.append(("vs ncu", f"modelled / measured: sectors per load request {per(a['load_sectors_per_request'])}"
                               f" / {per(m['load_sectors_per_request'])}, per store request "
                               f"{per(a['store_sectors_per_request'])} / {per(m['store_sectors_per_request'])}, "
                               f"L2 hit rate {pct(100 * a['l2']['hit_rate'])} / {pct(m['l2_hit_rate'])}"))
    return rows


def measured_lines(m: dict | None) -> list[tuple[str, str]]:
    """The "measured (Nsight Compute)" rows, next to the theoretical numbers above them."""
    if m is None:
        return []
    if "message" in m:
        return [("measured" if k == 0 else "", part) for k, part in enumerate(textwrap.wrap(m["message"], NOTE_WIDTH))]
    pct = lambda v: "-" if v is None else f"{v:.1f}%"  # noqa: E731
    per = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    rows = [("measured", f"Nsight Compute: achieved occupancy {pct(m['achieved_occupancy'])}"),
            ("memory", f"DRAM {pct(m['dram_throughput'])} of peak  L2 {pct(m['l2_throughput'])} of peak, "
                       f"hit rate {pct(m['l2_hit_rate'])}"),
            ("sectors", f"{per(m['load_sectors_per_request'])} per global load request, "
                        f"{per(m['store_sectors_per_request'])} per store request")]
    if m["stalls"]:
        rows.append(("stalls", "  ".join(f"{s['reason']} {s['warps']:.2f}" for s in m["stalls"])
                     + " (warps stalled per issued instruction)"))
    for k, hot in enumerate(m["hot_lines"]):
        rows.append(("hot lines" if k == 0 else "", f"{hot['samples']:.0f} samples: {hot['source']}"[:NOTE_WIDTH]))
    return rows


def report_title(d: dict) -> str:
    return f"Launch report: {d['kernel']}" + (f" on {d['device']}" if d["device"] else "")


def report_text(d: dict) -> str:
    """The card as plain text: what a viewer with no widgets and no SVG shows."""
    rows = card_lines(d)
    width = max(len(label) for label, _ in rows)
    return "\n".join([report_title(d)] + [f"  {label:<{width}}  {value}" for label, value in rows])


def _text(x, y, s, size=11, anchor="start", fill="#222", weight="normal", halo=False) -> str:
    """An SVG text; `halo` outlines it in white, so it reads where a line runs under it."""
    outline = ' stroke="white" stroke-width="3" paint-order="stroke"' if halo else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
            f'font-weight="{weight}"{outline}>{escape(str(s))}</text>')


def _polyline(points, stroke, width=1.5) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline points="{path}" fill="none" stroke="{stroke}" stroke-width="{width}"/>'


def _roofline_svg(rl: dict, x0: float, y0: float) -> list[str]:
    lay = rl["layout"]
    pw, ph = lay["width"], lay["height"]
    parts = [f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
             _text(x0 + pw / 2, y0 + ph + 26, rl["x_label"], anchor="middle"),
             _text(x0 - 36, y0 - 4, rl["y_label"])]
    parts += [_text(x0 + t["x"], y0 + ph + 12, t["text"], 10, "middle") for t in lay["x_ticks"]]
    parts += [_text(x0 - 4, y0 + t["y"] + 3, t["text"], 10, "end") for t in lay["y_ticks"]]
    parts += [_polyline([(x0 + x, y0 + y) for x, y in line["points"]], line["colour"], 2) for line in lay["lines"]]
    if lay["dot"] is not None:
        point = rl["point"]
        parts.append(f'<circle cx="{x0 + lay["dot"]["x"]:.1f}" cy="{y0 + lay["dot"]["y"]:.1f}" r="5" '
                     f'fill="{POINT_COLOUR}"><title>{point["x"]:.3g} flop/B, {point["y"]:.3g} TFLOP/s</title></circle>')
    else:
        cx = x0 + lay["dashed_x"]
        parts.append(f'<line x1="{cx:.1f}" y1="{y0}" x2="{cx:.1f}" y2="{y0 + ph}" stroke="{POINT_COLOUR}" '
                     f'stroke-dasharray="4 3"/>')
    parts += [_text(x0 + t["x"], y0 + t["y"], t["text"], 10, t["anchor"], t["colour"], halo=True)
              for t in lay["labels"]]
    return parts


def _curve_svg(key: str, c: dict, occupancy: float, x0: float, y0: float, pw: float, ph: float) -> list[str]:
    """One what-if curve; its plot area and (empty) read-out are marked for launch_report.js's hover."""
    lo, hi = min(c["values"]), max(c["values"])
    px = lambda v: x0 + (v - lo) / max(hi - lo, 1) * pw  # noqa: E731
    py = lambda o: y0 + ph - o * ph  # noqa: E731
    return [_text(x0, y0 - 5, f"occupancy vs {c['label']}"),
            f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
            *[_text(x0 - 7, py(o) + 3, percent(o), 10, "end") for o in (0, 0.5, 1)],
            _text(x0, y0 + ph + 12, f"{lo:g}", 10), _text(x0 + pw, y0 + ph + 12, f"{hi:g}", 10, "end"),
            _polyline([(px(v), py(f)) for v, f in zip(c["values"], c["occupancy"])], "#2ca02c"),
            f'<circle cx="{px(min(max(c["current"], lo), hi)):.1f}" cy="{py(occupancy):.1f}" r="4" fill="#d62728"/>',
            f'<text class="curve-tip" data-curve="{key}" x="{x0 + pw / 2:.1f}" y="{y0 + ph + 26:.1f}" font-size="11" '
            f'text-anchor="middle" fill="#555"></text>',
            f'<rect class="curve-area" data-curve="{key}" x="{x0}" y="{y0}" width="{pw}" height="{ph}" '
            f'fill="transparent"/>']


def report_svg(d: dict) -> str:
    rows = card_lines(d)
    parts = [_text(10, 18, report_title(d), 13, weight="bold")]
    for k, (label, value) in enumerate(rows):
        y = 38 + 16 * k
        skipped = label == "access" and "message" in (d.get("access") or {})
        colour = "#b45f06" if (label == "time" and not d["timed"]) or skipped else \
            "#d62728" if label == "resources" and d["resources"]["spill_stores"] else "#222"
        parts += [_text(10, y, label, fill="#666"), _text(90, y, value, fill=colour)]
    top = 38 + 16 * len(rows) + 20
    parts += _roofline_svg(d["roofline"], 60, top) if d["roofline"] else [_text(10, top + 12, d["no_roofline"])]
    for k, key in enumerate(("threads", "registers", "shared")):
        parts += _curve_svg(key, d["curves"][key], d["occupancy"]["occupancy"], 500, top + k * 110, 210, 60)
    width = max(760, 100 + 7 * max(len(value) for _, value in rows))
    return svg_document(width, top + 330, parts)
