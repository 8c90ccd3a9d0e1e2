/* llm_common.h - libllama set-up shared by the programs that run llama.cpp's
 * forward pass (ppl, hessian) and the test tool llgen.
 *
 * Header-only on purpose: lib/ is compiled without llama.h and libwpack.a is
 * linked into every program, so nothing that calls libllama may live there.
 * Every function is static inline; include this file from exactly one .c per program.
 *
 * What it does, all after llama.cpp's own tools (common/common.cpp, arg.cpp):
 *   - silences llama.cpp's and ggml's logging unless WPACK_LLAMA_LOG is set;
 *   - turns ggml's aborts (GGML_ASSERT, GGML_ABORT inside libllama: a model
 *     whose vocabulary has a duplicate token) into one line naming the file
 *     and the step (llm_step), exit 1, no output left behind (wp_die_now),
 *     where ggml printed the assertion and a gdb backtrace and aborted (134);
 *   - loads the ggml backends (the CPU backend is a separate .so in the
 *     pinned reference build) before any model is loaded;
 *   - reads a text file (or "-", standard input) as `-f FILE` does and
 *     tokenizes it as common_tokenize does (special tokens added, not parsed);
 *   - loads a model with llama.cpp's default model parameters.
 */
#ifndef WPACK_LLM_COMMON_H
#define WPACK_LLM_COMMON_H

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gguf_context; /* llama.h names it in a prototype; its header is not needed */
#include "ggml-backend.h"
#include "llama.h"

#include "cli.h"
#include "cxx_guard.h"
#include "gguf_file.h"
#include "imatrix.h"
#include "text.h"
#include "zframe.h"

/* llama.cpp's tools' names of the options hessian and ppl share (llama-perplexity's and
 * llama-imatrix's -m, -f, -c, -t, -b and --file, --ctx-size, --batch-size, each taking a value),
 * for their wp_cli_opt tables: LLM_LLAMA_NAMES among the names taken, then llm_long_name(a) is
 * ours ("--model", ...) for a, else a itself. (The two programs each carried the table: a last
 * read of the change.) */
#define LLM_LLAMA_NAMES "-m", "-f", "-c", "-t", "-b", "--file", "--ctx-size", "--batch-size", "-ngl", \
                        "--n-gpu-layers", "--gpu-layers"
static inline const char *llm_long_name(const char *a)
{
    static const char *const longer[][2] = {{"-m", "--model"},      {"-f", "--text"},      {"-c", "--ctx"},
                                            {"-t", "--threads"},    {"-b", "--batch"},     {"--file", "--text"},
                                            {"--ctx-size", "--ctx"}, {"--batch-size", "--batch"},
                                            {"-ngl", "--n-gpu-layers"}, {"--gpu-layers", "--n-gpu-layers"},
                                            {"--output-file", "-o"}, {"--output", "-o"}};
    for (size_t k = 0; k < sizeof longer / sizeof *longer; k++)
        if (!strcmp(a, longer[k][0]))
            return longer[k][1];
    return a;
}

/* llama.cpp's -ngl N (--n-gpu-layers): the layers llm_load_model offloads to a GPU backend of
 * the libllama in use (the pinned one has none: the CPU runs them all); -1 for llama.cpp's
 * default. (-ngl 99, a llama.cpp user's habit, was an unknown option: a new user's trial.) */
static int llm_gpu_layers = -1;

/* The options hessian and ppl share beyond their names (a, its long name, and its value v):
 * 1 when a is one of them, taken, else 0. */
static inline int llm_shared_opt(const char *a, const char *v)
{
    if (strcmp(a, "--n-gpu-layers"))
        return 0;
    /* as llama.cpp's common/arg.cpp takes it: N, "all", or "auto" (-1: its default) */
    if (!strcmp(v, "auto") || !strcmp(v, "-1"))
        llm_gpu_layers = -1;
    else if (!strcmp(v, "all"))
        llm_gpu_layers = INT32_MAX;
    else
        llm_gpu_layers = (int)wp_arg_int("-ngl", v, 0, INT32_MAX);
    return 1;
}

/* llama.cpp's first error line since llm_log_error_reset (its reason, where a
 * load fails: "check_tensor_dims: tensor 'token_embd.weight' has wrong
 * shape; ..."), without its function's prefix, or "". */
static char llm_log_error[512];
static int llm_log_error_done;   /* the line is complete (its newline seen) */

static inline void llm_log_error_reset(void)
{
    llm_log_error[0] = 0;
    llm_log_error_done = 0;
}

