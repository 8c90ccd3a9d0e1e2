#!/usr/bin/env bats
# safetensorscat: real safetensors files to streams, values checked byte for
# byte against the files, and bad input.
bats_require_minimum_version 1.5.0
load helpers

setup() {
    T="$BATS_TEST_TMPDIR"
    ST="$DATA/safetensors"
    CALM="$ST/open-calm-1b-lora-r1-f16.safetensors"   # header 6800 bytes, 48 F16 tensors
    SD="$ST/sd15-lora-r4-f16.safetensors"             # header 35033 bytes, 384 F16 tensors
}

# header_len FILE: the safetensors header length N (first 8 bytes, LE).
header_len() { od -An -t u8 -N8 "$1" | tr -d ' '; }

# mkst OUT JSON NBYTES: a safetensors file with this (ASCII) header and
# NBYTES of zero data.
mkst() {
    { printf "$(le64 ${#2})"; printf '%s' "$2"; head -c "$3" /dev/zero; } > "$1"
}

# tensor_payloads STREAM: every tensor record's payload, in stream order.
tensor_payloads() {
    local f=$1 off=16 w kind p n
    while :; do
        w=($(rec_words "$f" "$off"))
        kind=$(( w[1] & 65535 ))
        [ "$kind" -eq 65535 ] && break
        p=$(align64 $((off + 72 + w[3] + w[12] + 8)))
        n=$(( w[14] + w[15] * 4294967296 ))
        [ "$kind" -eq 3 ] && tail -c +$((p + 1)) "$f" | head -c "$n"
        off=$(align64 $((p + n)))
    done
}

@test "safetensorscat --help" {
    run "$BIN/safetensorscat" --help
    [ "$status" -eq 0 ]
    [[ "$output" == usage:* ]]
}

@test "-o last on the line needs a value, as in every program (it said '-o: unknown option')" {
    run "$BIN/safetensorscat" "$CALM" -o
    [ "$status" -eq 1 ]
    [ "$output" = "safetensorscat: -o: needs a value (try --help)" ]
}

@test "standard input, as - or a pipe, is refused as not a regular file (- said 'unknown option')" {
    run "$BIN/safetensorscat" - < "$CALM"
    one_line_error "^safetensorscat: -: not a regular file \\(standard input: give the file's name\\)$"
    run sh -c "cat '$CALM' | '$BIN/safetensorscat' /dev/stdin"
    one_line_error "^safetensorscat: /dev/stdin: not a regular file \\(a safetensors file is read by its offsets: give the file itself\\)$"
}

