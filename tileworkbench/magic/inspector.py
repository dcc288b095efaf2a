"""What the kernel inspector (the JupyterLab extension's right-sidebar panel) reads: one output per
%%tilekernel cell run, describing the cell's kernel as it stands after the run.

The bundle (MIME type application/vnd.tileworkbench.kernel+json) is plain JSON kept in the cell's
outputs, so a saved notebook opened without a kernel still fills the panel:

    {"version": 1, "kernel": "add", "lang": "python", "signature": "(a, b, c, TILE: ct.Constant[int])",
     "arch": "sm_90", "gpu": null,
     "specializations": [{"label": "a: float32[1], b: ..., TILE=1024", "threads": 128, "registers": 16,
                          "shared_bytes": 0, "local_bytes": 0, "spills": 0, "occupancy": 1.0,
                          "blocks_per_sm": 16, "limiter": "warps", "cuda": "...", "error": null}],
     "specialization_count": 1,
     "timing": {"median_ms": 0.09, "p10_ms": ..., "p90_ms": ..., "device": "NVIDIA H100", "grid": [8, 1, 1],
                "specialization": "...", "gbs": 2980.0} | null,
     "sweep": {"configurations": 9, "ok": 9, "timed": false, "device": null, "arch": "sm_90",
               "best": {"config": "TM=32 TN=8", "specialization": "...", "by": "highest ..."} | null} | null,
     "stopped": "cell line 4: TileValueError: ..." | null}

The list holds the most recent specializations (a sweep makes dozens) and the sweep's best, marked
{"best": true}; "specialization_count" counts them all. "stopped" says where the cell's run stopped
at an error, so that a kernel without a specialization says why.

Resources and occupancy are the compiler's for `arch` (the GPU's, or --arch, or sm_90 without a GPU);
NVRTC needs no GPU, so a CPU-only machine fills them too. The record never runs NVRTC itself: it
shows what the run (or an earlier one, through the compile cache) compiled, and a specialization
that only ran on the interpreter is listed as {"label": ..., "error": null, "pending": "<what to
run to compile it>"}, so interpreter runs cost no compile. The text/plain alternative is a one-line
summary for front ends without the extension.
"""
from __future__ import annotations

import uuid
import weakref

from IPython.display import display, update_display

from ..ir import specialization_label

KERNEL_MIME = "application/vnd.tileworkbench.kernel+json"
MAX_SPECIALIZATIONS = 8  # the most recent ones (and a sweep's best): a sweep makes dozens


def kernel_bundle(kernel, arch: str, stopped: str | None = None) -> dict:
    """The inspector's record of `kernel` (a tile kernel or a C++ cell kernel) compiled for `arch`;
    `stopped`: where and why the cell's run stopped, if it did."""
    sweep = getattr(kernel, "last_sweep", None)
    specializations = _specializations(kernel, arch, sweep, stopped)
    record = {"version": 1, "kernel": getattr(kernel, "expression", kernel.name),  # "scale<float>" for C++
              "lang": getattr(kernel, "lang", "python"), "signature": _signature(kernel), "arch": arch,
              "gpu": _gpu_name(), "specializations": specializations,
              "specialization_count": len(kernel.specializations) if hasattr(kernel, "specializations")
              else len(specializations),
              "timing": getattr(kernel, "last_timing", None), "sweep": sweep, "stopped": stopped}
    return {KERNEL_MIME: record, "text/plain": summary(record)}


def summary(record: dict) -> str:
    specs, count = record["specializations"], record["specialization_count"]
    line = f"{'C++ ' * (record['lang'] == 'cpp')}tile kernel {record['kernel']}: {count} specialization{'s' * (count != 1)}"
    if record["stopped"]:
        line += f"; the run stopped at {record['stopped']}"
    best = (record["sweep"] or {}).get("best")
    if best:
        line += f"; best of {record['sweep']['configurations']} configurations: {best['config']} ({best['by']})"
    good = [s for s in specs if not s.get("error") and not s.get("pending")]
    if good:
        s = next((s for s in good if s.get("best")), good[-1])
        line += (f"; {record['arch']}: {s['threads']} threads, {s['registers']} registers, "
                 f"{s['shared_bytes']} B shared, occupancy {s['occupancy_text']} ({s['limiter']})")
    if record["timing"]:
        line += f"; last timing {record['timing']['median_ms'] * 1e3:.1f} us"
    return line


