"""The cubin resource parser against ptxas's own report, for sm_80 and sm_90 (no GPU needed)."""
import os
import re
import shutil
import subprocess

import pytest

from tileworkbench.runtime.cubin import Resources, cubin_arch, read_resources, resources_from_ptxas_log
from tileworkbench.runtime.nvrtc import compile_cuda, unavailable_reason

NVRTC_MISSING = unavailable_reason()
requires_nvrtc = pytest.mark.skipif(NVRTC_MISSING is not None, reason=f"needs NVRTC: {NVRTC_MISSING}")

KERNELS = r"""
// An 8x16 tile of float accumulators per thread: 128 live values.
__device__ __forceinline__ void tile_product(const float* a, const float* b, float* c, int k) {
    float acc[8][16] = {};
    for (int p = 0; p < k; ++p) {
        float x[8], y[16];
        #pragma unroll
        for (int i = 0; i < 8; ++i) x[i] = a[(p * 8 + i) * 256 + threadIdx.x];
        #pragma unroll
        for (int j = 0; j < 16; ++j) y[j] = b[(p * 16 + j) * 256 + threadIdx.x];
        #pragma unroll
        for (int i = 0; i < 8; ++i)
            #pragma unroll
            for (int j = 0; j < 16; ++j) acc[i][j] += x[i] * y[j];
    }
    #pragma unroll
    for (int i = 0; i < 8; ++i)
        #pragma unroll
        for (int j = 0; j < 16; ++j) c[(i * 16 + j) * 256 + threadIdx.x] = acc[i][j];
}

// The tile stays in registers.
extern "C" __global__ void many_registers(const float* a, const float* b, float* c, int k) {
    tile_product(a, b, c, k);
}

// The same tile squeezed into 32 registers: the rest spills to local memory.
extern "C" __global__ void __maxnreg__(32) spills(const float* a, const float* b, float* c, int k) {
    tile_product(a, b, c, k);
}

// 4096 + 256 bytes of static shared memory, at most 128 threads per block.
extern "C" __global__ void __launch_bounds__(128) shared_arrays(float* out) {
    __shared__ float a[1024];
    __shared__ int b[64];
    a[threadIdx.x] = threadIdx.x;
    b[threadIdx.x % 64] = 1;
    __syncthreads();
    out[threadIdx.x] = a[1023 - threadIdx.x] + b[(threadIdx.x + 1) % 64];
}

// A dynamically indexed array cannot live in registers: a 1 KB stack frame.
extern "C" __global__ void local_array(float* out, const int* index) {
    float buffer[256];
    for (int i = 0; i < 256; ++i) buffer[index[i] & 255] = out[i];
    float sum = 0;
    for (int i = 0; i < 256; ++i) sum += buffer[index[i + 256] & 255];
    out[threadIdx.x] = sum;
}
"""

# What `ptxas -v` printed for KERNELS, by the NVRTC version that made the PTX. Recorded with ptxas 13.0
# (V13.0.88) on NVRTC 13.0's PTX, then on NVRTC 13.5's PTX (ISA relabelled 9.0, see run_ptxas): both
# runs matched each NVRTC's own ptxas -v output. max_threads is the cubin's (ptxas -v does not print it).
RECORDED_13_0 = {
    "sm_80": {
        "many_registers": Resources(166, 0, 0, spill_stores=0, spill_loads=0),
        "spills": Resources(32, 0, 568, spill_stores=1560, spill_loads=1092),
        "shared_arrays": Resources(14, 4352, 0, spill_stores=0, spill_loads=0, max_threads=128),
        "local_array": Resources(32, 0, 1024, spill_stores=0, spill_loads=0),
    },
    "sm_90": {
        "many_registers": Resources(168, 0, 0, spill_stores=0, spill_loads=0),
        "spills": Resources(32, 0, 568, spill_stores=1576, spill_loads=1108),
        "shared_arrays": Resources(14, 4352, 0, spill_stores=0, spill_loads=0, max_threads=128),
        "local_array": Resources(32, 0, 1024, spill_stores=0, spill_loads=0),
    },
}
RECORDED_13_5 = {**RECORDED_13_0, "sm_90": {**RECORDED_13_0["sm_90"], "shared_arrays": Resources(
    16, 4352, 0, spill_stores=0, spill_loads=0, max_threads=128)}}
RECORDED = {(13, 0): RECORDED_13_0, (13, 4): RECORDED_13_5, (13, 5): RECORDED_13_5}
RECORDING_PTXAS = "13.0"

PTXAS = shutil.which("ptxas") or next(
    (p for p in ["/usr/local/cuda-13.0/bin/ptxas"] if os.access(p, os.X_OK)), None)


