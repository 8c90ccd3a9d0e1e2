#!/usr/bin/env bats
# gptq (filters/gptq.c): byte-exact llama-quantize RTN on stories260K, GPTQ
# with Hessian records, the LazyWeights options, and every refusal.

bats_require_minimum_version 1.5.0
load helpers

QUANTIZE="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin/llama-quantize"
F32="$MODELS/stories260K-f32.gguf"
UNIT="$ROOT/build/unit/test_gptq"

setup() {
    T="$BATS_TEST_TMPDIR"
}

# hessians OUT PYTHON: test_gptq's Hessian file for stories260K's 64-column matrices (shared
# records blk.N.attn_in and blk.N.ffn_in) as $T/h.wts, and edited by PYTHON (stream_edit) as OUT
hessians() {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/h.wts"
    stream_edit "$T/h.wts" "$1" "$2"
}

# imatrix_py: writes imx.py into the current folder, for python3 heredocs: gguf(PATH, ENTRIES)
# writes a llama-imatrix GGUF (imatrix.datasets [calib.txt], chunk_count 10, chunk_size 512) with
# NAME.in_sum2 and NAME.counts (F32) for each (NAME bytes, values, count) of ENTRIES
imatrix_py() {
    cat > imx.py <<'PY'
import struct
def s(b): return struct.pack('<Q', len(b)) + b
def gguf(path, entries):
    kv = [s(b'imatrix.datasets') + struct.pack('<IIQ', 9, 8, 1) + s(b'calib.txt'),
          s(b'imatrix.chunk_count') + struct.pack('<II', 4, 10),
          s(b'imatrix.chunk_size') + struct.pack('<II', 4, 512)]
    t = []
    for nm, vals, count in entries:
        t += [(nm + b'.in_sum2', len(vals), struct.pack('<%df' % len(vals), *vals)),
              (nm + b'.counts', 1, struct.pack('<f', count))]
    head = b'GGUF' + struct.pack('<IQQ', 3, len(t), len(kv)) + b''.join(kv)
    off, data = 0, b''
    for name, n, d in t:
        head += s(name) + struct.pack('<IQQIQ', 2, n, 1, 0, off)
        d += bytes(-len(d) % 32)
        data += d
        off += len(d)
    open(path, 'wb').write(head + bytes(-len(head) % 32) + data)
PY
}

# gptq_h HESSIAN ARGS...: run (stdout and stderr apart) ggufcat of the F32 model | gptq --hessian HESSIAN ARGS
gptq_h() {
    run --separate-stderr sh -c 'c=$1 g=$2 m=$3 h=$4; shift 4; "$c" "$m" | "$g" --hessian "$h" "$@"' \
        sh "$BIN/ggufcat" "$BIN/gptq" "$F32" "$@"
}

# stderr without the warning of matrices that the Hessian file has no H for: the Hessians
# that "$UNIT" --hessians writes are q/k/v's and gate/up's alone, attn_output and
# output.weight have none (that warning itself: "no Hessian for some matrices" below)
sans_bare() {
    printf '%s\n' "$1" | grep -v '^gptq: warning: .*: [0-9]* of the [0-9]* matrices to quantize have no Hessian in it ' || true
}

@test "gptq --rtn --ftype equals llama-quantize byte for byte (Q8_0 Q4_0 Q5_0 IQ4_NL Q4_K_M Q6_K IQ4_XS Q4_K_S)" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    for t in Q8_0 Q4_0 Q5_0 IQ4_NL Q4_K_M Q6_K IQ4_XS Q4_K_S; do
        "$QUANTIZE" "$F32" "$T/ref-$t.gguf" "$t" 1 >/dev/null 2>&1
        "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype "$t" --rtn --quiet | "$BIN/ggufpack" > "$T/our-$t.gguf"
        cmp "$T/ref-$t.gguf" "$T/our-$t.gguf" || { echo "differs: $t"; return 1; }
    done
}

@test "gptq --rtn from the F16 model equals llama-quantize (Q4_0)" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    "$QUANTIZE" "$MODELS/stories260K-f16.gguf" "$T/ref.gguf" Q4_0 1 >/dev/null 2>&1
    "$BIN/ggufcat" "$MODELS/stories260K-f16.gguf" | "$BIN/gptq" --ftype Q4_0 -q | "$BIN/ggufpack" > "$T/our.gguf"
    cmp "$T/ref.gguf" "$T/our.gguf"
}

@test "gptq output loads and generates in llama.cpp (RTN, gamma+widen+lambda, GPTQ)" {
    [ -x "$TOOLS/llgen" ] || skip "build/tools/llgen not built"
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/h.wts"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --type Q4_0 -q | "$BIN/ggufpack" > "$T/a.gguf"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q4_K_M --gamma --widen 1.25 --lambda 0.05 -q | "$BIN/ggufpack" > "$T/b.gguf"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/h.wts" --ftype Q4_0 --gamma --widen 1.25 -q | "$BIN/ggufpack" > "$T/c.gguf"
    for m in a b c; do
        run "$TOOLS/llgen" "$T/$m.gguf" 16
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | wc -w)" -eq 16 ] || { echo "$m: $output"; return 1; }
    done
}

@test "gptq without --hessian or --rtn: one warning that it rounds to nearest, before the first matrix it rounds; none with --rtn or for a conversion" {
    # RTN unasked was a trap: a fresh user took its codes for GPTQ's, a "(rtn)" in each line aside
    msg="gptq: warning: no --hessian: rounding to nearest (RTN), not GPTQ (hessian(1) makes the Hessians; --rtn asks for RTN and says no more)"
    "$BIN/ggufcat" "$F32" > "$T/m.wps"
    "$BIN/gptq" --type Q8_0 -q < "$T/m.wps" > "$T/a.wps" 2> "$T/err"
    [ "$(cat "$T/err")" = "$msg" ]
    "$BIN/gptq" --type Q4_0 --gamma < "$T/m.wps" > /dev/null 2> "$T/err"
    [ "$(grep -c "^gptq: warning: no --hessian" "$T/err")" -eq 1 ]
    [ "$(sed -n 2p "$T/err")" = "$msg" ]
    sed -n 3p "$T/err" | grep -q '^gptq: \[1/48\] output.weight .* F32 -> Q4_0 (rtn+lazy) '
    "$BIN/gptq" --rtn --type Q8_0 -q < "$T/m.wps" > "$T/b.wps" 2> "$T/err"
    [ ! -s "$T/err" ]
    cmp "$T/a.wps" "$T/b.wps"
    "$BIN/gptq" --type F16 -q < "$T/m.wps" > /dev/null 2> "$T/err"
    [ ! -s "$T/err" ]
    # --act-order's own warning says RTN: one line, not two
    "$BIN/gptq" --type Q8_0 --act-order -q < "$T/m.wps" > /dev/null 2> "$T/err"
    [ "$(cat "$T/err")" = "gptq: warning: --act-order acts on GPTQ's Hessians: without --hessian (RTN) it does nothing" ]
}

@test "gptq: the shape fallbacks are one warning by wanted and written type (--type Q6_K on stories260K gives no Q6_K); -q none" {
    # it named only the F16 ones, as "kept F16" of F32 input (a new user's trial)
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --rtn --type Q6_K -o "$T/q6.wts" 2> "$T/err"
    [ "$(grep -c warning "$T/err")" -eq 1 ]
    grep -qx 'gptq: warning: 37 of 37 quantized tensor(s) fell back, their row length not a multiple of the type.s block (llama-quantize.s fallbacks): 32 Q6_K -> Q8_0, 5 Q6_K -> F16 (F16: blk.0.ffn_down.weight, blk.1.ffn_down.weight, blk.2.ffn_down.weight, blk.3.ffn_down.weight, blk.4.ffn_down.weight)' "$T/err"
    [ "$("$BIN/tsinfo" "$T/q6.wts" | grep -c ' Q6_K ')" -eq 0 ]
    [ "$("$BIN/tsinfo" "$T/q6.wts" | grep -c ' Q8_0 ')" -eq 32 ]
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q4_K_M 2>&1 > /dev/null | grep -qx 'gptq: warning: 36 of 37 quantized tensor(s) fell back, .*: 29 Q4_K -> Q5_0, 3 Q4_K -> F16, 2 Q6_K -> Q8_0, 2 Q6_K -> F16 (F16: blk.0.ffn_down.weight, .*, blk.4.ffn_down.weight)'
    run --separate-stderr sh -c "'$BIN/ggufcat' '$F32' | '$BIN/gptq' --rtn --type Q6_K -q > /dev/null"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    # 20 pairs (15 types by --tensor-type): every one listed, the counts add up to 35 (it kept
    # 16 pairs and dropped the rest; a breaker's find)
    local types=(Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS IQ3_S TQ1_0 TQ2_0 IQ3_XXS IQ2_S IQ2_XS IQ2_XXS IQ1_S IQ1_M) args=() i=0 L t
    for L in 0 1 2 3 4; do for t in attn_q attn_k attn_v attn_output ffn_gate ffn_up; do
        args+=(--tensor-type "blk\\.$L\\.$t\\.weight=${types[$((i % 15))]}"); i=$((i + 1))
    done; done
    for L in 0:Q2_K 1:Q4_K 2:Q5_K 3:IQ4_XS 4:IQ3_S; do args+=(--tensor-type "blk\\.${L%:*}\\.ffn_down=${L#*:}"); done
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --type Q4_0 "${args[@]}" 2>&1 > /dev/null | grep warning > "$T/mix"
    grep -q '^gptq: warning: 35 of 37 quantized tensor(s) fell back, ' "$T/mix"
    [ "$(grep -o '[0-9]* [A-Z0-9_]* -> [A-Z0-9_]*' "$T/mix" | wc -l)" -eq 20 ]
    [ "$(grep -o '[0-9]* [A-Z0-9_]* -> [A-Z0-9_]*' "$T/mix" | awk '{ s += $1 } END { print s }')" -eq 35 ]
    grep -q ', 1 IQ3_S -> F16 (F16: blk.0.ffn_down.weight, ' "$T/mix"
}

@test "gptq --hessian: shared Hessian records drive GPTQ; progress names method and types" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/h.wts"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/h.wts" --ftype Q8_0 -o "$T/g.wts" 2> "$T/err"
    grep -q 'blk.0.attn_q.weight  *F32 -> Q8_0 (gptq, factor reused)' "$T/err"
    grep -q 'blk.4.ffn_up.weight  *F32 -> Q8_0 (gptq, factor reused)' "$T/err"
    grep -q 'blk.0.attn_output.weight  *F32 -> Q8_0 (rtn)' "$T/err"
    grep -qx 'gptq: warning: 5 of 37 quantized tensor(s) fell back, their row length not a multiple of the type.s block (llama-quantize.s fallbacks): 5 Q8_0 -> F16 (F16: blk.0.ffn_down.weight, blk.1.ffn_down.weight, blk.2.ffn_down.weight, blk.3.ffn_down.weight, blk.4.ffn_down.weight)' "$T/err"
    "$BIN/ggufpack" < "$T/g.wts" > "$T/g.gguf"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q8_0 -q | "$BIN/ggufpack" > "$T/r.gguf"
    ! cmp -s "$T/g.gguf" "$T/r.gguf" || false
    [ "$(stat -c %s "$T/g.gguf")" -eq "$(stat -c %s "$T/r.gguf")" ]
}

# split_py: Python for hessians that zeroes row and column 5 of every Hessian (a dead column,
# which GPTQ zeroes in each weight of the record), gives attn_output (between attn_k and attn_q
# in llama's order) a record of its own, a copy of the layer's ffn_in, and, given "split", gives
# each weight of a shared record its own copy (no weights=, nothing for gptq to reuse)
split_py() {
    echo "import array, copy
out = []
for r in recs:
    n, a = r.ne[0], array.array('d', bytes(r.payload))
    for j in range(n):
        a[5 * n + j] = a[j * n + 5] = 0
    r.payload = bytearray(a.tobytes())
    if r.name.endswith('.ffn_in'):
        o = copy.deepcopy(r)
        o.name = r.name.replace('ffn_in', 'attn_output.weight')
        del o.attrs['weights']
        out.append(o)
    ws = r.attrs.pop('weights').split(',') if '$1' == 'split' and 'weights' in r.attrs else []
    for w in ws:
        c = copy.deepcopy(r)
        c.name = w
        out.append(c)
    if not ws:
        out.append(r)
recs[:] = out"
}

@test "gptq --hessian: a record shared by q/k/v and gate/up, factored once, gives the bytes of one record per weight (act-order, types that differ within the record, dead columns, another record between)" {
    hessians "$T/shared.wts" "$(split_py)"
    hessians "$T/split.wts" "$(split_py split)"
    for opts in "--ftype Q4_0" "--ftype Q4_0 --act-order" "--ftype Q3_K_M" "--ftype Q3_K_M --act-order --damp 0.1" \
                "--ftype Q5_K_M --gamma --widen 1.25 --lambda 0.05"; do
        for h in shared split; do
            # shellcheck disable=SC2086
            gptq_h "$T/$h.wts" $opts -o "$T/$h.out"
            [ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
            echo "$stderr" > "$T/$h.err"
        done
        cmp "$T/shared.out" "$T/split.out" || { echo "differs with '$opts'"; return 1; }
        ! grep -q 'reused' "$T/split.err" || false
        [ "$(grep -c 'factor reused' "$T/shared.err")" -eq 15 ]
        grep -q 'blk.4.attn_output.weight  *F32 -> .* (gptq) ' "$T/shared.err"
        if [ "$opts" = "--ftype Q3_K_M" ]; then
            # attn_v is of another type than attn_k and attn_q, and shares their factor
            grep -q 'blk.0.attn_k.weight  *F32 -> Q4_0 (gptq) ' "$T/shared.err"
            grep -q 'blk.0.attn_v.weight  *F32 -> Q5_1 (gptq, factor reused)' "$T/shared.err"
        fi
    done
}

@test "gptq --hessian --act-order: a factor is not kept where it would raise the peak (act-order's permuted copy of H counts in a tensor's working set)" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/h.wts"
    # layer 0's attn_k, attn_output and attn_q made 2048 columns wide (16 rows): k and q share a
    # record, attn_output (between them) has its own; token_embd (F32 weights, no Hessian) is the
    # run's largest working set, a little above attn_output's H plus the kept factor (16 MiB)
    "$BIN/ggufcat" "$F32" > "$T/m.wps"
    stream_edit "$T/m.wps" "$T/big.wps" "import array
C = 2048
for r in recs:
    if r.name in ('blk.0.attn_k.weight', 'blk.0.attn_q.weight', 'blk.0.attn_output.weight'):
        r.ne, r.type = [C, 16, 1, 1], 0
        r.payload = bytearray(array.array('f', [((i * 7919) % 997) / 500.0 - 1 for i in range(C * 16)]).tobytes())
    if r.name == 'token_embd.weight':
        r.ne, r.type = [C, 6500, 1, 1], 0
        r.payload = bytearray(array.array('f', [0.5]).tobytes() * (C * 6500))"
    stream_edit "$T/h.wts" "$T/bigh.wts" "import array, copy
C, out = 2048, []
for r in recs:
    if r.name == 'blk.0.attn_in':
        a = array.array('d', bytes(8 * C * C))
        for i in range(C):
            a[i * C + i] = 1 + (i * 37) % 11
        r.ne, r.payload = [C, C, 1, 1], bytearray(a.tobytes())
        r.attrs['weights'] = 'blk.0.attn_k.weight,blk.0.attn_q.weight'
        o = copy.deepcopy(r)
        o.name = 'blk.0.attn_output.weight'
        del o.attrs['weights']
        out.append(o)
    out.append(r)
recs[:] = out"
    # the same Hessians, one record per weight: nothing kept
    stream_edit "$T/bigh.wts" "$T/splith.wts" "import copy
out = []
for r in recs:
    for w in r.attrs.pop('weights', r.name).split(','):
        c = copy.deepcopy(r)
        c.name = w
        out.append(c)
recs[:] = out"
    # the rule, not the allocator's peak: attn_output's working set beside the kept 16 MiB factor
    # passes token_embd's only when act-order's copy of H counts, so the factor is dropped before
    # it with --act-order (q makes its own) and kept without (q reuses it); the bytes are those of
    # one record per weight either way (the peak was 97.6 MB against 81.3 with one record each)
    for act in --act-order ""; do
        "$BIN/gptq" --hessian "$T/bigh.wts" --type Q8_0 $act -o "$T/s.out" "$T/big.wps" 2> "$T/s.err"
        "$BIN/gptq" --hessian "$T/splith.wts" --type Q8_0 $act -o "$T/p.out" "$T/big.wps" 2> /dev/null
        cmp "$T/s.out" "$T/p.out"
        grep -q ' blk.0.attn_k.weight .*(gptq) ' "$T/s.err"
        if [ -n "$act" ]; then
            grep -q ' blk.0.attn_q.weight .*(gptq) ' "$T/s.err" || { cat "$T/s.err"; false; }
        else
            grep -q ' blk.0.attn_q.weight .*(gptq, factor reused) ' "$T/s.err" || { cat "$T/s.err"; false; }
        fi
    done
}

