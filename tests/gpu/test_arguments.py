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


@ct.kernel
def list_copy(sources, targets, N: ct.Constant[int]):
    for i in range(len(sources)):
        ct.store(targets[i], (0,), ct.load(sources[i], (0,), (N,)))


@pytest.mark.gpu
def test_lists_of_torch_tensors_launch_with_their_own_strides_and_relaunch_with_new_tensors():
    torch = pytest.importorskip("torch")
    stream = torch.cuda.current_stream()
    for _ in range(2):  # the second launch takes the launcher made by the first
        sources = [torch.rand(8, device="cuda"), torch.rand(16, device="cuda")[::2], torch.rand(8, device="cuda")]
        targets = [torch.zeros(8, device="cuda"), torch.zeros(24, device="cuda")[::3], torch.zeros(8, device="cuda")]
        ct.launch(stream, (1,), list_copy, (sources, targets, 8))
        torch.cuda.synchronize()
        for source, target in zip(sources, targets):
            assert torch.equal(source, target)


@pytest.mark.gpu
def test_a_list_launch_is_refused_in_cuda_graph_capture_as_cutile_refuses_it():
    torch = pytest.importorskip("torch")
    x = torch.rand(8, device="cuda")
    y = torch.empty_like(x)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="List argument in CUDAGraph isn't supported yet"):
        with torch.cuda.graph(graph):
            ct.launch(torch.cuda.current_stream(), (1,), list_copy, ([x], [y], 8))


@pytest.mark.gpu
def test_the_interpreter_switch_copies_back_the_arrays_of_a_list_the_kernel_writes(monkeypatch):
    torch = pytest.importorskip("torch")
    sources = [torch.rand(8, device="cuda") for _ in range(2)]
    targets = [torch.zeros(8, device="cuda") for _ in range(2)]
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    ct.launch(torch.cuda.current_stream(), (1,), list_copy, (sources, targets, 8))
    for source, target in zip(sources, targets):
        assert torch.equal(source, target)


@ct.kernel
def count_into(x, counts):
    ct.atomic_add(counts, ct.load(x, (ct.bid(0),), (4,)), 1)


@pytest.mark.gpu
def test_an_array_only_atomics_update_is_copied_back_under_the_interpreter_switch(monkeypatch):
    cupy = pytest.importorskip("cupy")
    x = cupy.asarray(np.array([0, 1, 1, 0, 1, 1, 1, 0], np.int32))
    counts = cupy.zeros(2, cupy.int32)
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    ct.launch(cupy.cuda.get_current_stream(), (2,), count_into, (x, counts))
    assert counts.get().tolist() == [3, 5]
