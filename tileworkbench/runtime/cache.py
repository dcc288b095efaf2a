"""Compiled kernels cached in memory and on disk, keyed by everything that changes the binary.

    >>> module = compile_cached(cuda_source, arch="sm_90", header_version=HEADER_VERSION)

The key is a sha256 over the source, the arch, the sorted options, the NVRTC build, the caller's
header-library version, the package version and the entry format, so an entry written by another
version of the package is never even looked at. The directory is $TILEWORKBENCH_CACHE_DIR, else $XDG_CACHE_HOME/tileworkbench,
else ~/.cache/tileworkbench. Each entry is one file, `<key>.kernel`:

    header   magic b"TWBKRNL\\0", format version (u32), key (32 bytes), payload length (u64),
             sha256 of the payload (32 bytes); little-endian
    payload  JSON length (u32), JSON (arch, options, NVRTC version, log, resources, lowered names,
             cubin length), cubin bytes, PTX text (the rest)

Entries are written to a temporary file and renamed over the final name, so a reader sees a whole
entry or none. An entry that fails any check (truncated, a flipped bit, another format version, a
layout this version cannot read) is deleted and rebuilt, never trusted. A checksum only says the
file is as written, so the contents are also checked against what the entry claims (`_agrees`):
the arch asked for, a cubin of the length claimed that is an ELF file naming each kernel, PTX
whose `.entry` functions are the kernels listed, kernels named in the source, resources that are
counts, and the lowered names asked for. Only regular files of at
most MAX_ENTRY_BYTES named `<64 hex digits>.kernel` are read: other files in the directory are left
alone, and a link or a FIFO put in an entry's place is removed unread. A file that vanishes while
it is listed (a concurrent clear) is skipped. A hit imports nothing heavier than json: NVRTC is not
loaded. Inside `cached_only()` a miss raises NotCached instead of compiling.
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import re
import stat
import struct
import warnings
from typing import NamedTuple

from .. import __version__
from .cubin import Resources
from .nvrtc import CompiledModule, compile_cuda, compiler_version

MAGIC = b"TWBKRNL\0"
FORMAT_VERSION = 1
SUFFIX = ".kernel"
MAX_ENTRY_BYTES = 256 << 20  # far above any cubin + PTX: a bigger file is not an entry
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}" + re.escape(SUFFIX))
_cached_only = contextvars.ContextVar("cached_only", default=False)


class NotCached(Exception):
    """A compile asked for inside `cached_only()` that the cache does not hold."""


@contextlib.contextmanager
def cached_only():
    """Answer compiles from the cache alone while inside: a miss raises NotCached, NVRTC never runs.

        >>> with cached_only():
        ...     module = compile_cached(source)   # instant, or NotCached
    """
    token = _cached_only.set(True)
    try:
        yield
    finally:
        _cached_only.reset(token)
_HEADER = struct.Struct("<8sI32sQ32s")
_JSON_LENGTH = struct.Struct("<I")


def default_directory() -> str:
    """Where the default cache lives; see the module docstring."""
    if os.environ.get("TILEWORKBENCH_CACHE_DIR"):
        return os.environ["TILEWORKBENCH_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tileworkbench")


def cache_key(source: str, arch: str, options, header_version: str, compiler: str, name_expressions=()) -> str:
    """Hex sha256 over everything that changes the compiled module (option order does not)."""
    parts = [source, arch, sorted(options), compiler, header_version, sorted(name_expressions), __version__,
             FORMAT_VERSION]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


class CacheStats(NamedTuple):
    """This process's hits and misses, and what the directory holds."""

    memory_hits: int
    disk_hits: int
    misses: int
    entries: int  # files on disk
    bytes: int


class CacheEntry(NamedTuple):
    """One entry on disk, as `entries()` lists it."""

    key: str
    arch: str
    size: int
    mtime: float
    kernels: tuple[str, ...]


