"""Hostile trace files: saved traces of a few kernels, mutated (bytes, zip members, .npy headers and
values, JSON fields), must each load and render, or be refused with one InvalidTraceError.

    >>> findings = fuzz_trace_files(seconds=5, seed=0)   # [(case, what went wrong), ...]
"""
from __future__ import annotations

import io
import json
import os
import random
import tempfile
import time
import traceback
import zipfile

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.interp import InvalidTraceError, Trace
from tileworkbench.tile import interpret

from .engine import kernel_of
from .programs import random_program

MAX_BYTES = 64 << 20   # loads (and so views) of mutated files stay small
SLOW_SECONDS = 10      # a load and render slower than this is a finding too
HOSTILE_NUMBERS = [0, 1, -1, 2, 3, 7, 8, 9, 255, 256, 2**31 - 1, 2**31, -2**31, 2**32, 2**63, -2**63, 2**64, 10**30]
HOSTILE_VALUES = HOSTILE_NUMBERS + [None, True, 0.5, -0.0, 1e308, "nan", "inf", "lanes", "", "x" * 1000, [], {},
                                    [0], [1, 1, 1], [-1], [2**31], [[1, 2]], {"shape": [1], "dtype": "float32"},
                                    "load", "store", "gather", "scatter", "broadcast", "reshape", "cat", "extract",
                                    "atomic_add", "ZERO", "UNDETERMINED", "bfloat16", "float8_e4m3fn", "bool_"]


@ct.kernel
def _outer_difference(t_in, out):
    t = ct.load(t_in, (0,), (8,))
    ct.store(out, (0, 0), t[:, None] - t[None, :])


@ct.kernel
def _gather_scatter(x, y, idx, pad):
    i = ct.bid(0)
    index = ct.load(idx, (i,), (8,))
    values = ct.gather(x, index, mask=index != 3, padding_value=ct.load(pad, (0,), (8,)))
    ct.scatter(y, index, values)
    ct.atomic_add(y, index % 4, values)


@ct.kernel
def _ragged(x, y, z):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, (i, j), (4, 4), padding_mode=ct.PaddingMode.NAN)
    ct.store(y, (j, i), ct.permute(t, (1, 0)))
    ct.store(z, (i, j), ct.cat((ct.extract(ct.reshape(t, (2, 8)), (0, 1), (2, 4)), ct.extract(t, (1, 0), (2, 4))), 1))


def seed_traces(directory: str, programs: int = 4) -> list[str]:
    """Trace files of kernels using every kind of event (loads that pad, stores that drop, gathers
    with masks and per-lane padding, scatters with collisions, atomics, shape ops), saved in
    `directory`."""
    traces = [
        interpret(_outer_difference, (2,), (np.arange(8, dtype=np.float32), np.zeros((8, 8), np.float32)), trace=True),
        interpret(_gather_scatter, (2,), (np.arange(10, dtype=np.float32), np.zeros(10, np.float32),
                                    np.array([0, 3, 9, 12, -1, 3, 4, 4] * 2, np.int32),
                                    np.linspace(-1, 1, 8, dtype=np.float32)), trace=True),
        interpret(_ragged, (2, 3), (np.ones((6, 10), np.float16), np.zeros((12, 8), np.float16),
                              np.zeros((4, 20), np.float16)), trace=True),
    ]
    rng = np.random.default_rng(0)
    for k in range(programs):
        program = random_program(rng)
        traces.append(interpret(kernel_of(program, f"<trace seed {k}>"), program.grid, program.fresh_args(), trace=True))
    paths = []
    for k, trace in enumerate(traces):
        paths.append(os.path.join(directory, f"seed{k}.npz"))
        trace.save(paths[-1])
    return paths


def _entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _zipped(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, array)
    return out.getvalue()


def _hostile(rng: random.Random):
    value = rng.choice(HOSTILE_VALUES)
    return json.loads(json.dumps(value))   # a fresh copy


def _mutate_json(rng: random.Random, node, depth: int = 0):
    """Set, delete or duplicate one field somewhere in the JSON tree (returns the new node)."""
    if not isinstance(node, (dict, list)) or not node or (depth and rng.random() < 0.3):
        return _hostile(rng)
    if depth == 0 and "events" in node and rng.random() < 0.6:
        key = "events"   # where most of a trace's claims are
    else:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
    action = rng.random()
    if action < 0.1:
        del node[key]
    elif action < 0.15 and isinstance(node, list):
        node.append(json.loads(json.dumps(node[key])))
    else:
        node[key] = _mutate_json(rng, node[key], depth + 1)
    return node


def _mutate_array(rng: random.Random, array: np.ndarray) -> bytes:
    action = rng.random()
    if action < 0.2 and array.size > 1:   # plausible values in implausible places
        flat = array.reshape(-1).copy()
        picks = np.array([rng.randrange(flat.size) for _ in range(rng.randint(1, 8))])
        flat[picks] = flat[np.array([rng.randrange(flat.size) for _ in picks])]
        return _npy(flat.reshape(array.shape))
    if action < 0.4 and array.size:
        flat = array.reshape(-1).copy()
        for _ in range(rng.randint(1, 4)):
            flat.view(np.uint8)[rng.randrange(flat.nbytes)] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        return _npy(flat.reshape(array.shape))
    if action < 0.6:   # the header claims another shape for the same bytes
        header = io.BytesIO()
        shape = tuple(rng.choice([0, 1, 2, 3, 8, 2**31, 2**40]) for _ in range(rng.randint(0, 4)))
        np.lib.format.write_array_header_1_0(header, {"descr": np.lib.format.dtype_to_descr(array.dtype),
                                                      "fortran_order": rng.random() < 0.2, "shape": shape})
        return header.getvalue() + array.tobytes()
    if action < 0.8:   # another dtype
        dtype = rng.choice([np.int8, np.int64, np.uint32, np.float32, np.float64, np.bool_, np.uint8])
        return _npy(array.astype(dtype) if array.size < 1 << 20 else np.zeros(3, dtype))
    data = bytearray(_npy(array))
    data[rng.choice([6, 7, 8, 9, 10, 20, 40])] = rng.randrange(256)   # version bytes, header length, header text
    return bytes(data)


