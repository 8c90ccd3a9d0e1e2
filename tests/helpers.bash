# Shared by the bats files: paths to the programs and the shared data.
#
# A check is a line of its own. bats stops a test at a failing command through
# set -e, and set -e passes over a failing command before && or ||, a command
# negated with !, and every command of a function called with || or && after
# it: `[ -n "$b" ] && [ "$a" = "$b" ]` and `! grep -q x f` checked nothing
# (unless last in the test). Write `! grep -q x f || false`, and in a helper
# that may be called that way, `|| return 1` after each check. install.bats
# greps the test files for the first two shapes.
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
BIN="$ROOT/bin"
TOOLS="$ROOT/build/tools"
DATA="${WPACK_DATA:-$ROOT/../shared/data}"
MODELS="$DATA/models/stories260K"
export WPACK_GGML_BACKEND_DIR="${WPACK_GGML_BACKEND_DIR:-$ROOT/.deps/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}"

# ref_libs DIR: fill DIR with links that give llama.cpp's own build of its
# libraries (REF_BUILD/bin, make reftools: native CPU kernels) the sonames the
# programs were linked against (the prebuilt node-llama-cpp ones, Makefile
# REF_LIBS). A program run with LD_LIBRARY_PATH=DIR, which the loader searches
# before the program's RUNPATH, computes with the very kernels llama-perplexity
# and llama-imatrix use. Fails when the build lacks one of the libraries.
ref_libs() {
    local lib
    mkdir -p "$1"
    for lib in libllama libggml libggml-base; do
        [ -e "$REF_BUILD/bin/$lib.so" ] || { echo "no $lib.so in $REF_BUILD/bin" >&2; return 1; }
    done
    ln -sfn "$REF_BUILD/bin/libllama.so" "$1/libllama.v0.4.0.so"
    ln -sfn "$REF_BUILD/bin/libggml.so" "$1/libggml.v0.4.0.so"
    ln -sfn "$REF_BUILD/bin/libggml-base.so" "$1/libggml-base.so"
}

