#!/usr/bin/env bats
# histogram | huffbuild | laneinterleave, verify, unbundle: the coded bundle
# on llama.cpp's own quantized stories260K files and on synthetic matrices.
bats_require_minimum_version 1.5.0
load helpers

QUANTIZE="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin/llama-quantize"
TYPES="Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 IQ4_NL Q4_K_M Q6_K IQ4_XS"

setup_file() {
    export Q="$BATS_FILE_TMPDIR"
    if [ -x "$QUANTIZE" ]; then
        for t in $TYPES; do
            "$QUANTIZE" "$MODELS/stories260K-f32.gguf" "$Q/s-$t.gguf" "$t" 1 >/dev/null 2>&1
        done
    fi
    "$TOOLS/mksynth" "$Q/syn.gguf" small
}

setup() {
    T="$BATS_TEST_TMPDIR"
}

bundle() { # GGUF BUNDLE [histogram options]
    local g=$1 b=$2; shift 2
    "$BIN/ggufcat" "$g" | "$BIN/histogram" "$@" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" > "$b"
}

@test "stories260K quantized by llama-quantize: every type round-trips bit-exactly through the bundle" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    for t in $TYPES; do
        bundle "$Q/s-$t.gguf" "$T/$t.bundle"
        run "$BIN/verify" "$Q/s-$t.gguf" "$T/$t.bundle"
        [ "$status" -eq 0 ] || { echo "$t: $output"; false; }
        echo "$output" | grep -q '^rebuilt GGUF byte-identical: every tensor matches with both decoders$'
        "$BIN/unbundle" "$T/$t.bundle" | cmp - "$Q/s-$t.gguf"
    done
}

@test "unbundle --stream gives back the coded stream byte for byte, fixed-width matrices too" {
    # a matrix the bundle keeps fixed-width came back with laneinterleave's stored=fixed
    # attribute, so the restored stream differed from the input (a new user's trial)
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q5_0 --rtn > "$T/q.wts"
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" > "$T/q.bundle"
    [ "$("$BIN/tsinfo" -a "$T/q.bundle" | grep -c 'stored=fixed')" -gt 0 ]
    "$BIN/unbundle" --stream "$T/q.bundle" | cmp - "$T/q.wts"
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" --dist > "$T/q.dist"
    "$BIN/unbundle" --stream "$T/q.dist" | cmp - "$T/q.wts"
}

@test "synthetic matrices of every coded type and shape round-trip bit-exactly" {
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    run "$BIN/verify" "$Q/syn.gguf" "$T/syn.bundle"
    [ "$status" -eq 0 ]
    # one "ok" line per matrix: every tensor of the file
    n=$("$BIN/ggufcat" "$Q/syn.gguf" | "$BIN/tsinfo" | grep -c '^tensor ')
    [ "$n" -ge 100 ]
    [ "$(echo "$output" | grep -cE ' ok( |$)')" -eq "$n" ]
    "$BIN/unbundle" -o "$T/again.gguf" "$T/syn.bundle"
    cmp "$T/again.gguf" "$Q/syn.gguf"
    "$BIN/unbundle" --reference "$T/syn.bundle" | cmp - "$Q/syn.gguf"
}

@test "a one-symbol matrix codes at 1 bit per symbol plus its side data" {
    bundle "$Q/syn.gguf" "$T/syn.bundle" --no-rowmap
    run "$BIN/verify" "$Q/syn.gguf" "$T/syn.bundle"
    [ "$status" -eq 0 ]
    # Q4_0, 64x256: 0.5 b/w of pair codes + 0.5 b/w of d + 0.082 b/w of its table and offsets
    # (the line is printed for a matrix that differs too: it passed so, a reviewer's find)
    echo "$output" | grep -qE '^one_symbol\.Q4_0 +Q4_0 +16384 +4\.5000 +1\.0820 +0\.5000 +0\.0820 +0\.0000  ok$'
}

@test "histogram --report: entropy of llama.cpp's Q4_0 stories260K codes" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    run sh -c "'$BIN/ggufcat' '$Q/s-Q4_0.gguf' | '$BIN/histogram' --no-rowmap --no-float --report 2>&1 >/dev/null"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^token_embd.weight +Q4_0 +32768 +16384 +6.7758 +3.3879 +4.00 +0.5000 +4.5000$'
    echo "$output" | grep -E '^total: 292800 weights, 237056 in quantized matrices; tensors 7.1755 b/w as stored; entropy bound 6.8812 b/w'
    # with its row map, a matrix's line says its numbers are its distinct rows' (a fresh user
    # read token_embd's 22080 weights for its 32768)
    run sh -c "'$BIN/ggufcat' '$Q/s-Q4_0.gguf' | '$BIN/histogram' --no-float --report 2>&1 >/dev/null"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^token_embd.weight +Q4_0 +22080 +11040 .*  \(row map: 345 distinct rows of 512\)$'
}

@test "histogram --report: the same total after bf16split as without it (Q4_K_M's F16 matrices counted)" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    # bf16split's matrices were left out of the total: 237760 weights, 6.0436 b/w as stored and a
    # bound of 4.6162 (a fresh user's find, through pipelines/unweight's report)
    local total='total: 292800 weights, 215872 in quantized matrices, 55040 exponent-coded; tensors 7.9152 b/w as stored; entropy bound 6.7561 b/w (order 0: codes at H, exponents one at a time at raw bits + H, side data and other tensors as stored; a tensor'"'"'s repeated rows once, a tensor repeating another again)'
    run sh -c "'$BIN/ggufcat' '$Q/s-Q4_K_M.gguf' | '$BIN/histogram' --report 2>&1 >/dev/null"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "$total" ]
    run sh -c "'$BIN/ggufcat' '$Q/s-Q4_K_M.gguf' | '$BIN/bf16split' | '$BIN/histogram' --report 2>&1 >/dev/null"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "$total" ]
}

@test "the bundle stores the GGUF metadata and uncoded tensors too (tsinfo)" {
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    run "$BIN/tsinfo" "$T/syn.bundle"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^coded ')" -ge 20 ]
    [ "$(echo "$output" | grep -c '^side ')" -eq "$(echo "$output" | grep -c '^coded ')" ]
    ! echo "$output" | grep -qE '^(hist|table|symbols) ' || false
}

@test "tsinfo counts every weight a rowmapped matrix restores, not its distinct rows only" {
    # the rowmaps are zstd'd in the bundle and tsinfo missed them: stories260K's token_embd and
    # output counted 22080 and 22848 of their 32768 weights, 271616 in all instead of 292800
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q5_0 --rtn > "$T/q.wts"
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" > "$T/q.bundle"
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" --dist > "$T/q.dist"
    [ "$("$BIN/tsinfo" "$T/q.bundle" | grep -c '^zstd  *token_embd.weight  *Q5_0  *64x512 ')" -eq 1 ]   # its rowmap
    run "$BIN/tsinfo" "$T/q.bundle"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "# 59 records, 256744 payload bytes, 292800 weights in all, payloads 7.0149 b/w" ]
    run "$BIN/tsinfo" "$T/q.dist"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "# 70 records, 247196 payload bytes, 292800 weights in all, payloads 6.7540 b/w" ]
    # the synthetic matrices: every weight of the GGUF's 4207488
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    run "$BIN/tsinfo" "$T/syn.bundle"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" =~ ", 4207488 weights in all, payloads " ]]
}

@test "bad input: a truncated bundle gives one clear line" {
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    head -c 50000 "$T/syn.bundle" > "$T/cut.bundle"
    run "$BIN/unbundle" -o "$T/out.gguf" "$T/cut.bundle"
    one_line_error "^unbundle: $T/cut.bundle: truncated stream"
    [ ! -e "$T/out.gguf" ]
    run "$BIN/verify" -q "$Q/syn.gguf" "$T/cut.bundle"
    one_line_error "^verify: $T/cut.bundle: truncated stream"
}

@test "bad input: verify of standard input says it needs files (it said '-: No such file or directory')" {
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    run sh -c "'$BIN/verify' -q '$Q/syn.gguf' - < '$T/syn.bundle'"
    one_line_error "^verify: -: verify reads both files twice, so not standard input: give file names$"
    run sh -c "cat '$Q/syn.gguf' | '$BIN/verify' - '$T/syn.bundle'"
    one_line_error "^verify: -: verify reads both files twice"
}

@test "bad input: verify BUNDLE GGUF, the two swapped, says the order (it said 'not a GGUF file' alone)" {
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    run "$BIN/verify" "$T/syn.bundle" "$Q/syn.gguf"
    one_line_error "^verify: $T/syn.bundle: a bundle or stream, and $Q/syn.gguf a GGUF file: the order is verify ORIGINAL.gguf BUNDLE$"
    zstd -q -c "$T/syn.bundle" > "$T/syn.bundle.zst"
    run "$BIN/verify" "$T/syn.bundle.zst" "$Q/syn.gguf"
    one_line_error "^verify: $T/syn.bundle.zst: a bundle or stream, and $Q/syn.gguf a GGUF file: the order is"
    # two bundles: the GGUF reader's own line
    run "$BIN/verify" "$T/syn.bundle" "$T/syn.bundle"
    one_line_error "^verify: $T/syn.bundle: not a GGUF file \(a wpack stream: use ggufpack or unbundle\)$"
    # two GGUFs: said so (it was "a GGUF file: read it with ggufcat": a fresh user's nit)
    run "$BIN/verify" "$Q/syn.gguf" "$Q/syn.gguf"
    one_line_error "^verify: $Q/syn.gguf: a GGUF file, no bundle: verify checks a bundle against the GGUF it was made of \(verify ORIGINAL.gguf BUNDLE; cmp compares two GGUFs\)$"
}

