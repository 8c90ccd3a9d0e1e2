#!/usr/bin/env bats
# ggufcat, ggufpack, tsinfo: the byte-identical GGUF round trip and bad input.
bats_require_minimum_version 1.5.0
load helpers

setup() {
    T="$BATS_TEST_TMPDIR"
    F32="$MODELS/stories260K-f32.gguf"
}

@test "ggufcat | ggufpack is byte-identical for stories260K F32, F16 and BF16" {
    for t in f32 f16 bf16; do
        "$BIN/ggufcat" "$MODELS/stories260K-$t.gguf" | "$BIN/ggufpack" > "$T/$t.gguf"
        cmp "$MODELS/stories260K-$t.gguf" "$T/$t.gguf"
    done
}

@test "ggufpack -o writes the same bytes as stdout" {
    "$BIN/ggufcat" "$F32" | "$BIN/ggufpack" -o "$T/o.gguf"
    cmp "$F32" "$T/o.gguf"
    [ -z "$(ls "$T" | grep '\.tmp\.')" ]
}

@test "the round-tripped GGUF greedy-generates the same 64 tokens in llama.cpp" {
    [ -x "$TOOLS/llgen" ] || skip "build/tools/llgen not built"
    "$BIN/ggufcat" "$F32" | "$BIN/ggufpack" > "$T/y.gguf"
    a=$("$TOOLS/llgen" "$F32" 64)
    b=$("$TOOLS/llgen" "$T/y.gguf" 64)
    [ "$(echo "$a" | wc -w)" -eq 64 ]
    [ "$a" = "$b" ]
}

@test "a compressed file or an archive is named by its kind, with the way on, by the GGUF, safetensors and stream readers" {
    # xz, bzip2 and lz4 files were "bad magic" (a note's left alone); gzip and a PyTorch zip
    # were named by the GGUF reader alone. The xz, bzip2 and lz4 files start as xz, bzip2 -9
    # and lz4 write them (fd 37 7a 58 5a 00, "BZh9", 04 22 4d 18), which is all the readers see.
    gzip -c "$F32" > "$T/m.gguf.gz"
    printf '\375\067\172\130\132\000%0100d' 0 > "$T/m.gguf.xz"
    printf 'BZh91AY&SY%0100d' 0 > "$T/m.gguf.bz2"
    printf '\004\042\115\030%0100d' 0 > "$T/m.gguf.lz4"
    printf 'PK\003\004%0100d' 0 > "$T/pytorch_model.bin"
    for f in m.gguf.gz m.gguf.xz m.gguf.bz2 m.gguf.lz4 pytorch_model.bin; do
        case $f in
            *.gz) kind="a gzip file: gunzip it first" ;;
            *.xz) kind="an xz file: xz -d it first" ;;
            *.bz2) kind="a bzip2 file: bunzip2 it first" ;;
            *.lz4) kind="an lz4 file: lz4 -d it first" ;;
            *) kind="a zip archive: unzip it, or if it is a PyTorch .bin, convert that to safetensors or GGUF" ;;
        esac
        run "$BIN/ggufcat" "$T/$f"
        [ "$status" -eq 1 ]
        [ "$output" = "ggufcat: $T/$f: not a GGUF file ($kind)" ]
        run "$BIN/safetensorscat" "$T/$f"
        [ "$status" -eq 1 ]
        [ "$output" = "safetensorscat: $T/$f: not a safetensors file ($kind)" ]
        run "$BIN/tsinfo" "$T/$f"
        [ "$status" -eq 1 ]
        [ "$output" = "tsinfo: $T/$f: not a wpack stream ($kind)" ]
    done
    # a stream through a pipe too, and a file that is none of them keeps "bad magic"
    run bash -c '"$1" "$2" | gzip -c | "$3"' _ "$BIN/ggufcat" "$F32" "$BIN/histogram"
    [ "$status" -eq 1 ]
    [ "$output" = "histogram: stdin: not a wpack stream (a gzip file: gunzip it first)" ]
    printf 'BZh0%0100d' 0 > "$T/nobz"
    run "$BIN/ggufcat" "$T/nobz"
    [ "$status" -eq 1 ]
    [ "$output" = "ggufcat: $T/nobz: not a GGUF file (bad magic)" ]
}

@test "tsinfo lists every record of the stream: 1 header, 17 key/values, 48 tensors" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run "$BIN/tsinfo" "$T/s.wps"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^gguf ')" -eq 1 ]
    [ "$(echo "$output" | grep -c '^kv ')" -eq 17 ]
    [ "$(echo "$output" | grep -c '^tensor ')" -eq 48 ]
    echo "$output" | grep -E '^tensor +blk.0.ffn_down.weight +F32 +172x64 +44032 +32.0000'
    echo "$output" | grep -E '^kv +general.architecture +string .*"llama"'
    echo "$output" | grep -E '^# 66 records, .* 292800 tensor weights, tensors 32.0000 b/w'
}

@test "a binary stream or GGUF to a terminal is refused, as zstd does; text reports and -o FILE are not" {
    command -v script > /dev/null || skip "no script(1) (util-linux) to give the programs a terminal"
    # (they wrote the binary stream onto the terminal: a new user's trial)
    "$BIN/ggufcat" "$F32" > "$T/m.wts"
    "$BIN/ggufcat" "$F32" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" -o "$T/m.bundle"
    msg="refusing to write a binary wpack stream to a terminal (redirect it, pipe it, or use -o FILE)"
    for c in "ggufcat $F32" "bf16split $T/m.wts" "histogram $T/m.wts" "huffbuild $T/m.wts" \
             "laneinterleave $T/m.wts" "unbundle --stream $T/m.bundle" "gptq --rtn --ftype Q8_0 $T/m.wts" \
             "safetensorscat $DATA/safetensors/open-calm-1b-lora-r1-f16.safetensors" \
             "hessian --model $F32 --text $DATA/text/groups_merged.txt"; do
        run script -qec "$BIN/$c" /dev/null
        [ "$status" -eq 1 ]
        [ "${output//$'\r'/}" = "${c%% *}: $msg" ]
    done
    run script -qec "$BIN/ggufpack $T/m.wts" /dev/null
    [ "$status" -eq 1 ]
    [ "${output//$'\r'/}" = "ggufpack: refusing to write a GGUF file to a terminal (redirect it, pipe it, or use -o FILE)" ]
    # unbundle, before its bundle says whether a GGUF or a safetensors file comes back
    run script -qec "$BIN/unbundle $T/m.bundle" /dev/null
    [ "$status" -eq 1 ]
    [ "${output//$'\r'/}" = "unbundle: refusing to write the restored file to a terminal (redirect it, pipe it, or use -o FILE)" ]
    # nor read from one: they waited for a stream typed in (a fresh user's trial); a pipe is read
    for c in histogram tsinfo "unbundle --stream -o $T/y.wts" "laneinterleave -o $T/x.bundle"; do
        run script -qec "$BIN/$c" /dev/null
        [ "$status" -eq 1 ]
        [ "${output//$'\r'/}" = "${c%% *}: stdin: a terminal, not a wpack stream (give a FILE, or pipe or redirect one in)" ]
    done
    [ ! -e "$T/x.bundle" ]
    [ ! -e "$T/y.wts" ]
    run script -qec "cat $T/m.wts | $BIN/tsinfo" /dev/null
    [ "$status" -eq 0 ]
    # text on standard output goes to the terminal; -o FILE is written
    run script -qec "$BIN/tsinfo $T/m.wts" /dev/null
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "kind "* ]]
    run script -qec "$BIN/verify $F32 $T/m.bundle" /dev/null
    [ "$status" -eq 0 ]
    run script -qec "$BIN/ggufcat -o $T/o.wts $F32" /dev/null
    [ "$status" -eq 0 ]
    cmp "$T/o.wts" "$T/m.wts"
    # -o naming the terminal is refused too (it wrote the stream onto it: a note's left alone),
    # -o /dev/null is written
    for c in "ggufcat -o /dev/stdout $F32" "ggufpack -o /dev/tty $T/m.wts" "unbundle -o /dev/stdout $T/m.bundle" \
             "gptq --rtn --ftype Q8_0 -o /dev/tty $T/m.wts"; do
        run script -qec "$BIN/$c" /dev/null
        [ "$status" -eq 1 ]
        o=${c#* -o }
        case $c in
            ggufpack*) what="a GGUF file" ;;
            unbundle*) what="the restored file" ;;
            *) what="a binary wpack stream" ;;
        esac
        [ "${output//$'\r'/}" = "${c%% *}: ${o%% *}: refusing to write $what to a terminal (give -o a FILE)" ]
    done
    run script -qec "$BIN/ggufcat -o /dev/null $F32" /dev/null
    [ "$status" -eq 0 ]
    [ -z "${output//$'\r'/}" ]
}

