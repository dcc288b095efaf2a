"""What the layer norm kernel's speed depends on: tileworkbench.kernels.layernorm on a 32768 x 4096
bfloat16 input (the peer benchmark's case), its generated code launched as generated and under
variants of the code generator's choices: threads per block, a register cap by
__launch_bounds__(threads, blocks per SM), and the loads of w and b placed after the variance
instead of at the top. Each against a copy of the same bytes (CUDA events, L2 flushed, medians).

    python3 benchmarks/probe/layernorm_variants.py        # needs PyTorch and a GPU
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def median_ms(run, torch, repetitions=40) -> float:
    scrub = torch.empty(200 << 20, dtype=torch.uint8, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repetitions):
        scrub.zero_()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    return sorted(samples)[len(samples) // 2]


def loads_of_w_and_b_after_the_variance(source: str) -> str:
    lines = source.split("\n")
    moved = [k for k, line in enumerate(lines) if "tw::load<tw::shape<4096>>(w," in line
             or "tw::load<tw::shape<4096>>(b," in line]
    kept = [line for k, line in enumerate(lines) if k not in moved]
    at = next(k for k, line in enumerate(kept) if "var = " in line) + 1
    return "\n".join(kept[:at] + [lines[k] for k in moved] + kept[at:])


def bounds(threads: int, blocks: int):
    return lambda source: source.replace(f"__launch_bounds__({threads})", f"__launch_bounds__({threads}, {blocks})")


VARIANTS = [  # (name, threads or None for the generator's choice, source edit)
    ("as generated", None, lambda source: source),
    ("128 threads", 128, lambda source: source),
    ("512 threads", 512, lambda source: source),
    ("1024 threads", 1024, lambda source: source),
    ("cap: 5 blocks of 256", None, bounds(256, 5)),
    ("cap: 6 blocks of 256", None, bounds(256, 6)),
    ("cap: 6 blocks of 128", 128, bounds(128, 6)),
    ("cap: 8 blocks of 128", 128, bounds(128, 8)),
    ("w, b loaded after the variance", None, loads_of_w_and_b_after_the_variance),
    ("the same, cap: 5 blocks of 256", None,
     lambda source: bounds(256, 5)(loads_of_w_and_b_after_the_variance(source))),
]


def main() -> int:
    import torch

    import tileworkbench.runtime.launch as runtime
    import tileworkbench.tile as ct
    from tileworkbench.kernels import layernorm
    rows, cols = 32768, 4096
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w, b = torch.randn(cols, device="cuda", dtype=torch.bfloat16), torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    expected = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float(), 1e-5)
    copy = median_ms(lambda: y.copy_(x), torch)
    print(f"{torch.cuda.get_device_name()}; copy of the same bytes {copy:.4f} ms")
    print(f"{'variant':34} {'threads':>7} {'regs':>5} {'spills':>6} {'ms':>8} {'x copy':>7} {'max error':>10}")
    generate, stream = runtime.generate, torch.cuda.current_stream()
    try:
        for name, threads, edit in VARIANTS:
            def variant(fn, *args, edit=edit, forced=threads, **options):
                options["threads"] = forced or options.get("threads")
                generated = generate(fn, *args, **options)
                return dataclasses.replace(generated, source=edit(generated.source))
            runtime.generate = variant
            runtime._loaded.clear()  # loaded kernels are keyed on the program, not on its generated code
            kernel = ct.kernel(layernorm.__wrapped__)
            args = (x, w, b, y, cols)
            ct.launch(stream, (rows,), kernel, args)
            torch.cuda.synchronize()
            error = (y.float() - expected).abs().max().item()
            ms = median_ms(lambda: ct.launch(stream, (rows,), kernel, args), torch)
            launched = kernel.last_launcher.gpu
            r = launched.resources
            print(f"{name:34} {launched.generated.threads:7} {r.registers:5} {r.spill_stores:6} {ms:8.4f} "
                  f"{copy / ms:7.3f} {error:10.3g}", flush=True)
    finally:
        runtime.generate = generate
        runtime._loaded.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
