#!/usr/bin/env bats
# hessian (filters/hessian.c) against llama.cpp's own llama-imatrix, with
# build/tools/imatrix_cmp (reads llama-imatrix's GGUF with the reference gguf
# API, checks diag(H)/n_tokens = in_sum2/counts, symmetry, Cholesky of H+1e-6 I).
#
# Calibration text: groups_merged.txt (not the evaluation text), 4 chunks of
# 512 tokens, 1 thread. Recorded llama-imatrix values (pinned source, native
# build): llama-imatrix -m stories260K-f32.gguf -f groups_merged.txt --chunks 4
#   -t 1 --no-ppl --process-output; in_sum2/counts, first 4 columns.
# Built against the same libllama (the reference build), hessian equals
# llama-imatrix to 5.9e-6 relative (llama-imatrix sums in float); the default
# prebuilt libllama (node-llama-cpp) picks a CPU variant for the machine whose
# kernels differ in the last bits: against a Sapphire Rapids native build,
# 3.1e-4 relative at worst with its zen4 variant, 2.05e-3 with haswell,
# sandybridge or x64 (blk.0.ffn_down.weight[171]), so the live comparison
# with the default libllama allows 5e-3.

bats_require_minimum_version 1.5.0
load helpers

REF_BUILD="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}"
LLIMAT="$REF_BUILD/bin/llama-imatrix"
H="$BIN/hessian"
CMP="$TOOLS/imatrix_cmp"
M32="$MODELS/stories260K-f32.gguf"
CAL="$DATA/text/groups_merged.txt"

# hessian's output for these arguments (--threads 1, groups_merged, 4 chunks), once per file.
ours() {
    local key="$1"; shift
    local f="$BATS_FILE_TMPDIR/h.$key"
    if [ ! -s "$f" ]; then
        "$H" --threads 1 --model "$M32" --text "$CAL" --chunks 4 "$@" -o "$f" 2> "$f.err" \
            || { cat "$f.err" >&2; return 1; }
    fi
    echo "$f"
}

# llama-imatrix's output for the same text, once per file.
theirs() {
    local f="$BATS_FILE_TMPDIR/imatrix.gguf"
    if [ ! -s "$f" ]; then
        "$LLIMAT" -m "$M32" -f "$CAL" --chunks 4 -t 1 --no-ppl --process-output -o "$f" \
            > "$f.log" 2>&1 || { tail -5 "$f.log" >&2; return 1; }
    fi
    echo "$f"
}

need_ref() {
    [ -x "$LLIMAT" ] || skip "llama-imatrix not built at $LLIMAT (make reftools): live comparison skipped"
}

# Succeeds when every value of list a is within rel of list b.
close() {
    awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN {
        n = split(a, x, " "); m = split(b, y, " "); if (n != m || n == 0) exit 1
        for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > tol * y[i]) exit 1 }
    }' || { echo "not within $3: ours '$1' vs '$2'" >&2; return 1; }
}

@test "hessian --help describes the options" {
    run "$H" --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--max-memory"* ]]
    [[ "$output" == *"--chunks"* ]]
}

@test "the same bytes for any --threads (1, 2, 3), where the products run on several BLAS threads" {
    # hessian(1) said that another thread count changed the Hessians by rounding; a CI
    # maintainer's trial found they do not, and the pages say so (1024 tokens x 64^2 and x
    # 172^2 take the threaded products)
    local t
    for t in 1 2 3; do
        "$H" --threads "$t" --model "$M32" --text "$CAL" --chunks 2 -o "$BATS_TEST_TMPDIR/t$t.hess" 2> /dev/null
    done
    cmp "$BATS_TEST_TMPDIR/t1.hess" "$BATS_TEST_TMPDIR/t2.hess"
    cmp "$BATS_TEST_TMPDIR/t1.hess" "$BATS_TEST_TMPDIR/t3.hess"
    # another --batch adds the chunks in another order: other bytes
    "$H" --threads 2 --batch 512 --model "$M32" --text "$CAL" --chunks 2 -o "$BATS_TEST_TMPDIR/b.hess" 2> /dev/null
    ! cmp -s "$BATS_TEST_TMPDIR/t1.hess" "$BATS_TEST_TMPDIR/b.hess" || false
}

@test "stories260K: 36 Hessian records (5 layers x 7 matrices + output.weight), F64 cols x cols" {
    f=$(ours base)
    run "$BIN/tsinfo" "$f"
    [ "$(echo "$output" | grep -c '^hessian ')" -eq 36 ]
    [ "$(echo "$output" | grep -c '^hessian .*blk\.[0-4]\.\(attn_[qkv]\|attn_output\|ffn_gate\|ffn_up\)\.weight  *F64  *64x64  *32768')" -eq 30 ]
    [ "$(echo "$output" | grep -c '^hessian .*blk\.[0-4]\.ffn_down\.weight  *F64  *172x172  *236672')" -eq 5 ]
    echo "$output" | grep -q '^hessian  *output\.weight  *F64  *64x64'
    [ "$(echo "$output" | grep -vc '^hessian \|^kind \|^#')" -eq 0 ]
}

@test "attributes: n_tokens = chunks x ctx, ctx, chunks, text_hash = XXH64 of the text file" {
    f=$(ours base)
    hash=$("$TOOLS/imatrix_cmp" --xxh64 "$CAL")
    run "$BIN/tsinfo" -a "$f"
    [ "$(echo "$output" | grep -c '^ *n_tokens=2048$')" -eq 36 ]
    [ "$(echo "$output" | grep -c '^ *ctx=512$')" -eq 36 ]
    [ "$(echo "$output" | grep -c '^ *chunks=4$')" -eq 36 ]
    [ "$(echo "$output" | grep -c "^ *text_hash=$hash\$")" -eq 36 ]
}

@test "every H is symmetric and H + 1e-6 I has a Cholesky factor" {
    run "$CMP" - "$(ours base)"
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    [[ "$output" == *"records 36"* && "$output" == *"asym 0"* && "$output" == *"chol_fail 0"* ]]
}

@test "diag(H)/n_tokens equals recorded llama-imatrix values (default libllama: 1e-3)" {
    f=$(ours base)
    close "$("$CMP" --diag "$f" blk.0.attn_q.weight 4)" "0.518220186 0.514888585 0.456249356 0.883035362" 1e-3
    close "$("$CMP" --diag "$f" blk.4.ffn_down.weight 4)" "0.175597772 0.0570119247 0.204074293 0.18149133" 1e-3
    close "$("$CMP" --diag "$f" output.weight 4)" "1.93255687 1.22719467 1.24222183 0.715779483" 1e-3
}

