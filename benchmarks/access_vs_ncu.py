"""The memory-access analysis (computed on the CPU from traces) against Nsight Compute's measurements
on the GPU, kernel by kernel, with a verdict per metric against its tolerance (TOLERANCES):

- global sectors per request (loads, stores): within 1 %;
- shared-memory wavefronts of loads and stores, per instruction (`sm__sass_l1tex_data_pipe_lsu_
  wavefronts_mem_shared_op_ld/st`, which follow from each instruction's addresses, as the model
  does), and the bank conflicts of ldmatrix and cp.async per instruction: within 2 % of the kernel's
  instructions of that kind, |model - ncu| <= 0.02 * instructions. The conflicts of loads and
  stores are printed next to the L1 counters (`l1tex__data_bank_conflicts_...`) for reference, not
  judged: those counters count extra cycles that differ between kernels whose shared accesses are
  identical (row and grouped matmul, the two transposes), which no address model predicts; the
  per-instruction wavefronts above are what the addresses decide;
- L2 hit rate: within 10 percentage points. ncu flushes the caches before the profiled launch, so
  the model starts cold: reads miss once, writes hit, except where blocks of the first wave that
  waited on the same fill ask for a sector together (see profile/access.py, l2_estimate); the
  model's reasoning is printed under each kernel.

    python benchmarks/access_vs_ncu.py [--json benchmarks/results/DATE-h100-access-vs-ncu.json]
    python benchmarks/access_vs_ncu.py --offline benchmarks/results/2026-11-24-h100-access-vs-ncu.json

The first needs a CUDA GPU, CuPy and Nsight Compute permitted to read the counters: each case is
analyzed on NumPy copies of its inputs, then this script runs itself under ncu with `--launch CASE`,
which launches the kernel once on the GPU. `--offline` needs neither: it runs the model and reads the
ncu side from a results file written by the first.
"""
import argparse
import json
import re
import sys

import numpy as np

import tileworkbench.tile as ct
from tileworkbench.kernels import matmul, row_gather, softmax, transpose
from tileworkbench.profile.access import analyze
from tileworkbench.targets import H100_L2_BYTES, H100_SMS
from tileworkbench.profile.ncu import NcuUnavailable, collect


