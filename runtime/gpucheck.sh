#!/bin/sh
# runtime/gpucheck.sh - the one prepared check for a lent GPU (an H100 or H200):
# build, wprun --verify on the stories260K bundles and on synthetic matrices
# (a 4096 x 14336 matrix of every coded type and BF16), then --bench, the
# palette GEMV loading 1 and 2 steps ahead, --tune, and a short table last. Budget: 8 minutes in all (each step has a
# timeout; the bench is skipped when the budget is nearly spent); about 100
# s on an H100 or H200 with the kit. GPUCHECK_MEMCHECK=1 adds a
# compute-sanitizer memcheck run, GPUCHECK_SOURCE=1 the stall samples of the
# Q4_K batch-1 GEMV per SASS instruction (and each launch's duration against
# its SMs' active cycles, occupancy and waves), GPUCHECK_PROFILE=1 Nsight Compute on one
# launch of each kernel (clocks left alone), the stall reasons of the
# fused, private and twin GEMVs and the fused and private GEMVs' L1
# traffic a tile (in the summary).
#
# With a kit packed by runtime/gpukit.sh (.gpukit, or WPACK_KIT) it uses
# that prebuilt wprun and its bundles: the way to run it on a lent machine
# with no network and no data. Otherwise it needs the repository,
# ../shared/data (WPACK_DATA) and nvcc (on PATH or /usr/local/cuda/bin), and
# runs `make deps all tests` first; where that cannot finish (no network for
# npm, say) it builds just what wprun and the bundle filters need.
#
# On a lent machine (the device tool), run `sh runtime/gpukit.sh` in the
# session's own checkout first and give the run carry: [".gpukit"] (the kit
# is git-ignored, so it travels only when carried): without it the script
# stops at once, as it cannot build there.
#
# Usage: sh runtime/gpucheck.sh [OUTDIR]     (logs and tables under OUTDIR,
# default /tmp/wpack-gpucheck; a relative OUTDIR is taken from the current
# folder; exit 0 when every check passed, 3 when there is no CUDA device
# (the summary's one line, before bundles are made; without a kit before the
# build too), 64 for a bad argument). When $OUT is
# set (the device tool) and no OUTDIR is given, the logs are written to a
# temporary folder and come back as $OUT/gpucheck-logs.tgz beside
# $OUT/summary.txt (the tool returns only a few files).
set -u
usage="usage: sh runtime/gpucheck.sh [OUTDIR]"
case ${1:-} in
-h | --help) echo "$usage"; exit 0 ;;
-*) echo "gpucheck: unknown option ${1} ($usage)" >&2; exit 64 ;;   # - too: not a folder
esac
[ $# -le 1 ] || { echo "gpucheck: one OUTDIR at most ($usage)" >&2; exit 64; }
# a relative OUTDIR is taken from the current folder, before the cd below (as gpukit.sh's KIT)
ARG1=${1:-}
case $ARG1 in "" | /*) ;; *) ARG1=$(pwd)/$ARG1 ;; esac
set -- ${ARG1:+"$ARG1"}
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
DATA=${WPACK_DATA:-$ROOT/../shared/data}
M=$DATA/models/stories260K
if [ -n "${1:-}" ]; then
    O=$1
elif [ -n "${OUT:-}" ]; then
    O=$(mktemp -d)
else
    O=/tmp/wpack-gpucheck
fi
mkdir -p "$O"
# the logs back to $OUT in one archive (with the summary beside it), however the script ends
pack() { [ -z "${1:-}" ] && [ -n "${OUT:-}" ] && [ "$O" != "$OUT" ] && tar czf "$OUT/gpucheck-logs.tgz" -C "$O" . &&
    cp "$O/summary.txt" "$OUT/" 2> /dev/null; }
trap 'pack "$ARG1"' EXIT
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[gpucheck $(elapsed)s] $*"; }
status=0
summary="$O/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

# no device: the summary's one line and exit 3, before bundles are made or anything is
# checked (it gave eight FAIL lines and an empty table, the reason only in the logs).
# no_device_stop asks wprun (exit 3: no CUDA device); without a kit, the build is skipped
# too where neither nvidia-smi nor /dev/nvidia* shows a GPU.
no_device() {
    note "gpucheck: no CUDA device found (wprun exit 3): nothing checked"
    exit 3
}
no_device_stop() {
    "$W" --verify --synth Q4_0:64x256 --batch 1 > "$O/device.log" 2>&1
    [ $? -ne 3 ] || no_device
}
say "device: $(nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv,noheader 2>/dev/null || echo '?')"
PATH=$PATH:/usr/local/cuda/bin; export PATH
KIT=${WPACK_KIT:-$ROOT/.gpukit}
BUNDLES=""
if [ -x "$KIT/bin/wprun" ]; then
    # ---- 1+2. prebuilt: runtime/gpukit.sh packed wprun, its libraries and the bundles
    W=$KIT/bin/wprun
    LD_LIBRARY_PATH=$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    if ldd "$W" | grep -q 'libcublas.*not found'; then
        cb=$(find /usr/local /opt /usr/lib -name 'libcublas.so.13*' 2>/dev/null | head -n 1)
        [ -n "$cb" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$cb")
        cl=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.13*' 2>/dev/null | head -n 1)
        [ -n "$cl" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$cl")
    fi
    if ldd "$W" | grep -q 'not found'; then
        ldd "$W" | grep 'not found'
        say "FAILED: $W is missing libraries"
        exit 1
    fi
    for b in "$KIT"/bundles/*.bundle; do [ -f "$b" ] && BUNDLES="$BUNDLES $b"; done
    say "prebuilt kit $KIT"
    no_device_stop
    # a kit packed before the sources changed runs old code: say so loudly
    if [ -f "$KIT/STAMP" ] && [ -d runtime ] && [ -d lib ] &&
        [ "$(cat runtime/*.c runtime/*.cu runtime/*.h runtime/*.cuh lib/*.c lib/*.h | cksum)" != "$(cat "$KIT/STAMP")" ]; then
        note "WARNING: the kit is older than the sources here (runtime/, lib/ changed since gpukit.sh): it runs old code"
    fi
else
    command -v nvcc >/dev/null || { say "no kit ($KIT) and no nvcc: run sh runtime/gpukit.sh and carry .gpukit"; exit 2; }
    if [ ! -f /usr/include/zstd.h ] && [ ! -f /usr/include/xxhash.h ]; then
        say "no kit ($KIT) and no -dev packages to build with: run sh runtime/gpukit.sh and carry .gpukit"
        exit 2
    fi
    if ! nvidia-smi -L > /dev/null 2>&1 && ! ls /dev/nvidia[0-9]* > /dev/null 2>&1; then
        no_device
    fi
    # ---- 1. build (<= 4 minutes) ----------------------------------------------
    J=$(nproc 2>/dev/null || echo 4)
    if timeout 200 make -j"$J" deps all tests > "$O/build.log" 2>&1; then
        say "built: make deps all tests"
    else
        say "make deps all tests failed (see $O/build.log); building the runner and the filters only"
        if ! timeout 150 make -j"$J" lib/libwpack.a bin/ggufcat bin/bf16split bin/histogram bin/huffbuild \
                bin/laneinterleave bin/verify bin/wprun >> "$O/build.log" 2>&1; then
            tail -n 20 "$O/build.log"
            say "FAILED to build bin/wprun"
            exit 1
        fi
    fi
    ldd bin/wprun | grep -q libcudart || { say "bin/wprun is the CPU-only build (nvcc not used?)"; exit 1; }
    W=$ROOT/bin/wprun
    no_device_stop

    # ---- 2. bundles ------------------------------------------------------------------
    bundle_q() { bin/ggufcat "$1" | bin/histogram | bin/huffbuild --max-len 11 | bin/laneinterleave > "$2"; }
    if [ -f "$M/stories260K-bf16.gguf" ]; then
        bin/ggufcat "$M/stories260K-bf16.gguf" | bin/bf16split --palette 16 | bin/histogram |
            bin/huffbuild --max-len 11 | bin/laneinterleave > "$O/bf16.bundle" && BUNDLES="$BUNDLES $O/bf16.bundle"
        bin/ggufcat "$M/stories260K-bf16.gguf" | bin/bf16split --palette 0 | bin/histogram |
            bin/huffbuild --max-len 11 | bin/laneinterleave > "$O/bf16p0.bundle" && BUNDLES="$BUNDLES $O/bf16p0.bundle"
    else
        say "no $M/stories260K-bf16.gguf: stories260K BF16 bundles skipped"
    fi
    Q=${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin/llama-quantize
    for t in Q4_0 Q8_0 Q4_K_M IQ4_XS; do
        if [ -x "$Q" ] && timeout 30 "$Q" "$M/stories260K-f32.gguf" "$O/s-$t.gguf" $t 1 > /dev/null 2>&1; then
            bundle_q "$O/s-$t.gguf" "$O/s-$t.bundle" && BUNDLES="$BUNDLES $O/s-$t.bundle"
        fi
    done
    if [ -x build/tools/mksynth ] && build/tools/mksynth "$O/syn.gguf" small > /dev/null 2>&1; then
        bundle_q "$O/syn.gguf" "$O/syn.bundle" && BUNDLES="$BUNDLES $O/syn.bundle"
    fi
fi
say "bundles:$BUNDLES"

# ---- 3. verify: stories260K and small synthetic (device restore bit for bit, GEMV vs float64)
run() { # NAME TIMEOUT ARGS...
    n=$1 to=$2
    shift 2
    timeout -k 5 "$to" "$W" "$@" > "$O/$n.log" 2>&1   # wprun's stdout is line-buffered: a killed step keeps its lines
    rc=$?
    fails=$(grep -E 'FAIL|MISMATCH' "$O/$n.log" | grep -cv '^wprun:')
    oks=$(grep -E ' ok$' "$O/$n.log" | grep -cv '^wprun:')
    if [ $rc -eq 0 ]; then
        note "PASS $n: $oks checks ok"
    else
        note "FAIL $n: exit $rc, $fails failed checks, $oks ok (log $O/$n.log)"
        grep -E 'FAIL|MISMATCH' "$O/$n.log" | head -n 5 | tee -a "$summary"
        [ $rc -eq 124 ] && note "     (timed out after ${to}s)"
        status=1
    fi
}
args=""
for b in $BUNDLES; do args="$args --bundle $b"; done
[ -n "$args" ] && run verify-bundles 60 --verify --batch 1,3,8,16 $args
run verify-synth-small 45 --verify --synth all:130x800 --batch 1,5,8,9,33
# a failure so far (or GPUCHECK_MEMCHECK=1): the same small run under compute-sanitizer's
# memcheck names the bad access
if { [ $status -ne 0 ] || [ "${GPUCHECK_MEMCHECK:-0}" = 1 ]; } && command -v compute-sanitizer > /dev/null; then
    timeout 90 compute-sanitizer --tool memcheck --print-limit 5 "$W" --verify --synth all:130x800 --batch 1 \
        > "$O/memcheck.log" 2>&1
    note "memcheck: $(grep -cE '^=+ (Invalid|Error)' "$O/memcheck.log") errors (log $O/memcheck.log)"
    grep -E '^=+ (Invalid|Error|    at )' "$O/memcheck.log" | head -n 8 | tee -a "$summary"
fi

# ---- 4. the issue's shape for every type: verify + bench in one run (the matrices are made once)
if [ "$(elapsed)" -lt 300 ]; then
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 250 > "$O/clocks.log" 2>&1 &
    smi=$!
    run big 180 --verify --bench --graph --synth all:4096x14336 --batch 1,8 --runs 30
    kill $smi 2> /dev/null
    note "SM clock during big (MHz): $(awk -F, '{ print $1 + 0 }' "$O/clocks.log" | sort -n | uniq -c | sort -rn | head -n 3 | awk '{ printf "%s x%s  ", $2, $1 }')"
else
    note "SKIP big: $(elapsed)s spent before it (budget 8 min)"
fi

# ---- 4b. k_palette loading 1 and 2 steps ahead at batch 1 and 2 (WPRUN_PALETTE_AHEAD; the
#      default is 2 at batch 1, 1 at batch 2)
for a in 1 2; do
    if [ "$(elapsed)" -lt 330 ]; then
        WPRUN_PALETTE_AHEAD=$a
        export WPRUN_PALETTE_AHEAD
        run ahead$a 60 --verify --bench --synth BF16:4096x14336 --batch 1,2 --runs 30
        unset WPRUN_PALETTE_AHEAD
    else
        note "SKIP ahead$a: $(elapsed)s spent before it"
    fi
done

# ---- 5. tuner on the BF16 bundle (batch 1, 16, 256), then auto reads it
BF=""
for b in $BUNDLES; do case $b in */bf16.bundle) BF=$b ;; esac; done
if [ -z "$BF" ]; then
    note "SKIP tune: no bf16.bundle"