# patch_bytes FILE OFFSET PRINTF-ESCAPES: overwrite bytes in place.
patch_bytes() {
    printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# le64 VALUE / le32 VALUE: little-endian printf escapes of an integer.
le64() {
    local v=$1 s="" i
    for i in 0 1 2 3 4 5 6 7; do s="$s$(printf '\\x%02x' $(( (v >> (8 * i)) & 255 )))"; done
    echo "$s"
}
le32() {
    local v=$1 s="" i
    for i in 0 1 2 3; do s="$s$(printf '\\x%02x' $(( (v >> (8 * i)) & 255 )))"; done
    echo "$s"
}

# offset_of FILE STRING: byte offset of the first occurrence of STRING.
offset_of() {
    grep -obUaF -- "$2" "$1" | head -n 1 | cut -d: -f1
}

# fails_saying LINE CMD...: CMD exits 1 and its whole output (stdout and stderr) is LINE.
fails_saying() {
    local line=$1
    shift
    run "$@"
    [ "$status" -eq 1 ] || { echo "expected status 1, got $status: $output"; return 1; }
    [ "$output" = "$line" ] || { echo "expected: $line"; echo "got:      $output"; return 1; }
}

# gone PID: PID ends (or is a zombie, dead but not yet reaped: a process whose parent died is
# reaped by init, late on a loaded machine) within 10 s.
gone() {
    local i s
    for i in $(seq 100); do
        s=$(ps -o stat= -p "$1" 2> /dev/null) || return 0
        [[ $s != Z* ]] || return 0
        sleep 0.1
    done
    echo "process $1 still running: $(ps -o stat=,args= -p "$1")"
    return 1
}

# line_after PATTERN: the index in bats' lines (run's output, empty lines dropped) of the line
# after the first one matching the grep PATTERN (a tsinfo -a record's first attribute); fails,
# printing nothing, where no line matches.
line_after() {
    local n
    n=$(printf '%s\n' "${lines[@]}" | grep -n -m 1 -- "$1" | cut -d: -f1)
    [ -n "$n" ] && echo "$n"
}

# one_line_error PATTERN: the run failed with exactly one line matching PATTERN.
one_line_error() {
    [ "$status" -ne 0 ] || { echo "expected failure, got status 0"; return 1; }
    [ "${#lines[@]}" -eq 1 ] || { echo "expected one line, got: $output"; return 1; }
    [[ "$output" =~ $1 ]] || { echo "expected /$1/, got: $output"; return 1; }
}

# rec_words STREAM OFFSET: the 18 u32 words of the fixed record header
# (wpack-stream(5)): [3] name_len, [12] attr_len, [14]/[15] payload_len.
rec_words() { od -An -v -t u4 -j "$2" -N 72 "$1"; }
align64() { echo $(( ($1 + 63) / 64 * 64 )); }

# record_at STREAM NAME: the offset of record NAME's header (its "WREC" tag): the first place
# the name's bytes follow a header whose name_len is theirs (a safetensors file's header
# key/value holds every tensor name in its JSON, before the tensors' records).
record_at() {
    local at w n
    n=$(printf '%s' "$2" | LC_ALL=C wc -c)
    for at in $(grep -obUaF -- "$2" "$1" | cut -d: -f1); do
        at=$((at - 72))
        [ "$at" -ge 16 ] || continue
        w=($(rec_words "$1" "$at"))
        if [ "${w[0]}" -eq 1128616535 ] && [ "${w[3]}" -eq "$n" ]; then   # "WREC"
            echo "$at"
            return 0
        fi
    done
    return 1
}

# payload_of STREAM NAME: "OFFSET LENGTH" of the payload of record NAME (a
# stream of alignment 64, the default), its header found by record_at.
payload_of() {
    local at w
    at=$(record_at "$1" "$2") || return 1
    w=($(rec_words "$1" "$at"))
    echo "$(align64 $((at + 72 + w[3] + w[12] + 8))) $(( w[14] + w[15] * 4294967296 ))"
}

# reseal FILE: recompute every record's payload and header XXH64 (lib/stream.h's
# layout) after a test altered bytes, as a corrupter who knows the format would, so
# the damage reaches the checks behind the checksums.
reseal() {
    /usr/bin/python3 - "$1" <<'PY'
import ctypes, struct, sys
xx = ctypes.CDLL("libxxhash.so.0")
xx.XXH64.restype = ctypes.c_uint64
xx.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
h = lambda b: xx.XXH64(bytes(b), len(b), 0)
b = bytearray(open(sys.argv[1], "rb").read())
align, off = struct.unpack_from("<I", b, 12)[0], 16
while True:
    kind, nl = struct.unpack_from("<H", b, off + 4)[0], struct.unpack_from("<I", b, off + 12)[0]
    al, pl = struct.unpack_from("<I", b, off + 48)[0], struct.unpack_from("<Q", b, off + 56)[0]
    hend = off + 72 + nl + al + 8
    p = (hend + align - 1) // align * align
    struct.pack_into("<Q", b, off + 64, h(b[p:p + pl]))
    struct.pack_into("<Q", b, hend - 8, h(b[off:hend - 8]))
    if kind == 65535:
        break
    off = (p + pl + align - 1) // align * align
open(sys.argv[1], "wb").write(b)
PY
}

# stream_dup IN OUT NAME: IN with a second copy of record NAME put before its
# end record, re-sealed by stream_edit (below): a well-formed stream that
# holds a name twice, as no GGUF can.
stream_dup() {
    stream_edit "$1" "$2" "import copy
recs.append(copy.deepcopy([r for r in recs if r.name == '$3'][0]))"
}

# stream_edit IN OUT PYTHON: IN with its records edited by the Python code
# PYTHON, which sees `recs`, the records before the end record, each with
# kind, type, n_dims, ne (4 ints), name (str), attrs (a dict, in order) and
# payload (a bytearray), and may change, drop or add them; OUT gets them
# re-sealed with a new index and end record (lib/stream.h's layout; the
# index's zstd frame made by the zstd program).
stream_edit() {
    /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import ctypes, struct, subprocess, sys, types
xx = ctypes.CDLL("libxxhash.so.0")
xx.XXH64.restype = ctypes.c_uint64
xx.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
h = lambda b: xx.XXH64(bytes(b), len(b), 0)
b = open(sys.argv[1], "rb").read()
align, off, recs = struct.unpack_from("<I", b, 12)[0], 16, []
pad = lambda n: (n + align - 1) // align * align
while True:
    kind, n_dims, typ, nl = struct.unpack_from("<HHII", b, off + 4)
    ne = list(struct.unpack_from("<4q", b, off + 16))
    al, pl = struct.unpack_from("<I", b, off + 48)[0], struct.unpack_from("<Q", b, off + 56)[0]
    p = pad(off + 72 + nl + al + 8)
    if kind == 65535:
        break
    attrs = dict(l.split("=", 1) for l in b[off + 72 + nl:off + 72 + nl + al].decode().split("\n") if l)
    recs.append(types.SimpleNamespace(kind=kind, type=typ, n_dims=n_dims, ne=ne, name=b[off + 72:off + 72 + nl].decode(),
                                      attrs=attrs, payload=bytearray(b[p:p + pl])))
    off = pad(p + pl)
exec(sys.argv[3])
def record(kind, n_dims, typ, ne, name, attrs, payload, at):
    a = "".join("%s=%s\n" % kv for kv in attrs.items()).encode()
    head = struct.pack("<4sHHII4qIIQQ", b"WREC", kind, n_dims, typ, len(name), *ne, len(a), 0, len(payload), h(payload))
    head += name + a
    head += struct.pack("<Q", h(head))
    head += bytes(pad(at + len(head)) - at - len(head))
    return head + bytes(payload) + bytes(pad(at + len(head) + len(payload)) - at - len(head) - len(payload))
out, entries = bytearray(b[:16]), bytearray()
for r in recs:
    name = r.name.encode()
    entries += struct.pack("<QHHI", len(out), r.kind, 0, len(name)) + name
    out += record(r.kind, r.n_dims, r.type, r.ne, name, r.attrs, r.payload, len(out))
z = subprocess.run(["zstd", "-q", "-c", "--stream-size=%d" % len(entries)], input=bytes(entries), capture_output=True,
                   check=True).stdout
end_at = len(out)
out += record(65535, 0, 0, [1, 1, 1, 1], b"", {}, struct.pack("<QQ", len(recs), len(entries)) + z, end_at)
out += struct.pack("<Q", end_at) + b"WPACKEND"
open(sys.argv[2], "wb").write(out)
PY
}

# st_of_stream STREAM OUT [SHARDS]: the tensors of a wpack stream (F32, F16, BF16) written as a
# safetensors file as the safetensors library writes one (header JSON without spaces, padded
# with spaces to 8 bytes, __metadata__ {"format": "pt"}, tensors in stream order, shapes in
# row-major order), or as SHARDS files OUT-0000K-of-0000N.safetensors of consecutive tensors.
# A fixture of real weights (a model's GGUF through ggufcat), read back by safetensorscat.
st_of_stream() {
    /usr/bin/python3 - "$@" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
out, shards = sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1
dtype = {0: "F32", 1: "F16", 30: "BF16"}
align, off, ts = struct.unpack_from("<I", b, 12)[0], 16, []
while True:
    kind, nd, typ, nl = struct.unpack_from("<HHII", b, off + 4)
    ne = struct.unpack_from("<4Q", b, off + 16)
    al, pl = struct.unpack_from("<I", b, off + 48)[0], struct.unpack_from("<Q", b, off + 56)[0]
    if kind == 65535:
        break
    p = (off + 72 + nl + al + 8 + align - 1) // align * align
    if kind == 3:
        ts.append((b[off + 72:off + 72 + nl].decode(), dtype[typ], list(reversed(ne[:nd])), b[p:p + pl]))
    off = (p + pl + align - 1) // align * align
per = (len(ts) + shards - 1) // shards
for k in range(shards):
    part, hdr, pos = ts[k * per:(k + 1) * per], {"__metadata__": {"format": "pt"}}, 0
    for name, dt, shape, data in part:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [pos, pos + len(data)]}
        pos += len(data)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    name = out if shards == 1 else "%s-%05d-of-%05d.safetensors" % (out, k + 1, shards)
    with open(name, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(t[3] for t in part))
PY
}
