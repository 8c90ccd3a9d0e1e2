/*
 * cli.h - what every wpack program shares: its name in messages, one-line
 * fatal errors, and outputs that are never left half-written.
 *
 * Output rule: a named output (-o FILE) is written to FILE.tmp.XXXXXX in the
 * same directory (FILE's name cut to fit NAME_MAX with the suffix) and
 * renamed over FILE only by wp_out_commit(); on any fatal
 * error the temporary file is removed. A symbolic link FILE: the file it
 * names is replaced the same way, the link kept. A device, FIFO or socket
 * (-o /dev/null): written in place, never replaced. When the output is stdout and stdout
 * is a regular file (`prog > out`), a fatal error truncates it back to where
 * the program started, so a failed run leaves it empty rather than partial
 * (`prog >> log`: back to the size the file had, earlier content kept) -
 * when the file holds the run's bytes alone: stdout is then written through a
 * stream that counts them (fopencookie, glibc), and a file another process
 * wrote to meanwhile (make -j's jobs sharing one log) is left as it is. A
 * signal that ends the program (INT, TERM, HUP, PIPE) does the same; one the
 * program was started with ignored (nohup's HUP) stays ignored.
 */
#ifndef WPACK_CLI_H
#define WPACK_CLI_H

#include <stdio.h>

#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set the program name used in messages ("ggufcat"), the signal handlers
 * that remove a temporary output (for INT, TERM, HUP and PIPE, each unless
 * ignored when the program started, as gzip does), and /dev/null on a closed descriptor 0, 1
 * or 2, opened so that reading or writing it still fails (EBADF) while no
 * later file takes it; call first in main. */
void wp_cli_init(const char *prog);
/* End the program, at every exit (main's return, wp_die, --help), with stdio
 * flushed and then _exit: shared libraries' destructors do not run. For the
 * programs linked with OpenBLAS (gptq, hessian): its destructor
 * (gotoblas_quit) joins its worker threads, and under an address-space
 * limit (ulimit -v below about 128 MiB a thread) a worker whose buffer
 * could not be mapped retries for ever: the program hung after its work,
 * at 100 % of a CPU (a breaker's find). Call after wp_cli_init. glibc's
 * on_exit. */
void wp_cli_skip_destructors(void);
/* The program name given to wp_cli_init. */
const char *wp_prog(void);

/* Print "prog: message" (printf-style, one line) to stderr, remove or
 * truncate any uncommitted output, exit 1. */
void wp_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* wp_die for a hook that must not return and may run on any thread (ggml's
 * abort callback, inside libllama): prints the line, removes the temporary
 * output or truncates a redirected stdout as a signal does (no stdio call on
 * the output), and ends with _exit(1): no atexit handlers, buffered output
 * dropped. A second caller (another thread) waits for the first's _exit. */