/* Log callback: drops everything unless WPACK_LLAMA_LOG is set in the
 * environment, in which case llama.cpp's text goes to stderr unchanged;
 * the first error line is kept either way (llm_log_error). */
static inline void llm_log_cb(enum ggml_log_level level, const char *text, void *user)
{
    if (user)
        fputs(text, stderr);
    if (llm_log_error_done || !text || (level != GGML_LOG_LEVEL_ERROR && !(level == GGML_LOG_LEVEL_CONT &&
                                                                           llm_log_error[0])))
        return;
    const size_t have = strlen(llm_log_error);
    snprintf(llm_log_error + have, sizeof llm_log_error - have, "%s", text);
    char *nl = strchr(llm_log_error, '\n');
    if (nl) {
        *nl = 0;
        llm_log_error_done = 1;
    }
}

/* llm_log_error less llama.cpp's "function: " prefixes that say where, not
 * what ("llama_model_load: error loading model: "), or NULL when empty. */
static inline const char *llm_log_reason(void)
{
    const char *r = llm_log_error;
    while (*r == ' ')
        r++;
    for (const char *p = strstr(r, ": error loading model: "); p; p = NULL)
        r = p + strlen(": error loading model: ");
    static char out[sizeof llm_log_error];   /* runs of blanks as one ("expected     64,    512") */
    size_t n = 0;
    for (; *r && n + 1 < sizeof out; r++)
        if (*r != ' ' || (n && out[n - 1] != ' '))
            out[n++] = *r;
    while (n && out[n - 1] == ' ')
        n--;
    out[n] = 0;
    return n ? out : NULL;
}

/* What the program is doing in libllama, for the message of an abort there
 * (llm_abort_cb): the file concerned (NULL: none) and the problem. */
static const char *llm_step_what, *llm_step_why = "llama.cpp failed";

/* Name the step about to run in libllama: an abort inside it says
 * "prog: what: why (ggml's message)". */
static inline void llm_step(const char *what, const char *why)
{
    llm_step_what = what;
    llm_step_why = why;
}

/* Name the tokenization of text file text_name by model_path's vocabulary: a
 * stop inside it may be the text's or the vocabulary's (a model whose
 * vocabulary lacks a byte token threw), so the message names both. */
static inline void llm_step_tokenize(const char *text_name, const char *model_path)
{
    static char why[PATH_MAX + 96];
    snprintf(why, sizeof why, "llama.cpp cannot tokenize this text with the vocabulary of %s", model_path);
    llm_step(text_name, why);
}

/* ggml's abort callback (ggml_set_abort_callback): one line naming the step,
 * with ggml's message less the build directory of its source file
 * ("llama-vocab.cpp:2501: GGML_ASSERT(...) failed"), then exit 1 through
 * wp_die_now: any thread may call it, and the temporary output goes. */
static inline void llm_abort_cb(const char *msg)
{
    const char *colon = strchr(msg, ':'), *m = msg;
    for (const char *p = msg; colon && p < colon; p++)
        if (*p == '/')
            m = p + 1;
    if (llm_step_what)
        wp_die_now("%s: %s (%s)", llm_step_what, llm_step_why, m);
    wp_die_now("%s (%s)", llm_step_why, m);
}

/* An exception thrown in libllama that nothing caught (wp_on_uncaught): one
 * line naming the step, as an abort's, then exit 1 through wp_die_now. */
static inline void llm_uncaught_cb(const char *what)
{
    if (llm_step_what)
        wp_die_now("%s: %s (libllama threw %s)", llm_step_what, llm_step_why, what);
    wp_die_now("%s (libllama threw %s)", llm_step_why, what);
}

/* Set up libllama for this process: logging (see llm_log_cb), aborts (see
 * llm_abort_cb) and uncaught exceptions (llm_uncaught_cb), backend loading, llama_backend_init.  Backends are loaded from the directory in
 * WPACK_GGML_BACKEND_DIR if set, else from the directory that holds the
 * libggml actually linked in (found with dladdr; that is where the pinned
 * reference keeps libggml-cpu-*.so), and, if that registers no device, from
 * ggml's default search path (a system llama.cpp).  Errors: returns -1 when
 * no backend device is available afterwards, 0 otherwise. */