@test "bad input: a flipped bit in a bundle is a checksum error for verify" {
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    cp "$T/syn.bundle" "$T/flip.bundle"
    at=$(( $(stat -c %s "$T/syn.bundle") / 3 ))
    b=$(od -An -tu1 -j "$at" -N1 "$T/syn.bundle" | tr -d ' ')
    patch_bytes "$T/flip.bundle" "$at" "$(printf '\\x%02x' $((b ^ 4)))"
    run "$BIN/verify" -q "$Q/syn.gguf" "$T/flip.bundle"
    [ "$status" -eq 1 ]
    [[ "$output" =~ (checksum mismatch|corrupt) ]]
}

@test "bad input: a flipped bit in the GGUF metadata names the kvpack record (it said record '')" {
    bundle "$MODELS/stories260K-f32.gguf" "$T/s.bundle"   # (mksynth's GGUF has no metadata)
    cp "$T/s.bundle" "$T/kv.bundle"
    # the second record's payload: the kvpack record (the GGUF's metadata, zstd'd), which has no name
    local at
    at=$(python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read()
align, off = struct.unpack_from("<I", b, 12)[0], 16
pad = lambda n: (n + align - 1) // align * align
for i in range(2):
    kind, nl, al, pl = struct.unpack_from("<H", b, off + 4)[0], struct.unpack_from("<I", b, off + 12)[0], struct.unpack_from("<I", b, off + 48)[0], struct.unpack_from("<Q", b, off + 56)[0]
    p = pad(off + 72 + nl + al + 8)
    off = pad(p + pl)
assert kind == 12 and nl == 0 and pl > 8, (kind, nl, pl)
print(p + 8)' "$T/kv.bundle")
    patch_bytes "$T/kv.bundle" "$at" "$(printf '\\x%02x' $(( $(od -An -tu1 -j "$at" -N1 "$T/kv.bundle") ^ 1 )))"
    run cmp -s "$T/s.bundle" "$T/kv.bundle"
    [ "$status" -eq 1 ]
    for c in "verify -q $MODELS/stories260K-f32.gguf" "unbundle -o $T/out.gguf" "tsinfo"; do
        set -- $c
        run --separate-stderr "$BIN/$1" "${@:2}" "$T/kv.bundle"
        [ "$status" -eq 1 ]
        [ "$stderr" = "$1: $T/kv.bundle: the kvpack record: payload checksum mismatch (corrupt data)" ]
    done
    [ ! -e "$T/out.gguf" ]
}

@test "huffbuild --max-len too short for the alphabet: its symbols need a longest code of at least 8 bits (it said 'up to')" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q5_0 --rtn | "$BIN/histogram" > "$T/q.hist"
    run "$BIN/huffbuild" --max-len 7 -o "$T/t.wps" "$T/q.hist"
    one_line_error "^huffbuild: $T/q.hist: histogram 'output.weight': 255 symbols need a longest code of at least 8 bits; --max-len 7 is too short$"
    [ ! -e "$T/t.wps" ]
    run "$BIN/huffbuild" --max-len 8 -o "$T/t.wps" "$T/q.hist"
    [ "$status" -eq 0 ]
}

@test "bad input: unbundle and verify of histogram's or huffbuild's output say it is not a bundle" {
    # unbundle --stream said "record '...': side data without its symbols" (a new user's trial)
    "$BIN/ggufcat" "$Q/syn.gguf" | "$BIN/histogram" > "$T/h.wps"
    "$BIN/huffbuild" "$T/h.wps" > "$T/t.wps"
    run sh -c "'$BIN/unbundle' --stream '$T/h.wps' > /dev/null"
    one_line_error "^unbundle: $T/h.wps: record 'Q4_0.r1x32': a hist record: not a bundle \(histogram's or huffbuild's output: laneinterleave makes the bundle\)$"
    run "$BIN/unbundle" -o "$T/x.gguf" "$T/t.wps"
    one_line_error "^unbundle: $T/t.wps: record 'Q4_0.r1x32': a hist record: not a bundle"
    [ ! -e "$T/x.gguf" ]
    run "$BIN/verify" -q "$Q/syn.gguf" "$T/t.wps"
    one_line_error "^verify: $T/t.wps: record 'Q4_0.r1x32': a hist record: not a bundle"
    # a tensor stream (ggufcat's, gptq's) passed, reported as a "bundle" of more b/w than the
    # GGUF, "saving -2.44%" (a new user's trial)
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" > "$T/s.wts"
    run "$BIN/verify" "$MODELS/stories260K-f32.gguf" "$T/s.wts"
    [ "$status" -eq 1 ]
    [ "$output" = "verify: $T/s.wts: a tensor stream, not a bundle (its key/value records are not packed: laneinterleave makes the bundle)" ]
    # cut short, its index unread: refused at its first kv record all the same (it restored every
    # tensor, then said "truncated stream": a review)
    head -c 600000 "$T/s.wts" > "$T/cut.wts"
    run "$BIN/verify" "$MODELS/stories260K-f32.gguf" "$T/cut.wts"
    [ "$status" -eq 1 ]
    [ "$output" = "verify: $T/cut.wts: a tensor stream, not a bundle (its key/value records are not packed: laneinterleave makes the bundle)" ]
    # the same of a GGUF without key/values passed, every tensor "fixed" (noticed in review): a
    # bundle has a kvpack record, empty if need be, and so is told from a plain stream
    "$BIN/ggufcat" "$Q/syn.gguf" > "$T/nokv.wts"
    run "$BIN/verify" "$Q/syn.gguf" "$T/nokv.wts"
    [ "$status" -eq 1 ]
    [ "$output" = "verify: $T/nokv.wts: a tensor stream, not a bundle (it has no kvpack, coded, zstd or ref record: laneinterleave makes the bundle)" ]
    "$BIN/laneinterleave" "$T/nokv.wts" > "$T/nokv.bundle" 2> /dev/null
    [ "$("$BIN/tsinfo" "$T/nokv.bundle" | awk 'NR == 3 { print $1 }')" = kvpack ]
    run "$BIN/verify" -q "$Q/syn.gguf" "$T/nokv.bundle"
    [ "$status" -eq 0 ]
    "$BIN/unbundle" "$T/nokv.bundle" | cmp - "$Q/syn.gguf"
    # a GGUF with neither key/values nor tensors: its bundle verifies, without b/w (it said
    # "GGUF inf b/w, bundle inf b/w (saving -nan%)": a review)
    { printf 'GGUF\003\0\0\0'; head -c 24 /dev/zero; } > "$T/e.gguf"
    "$BIN/ggufcat" "$T/e.gguf" | "$BIN/laneinterleave" > "$T/e.bundle"
    run "$BIN/verify" "$T/e.gguf" "$T/e.bundle"
    [ "$status" -eq 0 ]
    [ "${lines[2]}" = "GGUF and bundle: no weights, so no b/w; metadata 13 bytes" ]
    # a stream without GGUF content (Hessians) became an empty 32-byte GGUF, exit 0 (a breaker's find)
    "$BIN/hessian" --model "$MODELS/stories260K-f32.gguf" --text "$DATA/text/tinystories_sample.txt" --ctx 64 \
        --chunks 1 --threads 1 -o "$T/h.hess" 2> /dev/null
    run "$BIN/unbundle" -o "$T/h.gguf" "$T/h.hess"
    one_line_error "^unbundle: $T/h.hess: no GGUF header, key/value or tensor record to write \(not a bundle of a GGUF or a tensor stream; unbundle --stream gives its records back\)$"
    [ ! -e "$T/h.gguf" ]
    "$BIN/unbundle" --stream "$T/h.hess" | cmp - "$T/h.hess"
}

