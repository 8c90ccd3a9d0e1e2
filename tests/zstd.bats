#!/usr/bin/env bats
# The distribution bundle against zstd -19 of the same GGUF (issue 9): a user
# choosing between `laneinterleave --dist` and `zstd -19 model.gguf` must
# never find zstd smaller.
load helpers

QUANTIZE="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin/llama-quantize"

setup_file() {
    export Q="$BATS_FILE_TMPDIR"
    if [ -x "$QUANTIZE" ]; then
        for t in Q8_0 Q5_0 Q4_K_M IQ4_XS; do
            "$QUANTIZE" "$MODELS/stories260K-f32.gguf" "$Q/s-$t.gguf" "$t" 1 >/dev/null 2>&1
        done
        "$QUANTIZE" --tensor-type ffn_down=f16 "$MODELS/stories260K-f32.gguf" "$Q/s-Q4_0.gguf" Q4_0 1 >/dev/null 2>&1
    fi
}

ratio() { # BUNDLE BASELINE_BYTES -> bundle/baseline with 4 decimals
    awk -v b="$(stat -c %s "$1")" -v z="$2" 'BEGIN { printf "%.4f", b / z }'
}

@test "quantized stories260K: the --dist bundle is never larger than zstd -19 of the GGUF" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    for t in Q8_0 Q5_0 Q4_0 Q4_K_M IQ4_XS; do
        "$BIN/ggufcat" "$Q/s-$t.gguf" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" --dist > "$Q/$t.bundle"
        "$BIN/verify" -q "$Q/s-$t.gguf" "$Q/$t.bundle" > /dev/null
        z=$(zstd -19 -q -c "$Q/s-$t.gguf" | wc -c)
        r=$(ratio "$Q/$t.bundle" "$z")
        echo "$t: bundle/zstd-19 = $r"
        awk -v r="$r" 'BEGIN { exit !(r <= 1.0) }'
    done
}

@test "BF16 stories260K: the bundle beats zstd -19 and byte-grouped zstd (ZipNN-style)" {
    m="$MODELS/stories260K-bf16.gguf"
    "$BIN/ggufcat" "$m" | "$BIN/bf16split" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" --dist > "$Q/bf16.bundle"
    "$BIN/verify" -q "$m" "$Q/bf16.bundle" > /dev/null
    z=$(zstd -19 -q -c "$m" | wc -c)
    g=$("$TOOLS/zgroup" "$m" | cut -d' ' -f1)
    [ "$g" -eq 392277 ]
    r=$(ratio "$Q/bf16.bundle" "$z"); rg=$(ratio "$Q/bf16.bundle" "$g")
    echo "bundle/zstd-19 = $r, bundle/byte-grouped zstd = $rg"
    awk -v r="$rg" 'BEGIN { exit !(r <= 0.98) }'
}

@test "a tensor equal to an earlier one is stored as a reference (tied embeddings)" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$BATS_TEST_TMPDIR/f.bundle"
    run "$BIN/tsinfo" -a "$BATS_TEST_TMPDIR/f.bundle"
    echo "$output" | grep -E '^ref +output.weight +F32'
    echo "$output" | grep -A3 -E '^ref +output.weight' | grep -q 'same_as=token_embd.weight'
    run "$BIN/verify" "$MODELS/stories260K-f32.gguf" "$BATS_TEST_TMPDIR/f.bundle"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^output.weight .* ok \(shares the bytes of token_embd.weight\)$'
    "$BIN/unbundle" < "$BATS_TEST_TMPDIR/f.bundle" | cmp - "$MODELS/stories260K-f32.gguf"
}

@test "repeated rows: llama.cpp's Q4_0 token_embd of stories260K keeps 345 distinct rows of 512" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    run sh -c "'$BIN/ggufcat' '$Q/s-Q4_0.gguf' | '$BIN/histogram' | '$BIN/tsinfo' -a -"
    echo "$output" | grep -A1 -E '^rowmap +token_embd.weight +Q4_0 +64x512' | grep -q 'distinct_rows=345'
    echo "$output" | grep -E '^symbols +token_embd.weight +Q4_0 +64x345 '
}

@test "metadata travels as one zstd'd kvpack record" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/histogram" | "$BIN/huffbuild" | "$BIN/laneinterleave" > "$BATS_TEST_TMPDIR/m.bundle"
    run "$BIN/tsinfo" -a "$BATS_TEST_TMPDIR/m.bundle"
    [ "$(echo "$output" | grep -c '^kvpack ')" -eq 1 ]
    [ "$(echo "$output" | grep -c '^kv ')" -eq 0 ]
    echo "$output" | grep -q 'n_kv=17'
}
