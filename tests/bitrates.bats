#!/usr/bin/env bats
# CI regression of bit rates: every checked operating point is rebuilt
# (pipelines/bitrates, which also checks each bundle restores its GGUF byte
# for byte) and compared with tests/bitrates.tsv by pipelines/bitcheck.
bats_require_minimum_version 1.5.0
load helpers

# passed ROWS: bitcheck passed; stderr is ROWS (the "# KEY: ..." lines) then its verdict line
passed() {
    [ "$status" -eq 0 ] || { echo "status $status: $output"; return 1; }
    [[ "${stderr##*$'\n'}" == "# bitcheck: "*" pass"*", none more than "*" above its baseline ("@(the largest change: *|all unchanged|unchanged)")" ]] ||
        { echo "no verdict last: $stderr"; return 1; }
    # (the line of the rows that fell, just before the verdict, is not a row's: its own test)
    local rows=${stderr%$'\n'*}
    [[ ${rows##*$'\n'} != "# bitcheck: "*" fell more than "* ]] || rows=${rows%$'\n'*}
    [ "$rows" = "$1" ] || { echo "stderr: $stderr"; return 1; }
}

# fails_with LINES BASE NOW: bitcheck BASE NOW exits 1, its stdout LINES and its verdict of one problem
fails_with() {
    run --separate-stderr "$ROOT/pipelines/bitcheck" "$2" "$3"
    [ "$status" -eq 1 ] || { echo "status $status: $output"; return 1; }
    [ "$output" = "$1" ] || { echo "expected: $1"; echo "got:      $output"; return 1; }
    [ "${stderr##*$'\n'}" = "# bitcheck: FAILED: 1 problem above; 0 rows pass" ] || { echo "stderr: $stderr"; return 1; }
}

@test "bit rates: no checked point rises by more than 0.2 % over tests/bitrates.tsv" {
    # an OUTDIR kept from another run holds another synthetic model (mkllama changed, or the
    # data): it is made again, not measured (it was taken as it was: a breaker's find)
    local br=$BATS_TEST_TMPDIR/br
    mkdir "$br"
    "$ROOT/build/tools/mkllama" "$MODELS/stories260K-f32.gguf" "$br/synth-llama-f16.gguf" BF16
    # stdout only: the table; stderr carries the tools' progress lines
    "$ROOT/pipelines/bitrates" "$br" > "$BATS_TEST_TMPDIR/now.tsv" 2> "$BATS_TEST_TMPDIR/err" ||
        { cat "$BATS_TEST_TMPDIR/now.tsv" "$BATS_TEST_TMPDIR/err"; false; }
    "$ROOT/pipelines/bitcheck" "$ROOT/tests/bitrates.tsv" "$BATS_TEST_TMPDIR/now.tsv"
    [ "$(wc -l < "$BATS_TEST_TMPDIR/now.tsv")" -eq 20 ]
    "$ROOT/build/tools/mkllama" "$MODELS/stories260K-f32.gguf" "$BATS_TEST_TMPDIR/f16.gguf" F16
    cmp "$br/synth-llama-f16.gguf" "$BATS_TEST_TMPDIR/f16.gguf"
    [ ! -e "$br/synth-llama-f16.gguf.new" ]
}

@test "bitcheck: a rise, a missing or extra row, and a b/w that is not a number fail; a fall passes" {
    # an empty b/w (a report whose totals line changed) passed bats' string compare
    cd "$BATS_TEST_TMPDIR"
    printf '# model\tpoint\tb/w\nm\tQ8_0\t8.5878\nm\tQ4_0\t6.4734\n' > base.tsv
    printf 'm\tQ8_0\t8.5878\nm\tQ4_0\t6.0000\n' > fall.tsv
    run "$ROOT/pipelines/bitcheck" base.tsv fall.tsv
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = "$(printf '# m\tQ4_0: 6.0000 b/w (baseline 6.4734)')" ]
    printf 'm\tQ8_0\t8.6049\nm\tQ4_0\t6.4734\n' > within.tsv    # 8.6049 <= 8.5878 * 1.002 = 8.60498
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv within.tsv
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    # the verdict last on stderr, with the row nearest its limit (49 lines said no more: a new user's trial)
    [ "${stderr##*$'\n'}" = "# bitcheck: 2 rows pass, none more than 0.2 % above its baseline (the largest change: m Q8_0, +0.199 %)" ]
    # a baseline of 0 (only 0 passes it): no change, named (the key was empty, "-100.000 %": a breaker's find)
    printf 'z\t0\nm\tQ8_0\t8.5\n' > zb.tsv
    printf 'z\t-0\nm\tQ8_0\t8.4\n' > zn.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" zb.tsv zn.tsv
    # (and the largest change is the fall, larger than every rise: it said "z, +0.000 %" beside
    # it, a note's left alone)
    [ "${stderr##*$'\n'}" = "# bitcheck: 2 rows pass, none more than 0.2 % above its baseline (the largest change: m Q8_0, -1.176 %)" ]
    # a fall beyond the tolerance is said before the verdict (a 19 % fall passed unsaid, its
    # stale baseline hiding later rises: a new user's trial); one within it is not
    [ "${stderr_lines[-2]}" = "# bitcheck: 1 row fell more than 0.2 % below its baseline (the largest fall: m Q8_0, -1.176 %): lower it in the commit that earns it" ]
    # (a fall too small for three decimals, beside no change, is shown to the decimals that show
    # it: it was "-0.000 %", then "all unchanged": a breaker's finds; "unchanged" is for no
    # change at all)
    printf 'z\t0\nm\tQ8_0\t2\n' > zb2.tsv
    printf 'z\t0\nm\tQ8_0\t1.99999998\n' > zn2.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" zb2.tsv zn2.tsv
    [ "${stderr##*$'\n'}" = "# bitcheck: 2 rows pass, none more than 0.2 % above its baseline (the largest change: m Q8_0, -0.000001 %)" ]
    printf 'm\tQ4\t7.24001\nm\tQ8_0\t2\n' > zn3.tsv
    printf 'm\tQ4\t7.2400\nm\tQ8_0\t2\n' > zb3.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" zb3.tsv zn3.tsv
    [ "${stderr##*$'\n'}" = "# bitcheck: 2 rows pass, none more than 0.2 % above its baseline (the largest change: m Q4, +0.0001 %)" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" zb3.tsv zb3.tsv
    [ "${stderr##*$'\n'}" = "# bitcheck: 2 rows pass, none more than 0.2 % above its baseline (all unchanged)" ]
    printf 'a\t9.0\nb\t7.0\nc\t7.0\n' > fb.tsv
    printf 'a\t7.2739\nb\t6.9\nc\t6.999\n' > fn.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" fb.tsv fn.tsv
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$stderr" | tail -2 | head -1)" = "# bitcheck: 2 rows fell more than 0.2 % below their baseline (the largest fall: a, -19.179 %): lower them in the commit that earns it" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" within.tsv base.tsv
    [[ "$stderr" != *"fell more"* ]]
    printf 'm\tQ8_0\t8.6060\nm\tQ4_0\t6.4734\n' > rise.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv rise.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'm\tQ8_0: 8.6060 b/w, +0.212 %%, more than 0.2 %% above the baseline 8.5878 (at most 8.6049)')" ]
    # a failure summed up last on stderr too (a log ended with the passing rows: a new user's trial)
    [ "$stderr" = "$(printf '# m\tQ4_0: 6.4734 b/w (baseline 6.4734)\n# bitcheck: FAILED: 1 problem above; 1 row passes')" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv rise.tsv 0.01
    [ "$status" -eq 0 ]
    printf 'm\tQ8_0\t\nm\tQ4_0\t6.4734\n' > empty.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv empty.tsv
    [ "$status" -eq 1 ]
    [ "$output" = 'empty.tsv:1: b/w "" is not a number' ]
    printf 'm\tQ8_0\t8.5878\nm\tIQ4_XS\t4.1\n' > other.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv other.tsv
    [ "$status" -eq 1 ]
    [ "${lines[0]}" = "$(printf 'm\tIQ4_XS: 4.1 b/w (not in base.tsv)')" ]
    [ "${lines[1]}" = "$(printf 'm\tQ4_0: not in other.tsv')" ]
    # rows missing from NOW come in the baseline's order (they came in awk's hash order, which
    # made a long list hard to diff: a fresh user's find)
    printf 'a\t1\nz\t1\nb\t1\nc\t1\ny\t1\nd\t1\n' > six.tsv
    printf 'c\t1\n' > one.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" six.tsv one.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'a: not in one.tsv\nz: not in one.tsv\nb: not in one.tsv\ny: not in one.tsv\nd: not in one.tsv')" ]
    run "$ROOT/pipelines/bitcheck" base.tsv missing.tsv
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: missing.tsv: not a readable file" ]
    run "$ROOT/pipelines/bitcheck" "" base.tsv   # (": not a readable file")
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: an empty file name" ]
    # TOLERANCE first (it was "0.01: not a readable file": a fresh user's check), with the
    # order, quoted as a shell reads it back; a file of that name is read as one
    run "$ROOT/pipelines/bitcheck" 0.5% base.tsv "it's now.tsv"
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: TOLERANCE comes last: $ROOT/pipelines/bitcheck base.tsv 'it'\\''s now.tsv' 0.5%" ]
    run "$ROOT/pipelines/bitcheck" base.tsv 1% now.tsv   # (second, or with one file: a breaker's find)
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: TOLERANCE comes last: $ROOT/pipelines/bitcheck base.tsv now.tsv 1%" ]
    run "$ROOT/pipelines/bitcheck" 0.01 base.tsv
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: 0.01: a TOLERANCE where a file goes: both files come first, BASELINE.tsv NOW.tsv [TOLERANCE]" ]
    cp base.tsv 0.01
    run "$ROOT/pipelines/bitcheck" 0.01 base.tsv 0.01
    [ "$status" -eq 0 ]
    # an option, which bitcheck takes none of (-t 0.01 got the usage line alone: a note's left
    # alone); a file of that name is read as one, a negative TOLERANCE refused as one
    for o in -t --tolerance=1% -v; do
        run "$ROOT/pipelines/bitcheck" "$o" 0.01 base.tsv now.tsv
        [ "$status" -eq 2 ]
        [ "$output" = "bitcheck: $o: not an option: bitcheck takes none (TOLERANCE is the third word: bitcheck BASELINE.tsv NOW.tsv [TOLERANCE])" ]
    done
    cp base.tsv ./-t
    run "$ROOT/pipelines/bitcheck" -t base.tsv
    [ "$status" -eq 0 ]
    rm ./-t
    # -- ends the options, anywhere, as in every program; --help after a file is told it comes
    # first (both were "not an option": a breaker's finds)
    cp base.tsv ./-b
    run "$ROOT/pipelines/bitcheck" -- -b base.tsv
    [ "$status" -eq 0 ]
    run "$ROOT/pipelines/bitcheck" base.tsv -- -b 0.5%
    [ "$status" -eq 0 ]
    rm ./-b
    run "$ROOT/pipelines/bitcheck" base.tsv now.tsv --help
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: --help: comes first, alone (bitcheck --help)" ]
    run "$ROOT/pipelines/bitcheck" -- --help base.tsv
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: --help: not a readable file" ]
    # and a tolerance with a backslash escape, which dash's echo made a line of its own ('\n50%'
    # passed a 44 % rise), or one that rounds to 1 (a breaker's finds)
    for t in 5 1 1e-3 100% 2.% 1e-1% % '\n50%' '.5\n' '5%\c' 'x\c' '-5' '99.9999999999999999%' '.99999999999999999999'; do
        run "$ROOT/pipelines/bitcheck" base.tsv fall.tsv "$t"
        [ "$status" -eq 2 ]
        [ "$output" = "bitcheck: tolerance '$t': expected a fraction below 1 such as 0.002 or .002, or a percentage below 100 such as 0.2%" ]
    done
    # an empty baseline blamed NOW for every row, two empty files passed, a key twice in the
    # baseline was overwritten by the last (a new user's trial)
    : > empty.tsv
    # (said once: the rows of the other file each "not in" it, 49 lines for one problem, a new
    # user's trial)
    run --separate-stderr "$ROOT/pipelines/bitcheck" empty.tsv fall.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "empty.tsv: no rows" ]
    # one problem, counted once (the rows of NOW not said were counted: "FAILED: 3 problems", a
    # breaker's find)
    [ "$stderr" = "# bitcheck: FAILED: 1 problem above; 0 rows pass" ]
    tr '\t' ' ' < fall.tsv > spaces.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" spaces.tsv fall.tsv
    [ "${#lines[@]}" -eq 3 ]
    [ "${lines[2]}" = "spaces.tsv: no rows" ]
    [ "$stderr" = "# bitcheck: FAILED: 3 problems above; 0 rows pass" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" fall.tsv empty.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "empty.tsv: no rows" ]
    # /dev/null as empty.tsv (it was "not a readable file": a fresh user's find)
    run --separate-stderr "$ROOT/pipelines/bitcheck" fall.tsv /dev/null
    [ "$status" -eq 1 ]
    [ "$output" = "/dev/null: no rows" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" empty.tsv empty.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'empty.tsv: no rows\nempty.tsv: no rows')" ]
    { cat base.tsv; printf 'm\tQ8_0\t99\n'; } > twice.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" twice.tsv fall.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'twice.tsv:4: m\tQ8_0 appears twice')" ]
    # a key twice in NOW: the problem once, and the second line neither compared nor
    # passed (its pass line was printed twice, a review)
    { cat fall.tsv; printf 'm\tQ8_0\t8.5\n'; } > twice.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv twice.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'twice.tsv:3: m\tQ8_0 appears twice')" ]
    [ "$stderr" = "$(printf '# m\tQ8_0: 8.5878 b/w (baseline 8.5878)\n# m\tQ4_0: 6.0000 b/w (baseline 6.4734)\n# bitcheck: FAILED: 1 problem above; 2 rows pass')" ]
}