@test "histogram left out: huffbuild and laneinterleave each warn, exit 0 (it passed silently); the whole pipeline says nothing" {
    run --separate-stderr sh -c "'$BIN/ggufcat' '$Q/syn.gguf' | '$BIN/huffbuild' -o '$T/h.wts'"
    [ "$status" -eq 0 ]
    [ "$stderr" = "huffbuild: warning: stdin: no histogram records, so no code tables: 111 matrices of a coded type passed through (histogram comes before huffbuild)" ]
    "$BIN/ggufcat" "$Q/syn.gguf" | cmp - "$T/h.wts"
    run --separate-stderr "$BIN/laneinterleave" -o "$T/x.bundle" "$T/h.wts"
    [ "$status" -eq 0 ]
    [ "$stderr" = "laneinterleave: warning: $T/h.wts: no symbols records: none of the 111 matrices of a coded type is coded, each is stored fixed-width or zstd'd (histogram | huffbuild come before laneinterleave)" ]
    "$BIN/unbundle" "$T/x.bundle" | cmp - "$Q/syn.gguf"
    run --separate-stderr sh -c "'$BIN/ggufcat' '$Q/syn.gguf' | '$BIN/histogram' | '$BIN/huffbuild' | '$BIN/laneinterleave' -o '$T/y.bundle'"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [ "$("$BIN/tsinfo" "$T/y.bundle" | grep -c "^coded ")" -eq 64 ]
    # histogram there with nothing to code (floats kept with --no-float): no warning (a breaker's find)
    run --separate-stderr sh -c "'$BIN/ggufcat' '$MODELS/stories260K-f32.gguf' | '$BIN/histogram' --no-float | '$BIN/huffbuild' | '$BIN/laneinterleave' -o '$T/f.bundle'"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    # bf16split's symbols without histogram: huffbuild counts them, laneinterleave names both
    # filters (it said "run huffbuild", which had run)
    run --separate-stderr sh -c "'$BIN/ggufcat' '$MODELS/stories260K-bf16.gguf' | '$BIN/bf16split' | '$BIN/huffbuild' -o '$T/b.wts'"
    [ "$status" -eq 0 ]
    [ "$stderr" = "huffbuild: warning: stdin: no histogram records, so no code tables: 37 matrices of a coded type passed through (histogram comes before huffbuild)" ]
    run --separate-stderr "$BIN/laneinterleave" -o "$T/b.bundle" "$T/b.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "laneinterleave: $T/b.wts: 'token_embd.weight': no code table (run histogram | huffbuild before laneinterleave)" ]
    [ ! -e "$T/b.bundle" ]
}

@test "bad input: laneinterleave without huffbuild, verify against the wrong GGUF" {
    run sh -c "'$BIN/ggufcat' '$Q/syn.gguf' | '$BIN/histogram' | '$BIN/laneinterleave' -o '$T/x.bundle'"
    [ "$status" -ne 0 ]
    [[ "$output" =~ "laneinterleave: stdin: 'Q4_0.r1x32': no code table (run huffbuild before laneinterleave)" ]]
    [ ! -e "$T/x.bundle" ]
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built"
    bundle "$Q/s-Q8_0.gguf" "$T/q8.bundle"
    run "$BIN/verify" -q "$Q/s-Q4_0.gguf" "$T/q8.bundle"
    [ "$status" -eq 1 ]
    echo "$output" | grep -q 'FAILED'
}

# q8_bundle DIR: DIR/q.wts, DIR/q.gguf and DIR/q.bundle, stories260K by RTN Q8_0; the bundle
# from gptq's stream, as lazyweights codes it (its attributes make it 48 bytes larger than a
# bundle of the GGUF).
q8_bundle() {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" --ftype Q8_0 --rtn --quiet -o "$1/q.wts"
    "$BIN/ggufpack" -o "$1/q.gguf" "$1/q.wts"
    "$BIN/histogram" "$1/q.wts" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" > "$1/q.bundle"
}

@test "verify --tsv: fixed columns for CI, the same b/w as the text report and as tests/bitrates.tsv" {
    q8_bundle "$T"
    run --separate-stderr "$BIN/verify" --tsv "$T/q.gguf" "$T/q.bundle"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [ "${lines[0]}" = "$(printf 'matrix\ttype\tweights\tgguf_bpw\tbundle_bpw\tentropy_bpw\ttables_bpw\tpadding_bpw\tstored\tcheck')" ]
    [ "${#lines[@]}" -eq 50 ]   # header, 48 tensors, the file
    [ "$(printf '%s\n' "${lines[@]}" | awk -F'\t' 'NF != 10' | wc -l)" -eq 0 ]
    # the file's line: the b/w pipelines/bitrates records for this point (RTN Q8_0)
    [ "${lines[49]}" = "$(printf '*\tfile\t292800\t10.3580\t8.5878\t-\t0.0784\t0.0466\t-\tok')" ]
    grep -q "$(printf '^stories260K-f32\tQ8_0_g0_lam0_c1\t8.5878$')" "$ROOT/tests/bitrates.tsv"
    [ "$(printf '%s\n' "${lines[@]}" | cut -f9 | sort | uniq -c | tr -s ' ' | tr '\n' ,)" = " 1 -, 13 coded, 11 fixed, 1 shared, 1 stored, 23 zstd," ]
    [ "${lines[1]}" = "$(printf 'output.weight\tQ8_0\t32768\t8.5000\t5.7917\t5.5123\t0.0850\t0.0789\tcoded\tok')" ]
    # the same numbers as the text report, a matrix and the totals
    "$BIN/verify" "$T/q.gguf" "$T/q.bundle" > "$T/text"
    grep -qE '^output.weight +Q8_0 +32768 +8.5000 +5.7917 +5.5123 +0.0850 +0.0789  ok$' "$T/text"
    grep -q '^GGUF 10.3580 b/w, bundle 8.5878 b/w' "$T/text"
    # -q: the header and the file's line
    run "$BIN/verify" -q --tsv "$T/q.gguf" "$T/q.bundle"
    [ "${#lines[@]}" -eq 2 ]
    [ "${lines[1]}" = "$(printf '*\tfile\t292800\t10.3580\t8.5878\t-\t0.0784\t0.0466\t-\tok')" ]
    # against the wrong GGUF: FAILED in the check column, exit 1, the reason on stderr
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" --ftype Q4_0 --rtn --quiet | "$BIN/ggufpack" > "$T/q4.gguf"
    run --separate-stderr "$BIN/verify" -q --tsv "$T/q4.gguf" "$T/q.bundle"
    [ "$status" -eq 1 ]
    [[ "${lines[1]}" == "*"*"$(printf '\tFAILED')" ]]
    [[ "$stderr" == "verify: $T/q.bundle: "*" tensors differ from $T/q4.gguf"* ]]
    # the text report claims no saving (it printed "saving 56.08%", then FAILED)
    run --separate-stderr "$BIN/verify" "$T/q4.gguf" "$T/q.bundle"
    [ "$status" -eq 1 ]
    [[ "${lines[-2]}" == "GGUF "*" b/w, bundle 8.5878 b/w (no saving: not this GGUF's bundle); tables+offsets"* ]]
    [ "${lines[-1]}" = "rebuilt GGUF DIFFERS: FAILED" ]
    grep -q '(saving 17.09%)' "$T/text"
}

@test "bad input: a stream that holds a tensor name twice makes no bundle (it made one unbundle refused)" {
    "$BIN/ggufcat" -o "$T/s.wps" "$MODELS/stories260K-f32.gguf"
    stream_dup "$T/s.wps" "$T/d.wps" blk.4.ffn_up.weight
    [ "$("$BIN/tsinfo" "$T/d.wps" | grep -c '^tensor *blk.4.ffn_up.weight ')" -eq 2 ]   # well-formed
    run sh -c "'$BIN/histogram' '$T/d.wps' | '$BIN/huffbuild' | '$BIN/laneinterleave' -o '$T/d.bundle'"
    one_line_error "^laneinterleave: stdin: tensor 'blk.4.ffn_up.weight' appears twice \(a GGUF holds each name once\)$"
    [ ! -e "$T/d.bundle" ]
    # the same through bf16split, and a copy equal to an earlier tensor (a ref) as well
    stream_dup "$T/s.wps" "$T/o.wps" output.weight
    run sh -c "'$BIN/bf16split' '$T/o.wps' | '$BIN/histogram' | '$BIN/huffbuild' | '$BIN/laneinterleave' > /dev/null"
    one_line_error "^laneinterleave: stdin: tensor 'output.weight' appears twice"
    stream_dup "$T/s.wps" "$T/e.wps" token_embd.weight   # equal to output.weight: coded as a ref
    run sh -c "'$BIN/histogram' '$T/e.wps' | '$BIN/huffbuild' | '$BIN/laneinterleave' > /dev/null"
    one_line_error "^laneinterleave: stdin: tensor 'token_embd.weight' appears twice"
}

@test "the coding programs take --name=value as --name value; a flag given a value is one line" {
    "$BIN/ggufcat" "$Q/syn.gguf" | "$BIN/histogram" --float-palette 8 | "$BIN/huffbuild" --max-len 10 \
        | "$BIN/laneinterleave" --align 128 > "$T/a.bundle"
    "$BIN/ggufcat" "$Q/syn.gguf" | "$BIN/histogram" --float-palette=8 | "$BIN/huffbuild" --max-len=10 \
        | "$BIN/laneinterleave" --align=128 > "$T/b.bundle"
    cmp "$T/a.bundle" "$T/b.bundle"
    run "$BIN/huffbuild" --max-len=
    [ "$status" -eq 1 ]
    [ "$output" = "huffbuild: --max-len: needs a value (try --help)" ]
    run "$BIN/histogram" --report=yes
    [ "$status" -eq 1 ]
    [ "$output" = "histogram: --report: takes no value (try --help)" ]
    run "$BIN/unbundle" --stream=1 "$T/a.bundle"
    [ "$status" -eq 1 ]
    [ "$output" = "unbundle: --stream: takes no value (try --help)" ]
}

