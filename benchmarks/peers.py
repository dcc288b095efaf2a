"""tileworkbench against Triton, cuTile, CuPy and PyTorch (cuBLAS) on one GPU, in one run.

    python3 benchmarks/peers.py --out DIR            # on a machine with a CUDA GPU (about 5 minutes on an H100)
    python3 benchmarks/peers.py --quick --only matmul,softmax

Every implementation is first checked on fresh random inputs against a float32/float64 PyTorch
reference (an output poisoned with NaN beforehand must be wholly written); one that fails or
raises is reported with its reason and not timed. Timing: CUDA events around each launch, the L2
flushed outside the timed region, warm-up first, the implementations of a case interleaved over
several rounds; median and p10/p90. GPU clocks, temperature and power are logged before and after
(never changed). Results: a printed table (absolute numbers; ratio to copy bandwidth for memory-bound
cases, to cuBLAS for matmul, to the best implementation for every case), DIR/peers.json and
DIR/peers.png.

The cuTile implementations are tileworkbench's own kernels (tileworkbench/kernels.py), the same
source text compiled by cuTile (`cuda.tile`): both speak one language. cuTile needs its tileiras
toolchain; see benchmarks/prepare_cutile.sh.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import tileworkbench.tile as tw  # noqa: E402
from tileworkbench import kernels  # noqa: E402
from tileworkbench.profile.bench import _l2_flusher  # noqa: E402


# ---- measuring -----------------------------------------------------------------------------------

@dataclass
class Impl:
    name: str
    make: object  # () -> (run, output): prepare buffers; run() launches once; output() gives the result
    samples: list = field(default_factory=list)
    error: str | None = None
    run: object = None


def time_samples(run, repetitions: int, flush) -> list[float]:
    import torch
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(repetitions):
        flush()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop))
    return out


def measure_case(impls: list[Impl], check, rounds: int, repetitions: int, warmup: int, flush):
    """Check each implementation, then time the survivors round-robin."""
    import torch
    for impl in impls:
        try:
            run, output = impl.make()
            run()
            torch.cuda.synchronize()
            problem = check(output())
            if problem:
                impl.error = f"wrong result: {problem}"
                continue
            for _ in range(warmup):
                run()
            torch.cuda.synchronize()
            impl.run = run
        except Exception as e:  # a peer that cannot run here is reported, not fatal
            impl.error = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
    for _ in range(rounds):
        for impl in impls:
            if impl.run is not None:
                impl.samples += time_samples(impl.run, repetitions, flush)


def relative_error(got, ref) -> float:
    import torch
    got, ref = got.float(), ref.float()
    if torch.isnan(got).any():
        return float("nan")
    return float((got - ref).norm() / ref.norm().clamp_min(1e-30))


def within(tol):
    def check(pair):
        got, ref = pair
        err = relative_error(got, ref)
        return None if err <= tol else f"relative error {err:.2e} > {tol:.0e}"
    return check


# ---- the implementations ---------------------------------------------------------------------------

def cutile_kernels():
    """tileworkbench's kernels compiled by cuTile: their source text in a module importing cuda.tile."""
    importlib.import_module("cuda.tile")  # fails here if cuTile is missing
    names = ["vector_add", "transpose", "row_gather", "row_load", "softmax", "layernorm", "matmul"]
    text = "import cuda.tile as ct\n\n" + "\n\n".join(inspect.getsource(getattr(kernels, n)._pyfunc) for n in names)
    folder = tempfile.mkdtemp(prefix="cutile_kernels_")
    with open(os.path.join(folder, "cutile_kernels.py"), "w") as f:
        f.write(text)
    sys.path.insert(0, folder)
    return importlib.import_module("cutile_kernels")


