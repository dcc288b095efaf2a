"""A sweep's array arguments, moved once per sweep instead of once per timing job.

The calling process puts a copy of each distinct array in shared memory once (`ArgumentStore`;
distinct by content: dtype, shape and a hash of the bytes, so `np.zeros(...)` made afresh for every
configuration is one block, and an array whose contents change between configurations is a new
one). A timing job carries only `SharedArray` handles. The process that times (a GPU worker, or
the caller for a sweep timed here) copies each array to its GPU once and keeps the copy while
its jobs name that content (`resident`); before each job it restores the arrays the kernel may
write from a pristine device copy, so every configuration starts from the caller's contents
and the interpreter's check of it stays valid.

    with ArgumentStore() as store:
        a = store.share(A)            # SharedArray(block="psm_...", shape=(4096, 4096), dtype=float16, key="9f...")
        ...                           # jobs carry `a`; store.done([a]) when the job is over
                                      # leaving the `with` closes and unlinks every block
"""
from __future__ import annotations

import hashlib
import os
import sys
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.shared_memory import SharedMemory

import numpy as np

_CHUNK = 8 << 20       # bytes hashed per thread: hashlib lets go of the GIL, so big arrays hash on every core
_hashing = ThreadPoolExecutor(8, thread_name_prefix="tileworkbench-hash")


def content_key(a: np.ndarray) -> str:
    """A hash of `a`'s dtype, shape and bytes (in C order)."""
    data = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    chunks = [data[i:i + _CHUNK] for i in range(0, data.size, _CHUNK)]
    digests = _hashing.map(lambda c: hashlib.sha256(c).digest(), chunks) if len(chunks) > 1 else \
        [hashlib.sha256(data).digest()]
    return hashlib.sha256(f"{a.dtype.name} {a.dtype.str} {a.shape}".encode() + b"".join(digests)).hexdigest()[:32]


@dataclass(frozen=True)
class SharedArray:
    """An argument array in a shared-memory block: what a timing job carries in the array's place."""
    block: str
    shape: tuple
    dtype: np.dtype
    key: str            # content_key of the array


class ArgumentStore:
    """The shared-memory blocks of one sweep. A block stays while a job in flight or the job that
    finished last names it; the others are unlinked when a new block is made (so a sweep whose
    every configuration has other arrays holds only those few), and all of them when the store closes."""

    def __init__(self):
        self.blocks: dict[str, SharedMemory] = {}   # content key -> block
        self.users = Counter()                      # content key -> jobs in flight that name it
        self.last = set()                           # content keys of the job that finished last
        self.made = 0                               # blocks made: what a sweep copied into shared memory
        self.warned = False

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def share(self, array) -> SharedArray | np.ndarray:
        """A handle on a shared copy of `array` (a NumPy array), counted as in use until `done`; a
        host copy, to travel with the job, where shared memory has no room for it."""
        array = np.asarray(array)
        key = content_key(array)
        block = self.blocks.get(key)
        if block is None:
            self._unlink([k for k in self.blocks if self.users[k] == 0 and k not in self.last])
            if not self._room_for(array.nbytes):
                return np.array(array)
            block = self.blocks[key] = SharedMemory(create=True, size=max(array.nbytes, 1))
            np.ndarray(array.shape, array.dtype, buffer=block.buf)[...] = array
            self.made += 1
        self.users[key] += 1
        return SharedArray(block.name, array.shape, array.dtype, key)

    def _room_for(self, size: int) -> bool:
        room = _shared_memory_free()
        if room is None or size <= room - (16 << 20):
            return True
        if not self.warned:
            self.warned = True
            warnings.warn(f"shared memory (/dev/shm) has {room >> 20} MB free, too little for a {size >> 20} MB "
                          f"argument: such arguments travel with each timing job (a container can be given more, "
                          f"e.g. `docker run --shm-size=8g`)", stacklevel=4)
        return False

    def done(self, handles) -> None:
        """The job that named `handles` is over."""
        for h in handles:
            self.users[h.key] -= 1
        self.last = {h.key for h in handles}

    def close(self) -> None:
        self._unlink(list(self.blocks))

    def _unlink(self, keys) -> None:
        for key in keys:
            block = self.blocks.pop(key)
            block.close()
            block.unlink()
            del self.users[key]


