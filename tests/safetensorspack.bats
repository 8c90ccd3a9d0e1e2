#!/usr/bin/env bats
# safetensorspack, and unbundle, verify and unweight on a safetensors file: the stream
# of one file (safetensorscat FILE) and its bundles give the file back byte for byte;
# real LoRA files, and stories260K's real BF16 weights written as the safetensors
# library writes a model (tests/helpers.bash's st_of_stream), whole and in two shards.
bats_require_minimum_version 1.5.0
load helpers

setup() {
    T="$BATS_TEST_TMPDIR"
    ST="$DATA/safetensors"
    CALM="$ST/open-calm-1b-lora-r1-f16.safetensors"   # 400,024 bytes: 48 F16 tensors
    SD="$ST/sd15-lora-r4-f16.safetensors"             # 3,117,793 bytes: 384 F16 tensors
}

# lossless CHAIN: the lossless coders after bf16split (unweight's), stream on stdin, bundle on stdout.
lossless() {
    "$BIN/bf16split" --palette 16 --row 64 | "$BIN/histogram" | "$BIN/huffbuild" --max-len 11 | "$BIN/laneinterleave" "$@"
}

@test "safetensorspack --help and --version" {
    run "$BIN/safetensorspack" --help
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: safetensorspack [-o OUT.safetensors] [STREAM]" ]]
    run "$BIN/safetensorspack" --version
    [ "$status" -eq 0 ]
    [[ "$output" == "safetensorspack (wpack) "* ]]
}

@test "real LoRA files: safetensorscat | safetensorspack gives each file back byte for byte" {
    for f in "$CALM" "$SD"; do
        "$BIN/safetensorscat" "$f" | "$BIN/safetensorspack" > "$T/back.safetensors"
        cmp "$T/back.safetensors" "$f"
        "$BIN/safetensorscat" -o "$T/s.wps" "$f"
        "$BIN/safetensorspack" -o "$T/back2.safetensors" "$T/s.wps"
        cmp "$T/back2.safetensors" "$f"
    done
    # the header kept is the file's first 8 + N bytes (sd15's N = 35033, not a multiple of 8)
    read -r p len <<< "$(payload_of "$T/s.wps" safetensors.header)"
    [ "$len" -eq $((8 + 35033)) ]
    cmp -n "$len" -i "$p:0" "$T/s.wps" "$SD"
}

@test "the bundle of one file's stream: unbundle gives the file back, plain and --dist, and verify checks it against the file" {
    "$BIN/safetensorscat" "$SD" | lossless -o "$T/s.bundle"
    "$BIN/safetensorscat" "$SD" | lossless --dist -o "$T/s.dist.bundle"
    "$BIN/unbundle" "$T/s.bundle" | cmp - "$SD"
    "$BIN/unbundle" -o "$T/back.safetensors" "$T/s.dist.bundle"
    cmp "$T/back.safetensors" "$SD"
    "$BIN/unbundle" --stream "$T/s.bundle" | "$BIN/safetensorspack" | cmp - "$SD"
    # the file's b/w: 3,117,793 bytes x 8 / 1,541,376 weights
    run "$BIN/verify" -q "$SD" "$T/s.bundle"
    [ "$status" -eq 0 ]
    [[ "${lines[1]}" == "safetensors 16.1819 b/w, bundle "* ]]
    [ "${lines[2]}" = "rebuilt safetensors byte-identical: every tensor matches with both decoders" ]
    run "$BIN/verify" --tsv "$SD" "$T/s.dist.bundle"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == "*	file	1541376	16.1819	"*"	ok" ]]
    # the --dist bundle is smaller than zstd -19 of the file (0.86 times it)
    z=$(zstd -19 -q -c "$SD" | wc -c)
    [ "$(stat -c %s "$T/s.dist.bundle")" -lt "$z" ]
    # against another file: each tensor named, FAILED, exit 1
    run --separate-stderr "$BIN/verify" -q "$CALM" "$T/s.bundle"
    [ "$status" -eq 1 ]
    [ "${lines[2]}" = "rebuilt safetensors DIFFERS: FAILED" ]
    [[ "$stderr" == "verify: $T/s.bundle: 384 tensors differ from $CALM (first: "*" is not in $CALM)" ]]
}