@test "gptq --hessian: the progress says which weights reused their record's factor (the record's first in llama's order makes it)" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/h.wts"
    gptq_h "$T/h.wts" --ftype Q8_0 -o /dev/null
    [ "$status" -eq 0 ]
    for l in 0 1 2 3 4; do
        for w in attn_k ffn_gate; do
            echo "$stderr" | grep -q "blk.$l.$w.weight  *F32 -> Q8_0 (gptq) "
        done
        for w in attn_q attn_v ffn_up; do
            echo "$stderr" | grep -q "blk.$l.$w.weight  *F32 -> Q8_0 (gptq, factor reused) "
        done
    done
    [ "$(echo "$stderr" | grep -c 'reused')" -eq 15 ]
}

@test "gptq --hessian: an indefinite shared record warns for each of its weights, and each is RTN" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/bad.wts" bad
    gptq_h "$T/bad.wts" --ftype Q4_0 -o "$T/g.out"
    [ "$status" -eq 0 ]
    for w in attn_q attn_k attn_v ffn_gate ffn_up; do
        echo "$stderr" | grep -q "warning: tensor blk.0.$w.weight: Hessian not positive definite even with damping"
    done
    [ "$(echo "$stderr" | grep -c 'Hessian not positive definite')" -eq 25 ]
    ! echo "$stderr" | grep -q '(gptq' || false
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q4_0 --rtn -q -o "$T/r.out"
    cmp "$T/g.out" "$T/r.out"
}

@test "gptq --threads: any count gives the same bytes (RTN equals llama-quantize on 3 threads; GPTQ, act-order, gamma+widen, lambda)" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    if [ -x "$QUANTIZE" ]; then
        "$QUANTIZE" "$F32" "$T/ref.gguf" Q4_K_M 3 >/dev/null 2>&1
        "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q4_K_M --rtn --threads 3 -q | "$BIN/ggufpack" > "$T/rtn3.gguf"
        cmp "$T/ref.gguf" "$T/rtn3.gguf"
    fi
    "$UNIT" --hessians "$T/h.wts"
    for opts in "" "--act-order" "--gamma --widen 1.25"; do
        for n in 1 3; do
            # shellcheck disable=SC2086
            "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/h.wts" --ftype Q4_0 $opts --threads $n -q -o "$T/g$n.wts"
        done
        cmp "$T/g1.wts" "$T/g3.wts" || { echo "differs with '$opts'"; return 1; }
    done
    run "$BIN/gptq" --type Q4_0 --threads 0
    one_line_error '^gptq: --threads'
    # --lambda codes chunks of 64 rows side by side (it coded on one thread, and warned): the same
    # bytes for any count, on stories260K (rows of 64 to 512) and a llama shape with K-quant rows,
    # RTN and GPTQ, and no warning
    "$BIN/ggufcat" "$F32" > "$T/m.wps"
    "$TOOLS/mkllama" "$F32" "$T/synth.gguf" F16
    "$BIN/ggufcat" "$T/synth.gguf" > "$T/s.wps"
    for n in 1 2 3; do
        "$BIN/gptq" --rtn --type Q4_0 --lambda 0.05 --threads $n -q < "$T/m.wps" > "$T/l$n.wps" 2> "$T/l$n.err"
        [ ! -s "$T/l$n.err" ]
        "$BIN/gptq" --ftype Q4_K_M --gamma --widen 1.25 --lambda 0.1 --threads $n -q < "$T/s.wps" > "$T/k$n.wps"
        "$BIN/gptq" --hessian "$T/h.wts" --ftype Q4_0 --lambda 0.1 --act-order --threads $n -q < "$T/m.wps" > "$T/g$n.wps"
    done
    for f in l k g; do
        cmp "$T/${f}1.wps" "$T/${f}2.wps"
        cmp "$T/${f}1.wps" "$T/${f}3.wps"
    done
    # and λ > 0 still changes the codes (the rate term is not lost)
    "$BIN/gptq" --type Q4_0 -q < "$T/m.wps" > "$T/l0.wps"
    ! cmp -s "$T/l0.wps" "$T/l1.wps" || false
}

@test "gptq --hessian: F32 Hessian records give the same model as F64 records of the same values" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/h32.wts" f32
    "$UNIT" --hessians "$T/h64.wts" f32as64
    [ "$(stat -c %s "$T/h32.wts")" -lt "$(stat -c %s "$T/h64.wts")" ]   # really F32 records
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/h32.wts" --ftype Q8_0 -o "$T/a.wts" 2> "$T/err"
    grep -q 'blk.0.attn_q.weight  *F32 -> Q8_0 (gptq, factor reused)' "$T/err"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/h64.wts" --ftype Q8_0 -q -o "$T/b.wts"
    cmp "$T/a.wts" "$T/b.wts"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q8_0 -q -o "$T/r.wts"
    ! cmp -s "$T/a.wts" "$T/r.wts" || false
}

@test "bad input: a weight named by two Hessian records is refused (the first record won silently)" {
    # layer 0's shared q/k/v record also claims blk.1.attn_k.weight: it got layer 0's H
    hessians "$T/d.wts" "[r for r in recs if r.name == 'blk.0.attn_in'][0].attrs['weights'] += ',blk.1.attn_k.weight'"
    gptq_h "$T/d.wts" --ftype Q8_0 -o "$T/g.wts"
    [ "$status" -eq 1 ]
    [[ "$stderr" =~ ^"gptq: $T/d.wts: weight blk.1.attn_k.weight has two Hessian records (at offsets "[0-9]+" and "[0-9]+")"$ ]]
    [ ! -e "$T/g.wts" ]
    # a record whose own name is also in its weights= is one record, not two
    stream_edit "$T/h.wts" "$T/s.wts" "r = [r for r in recs if r.name == 'blk.0.attn_in'][0]
r.name = 'blk.0.attn_q.weight'"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/s.wts" --ftype Q8_0 -q -o "$T/s.out"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/h.wts" --ftype Q8_0 -q -o "$T/h.out"
    cmp "$T/s.out" "$T/h.out"
}

@test "gptq: an indefinite Hessian falls back to RTN with a warning" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/bad.wts" bad
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --hessian "$T/bad.wts" --ftype Q4_0 2> "$T/err" | "$BIN/ggufpack" > "$T/g.gguf"
    grep -q 'warning: tensor blk.0.attn_q.weight: Hessian not positive definite' "$T/err"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q4_0 --rtn -q | "$BIN/ggufpack" > "$T/r.gguf"
    cmp "$T/g.gguf" "$T/r.gguf"
}

@test "gptq: NaN in a weight is an error naming the tensor" {
    cp "$F32" "$T/nan.gguf"
    chmod u+w "$T/nan.gguf"
    size=$(stat -c %s "$T/nan.gguf")
    # the last tensor is blk.4.ffn_norm (256 bytes); before it blk.4.ffn_up
    patch_bytes "$T/nan.gguf" $((size - 256 - 4)) '\x00\x00\xc0\x7f'
    run sh -c "'$BIN/ggufcat' '$T/nan.gguf' | '$BIN/gptq' --ftype Q8_0 -q > '$T/out.wts'"
    [ "$status" -ne 0 ]
    [[ "$output" =~ "tensor blk.4.ffn_up.weight: non-finite value nan at row 171, column 63" ]] || { echo "$output"; return 1; }
}

@test "gptq -o /dev/stdout works for a user who cannot write into /dev" {
    # the early check of OUT's directory refused any device for non-root users (a breaker's find)
    [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null || skip "needs root and setpriv to run as nobody"
    [ -x "$BIN/gptq" ] && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$BIN/gptq" || skip "nobody cannot run bin/"
    n=$(setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
        "'$BIN/ggufcat' '$F32' | '$BIN/gptq' --ftype Q8_0 --rtn --quiet -o /dev/stdout | wc -c")
    [ "$n" -eq "$("$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q8_0 --rtn --quiet | wc -c)" ]
    [ "$n" -gt 300000 ]
}

@test "gptq --hessian: a Hessian whose shape misfits its tensor is refused before any output, in --check too" {
    # it was refused when gptq reached the tensor, the records before it already written
    hessians "$T/d.wts" "r = [r for r in recs if r.name == 'blk.0.attn_in'][0]
r.ne = [32, 32, 1, 1]
r.payload = r.payload[:32 * 32 * 8]"
    local want="gptq: $T/d.wts: Hessian 'blk.0.attn_in' is 32x32, tensor blk.0.attn_q.weight has 64 columns"
    "$BIN/ggufcat" "$F32" > "$T/m.wps"
    run --separate-stderr sh -c "'$BIN/gptq' --hessian '$T/d.wts' --ftype Q8_0 -q < '$T/m.wps' | wc -c"
    [ "$output" = 0 ]
    [ "$stderr" = "$want" ] || { echo "$stderr"; false; }
    run --separate-stderr "$BIN/gptq" --check --hessian "$T/d.wts" --ftype Q8_0 "$F32"
    [ "$status" -eq 1 ]
    [ "$stderr" = "$want" ]
    # a type gptq keeps as floats reads no Hessian: nothing to refuse
    "$BIN/gptq" --check --hessian "$T/d.wts" --ftype F16 "$F32"
}

@test "gptq --hessian: weights a Hessian file names that the model lacks give one warning (another model's file ran by RTN without a word)" {
    # another architecture's names for q: 5 of the 25 weights the records name
    hessians "$T/o.wts" "for r in recs: r.attrs['weights'] = r.attrs['weights'].replace('attn_q.', 'attn_qkv.')"
    gptq_h "$T/o.wts" --ftype Q8_0 -o "$T/g.wts"
    [ "$status" -eq 0 ]
    [ "$(sans_bare "$stderr" | grep -c "warning: $T/o.wts")" -eq 1 ]
    echo "$stderr" | grep -qxF "gptq: warning: $T/o.wts: 5 of the 25 weights it names are not in stdin (the first: blk.0.attn_qkv.weight): is it another model's Hessian file? A tensor without a Hessian is quantized by RTN"
    # and the matrices it then has no H for: attn_q's too (attn_output and output.weight have none)
    echo "$stderr" | grep -qxF "gptq: warning: $T/o.wts: 11 of the 31 matrices to quantize have no Hessian in it (the first: output.weight): RTN for them (the Hessians of a model with fewer layers, or of another model?)"
    echo "$stderr" | grep -q 'blk.0.attn_q.weight  *F32 -> Q8_0 (rtn)'
    echo "$stderr" | grep -q 'blk.0.attn_k.weight  *F32 -> Q8_0 (gptq)'
    # the same from --check, naming the file; the right names (shared records named blk.N.attn_in) warn of nothing
    run --separate-stderr "$BIN/gptq" --check --hessian "$T/o.wts" --ftype Q8_0 "$F32"
    [ "$status" -eq 0 ]
    echo "$stderr" | grep -qF "gptq: warning: $T/o.wts: 5 of the 25 weights it names are not in $F32 (the first: "
    gptq_h "$T/h.wts" --ftype Q8_0 -o /dev/null
    [ "$status" -eq 0 ]
    ! sans_bare "$stderr" | grep -q "warning: $T/h.wts" || false
    echo "$stderr" | grep -q 'blk.0.attn_q.weight  *F32 -> Q8_0 (gptq, factor reused)'
}

@test "gptq --hessian: matrices to quantize that the Hessian file has no H for give one warning, by --check too (a model with more layers than its Hessians' ran its last layers by RTN unsaid)" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians "$T/h.wts"     # q/k/v's and gate/up's: not attn_output's or output.weight's
    want="gptq: warning: $T/h.wts: 6 of the 31 matrices to quantize have no Hessian in it (the first: output.weight): RTN for them (the Hessians of a model with fewer layers, or of another model?)"
    gptq_h "$T/h.wts" --ftype Q8_0 -q -o /dev/null
    [ "$status" -eq 0 ]
    [ "$stderr" = "$want" ]
    run --separate-stderr "$BIN/gptq" --check --hessian "$T/h.wts" --ftype Q8_0 "$F32"
    [ "$status" -eq 0 ]
    [ "$stderr" = "$want" ]
    # the token embedding, read by row, has no H in any file: not counted (31 = 5 x 6 + output)
    ! echo "$stderr" | grep -q token_embd || false
    # a file of every matrix's H: nothing said
    "$BIN/hessian" --model "$F32" --text "$DATA/text/groups_merged.txt" --ctx 128 --chunks 1 --threads 1 -o "$T/all.hess" 2>/dev/null
    gptq_h "$T/all.hess" --ftype Q8_0 -q -o /dev/null
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
}

@test "gptq --hessian: an empty name in weights= (a doubled or trailing comma) names no weight (a mutation test's find)" {
    # a hand-edited list "q,,k,v," is the list "q,k,v": no weight named "" (in every record
    # it would be one weight with several records, refused)
    hessians "$T/c.wts" "for r in recs: r.attrs['weights'] = r.attrs['weights'].replace(',', ',,') + ','"
    [ "$("$BIN/tsinfo" -a "$T/c.wts" | grep -c '^ *weights=blk\.0\.attn_q\.weight,,blk\.0\.attn_k\.weight,,.*,$')" -eq 1 ]
    gptq_h "$T/c.wts" --ftype Q8_0 -o "$T/c.out"
    [ "$status" -eq 0 ]
    ! sans_bare "$stderr" | grep -q "$T/c.wts" || false
    [ "$(echo "$stderr" | grep -c '(gptq, factor reused)')" -eq 15 ]
    gptq_h "$T/h.wts" --ftype Q8_0 -q -o "$T/h.out"
    [ "$status" -eq 0 ]
    cmp "$T/c.out" "$T/h.out"
}

@test "gptq: a zero Hessian (no calibration token reached the weight) is RTN with a warning, not a zeroed matrix" {
    # every column counted dead and GPTQ zeroed all of blk.0's q, k and v, exit 0
    hessians "$T/z.wts" "r = [r for r in recs if r.name == 'blk.0.attn_in'][0]
r.payload = bytearray(len(r.payload))"
    "$BIN/ggufcat" "$F32" > "$T/m.wps"
    run --separate-stderr "$BIN/gptq" --hessian "$T/z.wts" --ftype Q8_0 -o "$T/g.wts" "$T/m.wps"
    [ "$status" -eq 0 ]
    for w in q k v; do
        echo "$stderr" | grep -qxF "gptq: warning: $T/z.wts: tensor blk.0.attn_$w.weight: the Hessian is zero (no calibration token reached it): RTN instead"
        echo "$stderr" | grep -q "blk.0.attn_$w.weight  *F32 -> Q8_0 (rtn)"
    done
    [ "$(echo "$stderr" | grep -c 'the Hessian is zero')" -eq 3 ]
    echo "$stderr" | grep -q 'blk.1.attn_q.weight  *F32 -> Q8_0 (gptq, factor reused)'
    # q's bytes are RTN's, not zeros
    "$BIN/gptq" --rtn --ftype Q8_0 -q -o "$T/r.wts" "$T/m.wps"
    "$BIN/ggufpack" -o "$T/g.gguf" "$T/g.wts"
    "$BIN/ggufpack" -o "$T/r.gguf" "$T/r.wts"
    [ "$("$BIN/tsinfo" -x "$T/g.gguf" | grep ' blk.0.attn_q.weight ')" = "$("$BIN/tsinfo" -x "$T/r.gguf" | grep ' blk.0.attn_q.weight ')" ]
}