@pytest.fixture(scope="module", params=["sm_80", "sm_90"])
def module(request):
    if NVRTC_MISSING:
        pytest.skip(f"needs NVRTC: {NVRTC_MISSING}")
    return compile_cuda(KERNELS, arch=request.param)


def test_numbers_fixed_by_the_source_are_read_exactly(module):
    kernels = module.kernels
    assert kernels["shared_arrays"].shared_static_bytes == 4096 + 256
    assert kernels["shared_arrays"].max_threads == 128
    assert kernels["local_array"].local_bytes == 256 * 4
    assert kernels["spills"].registers == 32
    assert kernels["spills"].spill_stores > 0 and kernels["spills"].local_bytes > 0
    assert kernels["many_registers"].registers > 128 and kernels["many_registers"].local_bytes == 0
    assert {n for n, r in kernels.items() if r.shared_static_bytes} == {"shared_arrays"}
    assert {n for n, r in kernels.items() if r.max_threads} == {"shared_arrays"}


def test_cubin_agrees_with_the_ptxas_report_in_the_nvrtc_log(module):
    # NVRTC's log holds ptxas -v's report of the very compile that made the cubin.
    reported = resources_from_ptxas_log(module.log)
    assert reported == {name: r._replace(max_threads=None) for name, r in module.kernels.items()}


def test_numbers_match_the_recorded_ptxas_run(module):
    if module.nvrtc_version not in RECORDED:
        recorded = ", ".join(f"{major}.{minor}" for major, minor in RECORDED)
        pytest.skip(f"registers and spills depend on the compiler: recorded for NVRTC {recorded}, "
                    f"this is {module.nvrtc_version}")
    assert module.kernels == RECORDED[module.nvrtc_version][module.arch]


def run_ptxas(ptx: str, arch: str, folder) -> tuple[str, bytes]:
    """ptxas -v on `ptx`: (its report, the cubin it wrote)."""
    for _ in range(2):
        (folder / "k.ptx").write_text(ptx)
        command = [PTXAS, "--gpu-name", arch, "-v", str(folder / "k.ptx"), "-o", str(folder / "k.cubin")]
        run = subprocess.run(command, capture_output=True, text=True, check=False)
        if run.returncode == 0:
            return run.stdout + run.stderr, (folder / "k.cubin").read_bytes()
        newest = re.search(r"Unsupported \.version \S+; current version is '([\d.]+)'", run.stderr)
        if not newest:
            pytest.fail(run.stderr)
        # An older ptxas refuses a newer PTX ISA number; these kernels use nothing newer, so relabel.
        ptx = re.sub(r"^\.version \S+", f".version {newest.group(1)}", ptx, count=1, flags=re.MULTILINE)
    pytest.fail(run.stderr)


@pytest.mark.skipif(PTXAS is None, reason="needs ptxas (on PATH or in /usr/local/cuda-13.0/bin) for this "
                    "comparison; the recorded numbers are still checked")
def test_parser_reads_what_ptxas_reports_for_its_own_cubin(module, tmp_path):
    report, cubin = run_ptxas(module.ptx, module.arch, tmp_path)
    reported = resources_from_ptxas_log(report)
    parsed = read_resources(cubin)
    assert {n: r._replace(max_threads=None) for n, r in parsed.items()} == \
        {n: r._replace(spill_stores=None, spill_loads=None) for n, r in reported.items()}
    assert parsed["shared_arrays"].max_threads == 128
    version = subprocess.run([PTXAS, "--version"], capture_output=True, text=True, check=True).stdout
    release = re.search(r"release (\d+\.\d+)", version)
    if release and release.group(1) == RECORDING_PTXAS and module.nvrtc_version in RECORDED:
        recorded = RECORDED[module.nvrtc_version][module.arch]
        assert reported == {n: r._replace(max_threads=None) for n, r in recorded.items()}


@requires_nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_cubin_arch_names_the_target(arch):
    assert cubin_arch(compile_cuda('extern "C" __global__ void k() {}', arch=arch).cubin) == arch


def test_not_a_cubin_is_refused():
    with pytest.raises(ValueError, match="not a cubin"):
        read_resources(b"\x7fELF" + bytes(100))
    with pytest.raises(ValueError, match="not a cubin"):
        read_resources(b"PK\x03\x04")


def test_ptxas_report_parser_reads_both_layouts():
    standalone = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_80'
ptxas info    : Function properties for _Z1kPf
    568 bytes stack frame, 1560 bytes spill stores, 1092 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 4352 bytes smem, 380 bytes cmem[0]
ptxas info    : Function properties for helper
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""
    from_nvrtc = standalone.replace("\n    568", "\nptxas         .     568")
    for log in (standalone, from_nvrtc):
        assert resources_from_ptxas_log(log) == {"_Z1kPf": Resources(32, 4352, 568, 1560, 1092)}