@test "live: with the reference build's libllama, diag(H)/n_tokens = llama-imatrix to 1e-5 relative" {
    need_ref
    [ -e "$REF_BUILD/bin/libllama.so" ] || skip "no libllama.so in $REF_BUILD/bin"
    # the same program, run on the libraries llama-imatrix uses (RUNPATH yields to LD_LIBRARY_PATH)
    L="$BATS_TEST_TMPDIR/lib"
    ref_libs "$L"
    LD_LIBRARY_PATH="$L" WPACK_GGML_BACKEND_DIR="$REF_BUILD/bin" \
        "$H" --threads 1 --model "$M32" --text "$CAL" --chunks 4 -o "$BATS_TEST_TMPDIR/ref.hess" 2>/dev/null
    run "$CMP" "$(theirs)" "$BATS_TEST_TMPDIR/ref.hess" 1e-5
    echo "$output" >&2
    [ "$status" -eq 0 ]
    [[ "$output" == *"matched 36"* && "$output" == *"unmatched 0"* && "$output" == *"count_diff 0"* ]]
}

@test "live: with the default libllama, diag(H)/n_tokens = llama-imatrix to 5e-3 relative, counts equal" {
    # 1e-3 failed with libggml's haswell variant (2.05e-3, see the top)
    need_ref
    run "$CMP" "$(theirs)" "$(ours base)" 5e-3
    echo "$output" >&2
    [ "$status" -eq 0 ]
    [[ "$output" == *"matched 36"* && "$output" == *"count_diff 0"* && "$output" == *"n_tokens 2048"* ]]
}

@test "fewer tokens than 4 times a weight's columns: one warning before the passes, with the chunks that give the widest enough" {
    # GPTQ on 128 tokens of 64-column matrices did worse than RTN (gptq(1), Calibration tokens);
    # hessian said nothing. ffn_down's 172 columns, which no block type divides, stay F16: not
    # counted (they were named the widest: a re-tester's find)
    local L="$BATS_TEST_TMPDIR" tail="GPTQ on so few can do worse than RTN" knobs="(hessian --chunks, lazyweights' HESSIAN_CHUNKS) (gptq(1): Calibration tokens)"
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 1 -o "$L/a.hess"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[1]}" = "hessian: warning: 128 tokens (1 chunk of 128) are fewer than 4 times the columns of 31 of the 31 weights to quantize (the widest: blk.0.attn_q.weight, 64 columns): $tail; 2 chunks give 4 times, and more help further $knobs" ]
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 16 --chunks 9 -o "$L/a.hess"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[1]}" = "hessian: warning: 144 tokens (9 chunks of 16) are fewer than 4 times the columns of 31 of the 31 weights to quantize (the widest: blk.0.attn_q.weight, 64 columns): $tail; 16 chunks give 4 times, and more help further $knobs" ]
    # 256 tokens: none
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 2 -o "$L/a.hess"
    [ "$status" -eq 0 ]
    [[ "$stderr" != *"$tail"* ]]
    # a text too short for enough chunks says how many tokens it holds (it said "holds 1 chunks", and
    # gptq --damp, which lazyweights cannot pass: a re-tester's finds), and a shorter --ctx where
    # the text holds enough
    head -c 300 "$DATA/text/tinystories_sample.txt" > "$L/short.txt"
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$L/short.txt" --ctx 64 -o "$L/a.hess"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[1]}" = "hessian: warning: 128 tokens (2 chunks of 64) are fewer than 4 times the columns of 31 of the 31 weights to quantize (the widest: blk.0.attn_q.weight, 64 columns): $tail; $L/short.txt holds 149 tokens: a longer text gives more (gptq(1): Calibration tokens)" ]
    head -c 700 "$DATA/text/tinystories_sample.txt" > "$L/short.txt"
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$L/short.txt" --ctx 200 -o "$L/a.hess"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[1]}" = "hessian: warning: 200 tokens (1 chunk of 200) are fewer than 4 times the columns of 31 of the 31 weights to quantize (the widest: blk.0.attn_q.weight, 64 columns): $tail; $L/short.txt holds 355 tokens: a longer text gives more, a shorter --ctx more of these (gptq(1): Calibration tokens)" ]
}

@test "live: a mixture of experts (MUL_MAT_ID): one H per expert, each expert's diagonal llama-imatrix's in_sum2 / counts of that expert, several passes the same bytes, gate_exps and up_exps one H (with --share-inputs one record)" {
    # mkllama's Mixtral form of the llama architecture: 4 experts, 2 used, ffn_*_exps {cols, rows, 4}
    need_ref
    local L="$BATS_TEST_TMPDIR"
    "$TOOLS/mkllama" "$M32" "$L/moe.gguf" F32 256,512,2,4,2,512,4,2
    "$H" --threads 1 --model "$L/moe.gguf" --text "$CAL" --ctx 128 --chunks 4 -o "$L/moe.hess" 2> "$L/moe.err"
    # gate_exps and up_exps read one input with one routing: one H of 4 experts held for both (2 MiB)
    grep -q ' 4 chunks of 128, 17 weights, 17 records, 29.5 MiB in all (23.5 MiB of Hessians to hold' "$L/moe.err"
    "$BIN/tsinfo" "$L/moe.hess" > "$L/ls"
    grep -Eq '^hessian +blk\.1\.ffn_down_exps\.weight +F64 +512x512x4 +8388608 ' "$L/ls"
    grep -Eq '^hessian +blk\.0\.ffn_gate_inp\.weight +F64 +256x256 +524288 ' "$L/ls"
    [ "$(grep -c 'x4 ' "$L/ls")" -eq 6 ]
    # the rows routed to the experts of a layer: 512 tokens, 2 experts each
    "$BIN/tsinfo" -a "$L/moe.hess" | awk -F'[=,]' '/^ *expert_tokens=/ { s = 0; for (i = 2; i <= NF; i++) s += $i; print s }' > "$L/sums"
    [ "$(wc -l < "$L/sums")" -eq 6 ]
    [ "$(sort -u "$L/sums")" = 1024 ]
    # 512 tokens for 256 columns, and 239 to 273 routed to an expert: a warning each
    grep -qxF "hessian: warning: 512 tokens (4 chunks of 128) are fewer than 4 times the columns of 11 of the 11 weights to quantize (experts aside; the widest: blk.0.attn_q.weight, 256 columns): GPTQ on so few can do worse than RTN; 8 chunks give 4 times, and more help further (hessian --chunks, lazyweights' HESSIAN_CHUNKS) (gptq(1): Calibration tokens)" "$L/moe.err"
    grep -qxE "hessian: warning: 24 of the 24 experts' matrices have Hessians of fewer tokens than 4 times their columns \\(the fewest a column: blk\\.[01]\\.ffn_down_exps\\.weight expert [0-3], [0-9]+ tokens for 512 columns\\): GPTQ on so few can do worse than RTN; about [0-9]+ chunks give it 4 times \\(gptq\\(1\\): Calibration tokens\\)" "$L/moe.err"
    "$LLIMAT" -m "$L/moe.gguf" -f "$CAL" -c 128 --chunks 4 -t 1 --no-ppl --process-output -o "$L/moe.imatrix.gguf" \
        > "$L/imatrix.log" 2>&1 || { tail -5 "$L/imatrix.log" >&2; false; }
    run "$CMP" "$L/moe.imatrix.gguf" "$L/moe.hess" 5e-3
    echo "$output" >&2
    [ "$status" -eq 0 ]
    [[ "$output" == *"matched 17"* ]]
    [[ "$output" == *"unmatched 0"* ]]
    [[ "$output" == *"count_diff 0"* ]]
    # a pass holds at least one weight's experts (8 MiB for ffn_down_exps)
    "$H" --threads 1 --model "$L/moe.gguf" --text "$CAL" --ctx 128 --chunks 4 --max-memory 9M -o "$L/moe9m.hess" 2> "$L/moe9m.err"
    grep -q ', 4 passes of at most 9.0 MiB$' "$L/moe9m.err"
    cmp "$L/moe.hess" "$L/moe9m.hess"
    # --share-inputs: one record for them too, which gptq reads for each, to the same bytes
    "$H" --threads 1 --model "$L/moe.gguf" --text "$CAL" --ctx 128 --chunks 4 --share-inputs -o "$L/share.hess" 2> "$L/share.err"
    grep -q ' 17 weights, 11 records, 23.5 MiB in all ' "$L/share.err"
    "$BIN/tsinfo" -a "$L/share.hess" > "$L/a"
    grep -qx '    weights=blk.1.ffn_gate_exps.weight,blk.1.ffn_up_exps.weight' "$L/a"
    [ "$(grep -c 'weights=' "$L/a")" -eq 4 ]
    "$BIN/ggufcat" "$L/moe.gguf" | "$BIN/gptq" --hessian "$L/moe.hess" --ftype Q4_K_M -q -o "$L/a.wts"
    "$BIN/ggufcat" "$L/moe.gguf" | "$BIN/gptq" --hessian "$L/share.hess" --ftype Q4_K_M -q -o "$L/b.wts"
    cmp "$L/a.wts" "$L/b.wts"
}

