"""SASS, the GPU's own instructions, from a compiled cubin, per kernel source line. No GPU needed.

NVIDIA's disassembler (`nvdisasm`, from the `nvidia-cuda-nvdisasm` wheel, or a CUDA toolkit) reads the
cubin; NVRTC compiled it with `-lineinfo`, and the generated CUDA carries `#line` directives, so each
instruction's outermost source location is a line of the kernel (or of the generated setup code).

    for line in sass_by_line(kernel.specialize(args), arch="sm_90"):
        line.line, line.source, line.counts["LDG"], line.global_load_bits, line.spills
    print(interleaved(sass_by_line(...)))   # each source line, then its instructions
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# What a line's instructions are counted as: opcode (before the first '.') -> kind
KINDS = {
    "LDG": "global load", "STG": "global store", "LDGSTS": "global to shared (cp.async)",
    "LDS": "shared load", "STS": "shared store", "LDSM": "shared load (ldmatrix)",
    "LDL": "local load (spill)", "STL": "local store (spill)",
    "HMMA": "tensor-core mma", "HGMMA": "tensor-core mma (wgmma)", "IMMA": "tensor-core mma (integer)",
    "BAR": "barrier", "SHFL": "warp shuffle",
}
_WIDTH = re.compile(r"\.(?:U|S)?(8|16|32|64|128)\b")
_INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]+)\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)(.*?);")
_LOCATION = re.compile(r'^\s*//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?')
_FUNCTION = re.compile(r"^\s*\.section\s+\.text\.([^,]+),")


class SassUnavailableError(RuntimeError):
    """nvdisasm is not installed."""


@dataclass(frozen=True)
class Instruction:
    offset: int
    opcode: str              # with modifiers: "LDG.E.128.CONSTANT"
    operands: str
    file: str | None         # the outermost source location (after inlining)
    line: int | None

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def bits(self) -> int:
        """Width of a memory access in bits (32 unless a modifier says otherwise)."""
        widths = _WIDTH.findall(self.opcode)
        return int(widths[-1]) if widths else 32


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
    """Instructions per kernel of an `nvdisasm -gi` listing. Each instruction takes the location printed
    last before it without 'inlined at': the call site in the outermost function."""
    kernels: dict[str, list[Instruction]] = {}
    current, file, line = None, None, None
    for text_line in text.splitlines():
        if m := _FUNCTION.match(text_line):
            current, file, line = m.group(1), None, None
            kernels[current] = []
        elif m := _LOCATION.match(text_line):
            if m.group(3) is None:
                file, line = m.group(1), int(m.group(2))
        elif current is not None and (m := _INSTRUCTION.match(text_line)):
            kernels[current].append(Instruction(int(m.group(1), 16), m.group(2), m.group(3).strip(), file, line))
    return kernels


def sass_by_line(fn, *, arch: str = "sm_90", threads: int | None = None) -> list[LineSass]:
    """The SASS of one specialization compiled for `arch`, grouped by kernel source line (in line
    order; the setup code the generator adds, such as reading the array parameters, last as line None)."""
    from .launch import build
    generated, module = build(fn, arch, threads)
    return group_by_line(fn, generated, parse_listing(disassemble(module.cubin))[generated.name])


def group_by_line(fn, generated, instructions: list[Instruction]) -> list[LineSass]:
    """Kernel lines come through the generated code's line map (later statements of one source line
    carry the next line numbers). NVRTC names the inlined-at file of a library call by its own program
    name rather than the kernel's file; such a location counts where its line is a kernel line."""
    lines = {op.loc.line: op.loc.source_line for op in fn.walk() if op.loc is not None}
    kernel_file = next((op.loc.filename for op in fn.walk() if op.loc is not None), None)
    groups: dict[int | None, LineSass] = {}
    for instruction in instructions:
        line = generated.line_map.get((kernel_file, instruction.line), instruction.line)
        if instruction.file != kernel_file and not (instruction.file or "").endswith(".cu"):
            line = None
        key = line if line in lines else None
        groups.setdefault(key, LineSass(key, lines.get(key, "(setup)"))).instructions.append(instruction)
    return sorted(groups.values(), key=lambda g: (g.line is None, g.line or 0))


def interleaved(lines: list[LineSass]) -> str:
    """The SASS listing under the kernel source lines it came from (as `sass_by_line` groups it):

        // line 7: i = ct.bid(0)
                /*0010*/  S2R R0, SR_CTAID.X;
    """
    out = []
    for group in lines:
        where = f"line {group.line}: {group.source.strip()}" if group.line is not None else \
            "setup code of the generated kernel (parameters, indices)"
        out.append(f"// {where}  [{len(group.instructions)} instructions]")
        out += [f"        /*{i.offset:04x}*/  {' '.join(filter(None, (i.opcode, i.operands)))};"
                for i in group.instructions]
    return "\n".join(out) + "\n"
