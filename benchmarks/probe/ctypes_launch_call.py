"""What a launch's foreign call costs through each way Python can make it, with no GPU: C functions
of cuLaunchKernelEx's and cuLaunchKernel's signatures that return 0 at once, built with the system
C compiler, called with the arguments a launcher passes.

    python3 benchmarks/probe/ctypes_launch_call.py      # needs `cc`; prints ns per call

The rows differ only in how the call is made, so their differences are what each way costs; what
libcuda itself spends in a launch is measured on a GPU (benchmarks/launch_overhead.py).
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
import time
import timeit

STAND_IN = r"""
int launch_ex(void *config, void *function, void **params, void **extra) { return 0; }
int launch(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
           unsigned shared, void *stream, void **params, void **extra) { return 0; }
"""


def build(directory: str) -> ctypes.CDLL:
    source, library = os.path.join(directory, "stand_in.c"), os.path.join(directory, "libstand_in.so")
    with open(source, "w") as f:
        f.write(STAND_IN)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
    return ctypes.CDLL(library)


def cases(library: ctypes.CDLL):
    """(name, statement, namespace) for each way of calling."""
    config, params = ctypes.create_string_buffer(64), (ctypes.c_void_p * 3)(1, 2, 3)
    function, stream = ctypes.c_void_p(0x2000), ctypes.c_void_p(0x3000)
    typed = ctypes.CDLL(library._name).launch_ex
    typed.argtypes, typed.restype = [ctypes.c_void_p] * 4, ctypes.c_int
    address = ctypes.cast(library.launch_ex, ctypes.c_void_p).value
    ns = dict(library=library, launch_ex=library.launch_ex, typed=typed, launch=library.launch, config=config,
              params=params, function=function, stream=stream, ctypes=ctypes,
              prototype=ctypes.CFUNCTYPE(ctypes.c_int)(address), keeps_gil=ctypes.PYFUNCTYPE(ctypes.c_int)(address))
    yield "cuLaunchKernelEx: CDLL function, no argtypes (the launcher's)", "launch_ex(config, function, params, None)", ns
    yield "cuLaunchKernelEx: CDLL function, argtypes void* x 4", "typed(config, function, params, None)", ns
    yield "cuLaunchKernelEx: CFUNCTYPE from its address", "prototype(config, function, params, None)", ns
    yield "cuLaunchKernelEx: PYFUNCTYPE (keeps the GIL)", "keeps_gil(config, function, params, None)", ns
    yield "cuLaunchKernelEx: looked up on the CDLL at each call", "library.launch_ex(config, function, params, None)", ns
    yield ("cuLaunchKernel: 11 arguments, stream prebuilt", "launch(function, 1, 1, 1, 32, 1, 1, 0, stream, params, None)",
           ns)
    yield ("cuLaunchKernel: 11 arguments, stream wrapped per call",
           "launch(function, 1, 1, 1, 32, 1, 1, 0, ctypes.c_void_p(0x3000), params, None)", ns)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ctypes_launch_call_") as directory:
        library = build(directory)
        print("ns per call (best of 7 rounds of 200000, thread CPU clock):")
        for name, statement, ns in cases(library):
            seconds = min(timeit.repeat(statement, globals=ns, number=200_000, repeat=7, timer=time.thread_time))
            print(f"  {name:66s} {seconds / 200_000 * 1e9:6.0f}")


if __name__ == "__main__":
    main()