@test "--share-inputs: one record for q/k/v and one for gate/up, holding the per-weight H; gptq makes the same model" {
    f=$(ours base)
    g=$(ours share --share-inputs)
    grep -q '36 weights, 21 records, 1.6 MiB in all (1.6 MiB of Hessians to hold, over the passes)' "$g.err"
    # without it as much memory, one Hessian for the weights of an input, written once a weight:
    # the file holds 2.1 MiB (the line said "36 records, 1.6 MiB of Hessians", a user's trial)
    grep -q '36 weights, 36 records, 2.1 MiB in all (1.6 MiB of Hessians to hold, over the passes)' "$f.err"
    [ "$(stat -c %s "$f" | awk '{ printf "%.1f", $1 / 1048576 }')" = 2.1 ]
    [ "$(stat -c %s "$g" | awk '{ printf "%.1f", $1 / 1048576 }')" = 1.6 ]
    [ "$("$BIN/tsinfo" "$g" | grep -c '^hessian ')" -eq 21 ]
    "$BIN/tsinfo" -a "$g" > "$BATS_TEST_TMPDIR/a"
    for l in 0 1 2 3 4; do
        grep -qx "    weights=blk.$l.attn_q.weight,blk.$l.attn_v.weight,blk.$l.attn_k.weight" "$BATS_TEST_TMPDIR/a"
        grep -qx "    weights=blk.$l.ffn_gate.weight,blk.$l.ffn_up.weight" "$BATS_TEST_TMPDIR/a"
    done
    [ "$(grep -c 'weights=' "$BATS_TEST_TMPDIR/a")" -eq 10 ]
    # each member's per-weight H has the shared record's bytes (payload XXH64)
    "$BIN/tsinfo" -x "$f" | awk '$1 == "hessian" { print $2, $NF }' | sort > "$BATS_TEST_TMPDIR/fx"
    "$BIN/tsinfo" -a -x "$g" | awk '
        function flush() { if (name == "") return; if (n == 0) print name, hash; else for (i = 1; i <= n; i++) print m[i], hash }
        $1 == "hessian" { flush(); name = $2; hash = $NF; n = 0; next }
        $1 ~ /^weights=/ { n = split(substr($1, 9), m, ",") }
        END { flush() }' | sort > "$BATS_TEST_TMPDIR/gx"
    [ "$(wc -l < "$BATS_TEST_TMPDIR/fx")" -eq 36 ]
    diff "$BATS_TEST_TMPDIR/fx" "$BATS_TEST_TMPDIR/gx"
    # several passes give the same bytes
    m=$(ours share300k --share-inputs --max-memory 300K)
    grep -q 'passes' "$m.err"
    cmp "$g" "$m"
    # gptq: the same Q4_K_M from either file
    "$BIN/ggufcat" "$M32" | "$BIN/gptq" --hessian "$f" --ftype Q4_K_M -q -o "$BATS_TEST_TMPDIR/a.wts"
    "$BIN/ggufcat" "$M32" | "$BIN/gptq" --hessian "$g" --ftype Q4_K_M -q -o "$BATS_TEST_TMPDIR/b.wts"
    cmp "$BATS_TEST_TMPDIR/a.wts" "$BATS_TEST_TMPDIR/b.wts"
}

@test "--max-memory: several passes over the text give the same bytes" {
    f=$(ours base)
    g=$(ours mem1m --max-memory 1M)
    grep -q ', 2 passes of at most 1.0 MiB$' "$g.err"     # 1.6 MiB: q/k/v hold one H, gate/up one
    cmp "$f" "$g"
    g=$(ours mem1mb --max-memory 1mb)                     # hessian(1): either case, a B or none
    grep -q ', 2 passes of at most 1.0 MiB$' "$g.err"
    g=$(ours mem300k --max-memory 300K)   # less than one layer: layers split between weights
    grep -q 'passes' "$g.err"
    cmp "$f" "$g"
    grep -q 'pass 1/.* chunk 4/4, [0-9]* tokens/s' "$g.err"
}

