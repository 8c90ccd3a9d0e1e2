#!/usr/bin/env bats
# Model builds as real make targets, and the rate-quality frontier
# (pipelines/frontier) on a tiny grid of stories260K, with real values.
bats_require_minimum_version 1.5.0
load helpers

# sig FILE: a file as make model's stamps name it beside its path (size and modification time)
sig() { stat -L -c 'size %s mtime %.9Y' -- "$1"; }
# named_as_model_and_text FILE POINT WHY-AS-MODEL WHY-AS-TEXT OUT: make model with FILE as MODEL
# says WHY-AS-MODEL of MODEL in one line, lazyweights --check with FILE as CALIB says
# "FILE: not a calibration text: WHY-AS-TEXT", and OUT is not made
named_as_model_and_text() {
    run make -C "$ROOT" --no-print-directory model MODEL="$1" POINT="$2" TEXT= OUT="$5"
    [ "$status" -ne 0 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ $output == *"*** MODEL=$1: $3.  Stop." ]] || { echo "$output"; return 1; }
    run "$ROOT/pipelines/lazyweights" --check "$2" "$F32" "$1"
    [ "$status" -eq 2 ]
    [ "$output" = "$1: not a calibration text: $4" ]
    [ ! -e "$5" ]
}

REF="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}"
F32="$MODELS/stories260K-f32.gguf"
EVAL="$DATA/text/tinystories_valid_1000.txt"
CALIB="$DATA/text/groups_merged.txt"

@test "make model: builds the GGUF and the bundle of a point; a second make has nothing to do" {
    out="$BATS_TEST_TMPDIR/m"
    args=(-C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out")
    run make "${args[@]}"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    g="$out/stories260K-f32-Q8_0_g0_lam0_c1.gguf"
    [ "$(head -c 4 "$g")" = GGUF ]
    [ -s "${g%.gguf}.bundle" ]
    # RTN Q8_0: the very file llama-quantize writes (10.3580 b/w); the bundle's
    # b/w is the one tests/bitrates.tsv holds
    q8=$(awk -F'\t' '$1 == "stories260K-f32" && $2 == "Q8_0_g0_lam0_c1" { print $3 }' "$ROOT/tests/bitrates.tsv")
    grep -q "^GGUF 10.3580 b/w, bundle $q8 b/w" "${g%.gguf}.report"
    # what it made, said in one line (it said nothing: a fresh user's find)
    [[ "$output" == *"lazyweights: $g and .bundle: GGUF 10.3580 b/w, bundle $q8 b/w"* ]] || { echo "$output"; false; }
    make -q "${args[@]}"
    run make "${args[@]}"
    [[ "$output" == *"Nothing to be done"* ]] || { echo "$output"; false; }
    # a point that is not built yet is out of date
    run make -q -C "$ROOT" model MODEL="$F32" POINT=Q5_0_g0_lam0_c1 TEXT= OUT="$out"
    [ "$status" -ne 0 ]
    # without POINT=, llama.cpp's usual 4-bit mix by GPTQ (it was Q4_0_g1_lam0_c1.25, a widened
    # point README's table shows costs PPL: a session's note)
    run make -n -C "$ROOT" --no-print-directory model MODEL="$F32" TEXT= OUT="$out"
    [ "$status" -eq 0 ]
    [[ "$output" == *"lazyweights $F32 Q4_K_M_g0_lam0_c1 $out"* ]] || { echo "$output"; false; }
}

@test "make model DIST=1 and lazyweights --dist: the dist bundle restores the GGUF and is below zstd -19 of it; without, it goes" {
    out="$BATS_TEST_TMPDIR/m"
    args=(-C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out")
    run make "${args[@]}" DIST=1
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    g="$out/stories260K-f32-Q8_0_g0_lam0_c1.gguf"
    d="${g%.gguf}.dist.bundle"
    q8=$(awk -F'\t' '$1 == "stories260K-f32" && $2 == "Q8_0_g0_lam0_c1" { print $3 }' "$ROOT/tests/bitrates.tsv")
    q8d=$(awk -F'\t' '$1 == "stories260K-f32" && $2 == "Q8_0_g0_lam0_c1.dist" { print $3 }' "$ROOT/tests/bitrates.tsv")
    [ "$q8d" = 8.2075 ]
    # (the GGUF and bundle first, then the dist bundle from the bundle, as --dist-only makes it)
    [[ "$output" == *"lazyweights: $g and .bundle: GGUF 10.3580 b/w, bundle $q8 b/w (RTN)"$'\n'*"lazyweights: $d: dist bundle $q8d b/w (from ${g%.gguf}.bundle: no GPTQ run)"* ]] ||
        { echo "$output"; false; }
    # its verify report, each line after "dist: ", below the bundle's (whose line stays the one
    # "^GGUF" finds)
    [ "$(grep -c '^GGUF ' "${g%.gguf}.report")" -eq 1 ]
    grep -q "^dist: GGUF 10.3580 b/w, bundle $q8d b/w" "${g%.gguf}.report"
    grep -q "^dist: rebuilt GGUF byte-identical" "${g%.gguf}.report"
    "$ROOT/bin/unbundle" "$d" | cmp - "$g"
    # the file to ship: smaller than the bundle, and than zstd -19 of llama-quantize's very GGUF
    [ "$(wc -c < "$d")" -lt "$(wc -c < "${g%.gguf}.bundle")" ]
    [ "$(wc -c < "$d")" -lt "$(zstd -19 -q -c "$g" | wc -c)" ]
    make -q "${args[@]}" DIST=1
    make -q "${args[@]}"   # (without DIST the dist bundle is no target)
    rm "$d"
    run make -q "${args[@]}" DIST=1
    [ "$status" -ne 0 ]
    make -q "${args[@]}" DIST=0
    # a point built without DIST gets its dist bundle without GPTQ run again (it ran lazyweights
    # --dist, GPTQ and all: a note's left alone), the same bytes and report
    cp "${g%.gguf}.report" "$BATS_TEST_TMPDIR/r0"
    local gt; gt=$(stat -c %Y.%y "$g")
    run make "${args[@]}" DIST=yes
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c 'pipelines/lazyweights')" -eq 1 ]
    [[ "$output" == *"pipelines/lazyweights --dist-only $F32 Q8_0_g0_lam0_c1 $out"* ]] || { echo "$output"; false; }
    [ "$(stat -c %Y.%y "$g")" = "$gt" ]
    cmp "${g%.gguf}.report" "$BATS_TEST_TMPDIR/r0"
    [ -s "$d" ]
    "$ROOT/pipelines/lazyweights" --dist "$F32" Q8_0_g0_lam0_c1 "$BATS_TEST_TMPDIR/direct" 2> /dev/null
    cmp "$d" "$BATS_TEST_TMPDIR/direct/stories260K-f32-Q8_0_g0_lam0_c1.dist.bundle"
    cmp "${g%.gguf}.report" "$BATS_TEST_TMPDIR/direct/stories260K-f32-Q8_0_g0_lam0_c1.report"
    # a run without --dist keeps the earlier dist bundle when the GGUF is the same bytes (it
    # removed the slowest file: a fresh user's find), else removes it and says so
    cp "$d" "$BATS_TEST_TMPDIR/d0"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 0 ]
    [[ "$stderr" != *removed* ]]
    cmp "$d" "$BATS_TEST_TMPDIR/d0"
    # and its report's "dist: " lines, as the --dist run wrote them (they were dropped)
    cmp "${g%.gguf}.report" "$BATS_TEST_TMPDIR/r0"
    mkdir "$BATS_TEST_TMPDIR/other"
    cp "$MODELS/stories260K-f16.gguf" "$BATS_TEST_TMPDIR/other/stories260K-f32.gguf"   # another GGUF, the same stem
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$BATS_TEST_TMPDIR/other/stories260K-f32.gguf" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 0 ]
    [ "${stderr##*$'\n'}" = "lazyweights: removed the earlier $d (not of this run's GGUF; --dist-only makes it again from this run's bundle)" ]
    [ ! -e "$d" ]
    # an option's word after the first argument: it was a path (a trailing --help made a folder
    # of that name and ran the pipeline in it: a fresh user's find)
    # (--imatrix too, told IMATRIX=FILE, which the hint left out: a new user's trial)
    for a in --help -h --version --threads -- --imatrix; do
        run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$BATS_TEST_TMPDIR/o5" $a
        [ "$status" -eq 2 ]
        [ "$stderr" = "lazyweights: $a: not an option here (--dist and --dist-only go anywhere, --help, --version and --check first; WPACK_THREADS=N sets the steps' threads, IMATRIX=FILE gives llama-imatrix's matrix; a path: ./$a)" ]
    done
    [ ! -e "$BATS_TEST_TMPDIR/o5" ]
    # --dist anywhere (given last, it was a CALIB named ./--dist: "no such file")
    "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" --dist 2> /dev/null
    [ -s "$d" ]
    # an output's name that is a directory: refused before any work (mv put the new file inside
    # it; rm failed between the moves, a new bundle left beside the old GGUF: a breaker's finds)
    rm "$d"
    mkdir "$d"
    for a in --dist ""; do
        run --separate-stderr "$ROOT/pipelines/lazyweights" $a "$F32" Q8_0_g0_lam0_c1 "$out"
        [ "$status" -eq 2 ]
        [ "$stderr" = "lazyweights: $d: a directory where an output goes (move it away)" ]
        [ -z "$(ls -A "$d")" ]
    done
    rmdir "$d"
    # a file at the .dist.bundle's name that is no bundle is not removed as an earlier run's (a
    # text file went, "it restored that run's GGUF"), and a write-protected output is not
    # replaced, as -o refuses it (mv replaced a 0444 GGUF, root or not: a breaker's finds)
    echo mine > "$d"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $d: not a bundle, at the name of an output this run replaces or removes (move it away)" ]
    [ "$(cat "$d")" = mine ]
    rm "$d"
    # nor a zstd'd text (any zstd frame passed as a bundle), a FIFO or a link to nothing (each was
    # removed with the same claim: a re-tester's finds)
    echo mine | zstd -q > "$d"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $d: not a bundle, at the name of an output this run replaces or removes (move it away)" ]
    rm "$d"
    mkfifo "$d"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$stderr" = "lazyweights: $d: not a regular file, at the name of an output this run replaces or removes (move it away)" ]
    rm "$d"
    ln -s "$BATS_TEST_TMPDIR/nothing" "$d"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$stderr" = "lazyweights: $d: a link to nothing, at the name of an output this run replaces or removes (move it away)" ]
    [ -L "$d" ]
    rm "$d"
    cp "$g" "$BATS_TEST_TMPDIR/g444"
    chmod 444 "$g"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $g: write-protected: not replaced (make it writable, or remove it, first)" ]
    cmp "$g" "$BATS_TEST_TMPDIR/g444"
    chmod 644 "$g"
    # another user's file in a sticky folder, which that user may write: mv over it failed after
    # all the work, with mv's own line (a re-tester's find)
    local sd
    sd=$(mktemp -d "${TMPDIR:-/tmp}/wpack-sticky.XXXXXX")
    chmod 1777 "$sd"
    printf 'old\n' > "$sd/stories260K-f32-Q8_0_g0_lam0_c1.gguf"
    chmod 666 "$sd/stories260K-f32-Q8_0_g0_lam0_c1.gguf"
    if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$F32" &&
        setpriv --reuid=65534 --regid=65534 --clear-groups "$ROOT/pipelines/lazyweights" --version > /dev/null 2>&1; then
        run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$sd"
        [ "$status" -eq 2 ]
        [ "$stderr" = "lazyweights: $sd/stories260K-f32-Q8_0_g0_lam0_c1.gguf: another user's file in a sticky folder: not replaced (write elsewhere)" ]
        [ "$(cat "$sd/stories260K-f32-Q8_0_g0_lam0_c1.gguf")" = old ]
    else
        echo "# (not run: no root, or user 65534 cannot run lazyweights on $F32)" >&3
    fi
    rm -rf "$sd"
    "$ROOT/pipelines/lazyweights" --dist "$F32" Q8_0_g0_lam0_c1 "$out" 2> /dev/null
    cp "$g" "$BATS_TEST_TMPDIR/g" && cp "$d" "$BATS_TEST_TMPDIR/d" && cp "${g%.gguf}.report" "$BATS_TEST_TMPDIR/r"
    # a --dist that fails leaves the earlier outputs as they were, and no temporary file
    fake_bins "$BATS_TEST_TMPDIR/bins" laneinterleave \
        "case \$1 in --dist) echo 'laneinterleave: fake' >&2; exit 1 ;; esac; exec '$ROOT/bin/laneinterleave' \"\$@\""
    run --separate-stderr env WPACK_BIN="$BATS_TEST_TMPDIR/bins" "$ROOT/pipelines/lazyweights" --dist "$F32" Q4_0_g0_lam0_c1 "$out"
    [ "$status" -eq 1 ]
    [ "${#stderr_lines[@]}" -eq 2 ]   # (gptq's fallback warning first: ffn_down's rows of 172)
    [ "${stderr_lines[1]}" = "laneinterleave: fake" ]
    run --separate-stderr env WPACK_BIN="$BATS_TEST_TMPDIR/bins" "$ROOT/pipelines/lazyweights" --dist "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 1 ]
    cmp "$g" "$BATS_TEST_TMPDIR/g"
    cmp "$d" "$BATS_TEST_TMPDIR/d"
    cmp "${g%.gguf}.report" "$BATS_TEST_TMPDIR/r"
    [ "$(ls "$out" | tr '\n' ' ')" = "stories260K-f32-Q8_0_g0_lam0_c1.bundle stories260K-f32-Q8_0_g0_lam0_c1.calib stories260K-f32-Q8_0_g0_lam0_c1.dist.bundle stories260K-f32-Q8_0_g0_lam0_c1.gguf stories260K-f32-Q8_0_g0_lam0_c1.report " ]
    [ -z "$(ls -A "$out" | grep '^\.')" ]
    # WPACK_THREADS: the steps' --threads, the same bytes (a shared machine had no way to set it)
    fake_bins "$BATS_TEST_TMPDIR/tb" laneinterleave "echo \"\$*\" >> '$BATS_TEST_TMPDIR/li.args'; exec '$ROOT/bin/laneinterleave' \"\$@\""
    WPACK_THREADS=0001 WPACK_BIN="$BATS_TEST_TMPDIR/tb" "$ROOT/pipelines/lazyweights" --dist "$F32" Q8_0_g0_lam0_c1 "$BATS_TEST_TMPDIR/t1" 2> /dev/null
    grep -q -- "^--dist --threads 1 -o " "$BATS_TEST_TMPDIR/li.args"
    cmp "$BATS_TEST_TMPDIR/t1/stories260K-f32-Q8_0_g0_lam0_c1.dist.bundle" "$BATS_TEST_TMPDIR/d"
    for n in 0 0000 abc 513 1000 00513; do
        run --separate-stderr env WPACK_THREADS=$n "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$BATS_TEST_TMPDIR/t2"
        [ "$status" -eq 2 ]
        [ "$stderr" = "lazyweights: WPACK_THREADS '$n': expected a count of threads, 1 to 512" ]
        run --separate-stderr env WPACK_THREADS=$n "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$BATS_TEST_TMPDIR/t2"
        [ "$status" -eq 2 ]
        [ "$stderr" = "unweight: WPACK_THREADS '$n': expected a count of threads, 1 to 512" ]
    done
    [ ! -e "$BATS_TEST_TMPDIR/t2" ]
    # --dist with --check, in either order: --check writes no bundle
    run --separate-stderr "$ROOT/pipelines/lazyweights" --dist --check Q8_0_g0_lam0_c1
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: --dist with --check: --check writes nothing" ]
    run --separate-stderr "$ROOT/pipelines/lazyweights" --check Q8_0_g0_lam0_c1 "$F32" --dist
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: --dist with --check: --check writes nothing" ]
    # DIST takes 1 or 0 (yes/no ...), from the command line alone: DIST=no built the dist bundles,
    # and so did an environment's DIST, such as a Debian build's release name (a breaker's finds)
    run make -n "${args[@]}" DIST=no
    [[ "$output" != *"--dist"* ]] || { echo "$output"; false; }
    run env DIST=bookworm make -n "${args[@]}"
    [ "$status" -eq 0 ]
    [[ "$output" != *"--dist"* ]] || { echo "$output"; false; }
    rm "$d"
    run make -n "${args[@]}" DIST=yes
    [[ "$output" == *"lazyweights --dist-only "* ]] || { echo "$output"; false; }
    run make -n "${args[@]}" DIST=bookworm
    [ "$status" -eq 2 ]
    [[ "$output" == *"DIST=bookworm: expected 1 or yes (the --dist bundles too), 0 or no.  Stop." ]] || { echo "$output"; false; }
    # WPACK_THREADS said by make before any stamp (0 left OUT and a .calib, a fresh user's find)
    run make "${args[@]/#OUT=*/OUT=$BATS_TEST_TMPDIR/m6}" WPACK_THREADS=0
    [ "$status" -eq 2 ]
    [[ "$output" == *"WPACK_THREADS=0: expected a count of threads from 1 to 512.  Stop." ]] || { echo "$output"; false; }
    [ ! -e "$BATS_TEST_TMPDIR/m6" ]
}

