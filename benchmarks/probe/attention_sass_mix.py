"""The instruction mix of the K/V loop of cuTile's attention sample as tileworkbench compiles it. No GPU needed.

    python3 benchmarks/probe/attention_sass_mix.py CUTILE_SAMPLES_DIR [--arch sm_90] [--d 64] [--dtype float16]
        [--causal] [--listing]

Specializes `fmha_kernel` of AttentionFMHA.py (as benchmarks/attention.py launches it: tiles 128x128,
B=4 H=16 S=4096) with NumPy arrays, compiles it with NVRTC, disassembles it with nvdisasm and counts
the instructions of the K/V loop (the outermost backward branch around the tensor-core mmas) by
class. A flash-attention loop should be mma, exp (MUFU) and float arithmetic; integer and select
work in it is overhead. --listing prints the loop's instructions as well.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Instruction class by opcode (before the first '.'); the first class whose opcodes include it.
CLASSES = {
    "tensor-core mma": {"HGMMA", "HMMA", "WARPGROUP"},
    "exp (MUFU)": {"MUFU"},
    "float arithmetic": {"FFMA", "FMUL", "FADD", "FFMA2", "FMUL2", "FADD2"},
    "float min/max": {"FMNMX"},
    "float compare/select": {"FSETP", "FSEL", "FSET", "FCHK"},
    "conversion": {"F2F", "F2FP", "F2I", "I2F", "I2FP", "FRND"},
    "integer/logic": {"IMAD", "IADD3", "LOP3", "SHF", "ISETP", "SEL", "PRMT", "LEA", "IABS", "IMNMX", "POPC",
                      "FLO", "BMSK", "SGXT", "LOP", "SHL", "SHR", "IADD", "IMUL", "VIADD", "VIMNMX"},
    "uniform datapath": {"UIADD3", "UIMAD", "ULOP3", "USHF", "UISETP", "USEL", "UMOV", "ULEA", "UPRMT",
                         "R2UR", "S2UR", "ULDC", "UFLO", "USGXT", "UBMSK", "UPOPC", "UIMNMX", "UVIADD"},
    "moves": {"MOV", "S2R", "CS2R", "P2R", "R2P", "PLOP3", "VOTE", "VOTEU"},
    "shuffle": {"SHFL"},
    "shared memory": {"LDS", "STS", "LDSM", "STSM", "ATOMS"},
    "global memory": {"LDG", "STG", "LDGSTS", "LDGDEPBAR", "DEPBAR"},
    "mbarrier/TMA": {"SYNCS", "UTMALDG", "UTMASTG", "UBLKCP", "UTMAPF", "UTMACCTL"},
    "barrier/fence": {"BAR", "MEMBAR", "FENCE", "ERRBAR", "CCTL"},
    "control flow": {"BRA", "BSSY", "BSYNC", "WARPSYNC", "EXIT", "RET", "CALL", "NOP", "YIELD", "ELECT",
                     "BREAK", "BPT"},
}
_LABEL = re.compile(r"^(\.L_x_\d+):")
_INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]+)\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)(.*?);")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")


def fmha_specialization(samples: Path, d: int, dtype: str, causal: bool, batch=4, heads=16, seq=4096):
    from published import load
    kernel = load(samples / "AttentionFMHA.py", ["fmha_kernel"], cuda_tile="tileworkbench").fmha_kernel
    x = np.zeros((batch, heads, seq, d), np.dtype(dtype))
    return kernel.specialize((x, x, x, x, 1.0 / math.sqrt(d), 0, d, heads, 128, 128, 1, causal, seq % 128 == 0))


def instructions(listing: str) -> tuple[list[tuple[int, str, str]], dict[str, int]]:
    """(offset, opcode, operands) of each instruction of a one-kernel listing, and each label's offset."""
    found, labels, pending = [], {}, []
    for line in listing.splitlines():
        if m := _LABEL.match(line):
            pending.append(m.group(1))
        elif m := _INSTRUCTION.match(line):
            offset = int(m.group(1), 16)
            labels.update((label, offset) for label in pending)
            pending = []
            found.append((offset, m.group(2), m.group(3).strip()))
    return found, labels


def main_loop(found, labels) -> list[tuple[int, str, str]]:
    """The instructions of the outermost loop (a backward branch's span) that holds a tensor-core mma. The
    retries of barrier waits placed after the kernel's exit branch back into the loop: not loops."""
    mma = [offset for offset, opcode, _ in found if opcode.split(".")[0] in ("HGMMA", "HMMA")]
    exits = [offset for offset, opcode, _ in found if opcode.startswith("EXIT")]
    spans = [(labels[t.group(1)], offset) for offset, opcode, operands in found
             if opcode.startswith("BRA") and (t := _TARGET.search(operands)) and labels[t.group(1)] <= offset]
    spans = [(start, end) for start, end in spans
             if any(start <= m <= end for m in mma) and not any(start <= e <= end for e in exits)]
    if not spans:
        raise SystemExit("no loop around a tensor-core mma in this kernel")
    start, end = max(spans, key=lambda s: s[1] - s[0])
    return [i for i in found if start <= i[0] <= end]


def classify(loop) -> Counter:
    counts = Counter()
    for _, opcode, _ in loop:
        base = opcode.split(".")[0]
        counts[next((name for name, opcodes in CLASSES.items() if base in opcodes), f"other ({base})")] += 1
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("samples", type=Path, help="cuTile's samples/ folder")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--listing", action="store_true", help="print the loop's instructions too")
    args = parser.parse_args(argv)
    if args.dtype == "bfloat16":
        import ml_dtypes
        args.dtype = ml_dtypes.bfloat16
    from tileworkbench.runtime.launch import build
    compiled = build(fmha_specialization(args.samples, args.d, args.dtype, args.causal), args.arch)
    loop = main_loop(*instructions(compiled.asm["sass"]))
    if args.listing:
        print("\n".join(f"/*{offset:04x}*/ {opcode} {operands}" for offset, opcode, operands in loop))
    counts = classify(loop)
    resources = compiled.resources
    print(f"fmha_kernel d{args.d} {np.dtype(args.dtype).name} causal={args.causal} {args.arch}: "
          f"K/V loop of {len(loop)} instructions; {resources.registers} registers/thread, "
          f"{resources.spill_stores} bytes spilled, {resources.spill_loads} reloaded")
    for name, count in counts.most_common():
        print(f"  {name:24} {count:5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