@test "a BF16 model as a safetensors file: unweight codes it and checks it restores the file, whole and in shards" {
    "$BIN/ggufcat" "$MODELS/stories260K-bf16.gguf" > "$T/m.wps"
    st_of_stream "$T/m.wps" "$T/model.safetensors"
    st_of_stream "$T/m.wps" "$T/model" 2
    [ "$(stat -c %s "$T/model.safetensors")" -eq 591208 ]
    run --separate-stderr "$ROOT/pipelines/unweight" --dist "$T/model.safetensors" "$T/out"
    [ "$status" -eq 0 ]
    [ "$stderr" = "unweight: $T/out/model-p16.bundle and .dist.bundle: safetensors 16.1532 b/w, bundle 10.2660 b/w, dist bundle 9.3418 b/w, lossless (palette 16)" ]
    "$BIN/unbundle" "$T/out/model-p16.bundle" | cmp - "$T/model.safetensors"
    "$BIN/unbundle" "$T/out/model-p16.dist.bundle" | cmp - "$T/model.safetensors"
    grep -q "^rebuilt safetensors byte-identical: every tensor matches with both decoders$" "$T/out/model-p16.report"
    # shipped against shipped: 9.34 b/w against zstd -19's 10.81
    [ $(( $(stat -c %s "$T/out/model-p16.dist.bundle") * 100 / $(zstd -19 -q -c "$T/model.safetensors" | wc -c) )) -le 87 ]
    # the tensors are the GGUF's: the same exponents and bundle bytes for each matrix
    "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" "$T/g" 2> /dev/null
    [ "$(grep -c '^blk' "$T/g/stories260K-bf16-p16.report")" -eq "$(grep -c '^blk' "$T/out/model-p16.report")" ]
    diff <(grep '^blk' "$T/g/stories260K-bf16-p16.report" | awk '{print $1, $5, $6}') \
         <(grep '^blk' "$T/out/model-p16.report" | awk '{print $1, $5, $6}')
    # each shard alone, named by its file
    for k in 1 2; do
        s="$T/model-0000$k-of-00002.safetensors"
        "$ROOT/pipelines/unweight" "$s" "$T/shards" 2> /dev/null
        "$BIN/unbundle" "$T/shards/model-0000$k-of-00002-p16.bundle" | cmp - "$s"
    done
}

@test "ggufpack of one file's stream leaves its header out: the GGUF is the one of the file's tensors alone" {
    "$BIN/safetensorscat" "$SD" > "$T/s.wps"
    "$BIN/ggufpack" -o "$T/s.gguf" "$T/s.wps"
    run "$BIN/tsinfo" "$T/s.gguf"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^kv ')" -eq 194 ]
    ! echo "$output" | grep -q 'safetensors.header' || false
    # ggufpack -v counts it as the one record it dropped
    run --separate-stderr "$BIN/ggufpack" -v -o "$T/s2.gguf" "$T/s.wps"
    [ "$stderr" = "ggufpack: 1 non-GGUF records dropped" ]
    cmp "$T/s.gguf" "$T/s2.gguf"
}