@test "gptq: a NaN or a negative diagonal entry in a Hessian is refused, naming the Hessian file and the tensor" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    # H(0,0) of the first hessian record (F64) becomes NaN, or -1 (damping let that through as a
    # near-identity and GPTQ ran on it with exit 0), checksums resealed
    local v why
    for v in nan neg; do
        "$UNIT" --hessians "$T/h.wts"
        name=$("$BIN/tsinfo" "$T/h.wts" | awk '$1 == "hessian" { print $2; exit }')
        read -r p len <<< "$(payload_of "$T/h.wts" "$name")"
        [ "$len" -gt 8 ]
        if [ $v = nan ]; then
            patch_bytes "$T/h.wts" "$p" '\x00\x00\x00\x00\x00\x00\xf8\x7f'
            why="non-finite Hessian entry at (0, 0)"
        else
            patch_bytes "$T/h.wts" "$p" '\x00\x00\x00\x00\x00\x00\xf0\xbf'
            why="negative Hessian diagonal entry -1 at (0, 0): X^T X has none"
        fi
        reseal "$T/h.wts"
        gptq_h "$T/h.wts" --ftype Q4_0 -q -o "$T/g.wts"
        [ "$status" -eq 1 ]
        [[ "$(sans_bare "$stderr")" =~ ^"gptq: $T/h.wts: tensor "[a-z0-9_.]+": $why"$ ]] || { echo "$stderr"; false; }
        [ ! -e "$T/g.wts" ]
    done
}

@test "gptq: a tensor whose weights and Hessian are both bad is refused for its weights, read before its Hessian" {
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    # blk.4.ffn_gate, the first weight of record blk.4.ffn_in: a NaN weight at row 2, column 3
    # (rows of 64 floats), and H(0,0) of its record NaN too; after a refactor the Hessian's error
    # came first (a differential test's find)
    "$UNIT" --hessians "$T/h.wts"
    read -r p len <<< "$(payload_of "$T/h.wts" blk.4.ffn_in)"
    patch_bytes "$T/h.wts" "$p" '\x00\x00\x00\x00\x00\x00\xf8\x7f'
    reseal "$T/h.wts"
    "$BIN/ggufcat" "$F32" > "$T/m.wts"
    read -r p len <<< "$(payload_of "$T/m.wts" blk.4.ffn_gate.weight)"
    patch_bytes "$T/m.wts" $((p + 4 * (2 * 64 + 3))) '\x00\x00\xc0\x7f'
    reseal "$T/m.wts"
    run --separate-stderr "$BIN/gptq" --hessian "$T/h.wts" --ftype Q8_0 -q -o "$T/g.wts" "$T/m.wts"
    [ "$status" -eq 1 ]
    [ "$(sans_bare "$stderr")" = "gptq: tensor blk.4.ffn_gate.weight: non-finite value nan at row 2, column 3" ] || { echo "$stderr"; false; }
    [ ! -e "$T/g.wts" ]
    # the weights whole, the Hessian's own error
    "$BIN/ggufcat" "$F32" > "$T/m.wts"
    run --separate-stderr "$BIN/gptq" --hessian "$T/h.wts" --ftype Q8_0 -q -o "$T/g.wts" "$T/m.wts"
    [ "$status" -eq 1 ]
    [ "$(sans_bare "$stderr")" = "gptq: $T/h.wts: tensor blk.4.ffn_gate.weight: non-finite Hessian entry at (0, 0)" ] || { echo "$stderr"; false; }
}

@test "gptq: a weight too large for an fp16 scale is an error with every LazyWeights option too" {
    cp "$F32" "$T/big.gguf"
    chmod u+w "$T/big.gguf"
    size=$(stat -c %s "$T/big.gguf")
    patch_bytes "$T/big.gguf" $((size - 256 - 4)) '\x20\xbc\xbe\x4c'   # 1e8, blk.4.ffn_up row 171
    # the LazyWeights paths clamped the scale to 65504 and exited 0 with a model llama.cpp
    # scores PPL nan; RTN (and llama-quantize) refuse it (a new user's trial)
    for o in "--ftype Q8_0" "--type Q8_0 --widen 1.01" "--type Q8_0 --gamma" "--type Q4_1 --widen 2" \
        "--ftype Q4_K_M --gamma --widen 1.25" "--type Q4_0 --lambda 0.1"; do
        run sh -c "'$BIN/ggufcat' '$T/big.gguf' | '$BIN/gptq' $o -q -o '$T/out.wts'"
        [ "$status" -eq 1 ] || { echo "$o: status $status"; return 1; }
        [[ "$output" =~ tensor\ blk.4.ffn_up.weight:\ .*scale.*(row\ 171\)\ )?does\ not\ fit\ fp16 ]] ||
            { echo "$o: $output"; return 1; }
        [ ! -e "$T/out.wts" ]
    done
}

@test "gptq: a weight no block can hold (1e20) is one line for every type, RTN and GPTQ (Q6_K, Q3_K and IQ4_XS zeroed its block)" {
    # its square overflowed the float sums of the scale search: Q6_K, Q3_K and IQ4_XS came out
    # with finite scales that zeroed the weight and its 15 neighbours, exit 0 (a breaker's find)
    cd "$T"
    python3 - <<'PY'
import random, struct
random.seed(1)
rows, cols = 8, 256
w = [random.gauss(0, 0.02) for _ in range(rows * cols)]
def gguf(path, big):
    v = list(w); v[5] = big
    name = b"blk.0.attn_q.weight"
    info = struct.pack("<Q", len(name)) + name + struct.pack("<IQQIQ", 2, cols, rows, 0, 0)
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + info
    head += bytes(-len(head) % 32)
    open(path, "wb").write(head + struct.pack("<%df" % len(v), *v))
gguf("big.gguf", 1e20)
gguf("edge.gguf", 1.05e9)
PY
    local t o
    for t in Q6_K Q3_K IQ4_XS Q4_K Q8_0 Q4_0; do
        for o in --rtn "--lambda 0.1" "--gamma --widen 1.25"; do
            run sh -c "'$BIN/ggufcat' big.gguf | '$BIN/gptq' --type $t $o -q -o out.wts"
            one_line_error "^gptq: tensor blk\.0\.attn_q\.weight: weight 1e\+20 at row 0, column 5 is too large for $t \(no block holds one above 1\.06e\+09: its scales are fp16\)$"
            [ ! -e out.wts ]
        done
    done
    # below the bound, the fp16 check of the scales refuses it as before, for Q6_K too
    run sh -c "'$BIN/ggufcat' edge.gguf | '$BIN/gptq' --type Q6_K --rtn -q -o out.wts"
    one_line_error "^gptq: tensor blk\.0\.attn_q\.weight: a block scale does not fit fp16 \(weights too large for Q6_K\)$"
    [ ! -e out.wts ]
}

@test "gptq: usage errors are one line" {
    run "$BIN/gptq" --rtn
    one_line_error 'exactly one of --type'
    run "$BIN/gptq" --type Q9_9
    one_line_error "unknown --type 'Q9_9'"
    run "$BIN/gptq" --ftype Q4_0 --widen 0.5
    one_line_error 'widen'
    run "$BIN/gptq" --ftype Q4_0 --rtn --hessian x
    one_line_error 'exclude'
    # a value left out: the next option is not taken as the type or the file name
    run "$BIN/gptq" -q --type -o "$BATS_TEST_TMPDIR/g.out" x.wps
    one_line_error '^gptq: --type: missing value \(got the option -o\)$'
    run "$BIN/gptq" --type Q4_0 -o --quiet
    one_line_error '^gptq: -o: missing value \(got the option --quiet\)$'
}

@test "gptq: --name=value as --name value (it was an unknown option); a flag given a value, a value left out" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" > "$BATS_TEST_TMPDIR/m.wts"
    "$BIN/gptq" -q --ftype Q5_0 --threads 2 --tensor-type 'ffn_up=Q8_0' "$BATS_TEST_TMPDIR/m.wts" > "$BATS_TEST_TMPDIR/a.wts"
    "$BIN/gptq" -q --ftype=Q5_0 --threads=2 --tensor-type=ffn_up=Q8_0 "$BATS_TEST_TMPDIR/m.wts" > "$BATS_TEST_TMPDIR/b.wts"
    cmp "$BATS_TEST_TMPDIR/a.wts" "$BATS_TEST_TMPDIR/b.wts"
    [ "$("$BIN/tsinfo" "$BATS_TEST_TMPDIR/b.wts" | grep -c 'ffn_up.*Q8_0')" -eq 5 ]
    run "$BIN/gptq" --ftype Q4_0 --threads= x.wts
    one_line_error '^gptq: --threads: needs a value \(try --help\)$'
    run "$BIN/gptq" --ftype Q4_0 --threads
    one_line_error '^gptq: --threads: needs a value \(try --help\)$'
    run "$BIN/gptq" --ftype Q4_0 --rtn=yes x.wts
    one_line_error '^gptq: --rtn: takes no value \(try --help\)$'
    run "$BIN/gptq" --ftype Q4_0 --bogus x.wts
    one_line_error '^gptq: --bogus: unknown option \(try --help\)$'
}