static inline int llm_setup(void)
{
    const char *lg = getenv("WPACK_LLAMA_LOG");
    void *verbose = (lg && *lg && strcmp(lg, "0") != 0) ? (void *)1 : NULL;
    llama_log_set(llm_log_cb, verbose);
    ggml_log_set(llm_log_cb, verbose);
    ggml_set_abort_callback(llm_abort_cb);
    wp_on_uncaught(llm_uncaught_cb);   /* after libggml's own, set as it loaded */
    llm_step(NULL, "llama.cpp failed while loading its backends");

    const char *dir = getenv("WPACK_GGML_BACKEND_DIR");
    char buf[PATH_MAX];
    if (!dir || !*dir) {
        Dl_info info;
        dir = NULL;
        if (dladdr((void *)ggml_backend_load_all_from_path, &info) && info.dli_fname) {
            snprintf(buf, sizeof buf, "%s", info.dli_fname);
            char *slash = strrchr(buf, '/');
            if (slash) {
                *slash = '\0';
                dir = buf;
            }
        }
    }
    if (ggml_backend_dev_count() == 0 && dir)
        ggml_backend_load_all_from_path(dir);
    if (ggml_backend_dev_count() == 0)
        ggml_backend_load_all();
    llama_backend_init();
    return ggml_backend_dev_count() > 0 ? 0 : -1;
}

/* The name of text file path in messages: "stdin" for "-". */
static inline const char *llm_text_name(const char *path)
{
    return strcmp(path, "-") ? path : "stdin";
}

/* Read the whole file at path ("-": standard input, read to its end) into a
 * NUL-terminated buffer, dropping one trailing '\n' as llama.cpp's
 * `-f FILE` does.  *len receives the length in bytes without the NUL and the
 * dropped newline; *raw_len, when raw_len is not NULL, the number of bytes
 * read (*len + 1 when a newline was dropped).  Errors: NULL with errno set
 * (open/read failure or out of memory). */
static inline char *llm_read_text(const char *path, size_t *len, size_t *raw_len)
{
    const int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int err = buf ? 0 : ENOMEM;
    while (!err) {
        if (cap - n < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                err = ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                err = errno ? errno : EIO;
            break;
        }
    }
    if (!is_stdin)
        fclose(f);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    if (raw_len)
        *raw_len = n;
    if (n > 0 && buf[n - 1] == '\n')
        n--;
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Die for a word a of hessian's or ppl's command line that names a file without its option,
 * with the option it goes with: "m.gguf: not an option: ppl takes the model as -m m.gguf (try
 * --help)" for a GGUF, "... takes a text as -f c.txt ..." for another regular file (it said
 * "takes no file without its option", no way on: a note's left alone); for hessian, a word
 * NAME.hess, "h.hess: not an option: hessian writes its Hessians to -o h.hess
 * (try --help)", whether or not it is there yet (the same: a note's left alone). Returns for an
 * option, or another word that names no readable regular file (wp_cli_opt says what it is). */
static inline void llm_bare_word(const char *a)
{
    struct stat st;
    char word[4 * 4096 + 6];
    const size_t l = strlen(a);
    if (a[0] != '-' && !strcmp(wp_prog(), "hessian") && l > 5 && !strcasecmp(a + l - 5, ".hess"))
        wp_die("%s: not an option: hessian writes its Hessians to -o %s (try --help)", a,
               wp_shell_word(a, word, sizeof word));
    if (a[0] == '-' || stat(a, &st) || !S_ISREG(st.st_mode))
        return;
    FILE *f = fopen(a, "rb");
    if (!f)
        return;
    uint8_t h[4];
    const size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    wp_die("%s: not an option: %s takes %s as %s %s (try --help)", a, wp_prog(),
           wp_gguf_magic(h, n) ? "the model" : "a text", wp_gguf_magic(h, n) ? "-m" : "-f",
           wp_shell_word(a, word, sizeof word));
}

/* Why text[0..len), read by llm_read_text from the --text file at path ("-": standard input),
 * is no text: "a GGUF file (the model goes to --model)" when it starts with GGUF's magic
 * ("an importance matrix (...)" when its first 64 KiB hold llama-imatrix's key
 * imatrix.chunk_count), "a
 * zstd frame (decompress it first: zstd -d -o F < F.zst; a text is read as it is)" or "a gzip
 * file (... zstd -d -o F < F.gz, as zstd reads gzip ...)" when it starts with theirs (with
 * path's own names, quoted as a shell reads them back; without the suffix, OUT is F.txt; for standard input, "pipe it
 * through zstd -dc first"), "a binary file (a NUL byte at byte N)" when it holds a NUL; NULL
 * for a text. why holds n bytes. (hessian --text m.gguf ran, exit 0, on the model's bytes
 * tokenized: a new user's trial; a zstd'd text was "a binary file", no way on: a helper's;
 * its first way on, "zstd -dc it > TEXT.txt", could not be pasted: a fresh user's.) */
