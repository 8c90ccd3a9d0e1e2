#!/usr/bin/env bats
# The libFuzzer targets (tests/fuzz/*.c), a few seconds each: built with
# clang's fuzzer, address and undefined-behaviour sanitizers by
# tests/fuzz/run, seeded from real files and the saved crash inputs in
# tests/fuzz/crashes/TARGET/. `make fuzz` runs them for 120 s each.
load helpers

fuzz() {
    command -v clang > /dev/null || skip "clang not installed"
    run env WPACK_FUZZ_SECONDS="${WPACK_FUZZ_SECONDS:-3}" WPACK_DATA="$DATA" sh "$ROOT/tests/fuzz/run" "$1"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ok 1 - $1 "*", no crash"* ]]
}

@test "fuzz_stream: the stream reader survives fuzzing" { fuzz fuzz_stream; }
@test "fuzz_gguf: the GGUF reader (and writer) survive fuzzing" { fuzz fuzz_gguf; }
@test "fuzz_safetensors: the safetensors reader survives fuzzing" { fuzz fuzz_safetensors; }
@test "fuzz_bundle: the bundle reader and the runner's loader and CPU decode survive fuzzing" { fuzz fuzz_bundle; }