@test "gptq in.gguf out.gguf Q8_0 (llama-quantize's order) is one line giving the filter's form, which works as said" {
    # it said only "one input stream at a time (got 'out.gguf' too)" (a helper's trial)
    cd "$BATS_TEST_TMPDIR"
    cp "$MODELS/stories260K-f32.gguf" in.gguf
    run "$BIN/gptq" in.gguf out.gguf Q8_0
    one_line_error "^gptq: in.gguf out.gguf Q8_0: llama-quantize's order; gptq is a filter of wpack streams: ggufcat in.gguf \\| gptq --ftype Q8_0 --rtn \\| ggufpack -o out.gguf \\(or pipelines/lazyweights\\)$"
    [ ! -e out.gguf ]
    local cmd=${output#*streams: }
    PATH="$BIN:$PATH" eval "${cmd% (or pipelines/lazyweights)}"
    "$BIN/ggufcat" in.gguf | "$BIN/gptq" -q --ftype Q8_0 --rtn | "$BIN/ggufpack" | cmp - out.gguf
    # a pasted command that fails leaves OUT as it was: ggufpack -o, not the shell's > (it emptied
    # OUT, here a model, when requantizing was refused: a fresh user's find)
    cp in.gguf keep.gguf
    run "$BIN/gptq" out.gguf keep.gguf Q4_K_M
    cmd=${output#*streams: }
    run env PATH="$BIN:$PATH" bash -c "${cmd% (or pipelines/lazyweights)}"
    [ "$status" -ne 0 ]
    cmp keep.gguf in.gguf
    # --rtn beside --hessian is said first (the command given with both failed when pasted)
    run "$BIN/gptq" --hessian h.hess in.gguf out.gguf Q8_0 --rtn
    one_line_error "^gptq: --rtn and --hessian exclude each other$"
    # with llama-quantize's thread count; a preset in lower case, no OUT
    run "$BIN/gptq" -q in.gguf out.gguf Q8_0 2
    [[ $output == "gptq: in.gguf out.gguf Q8_0 2: llama-quantize's order; "*"ggufcat in.gguf | gptq -q --threads 2 --ftype Q8_0 --rtn | ggufpack -o out.gguf "* ]]
    # not -o FILE, --check or --hessian-later, with which it failed or wrote nothing (a fresh
    # user's find)
    run "$BIN/gptq" -o x.wts --check --hessian-later in.gguf out.gguf Q8_0
    one_line_error "ggufcat in.gguf \\| gptq --ftype Q8_0 --rtn \\| ggufpack -o out.gguf "
    run "$BIN/gptq" in.gguf q4_k_m
    one_line_error "ggufcat in.gguf \\| gptq --ftype q4_k_m --rtn \\| ggufpack -o OUT.gguf "
    # names a shell must have quoted, and the other options, kept in the form given (they were
    # left out, and a name with a space split in two: a breaker's find); IN PRESET OUT too
    cp in.gguf "my model.gguf"
    run "$BIN/gptq" --pure "my model.gguf" "out q.gguf" Q8_0
    one_line_error "^gptq: 'my model.gguf' 'out q.gguf' Q8_0: llama-quantize's order; gptq is a filter of wpack streams: ggufcat 'my model.gguf' \\| gptq --pure --ftype Q8_0 --rtn \\| ggufpack -o 'out q.gguf' \\(or pipelines/lazyweights\\)$"
    cmd=${output#*streams: }
    PATH="$BIN:$PATH" eval "${cmd% (or pipelines/lazyweights)}"
    "$BIN/ggufcat" in.gguf | "$BIN/gptq" -q --pure --ftype Q8_0 --rtn | "$BIN/ggufpack" | cmp - "out q.gguf"
    run "$BIN/gptq" --hessian h.hess -- -m.gguf Q4_K_M o.gguf
    one_line_error "ggufcat ./-m.gguf \\| gptq --hessian h.hess --ftype Q4_K_M \\| ggufpack -o o.gguf "
    run "$BIN/gptq" in.gguf out.gguf NVFP4
    one_line_error "^gptq: NVFP4: llama.cpp gives this preset no type to quantize to$"
    # two inputs that are no such form: as before
    run "$BIN/gptq" --ftype Q8_0 in.gguf out.gguf
    one_line_error "^gptq: one input stream at a time \\(got 'out.gguf' too\\)$"
    # a preset's number, as llama-quantize takes it (it was "unknown --ftype '7'": a new user's
    # trial), leading zeros too; only a preset's (4 was Q4_1_SOME_F16)
    "$BIN/ggufcat" in.gguf | "$BIN/gptq" -q --ftype 7 --rtn | "$BIN/ggufpack" | cmp - out.gguf
    "$BIN/ggufcat" in.gguf | "$BIN/gptq" -q --ftype 0007 --rtn | "$BIN/ggufpack" | cmp - out.gguf
    run "$BIN/gptq" --ftype 4 --rtn in.gguf
    one_line_error "^gptq: unknown --ftype '4' \\(llama-quantize's presets, by name or number: F32, F16, Q4_0, "
    run "$BIN/gptq" in.gguf out.gguf 7
    one_line_error "ggufcat in.gguf \\| gptq --ftype 7 --rtn \\| ggufpack -o out.gguf "
    # llama-quantize's COPY (it said "one input stream at a time"), whose filter form writes the
    # input's own bytes
    run "$BIN/gptq" "my model.gguf" out.gguf copy
    one_line_error "^gptq: my model.gguf out.gguf copy: llama-quantize's order; COPY keeps every tensor as it is, as ggufcat 'my model.gguf' \\| ggufpack -o out.gguf does \\(the input's own bytes\\)$"
    cmd=${output#*is, as }
    PATH="$BIN:$PATH" eval "${cmd% does (the input*}"
    cmp out.gguf "my model.gguf"
    # - as IN is standard input, not a file ./- (a breaker's find)
    run "$BIN/gptq" - out.gguf Q8_0
    one_line_error "^gptq: - out.gguf Q8_0: llama-quantize's order; gptq is a filter of wpack streams: ggufcat - \\| gptq --ftype Q8_0 --rtn \\| ggufpack -o out.gguf "
    # an OUT that names no file, with --ftype given, is told where the output goes, as the
    # other filters say it; a preset where IN goes is told --ftype (it blamed the next word: a
    # new user's trial)
    run "$BIN/gptq" --ftype Q4_K_M in.gguf m-q4x.gguf
    one_line_error "^gptq: one input stream at a time \\(got 'm-q4x.gguf' too, no such file: the output goes to standard output\\)$"
    run "$BIN/gptq" Q4_K_M --rtn in.gguf
    one_line_error "^gptq: Q4_K_M: no such file: a preset goes with --ftype \\(gptq --ftype Q4_K_M ...\\)$"
    # IN COPY, no OUT (it said "one input stream at a time": a breaker's find)
    run "$BIN/gptq" in.gguf COPY
    one_line_error "^gptq: in.gguf COPY: llama-quantize's order; COPY keeps every tensor as it is, as ggufcat in.gguf \\| ggufpack -o OUT.gguf does \\(the input's own bytes\\)$"
    # IN OUT.gguf and a preset llama-quantize does not know, by name or number, is told so (it
    # said "one input stream at a time": a note's left alone); a third word that is a file is not
    run "$BIN/gptq" in.gguf out.gguf Q4_K_X
    one_line_error "^gptq: Q4_K_X: unknown preset in llama-quantize's order IN OUT PRESET \\(its presets, by name or number: F32, F16, Q4_0, .*, Q4_K_M, .*; gptq takes them as --ftype PRESET\\)$"
    run "$BIN/gptq" in.gguf out.GGUF 99 4
    one_line_error "^gptq: 99: unknown preset in llama-quantize's order IN OUT PRESET "
    run "$BIN/gptq" in.gguf out.gguf in.gguf
    one_line_error "^gptq: one input stream at a time \\(got 'out.gguf' too\\)$"
    # a GGUF's name there is a missing file; an empty word is named (a breaker's finds)
    run "$BIN/gptq" in.gguf out.gguf in2.GGUF
    one_line_error "^gptq: in2.GGUF: no such file$"
    run "$BIN/gptq" in.gguf out.gguf ''
    one_line_error "^gptq: '' \\(an empty word\\): unknown preset in llama-quantize's order IN OUT PRESET "
}

@test "gptq of a GGUF v2 file writes version 3, as llama-quantize does" {
    # only byte 4 differed from llama-quantize's file: wpack kept the input's version (a new
    # user's trial)
    cp "$MODELS/stories260K-f32.gguf" "$BATS_TEST_TMPDIR/v2.gguf"
    printf '\002' | dd of="$BATS_TEST_TMPDIR/v2.gguf" bs=1 seek=4 conv=notrunc 2> /dev/null
    "$BIN/ggufcat" "$BATS_TEST_TMPDIR/v2.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn | "$BIN/ggufpack" > "$BATS_TEST_TMPDIR/a.gguf"
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" | "$BIN/gptq" -q --ftype Q8_0 --rtn | "$BIN/ggufpack" > "$BATS_TEST_TMPDIR/b.gguf"
    [ "$(od -An -tu4 -j4 -N4 "$BATS_TEST_TMPDIR/a.gguf" | tr -d ' ')" = 3 ]
    cmp "$BATS_TEST_TMPDIR/a.gguf" "$BATS_TEST_TMPDIR/b.gguf"
    # a plain round trip keeps version 2
    "$BIN/ggufcat" "$BATS_TEST_TMPDIR/v2.gguf" | "$BIN/ggufpack" | cmp - "$BATS_TEST_TMPDIR/v2.gguf"
}

@test "gptq: --act-order and --damp without --hessian warn that they do nothing" {
    "$BIN/ggufcat" "$MODELS/stories260K-f32.gguf" > "$BATS_TEST_TMPDIR/s.wps"
    run --separate-stderr "$BIN/gptq" -q --type Q4_0 --act-order "$BATS_TEST_TMPDIR/s.wps"
    [ "$status" -eq 0 ]
    [ "$stderr" = "gptq: warning: --act-order acts on GPTQ's Hessians: without --hessian (RTN) it does nothing" ]
    run --separate-stderr "$BIN/gptq" -q --type Q4_0 --act-order --damp 0.1 -o "$BATS_TEST_TMPDIR/o.wts" "$BATS_TEST_TMPDIR/s.wps"
    [ "$status" -eq 0 ]
    [ "$stderr" = "gptq: warning: --act-order and --damp act on GPTQ's Hessians: without --hessian (RTN) they do nothing" ]
    # and the output is RTN's
    "$BIN/gptq" -q --type Q4_0 --rtn "$BATS_TEST_TMPDIR/s.wps" | cmp - "$BATS_TEST_TMPDIR/o.wts"
}

@test "gptq --type Q4_0 --gamma: one d per row run, every block valid" {
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --type Q4_0 --gamma --widen 1.5 -q > "$T/g.wps"
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --type Q4_0 -q > "$T/p.wps"
    "$BIN/ggufpack" < "$T/g.wps" > "$T/g.gguf"
    "$BIN/ggufcat" "$T/g.gguf" | "$BIN/tsinfo" | grep -q 'blk.0.attn_q.weight  *Q4_0'
    "$BIN/ggufcat" "$T/g.gguf" | "$BIN/tsinfo" | grep -q 'general.file_type  *u32 .* 2$'
    # attn_q's 64 rows of 64 weights, 2 blocks of 18 bytes each (d, an F16, first): rows whose
    # two d differ, and d that are 0, Inf or NaN (exponent bits all set). The checks above pass
    # for a gptq that ignores --gamma (a reviewer's find): without it every row's d differ.
    rows() {
        read -r off len < <(payload_of "$1" blk.0.attn_q.weight)
        od -An -v -w36 -t x2 -j "$off" -N "$len" "$1" |
            awk '{ n++; if ($1 != $10) d++; for (k = 1; k <= 10; k += 9) if ($k == "0000" || $k == "8000" || $k ~ /^[7f][c-f]/) bad++ }
                 END { print n, d + 0, bad + 0 }'
    }
    [ "$(rows "$T/g.wps")" = "64 0 0" ]
    [ "$(rows "$T/p.wps")" = "64 64 0" ]
}

@test "gptq --rtn [--imatrix] equals llama-quantize [--imatrix] byte for byte on a llama-shaped model with K-quant rows" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] && [ -x "$R/llama-imatrix" ] || skip "llama-quantize/llama-imatrix not built (make reftools)"
    d="$BATS_TEST_TMPDIR"
    "$TOOLS/mkllama" "$MODELS/stories260K-f32.gguf" "$d/synth.gguf" F16
    "$R/llama-imatrix" -m "$d/synth.gguf" -f "$DATA/text/groups_merged.txt" -c 128 --chunks 2 -t 1 \
        -o "$d/imat.gguf" > /dev/null 2>&1
    for t in Q4_K_M IQ4_XS Q6_K Q3_K_M; do
        "$R/llama-quantize" "$d/synth.gguf" "$d/ref.gguf" "$t" 1 > /dev/null 2>&1
        "$BIN/ggufcat" "$d/synth.gguf" | "$BIN/gptq" --rtn --ftype "$t" --quiet | "$BIN/ggufpack" > "$d/ours.gguf"
        cmp "$d/ref.gguf" "$d/ours.gguf"
        "$R/llama-quantize" --imatrix "$d/imat.gguf" "$d/synth.gguf" "$d/ref-i.gguf" "$t" 1 > /dev/null 2>&1
        "$BIN/ggufcat" "$d/synth.gguf" | "$BIN/gptq" --rtn --imatrix "$d/imat.gguf" --ftype "$t" --quiet \
            | "$BIN/ggufpack" > "$d/ours-i.gguf"
        cmp "$d/ref-i.gguf" "$d/ours-i.gguf"
    done
}

@test "gptq --pure, --output-tensor-type, --token-embedding-type, --leave-output-tensor equal llama-quantize's byte for byte" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] || skip "llama-quantize not built (make reftools)"
    "$TOOLS/mkllama" "$MODELS/stories260K-f32.gguf" "$T/synth.gguf" F16
    "$BIN/ggufcat" "$T/synth.gguf" > "$T/s.wps"
    local ft opts
    for ft in Q4_K_M Q3_K_S; do
        "$BIN/gptq" --rtn --ftype $ft -q < "$T/s.wps" | "$BIN/ggufpack" > "$T/plain.gguf"
        for opts in "--pure" "--output-tensor-type q8_0" "--token-embedding-type Q5_K" "--leave-output-tensor" \
                    "--output-tensor-type f16 --token-embedding-type q6_k --pure"; do
            # shellcheck disable=SC2086
            "$R/llama-quantize" $opts "$T/synth.gguf" "$T/ref.gguf" $ft 1 > /dev/null 2>&1
            # shellcheck disable=SC2086
            "$BIN/gptq" $opts --rtn --ftype $ft -q < "$T/s.wps" | "$BIN/ggufpack" > "$T/ours.gguf"
            cmp "$T/ref.gguf" "$T/ours.gguf" || { echo "$ft $opts differs"; return 1; }
            # and the option changed the model
            ! cmp -s "$T/plain.gguf" "$T/ours.gguf" || { echo "$ft $opts: no change"; return 1; }
        done
    done
    run "$BIN/gptq" --ftype Q4_0 --output-tensor-type Q4_Z "$T/s.wps"
    one_line_error "^gptq: --output-tensor-type: unknown type 'Q4_Z' \(gptq writes Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, F16, BF16, F32\)$"
    run "$BIN/gptq" --ftype Q4_0 --token-embedding-type "$T/s.wps"
    one_line_error "^gptq: --token-embedding-type: unknown type "
    # a type gptq has no blocks for, named for the tensor it would go to, before any output
    run "$BIN/gptq" --ftype Q4_K_M --output-tensor-type IQ3_S -o "$T/o.wps" "$T/s.wps"
    one_line_error "^gptq: $T/s.wps: tensor output.weight: type IQ3_S is not supported by gptq$"
    [ ! -e "$T/o.wps" ]
    # a type whose blocks do not fit the rows (stories260K's 64): before any output, where it
    # stopped the stream half written (llama-quantize aborts there too; a breaker's find)
    "$BIN/ggufcat" "$F32" > "$T/m.wps"
    run "$BIN/gptq" --ftype Q4_K_M --output-tensor-type Q4_K -o "$T/o.wps" "$T/m.wps"
    one_line_error "^gptq: $T/m.wps: tensor output.weight: row length 64 does not fit Q4_K \(blocks of 256 weights\)$"
    [ ! -e "$T/o.wps" ]
    run "$BIN/gptq" --ftype Q4_Z "$T/s.wps"
    one_line_error "^gptq: unknown --ftype 'Q4_Z' \(llama-quantize's presets, by name or number: F32, F16, Q4_0, Q4_1, Q8_0, .*, Q4_K_M, .*, IQ4_XS, .*\)$"
}

@test "gptq --tensor-type reads llama-quantize's regexes with its engine (std::regex: \\d, (?:, lazy) to the same file; one that decides nothing is said" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] || skip "llama-quantize not built (make reftools)"
    "$TOOLS/mkllama" "$MODELS/stories260K-f32.gguf" "$T/synth.gguf" F16
    # \d was the letter d: the override matched nothing, unsaid, and the file differed (a
    # llama.cpp user's trial)
    local ov=(--tensor-type 'blk\.\d+\.attn_v=q8_0' --tensor-type 'blk\.[\d]\.ffn_(?:up|gate)=q5_k' --tensor-type 'ffn_down.*?=q6_k')
    "$R/llama-quantize" "${ov[@]}" "$T/synth.gguf" "$T/ref.gguf" Q4_K_M 1 > /dev/null 2>&1
    "$BIN/ggufcat" "$T/synth.gguf" > "$T/s.wps"
    "$BIN/gptq" -q --rtn --ftype Q4_K_M "${ov[@]}" < "$T/s.wps" | "$BIN/ggufpack" > "$T/ours.gguf"
    cmp "$T/ref.gguf" "$T/ours.gguf"
    "$BIN/ggufcat" "$T/ours.gguf" | "$BIN/tsinfo" | grep -qE '^tensor +blk\.1\.attn_v\.weight +Q8_0 '
    # an override that decides no tensor: a typo, and one an earlier override took every match of
    run --separate-stderr "$BIN/gptq" --check --ftype Q4_K_M --tensor-type 'attn_w=q8_0' --tensor-type 'ffn=q5_k' \
        --tensor-type 'ffn_up=q8_0' "$T/synth.gguf"
    [ "$status" -eq 0 ]
    [ "${#stderr_lines[@]}" -eq 2 ]
    [ "${stderr_lines[0]}" = "gptq: warning: --tensor-type attn_w=q8_0: decides no tensor's type in $T/synth.gguf (it matches none that is quantized, or only ones an earlier --tensor-type, --output-tensor-type, --token-embedding-type or --leave-output-tensor decides)" ]
    [[ "${stderr_lines[1]}" == "gptq: warning: --tensor-type ffn_up=q8_0: decides no tensor's type in "* ]]
    # under a float preset, which applies none (as llama-quantize), said so (it went unsaid: a
    # breaker's find)
    run --separate-stderr "$BIN/gptq" --check --ftype F16 --tensor-type attn_v=q8_0 "$T/synth.gguf"
    [ "$status" -eq 0 ]
    [ "$stderr" = "gptq: warning: --tensor-type attn_v=q8_0: not applied: the preset's type is F16, and llama-quantize applies overrides to a quantizing preset only" ]
    # what std::regex refuses, refused in one line with its words, as llama-quantize refuses it
    run "$BIN/gptq" --rtn --ftype Q4_K_M --tensor-type 'attn_v{,2}=q8_0' "$T/s.wps"
    one_line_error "^gptq: --tensor-type attn_v\{,2\}=q8_0: bad tensor type regex 'attn_v\{,2\}': Invalid range in '\{\}' in regular expression$"
    ! "$R/llama-quantize" --tensor-type 'attn_v{,2}=q8_0' "$T/synth.gguf" "$T/no.gguf" Q4_K_M 1 > /dev/null 2>&1 || false
    # a regex too long for std::regex's recursive compiler: one line, its reason whole (90,000
    # bytes was a SIGSEGV without a word, in llama-quantize too; a long one's reason was cut off
    # the line: a re-tester's finds)
    local long
    long=$(head -c 90000 /dev/zero | tr '\0' a)
    run "$BIN/gptq" --check --ftype Q4_K_M --tensor-type "$long=q8_0" "$T/synth.gguf"
    one_line_error "^gptq: --tensor-type a{200}\.\.\.: bad tensor type regex 'a{200}\.\.\.': 90000 bytes, more than the 10000 taken \(std::regex's compiler recurses once an element, and a long regex overflowed the stack\)$"
    # --tensor-type-file, llama-quantize's: whitespace-separated entries, in order where it
    # stands (it was "unknown option": a llama.cpp user's trial)
    printf 'blk\\.\\d+\\.attn_v=q8_0\n  ffn_down=q6_k\tattn_q=Q5_K\n' > "$T/tt.txt"
    "$R/llama-quantize" --tensor-type ffn_up=q5_0 --tensor-type-file "$T/tt.txt" --tensor-type attn_q=q8_0 \
        "$T/synth.gguf" "$T/ref2.gguf" Q4_K_M 1 > /dev/null 2>&1
    "$BIN/gptq" -q --rtn --ftype Q4_K_M --tensor-type ffn_up=q5_0 --tensor-type-file "$T/tt.txt" --tensor-type attn_q=q8_0 \
        < "$T/s.wps" | "$BIN/ggufpack" > "$T/ours2.gguf"
    cmp "$T/ref2.gguf" "$T/ours2.gguf"
    ! cmp -s "$T/ref.gguf" "$T/ref2.gguf" || false
    "$BIN/ggufcat" "$T/ours2.gguf" | "$BIN/tsinfo" | grep -qE '^tensor +blk\.0\.attn_q\.weight +Q5_K '
    # its entries named by file in messages; a file that cannot be read, one line
    printf 'attn_q=q9\n' > "$T/bad.txt"
    run "$BIN/gptq" --rtn --ftype Q4_K_M --tensor-type-file "$T/bad.txt" "$T/s.wps"
    one_line_error "^gptq: --tensor-type-file $T/bad.txt: entry attn_q=q9: invalid quantization type 'q9'$"
    run "$BIN/gptq" --rtn --ftype Q4_K_M --tensor-type-file "$T/none.txt" "$T/s.wps"
    one_line_error "^gptq: --tensor-type-file $T/none.txt: No such file or directory$"
    run "$BIN/gptq" --rtn --ftype Q4_K_M --tensor-type-file "$T" "$T/s.wps"
    one_line_error "^gptq: --tensor-type-file $T: Is a directory$"
    printf 'zzz=q8_0' > "$T/z.txt"
    run --separate-stderr "$BIN/gptq" --check --ftype Q4_K_M --tensor-type-file "$T/z.txt" "$T/synth.gguf"
    [ "$status" -eq 0 ]
    [ "$stderr" = "gptq: warning: --tensor-type-file $T/z.txt: entry zzz=q8_0: decides no tensor's type in $T/synth.gguf (it matches none that is quantized, or only ones an earlier --tensor-type, --output-tensor-type, --token-embedding-type or --leave-output-tensor decides)" ]
    # a file of at most 64 MiB is read (one a little under it was "more than 64 MiB": a breaker's
    # find), a larger one refused
    head -c $((64 * 1024 * 1024 - 100)) /dev/zero | tr '\0' ' ' > "$T/big.txt"
    run --separate-stderr "$BIN/gptq" --check --ftype Q4_K_M --tensor-type-file "$T/big.txt" "$T/synth.gguf"
    [ "$status" -eq 0 ]
    printf '%200s' 'x=q8_0' >> "$T/big.txt"
    run "$BIN/gptq" --check --ftype Q4_K_M --tensor-type-file "$T/big.txt" "$T/synth.gguf"
    one_line_error "^gptq: --tensor-type-file $T/big.txt: more than 64 MiB, not a list of REGEX=TYPE entries$"
    rm "$T/big.txt"
    # llama-quantize's options gptq lacks: named so (they were "unknown option")
    local o
    for o in --dry-run --keep-split --include-weights=x --override-kv --prune-layers --max-buffer-size --exclude-weights; do
        run "$BIN/gptq" --rtn --ftype Q4_K_M "$o" "$T/s.wps"
        one_line_error "^gptq: ${o%%=*}: llama-quantize's option, which gptq does not take \(gptq\(1\) lists the ones it does\)$"
    done
}