@test "default --max-memory: half of the memory at most, less the model's weights and an eighth (WPACK_MEMORY)" {
    local L="$BATS_TEST_TMPDIR"
    small() { WPACK_MEMORY=$1 "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 1 -o "$L/$1.hess" 2> "$L/$1.err"; }
    small 64G
    grep -q ', 1 pass of at most 32768.0 MiB (the default --max-memory)$' "$L/64G.err"
    # one chunk is "1 chunk" (it said "1 chunks")
    grep -q '^hessian: [0-9]* tokens, 1 chunk of 128, ' "$L/64G.err"
    grep -q '^hessian: [0-9]* weights, 1 chunk x 128 tokens in ' "$L/64G.err"
    # it was half of the memory whatever the model: 1.0 MiB here, and a 7B F16 model on 24 GiB
    # left 12 GiB of Hessians beside 13.5 GB of weights
    small 2M
    grep -q ', 5 passes of at most 0.6 MiB (the default --max-memory)$' "$L/2M.err"
    # the weights leave nothing: one Hessian a pass, the largest (ffn_down, 172 x 172 doubles); q/k/v
    # hold one between them, and so do gate/up (it was 16 passes, one a weight)
    small 1M
    grep -q ', 13 passes of at most 0.2 MiB (the default --max-memory)$' "$L/1M.err"
    cmp "$L/64G.hess" "$L/2M.hess"
    cmp "$L/64G.hess" "$L/1M.hess"
    # each pass stops the forward pass after its last Hessian's layer (it ran every layer, and
    # the output matrix, for every pass): the same bytes for less of the graph
    grep -q "in [0-9.]* s$" "$L/64G.err"
    grep -q "; each pass stops after its last layer: 59% of 5 whole forward passes' graph nodes$" "$L/2M.err"
    grep -q "; each pass stops after its last layer: 53% of 13 whole forward passes' graph nodes$" "$L/1M.err"
    # an explicit --max-memory is not the default; a bad WPACK_MEMORY is one line
    WPACK_MEMORY=1M "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 1 --max-memory 1M \
        -o "$L/e.hess" 2> "$L/e.err"
    grep -q ', 2 passes of at most 1.0 MiB$' "$L/e.err"
    for v in lots " -1"; do
        WPACK_MEMORY=$v run --separate-stderr "$H" --model "$M32" --text "$CAL" -o "$L/bad.hess"
        [ "$status" -eq 1 ]
        [ "$stderr" = "hessian: WPACK_MEMORY: expected a positive byte count (suffix K, M, G or T), got '$v'" ]
        [ ! -e "$L/bad.hess" ]
    done
}

@test "a chunk of two micro-batches (--ctx 1024): passes still stop early, the same bytes as one pass" {
    local L="$BATS_TEST_TMPDIR"
    WPACK_MEMORY=64G "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 1024 --chunks 1 -o "$L/one.hess" 2>/dev/null
    WPACK_MEMORY=2M "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 1024 --chunks 1 -o "$L/five.hess" 2> "$L/five.err"
    grep -q "; each pass stops after its last layer: 59% of 5 whole forward passes' graph nodes$" "$L/five.err"
    cmp "$L/one.hess" "$L/five.hess"
}

@test "stdout works as the output and --ctx/--chunks change n_tokens" {
    "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 3 > "$BATS_TEST_TMPDIR/s.hess" 2>/dev/null
    run "$BIN/tsinfo" -a "$BATS_TEST_TMPDIR/s.hess"
    [ "$(echo "$output" | grep -c '^ *n_tokens=384$')" -eq 36 ]
    [ "$(echo "$output" | grep -c '^ *ctx=128$')" -eq 36 ]
}

@test "--chunks above the text's chunk count warns and uses them all; --chunks within it says nothing" {
    # make model cached the 255 chunks of groups_merged.txt as HESSIAN_CHUNKS=300's, unsaid (a
    # fresh user's find)
    local L="$BATS_TEST_TMPDIR"
    head -c 3000 "$CAL" > "$L/s.txt"
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$L/s.txt" --ctx 128 --chunks 300 -o "$L/a.hess"
    [ "$status" -eq 0 ]
    [ "${stderr_lines[0]}" = "hessian: warning: $L/s.txt: --chunks 300: the text holds 15 chunks of 128 tokens (1985 tokens); using them all" ]
    [ "$(echo "$stderr" | grep -c warning)" -eq 1 ]
    [ "$("$BIN/tsinfo" -a "$L/a.hess" | grep -c '^ *chunks=15$')" -eq 36 ]
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$L/s.txt" --ctx 128 --chunks 15 -o "$L/b.hess"
    [ "$status" -eq 0 ]
    [ "$(echo "$stderr" | grep -c warning)" -eq 0 ]
    cmp "$L/a.hess" "$L/b.hess"
}

@test "a quantized model: one warning naming a quantized weight and its type; F32 and F16 none" {
    # hessian(1) says to calibrate the unquantized model; a Q8_0 GGUF ran without a word
    local L="$BATS_TEST_TMPDIR"
    "$BIN/ggufcat" "$M32" | "$BIN/gptq" --rtn --ftype Q8_0 2>/dev/null | "$BIN/ggufpack" > "$L/q8.gguf"
    # (6 chunks of 128: 768 tokens, 4 times the widest's 172 columns and more, no warning of few tokens)
    run --separate-stderr "$H" --threads 1 --model "$L/q8.gguf" --text "$CAL" --ctx 128 --chunks 6 -o "$L/q8.hess"
    [ "$status" -eq 0 ]
    [ "$(echo "$stderr" | grep -c warning)" -eq 1 ]
    echo "$stderr" | grep -qx "hessian: warning: $L/q8.gguf: blk.0.attn_q.weight is Q8_0: these are the Hessians of a quantized model (calibrate the F32/F16/BF16 model you quantize)"
    [ -s "$L/q8.hess" ]
    for m in "$M32" "$MODELS/stories260K-f16.gguf"; do
        run --separate-stderr "$H" --threads 1 --model "$m" --text "$CAL" --ctx 128 --chunks 6 -o "$L/f.hess"
        [ "$status" -eq 0 ]
        [ "$(echo "$stderr" | grep -c warning)" -eq 0 ]
    done
}

@test "--text - reads standard input: the file's records, text_hash = XXH64 of the bytes read" {
    # it said "hessian: -: No such file or directory" (wpack(7): - alone is standard input)
    local L="$BATS_TEST_TMPDIR" t hash
    head -c 20000 "$CAL" > "$L/a.txt"                  # no trailing newline
    { head -c 20000 "$CAL"; echo; } > "$L/b.txt"       # one, dropped before tokenizing but hashed
    for t in a b; do
        "$H" --threads 1 --model "$M32" --text "$L/$t.txt" --ctx 128 --chunks 2 -o "$L/$t.file.hess" 2>/dev/null
        "$H" --threads 1 --model "$M32" --text - --ctx 128 --chunks 2 -o "$L/$t.stdin.hess" < "$L/$t.txt" 2>/dev/null
        cat "$L/$t.txt" | "$H" --threads 1 --model "$M32" --text - --ctx 128 --chunks 2 > "$L/$t.pipe.hess" 2>/dev/null
        cmp "$L/$t.file.hess" "$L/$t.stdin.hess"
        cmp "$L/$t.file.hess" "$L/$t.pipe.hess"
        hash=$("$TOOLS/imatrix_cmp" --xxh64 "$L/$t.txt")
        [ "$("$BIN/tsinfo" -a "$L/$t.pipe.hess" | grep -c "^ *text_hash=$hash\$")" -eq 36 ]
    done
    ! cmp -s "$L/a.pipe.hess" "$L/b.pipe.hess" || false
    run --separate-stderr bash -c "'$H' --threads 1 --model '$M32' --text - --ctx 128 -o '$L/e.hess' < /dev/null"
    [ "$status" -eq 1 ]
    [ "$stderr" = "hessian: stdin: tokenizes to only 1 token; --ctx 128 needs at least 128 (one chunk)" ]
    [ ! -e "$L/e.hess" ]
}

# ---- bad input: one line "hessian: FILE: problem", exit != 0, no output file

bad() {  # expected-substring args...
    local want="$1"; shift
    run --separate-stderr "$H" --threads 1 "$@" -o "$BATS_TEST_TMPDIR/out.hess"
    [ "$status" -ne 0 ] || { echo "exit 0 for: $*" >&2; return 1; }
    [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ] || { echo "stderr: $stderr" >&2; return 1; }
    [[ "$stderr" == "hessian: "*"$want"* ]] || { echo "stderr: $stderr" >&2; return 1; }
    [ -z "$(ls "$BATS_TEST_TMPDIR" | grep 'out\.hess')" ] || { echo "output left behind" >&2; return 1; }
}

@test "bad input: empty and too-short text" {
    : > "$BATS_TEST_TMPDIR/empty.txt"
    bad "empty.txt: tokenizes to only 1 token" --model "$M32" --text "$BATS_TEST_TMPDIR/empty.txt"
    head -c 400 "$CAL" > "$BATS_TEST_TMPDIR/short.txt"
    bad "short.txt: tokenizes to only" --model "$M32" --text "$BATS_TEST_TMPDIR/short.txt"
}

@test "bad input: unreadable text" {
    bad "nonexistent.txt: No such file" --model "$M32" --text "$BATS_TEST_TMPDIR/nonexistent.txt"
    bad "Is a directory" --model "$M32" --text "$BATS_TEST_TMPDIR"
}

@test "hessian: no room for the Hessians (ulimit -f) is said before the passes, with --share-inputs's size; nothing written" {
    # a full disk or ulimit -f said "write error: File too large" after the passes, tens of
    # minutes on a 7B model (a new user's trial)
    cd "$BATS_TEST_TMPDIR"
    run --separate-stderr bash -c "ulimit -f 100; '$H' --threads 1 --model '$M32' --text '$CAL' --chunks 1 -o u.hess"
    [ "$status" -eq 1 ]
    [ "$stderr" = "hessian: u.hess: no room for the Hessians: 2.1 MiB needed, 100.0 KiB allowed by ulimit -f; --share-inputs writes 1.6 MiB, one H for the weights of an input" ]
    [ -z "$(ls | grep 'u\.hess')" ]
    run --separate-stderr bash -c "ulimit -f 100; '$H' --threads 1 --model '$M32' --text '$CAL' --chunks 1 --share-inputs > s.hess"
    [ "$status" -eq 1 ]
    [ "$stderr" = "hessian: stdout: no room for the Hessians: 1.6 MiB needed, 100.0 KiB allowed by ulimit -f" ]
    [ ! -s s.hess ]
    # room enough, by a few KiB: written (an allowance for the headers refused it: a breaker's
    # find), and to a pipe no check
    run bash -c "ulimit -f 2160; '$H' --threads 1 --model '$M32' --text '$CAL' --chunks 1 -o u.hess 2> /dev/null"
    [ "$status" -eq 0 ]
    [ "$(stat -c %s u.hess)" -eq 2206544 ]
    # 1<> onto a longer file writes from its start: the limit counts from there (its size was
    # counted as used, a breaker's find)
    head -c 3000000 /dev/zero > long.hess
    run bash -c "ulimit -f 2200; '$H' --threads 1 --model '$M32' --text '$CAL' --chunks 1 1<> long.hess 2> /dev/null"
    [ "$status" -eq 0 ]
    cmp -n 2206544 long.hess u.hess
    run bash -c "ulimit -f 100; '$H' --threads 1 --model '$M32' --text '$CAL' --chunks 1 2> /dev/null | wc -c"
    [ "$output" -eq "$(stat -c %s u.hess)" ]
}

@test "bad input: a model llama.cpp cannot load" {
    head -c 100000 "$M32" > "$BATS_TEST_TMPDIR/trunc.gguf"
    # llama.cpp's reason said (it showed only under WPACK_LLAMA_LOG=1: a new user's trial)
    bad "trunc.gguf: llama.cpp cannot load this model: tensor 'token_embd.weight' data is not within the file bounds, model is corrupted or incomplete" --model "$BATS_TEST_TMPDIR/trunc.gguf" --text "$CAL"
    bad "groups_merged.txt: a text, not a model: it goes to -f" --model "$CAL" --text "$CAL"
    # a bundle given as the model said only "llama.cpp cannot load this model" (a breaker's find)
    "$BIN/ggufcat" -o "$BATS_TEST_TMPDIR/m.wps" "$M32"
    bad "m.wps: a wpack stream or bundle, not a GGUF file (ggufpack or unbundle writes the GGUF)" \
        --model "$BATS_TEST_TMPDIR/m.wps" --text "$CAL"
    bad "missing.gguf: No such file" --model "$BATS_TEST_TMPDIR/missing.gguf" --text "$CAL"
    zstd -q -c "$M32" > "$BATS_TEST_TMPDIR/m.gguf.zst"
    bad "m.gguf.zst: not a GGUF file (a zstd frame: zstd -d it)" --model "$BATS_TEST_TMPDIR/m.gguf.zst" --text "$CAL"
    # it said "-: No such file or directory"
    bad "-: llama.cpp loads a model from a file by name, not from standard input: give the file's name" \
        --model - --text "$CAL" < "$M32"
    # Hessians as the model: named, not "ggufpack or unbundle writes the GGUF", which ggufpack
    # cannot (a fresh user's find)
    "$H" -m "$M32" -f "$CAL" -c 64 --chunks 1 -t 1 -o "$BATS_TEST_TMPDIR/h.hess" 2> /dev/null
    bad "h.hess: Hessians (hessian's output), not a model: they go to gptq --hessian" \
        --model "$BATS_TEST_TMPDIR/h.hess" --text "$CAL"
    # llama-imatrix's output as the model: named (it was "llama.cpp cannot load this model"
    # alone: a new user's trial)
    local R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-imatrix" ] || skip "llama-imatrix not built (make reftools)"
    LD_LIBRARY_PATH="$R" "$R/llama-imatrix" -m "$M32" -f "$CAL" -c 128 --chunks 2 -t 1 -o "$BATS_TEST_TMPDIR/imat.gguf" > /dev/null 2>&1
    bad "imat.gguf: an importance matrix (llama-imatrix's output), not a model: it goes to gptq --imatrix" \
        --model "$BATS_TEST_TMPDIR/imat.gguf" --text "$CAL"
    # and as the text (it was "a GGUF file (the model goes to --model)": a new user's trial)
    bad "imat.gguf: not a calibration text: an importance matrix (llama-imatrix's output; it goes to gptq --imatrix)" \
        --model "$M32" --text "$BATS_TEST_TMPDIR/imat.gguf"
    # and its legacy imatrix.dat (it was "not a GGUF file (bad magic)": a note's left alone)
    LD_LIBRARY_PATH="$R" "$R/llama-imatrix" -m "$M32" -f "$CAL" -c 128 --chunks 2 -t 1 --output-format dat \
        -o "$BATS_TEST_TMPDIR/imat.dat" > /dev/null 2>&1
    ! cmp -s -n 4 <(printf GGUF) "$BATS_TEST_TMPDIR/imat.dat" || false
    bad "imat.dat: an importance matrix (llama-imatrix's output), not a model: it goes to gptq --imatrix" \
        --model "$BATS_TEST_TMPDIR/imat.dat" --text "$CAL"
    # its first 8 bytes alone, an entry cut short, are no imatrix
    head -c 8 "$BATS_TEST_TMPDIR/imat.dat" > "$BATS_TEST_TMPDIR/cut.dat"
    bad "cut.dat: not a GGUF file (bad magic)" --model "$BATS_TEST_TMPDIR/cut.dat" --text "$CAL"
}

@test "bad input: a duplicate vocabulary token (ggml assertion in llama.cpp) gives one line, exit 1, no output" {
    # exit 134 with ggml's assertion and a gdb backtrace line (a trial's find)
    local F16="$MODELS/stories260K-f16.gguf" L="$BATS_TEST_TMPDIR" at
    [ -f "$F16" ] || skip "no stories260K-f16.gguf in $MODELS"
    # token "▁time" cut to "▁t" by a NUL (its length stays 7): "▁t" twice
    at=$(offset_of "$F16" "▁time")
    [ "$(od -An -t u8 -j $((at - 8)) -N 8 "$F16" | tr -d ' ')" = 7 ]
    cp "$F16" "$L/dup.gguf"
    chmod u+w "$L/dup.gguf"
    patch_bytes "$L/dup.gguf" $((at + 4)) '\x00'
    run --separate-stderr "$H" --threads 1 --model "$L/dup.gguf" --text "$CAL" --ctx 128 --chunks 1 -o "$L/dup.hess"
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [[ "$stderr" == "hessian: $L/dup.gguf: llama.cpp cannot load this model (llama-vocab.cpp:"+([0-9])": GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed)" ]]
    [ -z "$(ls "$L" | grep hess)" ]
}

@test "bad input: a vocabulary without the byte token <0x0A> (libllama throws) gives one line, exit 1, a redirected output left empty" {
    # exit 134, and ggml's gdb backtrace went to stdout: into the redirected Hessian file (a breaker's find)
    local F16="$MODELS/stories260K-f16.gguf" L="$BATS_TEST_TMPDIR" at
    [ -f "$F16" ] || skip "no stories260K-f16.gguf in $MODELS"
    at=$(offset_of "$F16" "<0x0A>")
    cp "$F16" "$L/nobyte.gguf"
    chmod u+w "$L/nobyte.gguf"
    patch_bytes "$L/nobyte.gguf" $((at + 5)) '\xff'
    run --separate-stderr bash -c '"$1" --threads 1 --model "$2" --text "$3" --ctx 128 --chunks 1 > "$4"' _ \
        "$H" "$L/nobyte.gguf" "$CAL" "$L/out.hess"
    [ "$status" -eq 1 ]
    [ "$stderr" = "hessian: $CAL: llama.cpp cannot tokenize this text with the vocabulary of $L/nobyte.gguf (libllama threw std::out_of_range: _Map_base::at)" ]
    [ ! -s "$L/out.hess" ]
}

@test "llama-imatrix's short names -m -f -c -t -b give the same Hessians as the long ones (they were unknown options)" {
    local T=$BATS_TEST_TMPDIR
    "$H" -m "$M32" -f "$CAL" -c 128 --chunks 2 -t 1 -b 128 -o "$T/short.hess" 2> /dev/null
    "$H" --model "$M32" --text "$CAL" --ctx 128 --chunks 2 --threads 1 --batch 128 -o "$T/long.hess" 2> /dev/null
    cmp "$T/short.hess" "$T/long.hess"
    # and its long ones --file, --ctx-size, --batch-size (unknown options: a new user's trial)
    "$H" -m "$M32" --file "$CAL" --ctx-size 128 --chunks 2 -t 1 --batch-size 128 -o "$T/llama.hess" 2> /dev/null
    cmp "$T/llama.hess" "$T/long.hess"
    # and llama-imatrix's --output-file, and -ngl N (unknown options: a new user's trial)
    "$H" -m "$M32" -f "$CAL" -c 128 --chunks 2 -t 1 -b 128 -ngl 99 --output-file "$T/of.hess" 2> /dev/null
    cmp "$T/of.hess" "$T/long.hess"
    "$H" -m "$M32" -f "$CAL" -c 128 --chunks 2 -t 1 -b 128 -ngl all --output "$T/o2.hess" 2> /dev/null
    cmp "$T/o2.hess" "$T/long.hess"
    # and each is the option it stands for: -c 2 is --ctx's range
    run --separate-stderr "$H" -m "$M32" -f "$CAL" -c 2
    [ "$status" -eq 1 ]
    [ "$stderr" = "hessian: --ctx: expected an integer from 16 to 1048576, got '2'" ]
    run --separate-stderr "$H" -m "$M32" -f "$CAL" -b 0
    [ "$stderr" = "hessian: --batch: expected an integer from 1 to 1048576, got '0'" ]
    run --separate-stderr "$H" -m "$M32" -f "$CAL" -t 0
    [ "$stderr" = "hessian: --threads: expected an integer from 1 to 512, got '0'" ]
    run --separate-stderr "$H" -f "$CAL"
    [ "$stderr" = "hessian: --model: is required (try --help)" ]
    run --separate-stderr "$H" -m "$M32"
    [ "$stderr" = "hessian: --text: is required (try --help)" ]
}

@test "bad usage: options, numbers, --max-memory below one Hessian" {
    bad "--model: is required" --text "$CAL"
    bad "--text: is required" --model "$M32"
    bad "--bogus: unknown option" --bogus
    # llama-imatrix's options of its file alone are named (they were "unknown option": a new
    # user's trial); its --process-output is what hessian does, taken
    bad "--output-format: llama-imatrix's option, not hessian's: hessian writes GPTQ's Hessians of the whole text, for gptq --hessian, and nothing else (try --help)" \
        --model "$M32" --text "$CAL" --output-format dat
    bad "-ofreq: llama-imatrix's option, not hessian's" --model "$M32" --text "$CAL" -ofreq=10
    bad "--chunk: llama-imatrix's option, not hessian's" --model "$M32" --text "$CAL" --chunk 2
    bad "--from-chunk: llama-imatrix's option, not hessian's" --model "$M32" --text "$CAL" --from-chunk=2
    "$H" -m "$M32" -f "$CAL" -c 64 --chunks 1 -t 1 -o "$BATS_TEST_TMPDIR/p0.hess" 2> /dev/null
    "$H" -m "$M32" -f "$CAL" -c 64 --chunks 1 -t 1 --process-output --no-ppl -o "$BATS_TEST_TMPDIR/p1.hess" 2> /dev/null
    cmp "$BATS_TEST_TMPDIR/p0.hess" "$BATS_TEST_TMPDIR/p1.hess"
    rm "$BATS_TEST_TMPDIR/p0.hess" "$BATS_TEST_TMPDIR/p1.hess"
    # a file without its option said "calib.txt: unknown option" (a new user's trial)
    bad "calib.txt: not an option: hessian takes no file without its option (try --help)" --model "$M32" calib.txt
    # a file there is told the option it goes with, its name as a shell reads it back (it said
    # "takes no file without its option": a note's left alone)
    printf 'Once upon a time\n' > "$BATS_TEST_TMPDIR/my calib.txt"
    bad "$BATS_TEST_TMPDIR/my calib.txt: not an option: hessian takes a text as -f '$BATS_TEST_TMPDIR/my calib.txt' (try --help)" --model "$M32" "$BATS_TEST_TMPDIR/my calib.txt"
    bad "$M32: not an option: hessian takes the model as -m $M32 (try --help)" "$M32" --text "$CAL"
    bad "an empty argument: hessian takes no file without its option (try --help)" --model "$M32" ""
    # the output without -o, there or not yet, is told -o (it said "takes no file without its
    # option": a note's left alone); nothing is written
    bad "h.hess: not an option: hessian writes its Hessians to -o h.hess (try --help)" --model "$M32" --text "$CAL" h.hess
    bad "H.HESS: not an option: hessian writes its Hessians to -o H.HESS (try --help)" --model "$M32" --text "$CAL" H.HESS
    printf 'old\n' > "$BATS_TEST_TMPDIR/old h.hess"
    bad "$BATS_TEST_TMPDIR/old h.hess: not an option: hessian writes its Hessians to -o '$BATS_TEST_TMPDIR/old h.hess' (try --help)" -m "$M32" -f "$CAL" "$BATS_TEST_TMPDIR/old h.hess"
    [ "$(cat "$BATS_TEST_TMPDIR/old h.hess")" = old ]
    [ ! -e h.hess ]
    # "--" ends the options (it said "--: unknown option"); the word after it is a file
    run --separate-stderr "$H" --model "$M32" -o "$BATS_TEST_TMPDIR/out.hess" --
    [ "$status" -eq 1 ]
    [ "$stderr" = "hessian: --text: is required (try --help)" ]
    bad "calib.txt: not an option: hessian takes no file without its option (try --help)" --model "$M32" -- calib.txt
    # it said "--share-inputs=1: unknown option"
    bad "--share-inputs: takes no value" --model "$M32" --text "$CAL" --share-inputs=1
    # the model as its text ran, exit 0, on the model's bytes tokenized (a new user's trial)
    bad "$M32: not a calibration text: a GGUF file (the model goes to --model)" --model "$M32" --text "$M32"
    printf 'once upon\0a time' > "$BATS_TEST_TMPDIR/nul.txt"
    bad "$BATS_TEST_TMPDIR/nul.txt: not a calibration text: a binary file (a NUL byte at byte 9)" --model "$M32" --text "$BATS_TEST_TMPDIR/nul.txt"
    # a text that starts "GGUF" is a text (it was refused as a GGUF: a breaker's find), here
    # too short for a chunk; llama-imatrix's imatrix.dat is named (it was "a binary file")
    printf 'GGUF notes: imatrix.chunk_count is a key.\nOnce upon a time.\n' > "$BATS_TEST_TMPDIR/gguf.txt"
    bad "$BATS_TEST_TMPDIR/gguf.txt: tokenizes to only " --model "$M32" --text "$BATS_TEST_TMPDIR/gguf.txt"
    printf '\001\000\000\000\002\000\000\000ab\001\000\000\000\001\000\000\000\000\000\200\077' > "$BATS_TEST_TMPDIR/ab.dat"
    bad "$BATS_TEST_TMPDIR/ab.dat: not a calibration text: an importance matrix (llama-imatrix's imatrix.dat; it goes to gptq --imatrix)" --model "$M32" --text "$BATS_TEST_TMPDIR/ab.dat"
    # a zstd'd or gzipped text was "a binary file", no way on (a helper's trial)
    zstd -q -c "$CAL" > "$BATS_TEST_TMPDIR/cal.txt.zst"
    bad "$BATS_TEST_TMPDIR/cal.txt.zst: not a calibration text: a zstd frame (decompress it first: zstd -d -o $BATS_TEST_TMPDIR/cal.txt < $BATS_TEST_TMPDIR/cal.txt.zst; a text is read as it is)" --model "$M32" --text "$BATS_TEST_TMPDIR/cal.txt.zst"
    gzip -c "$CAL" > "$BATS_TEST_TMPDIR/cal.txt.gz"
    bad "$BATS_TEST_TMPDIR/cal.txt.gz: not a calibration text: a gzip file (decompress it first: zstd -d -o $BATS_TEST_TMPDIR/cal.txt < $BATS_TEST_TMPDIR/cal.txt.gz, as zstd reads gzip; a text is read as it is)" --model "$M32" --text "$BATS_TEST_TMPDIR/cal.txt.gz"
    # from standard input, no name to give (a fresh user's find: "zstd -dc it > TEXT.txt")
    run --separate-stderr "$H" --threads 1 --model "$M32" --text - -o "$BATS_TEST_TMPDIR/out.hess" < "$BATS_TEST_TMPDIR/cal.txt.zst"
    [ "$status" -eq 1 ]
    [ "$stderr" = "hessian: stdin: not a calibration text: a zstd frame (pipe it through zstd -dc first: a text is read as it is)" ]
    # a name without the suffix: .txt added
    cp "$BATS_TEST_TMPDIR/cal.txt.zst" "$BATS_TEST_TMPDIR/calz"
    bad "$BATS_TEST_TMPDIR/calz: not a calibration text: a zstd frame (decompress it first: zstd -d -o $BATS_TEST_TMPDIR/calz.txt < $BATS_TEST_TMPDIR/calz; a text is read as it is)" --model "$M32" --text "$BATS_TEST_TMPDIR/calz"
    # the command given, pasted, leaves a text of that name as it is (zstd -dc F > OUT
    # overwrote it: a helper's nit) and reads a link (zstd -d F and gzip -dk F ignore one, and
    # a Hugging Face snapshot is links: a breaker's find); names quoted as a shell reads them back
    local d="$BATS_TEST_TMPDIR/paste" n cmd
    mkdir -p "$d/real"
    gzip -c "$CAL" > "$d/real/c.txt.gz"
    ln -s real/c.txt.gz "$d/c.txt.gz"
    zstd -q -c "$CAL" > "$d/it's.txt.zst"
    zstd -q -c "$CAL" > "$d/"$'nl\nx.txt.zst'
    for n in c.txt.gz "it's.txt.zst" $'nl\nx.txt.zst'; do
        run --separate-stderr bash -c 'cd "$1" && "$2" --model "$3" --text "$4" -o x.hess' sh "$d" "$H" "$M32" "$n"
        [ "$status" -eq 1 ]
        cmd=$(printf '%s' "$stderr" | sed -E 's/.*decompress it first: (.*); a text is read as it is\)$/\1/; s/, as zstd reads gzip$//')
        case $n in
        c.txt.gz) [ "$cmd" = "zstd -d -o c.txt < c.txt.gz" ] ;;
        it*) [ "$cmd" = "zstd -d -o 'it'\\''s.txt' < 'it'\\''s.txt.zst'" ] ;;
        *) [ "$cmd" = "zstd -d -o \$'nl\\nx.txt' < \$'nl\\nx.txt.zst'" ]
           [ "${stderr%%:*}" = 'hessian' ]
           [[ $stderr == 'hessian: nl\x0ax.txt.zst: not a calibration text: '* ]] ;;
        esac
        (cd "$d" && eval "$cmd" 2> /dev/null)
        cmp "$d/${n%.*}" "$CAL"
        printf 'keep\n' > "$d/${n%.*}"
        ! (cd "$d" && eval "$cmd" < /dev/null 2> /dev/null) || false
        [ "$(cat "$d/${n%.*}")" = keep ]
    done
    cp "$BATS_TEST_TMPDIR/cal.txt.gz" "$BATS_TEST_TMPDIR/gzn"
    bad "$BATS_TEST_TMPDIR/gzn: not a calibration text: a gzip file (decompress it first: zstd -d -o $BATS_TEST_TMPDIR/gzn.txt < $BATS_TEST_TMPDIR/gzn, as zstd reads gzip; a text is read as it is)" --model "$M32" --text "$BATS_TEST_TMPDIR/gzn"
    # it said ": No such file or directory"
    bad "--text: needs a value" --model "$M32" --text=
    bad "--ctx: expected an integer" --model "$M32" --text "$CAL" --ctx 2
    bad "--max-memory: expected a positive byte count" --model "$M32" --text "$CAL" --max-memory lots
    # " -1" was 16 EiB (strtoull skips the blank and negates)
    bad "--max-memory: expected a positive byte count (suffix K, M, G or T), got ' -1'" \
        --model "$M32" --text "$CAL" --max-memory " -1"
    bad "--max-memory: expected a positive byte count" --model "$M32" --text "$CAL" --max-memory +1G
    bad "--max-memory: 100000 bytes cannot hold the Hessian of blk.0.ffn_down.weight" \
        --model "$M32" --text "$CAL" --chunks 1 --max-memory 100000
}

