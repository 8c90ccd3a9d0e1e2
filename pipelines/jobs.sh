# pipelines/jobs.sh: sourced (not run) by lazyweights and unweight (and by frontier, for
# model_name alone), bash with set -euo pipefail; installed as PREFIX/lib/wpack/jobs.sh.
# Their steps as background jobs that a signal ends, the folders of OUTDIR's path they made,
# removed when they fail, and the check that the programs they run are there.
#
# Sourcing it defines the functions alone; trap_signals then turns on job control and sets
# the INT, TERM and HUP traps: a TERM or INT ends every process of the running job
# (stop_jobs) and waits for them, so their own cleanup is done before the script's EXIT
# trap, which then removes the rest; the script exits 130, 143 or 129 (HUP: a closed
# terminal or a dropped ssh).
#
# The steps run as background jobs, waited for (STEP & wait_job): bash runs a trap only
# after a foreground child ends, so a TERM waited for hessian to finish (hours on a 7B
# model: a fresh user's find). With job control (set -m) each job is a process group of its
# own that keeps the script's standard input (without it, a job reads /dev/null: CALIB
# /dev/stdin, a reviewer's find) and takes INT as a foreground step did. A pipeline runs in a
# subshell, ( a | b ) &: one fork here, so a trap never runs while this shell is still
# starting its processes, holding pipe ends they wait on (exit then waited for them for good).
#
# The two scripts each carried their own copy of all this (a review). The argument handling
# both share (--dist anywhere, option words out of place, WPACK_THREADS, a MODEL that is no
# GGUF) is here too: their copies were near-copies of each other (a last read of the change).

job=

# wait_job: waits for the job just started (STEP & wait_job), its $! kept in job meanwhile;
# returns the job's status (the last command's, job=, was 0 where a caller tested it)
wait_job() {
    job=$!
    local rc=0
    wait "$job" || rc=$?
    job=
    return "$rc"
}

# stop_jobs: ends the running job's process group and waits for it: job, or $! when the signal
# came between the fork and wait_job (the job ran on, orphaned, and wrote into the OUTDIR after
# its cleanup: a fresh user's find); before any fork $! is an earlier job's, ended (the job table
# read in the trap, $(jobs -p), hung for good while a pipeline was being started).
stop_jobs() {
    local j=${job:-${!:-}} i
    [ -n "$j" ] || return 0
    kill -TERM -- "-$j" 2> /dev/null || true
    wait "$j" 2> /dev/null || true
    # and its group gone, up to 2 s: a stage of a pipeline, dying, created its stderr file after
    # the cleanup had removed the rest (wait reaps the job's first process alone)
    for ((i = 0; i < 40; i++)); do
        kill -0 -- "-$j" 2> /dev/null || break
        sleep 0.05
    done
}

# trap_signals: sets the INT, TERM and HUP traps (HUP: the running step, in a process group of
# its own, ran on and wrote its Hessians, no .id beside them, after the script had gone: a
# breaker's find). From then on until the traps are ignored for the last moves, the script
# runs no command substitution, $(...): bash 5.2 runs a trap that lands while it is reading
# one inside that parse, and fails the trap's own, "trap: line 2: unexpected EOF while looking
# for matching ')'", exit 2, its running job left to finish (a re-tester saw it in about 40 % of
# runs; 13 of 400 HUPs at random times under load). A file's first line is read with read.
# Job control comes on here, not when the file is sourced: on at the checks, a Ctrl-C that
# came while one ran in a $(...) left that subshell re-raising INT at itself for good, at 100 %
# CPU, the script waiting on it (bash 5.2; a fresh user's find, once in 250 tries).
trap_signals() {
    set -m
    trap 'stop_jobs; exit 130' INT
    trap 'stop_jobs; exit 143' TERM
    trap 'stop_jobs; exit 129' HUP
    # a file-size limit (ulimit -f) is a write error, as in every wpack program: SIGXFSZ's
    # default killed the script at its own write of the Hessians' .id, silently, its OUTDIR
    # left (a re-tester's find); ignored here, the steps inherit it
    trap '' XFSZ
}

