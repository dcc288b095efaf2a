"""cuTile programs on a machine without a GPU: their CUDA tensors made in host memory, every
launch on the interpreter (`python -m tileworkbench.cutile_alias --cpu program.py`).

cuTile programs make their tensors with device="cuda", pass torch.cuda.current_stream() and time
with CUDA events. Here torch's factories (torch.randn(..., device="cuda") and the others listed in
FACTORIES), torch.testing.make_tensor, `.cuda()` and `.to("cuda")` make host tensors instead,
which still say they are CUDA tensors (`is_cuda`, which programs check);
torch.cuda.current_stream() answers None, synchronize() returns at once, events read the host
clock, and the device reports itself as an H100 (compute capability 9.0, 132 SMs: what cuTile
programs are tuned for). Attention may fall back to the math backend (cuDNN's is CUDA's).

The programs' torch references are computed as accurately as on CUDA: half-precision matmuls
summed exactly and rounded once, float32 matmuls from TF32 inputs unless
torch.set_float32_matmul_precision("highest"), 16-bit layer_norm in float32. torch's CPU kernels
sum in other orders and precisions than CUDA's, by more than cuTile programs' tolerances (1e-5 for
float16 matmuls), so a check would otherwise measure the CPU reference, not the kernel.

What needs a real device still fails and says so: CUDA graphs, streams other than the current
one, memory statistics, and properties beyond those above.
"""
from __future__ import annotations

import functools
import os
import time
import types

FACTORIES = ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "tensor", "arange", "as_tensor",
             "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
             "linspace", "eye", "randperm", "empty_strided", "normal")
CAPABILITY = (9, 0)
DEVICE = types.SimpleNamespace(name="host (standing for an H100)", major=9, minor=0, multi_processor_count=132,
                               total_memory=80 << 30)
_redirected = False


def _host(device):
    return "cpu" if device is not None and "cuda" in str(device) else device


def _on_host(factory):
    @functools.wraps(factory)
    def make(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _host(kwargs["device"])
        return factory(*args, **kwargs)
    return make


def _to(original):
    import torch

    @functools.wraps(original)
    def to(self, *args, **kwargs):
        args = tuple(_host(a) if isinstance(a, (str, torch.device)) else a for a in args)
        if "device" in kwargs:
            kwargs["device"] = _host(kwargs["device"])
        return original(self, *args, **kwargs)
    return to


class HostEvent:
    """torch.cuda.Event on the host clock (every host launch has finished when it returns)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.seconds = None

    def record(self, stream=None):
        self.seconds = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end) -> float:
        return (end.seconds - self.seconds) * 1e3


def _with_the_math_backend(sdpa_kernel):
    """sdpa_kernel that also allows the math backend: the CUDA-only attention backends (cuDNN) a
    program asks for do not exist on the host."""
    import torch.nn.attention

    @functools.wraps(sdpa_kernel)
    def choose(backends, *args, **kwargs):
        backends = list(backends) if isinstance(backends, (list, tuple)) else [backends]
        return sdpa_kernel(backends + [torch.nn.attention.SDPBackend.MATH], *args, **kwargs)
    return choose


def _tf32(x):
    """float32 values rounded to TF32's 10 mantissa bits (to nearest, ties to even), as CUDA's
    tensor cores take them."""
    import torch
    bits = x.contiguous().view(torch.int32).to(torch.int64)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return torch.where(torch.isfinite(x), rounded.to(torch.int32).view(torch.float32), x)


def _as_on_cuda_matmul(matmul):
    """A matmul reference as accurate as CUDA's (see the module's docstring)."""
    import torch
    half = (torch.float16, torch.bfloat16)

    @functools.wraps(matmul)
    def as_on_cuda(a, b, *args, **kwargs):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype != b.dtype or args or kwargs:
            return matmul(a, b, *args, **kwargs)
        if a.dtype in half:
            return matmul(a.double(), b.double()).to(a.dtype)
        if a.dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest":
            return matmul(_tf32(a).double(), _tf32(b).double()).float()
        return matmul(a, b)
    return as_on_cuda


def _as_on_cuda_layer_norm(layer_norm):
    """layer_norm accumulating in float32 for 16-bit inputs, as CUDA's kernels do (the CPU's sums
    bfloat16 weight gradients in bfloat16)."""
    import torch

    @functools.wraps(layer_norm)
    def as_on_cuda(x, shape, weight=None, bias=None, eps=1e-5):
        if x.dtype not in (torch.float16, torch.bfloat16):
            return layer_norm(x, shape, weight, bias, eps)
        wide = [t.float() if t is not None else None for t in (weight, bias)]
        return layer_norm(x.float(), shape, *wide, eps).to(x.dtype)
    return as_on_cuda


def redirect_to_host() -> None:
    """Make this process's CUDA tensors host tensors (see the module's docstring). Once per process."""
    global _redirected
    if _redirected:
        return
    import torch
    import torch.nn.attention
    import torch.testing
    for name in FACTORIES:
        setattr(torch, name, _on_host(getattr(torch, name)))
    torch.testing.make_tensor = _on_host(torch.testing.make_tensor)
    torch.Tensor.to = _to(torch.Tensor.to)
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    torch.Tensor.is_cuda = property(lambda self: self.device.type in ("cpu", "cuda"))
    torch.cuda.current_stream = lambda *args, **kwargs: None
    torch.cuda.synchronize = lambda *args, **kwargs: None
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda *args, **kwargs: CAPABILITY
    torch.cuda.get_device_properties = lambda *args, **kwargs: DEVICE
    torch.cuda.Event = HostEvent
    torch.nn.attention.sdpa_kernel = _with_the_math_backend(torch.nn.attention.sdpa_kernel)
    _redirected = True


def compute_references_as_on_cuda() -> None:
    """The programs' torch references computed with CUDA's accuracy (matmul, layer_norm): see above."""
    import torch
    import torch.nn.functional
    torch.matmul = _as_on_cuda_matmul(torch.matmul)
    torch.Tensor.__matmul__ = _as_on_cuda_matmul(torch.Tensor.__matmul__)
    torch.nn.functional.layer_norm = _as_on_cuda_layer_norm(torch.nn.functional.layer_norm)


def run_on_host() -> None:
    """Everything `--cpu` does to this process: every launch on the interpreter and, where PyTorch
    is installed, its CUDA tensors in host memory with references as accurate as CUDA's."""
    from ..arguments import INTERPRET_ENV
    os.environ[INTERPRET_ENV] = "1"
    if _redirected:
        return
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        return   # NumPy programs need nothing more than the interpreter
    redirect_to_host()
    compute_references_as_on_cuda()
