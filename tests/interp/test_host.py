"""Launches on the interpreter with other arrays than NumPy's: PyTorch CPU tensors in place, and
TILEWORKBENCH_INTERPRET=1 for every launch (device arrays are exercised in tests/gpu)."""
import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.arguments import interpret_requested
from tileworkbench.interp.host import written_params

torch = pytest.importorskip("torch")


@ct.kernel
def scale_into(x, y, z, n: int):
    t = ct.load(x, (0,), (8,))
    ct.store(y.slice(0, 0, n), (0,), t * 2)
    ct.store(z, (0,), ct.load(z, (0,), (8,)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_cpu_tensors_run_on_the_interpreter_in_place(dtype):
    x = torch.arange(8, dtype=dtype)
    y = torch.zeros(8, dtype=dtype)
    ct.launch(None, (1,), scale_into, (x, y, torch.ones(8, dtype=dtype), 5))
    assert y.tolist() == [0, 2, 4, 6, 8, 0, 0, 0]


def test_written_params_follow_slices_to_the_argument():
    x = np.zeros(8, np.float32)
    assert written_params(scale_into.specialize((x, x, x, 5))) == {"y", "z"}


@ct.kernel
def copy_by_block(sources, targets):
    b = ct.bid(0)
    ct.store(targets[b], (0,), ct.load(sources[b], (0,), (4,)))


def test_written_params_are_every_array_of_a_list_stored_through_at_a_run_time_index():
    arrays = [np.zeros(4, np.float32)] * 2
    assert written_params(copy_by_block.specialize((arrays, arrays))) == {"targets[0]", "targets[1]"}


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("0", False), ("", False), ("off", False)])
def test_the_interpreter_switch_reads_the_environment(monkeypatch, value, on):
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", value)
    assert interpret_requested() is on


def test_with_the_switch_numpy_and_torch_arguments_mix(monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    x, y = np.arange(8, dtype=np.float32), torch.zeros(8)
    ct.launch(None, (1,), scale_into, (x, y, np.ones(8, np.float32), 8))
    assert y.tolist() == (x * 2).tolist()


def test_a_torch_dtype_called_in_tile_code_converts_like_the_tile_dtype():
    @ct.kernel
    def k(x):
        ct.store(x, (0,), ct.full((8,), torch.float16(2.5), x.dtype) + torch.float32())
    x = np.zeros(8, np.float32)
    ct.launch(None, (1,), k, (x,))
    assert (x == 2.5).all()


def test_the_interpreter_switch_follows_the_environment_as_it_changes(monkeypatch):
    monkeypatch.delenv("TILEWORKBENCH_INTERPRET", raising=False)
    assert not interpret_requested()
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "yes")
    assert interpret_requested()
    monkeypatch.delenv("TILEWORKBENCH_INTERPRET")
    assert not interpret_requested()


def test_with_the_switch_device_tensors_that_require_grad_are_read_and_written(monkeypatch):
    """As on the GPU: a tensor that requires grad (its __cuda_array_interface__ raises) is an array
    argument; here host tensors stand for device tensors (they say they are on CUDA)."""
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    x = torch.arange(8, dtype=torch.float32, requires_grad=True)
    y = torch.zeros(8, requires_grad=True)
    ct.launch(None, (1,), scale_into, (x, y, torch.ones(8), 8))
    assert y.tolist() == [0, 2, 4, 6, 8, 10, 12, 14] and y.requires_grad


def device_stand_ins(monkeypatch):
    """Host tensors stand for device tensors: they say they are on CUDA, and their host copy is a copy."""
    monkeypatch.setenv("TILEWORKBENCH_INTERPRET", "1")
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(torch.Tensor, "cpu", lambda self: self.clone())


@ct.kernel
def halves(a, b):
    ct.store(a, (0,), ct.full((4,), 1, a.dtype))
    ct.store(b, (1,), ct.full((4,), 2, b.dtype))


def test_with_the_switch_a_device_tensor_passed_twice_keeps_the_writes_through_both(monkeypatch):
    """As on the GPU, where both parameters are one buffer: copied once and viewed twice on the host,
    so the copy-back of one does not undo the other's half."""
    device_stand_ins(monkeypatch)
    t = torch.zeros(8)
    ct.launch(None, (1,), halves, (t, t))
    assert t.tolist() == [1, 1, 1, 1, 2, 2, 2, 2]


@ct.kernel
def copy_forward(src, dst):
    ct.store(dst, (0,), ct.load(src, (0,), (4,)))


def test_with_the_switch_overlapping_views_of_one_tensor_are_viewed_on_the_host_as_on_the_device(monkeypatch):
    device_stand_ins(monkeypatch)
    t = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    ct.launch(None, (1,), copy_forward, (t[0], t[2]))
    assert t[2].tolist() == [0, 1, 2, 3] and t[1].tolist() == [4, 5, 6, 7]