@test "--help of the coding programs" {
    for p in histogram huffbuild laneinterleave verify unbundle; do
        run "$BIN/$p" --help
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "usage: $p"* ]]
    done
}

@test "verify with one file: one line giving its options, as --help does" {
    # it said "verify: usage: verify ORIGINAL.gguf BUNDLE", without -q and --tsv
    run "$BIN/verify" --tsv "$MODELS/stories260K-f32.gguf"
    [ "$status" -eq 1 ]
    [ "$output" = "verify: give ORIGINAL.gguf and BUNDLE (usage: verify [-q] [--tsv] ORIGINAL.gguf BUNDLE)" ]
    run "$BIN/verify" --help
    [ "${lines[0]}" = "usage: verify [-q] [--tsv] ORIGINAL.gguf BUNDLE" ]
}

@test "verify against the wrong GGUF: exit 1 and one line on stderr naming the first difference" {
    bundle "$Q/syn.gguf" "$T/syn.bundle"
    "$TOOLS/mksynth" "$T/other.gguf" floats
    run --separate-stderr "$BIN/verify" -q "$T/other.gguf" "$T/syn.bundle"
    [ "$status" -eq 1 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" =~ ^verify:\ .*syn.bundle:\ [0-9]+\ tensors\ differ\ from\ .*other.gguf\ \(first:\ Q4_0.r1x32\ is\ not\ in ]]
}

@test "verify -q: the totals of stories260K RTN Q8_0 to the digit, metadata in bits per weight (a mutation test's find)" {
    # the metadata column printed bytes per weight (0.0073) went unseen: only its start was checked;
    # the record headers, their alignment and the index (0.28 b/w) were in no column (an auditor's
    # find): the file's bytes less every record's payload, as tsinfo lists them
    q8_bundle "$T"
    run --separate-stderr "$BIN/verify" -q "$T/q.gguf" "$T/q.bundle"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [ "${#lines[@]}" -eq 3 ]
    [ "${lines[0]}" = "total: 292800 weights (164864 in 13 coded matrices, 34 stored fixed-width or zstd, 1 shared)" ]
    [ "${lines[1]}" = "GGUF 10.3580 b/w, bundle 8.5878 b/w (saving 17.09%); tables+offsets 0.0784 b/w, lane padding 0.0466 b/w, metadata 0.0585 b/w, record headers+index 0.2812 b/w" ]
    [ "${lines[2]}" = "rebuilt GGUF byte-identical: every tensor matches with both decoders" ]
    local payloads size
    payloads=$("$BIN/tsinfo" "$T/q.bundle" | sed -n 's/^# [0-9]* records, \([0-9]*\) payload bytes,.*/\1/p')
    [ "$payloads" -gt 0 ]
    size=$(stat -c %s "$T/q.bundle")
    [ "$(awk -v s="$size" -v p="$payloads" 'BEGIN { printf "%.4f", 8 * (s - p) / 292800 }')" = 0.2812 ]
    # a --dist bundle's headers are zstd'd with everything else: no such column
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" | "$BIN/laneinterleave" --dist > "$T/d.bundle"
    run --separate-stderr "$BIN/verify" -q "$T/q.gguf" "$T/d.bundle"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "GGUF 10.3580 b/w, bundle 8.2075 b/w (saving 20.76%); tables+offsets 0.0000 b/w, lane padding 0.0000 b/w, metadata 0.0585 b/w" ]
    # and its matrices are zstd'd symbols: no lane decoder ran (it said "with both decoders")
    [ "${lines[0]}" = "total: 292800 weights (0 in 0 coded matrices, 47 stored fixed-width or zstd, 1 shared)" ]
    [ "${lines[2]}" = "rebuilt GGUF byte-identical: every tensor matches (no lane-coded matrix, so no lane decoder ran)" ]
}

@test "verify against a GGUF that differs only past its last tensor (8 bytes more): exit 1, the rebuilt GGUF differs (a mutation test's find)" {
    # every tensor matches, so only the byte-for-byte compare of the rebuilt file tells; a compare
    # that ignored the lengths, or a verdict that ignored it, passed the longer file
    q8_bundle "$T"
    cp "$T/q.gguf" "$T/z.gguf"
    head -c 8 /dev/zero >> "$T/z.gguf"
    run --separate-stderr "$BIN/verify" -q "$T/z.gguf" "$T/q.bundle"
    [ "$status" -eq 1 ]
    [ "${lines[1]}" = "GGUF 10.3583 b/w, bundle 8.5878 b/w (no saving: not this GGUF's bundle); tables+offsets 0.0784 b/w, lane padding 0.0466 b/w, metadata 0.0585 b/w, record headers+index 0.2812 b/w" ]
    [ "${lines[-1]}" = "rebuilt GGUF DIFFERS: FAILED" ]
    [ "$stderr" = "verify: $T/q.bundle: the rebuilt GGUF differs from $T/z.gguf (metadata or layout)" ]
}

@test "verify against a GGUF with one byte of one tensor's data flipped: that tensor DIFFERS, named on stderr (a mutation test's find)" {
    q8_bundle "$T"
    # a quant byte (not a scale) in the middle of blk.2.ffn_up.weight (coded, its bytes once in the file)
    local o l at
    read -r o l < <(payload_of "$T/q.wts" blk.2.ffn_up.weight)
    at=$(python3 -c '
import sys
o, l = int(sys.argv[3]), int(sys.argv[4])
s, g = open(sys.argv[1], "rb").read()[o:o + l], open(sys.argv[2], "rb").read()
assert g.count(s) == 1 and l % 34 == 0
print(g.find(s) + l // 2 + 10)' "$T/q.wts" "$T/q.gguf" "$o" "$l")
    cp "$T/q.gguf" "$T/f.gguf"
    patch_bytes "$T/f.gguf" "$at" "$(printf '\\x%02x' $(( $(od -An -tu1 -j "$at" -N1 "$T/f.gguf") ^ 1 )))"
    [ "$(cmp -l "$T/q.gguf" "$T/f.gguf" | wc -l)" -eq 1 ]
    run --separate-stderr "$BIN/verify" "$T/f.gguf" "$T/q.bundle"
    [ "$status" -eq 1 ]
    [ "$(printf '%s\n' "${lines[@]}" | grep -c 'DIFFERS$')" -eq 1 ]
    printf '%s\n' "${lines[@]}" | grep -qE '^blk\.2\.ffn_up\.weight +Q8_0 +11008 +8\.5000 +8\.4767 +8\.1542 +0\.1744 +0\.1221  DIFFERS$'
    [ "${lines[-1]}" = "rebuilt GGUF DIFFERS: FAILED" ]
    [ "$stderr" = "verify: $T/q.bundle: 1 tensors differ from $T/f.gguf (first: blk.2.ffn_up.weight: the decoded bytes differ from $T/f.gguf)" ]
}

@test "verify of a Q8_0 bundle against the Q4_0 GGUF of the same model: the first difference is the type (a mutation test's find)" {
    q8_bundle "$T"
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" --ftype Q4_0 --rtn --quiet | "$BIN/ggufpack" > "$T/q4.gguf"
    run --separate-stderr "$BIN/verify" -q "$T/q4.gguf" "$T/q.bundle"
    [ "$status" -eq 1 ]
    [ "${lines[-1]}" = "rebuilt GGUF DIFFERS: FAILED" ]
    [ "$stderr" = "verify: $T/q.bundle: 31 tensors differ from $T/q4.gguf (first: token_embd.weight is Q4_0 in $T/q4.gguf, Q8_0 in the bundle)" ]
}

@test "bad input: unbundle of a bundle with a tensor record removed (index resealed) says so, writes nothing (a mutation test's find)" {
    # without the check of the count it wrote a GGUF of 47 tensors whose header says 48, exit 0
    q8_bundle "$T"
    stream_edit "$T/q.bundle" "$T/d.bundle" "
assert [r.kind for r in recs if r.name == 'blk.4.attn_v.weight'] == [3]
recs[:] = [r for r in recs if r.name != 'blk.4.attn_v.weight']"
    run "$BIN/unbundle" -o "$T/out.gguf" "$T/d.bundle"
    [ "$status" -eq 1 ]
    [ "$output" = "unbundle: $T/d.bundle: the gguf record says 48 tensors, the stream holds 47 (a tensor record lost or added on the way)" ]
    [ ! -e "$T/out.gguf" ]
    run sh -c "'$BIN/unbundle' '$T/d.bundle' > '$T/stdout.gguf'"
    [ "$status" -eq 1 ]
    [ "$output" = "unbundle: $T/d.bundle: the gguf record says 48 tensors, the stream holds 47 (a tensor record lost or added on the way)" ]
    [ ! -s "$T/stdout.gguf" ]
}

@test "bad input: a side record left at the end of a bundle, its coded record gone, is refused (a mutation test's find)" {
    # blk.4.ffn_gate.weight, the last coded matrix: its side record moved to the end, its coded
    # record dropped; unbundle --stream dropped the tensor silently, exit 0
    q8_bundle "$T"
    stream_edit "$T/q.bundle" "$T/s.bundle" "
side = [r for r in recs if r.name == 'blk.4.ffn_gate.weight' and r.kind == 8]
assert len(side) == 1 and [r.kind for r in recs if r.name == 'blk.4.ffn_gate.weight'] == [8, 7]
recs[:] = [r for r in recs if r.name != 'blk.4.ffn_gate.weight'] + side"
    run sh -c "'$BIN/unbundle' --stream '$T/s.bundle' > '$T/s.wts'"
    [ "$status" -eq 1 ]
    [ "$output" = "unbundle: $T/s.bundle: side data without its symbols at the end of the bundle" ]
    [ ! -s "$T/s.wts" ]
    run "$BIN/unbundle" -o "$T/out.gguf" "$T/s.bundle"
    [ "$status" -eq 1 ]
    [ "$output" = "unbundle: $T/s.bundle: side data without its symbols at the end of the bundle" ]
    [ ! -e "$T/out.gguf" ]
    run --separate-stderr "$BIN/verify" -q "$T/q.gguf" "$T/s.bundle"
    [ "$status" -eq 1 ]
    [ "$stderr" = "verify: $T/s.bundle: side data without its symbols at the end of the bundle" ]
}

@test "coded size of a realistic 64x4096 matrix: within 1.5 % of its entropy plus tables (Huffman 0.2-0.7 %, lane ends 0.8 %)" {
    "$TOOLS/mksynth" "$T/big.gguf" big
    "$BIN/ggufcat" "$T/big.gguf" | "$BIN/histogram" --no-rowmap | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/big.bundle"
    run "$BIN/verify" "$T/big.gguf" "$T/big.bundle"
    [ "$status" -eq 0 ]
    # columns: matrix type weights GGUF bundle entropy tables padding check; bundle
    # and entropy include the side data; tables = code lengths, tile offsets, lane
    # counts; padding = the zero bits ending each lane's last word (about 16 bits
    # per lane of 512 weights). Q2_K and Q3_K: the next test.
    for t in Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL Q4_K Q5_K Q6_K IQ4_XS; do
        echo "$output" | awk -v m="$t.r64x4096" '$1 == m {
            all = ($5 - $7) / $6; huff = ($5 - $7 - $8) / $6
            printf "# %s: (bundle - tables) / entropy = %.4f, without lane padding %.4f\n", m, all, huff > "/dev/stderr"
            found = 1; exit !(all <= 1.015 && huff <= 1.01) } END { if (!found) exit 1 }'
    done
}

@test "Q2_K and Q3_K codes grouped 4 and 2 per symbol: a 64x4096 matrix is coded within 1 % of its entropy" {
    "$TOOLS/mksynth" "$T/big.gguf" big
    "$BIN/ggufcat" "$T/big.gguf" | "$BIN/histogram" --no-rowmap | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/big.bundle"
    run "$BIN/verify" "$T/big.gguf" "$T/big.bundle"
    [ "$status" -eq 0 ]
    # Coded one code per symbol, Q2_K never beat its fixed width (a Huffman
    # code spends >= 1 bit per 2-bit code) and Q3_K came to 1.019. Grouped (4
    # 2-bit codes, 2 3-bit codes per symbol) both are coded ("ok" alone, not
    # "ok (stored fixed-width)" / "ok (zstd)"), below the GGUF's b/w, and
    # (bundle - tables - padding) / entropy <= 1.01. Lane padding is left out:
    # about 0.03 b/w whatever the code, it weighs more on Q2_K's 2.5 b/w.
    for t in Q2_K Q3_K; do
        echo "$output" | awk -v m="$t.r64x4096" '$1 == m {
            huff = ($5 - $7 - $8) / $6
            printf "# %s: %s b/w (GGUF %s), (bundle - tables - padding) / entropy = %.4f\n", m, $5, $4, huff > "/dev/stderr"
            found = 1; exit !(NF == 9 && $9 == "ok" && $6 + 0 > 0 && $5 < $4 && huff <= 1.01) } END { if (!found) exit 1 }'
    done
}

