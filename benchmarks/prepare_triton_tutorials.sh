#!/usr/bin/env bash
# Put the four Triton tutorials benchmarks/peers.py runs (02 fused softmax, 03 matrix multiplication,
# 05 layer norm, 06 fused attention) in .triton_tutorials/ (ignored by git, ~100 KB: small enough to
# carry to a GPU machine beside .cutile/). They are not in Triton's wheel; they come from a checkout.
#
#   bash benchmarks/prepare_triton_tutorials.sh                    # Triton's repository at v3.6.0
#   bash benchmarks/prepare_triton_tutorials.sh SOURCE [REF]       # SOURCE: a clone, a bare git directory
#                                                                  # or a URL; REF: a tag, branch or commit
#   bash benchmarks/prepare_triton_tutorials.sh FOLDER             # a folder holding the four files
#
# Without SOURCE: /work/.mirror/triton-lang+triton where a mirror of the repository is kept, else a
# sparse, blob-less clone of https://github.com/triton-lang/triton (network). REF defaults to the tag
# of the Triton release the GPU machine runs (v3.6.0), or the source's HEAD where it lacks that tag.
# .triton_tutorials/SOURCE records where the files came from (repository and commit).
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
files=(02-fused-softmax.py 03-matrix-multiplication.py 05-layer-norm.py 06-fused-attention.py)
source=${1:-}
ref=${2:-v3.6.0}
if [ -z "$source" ]; then
  source=/work/.mirror/triton-lang+triton
  [ -d "$source" ] || source=https://github.com/triton-lang/triton
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"
if [ -f "$source/${files[0]}" ]; then  # the files themselves, from wherever they were saved
  for f in "${files[@]}"; do cp "$source/$f" "$work/out/$f"; done
  echo "$(cd "$source" && pwd) (copied)" > "$work/out/SOURCE"
elif [ -d "$source" ]; then
  gitdir=$(git -C "$source" rev-parse --absolute-git-dir 2>/dev/null || echo "$source")
else
  git clone -q --filter=blob:none --no-checkout --depth 1 --branch "$ref" "$source" "$work/triton" 2>/dev/null ||
    git clone -q --filter=blob:none --no-checkout "$source" "$work/triton"
  gitdir="$work/triton/.git"
fi
if [ ! -s "$work/out/SOURCE" ]; then
  if ! commit=$(git --git-dir="$gitdir" rev-parse --verify -q "$ref^{commit}"); then
    echo "no $ref in $source: taking its HEAD" >&2
    ref=HEAD commit=$(git --git-dir="$gitdir" rev-parse HEAD)
  fi
  for f in "${files[@]}"; do
    git --git-dir="$gitdir" show "$commit:python/tutorials/$f" > "$work/out/$f"
  done
  echo "$source $ref $commit (python/tutorials)" > "$work/out/SOURCE"
fi
rm -rf .triton_tutorials && mv "$work/out" .triton_tutorials
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.triton_tutorials/' .gitignore 2>/dev/null ||
  grep -qx '/.triton_tutorials/' "$exclude" 2>/dev/null ||
  { mkdir -p "$(dirname "$exclude")" && echo '/.triton_tutorials/' >> "$exclude"; }
du -sh .triton_tutorials && cat .triton_tutorials/SOURCE