@test "open-calm LoRA: 48 F16 tensors with reversed shapes, the format metadata as a key/value" {
    "$BIN/safetensorscat" "$CALM" > "$T/c.wps"
    run "$BIN/tsinfo" "$T/c.wps"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^tensor ')" -eq 48 ]
    [ "$(echo "$output" | grep -c '^tensor .* F16 ')" -eq 48 ]
    [ "$(echo "$output" | grep -c '^kv ')" -eq 2 ]
    # first the file's header (8 + 6800 bytes: its length, then the JSON), which gives the file back
    [[ "${lines[1]}" =~ ^kv\ +safetensors.header\ +string\ +-\ +6808\ +\"\{\"__metadata__\" ]]
    echo "$output" | grep -E '^kv +safetensors.metadata.format +string .* 10 +"pt"$'
    # safetensors [1, 2048] -> ne 2048x1; [6144, 1] -> 1x6144
    echo "$output" | grep -E '^tensor +base_model.model.gpt_neox.layers.0.attention.query_key_value.lora_A.weight +F16 +2048x1 +4096 '
    echo "$output" | grep -E '^tensor +base_model.model.gpt_neox.layers.9.attention.query_key_value.lora_B.weight +F16 +1x6144 +12288 '
    # file (data offset) order: layers 0, 1, 10, 11, ... as the header sorts them
    [ "$(echo "$output" | grep '^tensor ' | head -n 3 | awk '{print $2}' | cut -d. -f5 | tr '\n' ' ')" = "0 0 1 " ]
}

@test "open-calm LoRA to GGUF: ggufpack warns that llama.cpp refuses its 64-byte-or-longer names" {
    # the GGUF was written silently, and llama.cpp's loader then said "tensor name 0 is too
    # long: 74 >= 64" (a new user's trial)
    run --separate-stderr sh -c "'$BIN/safetensorscat' '$CALM' | '$BIN/ggufpack' -o '$T/c.gguf'"
    [ "$status" -eq 0 ]
    [ "$stderr" = "ggufpack: warning: 48 tensor names of 64 bytes or more ('base_model.model.gpt_neox.layers.0.attention.query_key_value.lora_A.weight', 74): llama.cpp refuses to load such a file" ]
    [ "$(head -c 4 "$T/c.gguf")" = GGUF ]
    # unbundle writes the same GGUF from the bundle of two files' stream, and says the same (it
    # said nothing); the bundle of one file's stream gives that file back, no GGUF
    mkst "$T/one.safetensors" '{"one":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    "$BIN/safetensorscat" "$CALM" "$T/one.safetensors" > "$T/c2.wps"
    "$BIN/ggufpack" -o "$T/c2.gguf" "$T/c2.wps" 2> /dev/null
    "$BIN/bf16split" "$T/c2.wps" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/c.bundle"
    run --separate-stderr "$BIN/unbundle" -o "$T/u.gguf" "$T/c.bundle"
    [ "$status" -eq 0 ]
    [ "$stderr" = "unbundle: warning: 48 tensor names of 64 bytes or more ('base_model.model.gpt_neox.layers.0.attention.query_key_value.lora_A.weight', 74): llama.cpp refuses to load such a file" ]
    cmp "$T/u.gguf" "$T/c2.gguf"
    "$BIN/safetensorscat" "$CALM" | "$BIN/bf16split" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/c1.bundle"
    run --separate-stderr "$BIN/unbundle" -o "$T/c1.safetensors" "$T/c1.bundle"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    cmp "$T/c1.safetensors" "$CALM"
    # a name past 255 bytes: its real length (the message cuts the name, not the count)
    long=$(printf 'w%.0s' $(seq 300))
    mkst "$T/l.safetensors" "{\"$long\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}" 8
    run --separate-stderr sh -c "'$BIN/safetensorscat' '$T/l.safetensors' | '$BIN/ggufpack' > /dev/null"
    [ "$status" -eq 0 ]
    [[ "$stderr" == "ggufpack: warning: 1 tensor name of 64 bytes or more ('www"*"', 300): llama.cpp refuses to load such a file" ]]
    # short names: no warning
    run --separate-stderr sh -c "'$BIN/ggufcat' '$MODELS/stories260K-f32.gguf' | '$BIN/ggufpack' > /dev/null"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
}

@test "sd15 LoRA, lossless: bf16split | histogram | huffbuild | laneinterleave, unbundle --stream gives the stream back" {
    "$BIN/safetensorscat" "$SD" > "$T/s.wps"
    "$BIN/bf16split" "$T/s.wps" | "$BIN/histogram" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" > "$T/s.bundle"
    # most of its matrices stay fixed-width (too small to pay for their tables)
    [ "$("$BIN/tsinfo" -a "$T/s.bundle" | grep -c 'stored=fixed')" -eq 192 ]
    "$BIN/unbundle" --stream "$T/s.bundle" | cmp - "$T/s.wps"
}

@test "open-calm LoRA: the tensor payloads are the file's data section, byte for byte" {
    "$BIN/safetensorscat" -o "$T/c.wps" "$CALM"
    n=$(header_len "$CALM")
    [ "$n" -eq 6800 ]
    tensor_payloads "$T/c.wps" > "$T/payloads"
    tail -c +$((8 + n + 1)) "$CALM" > "$T/data"
    [ "$(stat -c %s "$T/data")" -eq 393216 ]
    cmp "$T/payloads" "$T/data"
}

@test "sd15 LoRA: 384 F16 tensors, 194 metadata key/values, shapes, payload sum = data section" {
    "$BIN/safetensorscat" "$SD" > "$T/s.wps"
    run "$BIN/tsinfo" "$T/s.wps"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^tensor .* F16 ')" -eq 384 ]
    [ "$(echo "$output" | grep -Ec '^kv +safetensors\.metadata\.')" -eq 194 ]
    echo "$output" | grep -E '^kv +safetensors.metadata.unet:9:rank +string .*"4"$'
    echo "$output" | grep -E '^tensor +text_encoder:0:down +F16 +768x4 +6144 '
    echo "$output" | grep -E '^tensor +text_encoder:0:up +F16 +4x768 +6144 '
    echo "$output" | grep -E '^tensor +unet:9:up +F16 +4x320 +2560 '
    sum=$(echo "$output" | awk '$1 == "tensor" { s += $5 } END { print s }')
    n=$(header_len "$SD")
    [ "$sum" -eq $(( $(stat -c %s "$SD") - 8 - n )) ]
    [ "$sum" -eq 3082752 ]
    echo "$output" | grep -E '^# 579 records, .* 1541376 tensor weights, tensors 16.0000 b/w'
}

@test "sd15 LoRA: one tensor's payload equals the file's bytes at its data_offsets" {
    "$BIN/safetensorscat" "$SD" > "$T/s.wps"
    n=$(header_len "$SD")
    # "text_encoder:0:up": data_offsets [6144, 12288]; "unet:9:up": [3080192, 3082752]
    read -r p len <<< "$(payload_of "$T/s.wps" 'text_encoder:0:up')"
    [ "$len" -eq 6144 ]
    cmp -n 6144 -i "$p:$((8 + n + 6144))" "$T/s.wps" "$SD"
    read -r p len <<< "$(payload_of "$T/s.wps" 'unet:9:up')"
    [ "$len" -eq 2560 ]
    cmp -n 2560 -i "$p:$((8 + n + 3080192))" "$T/s.wps" "$SD"
}

@test "two files make one stream: 432 tensors, metadata of both" {
    run sh -c "'$BIN/safetensorscat' '$CALM' '$SD' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^tensor ')" -eq 432 ]
    [ "$(echo "$output" | grep -c '^kv ')" -eq 195 ]
}

@test "small files: scalars, zero-size tensors, I32, F32/BF16, padded header" {
    # (its data once had a hole at [4, 8), which the format forbids and now is refused)
    mkst "$T/a.safetensors" '{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"z":{"dtype":"BF16","shape":[0,3],"data_offsets":[4,4]},"i":{"dtype":"I32","shape":[2,1,3],"data_offsets":[4,28]},"b":{"dtype":"BF16","shape":[2,2,2,2],"data_offsets":[28,60]}}    ' 60
    run sh -c "'$BIN/safetensorscat' '$T/a.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^tensor +s +F32 +1 +4 '
    echo "$output" | grep -E '^tensor +z +BF16 +3x0 +0 '
    echo "$output" | grep -E '^tensor +i +I32 +3x1x2 +24 '
    echo "$output" | grep -E '^tensor +b +BF16 +2x2x2x2 +32 '
    [ "$(echo "$output" | grep '^tensor ' | awk '{print $2}' | tr '\n' ' ')" = "s z i b " ]
}

@test "the same metadata in two files is written once" {
    mkst "$T/a.safetensors" '{"__metadata__":{"format":"pt"},"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    mkst "$T/b.safetensors" '{"__metadata__":{"format":"pt"},"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    run sh -c "'$BIN/safetensorscat' '$T/a.safetensors' '$T/b.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -Ec '^kv +safetensors.metadata.format ')" -eq 1 ]
    [ "$(echo "$output" | grep -c '^tensor ')" -eq 2 ]
}

# ---- bad input: one line naming the file, status != 0, no output file ------

# bad PATTERN FILE...: safetensorscat -o OUT fails with one line matching
# PATTERN and leaves neither OUT nor a temporary file.
bad() {
    local pat=$1; shift
    run "$BIN/safetensorscat" -o "$T/out.wps" "$@"
    one_line_error "$pat"
    [ ! -e "$T/out.wps" ]
    [ -z "$(ls "$T" | grep '\.tmp\.')" ]
}

@test "bad safetensors: truncated data section" {
    head -c 200000 "$CALM" > "$T/cut.safetensors"
    bad "^safetensorscat: $T/cut.safetensors: tensor '.*': data_offsets .* run past the end of the 193192-byte data section \(truncated file\?\)$" "$T/cut.safetensors"
}

@test "bad safetensors: truncated inside the header and before the header length" {
    head -c 3000 "$CALM" > "$T/h.safetensors"
    bad "^safetensorscat: $T/h.safetensors: header length 6800 is larger than the file allows" "$T/h.safetensors"
    head -c 5 "$CALM" > "$T/5.safetensors"
    bad "^safetensorscat: $T/5.safetensors: truncated file" "$T/5.safetensors"
    : > "$T/0.safetensors"
    bad "^safetensorscat: $T/0.safetensors: truncated file" "$T/0.safetensors"
}

@test "bad safetensors: a file of another kind is named, not a 'truncated file?' of a length read from its text" {
    # a sharded model's index, a PyTorch zip, llama2.c's checkpoint and a text each said
    # "header length N is larger than the file allows (...; truncated file?)" (a new user's trial)
    printf '{\n  "metadata": {"total_size": 8},\n  "weight_map": {"a": "model-00001-of-00002.safetensors"}\n}\n' > "$T/model.safetensors.index.json"
    bad "^safetensorscat: $T/model.safetensors.index.json: not a safetensors file \(a sharded model's index, JSON: give its shards, safetensorscat model-\*.safetensors\)$" "$T/model.safetensors.index.json"
    printf '{"a": [1, 2, 3], "b": "c"}\n' > "$T/c.json"
    bad "^safetensorscat: $T/c.json: not a safetensors file \(a JSON file\)$" "$T/c.json"
    { printf 'PK\003\004'; head -c 100 /dev/zero; } > "$T/pytorch_model.bin"
    bad "^safetensorscat: $T/pytorch_model.bin: not a safetensors file \(a zip archive: unzip it, or if it is a PyTorch .bin, convert that to safetensors or GGUF\)$" "$T/pytorch_model.bin"
    bad "^safetensorscat: $DATA/text/groups_merged.txt: not a safetensors file \(a text file\)$" "$DATA/text/groups_merged.txt"
    bad "^safetensorscat: $MODELS/stories260K.bin: not a safetensors file \(no header length, then a JSON header, at its start\)$" "$MODELS/stories260K.bin"
}

@test "bad safetensors: header length past the end" {
    cp "$CALM" "$T/l.safetensors"; chmod u+w "$T/l.safetensors"
    patch_bytes "$T/l.safetensors" 0 "$(le64 123456789012)"
    bad "^safetensorscat: $T/l.safetensors: header length 123456789012 is larger than the file allows" "$T/l.safetensors"
}

@test "bad safetensors: malformed JSON" {
    mkst "$T/j.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}' 4
    bad "^safetensorscat: $T/j.safetensors: malformed JSON header" "$T/j.safetensors"
    mkst "$T/k.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}xx' 4
    bad "^safetensorscat: $T/k.safetensors: malformed JSON header" "$T/k.safetensors"
    mkst "$T/n.safetensors" '[1,2]' 4
    bad "^safetensorscat: $T/n.safetensors: header is not a JSON object" "$T/n.safetensors"
    mkst "$T/m.safetensors" '{"__metadata__":{"n":1}}' 0
    bad "^safetensorscat: $T/m.safetensors: __metadata__ value of 'n' is not a string" "$T/m.safetensors"
    mkst "$T/s.safetensors" '{"a":{"dtype":"F16","shape":[2.5],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/s.safetensors: tensor 'a': shape is not a list of non-negative integers" "$T/s.safetensors"
}

@test "bad safetensors: a __metadata__ that is an array is no object (its duplicate-key check crashed on it)" {
    # an array's elements have no names: the check for duplicate keys sorted NULL names (strcmp: SIGSEGV)
    mkst "$T/a.safetensors" '{"__metadata__":[1,2]}' 0
    bad "^safetensorscat: $T/a.safetensors: __metadata__ is not a JSON object$" "$T/a.safetensors"
    mkst "$T/b.safetensors" '{"__metadata__":["x","y","z"],"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/b.safetensors: __metadata__ is not a JSON object$" "$T/b.safetensors"
}

@test "bad safetensors: offsets out of range, wrong size, reversed, overlapping" {
    mkst "$T/p.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[2,6]}}' 4
    bad "^safetensorscat: $T/p.safetensors: tensor 'a': data_offsets \[2, 6\) run past the end" "$T/p.safetensors"
    mkst "$T/w.safetensors" '{"a":{"dtype":"F16","shape":[3],"data_offsets":[0,4]}}' 8
    bad "^safetensorscat: $T/w.safetensors: tensor 'a': data_offsets \[0, 4\) hold 4 bytes but F16 x shape needs 6$" "$T/w.safetensors"
    mkst "$T/r.safetensors" '{"a":{"dtype":"F16","shape":[0],"data_offsets":[4,0]}}' 8
    bad "^safetensorscat: $T/r.safetensors: tensor 'a': data_offsets .* end before they begin" "$T/r.safetensors"
    mkst "$T/o.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}' 8
    bad "^safetensorscat: $T/o.safetensors: tensors 'a' \[0, 4\) and 'b' \[2, 6\) overlap$" "$T/o.safetensors"
    # holes, which the format forbids, were taken: before a tensor, between two, after the last
    mkst "$T/h.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[2,6]}}' 6
    bad "^safetensorscat: $T/h.safetensors: bytes \[0, 2\) of the 6-byte data section belong to no tensor \(safetensors allows no holes\)$" "$T/h.safetensors"
    mkst "$T/h2.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[1],"data_offsets":[6,8]}}' 8
    bad "^safetensorscat: $T/h2.safetensors: bytes \[4, 6\) of the 8-byte data section belong to no tensor" "$T/h2.safetensors"
    mkst "$T/h3.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"e":{"dtype":"F16","shape":[0],"data_offsets":[4,4]}}' 6
    bad "^safetensorscat: $T/h3.safetensors: bytes \[4, 6\) of the 6-byte data section belong to no tensor" "$T/h3.safetensors"
    mkst "$T/x.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0]}}' 8
    bad "^safetensorscat: $T/x.safetensors: tensor 'a': \"data_offsets\" is not two non-negative integers$" "$T/x.safetensors"
}

@test "bad safetensors: unsupported dtype and too many dimensions" {
    # U8, F8 and 5-D tensors are carried (tests/safetensorspack.bats); F4 and F6 are not
    mkst "$T/u.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"m":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[4,8]}}' 8
    bad "^safetensorscat: $T/u.safetensors: tensor 'm': dtype F6_E2M3 is not supported" "$T/u.safetensors"
    mkst "$T/f8.safetensors" '{"q":{"dtype":"f8_e4m3","shape":[4],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/f8.safetensors: tensor 'q': dtype f8_e4m3 is not supported" "$T/f8.safetensors"
    mkst "$T/d.safetensors" '{"a":{"dtype":"F16","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/d.safetensors: tensor 'a': 17 dimensions \(wpack reads at most 16\)$" "$T/d.safetensors"
}

@test "bad safetensors: duplicate names in one file and across two files" {
    mkst "$T/d.safetensors" '{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"a":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}}' 8
    bad "^safetensorscat: $T/d.safetensors: duplicate tensor name 'a' in the header$" "$T/d.safetensors"
    cp "$CALM" "$T/again.safetensors"
    bad "^safetensorscat: $T/again.safetensors: tensor 'base_model.* is also in $CALM$" "$CALM" "$T/again.safetensors"
    mkst "$T/m1.safetensors" '{"__metadata__":{"k":"1"}}' 0
    mkst "$T/m2.safetensors" '{"__metadata__":{"k":"2"}}' 0
    bad "^safetensorscat: $T/m2.safetensors: __metadata__ key 'k' differs from the one in $T/m1.safetensors$" "$T/m1.safetensors" "$T/m2.safetensors"
}

@test "bad safetensors: a failed run leaves a redirected stdout empty" {
    head -c 200000 "$CALM" > "$T/cut.safetensors"
    run sh -c "'$BIN/safetensorscat' '$CALM' '$T/cut.safetensors' > '$T/o.wps'"
    [ "$status" -ne 0 ]
    [ ! -s "$T/o.wps" ]
}

@test "bad safetensors: a shape too large, even with a zero dimension" {
    mkst "$T/big.safetensors" '{"a":{"dtype":"F16","shape":[0,1099511627776,1099511627776],"data_offsets":[0,0]}}' 0
    bad "^safetensorscat: $T/big.safetensors: tensor 'a': shape too large$" "$T/big.safetensors"
}

@test "safetensorscat of a GGUF file says what it is" {
    run "$BIN/safetensorscat" "$MODELS/stories260K-f16.gguf"
    [ "$status" -ne 0 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ "not a safetensors file (a GGUF file: read it with ggufcat)" ]]
}

@test "bad safetensors: a name with an embedded NUL is refused, an escaped backslash before u0000 is not" {
    mkst "$T/n.safetensors" '{"a\u0000b":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/n.safetensors: header holds the escape \\\\u0000 at byte 3 \(a name or value with a NUL\)$" "$T/n.safetensors"
    mkst "$T/ok.safetensors" '{"a\\u0000b":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    run "$BIN/safetensorscat" "$T/ok.safetensors"
    [ "$status" -eq 0 ]
    run sh -c "'$BIN/safetensorscat' '$T/ok.safetensors' | '$BIN/tsinfo' -"
    echo "$output" | grep -qF 'a\u0000b'
}

@test "a name holding a newline or tab: tsinfo's line and verify's columns stay whole (\\x0a, \\x09)" {
    mkst "$T/nl.safetensors" '{"a\nb":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"c\td":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}}' 8
    "$BIN/safetensorscat" "$T/nl.safetensors" > "$T/nl.wps"
    run "$BIN/tsinfo" "$T/nl.wps"
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 5 ]   # the header's key/value, the two tensors, the title and the total
    [[ "${lines[2]}" == 'tensor   a\x0ab '*' F16 '* ]]
    [[ "${lines[3]}" == 'tensor   c\x09d '*' F16 '* ]]
    "$BIN/ggufpack" -o "$T/nl.gguf" "$T/nl.wps"
    # c\td has a\nb's bytes: a reference to it cannot carry the newline, so it is stored
    # again (laneinterleave died with "out of memory")
    "$BIN/histogram" "$T/nl.wps" | "$BIN/huffbuild" | "$BIN/laneinterleave" -o "$T/nl.bundle"
    [ "$("$BIN/tsinfo" "$T/nl.bundle" | grep -c '^ref ')" -eq 0 ]
    run "$BIN/verify" --tsv "$T/nl.gguf" "$T/nl.bundle"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "${lines[@]}" | awk -F'\t' 'NF != 10' | wc -l)" -eq 0 ]
    printf '%s\n' "${lines[@]}" | grep -q '^a\\x0ab	F16	'
}

