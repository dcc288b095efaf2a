"""SASS, the GPU's own instructions, from a compiled cubin, per kernel source line. No GPU needed.

NVIDIA's disassembler (`nvdisasm`, from the `nvidia-cuda-nvdisasm` wheel, or a CUDA toolkit) reads the
cubin; NVRTC compiled it with `-lineinfo`, and the generated CUDA carries `#line` directives, so each
instruction's chain of locations (through the inlined tile library) names a line of the kernel, or none
(the generated setup code).

    for line in sass_by_line(kernel.specialize(args), arch="sm_90"):
        line.line, line.source, line.counts["LDG"], line.classes["memory"], line.spills
    print(listing_text(sass_listing(kernel.specialize(args))))   # program order, runs under their lines
    print(listing_text(sass_listing(kernel.specialize(args), order="line")))   # each line, then its SASS
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

MEMORY, TENSOR, OTHER = "memory", "tensor", "other"
# The class an opcode (before the first '.') counts as in a line's summary; any other opcode is OTHER.
# Constant-bank reads (LDC, ULDC) are not memory traffic.
CLASSES = {
    **dict.fromkeys(("LDG", "STG", "LD", "ST", "ATOM", "ATOMG", "RED", "REDG"), MEMORY),      # global
    **dict.fromkeys(("LDS", "STS", "LDSM", "STSM", "ATOMS"), MEMORY),                          # shared
    **dict.fromkeys(("LDGSTS", "UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UBLKCP", "UBLKPF", "UBLKRED"),
                    MEMORY),                                             # cp.async, TMA and bulk copies
    **dict.fromkeys(("LDL", "STL"), MEMORY),                                                   # local (spills)
    **dict.fromkeys(("HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "BMMA", "BGMMA", "DMMA"), TENSOR),
}
JUMPS = ("BRA", "BRX", "JMP", "JMX")   # transfers to a label within the kernel; a backward one closes a loop
ORDERS = ("program", "line")
_WIDTH = re.compile(r"\.(?:U|S)?(8|16|32|64|128)\b")
_INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]+)\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)(.*?)\s*;")
_LOCATION = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')
_FUNCTION = re.compile(r"^\s*\.section\s+\.text\.([^,]+),")
_LABEL = re.compile(r"^(\.L_\w+):")
_TARGET = re.compile(r"`\((\.L_\w+)\)")


class SassUnavailableError(RuntimeError):
    """nvdisasm is not installed."""


@dataclass(frozen=True)
class Instruction:
    offset: int
    opcode: str              # with modifiers: "LDG.E.128.CONSTANT"
    operands: str
    file: str | None         # the outermost source location (after inlining)
    line: int | None
    predicate: str = ""      # "@!P0": the instruction runs only where P0 is false
    labels: tuple[str, ...] = ()   # the labels at its address, which jumps name as their target
    inlined: tuple[tuple[str, int], ...] = ()   # (file, line) from the innermost inlined call out to (file, line)

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def category(self) -> str:
        """MEMORY, TENSOR or OTHER (see CLASSES)."""
        return CLASSES.get(self.base, OTHER)

    @property
    def target(self) -> str | None:
        """The label a jump goes to (".L_x_3"); None for any other instruction."""
        found = _TARGET.search(self.operands) if self.base in JUMPS else None
        return found.group(1) if found else None

    @property
    def bits(self) -> int:
        """Width of a memory access in bits (32 unless a modifier says otherwise)."""
        widths = _WIDTH.findall(self.opcode)
        return int(widths[-1]) if widths else 32

    @property
    def text(self) -> str:
        """As nvdisasm prints it: "@!P0 BRA `(.L_x_0)"."""
        return " ".join(filter(None, (self.predicate, self.opcode, self.operands)))


@dataclass
class LineSass:
    """The instructions of one kernel source line (line None: the generated setup code)."""
    line: int | None
    source: str
    instructions: list[Instruction] = field(default_factory=list)

    @property
    def counts(self) -> Counter:
        """Instructions by opcode (before the first '.'), e.g. counts["LDG"]."""
        return Counter(i.base for i in self.instructions)

    @property
    def classes(self) -> dict[str, int]:
        """Instructions by class: {"memory": 4, "tensor": 0, "other": 12}."""
        found = Counter(i.category for i in self.instructions)
        return {name: found[name] for name in (MEMORY, TENSOR, OTHER)}

    def _bits(self, base: str) -> dict[int, int]:
        return dict(sorted(Counter(i.bits for i in self.instructions if i.base == base).items()))

    @property
    def global_load_bits(self) -> dict[int, int]:
        """LDG instructions by access width in bits, e.g. {128: 2, 32: 8}."""
        return self._bits("LDG")

    @property
    def global_store_bits(self) -> dict[int, int]:
        return self._bits("STG")

    @property
    def shared(self) -> int:
        return sum(self.counts[k] for k in ("LDS", "STS", "LDSM", "LDGSTS"))

    @property
    def mma(self) -> int:
        return sum(self.counts[k] for k in ("HMMA", "HGMMA", "IMMA"))

    @property
    def spills(self) -> int:
        """Local-memory loads and stores: registers spilled (or arrays the compiler put in local memory)."""
        return self.counts["LDL"] + self.counts["STL"]


@dataclass(frozen=True)
class Samples:
    """What a profiler measured at one instruction: warp stall samples (all of them, and by reason)."""
    samples: float
    stalls: dict[str, float] = field(default_factory=dict)   # reason -> samples, most first
    instruction: str = ""                                    # the instruction as the profiler printed it


def find_nvdisasm() -> str | None:
    """nvdisasm from the nvidia-cuda-nvdisasm wheel, else on PATH, else in $CUDA_HOME/bin."""
    try:
        import nvidia
        for root in nvidia.__path__:
            for candidate in sorted(Path(root).glob("cu*/bin/nvdisasm")):
                return str(candidate)
    except ImportError:
        pass
    found = shutil.which("nvdisasm")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvdisasm").exists():
        return str(Path(home) / "bin" / "nvdisasm")
    return None


def disassemble(cubin: bytes) -> str:
    """nvdisasm's listing of a cubin's code, annotated with source locations (inlining included)."""
    tool = find_nvdisasm()
    if tool is None:
        raise SassUnavailableError("SASS needs nvdisasm: pip install nvidia-cuda-nvdisasm "
                                   "(or the `nvrtc` extra: pip install 'tileworkbench[nvrtc]')")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([tool, "-c", "-gi", str(path)], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise SassUnavailableError(f"nvdisasm could not read the cubin: {done.stderr.strip()}")
    return done.stdout


def parse_listing(text: str) -> dict[str, list[Instruction]]:
    """Instructions per kernel of an `nvdisasm -gi` listing, in cubin order. nvdisasm prints a location
    where it changes, as a chain from the innermost inlined function out to the kernel function:

        //## File "tile_memory.cuh", line 110 inlined at "kernel.py", line 11
        //## File "kernel.py", line 11
    """
    kernels: dict[str, list[Instruction]] = {}
    current, chain, labels, after_instruction = None, [], [], True
    for text_line in text.splitlines():
        if m := _FUNCTION.match(text_line):
            current, chain, labels = m.group(1), [], []
            kernels[current] = []
        elif m := _LOCATION.match(text_line):
            chain = [] if after_instruction else chain
            chain.append((m.group(1), int(m.group(2))))
            after_instruction = False
        elif m := _LABEL.match(text_line):
            labels.append(m.group(1))
        elif current is not None and (m := _INSTRUCTION.match(text_line)):
            file, line = chain[-1] if chain else (None, None)
            kernels[current].append(Instruction(int(m.group(1), 16), m.group(3), m.group(4).strip(), file, line,
                                                (m.group(2) or "").strip(), tuple(labels), tuple(chain)))
            labels, after_instruction = [], True
    return kernels


def sass_by_line(fn, *, arch: str = "sm_90", threads: int | None = None) -> list[LineSass]:
    """The SASS of one specialization compiled for `arch`, grouped by kernel source line (in line
    order; the setup code the generator adds, such as reading the array parameters, last as line None)."""
    generated, instructions = _compiled(fn, arch, threads)
    return group_by_line(fn, generated, instructions)


def sass_listing(fn, *, arch: str = "sm_90", order: str = "program", threads: int | None = None,
                 samples: Mapping[int, Samples] | None = None) -> list[Row]:
    """The SASS of one specialization as rows to print (`listing_text`), in program order or by line
    (see `listing`)."""
    generated, instructions = _compiled(fn, arch, threads)
    return listing(fn, generated, instructions, order, samples)


def _compiled(fn, arch: str, threads: int | None) -> tuple:
    from .launch import build
    compiled = build(fn, arch, threads)
    return compiled.generated, compiled.instructions


def _kernel_line(fn, generated):
    """The kernel lines ({line: source}) and a function giving an instruction's kernel line, else None
    (the generated code). Generated statements carry their kernel line's number (GeneratedKernel.line_map),
    the generated code's own lines count from GENERATED_LINES. In an instruction's inlining chain:

    - the innermost location in the kernel's file that is a kernel line wins: a load issued by the
      pipeline helper counts on the load's line (in the lambda that helper calls), not the loop's;
    - else the outermost location, the kernel function's own statement, if one was inlined at it or
      it lies in the program (kernel.cu). NVRTC names the file of such a call site unreliably (the
      program, or a header the kernel includes) but keeps its number, which the line map checks.
    """
    lines = {op.loc.line: op.loc.source_line for op in fn.walk() if op.loc is not None}
    kernel_file = next((op.loc.filename for op in fn.walk() if op.loc is not None), None)
    from ..codegen.cuda import line_file
    named = line_file(kernel_file) if kernel_file is not None else None

    def kernel_line(number: int) -> int | None:
        line = generated.line_map.get((kernel_file, number))
        return line if line in lines else None

    def line_of(instruction: Instruction) -> int | None:
        chain = instruction.inlined
        found = next((kernel_line(n) for file, n in chain if file == named and kernel_line(n)), None)
        if found is None and chain and (len(chain) > 1 or chain[-1][0].endswith(".cu")):
            found = kernel_line(chain[-1][1])
        return found
    return lines, line_of


def group_by_line(fn, generated, instructions: list[Instruction]) -> list[LineSass]:
    """Each kernel line's instructions (in cubin order), the lines in line order, the generated code last."""
    lines, line_of = _kernel_line(fn, generated)
    groups: dict[int | None, LineSass] = {}
    for instruction in instructions:
        key = line_of(instruction)
        groups.setdefault(key, LineSass(key, lines.get(key, "(setup)"))).instructions.append(instruction)
    return sorted(groups.values(), key=lambda g: (g.line is None, g.line or 0))


