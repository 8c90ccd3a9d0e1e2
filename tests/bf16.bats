#!/usr/bin/env bats
# bf16split | histogram | huffbuild | laneinterleave: lossless exponent coding.
load helpers
bats_require_minimum_version 1.5.0

setup() {
    T="$BATS_TEST_TMPDIR"
}

lossless() { # GGUF BUNDLE [bf16split options]
    local g=$1 b=$2; shift 2
    "$BIN/ggufcat" "$g" | "$BIN/bf16split" "$@" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$b"
}

@test "stories260K BF16, F16 and F32 round-trip bit-exactly through the palette bundle" {
    for t in bf16 f16 f32; do
        lossless "$MODELS/stories260K-$t.gguf" "$T/$t.bundle"
        run "$BIN/verify" -q "$MODELS/stories260K-$t.gguf" "$T/$t.bundle"
        [ "$status" -eq 0 ]
        # 36 matrices coded; output.weight shares token_embd's bytes; 11 norms as they are or zstd'd
        echo "$output" | grep -q '^total: 292800 weights (259328 in 36 coded matrices, 11 stored fixed-width or zstd, 1 shared)$'
        "$BIN/unbundle" "$T/$t.bundle" | cmp - "$MODELS/stories260K-$t.gguf"
    done
}

@test "palette 0 (whole exponent byte) round-trips too" {
    lossless "$MODELS/stories260K-bf16.gguf" "$T/p0.bundle" --palette 0
    "$BIN/verify" -q "$MODELS/stories260K-bf16.gguf" "$T/p0.bundle"
    "$BIN/unbundle" "$T/p0.bundle" | cmp - "$MODELS/stories260K-bf16.gguf"
}

@test "histogram --report: stories260K BF16 exponent entropy 2.6127, limit 10.6127 b/w" {
    run sh -c "'$BIN/ggufcat' '$MODELS/stories260K-bf16.gguf' | '$BIN/bf16split' | '$BIN/histogram' --report 2>&1 >/dev/null"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^token_embd.weight +BF16 +32768 +16384 .*exponent H 2.6144, limit 10.6144 b/w, verbatim 0.1953%'
    echo "$output" | grep -E '^total exponent-coded: 292096 weights; exponent H 2.6127 b/w, limit \(raw \+ H\) 10.6127 b/w, verbatim 0.2365%'
    # and the total line, split by histogram or by bf16split before it (a model of floats alone
    # had none: a fresh user's find); the 704 weights left are the F32 norms
    local total='total: 292800 weights, 0 in quantized matrices, 292096 exponent-coded; tensors 16.0385 b/w as stored; entropy bound 10.6641 b/w (order 0: codes at H, exponents one at a time at raw bits + H, side data and other tensors as stored; a tensor'"'"'s repeated rows once, a tensor repeating another again)'
    [ "${lines[-1]}" = "$total" ]
    run sh -c "'$BIN/ggufcat' '$MODELS/stories260K-bf16.gguf' | '$BIN/histogram' --report 2>&1 >/dev/null"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "$total" ]
    # a report that cannot be written fails the run, and -o's file is not made (it exited 0, the
    # report lost unsaid: a tester's find)
    "$BIN/ggufcat" -o "$T/m.wps" "$MODELS/stories260K-bf16.gguf"
    run sh -c "'$BIN/histogram' --report -o '$T/h.wps' '$T/m.wps' 2> /dev/full"
    [ "$status" -eq 1 ]
    [ ! -e "$T/h.wps" ]
    [ -z "$(ls "$T" | grep tmp)" ]
    "$BIN/histogram" -o "$T/h.wps" "$T/m.wps" 2> /dev/full   # no report asked for: no matter
    [ -s "$T/h.wps" ]
}

@test "the BF16 bundle is far smaller than the GGUF (10.3117 b/w against 16.42) and restores it" {
    lossless "$MODELS/stories260K-bf16.gguf" "$T/b.bundle"
    run "$BIN/verify" -q "$MODELS/stories260K-bf16.gguf" "$T/b.bundle"
    [ "$status" -eq 0 ]   # (the sizes line is printed when the round trip fails too: a reviewer's find)
    bpw=$(echo "$output" | sed -n 's/^GGUF 16.4232 b\/w, bundle \([0-9.]*\) b\/w.*/\1/p')
    [ "$bpw" = 10.3117 ]   # tests/bitrates.tsv's stories260K-bf16 lossless_p16
}

@test "--match selects tensors; the rest stay as they were" {
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" --match 'ffn_(gate|up|down)' | "$BIN/tsinfo" > "$T/l"
    [ "$(grep -c '^raw ' "$T/l")" -eq 15 ]
    grep -qE '^tensor +blk.0.attn_q.weight +BF16' "$T/l"
}

@test "--match: a 1-D tensor is never split, matched or not (bf16split(1))" {
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" --match 'attn_norm' | "$BIN/tsinfo" > "$T/l"
    [ "$(grep -c '^raw ' "$T/l")" -eq 0 ]
    grep -qE '^tensor +blk.0.attn_norm.weight +F32 +64 ' "$T/l"
}

@test "the MLP-only bundle of bf16split(1)'s example: --match, then histogram --no-float, codes 15 matrices" {
    # without --no-float histogram splits the other matrices itself, and the bundle came out
    # the same as without --match (a new user's trial)
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" --match 'ffn_(gate|up|down)' |
        "$BIN/histogram" --no-float | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/mlp.bundle"
    "$BIN/tsinfo" "$T/mlp.bundle" > "$T/l"
    [ "$(grep -c '^coded ' "$T/l")" -eq 15 ]
    [ "$(grep '^coded ' "$T/l" | grep -vcE 'ffn_(gate|up|down)')" -eq 0 ]
    grep -qE '^zstd +blk.0.attn_q.weight +BF16' "$T/l"
    "$BIN/unbundle" "$T/mlp.bundle" | cmp - "$MODELS/stories260K-bf16.gguf"
}

