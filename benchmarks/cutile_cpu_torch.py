"""cuTile's tests and samples without a GPU, through the product's `--cpu` mode
(tileworkbench/cutile_alias/cpu.py: CUDA tensors made in host memory, every launch on the
interpreter), plus what only the benchmark runners need: a pytest plugin for cuTile's tests and an
offline NVRTC compile of every kernel a sample launches.

    pytest -p cutile_cpu_torch ...                                  # cuTile's tests (conformance runner)
    python benchmarks/cutile_cpu_torch.py SCRIPT [ARGS...]          # a script: cutile_alias --cpu SCRIPT
    python benchmarks/cutile_cpu_torch.py --compile-for sm_90 SCRIPT [ARGS...]   # and NVRTC-compile its kernels
"""
import os
import runpy
import sys

from tileworkbench.cutile_alias.cpu import redirect_to_host


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
    """Run `SCRIPT ARGS...` as `python -m tileworkbench.cutile_alias --cpu` does."""
    if compile_for:
        compile_launched_kernels(compile_for)
    sys.argv = ["tileworkbench.cutile_alias", "--cpu", *argv]
    runpy.run_module("tileworkbench.cutile_alias", run_name="__main__")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    arch = None
    if arguments[:1] == ["--compile-for"]:
        arch, arguments = arguments[1], arguments[2:]
    run_script(arguments, arch)
