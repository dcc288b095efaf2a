"""Where a cuTile sample's time goes, under cuTile and under tileworkbench: its GPU kernels against
the host work of its own wrapper (the peer benchmark times the wrapper, as a user calls it).

    source .cutile/setup.sh; python3 benchmarks/probe/sample_kernel_times.py [--only sample_fft,sample_moe]

For each of the peer benchmark's sample cases (benchmarks/peers.py, the same inputs and calls), each
implementation that runs a cuTile sample is warmed up, then run `--calls` times under
torch.profiler: the wall time per call (host included, synchronized), the summed GPU time of every
kernel per call, and each kernel of the sample by name with its time per call. A sample whose wall
time is far above its kernels' time is bound by its wrapper's host work (torch calls, device
synchronizations), where a launch path's microseconds and the kernels' speed barely show.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import benchmarks.peers as peers  # noqa: E402


def profile(run, calls: int) -> tuple[float, dict[str, float]]:
    """(wall ms per call, {kernel name: GPU ms per call}) over `calls` calls of `run`."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for _ in range(calls):
            run()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - start) / calls * 1e3
    kernels: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.device_type.name == "CUDA" and event.device_time_total > 0:
            kernels[event.name] += event.device_time_total / 1e3 / calls
    return wall, dict(kernels)


def _library_work(name: str) -> bool:
    """A kernel or copy of the wrapper's PyTorch calls, not of the sample's tile kernels."""
    return name.startswith(("Memcpy", "Memset")) or "at::native" in name or "(anonymous namespace)" in name


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="sample", help="cases by key or prefix, as peers.py's --only")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args(argv)
    only = peers.words(args.only)
    print(f"{'case':34} {'implementation':44} {'wall ms':>9} {'GPU ms':>9}  kernels (GPU ms per call)")
    for case in peers.all_cases("full"):
        if case.kind == "copy" or not peers.selected(case.key, only):
            continue
        for name, family, offer in peers.IMPLEMENTATIONS[case.op]:
            if "cuTile sample" not in name:
                continue
            try:
                problem = case.make()
                run = offer(problem)
                run = next(iter(run.values())) if isinstance(run, dict) else run
                for _ in range(args.warmup):
                    run()
                wall, kernels = profile(run, args.calls)
            except Exception as e:  # noqa: BLE001 - one sample's trouble is its row
                print(f"{case.title[:34]:34} {name[:44]:44} failed: {peers.describe(e)}")
                continue
            # the sample's own kernels first (PyTorch's and copies after), slowest first
            top = sorted(kernels.items(), key=lambda kv: (_library_work(kv[0]), -kv[1]))[:4]
            shown = ", ".join(f"{k[:40]} {v:.4f}" for k, v in top)
            print(f"{case.title[:34]:34} {name[:44]:44} {wall:9.4f} {sum(kernels.values()):9.4f}  {shown}", flush=True)
            del problem, run
    return 0


if __name__ == "__main__":
    sys.exit(main())
