"""Per-kernel resource usage read from a cubin (an ELF file) without a GPU, and from `ptxas -v` text.

ptxas writes what the driver needs to launch each kernel into the cubin:

    .nv.info              EIATTR records naming a kernel by its symbol index: REGCOUNT, FRAME_SIZE, ...
    .nv.info.<kernel>     the kernel's own records: MAX_THREADS (from __launch_bounds__), REQNTID, ...
    .nv.shared.<kernel>   an empty (NOBITS) section whose size is the static shared memory
    .nv.local.<kernel>    local memory outside the stack frame (older ABIs only)

An EIATTR record is a format byte, an attribute byte and a 16-bit field; for EIFMT_SVAL that field is
the size of the payload that follows, for the other formats it is the value itself. The cubin does not
record spills: `resources_from_ptxas_log` reads them from `ptxas -v` output (NVRTC's log with
`--ptxas-options=-v`).

    >>> read_resources(module.cubin)["add"]
    Resources(registers=8, shared_static_bytes=0, local_bytes=0, spill_stores=None, spill_loads=None, max_threads=None)
"""
from __future__ import annotations

import math
import re
import struct
from typing import NamedTuple


class Resources(NamedTuple):
    """What one kernel needs per thread (registers, local bytes) and per block (static shared bytes)."""

    registers: int
    shared_static_bytes: int
    local_bytes: int  # the stack frame: local arrays and spills
    spill_stores: int | None = None  # bytes; None where the source (a cubin) does not record them
    spill_loads: int | None = None
    max_threads: int | None = None  # threads per block allowed by __launch_bounds__ / reqntid, if any


# Ids of the EIATTR records read here (cuobjdump -elf prints them by name). Checked against ptxas 13.0
# and NVRTC 13.0/13.5 in tests/runtime/test_cubin.py, and against the driver's function attributes
# (registers, static shared and local bytes, max threads) on an H100.
EIATTR_MAX_THREADS = 0x05
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_REGCOUNT = 0x2F
EIFMT_SVAL = 4

EM_CUDA = 190
SHT_SYMTAB = 2
STT_FUNC = 2
STO_CUDA_ENTRY = 0x10  # st_other bit of kernels (entry functions), as opposed to device functions

# From sm_90 on, ptxas puts the block's 1 KiB of system-reserved shared memory at the start of each
# kernel's shared window, so `.nv.shared.<kernel>` includes it. Neither ptxas -v nor the driver's
# static size (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) counts it; occupancy adds it per block anyway.
# Such cubins carry this section.
RESERVED_SHARED_SECTION = ".nv.shared.reserved."
RESERVED_SHARED_BYTES = 1024

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")


class _Section(NamedTuple):
    """An ELF section header: what the resource reader needs of it."""

    name: str
    type: int
    offset: int
    size: int
    link: int


class _Elf:
    """Just enough of a little-endian ELF64 reader for cubins."""

    def __init__(self, data: bytes):
        if len(data) < _ELF_HEADER.size or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not a cubin: expected a little-endian 64-bit ELF file")
        _, _, machine, _, _, _, shoff, self.flags, _, _, _, shentsize, shnum, shstrndx = _ELF_HEADER.unpack_from(data)
        if machine != EM_CUDA:
            raise ValueError(f"not a cubin: ELF machine {machine}, expected {EM_CUDA} (CUDA)")
        if shoff + shnum * shentsize > len(data):
            raise ValueError("not a cubin: section headers lie past the end of the file (truncated?)")
        self.data = data
        raw = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx]
        self.sections = [_Section(self._string(names[4], s[0]), s[1], s[4], s[5], s[6]) for s in raw]
        self.by_name = {s.name: s for s in self.sections}

    def _string(self, table_offset: int, offset: int) -> str:
        start = table_offset + offset
        return self.data[start:self.data.index(b"\0", start)].decode()

    def contents(self, section: _Section) -> bytes:
        return self.data[section.offset:section.offset + section.size]

    def symbols(self) -> list[tuple[str, int, int]]:
        """(name, st_info, st_other) per symbol, in symbol-index order."""
        table = next(s for s in self.sections if s.type == SHT_SYMTAB)
        strings = self.sections[table.link].offset
        rows = (_SYMBOL.unpack_from(self.data, table.offset + i) for i in range(0, table.size, _SYMBOL.size))
        return [(self._string(strings, name), info, other) for name, info, other, *_ in rows]


def _eiattr_records(payload: bytes):
    """Yield (attribute id, format, payload bytes or inline value) for each record of a .nv.info section."""
    at = 0
    while at + 4 <= len(payload):
        fmt, attribute, field = struct.unpack_from("<BBH", payload, at)
        if fmt == EIFMT_SVAL:
            yield attribute, fmt, payload[at + 4:at + 4 + field]
            at += 4 + field
        else:
            yield attribute, fmt, field
            at += 4