@test "tsinfo writes a string value's control bytes and NULs as \\xNN: two values that differ after a NUL list apart" {
    # "lla\0ma" and "lla\0zz" both listed as "lla"; a newline was a blank, where names say \x0a (a breaker's find)
    python3 - "$T/nl.gguf" <<'PY'
import struct, sys
def s(b): return struct.pack("<Q", len(b)) + b
kv = [(b"b.key", s(b"lla\0ma")), (b"c.key", s(b"lla\0zz")), (b"d.key", s(b"a\nb\x7fc"))]
out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
for k, v in kv: out += s(k) + struct.pack("<I", 8) + v
out += bytes(-len(out) % 32)
open(sys.argv[1], "wb").write(out)
PY
    "$BIN/ggufcat" "$T/nl.gguf" | "$BIN/tsinfo" > "$T/list"
    [ "$(awk '$1 == "kv" { print $2, $NF }' "$T/list")" = 'b.key "lla\x00ma"
c.key "lla\x00zz"
d.key "a\x0ab\x7fc"' ]
}

@test "tsinfo reads a stream from stdin" {
    run sh -c "'$BIN/ggufcat' '$MODELS/stories260K-f16.gguf' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^tensor +blk.4.attn_q.weight +F16 +64x64 +8192 +16.0000'
}

@test "tsinfo(1)'s -x diff: two copies of a model compare equal, one changed tensor differs in one line" {
    # the example diffed the gguf line too, which names the file: copies always differed (a new
    # user's trial)
    x() { "$BIN/ggufcat" "$1" | "$BIN/tsinfo" -x | grep -v '^gguf '; }
    cp "$MODELS/stories260K-f16.gguf" "$T/copy.gguf"
    diff <(x "$MODELS/stories260K-f16.gguf") <(x "$T/copy.gguf")
    printf '\001' | dd of="$T/copy.gguf" bs=1 seek=$(( $(stat -c %s "$T/copy.gguf") - 1 )) conv=notrunc status=none
    run diff <(x "$MODELS/stories260K-f16.gguf") <(x "$T/copy.gguf")
    [ "$status" -eq 1 ]
    [ "$(echo "$output" | grep -c '^[<>] tensor ')" -eq 2 ]
    [ "$(echo "$output" | grep -c '^[<>]')" -eq 2 ]
}

@test "a stream passes through ggufcat -o unchanged in meaning (ggufpack of it is identical)" {
    "$BIN/ggufcat" -o "$T/s.wps" "$MODELS/stories260K-bf16.gguf"
    "$BIN/ggufpack" "$T/s.wps" > "$T/b.gguf"
    cmp "$MODELS/stories260K-bf16.gguf" "$T/b.gguf"
}

# ---- bad input: one line naming the file, status != 0, no output file ------

@test "bad GGUF: truncated file" {
    head -c 100000 "$F32" > "$T/cut.gguf"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/cut.gguf"
    one_line_error "^ggufcat: $T/cut.gguf: .*(truncated|past the end)"
    [ ! -e "$T/out.wps" ]
}

@test "bad GGUF: a file cut inside its magic or header says what part needs how many bytes" {
    # an 8-byte file said "truncated file: header runs past the end (byte 4)", a 3-byte one
    # "truncated file" (a fresh user's find)
    head -c 3 "$F32" > "$T/3.gguf"
    head -c 8 "$F32" > "$T/8.gguf"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/3.gguf"
    one_line_error "^ggufcat: $T/3.gguf: truncated file: the magic at byte 0 needs 4 bytes, the file ends at byte 3$"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/8.gguf"
    one_line_error "^ggufcat: $T/8.gguf: truncated file: the header at byte 4 needs 20 bytes, the file ends at byte 8$"
    [ ! -e "$T/out.wps" ]
}

@test "bad GGUF: an empty file is said to be one, not a truncated file" {
    : > "$T/empty.gguf"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/empty.gguf"
    one_line_error "^ggufcat: $T/empty.gguf: empty file, not a GGUF file$"
    [ ! -e "$T/out.wps" ]
}

@test "bad GGUF: control bytes of a key are escaped in the one-line error" {
    # one key "a ESC [ 3 1" with an unknown value type: the message must not carry the ESC byte
    printf 'GGUF\003\0\0\0\0\0\0\0\0\0\0\0\001\0\0\0\0\0\0\0\005\0\0\0\0\0\0\0a\033[31\143\0\0\0' > "$T/esc.gguf"
    run "$BIN/ggufcat" "$T/esc.gguf"
    one_line_error "^ggufcat: $T/esc.gguf: key 'a.x1b\[31': unknown value type 99$"
    [[ "$output" == *"'a\x1b[31'"* ]]
    [[ "$output" != *$'\033'* ]]
}

@test "bad GGUF: wrong magic" {
    cp "$F32" "$T/m.gguf"; chmod u+w "$T/m.gguf"
    patch_bytes "$T/m.gguf" 0 'GGUX'
    run "$BIN/ggufcat" "$T/m.gguf"
    one_line_error "^ggufcat: $T/m.gguf: not a GGUF file \(bad magic\)$"
}

@test "bad GGUF: a safetensors file is named as one, with the tool that reads it" {
    cp "$DATA/safetensors/open-calm-1b-lora-r1-f16.safetensors" "$T/m.safetensors"
    run "$BIN/ggufcat" -o "$T/out.wts" "$T/m.safetensors"
    [ "$status" -eq 1 ]
    [ "$output" = "ggufcat: $T/m.safetensors: not a GGUF file (a safetensors file: read it with safetensorscat)" ]
    [ ! -e "$T/out.wts" ]
    # lazyweights's check (gptq --check) says it too, with lazyweights's way on: safetensorscat
    # alone was passed on, which lazyweights does not take (a fresh user's find)
    run "$ROOT/pipelines/lazyweights" --check Q8_0_g0_lam0_c1 "$T/m.safetensors"
    [ "$status" -eq 2 ]
    [ "$output" = "gptq: $T/m.safetensors: not a GGUF file (a safetensors file: make the GGUF first, safetensorscat FILE | ggufpack > FILE.gguf, and use that)" ]
    # cut short, it is named too (it was "bad magic", a fresh user's trial): safetensorscat
    # says the rest
    head -c 1000 "$T/m.safetensors" > "$T/cut.safetensors"
    run "$BIN/ggufcat" "$T/cut.safetensors"
    [ "$status" -eq 1 ]
    [ "$output" = "ggufcat: $T/cut.safetensors: not a GGUF file (a safetensors file: read it with safetensorscat)" ]
    # a length past a safetensors header's limit (WP_ST_MAX_HEADER) before the '{' is no such header
    printf '\377\377\377\377\377\0\0\0{}' > "$T/short.bin"
    run "$BIN/ggufcat" "$T/short.bin"
    one_line_error "^ggufcat: $T/short.bin: not a GGUF file \(bad magic\)$"
}

@test "bad GGUF: unknown version" {
    cp "$F32" "$T/v.gguf"; chmod u+w "$T/v.gguf"
    patch_bytes "$T/v.gguf" 4 "$(le32 99)"
    run "$BIN/ggufcat" "$T/v.gguf"
    one_line_error "unknown GGUF version 99"
}

@test "bad GGUF: tensor count larger than the file" {
    cp "$F32" "$T/c.gguf"; chmod u+w "$T/c.gguf"
    patch_bytes "$T/c.gguf" 8 "$(le64 4000000000)"
    run "$BIN/ggufcat" "$T/c.gguf"
    one_line_error "$T/c.gguf: tensor count 4000000000 is larger than the file allows"
}

@test "bad GGUF: key/value count larger than the file" {
    cp "$F32" "$T/k.gguf"; chmod u+w "$T/k.gguf"
    patch_bytes "$T/k.gguf" 16 "$(le64 99999999)"
    run "$BIN/ggufcat" "$T/k.gguf"
    one_line_error "key/value count 99999999 is larger than the file allows"
}

@test "bad GGUF: string length larger than the file" {
    cp "$F32" "$T/s.gguf"; chmod u+w "$T/s.gguf"
    patch_bytes "$T/s.gguf" 24 "$(le64 123456789012)"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/s.gguf"
    one_line_error "$T/s.gguf: key length 123456789012 is larger than the file"
    [ ! -e "$T/out.wps" ]
}

# Offset of the tensor info field after a 1-D tensor's name (name, u32 n_dims,
# i64 ne0, u32 type, u64 offset).
info_field() { # FILE NAME FIELD(type|offset)
    local at; at=$(offset_of "$1" "$2")
    case $3 in type) echo $((at + ${#2} + 4 + 8)) ;; offset) echo $((at + ${#2} + 4 + 8 + 4)) ;; esac
}

@test "bad GGUF: tensor offset past the end" {
    cp "$F32" "$T/o.gguf"; chmod u+w "$T/o.gguf"
    patch_bytes "$T/o.gguf" "$(info_field "$T/o.gguf" output_norm.weight offset)" "$(le64 $((1 << 30)))"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/o.gguf"
    one_line_error "tensor 'output_norm.weight': data at offset 1073741824 .* runs past the end of the file"
    [ ! -e "$T/out.wps" ]
}

@test "bad GGUF: misaligned tensor offset" {
    cp "$F32" "$T/a.gguf"; chmod u+w "$T/a.gguf"
    patch_bytes "$T/a.gguf" "$(info_field "$T/a.gguf" output_norm.weight offset)" "$(le64 131073)"
    run "$BIN/ggufcat" "$T/a.gguf"
    one_line_error "tensor 'output_norm.weight': data offset 131073 is not aligned to 32"
}

@test "bad GGUF: row length not a multiple of the type's block size" {
    cp "$F32" "$T/b.gguf"; chmod u+w "$T/b.gguf"
    patch_bytes "$T/b.gguf" "$(info_field "$T/b.gguf" output_norm.weight type)" "$(le32 12)"
    run "$BIN/ggufcat" "$T/b.gguf"
    one_line_error "tensor 'output_norm.weight': row length 64 is not a multiple of the Q4_K block size 256"
}

@test "bad GGUF: unknown ggml type" {
    cp "$F32" "$T/u.gguf"; chmod u+w "$T/u.gguf"
    patch_bytes "$T/u.gguf" "$(info_field "$T/u.gguf" output_norm.weight type)" "$(le32 4)"
    run "$BIN/ggufcat" "$T/u.gguf"
    one_line_error "tensor 'output_norm.weight': unknown ggml type 4"
}

@test "bad GGUF: duplicate tensor names" {
    cp "$F32" "$T/d.gguf"; chmod u+w "$T/d.gguf"
    patch_bytes "$T/d.gguf" "$(offset_of "$T/d.gguf" blk.0.attn_k.weight)" 'blk.0.attn_q.weight'
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/d.gguf"
    one_line_error "$T/d.gguf: duplicate tensor name 'blk.0.attn_q.weight'"
    [ ! -e "$T/out.wps" ]
}

@test "bad GGUF: duplicate keys" {
    cp "$F32" "$T/dk.gguf"; chmod u+w "$T/dk.gguf"
    patch_bytes "$T/dk.gguf" "$(offset_of "$T/dk.gguf" tokenizer.ggml.eos_token_id)" 'tokenizer.ggml.bos_token_id'
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/dk.gguf"
    one_line_error "^ggufcat: $T/dk.gguf: duplicate key 'tokenizer.ggml.bos_token_id'$"
    [ ! -e "$T/out.wps" ]
}

# patched_refused NAME OFFSET BYTES MESSAGE: stories260K F32 with BYTES (patch_bytes') at OFFSET,
# as NAME.gguf: ggufcat refuses it in the one line "ggufcat: FILE: MESSAGE" (a regex), writing nothing
patched_refused() {
    cp "$F32" "$T/$1.gguf"
    chmod u+w "$T/$1.gguf"
    patch_bytes "$T/$1.gguf" "$2" "$3"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/$1.gguf"
    one_line_error "^ggufcat: $T/$1.gguf: $4\$"
    [ ! -e "$T/out.wps" ]
}

@test "bad GGUF: a duplicate of the first key, a first pair of duplicate tensor names (sorted), are refused" {
    # llama.context_length, key 2, becomes key 0's name (20 bytes both): a duplicate of the
    # key with index 0 is one too
    patched_refused k0 "$(offset_of "$F32" llama.context_length)" 'general.architecture' \
        "duplicate key 'general.architecture'"
    # attn_q becomes attn_k: the two come first of all the names sorted
    patched_refused t0 "$(offset_of "$F32" blk.0.attn_q.weight)" 'blk.0.attn_k.weight' \
        "duplicate tensor name 'blk.0.attn_k.weight'"
}

@test "bad GGUF: an alignment of no power of two, a NUL in a key, a tensor of 0 dimensions, a whole alignment after the data" {
    # llama.block_count (u32 5, 17 bytes of name) becomes general.alignment = 24
    local at; at=$(offset_of "$F32" llama.block_count)
    [ "$(od -An -v -tu4 -j $((at + 17)) -N 8 "$F32" | tr -s ' ')" = " 4 5" ]
    patched_refused al "$at" "general.alignment$(le32 4)$(le32 24)" "general.alignment must be a power-of-two u32"
    # general.name's fourth byte a NUL
    patched_refused nul $(( $(offset_of "$F32" general.name) + 3 )) '\0' "key contains a NUL byte"
    # output_norm.weight's n_dims (after its name) 0
    patched_refused nd $(( $(offset_of "$F32" output_norm.weight) + 18 )) "$(le32 0)" \
        "tensor 'output_norm.weight': 0 dimensions \(1 to 4 allowed\)"
    # 32 zero bytes after the last tensor of a file of alignment 32 (ending on it) are no padding
    [ $(( $(wc -c < "$F32") % 32 )) -eq 0 ]
    { cat "$F32"; head -c 32 /dev/zero; } > "$T/tail.gguf"
    run "$BIN/ggufcat" -o "$T/out.wps" "$T/tail.gguf"
    one_line_error "^ggufcat: $T/tail.gguf: 32 bytes after the last tensor's data \(not GGUF padding\)$"
    [ ! -e "$T/out.wps" ]
}

@test "ggufpack: a gguf record of n_tensors=0 before a tensor is refused (0 is a count too)" {
    "$BIN/ggufcat" "$F32" > "$T/m.wts"
    stream_edit "$T/m.wts" "$T/n0.wts" "recs[:] = [r for r in recs if r.kind != 3 or r.name == 'output_norm.weight']
[r.attrs.__setitem__('n_tensors', '0') for r in recs if r.kind == 1]"
    fails_saying "ggufpack: $T/n0.wts: the gguf record says 0 tensors, the stream holds 1 (a tensor record lost or added on the way)" \
        "$BIN/ggufpack" -o "$T/o.gguf" "$T/n0.wts"
    [ ! -e "$T/o.gguf" ]
}

@test "ggufcat: a tensor after one that ends off the alignment, at its aligned offset, gets no offset= attribute" {
    # a: 7 F32 (28 bytes), b at 32, the next multiple of 32: the standard layout
    python3 -c '
import json, struct, sys
h = json.dumps({"a": {"dtype": "F32", "shape": [7], "data_offsets": [0, 28]},
                "b": {"dtype": "F32", "shape": [8], "data_offsets": [28, 60]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + struct.pack("<15f", *range(1, 16)))' "$T/s.safetensors"
    "$BIN/safetensorscat" "$T/s.safetensors" | "$BIN/ggufpack" -o "$T/s.gguf"
    "$BIN/ggufcat" "$T/s.gguf" > "$T/s.wts"
    run "$BIN/tsinfo" -a "$T/s.wts"
    [ "$status" -eq 0 ]
    [[ "$output" == *"tensor   b "* ]]
    [[ "$output" != *offset=* ]]
    "$BIN/ggufpack" "$T/s.wts" | cmp - "$T/s.gguf"
}

@test "bad input: a missing file" {
    run "$BIN/ggufcat" "$T/nope.gguf"
    one_line_error "^ggufcat: $T/nope.gguf: No such file or directory$"
}

@test "tsinfo FILE.gguf lists the GGUF as ggufcat writes it, attributes and hashes too (it said 'read it with ggufcat')" {
    local f
    for f in "$F32" "$MODELS/stories260K-bf16.gguf"; do
        run "$BIN/tsinfo" -a -x "$f"
        [ "$status" -eq 0 ]
        [ "$output" = "$("$BIN/ggufcat" "$f" | "$BIN/tsinfo" -a -x)" ]
    done
    run "$BIN/tsinfo" "$F32"
    [ "${lines[-1]}" = "# 66 records, 1181835 payload bytes, 292800 tensor weights, tensors 32.0000 b/w" ]
    # a GGUF cut short: the GGUF reader's line, nothing listed
    head -c 100000 "$F32" > "$T/cut.gguf"
    run --separate-stderr "$BIN/tsinfo" "$T/cut.gguf"
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [[ "$stderr" == "tsinfo: $T/cut.gguf: "* ]]
}

@test "bad input: ggufcat of a stream, tsinfo of a piped GGUF and ggufpack of a GGUF" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run "$BIN/ggufcat" "$T/s.wps"
    one_line_error "not a GGUF file \(a wpack stream"
    run sh -c "cat '$F32' | '$BIN/tsinfo'"
    one_line_error "^tsinfo: stdin: not a wpack stream \(a GGUF file"
    run "$BIN/ggufpack" -o "$T/x.gguf" "$F32"
    one_line_error "^ggufpack: $F32: not a wpack stream"
    [ ! -e "$T/x.gguf" ]
}

@test "bad input shorter than a stream header: bad magic unless it starts as a stream does" {
    # echo junk | tsinfo said "truncated stream" (a new user's trial); a text is named as one
    # (it was "bad magic": a helper's nit), and any other bytes are a bad magic
    run sh -c "echo junk | '$BIN/tsinfo'"
    one_line_error "^tsinfo: stdin: not a wpack stream \(a text file\)$"
    run sh -c "printf x | '$BIN/histogram'"
    one_line_error "^histogram: stdin: not a wpack stream \(a text file\)$"
    run sh -c "printf '\\001x' | '$BIN/histogram'"
    one_line_error "^histogram: stdin: not a wpack stream \(bad magic\)$"
    # the first 5 bytes of a real stream are a stream cut short; no bytes at all, too
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run sh -c "head -c 5 '$T/s.wps' | '$BIN/tsinfo'"
    one_line_error "^tsinfo: stdin: truncated stream: stream header ends at byte 5 "
    # nothing at all: said so (it was "truncated stream: stream header ends at byte 0")
    run sh -c "'$BIN/tsinfo' < /dev/null"
    one_line_error "^tsinfo: stdin: empty input, not a wpack stream \(upstream failed or wrote nothing\)$"
    : > "$T/empty.wps"
    run "$BIN/histogram" "$T/empty.wps"
    one_line_error "^histogram: $T/empty.wps: empty file, not a wpack stream$"
    # not "empty file" for what is not one (a reviewer's find): a zstd frame of nothing, and
    # a pipe that unbundle copies to a file before reading it
    zstd -q -c < /dev/null > "$T/empty.zst"
    [ "$(stat -c %s "$T/empty.zst")" -gt 0 ]
    run "$BIN/tsinfo" "$T/empty.zst"
    one_line_error "^tsinfo: $T/empty.zst: a zstd frame with nothing in it, not a wpack stream$"
    # unbundle decompresses a frame to a file first: it said "empty file" (a new user's find)
    run "$BIN/unbundle" -o "$T/u.gguf" "$T/empty.zst"
    one_line_error "^unbundle: $T/empty.zst: a zstd frame with nothing in it, not a wpack stream$"
    run sh -c "'$BIN/unbundle' --stream < '$T/empty.zst'"
    one_line_error "^unbundle: stdin: a zstd frame with nothing in it, not a wpack stream$"
    run sh -c "cat /dev/null | '$BIN/unbundle' -o '$T/u.gguf'"
    one_line_error "^unbundle: stdin: empty input, not a wpack stream \(upstream failed or wrote nothing\)$"
    [ ! -e "$T/u.gguf" ]
}

@test "a damaged index trailer, read in order: its magic or its offset named" {
    # both said "corrupt stream: bad trailer"
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    local n at
    n=$(stat -c %s "$T/s.wps")
    at=$(od -An -t u8 -j $((n - 16)) -N 8 "$T/s.wps" | tr -d ' ')
    [ "$at" -gt 32 ]
    cp "$T/s.wps" "$T/magic.wps"
    patch_bytes "$T/magic.wps" $((n - 1)) '\x00'
    run sh -c "'$BIN/tsinfo' '$T/magic.wps' > /dev/null"
    # as readers by index say it (they said "no index trailer in its last 16 bytes (...)")
    one_line_error "^tsinfo: $T/magic.wps: damaged or missing index trailer: the last 8 bytes are not \"WPACKEND\"$"
    zstd -q -c "$T/magic.wps" > "$T/magic.wps.zst"
    run sh -c "'$BIN/tsinfo' '$T/magic.wps.zst' > /dev/null"
    one_line_error "^tsinfo: $T/magic.wps.zst: damaged or missing index trailer: the last 8 bytes of the decompressed stream are not \"WPACKEND\"$"
    cp "$T/s.wps" "$T/off.wps"
    patch_bytes "$T/off.wps" $((n - 16)) '\x00'
    local to
    to=$(od -An -t u8 -j $((n - 16)) -N 8 "$T/off.wps" | tr -d ' ')
    [ "$to" -ne "$at" ]
    run sh -c "'$BIN/tsinfo' < '$T/off.wps' > /dev/null"
    one_line_error "^tsinfo: stdin: damaged index trailer: it points at byte $to, the index \(end record\) is at byte $at$"
    # in a zstd frame, the offsets are the decompressed stream's, and said so
    zstd -q -c "$T/off.wps" > "$T/off.wps.zst"
    run sh -c "'$BIN/tsinfo' '$T/off.wps.zst' > /dev/null"
    one_line_error "^tsinfo: $T/off.wps.zst: damaged index trailer: it points at byte $to, the index \(end record\) is at byte $at of the decompressed stream$"
}

@test "a stream file cut short, or grown, read by index: said where it ends, as read in order (not a damaged trailer)" {
    # both were "damaged or missing index trailer: the last 8 bytes are not ..." (a note's left alone)
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    local n c want emb
    n=$(stat -c %s "$T/s.wps")
    emb=$(( $(offset_of "$T/s.wps" token_embd.weight) - 72 ))   # its record (a 72-byte fixed header before the name)
    # the record header, its padding, the payload, its padding, the index, the trailer: each cut
    # said by wprun (which reads its files by index) as tsinfo reading a pipe (in order) says it,
    # naming the place (unbundle reads a plain stream in order)
    for c in 40 $((emb - 3)) $((emb + 30)) $((emb + 200)) $((n / 2)) $((n - 700)) $((n - 100)) $((n - 17)) $((n - 16)) $((n - 5)); do
        head -c "$c" "$T/s.wps" > "$T/cut.wps"
        want=$("$BIN/tsinfo" < "$T/cut.wps" 2>&1 > /dev/null || true)
        [[ "$want" == "tsinfo: stdin: truncated stream: "* ]]
        run --separate-stderr "$BIN/wprun" --cpu "$T/cut.wps"
        [ "$status" -eq 1 ]
        [ "$stderr" = "wprun: $T/cut.wps: ${want#tsinfo: stdin: }" ] || { echo "cut $c: $stderr / $want"; false; }
    done
    head -c $((emb + 200)) "$T/s.wps" > "$T/cut.wps"
    run --separate-stderr "$BIN/wprun" --cpu "$T/cut.wps"
    [ "$stderr" = "wprun: $T/cut.wps: truncated stream: record 'token_embd.weight' at byte $emb claims 131072 payload bytes, the file has $((200 - 72 - 17 - 8)) after its header" ]
    head -c $((n - 5)) "$T/s.wps" > "$T/cut.wps"
    run --separate-stderr "$BIN/wprun" --cpu "$T/cut.wps"
    [ "$stderr" = "wprun: $T/cut.wps: truncated stream: trailer ends at byte $((n - 5)) (upstream failed or file cut short)" ]
    # the index is "the index (end record)", as wpack-stream(5) names it (it was "an unnamed end record")
    head -c $((n - 100)) "$T/s.wps" > "$T/cut.wps"
    run --separate-stderr "$BIN/wprun" --cpu "$T/cut.wps"
    [[ "$stderr" == "wprun: $T/cut.wps: truncated stream: the index (end record) at byte "*" claims "* ]]
    # bytes after the trailer: counted
    { cat "$T/s.wps"; printf 'abc'; } > "$T/more.wps"
    run --separate-stderr "$BIN/wprun" --cpu "$T/more.wps"
    [ "$status" -eq 1 ]
    [ "$stderr" = "wprun: $T/more.wps: corrupt stream: data after its end (3 bytes after the trailer at byte $((n - 16)))" ]
    # a record header damaged before the cut: its checksum, not a length it never had
    cp "$T/s.wps" "$T/forged.wps"
    patch_bytes "$T/forged.wps" $((emb + 56)) '\xff\xff\xff\xff\xff\xff\xff\xff'
    head -c $((n / 2)) "$T/forged.wps" > "$T/cut.wps"
    run --separate-stderr "$BIN/wprun" --cpu "$T/cut.wps"
    [ "$stderr" = "wprun: $T/cut.wps: corrupt record header at byte $emb (checksum mismatch)" ]
    # a stream header whose alignment is bad: said so
    head -c $((n / 2)) "$T/s.wps" > "$T/cut.wps"
    patch_bytes "$T/cut.wps" 12 '\x03'
    run --separate-stderr "$BIN/wprun" --cpu "$T/cut.wps"
    [ "$stderr" = "wprun: $T/cut.wps: bad stream alignment 3" ]
}

@test "two streams in one pipe, or bytes after a stream: refused, not read as the first alone" {
    # every reader stopped at the first end record, so cat a.wps b.wps | gptq dropped b
    # without a word (a new user's trial)
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run sh -c "cat '$T/s.wps' '$T/s.wps' | '$BIN/ggufpack' -o '$T/two.gguf'"
    one_line_error "^ggufpack: stdin: corrupt stream: data after its end \(streams do not concatenate: one stream a pipe\)$"
    [ ! -e "$T/two.gguf" ]
    { cat "$T/s.wps"; echo JUNK; } > "$T/junk.wps"
    run sh -c "'$BIN/tsinfo' '$T/junk.wps' > /dev/null"
    one_line_error "^tsinfo: $T/junk.wps: corrupt stream: data after its end"
    run "$BIN/histogram" "$T/junk.wps"
    [ "$status" -ne 0 ]
}

@test "an option word where a value belongs is a missing value, in every program (not a file named --stream)" {
    # ggufpack -o -v wrote a file named -v, unbundle -o --stream a GGUF named --stream (a new
    # user's trial); gptq alone refused them
    cd "$T"
    for c in "ggufpack -o -v s.wps:-o:-v" "unbundle -o --stream m.bundle:-o:--stream" "histogram -o --report:-o:--report" \
             "laneinterleave -o --dist:-o:--dist" "bf16split --match -o x:--match:-o" "safetensorscat -o --x f:-o:--x" \
             "hessian --model m --text -o:--text:-o" "gptq --type Q4_0 -o --quiet:-o:--quiet"; do
        IFS=: read -r cmd opt val <<< "$c"
        run $BIN/$cmd
        one_line_error "^${cmd%% *}: $opt: missing value \(got the option $val\)$"
    done
    [ -z "$(ls -A "$T")" ]
    # "-" is standard output, and a negative number is a number
    "$BIN/ggufcat" -o - "$F32" | "$BIN/tsinfo" | grep -q '^tensor '
    run "$BIN/hessian" --model "$F32" --text x --ctx -5
    one_line_error "ctx"
}

@test "an output, a type, Hessians or an imatrix given twice with two values is refused before any work; the same value twice is taken" {
    # ggufcat -o x -o y wrote y alone, gptq --type Q4_0 --type Q8_0 wrote Q8_0, unsaid (a breaker's find)
    cd "$T"
    for c in "ggufcat -o x.wps $F32 -o y.wps:-o:x.wps:y.wps" "unbundle -o a.gguf -o b.gguf m.bundle:-o:a.gguf:b.gguf" \
             "safetensorscat -o a.wps -o b.wps f:-o:a.wps:b.wps" "gptq --type Q4_0 --type Q8_0 --rtn:--type:Q4_0:Q8_0" \
             "gptq --ftype Q4_K_M --ftype Q8_0 --rtn:--ftype:Q4_K_M:Q8_0" "gptq --hessian a --hessian b:--hessian:a:b" \
             "gptq --rtn --imatrix a --imatrix b:--imatrix:a:b" "gptq --type Q8_0 --rtn -o a.wps -o b.wps:-o:a.wps:b.wps" \
             "hessian --model m --text t -o a.hess --output-file b.hess:--output-file:a.hess:b.hess"; do
        IFS=: read -r cmd opt v1 v2 <<< "$c"
        run $BIN/$cmd < /dev/null
        one_line_error "^${cmd%% *}: $opt: given twice \('$v1', then '$v2'\): give one$"
    done
    [ -z "$(ls -A "$T")" ]
    "$BIN/ggufcat" -o x.wps -o x.wps "$F32"
    [ -s x.wps ]
    # a type in another case is the same type (q4_0 is Q4_0: it was "given twice", a re-tester's
    # find); ppl's and hessian's files too, named as typed
    "$BIN/gptq" --rtn --type q4_0 --type Q4_0 --quiet -o y.wps x.wps
    [ -s y.wps ]
    run "$BIN/ppl" -m m -f t --save-logits a --save-logits b
    one_line_error "^ppl: --save-logits: given twice \('a', then 'b'\): give one$"
    run "$BIN/ppl" --model m -f t -m n
    one_line_error "^ppl: -m: given twice \('m', then 'n'\): give one$"
    run "$BIN/hessian" -m m -f t --output a --output-file b
    one_line_error "^hessian: --output-file: given twice \('a', then 'b'\): give one$"
    run "$BIN/gptq" --rtn --ftype Q4_K_M --output-tensor-type q8_0 --output-tensor-type Q6_K
    one_line_error "^gptq: --output-tensor-type: given twice \('q8_0', then 'Q6_K'\): give one$"
}

# inputs_in_T: cd to $T and make there m.gguf (stories260K F32), its stream s.wps and bundle
# m.bundle, and copies s0.wps and m0.bundle to compare them with after a refused run
inputs_in_T() {
    cd "$T"
    cp "$F32" m.gguf
    "$BIN/ggufcat" -o s.wps m.gguf
    "$BIN/histogram" s.wps | "$BIN/huffbuild" | "$BIN/laneinterleave" > m.bundle
    cp s.wps s0.wps && cp m.bundle m0.bundle
}

@test "-o onto an input is refused and the input kept, through a link or standard input too" {
    # unbundle -o m.bundle m.bundle made the bundle a GGUF, hessian -o m.gguf replaced the model
    # with Hessians (a breaker's find)
    inputs_in_T
    ln -s s.wps link.wps
    for c in "ggufcat -o m.gguf m.gguf" "ggufpack -o s.wps s.wps" "histogram -o link.wps s.wps" \
             "unbundle -o m.bundle m.bundle" "gptq --type Q8_0 --quiet -o s.wps s.wps" \
             "hessian --model m.gguf --text $DATA/text/tinystories_sample.txt --ctx 64 --chunks 1 -o m.gguf"; do
        run $BIN/$c
        out=$(echo "$c" | sed 's/.* -o \([^ ]*\).*/\1/')
        one_line_error "^${c%% *}: $out: is also an input of this run: writing it would replace that input \(write elsewhere\)$"
    done
    run sh -c "'$BIN/bf16split' -o s.wps < s.wps"
    one_line_error "^bf16split: s.wps: is also an input of this run"
    cmp m.gguf "$F32"
    cmp s.wps s0.wps
    cmp m.bundle m0.bundle
    [ -L link.wps ]
    [ -z "$(ls -A | grep tmp)" ]
    # another file is fine, and so is a hard link of the input: the rename replaces that name
    # only (a reviewer's find: it was refused by inode)
    "$BIN/ggufpack" -o m2.gguf s.wps
    cmp m2.gguf "$F32"
    ln s.wps hard.wps
    "$BIN/histogram" -o hard.wps s.wps
    cmp s.wps s0.wps
    ! cmp -s hard.wps s0.wps || false
    # an empty name or a directory: said at once (it was ": cannot rename into place" after
    # the work; a breaker's find)
    for p in ggufpack histogram unbundle; do
        run "$BIN/$p" -o "" s.wps
        one_line_error "^$p: -o: an empty file name$"
        run "$BIN/$p" -o "$T" s.wps
        one_line_error "^$p: $T: is a directory$"
    done
    [ -z "$(ls -A | grep tmp)" ]
}

@test "standard output onto an input is refused and the input kept, as cat refuses it" {
    # ggufcat x.gguf >> x.gguf exited 0 and grew the model into a GGUF with a stream glued on;
    # every stream filter did the same, and 1<> overwrote the input in place (a tester's find)
    inputs_in_T
    for c in "ggufcat m.gguf" "bf16split s.wps" "histogram s.wps" "huffbuild s.wps" "laneinterleave s.wps" \
             "ggufpack s.wps" "tsinfo s.wps" "unbundle m.bundle" "unbundle --stream m.bundle" \
             "verify m.gguf m.bundle" "wprun --cpu m.bundle"; do
        f=$(echo "$c" | awk '{ print $NF }')
        [ "$c" = "verify m.gguf m.bundle" ] && f=m.gguf
        run sh -c "'$BIN/'$c >> $f"
        one_line_error "^${c%% *}: $f: is also standard output: what this run writes would overwrite or grow it \(write elsewhere\)$"
        run sh -c "'$BIN/'$c 1<> $f"
        one_line_error "^${c%% *}: $f: is also standard output"
    done
    # the second file of verify, and standard input
    run sh -c "'$BIN/verify' m.gguf m.bundle >> m.bundle"
    one_line_error "^verify: m.bundle: is also standard output"
    run sh -c "'$BIN/tsinfo' < s.wps >> s.wps"
    one_line_error "^tsinfo: stdin: is also standard output"
    cmp m.gguf "$F32"
    cmp s.wps s0.wps
    cmp m.bundle m0.bundle
    # another file, a pipe or /dev/null as standard output is fine
    "$BIN/tsinfo" s.wps >> list.txt
    grep -q '^tensor ' list.txt
    "$BIN/ggufcat" m.gguf | cmp - s.wps
    "$BIN/tsinfo" s.wps > /dev/null
}

@test "ggufpack of a stream without GGUF content (Hessians) is an error, not an empty GGUF" {
    "$BIN/hessian" --model "$F32" --text "$DATA/text/groups_merged.txt" --chunks 1 -o "$T/h.hess" 2> /dev/null
    run "$BIN/ggufpack" -o "$T/x.gguf" "$T/h.hess"
    one_line_error "^ggufpack: $T/h.hess: no GGUF header, key/value or tensor record to write \(36 records of other kinds, the first hessian\)$"
    [ ! -e "$T/x.gguf" ]
}

@test "broken pipe upstream: ggufpack fails, leaves no output file" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run sh -c "{ head -c 500000 '$T/s.wps'; exit 1; } | '$BIN/ggufpack' -o '$T/p.gguf'"
    one_line_error "^ggufpack: stdin: truncated stream"
    [ ! -e "$T/p.gguf" ]
}

@test "broken pipe upstream: ggufpack > FILE leaves FILE empty, not half-written" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run sh -c "head -c 700000 '$T/s.wps' | '$BIN/ggufpack' > '$T/q.gguf'"
    [ "$status" -ne 0 ]
    [ ! -s "$T/q.gguf" ]
}

@test "corrupt stream: a flipped payload bit is a checksum error" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    cp "$T/s.wps" "$T/f.wps"
    at=$(( $(stat -c %s "$T/s.wps") / 2 ))
    b=$(od -An -tu1 -j "$at" -N1 "$T/s.wps" | tr -d ' ')
    patch_bytes "$T/f.wps" "$at" "$(printf '\\x%02x' $((b ^ 16)))"
    run "$BIN/ggufpack" -o "$T/f.gguf" "$T/f.wps"
    one_line_error "^ggufpack: $T/f.wps: record '.*': payload checksum mismatch"
    [ ! -e "$T/f.gguf" ]
}

@test "--help of each program prints usage and exits 0" {
    for p in ggufcat ggufpack tsinfo; do
        run "$BIN/$p" --help
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "usage: $p"* ]]
    done
    # -h is --help, as in the pipelines (wp_cli_info)
    for p in ggufcat gptq hessian; do
        run "$BIN/$p" -h
        [ "$status" -eq 0 ]
        [ "$output" = "$("$BIN/$p" --help)" ]
        [[ "${lines[0]}" == "usage: $p"* ]]
    done
}