@test "tsinfo and verify free what they allocate (valgrind, definite leaks)" {
    command -v valgrind > /dev/null || skip "valgrind not installed"
    # the last record's buffers and verify's reader were never freed (a new user's trial)
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" | "$BIN/histogram" | "$BIN/huffbuild" |
        "$BIN/laneinterleave" > "$T/b.bundle"
    vg=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9)
    "${vg[@]}" "$BIN/tsinfo" "$T/b.bundle" > /dev/null
    "${vg[@]}" "$BIN/verify" "$MODELS/stories260K-bf16.gguf" "$T/b.bundle" > /dev/null
}

# q5_bundle DIR: DIR/q.gguf and DIR/q.bundle, stories260K by RTN Q5_0 (as
# the tests above make it).
q5_bundle() {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q5_0 --rtn > "$1/q.wts"
    "$BIN/ggufpack" "$1/q.wts" > "$1/q.gguf"
    "$BIN/histogram" "$1/q.wts" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" > "$1/q.bundle"
}

# Python for stream_edit: claim(n), a zstd frame that declares n bytes and
# holds one raw block of one byte (RFC 8878: magic, descriptor 0xc0 = an
# 8-byte content size, window byte, the size, block header 9 = the last
# block, raw, 1 byte).
ZSTD_CLAIM="import struct
claim = lambda n: struct.pack('<IBBQ', 0xFD2FB528, 0xC0, 0, n) + bytes([9, 0, 0]) + b'x'"

@test "bad input: a zstd record whose frame declares more bytes than its blocks hold is corrupt (it allocated them)" {
    # the declared size was allocated before decompressing: 16 GB for this 16-byte frame,
    # and a claim of 1 TB said 'out of memory' of a corrupt file
    q5_bundle "$T"
    for n in 17179869184 1099511627776; do
        stream_edit "$T/q.bundle" "$T/z.bundle" "$ZSTD_CLAIM
for r in recs:
    if r.kind == 11 and r.name == 'output.weight':
        r.payload = bytearray(claim($n)); r.attrs['z_len'] = '$n'"
        run "$BIN/unbundle" -o "$T/out.gguf" "$T/z.bundle"
        one_line_error "^unbundle: $T/z.bundle: record 'output.weight': corrupt zstd payload$"
        [ ! -e "$T/out.gguf" ]
        run "$BIN/verify" -q "$T/q.gguf" "$T/z.bundle"
        one_line_error "^verify: $T/z.bundle: record 'output.weight': corrupt zstd payload$"
        # within 1 GB of address space: the claim is not even tried
        run sh -c "ulimit -v 1048576; exec '$BIN/unbundle' --stream '$T/z.bundle' > /dev/null"
        one_line_error "^unbundle: $T/z.bundle: record 'output.weight': corrupt zstd payload$"
    done
    # the metadata's zstd record (KVPACK) the same way
    stream_edit "$T/q.bundle" "$T/k.bundle" "$ZSTD_CLAIM
for r in recs:
    if r.kind == 12:
        r.payload = bytearray(claim(1 << 40)); r.attrs['z_len'] = str(1 << 40)"
    run "$BIN/unbundle" -o "$T/out.gguf" "$T/k.bundle"
    one_line_error "^unbundle: $T/k.bundle: the kvpack record: bad attributes or corrupt zstd payload$"
    # the untouched bundle still restores
    run "$BIN/verify" -q "$T/q.gguf" "$T/q.bundle"
    [ "$status" -eq 0 ]
}

@test "bad input: a coded record whose shape is not its tensor's is refused (unbundle, verify, wprun)" {
    # output.weight, 345 rows of 64 Q4_0 weights: 32 pairs a row, said as 16 (the same 6 tiles);
    # unbundle's check of it was untested (a mutation test's find)
    rtn_bundle Q4_0
    stream_edit "$T/q.bundle" "$T/e.bundle" "
for r in recs:
    if r.kind == 7 and r.name == 'output.weight':
        assert r.attrs['row_sym'] == '32' and r.ne[:2] == [64, 345]
        r.attrs['row_sym'] = '16'"
    run "$BIN/unbundle" -o "$T/back.gguf" "$T/e.bundle"
    one_line_error "^unbundle: $T/e.bundle: record 'output.weight': coded shape does not match the tensor$"
    [ ! -e "$T/back.gguf" ]
    run "$BIN/verify" -q "$T/q.gguf" "$T/e.bundle"
    one_line_error "^verify: $T/e.bundle: record 'output.weight': coded shape does not match the tensor$"
    run "$BIN/wprun" --cpu "$T/e.bundle"
    one_line_error "^wprun: $T/e.bundle: output.weight: side data or coded shape does not match the type$"
}

# rtn_bundle TYPE: stories260K by RTN to TYPE, $T/q.wps, $T/q.gguf and its bundle $T/q.bundle
rtn_bundle() {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" --rtn --type "$1" -q > "$T/q.wps"
    "$BIN/ggufpack" < "$T/q.wps" > "$T/q.gguf"
    bundle "$T/q.gguf" "$T/q.bundle"
}