@ct.kernel
def copy(x, y, TILE: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(y, (i,), ct.load(x, (i,), (TILE,)))


@ct.kernel
def column(x, y, R: ct.Constant[int]):
    j = ct.bid(0)
    ct.store(y, (j, 0), ct.load(x, (0, j), (R, 1)))


@ct.kernel
def permuted(x, y, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    ct.store(y, (i, j), ct.transpose(ct.load(x, (j, i), (T, T))))


@ct.kernel
def row_matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    block = ct.bid(0)
    cols = ct.cdiv(b.shape[1], TN)
    i, j = block // cols, block % cols
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        acc = ct.mma(ct.load(a, (i, k), (TM, TK)), ct.load(b, (k, j), (TK, TN)), acc)
    ct.store(c, (i, j), acc)


@ct.kernel
def grouped_matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int],
                   GROUP: ct.Constant[int]):
    block = ct.bid(0)
    rows, cols = ct.cdiv(a.shape[0], TM), ct.cdiv(b.shape[1], TN)
    first = block // (GROUP * cols) * GROUP
    height = min(rows - first, GROUP)
    i = first + block % (GROUP * cols) % height
    j = block % (GROUP * cols) // height
    acc = ct.zeros((TM, TN), ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        acc = ct.mma(ct.load(a, (i, k), (TM, TK)), ct.load(b, (k, j), (TK, TN)), acc)
    ct.store(c, (i, j), acc)


@ct.kernel
def row_sum(x, y):
    i = ct.bid(0)
    ct.store(y, (i, 0), ct.sum(ct.load(x, (i, 0), (32, 128)), axis=1, keepdims=True))


@ct.kernel
def half_mma(a, b, c):
    i = ct.bid(0)
    acc = ct.mma(ct.load(a, (i, 0), (64, 32)), ct.load(b, (0, 0), (32, 64)), ct.zeros((64, 64), ct.float32))
    ct.store(c, (i, 0), acc)


def _f32(*shape):
    return np.random.default_rng(0).random(shape, dtype=np.float32)


N = 1 << 20
M = 2048
K = 512
# name -> (kernel, grid, function making the arguments)
CASES = {
    "copy_scalar": (copy, (N // 32,), lambda: (_f32(N), np.zeros(N, np.float32), 32)),
    "copy_vector": (copy, (N // 1024,), lambda: (_f32(N), np.zeros(N, np.float32), 1024)),
    "column": (column, (M,), lambda: (_f32(32, M), np.zeros((M * 32, 1), np.float32), 32)),
    "transpose_order": (transpose, (M // 32, M // 32), lambda: (_f32(M, M), np.zeros((M, M), np.float32), 32)),
    "transpose_permute": (permuted, (M // 32, M // 32), lambda: (_f32(M, M), np.zeros((M, M), np.float32), 32)),
    "row_gather": (row_gather, (4096,), lambda: (_f32(8192, 256), np.random.default_rng(1).integers(
        0, 8192, 4096).astype(np.int32), np.zeros((4096, 256), np.float32), 256)),
    "softmax": (softmax, (4096,), lambda: (_f32(4096, 1024), np.zeros((4096, 1024), np.float32), 1024)),
    "matmul_rows": (row_matmul, ((K // 64) ** 2,), lambda: (_f32(K, K), _f32(K, K), np.zeros((K, K), np.float32),
                                                             64, 64, 32)),
    "matmul_grouped": (grouped_matmul, ((K // 64) ** 2,), lambda: (_f32(K, K), _f32(K, K),
                                                                   np.zeros((K, K), np.float32), 64, 64, 32, 4)),
    # two rows per warp when folding: 2-way conflicts on the loads
    "row_sum": (row_sum, (1024,), lambda: (_f32(1024 * 32, 128), np.zeros((1024 * 32, 1), np.float32))),
    # tensor cores: padded operand rows and ldmatrix (no conflicts), the accumulator's conversion for
    # its store (4-way conflicts on the stores)
    "mma_tensor_core": (half_mma, (1024,), lambda: (_f32(1024 * 64, 32).astype(np.float16),
                                                    _f32(32, 64).astype(np.float16),
                                                    np.zeros((1024 * 64, 64), np.float32))),
    # K loop: operands by TMA into swizzled stages, wgmma on the H100; the f16 accumulator's
    # conversion for its store (4-way conflicts on the stores)
    "matmul_f16_pipelined": (matmul, (16, 16), lambda: (_f32(1024, 1024).astype(np.float16),
                                                        _f32(1024, 1024).astype(np.float16),
                                                        np.zeros((1024, 1024), np.float16), 64, 64, 32)),
}


# metric -> (tolerance, what it is relative to)
TOLERANCES = {
    "ld_sectors_per_request": (0.01, "of the ncu value"),
    "st_sectors_per_request": (0.01, "of the ncu value"),
    "shared_ld_wavefronts": (0.02, "of the shared load instructions"),
    "shared_st_wavefronts": (0.02, "of the shared store instructions"),
    "shared_ld_conflicts": (0.02, "of the shared load instructions"),
    "shared_st_conflicts": (0.02, "of the shared store instructions"),
    "ldmatrix_conflicts": (0.02, "of the ldmatrix instructions"),
    "cp_async_conflicts": (0.02, "of the cp.async instructions"),
    "l2_hit_rate": (10.0, "percentage points"),
}


def launch(name: str):
    import cupy
    kernel, grid, make = CASES[name]
    args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in make())
    ct.launch(cupy.cuda.get_current_stream(), grid, kernel, args)
    cupy.cuda.get_current_stream().synchronize()


def _model(report) -> dict:
    def per_request(kind):
        ops = [g for g in report.global_ops
               if (g.op in ("store", "scatter", "store_adv")) == (kind == "st") and g.copied_by is None]
        requests = sum(g.requests for g in ops)
        return sum(g.sectors for g in ops) / requests if requests else None

    def total(phase, field):
        return sum(getattr(s, field) * s.executions for s in report.shared_ops if s.phase == phase)
    return {"ld_sectors_per_request": per_request("ld"), "st_sectors_per_request": per_request("st"),
            "shared_ld_wavefronts": total("load", "wavefronts"), "shared_st_wavefronts": total("store", "wavefronts"),
            "shared_ld_conflicts": total("load", "conflicts"), "shared_st_conflicts": total("store", "conflicts"),
            "shared_ld_instructions": total("load", "requests"), "shared_st_instructions": total("store", "requests"),
            "ldmatrix_conflicts": total("ldsm", "conflicts"), "ldmatrix_instructions": total("ldsm", "requests"),
            "cp_async_conflicts": total("ldgsts", "conflicts"), "cp_async_instructions": total("ldgsts", "requests"),
            "l2_hit_rate": 100 * report.l2.hit_rate, "l2_reasoning": report.l2.reasoning,
            "unmodeled": report.unmodeled}


def _measured(m) -> dict:
    """ncu's side: wavefronts and conflicts per instruction where collected (else None), and the L1 counters."""
    return {"ld_sectors_per_request": m.load_sectors_per_request,
            "st_sectors_per_request": m.store_sectors_per_request,
            "shared_ld_wavefronts": m.shared_load_wavefronts_sass,
            "shared_st_wavefronts": m.shared_store_wavefronts_sass,
            "shared_ld_conflicts": m.shared_load_conflicts, "shared_st_conflicts": m.shared_store_conflicts,
            "shared_ld_instructions": m.shared_load_instructions,
            "shared_st_instructions": m.shared_store_instructions,
            "ldmatrix_conflicts": m.ldmatrix_conflicts_sass, "cp_async_conflicts": m.cp_async_conflicts_sass,
            "l2_hit_rate": m.l2_hit_rate}


# the metrics ncu counts per instruction (sm__sass_*), from each instruction's addresses
PER_INSTRUCTION = ("shared_ld_wavefronts", "shared_st_wavefronts", "ldmatrix_conflicts", "cp_async_conflicts")


def compare(model: dict, ncu: dict) -> list[tuple]:
    """(metric, model, ncu, which ncu metric, allowed difference, verdict) per metric."""
    rows = []
    for metric, (tolerance, relative_to) in TOLERANCES.items():
        measured = ncu.get(metric)
        source = "ncu per instruction" if metric in PER_INSTRUCTION else "ncu L1 counter" if "conflicts" in metric else "ncu"
        if relative_to.endswith("instructions"):
            instructions = re.sub(r"_(conflicts|wavefronts)$", "_instructions", metric)
            allowed = tolerance * (ncu.get(instructions) or model.get(instructions) or 0)
        elif relative_to == "of the ncu value":
            allowed = tolerance * (measured or 0)
        else:
            allowed = tolerance
        value = model.get(metric)
        if measured is None or value is None:
            verdict = "-"
        elif source == "ncu L1 counter":
            verdict = "reference"
        else:
            verdict = "agree" if abs(value - measured) <= allowed + 1e-9 else "DISAGREE"
        rows.append((metric, value, measured, source, allowed, verdict))
    return rows


def print_table(table: dict):
    print("# tolerances: " + "; ".join(f"{m} {t:g} {r}" for m, (t, r) in TOLERANCES.items()))
    verdicts = []
    for name, entry in table.items():
        print(name)
        for metric, value, measured, source, allowed, verdict in compare(entry["model"], entry["ncu"] or {}):
            print(f"  {metric:24s} model {_fmt(value):>10s}   {source:20s} {_fmt(measured):>10s}"
                  f"   allowed +-{_fmt(allowed):>9s}   {verdict}")
            verdicts.append(verdict)
        if entry["model"].get("l2_reasoning"):
            print(f"  L2 model: {entry['model']['l2_reasoning']}")
        for note in entry["model"].get("unmodeled", []):
            print(f"  not modelled: {note}")
    judged = [v for v in verdicts if v in ("agree", "DISAGREE")]
    print(f"# {judged.count('agree')} of {len(judged)} agree ({verdicts.count('reference')} L1-counter figures "
          "printed for reference)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launch", help="launch one case once (what ncu profiles)")
    parser.add_argument("--offline", metavar="RESULTS", help="run the model only; take ncu's numbers from RESULTS")
    parser.add_argument("--json", help="write the table here")
    options = parser.parse_args()
    if options.launch:
        return launch(options.launch)
    if options.offline:
        with open(options.offline) as f:
            measured = {name: entry["ncu"] for name, entry in json.load(f).items()}
        l2_bytes, sms, arch = H100_L2_BYTES, H100_SMS, "sm_90"   # the results this script commits are the H100's
    else:
        import cupy

        from tileworkbench.runtime.driver import device_arch
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        l2_bytes, sms = props["l2CacheSize"], props["multiProcessorCount"]
        arch = device_arch()   # the code a launch compiles for this GPU
    table = {}
    for name, (kernel, grid, make) in CASES.items():
        model = _model(analyze(kernel, grid, make(), arch=arch, l2_bytes=l2_bytes, sms=sms))
        if options.offline:
            ncu = measured.get(name)
        else:
            try:
                profiled = collect([sys.executable, __file__, "--launch", name], kernel=kernel.name,
                                   source_lines=False)
            except NcuUnavailable as e:
                sys.exit(str(e))
            ncu = _measured(profiled[0]) if profiled else None
        table[name] = {"model": model, "ncu": ncu}
    print_table(table)
    if options.json:
        with open(options.json, "w") as f:
            json.dump(table, f, indent=1)


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


if __name__ == "__main__":
    main()