elif [ "$(elapsed)" -lt 400 ]; then
    run tune 40 --tune --bundle "$BF" --batch 1,16,256 --tuning "$O/wprun.tuning" --runs 10
    run auto 30 --verify --graph --bundle "$BF" --batch 1,16,256 --pipeline auto --tuning "$O/wprun.tuning"
else
    note "SKIP tune: $(elapsed)s spent before it"
fi
# ---- 5b. every BF16 pipeline on the issue's shape at batch 1 ... 256 (the tuner's choice)
if [ "$(elapsed)" -lt 430 ]; then
    run tune-big 90 --tune --bench --synth BF16:4096x14336 --batch 1,8,16,64,256 --tuning "$O/big.tuning" --runs 20
else
    note "SKIP tune-big: $(elapsed)s spent before it"
fi

# ---- 6b. GPUCHECK_PROFILE=1: Nsight Compute on one launch of each kernel (clocks left alone)
if [ "${GPUCHECK_PROFILE:-0}" = 1 ] && command -v ncu > /dev/null; then
    for k in k_fused_q:Q4_K k_fused_private:Q4_K k_twin:Q4_K k_fused_exp:BF16 k_palette:BF16 k_transcode:BF16 \
        k_recon:BF16; do
        [ "$(elapsed)" -lt 470 ] || { note "SKIP ncu from ${k%%:*} on: $(elapsed)s spent"; break; }
        timeout 60 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
            --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis_Tables \
            -k "regex:${k%%:*}" -s 3 -c 1 \
            "$W" --bench --synth "${k#*:}":4096x14336 --batch "$([ "${k%%:*}" = k_recon ] && echo 32 || echo 1)" \
            --runs 3 > "$O/ncu-${k%%:*}.log" 2>&1
        say "ncu ${k%%:*}: $(grep -E 'Duration|SM Frequency|Warp Cycles Per Issued Instruction|Issue Slots Busy' \
            "$O/ncu-${k%%:*}.log" | tr -s ' ' | tr '\n' ';')"
    done
    # why the GEMV warps wait: the stall reasons, in warps per issue cycle (they sum to the
    # warp cycles per issued instruction), largest five, coded against the twin
    for k in k_fused_q:Q4_K k_fused_private:Q4_K k_twin:Q4_K k_fused_q:Q8_0; do
        [ "$(elapsed)" -lt 470 ] || { note "SKIP stalls from ${k%%:*} ${k#*:} on: $(elapsed)s spent"; break; }
        f="$O/stall-${k%%:*}-${k#*:}.log"
        timeout 60 ncu --clock-control none \
            --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
            -k "regex:${k%%:*}" -s 3 -c 1 "$W" --bench --synth "${k#*:}":4096x14336 --batch 1 --runs 3 > "$f" 2>&1
        note "stalls ${k%%:*} ${k#*:}: $(grep -E 'issue_stalled_.*_per_issue_active' "$f" |
            sed -E 's/.*issue_stalled_(.*)_per_issue_active\.ratio[^0-9]*([0-9.]+).*/\2 \1/' | sort -rn | head -n 5 |
            tr '\n' ';')"
    done
    # the fused GEMV's L1 traffic a 64x256 tile (3,584 tiles), beside test_runtime_emu's traffic
    # lines (side bytes, lane words, table lookups): global load requests and sectors, shared
    # wavefronts and their bank conflicts, local load requests (side_row's copy); and private's
    for kt in k_fused_q:fused:Q4_K k_fused_private:private:Q4_K k_fused_q:fused:Q6_K k_fused_q:fused:Q8_0; do
        k=${kt%%:*} p=${kt#*:} t=${kt##*:}
        p=${p%%:*}
        [ "$(elapsed)" -lt 470 ] || { note "SKIP L1 from $k $t on: $(elapsed)s spent"; break; }
        f="$O/l1-$p-$t.log"
        timeout 60 ncu --clock-control none --metrics l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum \
            -k "regex:$k" -c 1 "$W" --verify --pipeline "$p" --synth "$t":4096x14336 --batch 1 > "$f" 2>&1
        note "L1 $k $t, a tile: $(awk '/l1tex__/ { v = $NF; gsub(",", "", v); sub(/^l1tex__/, "", $1);
            printf "%s %.1f; ", $1, v / 3584 }' "$f")"
    done