@test "histogram --no-float after bf16split of every matrix warns that it does nothing; after bf16split --match it does not" {
    # it had no effect, silently (a fresh user's find)
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" | "$BIN/histogram" --no-float \
        > "$T/all.ts" 2> "$T/all.err"
    [ "$(cat "$T/all.err")" = "histogram: warning: --no-float has no effect: the input's 37 float matrices were split by bf16split already, and coded as it split them (--no-float keeps the float matrices histogram would split itself)" ]
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" --match 'ffn_(gate|up|down)' |
        "$BIN/histogram" --no-float > "$T/mlp.ts" 2> "$T/mlp.err"
    [ ! -s "$T/mlp.err" ]
    [ -s "$T/mlp.ts" ]
}

@test "bad options: palette above 16, a bad regex" {
    run "$BIN/bf16split" --palette 17
    one_line_error "^bf16split: --palette: expected an integer from 0 to 16, got '17'$"
    run "$BIN/bf16split" --match '('
    one_line_error "^bf16split: --match: '\(' is not a valid regular expression$"
}

@test "number options are plain decimals: no blank, '+' or hex, as wprun takes them (they were taken)" {
    local v
    for v in ' 16' '+16' '0x10' '16 '; do
        run "$BIN/bf16split" --palette "$v"
        one_line_error "^bf16split: --palette: expected an integer from 0 to 16, got '${v//+/\\+}'$"
    done
    for v in '0x1p0' ' 1.25' '+1.25' 'inf' 'nan' '1.25x'; do
        run "$BIN/gptq" --type Q8_0 --widen "$v"
        one_line_error "^gptq: --widen: expected a number from 1 to 64, got '${v//+/\\+}'$"
    done
    # a number a double cannot hold is said so (1e-400 was taken as 0)
    run "$BIN/gptq" --type Q8_0 --lambda 1e-400
    one_line_error "^gptq: --lambda: '1e-400' is out of range \(a double holds about 2.2e-308 to 1.8e308\)$"
    # plain ones still pass: -0.5 a value (below the range here), .5e1 and 1e0 numbers
    run "$BIN/gptq" --type Q8_0 --lambda -0.5
    one_line_error "^gptq: --lambda: expected a number from 0 to "
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" --palette 016 > /dev/null
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" --type Q8_0 --rtn --quiet --gamma --widen 1e0 > /dev/null
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" --type Q8_0 --rtn --quiet --gamma --widen .15e1 > /dev/null
}

@test "an empty file name is said as one, not ': No such file or directory'" {
    local p
    for p in tsinfo ggufcat safetensorscat histogram unbundle bf16split; do
        run "$BIN/$p" ''
        [ "$status" -eq 1 ]
        [[ "$output" == "$p: an empty file name (give "* ]]
    done
    run "$BIN/verify" "$MODELS/stories260K-f32.gguf" ''
    one_line_error "^verify: an empty file name for the bundle \(give the file's name\)$"
    run "$BIN/verify" '' "$MODELS/stories260K-f32.gguf"
    one_line_error "^verify: an empty file name \(give the file's name\)$"
    # an option's empty value, as OPT= (gptq --hessian '' said "gptq: : cannot open Hessian file")
    run "$BIN/gptq" --type Q4_0 --hessian '' "$MODELS/stories260K-f32.gguf"
    one_line_error "^gptq: --hessian: an empty value \(try --help\)$"
    run "$BIN/gptq" --type Q4_0 --rtn --imatrix ''
    one_line_error "^gptq: --imatrix: an empty value \(try --help\)$"
    run "$BIN/ppl" --model '' --text x
    one_line_error "^ppl: --model: an empty value \(try --help\)$"
    run "$BIN/hessian" --model x --text ''
    one_line_error "^hessian: --text: an empty value \(try --help\)$"
    run "$BIN/ggufpack" -o ''
    one_line_error "^ggufpack: -o: an empty file name$"
    run "$BIN/gptq" --type Q8_0 -o ''   # (its own -o: "an empty value", a reviewer's find)
    one_line_error "^gptq: -o: an empty file name$"
}

@test "bf16split: a palette that leaves more than 5 % of the row groups verbatim is said, with the way on" {
    # --palette 1 to 8 made stories260K's bundle with no matrix lane-coded, unsaid (a fresh user's find)
    local m="$MODELS/stories260K-bf16.gguf" p
    for p in 8 12; do
        run --separate-stderr sh -c "'$BIN/ggufcat' '$m' | '$BIN/bf16split' --palette $p > '$T/s.wps'"
        [ "$status" -eq 0 ]
        [ "$stderr" = "bf16split: warning: stdin: $([ $p = 8 ] && echo 63.0 || echo 7.2)% of the row groups are stored verbatim (an exponent outside the $p-entry palette): --palette 16, or 0, codes them" ]
    done
    for p in 16 0; do   # 0.24 %, and none
        run --separate-stderr sh -c "'$BIN/ggufcat' '$m' | '$BIN/bf16split' --palette $p > '$T/s.wps'"
        [ "$status" -eq 0 ]
        [ -z "$stderr" ]
    done
}