@test "lazyweights on a terminal: gptq says a line a tensor; in a log only its warnings, after it" {
    # GPTQ of a 7B model was 35 silent minutes (a new user's trial)
    command -v script > /dev/null || skip "script (util-linux) not installed"
    cd "$BATS_TEST_TMPDIR"
    script -qec "'$ROOT/pipelines/lazyweights' '$F32' Q8_0_g0_lam0_c1 tty" /dev/null > tty.out
    [ "$(tr -d '\r' < tty.out | grep -c '^gptq: \[[0-9]*/48\] ')" -eq 48 ] || { cat tty.out; false; }
    "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 log 2> log.err
    [ "$(grep -c '^gptq: \[' log.err)" -eq 0 ]
    # (gptq --quiet dropped its fallback warning too: an IQ3_S point of IQ4_NL blocks was built
    # unsaid in CI, a fresh user's find)
    # (each named by its point: under make -j several points' interleave)
    [ "$(grep -c "^lazyweights: stories260K-f32-Q8_0_g0_lam0_c1: gptq: warning: 5 of 37 quantized tensor(s) fell back, .*: 5 Q8_0 -> F16 " log.err)" -eq 1 ]
    [ "$(wc -l < log.err)" -eq 2 ]
    # and how the point was made (a CI log of an RTN point read as a GPTQ one's: a fresh user's find)
    [ "$(tail -n 1 log.err)" = "lazyweights: log/stories260K-f32-Q8_0_g0_lam0_c1.gguf and .bundle: GGUF 10.3580 b/w, bundle $(awk -F'\t' '$1 == "stories260K-f32" && $2 == "Q8_0_g0_lam0_c1" { print $3 }' "$ROOT/tests/bitrates.tsv") b/w (RTN)" ]
    "$ROOT/pipelines/lazyweights" "$F32" IQ3_S_g0_lam0_c1 log 2> iq.err
    [ "$(grep -c "^lazyweights: stories260K-f32-IQ3_S_g0_lam0_c1: gptq: warning: 36 of 37 quantized tensor(s) fell back, .*: 31 IQ3_S -> IQ4_NL, 5 IQ3_S -> F16 " iq.err)" -eq 1 ]
    cmp tty/stories260K-f32-Q8_0_g0_lam0_c1.bundle log/stories260K-f32-Q8_0_g0_lam0_c1.bundle
    # under stty tostop, where a step (a process group of its own) writing to the terminal is
    # stopped: gptq quiet, laneinterleave --dist's line not shown, the run whole (it exited 150,
    # nothing made or said: a breaker's find)
    run script -qec "stty tostop; '$ROOT/pipelines/lazyweights' --dist '$F32' Q8_0_g0_lam0_c1 ts; echo rc=\$?" /dev/null
    [[ "$output" == *"rc=0"* ]] || { echo "$output"; false; }
    [ "$(printf '%s\n' "$output" | grep -c 'gptq: \[')" -eq 0 ]
    cmp ts/stories260K-f32-Q8_0_g0_lam0_c1.bundle log/stories260K-f32-Q8_0_g0_lam0_c1.bundle
    [ -s ts/stories260K-f32-Q8_0_g0_lam0_c1.dist.bundle ]
}

@test "lazyweights --dist-only: the dist bundle of an earlier run's outputs, the bytes --dist makes; refused where they are missing" {
    out="$BATS_TEST_TMPDIR/o"
    stem="$out/stories260K-f32-Q4_0_g1_lam0_c1.25"
    run --separate-stderr "$ROOT/pipelines/lazyweights" --dist-only "$F32" Q4_0_g1_lam0_c1.25 "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $stem.gguf: no such file (--dist-only adds the .dist.bundle to a run's outputs: run without it first)" ]
    [ ! -e "$out" ]
    "$ROOT/pipelines/lazyweights" "$F32" Q4_0_g1_lam0_c1.25 "$out" 2> /dev/null
    cp "$stem.gguf" "$BATS_TEST_TMPDIR/g0"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q4_0_g1_lam0_c1.25 "$out" --dist-only
    [ "$status" -eq 0 ]
    [ "$stderr" = "lazyweights: $stem.dist.bundle: dist bundle $(sed -n 's/^dist: GGUF [0-9.]* b\/w, bundle \([0-9.]*\) b\/w.*/\1/p' "$stem.report") b/w (from $stem.bundle: no GPTQ run)" ]
    cmp "$stem.gguf" "$BATS_TEST_TMPDIR/g0"
    "$ROOT/bin/unbundle" "$stem.dist.bundle" | cmp - "$stem.gguf"
    [ "$(grep -c '^dist: GGUF ' "$stem.report")" -eq 1 ]
    # again: the report's dist lines replaced, not added
    "$ROOT/pipelines/lazyweights" --dist-only "$F32" Q4_0_g1_lam0_c1.25 "$out" 2> /dev/null
    [ "$(grep -c '^dist: GGUF ' "$stem.report")" -eq 1 ]
    "$ROOT/pipelines/lazyweights" --dist "$F32" Q4_0_g1_lam0_c1.25 "$BATS_TEST_TMPDIR/d" 2> /dev/null
    cmp "$stem.dist.bundle" "$BATS_TEST_TMPDIR/d/stories260K-f32-Q4_0_g1_lam0_c1.25.dist.bundle"
    cmp "$stem.report" "$BATS_TEST_TMPDIR/d/stories260K-f32-Q4_0_g1_lam0_c1.25.report"
    [ -z "$(ls -A "$out" | grep tmp)" ]
    # a .report gone is made again, the same (make model DIST=1 stood stuck on it: a breaker's
    # find)
    rm "$stem.report" "$stem.dist.bundle"
    "$ROOT/pipelines/lazyweights" --dist-only "$F32" Q4_0_g1_lam0_c1.25 "$out" 2> /dev/null
    cmp "$stem.report" "$BATS_TEST_TMPDIR/d/stories260K-f32-Q4_0_g1_lam0_c1.25.report"
    cmp "$stem.dist.bundle" "$BATS_TEST_TMPDIR/d/stories260K-f32-Q4_0_g1_lam0_c1.25.dist.bundle"
    # a .bundle of another point: said so, nothing changed (verify named the temporary file)
    cp "$stem.dist.bundle" "$BATS_TEST_TMPDIR/d0"
    "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" 2> /dev/null
    cp "$stem.bundle" "$BATS_TEST_TMPDIR/b0"
    cp "$out/stories260K-f32-Q8_0_g0_lam0_c1.bundle" "$stem.bundle"
    run --separate-stderr "$ROOT/pipelines/lazyweights" --dist-only "$F32" Q4_0_g1_lam0_c1.25 "$out"
    [ "$status" -eq 1 ]
    [ "$stderr" = "lazyweights: $stem.bundle does not restore $stem.gguf: not one run's outputs (run without --dist-only)" ]
    cmp "$stem.dist.bundle" "$BATS_TEST_TMPDIR/d0"
    [ -z "$(ls -A "$out" | grep tmp)" ]
    # both options (--dist-only won, unsaid), and a swap's suggestion keeps --dist-only (it
    # dropped it, suggesting a whole GPTQ run: a breaker's find)
    run --separate-stderr "$ROOT/pipelines/lazyweights" --dist --dist-only "$F32" Q4_0_g1_lam0_c1.25 "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: --dist or --dist-only, not both (--dist runs the point and makes its .dist.bundle; --dist-only makes the .dist.bundle of an earlier run)" ]
    run --separate-stderr "$ROOT/pipelines/lazyweights" --dist-only "$F32" "$out" Q4_0_g1_lam0_c1.25
    [ "$stderr" = "lazyweights: POINT comes before OUTDIR: $ROOT/pipelines/lazyweights --dist-only $F32 Q4_0_g1_lam0_c1.25 $out" ]
    run --separate-stderr "$ROOT/pipelines/lazyweights" --check Q4_0_g1_lam0_c1.25 --dist-only
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: --dist-only with --check: --check writes nothing" ]
}

@test "make model and lazyweights take IMATRIX: RTN with it is llama-quantize --imatrix's GGUF; a new one rebuilds; a missing or unfitting one is one line" {
    # lazyweights, make model and frontier could not take a llama-imatrix file (a note's
    # "left alone")
    [ -x "$REF/bin/llama-quantize" ] && [ -x "$REF/bin/llama-imatrix" ] || skip "llama.cpp tools not built (make reftools)"
    local d="$BATS_TEST_TMPDIR"
    "$REF/bin/llama-imatrix" -m "$F32" -f "$CALIB" -c 128 --chunks 4 -t 1 -o "$d/imat.gguf" > /dev/null 2>&1
    "$REF/bin/llama-quantize" --imatrix "$d/imat.gguf" "$F32" "$d/ref.gguf" Q4_K_M 1 > /dev/null 2>&1
    local args=(-C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q4_K_M_g0_lam0_c1 TEXT= OUT="$d/m")
    local g="$d/m/stories260K-f32-Q4_K_M_g0_lam0_c1.gguf"
    run make "${args[@]}" IMATRIX="$d/imat.gguf"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    cmp "$g" "$d/ref.gguf"
    "$BIN/verify" -q "$g" "${g%.gguf}.bundle" > /dev/null
    run make "${args[@]}" IMATRIX="$d/imat.gguf"
    [[ "$output" == *"Nothing to be done"* ]] || { echo "$output"; false; }
    # a newer imatrix, or none, rebuilds (without it, llama-quantize's plain Q4_K_M: other bytes)
    touch "$d/imat.gguf"
    run make -q "${args[@]}" IMATRIX="$d/imat.gguf"
    [ "$status" -ne 0 ]
    run make "${args[@]}"
    [ "$status" -eq 0 ]
    ! cmp -s "$g" "$d/ref.gguf" || false
    # lazyweights itself, with IMATRIX in the environment
    IMATRIX="$d/imat.gguf" "$ROOT/pipelines/lazyweights" "$F32" Q4_K_M_g0_lam0_c1 "$d/l" 2> /dev/null
    cmp "$d/l/stories260K-f32-Q4_K_M_g0_lam0_c1.gguf" "$d/ref.gguf"
    # a missing one, or one that is no imatrix: one line, before any file
    run env IMATRIX="$d/none.dat" "$ROOT/pipelines/lazyweights" "$F32" Q4_K_M_g0_lam0_c1 "$d/x"
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: Q4_K_M_g0_lam0_c1: IMATRIX=$d/none.dat: no such file" ]
    [ ! -e "$d/x" ]
    echo junk > "$d/junk.dat"
    run make "${args[@]}" OUT="$d/y" IMATRIX="$d/junk.dat"
    [ "$status" -ne 0 ]
    [[ "$output" == *"*** IMATRIX=$d/junk.dat (for POINT=Q4_K_M_g0_lam0_c1): gptq: $d/junk.dat: a text, not an importance matrix (llama-imatrix writes one, GGUF or imatrix.dat; GPTQ's Hessians of a text: hessian -f).  Stop." ]] || { echo "$output"; false; }
    [ ! -e "$d/y" ]
    # another model's imatrix: said of IMATRIX, in columns (it was blamed on POINT, "(64 x 1) does
    # not fit the tensor (512 x 1)": a fresh user's find)
    "$TOOLS/mkllama" "$F32" "$d/syn.gguf" F16 512,1536,1,8,4,512 > /dev/null
    run make -C "$ROOT" --no-print-directory model MODEL="$d/syn.gguf" POINT=Q4_K_g0_lam0_c1 TEXT= OUT="$d/y" IMATRIX="$d/imat.gguf"
    [ "$status" -ne 0 ]
    [[ "$output" == *"*** IMATRIX=$d/imat.gguf (for POINT=Q4_K_g0_lam0_c1): gptq: $d/imat.gguf: imatrix entry blk.0.attn_q.weight does not fit the tensor: the entry has 64 columns, the tensor's rows are 512 long.  Stop." ]]
    [ ! -e "$d/y" ]
    run make "${args[@]}" OUT="$d/y" IMATRIX="$d/none.dat"
    [[ "$output" == *"*** IMATRIX=$d/none.dat: no such file.  Stop." ]]
}