fi

# The n SASS instructions of an Nsight Compute source page (CSV, every field quoted) with
# the most warp stall samples: samples, address, instruction; or why none could be read.
srctop() { # CSV N
    awk -v n="$2" '
        { l = $0; sub(/\r$/, "", l); sub(/^"/, "", l); sub(/"$/, "", l); k = split(l, f, /","/) }
        !cs { for (i = 1; i <= k; i++) { if (f[i] ~ /^Warp Stall Sampling \(All/) cs = i
                                          if (f[i] ~ /Address/) ca = i
                                          if (f[i] == "Source") cx = i }
              next }
        f[cs] + 0 > 0 { printf "%d\t%s\t%s\n", f[cs], f[ca], f[cx] }
        END { if (!cs) print "     (no \"Warp Stall Sampling (All Samples)\" column in " FILENAME ")" > "/dev/stderr" }' "$1" |
        sort -rn | head -n "$2" | sed 's/^/     /'
}

# ---- 6c. GPUCHECK_SOURCE=1: where the batch-1 Q4_K GEMVs stall, instruction by instruction:
#      their SASS (cuobjdump), and Nsight Compute's stall samples per SASS instruction of
#      k_fused_q staged, ring and fused (its source page as CSV, in the logs) with the ten
#      instructions sampled most in the summary. The question the counts above leave open.
#      With each, a "launch" line: on the H100 (2026-12-05) ring Q4_K's 5,876 warp
#      instructions a tile at 9.9 cycles an issue came to about 29 us a warp, against
#      52.9 us for the launch: what the rest was (a second round, a slow start) it says.
if [ "${GPUCHECK_SOURCE:-0}" = 1 ] && command -v ncu > /dev/null; then
    if command -v cuobjdump > /dev/null; then
        cuobjdump -arch sm_90a --dump-sass "$W" 2> /dev/null |
            awk '/Function :/ { keep = $0 ~ /k_fused_qILi12ELi1ELi[012]E|k_twinILi12ELi1E/ } keep' > "$O/sass-q4k.txt"
        note "SASS of k_fused_q<Q4_K, 1, fused/staged/ring> and k_twin<Q4_K, 1>: $(grep -c ' /\*[0-9a-f]*\*/ ' \
            "$O/sass-q4k.txt") instructions (sass-q4k.txt)"
    fi
    for p in staged ring fused; do
        [ "$(elapsed)" -lt 420 ] || { note "SKIP source $p: $(elapsed)s spent"; break; }
        timeout 90 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
            --section Occupancy --section LaunchStats -k regex:k_fused_q \
            -c 1 -f -o "$O/src-$p" "$W" --verify --pipeline "$p" --synth Q4_K:4096x14336 --batch 1 > "$O/src-$p.log" 2>&1
        timeout 30 ncu --import "$O/src-$p.ncu-rep" --page source --csv --print-source sass > "$O/src-$p.csv" 2>> "$O/src-$p.log"
        timeout 30 ncu --import "$O/src-$p.ncu-rep" --page details > "$O/src-$p.details" 2>> "$O/src-$p.log"
        rm -f "$O/src-$p.ncu-rep"
        # the kernel's time against its warps' own: were the SMs busy all along (SM active
        # cycles against elapsed), how many warps stayed resident, in how many waves
        note "launch $p: $(grep -E '^ +(Duration|Elapsed Cycles|SM Active Cycles|SM Frequency|Achieved Active Warps Per SM|Achieved Occupancy|Waves Per SM|Registers Per Thread|Warp Cycles Per Issued Instruction) ' \
            "$O/src-$p.details" | tr -s ' ' | sed 's/^ //' | tr '\n' ';')"
        note "source $p: the SASS instructions sampled most (samples, address, instruction):"
        srctop "$O/src-$p.csv" 10 2>&1 | tee -a "$summary"
    done
fi

# ---- 6. the short table, last -------------------------------------------------------
echo
echo "== wprun on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) ($(elapsed)s) =="
grep -E '^device ' "$O/big.log" 2>/dev/null | head -n 1
if [ -f "$O/big.log" ]; then
    sed -n '/^matrix /,$p' "$O/big.log" | grep -vE '^wprun:' | awk '
        NR == 1 { printf "%-7s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s\n", "type", "batch",
                  "fused_us", "staged_us", "ring_us", "priv_us", "twin_us", "full_us", "tcode_us", "pal_us", "recon_us",
                  "split_us", "fus/twin", "best/tw", "Gw/s", "HBM_Gw/s"; next }
        NF >= 17 { printf "%-7s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s\n", $2, $3, $4, $5, $6, $7,
                   $8, $9, $10, $11, $12, $13, $14, $15, $16, $17 }'
    grep -E '^graph ' "$O/big.log"
    grep -E '^occ ' "$O/big.log" | grep -E 'batch 1 '   # warps a SM and waves of fused, staged, ring
fi
[ -f "$O/auto.log" ] && grep -E '^graph ' "$O/auto.log"   # the BF16 bundle's pass through the tuner's choices
for a in 1 2; do
    [ -f "$O/ahead$a.log" ] && echo "WPRUN_PALETTE_AHEAD=$a:" && sed -n '/^matrix /,$p' "$O/ahead$a.log" | grep -vE '^wprun:'
done
[ -f "$O/tune-big.log" ] && sed -n '/^matrix /,$p' "$O/tune-big.log" | grep -vE '^wprun:'
[ -f "$O/tune-big.log" ] && grep -E '^tune ' "$O/tune-big.log"
echo "goals: fused/twin <= 0.90 (coded types, batch 1); BF16 fused(exp)/cuBLAS <= 1.10 (best/tw: the fastest"
echo "coded pipeline, staged, ring and private included, against the twin or cuBLAS)"
cat "$summary"
echo "gpucheck: $([ $status -eq 0 ] && echo PASS || echo FAIL) in $(elapsed)s"
exit $status
