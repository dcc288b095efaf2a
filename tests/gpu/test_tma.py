"""TMA pipeline stages on the GPU: matmuls whose operand stages are filled by the tensor copy engine
(sm_90) give exactly the products of small integers, for tile shapes from 64 to 256, ragged edges,
transposed and batched operands; arrays no tensor map describes run the cp.async variant, with the
same results; and the two variants agree bit for bit on any data (the same wgmma sequence).

On a GPU other than sm_90 the same launches run the cp.async stages (or mma.sync): the results
are checked all the same, the path taken only on sm_90."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import matmul
from tileworkbench.runtime.device import to_device, to_host

from .cases import BF16, RNG, matmul_transposed_b, small_integers

pytestmark = pytest.mark.gpu

# every one pipelined on sm_90; rows of 32, 64 and 128 bytes and more (the 32/64/128-byte swizzles)
TILES = [(64, 64, 16), (64, 64, 32), (64, 128, 64), (64, 256, 64), (128, 64, 128), (128, 128, 64), (128, 256, 64),
         (128, 256, 128), (128, 64, 256)]
SHAPES = [(256, 256, 512), (300, 200, 520)]  # (M, K, N): whole tiles, and ragged M, K and N


def _on_sm90() -> bool:
    from tileworkbench.runtime import driver
    return driver.device_arch() == "sm_90"


def _launch(kernel, grid, args):
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    stream = cp.cuda.get_current_stream()
    ct.launch(stream, grid, kernel, args)
    stream.synchronize()
    return kernel.last_launcher


def _exact_matmul(kernel, a_host, b_host, tiles, a_device=None, b_device=None, b_transposed=False):
    """Run C = A @ B (B given as (N, K) when `b_transposed`) on small integers and compare bit for
    bit with NumPy; returns the launcher that ran."""
    tm, tn, tk = tiles
    m, n = a_host.shape[0], b_host.shape[0] if b_transposed else b_host.shape[1]
    c = to_device(np.zeros((m, n), np.float32))
    a = to_device(a_host) if a_device is None else a_device
    b = to_device(b_host) if b_device is None else b_device
    launcher = _launch(kernel, (ct.cdiv(m, tm), ct.cdiv(n, tn)), (a, b, c, tm, tn, tk))
    b64 = b_host.astype(np.float64)
    want = (a_host.astype(np.float64) @ (b64.T if b_transposed else b64)).astype(np.float32)
    np.testing.assert_array_equal(to_host(c), want)
    return launcher


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("tiles", TILES, ids=["x".join(map(str, t)) for t in TILES])
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_tma_matmul_gives_exact_products_of_small_integers(dtype, tiles, shape):
    m, k, n = shape
    launcher = _exact_matmul(matmul, small_integers((m, k), dtype), small_integers((k, n), dtype), tiles)
    if _on_sm90():
        assert len(launcher.gpu.compiled.tensor_maps) == 2 and launcher.fallback is None


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("tiles", [(64, 64, 32), (128, 128, 64), (128, 256, 64)], ids=["64", "128", "256"])
def test_tma_matmul_with_b_given_transposed_gives_exact_products(dtype, tiles):
    launcher = _exact_matmul(matmul_transposed_b, small_integers((300, 200), dtype), small_integers((520, 200), dtype),
                             tiles, b_transposed=True)
    if _on_sm90():
        assert launcher.gpu.compiled.tensor_maps[1].box == (tiles[1], tiles[2]) and launcher.fallback is None


# its own launchers: the variant a launcher falls back to is kept on it
matmul_for_fallbacks = ct.kernel(matmul.__wrapped__)


def _misaligned_rows(dtype):
    """K = 130: rows of 260 bytes, not a multiple of 16."""
    return small_integers((300, 130), dtype), small_integers((130, 264), dtype), None, None


def _offset_base(dtype):
    """A view starting one element into its allocation: a base address not 16-byte aligned."""
    a, b = small_integers((300, 201), dtype), small_integers((200, 264), dtype)
    return a[:, 1:], b, to_device(a)[:, 1:], None


def _strided_columns(dtype):
    """B a view of every other column: its last axis is not contiguous."""
    a, b = small_integers((300, 200), dtype), small_integers((200, 528), dtype)
    return a, b[:, ::2], None, to_device(b)[:, ::2]


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("arrays", [_misaligned_rows, _offset_base, _strided_columns],
                         ids=["rows-of-260-bytes", "offset-base", "strided-columns"])
def test_arrays_no_tensor_map_describes_run_the_cp_async_variant_exactly(dtype, arrays):
    a_host, b_host, a_device, b_device = arrays(dtype)
    launcher = _exact_matmul(matmul_for_fallbacks, np.ascontiguousarray(a_host), np.ascontiguousarray(b_host),
                             (128, 128, 64), a_device, b_device)
    if _on_sm90():
        assert launcher.gpu.compiled.tensor_maps and launcher.fallback is not None
        assert not launcher.fallback.gpu.compiled.tensor_maps


def test_float32_matmul_on_cuda_cores_gives_exact_products():
    _exact_matmul(matmul, small_integers((100, 72), np.float32), small_integers((72, 80), np.float32), (32, 32, 16))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("tiles", [(64, 128, 64), (128, 256, 64)], ids=["64", "128"])
def test_tma_and_cp_async_variants_agree_bit_for_bit_on_random_data(dtype, tiles):
    """The same wgmma groups in the same order: only how the stages are filled differs."""
    cp = pytest.importorskip("cupy", reason="needs CuPy and a CUDA GPU")
    from tileworkbench.runtime import driver
    from tileworkbench.runtime.launch import Launcher, load
    tm, tn, tk = tiles
    a, b = to_device(RNG.standard_normal((500, 300)).astype(dtype)), to_device(RNG.standard_normal((300, 700)).astype(dtype))
    results = []
    for tma in (True, False):
        c = to_device(np.zeros((500, 700), np.float32))
        args = (a, b, c, tm, tn, tk)
        fn = matmul.specialize(args)
        launcher = Launcher(fn, load(fn, tma=tma), args, driver.current_device())
        launcher(cp.cuda.get_current_stream(), (ct.cdiv(500, tm), ct.cdiv(700, tn), 1), args)
        cp.cuda.get_current_stream().synchronize()
        results.append(to_host(c))
    np.testing.assert_array_equal(results[0].view(np.uint32), results[1].view(np.uint32))