class Resident:
    """The device copies of one process's sweep arguments, by content. Only what the latest job
    names stays: a job that names other contents frees the rest (`release` frees all)."""

    def __init__(self):
        self.blocks: dict[str, SharedMemory] = {}   # content key -> the block, attached
        self.copies: dict[tuple, object] = {}      # (content key, n): the n-th distinct array of that content in a job
        self.pristine: dict[str, object] = {}      # content key -> an untouched copy, for arrays a kernel writes
        self.written: set[tuple] = set()           # copies a kernel may have written since they were made

    def host(self, handle):
        """A NumPy view of a shared array, not to be written (a host array as is)."""
        if not isinstance(handle, SharedArray):
            return handle
        if handle.key not in self.blocks:
            self.blocks[handle.key] = _attach(handle.block)
        return np.ndarray(handle.shape, handle.dtype, buffer=self.blocks[handle.key].buf)

    def keep_only(self, handles, gpu) -> None:
        """Free the device copies and detach the blocks of contents that `handles` do not name."""
        keys = {h.key for h in handles if isinstance(h, SharedArray)}
        copies = [p for p in self.copies if p[0] not in keys]
        pristine = [k for k in self.pristine if k not in keys]
        for place in copies:
            del self.copies[place]
            self.written.discard(place)
        for key in pristine:
            del self.pristine[key]
        for key in [k for k in self.blocks if k not in keys]:
            try:
                self.blocks.pop(key).close()
            except BufferError:   # a view of it is still about: the mapping goes when that does
                pass
        if copies or pristine:
            gpu.release_memory()

    def on_device(self, args, arrays: list, written: list, gpu) -> tuple:
        """`args` with each array on the GPU: shared ones from this process's copies, made once per
        content, host arrays copied for this job alone. A copy this job may write (`written`, per
        argument), or one an earlier job may have written, starts from the pristine copy. An array
        passed twice stays one array, as in `copied_once`."""
        groups = []     # [argument, its positions], one per distinct argument object
        for k, (value, is_array) in enumerate(zip(args, arrays)):
            if is_array:
                group = next((g for g in groups if g[0] is value), None)
                if group is None:
                    groups.append([value, [k]])
                else:
                    group[1].append(k)
        out, seen = list(args), Counter()
        for handle, positions in groups:
            if isinstance(handle, SharedArray):
                copy = self._copy(handle, seen[handle.key], any(written[k] for k in positions), gpu)
                seen[handle.key] += 1
            else:
                copy = gpu.to_device(handle)
            for k in positions:
                out[k] = copy
        return tuple(out)

    def _copy(self, handle: SharedArray, n: int, writes: bool, gpu):
        """The device copy of the `n`-th distinct argument of `handle`'s content in a job."""
        place = (handle.key, n)
        if place not in self.copies:
            self.copies[place] = gpu.to_device(self.host(handle))
        elif writes or place in self.written:
            if handle.key not in self.pristine:
                self.pristine[handle.key] = gpu.to_device(self.host(handle))
            gpu.restore(self.copies[place], self.pristine[handle.key])
        (self.written.add if writes else self.written.discard)(place)
        return self.copies[place]

    def release(self, gpu) -> None:
        """Free every device copy and detach every block."""
        self.keep_only((), gpu)


def _shared_memory_free() -> int | None:
    """Bytes free where Linux keeps shared memory (a container's is often small: writing past it
    kills the process); None where that is not known."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _attach(name: str) -> SharedMemory:
    # the creating process owns the block's lifetime: an attaching one must not unlink it at exit
    # (Python 3.13 says so with track=False; before, a spawned worker shares its parent's tracker)
    return SharedMemory(name=name, **({"track": False} if sys.version_info >= (3, 13) else {}))


resident = Resident()   # this process's copies: a GPU worker's, or the caller's for a sweep timed here