@test "gptq --allow-requantize equals llama-quantize --allow-requantize byte for byte, from each block type gptq reads" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] || skip "llama-quantize not built (make reftools)"
    "$TOOLS/mkllama" "$MODELS/stories260K-f32.gguf" "$T/synth.gguf" F16
    # from every type gptq dequantizes, into another (llama.cpp's to_float against blocks.c's)
    for pair in Q6_K:Q4_K_M Q4_K_M:Q3_K_S Q5_K_S:Q2_K Q2_K:Q4_K_S Q3_K_M:Q5_0 Q8_0:IQ4_XS IQ4_XS:Q4_0 \
                Q4_0:Q5_K_M Q4_1:Q6_K Q5_0:IQ4_NL Q5_1:Q8_0 IQ4_NL:Q4_1; do
        from=${pair%:*} to=${pair#*:}
        [ -s "$T/$from.gguf" ] || "$R/llama-quantize" "$T/synth.gguf" "$T/$from.gguf" "$from" 1 > /dev/null 2>&1
        "$R/llama-quantize" --allow-requantize "$T/$from.gguf" "$T/ref.gguf" "$to" 1 > /dev/null 2>&1
        "$BIN/ggufcat" "$T/$from.gguf" | "$BIN/gptq" --allow-requantize --rtn --ftype "$to" --quiet \
            | "$BIN/ggufpack" > "$T/ours.gguf"
        cmp "$T/ref.gguf" "$T/ours.gguf" || { echo "$from -> $to differs"; return 1; }
        # the option was needed: the tensors changed type
        run "$BIN/gptq" --check --ftype "$to" "$T/$from.gguf"
        one_line_error "^gptq: $T/$from.gguf: requantizing from type [A-Z0-9_]+ is disabled \(tensor [a-z0-9_.]+; --allow-requantize allows it, at a cost in quality: quantize the F32, F16 or BF16 model\)$"
    done
    # a type gptq has no dequantizer for: refused before any output, naming the types it reads
    "$R/llama-quantize" "$T/synth.gguf" "$T/tq2.gguf" TQ2_0 1 > /dev/null 2>&1
    "$BIN/ggufcat" "$T/tq2.gguf" > "$T/tq2.wps"
    run "$BIN/gptq" --allow-requantize --rtn --ftype Q4_K_M --quiet -o "$T/tq.wps" "$T/tq2.wps"
    one_line_error "^gptq: $T/tq2.wps: tensor blk.0.attn_k.weight: cannot quantize from TQ2_0 \(F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS only\)$"
    [ ! -e "$T/tq.wps" ]
}

@test "gptq --imatrix on stories260K equals llama-quantize --imatrix byte for byte (metadata included)" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] && [ -x "$R/llama-imatrix" ] || skip "llama-quantize/llama-imatrix not built (make reftools)"
    d="$BATS_TEST_TMPDIR"
    m="$MODELS/stories260K-f32.gguf"
    "$R/llama-imatrix" -m "$m" -f "$DATA/text/groups_merged.txt" -c 128 --chunks 4 -t 1 -o "$d/imat.gguf" > /dev/null 2>&1
    for t in Q4_0 Q8_0 IQ4_NL; do
        "$R/llama-quantize" --imatrix "$d/imat.gguf" "$m" "$d/ref.gguf" "$t" 1 > /dev/null 2>&1
        "$BIN/ggufcat" "$m" | "$BIN/gptq" --rtn --imatrix "$d/imat.gguf" --ftype "$t" --quiet | "$BIN/ggufpack" > "$d/ours.gguf"
        cmp "$d/ref.gguf" "$d/ours.gguf"
    done
    "$BIN/ggufcat" "$d/ours.gguf" | "$BIN/tsinfo" | grep -E '^kv +quantize.imatrix.entries_count +u32 .* 35$'
    # given as --hessian, it is named for what it is (it was "a GGUF model"; a breaker's find)
    run --separate-stderr "$BIN/gptq" --ftype Q8_0 --quiet --hessian "$d/imat.gguf" -o "$d/h.wts" "$m"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/imat.gguf: an importance matrix (llama-imatrix), not Hessians: give it with --imatrix; --hessian takes the file that hessian -o wrote" ]
    [ ! -e "$d/h.wts" ]
    # and its legacy imatrix.dat (it was "not a wpack stream (bad magic)": a new user's trial)
    "$R/llama-imatrix" -m "$m" -f "$DATA/text/groups_merged.txt" -c 128 --chunks 4 -t 1 --output-format dat \
        -o "$d/imat.dat" > /dev/null 2>&1
    run --separate-stderr "$BIN/gptq" --ftype Q8_0 --quiet --hessian "$d/imat.dat" -o "$d/h.wts" "$m"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/imat.dat: an importance matrix (llama-imatrix), not Hessians: give it with --imatrix; --hessian takes the file that hessian -o wrote" ]
    [ ! -e "$d/h.wts" ]
    # given as the model, to --check or a run (both were "bad magic": a breaker's find); one cut
    # short says where, as the loader does
    run --separate-stderr "$BIN/gptq" --check --ftype Q8_0 "$d/imat.dat"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/imat.dat: an importance matrix (llama-imatrix's imatrix.dat), not a model: it goes to gptq --imatrix (IMATRIX=FILE for make model and lazyweights)" ]
    run --separate-stderr "$BIN/gptq" --rtn --ftype Q8_0 -o "$d/h.wts" "$d/imat.dat"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/imat.dat: an importance matrix (llama-imatrix's imatrix.dat), not a model: it goes to gptq --imatrix (IMATRIX=FILE for make model and lazyweights)" ]
    head -c 3000 "$d/imat.dat" > "$d/cut.dat"
    for a in "--check --ftype Q8_0 $d/cut.dat" "--ftype Q8_0 --quiet --hessian $d/cut.dat -o $d/h.wts $m"; do
        run --separate-stderr "$BIN/gptq" $a
        [ "$status" -eq 1 ]
        [[ $stderr == "gptq: $d/cut.dat: not GGUF, so read as a legacy imatrix.dat: entry "*" runs past the end of the file "* ]]
    done
    [ ! -e "$d/h.wts" ]
}

@test "gptq --imatrix with a legacy imatrix.dat equals llama-quantize --imatrix on the same .dat byte for byte (K-quants)" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] && [ -x "$R/llama-imatrix" ] || skip "llama-quantize/llama-imatrix not built (make reftools)"
    d="$BATS_TEST_TMPDIR"
    "$TOOLS/mkllama" "$MODELS/stories260K-f32.gguf" "$d/synth.gguf" F16
    "$R/llama-imatrix" -m "$d/synth.gguf" -f "$DATA/text/groups_merged.txt" -c 128 --chunks 2 -t 1 \
        --output-format dat -o "$d/imat.dat" > /dev/null 2>&1
    # the legacy format, not GGUF (llama-imatrix honours --output-format)
    ! cmp -s -n 4 <(printf GGUF) "$d/imat.dat" || false
    cd "$d"
    for t in Q4_K_M IQ4_XS; do
        "$R/llama-quantize" --imatrix imat.dat synth.gguf ref.gguf "$t" 1 > /dev/null 2>&1
        "$BIN/ggufcat" synth.gguf | "$BIN/gptq" --rtn --imatrix imat.dat --ftype "$t" --quiet \
            | "$BIN/ggufpack" > ours.gguf
        cmp ref.gguf ours.gguf || { echo "differs: $t"; return 1; }
        # and the imatrix changed the result (the comparison is not vacuous)
        "$R/llama-quantize" synth.gguf plain.gguf "$t" 1 > /dev/null 2>&1
        ! cmp -s plain.gguf ours.gguf || false
    done
    "$BIN/ggufcat" ours.gguf | "$BIN/tsinfo" > kv.txt
    grep -E '^kv +quantize.imatrix.file +string .* "imat.dat"$' kv.txt
    # the dataset is the text's path as given (tsinfo cuts a long value short: its size, 8 + length,
    # is checked; in a clean clone the path was longer and the value ended in "...")
    grep -E "^kv +quantize.imatrix.dataset +string +- +$(( 8 + ${#DATA} + 23 )) +\"" kv.txt
    grep -E '^kv +quantize.imatrix.entries_count +u32 .* 14$' kv.txt  # 2 layers x 7
    grep -E '^kv +quantize.imatrix.chunks_count +u32 .* 2$' kv.txt
}

@test "gptq --imatrix against the plan, before any output and in --check, as llama-quantize: a missing entry a type needs, a misfit, token_embd's misfit" {
    # a breaker's finds: --check passed a misfit the run refused after writing 197,568 bytes;
    # Q2_K_S built without an entry llama-quantize requires; token_embd's misfit stopped gptq
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] && [ -x "$R/llama-imatrix" ] || skip "llama-quantize/llama-imatrix not built (make reftools)"
    cd "$BATS_TEST_TMPDIR"
    "$TOOLS/mkllama" "$MODELS/stories260K-f32.gguf" synth.gguf F16
    "$R/llama-imatrix" -m synth.gguf -f "$DATA/text/groups_merged.txt" -c 128 --chunks 1 -t 1 \
        --output-format dat -o imat.dat > /dev/null 2>&1
    python3 - <<'PY'
import struct
d = open('imat.dat', 'rb').read()
n, p, ents = struct.unpack_from('<i', d, 0)[0], 4, []
for _ in range(n):
    l = struct.unpack_from('<i', d, p)[0]; name = d[p + 4:p + 4 + l]; p += 4 + l
    ncall, nval = struct.unpack_from('<ii', d, p); p += 8
    ents.append([name, ncall, nval, d[p:p + 4 * nval]]); p += 4 * nval
def write(fn, es):
    out = struct.pack('<i', len(es))
    for name, ncall, nval, vals in es:
        out += struct.pack('<i', len(name)) + name + struct.pack('<ii', ncall, nval) + vals
    open(fn, 'wb').write(out + d[p:])