static inline const char *llm_not_text(const char *text, size_t len, const char *path, char *why, size_t n)
{
    const char *nul = memchr(text, 0, len);
    const int zst = wp_zframe_magic((const uint8_t *)text, len);
    const int gz = len >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b;
    /* a GGUF by its magic and a version after it (a text starting "GGUF notes" was refused as
       one: a breaker's find) */
    const int gguf = wp_gguf_head((const uint8_t *)text, len);
    if (gguf && memmem(text, len < 65536 ? len : 65536, WP_IMATRIX_KEY_CHUNK_COUNT, strlen(WP_IMATRIX_KEY_CHUNK_COUNT))) {
        /* llama-imatrix's GGUF, by its key in the header (it was "a GGUF file (the model goes to
           --model)": a new user's trial) */
        snprintf(why, n, "an importance matrix (llama-imatrix's output; it goes to gptq --imatrix)");
    } else if (gguf) {
        snprintf(why, n, "a GGUF file (the model goes to --model)");
    } else if (wp_imatrix_dat_head((const uint8_t *)text, len)) {   /* (it was "a binary file": a breaker's) */
        snprintf(why, n, "an importance matrix (llama-imatrix's imatrix.dat; it goes to gptq --imatrix)");
    } else if ((zst || gz) && !strcmp(path, "-")) {
        snprintf(why, n, "a %s (pipe it through %s first: a text is read as it is)", zst ? "zstd frame" : "gzip file",
                 zst ? "zstd -dc" : "gzip -dc");
    } else if (zst || gz) {
        /* into the name without its suffix (.zst, .gz), or with .txt added, by a command that
           leaves a file of that name as it is (zstd -dc F > OUT overwrote one: a helper's nit)
           and reads F through a link too (zstd -d F and gzip -dk F ignore a link, and a
           Hugging Face snapshot is links: a breaker's find); zstd reads gzip too */
        const char *suf = zst ? ".zst" : ".gz";
        const size_t pl = strlen(path), sl = strlen(suf);
        const int has = pl > sl && !strcmp(path + pl - sl, suf);
        char in[4 * 4096 + 6], out[4 * 4096 + 6], plain[4096 + 8];
        snprintf(plain, sizeof plain, "%.*s%s", (int)(has ? pl - sl : pl), path, has ? "" : ".txt");
        wp_shell_word(path, in, sizeof in);
        wp_shell_word(plain, out, sizeof out);
        /* (pieces, cut at n - 1 bytes under names of thousands: still one line) */
        const char *piece[] = {zst ? "a zstd frame" : "a gzip file", " (decompress it first: zstd -d -o ", out, " < ", in,
                               zst ? "" : ", as zstd reads gzip", "; a text is read as it is)"};
        why[0] = 0;
        for (size_t p = 0; p < sizeof piece / sizeof *piece; p++)
            strncat(why, piece[p], n - strlen(why) - 1);
    } else if (nul) {
        snprintf(why, n, "a binary file (a NUL byte at byte %zu)", (size_t)(nul - text));
    } else {
        return NULL;
    }
    return why;
}

/* Tokenize text[0..len) with the model's vocabulary exactly as llama.cpp's
 * common_tokenize(ctx, text, add_special=true, parse_special=false): BOS (and
 * EOS) are added when the vocabulary asks for them, special-token text is
 * treated as plain text.  *n receives the token count.  Errors: NULL when
 * the text is longer than INT32_MAX bytes, tokenizes to more than INT32_MAX
 * tokens, or memory runs out. */
static inline llama_token *llm_tokenize(const struct llama_vocab *vocab, const char *text, size_t len, int *n)
{
    if (len > (size_t)INT32_MAX - 2)
        return NULL;
    int32_t cap = (int32_t)len + 2;
    llama_token *tok = malloc((size_t)cap * sizeof *tok);
    if (!tok)
        return NULL;
    int32_t got = llama_tokenize(vocab, text, (int32_t)len, tok, cap, true, false);
    if (got == INT32_MIN) {
        free(tok);
        return NULL;
    }
    if (got < 0) {
        cap = -got;
        llama_token *nt = realloc(tok, (size_t)cap * sizeof *tok);
        if (!nt) {
            free(tok);
            return NULL;
        }
        tok = nt;
        got = llama_tokenize(vocab, text, (int32_t)len, tok, cap, true, false);
        if (got < 0) {
            free(tok);
            return NULL;
        }
    }
    *n = got;
    return tok;
}