def _mutate_coordinates(rng: random.Random, deltas: np.ndarray) -> np.ndarray:
    """Coordinates saved as lane differences (version 3), some lanes moved: to a neighbour's place,
    an edge of the plausible range, or far out. (Editing the differences moves every later lane.)"""
    coords = np.cumsum(deltas, axis=1, dtype=np.int32)
    top = int(coords.max())
    for _ in range(rng.randint(1, 6)):
        d, lane = rng.randrange(coords.shape[0]), rng.randrange(coords.shape[1])
        coords[d, lane] = rng.choice([0, 1, -1, top, top + 1, rng.randint(0, max(top, 0)), 2**31 - 1, -2**31,
                                      int(coords[d, rng.randrange(coords.shape[1])])])
    return np.diff(coords, axis=1, prepend=np.zeros((coords.shape[0], 1), np.int32))


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One hostile variant of a trace file's bytes."""
    if rng.random() < 0.15:
        return _mutate_bytes(rng, data)
    try:
        return _mutate_members(rng, _entries(data))
    except Exception:  # noqa: BLE001 - an earlier mutation broke the zip or a member: mutate bytes instead
        return _mutate_bytes(rng, data)


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data or b"PK\x05\x06")
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data[:rng.randrange(len(data))] if rng.random() < 0.2 else data)


def _mutate_members(rng: random.Random, entries: dict[str, bytes]) -> bytes:
    kind = rng.random()
    if kind < 0.45:   # the JSON metadata
        meta = json.loads(np.load(io.BytesIO(entries["meta.npy"])).tobytes())
        meta = _mutate_json(rng, meta)
        entries["meta.npy"] = _npy(np.frombuffer(json.dumps(meta).encode(), np.uint8))
    elif kind < 0.9:   # an array member
        name = rng.choice([n for n in entries if n != "meta.npy"])
        array = np.load(io.BytesIO(entries[name]))
        if name.endswith("_coords.npy") and array.ndim == 2 and array.size and rng.random() < 0.5:
            entries[name] = _npy(_mutate_coordinates(rng, array))
        else:
            entries[name] = _mutate_array(rng, array)
    else:   # whole members
        name = rng.choice(list(entries))
        if rng.random() < 0.5:
            del entries[name]
        else:
            entries[rng.choice(["e0_padding.npy", "e1_padding.npy", "e99_status.npy", name])] = entries[name]
    data = bytearray(_zipped(entries))
    if rng.random() < 0.05:   # a zip flag: encrypted, data descriptor, UTF-8 names...
        at = data.find(b"PK\x01\x02")
        data[at + 8] ^= 1 << rng.choice([0, 3, 6, 11, 13])
    return bytes(data)


def render(trace: Trace) -> None:
    """Everything a user can ask of a loaded trace: every view, every event's counts and blocks."""
    from tileworkbench.widgets.views import views_of_trace
    views_of_trace(trace, limit=50)
    for event in trace.events:
        event.counts()
        event.for_block(tuple(event.blocks[0]))
        event.padding_of_lanes()


def check_file(path: str) -> str | None:
    """None if the file loads and renders, or is refused with InvalidTraceError; else what went wrong."""
    start = time.monotonic()
    try:
        trace = Trace.load(path, max_bytes=MAX_BYTES)
    except InvalidTraceError as e:
        return None if str(path) in str(e) else f"InvalidTraceError not naming the file: {e}"
    except Exception:  # noqa: BLE001 - anything else is the finding
        return "load: " + traceback.format_exc(limit=-3)
    try:
        render(trace)
    except Exception:  # noqa: BLE001
        return "render: " + traceback.format_exc(limit=-3)
    elapsed = time.monotonic() - start
    return f"took {elapsed:.0f} s" if elapsed > SLOW_SECONDS else None


def fuzz_trace_files(seconds: float, seed: int = 0, limit: int | None = None) -> tuple[int, list]:
    """Mutate seed traces for `seconds` (or `limit` cases): (cases checked, [(case, finding)])."""
    rng = random.Random(seed)
    findings, checked = [], 0
    with tempfile.TemporaryDirectory(prefix="trace-fuzz-") as directory:
        paths = seed_traces(directory)
        render(Trace.load(paths[0]))   # imports the views: not part of any case's time
        seeds = [open(p, "rb").read() for p in paths]
        findings += [(f"unchanged {p}", found) for p in paths if (found := check_file(p)) is not None]
        path = os.path.join(directory, "case.npz")
        start = time.monotonic()
        while time.monotonic() - start < seconds and (limit is None or checked < limit):
            data = rng.choice(seeds)
            for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 4)):
                data = mutate(rng, data)
            with open(path, "wb") as f:
                f.write(data)
            found = check_file(path)
            if found is not None:
                findings.append((checked, found))
            checked += 1
    return checked, findings