def program_order(fn, generated, instructions: list[Instruction]) -> list[LineSass]:
    """The instructions in cubin order, cut into runs of consecutive instructions of one kernel line
    (line None: generated code). A line the compiler interleaves with others has several runs."""
    lines, line_of = _kernel_line(fn, generated)
    runs: list[LineSass] = []
    for instruction in instructions:
        line = line_of(instruction)
        if not runs or runs[-1].line != line:
            runs.append(LineSass(line, lines.get(line, "(setup)")))
        runs[-1].instructions.append(instruction)
    return runs


def back_edges(instructions: list[Instruction]) -> dict[str, list[int]]:
    """Loops: {label of the loop head: offsets of the jumps back to it}. A jump to its own address (the
    trap after the kernel's last EXIT) is no loop."""
    where = {label: i.offset for i in instructions for label in i.labels}
    edges: dict[str, list[int]] = {}
    for i in instructions:
        if i.target in where and where[i.target] < i.offset:
            edges.setdefault(i.target, []).append(i.offset)
    return edges


@dataclass(frozen=True)
class Row:
    """One printed row of a listing."""
    kind: str                       # "line" (a kernel line heading its instructions), "label" or "instruction"
    text: str
    line: int | None                # the kernel line (None: generated code)
    offset: int | None = None       # of an instruction
    samples: float | None = None    # measured: of the instruction, or the whole line on a heading
    stalls: dict[str, float] = field(default_factory=dict)
    loop: str | None = None         # a jump back to this loop head


