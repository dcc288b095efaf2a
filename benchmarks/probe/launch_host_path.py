"""Where a launch's host time goes on a GPU machine, piece by piece, and what the samples' wrappers
spend on the host besides their kernels.

    python3 benchmarks/probe/launch_host_path.py            # part 1 only
    source .cutile/setup.sh; python3 benchmarks/probe/launch_host_path.py --samples   # parts 1 and 2

Part 1 times, in ns per call (best of rounds, wall clock), each piece of tileworkbench's launch of an
empty kernel on a PyTorch tensor: what the launcher reads of the tensor, the stream, the pack, the
lock, the generated relaunch with its driver call a no-op, ct.launch the same way, and the driver
call made four ways (ctypes cuLaunchKernelEx and cuLaunchKernel, and a C extension built here with
the system compiler calling each, with and without releasing the GIL), against a C loop of launches
(the driver's own floor) and CuPy's compiled launch call.

Part 2 records the ct.launch calls of one call of each cuTile sample's wrapper (the peer benchmark's
cases and inputs), under tileworkbench and under cuTile, and times in one interleaved run: the
wrapper as the peer benchmark times it (CUDA events, L2 flushed), the same wrapper's host time (from
call to return, the GPU idle before), the recorded launches replayed alone by events and on the host.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

EXTENSION = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <time.h>

typedef int (*launch_ex_t)(void *, void *, void **, void **);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
static launch_ex_t launch_ex;
static launch_t launch_classic;

/* ex(config, function, params): cuLaunchKernelEx, the GIL held */
static PyObject *ex(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    int status = launch_ex(PyLong_AsVoidPtr(args[0]), PyLong_AsVoidPtr(args[1]), PyLong_AsVoidPtr(args[2]), NULL);
    return PyLong_FromLong(status);
}

static PyObject *ex_nogil(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    void *config = PyLong_AsVoidPtr(args[0]), *function = PyLong_AsVoidPtr(args[1]);
    void **params = PyLong_AsVoidPtr(args[2]);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = launch_ex(config, function, params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(status);
}

/* classic(function, stream, params): cuLaunchKernel, grid 1, block 32 */
static PyObject *classic(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    int status = launch_classic(PyLong_AsVoidPtr(args[0]), 1, 1, 1, 32, 1, 1, 0, PyLong_AsVoidPtr(args[1]),
                                PyLong_AsVoidPtr(args[2]), NULL);
    return PyLong_FromLong(status);
}

/* loop(config, function, params, count): ns per cuLaunchKernelEx, all in C */
static PyObject *loop(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    void *config = PyLong_AsVoidPtr(args[0]), *function = PyLong_AsVoidPtr(args[1]);
    void **params = PyLong_AsVoidPtr(args[2]);
    long count = PyLong_AsLong(args[3]);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < count; i++)
        launch_ex(config, function, params, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return PyFloat_FromDouble(((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / count);
}

/* read_attributes(x): what a launcher reads of a PyTorch tensor, attribute by attribute */
static PyObject *str_dtype, *str_shape, *str_is_cuda, *str_stride, *str_data_ptr;
static PyObject *read_attributes(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    PyObject *x = args[0];
    PyObject *values[] = {PyObject_GetAttr(x, str_dtype), PyObject_GetAttr(x, str_shape),
                          PyObject_GetAttr(x, str_is_cuda), PyObject_CallMethodNoArgs(x, str_stride),
                          PyObject_CallMethodNoArgs(x, str_data_ptr)};
    for (int k = 0; k < 5; k++)
        Py_XDECREF(values[k]);
    Py_RETURN_NONE;
}

/* read_dlpack(to_dlpack, x): the same through one DLPack export (DLManagedTensor's leading DLTensor) */
typedef struct { void *data; int device_type, device_id, ndim; unsigned char code, bits; unsigned short lanes;
                 long long *shape, *strides; unsigned long long byte_offset; } DLTensorHead;
static PyObject *read_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    PyObject *capsule = PyObject_CallOneArg(args[0], args[1]);
    if (capsule == NULL) return NULL;
    DLTensorHead *t = PyCapsule_GetPointer(capsule, "dltensor");
    long long sum = t ? (long long)(size_t)t->data + t->ndim + t->shape[0] + (t->strides ? t->strides[0] : 0) : 0;
    Py_DECREF(capsule);
    return PyLong_FromLongLong(sum);
}

static PyMethodDef methods[] = {
    {"read_attributes", (PyCFunction)(void (*)(void))read_attributes, METH_FASTCALL, ""},
    {"read_dlpack", (PyCFunction)(void (*)(void))read_dlpack, METH_FASTCALL, ""},
    {"ex", (PyCFunction)(void (*)(void))ex, METH_FASTCALL, ""},
    {"ex_nogil", (PyCFunction)(void (*)(void))ex_nogil, METH_FASTCALL, ""},
    {"classic", (PyCFunction)(void (*)(void))classic, METH_FASTCALL, ""},
    {"loop", (PyCFunction)(void (*)(void))loop, METH_FASTCALL, ""},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "probe_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_probe_launch(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) return PyErr_Format(PyExc_ImportError, "libcuda: %s", dlerror());
    launch_ex = (launch_ex_t)dlsym(cuda, "cuLaunchKernelEx");
    launch_classic = (launch_t)dlsym(cuda, "cuLaunchKernel");
    str_dtype = PyUnicode_InternFromString("dtype");
    str_shape = PyUnicode_InternFromString("shape");
    str_is_cuda = PyUnicode_InternFromString("is_cuda");
    str_stride = PyUnicode_InternFromString("stride");
    str_data_ptr = PyUnicode_InternFromString("data_ptr");
    return PyModule_Create(&module);
}
"""