# outdir_made OUT: sets the array made to the folders of OUT's path that mkdir -p OUT makes,
# deepest first, each as it will be named and only where its path, .. taken as written, is not
# there yet (of nx/../ny, nx/.. is not one; of ny/../keep, keep, already there, is not): a failed
# or interrupted run removes them (unweight left nx of nx/../ny, and took keep of ny/../keep for
# one it made; lazyweights left pa of pa/b: a breaker's and a re-tester's finds)
outdir_made() {
    local d=$1
    made=()
    while [ -n "$d" ] && [ ! -e "$d" ]; do
        [ -e "$(realpath -s -m -- "$d")" ] || made+=("$d")
        d=$(dirname -- "$d")
    done
}

# need_programs NAME STATUS PROG...: exits STATUS after one line when a PROG is not a program
# in $B (a WPACK_BIN without them gave bash's "No such file or directory", exit 127, midway:
# a re-tester's and a reviewer's finds); NAME is the pipeline's, for the line
need_programs() {
    local name=$1 st=$2 p
    shift 2
    for p in "$@"; do
        [ -x "$B/$p" ] || { echo "$name: $B/$p: no such program (make all; or WPACK_BIN)" >&2; exit "$st"; }
    done
}

# hold_tmp_lock TMP: this run's lock on TMP.lock (flock, fd 8, held to the end and by every
# step it starts, so that a step a SIGKILL orphans holds it too): rm_stale_tmp takes TMP.* for
# a killed run's only when it can take this lock; without flock, nothing (rm_stale_tmp then
# asks /proc)
hold_tmp_lock() {
    command -v flock > /dev/null || return 0
    { exec 8> "$1.lock"; } 2> /dev/null && flock -n 8 || true
}

# rm_stale_tmp NAME PREFIX: removes the PREFIX.tmpPID.* files of runs no longer running (a
# SIGKILL, a CI runner's timeout, left them, which no trap could remove; they piled up, a 7B's
# a GiB each: a CI maintainer's trial), saying how many in one line; those of a run still going
# stay. A run is gone when its PREFIX.tmpPID.lock (hold_tmp_lock) can be locked: a run in
# another PID namespace sharing OUTDIR (a container) has no /proc/PID here, and lost its files
# to that test (a breaker's find); without a .lock file (an older wpack's run) when there is no
# /proc/PID. Never fails (no $(...): it may run after trap_signals)
rm_stale_tmp() {
    local f pid n=0 s=s gone
    for f in "$2".tmp[0-9]*; do
        [ -e "$f" ] || [ -L "$f" ] || continue
        pid=${f#"$2".tmp}
        pid=${pid%%.*}
        [[ $pid =~ ^[0-9]+$ ]] || continue
        if [ -e "$2.tmp$pid.lock" ] && command -v flock > /dev/null; then
            gone=0
            { flock -n 7 && gone=1; } 7< "$2.tmp$pid.lock" 2> /dev/null || true
        elif [ -d "/proc/$pid" ]; then
            gone=0
        else
            gone=1
        fi
        [ "$gone" = 1 ] || continue
        rm -f -- "$f" 2> /dev/null && n=$((n + 1))
    done
    [ "$n" -ne 1 ] || s=
    [ "$n" -eq 0 ] || echo "$1: removed $n temporary file$s a killed run left ($2.tmpPID.*)" >&2
    return 0
}

# rm_made: removes the folders outdir_made listed, those left empty; never fails
rm_made() {
    local m
    for m in ${made[@]+"${made[@]}"}; do rmdir -- "$m" 2> /dev/null || true; done
}

# take_dist ARG...: dist=1 when --dist is among the ARGs (anywhere, once is enough, else dist
# empty) and the array args the others, in order; the caller then sets -- "${args[@]}" (given
# last, --dist was taken for a CALIB or a PALETTE: fresh users' and a breaker's finds)
take_dist() {
    local a
    dist=
    args=()
    for a in "$@"; do
        if [ "$a" = --dist ]; then dist=1; else args+=("$a"); fi
    done
}

# refuse_protected NAME STATUS FILE...: exits STATUS after one line when a FILE, an output's
# name, is a write-protected file (no write bit, or not writable by this user), as every
# program's -o refuses it (lib/cli.c): the pipelines' mv replaced a 0444 GGUF, root or not (a
# breaker's find)
# Another user's file in a sticky folder (/tmp) likewise: writable, but mv over it failed after all
# the work, with mv's own line (a re-tester's find; lib/cli.c refuses it the same way).
refuse_protected() {
    local name=$1 status=$2 f me dir
    me=$(id -u)
    shift 2
    for f in "$@"; do
        [ -f "$f" ] || continue
        if [ "$(( 8#$(stat -L -c %a -- "$f") & 8#222 ))" -eq 0 ] || ! [ -w "$f" ]; then
            echo "$name: $f: write-protected: not replaced (make it writable, or remove it, first)" >&2
            exit "$status"
        fi
        # (mv renames over the name itself, a link too: its folder and its owner)
        dir=$(dirname -- "$f")
        if [ -k "$dir" ] && [ "$me" -ne 0 ] && [ "$(stat -c %u -- "$f")" -ne "$me" ] && [ "$(stat -c %u -- "$dir")" -ne "$me" ]; then
            echo "$name: $f: another user's file in a sticky folder: not replaced (write elsewhere)" >&2
            exit "$status"
        fi
    done
}

# refuse_not_bundle NAME STATUS FILE: exits STATUS after one line when FILE, the name of a
# .dist.bundle that a run without --dist removes as an earlier run's, is there and no bundle (a
# wpack stream, or one in a zstd frame, as --dist writes it): a text file of that name was
# removed, "it restored that run's GGUF" (a breaker's find), then a zstd'd text, a FIFO and a
# dangling link (a re-tester's)
refuse_not_bundle() {
    local what=
    if [ -L "$3" ] && ! [ -e "$3" ]; then
        what="a link to nothing"
    elif ! [ -e "$3" ] || [ -d "$3" ]; then   # (a folder: said by each pipeline, "a directory where ...")
        return 0
    elif ! [ -f "$3" ]; then
        what="not a regular file"
    else
        case $(magic_of "$3") in
        stream) ;;
        zstd) [ "$(zstd -dcq -- "$3" 2> /dev/null | head -c 8)" = WPACKSTR ] || what="not a bundle" ;;
        *) what="not a bundle" ;;
        esac
    fi
    [ -z "$what" ] || { echo "$1: $3: $what, at the name of an output this run replaces or removes (move it away)" >&2; exit "$2"; }
}