# ---- headers that are not well-formed JSON (cJSON took them; serde_json, the
# safetensors library's reader, and RFC 8259 do not): a tester's find --------

# mkst_raw OUT JSON NBYTES: mkst for a header with any bytes but NUL (raw
# control bytes, UTF-8 or not): its length counted in bytes, not characters.
mkst_raw() {
    local n; n=$(printf '%s' "$2" | LC_ALL=C wc -c)
    { printf "$(le64 "$n")"; printf '%s' "$2"; head -c "$3" /dev/zero; } > "$1"
}

@test "bad safetensors: a raw control byte in a string, or one outside strings that is not whitespace" {
    mkst_raw "$T/nl.safetensors" $'{"a\n":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/nl.safetensors: malformed JSON header \(raw control byte 0x0a in a string at byte 3: JSON needs it escaped\)$" "$T/nl.safetensors"
    mkst_raw "$T/tab.safetensors" $'{"__metadata__":{"k":"a\tb"},"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/tab.safetensors: malformed JSON header \(raw control byte 0x09 in a string at byte 23: JSON needs it escaped\)$" "$T/tab.safetensors"
    mkst_raw "$T/ws.safetensors" $'{"a":{"dtype":"F16",\x01"shape":[2,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/ws.safetensors: malformed JSON header \(control byte 0x01 at byte 20\)$" "$T/ws.safetensors"
}