def build_extension(directory: str):
    """The probe's C extension, built with the system compiler; None (and why) where it cannot be."""
    import importlib.util
    source = os.path.join(directory, "probe_launch.c")
    target = os.path.join(directory, "probe_launch" + sysconfig.get_config_var("EXT_SUFFIX"))
    with open(source, "w") as f:
        f.write(EXTENSION)
    done = subprocess.run(["cc", "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o", target,
                           source, "-ldl"], capture_output=True, text=True)
    if done.returncode:
        print(f"  (no C extension: {done.stderr.strip()[:300]})")
        return None
    spec = importlib.util.spec_from_file_location("probe_launch", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ns_per_call(statement, namespace, number=20000, repeat=7, sync=None) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        timeit.Timer(statement, globals=namespace).timeit(number)
        if sync:
            sync()
        best = min(best, time.perf_counter() - start)
    return best / number * 1e9


def part1() -> None:
    import torch

    import tileworkbench.tile as ct
    from benchmarks.launch_overhead import python_path, python_side
    from tileworkbench.runtime import driver
    from tileworkbench.runtime.arrays import stream_handle

    @ct.kernel
    def empty(x):
        pass

    from tileworkbench.runtime import native_launch
    native_launch.module()  # the C launcher built before the first launch makes its launcher
    x, stream, sync = torch.zeros(128, device="cuda"), torch.cuda.current_stream(), torch.cuda.synchronize
    ct.launch(stream, (1,), empty, (x,))
    sync()
    launcher = empty.last_launcher
    # the rows timing the driver call alone reuse the Python path's buffer: packed here by a launch
    # through it (the C launcher packs its own; an unpacked buffer is a launch the driver refuses)
    launcher.matches.__globals__["relaunch"](stream, (1,), (x,))
    sync()
    no_op_launch = python_side(empty, stream, x, sync)[0]
    values = launcher.struct.unpack_from(launcher.buffer)
    lock = launcher.matches.__globals__["lock"]
    python_launch = python_path(empty, stream, x)
    ns = dict(x=x, torch=torch, stream=stream, stream_handle=stream_handle, launcher=launcher, values=values,
              pack_into=launcher.struct.pack_into, buffer=launcher.buffer, lock=lock, no_op_launch=no_op_launch,
              ct=ct, empty=empty, grid=(1, 1, 1), args=(x,), nothing=lambda: None,
              call_ex=driver.launch_kernel_function(), function=ctypes.c_void_p(launcher.function),
              params=launcher.params, dtype=x.dtype, python_launch=python_launch)
    rows = [
        ("Python: an empty function call", "nothing()", None),
        ("tensor: x.dtype is dtype", "x.dtype is dtype", None),
        ("tensor: x.shape", "x.shape", None),
        ("tensor: x.is_cuda", "x.is_cuda", None),
        ("tensor: x.stride()", "x.stride()", None),
        ("tensor: x.data_ptr()", "x.data_ptr()", None),
        ("torch.cuda.current_stream()", "torch.cuda.current_stream()", None),
        ("stream_handle(torch stream)", "stream_handle(stream)", None),
        ("lock acquire + release", "lock.acquire(); lock.release()", None),
        ("struct pack_into (config + 1 array)", "pack_into(buffer, 0, *values)", None),
        ("ct.launch, driver call a no-op", "no_op_launch()", None),
        ("ct.launch (real; C launcher)" if launcher.native else "ct.launch (real; no C launcher)",
         "ct.launch(stream, grid, empty, args)", sync),
        ("launcher.relaunch (real)", "launcher.relaunch(stream, grid, args)", sync),
        ("launcher.relaunch (real), stream 0", "launcher.relaunch(0, grid, args)", sync),
        ("ct.launch (real; Python path)", "python_launch()", sync),
        ("driver: ctypes cuLaunchKernelEx", "call_ex(buffer, function, params, None)", sync),
    ]
    with tempfile.TemporaryDirectory() as directory:
        ext = build_extension(directory)
        if ext is not None:
            config, fptr = ctypes.addressof(launcher.buffer), launcher.function
            pptr, sptr = ctypes.addressof(launcher.params), values[7]
            ns.update(ext=ext, config=config, fptr=fptr, pptr=pptr, sptr=sptr)
            assert ext.ex(config, fptr, pptr) == 0, "the driver refused the probe's launch"
            ns["to_dlpack"] = torch._C._to_dlpack
            rows += [("C: the tensor's 5 attributes read", "ext.read_attributes(x)", None),
                     ("C: the tensor read by torch._C._to_dlpack", "ext.read_dlpack(to_dlpack, x)", None),
                     ("driver: C extension cuLaunchKernelEx, GIL held", "ext.ex(config, fptr, pptr)", sync),
                     ("driver: C extension cuLaunchKernelEx, GIL released", "ext.ex_nogil(config, fptr, pptr)", sync),
                     ("driver: C extension cuLaunchKernel, GIL held", "ext.classic(fptr, sptr, pptr)", sync)]
        try:
            import cupy
            launch_kernel = cupy.cuda.driver.launchKernel
            ns.update(launch_kernel=launch_kernel, fptr=launcher.function, sptr=values[7],
                      pptr=ctypes.addressof(launcher.params))
            rows.append(("driver: CuPy driver.launchKernel (Cython)",
                         "launch_kernel(fptr, 1, 1, 1, 32, 1, 1, 0, sptr, pptr, 0)", sync))
        except Exception as e:  # noqa: BLE001
            print(f"  (no CuPy launchKernel: {e})")
        print(f"{'piece':58} {'ns per call':>12}")
        for name, statement, synchronize in rows:
            print(f"{name:58} {ns_per_call(statement, ns, sync=synchronize):12.0f}", flush=True)
        if ext is not None:
            best = min(ext.loop(config, fptr, pptr, 20000) for _ in range(5)) if sync() is None else 0
            sync()
            print(f"{'driver floor: cuLaunchKernelEx in a C loop':58} {best:12.0f}")


class Recording:
    """Records the launches made through a `ct` module's launch while inside (and passes them on)."""

    def __init__(self, ct):
        self.ct, self.launch, self.launches = ct, ct.launch, []

    def __enter__(self):
        def record(stream, grid, kernel, args, **kwargs):
            self.launches.append((stream, grid, kernel, args, kwargs))
            return self.launch(stream, grid, kernel, args, **kwargs)
        self.ct.launch = record
        return self

    def __exit__(self, *exc):
        self.ct.launch = self.launch


def part2(calls: int, only: list[str]) -> None:
    import torch

    import benchmarks.peers as peers
    timer = peers.Timer()
    print(f"\n{'case':36} {'implementation':14} {'events ms':>10} {'host us':>9} {'launches':>8} "
          f"{'replay ev ms':>12} {'replay host us':>14}")
    for case in peers.all_cases("full"):
        if case.kind == "copy" or not peers.selected(case.key, only):
            continue
        entries = []
        for name, family, offer in peers.IMPLEMENTATIONS[case.op]:
            if "cuTile sample" not in name:
                continue
            problem = case.make()
            run = offer(problem)
            run = next(iter(run.values())) if isinstance(run, dict) else run
            with Recording(_sample_globals(run)["ct"]) as recording:
                run()
            torch.cuda.synchronize()
            entries.append((family, run, recording.launches, recording.ct))
        rows = {family: [[], [], [], []] for family, *_ in entries}
        for _ in range(calls):
            for family, run, recorded, ct in entries:
                events, host, replay_events, replay_host = rows[family]
                events += timer.samples(run, 1)
                torch.cuda.synchronize()
                start = time.perf_counter()
                run()
                host.append((time.perf_counter() - start) * 1e6)
                torch.cuda.synchronize()
                replay_events += timer.samples(lambda: [ct.launch(s, g, k, a, **kw) for s, g, k, a, kw in recorded], 1)
                torch.cuda.synchronize()
                start = time.perf_counter()
                for s, g, k, a, kw in recorded:
                    ct.launch(s, g, k, a, **kw)
                replay_host.append((time.perf_counter() - start) * 1e6)
                torch.cuda.synchronize()
        for family, _, recorded, _ in entries:
            med = [statistics.median(r) for r in rows[family]]
            print(f"{case.title[:36]:36} {family:14} {med[0]:10.4f} {med[1]:9.1f} {len(recorded):8} {med[2]:12.4f} "
                  f"{med[3]:14.1f}", flush=True)


def _sample_globals(run) -> dict:
    """The globals of the sample function that the peer benchmark's `run` calls (found through the
    closures), where its `ct` is."""
    todo = [run]
    while todo:
        f = todo.pop()
        if getattr(f, "__globals__", {}).get("__name__", "").startswith("published_"):
            return f.__globals__
        todo += [c.cell_contents for c in (getattr(f, "__closure__", None) or ()) if callable(c.cell_contents)]
    raise LookupError("no sample function behind this run")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", action="store_true", help="also part 2 (needs cuTile: source .cutile/setup.sh)")
    ap.add_argument("--only", default="sample,transpose")
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs")
    part1()
    if args.samples:
        import benchmarks.peers as peers
        part2(args.calls, peers.words(args.only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