@test "bitrates: --help, a bad option or two OUTDIRs; without OUTDIR its temporary directory is removed" {
    # (--help ran `mkdir --help`; every run without OUTDIR left a 7.4 MB /tmp/tmp.*)
    run "$ROOT/pipelines/bitrates" --help
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "pipelines/bitrates [OUTDIR] - the bit rates CI watches"* ]]
    run --separate-stderr "$ROOT/pipelines/bitrates" -x
    [ "$status" -eq 64 ]
    [ "$stderr" = "bitrates: -x: unknown option (usage: pipelines/bitrates [OUTDIR])" ]
    run --separate-stderr "$ROOT/pipelines/bitrates" a b
    [ "$status" -eq 64 ]
    [ ! -e a ]
    # a run that fails at once (no data) and leaves nothing in TMPDIR
    mkdir "$BATS_TEST_TMPDIR/tmp"
    run --separate-stderr env TMPDIR="$BATS_TEST_TMPDIR/tmp" WPACK_DATA="$BATS_TEST_TMPDIR/nodata" "$ROOT/pipelines/bitrates"
    [ "$status" -eq 1 ]
    [ -z "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ]
    # said with WPACK_DATA (mkllama's "No such file or directory" was the only word: a new user's
    # trial)
    [ "$stderr" = "bitrates: $BATS_TEST_TMPDIR/nodata/models/stories260K/stories260K-f32.gguf: no such file (the real data: WPACK_DATA=dir, default the source tree's ../shared/data)" ]
    # an OUTDIR that cannot be one: said naming OUTDIR (mkdir's "cannot create directory
    # 'x': File exists" was the only word: a breaker's find)
    echo x > "$BATS_TEST_TMPDIR/file"
    fails_saying "bitrates: $BATS_TEST_TMPDIR/file: not a directory (OUTDIR)" \
        "$ROOT/pipelines/bitrates" "$BATS_TEST_TMPDIR/file"
    fails_saying "bitrates: $BATS_TEST_TMPDIR/file/sub: cannot make the directory (OUTDIR)" \
        "$ROOT/pipelines/bitrates" "$BATS_TEST_TMPDIR/file/sub"
    run --separate-stderr "$ROOT/pipelines/bitrates" ""
    [ "$status" -eq 64 ]
    [ "$stderr" = "bitrates: an empty OUTDIR" ]
}