# refused BUNDLE MSG PROGRAM...: each of unbundle -o, verify (against $T/q.gguf) and
# wprun --cpu --verify named fails on BUNDLE, exit 1, with the one line "PROGRAM: BUNDLE: MSG",
# and unbundle writes nothing
refused() {
    local b=$1 msg=$2 p
    shift 2
    for p in "$@"; do
        case $p in
            unbundle) run "$BIN/unbundle" -o "$T/back.gguf" "$b" ;;
            verify) run "$BIN/verify" -q "$T/q.gguf" "$b" ;;
            wprun) run "$BIN/wprun" --cpu --verify --bundle "$b" ;;
        esac
        [ "$status" -eq 1 ] || { echo "$p: exit $status: $output"; return 1; }
        [ "$output" = "$p: $b: $msg" ] || { echo "$p: $output"; return 1; }
        [ ! -e "$T/back.gguf" ]
    done
}

@test "bad input: a symbols, coded or row map record without its xxh32 is refused (its restore went unchecked: a changed code table restored another tensor, exit 0)" {
    rtn_bundle Q8_0
    # blk.1.ffn_up's code lengths of two symbols swapped (a valid code, other symbols), xxh32 gone
    stream_edit "$T/q.bundle" "$T/c.bundle" "
r = [r for r in recs if r.kind == 7 and r.name == 'blk.1.ffn_up.weight'][0]
L = [(r.payload[s // 2] >> (4 * (s % 2))) & 15 for s in range(256)]
x, y = max(range(256), key=lambda s: L[s]), min((s for s in range(256) if L[s]), key=lambda s: L[s])
assert L[x] != L[y]
L[x], L[y] = L[y], L[x]
r.payload[0:128] = bytes(L[2 * i] | L[2 * i + 1] << 4 for i in range(128))
del r.attrs['xxh32']"
    refused "$T/c.bundle" "record 'blk.1.ffn_up.weight': no xxh32 of the tensor it restores" unbundle verify
    run "$BIN/wprun" --cpu --verify --bundle "$T/c.bundle"   # (a restore's failure: the others run)
    [ "$status" -eq 1 ]
    [ "$(grep -c "^FAIL blk.1.ffn_up.weight: restore: record 'blk.1.ffn_up.weight': no xxh32 of the tensor it restores$" <<< "$output")" -eq 1 ]
    [ "${lines[-1]}" = "wprun: 36 matrices (cpu): FAILED (1 failure above)" ]
    # output.weight's row map (348 distinct rows of 512, zstd'd) without its xxh32
    stream_edit "$T/q.bundle" "$T/m.bundle" "
r = [r for r in recs if r.kind == 11 and r.attrs['z_of'] == '14' and r.name == 'output.weight'][0]
del r.attrs['xxh32']"
    refused "$T/m.bundle" "record 'output.weight': row map without the xxh32 of its tensor" unbundle verify
    "$BIN/unbundle" -o "$T/back.gguf" "$T/q.bundle"
    cmp "$T/back.gguf" "$T/q.gguf"
}

@test "bad input: a coded record's n_tiles, tile_sym or n_weights that is not its shape's or type's, a side record of another type, a gguf record's n_tensors off by one: verify refuses them as unbundle and wprun do" {
    # (verify said byte-identical of each: n_tiles went unchecked, the count a hardware decoder
    # may size its reads by; one tile column covered the row either way; verify did not count
    # the records against the gguf record; a breaker's find)
    rtn_bundle Q8_0
    # output.weight, 348 distinct rows of 64 Q8_0 codes: 6 tile rows of one tile
    stream_edit "$T/q.bundle" "$T/e.bundle" "
r = [r for r in recs if r.kind == 7 and r.name == 'output.weight'][0]
assert r.attrs['n_tiles'] == '6' and r.ne[:2] == [64, 348]
r.attrs['n_tiles'] = '-1'"
    refused "$T/e.bundle" "record 'output.weight': n_tiles -1 but its shape has 6 tiles" unbundle verify wprun
    stream_edit "$T/q.bundle" "$T/t.bundle" "
r = [r for r in recs if r.kind == 7 and r.name == 'blk.1.ffn_up.weight'][0]
assert r.attrs['tile_sym'] == '256'
r.attrs['tile_sym'] = '128'"
    refused "$T/t.bundle" "record 'blk.1.ffn_up.weight': tiles 128 symbols wide, its type's are 256" verify unbundle
    stream_edit "$T/q.bundle" "$T/w.bundle" "
r = [r for r in recs if r.kind == 7 and r.name == 'blk.1.ffn_up.weight'][0]
assert r.attrs['n_weights'] == str(64 * 172)
r.attrs['n_weights'] = 'x'"
    refused "$T/w.bundle" "record 'blk.1.ffn_up.weight': n_weights x but its shape has 11008" verify
    # its side record's type (Q4_0 for Q8_0), its coded record made 3-D: each half of the tensor
    # was restored by its own header, a GGUF with a 3-D tensor written, exit 0
    stream_edit "$T/q.bundle" "$T/s.bundle" "
r = [r for r in recs if r.kind == 8 and r.name == 'blk.1.ffn_up.weight'][0]
assert r.type == 8
r.type = 2"
    refused "$T/s.bundle" "record 'blk.1.ffn_up.weight': its side data's type or shape is not its symbols'" verify
    stream_edit "$T/q.bundle" "$T/3.bundle" "
r = [r for r in recs if r.kind == 7 and r.name == 'blk.1.ffn_up.weight'][0]
r.n_dims = 3"
    refused "$T/3.bundle" "record 'blk.1.ffn_up.weight': its side data's type or shape is not its symbols'" unbundle
    stream_edit "$T/q.bundle" "$T/n.bundle" "
r = [r for r in recs if r.kind == 1][0]
r.attrs['n_tensors'] = str(int(r.attrs['n_tensors']) + 1)"
    refused "$T/n.bundle" "the gguf record says 49 tensors, the stream holds 48 (a tensor record lost or added on the way)" verify unbundle
}

@test "bad input: an attribute given twice is refused by every reader (the first was taken: a second z_group went unseen)" {
    rtn_bundle Q8_0
    # a value with a newline: a second line of the same key
    stream_edit "$T/q.bundle" "$T/d.bundle" "
r = [r for r in recs if r.kind == 7 and r.name == 'blk.1.ffn_up.weight'][0]
r.attrs['max_len'] = r.attrs['max_len'] + '\\nmax_len=15'"
    [ "$(grep -ac '^max_len=15$' "$T/d.bundle")" -eq 1 ]
    refused "$T/d.bundle" "record 'blk.1.ffn_up.weight': an attribute given twice" unbundle verify wprun
    run --separate-stderr "$BIN/tsinfo" "$T/d.bundle"   # (the records before it listed)
    [ "$status" -eq 1 ]
    [ "$stderr" = "tsinfo: $T/d.bundle: record 'blk.1.ffn_up.weight': an attribute given twice" ]
}

@test "a bundle whose payloads are aligned to 2 bytes (not made since --align takes 4 or more) is read by wprun as copies, not its u32 lane words in place" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" --rtn --type Q4_0 -q > "$T/q.wps"
    "$BIN/histogram" "$T/q.wps" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/q.bundle"
    stream_edit "$T/q.bundle" "$T/a2.bundle" "
align = 2
b = b[:12] + struct.pack('<I', 2) + b[16:]"
    [ "$(od -An -tu4 -j12 -N4 "$T/a2.bundle" | tr -d ' ')" = 2 ]
    # some payload at an odd multiple of 2 (the lane words of a coded record misaligned)
    "$BIN/unbundle" --stream "$T/a2.bundle" | cmp - "$T/q.wps"
    run "$BIN/wprun" --cpu --verify --bundle "$T/a2.bundle"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "$(cd "$T" && "$BIN/wprun" --cpu --verify --bundle q.bundle | tail -n 1)" ]
}

@test "bad input: a coded record with fewer lane words than symbols is corrupt before its symbols are allocated" {
    # stories260K BF16's token_embd made 4194304 x 256 with 65536 empty tiles (2.7 MB): the
    # restorers allocated its 536870912 symbols (512 MB; with less memory 'out of memory', no
    # record named) and then found the lanes corrupt
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/bf16split" --palette 16 --row 64 |
        "$BIN/histogram" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" > "$T/b.bundle"
    stream_edit "$T/b.bundle" "$T/e.bundle" "
k = 1 << 16
for r in recs:
    if r.name == 'token_embd.weight' and r.kind in (7, 10):
        r.ne[0], r.ne[1] = 256, 64 * k
    if r.name == 'token_embd.weight' and r.kind == 7:
        r.payload = r.payload[:128] + bytes(4 * (k + 1) + 32 * k)
        r.attrs['row_sym'] = '128'
        r.attrs['n_tiles'] = str(k)
        r.attrs['n_weights'] = str(256 * 64 * k)"
    msg="record 'token_embd.weight': 0 lane words cannot hold 536870912 symbols"
    run sh -c "ulimit -v 400000; exec '$BIN/unbundle' --stream '$T/e.bundle' > /dev/null"
    one_line_error "^unbundle: $T/e.bundle: $msg$"
    run sh -c "ulimit -v 400000; exec '$BIN/verify' -q '$MODELS/stories260K-bf16.gguf' '$T/e.bundle'"
    one_line_error "^verify: $T/e.bundle: $msg$"
    run "$BIN/wprun" --cpu --verify --bundle "$T/e.bundle"
    [ "$status" -eq 1 ]
    one_line_error "^wprun: $T/e.bundle: $msg$"
    run "$BIN/verify" -q "$MODELS/stories260K-bf16.gguf" "$T/b.bundle"
    [ "$status" -eq 0 ]
}

@test "histogram's hist and huffbuild's table attributes as their pages say: n_symbols, n_weights, max_len, coded_bits = sum of count x length (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q4_0 --rtn > "$T/q.wts"
    "$BIN/histogram" --no-rowmap "$T/q.wts" | "$BIN/huffbuild" --max-len 9 > "$T/t.wps"
    run "$BIN/tsinfo" -a "$T/t.wps"
    [ "$status" -eq 0 ]
    # Q4_0 pairs two 4-bit codes in a symbol: 16384 symbols of 32768 weights
    local at
    at=$(line_after '^hist  *token_embd.weight  *Q4_0  *256  *2048  0.5000$')
    [ "${lines[$at]}" = "    n_symbols=16384" ]
    [ "${lines[$at + 1]}" = "    n_weights=32768" ]
    [ "${lines[$at + 2]}" = "    entropy=6.77583272" ]
    [[ "${lines[$at + 3]}" =~ ^table\ +token_embd.weight\ +Q4_0\ +256\ +256\ +$ ]]
    [ "${lines[$at + 4]}" = "    max_len=9" ]
    [ "${lines[$at + 5]}" = "    coded_bits=113467" ]
    # every table: no code over 9 bits, a code for each symbol that occurs and none for the
    # others, a prefix code (Kraft), and coded_bits the counts times the lengths
    stream_edit "$T/t.wps" "$T/check.wps" "
import struct
hist = {r.name: struct.unpack('<256Q', r.payload) for r in recs if r.kind == 5}
tab = {r.name: r for r in recs if r.kind == 6}
assert sorted(hist) == sorted(tab) and len(tab) == 37, (len(hist), len(tab))
for n, c in hist.items():
    L = tab[n].payload
    assert max(L) <= 9 and all((c[s] > 0) == (L[s] > 0) for s in range(256)), n
    assert sum(2.0 ** -l for l in L if l) <= 1, n
    assert int(tab[n].attrs['coded_bits']) == sum(c[s] * L[s] for s in range(256)), n
    assert tab[n].attrs['max_len'] == '9', n
"
    # and the bundle's coded record keeps the table's max_len, not the default 11
    "$BIN/laneinterleave" -o "$T/q.bundle" "$T/t.wps"
    run "$BIN/tsinfo" -a "$T/q.bundle"
    [ "$status" -eq 0 ]
    at=$(line_after '^coded  *token_embd.weight  *Q4_0  *64x512 ')
    [ "${lines[$at + 5]}" = "    max_len=9" ]
    "$BIN/unbundle" --stream "$T/q.bundle" | cmp - "$T/q.wts"
}