@test "--version of every program: its name, wpack's version (wpack.pc's) and the stream format, exit 0" {
    # (there was none: "unknown option", a fresh user's find)
    local v p n=0
    v=$(sed -n 's/^#define WPACK_VERSION "\(.*\)"$/\1/p' "$ROOT/lib/cli.h")
    [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]
    for p in "$BIN"/*; do
        [ -x "$p" ] || continue
        run "$p" --version
        [ "$status" -eq 0 ]
        [ "$output" = "$(basename "$p") (wpack) $v, wpack stream format 2" ]
        n=$((n + 1))
    done
    [ "$n" -eq 15 ]
    # the pipelines too, under their own names (they had none: "usage: ...", exit 2)
    for p in bitcheck bitrates frontier lazyweights unweight; do
        run "$ROOT/pipelines/$p" --version
        [ "$status" -eq 0 ]
        [ "$output" = "$p (wpack) $v, wpack stream format 2" ]
    done
    run --separate-stderr env WPACK_BIN="$T/nobin" "$ROOT/pipelines/bitcheck" --version
    [ "$status" -eq 2 ]
    [ "$stderr" = "bitcheck: $T/nobin/tsinfo: no such program, for the version (make all; or WPACK_BIN)" ]
    # among other options too, as --help is
    run "$BIN/gptq" --type Q8_0 --version
    [ "$output" = "gptq (wpack) $v, wpack stream format 2" ]
    run "$BIN/hessian" --threads 2 --version
    [ "$output" = "hessian (wpack) $v, wpack stream format 2" ]
}

@test "interrupted (SIGTERM) while writing -o: no temporary file is left" {
    mkfifo "$T/fifo"
    "$BIN/histogram" -o "$T/k.wps" "$T/fifo" &
    pid=$!
    exec 7> "$T/fifo"                       # histogram opens its output, then waits for input
    "$BIN/ggufcat" "$F32" | head -c 20000 >&7
    sleep 0.5
    ls "$T" | grep -q 'k.wps.tmp.'          # the temporary output exists while it runs
    kill -TERM "$pid"
    wait "$pid" || true
    exec 7>&-
    [ -z "$(ls "$T" | grep 'k.wps')" ]
}

@test "tsinfo: a failed listing leaves a redirected file empty; a write error is an error" {
    "$BIN/ggufcat" "$F32" | head -c 300000 > "$T/cut.wps"
    run sh -c "'$BIN/tsinfo' '$T/cut.wps' > '$T/list'"
    [ "$status" -eq 1 ]
    [ ! -s "$T/list" ]
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run sh -c "'$BIN/tsinfo' '$T/s.wps' > /dev/full"
    one_line_error "^tsinfo: stdout: write error"
}

@test "a failed run whose stdout and stderr are one log file: the error line stays, as the log's last" {
    # `verify ... > log 2>&1` left log empty, exit 1 and no reason: stdout was truncated back
    # after the error line was written to the same file (a fresh user's find)
    "$BIN/ggufcat" "$F32" > "$T/s.wts"
    "$BIN/ggufcat" "$F32" | head -c 300000 > "$T/cut.wts"
    run sh -c "'$BIN/verify' '$F32' '$T/s.wts' > '$T/log' 2>&1"
    [ "$status" -eq 1 ]
    [ "$(cat "$T/log")" = "verify: $T/s.wts: a tensor stream, not a bundle (its key/value records are not packed: laneinterleave makes the bundle)" ]
    echo "an earlier step" > "$T/ci.log"
    run sh -c "'$BIN/histogram' '$T/cut.wts' >> '$T/ci.log' 2>&1"
    [ "$status" -eq 1 ]
    [ "$(head -n 1 "$T/ci.log")" = "an earlier step" ]
    [ "$(wc -l < "$T/ci.log")" -eq 2 ]   # its partial stream is undone, then its line written
    [[ "$(tail -n 1 "$T/ci.log")" == "histogram: $T/cut.wts: truncated"* ]]
    [ "$(grep -c . "$T/ci.log")" -eq 2 ]
    # stderr elsewhere: the redirected stdout is still truncated back to where the run began
    echo "an earlier step" > "$T/out.log"
    run sh -c "'$BIN/histogram' '$T/cut.wts' >> '$T/out.log' 2> '$T/err'"
    [ "$status" -eq 1 ]
    [ "$(cat "$T/out.log")" = "an earlier step" ]
    [ "$(wc -l < "$T/err")" -eq 1 ]
}

@test "an option without its value says so" {
    run "$BIN/ggufpack" -o
    one_line_error "^ggufpack: -o: needs a value \(try --help\)$"
    run "$BIN/huffbuild" --max-len
    one_line_error "^huffbuild: --max-len: needs a value \(try --help\)$"
    run "$BIN/tsinfo" --bogus
    one_line_error "^tsinfo: --bogus: unknown option \(try --help\)$"
}

@test "-- ends the options, as in zstd: the words after it are files, -x.gguf and --help too" {
    cd "$T"
    cp "$F32" ./-x.gguf
    "$BIN/ggufcat" -- -x.gguf > s.wps
    [ "$("$BIN/tsinfo" -- s.wps | sed -n 2p)" = "gguf     -x.gguf                                  -        -                         0  " ]
    for p in histogram bf16split; do
        "$BIN/$p" -- s.wps > "$p.out"
        [ -s "$p.out" ]
    done
    "$BIN/ggufpack" -o ./-p.gguf -- s.wps
    cmp "$F32" ./-p.gguf
    "$BIN/gptq" --rtn --type Q8_0 -q -o ./-q.wps -- s.wps
    "$BIN/gptq" --rtn --type Q8_0 -q -- -q.wps > q.wps
    "$BIN/histogram" -- q.wps | "$BIN/huffbuild" -- - | "$BIN/laneinterleave" -o ./-b.bundle -- -
    "$BIN/unbundle" -- -b.bundle > q.gguf
    run "$BIN/verify" -q -- q.gguf -b.bundle
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = "rebuilt GGUF byte-identical: every tensor matches with both decoders" ]
    # each takes its one input (verify its two) after --, and an option there is a file
    run "$BIN/ggufcat" -- -x.gguf -y
    one_line_error "^ggufcat: one input at a time \(got '-y' too\)$"
    # a second word that names no file is told where an output goes, as cp's or llama-quantize's
    # OUT (it said only "one input at a time": a fresh user's check); nothing is written there
    run "$BIN/unbundle" ./-b.bundle out.gguf
    one_line_error "^unbundle: one input at a time \(got 'out.gguf' too, no such file: the output goes to standard output\)$"
    [ ! -e out.gguf ]
    run "$BIN/unbundle" ./-b.bundle q.gguf
    one_line_error "^unbundle: one input at a time \(got 'q.gguf' too\)$"
    # the output named first, as cp takes it: said so (it was "got './-b.bundle' too" alone: a
    # new user's find)
    run "$BIN/unbundle" out.gguf ./-b.bundle
    one_line_error "^unbundle: one input at a time \(got './-b.bundle' too; 'out.gguf' is no file: the output goes to standard output\)$"
    [ ! -e out.gguf ]
    run "$BIN/gptq" --rtn -- s.wps --type
    one_line_error "^gptq: one input stream at a time \(got '--type' too\)$"
    run "$BIN/verify" -- q.gguf -b.bundle -q
    one_line_error "^verify: too many arguments \(got '-q' too; try --help\)$"
    run "$BIN/tsinfo" -- --help
    one_line_error "^tsinfo: --help: No such file or directory$"
}

@test "interrupted (SIGINT) while writing to a redirected stdout: the file is left empty" {
    mkfifo "$T/fifo2"
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    # (a script's background job starts with SIGINT ignored, which a wpack program now keeps:
    # env gives it the default a foreground job, the one Ctrl-C reaches, has)
    env --default-signal=INT sh -c "exec '$BIN/histogram' '$T/fifo2' > '$T/part.wps'" &
    pid=$!
    exec 7> "$T/fifo2"
    head -c 900000 "$T/s.wps" >&7
    sleep 0.5
    [ -s "$T/part.wps" ]                     # it has written part of its stream
    kill -INT "$pid"
    wait "$pid" || true
    exec 7>&-
    [ ! -s "$T/part.wps" ]
}

@test "a failed run keeps the lines another writer put in its redirected stdout meanwhile (make -j > build.log)" {
    # the cut-back to where the run began took them too: a job's lines and its failure went
    # from a shared make -j log (a breaker's find). make's jobs share one open file, as fd 8
    # here: opened with > (one offset for all) or >>; alone in the file, it is cut back as before
    mkfifo "$T/fifo4"
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    for redir in '>' '>>' alone; do
        printf 'start\n' > "$T/log"
        if [ "$redir" = '>' ]; then
            exec 8> "$T/log"
            printf 'start\n' >&8
        else
            exec 8>> "$T/log"
        fi
        sh -c "exec '$BIN/histogram' '$T/fifo4' 2> '$T/err'" >&8 &
        pid=$!
        exec 7> "$T/fifo4"
        head -c 900000 "$T/s.wps" >&7
        sleep 0.5
        [ "$redir" = alone ] || printf 'another job: step 1 ok\n' >&8
        exec 7>&-   # the stream cut short: histogram fails
        st=0
        wait "$pid" || st=$?
        exec 8>&-
        [ "$st" -eq 1 ]
        [[ "$(cat "$T/err")" == "histogram: $T/fifo4: truncated stream"* ]]
        if [ "$redir" = alone ]; then
            [ "$(cat "$T/log")" = "start" ]
        else
            grep -aq 'another job: step 1 ok' "$T/log" || { echo "$redir: the other job's line is gone"; false; }
            [ "$(head -n 1 "$T/log")" = "start" ]
        fi
    done
}

# gptq -o $1 reading $T/fifo5, started after the shell words $2 (a trap), sent a hangup
# once it has read 400,000 bytes of $T/s.wps; $pid is its process, the FIFO stays open on fd 7
hup_gptq() {
    sh -c "$2 exec '$BIN/gptq' --rtn --ftype Q8_0 --quiet -o '$1' '$T/fifo5'" &
    pid=$!
    exec 7> "$T/fifo5"
    head -c 400000 "$T/s.wps" >&7
    sleep 0.3
    kill -HUP "$pid"
}

@test "a signal ignored when the program starts stays ignored: nohup's SIGHUP does not end gptq" {
    # every wpack program put its own handler on SIGHUP, SIGINT, SIGTERM and SIGPIPE: `nohup gptq`
    # and `nohup make model`'s steps died of a hangup (a breaker's find); as gzip does
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    mkfifo "$T/fifo5"
    hup_gptq "$T/hup.wts" "trap '' HUP;"
    sleep 0.2
    tail -c +400001 "$T/s.wps" >&7
    exec 7>&-
    wait "$pid"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --rtn --ftype Q8_0 --quiet -o "$T/ref.wts"
    cmp "$T/hup.wts" "$T/ref.wts"
    # not ignored: the hangup ends it, its temporary file removed
    hup_gptq "$T/hup2.wts" ""
    st=0
    wait "$pid" || st=$?
    exec 7>&-
    [ "$st" -eq 129 ]
    [ -z "$(ls "$T" | grep hup2)" ]
}

@test "tests/run without the shared data stops at once with one line saying where it looked" {
    run env WPACK_DATA="$T/nodata" sh "$ROOT/tests/run"
    [ "$status" -eq 2 ]
    [ "$output" = "tests/run: no shared data at $T/nodata (stories260K missing): put the checkout beside shared/, or set WPACK_DATA=DIR" ]
}

@test "a failed run appended to a file (>>) keeps what the file held; a good one appends" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    head -c 300000 "$T/s.wps" > "$T/cut.wps"
    # the start was taken as the file offset, 0 for an O_APPEND descriptor: the whole log went
    # (a new user's trial)
    for p in tsinfo histogram bf16split; do
        printf 'precious\n' > "$T/log"
        run sh -c "'$BIN/$p' '$T/cut.wps' >> '$T/log'"
        [ "$status" -eq 1 ]
        [ "$(cat "$T/log")" = "precious" ]
    done
    printf 'precious\n' > "$T/log"
    "$BIN/tsinfo" "$T/s.wps" >> "$T/log"
    [ "$(head -n 1 "$T/log")" = "precious" ]
    [ "$(sed -n 2p "$T/log" | cut -c1-4)" = "kind" ]
}

@test "killed by SIGPIPE while writing -o: no temporary file is left" {
    mkfifo "$T/fifo3"
    "$BIN/histogram" -o "$T/p.wps" "$T/fifo3" &
    pid=$!
    exec 7> "$T/fifo3"
    "$BIN/ggufcat" "$F32" | head -c 20000 >&7
    sleep 0.5
    ls "$T" | grep -q 'p.wps.tmp.'
    kill -PIPE "$pid"
    wait "$pid" || true
    exec 7>&-
    [ -z "$(ls "$T" | grep 'p.wps')" ]
}

@test "--help into a full disk is a write error, not exit 0" {
    for p in ggufcat tsinfo gptq verify safetensorscat hessian; do
        run sh -c "'$BIN/$p' --help > /dev/full"
        one_line_error "^$p: stdout: write error: No space left on device$"
    done
}

@test "-o onto a FIFO writes into it; -o through a symbolic link replaces the file it names, the link kept" {
    # both were replaced by a regular file (a new user's trial: -o /dev/null replaced /dev/null)
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    mkfifo "$T/ff"
    cat "$T/ff" > "$T/from_fifo" &
    reader=$!
    "$BIN/ggufpack" -o "$T/ff" "$T/s.wps"
    wait "$reader"
    [ -p "$T/ff" ]
    cmp "$T/from_fifo" "$F32"
    mkdir "$T/d"
    printf 'old\n' > "$T/d/real.gguf"
    ln -s d/real.gguf "$T/link.gguf"
    "$BIN/ggufpack" -o "$T/link.gguf" "$T/s.wps"
    [ -L "$T/link.gguf" ]
    cmp "$T/d/real.gguf" "$F32"
    # a failed run through the link: the file it names as it was, no temporary file anywhere
    printf 'old\n' > "$T/d/real.gguf"
    head -c 300000 "$T/s.wps" > "$T/cut.wps"
    run "$BIN/ggufpack" -o "$T/link.gguf" "$T/cut.wps"
    [ "$status" -eq 1 ]
    [ -L "$T/link.gguf" ]
    [ "$(cat "$T/d/real.gguf")" = "old" ]
    [ -z "$(ls "$T" "$T/d" | grep '\.tmp\.')" ]
}

@test "-o over an existing file keeps its mode, as > does; a new file gets 0666 less the umask" {
    # (a new user's trial: chmod 600 then unbundle -o made the file 644)
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    printf 'old\n' > "$T/p600.gguf"
    chmod 600 "$T/p600.gguf"
    "$BIN/ggufpack" -o "$T/p600.gguf" "$T/s.wps"
    cmp "$T/p600.gguf" "$F32"
    [ "$(stat -c %a "$T/p600.gguf")" = 600 ]
    printf 'old\n' > "$T/p750.gguf"
    chmod 750 "$T/p750.gguf"
    "$BIN/ggufpack" -o "$T/p750.gguf" "$T/s.wps"
    [ "$(stat -c %a "$T/p750.gguf")" = 750 ]
    # but not setuid (a write by `>` clears it): 4755 becomes 755
    chmod 4755 "$T/p750.gguf"
    "$BIN/ggufpack" -o "$T/p750.gguf" "$T/s.wps"
    [ "$(stat -c %a "$T/p750.gguf")" = 755 ]
    (umask 027 && "$BIN/ggufpack" -o "$T/new.gguf" "$T/s.wps")
    [ "$(stat -c %a "$T/new.gguf")" = 640 ]
}

@test "-o NAME.gguf for a wpack stream or bundle, NAME.safetensors for any output, is refused before any work: nothing could load it" {
    # gptq -o m-q4.gguf wrote a stream under a GGUF's name, silently; llama.cpp then said "bad
    # magic" (a fresh user's find)
    cd "$T"
    local why="refusing to write a wpack stream under a GGUF's name: llama.cpp could not load it (name it otherwise; ggufpack makes a GGUF of a model's stream, unbundle of a bundle)"
    run "$BIN/gptq" --rtn --type Q8_0 -o q.gguf < /dev/null
    one_line_error "^gptq: q.gguf: $(printf '%s' "$why" | sed 's/[()]/\\&/g')$"
    run "$BIN/ggufcat" -o M.GGUF "$F32"
    one_line_error "^ggufcat: M.GGUF: refusing to write a wpack stream under a GGUF's name"
    run "$BIN/hessian" --model "$F32" --text "$DATA/text/tinystories_sample.txt" --ctx 64 --chunks 1 -o h.gguf
    # (Hessians told otherwise: ggufpack makes no GGUF of them, a note's left alone)
    one_line_error "^hessian: h.gguf: refusing to write Hessians under a GGUF's name: they are gptq --hessian's input, no model llama.cpp loads and no llama-imatrix GGUF \(name it NAME.hess\)$"
    run "$BIN/hessian" --model "$F32" --text "$DATA/text/tinystories_sample.txt" --ctx 64 --chunks 1 -o h.gguf.zst
    one_line_error "^hessian: h.gguf.zst: refusing to write Hessians under a GGUF's name: "   # (a fresh user's find)
    run "$BIN/hessian" --model "$F32" --text "$DATA/text/tinystories_sample.txt" --ctx 64 --chunks 1 -o h.safetensors
    one_line_error "^hessian: h.safetensors: refusing to write Hessians under a safetensors name: safetensors loaders could not read it \(name it NAME.hess\)$"
    "$BIN/ggufcat" -o s.wps "$F32"
    "$BIN/histogram" s.wps | "$BIN/huffbuild" > t.wps
    run "$BIN/laneinterleave" -o b.gguf t.wps
    one_line_error "^laneinterleave: b.gguf: refusing to write a wpack stream under a GGUF's name"
    "$BIN/laneinterleave" -o b.bundle t.wps
    run "$BIN/unbundle" --stream -o u.gguf b.bundle
    one_line_error "^unbundle: u.gguf: refusing to write a wpack stream under a GGUF's name"
    # standard output redirected to one (a second user's find), and a link named otherwise to one
    run sh -c "'$BIN/gptq' --rtn --type Q8_0 < s.wps > q2.gguf"
    one_line_error "^gptq: stdout \\($T/q2.gguf\\): refusing to write a wpack stream under a GGUF's name"
    [ ! -s q2.gguf ]
    rm q2.gguf
    ln -s real.gguf link.wps
    run "$BIN/ggufcat" -o link.wps "$F32"
    one_line_error "^ggufcat: link.wps \\(a link to real.gguf\\): refusing to write a wpack stream"
    rm link.wps
    [ "$(ls | tr '\n' ' ')" = "b.bundle s.wps t.wps " ]
    # the GGUF writers write it, and a stream goes under any other name (.gguf.wps too)
    "$BIN/ggufpack" -o m.gguf s.wps
    "$BIN/unbundle" -o m2.gguf b.bundle
    cmp m.gguf "$F32"
    cmp m2.gguf "$F32"
    "$BIN/ggufcat" -o m.gguf.wps m.gguf
    "$BIN/ggufpack" m.gguf.wps | cmp - "$F32"
    # nor a GGUF or a stream under a safetensors name (unbundle -o model.safetensors wrote a GGUF
    # there, exit 0: a new user's trial), in any case, redirected too
    run "$BIN/unbundle" -o model.safetensors b.bundle
    one_line_error "^unbundle: model.safetensors: refusing to write a GGUF file under a safetensors name: safetensors loaders could not read it \(name it NAME.gguf; a bundle of one safetensors file's stream gives that file back\)$"
    run sh -c "'$BIN/ggufpack' < s.wps > m.SafeTensors"
    one_line_error "^ggufpack: stdout \($T/m.SafeTensors\): refusing to write a GGUF file under a safetensors name"
    [ ! -s m.SafeTensors ]
    run "$BIN/safetensorscat" -o s.safetensors "$DATA/safetensors/sd15-lora-r4-f16.safetensors"
    one_line_error "^safetensorscat: s.safetensors: refusing to write a wpack stream under a safetensors name: safetensors loaders could not read it \(name it otherwise; safetensorspack writes the file of one safetensors file's stream\)$"
    [ ! -e s.safetensors ]
    [ ! -e model.safetensors ]
    "$BIN/ggufpack" -o m.safetensors.gguf s.wps
    cmp m.safetensors.gguf "$F32"
    # a --dist bundle named as a zstd'd GGUF, which zstd -d made a ship.gguf llama.cpp could not
    # load, and a GGUF (written uncompressed) under a .zst name (a new user's trial)
    run "$BIN/laneinterleave" --dist -o ship.gguf.zst t.wps
    one_line_error "^laneinterleave: ship.gguf.zst: refusing to write a wpack stream under a zstd'd GGUF's name: zstd -d would give a .gguf llama.cpp cannot load \(name it otherwise, such as NAME.dist.bundle; unbundle writes the GGUF\)$"
    [ ! -e ship.gguf.zst ]
    run "$BIN/unbundle" -o back.GGUF.ZST b.bundle
    one_line_error "^unbundle: back.GGUF.ZST: refusing to write a GGUF file under a zstd name: it is written uncompressed \(name it NAME.gguf, then zstd it\)$"
    [ ! -e back.GGUF.ZST ]
    # nor under another compressor's name (unbundle -o r.gguf.gz wrote a plain GGUF, exit 0: a
    # note's left alone), a stream under a compressed GGUF's, Hessians under either
    run "$BIN/unbundle" -o r.gguf.gz b.bundle
    one_line_error "^unbundle: r.gguf.gz: refusing to write a GGUF file under a gzip name: it is written uncompressed \(name it NAME.gguf, then gzip it\)$"
    run "$BIN/ggufpack" -o r.GGUF.XZ s.wps
    one_line_error "^ggufpack: r.GGUF.XZ: refusing to write a GGUF file under an xz name: it is written uncompressed \(name it NAME.gguf, then xz it\)$"
    for c in bz2:bzip2 lz4:lz4 lzma:lzma; do
        run "$BIN/unbundle" -o "r.gguf.${c%%:*}" b.bundle
        one_line_error "^unbundle: r.gguf.${c%%:*}: refusing to write a GGUF file under an? ${c#*:} name: it is written uncompressed \(name it NAME.gguf, then ${c#*:} it\)$"
    done
    run "$BIN/ggufcat" -o s.gguf.lz4 "$F32"
    one_line_error "^ggufcat: s.gguf.lz4: refusing to write a wpack stream under an lz4'd GGUF's name: lz4 -d would give a .gguf llama.cpp cannot load \(name it otherwise, such as NAME.dist.bundle; unbundle writes the GGUF\)$"
    run sh -c "'$BIN/laneinterleave' --dist < t.wps > ship.gguf.gz"
    one_line_error "^laneinterleave: stdout \($T/ship.gguf.gz\): refusing to write a wpack stream under a gzip'd GGUF's name: gzip -d would give"
    [ ! -s ship.gguf.gz ]
    rm ship.gguf.gz
    run "$BIN/hessian" --model "$F32" --text "$ROOT/README.md" -o h.gguf.xz
    one_line_error "^hessian: h.gguf.xz: refusing to write Hessians under a GGUF's name"
    run "$BIN/ggufcat" -o s.gguf.LZMA "$F32"   # (.lzma was left out: a breaker's find)
    one_line_error "^ggufcat: s.gguf.LZMA: refusing to write a wpack stream under an lzma'd GGUF's name: lzma -d would give"
    [ "$(ls r.* s.gguf.* h.* 2> /dev/null)" = "" ]
    "$BIN/ggufcat" -o s.wps.gz "$F32"   # (a stream under a compressor's name alone: as before)
    "$BIN/laneinterleave" --dist -o ship.dist.bundle t.wps
    "$BIN/ggufcat" -o s.wps.zst "$F32"   # (a stream under another .zst name: as before)
}

@test "-o over a write-protected file is refused before any work, root or not; the file kept" {
    # a rename replaced a 0444 model, as root and as its owner alike (a new user's trial,
    # which so replaced a shared data file); `echo x > f` is refused
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    printf 'old\n' > "$T/ro.gguf"
    local m
    for m in 444 400 555; do
        chmod "$m" "$T/ro.gguf"
        run "$BIN/ggufpack" -o "$T/ro.gguf" "$T/s.wps"
        one_line_error "^ggufpack: $T/ro.gguf: write-protected: not replaced \(make it writable, or remove it, first\)$"
        [ "$(cat "$T/ro.gguf")" = old ]
    done
    # the programs that work long before they write say so first: gptq with no input at all
    run "$BIN/gptq" --rtn --type Q8_0 -o "$T/ro.gguf" < /dev/null
    one_line_error "^gptq: $T/ro.gguf: write-protected: not replaced"
    run "$BIN/hessian" --model "$F32" --text "$ROOT/README.md" -o "$T/ro.gguf"
    one_line_error "^hessian: $T/ro.gguf: write-protected: not replaced"
    [ -z "$(ls "$T" | grep '\.tmp\.')" ]
    # a write bit for someone else only (0200: root may write it) is replaced, mode kept
    chmod 200 "$T/ro.gguf"
    "$BIN/ggufpack" -o "$T/ro.gguf" "$T/s.wps"
    cmp "$T/ro.gguf" "$F32"
    [ "$(stat -c %a "$T/ro.gguf")" = 200 ]
    # another user's 0644 file, in a folder anyone may write: refused to that user too
    local d; d=$(mktemp -d "${TMPDIR:-/tmp}/wpack-ro.XXXXXX")
    chmod 1777 "$d"
    cp "$T/s.wps" "$d/s.wps" && chmod 644 "$d/s.wps"
    printf 'old\n' > "$d/theirs.gguf"
    chmod 644 "$d/theirs.gguf"
    if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/ggufpack" --version > /dev/null 2>&1; then
        run setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/ggufpack" -o "$d/theirs.gguf" "$d/s.wps"
        one_line_error "^ggufpack: $d/theirs.gguf: write-protected: not replaced"
        [ "$(cat "$d/theirs.gguf")" = old ]
        # another user's file that user may write, in a sticky folder: the rename would fail
        # after the work ("cannot rename into place": a breaker's find)
        printf 'old\n' > "$d/root666.gguf"
        chmod 666 "$d/root666.gguf"
        run setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/ggufpack" -o "$d/root666.gguf" "$d/s.wps"
        one_line_error "^ggufpack: $d/root666.gguf: another user's file in a sticky folder: not replaced \(write elsewhere\)$"
        [ "$(cat "$d/root666.gguf")" = old ]
    else
        echo "# (not run: no root, or user 65534 cannot run $BIN/ggufpack)" >&3
    fi
    rm -rf "$d"
    # -o onto a write-protected input: said as the input it is, by the programs that check
    # before they read (they said write-protected: a breaker's find)
    cp "$T/s.wps" "$T/in.wps" && chmod 444 "$T/in.wps"
    run "$BIN/ggufpack" -o "$T/in.wps" "$T/in.wps"
    one_line_error "^ggufpack: $T/in.wps: is also an input of this run"
    run "$BIN/gptq" --type Q8_0 -o "$T/in.wps" "$T/in.wps"
    one_line_error "^gptq: $T/in.wps: is also an input of this run"
    run "$BIN/unbundle" --stream -o "$T/in.wps" "$T/in.wps"
    one_line_error "^unbundle: $T/in.wps: is also an input of this run"
}

@test "-o FILE with a name of 245 to 255 bytes is written (its temporary name, FILE.tmp.XXXXXX, was too long)" {
    # "cannot create: File name too long" for a name the file system takes (a breaker's find)
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    local n
    for n in 244 245 250 255; do
        local name
        name=$(printf "%${n}s" "" | tr ' ' a)
        "$BIN/ggufpack" -o "$T/$name" "$T/s.wps"
        cmp "$T/$name" "$F32"
        rm "$T/$name"
    done
    [ -z "$(ls -A "$T" | grep -v '^s\.wps$')" ]   # and no temporary file left
    # and a whole path of 4085 to 4095 bytes (the temporary name overran PATH_MAX: a re-tester's find)
    local d="$T/p"   # a folder path of 3900 bytes, in parts of 250 at most
    while [ $(( ${#d} + 251 )) -le 3900 ]; do d="$d/$(printf '%250s' '' | tr ' ' d)"; done
    [ ${#d} -eq 3900 ] || d="$d/$(printf "%$((3900 - ${#d} - 1))s" '' | tr ' ' e)"
    [ ${#d} -eq 3900 ]
    mkdir -p "$d"
    for n in 4085 4095; do
        name="$d/$(printf "%$((n - ${#d} - 1))s" '' | tr ' ' f)"
        [ "${#name}" -eq "$n" ]
        "$BIN/ggufpack" -o "$name" "$T/s.wps"
        cmp "$name" "$F32"
        rm "$name"
    done
    [ -z "$(ls -A "$d")" ]
    # the temporary name cut between UTF-8 characters, not inside one (a file system taking UTF-8
    # names only refuses half of one: a reviewer's find): seen where a SIGKILL leaves it
    mkdir "$T/u8" && cd "$T/u8"
    name="a$(printf '\303\251%.0s' $(seq 124))"   # a and 124 two-byte characters: 249 bytes
    mkfifo in.fifo
    "$BIN/histogram" -o "$name" < in.fifo &
    local pid=$!
    exec 8> in.fifo   # (bats holds 3)
    head -c 5000 "$T/s.wps" >&8
    for i in $(seq 100); do
        if [ -n "$(ls | grep -v -e '^in\.fifo$' -e "^$name\$")" ]; then break; fi
        sleep 0.05
    done
    kill -9 "$pid"
    exec 8>&-
    wait "$pid" || true
    local tmp
    tmp=$(ls | grep -v '^in\.fifo$')
    [ "$(printf '%s' "$tmp" | wc -c)" -le 255 ]
    [[ $tmp == a* ]]
    printf '%s' "$tmp" | iconv -f UTF-8 -t UTF-8 > /dev/null
    cd "$T"
}

@test "-o FILE with standard error closed: the output is the program's alone (its progress lines went into it, exit 0)" {
    # the temporary file took descriptor 2 (a re-tester's find)
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    "$BIN/gptq" --ftype Q8_0 --rtn -o "$T/open.wts" "$T/s.wps" 2> /dev/null
    run bash -c "'$BIN/gptq' --ftype Q8_0 --rtn -o '$T/closed.wts' '$T/s.wps' 2>&-"
    [ "$status" -eq 0 ]
    cmp "$T/open.wts" "$T/closed.wts"
    # and a failure with stderr closed still fails, its temporary file removed
    run bash -c "'$BIN/ggufpack' -o '$T/bad.gguf' '$T/open.wts.none' 2>&-"
    [ "$status" -eq 1 ]
    [ -z "$(ls -A "$T" | grep -v -e '^s\.wps$' -e '^open\.wts$' -e '^closed\.wts$')" ]
}

@test "a program whose standard input is closed says so; unbundle read its own spool as the input" {
    # the spool took descriptor 0: "unbundle: stdin: empty input, not a wpack stream" (a breaker's find)
    local p
    for p in unbundle tsinfo; do
        run sh -c "'$BIN/$p' <&- > '$T/out'"
        one_line_error "^$p: stdin: read error: Bad file descriptor"
    done
}

@test "a temporary file that cannot grow (a full TMPDIR) names the input and the cause, as ggufpack did" {
    # "unbundle: temporary file: write error" and "gptq: temporary file: spool: write error: ..."
    # named neither the input nor (unbundle) the cause (a breaker's find, on a full tmpfs); here
    # the file size limit stops the spool, as a full disk does
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    "$BIN/histogram" < "$T/s.wps" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/s.bundle"
    local p
    for p in "unbundle:s.bundle" "gptq --ftype Q8_0 --rtn -q:s.wps" "ggufpack:s.wps"; do
        run bash -c "trap '' XFSZ; ulimit -f 64; cat '$T/${p#*:}' | TMPDIR='$T' '$BIN/'${p%%:*} > /dev/null"
        one_line_error "^${p%%[ :]*}: stdin: temporary file in $T \(TMPDIR\): write error: File too large$"
        # and where, without TMPDIR (it was "temporary file: write error" alone, no folder: a
        # new user's trial, gptq's copy of a whole model in /tmp)
        run bash -c "trap '' XFSZ; ulimit -f 64; cat '$T/${p#*:}' | env -u TMPDIR '$BIN/'${p%%:*} > /dev/null"
        one_line_error "^${p%%[ :]*}: stdin: temporary file in /tmp: write error: File too large$"
    done
    # the spool a --dist bundle is decompressed into, too (a breaker's find)
    "$BIN/laneinterleave" --dist -o "$T/s.dist.bundle" < <("$BIN/histogram" < "$T/s.wps" | "$BIN/huffbuild")
    run bash -c "trap '' XFSZ; ulimit -f 64; TMPDIR='$T' '$BIN/unbundle' '$T/s.dist.bundle' > /dev/null"
    one_line_error "^unbundle: $T/s.dist.bundle: temporary file in $T \(TMPDIR\): write error: File too large$"
}

@test "a file-size limit (ulimit -f) is a write error in one line, its output undone: SIGXFSZ killed every filter silently" {
    # (exit 153, nothing said, a partial stdout file or -o's temporary file left: a breaker's find)
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    "$BIN/histogram" < "$T/s.wps" > "$T/h.wps"
    [ "$(stat -c %s "$T/s.wps")" -gt 200000 ]
    local p
    for p in "ggufcat '$F32'" "histogram '$T/s.wps'" "bf16split '$T/s.wps'"; do
        run bash -c "ulimit -f 100; '$BIN/'$p > '$T/out'"
        one_line_error "^${p%% *}: stdout: write error: File too large$"
        [ ! -s "$T/out" ]
        run bash -c "ulimit -f 100; '$BIN/'$p -o '$T/o.wps'"
        one_line_error "^${p%% *}: $T/o.wps: write error: File too large$"
        [ -z "$(ls "$T" | grep '^o.wps')" ]
    done
}

@test "ggufcat reads a GGUF from standard input, a pipe, a FIFO or a zstd frame, to the same stream (they were refused)" {
    # `zstd -dc m.gguf.zst | ggufcat -` said "-: not a regular file" (a new user's trial)
    "$BIN/ggufcat" "$F32" > "$T/ref.wps"
    "$BIN/ggufcat" - < "$F32" > "$T/a.wps"
    # the same records, but for the gguf record's name (the file's, or stdin)
    cmp <("$BIN/tsinfo" -a -x "$T/ref.wps" | tail -n +3) <("$BIN/tsinfo" -a -x "$T/a.wps" | tail -n +3)
    [ "$("$BIN/tsinfo" "$T/a.wps" | sed -n 2p | tr -s ' ')" = "gguf stdin - - 0 " ]
    "$BIN/ggufpack" "$T/a.wps" | cmp - "$F32"
    cat "$F32" | "$BIN/ggufcat" > "$T/b.wps"   # no FILE: standard input
    cmp "$T/a.wps" "$T/b.wps"
    cat "$F32" | "$BIN/ggufcat" /dev/stdin | "$BIN/ggufpack" | cmp - "$F32"
    mkfifo "$T/fifo"
    cat "$F32" > "$T/fifo" &
    "$BIN/ggufcat" "$T/fifo" | "$BIN/ggufpack" | cmp - "$F32"
    # a .zst as zstd writes it: the same tensors, the gguf record named without .zst
    zstd -q -19 -c "$F32" > "$T/m.gguf.zst"
    "$BIN/ggufcat" "$T/m.gguf.zst" | "$BIN/ggufpack" | cmp - "$F32"
    run "$BIN/tsinfo" <("$BIN/ggufcat" "$T/m.gguf.zst")
    [[ "${lines[1]}" == "gguf     m.gguf   "* ]]
    zstd -dc "$T/m.gguf.zst" | "$BIN/ggufcat" | "$BIN/ggufpack" | cmp - "$F32"
    # what cannot be read: each one line naming the input, nothing written
    cat "$T/m.gguf.zst" "$T/m.gguf.zst" > "$T/two.zst"
    run "$BIN/ggufcat" -o "$T/o.wps" "$T/two.zst"
    one_line_error "^ggufcat: $T/two.zst: more than one zstd frame \(as .zst files joined are\): wpack reads one; zstd -dc it, then read the GGUF$"
    # pzstd's form, a skippable frame first: said as such (it was "bad magic": a breaker's find)
    { printf 'P*M\030\004\000\000\000\000\000\000\000'; cat "$T/m.gguf.zst"; } > "$T/pz.zst"
    run "$BIN/ggufcat" -o "$T/o.wps" "$T/pz.zst"
    one_line_error "^ggufcat: $T/pz.zst: not a GGUF file \(a zstd skippable frame first, as pzstd writes: zstd -dc it, then read the GGUF\)$"
    run bash -c "cat '$T/pz.zst' | '$BIN/ggufcat' -o '$T/o.wps'"
    one_line_error "^ggufcat: stdin: not a GGUF file \(a zstd skippable frame first, as pzstd writes"
    head -c 100000 "$T/m.gguf.zst" > "$T/cut.zst"
    run "$BIN/ggufcat" -o "$T/o.wps" "$T/cut.zst"
    one_line_error "^ggufcat: $T/cut.zst: truncated zstd frame: the file is cut short$"
    run bash -c "head -c 5000 '$F32' | '$BIN/ggufcat' -o '$T/o.wps'"
    one_line_error "^ggufcat: stdin: truncated file: "
    run "$BIN/ggufcat" -o "$T/o.wps" < /dev/null
    one_line_error "^ggufcat: stdin: empty file, not a GGUF file$"
    run bash -c "cat '$F32' | TMPDIR='$T/nowhere' '$BIN/ggufcat' -o '$T/o.wps'"
    one_line_error "^ggufcat: stdin: cannot create a temporary file in $T/nowhere \(TMPDIR\): No such file or directory$"
    run bash -c "zstd -q -c '$T/ref.wps' | '$BIN/ggufcat' -o '$T/o.wps'"
    one_line_error "^ggufcat: stdin: not a GGUF file \(a wpack stream: use ggufpack or unbundle\)$"
    # hessian's output named (a fresh user was sent to ggufpack, which refused it)
    "$BIN/hessian" --model "$F32" --text "$DATA/text/tinystories_sample.txt" --chunks 1 -o "$T/h.hess" 2> /dev/null
    run "$BIN/ggufcat" -o "$T/o.wps" "$T/h.hess"
    one_line_error "^ggufcat: $T/h.hess: not a GGUF file \(Hessians, hessian's output: they go to gptq --hessian\)$"
    run "$BIN/ggufcat" -o "$T/o.wps" "$T"
    one_line_error "^ggufcat: $T: is a directory$"
    [ ! -e "$T/o.wps" ]
    # verify reads its original by its offsets where it lies: a pipe is still refused, and says why
    "$BIN/ggufcat" "$F32" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/v.bundle"
    run bash -c "'$BIN/verify' <(cat '$F32') '$T/v.bundle'"
    one_line_error "^verify: /dev/fd/[0-9]+: not a regular file \(a GGUF is read by its offsets: give the file itself\)$"
}

@test "a TMPDIR that does not exist: one line naming the input and the directory" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    # the spools (wp_spool) said only "cannot create a temporary file" before, and gptq's
    # tmpfile(3) ignored TMPDIR
    TMPDIR="$T/nowhere" run "$BIN/ggufpack" "$T/s.wps"
    one_line_error "^ggufpack: $T/s.wps: cannot create a temporary file in $T/nowhere \(TMPDIR\): No such file or directory$"
    TMPDIR="$T/nowhere" run "$BIN/gptq" --type Q8_0 "$T/s.wps"
    one_line_error "^gptq: $T/s.wps: cannot create a temporary file in $T/nowhere \(TMPDIR\): No such file or directory$"
}

@test "a stream's tensor of no dimensions is refused by the first program that reads it (its payload went unchecked)" {
    # n_dims 0 with attn_q's 8192 bytes: tsinfo said 65536 b/w, laneinterleave bundled it, and
    # ggufpack said "row length 1 is not a multiple of the F16 block size 1" (a breaker's find)
    "$BIN/ggufcat" "$MODELS/stories260K-f16.gguf" > "$T/m.wts"
    stream_edit "$T/m.wts" "$T/d0.wts" "[(setattr(r, 'n_dims', 0), setattr(r, 'ne', [1, 1, 1, 1])) for r in recs if r.name == 'blk.0.attn_q.weight']"
    for p in tsinfo bf16split histogram laneinterleave ggufpack; do
        run --separate-stderr "$BIN/$p" "$T/d0.wts"
        [ "$status" -eq 1 ]
        [ "$stderr" = "$p: $T/d0.wts: record 'blk.0.attn_q.weight': no dimensions (a tensor has 1 to 4; a scalar is shape 1)" ]
    done
}

@test "every reader refuses a stream whose layout or counts attribute is no count (ggufpack dropped them unsaid)" {
    # offset=-64 and one of 71 digits were dropped, the layout then the standard one, and
    # n_tensors=abc turned the count check off (a breaker's find); gptq and histogram passed them
    # on after ggufpack refused them (a reviewer's find): the stream reader refuses them
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" > "$T/m.wts"
    stream_edit "$T/m.wts" "$T/a1.wts" "[r.attrs.__setitem__('offset', '-64') for r in recs if r.name == 'blk.0.attn_q.weight']"
    fails_saying "ggufpack: $T/a1.wts: record 'blk.0.attn_q.weight': attribute offset=-64 is not a count" \
        "$BIN/ggufpack" -o "$T/o.gguf" "$T/a1.wts"
    stream_edit "$T/m.wts" "$T/a2.wts" "[r.attrs.__setitem__('n_tensors', 'abc') for r in recs if r.kind == 1]"
    fails_saying "ggufpack: $T/a2.wts: record 'stories260K-f32.gguf': attribute n_tensors=abc is not a count" \
        "$BIN/ggufpack" -o "$T/o.gguf" "$T/a2.wts"
    stream_edit "$T/m.wts" "$T/a3.wts" "[r.attrs.__setitem__('n_kv', ' 17') for r in recs if r.kind == 1]"
    fails_saying "ggufpack: $T/a3.wts: record 'stories260K-f32.gguf': attribute n_kv= 17 is not a count" \
        "$BIN/ggufpack" -o "$T/o.gguf" "$T/a3.wts"
    stream_edit "$T/m.wts" "$T/a4.wts" "[r.attrs.__setitem__('offset', '0' * 70 + '1') for r in recs if r.name == 'blk.0.attn_q.weight']"
    fails_saying "ggufpack: $T/a4.wts: record 'blk.0.attn_q.weight': attribute offset=$(printf '0%.0s' $(seq 40))... is not a count" \
        "$BIN/ggufpack" -o "$T/o.gguf" "$T/a4.wts"
    [ ! -e "$T/o.gguf" ]
    local p
    for p in tsinfo histogram bf16split laneinterleave; do   # (tsinfo lists the records before)
        run --separate-stderr "$BIN/$p" "$T/a1.wts"
        [ "$status" -eq 1 ]
        [ "$stderr" = "$p: $T/a1.wts: record 'blk.0.attn_q.weight': attribute offset=-64 is not a count" ]
        run --separate-stderr "$BIN/$p" "$T/a2.wts"
        [ "$status" -eq 1 ]
        [ "$stderr" = "$p: $T/a2.wts: record 'stories260K-f32.gguf': attribute n_tensors=abc is not a count" ]
    done
    fails_saying "gptq: $T/a2.wts: record 'stories260K-f32.gguf': attribute n_tensors=abc is not a count" \
        "$BIN/gptq" --type Q8_0 --rtn --quiet "$T/a2.wts"
    # the stream as it was packs byte for byte
    "$BIN/ggufpack" "$T/m.wts" | cmp - "$MODELS/stories260K-f32.gguf"
}

@test "an empty last tensor after one that ends off the alignment: ggufpack, unbundle and verify write its GGUF" {
    # the data file ended before the empty tensor's aligned offset, and each failed with
    # "write error: Success" (a breaker's find); safetensors files place such a tensor so
    python3 -c '
import json, struct, sys
h = json.dumps({"a": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]},
                "z": {"dtype": "F16", "shape": [0], "data_offsets": [6, 6]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"\x00\x3c" * 3)' "$T/z.safetensors"
    "$BIN/safetensorscat" "$T/z.safetensors" > "$T/z.wps"
    "$BIN/ggufpack" -o "$T/z.gguf" "$T/z.wps"
    run "$BIN/ggufcat" "$T/z.gguf"
    [ "$status" -eq 0 ]
    # its data: a's 6 bytes padded to 32, the file's end (and z's offset, 32)
    [ "$(tail -c 32 "$T/z.gguf" | od -An -v -tx1 | tr -d ' \n')" = "003c003c003c$(printf '0%.0s' $(seq 52))" ]
    [ $(( $(wc -c < "$T/z.gguf") % 32 )) -eq 0 ]
    "$BIN/bf16split" "$T/z.wps" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/z.bundle"
    # the bundle of one file's stream gives that file back; its stream, the GGUF
    "$BIN/unbundle" "$T/z.bundle" | cmp - "$T/z.safetensors"
    "$BIN/unbundle" --stream "$T/z.bundle" | "$BIN/ggufpack" | cmp - "$T/z.gguf"
    run "$BIN/verify" --tsv "$T/z.gguf" "$T/z.bundle"
    [ "$status" -eq 0 ]
    run "$BIN/verify" --tsv "$T/z.safetensors" "$T/z.bundle"
    [ "$status" -eq 0 ]
    # and no weights, no b/w: "-" (the empty tensor's line read "-nan")
    [ "${lines[2]}" = "$(printf 'z\tF16\t0\t-\t-\t-\t-\t-\tfixed\tok')" ]
    # the GGUF form: a at 0, the empty z at 32, the file ending at 32 data bytes
    "$BIN/ggufcat" "$T/z.gguf" | "$BIN/ggufpack" | cmp - "$T/z.gguf"
    # histogram --report of an empty matrix: "-" and "no weights" (its b/w read "-nan")
    python3 -c '
import json, struct, sys
h = json.dumps({"m": {"dtype": "F16", "shape": [0, 5], "data_offsets": [0, 0]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h)' "$T/m.safetensors"
    run --separate-stderr sh -c "'$BIN/safetensorscat' '$T/m.safetensors' | '$BIN/bf16split' | '$BIN/histogram' --report > /dev/null"
    [ "$status" -eq 0 ]
    [[ "${stderr_lines[1]}" =~ ^m\ +F16\ +0\ +0\ +-\ +-\ \ no\ weights$ ]]
}

@test "a stream's tensor of a type ggml lacks, or of no name, is refused by the first program that reads it" {
    # both went through tsinfo, bf16split, histogram and gptq, exit 0, to ggufpack, the first to
    # refuse (an empty name not even there: a GGUF with a nameless tensor); a breaker's find
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" > "$T/m.wts"
    stream_edit "$T/m.wts" "$T/t99.wts" "[setattr(r, 'type', 99) for r in recs if r.name == 'output_norm.weight']"
    stream_edit "$T/m.wts" "$T/noname.wts" "[setattr(r, 'name', '') for r in recs if r.name == 'output_norm.weight']"
    for p in tsinfo bf16split histogram ggufpack; do
        run --separate-stderr "$BIN/$p" "$T/t99.wts"
        [ "$status" -eq 1 ]
        [ "$stderr" = "$p: $T/t99.wts: record 'output_norm.weight': unknown ggml type 99" ]
        run --separate-stderr "$BIN/$p" "$T/noname.wts"
        [ "$status" -eq 1 ]
        [[ "$stderr" =~ ^$p:\ $T/noname.wts:\ an\ unnamed\ tensor\ record\ at\ byte\ [0-9]+:\ a\ tensor\ needs\ a\ name$ ]]
    done
    run --separate-stderr "$BIN/gptq" --type Q8_0 --rtn --quiet "$T/t99.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $T/t99.wts: record 'output_norm.weight': unknown ggml type 99" ]
    # a GGUF's nameless tensor (ggufcat passed it; every stream reader then refused it): the
    # name's 18 bytes moved into general.name's value, so the data stays where it was
    python3 - "$MODELS/stories260K-f32.gguf" "$T/noname.gguf" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = b"output_norm.weight"; t = struct.pack("<Q", len(n)) + n
i = b.index(t); k = b"general.name"; j = b.index(struct.pack("<Q", len(k)) + k) + 8 + len(k)
assert b.count(t) == 1 and struct.unpack_from("<I", b, j)[0] == 8 and j < i
l = struct.unpack_from("<Q", b, j + 4)[0]
b[i:i + len(t)] = struct.pack("<Q", 0)
b[j + 4:j + 12] = struct.pack("<Q", l + len(n)); b[j + 12 + l:j + 12 + l] = b"x" * len(n)
open(sys.argv[2], "wb").write(b)
PY
    run --separate-stderr "$BIN/ggufcat" -o "$T/nn.wts" "$T/noname.gguf"
    [ "$status" -eq 1 ]
    [ "$stderr" = "ggufcat: $T/noname.gguf: tensor 1: an empty name" ]
    [ ! -e "$T/nn.wts" ]
    # and a zstd'd tensor record of either kind, restored by unbundle (it came out, exit 0)
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" | "$BIN/laneinterleave" > "$T/z.bundle" 2> /dev/null
    stream_edit "$T/z.bundle" "$T/z99.bundle" "[setattr(r, 'type', 99) for r in recs if r.kind == 11 and r.name == 'blk.0.attn_q.weight']"
    stream_edit "$T/z.bundle" "$T/zn.bundle" "[setattr(r, 'name', '') for r in recs if r.kind == 11 and r.name == 'blk.0.attn_q.weight']"
    run --separate-stderr "$BIN/unbundle" --stream -o "$T/o.wts" "$T/z99.bundle"
    [ "$status" -eq 1 ]
    [ "$stderr" = "unbundle: $T/z99.bundle: record 'blk.0.attn_q.weight': unknown ggml type 99" ]
    run --separate-stderr "$BIN/unbundle" --stream -o "$T/o.wts" "$T/zn.bundle"
    [ "$status" -eq 1 ]
    [ "$stderr" = "unbundle: $T/zn.bundle: an unnamed zstd record: a tensor needs a name" ]
    [ ! -e "$T/o.wts" ]
}

@test "tsinfo -x prints each payload's XXH64 of seed 0, the value xxhash gives for its bytes; -o is refused, nothing made (a mutation test's find)" {
    "$BIN/ggufcat" -o "$T/s.wps" "$MODELS/stories260K-f16.gguf"
    run "$BIN/tsinfo" -x "$T/s.wps"
    [ "$status" -eq 0 ]
    # the gguf record's payload is empty: XXH64 of no bytes
    [[ "${lines[1]}" =~ ^gguf\ +stories260K-f16.gguf\ +-\ +-\ +0\ +\ xxh64=ef46db3751d8e999$ ]]
    # a key/value: its GGUF value type, no shape (-), its value
    [ "${lines[2]}" = 'kv       general.architecture                     string   -                        13  "llama"  xxh64=73f9462591a39b40' ]
    local want
    read -r off len < <(payload_of "$T/s.wps" token_embd.weight)
    want=$(/usr/bin/python3 -c '
import ctypes, sys
xx = ctypes.CDLL("libxxhash.so.0")
xx.XXH64.restype = ctypes.c_uint64
xx.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
b = open(sys.argv[1], "rb").read()[int(sys.argv[2]):int(sys.argv[2]) + int(sys.argv[3])]
print("%016x" % xx.XXH64(b, len(b), 0))' "$T/s.wps" "$off" "$len")
    [ "$want" = 2c39c9af365c2523 ]
    echo "$output" | grep -E "^tensor +token_embd.weight +F16 +64x512 +65536  16.0000  xxh64=$want$"
    # tsinfo writes to standard output only
    cd "$T"
    fails_saying "tsinfo: tsinfo writes its listing to stdout: no -o" "$BIN/tsinfo" -o list "$T/s.wps"
    [ ! -e "$T/list" ]
}

@test "ggufcat and safetensorscat without a file name: one line, exit 1, nothing written (a mutation test's find)" {
    # ggufcat reads standard input then, as every filter (an empty one here)
    fails_saying "ggufcat: stdin: empty file, not a GGUF file" "$BIN/ggufcat" -o "$T/o.wps" < /dev/null
    fails_saying "safetensorscat: no input file (try --help)" "$BIN/safetensorscat" -o "$T/o.wps"
    [ ! -e "$T/o.wps" ]
}

@test "ggufcat: a tensor it cannot read into memory is one line, exit 1, no output (a mutation test's find)" {
    # a GGUF of one F32 tensor of 2^28 values (1 GiB of data, a sparse file), read under a
    # 400 MB address-space limit: its header is whole, its tensor cannot be allocated
    /usr/bin/python3 - "$T/big.gguf" <<'PY'
import struct, sys
name = b"big.weight"
h = b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
h += struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, 1 << 28, 0, 0)
h += bytes(-len(h) % 32)
with open(sys.argv[1], "wb") as f:
    f.write(h)
    f.truncate(len(h) + (1 << 30))
PY
    run bash -c "ulimit -v 400000; '$BIN/ggufcat' -o '$T/o.wps' '$T/big.gguf'"
    [ "$status" -eq 1 ]
    [ "$output" = "ggufcat: $T/big.gguf: tensor 'big.weight': out of memory for 1073741824 bytes" ]
    [ ! -e "$T/o.wps" ]
    [ -z "$(ls "$T" | grep '\.tmp\.')" ]
}

@test "ggufpack -v counts the records it dropped; a stream on standard input is named stdin (a mutation test's find)" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    # one record of another kind (a 2x2 F32 Hessian) after the GGUF's records
    stream_edit "$T/s.wps" "$T/h.wps" "recs.append(types.SimpleNamespace(kind=4, type=0, n_dims=2, ne=[2, 2, 1, 1], name='note', attrs={}, payload=bytearray(16)))"
    run --separate-stderr "$BIN/ggufpack" -v -o "$T/a.gguf" "$T/h.wps"
    [ "$status" -eq 0 ]
    [ "$stderr" = "ggufpack: 1 non-GGUF records dropped" ]
    cmp "$T/a.gguf" "$F32"
    run --separate-stderr "$BIN/ggufpack" -v -o "$T/b.gguf" "$T/s.wps"
    [ "$status" -eq 0 ]
    [ "$stderr" = "ggufpack: 0 non-GGUF records dropped" ]
    # only the Hessian: no GGUF content, from a file named - (standard input)
    stream_edit "$T/s.wps" "$T/only.wps" "recs[:] = [types.SimpleNamespace(kind=4, type=0, n_dims=2, ne=[2, 2, 1, 1], name='note', attrs={}, payload=bytearray(16))]"
    run "$BIN/ggufpack" -o "$T/c.gguf" - < "$T/only.wps"
    one_line_error "^ggufpack: stdin: no GGUF header, key/value or tensor record to write \(1 record of other kinds, the first hessian\)$"
    [ ! -e "$T/c.gguf" ]
}