class Peers:
    """The peers' libraries, imported once; a missing one makes its implementations fail with the reason."""

    def __init__(self):
        import cupy
        import torch
        self.torch, self.cupy = torch, cupy
        self.stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        try:
            import triton
            import triton.language as tl
            self.triton, self.tl = triton, tl
            self.triton_kernels = _triton_kernels(triton, tl)
        except Exception as e:
            self.triton_error = f"{type(e).__name__}: {e}"
            self.triton = None
        try:
            self.cutile = cutile_kernels()
            import cuda.tile as cut
            self.cut = cut
        except Exception as e:
            self.cutile_error = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
            self.cutile = None

    def tw(self, kernel, grid, args):
        stream = self.stream
        return lambda: tw.launch(stream, grid, kernel, args)

    def ct(self, name, grid, args):
        if self.cutile is None:
            raise RuntimeError(f"cuTile unavailable ({self.cutile_error})")
        kernel, cut = getattr(self.cutile, name), self.cut
        stream = self.torch.cuda.current_stream()
        return lambda: cut.launch(stream, grid, kernel, args)

    def tr(self, name):
        if self.triton is None:
            raise RuntimeError(f"Triton unavailable ({self.triton_error})")
        return self.triton_kernels[name]


def _triton_kernels(triton, tl):
    """The standard Triton formulations of each case."""

    @triton.jit
    def add(a, b, c, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(c + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)

    @triton.jit
    def transpose(x, y, M, N, B: tl.constexpr):
        i, j = tl.program_id(0), tl.program_id(1)
        r = i * B + tl.arange(0, B)[:, None]
        c = j * B + tl.arange(0, B)[None, :]
        t = tl.load(x + r * N + c, mask=(r < M) & (c < N))
        tl.store(y + c * M + r, t, mask=(r < M) & (c < N))

    @triton.jit
    def gather(table, ids, out, D: tl.constexpr):
        r = tl.program_id(0)
        row = tl.load(ids + r).to(tl.int64)
        cols = tl.arange(0, D)
        tl.store(out + r * D + cols, tl.load(table + row * D + cols))

    @triton.jit
    def softmax(x, y, N, BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        t = tl.load(x + r * N + cols, mask=cols < N, other=-float("inf"))
        e = tl.exp(t - tl.max(t, axis=0))
        tl.store(y + r * N + cols, e / tl.sum(e, axis=0), mask=cols < N)

    @triton.jit
    def layernorm(x, w, b, y, N, BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        m = cols < N
        t = tl.load(x + r * N + cols, mask=m, other=0.0).to(tl.float32)
        mean = tl.sum(t, axis=0) / N
        d = tl.where(m, t - mean, 0.0)
        var = tl.sum(d * d, axis=0) / N
        out = d * tl.rsqrt(var + 1e-5) * tl.load(w + cols, mask=m).to(tl.float32) + tl.load(b + cols, mask=m).to(tl.float32)
        tl.store(y + r * N + cols, out.to(y.dtype.element_ty), mask=m)

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in [(128, 256, 64, 3, 8), (128, 128, 64, 4, 4), (128, 128, 64, 3, 8),
                                        (256, 128, 64, 3, 8)]]

    @triton.autotune(configs, key=["M", "N", "K"])
    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            acc += tl.dot(tl.load(a + rm[:, None] * K + (k + rk)[None, :]), tl.load(b + (k + rk)[:, None] * N + rn[None, :]))
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty))

    @triton.jit
    def empty(x):
        pass

    return {"add": add, "transpose": transpose, "gather": gather, "softmax": softmax, "layernorm": layernorm,
            "matmul": matmul, "empty": empty}


# ---- the cases -------------------------------------------------------------------------------------

