#!/usr/bin/env bats
# Model builds as real make targets, and the rate-quality frontier
# (pipelines/frontier) on a tiny grid of stories260K, with real values.
load helpers

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
    make -q "${args[@]}"
    run make "${args[@]}"
    [[ "$output" == *"Nothing to be done"* ]] || { echo "$output"; false; }
    # a point that is not built yet is out of date
    run make -q -C "$ROOT" model MODEL="$F32" POINT=Q5_0_g0_lam0_c1 TEXT= OUT="$out"
    [ "$status" -ne 0 ]
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