@test "pipelines/unweight --dist: bf16split's verbatim warning once, and a failing dist run's lines shown" {
    # the dist run's stages said it again: the warning came twice (a session's note)
    run --separate-stderr "$ROOT/pipelines/unweight" --dist "$MODELS/stories260K-bf16.gguf" "$T/u" 8
    [ "$status" -eq 0 ]
    [ "${#stderr_lines[@]}" -eq 2 ]
    [ "${stderr_lines[0]}" = "bf16split: warning: stdin: 63.0% of the row groups are stored verbatim (an exponent outside the 8-entry palette): --palette 16, or 0, codes them" ]
    [[ "${stderr_lines[1]}" == "unweight: $T/u/stories260K-bf16-p8.bundle and .dist.bundle: GGUF 16.4232 b/w, bundle "*", lossless (palette 8)" ]]
    # a laneinterleave that fails under --dist alone: its line, its status, no bundle left
    local bins="$T/bins" p
    mkdir "$bins"
    for p in ggufcat bf16split histogram huffbuild verify unbundle; do ln -s "$BIN/$p" "$bins/$p"; done
    printf '#!/bin/sh
for a; do [ "$a" != --dist ] || { cat > /dev/null; echo "laneinterleave: warning: new in dist" >&2; echo "laneinterleave: dist broke" >&2; exit 3; }; done
exec %s "$@"
' \
        "$BIN/laneinterleave" > "$bins/laneinterleave"
    chmod +x "$bins/laneinterleave"
    run --separate-stderr env WPACK_BIN="$bins" "$ROOT/pipelines/unweight" --dist "$MODELS/stories260K-bf16.gguf" "$T/w" 8
    [ "$status" -eq 3 ]
    # (a warning the first run did not give is shown: every one was dropped, a breaker's find)
    [ "${#stderr_lines[@]}" -eq 3 ]
    [ "${stderr_lines[0]}" = "bf16split: warning: stdin: 63.0% of the row groups are stored verbatim (an exponent outside the 8-entry palette): --palette 16, or 0, codes them" ]
    [ "${stderr_lines[1]}" = "laneinterleave: warning: new in dist" ]
    [ "${stderr_lines[2]}" = "laneinterleave: dist broke" ]
    [ ! -e "$T/w" ]
}

@test "synthetic floats with every special value round-trip through the bundle (palette 16 and 0)" {
    "$TOOLS/mksynth" "$T/fl.gguf" floats
    for p in 16 0; do
        lossless "$T/fl.gguf" "$T/fl$p.bundle" --palette "$p"
        run "$BIN/verify" "$T/fl.gguf" "$T/fl$p.bundle"
        [ "$status" -eq 0 ]
        echo "$output" | grep -E '^bf16.specials_67x100 +BF16 +6700 +16.0000 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok$'
        if [ "$p" = 0 ]; then
            # every BF16 and F16 bit pattern, among realistic weights, through the exponent coder
            # (with a palette nearly every group of 64 holds an outside exponent: stored otherwise)
            echo "$output" | grep -E '^bf16.every_pattern +BF16 +327680 +16.0000 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok$'
            echo "$output" | grep -E '^f16.every_pattern +F16 +327680 +16.0000 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +ok$'
        fi
        "$BIN/unbundle" "$T/fl$p.bundle" | cmp - "$T/fl.gguf"
    done
}