write('missing.dat', [e for e in ents if e[0] != b'blk.0.attn_k.weight'])
write('wrong.dat', [e if e[0] != b'blk.0.attn_k.weight' else [e[0], e[1], e[2] // 2, e[3][:2 * e[2]]] for e in ents])
write('embd.dat', ents + [[b'token_embd.weight', 1, 3, struct.pack('<3f', 1, 2, 3)]])
PY
    "$BIN/ggufcat" synth.gguf > synth.wts
    ! "$R/llama-quantize" --imatrix missing.dat synth.gguf ref.gguf Q2_K_S 1 > /dev/null 2>&1 || false
    for a in "--check synth.gguf" "-o out.wts synth.wts"; do
        run "$BIN/gptq" --rtn --ftype Q2_K_S --imatrix missing.dat $a
        one_line_error '^gptq: missing\.dat: no entry for tensor blk\.0\.attn_k\.weight, which type Q2_K needs \(llama-quantize: missing importance matrix in a very low-bit quantization\)$'
        run "$BIN/gptq" --rtn --ftype Q4_K_M --imatrix wrong.dat $a
        one_line_error '^gptq: wrong\.dat: imatrix entry blk\.0\.attn_k\.weight does not fit the tensor: the entry has 128 values, the tensor.s rows are 256 long$'
    done
    [ ! -e out.wts ]
    "$R/llama-quantize" --imatrix embd.dat synth.gguf ref.gguf Q4_K_M 1 > /dev/null 2>&1
    "$BIN/gptq" --rtn --ftype Q4_K_M --imatrix embd.dat --quiet synth.wts 2> err | "$BIN/ggufpack" > ours.gguf
    cmp ref.gguf ours.gguf
    [ "$(cat err)" = "gptq: warning: embd.dat: imatrix entry token_embd.weight does not fit the tensor: the entry has 3 values, the tensor's rows are 256 long: quantized without it, as llama-quantize does" ]
}

@test "gptq: a tensor with a dimension of 0 is one line in --check and in a run (it died of SIGFPE)" {
    cd "$BATS_TEST_TMPDIR"
    python3 -c "
import struct
s = lambda x: struct.pack('<Q', len(x)) + x
h = b'GGUF' + struct.pack('<IQQ', 3, 1, 1) + s(b'general.architecture') + struct.pack('<I', 8) + s(b'llama')
h += s(b'blk.0.attn_q.weight') + struct.pack('<IQQIQ', 2, 0, 256, 1, 0)
open('z.gguf', 'wb').write(h + b'\0' * (-len(h) % 32))"
    run "$BIN/gptq" --check --ftype Q4_0 z.gguf
    one_line_error '^gptq: z\.gguf: tensor blk\.0\.attn_q\.weight: a dimension is 0: no weights to quantize$'
    "$BIN/ggufcat" z.gguf > z.wts
    run "$BIN/gptq" --ftype Q4_0 --rtn -o out.wts z.wts
    one_line_error '^gptq: z\.wts: tensor blk\.0\.attn_q\.weight: a dimension is 0: no weights to quantize$'
    [ -z "$(ls | grep out.wts)" ]
}

@test "gptq --imatrix: imatrix.dat told by content, its trailer read as llama-quantize reads it (stories260K, Q4_0)" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-quantize" ] && [ -x "$R/llama-imatrix" ] || skip "llama-quantize/llama-imatrix not built (make reftools)"
    cd "$BATS_TEST_TMPDIR"
    "$R/llama-imatrix" -m "$F32" -f "$DATA/text/groups_merged.txt" -c 128 --chunks 3 -t 1 \
        --output-format dat -o imat.dat > /dev/null 2>&1
    n=$(stat -c %s imat.dat)
    tail=$(( 8 + $(printf '%s' "$DATA/text/groups_merged.txt" | wc -c) ))
    cp imat.dat dat-named.gguf                              # a .dat under a .gguf name
    head -c $(( n - tail + 2 )) imat.dat > cut-trailer.dat  # trailer cut inside its chunk count
    head -c $(( n - tail )) imat.dat > no-trailer.dat       # no trailer: no dataset, no chunks_count
    { cat imat.dat; printf 'junk'; } > junk.dat             # bytes after the trailer
    for f in dat-named.gguf cut-trailer.dat no-trailer.dat junk.dat; do
        "$R/llama-quantize" --imatrix "$f" "$F32" ref.gguf Q4_0 1 > /dev/null 2>&1
        "$BIN/ggufcat" "$F32" | "$BIN/gptq" --rtn --imatrix "$f" --ftype Q4_0 --quiet | "$BIN/ggufpack" > ours.gguf
        cmp ref.gguf ours.gguf || { echo "differs: $f"; return 1; }
        "$BIN/ggufcat" ours.gguf | "$BIN/tsinfo" > "kv-$f.txt"
    done
    grep -E '^kv +quantize.imatrix.chunks_count +u32 .* 3$' kv-dat-named.gguf.txt
    grep -E '^kv +quantize.imatrix.chunks_count +u32 .* 3$' kv-junk.dat.txt
    ! grep -E 'quantize.imatrix.(dataset|chunks_count)' kv-no-trailer.dat.txt || false
    ! grep -E 'quantize.imatrix.dataset' kv-cut-trailer.dat.txt || false
    grep -E '^kv +quantize.imatrix.entries_count +u32 .* 35$' kv-cut-trailer.dat.txt
}

@test "gptq --imatrix: a truncated or forged imatrix.dat is one line naming the file, before any output" {
    R="${REF_BUILD:-$HOME/.cache/wpack/llama.cpp-build}/bin"
    [ -x "$R/llama-imatrix" ] || skip "llama-imatrix not built (make reftools)"
    cd "$BATS_TEST_TMPDIR"
    "$R/llama-imatrix" -m "$F32" -f "$DATA/text/groups_merged.txt" -c 128 --chunks 1 -t 1 \
        --output-format dat -o imat.dat > /dev/null 2>&1
    "$BIN/ggufcat" "$F32" > m.wts
    head -c 1000 imat.dat > cut.dat
    run "$BIN/gptq" --rtn --ftype Q4_0 --imatrix cut.dat -o out.wts m.wts
    one_line_error '^gptq: cut\.dat: not GGUF, so read as a legacy imatrix\.dat: entry [0-9]+ of 35 \(blk\.[0-9]\.[a-z_]+\.weight\): value count [0-9]+ runs past the end of the file \([0-9]+ bytes left\)$'
    [ ! -e out.wts ]
    # the first entry's value count forged to 2^31-1: refused, nothing of that size allocated
    len=$(od -An -t d4 -j 4 -N 4 imat.dat | tr -d ' ')
    cp imat.dat huge.dat
    patch_bytes huge.dat $(( 4 + 4 + len + 4 )) "$(le32 2147483647)"
    run bash -c "ulimit -v 1000000; exec '$BIN/gptq' --rtn --ftype Q4_0 --imatrix huge.dat m.wts > /dev/null"
    one_line_error '^gptq: huge\.dat: not GGUF, so read as a legacy imatrix\.dat: entry 1 of 35 \(blk\.0\.attn_k\.weight\): value count 2147483647 runs past the end of the file'
    # a negative name length
    cp imat.dat neg.dat
    patch_bytes neg.dat 4 "$(le32 -5)"
    run "$BIN/gptq" --rtn --ftype Q4_0 --imatrix neg.dat m.wts
    one_line_error '^gptq: neg\.dat: not GGUF, so read as a legacy imatrix\.dat: entry 1 of 35: name length -5 is negative'
    # a NaN in any entry refuses the file, as llama-quantize does (gptq checked only the entries it
    # used); F16 uses none, --check reads no weights
    cp imat.dat nan.dat
    patch_bytes nan.dat $(( 4 + 4 + len + 4 + 4 + 8 )) '\x00\x00\xc0\x7f'
    for a in "--type F16 -o out.wts m.wts" "--check --ftype Q4_0 $F32"; do
        run "$BIN/gptq" --rtn --imatrix nan.dat $a
        one_line_error '^gptq: nan\.dat: imatrix entry blk\.0\.attn_k\.weight has a non-finite importance \(nan at 2\): llama-quantize refuses such a file$'
    done
    [ ! -e out.wts ]
}

@test "gptq: llama-imatrix's GGUF as the model, Hessians as --imatrix, are named; a GGUF of no weight matrix is not a model" {
    cd "$BATS_TEST_TMPDIR"
    imatrix_py
    python3 - <<'PY'
import struct
from imx import gguf, s
gguf('im.gguf', [(b'blk.0.attn_q.weight', [1.0] * 64, 10.0), (b'blk.0.attn_k.weight', [2.0] * 64, 10.0)])
head = b'GGUF' + struct.pack('<IQQ', 3, 1, 0) + s(b'output_norm.weight') + struct.pack('<IQIQ', 1, 64, 0, 0)
open('norm.gguf', 'wb').write(head + bytes(-len(head) % 32) + struct.pack('<64f', *([1.0] * 64)))
PY
    # (it was "no weight matrix to quantize among its 4 tensors": a new user's trial)
    run "$BIN/gptq" --check --ftype Q8_0 im.gguf
    one_line_error "^gptq: im.gguf: an importance matrix \\(llama-imatrix's output\\), not a model: it goes to gptq --imatrix \\(IMATRIX=FILE for make model and lazyweights\\)$"
    run sh -c "'$BIN/ggufcat' im.gguf | '$BIN/gptq' --rtn --ftype Q8_0 -o out.wps"
    one_line_error "^gptq: stdin: an importance matrix \\(llama-imatrix's output\\), not a model"
    [ ! -e out.wps ]
    # a model as --imatrix is named; with the importance matrix as the model, the two are
    # said to look swapped (it was "missing imatrix metadata": a note's left alone)
    cp "$F32" model.gguf
    run "$BIN/gptq" --check --ftype Q8_0 --imatrix model.gguf im.gguf
    one_line_error "^gptq: model.gguf: a model \\(general.architecture llama\\), not an importance matrix \\(llama-imatrix -m MODEL -f TEXT makes one\\); im.gguf is one: the model and the importance matrix look swapped$"
    run "$BIN/gptq" --rtn --ftype Q8_0 --imatrix model.gguf -o out.wps "$F32"
    one_line_error "^gptq: model.gguf: a model \\(general.architecture llama\\), not an importance matrix \\(llama-imatrix -m MODEL -f TEXT makes one\\)$"
    [ ! -e out.wps ]
    run "$BIN/gptq" --check --ftype Q8_0 norm.gguf
    one_line_error "^gptq: norm.gguf: no weight matrix to quantize among its 1 tensors \\(2-D \\*.weight tensors, as llama-quantize takes them\\): not a model$"
    # Hessians as --imatrix are named, another stream is one (it was "a wpack stream" both: a
    # new user's trial)
    [ -x "$UNIT" ] || skip "build/unit/test_gptq not built"
    "$UNIT" --hessians h.wts
    run "$BIN/gptq" --rtn --ftype Q8_0 --imatrix h.wts -o out.wps "$F32"
    one_line_error "^gptq: h.wts: Hessians \\(hessian's output\\), not an imatrix: they go to gptq --hessian$"
    "$BIN/ggufcat" "$F32" > s.wps
    run "$BIN/gptq" --rtn --ftype Q8_0 --imatrix s.wps -o out.wps "$F32"
    one_line_error "^gptq: s.wps: a wpack stream, not an imatrix \\(llama-imatrix writes GGUF or imatrix.dat\\)$"
    [ ! -e out.wps ]
    # Hessians' head through a FIFO, its writer done: said, not read a second time (that hung
    # for good: a breaker's find)
    mkfifo ff
    head -c 3000 h.wts > ff &
    run timeout 20 "$BIN/gptq" --rtn --ftype Q8_0 --imatrix ff -o out.wps "$F32"
    one_line_error "^gptq: ff: a wpack stream, not an imatrix \\(llama-imatrix writes GGUF or imatrix.dat\\)$"
    wait
    # a GGUF of no tensors at all is no model (an empty GGUF made a 128-byte "model", exit 0;
    # llama-quantize refuses it: a breaker's find)
    printf 'GGUF\003\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' > e.gguf
    run "$BIN/gptq" --check --ftype Q8_0 e.gguf
    one_line_error "^gptq: e.gguf: no tensors: not a model$"
    run sh -c "'$BIN/ggufcat' e.gguf | '$BIN/gptq' --rtn --ftype Q8_0 -o out.wps"
    one_line_error "^gptq: stdin: no tensors: not a model$"
    [ ! -e out.wps ]
    # Hessians given as the model, --hessian left out: named, with the way on (it was "no
    # tensors: not a model": a new user's find)
    "$UNIT" --hessians hh.wts
    run "$BIN/gptq" --rtn --ftype Q8_0 -o out.wps hh.wts
    one_line_error "^gptq: hh.wts: Hessians \(hessian's output\), not a model: they go to gptq --hessian hh.wts$"
    [ ! -e out.wps ]
}

@test "gptq --imatrix: a negative importance (imatrix.dat value, GGUF in_sum2 with a count) is one line naming the file, before any output" {
    cd "$BATS_TEST_TMPDIR"
    "$BIN/ggufcat" "$F32" > m.wts
    # llama-quantize takes these, and a third of every matrix's columns at -1 made stories260K's
    # Q4_0 perplexity 14757 (7.4 with them at +1): importance is a mean of squares, never < 0
    imatrix_py
    python3 - <<'PY'
import struct
from imx import gguf
vals = [-1.0 if j % 3 == 1 else 1.0 for j in range(64)]
nm = b'blk.0.attn_q.weight'
open('neg.dat', 'wb').write(struct.pack('<ii', 1, len(nm)) + nm + struct.pack('<ii', 10, 64)
                            + struct.pack('<64f', *vals))
gguf('neg.gguf', [(nm, vals, 10.0)])
gguf('neg-count0.gguf', [(nm, vals, 0.0)])
PY
    for a in "--type F16 -o out.wts m.wts" "--ftype Q4_0 -o out.wts m.wts" "--check --ftype Q4_0 $F32"; do
        run "$BIN/gptq" --rtn --imatrix neg.dat $a
        one_line_error '^gptq: neg\.dat: imatrix entry blk\.0\.attn_q\.weight has a negative importance \(-0\.1 at 1\): importance is a mean of squared activations$'
        run "$BIN/gptq" --rtn --imatrix neg.gguf $a
        one_line_error '^gptq: neg\.gguf: imatrix entry blk\.0\.attn_q\.weight has a negative importance \(-0\.1 at 1\): importance is a mean of squared activations$'
    done
    [ ! -e out.wts ]
    # a count of 0 makes the importance 1 whatever the sums hold, as llama-quantize: taken
    "$BIN/gptq" --rtn --imatrix neg-count0.gguf --ftype Q4_0 --quiet -o out.wts m.wts
    [ -s out.wts ]
}

@test "gptq --imatrix: a GGUF entry named by the suffix alone (.in_sum2, .counts) counts as llama-quantize counts it" {
    # its name test wanted a longer name: entries_count was 1 where llama-quantize writes 2 (a breaker's find)
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    cd "$BATS_TEST_TMPDIR"
    imatrix_py
    python3 - <<'PY'
from imx import gguf
vals = [1.0 + (j % 5) for j in range(64)]
gguf('e.gguf', [(b'blk.0.attn_q.weight', vals, 10.0), (b'', vals, 10.0)])
PY
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --rtn --imatrix e.gguf --ftype Q4_0 -q | "$BIN/ggufpack" > ours.gguf
    "$QUANTIZE" --imatrix e.gguf "$F32" theirs.gguf Q4_0 1 > q.log 2>&1
    "$BIN/ggufcat" ours.gguf | "$BIN/tsinfo" - | grep -x 'kv  *quantize.imatrix.entries_count  *u32  *-  *4  *2'
    cmp ours.gguf theirs.gguf
}

@test "gptq --imatrix: a block scale that overflows fp16 through huge importances says the imatrix may be the cause" {
    # it blamed the weights alone (3e38 importances in an imatrix.dat: a breaker's find)
    cd "$BATS_TEST_TMPDIR"
    python3 - <<'PY'
import struct
nm = b'blk.0.attn_q.weight'
vals = [3e38 if j % 2 else 1.0 for j in range(64)]
open('huge.dat', 'wb').write(struct.pack('<ii', 1, len(nm)) + nm + struct.pack('<ii', 10, 64) + struct.pack('<64f', *vals))
PY
    "$BIN/ggufcat" "$F32" > m.wts
    run "$BIN/gptq" --rtn --imatrix huge.dat --ftype Q4_0 -q -o out.wts m.wts
    one_line_error '^gptq: tensor blk\.0\.attn_q\.weight: a block scale does not fit fp16 \(weights too large for Q4_0, or importances too large in its imatrix entry\)$'
    [ ! -e out.wts ]
    "$BIN/gptq" --rtn --ftype Q4_0 -q -o out.wts m.wts
}

@test "gptq: a --hessian file without Hessians and an unwritable -o fail before any work" {
    "$BIN/ggufcat" "$MODELS/stories260K-f16.gguf" > "$BATS_TEST_TMPDIR/f16.wts"
    run "$BIN/gptq" --type Q8_0 --hessian "$BATS_TEST_TMPDIR/f16.wts" "$BATS_TEST_TMPDIR/f16.wts"
    [ "$status" -ne 0 ]
    [[ "$output" =~ "f16.wts: no Hessian records" ]]
    run "$BIN/gptq" --type Q8_0 --quiet -o /nonexistent/x "$BATS_TEST_TMPDIR/f16.wts"
    [ "$status" -ne 0 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" =~ "/nonexistent/x: cannot write into /nonexistent/" ]]
}

@test "gptq: a piped or zstd'd --hessian file is refused before any output (it said 'not a wpack stream' at the first Hessian)" {
    d=$BATS_TEST_TMPDIR
    "$UNIT" --hessians "$d/h.wts"
    zstd -q "$d/h.wts" -o "$d/h.wts.zst"
    run --separate-stderr sh -c "'$BIN/ggufcat' '$F32' | '$BIN/gptq' --type Q8_0 --quiet --hessian '$d/h.wts.zst' -o '$d/g.wts'"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/h.wts.zst: a zstd-compressed Hessian file: gptq reads the Hessians by offset (zstd -d it first)" ]
    "$BIN/ggufcat" -o "$d/m.wts" "$F32"
    run --separate-stderr sh -c "'$BIN/gptq' --type Q8_0 --quiet --hessian /dev/stdin -o '$d/g.wts' '$d/m.wts' < '$d/h.wts'"
    [ "$status" -eq 0 ]   # a redirected file is seekable
    [ -s "$d/g.wts" ]
    run --separate-stderr sh -c "cat '$d/h.wts' | '$BIN/gptq' --type Q8_0 --quiet --hessian /dev/stdin -o '$d/g2.wts' '$d/m.wts'"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: /dev/stdin: not a seekable file: gptq reads the Hessians by offset (give the file that hessian -o wrote)" ]
    [ ! -e "$d/g2.wts" ]
    # the model as --hessian: it said "not a wpack stream (a GGUF file: read it with ggufcat)"
    run --separate-stderr "$BIN/gptq" --type Q8_0 --quiet --hessian "$F32" -o "$d/g3.wts" "$d/m.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $F32: a GGUF model, not Hessians: --hessian takes the file that hessian -o wrote" ]
    [ ! -e "$d/g3.wts" ]
    # the calibration text (it said "not a wpack stream (bad magic)": a new user's find), its name
    # quoted in the command that makes the Hessians
    printf 'Once upon a time\n' > "$d/my calib.txt"
    run --separate-stderr "$BIN/gptq" --type Q8_0 --quiet --hessian "$d/my calib.txt" -o "$d/g3.wts" "$d/m.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/my calib.txt: a text, not Hessians: hessian -m MODEL.gguf -f '$d/my calib.txt' -o m.hess computes them from it; --hessian takes the file that hessian -o wrote" ]
    [ ! -e "$d/g3.wts" ]
    # a binary file of no known kind keeps the reader's message, without a NUL byte too, and so
    # does a Hessian file cut in its magic (both were "a text": a breaker's find)
    printf '\001\002abc' > "$d/rand.bin"
    run --separate-stderr "$BIN/gptq" --type Q8_0 --quiet --hessian "$d/rand.bin" -o "$d/g3.wts" "$d/m.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/rand.bin: not a wpack stream (bad magic)" ]
    head -c 6 "$d/h.wts" > "$d/cut.hess"
    run --separate-stderr "$BIN/gptq" --type Q8_0 --quiet --hessian "$d/cut.hess" -o "$d/g3.wts" "$d/m.wts"
    [ "$status" -eq 1 ]
    [[ "$stderr" == "gptq: $d/cut.hess: truncated stream: "* ]]
    # a missing file, with the reason (it said "cannot open Hessian file" alone: a fresh user's find)
    run --separate-stderr "$BIN/gptq" --check --type Q8_0 --hessian "$d/none.hess" "$d/m.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/none.hess: cannot open Hessian file: No such file or directory" ]
}