HEADING_CHARS = 64   # a heading's source text is padded to this width, so that the line summaries align


def listing(fn, generated, instructions: list[Instruction], order: str = "program",
            samples: Mapping[int, Samples] | None = None) -> list[Row]:
    """Rows to print, in `order`:

    "program": the cubin's order; each run of consecutive instructions of one kernel line under a
        heading with that line, branch labels where they stand, jumps back to a loop head marked.
    "line": each kernel line in line order, then all its instructions (the generated code last).

    A heading ends with the whole line's summary (instructions by class; with `samples`, offset ->
    what a profiler measured there, its stall samples), in either order:

        // line 11: acc = acc + ct.load(x, (k,), (TILE,))        [164 instructions: 12 memory, 0 tensor, 152 other]
                /*02a0*/  VIADD R17, R29, 0xffffff80
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    samples = samples or {}
    _check_samples(instructions, samples)
    whole = {g.line: g for g in group_by_line(fn, generated, instructions)}
    groups = program_order(fn, generated, instructions) if order == "program" else list(whole.values())
    edges = back_edges(instructions)
    head_at = {label: i.offset for i in instructions for label in i.labels if label in edges}
    heads = {offset: label for label, offsets in edges.items() for offset in offsets}
    rows = []
    for group in groups:
        line = whole[group.line]
        measured = sum(samples[i.offset].samples for i in line.instructions if i.offset in samples)
        rows.append(Row("line", _heading(line, measured if samples else None), group.line,
                        samples=measured if samples else None))
        for i in group.instructions:
            if order == "program":
                rows += [Row("label", f"{label}:" + (f"  // loop head: jumped back to from "
                                                       f"{', '.join(f'/*{o:04x}*/' for o in edges[label])}"
                                                       if label in edges else ""), group.line)
                         for label in i.labels]
            loop = heads.get(i.offset)
            rows.append(_instruction_row(i, group.line, loop and (loop, head_at[loop]), samples.get(i.offset)))
    return rows


def _heading(line: LineSass, samples: float | None) -> str:
    where = f"line {line.line}: {line.source.strip()}" if line.line is not None else \
        "generated code, no kernel line (parameters, indices, addresses)"
    count = len(line.instructions)
    summary = f"{count} instruction{'s' * (count != 1)}: " + ", ".join(f"{n} {k}" for k, n in line.classes.items())
    if samples is not None:
        summary += f"; {samples:g} samples"
    return f"// {where}".ljust(HEADING_CHARS) + f"  [{summary}]"


def _instruction_row(i: Instruction, line: int | None, loop: tuple[str, int] | None,
                     measured: Samples | None) -> Row:
    """`loop`: (label, offset) of the loop head this instruction jumps back to."""
    text = f"        /*{i.offset:04x}*/  {i.text};"
    if loop is not None:
        text += f"  // loop: back to {loop[0]} at /*{loop[1]:04x}*/"
    label = loop[0] if loop else None
    if measured is None:
        return Row("instruction", text, line, i.offset, loop=label)
    reasons = ", ".join(f"{reason} {n:g}" for reason, n in list(measured.stalls.items())[:2])
    text = text.ljust(HEADING_CHARS) + f"  [{measured.samples:g} samples" + (f": {reasons}]" if reasons else "]")
    return Row("instruction", text, line, i.offset, measured.samples, measured.stalls, label)


def _check_samples(instructions: list[Instruction], samples: Mapping[int, Samples]) -> None:
    """Measured samples belong to this cubin only if the profiler saw the same instructions at the same
    offsets. Disassemblers of other versions print a few instructions under other names (a MOV as an
    IMAD.MOV), so up to a tenth may differ."""
    at = {i.offset: i.base for i in instructions}
    differ = [(offset, measured) for offset, measured in samples.items()
              if at.get(offset) != _opcode_base(measured.instruction)]
    if len(differ) > len(samples) / 10:
        offset, measured = differ[0]
        raise ValueError(f"the measured samples are of another compile of this kernel: at /*{offset:04x}*/ the "
                         f"profiler saw {measured.instruction.strip()!r}, this cubin has "
                         f"{at.get(offset, 'no instruction')!r} (profile the same kernel, arguments and arch)")


def _opcode_base(instruction: str) -> str | None:
    words = [w for w in instruction.split() if not w.startswith("@")]
    return words[0].rstrip(";").split(".")[0] if words else None


def listing_text(rows: list[Row]) -> str:
    return "\n".join(row.text for row in rows) + "\n"