@test "bad safetensors: a name or value that is not UTF-8 (invalid, truncated, overlong, a surrogate, past U+10FFFF)" {
    local seq i=0
    for seq in '\xff' '\xc3' '\xc0\xaf' '\xe0\x80\xaf' '\xed\xa0\x80' '\xf4\x90\x80\x80' '\xe2\x82'; do
        i=$((i + 1))
        mkst_raw "$T/u$i.safetensors" "$(printf "{\"a$seq\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]}}")" 12
        bad "^safetensorscat: $T/u$i.safetensors: malformed JSON header \(a string is not UTF-8 at byte 3\)$" "$T/u$i.safetensors"
    done
    mkst_raw "$T/m.safetensors" $'{"__metadata__":{"k":"\xfe"}}' 0
    bad "^safetensorscat: $T/m.safetensors: malformed JSON header \(a string is not UTF-8 at byte 22\)$" "$T/m.safetensors"
}

@test "bad safetensors: a shape or data_offsets written with a fraction or an exponent ([2.0] as [2.5] was)" {
    mkst "$T/f1.safetensors" '{"a":{"dtype":"F16","shape":[2.0,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/f1.safetensors: tensor 'a': shape is not a list of non-negative integers$" "$T/f1.safetensors"
    mkst "$T/f2.safetensors" '{"a":{"dtype":"F16","shape":[2e0,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/f2.safetensors: tensor 'a': shape is not a list of non-negative integers$" "$T/f2.safetensors"
    mkst "$T/f3.safetensors" '{"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12.0]}}' 12
    bad "^safetensorscat: $T/f3.safetensors: tensor 'a': \"data_offsets\" is not two non-negative integers$" "$T/f3.safetensors"
    mkst "$T/f4.safetensors" '{"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,1200E-2]}}' 12
    bad "^safetensorscat: $T/f4.safetensors: tensor 'a': \"data_offsets\" is not two non-negative integers$" "$T/f4.safetensors"
    # a leading zero is no JSON number at all
    mkst "$T/z.safetensors" '{"a":{"dtype":"F16","shape":[02,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/z.safetensors: malformed JSON header \(number with a leading zero at byte 29\)$" "$T/z.safetensors"
    # a number in a key the format does not know stays harmless, as serde_json ignores it
    mkst "$T/x.safetensors" '{"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12],"x":1.5e0}}' 12
    run "$BIN/safetensorscat" -o "$T/x.wps" "$T/x.safetensors"
    [ "$status" -eq 0 ]
}