@test "a failed run leaves a redirected stdout empty" {
    echo old > "$BATS_TEST_TMPDIR/o.hess"
    "$H" --threads 1 --model "$M32" --text "$BATS_TEST_TMPDIR/none.txt" > "$BATS_TEST_TMPDIR/o.hess" 2>/dev/null || true
    [ ! -s "$BATS_TEST_TMPDIR/o.hess" ]
}

@test "bad usage: --max-memory 0 or past 2^64 bytes, --ctx below 16, each one exact line (a mutation test's find)" {
    bad "--max-memory: expected" --model "$M32" --text "$CAL" --max-memory 0
    [ "$stderr" = "hessian: --max-memory: expected a positive byte count (suffix K, M, G or T), got '0'" ]
    bad "--max-memory: expected" --model "$M32" --text "$CAL" --max-memory 99999999999T
    [ "$stderr" = "hessian: --max-memory: expected a positive byte count (suffix K, M, G or T), got '99999999999T'" ]
    bad "--ctx: expected" --model "$M32" --text "$CAL" --ctx 15
    [ "$stderr" = "hessian: --ctx: expected an integer from 16 to 1048576, got '15'" ]
}

@test "--max-memory's suffixes are powers of 1024: 1T plans 1048576.0 MiB, 3G 3072.0 MiB, and 16777216T (2^64 bytes) is refused (a mutation test's find)" {
    local L="$BATS_TEST_TMPDIR" v
    for v in 1T:1048576.0 3G:3072.0 5m:5.0; do
        run --separate-stderr "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 1 --max-memory "${v%:*}" -o "$L/s.hess"
        [ "$status" -eq 0 ]
        [ "${stderr_lines[0]}" = "hessian: 130868 tokens, 1 chunk of 128, 36 weights, 36 records, 2.1 MiB in all (1.6 MiB of Hessians to hold, over the passes), 1 pass of at most ${v#*:} MiB" ]
    done
    # 16777215T is the most that fits in 64 bits
    bad "--max-memory: expected" --model "$M32" --text "$CAL" --max-memory 16777216T
    [ "$stderr" = "hessian: --max-memory: expected a positive byte count (suffix K, M, G or T), got '16777216T'" ]
}

