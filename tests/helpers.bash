# Shared by the bats files: paths to the programs and the shared data.
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
BIN="$ROOT/bin"
TOOLS="$ROOT/build/tools"
DATA="${WPACK_DATA:-$ROOT/../shared/data}"
MODELS="$DATA/models/stories260K"
export WPACK_GGML_BACKEND_DIR="${WPACK_GGML_BACKEND_DIR:-$ROOT/.deps/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}"

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

# one_line_error PATTERN: the run failed with exactly one line matching PATTERN.
one_line_error() {
    [ "$status" -ne 0 ] || { echo "expected failure, got status 0"; return 1; }
    [ "${#lines[@]}" -eq 1 ] || { echo "expected one line, got: $output"; return 1; }
    [[ "$output" =~ $1 ]] || { echo "expected /$1/, got: $output"; return 1; }
}
