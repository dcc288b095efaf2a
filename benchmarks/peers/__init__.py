"""tileworkbench against cuTile, Triton, CuPy and PyTorch (cuBLAS) on one GPU, in one command:

    source .cutile/setup.sh          # cuTile's toolchain (benchmarks/peers/prepare_cutile.sh makes it)
    python3 -m benchmarks.peers --out DIR [--quick] [--only softmax,matmul] [--impl cutile,triton]

Cases: device-to-device copy (the ceiling), vector add f32 2^28, transpose 16384^2 f32 and bf16, row
gather (an embedding lookup of random rows), row softmax 32768 x {1024, 4096, 16384} f32, layernorm
forward (bf16 in and out, f32 statistics), matmul bf16 4096^3 and 8192^3 (f32 accumulate); then
compile latency (cold, disk-cache hit in a new process, same-process hit) and the host overhead of
launching an empty kernel.

Method: every implementation is checked on fresh random inputs against a float32/float64 torch
reference (its output poisoned with NaN first) before it is timed; one that fails or raises is
reported with its reason and not timed. Where an implementation has a few configurations (tile
shapes, hints) each is checked and briefly timed and the fastest kept (Triton's matmul autotunes
itself). Timing: CUDA events around each launch after warm-up, the L2 flushed before each, the
implementations of a case interleaved over rounds; median and p10/p90. GPU clocks, temperature and
power are logged before, per case and after (never changed).

Results: a printed table (absolute ms, GB/s or TFLOP/s; ratios to the copy's bandwidth, to cuBLAS,
to the case's fastest), DATE-DEVICE-peers.json (results.validate checks its shape), .txt and .png.

Layout: cases.py (sizes, inputs, references), impls/ (one table per library), measure.py (check,
tune, time), latency.py, system.py (versions, nvidia-smi), results.py (pure: statistics, ratios,
table, names), chart.py, cli.py.
"""
