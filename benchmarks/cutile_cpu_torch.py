"""pytest plugin for the conformance runner's --cpu: cuTile's tests on a machine without a GPU.

cuTile's tests make their tensors with device="cuda" and pass torch.cuda.current_stream(); here
those tensors are made in host memory instead (torch's factories, make_tensor, .cuda() and
.to("cuda") are redirected) and the stream calls answer None, so that with
TILEWORKBENCH_INTERPRET=1 each launch runs on the interpreter over host tensors. Tests that need a
real device (CUDA graphs, streams, device properties) still fail, and say so.
"""
import functools

import torch
import torch.testing

_FACTORIES = ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "tensor", "arange", "as_tensor",
              "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
              "linspace", "eye", "randperm", "empty_strided", "normal")


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


def pytest_load_initial_conftests(early_config, parser, args):
    for name in _FACTORIES:
        setattr(torch, name, _on_host(getattr(torch, name)))
    torch.testing.make_tensor = _on_host(torch.testing.make_tensor)
    torch.Tensor.to = _to(torch.Tensor.to)
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    torch.cuda.current_stream = lambda *args, **kwargs: None
    torch.cuda.synchronize = lambda *args, **kwargs: None
    torch.cuda.is_available = lambda: True