@test "bad safetensors: an escape JSON does not know (\\uZZZZ cut the name short at a NUL)" {
    mkst "$T/h.safetensors" '{"a\uZZZZb":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/h.safetensors: malformed JSON header \(bad escape at byte 3: \\\\u takes 4 hex digits\)$" "$T/h.safetensors"
    mkst "$T/x.safetensors" '{"a\x41":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}}' 12
    bad "^safetensorscat: $T/x.safetensors: malformed JSON header \(bad escape at byte 3\)$" "$T/x.safetensors"
}

@test "bad safetensors: a shape dimension of 2^53 or more is too large, as [2^32, 2^32, 0] was (not 'not ... integers'); above 2^40 implausible, as in a GGUF" {
    local sh i=0
    for sh in '0,4611686018427387904' '9223372036854775807,0' '4294967296,4294967296,0' '0,9007199254740993'; do
        i=$((i + 1))
        mkst "$T/b$i.safetensors" "{\"a\":{\"dtype\":\"F16\",\"shape\":[$sh],\"data_offsets\":[0,0]}}" 0
        bad "^safetensorscat: $T/b$i.safetensors: tensor 'a': shape too large$" "$T/b$i.safetensors"
    done
    # (2^53 + 1 was read as 2^53); up to 2^40, with a zero dimension, still taken
    mkst "$T/ok.safetensors" '{"a":{"dtype":"F16","shape":[1099511627776,0],"data_offsets":[0,0]},"b":{"dtype":"F16","shape":[0,1099511627776],"data_offsets":[0,0]}}' 0
    run sh -c "'$BIN/safetensorscat' '$T/ok.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^tensor +a +F16 +0x1099511627776 +0 '
    echo "$output" | grep -E '^tensor +b +F16 +1099511627776x0 +0 '
    # and its GGUF read back: above 2^40 no reader takes a dimension, as a GGUF's says it (ggufpack
    # wrote 2^52 from it, which ggufcat and verify then refused: a breaker's find)
    run sh -c "'$BIN/safetensorscat' '$T/ok.safetensors' | '$BIN/ggufpack' > '$T/ok.gguf' && '$BIN/ggufcat' '$T/ok.gguf' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^tensor +b +F16 +1099511627776x0 +0 '
    mkst "$T/big.safetensors" '{"b":{"dtype":"F16","shape":[0,1099511627777],"data_offsets":[0,0]}}' 0
    bad "^safetensorscat: $T/big.safetensors: tensor 'b': dimension 0 of 1099511627777 is implausible$" "$T/big.safetensors"
}