def _encode(key: str, module: CompiledModule) -> bytes:
    meta = {
        "arch": module.arch, "options": list(module.options), "nvrtc_version": list(module.nvrtc_version),
        "log": module.log, "kernels": {n: r._asdict() for n, r in module.kernels.items()},
        "lowered_names": module.lowered_names, "cubin_bytes": len(module.cubin),
    }
    text = json.dumps(meta).encode()
    payload = b"".join([_JSON_LENGTH.pack(len(text)), text, module.cubin, module.ptx.encode()])
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, bytes.fromhex(key), len(payload), hashlib.sha256(payload).digest())
    return header + payload


def _decode(key: str, data: bytes) -> tuple[dict, bytes, str] | None:
    """(metadata, cubin, ptx) of a valid entry for `key`, else None."""
    if len(data) < _HEADER.size:
        return None
    magic, version, stored_key, length, digest = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if (magic, version, stored_key, length) != (MAGIC, FORMAT_VERSION, bytes.fromhex(key), len(payload)) \
            or hashlib.sha256(payload).digest() != digest:
        return None
    try:
        (text_length,) = _JSON_LENGTH.unpack_from(payload)
        meta = json.loads(payload[4:4 + text_length])
        cubin_bytes = meta["cubin_bytes"]
        if type(cubin_bytes) is not int or not 0 < cubin_bytes <= len(payload) - 4 - text_length:
            return None
        cubin_end = 4 + text_length + cubin_bytes
        return meta, payload[4 + text_length:cubin_end], payload[cubin_end:].decode()
    except (struct.error, ValueError, KeyError, TypeError):  # checksummed, so only a writer bug lands here
        return None


_ENTRY = re.compile(r"\.entry\s+([\w$]+)")
_RESOURCE_COUNTS = ("registers", "shared_static_bytes", "local_bytes")


def _agrees(module: CompiledModule, arch: str, name_expressions) -> bool:
    """Whether a decoded entry's contents are what it claims: see the module docstring."""
    kernels = module.kernels
    return (module.arch == arch and module.cubin[:4] == b"\x7fELF" and isinstance(module.log, str)
            and set(_ENTRY.findall(module.ptx)) == set(kernels)
            and all(name.encode() + b"\0" in module.cubin and _named_in(name, module.source) for name in kernels)
            and all(_is_count(getattr(r, f)) for r in kernels.values() for f in _RESOURCE_COUNTS)
            and all(v is None or _is_count(v) for r in kernels.values() for v in r[len(_RESOURCE_COUNTS):])
            and isinstance(module.lowered_names, dict) and set(name_expressions) <= set(module.lowered_names)
            and all(v in kernels for v in module.lowered_names.values()))


def _is_count(value) -> bool:
    return type(value) is int and value >= 0


def _named_in(kernel: str, source: str) -> bool:
    """Whether the source names the kernel: as it is (extern "C"), or one of the identifiers of its
    C++ mangled name (`_ZN2ns5scaleE...`: ns, scale)."""
    if kernel in source:
        return True
    for length in re.finditer(r"\d+", kernel):
        identifier = kernel[length.end():length.end() + int(length.group())]
        if identifier.isidentifier() and identifier in source:
            return True
    return False


