#!/bin/sh
# runtime/gpukit.sh - pack what runtime/gpucheck.sh needs on a lent GPU
# machine that has no network, no ../shared/data and no -dev packages:
# the CUDA build of wprun, the few shared libraries it needs beside the
# CUDA driver and cuBLAS, and the stories260K bundles made here.
#
# Usage: sh runtime/gpukit.sh [KIT]   (default .gpukit in the repository,
# git-ignored; a relative KIT is taken from the current folder; an existing
# KIT is replaced only if it is an earlier kit). Then, on the GPU machine:
# sh runtime/gpucheck.sh (it finds .gpukit/bin/wprun; another KIT through
# WPACK_KIT=KIT). The kit holds bin/wprun, lib/ (libraries beside libc,
# libstdc++, the CUDA driver and cuBLAS) and bundles/ (stories260K BF16 with
# palette 16 and 0, llama-quantize Q4_0 Q8_0 Q4_K_M IQ4_XS, mksynth's small
# model), and STAMP (a checksum of runtime/ and lib/ sources: gpucheck.sh
# warns when the tree it runs in has changed since). The kit is built in
# KIT.new and moved into place only when complete. On the device tool, run
# this in the session's own checkout and pass carry: [".gpukit"]. An option
# (but -h, --help) or a second argument is a usage error (exit 64).
set -eu
usage="usage: sh runtime/gpukit.sh [KIT]"
case ${1:-} in
-h | --help) echo "$usage"; exit 0 ;;
-*) echo "gpukit: unknown option ${1} ($usage)" >&2; exit 64 ;;   # it made a kit named --help (- too: not a folder)
esac
[ $# -le 1 ] || { echo "gpukit: one KIT folder at most ($usage)" >&2; exit 64; }
K=${1:-}
case $K in
"") ;;
/*) ;;
*) K=$(pwd)/$K ;;   # relative to where it was called, before the cd below
esac
cd "$(dirname "$0")/.."
K=${K:-$(pwd)/.gpukit}
# replace only an earlier kit (or an empty or missing folder), never anything else
if [ -e "$K" ] && [ -n "$(ls -A "$K" 2>/dev/null)" ] && [ ! -x "$K/bin/wprun" ]; then
    echo "gpukit: $K exists and is not a kit made by gpukit.sh; give another folder" >&2
    exit 1
fi
DATA=${WPACK_DATA:-$(pwd)/../shared/data}
M=$DATA/models/stories260K
Q=${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin/llama-quantize
make -s bin/wprun bin/ggufcat bin/bf16split bin/histogram bin/huffbuild bin/laneinterleave build/tools/mksynth
ldd bin/wprun | grep -q libcudart || { echo "gpukit: bin/wprun is the CPU-only build (no nvcc?)" >&2; exit 1; }
F=$K
K=$F.new   # built here, moved to $F when complete
rm -rf "$K"
mkdir -p "$K/bin" "$K/lib" "$K/bundles"
cp bin/wprun "$K/bin/"
cat runtime/*.c runtime/*.cu runtime/*.h runtime/*.cuh lib/*.c lib/*.h | cksum > "$K/STAMP"
for l in $(ldd bin/wprun | awk '/=> \// { print $3 }'); do
    case $l in
    */libcublas*|*/libc.so*|*/libm.so*|*/libpthread*|*/libdl.so*|*/librt.so*|*/libgcc_s*|*/libstdc++*) ;;
    *) cp -L "$l" "$K/lib/" ;;
    esac
done
bundle_q() { bin/ggufcat "$1" | bin/histogram | bin/huffbuild --max-len 11 | bin/laneinterleave > "$2"; }
[ -f "$M/stories260K-bf16.gguf" ] || { echo "gpukit: no $M/stories260K-bf16.gguf (WPACK_DATA)" >&2; exit 1; }
bin/ggufcat "$M/stories260K-bf16.gguf" | bin/bf16split --palette 16 | bin/histogram |
    bin/huffbuild --max-len 11 | bin/laneinterleave > "$K/bundles/bf16.bundle"
bin/ggufcat "$M/stories260K-bf16.gguf" | bin/bf16split --palette 0 | bin/histogram |
    bin/huffbuild --max-len 11 | bin/laneinterleave > "$K/bundles/bf16p0.bundle"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for ty in Q4_0 Q8_0 Q4_K_M IQ4_XS; do
    if [ -x "$Q" ] && "$Q" "$M/stories260K-f32.gguf" "$t/s-$ty.gguf" $ty 1 > /dev/null 2>&1; then
        bundle_q "$t/s-$ty.gguf" "$K/bundles/s-$ty.bundle"
    else
        echo "gpukit: no $ty bundle (llama-quantize at $Q: make reftools)" >&2
    fi
done
build/tools/mksynth "$t/syn.gguf" small > /dev/null && bundle_q "$t/syn.gguf" "$K/bundles/syn.bundle"
rm -rf "$t"
rm -rf "$F"
mv "$K" "$F"
du -sh "$F"
ls "$F/bundles"