@test "well-formed names still pass: escapes, UTF-8 (é, ünïcødé, 😀), \\u escapes of them, round trip byte for byte" {
    mkst_raw "$T/u.safetensors" '{"__metadata__":{"k":"v\n\u00fc 1.5"},"é":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},"ünïcødé😀":{"dtype":"F16","shape":[0],"data_offsets":[12,12]},"x\u00e9\ud83d\ude00\"\\\/\b\f\r\t":{"dtype":"F16","shape":[1],"data_offsets":[12,14]}}' 14
    "$BIN/safetensorscat" -o "$T/u.wps" "$T/u.safetensors"
    local name w at
    for name in 'é' 'ünïcødé😀' $'xé😀"\\/\b\f\r\t' 'safetensors.metadata.k'; do
        at=$(record_at "$T/u.wps" "$name")   # a record's, whole (its "WREC" tag and name_len)
        w=($(rec_words "$T/u.wps" "$at"))
        [ "${w[3]}" -eq "$(printf '%s' "$name" | LC_ALL=C wc -c)" ]
    done
    run "$BIN/tsinfo" "$T/u.wps"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^tensor ')" -eq 3 ]
    # the value's bytes after its u64 length: v, a newline, ü in UTF-8
    read -r p len <<< "$(payload_of "$T/u.wps" safetensors.metadata.k)"
    [ "$len" -eq 16 ]
    [ "$(tail -c +$((p + 9)) "$T/u.wps" | head -c 8 | od -An -tx1 | tr -d ' ')" = 760ac3bc20312e35 ]
}

