"""The one record of a compiled kernel: what every tool reads instead of recomputing it.

    >>> compiled = build(fn, "sm_90")                   # runtime.launch.build: a tile kernel
    >>> compiled.registers, compiled.shared_bytes, compiled.occupancy.limiter
    (32, 4096, 'warps')
    >>> compiled.asm["cuda"], compiled.asm["ptx"], compiled.asm["sass"]   # SASS disassembled on first read

As Triton's CompiledKernel: every stage's text by name (`asm`: "ir" for tile kernels, "cuda", "ptx",
"log", and "sass" on demand), the resources the cubin records (registers, static shared and local
bytes) with ptxas's spill counts, the shared memory a block needs (static plus dynamic), the
theoretical occupancy (computed once, here, from those resources and the arch's limits in targets.py),
the code generator's notes, and what the launcher needs (the cubin, the entry's name, the block size,
the tensor maps). Tile kernels (runtime.launch.build) and C++ cells (runtime.cpp) make the same
record; `CompiledKernel.from_cubin` fills one from a cubin and the texts that led to it.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from .cubin import Resources, read_resources, with_spills
from .occupancy import Occupancy, percent, theoretical_occupancy

STAGES = ("ir", "cuda", "ptx", "sass", "log")  # the texts a record may hold, in pipeline order


@dataclass(frozen=True, eq=False)
class CompiledKernel:
    """One kernel compiled for one arch, with everything known about it (see the module docstring)."""

    name: str                       # the entry's name in the cubin (mangled unless extern "C")
    kernel: str                     # the name a user knows it by: the tile kernel's, the C++ expression
    arch: str                       # what it was compiled for ("sm_90a" where the code needs it)
    cubin: bytes = field(repr=False)
    resources: Resources
    threads: int                    # per block: the generator's choice, or the block a C++ cell launches with
    dynamic_shared_bytes: int = 0   # asked for at launch, on top of the static shared memory
    texts: Mapping[str, str] = field(default_factory=dict, repr=False)  # stage -> text, STAGES but "sass"
    notes: tuple = ()               # (kernel line, text): what the code generator did that costs time, and why
    tensor_maps: tuple = ()         # the CUtensorMap parameters the launcher encodes (codegen TensorMapParam)
    generated: object = field(default=None, repr=False)  # tile kernels: codegen's GeneratedKernel (line map, plan)
    occupancy: Occupancy = field(init=False)

    def __post_init__(self):
        occupancy = theoretical_occupancy(self.arch, self.threads, self.resources.registers, self.shared_bytes)
        object.__setattr__(self, "occupancy", occupancy)

    @classmethod
    def from_cubin(cls, name: str, cubin: bytes, arch: str, threads: int, *, kernel: str | None = None,
                   texts: Mapping[str, str] | None = None, resources: Resources | None = None,
                   **fields) -> CompiledKernel:
        """The record of the entry `name` of `cubin`, launched with `threads` per block: its resources
        (unless given) read from the cubin, with the spill counts ptxas printed where `texts["log"]`
        holds its `-v` report. `fields`: the dataclass's other fields (dynamic_shared_bytes, notes, ...)."""
        texts = dict(texts or {})
        if resources is None:
            resources = with_spills(read_resources(cubin), texts.get("log", ""))[name]
        return cls(name, kernel or name, arch, cubin, resources, threads, texts=texts, **fields)

    @property
    def registers(self) -> int:
        return self.resources.registers

    @property
    def static_shared_bytes(self) -> int:
        return self.resources.shared_static_bytes

    @property
    def shared_bytes(self) -> int:
        """Shared memory per block: static (in the cubin) plus dynamic (asked for at launch)."""
        return self.resources.shared_static_bytes + self.dynamic_shared_bytes

    @property
    def local_bytes(self) -> int:
        return self.resources.local_bytes

    @property
    def spill_stores(self) -> int | None:
        return self.resources.spill_stores

    @property
    def spill_loads(self) -> int | None:
        return self.resources.spill_loads

    @property
    def asm(self) -> Mapping[str, str]:
        """Every stage's text by name; "sass" is disassembled (nvdisasm) when first read."""
        return _Stages(self)

    @functools.cached_property
    def sass(self) -> str:
        """nvdisasm's listing of the cubin (raises runtime.sass.SassUnavailableError without nvdisasm)."""
        from .sass import disassemble
        return disassemble(self.cubin)

    @functools.cached_property
    def instructions(self) -> list:
        """The entry's SASS instructions (runtime.sass.Instruction), parsed once."""
        from .sass import parse_listing
        return parse_listing(self.sass)[self.name]

    def resources_text(self) -> str:
        """The resources and occupancy as aligned lines of text (what `--show resources` prints)."""
        o = self.occupancy
        lines = [
            f"kernel            {self.name}",
            f"arch              {self.arch}",
            f"threads/block     {self.threads}",
            f"registers         {self.registers}",
            f"shared (dynamic)  {self.dynamic_shared_bytes} bytes",
            f"shared (static)   {self.static_shared_bytes} bytes",
            f"local memory      {self.local_bytes} bytes",
            f"spill stores      {self.spill_stores}",
            f"spill loads       {self.spill_loads}",
            f"occupancy         {o.blocks_per_sm} blocks, {o.warps_per_sm} warps per SM "
            f"({percent(o.occupancy)}), limited by {o.limiter}",
        ]
        return "\n".join(lines) + "\n"


class _Stages(Mapping):
    """A record's texts by stage, SASS read lazily."""

    def __init__(self, compiled: CompiledKernel):
        self._compiled = compiled

    def __getitem__(self, stage: str) -> str:
        if stage == "sass":
            return self._compiled.sass
        return self._compiled.texts[stage]

    def __iter__(self):
        return iter([s for s in STAGES if s == "sass" or s in self._compiled.texts])

    def __len__(self) -> int:
        return len(list(iter(self)))