@test "frontier: CSV with every point, PNG, operating points; the reference has dPPL 0 and KLD 0" {
    [ -x "$REF/bin/llama-quantize" ] || skip "llama.cpp tools not built (make reftools)"
    out="$BATS_TEST_TMPDIR/f"
    FRONTIER_POINTS="Q8_0_g0_lam0_c1 Q4_0_g1_lam0_c1.25" FRONTIER_RTN_POINTS="Q8_0_g0_lam0_c1" \
    FRONTIER_BASELINES="Q8_0" FRONTIER_CHUNKS=4 REF_BUILD="$REF" \
        run "$ROOT/pipelines/frontier" "$F32" "$EVAL" "$out" "$CALIB"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    csv="$out/frontier.csv"
    [ "$(head -n 1 "$csv")" = "point,kind,type,gamma,lambda,widen,bpw,ppl,dppl,kld" ]
    [ "$(cut -d, -f1,2 "$csv" | tail -n +2 | tr '\n' ' ')" = \
      "F32,reference Q8_0_g0_lam0_c1,wpack Q4_0_g1_lam0_c1.25,wpack Q8_0_g0_lam0_c1+rtn,wpack llama_Q8_0,llama.cpp " ]
    awk -F, 'NF != 10 { exit 1 } NR > 1 && !($7 > 0 && $8 > 1) { exit 1 }' "$csv"
    # the reference against itself: dPPL exactly 0, KLD 0 up to the stored log-probabilities' rounding
    awk -F, '$1 == "F32" { ok = ($9 == 0 && $10 < 1e-6 && $10 > -1e-6 && $7 > 32 && $7 < 33) } END { exit !ok }' "$csv"
    # b/w: the bundle's from its report (wpack), 8 x GGUF bytes / weights (llama.cpp)
    grep -q "^Q8_0_g0_lam0_c1,wpack,Q8_0,0,0,1,$(sed -n 's/^GGUF [0-9.]* b\/w, bundle \([0-9.]*\) b\/w.*/\1/p' \
        "$out/stories260K-f32-Q8_0_g0_lam0_c1.report")," "$csv"
    grep -q '^llama_Q8_0,llama.cpp,Q8_0,,,,10.3580,' "$csv"
    # RTN Q8_0 is llama-quantize's own file: the same PPL and KLD as llama.cpp's Q8_0, at the bundle's rate
    q8=$(awk -F'\t' '$1 == "stories260K-f32" && $2 == "Q8_0_g0_lam0_c1" { print $3 }' "$ROOT/tests/bitrates.tsv")
    [ "$(grep '^Q8_0_g0_lam0_c1+rtn,' "$csv" | cut -d, -f7-)" = \
      "$q8,$(grep '^llama_Q8_0,' "$csv" | cut -d, -f8-)" ]
    # a widened 4-bit point loses more than Q8_0
    awk -F, '$1 == "Q8_0_g0_lam0_c1" { a = $10 } $1 == "Q4_0_g1_lam0_c1.25" { b = $10 } END { exit !(b > 10 * a) }' "$csv"
    [ "$(head -c 8 "$out/frontier.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
    md="$out/operating-points.md"
    grep -q '^| 1 % | .* |$' "$md"
    saving=$(awk -v b="$q8" 'BEGIN { printf "%.1f%%", 100 * (1 - b / 10.3580) }')
    grep -q "^| 3.5 % | Q8_0_g0_lam0_c1+rtn | $q8 | .* | llama_Q8_0 | 10.3580 | .* | $saving |\$" "$md"
    grep -q 'node-llama-cpp@3.21.1' "$md"
    grep -q '/llama-imatrix -m .* -f .*groups_merged.txt' "$out/commands.txt"
    grep -q '/llama-quantize .*stories260K-f32.gguf .*-llama-Q8_0.gguf Q8_0' "$out/commands.txt"
    [[ "$output" == *"| budget ΔPPL |"* ]]
}

# fake_bins DIR PROG SCRIPT: DIR holds links to lazyweights' programs, PROG replaced by a
# shell script whose body is SCRIPT (for WPACK_BIN)
fake_bins() {
    mkdir -p "$1"
    for p in ggufcat gptq ggufpack histogram huffbuild laneinterleave unbundle verify hessian tsinfo; do
        [ "$p" = "$2" ] || ln -s "$ROOT/bin/$p" "$1/$p"
    done
    printf '#!/bin/sh\n%s\n' "$3" > "$1/$2"
    chmod +x "$1/$2"
}

@test "lazyweights: an OUTDIR that is a file, or under one, is one line of its own, exit 2 (it was mkdir's)" {
    d="$BATS_TEST_TMPDIR/d"
    mkdir "$d" && touch "$d/afile"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$d/afile"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $d/afile: not a directory (OUTDIR)" ]
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$d/afile/sub"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $d/afile/sub: cannot make the directory (OUTDIR): Not a directory" ]
    # an empty name, a link to nothing (a breaker's finds: ": cannot make", mkdir's "File exists")
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 ""
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: an empty OUTDIR" ]
    # an empty MODEL or CALIB, given (": no such file"; an empty CALIB ran RTN, exit 0: a fresh
    # user's find), and in --check
    run --separate-stderr "$ROOT/pipelines/lazyweights" "" Q8_0_g0_lam0_c1 "$d/o"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: an empty file name" ]
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$d/o" ""
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: an empty CALIB (leave it out for RTN)" ]
    [ ! -e "$d/o" ]
    run "$ROOT/pipelines/lazyweights" --check Q8_0_g0_lam0_c1 ""
    [ "$status" -eq 2 ]
    [ "$output" = "an empty file name" ]
    run "$ROOT/pipelines/lazyweights" --check Q8_0_g0_lam0_c1 "$F32" ""
    [ "$status" -eq 2 ]
    [ "$output" = "an empty file name" ]
    ln -s "$d/nowhere/x" "$d/dangling"
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$d/dangling"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $d/dangling: a symbolic link to nothing (OUTDIR)" ]
    [ "$(ls -A "$d" | tr '\n' ' ')" = "afile dangling " ]
}

@test "lazyweights: an OUTDIR it cannot write into is one line before any work, exit 2 (it failed in gptq or at the .hess.id)" {
    [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null || skip "needs root and setpriv to run as another user"
    setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "[ -r '$F32' ] && [ -r '$CALIB' ] && [ -x '$ROOT/bin/gptq' ]" \
        || skip "user 65534 cannot reach the source tree or the data"
    d=$(mktemp -d /tmp/wpack-ro.XXXXXX)
    chmod 755 "$d" && mkdir "$d/ro" && chmod 555 "$d/ro"
    run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$d/ro" "$CALIB"
    rm -rf "$d"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $d/ro: cannot write into the directory (OUTDIR)" ]
}

@test "lazyweights interrupted before its check: nothing under a final name, no temporary file" {
    # it wrote NAME-POINT.wts, .gguf and .report in place, so an interrupted build left parts
    # that make took as up to date (a new user's trial); now they are moved in after the check
    bins="$BATS_TEST_TMPDIR/bins" out="$BATS_TEST_TMPDIR/o"
    fake_bins "$bins" verify "touch '$BATS_TEST_TMPDIR/verify.started'; sleep 30; exec '$ROOT/bin/verify' \"\$@\""
    WPACK_BIN="$bins" setsid "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" > /dev/null 2>&1 &
    pid=$!
    for i in $(seq 600); do [ -e "$BATS_TEST_TMPDIR/verify.started" ] && break; sleep 0.1; done
    [ -e "$BATS_TEST_TMPDIR/verify.started" ]
    [ -n "$(ls -A "$out" | grep '\.tmp')" ]   # its parts exist, under temporary names
    kill -TERM -- -"$pid"   # (a background job ignores SIGINT; the traps are the same)
    wait "$pid" || true
    [ -z "$(ls -A "$out")" ] || { ls -A "$out"; false; }
}

@test "make model: a TERM to make alone (a CI job cancelled) ends lazyweights and its step; nothing is made after make exits" {
    # the recipe's shell, there for HESSIAN_CHUNKS=, died of the TERM make passes its children,
    # and lazyweights and gptq ran on and installed the point after make had exited (a CI
    # maintainer's trial): the recipe execs lazyweights
    bins="$BATS_TEST_TMPDIR/bins" out="$BATS_TEST_TMPDIR/o" w="$BATS_TEST_TMPDIR"
    fake_bins "$bins" gptq "case \" \$* \" in *' --check '*) exec '$ROOT/bin/gptq' \"\$@\" ;; esac; echo \$\$ > '$w/gptq.pid'; exec sleep 60"
    WPACK_BIN="$bins" make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 \
        TEXT="$CALIB" HESSIAN_CHUNKS=1 OUT="$out" > "$w/log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do [ -s "$w/gptq.pid" ] && break; sleep 0.1; done
    [ -s "$w/gptq.pid" ]
    read -r gp < "$w/gptq.pid"
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -ne 0 ]
    # the step is gone at once, and so is lazyweights: no point under its name
    for _ in $(seq 50); do kill -0 "$gp" 2> /dev/null || break; sleep 0.1; done
    ! kill -0 "$gp" 2> /dev/null || false
    ! pgrep -f "pipelines/lazyweights $F32 Q8_0_g0_lam0_c1 $out" > /dev/null || false
    sleep 1
    [ ! -e "$out/stories260K-f32-Q8_0_g0_lam0_c1.gguf" ]
    [ -z "$(ls -A "$out" | grep tmp)" ]
}