@test "names at the stream's limit: a 4096-byte tensor name is taken, 4097 refused; a __metadata__ key of a 4096-byte name taken (it was refused: an off-by-one), 4097 refused (a mutation test's find)" {
    local n4096 n4097 k4075 k4076
    n4096=$(printf 'n%.0s' $(seq 4096))
    n4097=${n4096}n
    k4075=$(printf 'k%.0s' $(seq 4075))   # safetensors.metadata. + 4075 bytes: a 4096-byte record name
    k4076=${k4075}k                       # 4097 bytes
    mkst "$T/n.safetensors" "{\"$n4096\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}" 4
    run sh -c "'$BIN/safetensorscat' '$T/n.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | awk '$1 == "tensor" { print length($2), $3, $4, $5 }')" = "4096 F16 2 4" ]
    mkst "$T/n2.safetensors" "{\"$n4097\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}" 4
    bad "^safetensorscat: $T/n2.safetensors: tensor '${n4096:0:64}\.\.\.': name longer than 4096 bytes$" "$T/n2.safetensors"
    mkst "$T/k.safetensors" "{\"__metadata__\":{\"$k4075\":\"v\"}}" 0
    run sh -c "'$BIN/safetensorscat' '$T/k.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | awk '$1 == "kv" && $2 != "safetensors.header" { print length($2) }')" = 4096 ]
    mkst "$T/k2.safetensors" "{\"__metadata__\":{\"$k4076\":\"v\"}}" 0
    bad "^safetensorscat: $T/k2.safetensors: __metadata__ key '${k4075:0:64}\.\.\.' is too long$" "$T/k2.safetensors"
}

@test "bad safetensors: a tensor's field given twice is refused, as the safetensors library refuses it (a breaker's find)" {
    # the first "dtype" was taken, where serde refuses the file
    mkst "$T/d.safetensors" '{"a":{"dtype":"F16","dtype":"BF16","shape":[2],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/d.safetensors: tensor 'a': \"dtype\" given twice$" "$T/d.safetensors"
}

