"""Arguments cuTile accepts from PyTorch: fp8 tensors (whose __cuda_array_interface__ raises) and
tensors that require grad."""
import numpy as np
import pytest

import tileworkbench.tile as ct


@ct.kernel
def copy_tile(x, y):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (64,)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["float8_e4m3fn", "float8_e5m2", "float32"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_torch_fp8_and_grad_tensors_launch(dtype_name, requires_grad):
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, dtype_name)
    x = (torch.arange(128, device="cuda", dtype=torch.float32) / 8).to(dtype)
    if requires_grad:
        if not dtype.is_floating_point or dtype.itemsize == 1:
            pytest.skip("autograd takes no fp8 tensors")
        x.requires_grad_(True)
    y = torch.zeros(128, device="cuda", dtype=dtype)
    ct.launch(torch.cuda.current_stream(), (2,), copy_tile, (x, y))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(y.float().cpu().numpy(), x.detach().float().cpu().numpy())