def _signature(kernel) -> str:
    if getattr(kernel, "lang", "python") == "cpp":
        return kernel.signature
    import inspect
    parts = []
    for p in kernel.parameters:
        annotation = p.annotation
        if annotation is inspect.Parameter.empty:
            parts.append(p.name)
        else:  # as written in the cell: string annotations without their quotes
            parts.append(f"{p.name}: {annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)}")
    return f"({', '.join(parts)})"


def _gpu_name() -> str | None:
    from ..runtime.device import unavailable_reason
    if unavailable_reason() is not None:
        return None
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
    except Exception:  # the device went away since it was found: the record just names none
        return None


def _specializations(kernel, arch: str, sweep: dict | None, stopped: str | None) -> list[dict]:
    if getattr(kernel, "lang", "python") == "cpp":
        return [_compiled(lambda: kernel.compiled(arch), f"as written, {kernel.block_threads(arch)}-thread blocks",
                          arch, stopped)]
    from ..runtime.cache import cached_only
    from ..runtime.launch import build
    best = ((sweep or {}).get("best") or {}).get("specialization")
    listed = kernel.specializations[-MAX_SPECIALIZATIONS:]
    if best is not None and best not in map(specialization_label, listed):   # older than the most recent ones
        listed = [fn for fn in kernel.specializations if specialization_label(fn) == best] + listed[1:]
    with cached_only():
        records = [_compiled(lambda fn=fn: build(fn, arch), specialization_label(fn), arch, stopped) for fn in listed]
    return [r | {"best": True} if r["label"] == best else r for r in records]


def _compiled(compile_, label: str, arch: str, stopped: str | None) -> dict:
    from ..errors import TileError
    from ..runtime.occupancy import percent
    from ..runtime.cache import NotCached
    from ..runtime.nvrtc import NvrtcUnavailableError
    try:
        c = compile_()
    except NotCached:
        how = "the run stopped at an error (above)" if stopped else "the run used the interpreter only"
        return {"label": label, "error": None,
                "pending": f"not compiled for {arch}: {how}; --show resources (or --bench, a GPU launch) compiles it"}
    except (TileError, NvrtcUnavailableError, RuntimeError, ValueError) as e:
        return {"label": label, "error": f"{type(e).__name__}: {e}".splitlines()[0]}
    return {"label": label, "threads": c.threads, "registers": c.registers, "shared_bytes": c.shared_bytes,
            "local_bytes": c.local_bytes, "spills": (c.spill_stores or 0) + (c.spill_loads or 0),
            "occupancy": c.occupancy.occupancy, "occupancy_text": percent(c.occupancy.occupancy),
            "blocks_per_sm": c.occupancy.blocks_per_sm,
            "limiter": c.occupancy.limiter, "cuda": c.asm["cuda"], "error": None}


class LiveRecords:
    """The records the notebook shows, kept current: a record a %%tilekernel cell published is
    updated in place (Jupyter's display ids) after any later cell changes its kernel, by
    launching it with new argument types, timing or sweeping it, so that it never reads
    "0 specializations" for a kernel the next cell ran."""

    def __init__(self):
        self._shown = []   # [display id, weak reference to the kernel, arch, stopped, its state when shown]

    def show(self, kernel, arch: str, stopped: str | None) -> None:
        display_id = f"tileworkbench-record-{uuid.uuid4().hex}"
        self._shown = [e for e in self._shown if e[1]() not in (None, kernel)]   # its latest record only
        self._shown.append([display_id, weakref.ref(kernel), arch, stopped, _state(kernel)])
        display(kernel_bundle(kernel, arch, stopped), raw=True, display_id=display_id)

    def refresh(self, *_) -> None:
        """After each cell: update the records whose kernels changed (IPython's post_run_cell)."""
        self._shown = [e for e in self._shown if e[1]() is not None]
        for entry in self._shown:
            display_id, kernel, arch, stopped, state = entry[0], entry[1](), *entry[2:]
            if _state(kernel) != state:
                entry[4] = _state(kernel)
                update_display(kernel_bundle(kernel, arch, stopped), raw=True, display_id=display_id)


def _state(kernel) -> tuple:
    """What a record shows that later cells can change."""
    return (len(getattr(kernel, "specializations", ())), getattr(kernel, "last_timing", None),
            getattr(kernel, "last_sweep", None))