void wp_die_now(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Print "prog: warning: message" to stderr. */
void wp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A progress line, as zstd's: "prog: message" on standard error when it is a
 * terminal, rewritten in place by the next call ("\r", the rest of the line
 * erased), cleared by wp_progress_end and before any other line the program
 * says (wp_die, wp_die_now, wp_warn); nothing when standard error is a file
 * or pipe. One fprintf a line: threads' lines do not mix. */
void wp_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void wp_progress_end(void);

/* s as one line for a report: each control byte (below 0x20, and 0x7f) as
 * \xNN, as wp_die writes messages, so that a name holding a newline or tab
 * cannot split a line or a column. Returns buf (n bytes, truncated to fit). */
const char *wp_printable(const char *s, char *buf, size_t n);

/* s as one word of a shell command that a message suggests ("ggufcat
 * 'my model.gguf' | ..."): s itself when it holds only letters, digits and
 * _@%+=:,./- (and is not empty), else in single quotes, each ' as '\''
 * (POSIX sh quoting), or, when s holds a control byte (which a message
 * would escape), as $'...' with \n, \t and \NNN (octal); a name starting
 * with '-' as ./-NAME (./$'-a\nb'). Returns buf (n bytes; 4 x strlen(s) + 6
 * always fit; truncated to fit otherwise). */
const char *wp_shell_word(const char *s, char *buf, size_t n);
/* As wp_shell_word, for a word that is no file name, such as an option (--ftype, -q): a
 * leading '-' kept as it is. */
const char *wp_shell_arg(const char *s, char *buf, size_t n);

/* Stop on record r of input `in` (NULL or "-": stdin), which this program
 * cannot act on: it belongs to a bundle ("unbundle --stream it first") or to
 * the coding pipeline ("PROG takes `takes`", what the program reads, such as
 * "histogram's output"); wp_rec_is_coded, wp_rec_is_bundle, each program
 * says which. */
void wp_cli_refuse_coded(const char *in, const wp_record *r, const char *takes) __attribute__((noreturn));

/* Note that the program reads file `path` (NULL or "-": standard input): an
 * output that would replace it is refused (wp_out_open, wp_out_commit).
 * wp_in_open does this itself; call it for files opened otherwise (a GGUF,
 * a model, a Hessian file). Dies at once ("PATH: is also standard output:
 * ...", or "stdin: ...") when standard output is that same regular file
 * (`prog x >> x`), as cat does. */
void wp_cli_input(const char *path);

/* The first bytes of the file at path, up to cap, into buf: how many (0 when it cannot be
 * opened). For naming a file given where another kind goes; a FIFO is read from. */
size_t wp_file_head(const char *path, void *buf, size_t cap);

/* Open input: NULL or "-" means stdin (refused when it is a terminal:
 * "stdin: a terminal, not a wpack stream ...", as zstd refuses). Dies with
 * "prog: PATH: reason". */
FILE *wp_in_open(const char *path);

/* Open the program's one output: NULL or "-" means stdout (a regular file:
 * stdout is replaced by a stream counting what it writes, see above); otherwise a
 * temporary file beside path, renamed by wp_out_commit(). Dies on failure,
 * and before writing anything when path is a directory or a write-protected
 * regular file (no write bit, or one this user may not write: a rename
 * would replace it all the same). */
FILE *wp_out_open(const char *path);
/* Flush, close and publish the output opened by wp_out_open. Dies on a
 * write error (and then removes the temporary file). */
void wp_out_commit(void);
/* Give up the output opened by wp_out_open, as wp_die does: remove its
 * temporary file (the file it would replace kept as it was), or truncate a
 * redirected stdout back to where the run started. For a program that ends
 * otherwise than by wp_die (its own exit status) or that drops its output
 * and goes on (a failed check: no new tuning file). No-op without one. */
void wp_out_abort(void);
/* wp_out_abort for a signal handler (a program's own, as wprun's for SIGBUS): the temporary
 * output unlinked, or a standard output redirected to a file cut back, with async-signal-safe
 * calls alone (no stdio); the caller then exits with _exit. */
void wp_out_abort_now(void);
/* What a program writes, for wp_out_refuse_tty: a wpack stream (bundles too,
 * wpack-stream(5)), a GGUF file, a wpack stream of Hessians (hessian's), or a
 * .safetensors file (safetensorspack's, unbundle's of one). */
typedef enum { WP_OUT_STREAM, WP_OUT_GGUF, WP_OUT_HESSIANS, WP_OUT_SAFETENSORS, WP_OUT_RESTORED } wp_out_kind;
/* (WP_OUT_RESTORED: a GGUF or a safetensors file, unbundle's before its bundle says which:
 * refused to a terminal and under a compressor's suffix, in words that fit both) */
/* Die "refusing to write WHAT to a terminal (redirect it, pipe it, or use -o
 * FILE)" when path is standard output (NULL or "-") and that is a terminal,
 * and "PATH: refusing to write WHAT to a terminal (give -o a FILE)" when path
 * names one (-o /dev/stdout, -o /dev/tty):
 * the binary outputs (WHAT "a binary wpack stream" for WP_OUT_STREAM, "a GGUF
 * file" for WP_OUT_GGUF), as zstd refuses; wp_cli_writer calls it. Text
 * reports are not refused. A path other than "-" that wp_out_open would
 * refuse (an empty name, a directory, a write-protected file) dies here too,
 * so a program that works long before it opens its output can call this
 * first; so does a WP_OUT_STREAM or WP_OUT_HESSIANS to a file named NAME.gguf, in any case (the
 * path, the file a link of that name points to, or a standard output
 * redirected to one, as /proc/self/fd/1 names it): llama.cpp could not load
 * it (gzip likewise refuses a name ending .gz), or NAME.gguf.zst (.gz, .xz,
 * .bz2, .lz4, .lzma), which zstd -d (gzip -d, ...) would make such a NAME.gguf;
 * a WP_OUT_GGUF or WP_OUT_SAFETENSORS to one named NAME.zst, .gz, .xz, .bz2, .lz4
 * or .lzma (it is written uncompressed); a WP_OUT_SAFETENSORS to NAME.gguf; and
 * any other kind to one named NAME.safetensors, which safetensors loaders could
 * not read. */
void wp_out_refuse_tty(const char *path, wp_out_kind kind);
/* The default --threads of a program: wp_par_env_threads(dflt, ...), the
 * environment's WPACK_THREADS when set, else dflt; dies with its one line
 * ("WPACK_THREADS 'x': expected a count of threads, 1 to 512") when it is set
 * to anything else. */
int wp_cli_threads(int dflt);
/* The kind of restored file the output named path (NULL or "-": standard
 * output) is named for: WP_OUT_SAFETENSORS for NAME.safetensors (and with a
 * compressor's suffix after it, .zst ...), WP_OUT_GGUF for NAME.gguf (the
 * same), else WP_OUT_RESTORED; the name read as wp_out_refuse_tty reads it
 * (path, the file a symbolic link of that name points to, or the regular file
 * standard output is redirected to), in any case. For unbundle, whose output's
 * kind shows only at its bundle's first record, to refuse a name before. */
wp_out_kind wp_out_restored_kind(const char *path);
/* The output's name for messages ("stdout" or the path). */
const char *wp_out_name(void);
/* The file the output opened by wp_out_open will replace when committed: its
 * path, or the file its symbolic link names; NULL where the output is written
 * in place (standard output, a FIFO or device) or none is open. */
const char *wp_out_target(void);
/* Whether the output opened by wp_out_open has room for bytes more bytes,
 * for a program that knows its output's size before a long run (hessian):
 * on a regular file (its temporary file, or a standard output redirected to
 * one), the free space of its file system for this user (fstatvfs's
 * f_bavail) and the file-size limit (ulimit -f, RLIMIT_FSIZE, less what the
 * file holds); a pipe, FIFO or device always has.  Returns 1, or 0 with one
 * phrase in why (n bytes): "53.1 GiB needed, 20.3 GiB free on its file
 * system", "53.1 GiB needed, 976.6 MiB allowed by ulimit -f" (three decimals
 * where one says the two alike).  The limit counts from where the writes
 * start (the file's offset). */
int wp_out_room(uint64_t bytes, char *why, size_t n);

/* A stream reader on path (NULL/"-": stdin); dies on a bad header. */
wp_reader *wp_cli_reader(const char *path);
/* Read the next record; dies on error. Returns 1, or 0 at the end. */
int wp_cli_next(wp_reader *rd, wp_record *r);
/* A stream writer on wp_out_open(path), payloads aligned to 64 bytes. */
wp_writer *wp_cli_writer(const char *path);
/* The same with payload alignment `align` (a power of two 1..4096). */
wp_writer *wp_cli_writer_aligned(const char *path, unsigned align);
/* The same, the stream inside one zstd frame at level zlevel (0 = plain;
 * wp_writer_open_framed): distribution bundles. */
wp_writer *wp_cli_writer_framed(const char *path, unsigned align, int zlevel);
/* Write one record; dies on error. */
void wp_cli_put(wp_writer *w, const wp_record *r);
/* Close the writer (end record, index) and commit the output; dies on error. */
void wp_cli_writer_close(wp_writer *w);

/* Flush stdout and die ("stdout: write error: reason") when anything written
 * to it was lost (a full disk, a closed descriptor): for programs whose
 * stdout is a report, not a wp_out_open output; call before exit 0. */
void wp_stdout_close(void);
/* Print usage to stdout and exit 0 (--help), or die when it cannot be
 * written (wp_stdout_close). */
void wp_usage_exit(const char *usage) __attribute__((noreturn));

/* The version of the wpack programs and library (also lib/wpack.pc's). */
#define WPACK_VERSION "0.1.0"

/* The options that ask a program about itself: --help or -h (usage, as
 * wp_usage_exit) and --version ("PROG (wpack) 0.1.0, wpack stream format
 * 2"), each printed to stdout, exit 0; returns when argument a is
 * neither. */
void wp_cli_info(const char *a, const char *usage);
/* Whether word v is an option word ("-v", "--stream"), not a value: "-"
 * alone and numbers such as "-1" or "-.5" are values. */
int wp_cli_is_option(const char *v);

/* The value of an option argv[*i] (*i advanced to
 * it); the caller has checked that argv[*i + 1] exists. An option word there
 * ("-v", "--stream"; not "-" alone or a number such as "-1") is a missing
 * value, not the name: dies
 * "OPT: missing value (got the option WORD)" (unbundle -o --stream wrote a
 * GGUF named --stream); an empty word dies "OPT: an empty value (try
 * --help)", or for -o "-o: an empty file name". ("OPT=", through
 * wp_cli_arg, dies "OPT: needs a value (try --help)".) */
const char *wp_cli_value(char **argv, int *i);

/* Value v of option opt, where an earlier opt gave prev (NULL: none): returns
 * v, or dies "OPT: given twice ('PREV', then 'V'): give one" when prev is
 * another value (gptq --type Q4_0 --type Q8_0 wrote Q8_0 unsaid, ggufcat -o
 * x -o y wrote y alone). The same value twice is taken; with any_case, in
 * any case (a type or preset name: q4_0 is Q4_0). */
const char *wp_cli_once(const char *opt, const char *prev, const char *v, int any_case);

/* The options every filter shares, for argv[*i] once the program's own
 * options did not match: --help, -h or --version (wp_cli_info),
 * -o OUT (sets *out), "-" or a non-option argument (the input, once: sets
 * *in), "--" (the options end: the words after it are the input, whatever
 * they look like; *i advanced to the last), anything else dies ("unknown
 * option", "one input at a time"). */
void wp_cli_common(int argc, char **argv, int *i, const char *usage, const char **in, const char **out);

/* Die for a word a given beside the one input a filter takes, first: "one WHAT at a time
 * (got 'a' too)", with ", no such file: the output goes to standard output" when a names no
 * file and is no option (most likely the output, as cp and llama-quantize take it), or with
 * "; 'FIRST' is no file: the output goes to standard output" when first names none and a
 * does (the output given first: unbundle out.gguf m.bundle). */
void wp_cli_second_input(const char *first, const char *a, const char *what) __attribute__((noreturn));

/* Whether argv[*i] is the option `name` that takes a value, GNU style:
 * "NAME VALUE" (*i advanced to the value, which wp_cli_value checks) or
 * "NAME=VALUE". Returns the value, or NULL when argv[*i] is something else
 * (*i unchanged). Dies "NAME: needs a value (try --help)" when NAME ends the
 * line or "NAME=" gives nothing. */
const char *wp_cli_arg(int argc, char **argv, int *i, const char *name);

/* Whether argument a is the option `flag`, one that takes no value (hessian's
 * --share-inputs). Dies on "FLAG=VALUE": "FLAG: takes no value (try --help)"
 * (wp_cli_opt would call it an unknown option). */
int wp_cli_flag(const char *a, const char *flag);

/* Which of names[0 .. n-1] argument a is, as "NAME" or "NAME=VALUE": that
 * name, or NULL. For another tool's options a program does not take, named
 * as such rather than "unknown option" (hessian: llama-imatrix's; gptq:
 * llama-quantize's). */
const char *wp_cli_option_of(const char *a, const char *const *names, size_t n);

/* Options that all take a value, GNU style (--name value or --name=value),
 * for programs without positional arguments (hessian, ppl): reads the option
 * at argv[*i] (advancing *i past its value), prints usage and exits 0 for
 * --help/-h, dies for an option not in takes[0 .. n-1] or without a value
 * (last on the line, or "NAME=" with nothing after it), and for an argument
 * that is no option ("FILE: not an option: PROG takes no file without its
 * option"). "--" ends the options: NULL when it is the last argument,
 * and the word after it is refused as a file.
 * Returns the option's name (one of takes) and sets *value, or NULL ("--"). */
const char *wp_cli_opt(int argc, char **argv, int *i, const char *usage, const char *const *takes, size_t n,
                       const char **value);

/* Whether s is written as a plain decimal number starts: a digit, or '.'
 * and a digit, after an optional '-', and no x (hex) in it. strtoll and
 * strtod also take a leading blank, a '+' and hex ("0x1p0"): checked first,
 * every program takes one form (a breaker's find). 1 or 0. */
int wp_plain_decimal(const char *s);

/* Parse a number option value, written as a plain decimal (digits, a '.' and
 * an exponent for a float, an optional leading '-'; no blank, '+' or hex),
 * in lo .. hi; dies naming the option when malformed or out of range. */
long long wp_arg_int(const char *opt, const char *val, long long lo, long long hi);
double    wp_arg_float(const char *opt, const char *val, double lo, double hi);
/* Parse a byte count: digits, then an optional K, M, G or T (either case,
 * powers of 1024) and an optional B ("8G", "512MiB" is refused, "1mb" is
 * 1 MiB), from 1 to 2^64 - 1 bytes; dies naming the option otherwise ("OPT:
 * expected a positive byte count (suffix K, M, G or T), got 'VAL'"). For
 * hessian --max-memory and WPACK_MEMORY. */
uint64_t  wp_arg_bytes(const char *opt, const char *val);

#ifdef __cplusplus
}
#endif
#endif