def cases(p: Peers, quick: bool):
    """(case name, kind, bytes moved, flops, implementations, check) for every case."""
    torch, cp = p.torch, p.cupy
    dev = "cuda"
    n = 1 << (22 if quick else 28)

    def f32(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.float32)

    def bf16(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.bfloat16)

    def poisoned(like):
        return torch.full_like(like, float("nan"))

    # copy: the ceiling
    def copy_impls():
        def cupy_copy():
            a = cp.asarray(f32(n))
            b = cp.empty_like(a)
            return (lambda: cp.copyto(b, a)), (lambda: (torch.as_tensor(b, device=dev), torch.as_tensor(a, device=dev)))

        def torch_copy():
            a = f32(n)
            b = poisoned(a)
            return (lambda: b.copy_(a)), (lambda: (b, a))
        return [Impl("CuPy copyto", cupy_copy), Impl("torch copy_", torch_copy)]
    yield "copy f32 2^%d" % (n.bit_length() - 1), "copy", 8 * n, 0, copy_impls(), within(0)

    # vector add
    def add_impls():
        def buffers():
            a, b = f32(n), f32(n)
            return a, b, poisoned(a), (lambda c: (c, a + b))

        def tw_add(tile=1024):
            a, b, c, ref = buffers()
            return p.tw(kernels.vector_add, (n // tile,), (a, b, c, tile)), (lambda: ref(c))

        def ct_add():
            a, b, c, ref = buffers()
            return p.ct("vector_add", (n // 1024,), (a, b, c, 1024)), (lambda: ref(c))

        def tr_add():
            a, b, c, ref = buffers()
            k = p.tr("add")
            return (lambda: k[(n // 4096,)](a, b, c, n, BLOCK=4096)), (lambda: ref(c))

        def cupy_add():
            a, b, c, ref = buffers()
            ew = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "peer_add")
            ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.asarray(c)
            return (lambda: ew(ca, cb, cc)), (lambda: ref(c))

        def torch_add():
            a, b, c, ref = buffers()
            return (lambda: torch.add(a, b, out=c)), (lambda: ref(c))
        return [Impl("tileworkbench", tw_add), Impl("cuTile", ct_add), Impl("Triton", tr_add),
                Impl("CuPy ElementwiseKernel", cupy_add), Impl("torch", torch_add)]
    yield "vector add f32 2^%d" % (n.bit_length() - 1), "memory", 12 * n, n, add_impls(), within(1e-6)

    # transpose
    s = 4096 if quick else 16384
    for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        def transpose_impls(dtype=dtype):
            def buffers():
                x = torch.randn(s, s, device=dev, dtype=dtype)
                return x, poisoned(x), (lambda y: (y, x.t()))

            def tw_t():
                x, y, ref = buffers()
                return p.tw(kernels.transpose, (s // 64, s // 64), (x, y, 64)), (lambda: ref(y))

            def ct_t():
                x, y, ref = buffers()
                return p.ct("transpose", (s // 64, s // 64), (x, y, 64)), (lambda: ref(y))

            def tr_t():
                x, y, ref = buffers()
                k = p.tr("transpose")
                return (lambda: k[(s // 64, s // 64)](x, y, s, s, B=64)), (lambda: ref(y))

            def cupy_t():
                if dtype != torch.float32:
                    raise TypeError("CuPy has no bfloat16")
                x, y, ref = buffers()
                cx, cy = cp.asarray(x), cp.asarray(y)
                return (lambda: cp.copyto(cy, cx.T)), (lambda: ref(y))

            def torch_t():
                x, y, ref = buffers()
                return (lambda: y.copy_(x.t())), (lambda: ref(y))
            return [Impl("tileworkbench", tw_t), Impl("cuTile", ct_t), Impl("Triton", tr_t), Impl("CuPy copyto(.T)", cupy_t),
                    Impl("torch copy_(.t())", torch_t)]
        yield f"transpose {s}^2 {name}", "memory", 2 * s * s * (4 if name == "f32" else 2), 0, transpose_impls(), within(0)

    # row gather (embedding lookup)
    rows, width, vocab = (1 << 14 if quick else 1 << 18), 256, 1 << 16

    def gather_impls():
        def buffers():
            table = f32(vocab, width)
            ids = torch.randint(0, vocab, (rows,), device=dev, dtype=torch.int32)
            out = torch.full((rows, width), float("nan"), device=dev)
            return table, ids, out, (lambda: (out, table[ids.long()]))

        def tw_g():
            table, ids, out, ref = buffers()
            return p.tw(kernels.row_load, (rows,), (table, ids, out, width)), ref

        def ct_g():
            table, ids, out, ref = buffers()
            return p.ct("row_load", (rows,), (table, ids, out, width)), ref

        def tr_g():
            table, ids, out, ref = buffers()
            k = p.tr("gather")
            return (lambda: k[(rows,)](table, ids, out, D=width)), ref

        def cupy_g():
            table, ids, out, ref = buffers()
            ct_, ci, co = cp.asarray(table), cp.asarray(ids), cp.asarray(out)
            return (lambda: cp.take(ct_, ci, axis=0, out=co)), ref

        def torch_g():
            table, ids, out, ref = buffers()
            lids = ids.long()
            return (lambda: torch.index_select(table, 0, lids, out=out)), ref
        return [Impl("tileworkbench", tw_g), Impl("cuTile", ct_g), Impl("Triton", tr_g), Impl("CuPy take", cupy_g),
                Impl("torch index_select", torch_g)]
    yield f"row gather {rows} x {width} f32", "memory", 2 * rows * width * 4 + rows * 4, 0, gather_impls(), within(0)

    # row softmax
    for cols in (1024, 4096, 16384):
        m = 4096 if quick else 32768

        def softmax_impls(cols=cols, m=m):
            def buffers():
                x = f32(m, cols)
                y = poisoned(x)
                return x, y, (lambda: (y, torch.softmax(x.double(), dim=1)))

            def tw_s():
                x, y, ref = buffers()
                return p.tw(kernels.softmax, (m,), (x, y, cols)), ref

            def ct_s():
                x, y, ref = buffers()
                return p.ct("softmax", (m,), (x, y, cols)), ref

            def tr_s():
                x, y, ref = buffers()
                k = p.tr("softmax")
                warps = 4 if cols <= 1024 else 8 if cols <= 4096 else 16
                return (lambda: k[(m,)](x, y, cols, BLOCK=cols, num_warps=warps)), ref

            def cupy_s():
                x, y, ref = buffers()
                cx, cy = cp.asarray(x), cp.asarray(y)

                def run():
                    e = cp.exp(cx - cx.max(axis=1, keepdims=True))
                    cp.divide(e, e.sum(axis=1, keepdims=True), out=cy)
                return run, ref

            def torch_s():
                x, _, ref = buffers()
                result = {}
                exact = ref()[1]
                return (lambda: result.update(y=torch.softmax(x, dim=1))), (lambda: (result["y"], exact))
            return [Impl("tileworkbench", tw_s), Impl("cuTile", ct_s), Impl("Triton", tr_s),
                    Impl("CuPy (array ops)", cupy_s), Impl("torch.softmax", torch_s)]
        yield f"softmax {m} x {cols} f32", "memory", 2 * m * cols * 4, 0, softmax_impls(), within(1e-5)

    # layernorm forward, bf16 in and out, float32 statistics
    m, cols = (4096 if quick else 32768), 4096

    def layernorm_impls():
        def buffers():
            x, w, b = bf16(m, cols), bf16(cols), bf16(cols)
            y = poisoned(x)
            ref = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float(), 1e-5)
            return x, w, b, y, (lambda: (y, ref))

        def tw_l():
            x, w, b, y, ref = buffers()
            return p.tw(kernels.layernorm, (m,), (x, w, b, y, cols)), ref

        def ct_l():
            x, w, b, y, ref = buffers()
            return p.ct("layernorm", (m,), (x, w, b, y, cols)), ref

        def tr_l():
            x, w, b, y, ref = buffers()
            k = p.tr("layernorm")
            return (lambda: k[(m,)](x, w, b, y, cols, BLOCK=cols, num_warps=8)), ref

        def torch_l():
            x, w, b, _, ref = buffers()
            result, exact = {}, ref()[1]
            return (lambda: result.update(y=torch.nn.functional.layer_norm(x, (cols,), w, b, 1e-5))), \
                (lambda: (result["y"], exact))
        return [Impl("tileworkbench", tw_l), Impl("cuTile", ct_l), Impl("Triton", tr_l),
                Impl("torch layer_norm", torch_l)]
    yield f"layernorm {m} x {cols} bf16", "memory", 2 * m * cols * 2, 0, layernorm_impls(), within(1e-2)

    # matmul
    for size in ((1024, 2048) if quick else (4096, 8192)):
        def matmul_impls(size=size):
            def buffers():
                a, b = bf16(size, size), bf16(size, size)
                c = poisoned(a)
                return a, b, c, (lambda: (c, a.float() @ b.float()))

            def tw_m(tiles):
                def make():
                    a, b, c, ref = buffers()
                    return p.tw(kernels.matmul, (size // tiles[0], size // tiles[1]), (a, b, c) + tiles), ref
                return make

            def ct_m():
                a, b, c, ref = buffers()
                return p.ct("matmul", (size // 128, size // 256), (a, b, c, 128, 256, 64)), ref

            def tr_m():
                a, b, c, ref = buffers()
                k = p.tr("matmul")
                return (lambda: k[lambda meta: (size // meta["BM"], size // meta["BN"])](a, b, c, size, size, size)), ref

            def torch_m():
                a, b, c, ref = buffers()
                return (lambda: torch.matmul(a, b, out=c)), ref

            def cupy_m():
                a16 = cp.random.randn(size, size, dtype=cp.float32).astype(cp.float16)
                b16 = cp.random.randn(size, size, dtype=cp.float32).astype(cp.float16)
                c16 = cp.full((size, size), cp.nan, cp.float16)
                ref = torch.as_tensor(a16, device=dev).float() @ torch.as_tensor(b16, device=dev).float()
                return (lambda: cp.matmul(a16, b16, out=c16)), (lambda: (torch.as_tensor(c16, device=dev), ref))
            return [Impl("tileworkbench 128x256x64", tw_m((128, 256, 64))),
                    Impl("tileworkbench 128x128x64", tw_m((128, 128, 64))),
                    Impl("cuTile 128x256x64", ct_m), Impl("Triton (autotuned)", tr_m),
                    Impl("CuPy matmul (f16: CuPy has no bf16)", cupy_m), Impl("torch.matmul (cuBLAS)", torch_m)]
        yield f"matmul {size}^3 bf16", "matmul", 3 * size * size * 2, 2 * size ** 3, matmul_impls(), within(1e-2)


# ---- compile latency and launch overhead -----------------------------------------------------------

# Each probe launches a small vector add twice in a fresh process and prints the seconds of the first
# launch (compile or cache lookup, load, launch) and of the second (the same-process cache hit).
_TIMED_TWICE = ("import time\n"
                "def twice(launch, sync):\n"
                "    times = []\n"
                "    for _ in range(2):\n"
                "        t = time.perf_counter(); launch(); sync(); times.append(time.perf_counter() - t)\n"
                "    print(*times)\n")
_COMPILE_PROBES = {
    "tileworkbench": _TIMED_TWICE + (
        "import torch, tileworkbench.tile as ct\nfrom tileworkbench.kernels import vector_add\n"
        "import tileworkbench.runtime.launch  # imports CuPy: as the other probes, import before the clock\n"
        "x = torch.zeros(1024, device='cuda'); s = torch.cuda.current_stream(); torch.cuda.synchronize()\n"
        "twice(lambda: ct.launch(s, (1,), vector_add, (x, x, x, 1024)), torch.cuda.synchronize)\n"),
    "cuTile": _TIMED_TWICE + (
        "import torch, cuda.tile as ct\n"
        "@ct.kernel\ndef add(a, b, c, TILE: ct.Constant[int]):\n"
        "    i = ct.bid(0)\n    ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))\n"
        "x = torch.zeros(1024, device='cuda'); s = torch.cuda.current_stream(); torch.cuda.synchronize()\n"
        "twice(lambda: ct.launch(s, (1,), add, (x, x, x, 1024)), torch.cuda.synchronize)\n"),
    "Triton": _TIMED_TWICE + (
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\ndef add(a, b, c, n, BLOCK: tl.constexpr):\n"
        "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(c + o, tl.load(a + o, mask=o < n) + tl.load(b + o, mask=o < n), mask=o < n)\n"
        "x = torch.zeros(1024, device='cuda'); torch.cuda.synchronize()\n"
        "twice(lambda: add[(1,)](x, x, x, 1024, BLOCK=1024), torch.cuda.synchronize)\n"),
    "CuPy RawKernel": _TIMED_TWICE + (
        "import cupy as cp\nx = cp.zeros(1024, cp.float32); cp.cuda.Device().synchronize()\n"
        "source = (r'extern \"C\" __global__ void add(const float* a, const float* b, float* c, int n)'\n"
        "          r' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }')\n"
        "twice(lambda: cp.RawKernel(source, 'add')((1,), (1024,), (x, x, x, cp.int32(1024))), cp.cuda.Device().synchronize)\n"),
}


def compile_latency(repo: str) -> list[dict]:
    """First launch with an empty cache and with a warm disk cache, each in a new process, and the
    second launch in the same process (a memory-cache hit), of a small vector add."""
    rows = []
    for impl, probe in _COMPILE_PROBES.items():
        cache = tempfile.mkdtemp(prefix="peer_cache_")
        env = dict(os.environ, TILEWORKBENCH_CACHE_DIR=cache, TRITON_CACHE_DIR=cache, CUPY_CACHE_DIR=cache,
                   HOME=cache, XDG_CACHE_HOME=cache,  # every library's default cache under the empty folder
                   PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
        script = os.path.join(cache, "probe.py")  # a file: Triton and cuTile read their kernels' source
        with open(script, "w") as f:
            f.write(probe)
        for label in ("first launch, empty cache, new process", "first launch, disk cache, new process"):
            try:
                first, second = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                                               timeout=300, check=True).stdout.split()[-2:]
                rows.append({"case": label, "impl": impl, "ms": float(first) * 1e3})
            except subprocess.CalledProcessError as e:
                rows.append({"case": label, "impl": impl, "error": " ".join(e.stderr.split()[-30:])})
                break
        else:
            rows.append({"case": "second launch, same process", "impl": impl, "ms": float(second) * 1e3})
    return rows


@tw.kernel
def _empty(x):
    pass


def launch_overhead(p: Peers) -> list[dict]:
    """Host time per launch of an empty kernel taking one array, back to back (best of 3 x 20000)."""
    torch, cp = p.torch, p.cupy
    x = torch.zeros(128, device="cuda")
    cx = cp.asarray(x)
    runs = {"tileworkbench": p.tw(_empty, (1,), (x,))}
    raw = cp.RawKernel(r'extern "C" __global__ void empty(float* x) {}', "empty")
    runs["CuPy RawKernel"] = lambda: raw((1,), (32,), (cx,))
    if p.triton is not None:
        k = p.tr("empty")
        runs["Triton"] = lambda: k[(1,)](x)
    if p.cutile is not None:
        cut = p.cut

        @cut.kernel
        def empty(x):
            pass
        stream = torch.cuda.current_stream()
        runs["cuTile"] = lambda: cut.launch(stream, (1,), empty, (x,))
    rows = []
    for impl, run in runs.items():
        try:
            run()
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                for _ in range(20000):
                    run()
                torch.cuda.synchronize()
                best = min(best, (time.perf_counter() - t) / 20000)
            rows.append({"case": "launch overhead, empty kernel", "impl": impl, "ms": best * 1e3})
        except Exception as e:
            rows.append({"case": "launch overhead, empty kernel", "impl": impl,
                         "error": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"})
    return rows


# ---- the run ---------------------------------------------------------------------------------------

def gpu_state() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:
        return f"nvidia-smi unavailable: {e}"


def versions(p: Peers) -> dict:
    import torch
    out = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda (torch)": torch.version.cuda,
           "cupy": p.cupy.__version__, "device": torch.cuda.get_device_name(), "driver": None}
    for name in ("triton", "cuda.tile"):
        try:
            out[name] = importlib.import_module(name).__version__
        except Exception as e:
            out[name] = f"unavailable ({type(e).__name__})"
    try:
        out["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                       capture_output=True, text=True).stdout.strip()
        out["tileworkbench commit"] = os.environ.get("TILEWORKBENCH_COMMIT") or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=os.path.dirname(__file__)).stdout.strip() or None
    except Exception:
        pass
    return out


def summarize(name, kind, nbytes, flops, impls) -> list[dict]:
    rows = []
    for impl in impls:
        row = {"case": name, "kind": kind, "impl": impl.name}
        if impl.error or not impl.samples:
            row["error"] = impl.error or "not timed"
        else:
            p10, p50, p90 = np.percentile(impl.samples, [10, 50, 90])
            row.update(ms=float(p50), p10=float(p10), p90=float(p90), samples=len(impl.samples),
                       **{"GB/s": nbytes / p50 / 1e6} if kind != "matmul" else {},
                       **{"TFLOP/s": flops / p50 / 1e9} if flops else {})
        rows.append(row)
    timed = [r for r in rows if "ms" in r]
    if timed:
        best = min(r["ms"] for r in timed)
        for r in timed:
            r["x best"] = best / r["ms"]
    return rows


def add_ratios(rows):
    copy = next((r for r in rows if r.get("kind") == "copy" and "GB/s" in r), None)
    for case in {r["case"] for r in rows if r.get("kind") == "matmul"}:
        cublas = next((r for r in rows if r["case"] == case and "cuBLAS" in r["impl"] and "ms" in r), None)
        for r in rows:
            if r["case"] == case and cublas and "ms" in r:
                r["x cuBLAS"] = cublas["ms"] / r["ms"]
    for r in rows:
        if r.get("kind") == "memory" and copy and "GB/s" in r:
            r["x copy"] = r["GB/s"] / copy["GB/s"]


def print_table(rows):
    print(f"{'case':32} {'implementation':38} {'ms':>9} {'p10-p90':>15} {'GB/s':>7} {'TFLOP/s':>7} "
          f"{'xcopy':>6} {'xcuBLAS':>7} {'xbest':>6}")
    for r in rows:
        if "error" in r:
            print(f"{r['case']:32} {r['impl']:38} {'failed: ' + r['error'][:90]}")
            continue
        spread = f"{r['p10']:.3f}-{r['p90']:.3f}" if "p10" in r else ""
        print(f"{r['case']:32} {r['impl']:38} {r['ms']:9.4f} {spread:>15} {r.get('GB/s', 0):7.0f} "
              f"{r.get('TFLOP/s', 0):7.1f} {r.get('x copy', float('nan')):6.2f} {r.get('x cuBLAS', float('nan')):7.2f} "
              f"{r.get('x best', float('nan')):6.2f}")


def chart(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    timed = [r for r in rows if "x best" in r]
    case_names = list(dict.fromkeys(r["case"] for r in timed))
    def family(impl: str) -> str:  # "torch.matmul (cuBLAS)" -> "torch"
        return impl.split(" ")[0].split(".")[0]
    impls = list(dict.fromkeys(family(r["impl"]) for r in timed))
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(case_names) + 2))
    height = 0.8 / max(1, len(impls))
    for k, impl in enumerate(impls):
        values = [max((r["x best"] for r in timed if r["case"] == c and family(r["impl"]) == impl), default=0)
                  for c in case_names]
        ax.barh([i + k * height for i in range(len(case_names))], values, height, label=impl)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(case_names))], case_names)
    ax.invert_yaxis()
    ax.set_xlabel("speed relative to the fastest implementation of the case (1 = fastest)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for peers.json and peers.png")
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions (a smoke test)")
    ap.add_argument("--only", default="", help="comma-separated words: run the cases whose name contains one")
    ap.add_argument("--impl", default="", help="comma-separated words: run the implementations whose name contains one")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        sys.exit("peers.py needs a CUDA GPU (and PyTorch, CuPy)")
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    before = gpu_state()
    p = Peers()
    flush = _l2_flusher()
    only = [w for w in args.only.split(",") if w]
    keep = [w for w in args.impl.split(",") if w]
    rows = []
    for name, kind, nbytes, flops, impls, check in cases(p, args.quick):
        if only and not any(w in name for w in only):
            continue
        impls = [i for i in impls if not keep or any(w.lower() in i.name.lower() for w in keep)]
        reps = 3 if args.quick else (5 if kind == "matmul" else 15)
        t = time.perf_counter()
        measure_case(impls, check, 1 if args.quick else args.rounds, reps, 2 if args.quick else 5, flush)
        rows += summarize(name, kind, nbytes, flops, impls)
        print(f"# {name}: {time.perf_counter() - t:.1f} s", flush=True)
        torch.cuda.empty_cache()
    add_ratios(rows)
    if not only or any(w in ("compile", "launch") for w in only):
        try:
            rows += compile_latency(repo)
        except Exception:
            traceback.print_exc()
        rows += launch_overhead(p)
    after = gpu_state()
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "versions": versions(p), "gpu state before": before, "gpu state after": after,
              "quick": args.quick, "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "peers.json"), "w") as f:
        json.dump(result, f, indent=1)
    try:
        chart(rows, os.path.join(args.out, "peers.png"))
    except Exception:
        traceback.print_exc()
    print(f"\n{result['versions']}\nclocks/temp/power before: {before}\nafter: {after}\n")
    print_table(rows)


if __name__ == "__main__":
    main()