@test "with hessian's Hessians, GPTQ's tr(ΔW·H·ΔWᵀ) is below RTN's for every quantized stories260K matrix" {
    d="$BATS_TEST_TMPDIR"
    m="$MODELS/stories260K-f32.gguf"
    "$BIN/hessian" --model "$m" --text "$DATA/text/groups_merged.txt" --ctx 128 --chunks 8 --threads 1 -o "$d/h.hess" 2>/dev/null
    for t in Q4_0 Q8_0 IQ4_NL; do
        "$BIN/ggufcat" "$m" | "$BIN/gptq" --ftype "$t" --hessian "$d/h.hess" --quiet | "$BIN/ggufpack" > "$d/g.gguf"
        "$BIN/ggufcat" "$m" | "$BIN/gptq" --ftype "$t" --rtn --quiet | "$BIN/ggufpack" > "$d/r.gguf"
        "$TOOLS/hloss" "$m" "$d/g.gguf" "$d/h.hess" | sort > "$d/g.loss"
        "$TOOLS/hloss" "$m" "$d/r.gguf" "$d/h.hess" | sort > "$d/r.loss"
        join "$d/g.loss" "$d/r.loss" > "$d/both"
        [ "$(wc -l < "$d/both")" -eq 31 ]        # 5 layers x 6 (ffn_down stays F16) + output
        worse=$(awk '$2 >= $3' "$d/both")
        [ -z "$worse" ] || { echo "$t: GPTQ not below RTN: $worse"; false; }
        awk -v t="$t" '{ s += $2 / $3 } END { printf "# %s: GPTQ/RTN mean %.3f\n", t, s / NR }' "$d/both" >&3
    done
}

@test "a mixture of experts: each expert's matrix GPTQ'd with its own H of hessian's record (tr(ΔW·H·ΔWᵀ) below RTN's for every expert), llama.cpp runs it; an expert no token reached RTN, said; the experts' counts must agree" {
    d="$BATS_TEST_TMPDIR"
    cal="$DATA/text/groups_merged.txt"
    # mkllama's Mixtral form of the llama architecture: 4 experts, 2 used, 2 layers
    "$TOOLS/mkllama" "$F32" "$d/moe.gguf" F32 256,512,2,4,2,512,4,2
    "$BIN/hessian" --model "$d/moe.gguf" --text "$cal" --ctx 128 --chunks 4 --threads 1 -o "$d/moe.hess" 2>/dev/null
    "$BIN/ggufcat" "$d/moe.gguf" | "$BIN/gptq" --ftype Q4_K_M --hessian "$d/moe.hess" 2> "$d/g.err" | "$BIN/ggufpack" > "$d/g.gguf"
    [ "$(grep -c '_exps\.weight .* (gptq, 4 experts) ' "$d/g.err")" -eq 6 ]
    grep -q 'blk.1.ffn_down_exps.weight       F32 -> Q6_K (gptq, 4 experts) ' "$d/g.err"
    "$BIN/ggufcat" "$d/moe.gguf" | "$BIN/gptq" --ftype Q4_K_M --rtn --quiet | "$BIN/ggufpack" > "$d/r.gguf"
    "$TOOLS/hloss" "$d/moe.gguf" "$d/g.gguf" "$d/moe.hess" | grep '_exps' | sort > "$d/g.loss"
    "$TOOLS/hloss" "$d/moe.gguf" "$d/r.gguf" "$d/moe.hess" | grep '_exps' | sort > "$d/r.loss"
    join "$d/g.loss" "$d/r.loss" > "$d/both"
    [ "$(wc -l < "$d/both")" -eq 24 ]      # 2 layers x 3 tensors x 4 experts
    grep -q '^blk\.0\.ffn_up_exps\.weight\[3\] ' "$d/both"
    worse=$(awk '$2 >= $3' "$d/both")
    [ -z "$worse" ] || { echo "GPTQ not below RTN: $worse"; false; }
    awk '{ s += $2 / $3 } END { printf "# experts: GPTQ/RTN mean %.3f\n", s / NR }' "$d/both" >&3
    # hloss reads F32 records as gptq does (it read their floats as doubles, past the payload's
    # end: a breaker's find), and refuses an original it cannot read (it printed nothing, exit 0)
    stream_edit "$d/moe.hess" "$d/f32.hess" "import struct
for r in recs:
    n = len(r.payload) // 8
    r.payload, r.type = bytearray(struct.pack('<%df' % n, *struct.unpack('<%dd' % n, r.payload))), 0"
    [ "$("$TOOLS/hloss" "$d/moe.gguf" "$d/g.gguf" "$d/f32.hess" | grep -c '_exps')" -eq 24 ]
    "$TOOLS/mkllama" "$F32" "$d/moe16.gguf" F16 256,512,2,4,2,512,4,2
    run "$TOOLS/hloss" "$d/moe16.gguf" "$d/g.gguf" "$d/moe.hess"
    [ "$status" -eq 1 ]
    [ "$output" = "hloss: $d/moe16.gguf: tensor blk.0.attn_q.weight is not F32: give the F32 model" ]
    # the GGUF runs in llama.cpp
    run "$BIN/ppl" --model "$d/g.gguf" --text "$DATA/text/tinystories_valid_1000.txt" --ctx 128 --chunks 2 --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"PPL = "* ]]
    # 8 experts, 1 used, 16 tokens: experts 2, 3, 6 and 7 get none; their matrices RTN, said once a tensor
    "$TOOLS/mkllama" "$F32" "$d/moe8.gguf" F32 256,512,1,4,2,512,8,1
    "$BIN/hessian" --model "$d/moe8.gguf" --text "$cal" --ctx 16 --chunks 1 --threads 1 -o "$d/moe8.hess" 2> "$d/h8.err"
    # one line a weight (it was one an expert: 363 lines for 128 experts, a breaker's find); and
    # one each for the weights and the experts of too few tokens (hessian(1))
    [ "$(grep -c 'warning' "$d/h8.err")" -eq 5 ]
    [ "$(grep -c 'received no tokens' "$d/h8.err")" -eq 3 ]
    [ "$(grep -c 'GPTQ on so few can do worse than RTN' "$d/h8.err")" -eq 2 ]
    grep -qx 'hessian: warning: blk.0.ffn_down_exps.weight: experts 2, 3, 6, 7 (4 of 8) received no tokens; their Hessians are zero' "$d/h8.err"
    "$BIN/ggufcat" "$d/moe8.gguf" | "$BIN/gptq" --ftype Q4_K_M --hessian "$d/moe8.hess" 2> "$d/g8.err" > /dev/null
    [ "$(grep -c "^gptq: warning: $d/moe8.hess: tensor blk.0.ffn_.*_exps.weight: the Hessians of experts 2, 3, 6, 7 (4 of 8) are zero (no calibration token was routed to them): RTN for them\$" "$d/g8.err")" -eq 3 ]
    [ "$(grep -c '(gptq for 4 of 8 experts)' "$d/g8.err")" -eq 3 ]
    # the Hessians of 2 layers for a model of 3: the third layer's matrices RTN, said with -q and by
    # --check too (it was unsaid: a fresh user's find)
    "$TOOLS/mkllama" "$F32" "$d/moe3.gguf" F32 256,512,3,4,2,512,4,2
    "$BIN/ggufcat" "$d/moe3.gguf" > "$d/moe3.wts"
    want="gptq: warning: $d/moe.hess: 7 of the 22 matrices to quantize have no Hessian in it (the first: blk.2.attn_q.weight): RTN for them (the Hessians of a model with fewer layers, or of another model?)"
    run --separate-stderr "$BIN/gptq" --ftype Q4_K_M -q --hessian "$d/moe.hess" -o "$d/moe3q.wts" "$d/moe3.wts"
    [ "$status" -eq 0 ]
    [ "$stderr" = "$want" ]
    run --separate-stderr "$BIN/gptq" --check --ftype Q4_K_M --hessian "$d/moe.hess" "$d/moe3.wts"
    [ "$status" -eq 0 ]
    [ "$stderr" = "$want" ]
    # 4 experts' Hessians for a tensor of 8, refused before any output
    "$BIN/ggufcat" "$d/moe8.gguf" > "$d/moe8.wts"
    run --separate-stderr "$BIN/gptq" --ftype Q4_K_M --hessian "$d/moe.hess" -o "$d/x.wts" "$d/moe8.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/moe.hess: Hessian 'blk.0.ffn_gate_exps.weight' holds 4 experts' H, tensor blk.0.ffn_gate_exps.weight has 8 experts" ]
    [ ! -e "$d/x.wts" ]
    # an expert's H not positive definite (diagonal 1, the rest -1): that expert RTN, named
    "$BIN/ggufcat" "$d/moe.gguf" > "$d/moe.wts"
    stream_edit "$d/moe.hess" "$d/np.hess" "import struct
r = [r for r in recs if r.name == 'blk.0.ffn_gate_exps.weight'][0]
c = r.ne[0]
struct.pack_into('<%dd' % (c * c), r.payload, 0, *[1.0 if i % (c + 1) == 0 else -1.0 for i in range(c * c)])"
    run --separate-stderr "$BIN/gptq" --ftype Q4_K_M --hessian "$d/np.hess" -o "$d/np.wts" "$d/moe.wts"
    [ "$status" -eq 0 ]
    [[ "$stderr" == *"gptq: warning: tensor blk.0.ffn_gate_exps.weight: the Hessian of expert 0 (1 of 4) is not positive definite even with damping 100: RTN for it"* ]]
    [[ "$stderr" == *"blk.0.ffn_gate_exps.weight       F32 -> Q4_K (gptq for 3 of 4 experts) "* ]]
    [ "$(echo "$stderr" | grep -c 'not positive definite')" -eq 1 ]
    # a zero diagonal entry with entries beside it (GPTQ counted the column dead and zeroed the
    # matrix, its loss 100 times RTN's: a breaker's find): refused at its tensor, nothing written
    stream_edit "$d/moe.hess" "$d/dead.hess" "import struct
r = [r for r in recs if r.name == 'blk.0.ffn_up_exps.weight'][0]
c = r.ne[0]
for j in range(c):
    struct.pack_into('<d', r.payload, 8 * (c * c + 5 * c + j), 0.0)
    struct.pack_into('<d', r.payload, 8 * (c * c + j * c + 5), 0.0)
struct.pack_into('<d', r.payload, 8 * (c * c + 5 * c + 6), 1.0)
struct.pack_into('<d', r.payload, 8 * (c * c + 6 * c + 5), 1.0)"
    run --separate-stderr "$BIN/gptq" --ftype Q4_K_M -q --hessian "$d/dead.hess" -o "$d/dead.wts" "$d/moe.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/dead.hess: tensor blk.0.ffn_up_exps.weight: Hessian entry 1 at (5, 6) beside a zero diagonal entry at (5, 5), expert 1: X^T X has none" ]
    [ ! -e "$d/dead.wts" ]
    # a record of 4 dimensions is no Hessian of 2 x 2 experts (it was taken for one)
    stream_edit "$d/moe.hess" "$d/4d.hess" "r = [r for r in recs if r.name == 'blk.0.ffn_up_exps.weight'][0]
r.n_dims, r.ne = 4, [r.ne[0], r.ne[1], 2, 2]"
    run --separate-stderr "$BIN/gptq" --ftype Q4_K_M --hessian "$d/4d.hess" -o "$d/4d.wts" "$d/moe.wts"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $d/4d.hess: Hessian 'blk.0.ffn_up_exps.weight' has more than 3 dimensions (cols x cols, or cols x cols x experts)" ]
}

@test "gptq --check: what a run would refuse, in one line, from the model's shapes alone; nothing written" {
    synth="$T/synth.gguf"
    "$TOOLS/mkllama" "$F32" "$synth" F16
    cd "$T"
    # a type gptq lacks where the rows (256) keep it; stories260K's rows fall back to IQ4_NL
    run "$BIN/gptq" --check --ftype IQ3_S "$synth"
    [ "$status" -eq 1 ]
    [ "$output" = "gptq: $synth: tensor token_embd.weight: type IQ3_S is not supported by gptq" ]
    run "$BIN/gptq" --check --ftype IQ3_S "$F32"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    # without a model (standard input /dev/null; a pipe would be the model): the preset's own type
    run "$BIN/gptq" --check --ftype TQ1_0 < /dev/null
    [ "$status" -eq 1 ]
    [ "$output" = "gptq: --ftype TQ1_0: type TQ1_0 is not supported by gptq" ]
    run "$BIN/gptq" --check --type Q6_K --gamma --widen 1.25 --lambda 0.5 < /dev/null
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    run "$BIN/gptq" --check --ftype Q4_0 --widen 0.5 < /dev/null
    one_line_error "^gptq: --widen: expected a number from 1 to 64, got '0.5'$"
    # it said "gptq: invalid output file type 39", named neither the preset nor why (a new user's trial)
    run "$BIN/gptq" --check --ftype NVFP4 < /dev/null
    one_line_error "^gptq: --ftype NVFP4: llama.cpp gives this preset no type to quantize to$"
    run "$BIN/gptq" --ftype NVFP4 "$F32"
    one_line_error "^gptq: --ftype NVFP4: llama.cpp gives this preset no type to quantize to$"
    run "$BIN/gptq" --check --type NVFP4 < /dev/null
    one_line_error "^gptq: --type NVFP4: no llama.cpp file type quantizes to it$"
    run "$BIN/gptq" --check --ftype IQ2_XXS "$synth"
    one_line_error "requires an imatrix"
    # a quantized model, a file that is no GGUF, -o
    "$BIN/ggufcat" "$F32" | "$BIN/gptq" --ftype Q8_0 --rtn -q | "$BIN/ggufpack" > q8.gguf
    run "$BIN/gptq" --check --ftype Q4_0 q8.gguf
    one_line_error "^gptq: q8.gguf: requantizing from type Q8_0 is disabled \(tensor token_embd.weight; --allow-requantize allows it, at a cost in quality: quantize the F32, F16 or BF16 model\)$"
    run "$BIN/gptq" --check --ftype Q4_0 "$ROOT/README.md"
    one_line_error "not a GGUF file \(bad magic\)$"
    run "$BIN/gptq" --check --ftype Q4_0 -o out.wts "$F32"
    one_line_error "^gptq: --check writes nothing \(no -o\)$"
    # a stream says the same as its GGUF (stdin too)
    "$BIN/ggufcat" "$synth" > s.wps
    run "$BIN/gptq" --check --ftype IQ3_S s.wps
    [ "$output" = "gptq: s.wps: tensor token_embd.weight: type IQ3_S is not supported by gptq" ]
    run "$BIN/gptq" --check --ftype Q4_K_M - < s.wps
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    # a run refuses the same, before it quantizes or writes
    run "$BIN/gptq" --ftype IQ3_S -o out.wts s.wps
    one_line_error "^gptq: s.wps: tensor token_embd.weight: type IQ3_S is not supported by gptq$"
    [ "$(ls -A | sort | tr '\n' ' ')" = "q8.gguf s.wps synth.gguf " ]
}

@test "gptq names the file and the tensor that appears twice, as laneinterleave does" {
    # it said "tensor blk.0.attn_q.weight: duplicate name or bad shape", no file (a breaker's find)
    "$BIN/ggufcat" "$F32" > "$T/m.wts"
    stream_edit "$T/m.wts" "$T/dup.wts" "[setattr(r, 'name', 'blk.0.attn_q.weight') for r in recs if r.name == 'blk.0.attn_k.weight']"
    fails_saying "gptq: $T/dup.wts: tensor 'blk.0.attn_q.weight' appears twice (a GGUF holds each name once)" \
        "$BIN/gptq" --type Q8_0 --rtn --quiet -o "$T/o.wts" "$T/dup.wts"
    [ ! -e "$T/o.wts" ]
}