/* Load the GGUF model at path on the CPU with llama.cpp's default model
 * parameters (as common_model_params_to_llama leaves them).  Errors: NULL
 * with *why pointing to a short reason: strerror(errno) when the file cannot
 * be opened ("-", standard input, is refused: libllama opens the file by
 * name), what the file is when its first bytes are not GGUF's magic (a wpack
 * stream or bundle, Hessians, llama-imatrix's imatrix.dat, a text; else as
 * wp_gguf_open says it: a zstd'd GGUF, a --dist bundle, a safetensors file, "bad
 * magic"), "llama.cpp cannot load this model" when libllama refuses it (an
 * imatrix GGUF is named). */
static inline struct llama_model *llm_load_model(const char *path, const char **why)
{
    if (!strcmp(path, "-")) {   /* it said "No such file or directory" */
        *why = "llama.cpp loads a model from a file by name, not from standard input: give the file's name";
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        *why = strerror(errno);
        return NULL;
    }
    char magic[4096] = "";   /* (its first 4 KiB: a text is told by them) */
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        *why = "is a directory";
        return NULL;
    }
    if (got >= 8 && !memcmp(magic, WP_STREAM_MAGIC, 8)) {   /* (said only "llama.cpp cannot load this model") */
        /* Hessians (hessian's own output) named as such: ggufpack writes no GGUF of them (a
           fresh user's find) */
        *why = wp_file_is_hessians(path) ? "Hessians (hessian's output), not a model: they go to gptq --hessian"
                    : "a wpack stream or bundle, not a GGUF file (ggufpack or unbundle writes the GGUF)";
        return NULL;
    }
    static const char *const imatrix_why =
        "an importance matrix (llama-imatrix's output), not a model: it goes to gptq --imatrix";
    if (!wp_gguf_magic((const uint8_t *)magic, got)) {
        /* llama-imatrix's legacy imatrix.dat: named as its GGUF is (it was "bad magic": a
           note's left alone) */
        wp_imatrix im = {0};
        char ierr[256] = "";
        /* (its head first, wp_imatrix_dat_head: the loader reads the whole file, and a model of
           another format can be tens of GB; a llama2.c checkpoint was read whole: a breaker's
           find) */
        if (wp_imatrix_dat_head((const uint8_t *)magic, got)) {
            /* (one cut short, with the loader's message, its name dropped: it was "bad magic",
               a breaker's find) */
            static char dat_why[300];
            const size_t pl = strlen(path);
            const int bad = wp_imatrix_load(path, &im, ierr, sizeof ierr) != 0;
            wp_imatrix_free(&im);
            snprintf(dat_why, sizeof dat_why, "%s", !strncmp(ierr, path, pl) && !strncmp(ierr + pl, ": ", 2) ? ierr + pl + 2 : ierr);
            *why = bad ? dat_why : imatrix_why;
            return NULL;
        }
        if (wp_text_like((const uint8_t *)magic, got)) {   /* (it said "bad magic": a helper's nit) */
            *why = "a text, not a model: it goes to -f";
            return NULL;
        }
        /* what it is, as the GGUF reader says it: a zstd'd GGUF, a --dist bundle or a
           safetensors file said only "bad magic" (a fresh user's find) */
        static char said[1200];
        char err[1100] = "";
        wp_gguf_in *g = wp_gguf_open(path, err, sizeof err);
        wp_gguf_close(g);
        size_t n = strlen(path);
        *why = !g && !strncmp(err, path, n) && !strncmp(err + n, ": ", 2)
                   ? (snprintf(said, sizeof said, "%s", err + n + 2), said)
                   : "not a GGUF file (bad magic)";
        return NULL;
    }
    llm_step(path, "llama.cpp cannot load this model");
    struct llama_model_params mp = llama_model_default_params();
    if (llm_gpu_layers >= 0)
        mp.n_gpu_layers = llm_gpu_layers;
    llm_log_error_reset();
    struct llama_model *m = llama_model_load_from_file(path, mp);
    if (!m) {
        /* llama-imatrix's output given as the model: named (it was "llama.cpp cannot load this
           model" alone: a new user's trial) */
        wp_imatrix im;
        char ierr[256];
        /* llama.cpp's reason said (it showed only under WPACK_LLAMA_LOG=1, unnamed: a new
           user's trial at 7B shapes) */
        static char said[sizeof llm_log_error + 64];
        const char *reason = llm_log_reason();
        if (reason)
            snprintf(said, sizeof said, "llama.cpp cannot load this model: %s", reason);
        else
            snprintf(said, sizeof said, "llama.cpp cannot load this model (WPACK_LLAMA_LOG=1 shows its log)");
        *why = wp_imatrix_load(path, &im, ierr, sizeof ierr) == 0 ? imatrix_why : said;
        wp_imatrix_free(&im);
    }
    return m;
}

#endif