class CompileCache:
    """A memory + disk cache of compiled modules. `directory=None` uses `default_directory()`."""

    def __init__(self, directory: str | None = None):
        self.directory = directory or default_directory()
        self._memory: dict[str, CompiledModule] = {}
        self._memory_hits = self._disk_hits = self._misses = 0

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + SUFFIX)

    def get_or_compile(self, source: str, arch: str, options, header_version: str, compile_fn,
                       name_expressions=()) -> CompiledModule:
        """The cached module, or `compile_fn(source, arch=arch, options=options, name_expressions=...)`
        stored on a miss."""
        options, name_expressions = tuple(options), tuple(name_expressions)
        key = cache_key(source, arch, options, header_version, compiler_version(), name_expressions)
        if key in self._memory:
            self._memory_hits += 1
            return self._memory[key]
        module = self._load(key, source, arch, name_expressions)
        if module is not None:
            self._disk_hits += 1
        elif _cached_only.get():
            raise NotCached(key)
        else:
            self._misses += 1
            module = compile_fn(source, arch=arch, options=options, name_expressions=name_expressions)
            self._store(key, module)
        self._memory[key] = module
        return module

    def _read(self, key: str):
        """The decoded entry for `key`; a corrupt one, or anything else in its place, is deleted."""
        path = self._path(key)
        data = _read_regular_file(path)
        entry = _decode(key, data) if isinstance(data, bytes) else None
        if entry is None and data is not False:  # False: no file there
            _remove(path)
        return entry

    def _load(self, key: str, source: str, arch: str, name_expressions) -> CompiledModule | None:
        entry = self._read(key)
        if entry is None:
            return None
        meta, cubin, ptx = entry
        try:
            module = CompiledModule(
                source=source, arch=meta["arch"], options=tuple(meta["options"]), ptx=ptx, cubin=cubin,
                log=meta["log"], nvrtc_version=tuple(meta["nvrtc_version"]),
                kernels={n: Resources(**r) for n, r in meta["kernels"].items()}, lowered_names=meta["lowered_names"])
            if _agrees(module, arch, name_expressions):
                return module
        except (KeyError, TypeError, ValueError, AttributeError):  # a layout this version does not know
            pass
        _remove(self._path(key))
        return None

    def _store(self, key: str, module: CompiledModule) -> None:
        import tempfile  # only misses write, and they just spent far longer compiling

        data = _encode(key, module)
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(temporary, self._path(key))
            except BaseException:
                _remove(temporary)
                raise
        except OSError as e:  # a read-only or full disk costs the disk cache, not the compile
            warnings.warn(f"tileworkbench could not write its compile cache in {self.directory}: {e}", stacklevel=3)

    def _files(self) -> list[str]:
        """The names of entry files (other files in the directory are not the cache's)."""
        try:
            return sorted(n for n in os.listdir(self.directory) if _ENTRY_NAME.fullmatch(n))
        except OSError:
            return []

    def entries(self) -> list[CacheEntry]:
        """The valid entries on disk (corrupt ones are deleted on the way)."""
        found = []
        for name in self._files():
            key = name[:-len(SUFFIX)]
            entry = self._read(key)
            try:
                info = os.stat(self._path(key))
            except OSError:  # removed by a concurrent clear since it was read
                continue
            if entry is not None:
                meta = entry[0]
                found.append(CacheEntry(key, str(meta.get("arch")), info.st_size, info.st_mtime,
                                        tuple(meta.get("kernels") or ())))
        return found

    def stats(self) -> CacheStats:
        sizes = []
        for name in self._files():
            try:
                sizes.append(os.lstat(os.path.join(self.directory, name)).st_size)
            except OSError:  # removed by a concurrent clear since it was listed
                continue
        return CacheStats(self._memory_hits, self._disk_hits, self._misses, len(sizes), sum(sizes))

    def clear(self) -> None:
        """Forget every entry, in memory and on disk, with temporary files a crashed writer left
        (hit and miss counts are kept)."""
        self._memory.clear()
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if _ENTRY_NAME.fullmatch(name) or (name.startswith(".") and name.endswith(".tmp")):
                _remove(os.path.join(self.directory, name))


def _read_regular_file(path: str):
    """The bytes of `path` if it is a regular file (not a link) of at most MAX_ENTRY_BYTES; None if
    something else is there (never read: a link to /dev/zero or a FIFO would never end); False if
    nothing is."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return False
    except OSError:  # a link (O_NOFOLLOW), a directory...
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_ENTRY_BYTES + 1)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


_default: CompileCache | None = None


def default_cache() -> CompileCache:
    """The process-wide cache, created on first use (so the environment is read then)."""
    global _default
    if _default is None:
        _default = CompileCache()
    return _default


def compile_cached(source: str, *, arch: str = "sm_90", options=(), header_version: str = "",
                   include_paths=(), name_expressions=(), cache: CompileCache | None = None) -> CompiledModule:
    """`compile_cuda` through a cache (the default one unless given). `name_expressions` (e.g.
    ["scale<float>"]) have NVRTC instantiate and name C++ kernels: see `CompiledModule.lowered_names`."""
    options = (*options, *(f"--include-path={p}" for p in include_paths))
    return (cache or default_cache()).get_or_compile(source, arch, options, header_version, compile_cuda,
                                                     name_expressions)
