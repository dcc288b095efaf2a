"""The compiled record: one per compiled kernel, the same for tile kernels and C++ cells, with the
resources, shared memory and occupancy worked out once (here) and every stage's text by name."""
import ast
from pathlib import Path

import numpy as np
import pytest

from tileworkbench.kernels import vector_add
from tileworkbench.runtime.compiled import CompiledKernel
from tileworkbench.runtime.cubin import Resources
from tileworkbench.runtime.occupancy import theoretical_occupancy
from tileworkbench.targets import arch_limits

PACKAGE = Path(__file__).parents[2] / "tileworkbench"


def _args(n=1024, tile=256):
    return np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32), tile


def test_a_record_counts_static_and_dynamic_shared_memory_and_works_out_its_occupancy():
    resources = Resources(registers=128, shared_static_bytes=4352, local_bytes=0)
    compiled = CompiledKernel("k", "k", "sm_90", b"", resources, threads=256, dynamic_shared_bytes=40960)
    assert compiled.shared_bytes == 4352 + 40960
    assert compiled.occupancy == theoretical_occupancy("sm_90", 256, 128, 4352 + 40960)
    assert compiled.occupancy.limiter == "registers" and compiled.occupancy.blocks_per_sm == 2


def test_a_record_has_the_occupancy_of_the_block_it_is_launched_with():
    large = CompiledKernel("k", "k", "sm_80", b"", Resources(32, 0, 0), threads=1024)
    small = CompiledKernel("k", "k", "sm_80", b"", Resources(32, 0, 0), threads=128)
    assert large.occupancy.blocks_per_sm == 2 and large.occupancy.limiter == "warps"
    assert small.occupancy.blocks_per_sm == arch_limits("sm_80").max_blocks_per_sm // 2 == 16


def test_build_returns_one_record_with_every_stage_text():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    from tileworkbench.runtime.launch import build
    fn = vector_add.specialize(_args())
    compiled = build(fn, "sm_90")
    assert isinstance(compiled, CompiledKernel) and compiled.kernel == "vector_add"
    assert "vector_add" in compiled.asm["ir"]
    assert "__global__" in compiled.asm["cuda"] and f".entry {compiled.name}" in compiled.asm["ptx"]
    assert compiled.registers == compiled.resources.registers > 0
    assert compiled.occupancy == theoretical_occupancy("sm_90", compiled.threads, compiled.registers,
                                                       compiled.shared_bytes)
    assert set(compiled.asm) >= {"ir", "cuda", "ptx", "log", "sass"}


def test_from_cubin_reads_resources_and_the_spills_ptxas_reported():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    from tileworkbench.runtime.nvrtc import compile_cuda
    source = ('extern "C" __global__ void k(float* x) { __shared__ float s[64]; s[threadIdx.x] = x[threadIdx.x]; '
              '__syncthreads(); x[threadIdx.x] = s[63 - threadIdx.x]; }')
    module = compile_cuda(source, arch="sm_80")
    compiled = CompiledKernel.from_cubin("k", module.cubin, "sm_80", 64, texts={"cuda": source, "log": module.log})
    assert compiled.resources == module.kernels["k"]
    assert compiled.static_shared_bytes == 256 and compiled.spill_stores == 0
    assert compiled.asm["cuda"] == source


def test_a_cpp_cell_makes_the_same_record():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC")
    from tileworkbench.runtime.cpp import CppKernel
    kernel = CppKernel('extern "C" __global__ void __launch_bounds__(128) inc(int* p) { p[threadIdx.x] += 1; }',
                       "<c>")
    compiled = kernel.compiled("sm_90")
    assert isinstance(compiled, CompiledKernel) and compiled.name == "inc" and compiled.threads == 128
    assert compiled.occupancy == theoretical_occupancy("sm_90", 128, compiled.registers, compiled.shared_bytes)
    assert ".entry inc" in compiled.asm["ptx"]


def _calls_outside_runtime(name: str) -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "runtime":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name:
                found.append(str(path.relative_to(PACKAGE)))
    return found


def test_only_the_runtime_and_the_what_if_curves_work_out_occupancy():
    assert set(_calls_outside_runtime("theoretical_occupancy")) == {"profile/occupancy.py"}  # occupancy_curve


def test_nothing_outside_the_runtime_adds_up_shared_memory():
    readers = [f"{p.relative_to(PACKAGE)}" for p in PACKAGE.rglob("*.py")
               if p.relative_to(PACKAGE).parts[0] != "runtime" and "shared_static_bytes" in p.read_text()]
    assert readers == []