@test "number options of the coding programs: the ends of each range their pages give are refused in one line (a mutation test's find)" {
    fails_saying "huffbuild: --max-len: expected an integer from 1 to 15, got '16'" "$BIN/huffbuild" --max-len 16
    fails_saying "huffbuild: --max-len: expected an integer from 1 to 15, got '0'" "$BIN/huffbuild" --max-len 0
    fails_saying "histogram: --float-palette: expected an integer from 0 to 16, got '17'" "$BIN/histogram" --float-palette 17
    fails_saying "laneinterleave: --align: 12 is not a power of two" "$BIN/laneinterleave" --align 12
    fails_saying "laneinterleave: --align: 24 is not a power of two" "$BIN/laneinterleave" --align 24
    fails_saying "laneinterleave: --align: expected an integer from 4 to 4096, got '2'" "$BIN/laneinterleave" --align 2
    fails_saying "bf16split: --row: expected an integer from 1 to 1048576, got '0'" "$BIN/bf16split" --row 0
    # and the ends themselves are taken
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn > "$T/q.wts"
    "$BIN/histogram" --float-palette 16 "$T/q.wts" | "$BIN/huffbuild" --max-len 15 | "$BIN/laneinterleave" --align 4096 > "$T/a.bundle"
    "$BIN/histogram" --float-palette 0 "$T/q.wts" | "$BIN/huffbuild" --max-len 8 | "$BIN/laneinterleave" --align 4 > "$T/b.bundle"
    "$BIN/unbundle" --stream "$T/a.bundle" | cmp - "$T/q.wts"
    "$BIN/unbundle" --stream "$T/b.bundle" | cmp - "$T/q.wts"
}

@test "histogram --report of a quantized matrix of no weights: - for each number, never -nan; the total with two row maps (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn > "$T/q.wts"
    stream_edit "$T/q.wts" "$T/z.wts" "
r = [r for r in recs if r.name == 'blk.0.attn_q.weight'][0]
r.ne[1] = 0
r.payload = bytearray()"
    run --separate-stderr "$BIN/histogram" --report -o "$T/h.wps" "$T/z.wts"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[5]}" = "blk.0.attn_q.weight              Q8_0             0          0        -        -      -       -       -" ]
    [ "${stderr_lines[6]}" = "blk.0.attn_v.weight              Q8_0          2048       2048   7.3993   7.3993   8.00  0.5000  8.5000" ]
    # token_embd and output, tied, each stored as a row map of 348 distinct rows of 512
    [ "${stderr_lines[1]}" = "output.weight                    Q8_0         22272      22272   7.6101   7.6101   8.00  0.5000  8.5000  (row map: 348 distinct rows of 512)" ]
    [ "${stderr_lines[2]}" = "token_embd.weight                Q8_0         22272      22272   7.6101   7.6101   8.00  0.5000  8.5000  (row map: 348 distinct rows of 512)" ]
    local rest="exponent-coded; tensors 9.9871 b/w as stored; entropy bound"
    [[ "${stderr_lines[-1]}" == "total: 288704 weights, 211968 in quantized matrices, 55040 $rest 8.6510 b/w (order 0: "* ]]
    run --separate-stderr "$BIN/histogram" --report --no-rowmap -o "$T/h.wps" "$T/z.wts"
    [ "$status" -eq 0 ]
    [[ "${stderr_lines[-1]}" == "total: 288704 weights, 232960 in quantized matrices, 55040 $rest 9.1859 b/w (order 0: "* ]]
}

@test "bad input: huffbuild refuses a hist record of more or fewer than 256 counts, nothing written (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn | "$BIN/histogram" > "$T/h.wps"
    stream_edit "$T/h.wps" "$T/long.wps" "
r = [r for r in recs if r.kind == 5 and r.name == 'blk.0.attn_q.weight'][0]
r.payload += bytes(8)"
    stream_edit "$T/h.wps" "$T/short.wps" "
r = [r for r in recs if r.kind == 5 and r.name == 'blk.0.attn_q.weight'][0]
del r.payload[-8:]"
    fails_saying "huffbuild: $T/long.wps: histogram 'blk.0.attn_q.weight': 2056 bytes, expected 2048" \
        "$BIN/huffbuild" -o "$T/t.wps" "$T/long.wps"
    fails_saying "huffbuild: $T/short.wps: histogram 'blk.0.attn_q.weight': 2040 bytes, expected 2048" \
        "$BIN/huffbuild" -o "$T/t.wps" "$T/short.wps"
    [ ! -e "$T/t.wps" ]
}

@test "huffbuild --max-len: 256 symbols need 8 bits (2^8 = 256, not 9), counts of 2^64 in all are said as such (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn | "$BIN/histogram" > "$T/h.wps"
    stream_edit "$T/h.wps" "$T/all.wps" "
import struct
r = [r for r in recs if r.kind == 5 and r.name == 'blk.0.attn_q.weight'][0]
r.payload = bytearray(struct.pack('<256Q', *range(1, 257)))
recs[:] = [r]"
    stream_edit "$T/h.wps" "$T/huge.wps" "
import struct
r = [r for r in recs if r.kind == 5 and r.name == 'blk.0.attn_q.weight'][0]
r.payload = bytearray(struct.pack('<256Q', *([2**63, 2**63] + [0] * 254)))
recs[:] = [r]"
    fails_saying "huffbuild: $T/all.wps: histogram 'blk.0.attn_q.weight': 256 symbols need a longest code of at least 8 bits; --max-len 7 is too short" \
        "$BIN/huffbuild" --max-len 7 -o "$T/t.wps" "$T/all.wps"
    [ ! -e "$T/t.wps" ]
    # 8 bits do: every symbol 8 bits long, 8 x (1 + 2 + ... + 256) bits
    "$BIN/huffbuild" --max-len 8 -o "$T/t.wps" "$T/all.wps"
    run "$BIN/tsinfo" -a "$T/t.wps"
    [ "$status" -eq 0 ]
    [ "${lines[-2]}" = "    coded_bits=263168" ]
    [ "${lines[-3]}" = "    max_len=8" ]
    # two symbols fit 1 bit: the alphabet is not what fails, the counts' sum (2^64) is
    fails_saying "huffbuild: $T/huge.wps: histogram 'blk.0.attn_q.weight': counts too large" \
        "$BIN/huffbuild" --max-len 1 -o "$T/u.wps" "$T/huge.wps"
    [ ! -e "$T/u.wps" ]
}

