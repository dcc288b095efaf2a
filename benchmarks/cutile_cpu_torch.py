"""cuTile programs on a machine without a GPU: their CUDA tensors in host memory.

cuTile's tests and samples make their tensors with device="cuda", pass
torch.cuda.current_stream() and time with CUDA events. Here those tensors are made in host memory
instead (torch's factories, make_tensor, .cuda() and .to("cuda") are redirected) and still say
they are CUDA tensors (`is_cuda`, which the samples check), the stream calls answer None, events
read the host clock and the device reports itself as an H100 (compute capability 9.0, 132 SMs:
what the programs are tuned for), attention may fall back to the math backend (cuDNN's is CUDA's), so that with TILEWORKBENCH_INTERPRET=1 each launch runs on the interpreter over host
tensors. Programs that need a real device (CUDA graphs, streams, device properties) still fail,
and say so.

Scripts (not cuTile's tests) also get their torch references computed as accurately as on CUDA:
half-precision matmuls summed exactly, float32 matmuls from TF32 inputs under
set_float32_matmul_precision("high"), 16-bit layer_norm in float32. torch's CPU kernels sum in
other orders and precisions than CUDA's, by more than the samples' tolerances (1e-5 for float16
matmuls), so the check would otherwise measure the CPU reference, not the kernel.

    pytest -p cutile_cpu_torch ...                                  # cuTile's tests (conformance runner)
    python benchmarks/cutile_cpu_torch.py SCRIPT [ARGS...]          # a script, through the cuda.tile alias
    python benchmarks/cutile_cpu_torch.py --compile-for sm_90 SCRIPT [ARGS...]   # and NVRTC-compile its kernels
"""
import functools
import os
import runpy
import sys
import time
import types

import torch
import torch.nn.attention
import torch.nn.functional
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


_HALF = (torch.float16, torch.bfloat16)


def _tf32(x):
    """float32 values rounded to TF32's 10 mantissa bits (to nearest, ties to even), as CUDA's
    tensor cores take them."""
    bits = x.contiguous().view(torch.int32).to(torch.int64)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & ~0x1FFF
    return torch.where(torch.isfinite(x), rounded.to(torch.int32).view(torch.float32), x)


def _as_on_cuda_matmul(matmul):
    """A matmul reference as accurate as CUDA's: half-precision products summed exactly and rounded
    once (the CPU's own sum order differs from the GPU's by more than the programs' 1e-5 tolerance),
    float32 products from TF32 inputs unless torch's float32 matmul precision is "highest"."""
    @functools.wraps(matmul)
    def as_on_cuda(a, b, *args, **kwargs):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype != b.dtype or args or kwargs:
            return matmul(a, b, *args, **kwargs)
        if a.dtype in _HALF:
            return matmul(a.double(), b.double()).to(a.dtype)
        if a.dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest":
            return matmul(_tf32(a).double(), _tf32(b).double()).float()
        return matmul(a, b)
    return as_on_cuda


def _as_on_cuda_layer_norm(layer_norm):
    """layer_norm accumulating in float32 for 16-bit inputs, as CUDA's kernels do (the CPU's sums
    bfloat16 weight gradients in bfloat16)."""
    @functools.wraps(layer_norm)
    def as_on_cuda(x, shape, weight=None, bias=None, eps=1e-5):
        if x.dtype not in _HALF:
            return layer_norm(x, shape, weight, bias, eps)
        wide = [t.float() if t is not None else None for t in (weight, bias)]
        return layer_norm(x.float(), shape, *wide, eps).to(x.dtype)
    return as_on_cuda


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


def compute_references_as_on_cuda() -> None:
    """The programs' torch references computed with CUDA's accuracy (matmul, layer_norm): see above."""
    torch.matmul = _as_on_cuda_matmul(torch.matmul)
    torch.Tensor.__matmul__ = _as_on_cuda_matmul(torch.Tensor.__matmul__)
    torch.nn.functional.layer_norm = _as_on_cuda_layer_norm(torch.nn.functional.layer_norm)


def pytest_load_initial_conftests(early_config, parser, args):
    redirect_to_host()


def compile_launched_kernels(arch: str) -> None:
    """Also compile (NVRTC, no GPU) every kernel specialization the program launches, for `arch`,
    printing one `[compile ARCH] ...` line each to stderr: what the GPU would run, checked offline."""
    from tileworkbench.interp import host
    from tileworkbench.runtime.launch import build
    from tileworkbench.runtime.nvrtc import TIMEOUT_ENV
    from tileworkbench.targets import arch_limits
    interpret, compiled = host.run_anywhere, set()

    def interpret_and_compile(fn, grid, args):
        interpret(fn, grid, args)
        if fn.fingerprint() in compiled:
            return
        compiled.add(fn.fingerprint())
        limit = os.environ.pop(TIMEOUT_ENV, None)  # an offline check: the program's compiler timeout is for its launches
        try:
            compiled_kernel = build(fn, arch)
        except Exception as e:
            print(f"[compile {arch}] {fn.name}: failed: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
            return
        finally:
            if limit is not None:
                os.environ[TIMEOUT_ENV] = limit
        smem = compiled_kernel.shared_bytes
        most = arch_limits(arch).shared_per_block_optin  # opt-in dynamic shared memory per block
        verdict = "ok" if smem <= most else f"failed: needs {smem} bytes of shared memory, more than {arch}'s {most}"
        spills = f", {compiled_kernel.spill_stores} bytes of spill stores" if compiled_kernel.spill_stores else ""
        print(f"[compile {arch}] {fn.name}: {verdict} ({compiled_kernel.threads} threads, "
              f"{compiled_kernel.registers} registers, "
              f"{smem} bytes of shared memory{spills})", file=sys.stderr)
    host.run_anywhere = interpret_and_compile


def run_script(argv: list[str], compile_for: str | None = None) -> None:
    """Run `SCRIPT ARGS...` with its CUDA tensors on the host and `import cuda.tile` on tileworkbench."""
    redirect_to_host()
    compute_references_as_on_cuda()
    if compile_for:
        compile_launched_kernels(compile_for)
    sys.argv = ["tileworkbench.cutile_alias", *argv]
    runpy.run_module("tileworkbench.cutile_alias", run_name="__main__")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    arch = None
    if arguments[:1] == ["--compile-for"]:
        arch, arguments = arguments[1], arguments[2:]
    run_script(arguments, arch)
