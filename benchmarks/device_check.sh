#!/usr/bin/env bash
# One GPU machine's check of the tree: the GPU tests, then whichever benchmarks are named, each
# log under $OUT (or ./device-out), a short summary last. For a machine with no network that has
# PyTorch and CuPy but no IPython: the wheels in .whl/ (IPython, anywidget, ipywidgets and their
# needs) are installed to /tmp/site first, and cuTile comes from .cutile/ (benchmarks/prepare_cutile.sh).
#
#   bash benchmarks/device_check.sh tests idioms            # GPU tests, then benchmarks/idioms.py
#   bash benchmarks/device_check.sh tests:test_tile_cpp.py  # one test file of tests/gpu
#
# Stages: tests[:FILE] | tests-k:EXPR | nvrtc | idioms | samples[:DIR] | conformance[:DIR] | fuzz[:MINUTES] | cupy:DIR |
#         overhead | tilecpp | peers[:GROUP]
# cuTile's samples and tests come from a checkout of its repository (default .cutile-src/samples, .cutile-src/test),
# or from .cutile-src.tar.xz, unpacked there first (a tenth of the size, so it travels beside .cutile/).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
[ -f .cutile-src.tar.xz ] && [ ! -d .cutile-src ] && tar -xJf .cutile-src.tar.xz
with_cutile() { [ -f .cutile/setup.sh ] && source .cutile/setup.sh; }
summary=()
for stage in "$@"; do
  name=${stage%%:*} arg=${stage#*:}; [ "$arg" = "$stage" ] && arg=
  start=$SECONDS
  case $name in
    tests) python3 -m pytest -m gpu "tests/gpu${arg:+/$arg}" -n 16 -v --timeout 400 -p no:cacheprovider \
             -W ignore::pytest_benchmark.logger.PytestBenchmarkWarning 2>&1 | tee "$out/tests.log" \
             | grep -E "FAILED|ERROR|passed|failed" | tail -n 60
           summary+=("tests: $(tail -n 1 "$out/tests.log")") ;;
    tests-k) python3 -m pytest -m gpu tests/gpu -k "$arg" -n 16 -v --timeout 400 -p no:cacheprovider \
               -W ignore::pytest_benchmark.logger.PytestBenchmarkWarning 2>&1 | tee "$out/tests-k.log" \
               | grep -E "FAILED|ERROR|passed|failed" | tail -n 40
             summary+=("tests -k: $(tail -n 1 "$out/tests-k.log")") ;;
    nvrtc) # NVRTC 13.4 (tile mode) into the environment, leaving the machine's CUDA 13.0 headers alone (tile
           # cells then take NVRTC's own), and the tile compiler from .cutile's pack on PATH. A warm machine
           # keeps what an earlier call installed: each part is done where its files came along.
           compgen -G ".nvrtc/*.whl" >/dev/null &&
             python3 -m pip install -q --no-index --no-deps --no-compile --upgrade .nvrtc/*.whl 2>&1 | tail -n 2
           [ -f .cutile/setup.sh ] && (source .cutile/setup.sh)
           [ -x /tmp/cutile/bin/tileiras ] && export PATH=/tmp/cutile/bin:$PATH
           python3 -c "from tileworkbench.runtime import tile_cpp; print('tile compiler:', tile_cpp.unavailable_reason() or 'ready')" ;;
    idioms) (with_cutile; python3 benchmarks/idioms.py --dtypes bfloat16,float16,float32) 2>&1 | tee "$out/idioms.log" | tail -n 40
            summary+=("idioms: see idioms.log") ;;
    samples) (python3 benchmarks/cutile_samples.py "${arg:-.cutile-src/samples}") 2>&1 | tee "$out/samples.log" | tail -n 20
             summary+=("samples: $(tail -n 1 "$out/samples.log")") ;;
    conformance) (python3 benchmarks/cutile_conformance.py "${arg:-.cutile-src/test}" --public-api -- -n 16) 2>&1 | tee "$out/conformance.log" | tail -n 20
                 summary+=("conformance: $(tail -n 1 "$out/conformance.log")") ;;
    fuzz) (with_cutile; python3 -m tests.fuzz.differential --minutes "${arg:-5}" --report "$out/mismatches.txt") 2>&1 | tee "$out/fuzz.log" | tail -n 15
          summary+=("fuzz: $(tail -n 1 "$out/fuzz.log")") ;;
    cupy) python3 benchmarks/cupy_user_kernel_tests.py --gpu --cupy "$arg" --json "$out/cupy_gpu.json" 2>&1 \
            | tee "$out/cupy.log" | tail -n 40
          summary+=("cupy: $(tail -n 1 "$out/cupy.log")") ;;
    overhead) (with_cutile; python3 benchmarks/launch_overhead.py --samples 5) 2>&1 | tee "$out/overhead.log" | tail -n 25
              summary+=("overhead: see overhead.log") ;;
    tilecpp) (with_cutile; python3 -m benchmarks.tile_cpp) 2>&1 | tee "$out/tile_cpp.log" | tail -n 20
             summary+=("tilecpp: see tile_cpp.log") ;;
    peers) (with_cutile; python3 benchmarks/peers.py ${arg:+--only "$arg"} --out "$out") 2>&1 | tee "$out/peers.log" \
             | tail -n 60
           summary+=("peers: see peers.log") ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
  summary+=("  ($name took $((SECONDS - start)) s)")
done
printf '%s\n' "${summary[@]}"
