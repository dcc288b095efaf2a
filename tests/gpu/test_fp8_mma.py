"""fp8 mma on the GPU's tensor cores against cuBLAS's fp8 GEMM (torch._scaled_mm, scales 1) at the
tolerance of cuTile's BatchMatMul sample, and against float64 where every sum is exact. Each runs
the path the GPU takes by default (wgmma on sm_90) and the mma.sync path of sm_89 (on sm_90 too:
the code generated for sm_89, compiled for the GPU at hand)."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import batch_matmul

from . import test_differential
from .cases import CASES, matmul_k_reversed, small_integers

torch = pytest.importorskip("torch")

# (batch, M, K, N), tiles: the BatchMatMul sample's case first
SHAPES = [((4, 512, 256, 1024), (128, 256, 128)), ((4, 512, 256, 1024), (128, 128, 64)),
          ((2, 256, 512, 512), (64, 128, 128)), ((3, 200, 160, 264), (64, 64, 32)), ((1, 384, 1024, 256), (128, 256, 64))]
FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def _fp8_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 tensor cores need sm_89 or later")


def _generate_for_sm89(monkeypatch, kernels):
    """Launch `kernels` as generated for sm_89 (mma.sync), compiled for the GPU at hand."""
    from tileworkbench.runtime import launch
    real_generate = launch.generate
    monkeypatch.setattr(launch, "generate", lambda fn, threads=None, arch=None: real_generate(fn, threads=threads,
                                                                                               arch="sm_89"))
    monkeypatch.setattr(launch, "_loaded", {})
    for kernel in kernels:
        monkeypatch.setattr(kernel, "launchers", {})


@pytest.fixture(params=["default", "mma.sync"])
def path(request, monkeypatch):
    """The GPU's own path, or the code generated for sm_89 (pipelined mma.sync) on any fp8 GPU."""
    _fp8_gpu()
    if request.param == "mma.sync":
        _generate_for_sm89(monkeypatch, (batch_matmul, matmul_k_reversed))
    return request.param


FP8_CASES = [c for c in CASES if "float8" in c.id and "matmul" in c.id]


@pytest.mark.gpu
@pytest.mark.parametrize("case", FP8_CASES, ids=[c.id for c in FP8_CASES])
def test_fp8_cases_generated_for_sm89_match_the_interpreter_bit_for_bit(case, monkeypatch):
    """tests/gpu/test_differential.py runs these on the GPU's own path; here as sm_89 runs them."""
    _fp8_gpu()
    _generate_for_sm89(monkeypatch, (case.kernel,))
    test_differential.test_gpu_matches_interpreter(case)


def _bmm(a, b, tiles):
    batch, m, _ = a.shape
    c = torch.empty((batch, m, b.shape[2]), device=a.device, dtype=torch.float32)
    grid = (batch, ct.cdiv(m, tiles[0]), ct.cdiv(b.shape[2], tiles[1]))
    ct.launch(torch.cuda.current_stream(), grid, batch_matmul, (a, b, c, *tiles))
    return c


def _scaled_mm(a, b):
    """cuBLAS's fp8 GEMM per batch entry, float32 out, per-tensor scales 1 (B column-major, as it asks)."""
    one = torch.tensor(1.0, device=a.device)
    return torch.stack([torch._scaled_mm(a[i], b[i].t().contiguous().t(), scale_a=one, scale_b=one,
                                         out_dtype=torch.float32) for i in range(a.shape[0])])


@pytest.mark.gpu
@pytest.mark.parametrize("shape, tiles", SHAPES, ids=[f"{'x'.join(map(str, s))}-tiles-{'x'.join(map(str, t))}"
                                                      for s, t in SHAPES])
def test_fp8_mma_matches_cublas_scaled_mm_at_the_batchmatmul_samples_tolerance(shape, tiles, path):
    batch, m, k, n = shape
    torch.manual_seed(0)
    a = torch.randn(batch, m, k, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(batch, k, n, device="cuda").to(torch.float8_e4m3fn)
    torch.testing.assert_close(_bmm(a, b, tiles), _scaled_mm(a, b), rtol=1.3e-6, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", FP8)
@pytest.mark.parametrize("shape, tiles", SHAPES, ids=[f"{'x'.join(map(str, s))}-tiles-{'x'.join(map(str, t))}"
                                                      for s, t in SHAPES])
def test_fp8_mma_of_exactly_summable_data_equals_float64_bit_for_bit(shape, tiles, kind, path):
    batch, m, k, n = shape
    dtype = ct.float8_e4m3fn.numpy if kind == "e4m3" else ct.float8_e5m2.numpy
    a, b = small_integers((batch, m, k), dtype), small_integers((batch, k, n), dtype)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    to_gpu = lambda x: torch.from_numpy(x.view(np.uint8)).cuda().view(FP8[kind])  # noqa: E731
    got = _bmm(to_gpu(a), to_gpu(b), tiles).cpu().numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", FP8)
def test_fp8_operands_copied_at_each_call_match_float64(kind, path):
    """The register-operand path (operand index computed in the loop): random fp8 data, float32 sums,
    within float32's accumulation error of the float64 result."""
    dtype = ct.float8_e4m3fn.numpy if kind == "e4m3" else ct.float8_e5m2.numpy
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((200, 256)).astype(dtype), rng.standard_normal((256, 136)).astype(dtype)
    want = a.astype(np.float64) @ b.astype(np.float64)
    to_gpu = lambda x: torch.from_numpy(x.view(np.uint8)).cuda().view(FP8[kind])  # noqa: E731
    c = torch.zeros((200, 136), device="cuda", dtype=torch.float32)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(200, 128), ct.cdiv(136, 64)), matmul_k_reversed,
              (to_gpu(a), to_gpu(b), c, 128, 64, 64))
    bound = 256 * 2.0 ** -23 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))  # K * eps * sum |ab|
    assert np.all(np.abs(c.cpu().numpy() - want) <= bound)