@test "pipelines/unweight --dist: the dist bundle (9.3803 b/w at palette 16) restores the model; a run without it removes it" {
    "$ROOT/pipelines/unweight" --dist "$MODELS/stories260K-bf16.gguf" "$T/u" 2> "$T/err"
    local s="$T/u/stories260K-bf16-p16"
    [ "$(cat "$T/err")" = "unweight: $s.bundle and .dist.bundle: GGUF 16.4232 b/w, bundle 10.3117 b/w, dist bundle 9.3803 b/w, lossless (palette 16)" ]
    # tests/bitrates.tsv's values
    grep -q "$(printf '^stories260K-bf16\tlossless_p16.dist\t9.3803$')" "$ROOT/tests/bitrates.tsv"
    [ "$(grep -c '^GGUF ' "$s.report")" -eq 1 ]
    grep -q "^dist: GGUF 16.4232 b/w, bundle 9.3803 b/w" "$s.report"
    "$ROOT/bin/unbundle" "$s.dist.bundle" | cmp - "$MODELS/stories260K-bf16.gguf"
    # 9.3803 b/w of 292,800 weights: within the rounding of the 4th decimal
    local n
    n=$(wc -c < "$s.dist.bundle")
    [ "$n" -ge 343300 ]
    [ "$n" -le 343330 ]
    [ "$n" -lt "$(zstd -19 -q -c "$MODELS/stories260K-bf16.gguf" | wc -c)" ]
    cp "$s.dist.bundle" "$T/first.dist.bundle"
    # a run without --dist keeps the dist bundle that restores MODEL, else removes it, said
    run --separate-stderr "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u"
    [ "$status" -eq 0 ]
    [[ "$stderr" != *removed* ]]
    cmp "$s.dist.bundle" "$T/first.dist.bundle"
    mkdir "$T/other"
    cp "$MODELS/stories260K-f16.gguf" "$T/other/stories260K-bf16.gguf"   # another model, the same name
    run --separate-stderr "$ROOT/pipelines/unweight" "$T/other/stories260K-bf16.gguf" "$T/u"
    [ "$status" -eq 0 ]
    [ "${stderr##*$'\n'}" = "unweight: removed the earlier $s.dist.bundle (it does not restore this MODEL; --dist makes it again)" ]
    [ "$(ls "$T/u")" = "stories260K-bf16-p16.bundle
stories260K-bf16-p16.report" ]
    # an option's word elsewhere: a trailing --help made a folder of that name, ran, exit 0
    for a in --help -h --palette --; do
        run --separate-stderr "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/o5" $a
        [ "$status" -eq 2 ]
        [ "$stderr" = "unweight: $a: not an option here (--dist goes anywhere, --help and --version first; PALETTE is the third argument; WPACK_THREADS=N sets the threads; a path: ./$a)" ]
    done
    [ ! -e "$T/o5" ]
    # --dist anywhere (given last, it was a PALETTE: "palette '--dist': expected 0 to 16")
    "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u" 16 --dist 2> /dev/null
    cmp "$s.dist.bundle" "$T/first.dist.bundle"
    # an output's name that is a directory, before any work (mv put the file inside it)
    rm "$s.dist.bundle"
    mkdir "$s.dist.bundle"
    run --separate-stderr "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u" --dist
    [ "$status" -eq 1 ]
    [ "$stderr" = "unweight: $s.dist.bundle: a directory where an output goes (move it away)" ]
    [ -z "$(ls -A "$s.dist.bundle")" ]
    rmdir "$s.dist.bundle"
    # a write-protected output is not replaced, as -o refuses it, and a file at the .dist.bundle's
    # name that is no bundle is not removed (mv replaced a 0444 bundle, root or not: a breaker's find)
    cp "$s.bundle" "$T/b444"
    chmod 444 "$s.bundle"
    run --separate-stderr "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u"
    [ "$status" -eq 1 ]
    [ "$stderr" = "unweight: $s.bundle: write-protected: not replaced (make it writable, or remove it, first)" ]
    cmp "$s.bundle" "$T/b444"
    chmod 644 "$s.bundle"
    echo mine > "$s.dist.bundle"
    run --separate-stderr "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u"
    [ "$status" -eq 1 ]
    [ "$stderr" = "unweight: $s.dist.bundle: not a bundle, at the name of an output this run replaces or removes (move it away)" ]
    [ "$(cat "$s.dist.bundle")" = mine ]
    rm "$s.dist.bundle"
    # a zstd'd GGUF went through the whole pipeline, then verify refused it: said first
    zstd -q -c "$MODELS/stories260K-bf16.gguf" > "$T/m.gguf.zst"
    run --separate-stderr "$ROOT/pipelines/unweight" --dist "$T/m.gguf.zst" "$T/z"
    [ "$status" -eq 1 ]
    [ "$stderr" = "unweight: $T/m.gguf.zst: a zstd file, not a GGUF model (a compressed GGUF: zstd -d it first; a --dist bundle: unbundle writes its GGUF)" ]
    [ ! -e "$T/z" ]
    # a quantized GGUF goes through as it is (unweight(1)): RTN Q8_0, llama-quantize's very file
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --rtn --ftype Q8_0 | "$BIN/ggufpack" > "$T/llama-Q8_0.gguf"
    "$ROOT/pipelines/unweight" --dist "$T/llama-Q8_0.gguf" "$T/q" 2> "$T/err"
    [ "$(cat "$T/err")" = "unweight: $T/q/llama-Q8_0-p16.bundle and .dist.bundle: GGUF 10.3580 b/w, bundle 8.5869 b/w, dist bundle 8.2068 b/w, lossless (palette 16)" ]
}

@test "pipelines/unweight: a failed run keeps the earlier bundle and report and says why on stderr" {
    "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u"
    cp "$T/u/stories260K-bf16-p16.report" "$T/good.report"
    cp "$T/u/stories260K-bf16-p16.bundle" "$T/good.bundle"
    # the report held only the error, and a missing model gave four lines (a new user's trial)
    run "$ROOT/pipelines/unweight" "$T/none.gguf" "$T/u"
    one_line_error "^unweight: $T/none.gguf: not a readable file$"
    # empty names and an empty PALETTE, given, said so (": not a readable file"; '' was palette 16)
    run "$ROOT/pipelines/unweight" "" "$T/u"
    one_line_error "^unweight: an empty MODEL$"
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" ""
    one_line_error "^unweight: an empty OUTDIR$"
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u" ""
    [ "$status" -eq 2 ]
    [ "$output" = "unweight: palette '': expected 0 to 16" ]
    # an OUTDIR that takes no files (read-only; /proc/self even for root): one line, where
    # huffbuild and laneinterleave added two "truncated stream" lines (a review)
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" /proc/self
    one_line_error "^unweight: /proc/self: cannot write files there \\(permissions, a full disk, or a file-size limit: ulimit -f\\)$"
    # an OUTDIR that is a file: mkdir's bare "cannot create directory ...: File exists" (a fresh
    # user's trial)
    : > "$T/f"
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/f"
    one_line_error "^unweight: $T/f: not a directory$"
    # one under a file: with mkdir's reason, as lazyweights says it (it said "cannot make this
    # directory" alone: a fresh user's find)
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/f/sub"
    [ "$status" -eq 1 ]
    [ "$output" = "unweight: $T/f/sub: cannot make this directory: Not a directory" ]
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u" 17
    one_line_error "^unweight: palette '17': expected 0 to 16$"
    # OUTDIR and PALETTE swapped said "palette '.../u': expected 0 to 16" (a new user's trial)
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" 16 "$T/u"
    [ "$status" -eq 2 ]
    [ "$output" = "unweight: OUTDIR comes before PALETTE: $ROOT/pipelines/unweight $MODELS/stories260K-bf16.gguf $T/u 16" ]
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" 0 "$T/u" --dist
    [ "$output" = "unweight: OUTDIR comes before PALETTE: $ROOT/pipelines/unweight --dist $MODELS/stories260K-bf16.gguf $T/u 0" ]
    [ ! -e "$T/u/stories260K-bf16-p0.bundle" ]
    # MODEL and OUTDIR swapped (it said ".../u: not a readable file": a fresh user's check)
    run --separate-stderr "$ROOT/pipelines/unweight" "$T/sw" "$MODELS/stories260K-bf16.gguf" 8
    [ "$status" -eq 2 ]
    [ "$stderr" = "unweight: MODEL comes first, then OUTDIR: $ROOT/pipelines/unweight $MODELS/stories260K-bf16.gguf $T/sw 8" ]
    [ ! -e "$T/sw" ]
    mkdir "$T/sw"
    run --separate-stderr "$ROOT/pipelines/unweight" --dist "$T/sw" "$MODELS/stories260K-bf16.gguf"
    [ "$stderr" = "unweight: MODEL comes first, then OUTDIR: $ROOT/pipelines/unweight --dist $MODELS/stories260K-bf16.gguf $T/sw" ]
    [ -z "$(ls -A "$T/sw")" ]
    # a file there that is no GGUF is no swap (a breaker's find)
    printf 'text\n' > "$T/t.txt"
    run --separate-stderr "$ROOT/pipelines/unweight" "$T/sw2" "$T/t.txt"
    [ "$status" -eq 1 ]
    [ "$stderr" = "unweight: $T/sw2: not a readable file" ]
    # an OUTDIR named as a file, llama-quantize's OUT (it was made a folder: a fresh user's find)
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/o/out.gguf" 16
    [ "$status" -eq 2 ]
    [ "$output" = "unweight: OUTDIR $T/o/out.gguf: named as a file; OUTDIR is the folder NAME-pP.bundle goes into (such as $T/o)" ]
    [ ! -e "$T/o" ]
    # an empty PALETTE or one that is no name is no swap (it was said one, the way on running
    # into a folder named 16: a breaker's find)
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" 16 ""
    [ "$status" -eq 2 ]
    [ "$output" = "unweight: palette '': expected 0 to 16" ]
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" 08 16x
    [ "$output" = "unweight: palette '16x': expected 0 to 16" ]
    # a fourth argument was ignored, with exit status 0 (a new user's trial)
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/x" 16 extra
    [ "$status" -eq 2 ]
    [ "$output" = "unweight: too many arguments (got 'extra' too)
usage: unweight [--dist] MODEL OUTDIR [PALETTE]" ]
    [ ! -e "$T/x" ]
    run "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf"
    [ "$status" -eq 2 ]
    [ "${lines[0]}" = "unweight: missing OUTDIR" ]
    # a leading zero is the same palette, in the same files (they were named -p016)
    "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/z" 016
    [ "$(ls "$T/z")" = "stories260K-bf16-p16.bundle
stories260K-bf16-p16.report" ]
    cmp "$T/z/stories260K-bf16-p16.bundle" "$T/good.bundle"
    head -c 300000 "$MODELS/stories260K-bf16.gguf" > "$T/u/stories260K-bf16.gguf"
    run "$ROOT/pipelines/unweight" "$T/u/stories260K-bf16.gguf" "$T/u"
    one_line_error "^ggufcat: $T/u/stories260K-bf16.gguf: tensor 'blk.1.ffn_down.weight': data at offset"
    cmp "$T/u/stories260K-bf16-p16.report" "$T/good.report"
    cmp "$T/u/stories260K-bf16-p16.bundle" "$T/good.bundle"
    [ -z "$(ls -A "$T/u" | grep tmp)" ]
}

@test "pipelines/unweight: a killed run's temporary files (SIGKILL) are removed by the next, said" {
    # no trap removes them after a SIGKILL (a CI runner's timeout): they piled up (a CI
    # maintainer's trial); a running one's (this test's shell's PID) stay
    mkdir -p "$T/u"
    echo x > "$T/u/.stories260K-bf16-p16.tmp4194999.bundle"
    echo x > "$T/u/.stories260K-bf16-p16.tmp$$.bundle"
    run --separate-stderr "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[0]}" = "unweight: removed 1 temporary file a killed run left ($T/u/.stories260K-bf16-p16.tmpPID.*)" ]
    [ "$(ls -A "$T/u" | grep tmp)" = ".stories260K-bf16-p16.tmp$$.bundle" ]
}

@test "pipelines/unweight: a file that is no GGUF or safetensors file gives ggufcat's one line and status, and leaves no OUTDIR it made" {
    # it gave ggufcat's line, then four "empty input" lines from the stages after it, and
    # left an empty OUTDIR (a new user's trial); a PyTorch .bin (a zip archive) is named (it
    # was "bad magic")
    printf 'PK\003\004%0100d' 0 > "$T/pytorch_model.bin"
    run "$ROOT/pipelines/unweight" "$T/pytorch_model.bin" "$T/new/out"
    [ "$status" -eq 1 ]
    [ "$output" = "ggufcat: $T/pytorch_model.bin: not a GGUF file (a zip archive: unzip it, or if it is a PyTorch .bin, convert that to safetensors or GGUF)" ]
    [ ! -e "$T/new" ]
    # an OUTDIR that was there is kept, with nothing left in it
    mkdir "$T/had"
    run "$ROOT/pipelines/unweight" "$T/pytorch_model.bin" "$T/had"
    [ "$status" -eq 1 ]
    [ "$output" = "ggufcat: $T/pytorch_model.bin: not a GGUF file (a zip archive: unzip it, or if it is a PyTorch .bin, convert that to safetensors or GGUF)" ]
    [ -d "$T/had" ]
    [ -z "$(ls -A "$T/had")" ]
    # a gzip'd GGUF is named (it was "bad magic", where hessian names one: a breaker's find)
    gzip -c "$MODELS/stories260K-bf16.gguf" > "$T/m.gguf.gz"
    run "$ROOT/bin/ggufcat" "$T/m.gguf.gz"
    [ "$status" -eq 1 ]
    [ "$output" = "ggufcat: $T/m.gguf.gz: not a GGUF file (a gzip file: gunzip it first)" ]
    # an OUTDIR through .. : every folder it made removed (nx stayed: the walk up stopped at
    # nx/.., which rmdir cannot remove; a breaker's find)
    run "$ROOT/pipelines/unweight" "$T/pytorch_model.bin" "$T/nx/../ny"
    [ "$status" -eq 1 ]
    [ ! -e "$T/nx" ]
    [ ! -e "$T/ny" ]
}

@test "pipelines/unweight and lazyweights under a file-size limit: one line, OUTDIR gone (SIGXFSZ killed lazyweights silently)" {
    # lazyweights died of SIGXFSZ at its own write of the Hessians' .id, saying nothing, the
    # .id and OUTDIR left; unweight said five "echo: write error" lines (a re-tester's finds);
    # stderr through a pipe, which the limit does not stop
    cd "$T"
    run bash -c "ulimit -f 0; '$ROOT/pipelines/lazyweights' '$MODELS/stories260K-f16.gguf' Q4_K_M_g1_lam0_c1.25 x/y '$DATA/text/tinystories_sample.txt' 2>&1 | cat; exit \${PIPESTATUS[0]}"
    [ "$status" -eq 2 ]
    [ "$output" = "lazyweights: x/y/stories260K-f16-tinystories_sample-k8.hess.id: write error (a full disk, or a file-size limit: ulimit -f)" ]
    [ ! -e x ]
    run bash -c "ulimit -f 0; '$ROOT/pipelines/unweight' '$MODELS/stories260K-bf16.gguf' u 2>&1 | cat; exit \${PIPESTATUS[0]}"
    [ "$status" -eq 1 ]
    [ "$output" = "unweight: u: cannot write files there (permissions, a full disk, or a file-size limit: ulimit -f)" ]
    [ ! -e u ]
    # a limit the Hessians' .id passes: hessian's own line, before its passes, OUTDIR gone (it
    # said "write error: File too large" after them)
    run bash -c "ulimit -f 4; '$ROOT/pipelines/lazyweights' '$MODELS/stories260K-f16.gguf' Q4_K_M_g1_lam0_c1.25 x/y '$DATA/text/tinystories_sample.txt' 2>&1 | cat; exit \${PIPESTATUS[0]}"
    [ "$status" -eq 1 ]
    [ "${lines[-1]}" = "hessian: x/y/stories260K-f16-tinystories_sample-k8.hess: no room for the Hessians: 1.6 MiB needed, 4.0 KiB allowed by ulimit -f" ]
    [ "$(printf '%s\n' "$output" | grep -c '^hessian: pass')" -eq 0 ]
    [ ! -e x ]
}

@test "pipelines/unweight and lazyweights: a WPACK_BIN without their programs is one line, before anything is made" {
    # bash's "line 61: /nonexist/ggufcat: No such file or directory", exit 127 (a re-tester's find);
    # lazyweights checked gptq alone (a reviewer's find)
    run --separate-stderr env WPACK_BIN="$T/nonexist" "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/o"
    [ "$status" -eq 1 ]
    [ "$stderr" = "unweight: $T/nonexist/ggufcat: no such program (make all; or WPACK_BIN)" ]
    [ ! -e "$T/o" ]
    mkdir "$T/part"
    for p in ggufcat gptq; do ln -s "$BIN/$p" "$T/part/$p"; done
    run --separate-stderr env WPACK_BIN="$T/part" "$ROOT/pipelines/lazyweights" "$MODELS/stories260K-f32.gguf" Q8_0_g0_lam0_c1 "$T/o"
    [ "$status" -eq 2 ]
    [ "$stderr" = "lazyweights: $T/part/ggufpack: no such program (make all; or WPACK_BIN)" ]
    [ ! -e "$T/o" ]
    # --check alike (it said "gptq is not built (make all)", which an installed copy cannot do)
    run --separate-stderr env WPACK_BIN="$T/nonexist" "$ROOT/pipelines/lazyweights" --check Q8_0_g0_lam0_c1
    [ "$status" -eq 2 ]
    [ "$output" = "$T/nonexist/gptq: no such program (make all; or WPACK_BIN)" ]
}

@test "pipelines/unweight: a MODEL or OUTDIR whose name starts with - is a file, not an option" {
    # ggufcat and basename took -m.gguf for an option, mkdir -o (exit 1, "invalid option")
    cd "$T"
    cp "$MODELS/stories260K-bf16.gguf" ./-m.gguf
    run "$ROOT/pipelines/unweight" -m.gguf -o
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ "$(ls -A ./-o | tr '\n' ' ')" = "-m-p16.bundle -m-p16.report " ]
    "$BIN/unbundle" ./-o/-m-p16.bundle | cmp - ./-m.gguf
}

@test "pipelines/unweight: a TERM to the script alone ends every process of its pipeline at once, and its cleanup runs" {
    # bash ran the trap only after the foreground pipeline ended (as lazyweights did for hessian:
    # a fresh user's find); each stage's status still reaches the report of a failure
    local bins="$T/bins" w="$T"
    mkdir "$bins"
    for p in ggufcat histogram huffbuild laneinterleave unbundle verify; do ln -s "$BIN/$p" "$bins/$p"; done
    printf '#!/bin/sh\necho $$ > %s/b.pid; exec sleep 60\n' "$w" > "$bins/bf16split"
    chmod +x "$bins/bf16split"
    cp "$MODELS/stories260K-bf16.gguf" "$w/u.gguf"   # a path no other test's ggufcat has
    # a HUP (a closed terminal) as a TERM: it ended the script alone, the pipeline ran on and
    # left its temporary files (a breaker's find)
    local sig pid rc t0
    for sig in TERM:143 HUP:129; do
        rm -f "$w/b.pid"
        WPACK_BIN="$bins" "$ROOT/pipelines/unweight" "$w/u.gguf" "$w/new/out" > /dev/null 2>&1 3>&- &
        pid=$! rc=0
        for i in $(seq 600); do [ -s "$w/b.pid" ] && break; sleep 0.1; done
        [ -s "$w/b.pid" ]
        # ggufcat, blocked on the pipe the fake bf16split does not read, waited for as the fake
        # is: the stages fork in order but exec when scheduled (a helper saw this test fail once
        # under a load of 10-15, its line not kept; a ggufcat not yet exec'd would do that)
        for i in $(seq 600); do pgrep -f "ggufcat $w/u.gguf" > /dev/null && break; sleep 0.1; done
        pgrep -f "ggufcat $w/u.gguf"
        t0=$SECONDS
        kill -"${sig%:*}" "$pid"
        wait "$pid" || rc=$?
        [ "$rc" -eq "${sig#*:}" ]
        [ $((SECONDS - t0)) -lt 30 ]   # it waited for the pipeline, 60 s
        gone "$(cat "$w/b.pid")"
        gone "$(pgrep -f "ggufcat $w/u.gguf" || echo 0)"
        [ ! -e "$w/new" ]   # the OUTDIR it made, removed
    done
    # a stage that fails is still the one named, with its status
    printf '#!/bin/sh\necho "bf16split: stdin: it broke" >&2; exit 7\n' > "$bins/bf16split"
    run env WPACK_BIN="$bins" "$ROOT/pipelines/unweight" "$w/u.gguf" "$w/new/out"
    [ "$status" -eq 7 ]
    [ "$output" = "bf16split: stdin: it broke" ]
    [ ! -e "$w/new" ]
}

@test "pipelines/jobs.sh: no command substitution while the signal traps are set, and both pipelines source it" {
    # bash 5.2 runs a trap that lands while it reads a $(...) inside that parse and fails the
    # trap's own: "trap: line 2: unexpected EOF while looking for matching ')'", exit 2, the
    # running job left to finish (a re-tester saw it in about 40 % of runs at 0.28-0.40 s; 13 of
    # 400 HUPs at random times under load, after su=$(cat ...) in unweight)
    local f body
    for f in stop_jobs rm_made wait_job; do
        body=$(bash -c '. "$1" && declare -f "$2"' _ "$ROOT/pipelines/jobs.sh" "$f")
        [[ $body == "$f ()"* ]]
        [[ $body != *'$('* ]] || { echo "$body"; false; }
        [[ $body != *'`'* ]] || { echo "$body"; false; }
    done
    # job control comes on with the traps, not when the file is sourced: on during the checks, a
    # Ctrl-C inside a $(...) left the subshell re-raising INT for good (a fresh user's find)
    [ "$(bash -c '. "$1" && echo "$-" && trap_signals && echo "$-"' _ "$ROOT/pipelines/jobs.sh" | tr -cd 'm\n')" = "
m" ]
    [ "$(bash -c '. "$1" && trap_signals && trap -p INT TERM HUP' _ "$ROOT/pipelines/jobs.sh")" = "trap -- 'stop_jobs; exit 130' SIGINT
trap -- 'stop_jobs; exit 143' SIGTERM
trap -- 'stop_jobs; exit 129' SIGHUP" ]
    # a copy of a script alone, away from jobs.sh, says so in one line (it was bash's "line 19: ...")
    mkdir -p "$T/alone/bin"
    local a
    a=$(cd "$T/alone" && pwd -P)   # (the script names its folder with links resolved)
    for f in lazyweights unweight; do
        cp "$ROOT/pipelines/$f" "$T/alone/bin/"
        run --separate-stderr "$T/alone/bin/$f" a b c
        [ "$status" -eq 1 ]
        [ "$stderr" = "$f: no jobs.sh in $a/lib/wpack or $a/bin (the script runs from make install's PREFIX/bin, or from the source tree's pipelines/)" ]
    done
    for f in lazyweights unweight; do
        grep -q '^\. "\$jobs_sh"$' "$ROOT/pipelines/$f"
        # the two pipelines carried a copy each of these: now one, sourced
        if grep -qE '^(stop_jobs|wait_job|rm_made)\(\)' "$ROOT/pipelines/$f"; then false; fi
        # from trap_signals to the last moves (the traps ignored), no $(...) or backquote outside comments
        [ "$(grep -c '^trap_signals' "$ROOT/pipelines/$f")" -eq 1 ]
        [ "$(grep -c "^trap '' INT TERM HUP\$" "$ROOT/pipelines/$f")" -eq 1 ]
        run awk '/^trap_signals/ { on = 1 } /^trap .. INT TERM HUP$/ { on = 0 }
                 { line = $0; sub(/(^|[ \t])#.*/, "", line) }
                 on && (line ~ /\$\(/ || line ~ /`/) { print FILENAME ":" FNR ": " $0 }' "$ROOT/pipelines/$f"
        [ "$status" -eq 0 ]
        [ -z "$output" ] || { echo "$output"; false; }
    done
}

@test "pipelines/unweight: a run that works says what it made in one line; unbundle's warnings of MODEL only when its check fails" {
    # it said nothing, or, for a GGUF with long tensor names, only "unbundle: warning: ..." from a
    # step the user never ran (a fresh user's find)
    run --separate-stderr "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/u" 0
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    [ "$stderr" = "unweight: $T/u/stories260K-bf16-p0.bundle: GGUF 16.4232 b/w, bundle 10.3008 b/w, lossless (palette 0)" ]
    # through a link in another folder, as a user's ~/bin holds one (it ran that folder's
    # ../bin/ggufcat: exit 127, a bash line; a fresh user's find); lazyweights alike
    mkdir "$T/lbin"
    ln -s "$ROOT/pipelines/unweight" "$T/lbin/unweight"
    ln -s "$ROOT/pipelines/lazyweights" "$T/lbin/lazyweights"
    run --separate-stderr "$T/lbin/unweight" "$MODELS/stories260K-bf16.gguf" "$T/ul" 0
    [ "$status" -eq 0 ]
    [ "$stderr" = "unweight: $T/ul/stories260K-bf16-p0.bundle: GGUF 16.4232 b/w, bundle 10.3008 b/w, lossless (palette 0)" ]
    run "$T/lbin/lazyweights" --check Q8_0_g0_lam0_c1 "$MODELS/stories260K-f32.gguf"
    [ "$status" -eq 0 ]
    local bins="$T/bins"
    mkdir "$bins"
    for p in ggufcat bf16split histogram huffbuild laneinterleave verify; do ln -s "$BIN/$p" "$bins/$p"; done
    printf '#!/bin/sh\necho "unbundle: warning: names" >&2; exec %s "$@"\n' "$BIN/unbundle" > "$bins/unbundle"
    chmod +x "$bins/unbundle"
    run --separate-stderr env WPACK_BIN="$bins" "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/v"
    [ "$status" -eq 0 ]
    [ "$stderr" = "unweight: $T/v/stories260K-bf16-p16.bundle: GGUF 16.4232 b/w, bundle 10.3117 b/w, lossless (palette 16)" ]
    # unweight through a fake unbundle (its script's body, BODY) fails, exit 1, saying what
    # matches the glob GLOB, and leaves no OUTDIR: with_unbundle BODY GLOB
    with_unbundle() {
        printf '#!/bin/sh\n%s\n' "$1" > "$bins/unbundle"
        run --separate-stderr env WPACK_BIN="$bins" "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/w"
        [ "$status" -eq 1 ]
        [[ "$stderr" == $2 ]]
        [ ! -e "$T/w" ]
    }
    # a check that fails shows them, and fails (the status was the last command's, 0, where tested)
    with_unbundle 'echo "unbundle: warning: names" >&2; echo "unbundle: it broke" >&2; exit 3' \
        "$(printf 'unbundle: warning: names\nunbundle: it broke')"
    # and a bundle that restores other bytes is named so (cmp's line given): fewer bytes, or as
    # many with one changed, where cmp stops at it and unbundle dies of SIGPIPE, silent (that
    # exited 1 with no line at all: a review)
    local no="unweight: the bundle does not restore $MODELS/stories260K-bf16.gguf byte for byte"
    with_unbundle "$BIN/unbundle \"\$@\" | head -c 1000" "$no (cmp: EOF on - after byte 1000, in line 1)"
    with_unbundle "$BIN/unbundle \"\$@\" > $T/full; head -c 100 $T/full; printf '~'; tail -c +102 $T/full" \
        "$no (- $MODELS/stories260K-bf16.gguf differ: byte 101, line *)"
    # the same where unbundle warned first (of the model's tensor names): the warning hid cmp's
    # line, the SIGPIPE'd unbundle taken for a failed one (a review)
    with_unbundle "echo 'unbundle: warning: names' >&2; $BIN/unbundle \"\$@\" > $T/full; head -c 100 $T/full; printf '~'; tail -c +102 $T/full" \
        "$no (- $MODELS/stories260K-bf16.gguf differ: byte 101, line *)"
    # an unbundle that fails after its last byte fails the check (its status was lost: pipefail
    # took cmp's, 0)
    with_unbundle "$BIN/unbundle \"\$@\"; echo 'unbundle: late' >&2; exit 4" "unbundle: late"
}

@test "pipelines/unweight: a TERM at any moment of its start ends it (it hung for good when one came while bash was starting the pipeline)" {
    # a fresh user's find, about 1 run in 16 at 50 ms: exit waited for stages blocked on a pipe
    # this shell held; 30 runs at 10-100 ms catch it most times, and never hang after the fix
    local i d rc
    for i in $(seq 30); do
        d=0.0$((i % 10))5
        rm -rf "$T/st"
        rc=0
        timeout -s KILL 30 timeout -s TERM "$d" "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/st" \
            > /dev/null 2>&1 3>&- || rc=$?
        [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || { echo "run $i, TERM at $d s: exit $rc"; false; }
        # interrupted: the OUTDIR it made removed; or, a TERM that came during the last moves
        # (ignored there: the run takes about 50 ms), the whole result in place (the CIs of
        # 8ee6802 and 2f3bfcb: "left .../st: stories260K-bf16-p16.bundle stories260K-bf16-p16.report")
        if [ "$rc" -eq 124 ] && [ -e "$T/st" ]; then
            [ "$(ls -A "$T/st" | tr '\n' ' ')" = "stories260K-bf16-p16.bundle stories260K-bf16-p16.report " ] ||
                { echo "run $i, TERM at $d s: left $T/st: $(ls -A "$T/st")"; false; }
            "$BIN/unbundle" "$T/st/stories260K-bf16-p16.bundle" | cmp - "$MODELS/stories260K-bf16.gguf"
        fi
    done
}

@test "bf16split: the verbatim warning's bound is more than 5 % of the row groups, counted G weights a group (a mutation test's find)" {
    # one BF16 matrix of 1.0s but for one 2.0 (exponent 128), --palette 1: one verbatim group
    "$BIN/ggufcat" -o "$T/b.wps" "$MODELS/stories260K-bf16.gguf"
    m() { # ROWS OUT
        stream_edit "$T/b.wps" "$2" "
import struct
t = [r for r in recs if r.name == 'blk.0.attn_q.weight'][0]
t.ne[1] = $1
t.payload = bytearray(struct.pack('<H', 0x4000) + struct.pack('<H', 0x3f80) * (64 * $1 - 1))
recs[:] = [t]"
    }
    m 20 "$T/r20.wps"
    m 19 "$T/r19.wps"
    m 10 "$T/r10.wps"
    # 1 of 20 groups: 5 %, not more, and nothing said
    run --separate-stderr "$BIN/bf16split" --palette 1 -o "$T/s.wps" "$T/r20.wps"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    # 1 of 19: 5.3 %
    run --separate-stderr "$BIN/bf16split" --palette 1 -o "$T/s.wps" "$T/r19.wps"
    [ "$status" -eq 0 ]
    [ "$stderr" = "bf16split: warning: $T/r19.wps: 5.3% of the row groups are stored verbatim (an exponent outside the 1-entry palette): --palette 16, or 0, codes them" ]
    # 10 rows of two 32-weight groups: 1 of 20 again, nothing said; of one 64-weight group: 1 of 10
    run --separate-stderr "$BIN/bf16split" --palette 1 --row 32 -o "$T/s.wps" "$T/r10.wps"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    run --separate-stderr "$BIN/bf16split" --palette 1 -o "$T/s.wps" "$T/r10.wps"
    [ "$status" -eq 0 ]
    [ "$stderr" = "bf16split: warning: $T/r10.wps: 10.0% of the row groups are stored verbatim (an exponent outside the 1-entry palette): --palette 16, or 0, codes them" ]
    # and it round-trips (the same records: only the index's zstd frame is made otherwise)
    "$BIN/bf16split" --palette 1 "$T/r19.wps" 2> /dev/null | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" |
        "$BIN/unbundle" --stream -o "$T/back.wps"
    diff <("$BIN/tsinfo" -a -x "$T/r19.wps") <("$BIN/tsinfo" -a -x "$T/back.wps")
}

@test "bad input: bf16split refuses histogram's and huffbuild's output in one line, nothing written (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/histogram" > "$T/h.wps"
    "$BIN/huffbuild" -o "$T/t.wps" "$T/h.wps"
    fails_saying "bf16split: $T/h.wps: record 'token_embd.weight' (raw) is the coding pipeline's output: bf16split takes a tensor stream" \
        "$BIN/bf16split" -o "$T/o.wps" "$T/h.wps"
    [ ! -e "$T/o.wps" ]
    # huffbuild's hist and table records alone
    stream_edit "$T/t.wps" "$T/hist.wps" "
recs[:] = [r for r in recs if r.kind in (5, 6)]
assert recs[0].name == 'token_embd.weight' and recs[0].kind == 5"
    fails_saying "bf16split: $T/hist.wps: record 'token_embd.weight' (hist) is the coding pipeline's output: bf16split takes a tensor stream" \
        "$BIN/bf16split" -o "$T/o.wps" "$T/hist.wps"
    [ ! -e "$T/o.wps" ]
}