@test "a text of exactly --ctx tokens is one chunk; a token less is refused (a mutation test's find)" {
    local L="$BATS_TEST_TMPDIR"
    head -c 3000 "$CAL" > "$L/s.txt"   # 1985 tokens
    run --separate-stderr "$H" --threads 1 --model "$M32" --text "$L/s.txt" --ctx 1985 -o "$L/a.hess"
    [ "$status" -eq 0 ]
    [ "$("$BIN/tsinfo" -a "$L/a.hess" | grep -c '^ *n_tokens=1985$')" -eq 36 ]
    bad "s.txt: tokenizes to only 1985 tokens; --ctx 1986 needs at least 1986 (one chunk)" \
        --model "$M32" --text "$L/s.txt" --ctx 1986
}

@test "--batch below --ctx (a chunk in several batches, positions and BOS as one batch has them) gives one batch's Hessians (a mutation test's find)" {
    local L="$BATS_TEST_TMPDIR" w
    "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 2 --batch 128 -o "$L/one.hess" 2>/dev/null
    "$H" --threads 1 --model "$M32" --text "$CAL" --ctx 128 --chunks 2 --batch 32 -o "$L/four.hess" 2>/dev/null
    for w in blk.0.attn_q.weight blk.2.attn_output.weight blk.4.ffn_down.weight output.weight; do
        close "$("$CMP" --diag "$L/four.hess" "$w" 8)" "$("$CMP" --diag "$L/one.hess" "$w" 8)" 1e-6
    done
}
