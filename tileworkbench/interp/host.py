"""Any arrays on the interpreter: host copies of device arrays, written back after the launch.

`TILEWORKBENCH_INTERPRET=1` (like Triton's `TRITON_INTERPRET=1`) makes every `ct.launch` run on
the interpreter, whatever the arrays are: CuPy arrays, PyTorch CUDA tensors and anything with
`__cuda_array_interface__` or DLPack are copied to the host, the kernel runs there, and the arrays
the kernel writes are copied back. PyTorch CPU tensors run on the interpreter in place, switch or
not, as NumPy arrays do. Device arrays that view one allocation (a tensor passed twice, views of one
buffer) are copied as that allocation, once, and viewed on the host as on the device, so a write
through one is seen through the others and no copy-back undoes another's writes.
"""
from __future__ import annotations

import numpy as np

from ..arguments import host_numpy, host_tensor, is_array_like
from ..ir.types import to_dtype
from ..ir.ops import OPS


def _to_host(obj):
    """(a NumPy array with obj's contents, a function that copies it back into obj, or None when
    the NumPy array is obj's own memory)."""
    if isinstance(obj, np.ndarray):
        return obj, None
    if type(obj).__module__.startswith("torch"):
        if not obj.is_cuda:
            return host_numpy(obj), None
        host = host_numpy(obj.detach().cpu())
        return host, lambda: obj.detach().copy_(host_tensor(host))  # grad tensors too, as on the GPU
    import cupy
    device = obj if isinstance(obj, cupy.ndarray) else \
        cupy.asarray(obj) if hasattr(obj, "__cuda_array_interface__") else cupy.from_dlpack(obj)
    host = cupy.asnumpy(device)
    return host, lambda: device.__setitem__(Ellipsis, cupy.asarray(host))


class _Allocation:
    """One device allocation on the host: its bytes, copied once, and the arrays that view it."""

    def __init__(self, obj):
        if type(obj).__module__.startswith("torch"):
            import torch
            self._device = torch.empty(0, dtype=torch.uint8, device=obj.device).set_(obj.untyped_storage())
            self.bytes = self._device.to("cpu", copy=True).numpy()
        else:
            import cupy
            memory = obj.data.mem
            self._device = cupy.ndarray((memory.size,), cupy.uint8, cupy.cuda.MemoryPointer(memory, 0))
            self.bytes = self._device.get()
        self.base = _allocation_of(obj)[1]

    def view(self, obj) -> np.ndarray:
        """obj's elements in the host bytes, at the offset and strides they have on the device."""
        if type(obj).__module__.startswith("torch"):
            dtype = to_dtype(obj.dtype).numpy
            address, strides = obj.data_ptr(), tuple(s * dtype.itemsize for s in obj.stride())
        else:
            dtype, address, strides = obj.dtype, obj.data.ptr, obj.strides
        return np.ndarray(tuple(obj.shape), dtype, buffer=self.bytes, offset=address - self.base, strides=strides)

    def write_back(self) -> None:
        if type(self._device).__module__.startswith("torch"):
            import torch
            self._device.copy_(torch.from_numpy(self.bytes))
        else:
            self._device.set(self.bytes)


def _allocation_of(obj):
    """(device, first address, bytes) of the device allocation a PyTorch or CuPy array views; None
    for anything else (it is copied on its own)."""
    if type(obj).__module__.startswith("torch") and obj.is_cuda:
        storage = obj.untyped_storage()
        return ("torch", obj.device.index, storage.data_ptr()), storage.data_ptr(), storage.nbytes()
    if type(obj).__module__.startswith("cupy"):
        memory = obj.data.mem
        return ("cupy", obj.device.id, memory.ptr), memory.ptr, memory.size
    return None


def _host_copies(leaves) -> list[tuple]:
    """For each argument leaf, (what the interpreter reads, a function copying it back or None). Leaves
    that view one allocation with another share that allocation's one host copy."""
    keys = [_allocation_of(a) if is_array_like(a) else None for a in leaves]
    counts: dict = {}
    for key in keys:
        if key is not None:
            counts[key[0]] = counts.get(key[0], 0) + 1
    shared: dict = {}
    copies = []
    for leaf, key in zip(leaves, keys):
        if key is not None and counts[key[0]] > 1:
            if key[0] not in shared:
                shared[key[0]] = _Allocation(leaf)
            allocation = shared[key[0]]
            copies.append((allocation.view(leaf), allocation.write_back))
        else:
            copies.append(_to_host(leaf) if is_array_like(leaf) else (leaf, None))
    return copies


def written_params(fn) -> set[str]:
    """Names of the array parameters a kernel specialization may write (through slices, and
    arrays chosen under a runtime `if` or carried by a loop, too)."""
    names = {v: p.name for p, v in zip(fn.runtime_params, fn.body.args) if p.kind == "array"}
    sources = _array_sources(fn)
    written, todo = set(), [op.operands[0] for op in fn.walk() if op.name in OPS and OPS[op.name].access == "write"]
    seen = set()
    while todo:
        array = todo.pop()
        if array in seen:
            continue
        seen.add(array)
        if array in names:
            written.add(names[array])
        todo.extend(sources.get(array, ()))
    return written


def _array_sources(fn) -> dict:
    """For each array value that is not a parameter, the values it may be: a slice's array, the
    arrays of a list indexed at run time, the values both branches of an `if` yield, a loop's
    initial and yielded values."""
    sources: dict = {}

    def add(v, *froms):
        if v.is_array:
            sources.setdefault(v, []).extend(froms)
    for op in fn.walk():
        if op.name == "array_slice":
            add(op.result, op.operands[0])
        elif op.name == "list_item":  # any array of the list
            add(op.result, *op.operands[:-1])
        elif op.name == "if":
            for k, r in enumerate(op.results):
                add(r, *(region.ops[-1].operands[k] for region in op.regions))
        elif op.name in ("for", "while"):
            body = op.regions[0]
            init = op.operands[3:] if op.name == "for" else op.operands
            args = body.args[1:] if op.name == "for" else body.args
            yielded = body.ops[-1].operands[1:] if op.name == "while" else body.ops[-1].operands
            for r, a, i, y in zip(op.results, args, init, yielded):
                add(r, i, y)
                add(a, i, y)
    return sources


def run_anywhere(fn, grid, args) -> None:
    """Run a launch of the specialization `fn` on the interpreter with host copies of its device
    arrays, copying back the arrays the kernel writes."""
    from ..arguments import argument_leaves, normalize_grid
    from .executor import execute
    copies = _host_copies(argument_leaves(args))
    execute(fn, normalize_grid(grid), [h for h, _ in copies])
    written = written_params(fn)
    backs = {id(write_back): write_back for p, (_, write_back) in zip(fn.params, copies)   # once per allocation
             if write_back is not None and p.name in written}
    for write_back in backs.values():
        write_back()
