"""The chart of a results document (PNG): each library's fastest implementation per case relative to
the case's fastest, and the compile, cache and launch latencies on a log scale."""
from __future__ import annotations

COLORS = {"tileworkbench": "tab:blue", "cuTile": "tab:green", "Triton": "tab:orange", "CuPy": "tab:red",
          "torch": "tab:purple"}


def speed_bars(doc: dict) -> tuple[list[str], dict[str, list[float]]]:
    """(case titles, family -> its best `x_best` per case, 0 where it has none): the left panel's data."""
    titles = [c["title"] for c in doc["cases"]]
    families = [f for f in COLORS if any(r["family"] == f for c in doc["cases"] for r in c["results"])]
    bars = {f: [max((r.get("x_best", 0) for r in c["results"] if r["family"] == f and r["status"] == "ok"), default=0)
                for c in doc["cases"]] for f in families}
    return titles, bars


def latency_bars(doc: dict) -> tuple[list[str], dict[str, list[float]]]:
    """(measures, family -> its median ms per measure, 0 where none): the right panel's data."""
    measures = list(dict.fromkeys(r["measure"] for r in doc["latency"]))
    families = list(dict.fromkeys(r["impl"].split()[0] for r in doc["latency"]))
    bars = {f: [next((r["ms"] for r in doc["latency"] if r["measure"] == m and r["impl"].split()[0] == f
                      and r["status"] == "ok"), 0) for m in measures] for f in families}
    return measures, bars


def _grouped(ax, labels, bars):
    height = 0.8 / max(1, len(bars))
    for k, (family, values) in enumerate(bars.items()):
        ax.barh([i + k * height for i in range(len(labels))], values, height, label=family,
                color=COLORS.get(family))
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(labels))], labels, fontsize=8)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="lower right")


def draw(doc: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    titles, speed = speed_bars(doc)
    measures, latency = latency_bars(doc)
    panels = 2 if measures else 1
    fig, axes = plt.subplots(1, panels, figsize=(8 * panels, 0.5 * max(len(titles), 6) + 1.5), squeeze=False)
    left = axes[0][0]
    _grouped(left, titles, speed)
    left.axvline(1.0, color="gray", linewidth=0.8)
    left.set_xlabel("speed relative to the case's fastest implementation (1 = fastest)")
    if measures:
        right = axes[0][1]
        _grouped(right, [m.replace(": ", ":\n") for m in measures], latency)
        right.set_xscale("log")
        right.set_xlabel("milliseconds (log scale; median)")
    env = doc["environment"]
    fig.suptitle(f"{env.get('device', '?')}, driver {env.get('driver', '?')}, {doc['date'][:10]}"
                 f"{' (quick)' if doc['quick'] else ''}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