@test "bad input: laneinterleave codes no matrix with another's table; huffbuild - is stdin in its warning (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn > "$T/q.wts"
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" > "$T/t.wps"
    # blk.0.attn_q.weight's table gone: the table before it is blk.0.attn_output.weight's
    stream_edit "$T/t.wps" "$T/nt.wps" "
recs[:] = [r for r in recs if not (r.kind == 6 and r.name == 'blk.0.attn_q.weight')]"
    fails_saying "laneinterleave: $T/nt.wps: 'blk.0.attn_q.weight': no code table (run huffbuild before laneinterleave)" \
        "$BIN/laneinterleave" -o "$T/nt.bundle" "$T/nt.wps"
    [ ! -e "$T/nt.bundle" ]
    run --separate-stderr sh -c "'$BIN/huffbuild' - < '$T/q.wts' > '$T/h.wps'"
    [ "$status" -eq 0 ]
    [ "$stderr" = "huffbuild: warning: stdin: no histogram records, so no code tables: 32 matrices of a coded type passed through (histogram comes before huffbuild)" ]
    cmp "$T/h.wps" "$T/q.wts"
}

@test "bad input: laneinterleave refuses symbols beside another matrix's side, a table of 257 lengths, symbols past their rows, side data without its symbols next; nothing written (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn > "$T/q.wts"
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" > "$T/t.wps"
    # refused X MESSAGE EDIT: huffbuild's stream edited (stream_edit) into X.wps, which
    # laneinterleave refuses saying MESSAGE after its name, writing no -o file
    refused() {
        stream_edit "$T/t.wps" "$T/$1.wps" "$3"
        fails_saying "laneinterleave: $T/$1.wps: $2" "$BIN/laneinterleave" -o "$T/out.bundle" "$T/$1.wps"
        [ ! -e "$T/out.bundle" ]
    }
    # blk.0.attn_q.weight's side replaced by blk.1.attn_q.weight's (the same shape): it was coded
    # with the wrong d values, exit 0
    refused a "'blk.0.attn_q.weight': symbols without their side or raw data" "
import copy
i = [k for k, r in enumerate(recs) if r.kind == 8 and r.name == 'blk.0.attn_q.weight'][0]
recs[i] = copy.deepcopy([r for r in recs if r.kind == 8 and r.name == 'blk.1.attn_q.weight'][0])"
    # a code table is 256 lengths: one more was taken
    refused b "'blk.0.attn_q.weight': bad code table" "
r = [r for r in recs if r.kind == 6 and r.name == 'blk.0.attn_q.weight'][0]
r.payload += bytes(1)"
    # 64 symbols more than its 64 rows of 64 hold: they were taken
    refused c "'blk.0.attn_q.weight': 4160 symbols do not fill 64 rows of 64" "
r = [r for r in recs if r.kind == 9 and r.name == 'blk.0.attn_q.weight'][0]
r.payload += bytes(64)"
    # a symbols record lost mid-stream: the next side came and the matrix was dropped, exit 0
    refused d "'blk.0.attn_q.weight': side data without its symbols" "
recs[:] = [r for r in recs if not (r.kind == 9 and r.name == 'blk.0.attn_q.weight')]"
    # a tensor between a matrix's side and its symbols: it was written before the matrix, exit 0
    refused f "'blk.4.ffn_gate.weight': side data without its symbols" "
i = [k for k, r in enumerate(recs) if r.kind == 8 and r.name == 'blk.4.ffn_gate.weight'][0]
j = [k for k, r in enumerate(recs) if r.name == 'blk.4.ffn_norm.weight'][0]
assert j == i + 2 and recs[i + 1].kind == 9
recs.insert(i + 1, recs.pop(j))"
    # the last record, a symbols record, lost (a stream cut short): the matrix was dropped, exit 0
    refused e "'blk.4.ffn_up.weight': side data without its symbols (truncated stream?)" "
assert recs[-1].kind == 9 and recs[-1].name == 'blk.4.ffn_up.weight'
del recs[-1]"
    # to a redirected stdout, from stdin given as -: said as stdin (it was '-'), the file left empty
    run sh -c "'$BIN/laneinterleave' - < '$T/e.wps' > '$T/stdout.bundle'"
    [ "$status" -eq 1 ]
    [ "$output" = "laneinterleave: stdin: 'blk.4.ffn_up.weight': side data without its symbols (truncated stream?)" ]
    [ ! -s "$T/stdout.bundle" ]
    # and the stream as huffbuild wrote it makes a bundle that restores it
    "$BIN/laneinterleave" -o "$T/out.bundle" "$T/t.wps"
    "$BIN/unbundle" --stream "$T/out.bundle" | cmp - "$T/q.wts"
}

@test "a 1-D tensor of a block type beside coded matrices: laneinterleave keeps it, no warning (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn > "$T/q.wts"
    # blk.0.attn_q.weight as one row of 4096 weights: histogram codes no 1-D tensor
    stream_edit "$T/q.wts" "$T/one.wts" "
r = [r for r in recs if r.name == 'blk.0.attn_q.weight'][0]
r.n_dims, r.ne = 1, [4096, 1, 1, 1]"
    run --separate-stderr sh -c "'$BIN/histogram' '$T/one.wts' | '$BIN/huffbuild' | '$BIN/laneinterleave' -o '$T/one.bundle'"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [ "$("$BIN/tsinfo" "$T/one.bundle" | grep -c '^zstd  *blk.0.attn_q.weight  *Q8_0  *4096 ')" -eq 1 ]
    [ "$("$BIN/tsinfo" "$T/one.bundle" | grep -c '^coded ')" -gt 0 ]
    [ "$("$BIN/unbundle" --stream "$T/one.bundle" | "$BIN/tsinfo" -a -x)" = "$("$BIN/tsinfo" -a -x "$T/one.wts")" ]
}

@test "a coded matrix's entropy is its own hist's: without one, verify says - (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q4_0 --rtn > "$T/q.wts"
    "$BIN/ggufpack" -o "$T/q.gguf" "$T/q.wts"
    # token_embd.weight's hist dropped after huffbuild; the coded matrix before it is output.weight
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" > "$T/t.wps"
    stream_edit "$T/t.wps" "$T/nh.wps" "
assert len([r for r in recs if r.kind == 5 and r.name == 'token_embd.weight']) == 1
recs[:] = [r for r in recs if not (r.kind == 5 and r.name == 'token_embd.weight')]"
    "$BIN/laneinterleave" -o "$T/nh.bundle" "$T/nh.wps"
    run "$BIN/verify" "$T/q.gguf" "$T/nh.bundle"
    [ "$status" -eq 0 ]
    [[ "$output" == *"
output.weight                    Q8_0       32768   8.5000   5.7917   5.5123   0.0850   0.0789  ok
"* ]]
    [[ "$output" == *"
token_embd.weight                Q4_0       32768   4.5000   3.0576        -   0.0850   0.0806  ok
"* ]]
    run "$BIN/tsinfo" -a "$T/nh.bundle"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -A8 '^coded  *token_embd.weight ' | grep -c 'entropy=')" -eq 0 ]
}

@test "histogram --report with no exponent-coded matrix (--no-float): no exponent total line (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn > "$T/q.wts"
    run --separate-stderr "$BIN/histogram" --no-float --report -o "$T/h.wps" "$T/q.wts"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[-2]}" = "blk.4.ffn_up.weight              Q8_0         11008      11008   7.6869   7.6869   8.00  0.5000  8.5000" ]
    [[ "${stderr_lines[-1]}" == "total: 292800 weights, 216064 in quantized matrices; tensors 9.9663 b/w as stored; entropy bound 9.0949 b/w (order 0: "* ]]
    [ "$(echo "$stderr" | grep -c '^total')" -eq 1 ]
}

@test "a 3-D quantized tensor (as a MoE model's experts) is coded when that is smaller than all its ne[1] x ne[2] rows fixed-width (a mutation test's find)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q4_0 --rtn > "$T/q.wts"
    # token_embd.weight as 2 x 256 rows of 64: 18432 bytes fixed-width, 2048 + 14980 coded; measured
    # against 256 rows alone (9216 bytes) it was stored fixed-width
    stream_edit "$T/q.wts" "$T/three.wts" "
r = [r for r in recs if r.name == 'token_embd.weight'][0]
r.n_dims, r.ne = 3, [64, 256, 2, 1]"
    "$BIN/histogram" --no-rowmap "$T/three.wts" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/three.bundle"
    run "$BIN/tsinfo" "$T/three.bundle"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^side  *token_embd.weight  *Q4_0  *64x256x2  *2048  $')" -eq 1 ]
    [ "$(echo "$output" | grep -c '^coded  *token_embd.weight  *Q4_0  *64x256x2  *14980  3.6572$')" -eq 1 ]
    [ "$("$BIN/unbundle" --stream "$T/three.bundle" | "$BIN/tsinfo" -a -x)" = "$("$BIN/tsinfo" -a -x "$T/three.wts")" ]
}