# arg_count_problem MIN MAX NAMES ARG...: nothing when MIN to MAX ARGs are given, else what is
# wrong, one phrase: "missing OUTDIR" (NAMES: the arguments' names, space-separated, in order),
# "too many arguments (got 'X' too)" (the usage line alone was the only word: a breaker's find)
arg_count_problem() {
    local min=$1 max=$2 n
    read -r -a n <<< "$3"
    shift 3
    if [ $# -gt "$max" ]; then
        shift "$max"
        printf "too many arguments (got '%s' too)\n" "$1"
    elif [ $# -lt "$min" ]; then
        local want=("${n[@]:$#:$((min - $#))}") s= i
        for i in "${!want[@]}"; do   # A; A and B; A, B and C
            if [ "$i" -eq 0 ]; then s=${want[0]}
            elif [ "$i" -eq $((${#want[@]} - 1)) ]; then s="$s and ${want[$i]}"
            else s="$s, ${want[$i]}"; fi
        done
        printf 'missing %s\n' "$s"
    fi
}

# refuse_option_words NAME HINT ARG...: exits 2 after one line when an ARG is an option's word,
# -h or one that starts with -- (--help last, --threads N, --version, --): taken for a path, a
# trailing --help made a folder of that name and ran the whole pipeline in it (a fresh user's
# find); a path of such a name goes as ./PATH, which the line says, after HINT
refuse_option_words() {
    local name=$1 hint=$2 a
    shift 2
    for a in "$@"; do
        case $a in
        -h | --*)
            echo "$name: $a: not an option here ($hint; a path: ./$a)" >&2
            exit 2 ;;
        esac
    done
}

# threads_opt NAME: the array thr, --threads N from WPACK_THREADS (leading zeros dropped; empty
# when it is unset or empty); exits 2 after one line when it is no count from 1 to 512
threads_opt() {
    thr=()
    [ -n "${WPACK_THREADS:-}" ] || return 0
    # (any leading zeros, as the programs read it, lib/par.c: 0002 was refused here alone, a
    # breaker's find)
    [[ $WPACK_THREADS =~ ^0*[0-9]{1,3}$ ]] && [ "$((10#$WPACK_THREADS))" -ge 1 ] && [ "$((10#$WPACK_THREADS))" -le 512 ] ||
        { echo "$1: WPACK_THREADS '$WPACK_THREADS': expected a count of threads, 1 to 512" >&2; exit 2; }
    thr=(--threads "$((10#$WPACK_THREADS))")
}

# outdir_not_file NAME OUTDIR WHAT: exits 2 after one line when OUTDIR is named as a file
# (NAME.gguf or .bundle, in any case) and no folder of that name is there: llama-quantize's OUT,
# uw/out.gguf, was made a folder with the outputs in it (a fresh user's find); WHAT names them
outdir_not_file() {
    if [[ ${2,,} == ?*.gguf || ${2,,} == ?*.bundle || ${2,,} == ?*.safetensors ]] && ! [ -d "$2" ]; then
        echo "$1: OUTDIR $2: named as a file; OUTDIR is the folder $3 (such as $(dirname -- "$2"))" >&2
        exit 2
    fi
}

# model_name FILE: the NAME in the outputs' names: FILE's name without its directory and a last
# .gguf or .GGUF (Story.GGUF named them Story.GGUF-POINT.gguf, and make model, which looked for
# Story-POINT.gguf, built the point again at every run: a helper's find); make's MODEL_NAME is
# the same; a last .safetensors in any case (unweight's: make takes no safetensors file)
model_name() {
    local n=${1##*/}
    case $n in
    ?*.gguf | ?*.GGUF) n=${n%.*} ;;
    *) [[ ${n,,} != ?*.safetensors ]] || n=${n%.*} ;;
    esac
    printf '%s\n' "$n"
}

# magic_of FILE: what FILE's first bytes say it is: gguf (GGUF's magic and a version, 1 to 3), stream (a wpack stream
# or bundle: WP_STREAM_MAGIC, lib/stream.h), hessians (a stream whose first record, after the
# 16-byte header, is a hessian one: tag "WREC", kind WP_REC_HESSIAN 4; lib/stream's
# wp_file_is_hessians in C), safetensors (a header length, then '{': lib/safetensors'
# wp_st_magic), json (a '{' first), zstd (a zstd frame: a compressed file, or a --dist
# bundle), gzip, or nothing. (lazyweights' CALIB check and model_not_gguf each read the bytes
# with their own od and case: a last read of the change.)
magic_of() {
    case $(od -An -tx1 -N22 -- "$1" 2> /dev/null | tr -d ' \n') in
    # (with its version, 1 to 3: a text starting "GGUF notes" was one, a breaker's find)
    4747554601000000* | 4747554602000000* | 4747554603000000*) echo gguf ;;
    # (hessian's output named: "a wpack stream or bundle" sent a fresh user to ggufpack)
    575041434b535452????????????????575245430400) echo hessians ;;
    575041434b535452*) echo stream ;;
    # a u64 header length below 2^56, then the JSON header's '{' (wp_st_magic checks the rest)
    ??????????????007b*) echo safetensors ;;
    # (a sharded model's index, model.safetensors.index.json, went to ggufcat: "bad magic")
    7b*) echo json ;;
    28b52ffd*) echo zstd ;;
    1f8b*) echo gzip ;;
    esac
}

# model_not_gguf FILE: nothing, or why FILE is no GGUF model when it starts as a wpack stream or
# bundle does, or as a zstd frame (a compressed GGUF, or a --dist bundle) does; the readers say
# the rest. (A command substitution: call it before trap_signals.)
model_not_gguf() {
    case $(magic_of "$1") in
    stream) echo "$1: a wpack stream or bundle, not a GGUF model (ggufpack or unbundle writes the GGUF)" ;;
    hessians) echo "$1: Hessians (hessian's output), not a GGUF model: they go to gptq --hessian" ;;
    zstd) echo "$1: a zstd file, not a GGUF model (a compressed GGUF: zstd -d it first; a --dist bundle: unbundle writes its GGUF)" ;;
    esac
}