@test "bad input: streams that are no single file's, or no longer its tensors, are one line, exit 1, nothing written" {
    "$BIN/safetensorscat" "$CALM" "$SD" > "$T/two.wps"
    run "$BIN/safetensorspack" -o "$T/o.safetensors" "$T/two.wps"
    one_line_error "^safetensorspack: $T/two.wps: record 'safetensors.metadata.format' before the safetensors.header key/value \(not a stream of one safetensors file: safetensorscat FILE makes one\)$"
    "$BIN/ggufcat" -o "$T/g.wps" "$MODELS/stories260K-f32.gguf"
    run "$BIN/safetensorspack" -o "$T/o.safetensors" "$T/g.wps"
    one_line_error "^safetensorspack: $T/g.wps: record 'stories260K-f32.gguf' before the safetensors.header key/value"
    # quantized on the way: no longer the file's tensors (gptq takes the stream of a model)
    "$BIN/safetensorscat" "$CALM" | "$BIN/bf16split" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/c.bundle"
    run "$BIN/safetensorspack" -o "$T/o.safetensors" "$T/c.bundle"
    one_line_error "^safetensorspack: $T/c.bundle: a bundle \(a [a-z]* record\): unbundle writes its file$"
    # a stream cut short: its reader's line, no file
    "$BIN/safetensorscat" -o "$T/c.wps" "$CALM"
    head -c 200000 "$T/c.wps" > "$T/cut.wps"
    run "$BIN/safetensorspack" -o "$T/o.safetensors" "$T/cut.wps"
    one_line_error "^safetensorspack: $T/cut.wps: truncated stream"
    [ ! -e "$T/o.safetensors" ]
    [ -z "$(ls -A "$T" | grep '\.tmp')" ]
    # a redirected output is left empty
    run sh -c "'$BIN/safetensorspack' '$T/cut.wps' > '$T/r.safetensors'"
    [ "$status" -eq 1 ]
    [ ! -s "$T/r.safetensors" ]
    # a damaged header: its problem, as safetensorscat would say it of the file (__metadata__
    # becomes a tensor's name)
    cp "$T/c.wps" "$T/d.wps"
    read -r p len <<< "$(payload_of "$T/d.wps" safetensors.header)"
    patch_bytes "$T/d.wps" $((p + 16)) 'X'
    reseal "$T/d.wps"
    run "$BIN/safetensorspack" -o "$T/o.safetensors" "$T/d.wps"
    one_line_error "^safetensorspack: $T/d.wps: safetensors.header: tensor '__metaXata__': missing or bad \"dtype\"$"
    [ ! -e "$T/o.safetensors" ]
}

@test "names: a safetensors file is not written under a GGUF's or a compressor's name, nor a GGUF under a safetensors name" {
    "$BIN/safetensorscat" -o "$T/c.wps" "$CALM"
    "$BIN/safetensorscat" "$CALM" | lossless -o "$T/c.bundle"
    cd "$T"
    run "$BIN/safetensorspack" -o x.gguf c.wps
    one_line_error "^safetensorspack: x.gguf: refusing to write a safetensors file under a GGUF's name: llama.cpp could not load it \(name it NAME.safetensors; unbundle --stream B \| ggufpack makes a GGUF of it\)$"
    run "$BIN/unbundle" -o x.gguf c.bundle
    one_line_error "^unbundle: x.gguf: refusing to write a safetensors file under a GGUF's name"
    run sh -c "'$BIN/unbundle' c.bundle > x.safetensors.zst"
    one_line_error "^unbundle: stdout \($T/x.safetensors.zst\): refusing to write a safetensors file under a zstd name: it is written uncompressed \(name it NAME.safetensors, then zstd it\)$"
    [ ! -s x.safetensors.zst ]
    [ ! -e x.gguf ]
    # a GGUF's bundle under a safetensors name, given or redirected: refused after its first record
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > g.bundle
    run sh -c "'$BIN/unbundle' g.bundle > g.SafeTensors"
    one_line_error "^unbundle: stdout \($T/g.SafeTensors\): refusing to write a GGUF file under a safetensors name"
    [ ! -s g.SafeTensors ]
    # a --dist bundle under a compressed safetensors name: zstd -d would make a .safetensors of
    # it that no loader reads (a publisher's trial)
    run sh -c "'$BIN/safetensorscat' '$CALM' | '$BIN/laneinterleave' --dist -o ship.safetensors.zst"
    one_line_error "^laneinterleave: ship.safetensors.zst: refusing to write a wpack stream under a zstd'd safetensors file's name: zstd -d would give a .safetensors that loaders cannot read \(name it otherwise, such as NAME.dist.bundle; unbundle writes the file\)$"
    [ ! -e ship.safetensors.zst ]
    # and a stream to a terminal
    run script -qec "'$BIN/safetensorspack' c.wps" /dev/null
    [ "$status" -eq 1 ]
    [[ "$output" == *"safetensorspack: refusing to write a safetensors file to a terminal (redirect it, pipe it, or use -o FILE)"* ]]
}