@test "pipelines: --help and -h print the comment at the script's top, from its usage line, exit 0" {
    # (lazyweights, unweight, bitcheck and frontier had none: "usage: ...", exit 2)
    local p last
    # NAME|the help's last line: the whole comment, and nothing after it (frontier's held an
    # internal note on its -E)
    while IFS='|' read -r p last; do
        run "$ROOT/pipelines/$p" --help
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "pipelines/$p "* ]]
        [ "${lines[-1]}" = "$last" ] || { echo "$p: ${lines[-1]}"; false; }
        run "$ROOT/pipelines/$p" -h
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "pipelines/$p "* ]]
        # a write error is an error (bitcheck, without set -e, exited 0)
        run bash -c "'$ROOT/pipelines/$p' --help > /dev/full"
        [ "$status" -ne 0 ]
    done <<EOF
bitcheck|FIFO (/dev/stdin, <(...)) or a device (/dev/null) as well as a regular file.
bitrates|Without OUTDIR the files go to a temporary directory, removed at the end.
frontier|  REF_BUILD           llama.cpp's tools (default ~/.cache/wpack/llama.cpp-build; \`make reftools\`)
lazyweights|before it writes or computes anything.
unweight|WPACK_THREADS=N in the environment is laneinterleave --dist's --threads.
EOF
    run "$ROOT/pipelines/lazyweights" --help
    [ "${lines[0]}" = "pipelines/lazyweights [--dist | --dist-only] MODEL.gguf POINT OUTDIR [CALIB.txt]" ]
    [ "${lines[23]}" = "pipelines/lazyweights --check POINT [MODEL.gguf [CALIB.txt]]" ]
    # a write error of either: one line, exit 1 (bash's "echo: write error", or awk's "close
    # failed", was the word: a breaker's find)
    local p a
    for p in lazyweights unweight bitrates; do
        for a in --help --version; do
            run bash -c '"$1" $2 > /dev/full' _ "$ROOT/pipelines/$p" $a
            [ "$status" -eq 1 ]
            [ "$output" = "$p: stdout: write error" ]
        done
    done
}