def _u32s(payload: bytes) -> tuple[int, ...]:
    return struct.unpack_from(f"<{len(payload) // 4}I", payload)


def read_resources(cubin: bytes) -> dict[str, Resources]:
    """Resources of every kernel in a cubin, by (mangled) kernel name. Spill counts are None."""
    elf = _Elf(cubin)
    symbols = elf.symbols()
    per_symbol: dict[tuple[int, int], int] = {}  # (attribute, symbol index) -> value
    for section in elf.sections:
        if section.name.startswith(".nv.info"):
            for attribute, fmt, payload in _eiattr_records(elf.contents(section)):
                if fmt == EIFMT_SVAL and len(payload) == 8:
                    symbol, value = _u32s(payload)
                    per_symbol[attribute, symbol] = value
    reserved = RESERVED_SHARED_BYTES if any(s.name.startswith(RESERVED_SHARED_SECTION) for s in elf.sections) else 0
    kernels = {}
    for index, (name, info, other) in enumerate(symbols):
        if info & 0xF != STT_FUNC or not other & STO_CUDA_ENTRY:
            continue
        shared = elf.by_name.get(f".nv.shared.{name}")
        local = elf.by_name.get(f".nv.local.{name}")
        kernels[name] = Resources(
            registers=per_symbol.get((EIATTR_REGCOUNT, index), 0),
            shared_static_bytes=max(0, shared.size - reserved) if shared else 0,
            local_bytes=per_symbol.get((EIATTR_FRAME_SIZE, index), 0) + (local.size if local else 0),
            max_threads=_max_threads(elf, name),
        )
    return kernels


def _max_threads(elf: _Elf, kernel: str) -> int | None:
    info = elf.by_name.get(f".nv.info.{kernel}")
    if info is None:
        return None
    for attribute, fmt, payload in _eiattr_records(elf.contents(info)):
        if attribute in (EIATTR_MAX_THREADS, EIATTR_REQNTID) and fmt == EIFMT_SVAL and len(payload) == 12:
            return math.prod(_u32s(payload))
    return None


def cubin_arch(cubin: bytes) -> str:
    """The SM architecture a cubin was built for: "sm_90", or "sm_90a" when ptxas was asked for it.

    The ELF flags hold the SM number (bits 8-15 from ELF ABI version 8, the low byte before); the
    arch-specific suffix appears only in the ptxas command line that the `.note.nv.tkinfo` note records.
    """
    elf = _Elf(cubin)
    sm = (elf.flags >> 8) & 0xFF if cubin[8] >= 8 else elf.flags & 0xFF
    note = elf.by_name.get(".note.nv.tkinfo")
    if note is not None:
        named = re.search(rb"-arch[= ]sm_%d([a-z]?)\b" % sm, elf.contents(note))
        if named:
            return f"sm_{sm}{named.group(1).decode()}"
    return f"sm_{sm}"


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_PROPERTIES = re.compile(r"Function properties for (\S+)")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
_PTXAS_LMEM = re.compile(r"(\d+) bytes lmem")


def resources_from_ptxas_log(log: str) -> dict[str, Resources]:
    """Resources of each entry function in `ptxas -v` output (standalone ptxas or NVRTC's log).

        ptxas info    : Compiling entry function 'k' for 'sm_90'
        ptxas info    : Function properties for k
            568 bytes stack frame, 1576 bytes spill stores, 1108 bytes spill loads
        ptxas info    : Used 32 registers, used 0 barriers, 4352 bytes smem
    """
    frames: dict[str, tuple[int, int, int]] = {}
    used: dict[str, str] = {}
    entry = function = None
    for line in log.splitlines():
        if m := _PTXAS_ENTRY.search(line):
            entry = m.group(1)
        elif m := _PTXAS_PROPERTIES.search(line):
            function = m.group(1)
        elif (m := _PTXAS_FRAME.search(line)) and function:
            frames[function] = tuple(map(int, m.groups()))
        elif _PTXAS_USED.search(line) and entry:
            used[entry] = line
    kernels = {}
    for name, line in used.items():
        frame, stores, loads = frames.get(name, (0, 0, 0))
        lmem = _PTXAS_LMEM.search(line)
        smem = _PTXAS_SMEM.search(line)
        kernels[name] = Resources(
            registers=int(_PTXAS_USED.search(line).group(1)),
            shared_static_bytes=int(smem.group(1)) if smem else 0,
            local_bytes=frame + (int(lmem.group(1)) if lmem else 0),
            spill_stores=stores,
            spill_loads=loads,
        )
    return kernels


def with_spills(kernels: dict[str, Resources], log: str) -> dict[str, Resources]:
    """`kernels` (read_resources of a cubin) with the spill counts of ptxas's `-v` report in `log`."""
    verbose = resources_from_ptxas_log(log)
    return {name: r._replace(spill_stores=verbose[name].spill_stores, spill_loads=verbose[name].spill_loads)
            if name in verbose else r for name, r in kernels.items()}