@test "a stream quantized by gptq is no longer the file's: gptq leaves its header out, and its bundle gives the GGUF (a breaker's find)" {
    # gptq kept the header: unbundle refused to write the GGUF under any name, and wrote the
    # header alone to a pipe
    "$BIN/safetensorscat" "$CALM" | "$BIN/gptq" --rtn --type Q8_0 --quiet > "$T/q.wts"
    ! "$BIN/tsinfo" "$T/q.wts" | grep -q safetensors.header || false
    "$BIN/ggufpack" -o "$T/q.gguf" "$T/q.wts" 2> /dev/null
    "$BIN/histogram" "$T/q.wts" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$T/q.bundle"
    "$BIN/unbundle" -o "$T/back.gguf" "$T/q.bundle" 2> /dev/null
    cmp "$T/back.gguf" "$T/q.gguf"
    # and safetensorspack says it is no single file's stream
    run "$BIN/safetensorspack" "$T/q.wts"
    one_line_error "^safetensorspack: $T/q.wts: record 'safetensors.metadata.format' before the safetensors.header key/value \(not a stream of one safetensors file: safetensorscat FILE makes one\)$"
}

@test "unbundle writes a safetensors file without temporary files (TMPDIR unused), and names the restored file's kind only when it knows it (breakers' finds)" {
    "$BIN/safetensorscat" "$CALM" | lossless -o "$T/c.bundle"
    TMPDIR=/nonexistent "$BIN/unbundle" "$T/c.bundle" > "$T/c.safetensors"
    cmp "$T/c.safetensors" "$CALM"
    # a compressor's suffix of a name that says neither kind: words that fit both (a GGUF's
    # advice was given for a safetensors file)
    cd "$T"
    run "$BIN/unbundle" -o x.zst c.bundle
    one_line_error "^unbundle: x.zst: refusing to write the restored file under a zstd name: it is written uncompressed \(name it NAME.gguf or NAME.safetensors, as the bundle's source was, then zstd it\)$"
    run "$BIN/unbundle" -o x.safetensors.gz c.bundle
    one_line_error "^unbundle: x.safetensors.gz: refusing to write a safetensors file under a gzip name: it is written uncompressed \(name it NAME.safetensors, then gzip it\)$"
    [ ! -e x.zst ]
    [ ! -e x.safetensors.gz ]
}