@test "bitcheck: a tolerance of 0 (no rise at all) is taken as 0.0 is" {
    # "0" was "expected a fraction below 1" while "0.0" passed (a new user's trial)
    cd "$BATS_TEST_TMPDIR"
    printf 'm\tQ8_0\t8.5878\n' > base.tsv
    printf 'm\tQ8_0\t8.5879\n' > rise.tsv
    for t in 0 0.0; do
        run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv base.tsv "$t"
        [ "$status" -eq 0 ]
        [ "$stderr" = "$(printf '# m\tQ8_0: 8.5878 b/w (baseline 8.5878)\n# bitcheck: 1 row passes, none more than 0 %% above its baseline (unchanged)')" ]
        run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv rise.tsv "$t"
        [ "$status" -eq 1 ]
        [ "$output" = "$(printf 'm\tQ8_0: 8.5879 b/w, +0.001 %%, more than 0 %% above the baseline 8.5878 (at most 8.5878)')" ]
    done
    for t in 00 0. -0; do
        run "$ROOT/pipelines/bitcheck" base.tsv base.tsv "$t"
        [ "$status" -eq 2 ]
    done
}

@test "bitcheck: a tolerance written .N or as a percentage is the same fraction" {
    # .001 and 1% were refused, while wprun --tol takes .001 (a fresh user's find)
    cd "$BATS_TEST_TMPDIR"
    printf 'm\tQ8_0\t8.0\n' > base.tsv
    printf 'm\tQ8_0\t8.1\n' > rise.tsv   # 1.25 % above
    for t in .02 0.02 2% 2.0% 1.3%; do
        run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv rise.tsv "$t"
        [ "$status" -eq 0 ]
    done
    for t in .01 0.01 1% 1.2% .5%; do
        run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv rise.tsv "$t"
        [ "$status" -eq 1 ]
    done
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv rise.tsv 1%
    [ "$output" = "$(printf 'm\tQ8_0: 8.1 b/w, +1.250 %%, more than 1 %% above the baseline 8.0 (at most 8.0800)')" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv rise.tsv .01
    [ "$output" = "$(printf 'm\tQ8_0: 8.1 b/w, +1.250 %%, more than 1 %% above the baseline 8.0 (at most 8.0800)')" ]
    # a rise of exactly the tolerance passes (10.05 on 10.0 at 0.5 % failed, "at most 10.0500":
    # 10.0 x 1.005 is a hair under 10.05 in binary; a fresh user's find)
    printf 'a\t10.0\n' > b.tsv
    printf 'a\t10.05\n' > n.tsv
    for t in .005 0.5%; do
        run --separate-stderr "$ROOT/pipelines/bitcheck" b.tsv n.tsv "$t"
        [ "$status" -eq 0 ]
    done
    run --separate-stderr "$ROOT/pipelines/bitcheck" b.tsv n.tsv .004
    [ "$status" -eq 1 ]
    # a fraction of 5 % or more is said to be one (0.2, meant as 0.2 %, passed a 19 % rise
    # unsaid: a fresh user's nit); below 5 %, and as a percentage, nothing is said
    printf 'a\t11.9\n' > n19.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" b.tsv n19.tsv 0.2
    [ "$status" -eq 0 ]
    [ "${stderr_lines[0]}" = "bitcheck: warning: TOLERANCE 0.2 is a fraction, 20 %: write 0.2% for 0.2 %" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" b.tsv n19.tsv .05
    [ "${stderr_lines[0]}" = "bitcheck: warning: TOLERANCE .05 is a fraction, 5 %: write .05% for .05 %" ]
    for t in 0.049 0.2% 20%; do
        run --separate-stderr "$ROOT/pipelines/bitcheck" b.tsv n.tsv "$t"
        [[ $stderr != *warning* ]]
    done
    # an empty tolerance, or one of two lines, is refused (the first took the default, the second
    # passed when a line of it was a number: a review)
    run "$ROOT/pipelines/bitcheck" b.tsv n.tsv ''
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: tolerance '': expected a fraction below 1 such as 0.002 or .002, or a percentage below 100 such as 0.2%" ]
    run "$ROOT/pipelines/bitcheck" b.tsv n.tsv "$(printf '0.1\nx')"
    [ "$status" -eq 2 ]
    [ "$output" = "bitcheck: tolerance '0.1 x': expected a fraction below 1 such as 0.002 or .002, or a percentage below 100 such as 0.2%" ]
}

@test "bitcheck: - (one of the two) is standard input, and a pipe such as /dev/stdin is read" {
    # both were refused: "bitcheck: -: not a readable file" (a new user's trial)
    cd "$BATS_TEST_TMPDIR"
    printf 'm\tQ8_0\t8.5878\n' > base.tsv
    printf 'm\tQ8_0\t8.7\n' > rise.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv - < base.tsv
    [ "$status" -eq 0 ]
    passed "$(printf '# m\tQ8_0: 8.5878 b/w (baseline 8.5878)')"
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv - < rise.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'm\tQ8_0: 8.7 b/w, +1.307 %%, more than 0.2 %% above the baseline 8.5878 (at most 8.6049)')" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" - rise.tsv < /dev/null
    [ "$status" -eq 1 ]
    [ "$output" = "stdin: no rows" ]
    run --separate-stderr sh -c 'cat base.tsv | "$1" base.tsv /dev/stdin' sh "$ROOT/pipelines/bitcheck"
    [ "$status" -eq 0 ]
    passed "$(printf '# m\tQ8_0: 8.5878 b/w (baseline 8.5878)')"
    run --separate-stderr sh -c 'cat rise.tsv | "$1" - base.tsv' sh "$ROOT/pipelines/bitcheck"
    [ "$status" -eq 0 ]
    passed "$(printf '# m\tQ8_0: 8.5878 b/w (baseline 8.7)')"
    run --separate-stderr "$ROOT/pipelines/bitcheck" - - < base.tsv
    [ "$status" -eq 2 ]
    [ "$stderr" = "bitcheck: BASELINE and NOW are both -: only one of them can be standard input" ]
    [ "$output" = "" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" base.tsv "$BATS_TEST_TMPDIR"
    [ "$status" -eq 2 ]
    [ "$stderr" = "bitcheck: $BATS_TEST_TMPDIR: not a readable file" ]
}

@test "bitcheck: CRLF lines, and a byte order mark before the first line, are read as their plain twins" {
    # a NOW line a<TAB>1.0<CR> gave 'a: b/w "1.0" is not a number', the \r unseen (a new user's
    # trial); a UTF-8 byte order mark before either file's first line was part of its key, unseen:
    # "a: 1.0 (not in bom.tsv)" and "a: not in lf.tsv" (a breaker's find)
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t1.0\n' > lf.tsv
    printf '# key\tb/w\r\na\t1.0\r\n\r\n' > crlf.tsv
    printf '\357\273\277a\t1.0\r\n' > bom.tsv
    local pair
    for pair in "lf crlf" "crlf lf" "bom lf" "lf bom"; do
        set -- $pair
        run --separate-stderr "$ROOT/pipelines/bitcheck" "$1.tsv" "$2.tsv"
        [ "$status" -eq 0 ]
        passed "$(printf '# a: 1.0 b/w (baseline 1.0)')"
    done
    printf 'a\t1.1\r\n' > rise.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" lf.tsv rise.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "a: 1.1 b/w, +10.000 %, more than 0.2 % above the baseline 1.0 (at most 1.0020)" ]
    # two CRs, unseen, said 'b/w "1.0" is not a number' (a breaker's find)
    printf 'a\t1.0\r\r\n' > crcr.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" lf.tsv crcr.tsv
    [ "$status" -eq 0 ]
}

@test "bitcheck: a b/w too large for a double to compare is one line (400 nines were inf, and any rise passed)" {
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t%s\n' "$(printf '9%.0s' $(seq 400))" > big.tsv
    printf 'a\t%s\n' "$(printf '9%.0s' $(seq 401))" > bigger.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" big.tsv bigger.tsv
    [ "$status" -eq 1 ]
    [ "${lines[0]}" = "big.tsv:1: b/w \"$(printf '9%.0s' $(seq 400))\" is too large for a b/w" ]
    printf 'a\t999999999999999\n' > ok.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" ok.tsv ok.tsv
    [ "$status" -eq 0 ]
}

@test "bitcheck: the limit of a rise is rounded down, a bad NOW line is named FILE:LINE, verify --tsv's own table is said once" {
    # "7.2545 b/w, more than 0.2 % above the baseline 7.2400 (at most 7.2545)": the limit, 7.25448,
    # rounded to nearest; a NOW line that is no b/w said "b: b/w ..." without its file; verify --tsv's
    # table given whole said 'b/w "ok" is not a number' once a matrix (a fresh user's finds)
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t7.2400\n' > base.tsv
    printf 'a\t7.2545\n' > over.tsv
    printf 'a\t7.2544\n' > under.tsv
    printf 'a\t7.25449\n' > five.tsv
    # a limit that is a round number is that number (10.2 x 1.002 is 10.220399... in binary)
    printf 'a\t10.2\n' > b2.tsv
    printf 'a\t10.2205\n' > n2.tsv
    printf 'a\t1.0\nb\t2.0\n' > good.tsv
    printf 'a\t1.0\nb\tok\n' > bad.tsv
    "$ROOT/pipelines/unweight" "$MODELS/stories260K-bf16.gguf" u 16 2> /dev/null
    "$BIN/verify" --tsv "$MODELS/stories260K-bf16.gguf" u/stories260K-bf16-p16.bundle > v.tsv
    [ "$(wc -l < v.tsv)" -gt 10 ]
    # its columns 1 and 5, as bitcheck(1) shows, are rows
    awk -F'\t' 'NR > 1 { print $1 "\t" $5 }' v.tsv > now.tsv
    # the table after a comment, its header not first, was a line per matrix again; a baseline of
    # many decimals printed the failing value as the limit (a re-tester's finds)
    { echo '# a comment'; cat v.tsv; } > cv.tsv
    printf 'a\t7.24001996\n' > b3.tsv
    local said="v.tsv: verify --tsv's table, not KEY<TAB>B/W lines: the b/w of its file is column 5 of its line *, as bitcheck(1) shows"
    local base now want out
    # BASE|NOW|STATUS|OUTPUT, one a line
    while IFS='|' read -r base now want out; do
        run --separate-stderr "$ROOT/pipelines/bitcheck" "$base" "$now"
        [ "$status" -eq "$want" ] || { echo "$base $now: status $status: $output"; false; }
        [ "$output" = "$out" ] || { echo "$base $now: $output"; false; }
    done <<EOF
base.tsv|over.tsv|1|a: 7.2545 b/w, +0.2003 %, more than 0.2 % above the baseline 7.2400 (at most 7.2544)
base.tsv|under.tsv|0|
base.tsv|five.tsv|1|a: 7.25449 b/w, +0.2001 %, more than 0.2 % above the baseline 7.2400 (at most 7.25448)
b2.tsv|n2.tsv|1|a: 10.2205 b/w, +0.201 %, more than 0.2 % above the baseline 10.2 (at most 10.2204)
good.tsv|bad.tsv|1|bad.tsv:2: b/w "ok" is not a number
good.tsv|v.tsv|1|$said
v.tsv|good.tsv|1|$said
good.tsv|cv.tsv|1|${said/v.tsv/cv.tsv}
b3.tsv|over.tsv|1|a: 7.2545 b/w, +0.200000001 %, more than 0.2 % above the baseline 7.24001996 (at most 7.2544)
now.tsv|now.tsv|0|
EOF
}

@test "bitcheck: a binary file is one line; a file's bad lines are said 10 at most, then their count" {
    # a wpack stream given as NOW said 2,997 lines, its raw bytes in them (a reviewer's find)
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t1.0\n' > good.tsv
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" > q.wts
    # a NUL (UTF-16 text) on line 2, after a good row
    printf 'a\t1.0\nb\0\t\0001\n' > u16.tsv
    # (a baseline refused after its rows said each of them "not in NOW" too: a re-tester's find)
    printf 'a\t1.0\nb\t2.0\n\001\n' > rows.tsv
    local said="a control character: not text (a binary file?), not KEY<TAB>B/W lines" base now out
    # BASE|NOW|OUTPUT, one a line, each exit 1
    while IFS='|' read -r base now out; do
        run --separate-stderr "$ROOT/pipelines/bitcheck" "$base" "$now"
        [ "$status" -eq 1 ] || { echo "$base $now: status $status"; false; }
        [ "$output" = "$out" ] || { echo "$base $now: $output"; false; }
    done <<EOF
good.tsv|q.wts|q.wts:1: $said
q.wts|good.tsv|q.wts:1: $said
good.tsv|u16.tsv|u16.tsv:2: $said
rows.tsv|good.tsv|rows.tsv:3: $said
EOF
    # 15 lines without a tab, then a good row: 10 said, 5 counted
    { seq 15; printf 'a\t1.0\n'; } > many.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" good.tsv many.tsv
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 11 ]
    [ "${lines[0]}" = "many.tsv:1: expected KEY<TAB>B/W" ]
    [ "${lines[9]}" = "many.tsv:10: expected KEY<TAB>B/W" ]
    [ "${lines[10]}" = "many.tsv: 5 more bad lines, not said" ]
    [ "$stderr" = "$(printf '# a: 1.0 b/w (baseline 1.0)\n# bitcheck: FAILED: 15 problems above; 1 row passes')" ]
    # one file given as both: 10 said a side (the count was by name: 10 in all)
    run --separate-stderr "$ROOT/pipelines/bitcheck" many.tsv many.tsv
    [ "$(printf '%s\n' "$output" | grep -c 'expected KEY')" -eq 20 ]
    [ "$(printf '%s\n' "$output" | grep -c '^many.tsv: 5 more bad lines, not said$')" -eq 2 ]
    # exactly 10: no count line
    { seq 10; printf 'a\t1.0\n'; } > ten.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" good.tsv ten.tsv
    [ "${#lines[@]}" -eq 10 ]
    [ "${lines[9]}" = "ten.tsv:10: expected KEY<TAB>B/W" ]
}

@test "bitcheck: a negative b/w is one line, and a row whose baseline is no b/w is not compared" {
    # a baseline -1 printed 'is not a number' and then compared NOW with -1 (a new user's trial)
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t1.0\n' > lf.tsv
    printf 'a\t-1\n' > neg.tsv
    printf 'a\tx\n' > nan.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" neg.tsv lf.tsv
    [ "$status" -eq 1 ]
    [ "$output" = 'neg.tsv:1: b/w "-1" is negative, not a valid b/w' ]
    [ "$stderr" = "# bitcheck: FAILED: 1 problem above; 0 rows pass" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" nan.tsv lf.tsv
    [ "$status" -eq 1 ]
    [ "$output" = 'nan.tsv:1: b/w "x" is not a number' ]
    [ "$stderr" = "# bitcheck: FAILED: 1 problem above; 0 rows pass" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" lf.tsv neg.tsv
    [ "$status" -eq 1 ]
    [ "$output" = 'neg.tsv:1: b/w "-1" is negative, not a valid b/w' ]
    # -0 is zero, not negative
    printf 'a\t-0\n' > zero.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" lf.tsv zero.tsv
    [ "$status" -eq 0 ]
    passed '# a: -0 b/w (baseline 1.0)'
    run --separate-stderr "$ROOT/pipelines/bitcheck" neg.tsv neg.tsv
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'neg.tsv:1: b/w "-1" is negative, not a valid b/w\nneg.tsv:1: b/w "-1" is negative, not a valid b/w')" ]
}

@test "bitcheck: a baseline of 0 or -0 allows no rise (\"+inf %\"), and 1e14 is said to be no decimal number" {
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t1\n' > one.tsv
    printf 'a\t0\n' > zero.tsv
    printf 'a\t-0\n' > mzero.tsv
    printf 'a\t1e14\n' > exp.tsv
    fails_with "a: 1 b/w, above the baseline 0, which allows no rise" zero.tsv one.tsv
    fails_with "a: 1 b/w, above the baseline -0, which allows no rise" mzero.tsv one.tsv
    fails_with 'exp.tsv:1: b/w "1e14" is not a decimal number (write it without an exponent)' one.tsv exp.tsv
}

@test "bitcheck: a file left out or a fourth argument is said before the usage line (it was the usage alone)" {
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t1\n' > one.tsv
    run --separate-stderr "$ROOT/pipelines/bitcheck" one.tsv
    [ "$status" -eq 2 ]
    [ "$stderr" = "bitcheck: missing NOW.tsv
usage: bitcheck BASELINE.tsv NOW.tsv [TOLERANCE]" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck"
    [ "${stderr_lines[0]}" = "bitcheck: missing BASELINE.tsv and NOW.tsv" ]
    run --separate-stderr "$ROOT/pipelines/bitcheck" one.tsv one.tsv 0 0
    [ "$status" -eq 2 ]
    [ "${stderr_lines[0]}" = "bitcheck: too many arguments (got '0' too)" ]
}

@test "bitcheck: a closed or full stdout is a write error (exit 1); a closed or full stderr changes no verdict" {
    # >&- blamed the default tolerance ("tolerance '0.002': expected a fraction"), exit 2;
    # 2>/dev/full failed a passing check, exit 2 and no word; --version >/dev/full exited 0 (a
    # breaker's finds)
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t1\n' > one.tsv
    printf 'a\t2\n' > two.tsv
    run bash -c '"$1" one.tsv one.tsv >&-' _ "$ROOT/pipelines/bitcheck"
    [ "$status" -eq 1 ]
    [ "$output" = "bitcheck: stdout: write error: Bad file descriptor" ]
    run bash -c '"$1" one.tsv two.tsv > /dev/full' _ "$ROOT/pipelines/bitcheck"
    [ "$status" -eq 1 ]
    [ "${lines[${#lines[@]}-1]}" = "bitcheck: stdout: write error" ]
    for a in --version --help; do
        run bash -c '"$1" $2 > /dev/full' _ "$ROOT/pipelines/bitcheck" $a
        [ "$status" -eq 1 ]
        [ "$output" = "bitcheck: stdout: write error" ]
    done
    for e in "2>&-" "2>/dev/full"; do
        run bash -c "\"\$1\" one.tsv one.tsv $e" _ "$ROOT/pipelines/bitcheck"
        [ "$status" -eq 0 ]
        run bash -c "\"\$1\" one.tsv two.tsv $e" _ "$ROOT/pipelines/bitcheck"
        [ "$status" -eq 1 ]
        [[ "$output" == "a: 2 b/w, +100.000 %, more than 0.2 % above the baseline 1"* ]]
    done
}

@test "bitcheck: file names with a backslash or an = are read and named as they are" {
    # awk -v turned x\y.tsv into xy.tsv-ish escapes, and took NOW n=2.tsv for an assignment
    cd "$BATS_TEST_TMPDIR"
    printf 'a\t1.0\n' > 'x\y.tsv'
    printf 'b\t1.0\n' > 'n=2.tsv'
    run --separate-stderr "$ROOT/pipelines/bitcheck" 'x\y.tsv' 'n=2.tsv'
    [ "$status" -eq 1 ]
    [ "$output" = "$(printf 'b: 1.0 b/w (not in x\\y.tsv)\na: not in n=2.tsv')" ]
    printf 'a\t1.0\n' > 'n=1.tsv'
    run --separate-stderr "$ROOT/pipelines/bitcheck" 'x\y.tsv' 'n=1.tsv'
    [ "$status" -eq 0 ]
    passed '# a: 1.0 b/w (baseline 1.0)'
}

@test "bitrates: a report without verify's totals line stops it (exit 1), never a row with an empty b/w" {
    # bpw's exit 1 was lost in printf's arguments: rows "stories260K-f32<TAB>Q8_0_g0_lam0_c1<TAB>"
    # were printed and the run went on
    bins="$BATS_TEST_TMPDIR/bins"
    mkdir -p "$bins"
    for p in ggufcat gptq ggufpack histogram huffbuild laneinterleave unbundle; do ln -s "$ROOT/bin/$p" "$bins/$p"; done
    printf '#!/bin/sh\nexit 0\n' > "$bins/verify"            # no report lines
    printf '#!/bin/sh\necho "hessian: fake" >&2; exit 1\n' > "$bins/hessian"   # (a later point fails fast)
    chmod +x "$bins/verify" "$bins/hessian"
    WPACK_BIN="$bins" run --separate-stderr "$ROOT/pipelines/bitrates" "$BATS_TEST_TMPDIR/br"
    [ "$status" -eq 1 ]
    [ "$output" = "" ]
    [[ "$stderr" == *"bitrates: $BATS_TEST_TMPDIR/br/stories260K-f32-Q8_0_g0_lam0_c1.report: no 'GGUF … b/w, bundle … b/w' line from verify"* ]]
    [[ "$stderr" != *"hessian: fake"* ]]
}