@test "gptq and ggufpack refuse a stream that lost a tensor or key/value record on the way (the gguf record's counts)" {
    # gptq wrote its own counts into the gguf record, so a record lost before it passed
    # ggufpack's check: a GGUF short of output_norm.weight, exit 0 (a breaker's find)
    local lost="(a tensor record lost or added on the way)" kvlost="(a key/value record lost or added on the way)"
    "$BIN/ggufcat" "$F32" > "$T/m.wts"
    stream_edit "$T/m.wts" "$T/nt.wts" "recs = [r for r in recs if r.name != 'output_norm.weight']"
    fails_saying "gptq: $T/nt.wts: the gguf record says 48 tensors, the stream holds 47 $lost" \
        "$BIN/gptq" --type Q8_0 --rtn --quiet -o "$T/o.wts" "$T/nt.wts"
    [ ! -e "$T/o.wts" ]
    fails_saying "gptq: $T/nt.wts: the gguf record says 48 tensors, the stream holds 47 $lost" \
        "$BIN/gptq" --check --type Q8_0 --rtn "$T/nt.wts"   # (--check passed it)
    stream_edit "$T/m.wts" "$T/nk.wts" "recs = [r for r in recs if r.name != 'general.name']"
    fails_saying "gptq: $T/nk.wts: the gguf record says 17 key/values, the stream holds 16 $kvlost" \
        "$BIN/gptq" --type Q8_0 --rtn --quiet -o "$T/o.wts" "$T/nk.wts"
    # ggufpack checked the tensors' count alone
    fails_saying "ggufpack: $T/nk.wts: the gguf record says 17 key/values, the stream holds 16 $kvlost" \
        "$BIN/ggufpack" -o "$T/o.gguf" "$T/nk.wts"
    [ ! -e "$T/o.gguf" ]
    # the whole stream passes, and gptq's output (its own counts) packs
    "$BIN/gptq" --type Q8_0 --rtn --quiet "$T/m.wts" | "$BIN/ggufpack" > "$T/ok.gguf"
    [ -s "$T/ok.gguf" ]
}

@test "gptq and hessian under an address-space limit that OpenBLAS's buffers pass: they end, or say why in one line (they hung)" {
    # OpenBLAS's shutdown joined a worker that retried its 128 MiB buffer for ever: gptq --help,
    # a whole run and an error each hung at 100 % of a CPU after their work (a breaker's find);
    # two threads, one worker, whatever the machine's CPU count
    local lim=100000
    run bash -c "ulimit -v $lim; OPENBLAS_NUM_THREADS=2 timeout 60 '$BIN/gptq' --help"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: gptq"* ]]
    "$BIN/ggufcat" "$F32" > "$T/m.wts"
    "$BIN/gptq" --type Q8_0 --rtn --quiet -o "$T/free.wts" "$T/m.wts"
    run bash -c "ulimit -v $lim; OPENBLAS_NUM_THREADS=2 timeout 60 '$BIN/gptq' --type Q8_0 --rtn --quiet -o '$T/lim.wts' '$T/m.wts'"
    [ "$status" -eq 0 ]
    cmp "$T/free.wts" "$T/lim.wts"
    run bash -c "ulimit -v $lim; OPENBLAS_NUM_THREADS=2 timeout 60 '$BIN/gptq' --type Q8_0 -o '$T/x.wts' '$T/none.wts'"
    [ "$status" -eq 1 ]
    [ "$output" = "gptq: $T/none.wts: No such file or directory" ]
    run bash -c "ulimit -v $lim; OPENBLAS_NUM_THREADS=2 timeout 60 '$BIN/hessian' --help"
    [ "$status" -eq 0 ]
    # GPTQ's and hessian's BLAS work hung inside OpenBLAS (a worker without its buffer, or no
    # room for the caller's): one line with the way on, before the first call (a re-tester's find)
    "$BIN/hessian" --model "$MODELS/stories260K-f16.gguf" --text "$DATA/text/tinystories_sample.txt" --chunks 2 \
        -o "$T/m.hess" 2> /dev/null
    local workers="OpenBLAS's worker threads (1) could not all map their 128 MiB buffers (one without spins): set OPENBLAS_NUM_THREADS to fewer threads (1: none), or raise the limit"
    run --separate-stderr bash -c "ulimit -v $lim; OPENBLAS_NUM_THREADS=2 timeout 60 '$BIN/gptq' --hessian '$T/m.hess' --type Q8_0 --quiet -o '$T/g.wts' '$T/m.wts'"
    [ "$status" -eq 1 ]
    [[ "$stderr" =~ ^"gptq: tensor "[a-z_.0-9]+": under ulimit -v 97 MiB, $workers"$ ]]
    [ ! -e "$T/g.wts" ]
    run --separate-stderr bash -c "ulimit -v $lim; OPENBLAS_NUM_THREADS=1 timeout 60 '$BIN/gptq' --hessian '$T/m.hess' --type Q8_0 --quiet -o '$T/g.wts' '$T/m.wts'"
    [ "$status" -eq 1 ]
    [[ "$stderr" =~ ^"gptq: tensor "[a-z_.0-9]+": ulimit -v leaves "[0-9]+\.[0-9]" MiB beside the "[0-9]+" MiB in use, below the 129 MiB OpenBLAS's work needs (its 128 MiB buffer and 1 MiB beside): raise the limit"$ ]]
    # (--threads 2: hessian sets OpenBLAS's count to its own, by default the CPUs; the workers
    # it starts so are checked too, as they were not when it set them after the model)
    run --separate-stderr bash -c "ulimit -v $lim; OPENBLAS_NUM_THREADS=1 timeout 60 '$BIN/hessian' --threads 2 --model '$MODELS/stories260K-f16.gguf' --text '$DATA/text/tinystories_sample.txt' --chunks 2 -o '$T/h.hess'"
    [ "$status" -eq 1 ]
    [ "${stderr##*$'\n'}" = "hessian: under ulimit -v 97 MiB, $workers" ]   # (after its plan's line)
    [ ! -e "$T/h.hess" ]
    # a limit that leaves room: the same bytes as without one
    "$BIN/gptq" --hessian "$T/m.hess" --type Q8_0 --quiet -o "$T/free.wts" "$T/m.wts"
    run bash -c "ulimit -v 600000; OPENBLAS_NUM_THREADS=2 timeout 60 '$BIN/gptq' --hessian '$T/m.hess' --type Q8_0 --quiet -o '$T/g.wts' '$T/m.wts'"
    [ "$status" -eq 0 ]
    cmp "$T/free.wts" "$T/g.wts"
}

@test "gptq: --damp alone without --hessian warns naming --damp; a negative --lambda or --damp is refused (a mutation test's find)" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    run --separate-stderr "$BIN/gptq" -q --type Q4_0 --damp 0.1 -o "$T/o.wts" "$T/s.wps"
    [ "$status" -eq 0 ]
    [ "$stderr" = "gptq: warning: --damp acts on GPTQ's Hessians: without --hessian (RTN) it does nothing" ]
    fails_saying "gptq: --lambda: expected a number from 0 to 1e+06, got '-1'" \
        "$BIN/gptq" --ftype Q4_0 --lambda -1 "$T/s.wps"
    fails_saying "gptq: --damp: expected a number from 0 to 1e+06, got '-0.01'" \
        "$BIN/gptq" --ftype Q4_0 --damp -0.01 "$T/s.wps"
}

@test "gptq --keep-order writes the tensors in input order; records of other kinds follow them, in input order (a mutation test's find)" {
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    # two records gptq does not read (F32 Hessians of 2x2), after the GGUF's records
    stream_edit "$T/s.wps" "$T/h.wps" "
for nm in ('note.b', 'note.a'):
    recs.append(types.SimpleNamespace(kind=4, type=0, n_dims=2, ne=[2, 2, 1, 1], name=nm, attrs={}, payload=bytearray(16)))"
    "$BIN/tsinfo" "$T/s.wps" | awk '$1 == "tensor" {print $2}' > "$T/in.names"
    "$BIN/gptq" -q --type Q8_0 --rtn --keep-order "$T/h.wps" > "$T/k.wts"
    "$BIN/tsinfo" "$T/k.wts" | awk '$1 == "tensor" {print $2}' > "$T/k.names"
    cmp "$T/in.names" "$T/k.names"
    # without it, llama-quantize's order (layer number, then name): the same names, another order
    "$BIN/gptq" -q --type Q8_0 --rtn "$T/h.wps" > "$T/l.wts"
    "$BIN/tsinfo" "$T/l.wts" | awk '$1 == "tensor" {print $2}' > "$T/l.names"
    [ "$(head -n 3 "$T/l.names" | tr '\n' ' ')" = "output.weight output_norm.weight token_embd.weight " ]
    [ "$(sort "$T/l.names")" = "$(sort "$T/in.names")" ]
    # the records of other kinds: last, in input order, unchanged
    [ "$("$BIN/tsinfo" "$T/l.wts" | grep -v '^#' | tail -n 2 | awk '{print $1, $2, $3, $4, $5}' | tr '\n' ' ')" = "hessian note.b F32 2x2 16 hessian note.a F32 2x2 16 " ]
    [ "$("$BIN/tsinfo" "$T/k.wts" | grep -v '^#' | tail -n 2 | awk '{print $1, $2}' | tr '\n' ' ')" = "hessian note.b hessian note.a " ]
}

@test "gptq --check: a model redirected from a file to standard input is checked, as a pipe is; --type F16, BF16, F32 without a model pass (a mutation test's find)" {
    synth="$T/synth.gguf"
    "$TOOLS/mkllama" "$F32" "$synth" F16
    "$BIN/ggufcat" "$synth" > "$T/s.wps"
    fails_saying "gptq: stdin: tensor token_embd.weight: type IQ3_S is not supported by gptq" \
        "$BIN/gptq" --check --ftype IQ3_S < "$T/s.wps"
    for t in F16 BF16 F32; do
        run "$BIN/gptq" --check --type $t < /dev/null
        [ "$status" -eq 0 ]
        [ -z "$output" ]
    done
}

@test "gptq: a model of general.alignment 64 equals llama-quantize byte for byte; split.* keys are dropped (a mutation test's find)" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    # general.alignment (u32 64) after the first key, the gguf record's n_kv counting it
    stream_edit "$T/s.wps" "$T/a.wps" "
import struct
recs[0].attrs['n_kv'] = str(int(recs[0].attrs['n_kv']) + 1)
recs.insert(2, types.SimpleNamespace(kind=2, type=4, n_dims=0, ne=[1, 1, 1, 1], name='general.alignment', attrs={}, payload=bytearray(struct.pack('<I', 64))))"
    "$BIN/ggufpack" -o "$T/a64.gguf" "$T/a.wps"
    "$QUANTIZE" "$T/a64.gguf" "$T/ref.gguf" Q8_0 1 > /dev/null 2>&1
    "$BIN/gptq" --ftype Q8_0 --rtn --quiet -o "$T/our.wts" "$T/a.wps"
    "$BIN/ggufpack" -o "$T/our.gguf" "$T/our.wts"
    cmp "$T/ref.gguf" "$T/our.gguf"
    # split.no (u16), split.count (u16), split.tensors.count (i32): none reaches the output
    stream_edit "$T/s.wps" "$T/sp.wps" "
import struct
recs[0].attrs['n_kv'] = str(int(recs[0].attrs['n_kv']) + 3)
for i, (k, t, v) in enumerate((('split.no', 2, struct.pack('<H', 0)), ('split.count', 2, struct.pack('<H', 1)), ('split.tensors.count', 5, struct.pack('<i', 48)))):
    recs.insert(2 + i, types.SimpleNamespace(kind=2, type=t, n_dims=0, ne=[1, 1, 1, 1], name=k, attrs={}, payload=bytearray(v)))"
    [ "$("$BIN/tsinfo" "$T/sp.wps" | grep -c '^kv  *split\.')" -eq 3 ]
    "$BIN/gptq" --ftype Q8_0 --rtn --quiet -o "$T/sp.wts" "$T/sp.wps"
    [ "$("$BIN/tsinfo" "$T/sp.wts" | grep -c '^kv  *split\.' || true)" -eq 0 ]
    "$BIN/gptq" --ftype Q8_0 --rtn --quiet "$T/s.wps" | cmp - "$T/sp.wts"
}

@test "gptq: a model of general.alignment 256 is written 256-aligned and loads in llama.cpp, where llama-quantize's file pads to 32 and does not load" {
    [ -x "$QUANTIZE" ] || skip "llama-quantize not built (make reftools)"
    [ -x "$TOOLS/llgen" ] || skip "build/tools/llgen not built"
    "$BIN/ggufcat" "$F32" > "$T/s.wps"
    stream_edit "$T/s.wps" "$T/a.wps" "
import struct
recs[0].attrs['n_kv'] = str(int(recs[0].attrs['n_kv']) + 1)
recs.insert(2, types.SimpleNamespace(kind=2, type=4, n_dims=0, ne=[1, 1, 1, 1], name='general.alignment', attrs={}, payload=bytearray(struct.pack('<I', 256))))"
    "$BIN/gptq" --ftype Q8_0 --rtn --quiet -o "$T/our.wts" "$T/a.wps"
    "$BIN/ggufpack" -o "$T/our.gguf" "$T/our.wts"
    # ggufcat checks every tensor's offset against the file's alignment; gptq's header record
    # says the file's size, which ggufpack pads the last tensor up to (gptq ignoring the key
    # said 379136, its layout at 32, and the file came out short of that padding)
    "$BIN/ggufcat" -o "$T/back.wps" "$T/our.gguf"
    [ "$(stat -c %s "$T/our.gguf")" -eq 381184 ]
    [ "$("$BIN/tsinfo" -a "$T/our.wts" | sed -n 's/^    file_size=//p')" = 381184 ]
    run "$TOOLS/llgen" "$T/our.gguf" 16
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | wc -w)" -eq 16 ]
    # llama-quantize keeps the key but pads to gguf's default 32 (gguf_set_val_u32 does not
    # set the writer's alignment): a file llama.cpp's own loader refuses
    "$BIN/ggufpack" -o "$T/a256.gguf" "$T/a.wps"
    "$QUANTIZE" "$T/a256.gguf" "$T/ref.gguf" Q8_0 1 > /dev/null 2>&1
    run --separate-stderr "$BIN/ggufcat" "$T/ref.gguf"
    [ "$status" -eq 1 ]
    [ "$stderr" = "ggufcat: $T/ref.gguf: tensor 'blk.0.attn_norm.weight': data offset 72064 is not aligned to 256" ]
    run --separate-stderr "$TOOLS/llgen" "$T/ref.gguf" 16
    [ "$status" -eq 1 ]
    [[ "$stderr" == "llgen: $T/ref.gguf: llama.cpp cannot load this model: "*"tensor 'blk.0.attn_norm.weight' has offset 72064, expected 72192" ]] || { echo "$stderr"; false; }
}

@test "gptq --hessian: a Hessian of cols x other rows, or of a type other than F64 and F32, is refused, in --check too (a mutation test's find)" {
    hessians "$T/d.wts" "r = [r for r in recs if r.name == 'blk.0.attn_in'][0]
r.ne = [64, 32, 1, 1]
r.payload = r.payload[:64 * 32 * 8]"
    run --separate-stderr "$BIN/gptq" --check --hessian "$T/d.wts" --ftype Q8_0 "$F32"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $T/d.wts: Hessian 'blk.0.attn_in' is 64x32, tensor blk.0.attn_q.weight has 64 columns" ]
    # cols x cols of a type other than F64 or F32 (F16: its payload fits the stream's shape)
    hessians "$T/f16.wts" "r = [r for r in recs if r.name == 'blk.0.attn_in'][0]
r.type = 1
r.payload = r.payload[:64 * 64 * 2]"
    run --separate-stderr "$BIN/gptq" --check --hessian "$T/f16.wts" --ftype Q8_0 "$F32"
    [ "$status" -eq 1 ]
    [ "$stderr" = "gptq: $T/f16.wts: Hessian 'blk.0.attn_in': type must be F64 or F32 with 4096 values" ]
}

@test "gptq --check --hessian-later: --act-order and --damp act on the Hessians to come, no warning (a mutation test's find)" {
    run --separate-stderr "$BIN/gptq" --check --hessian-later --act-order --ftype Q4_0 "$F32"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    run --separate-stderr "$BIN/gptq" --check --hessian-later --damp 0.1 --ftype Q4_0 "$F32"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    # without --hessian-later the check warns as the run does
    run --separate-stderr "$BIN/gptq" --check --damp 0.1 --ftype Q4_0 "$F32"
    [ "$status" -eq 0 ]
    [ "$stderr" = "gptq: warning: --damp acts on GPTQ's Hessians: without --hessian (RTN) it does nothing" ]
}

@test "gptq: --type and --ftype together are one usage line, in a run and in --check (a mutation test's find)" {
    run "$BIN/gptq" --type Q4_0 --ftype Q8_0 "$F32"
    one_line_error '^gptq: give exactly one of --type T or --ftype PRESET \(try --help\)$'
    run "$BIN/gptq" --check --type Q4_0 --ftype Q8_0 "$F32"
    one_line_error '^gptq: give exactly one of --type T or --ftype PRESET \(try --help\)$'
}
