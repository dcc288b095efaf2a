"""A stand-in GPU for sweep tests: the interpreter plays the device. It pickles, so worker
processes (one per stand-in GPU) can use it too."""
import functools
import os
import time

import numpy as np


class OnDevice:
    """An array "on the device": the stand-in keeps it apart from the host arrays."""

    def __init__(self, host):
        self.array = np.array(host, copy=True)
        self.shape = self.array.shape


class FakeGpu:
    """Launches on the interpreter; `corrupt(config_T, y)` plays a codegen bug, `fail_at` a launch
    that fails, `die_at` one that ends its process. `models` names the stand-in GPUs of the host;
    `use` (run in a worker process) makes one of them current there."""

    current_index = 0

    def __init__(self, corrupt=None, fail_at=None, models=("Fake GPU",), die_at=None):
        self.corrupt, self.fail_at, self.models, self.die_at = corrupt, fail_at, models, die_at

    def count(self):
        return len(self.models)

    def describe(self, index):
        return self.models[index], "sm_80"

    def use(self, index):
        FakeGpu.current_index = index

    def current(self):
        return FakeGpu.current_index

    def to_device(self, a):
        return OnDevice(a) if isinstance(a, np.ndarray) else a

    def to_host(self, a):
        return np.array(a.array if isinstance(a, OnDevice) else a, copy=True)

    def restore(self, a, pristine):
        a.array[...] = pristine.array

    def release_memory(self):
        pass

    def launcher(self, fn, arch, grid, args):
        return functools.partial(self.launch, fn, grid, args)

    def launch(self, fn, grid, args):
        from tileworkbench.interp import execute
        T = args[-1]
        if T == self.fail_at:
            raise RuntimeError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested")
        if T == self.die_at:
            os._exit(1)
        execute(fn, grid, tuple(a.array if isinstance(a, OnDevice) else a for a in args), checked=False)
        if self.corrupt:
            self.corrupt(T, args[1].array)

    def synchronize(self):
        pass

    def time_ms(self, launch, repetitions):
        return 1.0 / launch.args[2][-1]    # bigger tiles "run faster"


def claimed_gpu_once_all_arrive(directory: str, count: int) -> int:
    """The stand-in GPU this worker process claimed, returned once `count` processes are in here
    at the same time (so each of them ran one of the jobs)."""
    open(os.path.join(directory, str(os.getpid())), "w").close()
    deadline = time.monotonic() + 60
    while len(os.listdir(directory)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return FakeGpu.current_index
