#!/usr/bin/env bash
# Pack cuTile (cuda-tile 1.7.0) and the CUDA 13.4 tools it needs into .cutile/ for a GPU machine
# with Python 3.12, a CUDA 13.0 toolkit and no network. cuTile compiles through tileiras, which
# needs CUDA 13.4's ptxas and libnvvm ("failed to compile Tile IR program" with 13.0's); the wheels
# are too big to carry whole, so only those files go, xz-compressed, in one folder of < 62 MiB:
#
#   .cutile/cutile.tar.xz   bin/{tileiras,tileirdisasm,ptxas}, nvvm/lib64/libnvvm.so*, nvvm/libdevice/,
#                           python/ (cuda.tile, cutile_cache), deps/ (typing_extensions)
#   .cutile/setup.sh        `source .cutile/setup.sh` there: unpacks to /tmp/cutile once and sets
#                           PATH, CUDA_HOME, LD_LIBRARY_PATH and PYTHONPATH
#   .cutile/VERSIONS        the wheels it came from
#
# Run here (pip and network): bash benchmarks/prepare_cutile.sh
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheels=(cuda-tile==1.7.0 nvidia-cuda-tileiras==13.4.92 nvidia-cuda-nvcc==13.4.92 nvidia-nvvm==13.4.92 typing-extensions)

download() {  # download SPEC: the Python 3.12 x86-64 wheel, from the usual manylinux tags, then any
  local spec=$1 common=(python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12
                        --implementation cp -d "$work/wheels")
  "${common[@]}" --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 "$spec" 2>/dev/null && return
  local wider=()
  for n in 40 39 38 37 36 35 34 33 32 31 30 29 26 24 12 5; do wider+=(--platform "manylinux_2_${n}_x86_64"); done
  "${common[@]}" "${wider[@]}" --platform manylinux2010_x86_64 --platform manylinux1_x86_64 "$spec"
}
for spec in "${wheels[@]}"; do download "$spec"; done

# The file of wheel $1 named $2 (a regex), extracted to the folder $3.
take() {
  local wheel member
  wheel=$(ls "$work"/wheels/"$1"-*.whl)
  member=$(unzip -Z1 "$wheel" | grep -E "(^|/)$2\$" | head -n1)
  [ -n "$member" ] || { echo "no $2 in $(basename "$wheel")" >&2; exit 1; }
  mkdir -p "$3" && unzip -q -o -j "$wheel" "$member" -d "$3"
}
stage="$work/cutile"
take nvidia_cuda_tileiras 'tileiras' "$stage/bin"
take nvidia_cuda_tileiras 'tileirdisasm' "$stage/bin"  # CUDA Tile C++ cells read the Tile IR as text
take nvidia_cuda_nvcc 'ptxas' "$stage/bin"
take nvidia_nvvm 'libnvvm\.so(\.[0-9]+)*' "$stage/nvvm/lib64"
take nvidia_nvvm 'libdevice\.10\.bc' "$stage/nvvm/libdevice"
chmod +x "$stage"/bin/*
(cd "$stage/nvvm/lib64" && for f in libnvvm.so.*; do [ -e libnvvm.so ] || ln -s "$f" libnvvm.so; done)
unzip -q "$work"/wheels/cuda_tile-*.whl -d "$stage/python"
take typing_extensions 'typing_extensions\.py' "$stage/deps"

echo "cuda-tile requires:"
grep '^Requires-Dist' "$stage"/python/cuda_tile-*.dist-info/METADATA | grep -v 'extra ==' | sed 's/^/  /'
echo "  (typing-extensions is packed in deps/, which setup.sh uses only where Python lacks it)"

rm -rf .cutile && mkdir .cutile
(cd "$work/wheels" && ls *.whl) > .cutile/VERSIONS
# The x86 branch filter shrinks the two executables by a tenth: the pack then fits beside the tree.
tar -C "$stage" -cf - . | xz --x86 --lzma2=preset=9e,dict=192MiB -T1 > .cutile/cutile.tar.xz
sha256sum .cutile/cutile.tar.xz | cut -d' ' -f1 >> .cutile/VERSIONS
cat > .cutile/setup.sh <<'SETUP'
# source .cutile/setup.sh (bash): cuTile with CUDA 13.4's tileiras, ptxas and libnvvm, unpacked once
# to $CUTILE_ROOT (default /tmp/cutile). Made by benchmarks/prepare_cutile.sh.
_cutile_pack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CUTILE_ROOT=${CUTILE_ROOT:-/tmp/cutile}
if ! cmp -s "$_cutile_pack/VERSIONS" "$CUTILE_ROOT/VERSIONS"; then
  rm -rf "$CUTILE_ROOT" && mkdir -p "$CUTILE_ROOT" &&
    xz -dc "$_cutile_pack/cutile.tar.xz" | tar -C "$CUTILE_ROOT" -xf - &&
    cp "$_cutile_pack/VERSIONS" "$CUTILE_ROOT/VERSIONS"
fi
export PATH="$CUTILE_ROOT/bin:$PATH" CUDA_HOME="$CUTILE_ROOT"
export LD_LIBRARY_PATH="$CUTILE_ROOT/nvvm/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$CUTILE_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import typing_extensions' 2>/dev/null || export PYTHONPATH="$PYTHONPATH:$CUTILE_ROOT/deps"
unset _cutile_pack
SETUP

exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.cutile/' "$exclude" 2>/dev/null || { mkdir -p "$(dirname "$exclude")" && echo '/.cutile/' >> "$exclude"; }

# Check: the size, the contents, and that the unpacked tools run here.
size=$(du -cb .cutile/* | tail -n1 | cut -f1)
echo ".cutile/: $size bytes ($((size / 1048576)) MiB)"
[ "$size" -lt $((62 * 1048576)) ] || { echo "too big to carry (limit 62 MiB)" >&2; exit 1; }
tar -tJvf .cutile/cutile.tar.xz | awk '$3 > 100000 {print "  " $3, $6}'
( CUTILE_ROOT="$work/unpacked" && source .cutile/setup.sh && tileiras --version | tail -n1 &&
  ptxas --version | tail -n1 && ls "$CUDA_HOME/nvvm/lib64" "$CUDA_HOME/nvvm/libdevice" )