@test "unweight on safetensors names: .safetensors in any case, an OUTDIR named .safetensors refused, no weights said, a shard index named (a breaker's finds)" {
    cp "$CALM" "$T/My Model.Safetensors"
    "$ROOT/pipelines/unweight" "$T/My Model.Safetensors" "$T/u" 2> /dev/null
    [ -f "$T/u/My Model-p16.bundle" ]
    run "$ROOT/pipelines/unweight" "$CALM" "$T/out.safetensors"
    [ "$status" -eq 2 ]
    [ "$output" = "unweight: OUTDIR $T/out.safetensors: named as a file; OUTDIR is the folder NAME-pP.bundle goes into (such as $T)" ]
    [ ! -e "$T/out.safetensors" ]
    # a file of metadata alone: its line said ", lossless"
    python3 -c 'import struct, sys; h = b"{\"__metadata__\":{\"a\":\"b\"}}"; open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h)' "$T/meta.safetensors"
    run --separate-stderr "$ROOT/pipelines/unweight" "$T/meta.safetensors" "$T/m"
    [ "$status" -eq 0 ]
    [ "$stderr" = "unweight: $T/m/meta-p16.bundle: no weights, so no b/w, lossless (palette 16)" ]
    "$BIN/unbundle" "$T/m/meta-p16.bundle" | cmp - "$T/meta.safetensors"
    # a sharded model's index (ggufcat said "bad magic"; then safetensorscat's "give its shards",
    # which led to one stream of every shard, whose bundle gives no shard back), its folder, or
    # its shards all at once: one shard a run, the loop said (a publisher's trial)
    mkdir "$T/hf"
    printf '{"metadata": {"total_size": 8}, "weight_map": {"a": "model-00001-of-00002.safetensors"}}\n' > "$T/hf/model.safetensors.index.json"
    run "$ROOT/pipelines/unweight" --dist "$T/hf/model.safetensors.index.json" "$T/i"
    [ "$status" -eq 1 ]
    [ "$output" = "unweight: $T/hf/model.safetensors.index.json: a sharded model's index: code each shard it names, one at a time (for f in $T/hf/*.safetensors; do unweight --dist \"\$f\" $T/i; done), and ship the index as it is" ]
    run "$ROOT/pipelines/unweight" "$T/hf/" "$T/i" 0
    [ "$status" -eq 1 ]
    [ "$output" = "unweight: $T/hf/: a folder: unweight takes one file, a GGUF or a safetensors shard (for f in $T/hf/*.safetensors; do unweight \"\$f\" $T/i 0; done)" ]
    cp "$CALM" "$T/hf/model-00001-of-00002.safetensors"
    cp "$CALM" "$T/hf/model-00002-of-00002.safetensors"
    run "$ROOT/pipelines/unweight" "$T"/hf/*.safetensors "$T/i"
    [ "$status" -eq 2 ]
    [ "$output" = "unweight: one MODEL a run: code a sharded model's shards one at a time, into one OUTDIR (for f in $T/hf/*.safetensors; do unweight \"\$f\" $T/i; done)" ]
    # with the OUTDIR and PALETTE given, as given (it said OUTDIR and dropped the PALETTE: a breaker's find)
    run "$ROOT/pipelines/unweight" --dist "$T"/hf/*.safetensors "$T/i" 0
    [ "$output" = "unweight: one MODEL a run: code a sharded model's shards one at a time, into one OUTDIR (for f in $T/hf/*.safetensors; do unweight --dist \"\$f\" $T/i 0; done)" ]
    [ ! -e "$T/i" ]
}

@test "verify: a safetensors file given second is said as the order (a breaker's find)" {
    "$BIN/safetensorscat" "$CALM" | lossless -o "$T/c.bundle"
    run "$BIN/verify" "$T/c.bundle" "$CALM"
    one_line_error "^verify: $T/c.bundle: a bundle or stream, and $CALM a safetensors file: the order is verify ORIGINAL.safetensors BUNDLE$"
}

@test "dtypes no ggml type is (U8, BOOL, F8_E4M3, F8_E8M0, U16, U64) and shapes of 5 or 6 dimensions are carried as bytes: the file comes back; a GGUF of them is refused (a publisher's trial)" {
    # a bitsandbytes (U8) or FP8 checkpoint's shard, or a Conv3d's 5-D weight, was refused whole
    python3 - "$T/odd.safetensors" <<'PY'
import json, struct, sys
ts = [("q.weight", "U8", [4, 8]), ("q.absmax", "F32", [2]), ("mask", "BOOL", [3]), ("fp8.w", "F8_E4M3", [2, 16]),
      ("scale", "F8_E8M0", [2]), ("u16", "U16", [5]), ("u64", "U64", [1]), ("conv3d", "BF16", [2, 3, 2, 2, 2]),
      ("six", "F16", [1, 2, 1, 2, 1, 3]), ("norm", "BF16", [8])]
size = {"U8": 1, "F32": 4, "BOOL": 1, "F8_E4M3": 1, "F8_E8M0": 1, "U16": 2, "U64": 8, "BF16": 2, "F16": 2}
hdr, data = {"__metadata__": {"format": "pt"}}, b""
for name, dt, shape in ts:
    k = size[dt]
    for d in shape:
        k *= d
    hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + k]}
    data += bytes((len(data) + i) * 37 % 251 for i in range(k))
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
    run "$BIN/tsinfo" -a "$T/odd.safetensors"
    [ "$status" -eq 0 ]
    echo "$output" | grep -A1 -E '^tensor +q.weight +I8 +8x4 +32 ' | grep -qx '    safetensors_dtype=U8'
    echo "$output" | grep -A1 -E '^tensor +fp8.w +I8 +16x2 +32 ' | grep -qx '    safetensors_dtype=F8_E4M3'
    echo "$output" | grep -A1 -E '^tensor +u64 +I64 +1 +8 ' | grep -qx '    safetensors_dtype=U64'
    # 5-D [2,3,2,2,2]: ne 2x2x2, the outer 2x3 folded into 6; 6-D [1,2,1,2,1,3]: 3x1x2, then 1x2x1
    echo "$output" | grep -A1 -E '^tensor +conv3d +BF16 +2x2x2x6 +96 ' | grep -qx '    safetensors_shape=\[2,3,2,2,2\]'
    echo "$output" | grep -A1 -E '^tensor +six +F16 +3x1x2x2 +24 ' | grep -qx '    safetensors_shape=\[1,2,1,2,1,3\]'
    "$BIN/safetensorscat" "$T/odd.safetensors" | "$BIN/safetensorspack" | cmp - "$T/odd.safetensors"
    "$ROOT/pipelines/unweight" --dist "$T/odd.safetensors" "$T/o" 2> /dev/null
    "$BIN/unbundle" "$T/o/odd-p16.bundle" | cmp - "$T/odd.safetensors"
    "$BIN/unbundle" "$T/o/odd-p16.dist.bundle" | cmp - "$T/odd.safetensors"
    # a GGUF would call the bytes I8, or hold a 4-D shape of a 5-D tensor: refused, named
    run sh -c "'$BIN/safetensorscat' '$T/odd.safetensors' | '$BIN/ggufpack' -o '$T/odd.gguf'"
    one_line_error "^ggufpack: stdin: tensor 'q.weight': safetensors dtype U8, which no GGUF type is \(safetensorscat carries its bytes as I8 for the file's round trip: safetensorspack writes the file\)$"
    [ ! -e "$T/odd.gguf" ]
    python3 -c 'import struct, sys; h = b"{\"c\":{\"dtype\":\"F16\",\"shape\":[1,1,1,1,2],\"data_offsets\":[0,4]}}"; open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"\0<\0<")' "$T/c5.safetensors"
    run sh -c "'$BIN/safetensorscat' '$T/c5.safetensors' | '$BIN/ggufpack' > /dev/null"
    one_line_error "^ggufpack: stdin: tensor 'c': safetensors shape \[1,1,1,1,2\], more dimensions than a GGUF holds \(4; safetensorspack writes the file\)$"
    # a dtype still unread (F4, 4 bits a weight) is refused, with what is read and carried
    python3 -c 'import struct, sys; h = b"{\"f\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}"; open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"\0")' "$T/f4.safetensors"
    run "$BIN/safetensorscat" "$T/f4.safetensors"
    one_line_error "^safetensorscat: $T/f4.safetensors: tensor 'f': dtype F4 is not supported \(wpack reads F32, F16, BF16, F64, I8, I16, I32, I64, and carries U8, U16, U32, U64, BOOL, F8_E4M3, F8_E5M2 and F8_E8M0 as bytes\)$"
}

@test "gptq refuses to quantize bytes carried for a safetensors file (U8, a 5-D shape), at --check too; a zero-size folded shape is no size (a breaker's finds)" {
    python3 - "$T" <<'PY'
import json, struct, sys
def write(path, tensors):
    hdr, data = {}, b""
    for name, dt, shape, k in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + k]}
        data += bytes(i % 7 for i in range(k))
    h = json.dumps(hdr, separators=(",", ":")).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
write(sys.argv[1] + "/u8.safetensors", [("q.weight", "U8", [64, 64], 4096)])
write(sys.argv[1] + "/c5.safetensors", [("c.weight", "BF16", [64, 1, 1, 1, 64], 8192)])
write(sys.argv[1] + "/z.safetensors", [("z", "F16", [1048576, 1048577, 1, 1, 0], 0)])
PY
    run sh -c "'$BIN/safetensorscat' '$T/u8.safetensors' | '$BIN/gptq' --rtn --type Q8_0 -q"
    one_line_error "^gptq: stdin: tensor q.weight: safetensors dtype U8, carried as bytes for the safetensors file's round trip \(gptq quantizes a model's F32, F16 or BF16 tensors of at most 4 dimensions\)$"
    run sh -c "'$BIN/safetensorscat' '$T/c5.safetensors' | '$BIN/gptq' --check --rtn --type Q8_0"
    one_line_error "^gptq: stdin: tensor c.weight: safetensors shape \[64,1,1,1,64\], carried as bytes"
    # [1048576, 1048577, 1, 1, 0] holds nothing, as [0, ...] does (it was "shape too large")
    "$BIN/safetensorscat" "$T/z.safetensors" | "$BIN/safetensorspack" | cmp - "$T/z.safetensors"
}