@test "lazyweights and make model: the temporary files of a killed run (SIGKILL) are removed by the next, said; a live run's stay" {
    # a CI runner's timeout (SIGKILL) left them, which no trap can remove, and they piled up,
    # a GiB each on a 7B (a CI maintainer's trial)
    out="$BATS_TEST_TMPDIR/o"
    mkdir -p "$out"
    dead=4194999   # above Linux's PID limit (4194304): no such process
    [ ! -d "/proc/$dead" ]
    for f in wts dist.bundle; do echo x > "$out/.stories260K-f32-Q8_0_g0_lam0_c1.tmp$dead.$f"; done
    echo x > "$out/.stories260K-f32-Q8_0_g0_lam0_c1.tmp$$.wts"   # this test's own shell: alive
    echo x > "$out/stories260K-f32-groups_merged-k1.hess.tmp.AbC123"
    run --separate-stderr env HESSIAN_CHUNKS=1 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB"
    [ "$status" -eq 0 ]
    printf '%s\n' "${stderr_lines[@]}" | grep -qxF "lazyweights: removed $out/stories260K-f32-groups_merged-k1.hess.tmp.AbC123, a killed run's temporary Hessians"
    printf '%s\n' "${stderr_lines[@]}" | grep -qxF "lazyweights: removed 2 temporary files a killed run left ($out/.stories260K-f32-Q8_0_g0_lam0_c1.tmpPID.*)"
    [ "$(ls -A "$out" | grep tmp)" = ".stories260K-f32-Q8_0_g0_lam0_c1.tmp$$.wts" ]
    # make's own hessian (make model) removes a killed one's temporary Hessians too
    rm -f "$out"/*.hess
    echo x > "$out/stories260K-f32-groups_merged-k1.hess.tmp.XyZ789"
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT="$CALIB" HESSIAN_CHUNKS=1 OUT="$out"
    [ "$status" -eq 0 ]
    [[ $output == *"make: removed $out/stories260K-f32-groups_merged-k1.hess.tmp.XyZ789, a killed run's temporary Hessians"* ]]
    [ "$(ls -A "$out" | grep tmp)" = ".stories260K-f32-Q8_0_g0_lam0_c1.tmp$$.wts" ]
}

@test "make model stopped while it waits for another run's Hessians removes nothing of that run's; a live run's temporary files stay while it holds its lock (breakers' finds)" {
    # the waiter's cleanup removed the .id of the Hessians the other run was computing, which
    # were then computed again
    out="$BATS_TEST_TMPDIR/o" w="$BATS_TEST_TMPDIR"
    mkdir -p "$out"
    flock -o "$out" sleep 60 &   # the other run, holding OUT's lock (-o: not its sleep)
    holder=$!
    make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT="$CALIB" HESSIAN_CHUNKS=1 OUT="$out" > "$w/log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q "waiting for another run's Hessians" "$w/log" && break; sleep 0.1; done
    grep -q "make: waiting for another run's Hessians in $out" "$w/log"
    kill -TERM "$pid"
    wait "$pid" || true
    [ -e "$out/stories260K-f32-groups_merged-k1.hess.id" ]
    [ -e "$out/stories260K-f32-Q8_0_g0_lam0_c1.calib" ]
    kill "$holder"
    wait "$holder" || true
    # a run that holds its lock (another PID namespace, where /proc has no such PID) keeps its
    # files; once the lock is free, they are a killed run's
    p="$out/.stories260K-f32-Q8_0_g0_lam0_c1.tmp4194999"
    echo x > "$p.wts"
    : > "$p.lock"
    flock -o "$p.lock" sleep 60 &
    holder=$!
    sleep 0.5
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 0 ]
    [ -e "$p.wts" ]
    kill "$holder"
    wait "$holder" || true
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 0 ]
    printf '%s\n' "${stderr_lines[@]}" | grep -qxF "lazyweights: removed 2 temporary files a killed run left (${p%.tmp*}.tmpPID.*)" || { echo "$stderr"; false; }
    [ -z "$(ls -A "$out" | grep tmp)" ] || { ls -A "$out"; false; }
}

@test "make model: two runs of their own into one OUT compute its Hessians once, and leave both points up to date" {
    # each make computed them, and the second's replaced them under the first's point, which was
    # then out of date (a CI maintainer's trial): make's hessian takes lazyweights' lock on OUT
    out="$BATS_TEST_TMPDIR/o" w="$BATS_TEST_TMPDIR"
    for p in Q8_0_g0_lam0_c1 Q5_0_g0_lam0_c1; do
        make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=$p TEXT="$CALIB" HESSIAN_CHUNKS=1 OUT="$out" > "$w/$p.log" 2>&1 &
    done
    wait %1
    wait %2
    [ "$(cat "$w"/Q*.log | grep -c '^bin/hessian --model ')" -eq 1 ] || { cat "$w"/Q*.log; false; }
    for p in Q8_0_g0_lam0_c1 Q5_0_g0_lam0_c1; do
        make -q -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=$p TEXT="$CALIB" HESSIAN_CHUNKS=1 OUT="$out"
        [ -s "$out/stories260K-f32-$p.bundle" ]
    done
}

@test "lazyweights: a TERM to the script alone ends a running step at once, and its cleanup runs" {
    # bash ran the trap only after the foreground hessian ended (6.5 s on stories260K, hours on
    # a 7B model: a fresh user's find); the steps are now jobs waited for, ended by the trap
    bins="$BATS_TEST_TMPDIR/bins" out="$BATS_TEST_TMPDIR/o" w="$BATS_TEST_TMPDIR"
    fake_bins "$bins" hessian "echo \$\$ > '$w/hessian.pid'; exec sleep 60"
    # a HUP (a closed terminal) as a TERM: it ended the script alone, the step ran on and wrote
    # its Hessians after it (a breaker's find)
    local sig t0 rc
    for sig in TERM:143 HUP:129; do
        rm -f "$w/hessian.pid"
        WPACK_BIN="$bins" "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB" > /dev/null 2>&1 3>&- &
        pid=$!
        for i in $(seq 600); do [ -s "$w/hessian.pid" ] && break; sleep 0.1; done
        [ -s "$w/hessian.pid" ]
        t0=$SECONDS rc=0
        kill -"${sig%:*}" "$pid"
        wait "$pid" || rc=$?
        [ "$rc" -eq "${sig#*:}" ]
        [ $((SECONDS - t0)) -lt 30 ]   # it ran on to the step's end, 60 s
        gone "$(cat "$w/hessian.pid")"   # the step ended with it
        [ ! -e "$out" ]   # the OUTDIR it made, and the Hessians' .id, removed
    done
    # a pipeline step: each of its processes ends (ggufcat, blocked on the pipe gptq does not
    # read, was left running when only the job's last process was ended)
    cp "$F32" "$w/u.gguf"   # a path no other test's ggufcat has
    rm -rf "$bins" && fake_bins "$bins" gptq \
        "for a; do [ \"\$a\" != --check ] || exec '$ROOT/bin/gptq' \"\$@\"; done; echo \$\$ > '$w/gptq.pid'; exec sleep 60"
    WPACK_BIN="$bins" "$ROOT/pipelines/lazyweights" "$w/u.gguf" Q8_0_g0_lam0_c1 "$out" > /dev/null 2>&1 3>&- &
    pid=$!
    for i in $(seq 600); do [ -s "$w/gptq.pid" ] && break; sleep 0.1; done
    [ -s "$w/gptq.pid" ]
    # (waited for as in bf16.bats: the pipeline's stages fork in order but exec when scheduled)
    for i in $(seq 600); do pgrep -f "ggufcat $w/u.gguf" > /dev/null && break; sleep 0.1; done
    pgrep -f "ggufcat $w/u.gguf"   # running, blocked on the pipe
    rc=0
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ]
    gone "$(cat "$w/gptq.pid")"
    gone "$(pgrep -f "ggufcat $w/u.gguf" || echo 0)"
    [ -z "$(ls -A "$out")" ] || { ls -A "$out"; false; }
}

@test "lazyweights: a step failing without a word removes the temporary files, and no line of the report is shown as its error" {
    # the EXIT trap's grep found no program line, failed under set -e and ended the trap before
    # its rm (a full disk left GBs of them); its pattern took histogram's "total: ..." line for
    # an error (a breaker's finds)
    local bins="$BATS_TEST_TMPDIR/bins" out="$BATS_TEST_TMPDIR/o"
    fake_bins "$bins" laneinterleave "cat > /dev/null; exit 1"
    mkdir "$out"
    run --separate-stderr env WPACK_BIN="$bins" "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 1 ]
    [ "$(grep -vc '^lazyweights: stories260K-f32-Q8_0_g0_lam0_c1: gptq: warning: 5 of 37 quantized tensor(s) fell back' <<< "$stderr")" -eq 0 ]   # (gptq's, ffn_down's rows of 172)
    [ -z "$(ls -A "$out")" ] || { ls -A "$out"; false; }
}

@test "lazyweights: a failed run removes the folders of OUTDIR it made, and only those" {
    # a failed hessian removed OUTDIR alone (pa/b left pa), and an RTN run interrupted removed
    # nothing; unweight took ny/../keep, keep there already, for a folder it made (a re-tester's finds)
    local bins="$BATS_TEST_TMPDIR/bins" w="$BATS_TEST_TMPDIR"
    fake_bins "$bins" hessian "exit 1"
    run env WPACK_BIN="$bins" "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$w/pa/b" "$CALIB"
    [ "$status" -eq 1 ]
    [ ! -e "$w/pa" ]
    rm -rf "$bins" && fake_bins "$bins" verify "exit 1"
    mkdir "$w/keep"
    run env WPACK_BIN="$bins" "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$w/ny/../keep"
    [ "$status" -eq 1 ]
    [ -d "$w/keep" ]
    [ -z "$(ls -A "$w/keep")" ]
    run env WPACK_BIN="$bins" "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$w/nx/../ny/z"
    [ "$status" -eq 1 ]
    [ -z "$(ls -A "$w" | grep -E '^(nx|ny)$')" ]
    head -c 1000 "$F32" > "$w/bad.gguf"
    run "$ROOT/pipelines/unweight" "$w/bad.gguf" "$w/ny/../keep"
    [ "$status" -eq 1 ]
    [ -d "$w/keep" ]
}

@test "lazyweights: cached Hessians that are damaged (cut short, a byte changed) are computed again, with a warning" {
    # they were reused for good, every run failing in gptq: "truncated stream: record ..." (a fresh user's find)
    local out="$BATS_TEST_TMPDIR/dh" hess
    HESSIAN_CHUNKS=2 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB" 2> /dev/null
    hess="$out/stories260K-f32-$(basename "$CALIB" .txt)-k2.hess"
    cp "$hess" "$BATS_TEST_TMPDIR/whole.hess"
    local how
    for how in cut flip; do
        if [ $how = cut ]; then truncate -s 1000000 "$hess"; else patch_bytes "$hess" 500000 '\x55'; fi
        HESSIAN_CHUNKS=2 run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB"
        [ "$status" -eq 0 ] || { echo "$stderr"; false; }
        [ "${stderr_lines[0]}" = "lazyweights: warning: $hess: not a whole Hessian file (tsinfo cannot read it through): computing the Hessians again" ]
        [ "$(stat -c %s "$hess")" -eq "$(stat -c %s "$BATS_TEST_TMPDIR/whole.hess")" ]
        "$BIN/tsinfo" "$hess" > /dev/null
    done
    # whole ones are reused, unsaid (gptq's fallback warning and the line of what was made)
    HESSIAN_CHUNKS=2 run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB"
    [ "$status" -eq 0 ]
    [ "${#stderr_lines[@]}" -eq 2 ]
    [[ "${stderr_lines[1]}" == *" b/w (GPTQ, Hessians of $(basename "$CALIB"), 2 chunks)" ]]
}

@test "lazyweights: CALIB /dev/stdin reads the script's standard input, and a run says nothing of its jobs" {
    # its steps are background jobs, which bash gives /dev/null without job control: hessian
    # read an empty text (a reviewer's find)
    local out="$BATS_TEST_TMPDIR/o"
    head -c 20000 "$CALIB" > "$BATS_TEST_TMPDIR/c.txt"
    HESSIAN_CHUNKS=2 run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" /dev/stdin \
        < "$BATS_TEST_TMPDIR/c.txt"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ -s "$out/stories260K-f32-Q8_0_g0_lam0_c1.bundle" ]
    [[ "$(cat "$out/stories260K-f32-stdin-k2.hess.id")" == "model $F32 $(sig "$F32") text /dev/stdin size "*" chunks 2" ]]
    [[ "${stderr_lines[-1]}" == "lazyweights: $out/stories260K-f32-Q8_0_g0_lam0_c1.gguf and .bundle: GGUF "* ]]
    [[ "$stderr" != *"Done"* ]]
    [[ "$stderr" != *"[1]"* ]]
    # another text through /dev/stdin: Hessians of its own (the cache, keyed by the text's name,
    # gave the first text's: a fresh user's find)
    cp "$out/stories260K-f32-stdin-k2.hess" "$BATS_TEST_TMPDIR/first.hess"
    tail -c 20000 "$CALIB" > "$BATS_TEST_TMPDIR/d.txt"
    touch -d 2000-01-01 "$BATS_TEST_TMPDIR/d.txt"   # older than the Hessians, as a kept text is
    HESSIAN_CHUNKS=2 run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" /dev/stdin \
        < "$BATS_TEST_TMPDIR/d.txt"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    ! cmp -s "$out/stories260K-f32-stdin-k2.hess" "$BATS_TEST_TMPDIR/first.hess" || false
}

@test "lazyweights: histogram's error reaches stderr (it went into the report, which was then deleted)" {
    bins="$BATS_TEST_TMPDIR/bins" out="$BATS_TEST_TMPDIR/o"
    fake_bins "$bins" histogram 'echo "histogram: stdin: record 7: it broke" >&2; exit 1'
    WPACK_BIN="$bins" run "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -ne 0 ]
    [ "$(echo "$output" | grep -c '^histogram: stdin: record 7: it broke$')" -eq 1 ]
    [ -z "$(ls -A "$out")" ] || { ls -A "$out"; false; }
}

@test "lazyweights: a point of a type gptq lacks is refused before the Hessians (make model asks it too)" {
    out="$BATS_TEST_TMPDIR/o"
    run "$ROOT/pipelines/lazyweights" "$F32" Q4_X_g1_lam0_c1.25 "$out" "$CALIB"
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: Q4_X_g1_lam0_c1.25: gptq has no --ftype Q4_X (gptq(1) lists the presets)" ]
    [ ! -e "$out" ]
    run "$ROOT/pipelines/lazyweights" --check Q4_K_M_g1_lam0_c1.25
    [ "$status" -eq 0 ]
    [ -z "$output" ]
}

@test "lazyweights: extra arguments, or --check without a POINT, are the usage line (exit 2), before any file" {
    # a fifth argument was ignored after the fourth was taken as CALIB ("lazyweights: a: no
    # such file"), and --check alone said "an operating point is ..." with no name (a new
    # user's trial)
    out="$BATS_TEST_TMPDIR/u"
    run "$ROOT/pipelines/lazyweights" "$F32" Q4_0_g1_lam0_c1.25 "$out" "$CALIB" b
    [ "$status" -eq 2 ]
    # both forms (--check was left out: a fresh user's find)
    [ "$output" = "lazyweights: too many arguments (got 'b' too)
usage: lazyweights [--dist | --dist-only] MODEL.gguf POINT OUTDIR [CALIB.txt]
       lazyweights --check POINT [MODEL.gguf [CALIB.txt]]" ]
    [ ! -e "$out" ]
    # what is wrong, before the usage (it was the usage alone: a breaker's find)
    run "$ROOT/pipelines/lazyweights" "$F32" Q4_0_g1_lam0_c1.25
    [ "$status" -eq 2 ]
    [ "${lines[0]}" = "lazyweights: missing OUTDIR" ]
    run "$ROOT/pipelines/lazyweights" "$F32"
    [ "${lines[0]}" = "lazyweights: missing POINT and OUTDIR" ]
    # a HESSIAN_CHUNKS that is no count, refused before anything is written, as make model does
    # (0 was hessian's "--chunks: expected an integer", exit 1; " 2" named a cache "k 2")
    local c
    for c in 0 00 " 2" x -1; do
        HESSIAN_CHUNKS=$c run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB"
        [ "$status" -eq 2 ]
        [ "$stderr" = "lazyweights: HESSIAN_CHUNKS '$c': expected a count of chunks, 1 or more" ]
        [ ! -e "$out" ]
    done
    run "$ROOT/pipelines/lazyweights" --check
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: --check: missing POINT
usage: lazyweights --check POINT [MODEL.gguf [CALIB.txt]]" ]
    run "$ROOT/pipelines/lazyweights" --check Q4_0_g1_lam0_c1.25 "$F32" "$CALIB" b
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: --check: too many arguments (got 'b' too)
usage: lazyweights --check POINT [MODEL.gguf [CALIB.txt]]" ]
}

@test "lazyweights: MODEL and POINT swapped are said so, with the order, before any file (run and --check)" {
    # a point in MODEL's place said "Q8_0_g0_lam0_c1: no such file"; --check MODEL POINT said
    # only what a point is (a helper's trial)
    out="$BATS_TEST_TMPDIR/sw"
    run --separate-stderr "$ROOT/pipelines/lazyweights" Q8_0_g0_lam0_c1 "$F32" "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: MODEL comes first, then POINT: $ROOT/pipelines/lazyweights $F32 Q8_0_g0_lam0_c1 $out" ]
    run --separate-stderr "$ROOT/pipelines/lazyweights" Q8_0_g0_lam0_c1 "$F32" "$out" "$CALIB" --dist
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: MODEL comes first, then POINT: $ROOT/pipelines/lazyweights --dist $F32 Q8_0_g0_lam0_c1 $out $CALIB" ]
    [ ! -e "$out" ]
    run "$ROOT/pipelines/lazyweights" --check "$F32" Q8_0_g0_lam0_c1 "$CALIB"
    [ "$status" -eq 2 ]
    [ "$output" = "the POINT comes first after --check, then MODEL: $ROOT/pipelines/lazyweights --check Q8_0_g0_lam0_c1 $F32 $CALIB" ]
    # llama-quantize's IN OUT TYPE (it said "out.gguf: an operating point is ...": a new user's
    # trial)
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" "$BATS_TEST_TMPDIR/q/out.gguf" Q4_K_M
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: MODEL POINT OUTDIR, not llama-quantize's IN OUT TYPE: $ROOT/pipelines/lazyweights $F32 Q4_K_M_g0_lam0_c1 $BATS_TEST_TMPDIR/q (writes OUTDIR/NAME-POINT.gguf; that point is llama-quantize's Q4_K_M, byte for byte without CALIB)" ]
    [ ! -e "$BATS_TEST_TMPDIR/q" ]
    # an OUTDIR named as a file, llama-quantize's OUT, by lazyweights and make model (it was
    # made a folder, the outputs in it: a fresh user's find)
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$BATS_TEST_TMPDIR/q/out.gguf"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: OUTDIR $BATS_TEST_TMPDIR/q/out.gguf: named as a file; OUTDIR is the folder NAME-POINT.gguf and .bundle go into (such as $BATS_TEST_TMPDIR/q)" ]
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$BATS_TEST_TMPDIR/q/out.gguf"
    [ "$status" -eq 2 ]
    [[ $output == *"*** OUT=$BATS_TEST_TMPDIR/q/out.gguf: named as a file; OUT is the folder NAME-POINT.gguf and .bundle go into (such as $BATS_TEST_TMPDIR/q).  Stop." ]] || { echo "$output"; false; }
    [ ! -e "$BATS_TEST_TMPDIR/q" ]
    # OUTDIR and POINT swapped (it said "sw: an operating point is ...": a fresh user's check)
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" "$out" Q8_0_g0_lam0_c1 "$CALIB"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: POINT comes before OUTDIR: $ROOT/pipelines/lazyweights $F32 Q8_0_g0_lam0_c1 $out $CALIB" ]
    [ ! -e "$out" ]
    # a bare preset in POINT's place too (it said "Q8_0: no such file": a fresh user's find)
    run --separate-stderr "$ROOT/pipelines/lazyweights" Q8_0 "$F32" "$out"
    [ "$stderr" = "lazyweights: MODEL comes first, then POINT: $ROOT/pipelines/lazyweights $F32 Q8_0 $out" ]
    run "$ROOT/pipelines/lazyweights" --check "$F32" Q8_0
    [ "$output" = "the POINT comes first after --check, then MODEL: $ROOT/pipelines/lazyweights --check Q8_0 $F32" ]
    # (quoted as a shell reads it back: an empty CALIB was left out, and the way on passed)
    run "$ROOT/pipelines/lazyweights" --check "$F32" Q8_0_g0_lam0_c1 ""
    [ "$output" = "the POINT comes first after --check, then MODEL: $ROOT/pipelines/lazyweights --check Q8_0_g0_lam0_c1 $F32 ''" ]
    # a bare preset is told its point; a word gptq takes as none is told the form (any word was
    # called a preset: a breaker's find)
    run "$ROOT/pipelines/lazyweights" --check q8_0
    [ "$status" -eq 2 ]
    [ "$output" = "an operating point is TYPE_g{0,1}_lam{L}_c{C}: Q8_0_g0_lam0_c1 is llama-quantize's Q8_0 (byte for byte without CALIB)" ]
    for p in bogus NVFP4 Q4_K_M_G1_lam0_c1; do
        run "$ROOT/pipelines/lazyweights" --check "$p"
        [ "$status" -eq 2 ]
        [ "$output" = "an operating point is TYPE_g{0,1}_lam{L}_c{C}, such as Q4_K_M_g1_lam0_c1.25" ]
    done
    # a file named like a point is still a MODEL
    cd "$BATS_TEST_TMPDIR"
    touch Q8_0_g0_lam0_c1
    run --separate-stderr "$ROOT/pipelines/lazyweights" Q8_0_g0_lam0_c1 "$F32" "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $F32: an operating point is TYPE_g{0,1}_lam{L}_c{C}, such as Q4_K_M_g1_lam0_c1.25" ]
    [ ! -e "$out" ]
}

@test "make model and lazyweights name the outputs alike for a MODEL named NAME.GGUF or NAME.bin: a second make does nothing" {
    # lazyweights wrote Story.GGUF-POINT.gguf where make looked for Story-POINT.gguf (its
    # $(basename) took any suffix off), so make model built the point again at every run (a
    # helper's find)
    local m
    for m in Story.GGUF m.bin; do
        mkdir -p "$BATS_TEST_TMPDIR/$m.d"
        cp "$F32" "$BATS_TEST_TMPDIR/$m.d/$m"
        out="$BATS_TEST_TMPDIR/$m.d/out"
        run make -C "$ROOT" --no-print-directory model MODEL="$BATS_TEST_TMPDIR/$m.d/$m" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out"
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        local n=${m%.GGUF}
        [ "$(cd "$out" && ls | tr '\n' ' ')" = "$n-Q8_0_g0_lam0_c1.bundle $n-Q8_0_g0_lam0_c1.calib $n-Q8_0_g0_lam0_c1.gguf $n-Q8_0_g0_lam0_c1.report " ]
        run make -C "$ROOT" --no-print-directory model MODEL="$BATS_TEST_TMPDIR/$m.d/$m" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out"
        [ "$status" -eq 0 ]
        # (make[N]: under make check)
        [[ $output =~ ^make(\[[0-9]+\])?:\ Nothing\ to\ be\ done\ for\ \'model\'\.$ ]] || { echo "$output"; false; }
    done
}

@test "lazyweights: a point's type in lower case is refused, with its spelling, before any file" {
    # q4_k_g0_lam0_c1 was taken (gptq reads either case) and built the point again, under
    # the other name, beside Q4_K_g0_lam0_c1 (a new user's trial)
    out="$BATS_TEST_TMPDIR/lc"
    run "$ROOT/pipelines/lazyweights" "$F32" q4_k_g0_lam0_c1 "$out"
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: q4_k_g0_lam0_c1: a point's TYPE is spelled as llama-quantize's preset, upper case: Q4_K_g0_lam0_c1" ]
    [ ! -e "$out" ]
    run "$ROOT/pipelines/lazyweights" --check Iq4_xs_g1_lam0.1_c1.25
    [ "$status" -eq 2 ]
    [ "$output" = "a point's TYPE is spelled as llama-quantize's preset, upper case: IQ4_XS_g1_lam0.1_c1.25" ]
    # a type gptq has in neither case is said so (it was told to be spelled QX_...)
    run "$ROOT/pipelines/lazyweights" --check qx_g0_lam0_c1
    [ "$status" -eq 2 ]
    [ "$output" = "gptq has no --ftype qx (gptq(1) lists the presets)" ]
    # a preset's number, which gptq --ftype takes as llama-quantize does, would name the point
    # twice
    run "$ROOT/pipelines/lazyweights" --check 15_g0_lam0_c1
    [ "$status" -eq 2 ]
    [ "$output" = "a point's TYPE is a preset's name, such as Q4_K_M, not its number (15)" ]
    # and its numbers have one spelling (c1.0 and lam0.0 built c1's files again under other
    # names: a breaker's find)
    local p
    for p in Q4_0_g0_lam0_c1.0:Q4_0_g0_lam0_c1 Q4_0_g0_lam0.0_c1:Q4_0_g0_lam0_c1 Q4_0_g1_lam.1_c01.25:Q4_0_g1_lam0.1_c1.25 Q4_0_g0_lam0_c1.:Q4_0_g0_lam0_c1; do
        run "$ROOT/pipelines/lazyweights" "$F32" "${p%:*}" "$out"
        [ "$status" -eq 2 ]
        [ "$output" = "lazyweights: ${p%:*}: a point's numbers are spelled without zeros that do not count: ${p#*:}" ]
        [ ! -e "$out" ]
    done
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT="Q4_0_g0_lam0_c1 Q4_0_g0_lam0_c1.0" TEXT= OUT="$out"
    [ "$status" -ne 0 ]
    [[ $output == *"*** POINT=Q4_0_g0_lam0_c1.0: a point's numbers are spelled without zeros that do not count: Q4_0_g0_lam0_c1.  Stop." ]]
    [ ! -e "$out" ]
    run "$ROOT/pipelines/lazyweights" --check Q4_0_g0_lam0_c1.2.3
    [ "$status" -eq 2 ]
    [ "$output" = "an operating point's L and C are decimal numbers, such as Q4_K_M_g1_lam0.1_c1.25" ]
}

@test "make model: a missing MODEL or TEXT, or a bad POINT, is one clear line and writes nothing" {
    # outside the checkout the default TEXT was "No rule to make target", and a bad POINT left
    # its .calib stamp (a new user's trial)
    out="$BATS_TEST_TMPDIR/m"
    a=(-C "$ROOT" --no-print-directory model OUT="$out")
    run make "${a[@]}" WPACK_DATA="$BATS_TEST_TMPDIR/nodata"
    [ "$status" -ne 0 ]
    [[ "$output" == *"*** MODEL=$BATS_TEST_TMPDIR/nodata/models/stories260K/stories260K-f32.gguf: no such file (the default; set MODEL=FILE, or WPACK_DATA=dir).  Stop." ]]
    run make "${a[@]}" MODEL="$F32" WPACK_DATA="$BATS_TEST_TMPDIR/nodata"
    [[ "$output" == *"*** TEXT=$BATS_TEST_TMPDIR/nodata/text/groups_merged.txt: no such file (TEXT= builds by RTN; this is the default: set TEXT=FILE, or WPACK_DATA=dir).  Stop." ]]
    run make "${a[@]}" MODEL="$F32" TEXT="$BATS_TEST_TMPDIR/none.txt"
    [[ "$output" == *"*** TEXT=$BATS_TEST_TMPDIR/none.txt: no such file (TEXT= builds by RTN).  Stop." ]]
    # a relative path is read where make runs, the source tree under make -C: said (from another
    # folder it said "no such file" alone, a fresh user's find)
    local here
    here=$(cd "$ROOT" && pwd -P)   # make's CURDIR: links resolved
    run make "${a[@]}" MODEL=m.gguf TEXT=
    [ "$status" -ne 0 ]
    [[ "$output" == *"*** MODEL=m.gguf: no such file (read from $here, where make runs: with make -C, give a path from there or an absolute one).  Stop." ]]
    run make "${a[@]}" MODEL="$F32" TEXT=none.txt
    [[ "$output" == *"*** TEXT=none.txt: no such file (TEXT= builds by RTN) (read from $here, where make runs: with make -C, give a path from there or an absolute one).  Stop." ]]
    run make "${a[@]}" MODEL="$F32" TEXT= POINT="Q8_0_g0_lam0_c1 Q4_K_M"
    [ "$status" -ne 0 ]
    # (a bare preset, llama-quantize's word, is given its point: a new user's trial)
    [[ "$output" == *"*** POINT=Q4_K_M: an operating point is TYPE_g{0,1}_lam{L}_c{C}: Q4_K_M_g0_lam0_c1 is llama-quantize's Q4_K_M (byte for byte without CALIB).  Stop." ]]
    # a well-formed point of a type gptq lacks built the Hessians, then failed leaving them and
    # its .calib; POINT= said "Nothing to be done" (a new user's trial)
    run make "${a[@]}" MODEL="$F32" POINT=Q4_X_g1_lam0_c1.25
    [ "$status" -ne 0 ]
    [[ "$output" == *"*** POINT=Q4_X_g1_lam0_c1.25: gptq has no --ftype Q4_X (gptq(1) lists the presets).  Stop." ]]
    run make "${a[@]}" MODEL="$F32" POINT=
    [ "$status" -ne 0 ]
    [[ "$output" == *"*** POINT= names no operating point (such as Q4_K_M_g1_lam0_c1.25).  Stop." ]]
    run make "${a[@]}" MODEL="$BATS_TEST_TMPDIR" TEXT=
    [ "$status" -ne 0 ]
    [[ "$output" == *"*** MODEL=$BATS_TEST_TMPDIR: is a directory.  Stop." ]]
    [ ! -e "$out" ]
}

# refused_everywhere MODEL POINT: lazyweights --check (with MODEL and without), lazyweights
# itself and make model (RTN and GPTQ) refuse POINT in one line, and nothing appears in OUT
refused_everywhere() {
    local m=$1 p=$2 out="$BATS_TEST_TMPDIR/r-$2"
    run "$ROOT/pipelines/lazyweights" --check "$p" "$m"
    [ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ] || { echo "--check $p $m: $status: $output"; return 1; }
    run "$ROOT/pipelines/lazyweights" --check "$p"
    [ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ] || { echo "--check $p: $status: $output"; return 1; }
    run "$ROOT/pipelines/lazyweights" "$m" "$p" "$out" "$CALIB"
    [ "$status" -eq 2 ] && [ "${#lines[@]}" -eq 1 ] && [[ $output == "lazyweights: $p: gptq: "* ]] ||
        { echo "lazyweights $p: $status: $output"; return 1; }
    [ ! -e "$out" ] || { echo "lazyweights $p left:"; ls -A "$out"; return 1; }
    for text in "" "$CALIB"; do
        run make -C "$ROOT" --no-print-directory model MODEL="$m" POINT="$p" TEXT="$text" OUT="$out"
        [ "$status" -ne 0 ] && [ "${#lines[@]}" -eq 1 ] && [[ $output == *"*** POINT=$p: gptq: "*".  Stop." ]] ||
            { echo "make $p TEXT=$text: $status: $output"; return 1; }
        [ ! -e "$out" ] || { echo "make $p TEXT=$text left:"; ls -A "$out"; return 1; }
    done
}

@test "lazyweights --check and make model: what gptq refuses on MODEL is one line, before any file or Hessian" {
    # these points passed --check, then make wrote the .calib (and computed the Hessians) and
    # gptq failed: a type it lacks on a model with rows of 256, a c outside 1 to 64 (a new
    # user's trial)
    synth="$BATS_TEST_TMPDIR/synth.gguf"
    "$TOOLS/mkllama" "$F32" "$synth" F16
    for p in IQ3_S_g0_lam0_c1 TQ1_0_g0_lam0_c1 IQ2_XXS_g0_lam0_c1; do
        refused_everywhere "$synth" "$p"
    done
    run "$ROOT/pipelines/lazyweights" --check IQ3_S_g0_lam0_c1 "$synth"
    [ "$output" = "gptq: $synth: tensor token_embd.weight: type IQ3_S is not supported by gptq" ]
    for p in Q4_0_g1_lam0_c0.5 Q4_0_g1_lam0_c100; do
        refused_everywhere "$F32" "$p"
    done
    run "$ROOT/pipelines/lazyweights" --check Q4_0_g1_lam0_c0.5 "$F32"
    [ "$output" = "gptq: --widen: expected a number from 1 to 64, got '0.5'" ]
    # good points pass: on the model, and IQ3_S on stories260K, whose rows (64, 172) all fall
    # back to IQ4_NL, which gptq has (as llama-quantize falls back)
    for pm in "Q4_K_M_g1_lam0_c1.25 $synth" "IQ4_XS_g1_lam0.5_c1.25 $synth" "Q4_0_g1_lam0_c64 $F32" \
              "IQ3_S_g0_lam0_c1 $F32" "Q8_0_g0_lam0_c1 $F32 $CALIB"; do
        run "$ROOT/pipelines/lazyweights" --check $pm
        [ "$status" -eq 0 ] && [ -z "$output" ] || { echo "--check $pm: $status: $output"; false; }
    done
    out="$BATS_TEST_TMPDIR/ok"
    run make -C "$ROOT" --no-print-directory model MODEL="$synth" POINT=Q4_K_M_g1_lam0_c1.25 TEXT= OUT="$out"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ -s "$out/synth-Q4_K_M_g1_lam0_c1.25.bundle" ]
}

@test "make model: a tensor name such as \$(error IN)weight in gptq's line is quoted, not run by make" {
    # eval expanded gptq's line once more: a model's tensor name could run $(shell ...) (a reviewer's find)
    synth="$BATS_TEST_TMPDIR/synth.gguf"
    "$TOOLS/mkllama" "$F32" "$synth" F16
    python3 -c "import sys; d = open(sys.argv[1], 'rb').read(); assert d.count(b'token_embd.weight') == 1
open(sys.argv[2], 'wb').write(d.replace(b'token_embd.weight', b'\$(error IN)weight'))" "$synth" "$BATS_TEST_TMPDIR/evil.gguf"
    run make -C "$ROOT" --no-print-directory model MODEL="$BATS_TEST_TMPDIR/evil.gguf" POINT=IQ3_S_g0_lam0_c1 TEXT= \
        OUT="$BATS_TEST_TMPDIR/o"
    [ "$status" -ne 0 ]
    [[ $output == *"*** POINT=IQ3_S_g0_lam0_c1: gptq: $BATS_TEST_TMPDIR/evil.gguf: tensor \$(error IN)weight: type IQ3_S is not supported by gptq.  Stop." ]]
    [ ! -e "$BATS_TEST_TMPDIR/o" ]
}

@test "make model and lazyweights --check: a stream as MODEL, a directory as TEXT, a MODEL named like an option, a quote in a path" {
    # a breaker's finds: each passed the check, then failed after the .calib (or ran the
    # shell: OUT=...';touch X;')
    "$ROOT/bin/ggufcat" "$F32" > "$BATS_TEST_TMPDIR/m.wps"
    out="$BATS_TEST_TMPDIR/o"
    run make -C "$ROOT" --no-print-directory model MODEL="$BATS_TEST_TMPDIR/m.wps" POINT=Q4_0_g1_lam0_c1 TEXT= OUT="$out"
    [ "$status" -ne 0 ]
    # (said of MODEL, not POINT, as a TEXT that is no text is said of TEXT: a breaker's find)
    [[ $output == *"*** MODEL=$BATS_TEST_TMPDIR/m.wps: a wpack stream or bundle, not a GGUF model (ggufpack or unbundle writes the GGUF).  Stop." ]] || { echo "$output"; false; }
    # a bundle too: "ggufpack it first" sent a fresh user to ggufpack, which refuses bundles
    "$ROOT/bin/histogram" "$BATS_TEST_TMPDIR/m.wps" | "$ROOT/bin/huffbuild" | "$ROOT/bin/laneinterleave" > "$BATS_TEST_TMPDIR/m.bundle"
    run "$ROOT/pipelines/lazyweights" --check Q4_0_g1_lam0_c1 "$BATS_TEST_TMPDIR/m.bundle"
    [ "$status" -eq 2 ]
    [ "$output" = "$BATS_TEST_TMPDIR/m.bundle: a wpack stream or bundle, not a GGUF model (ggufpack or unbundle writes the GGUF)" ]
    # Hessians named, as MODEL and as the text (a fresh user, reusing theirs, was sent to
    # ggufpack by "a wpack stream or bundle")
    "$ROOT/bin/hessian" --model "$F32" --text "$CALIB" --chunks 1 -o "$BATS_TEST_TMPDIR/m.hess" 2> /dev/null
    named_as_model_and_text "$BATS_TEST_TMPDIR/m.hess" Q4_0_g1_lam0_c1 \
        "Hessians (hessian's output), not a GGUF model: they go to gptq --hessian" \
        "Hessians (hessian's output); lazyweights takes the text, and computes and caches the Hessians in OUTDIR itself" "$out"
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q4_0_g1_lam0_c1 TEXT="$BATS_TEST_TMPDIR" OUT="$out"
    [ "$status" -ne 0 ]
    [[ $output == *"*** TEXT=$BATS_TEST_TMPDIR: not a readable file.  Stop." ]] || { echo "$output"; false; }
    [ ! -e "$out" ]
    # (said now as an option's word out of place, with the way to name such a file)
    run "$ROOT/pipelines/lazyweights" --check Q4_0_g1_lam0_c1 --rtn
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: --rtn: not an option here (--dist and --dist-only go anywhere, --help, --version and --check first; WPACK_THREADS=N sets the steps' threads, IMATRIX=FILE gives llama-imatrix's matrix; a path: ./--rtn)" ]
    run "$ROOT/pipelines/lazyweights" --check Q4_0_g1_lam0_c1 ./--rtn
    [ "$status" -eq 2 ]
    [ "$output" = "./--rtn: no such file" ]
    # a run says a MODEL that is not there in its own words (it was gptq's line after the point:
    # "lazyweights: Q8_0_g0_lam0_c1: gptq: nosuch.gguf: No such file or directory", a fresh user's find)
    run --separate-stderr "$ROOT/pipelines/lazyweights" "$BATS_TEST_TMPDIR/nosuch.gguf" Q8_0_g0_lam0_c1 "$out"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $BATS_TEST_TMPDIR/nosuch.gguf: no such file" ]
    [ ! -e "$out" ]
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out';touch $BATS_TEST_TMPDIR/INJ;'"
    [ "$status" -ne 0 ]
    [[ $output == *"*** OUT=$out';touch $BATS_TEST_TMPDIR/INJ;': a space, quote, backslash, ;, %, : or # in this path cannot go through make (link the file under a plain name).  Stop." ]]
    [ ! -e "$BATS_TEST_TMPDIR/INJ" ]
    [ -z "$(ls "$BATS_TEST_TMPDIR" | grep '^o')" ]
    # so is a ;, %, : or # (an IMATRIX a;b.gguf was "No rule to make target", c:d.gguf "multiple
    # target patterns": a review), whatever the file holds
    for f in 'a;b' 'p%q' 'c:d' 'h#i'; do
        : > "$BATS_TEST_TMPDIR/$f.gguf"
        run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out" IMATRIX="$BATS_TEST_TMPDIR/$f.gguf"
        [ "$status" -ne 0 ]
        [[ $output == *"*** IMATRIX=$BATS_TEST_TMPDIR/$f.gguf: a space, quote, backslash, ;, %, : or # in this path cannot go through make (link the file under a plain name).  Stop." ]]
    done
    [ ! -e "$out" ]
}

@test "lazyweights --check, the run and make model refuse a CALIB that is a zstd or gzip file, binary or a GGUF before any file" {
    # --check passed them, then hessian refused them after make had made OUT and run it, exit 1
    # (a new user's trial); make said it of POINT, not TEXT (a breaker's find)
    local w="$BATS_TEST_TMPDIR" c why
    zstd -q -c "$CALIB" > "$w/cal.txt.zst"
    gzip -c "$CALIB" > "$w/cal.txt.gz"
    printf 'once upon\0a time' > "$w/cal.txt.xz"   # (as an xz or bzip2 file: a NUL among the first bytes)
    # an empty file (hessian then said "tokenizes to only 1 token"); a pipe, as /dev/stdin, is
    # taken unread (it was "not a readable file": a fresh user's find)
    : > "$w/empty.txt"
    run "$ROOT/pipelines/lazyweights" --check Q5_0_g0_lam0_c1 "$F32" "$w/empty.txt"
    [ "$status" -eq 2 ]
    [ "$output" = "$w/empty.txt: not a calibration text: an empty file" ]
    head -c 100000 "$CALIB" | HESSIAN_CHUNKS=1 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$w/p" /dev/stdin 2> /dev/null
    [ -s "$w/p/stories260K-f32-stdin-k1.hess" ]
    [ -s "$w/p/stories260K-f32-Q8_0_g0_lam0_c1.bundle" ]
    # (a text that starts as the stream's magic's first 4 bytes is a text: it was refused)
    printf 'WPACKING LIST\n' > "$w/wpac.txt"
    run "$ROOT/pipelines/lazyweights" --check Q5_0_g0_lam0_c1 "$F32" "$w/wpac.txt"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    for c in "$w/cal.txt.zst" "$w/cal.txt.gz" "$w/cal.txt.xz" "$F32"; do
        case $c in
        # (by a command that leaves a cal.txt there as it is: a helper's nit)
        *.zst) why="$c: not a calibration text: a zstd frame (decompress it first: zstd -d -o ${c%.zst} < $c; a text is read as it is)" ;;
        *.gz) why="$c: not a calibration text: a gzip file (decompress it first: zstd -d -o ${c%.gz} < $c, as zstd reads gzip; a text is read as it is)" ;;
        *.xz) why="$c: not a calibration text: a binary file (a NUL byte at byte 9)" ;;
        *) why="$c: not a calibration text: a GGUF file (a model, not a text)" ;;
        esac
        run "$ROOT/pipelines/lazyweights" --check Q5_0_g0_lam0_c1 "$F32" "$c"
        [ "$status" -eq 2 ]
        [ "$output" = "$why" ]
        run --separate-stderr "$ROOT/pipelines/lazyweights" "$F32" Q5_0_g0_lam0_c1 "$w/o" "$c"
        [ "$status" -eq 2 ]
        [ "$stderr" = "lazyweights: Q5_0_g0_lam0_c1: $why" ]
        [ ! -e "$w/o" ]
        run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q5_0_g0_lam0_c1 TEXT="$c" OUT="$w/o"
        [ "$status" -eq 2 ]
        [[ $output == *"*** TEXT=$why.  Stop." ]] || { echo "$output"; false; }
        [ ! -e "$w/o" ]
    done
    # a text that starts "GGUF" is a text (it was refused as a GGUF: a breaker's find); an
    # imatrix.dat is named (it was "a binary file")
    printf 'GGUF notes: the header.\nOnce upon a time.\n' > "$w/gguf.txt"
    run "$ROOT/pipelines/lazyweights" --check Q5_0_g0_lam0_c1 "$F32" "$w/gguf.txt"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    printf '\001\000\000\000\002\000\000\000ab\001\000\000\000\001\000\000\000\000\000\200\077' > "$w/ab.dat"
    run "$ROOT/pipelines/lazyweights" --check Q5_0_g0_lam0_c1 "$F32" "$w/ab.dat"
    [ "$status" -eq 2 ]
    [ "$output" = "$w/ab.dat: not a calibration text: an importance matrix (llama-imatrix's imatrix.dat; it goes to IMATRIX=FILE)" ]
    printf '\001\000\000\000\002\000\000\000a b\000' > "$w/ab2.dat"   # (a blank in the name: no .dat)
    run "$ROOT/pipelines/lazyweights" --check Q5_0_g0_lam0_c1 "$F32" "$w/ab2.dat"
    [ "$output" = "$w/ab2.dat: not a calibration text: a binary file (a NUL byte at byte 1)" ]
    # its line is hessian's, byte for byte, for names a shell quotes (a newline made it three
    # lines: a breaker's find)
    local n said
    for n in "it's.txt.zst" $'nl\nx.txt.zst' $'d\177q\'.gz' $'t\tb' "sp ace.gz"; do
        case $n in *.gz) cp "$w/cal.txt.gz" "$w/$n" ;; *) cp "$w/cal.txt.zst" "$w/$n" ;; esac
        run "$ROOT/pipelines/lazyweights" --check Q5_0_g0_lam0_c1 "$F32" "$w/$n"
        [ "$status" -eq 2 ]
        said=$output
        [ "${#lines[@]}" -eq 1 ]
        run --separate-stderr "$BIN/hessian" --model "$F32" --text "$w/$n" -o "$w/x.hess"
        [ "$status" -eq 1 ]
        [ "$stderr" = "hessian: $said" ]
    done
}

@test "make model and lazyweights: a quantized MODEL, or one that is no GGUF, is refused before the Hessians" {
    # make ran hessian on a Q8_0 model, then gptq said "requantizing from type Q8_0 is
    # disabled"; a text file as MODEL left its .calib (a new user's trial)
    q8="$BATS_TEST_TMPDIR/lq-Q8_0.gguf"
    "$ROOT/bin/ggufcat" "$F32" | "$ROOT/bin/gptq" --ftype Q8_0 --rtn -q | "$ROOT/bin/ggufpack" > "$q8"
    out="$BATS_TEST_TMPDIR/q"
    for text in "$CALIB" ""; do
        run make -C "$ROOT" --no-print-directory model MODEL="$q8" POINT=Q4_0_g0_lam0_c1 TEXT="$text" OUT="$out"
        [ "$status" -ne 0 ] && [ "${#lines[@]}" -eq 1 ] || { echo "$output"; false; }
        # (of MODEL: it was blamed on POINT, a breaker's find)
        [[ $output == *"*** MODEL=$q8: requantizing from type Q8_0 is disabled (tensor "*"; lazyweights takes no --allow-requantize: quantize the F32, F16 or BF16 model).  Stop." ]] || { echo "$output"; false; }
        [ ! -e "$out" ]
    done
    # a MODEL cut short, in its data or its header, is MODEL's (it was blamed on POINT: a CI
    # maintainer's trial)
    head -c 900000 "$F32" > "$BATS_TEST_TMPDIR/cut.gguf"
    run make -C "$ROOT" --no-print-directory model MODEL="$BATS_TEST_TMPDIR/cut.gguf" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out"
    [ "$status" -ne 0 ]
    [[ $output == *"*** MODEL=$BATS_TEST_TMPDIR/cut.gguf: tensor 'blk.3.ffn_gate.weight': data at offset 857088 (+44032 bytes) runs past the end of the file.  Stop." ]] || { echo "$output"; false; }
    head -c 100 "$F32" > "$BATS_TEST_TMPDIR/cut.gguf"
    run make -C "$ROOT" --no-print-directory model MODEL="$BATS_TEST_TMPDIR/cut.gguf" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out"
    [ "$status" -ne 0 ]
    [[ $output == *"*** MODEL=$BATS_TEST_TMPDIR/cut.gguf: key/value count 17 is larger than the file allows.  Stop." ]] || { echo "$output"; false; }
    [ ! -e "$out" ]
    run "$ROOT/pipelines/lazyweights" "$q8" Q4_0_g0_lam0_c1 "$out" "$CALIB"
    [ "$status" -eq 2 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ $output == *"requantizing from type Q8_0 is disabled (tensor token_embd.weight; lazyweights takes no --allow-requantize: quantize the F32, F16 or BF16 model)" ]]
    [ ! -e "$out" ]
    # at its own type: copied as it is, gamma, c, lambda and the Hessians never applied, under
    # the point's name (lazyweights and frontier built such points: a fresh user's find)
    run "$ROOT/pipelines/lazyweights" --check Q8_0_g1_lam0.1_c1.5 "$q8" "$CALIB"
    [ "$status" -eq 2 ]
    [ "$output" = "gptq: $q8: an already quantized model: tensor output.weight is Q8_0 already, copied as it is, so --gamma, --widen, --lambda, --hessian would do nothing (quantize the F32, F16 or BF16 model)" ]
    # GPTQ at plain g0_lam0_c1 too: the check is a GPTQ run's (it passed, the Hessians were
    # computed, and the model came out as itself: a fresh user's find); RTN copies it, as
    # llama-quantize copies a tensor already of its type
    run "$ROOT/pipelines/lazyweights" --check Q8_0_g0_lam0_c1 "$q8" "$CALIB"
    [ "$status" -eq 2 ]
    [ "$output" = "gptq: $q8: an already quantized model: tensor output.weight is Q8_0 already, copied as it is, so --hessian would do nothing (quantize the F32, F16 or BF16 model)" ]
    run make -C "$ROOT" --no-print-directory model MODEL="$q8" POINT=Q8_0_g0_lam0_c1 TEXT="$CALIB" OUT="$out"
    [ "$status" -ne 0 ]
    [[ $output == *"*** MODEL=$q8: an already quantized model: tensor output.weight is Q8_0 already, "*"so --hessian would do nothing "*".  Stop." ]] || { echo "$output"; false; }
    [ ! -e "$out" ]
    run "$ROOT/pipelines/lazyweights" --check Q8_0_g0_lam0_c1 "$q8"
    [ "$status" -eq 0 ]
    # --hessian-later is the check's alone
    run "$ROOT/bin/gptq" --ftype Q8_0 --hessian-later -q "$q8"
    [ "$status" -eq 1 ]
    [ "$output" = "gptq: --hessian-later is for --check (a run takes --hessian FILE)" ]
    run "$ROOT/bin/gptq" --check --ftype Q8_0 --hessian-later --rtn "$q8"
    [ "$output" = "gptq: --hessian-later excludes --rtn and --hessian (it stands for a --hessian to come)" ]
    run --separate-stderr sh -c "'$ROOT/bin/ggufcat' '$q8' | '$ROOT/bin/gptq' --ftype Q8_0 --widen 1.5 -q | '$ROOT/bin/ggufpack' | cmp - '$q8'"
    [ "$status" -eq 0 ]
    [ "$stderr" = "gptq: warning: stdin: 32 tensors are of their type already (the first: output.weight, Q8_0): copied as they are, --widen acting on none of them (quantize the F32, F16 or BF16 model)" ]
    # every point of a frontier checked before any work (a lower-case type stopped it after the
    # logits, the Hessians and the points before it, and its ERR trap said nothing)
    run --separate-stderr env FRONTIER_POINTS="Q8_0_g0_lam0_c1 q4_0_g0_lam0_c1" "$ROOT/pipelines/frontier" "$F32" "$EVAL" "$out" "$CALIB"
    [ "$status" -eq 2 ]
    [ "$stderr" = "frontier: q4_0_g0_lam0_c1: a point's TYPE is spelled as llama-quantize's preset, upper case: Q4_0_g0_lam0_c1" ]
    [ ! -e "$out" ]
    echo "not a model" > "$BATS_TEST_TMPDIR/m.txt"
    run make -C "$ROOT" --no-print-directory model MODEL="$BATS_TEST_TMPDIR/m.txt" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$out"
    [ "$status" -ne 0 ]
    [ "${#lines[@]}" -eq 1 ]
    # (of MODEL, not POINT: a fresh user's find)
    [[ $output == *"*** MODEL=$BATS_TEST_TMPDIR/m.txt: not a GGUF file (bad magic).  Stop." ]] || { echo "$output"; false; }
    [ ! -e "$out" ]
    # a GGUF that holds no model (llama-imatrix's, here made of a model's norms): refused (it was
    # "quantized" into a copy of itself, exit 0: a breaker's find)
    local im="$BATS_TEST_TMPDIR/im.gguf"
    "$REF/bin/llama-imatrix" -m "$F32" -f "$CALIB" -c 128 --chunks 1 -t 1 -o "$im" > /dev/null 2>&1
    # named, as MODEL, and as the text for what it is (it was "a GGUF file (a model, not a text)": a new
    # user's trial)
    named_as_model_and_text "$im" Q8_0_g0_lam0_c1 \
        "an importance matrix (llama-imatrix's output), not a model: it goes to gptq --imatrix (IMATRIX=FILE for make model and lazyweights)" \
        "an importance matrix (llama-imatrix's output; it goes to IMATRIX=FILE)" "$out"
    # an OUT that starts with - (mkdir took it for an option, four times, then make stopped;
    # a breaker's find): built there (make runs in the source tree: OUT is under it)
    # (with a TEXT too, whose hessian -o and cleanup took it for an option, and a stamp read with
    # cat that took it so too, and never matched: a re-tester's finds)
    local dash="-wpack-test-out-$$"
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT="$CALIB" HESSIAN_CHUNKS=1 OUT="$dash"
    local st=$status again=0
    make -q -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT="$CALIB" HESSIAN_CHUNKS=1 OUT="$dash" || again=$?
    [ -s "$ROOT/$dash/stories260K-f32-Q8_0_g0_lam0_c1.bundle" ] || { echo "$output"; rm -rf -- "${ROOT:?}/$dash"; false; }
    rm -rf -- "${ROOT:?}/$dash"
    [ "$st" -eq 0 ]
    [ "$again" -eq 0 ]   # up to date (make -q)
}

@test "lazyweights and make model: a missing CALIB, a failed hessian or an OUT under a file leave nothing" {
    # lazyweights M POINT OUT nosuch.txt left OUT/NAME-nosuch-k8.hess.id; OUT= below a regular
    # file made make say "make: unlink: ... Not a directory" (a new user's trial)
    out="$BATS_TEST_TMPDIR/n"
    run "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$BATS_TEST_TMPDIR/nosuch.txt"
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: $BATS_TEST_TMPDIR/nosuch.txt: no such file" ]
    [ ! -e "$out" ]
    head -c 300 "$CALIB" > "$BATS_TEST_TMPDIR/tiny.txt"
    run "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$BATS_TEST_TMPDIR/tiny.txt"
    [ "$status" -ne 0 ]
    [[ $output == *"hessian: $BATS_TEST_TMPDIR/tiny.txt: tokenizes to only"* ]]
    [ ! -e "$out" ] || { ls -A "$out"; false; }
    touch "$BATS_TEST_TMPDIR/file"
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$BATS_TEST_TMPDIR/file/sub"
    [ "$status" -ne 0 ] && [ "${#lines[@]}" -eq 1 ] || { echo "$output"; false; }
    [[ $output == *"*** OUT=$BATS_TEST_TMPDIR/file/sub: cannot create directory "*"Not a directory.  Stop." ]]
}

@test "make model: a HESSIAN_CHUNKS that is no count is one line before any file; a failed hessian leaves no stamp" {
    # HESSIAN_CHUNKS=-3, 0 or abc wrote the .calib and .hess.id, ran hessian, and its
    # "--chunks: expected an integer" was the third of three lines (a new user's trial)
    out="$BATS_TEST_TMPDIR/h"
    a=(-C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g1_lam0_c1.5 OUT="$out" TEXT="$DATA/text/wiki.test.raw")
    for c in -3 0 abc "" 2147483648 "8 9" 00; do
        run make "${a[@]}" HESSIAN_CHUNKS="$c"
        [ "$status" -eq 2 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"*** HESSIAN_CHUNKS=$c: expected a count of chunks from 1 to 2147483647.  Stop." ]]
        [ ! -e "$out" ]
    done
    # hessian itself fails (a text too short for one chunk): its .hess.id, the points' .calib
    # and the OUT make made all stayed
    head -c 300 "$CALIB" > "$BATS_TEST_TMPDIR/tiny.txt"
    run make "${a[@]}" POINT="Q8_0_g1_lam0_c1.5 Q4_0_g1_lam0_c1" TEXT="$BATS_TEST_TMPDIR/tiny.txt"
    [ "$status" -eq 2 ]
    [[ "$output" == *"hessian: $BATS_TEST_TMPDIR/tiny.txt: tokenizes to only"* ]]
    [ ! -e "$out" ]
    mkdir "$out"
    run make "${a[@]}" TEXT="$BATS_TEST_TMPDIR/tiny.txt"
    [ "$status" -eq 2 ]
    [ -z "$(ls -A "$out")" ]
    rmdir "$out"
    # hessian interrupted: Ctrl-C (INT to the whole group) or TERM to make alone (timeout's)
    # left the .hess.id and .calib stamps (a new user's trial)
    local sig
    for sig in INT TERM; do
        # (env: the default SIGINT of a terminal's foreground make, which Ctrl-C reaches; a
        # background job starts with it ignored, and make and its steps keep it so)
        setsid env --default-signal=INT make "${a[@]}" TEXT="$CALIB" HESSIAN_CHUNKS=400 > "$BATS_TEST_TMPDIR/make.log" 2>&1 &
        local pid=$! i found=0
        # (until hessian has said its first line, up to 5 minutes: under a load of 90 on 2 cores
        # make took more than the 60 s this once waited. Waiting for a process whose command
        # line names hessian was not enough: the recipe's shell has that line too, and an INT
        # sent before hessian set its handler was lost, since a background job ignores INT and
        # hessian then built the whole point: the CI of c555d45)
        for i in $(seq 3000); do
            grep -q '^hessian: ' "$BATS_TEST_TMPDIR/make.log" && { found=1; break; }
            sleep 0.1
        done
        [ $found = 1 ] || { echo "hessian said nothing in 5 minutes"; cat "$BATS_TEST_TMPDIR/make.log"; false; }
        # (running; what make and hessian said when it was not: a clean-clone CI saw it gone once)
        pgrep -f "^bin/hessian --model $F32 .*--chunks 400 --share-inputs -o $out/" > /dev/null ||
            { echo "hessian is not running ($sig)"; cat "$BATS_TEST_TMPDIR/make.log"; ps -eo pid,args | grep '[h]essian'; false; }
        [ -s "$out/stories260K-f32-groups_merged-k400.hess.id" ]   # the stamps were written
        if [ $sig = INT ]; then kill -INT -- -$pid; else kill -TERM $pid; fi
        wait $pid || true
        gone "$(pgrep -f "bin/hessian --model $F32 .*--chunks 400" || echo none)"
        [ ! -e "$out" ] || { echo "$sig left: $(ls -A "$out")"; cat "$BATS_TEST_TMPDIR/make.log"; false; }
    done
}

@test "make model: make -n and make -q write nothing; HESSIAN_CHUNKS=08 is 8; TEXT= takes any HESSIAN_CHUNKS" {
    # make -n made OUT and wrote the .calib and .hess.id stamps; 08 named the Hessians k08,
    # apart from 8's k8; TEXT= HESSIAN_CHUNKS=abc was refused though RTN uses no Hessians
    # (a new user's trial)
    out="$BATS_TEST_TMPDIR/n/m1"
    a=(-C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 OUT="$out")
    run make -n "${a[@]}" HESSIAN_CHUNKS=8
    [ "$status" -eq 0 ]
    [ ! -e "$BATS_TEST_TMPDIR/n" ]
    run make -q "${a[@]}" HESSIAN_CHUNKS=8
    [ "$status" -eq 1 ]
    [ ! -e "$BATS_TEST_TMPDIR/n" ]
    run make -n "${a[@]}" TEXT="$CALIB" HESSIAN_CHUNKS=08
    [ "$status" -eq 0 ]
    [[ "$output" == *"bin/hessian --model $F32 --text $CALIB --chunks 8 --share-inputs -o $out/stories260K-f32-groups_merged-k8.hess"* ]] ||
        { echo "$output"; false; }
    [[ "$output" != *k08* ]]
    [ ! -e "$BATS_TEST_TMPDIR/n" ]
    # a build, then another calibration: make -n shows the rebuild and leaves the stamp as it was
    make "${a[@]}" TEXT= HESSIAN_CHUNKS=abc > /dev/null 2>&1
    [ "$(cat "$out/stories260K-f32-Q8_0_g0_lam0_c1.calib")" = "model $(realpath -s "$F32") $(sig "$F32") rtn" ]
    make -q "${a[@]}" TEXT=
    run make -n "${a[@]}" TEXT="$CALIB" HESSIAN_CHUNKS=08
    [ "$status" -eq 0 ]
    [[ "$output" == *"HESSIAN_CHUNKS=8 pipelines/lazyweights $F32 Q8_0_g0_lam0_c1 $out $CALIB"* ]]
    [ "$(cat "$out/stories260K-f32-Q8_0_g0_lam0_c1.calib")" = "model $(realpath -s "$F32") $(sig "$F32") rtn" ]
    [ ! -e "$out/stories260K-f32-groups_merged-k8.hess.id" ]
    run make -q "${a[@]}" TEXT="$CALIB" HESSIAN_CHUNKS=08
    [ "$status" -eq 1 ]
    [ "$(cat "$out/stories260K-f32-Q8_0_g0_lam0_c1.calib")" = "model $(realpath -s "$F32") $(sig "$F32") rtn" ]
    make -q "${a[@]}" TEXT=
}

@test "make model: a new TEXT or HESSIAN_CHUNKS, or RTN after GPTQ, rebuilds the point; hessian's error is shown" {
    # the GPTQ files stayed for an RTN build, and the first TEXT's Hessians served every later
    # TEXT (a new user's trial)
    out="$BATS_TEST_TMPDIR/c"
    a=(-C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 OUT="$out")
    make "${a[@]}" TEXT="$CALIB" HESSIAN_CHUNKS=2 > /dev/null 2>&1
    [ "$(cat "$out/stories260K-f32-Q8_0_g0_lam0_c1.calib")" = "model $(realpath -s "$F32") $(sig "$F32") gptq $(realpath -s "$CALIB") $(sig "$CALIB") chunks 2" ]
    [ -s "$out/stories260K-f32-groups_merged-k2.hess" ]
    make -q "${a[@]}" TEXT="$CALIB" HESSIAN_CHUNKS=2
    run make -q "${a[@]}" TEXT="$DATA/text/wiki.test.raw" HESSIAN_CHUNKS=2
    [ "$status" -ne 0 ]
    make "${a[@]}" TEXT="$DATA/text/wiki.test.raw" HESSIAN_CHUNKS=2 > /dev/null 2>&1
    [ -s "$out/stories260K-f32-wiki.test-k2.hess" ]
    w=$(cksum < "$out/stories260K-f32-Q8_0_g0_lam0_c1.gguf")
    # back to the first text: its Hessians exist and are older than the GGUF, yet it rebuilds
    run make "${a[@]}" TEXT="$CALIB" HESSIAN_CHUNKS=2
    [[ "$output" == *lazyweights* ]]
    [ "$(cksum < "$out/stories260K-f32-Q8_0_g0_lam0_c1.gguf")" != "$w" ]
    run make -q "${a[@]}" TEXT= HESSIAN_CHUNKS=2
    [ "$status" -ne 0 ]
    make "${a[@]}" TEXT= > /dev/null 2>&1
    [ "$(cat "$out/stories260K-f32-Q8_0_g0_lam0_c1.calib")" = "model $(realpath -s "$F32") $(sig "$F32") rtn" ]
    # a TEXT link re-pointed at another file, older than the Hessians: the point and its Hessians
    # rebuilt (by path alone the old Hessians served, exit 0: a breaker's find)
    ln -s "$CALIB" "$BATS_TEST_TMPDIR/t.txt"
    make "${a[@]}" TEXT="$BATS_TEST_TMPDIR/t.txt" HESSIAN_CHUNKS=2 > /dev/null 2>&1
    local h
    h=$(cksum < "$out/stories260K-f32-t-k2.hess")
    ln -sfn "$DATA/text/wiki.test.raw" "$BATS_TEST_TMPDIR/t.txt"
    run make -q "${a[@]}" TEXT="$BATS_TEST_TMPDIR/t.txt" HESSIAN_CHUNKS=2
    [ "$status" -ne 0 ]
    make "${a[@]}" TEXT="$BATS_TEST_TMPDIR/t.txt" HESSIAN_CHUNKS=2 > /dev/null 2>&1
    [ "$(cksum < "$out/stories260K-f32-t-k2.hess")" != "$h" ]
    cmp "$out/stories260K-f32-t-k2.hess" "$out/stories260K-f32-wiki.test-k2.hess"
    make -q "${a[@]}" TEXT="$BATS_TEST_TMPDIR/t.txt" HESSIAN_CHUNKS=2
    # a text too short for one chunk: hessian's own line reaches the user
    head -c 300 "$CALIB" > "$BATS_TEST_TMPDIR/tiny.txt"
    run make "${a[@]}" TEXT="$BATS_TEST_TMPDIR/tiny.txt"
    [ "$status" -ne 0 ]
    [[ "$output" == *"hessian: $BATS_TEST_TMPDIR/tiny.txt: tokenizes to only"* ]]
}

@test "lazyweights: two runs at once into one OUTDIR with the same model and text compute the Hessians once" {
    # each computed them, under make -j2 (41 GiB each on a 7B: a new user's trial); the second
    # waits on the first's lock, then reuses its Hessians
    local out="$BATS_TEST_TMPDIR/two" hess a b
    hess="$out/stories260K-f32-groups_merged-k4.hess"
    HESSIAN_CHUNKS=4 WPACK_THREADS=1 "$ROOT/pipelines/lazyweights" "$F32" Q5_0_g0_lam0_c1 "$out" "$CALIB" \
        2> "$BATS_TEST_TMPDIR/a.err" 3>&- &
    a=$!
    # (once the first holds the lock: its .id is written under it, before hessian starts)
    for ((i = 0; i < 600; i++)); do [ -e "$hess.id" ] && break; sleep 0.05; done
    [ -e "$hess.id" ]
    HESSIAN_CHUNKS=4 WPACK_THREADS=1 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB" \
        2> "$BATS_TEST_TMPDIR/b.err"
    wait "$a"
    [ "$(cat "$BATS_TEST_TMPDIR/a.err" "$BATS_TEST_TMPDIR/b.err" | grep -c '^hessian: pass 1/1')" -eq 1 ]
    [ "$(grep -c '^hessian: ' "$BATS_TEST_TMPDIR/b.err")" -eq 0 ]
    # the Hessians are those a run alone computes, and both points are whole
    "$ROOT/bin/hessian" --model "$F32" --text "$CALIB" --chunks 4 --threads 1 --share-inputs -o "$BATS_TEST_TMPDIR/one.hess" 2> /dev/null
    cmp "$hess" "$BATS_TEST_TMPDIR/one.hess"
    "$ROOT/bin/unbundle" "$out/stories260K-f32-Q5_0_g0_lam0_c1.bundle" | cmp - "$out/stories260K-f32-Q5_0_g0_lam0_c1.gguf"
    "$ROOT/bin/unbundle" "$out/stories260K-f32-Q8_0_g0_lam0_c1.bundle" | cmp - "$out/stories260K-f32-Q8_0_g0_lam0_c1.gguf"
    # a TERM while it waits ends it at once, nothing of its own left, the first run unharmed
    # (the first run's hessian starts once the second waits: under a loaded CI the 12 chunks were
    # done before the second came to the lock, and it never waited)
    rm -rf "$out"
    : > "$BATS_TEST_TMPDIR/b.err"
    fake_bins "$BATS_TEST_TMPDIR/slow" hessian \
        "for i in \$(seq 600); do grep -q waiting '$BATS_TEST_TMPDIR/b.err' && break; sleep 0.1; done; exec '$ROOT/bin/hessian' \"\$@\""
    HESSIAN_CHUNKS=12 WPACK_THREADS=1 WPACK_BIN="$BATS_TEST_TMPDIR/slow" "$ROOT/pipelines/lazyweights" "$F32" Q5_0_g0_lam0_c1 "$out" "$CALIB" \
        2> /dev/null 3>&- &
    a=$!
    hess="$out/stories260K-f32-groups_merged-k12.hess"
    for ((i = 0; i < 600; i++)); do [ -e "$hess.id" ] && break; sleep 0.05; done
    HESSIAN_CHUNKS=12 WPACK_THREADS=1 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB" \
        2> "$BATS_TEST_TMPDIR/b.err" 3>&- &
    b=$!
    for ((i = 0; i < 600; i++)); do grep -q waiting "$BATS_TEST_TMPDIR/b.err" && break; sleep 0.05; done
    [ "$(cat "$BATS_TEST_TMPDIR/b.err")" = "lazyweights: waiting for another run's Hessians in $out" ]
    kill -TERM "$b"
    local rc=0
    wait "$b" || rc=$?
    [ "$rc" -eq 143 ]
    wait "$a"
    [ ! -e "$out/stories260K-f32-Q8_0_g0_lam0_c1.gguf" ]
    "$ROOT/bin/unbundle" "$out/stories260K-f32-Q5_0_g0_lam0_c1.bundle" | cmp - "$out/stories260K-f32-Q5_0_g0_lam0_c1.gguf"
}

@test "make model: another TEXT or MODEL file of the same name, older than the outputs, still rebuilds" {
    # the Hessians were named by the text's name and rebuilt by time, so a second calib.txt
    # older than the first's Hessians reused them, and an older m.gguf elsewhere left the first
    # model's point (a new user's trial)
    out="$BATS_TEST_TMPDIR/s" t1="$BATS_TEST_TMPDIR/t1" t2="$BATS_TEST_TMPDIR/t2"
    mkdir -p "$t1" "$t2"
    head -c 60000 "$CALIB" > "$t1/calib.txt"
    head -c 60000 "$DATA/text/wiki.test.raw" > "$t2/calib.txt"
    touch -d 2020-01-01 "$t2/calib.txt"
    a=(-C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 OUT="$out" HESSIAN_CHUNKS=2)
    hess="$out/stories260K-f32-calib-k2.hess"
    make "${a[@]}" TEXT="$t1/calib.txt" > /dev/null 2>&1
    f32=$(realpath -s "$F32")   # as make's abspath writes it
    [ "$(cat "$hess.id")" = "model $f32 $(sig "$F32") text $(realpath -s "$t1")/calib.txt $(sig "$t1/calib.txt") chunks 2" ]
    h1=$(cksum < "$hess")
    make "${a[@]}" TEXT="$t2/calib.txt" > /dev/null 2>&1
    [ "$(cat "$hess.id")" = "model $f32 $(sig "$F32") text $(realpath -s "$t2")/calib.txt $(sig "$t2/calib.txt") chunks 2" ]
    [ "$(cksum < "$hess")" != "$h1" ]
    # the Hessians of t2, as a fresh build computes them
    "$ROOT/bin/hessian" --model "$F32" --text "$t2/calib.txt" --chunks 2 --share-inputs -o "$BATS_TEST_TMPDIR/fresh.hess" 2> /dev/null
    cmp "$hess" "$BATS_TEST_TMPDIR/fresh.hess"
    make -q "${a[@]}" TEXT="$t2/calib.txt"
    # lazyweights alone takes the .id as make does: nothing recomputed for the same text, and
    # 02 is 2 (it named them k02, apart from k2)
    before=$(stat -c %y "$hess")
    HESSIAN_CHUNKS=02 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$t2/calib.txt"
    [ "$(stat -c %y "$hess")" = "$before" ]
    [ ! -e "$out/stories260K-f32-calib-k02.hess" ]
    # and recomputes them for the other text of the same name
    HESSIAN_CHUNKS=2 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$t1/calib.txt"
    [ "$(cksum < "$hess")" = "$h1" ]
    # which a second run alone reuses (it wrote the .id after them, so they looked stale: a
    # new user's trial)
    before=$(stat -c %y "$hess")
    HESSIAN_CHUNKS=2 "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$t1/calib.txt"
    [ "$(stat -c %y "$hess")" = "$before" ]
    # another model of the same name, older than the point
    m1="$BATS_TEST_TMPDIR/ma/m.gguf" m2="$BATS_TEST_TMPDIR/mb/m.gguf"
    mkdir -p "${m1%/*}" "${m2%/*}"
    cp "$F32" "$m1"
    cp "$MODELS/stories260K-bf16.gguf" "$m2"
    touch -d 2020-01-01 "$m2"
    b=(-C "$ROOT" --no-print-directory model POINT=Q8_0_g0_lam0_c1 OUT="$out" TEXT=)
    make "${b[@]}" MODEL="$m1" > /dev/null 2>&1
    g1=$(cksum < "$out/m-Q8_0_g0_lam0_c1.gguf")
    run make -q "${b[@]}" MODEL="$m2"
    [ "$status" -ne 0 ]
    make "${b[@]}" MODEL="$m2" > /dev/null 2>&1
    [ "$(cksum < "$out/m-Q8_0_g0_lam0_c1.gguf")" != "$g1" ]
}

@test "lazyweights: a MODEL, OUTDIR or CALIB whose name starts with - is a file, not an option" {
    # basename and ggufcat took -m.gguf for an option, mkdir -o (exit 1, "invalid option"),
    # after the check had passed
    cd "$BATS_TEST_TMPDIR"
    cp "$F32" ./-m.gguf
    head -c 20000 "$CALIB" > ./-c.txt
    run "$ROOT/pipelines/lazyweights" -m.gguf Q8_0_g0_lam0_c1 -o
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    "$ROOT/bin/unbundle" ./-o/-m-Q8_0_g0_lam0_c1.bundle | cmp - ./-o/-m-Q8_0_g0_lam0_c1.gguf
    HESSIAN_CHUNKS=1 run "$ROOT/pipelines/lazyweights" -m.gguf Q5_0_g0_lam0_c1 -o -c.txt
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ "$(cat ./-o/-m--c-k1.hess.id)" = "model $BATS_TEST_TMPDIR/-m.gguf $(sig ./-m.gguf) text $BATS_TEST_TMPDIR/-c.txt $(sig ./-c.txt) chunks 1" ]
    [ "$(ls -A ./-o | tr '\n' ' ')" = "-m--c-k1.hess -m--c-k1.hess.id -m-Q5_0_g0_lam0_c1.bundle -m-Q5_0_g0_lam0_c1.gguf -m-Q5_0_g0_lam0_c1.report -m-Q8_0_g0_lam0_c1.bundle -m-Q8_0_g0_lam0_c1.gguf -m-Q8_0_g0_lam0_c1.report " ]
}

@test "demo: a ppl that gives no PPL stops it with a line; a WPACK_DATA with a space in it runs" {
    # the PPL column was left empty (ΔPPL -100 %), exit 0: ppl's status was lost in printf's
    # arguments; the GPTQ point's text path was split at the space
    d="$BATS_TEST_TMPDIR"
    mkdir -p "$d/ref/bin"
    printf '#!/bin/sh\nprintf junk > "$2"\n' > "$d/ref/bin/llama-quantize"
    chmod +x "$d/ref/bin/llama-quantize"
    REF_BUILD="$d/ref" DEMO_CHUNKS=1 OUT="$d/o1" run --separate-stderr "$ROOT/pipelines/demo"
    [ "$status" -eq 1 ]
    [ "$stderr" = "demo: bin/ppl --model $d/o1/llama-F16.gguf gave no PPL (run it without 2>/dev/null to see why)" ]
    [ ! -e "$d/o1/stories260K-f32-Q8_0_g1_lam0_c1.5.gguf" ]
    # llama-quantize's "files" are copies of the model, for speed
    printf '#!/bin/sh\ncp "$1" "$2"\n' > "$d/ref/bin/llama-quantize"
    ln -s "$DATA" "$d/data dir"
    WPACK_DATA="$d/data dir" REF_BUILD="$d/ref" DEMO_CHUNKS=1 HESSIAN_CHUNKS=1 OUT="$d/o2" \
        run --separate-stderr "$ROOT/pipelines/demo"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(cut -f1,2 "$d/o2/demo-points.tsv" | tr '\t\n' ', ')" = \
      "llama.cpp,F16 llama.cpp,Q8_0 llama.cpp,Q5_0 llama.cpp,Q4_K_M wpack,Q8_0_g1_lam0_c1.5 wpack,Q5_0_g0_lam0_c1 " ]
    awk -F'\t' '!($3 > 0 && $4 > 1) { exit 1 }' "$d/o2/demo-points.tsv"
    [ -s "$d/o2/stories260K-f32-groups_merged-k1.hess" ]
    # shipped: a wpack point's --dist bundle, below its bundle; a llama.cpp file through zstd -19
    # (the fake llama-quantize's F32 copy: 26.3694 b/w), below its GGUF
    awk -F'\t' '!($5 > 0 && $5 < $3) { exit 1 }' "$d/o2/demo-points.tsv"
    [ "$(awk -F'\t' '$2 == "Q8_0" { print $3, $5 }' "$d/o2/demo-points.tsv")" = "32.3847 26.3694" ]
    [ "$(awk -F'\t' '$2 == "Q8_0_g1_lam0_c1.5" { print $5 }' "$d/o2/demo-points.tsv")" = 7.7553 ]
    [[ "$output" == *"   palette 16  GGUF 16.4232 b/w -> bundle 10.3117 b/w; exponent limit: 10.6127 b/w; shipped 9.3803 b/w"* ]]
    [[ "$output" == *"   (shipped: the --dist bundle; the GGUF through zstd -19: 10.8255 b/w)"* ]]
    # which point is RTN and which GPTQ, said under the table (a new user built the RTN row's
    # name with make model's default TEXT: GPTQ, a larger bundle)
    [[ "$output" == *"   (Q8_0_g1_lam0_c1.5 is RTN, no Hessians: make model ... TEXT=; Q5_0_g0_lam0_c1 is GPTQ, its"$'\n'"   Hessians from groups_merged.txt, HESSIAN_CHUNKS 1; PPL's"* ]]
}

@test "frontier: a fifth argument is the usage line (exit 2), before any file" {
    # it was ignored: the sweep ran (minutes) as if it were not there
    run --separate-stderr "$ROOT/pipelines/frontier" "$F32" "$EVAL" "$BATS_TEST_TMPDIR/f" "$CALIB" extra
    [ "$status" -eq 2 ]
    [ "$stderr" = "usage: frontier MODEL.gguf EVAL.txt OUTDIR [CALIB.txt]" ]
    [ ! -e "$BATS_TEST_TMPDIR/f" ]
}

@test "frontier: lazyweights' IMATRIX does not reach its points" {
    # make exports IMATRIX to every recipe, and frontier's wpack points took it, its llama.cpp
    # reference points not (a review); the check stops at the second point's type, before any work
    [ -x "$REF/bin/llama-quantize" ] || skip "llama.cpp tools not built (make reftools)"
    run --separate-stderr env IMATRIX="$BATS_TEST_TMPDIR/none.dat" FRONTIER_POINTS="Q8_0_g0_lam0_c1 Q9_X_g0_lam0_c1" \
        "$ROOT/pipelines/frontier" "$F32" "$EVAL" "$BATS_TEST_TMPDIR/f"
    [ "$status" -eq 2 ]
    [ "$stderr" = "frontier: Q9_X_g0_lam0_c1: gptq has no --ftype Q9_X (gptq(1) lists the presets)" ]
    [ ! -e "$BATS_TEST_TMPDIR/f" ]
}

@test "lazyweights interrupted in hessian: no .id without Hessians, no OUTDIR it made" {
    # a failed hessian removed them, a signal left them
    bins="$BATS_TEST_TMPDIR/bins" out="$BATS_TEST_TMPDIR/o/sub"
    mkdir "$BATS_TEST_TMPDIR/o"
    fake_bins "$bins" hessian "touch '$BATS_TEST_TMPDIR/hessian.started'; sleep 30"
    WPACK_BIN="$bins" setsid "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB" > /dev/null 2>&1 &
    pid=$!
    for i in $(seq 600); do [ -e "$BATS_TEST_TMPDIR/hessian.started" ] && break; sleep 0.1; done
    [ -e "$BATS_TEST_TMPDIR/hessian.started" ]
    [ -e "$out/stories260K-f32-groups_merged-k8.hess.id" ]
    kill -TERM -- -"$pid"
    status=0; wait "$pid" || status=$?
    [ "$status" -eq 143 ]
    [ ! -e "$out" ] || { ls -A "$out"; false; }
    # a failed one likewise, with its status
    fake_bins "$BATS_TEST_TMPDIR/bins2" hessian "echo 'hessian: it broke' >&2; exit 3"
    WPACK_BIN="$BATS_TEST_TMPDIR/bins2" run "$ROOT/pipelines/lazyweights" "$F32" Q8_0_g0_lam0_c1 "$out" "$CALIB"
    [ "$status" -eq 3 ]
    [ "$output" = "hessian: it broke" ]
    [ ! -e "$out" ]
}

@test "make model: OUT=~/x is HOME's x, a ~USER path refused; a relative OUT given from another folder is said" {
    # a recipe's sh passes ~ unexpanded: make's targets took it for HOME's, the stamps' quoted
    # paths for ./~/x, and a stamp was removed (a new user's trial)
    local h="$BATS_TEST_TMPDIR/home"
    mkdir "$h"
    run env HOME="$h" make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= 'OUT=~/wpk'
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ -s "$h/wpk/stories260K-f32-Q8_0_g0_lam0_c1.gguf" ]
    [ -s "$h/wpk/stories260K-f32-Q8_0_g0_lam0_c1.calib" ]
    [ ! -e "$ROOT/~" ]
    run env HOME="$h" make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= 'OUT=~/wpk'
    [[ "$output" == "make"*": Nothing to be done for 'model'." ]]   # (make[2]: under make check)
    run make -C "$ROOT" --no-print-directory model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= 'OUT=~nobody/wpk'
    [ "$status" -eq 2 ]
    [[ "$output" == *"*** OUT=~nobody/wpk: only ~ and ~/ are expanded here, not ~USER or ~+ (give the path as the shell expands it).  Stop." ]] || { echo "$output"; false; }
    # without HOME, ~ means nothing (it became /wpk: a breaker's find)
    run env -u HOME make -C "$ROOT" --no-print-directory -n model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= 'OUT=~/wpk'
    [ "$status" -eq 2 ]
    [[ "$output" == *"*** OUT=~/wpk: HOME is not set: ~ means nothing here (give the path).  Stop." ]] || { echo "$output"; false; }
    # a relative OUT from another folder goes under the source tree: said (it went unsaid)
    cd "$BATS_TEST_TMPDIR"
    run make -C "$ROOT" --no-print-directory -n model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT=rel-out
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "make model: OUT=rel-out is $ROOT/rel-out, under the folder where make runs (make -C), not $BATS_TEST_TMPDIR: give an absolute path to put the outputs elsewhere" ]
    run make -C "$ROOT" --no-print-directory -n model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$BATS_TEST_TMPDIR/abs"
    [[ "$output" != *"make model: OUT="* ]]
    [ ! -e "$ROOT/rel-out" ]
}

@test "make model under a parent make -j2 says nothing of the jobserver; make -n still builds gptq to ask it, with CC= as given" {
    # its $(shell $(MAKE) bin/gptq) said "warning: jobserver unavailable: using -j1.  Add '+' to
    # parent make rule." under a user's own make -j2 (a new user's trial)
    printf 'all:\n\t$(MAKE) -C %s --no-print-directory model MODEL=%s POINT=Q8_0_g0_lam0_c1 TEXT= OUT=%s\n' \
        "$ROOT" "$F32" "$BATS_TEST_TMPDIR/o" > "$BATS_TEST_TMPDIR/Makefile"
    run make -j2 -C "$BATS_TEST_TMPDIR" --no-print-directory
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [[ "$output" != *jobserver* ]] || { echo "$output"; false; }
    [ -s "$BATS_TEST_TMPDIR/o/stories260K-f32-Q8_0_g0_lam0_c1.bundle" ]
    # a tree without bin/gptq: make -n and -q build it to ask it, as before (the first mend
    # passed this make's -n to that build, and the check said "bin/gptq: no such program":
    # a breaker's find); CC= given on the command line reaches that build (it built with cc)
    local w="$BATS_TEST_TMPDIR/w"
    git clone -q "$ROOT" "$w"
    cp "$ROOT/Makefile" "$w/"   # (the Makefile under test, committed or not)
    mkdir -p "$w/bin"
    ln -s "$ROOT/.deps" "$w/.deps"
    printf '#!/bin/sh\necho "$@" >> %s/cc.log\nexec cc "$@"\n' "$BATS_TEST_TMPDIR" > "$BATS_TEST_TMPDIR/mycc"
    chmod +x "$BATS_TEST_TMPDIR/mycc"
    run make -C "$w" --no-print-directory -n model MODEL="$F32" POINT=Q8_0_g0_lam0_c1 TEXT= OUT="$BATS_TEST_TMPDIR/n" \
        CC="$BATS_TEST_TMPDIR/mycc" WPACK_NO_CUDA=1
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ -x "$w/bin/gptq" ]
    grep -q 'filters/gptq.c' "$BATS_TEST_TMPDIR/cc.log"
    [ ! -e "$BATS_TEST_TMPDIR/n" ]
}
