"""Threads per block for the memory-bound idioms: each kernel of benchmarks/idioms.py (bf16 unless
--dtypes says otherwise) generated with the generator's own thread count and with 64, 128, 256 and
512, checked as idioms.py checks it and timed against a copy of the same bytes (CUDA events, L2
flushed, medians). What `codegen.cuda.choose_threads` should pick for 16-bit rows is read here.

    python3 benchmarks/probe/idiom_threads.py                  # needs PyTorch and a GPU (< 1 min)
    python3 benchmarks/probe/idiom_threads.py --only softmax --dtypes bfloat16,float32
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

THREADS = (None, 64, 128, 256, 512)  # None: the generator's choice


def main(argv=None) -> int:
    import torch

    import tileworkbench.runtime.launch as runtime
    import tileworkbench.tile as ct
    from benchmarks import idioms
    from benchmarks.peers import Timer, describe
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="softmax,swiglu,silu,dropout")
    parser.add_argument("--dtypes", default="bfloat16")
    args = parser.parse_args(argv)
    only, dtypes = tuple(args.only.split(",")), tuple(args.dtypes.split(","))
    timer, sms, stream = Timer(), torch.cuda.get_device_properties().multi_processor_count, torch.cuda.current_stream()
    generator = torch.Generator(device="cuda").manual_seed(0)
    print(f"{torch.cuda.get_device_name()}")
    print(f"{'idiom':40} {'dtype':9} {'threads':>7} {'regs':>5} {'us':>8} {'GB/s':>6} {'x copy':>7}")
    generate = runtime.generate
    try:
        for idiom in idioms.idioms(smoke=False):
            if not any(w in idiom.name for w in only):
                continue
            for dtype in dtypes:
                arrays = idioms._device_arrays(idiom, dtype, generator)
                nbytes = idiom.nbytes(dtype)
                source = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
                target = torch.empty_like(source)
                copy = sorted(timer.samples(lambda: target.copy_(source), 20))[10]
                for threads in THREADS:
                    def variant(fn, *a, forced=threads, **options):
                        options["threads"] = forced or options.get("threads")
                        return generate(fn, *a, **options)
                    runtime.generate = variant
                    runtime._loaded.clear()  # loaded kernels are keyed on the program, not its generated code
                    # a new kernel object: no launcher of another variant is reused
                    kernel = getattr(idioms.load_kernels("tileworkbench"), idiom.kernel).replace_hints()
                    grid, launch_args = idiom.grid(arrays, sms), idiom.args(arrays)

                    def run():
                        ct.launch(stream, grid, kernel, launch_args)
                    try:
                        for k in idiom.outputs:
                            arrays[k].fill_(float("nan"))
                        run()
                        torch.cuda.synchronize()
                        reason = idioms.check(idiom, idioms._host(arrays, idiom), dtype)
                        if reason:
                            print(f"{idiom.name:40} {dtype:9} {threads or '-':>7} wrong: {reason}")
                            continue
                        ms = sorted(timer.samples(run, 20))[10]
                        gpu = kernel.last_launcher.gpu
                        print(f"{idiom.name:40} {dtype:9} {gpu.compiled.threads:7} {gpu.compiled.registers:5} "
                              f"{ms * 1e3:8.1f} {nbytes / ms / 1e6:6.0f} {copy / ms:7.2f}"
                              + ("  (generator's choice)" if threads is None else ""), flush=True)
                    except Exception as e:
                        print(f"{idiom.name:40} {dtype:9} {threads or '-':>7} failed: {describe(e)}")
                del arrays
    finally:
        runtime.generate = generate
        runtime._loaded.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
