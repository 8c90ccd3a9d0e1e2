#!/usr/bin/env bats
# CI regression of bit rates: every checked operating point is rebuilt
# (pipelines/bitrates, which also checks each bundle restores its GGUF byte
# for byte) and compared with tests/bitrates.tsv.
load helpers

@test "bit rates: no checked point rises by more than 0.2 % over tests/bitrates.tsv" {
    # stdout only: the table; stderr carries the tools' progress lines
    "$ROOT/pipelines/bitrates" "$BATS_TEST_TMPDIR/br" > "$BATS_TEST_TMPDIR/now.tsv" 2> "$BATS_TEST_TMPDIR/err" ||
        { cat "$BATS_TEST_TMPDIR/now.tsv" "$BATS_TEST_TMPDIR/err"; false; }
    fails=$(awk -F'\t' '
        FNR == NR { if ($0 !~ /^#/) want[$1 "\t" $2] = $3; next }
        { key = $1 "\t" $2; seen[key] = 1
          if (!(key in want)) { printf "%s: %s (not in tests/bitrates.tsv)\n", key, $3; bad++ }
          else if ($3 > want[key] * 1.002) { printf "%s: %s b/w, expected at most %s\n", key, $3, want[key]; bad++ }
          else printf "# %s: %s b/w (expected %s)\n", key, $3, want[key] > "/dev/stderr" }
        END { for (k in want) if (!(k in seen)) { printf "%s: not built\n", k; bad++ }; exit bad > 0 }
    ' "$ROOT/tests/bitrates.tsv" "$BATS_TEST_TMPDIR/now.tsv") || { echo "$fails"; false; }
    [ "$(wc -l < "$BATS_TEST_TMPDIR/now.tsv")" -eq 10 ]
}
