"""cuTile programs on a machine without a GPU: their CUDA tensors in host memory.

cuTile's tests and samples make their tensors with device="cuda", pass
torch.cuda.current_stream() and time with CUDA events. Here those tensors are made in host memory
instead (torch's factories, make_tensor, .cuda() and .to("cuda") are redirected) and still say
they are CUDA tensors (`is_cuda`, which the samples check), the stream calls answer None, events
read the host clock and the device reports itself as an H100 (compute capability 9.0, 132 SMs:
what the programs are tuned for), attention may fall back to the math backend (cuDNN's is CUDA's), so that with TILEWORKBENCH_INTERPRET=1 each launch runs on the interpreter over host
tensors. Programs that need a real device (CUDA graphs, streams, device properties) still fail,
and say so.

    pytest -p cutile_cpu_torch ...                                  # cuTile's tests (conformance runner)
    python benchmarks/cutile_cpu_torch.py SCRIPT [ARGS...]          # a script, through the cuda.tile alias
"""
import functools
import runpy
import sys
import time
import types

import torch
import torch.nn.attention
import torch.testing

_FACTORIES = ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "tensor", "arange", "as_tensor",
              "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
              "linspace", "eye", "randperm", "empty_strided", "normal")
CAPABILITY = (9, 0)
DEVICE = types.SimpleNamespace(name="host (standing for an H100)", major=9, minor=0, multi_processor_count=132,
                               total_memory=80 << 30)


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
    @functools.wraps(sdpa_kernel)
    def choose(backends, *args, **kwargs):
        backends = list(backends) if isinstance(backends, (list, tuple)) else [backends]
        return sdpa_kernel(backends + [torch.nn.attention.SDPBackend.MATH], *args, **kwargs)
    return choose


def redirect_to_host() -> None:
    """Make this process's CUDA tensors host tensors (see the module's docstring)."""
    for name in _FACTORIES:
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


def pytest_load_initial_conftests(early_config, parser, args):
    redirect_to_host()


def run_script(argv: list[str]) -> None:
    """Run `SCRIPT ARGS...` with its CUDA tensors on the host and `import cuda.tile` on tileworkbench."""
    redirect_to_host()
    sys.argv = ["tileworkbench.cutile_alias", *argv]
    runpy.run_module("tileworkbench.cutile_alias", run_name="__main__")


if __name__ == "__main__":
    run_script(sys.argv[1:])
