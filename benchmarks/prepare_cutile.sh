#!/usr/bin/env bash
# Prepare cuTile (cuda-tile 1.7.0) for a GPU machine with CUDA 13.0 and no network, as one
# folder .cutile/ to carry there: cuTile's tileiras needs CUDA 13.4's ptxas and libnvvm, which that
# machine's toolkit lacks, and the wheels are too big to carry whole. Run here (pip and network);
# there, `source .cutile/setup.sh` unpacks to /tmp/cutile and sets PATH, CUDA_HOME,
# LD_LIBRARY_PATH and PYTHONPATH. Python 3.12, x86-64.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
           --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64)
for spec in cuda-tile==1.7.0 nvidia-cuda-tileiras==13.4.92 nvidia-cuda-nvcc==13.4.92 nvidia-nvvm==13.4.92; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$work/wheels" "$spec"
done
stage="$work/cutile"
mkdir -p "$stage/bin" "$stage/nvvm/lib64" "$stage/nvvm/libdevice" "$stage/python"
unzip -q -j "$work"/wheels/nvidia_cuda_tileiras-*.whl nvidia/cu13/bin/tileiras -d "$stage/bin"
unzip -q -j "$work"/wheels/nvidia_cuda_nvcc-*.whl nvidia/cu13/bin/ptxas -d "$stage/bin"
unzip -q -j "$work"/wheels/nvidia_nvvm-*.whl nvidia/cu13/lib/libnvvm.so.4 -d "$stage/nvvm/lib64"
unzip -q -j "$work"/wheels/nvidia_nvvm-*.whl nvidia/cu13/nvvm/libdevice/libdevice.10.bc -d "$stage/nvvm/libdevice"
ln -sf libnvvm.so.4 "$stage/nvvm/lib64/libnvvm.so"
unzip -q "$work"/wheels/cuda_tile-*.whl -d "$stage/python"   # its one other need, typing-extensions, is there
chmod +x "$stage"/bin/*
rm -rf .cutile && mkdir .cutile
tar -C "$stage" -cf - . | xz -6 -T0 > .cutile/cutile.tar.xz
cat > .cutile/setup.sh <<'SETUP'
# source .cutile/setup.sh: cuTile with CUDA 13.4's tileiras, ptxas and libnvvm, from /tmp/cutile
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -x /tmp/cutile/bin/tileiras ] || { mkdir -p /tmp/cutile && xz -dc "$here/cutile.tar.xz" | tar -C /tmp/cutile -xf -; }
export PATH=/tmp/cutile/bin:$PATH CUDA_HOME=/tmp/cutile
export LD_LIBRARY_PATH=/tmp/cutile/nvvm/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/cutile/python:${PYTHONPATH:-}
SETUP
du -sh .cutile