@test "bad safetensors: an empty tensor name, a duplicate __metadata__ key (a mutation test's find)" {
    mkst "$T/e.safetensors" '{"":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/e.safetensors: tensor with an empty name$" "$T/e.safetensors"
    mkst "$T/d.safetensors" '{"__metadata__":{"k":"1","j":"0","k":"2"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    bad "^safetensorscat: $T/d.safetensors: duplicate __metadata__ key 'k'$" "$T/d.safetensors"
}

@test "UTF-8 at the top of each second-byte range is taken: U+00BF, U+D7FF, U+FFFF, U+10FFFF (a mutation test's find)" {
    mkst_raw "$T/u.safetensors" $'{"a\xc2\xbf":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"b\xed\x9f\xbf":{"dtype":"F16","shape":[1],"data_offsets":[2,4]},"c\xef\xbf\xbf":{"dtype":"F16","shape":[1],"data_offsets":[4,6]},"d\xf4\x8f\xbf\xbf":{"dtype":"F16","shape":[1],"data_offsets":[6,8]}}' 8
    run sh -c "'$BIN/safetensorscat' '$T/u.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | awk '$1 == "tensor" { print $2 }' | od -An -tx1 | tr -d ' \n')" = "61c2bf0a62ed9fbf0a63efbfbf0a64f48fbfbf0a" ]
}

@test "a file whose first 8 bytes say a header of 1 byte is no safetensors file to a stream reader (a mutation test's find)" {
    printf "$(le64 1){       " > "$T/one.bin"
    run "$BIN/tsinfo" "$T/one.bin"
    [ "$status" -ne 0 ]
    [ "$output" = "tsinfo: $T/one.bin: not a wpack stream (bad magic)" ]
    # a safetensors header: tsinfo reads it as safetensorscat does (it said "read it with
    # safetensorscat": a new user's trial), its faults as safetensorscat says them
    printf "$(le64 2){}      " > "$T/two.bin"
    run "$BIN/tsinfo" "$T/two.bin"
    [ "$status" -ne 0 ]
    [ "$output" = "tsinfo: $T/two.bin: bytes [0, 6) of the 6-byte data section belong to no tensor (safetensors allows no holes)" ]
    # and a whole file is listed as safetensorscat's stream is, metadata, attributes and hashes
    run "$BIN/tsinfo" -a -x "$CALM"
    [ "$status" -eq 0 ]
    [ "$output" = "$("$BIN/safetensorscat" "$CALM" | "$BIN/tsinfo" -a -x)" ]
    [[ "${lines[-1]}" == "# "*" records, "*" tensors 16.0000 b/w" ]]
    # a pipe is a stream, not peeked
    run sh -c "cat '$CALM' | '$BIN/tsinfo'"
    [ "$output" = "tsinfo: stdin: not a wpack stream (a safetensors file: read it with safetensorscat)" ]
}

@test "the same metadata in two files is written once, where the first file has it: before its tensors (a mutation test's find)" {
    mkst "$T/a.safetensors" '{"__metadata__":{"format":"pt"},"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    mkst "$T/b.safetensors" '{"__metadata__":{"format":"pt","b":"2"},"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    run sh -c "'$BIN/safetensorscat' '$T/a.safetensors' '$T/b.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | awk '$1 == "kv" || $1 == "tensor" {print $1, $2}' | tr '\n' ' ')" = "kv safetensors.metadata.format tensor x kv safetensors.metadata.b tensor y " ]
}

@test "-- ends the options: a file named -x.safetensors is read; -o onto an input is refused, the input kept (a mutation test's find)" {
    cp "$CALM" "$T/-x.safetensors"
    cd "$T"
    "$BIN/safetensorscat" "$CALM" > "$T/want.wps"
    run "$BIN/safetensorscat" -o "$T/got.wps" -- -x.safetensors
    [ "$status" -eq 0 ]
    cmp "$T/want.wps" "$T/got.wps"
    fails_saying "safetensorscat: $T/-x.safetensors: is also an input of this run: writing it would replace that input (write elsewhere)" \
        "$BIN/safetensorscat" -o "$T/-x.safetensors" -- -x.safetensors
    cmp "$CALM" "$T/-x.safetensors"
}

@test "a tensor named as another file's __metadata__ key is no clash: both are written (a mutation test's find)" {
    mkst "$T/a.safetensors" '{"k":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    mkst "$T/b.safetensors" '{"__metadata__":{"k":"v"},"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 4
    run sh -c "'$BIN/safetensorscat' '$T/a.safetensors' '$T/b.safetensors' | '$BIN/tsinfo' -"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | awk '$1 == "kv" || $1 == "tensor" {print $1, $2}' | tr '\n' ' ')" = "tensor k kv safetensors.metadata.k tensor y " ]
}
