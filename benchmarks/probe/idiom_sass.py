"""What the generator makes of each memory-bound idiom, read on a machine without a GPU: for every kernel of
benchmarks/idioms.py at its benchmark size, compiled with NVRTC for sm_90, the threads per block, registers,
blocks per SM, local memory and spills, and the global loads and stores in its SASS counted by width
(LDG.E.128 moves 16 bytes, LDG.E.U16 two, ...; "nc": through the read-only cache, LDG...CONSTANT), so that
a change to the code generator can be compared before and after.

    python3 benchmarks/probe/idiom_sass.py                       # bf16 and f32 (a minute or two: several compiles each)
    python3 benchmarks/probe/idiom_sass.py --dtypes float16 --only softmax --arch sm_80

Counts are of instructions in the listing, not of instructions executed: a loop body counts once, and a chunk's
paths (aligned, shifted, element by element at an edge) count each.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

MEMORY = re.compile(r"^(LDG|STG)\b")


def width(opcode: str) -> str:
    """The bytes one global load or store moves, from its SASS modifiers (LDG.E.128 -> "128",
    LDG.E.U16 -> "16", LDG.E -> "32")."""
    for mod in opcode.split(".")[1:]:
        if mod in ("128", "64", "U16", "S16", "U8", "S8"):
            return mod.lstrip("US")
    return "32"


def facts(compiled) -> dict:
    counts = Counter()
    for ins in compiled.instructions:
        if MEMORY.match(ins.opcode):  # (nc: through the read-only cache, LDG...CONSTANT)
            counts[f"{ins.base}.{width(ins.opcode)}" + ("nc" if ins.opcode.endswith(".CONSTANT") else "")] += 1
    return {"threads": compiled.threads, "regs": compiled.registers, "blocks": compiled.occupancy.blocks_per_sm,
            "local": compiled.local_bytes, "spills": (compiled.spill_stores or 0) + (compiled.spill_loads or 0),
            "memory": counts}


def _shaped(idiom, dtype):
    """Host arrays of the idiom's shapes and dtypes (contents unused: only their types specialize)."""
    import numpy as np

    from benchmarks.idioms import _numpy_dtype
    return {k: np.lib.stride_tricks.as_strided(np.zeros(1, _numpy_dtype(d or dtype)), shape, [0] * len(shape))
            for k, (shape, d) in idiom.arrays.items()}


def main(argv=None) -> int:
    import tileworkbench.runtime.launch as runtime
    from benchmarks import idioms
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args(argv)
    only = tuple(w for w in args.only.split(",") if w)
    module = idioms.load_kernels("tileworkbench")
    print(f"{'idiom':36} {'dtype':9} {'threads':>7} {'regs':>4} {'blocks':>6} {'local':>5} {'spills':>6}  "
          "global loads/stores by bits")
    for idiom in idioms.idioms(smoke=False):
        if only and not any(w in idiom.name for w in only):
            continue
        for dtype in args.dtypes.split(","):
            arrays = _shaped(idiom, dtype)
            fn = getattr(module, idiom.kernel).specialize(idiom.args(arrays))
            f = facts(runtime.build(fn, args.arch))
            memory = " ".join(f"{k}x{v}" for k, v in sorted(f["memory"].items()))
            print(f"{idiom.name:36} {dtype:9} {f['threads']:7} {f['regs']:4} {f['blocks']:6} {f['local']:5} "
                  f"{f['spills']:6}  {memory}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
