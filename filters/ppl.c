/* ppl - perplexity (and KL divergence) of a GGUF model with llama.cpp's method.
 *
 *   ppl --model M.gguf --text FILE|- [--ctx 512] [--chunks N] [--threads T]
 *       [--batch 2048] [--save-logits FILE | --kl-base FILE]
 *
 * The method is llama-perplexity's (tools/perplexity/perplexity.cpp of the
 * pinned llama.cpp, functions perplexity() and kl_divergence()):
 *   - the whole text (a file, or standard input for "-"; one trailing newline
 *     dropped) is tokenized once with BOS added as the vocabulary asks;
 *   - it is cut into non-overlapping chunks of ctx tokens (at least 2*ctx
 *     tokens are required); the first token of every chunk is replaced by BOS;
 *   - batch/ctx chunks are decoded together as parallel sequences in one
 *     context of n_seq*ctx cells (batch 2048 and ctx 512 give 4), or a chunk
 *     is split into several batches when batch < ctx;
 *   - only positions ctx/2 .. ctx-2 of each chunk are scored (the logits at
 *     position p predict token p+1): nll = -log softmax(logits)[next token];
 *   - PPL = exp(mean nll) and its error exp(mean) * sqrt(var(nll)/(count-1)).
 * --save-logits writes llama-perplexity's --kl-divergence-base file and
 * --kl-base reads one (either program's), so the two tools interoperate; the
 * format is in ppl(1). llama-perplexity's own spelling is taken too:
 * --kl-divergence-base FILE writes FILE, and with --kl-divergence reads it.
 *
 * Progress goes to stderr; the result to stdout.  Errors: one line
 * "ppl: FILE: problem" on stderr, exit 1.
 */
#include "cli.h"
#include "llm_common.h"
#include "logprobs.h"
#include "par.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


static const char usage[] =
    "usage: ppl --model M.gguf --text FILE [options]\n"
    "Perplexity of M on FILE with llama-perplexity's method (chunks of --ctx tokens,\n"
    "BOS first, second half of each chunk scored). Result on stdout:\n"
    "  PPL = x +/- y\n"
    "  chunks=N tokens=M scored=K\n"
    "options:\n"
    "  --model FILE        GGUF model (any architecture llama.cpp runs)\n"
    "                      (-m, -f, -c, -t, -b: llama-perplexity's names of\n"
    "                      --model, --text, --ctx, --threads, --batch; and its\n"
    "                      --file, --ctx-size, --batch-size; -ngl N, the layers\n"
    "                      offloaded to a GPU backend of the libllama in use)\n"
    "  --text FILE         text to score, - for standard input (optional with\n"
    "                      --kl-base)\n"
    "  --ctx N             tokens per chunk (default 512)\n"
    "  --chunks N          score at most N chunks (default all)\n"
    "  --threads N         CPU threads (default: WPACK_THREADS, else the CPUs)\n"
    "  --batch N           logical batch; batch/ctx chunks run in parallel (default 2048)\n"
    "  --save-logits FILE  store the scored positions' log-probabilities\n"
    "                      (llama-perplexity's --kl-divergence-base format)\n"
    "  --kl-base FILE      compare with stored base log-probabilities: adds\n"
    "                      mean KL divergence (base || model), base PPL, same-top rate\n"
    "  --kl-divergence-base FILE [--kl-divergence]\n"
    "                      llama-perplexity's names: --save-logits FILE, or with\n"
    "                      --kl-divergence, --kl-base FILE\n"
    "  --help              this text\n"
    "Set WPACK_LLAMA_LOG=1 to see llama.cpp's log.\n";

/* Print "ppl: what: why" and exit 1, removing an unfinished --save-logits
 * file (wp_die). */
_Noreturn static void die(const char *what, const char *why)
{
    wp_die("%s: %s", what, why);
}

/* Seconds since an arbitrary start (monotonic clock). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Read exactly n bytes from f into p; returns 0, or -1 on a short read. */
static int read_full(FILE *f, void *p, size_t n)
{
    return fread(p, 1, n, f) == n ? 0 : -1;
}

/* Write n bytes to f or die naming path. */
static void write_full(FILE *f, const void *p, size_t n, const char *path)
{
    if (fwrite(p, 1, n, f) != n)
        die(path, strerror(errno ? errno : EIO));
}

/* Read the rest of a --kl-base stream that has no size to check beforehand
 * (standard input, a pipe: a regular file's size is compared with the header's
 * before anything is read) to its end, after the chunks scored: `left` bytes
 * of it (the rows of chunks --chunks skipped; 0 when all were scored) must
 * remain, no more, of the `want` bytes its header implies. Dies naming `name`
 * as the regular file's check does: "truncated: N bytes, its header implies
 * WANT" or "data after its end: N bytes, its header implies WANT", N the bytes
 * the stream held in all; a read error by its reason. */
static void kl_check_end(FILE *f, const char *name, uint64_t left, uint64_t want)
{
    static char buf[1 << 16];
    uint64_t got = 0;
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        got += k;
    if (ferror(f))
        die(name, strerror(errno ? errno : EIO));
    if (got != left) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s: %llu bytes, its header implies %llu",
                 got < left ? "truncated" : "data after its end", (unsigned long long)(want - left + got),
                 (unsigned long long)want);
        die(name, msg);
    }
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *text_path = NULL, *kl_path = NULL, *save_path = NULL;
    const char *kl_div_base = NULL;   /* llama-perplexity's --kl-divergence-base FILE */
    long ctx_arg = 512, chunks_arg = -1, batch_arg = 2048, threads = 0;
    int ctx_given = 0, kl_div = 0;

    wp_cli_init("ppl");
    for (int i = 1; i < argc; i++) {
        /* llama-perplexity's short names too (and its --file, --ctx-size, --batch-size: a new
           user's trial): -m, -f, -c, -t, -b were unknown options to a
           llama.cpp user's first try (a fresh user's find) */
        static const char *const takes[] = {"--model", "--text", "--ctx", "--chunks", "--threads",
                                            "--batch", "--kl-base", "--save-logits", "--kl-divergence-base",
                                            LLM_LLAMA_NAMES};
        /* and its KL options: --kl-divergence-base FILE alone writes FILE, with
           --kl-divergence reads it ("unknown option" to a llama.cpp user: a new user's trial) */
        if (wp_cli_flag(argv[i], "--kl-divergence")) {
            kl_div = 1;
            continue;
        }
        llm_bare_word(argv[i]);
        const char *v, *a = wp_cli_opt(argc, argv, &i, usage, takes, sizeof takes / sizeof *takes, &v);
        if (!a)   /* "--" last */
            break;
        const char *typed = a;   /* for "given twice", as typed */
        a = llm_long_name(a);
        if (llm_shared_opt(a, v))
            ;
        else if (!strcmp(a, "--kl-divergence-base"))
            kl_div_base = wp_cli_once(typed, kl_div_base, v, 0);
        else if (!strcmp(a, "--model"))
            model_path = wp_cli_once(typed, model_path, v, 0);
        else if (!strcmp(a, "--text"))
            text_path = wp_cli_once(typed, text_path, v, 0);
        else if (!strcmp(a, "--ctx"))
            ctx_arg = wp_arg_int(a, v, 4, 1 << 20), ctx_given = 1;
        else if (!strcmp(a, "--chunks"))
            chunks_arg = wp_arg_int(a, v, 1, INT32_MAX);
        else if (!strcmp(a, "--threads"))
            threads = wp_arg_int(a, v, 1, 512);
        else if (!strcmp(a, "--batch"))
            batch_arg = wp_arg_int(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--kl-base"))
            kl_path = wp_cli_once(typed, kl_path, v, 0);
        else
            save_path = wp_cli_once(typed, save_path, v, 0);
    }
    /* (--kl-base FILE --kl-divergence says the same twice: taken; it was refused, the message
       naming --kl-base as the way on: a breaker's find) */
    if (kl_div && save_path)
        die("--kl-divergence", "reads the base file --save-logits writes: give one of them");
    if (kl_div && !kl_div_base && !kl_path)
        die("--kl-divergence", "needs --kl-divergence-base FILE, the base model's file");
    if (kl_div_base && (kl_path || save_path))
        die("--kl-divergence-base", "cannot be combined with --kl-base or --save-logits (the same files)");
    if (kl_div_base) {
        if (kl_div)
            kl_path = kl_div_base;
        else
            save_path = kl_div_base;
    }
    if (!model_path)
        die("--model", "is required (try --help)");
    if (!text_path && !kl_path)
        die("--text", "is required (try --help)");
    if (kl_path && save_path)
        die("--save-logits", "cannot be combined with --kl-base");
    /* --kl-base -: the base file is read once, in order, so standard input serves */
    const int kl_stdin = kl_path && !strcmp(kl_path, "-");
    if (kl_stdin && text_path && !strcmp(text_path, "-"))
        die("--kl-base", "-: --text is standard input already; give one of them as a file");
    if (kl_stdin)
        kl_path = "stdin";   /* its name in messages */
    /* --save-logits, or a standard output, onto any input is refused: the text only where
       one is read (without --text, wp_cli_input(NULL) took standard input, which ppl then does
       not read: a false refusal), and the --kl-base file too (its report appended to it
       passed: a review) */
    wp_cli_input(model_path);
    if (text_path)
        wp_cli_input(text_path);
    if (kl_path)
        wp_cli_input(kl_stdin ? "-" : kl_path);
    if (save_path && (!*save_path || !strcmp(save_path, "-")))
        die("--save-logits", "needs a file name (stdout carries the report)");
    if (threads == 0)
        threads = wp_cli_threads(wp_par_cpus());

    /* The base file's header: magic, uint32 ctx, int32 n_vocab, int32 n_chunk,
     * int32 tokens[n_chunk*ctx]; rows follow (read chunk by chunk below). */
    FILE *kl_f = NULL;
    int n_ctx = (int)ctx_arg, base_vocab = 0, base_chunks = 0;
    llama_token *tokens = NULL;
    int n_tokens = 0;
    uint64_t kl_want = 0;   /* the base file's size by its header */
    int kl_sized = 0;       /* whether that size was checked (a regular file) */
    if (kl_path) {
        kl_f = kl_stdin ? stdin : fopen(kl_path, "rb");
        if (!kl_f)
            die(kl_path, strerror(errno));
        struct stat dst;
        if (fstat(fileno(kl_f), &dst) == 0 && S_ISDIR(dst.st_mode))   /* (said "no _logits_ magic") */
            die(kl_path, strerror(EISDIR));
        char magic[8];
        uint32_t c = 0;
        int32_t nvoc = 0, nch = 0;
        if (read_full(kl_f, magic, 8) || memcmp(magic, WP_LOGPROB_MAGIC, 8))
            die(kl_path, "not a log-probability file (no _logits_ magic)");
        if (read_full(kl_f, &c, 4) || read_full(kl_f, &nvoc, 4) || read_full(kl_f, &nch, 4))
            die(kl_path, "truncated header");
        if (wp_logprob_head_problem(c, nvoc, nch))
            die(kl_path, wp_logprob_head_problem(c, nvoc, nch));
        if (ctx_given && (uint32_t)ctx_arg != c) {
            char msg[96];
            snprintf(msg, sizeof msg, "was saved with --ctx %u, not %ld", c, ctx_arg);
            die(kl_path, msg);
        }
        n_ctx = (int)c;
        base_vocab = nvoc;
        base_chunks = nch;
        n_tokens = (int)c * nch;
        /* the size the header implies, before any allocation of its size (a forged
           chunk count made an 8 GiB token array of a 97 KB file) */
        struct stat st;
        const uint64_t want = wp_logprob_file_bytes(c, nvoc, nch);
        kl_want = want;
        kl_sized = fstat(fileno(kl_f), &st) == 0 && S_ISREG(st.st_mode);
        if (kl_sized && (uint64_t)st.st_size != want) {
            char msg[128];
            /* (it said "its header needs N": N is the file's size, not the header's) */
            snprintf(msg, sizeof msg, "%s: %lld bytes, its header implies %llu",
                     (uint64_t)st.st_size < want ? "truncated" : "data after its end", (long long)st.st_size,
                     (unsigned long long)want);
            die(kl_path, msg);
        }
        tokens = malloc((size_t)n_tokens * sizeof *tokens);
        if (!tokens)
            die(kl_path, "out of memory");
        if (read_full(kl_f, tokens, (size_t)n_tokens * sizeof *tokens))
            die(kl_path, "truncated (tokens)");
        for (int i = 0; i < n_tokens; i++)   /* (llama_decode failed, naming the model) */
            if (tokens[i] < 0 || tokens[i] >= nvoc) {
                char msg[128];
                snprintf(msg, sizeof msg, "token %d at position %d is outside its vocabulary of %d", (int)tokens[i], i,
                         (int)nvoc);
                die(kl_path, msg);
            }
    }

    char *text = NULL;
    size_t text_len = 0;
    const char *text_name = text_path ? llm_text_name(text_path) : NULL;   /* "-": "stdin" */
    if (text_path) {
        text = llm_read_text(text_path, &text_len, NULL);
        if (!text)
            die(text_name, strerror(errno));
        char why_not[2 * PATH_MAX + 160];
        if (llm_not_text(text, text_len, text_path, why_not, sizeof why_not))
            wp_die("%s: not an evaluation text: %s", text_name, why_not);
    }

    if (llm_setup() != 0)
        die(model_path, "no ggml backend available (set WPACK_GGML_BACKEND_DIR)");
    const char *why;
    struct llama_model *model = llm_load_model(model_path, &why);
    if (!model)
        die(model_path, why);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    const int add_bos = llama_vocab_get_add_bos(vocab);
    if (llama_vocab_get_add_eos(vocab))
        die(model_path, "the vocabulary adds EOS to every text; perplexity is undefined here");

    if (text) {
        int nt = 0;
        llm_step_tokenize(text_name, model_path);
        llama_token *tt = llm_tokenize(vocab, text, text_len, &nt);
        if (!tt)
            die(text_name, "cannot tokenize (too long?)");
        if (kl_path) {
            /* The base's tokens are scored; a given text must agree with them. */
            if (nt < n_tokens || memcmp(tt, tokens, (size_t)n_tokens * sizeof *tt))
                die(text_name, "does not tokenize to the tokens stored in the --kl-base file");
            free(tt);
        } else {
            tokens = tt;
            n_tokens = nt;
        }
        free(text);
    }
    if (kl_path && base_vocab != n_vocab) {
        char msg[96];
        snprintf(msg, sizeof msg, "vocabulary of %d tokens, the model has %d", base_vocab, n_vocab);
        die(kl_path, msg);
    }
    if (!kl_path && n_tokens < 2 * n_ctx) {
        char msg[160];
        snprintf(msg, sizeof msg, "tokenizes to only %d token%s; --ctx %d needs at least %d (2 x ctx)", n_tokens,
                 n_tokens == 1 ? "" : "s", n_ctx, 2 * n_ctx);
        die(text_name, msg);
    }

    const int n_chunk_max = kl_path ? base_chunks : n_tokens / n_ctx;
    const int n_chunk = chunks_arg < 0 ? n_chunk_max : (int)(chunks_arg < n_chunk_max ? chunks_arg : n_chunk_max);
    int n_seq = (int)(batch_arg / n_ctx);
    if (n_seq < 1)
        n_seq = 1;
    if ((size_t)n_seq > llama_max_parallel_sequences())
        n_seq = (int)llama_max_parallel_sequences();
    const int n_batch = (int)(batch_arg < (long)n_seq * n_ctx ? batch_arg : (long)n_seq * n_ctx);
    const int num_batches = (n_ctx + n_batch - 1) / n_batch;
    const int first = n_ctx / 2;
    const int n_score = n_ctx - 1 - first; /* scored rows per chunk */

    if (n_ctx > llama_model_n_ctx_train(model))
        fprintf(stderr, "%s: warning: the model was trained on only %d context tokens (--ctx %d)\n", wp_prog(),
                llama_model_n_ctx_train(model), n_ctx);

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_seq * n_ctx);
    cp.n_batch = (uint32_t)n_batch;
    cp.n_seq_max = (uint32_t)n_seq;
    cp.n_threads = (int32_t)threads;
    cp.n_threads_batch = (int32_t)threads;
    cp.swa_full = false; /* llama.cpp's tools' default */
    llm_step(model_path, "llama.cpp cannot create a context of this size");
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx)
        die(model_path, "llama.cpp cannot create a context of this size");

    llm_step(model_path, "llama_decode failed");
    struct llama_batch batch = llama_batch_init(n_batch, 0, 1);
    float *acc = NULL; /* this chunk's scored logits when it spans several batches */
    if (num_batches > 1) {
        acc = malloc((size_t)(n_ctx - first) * n_vocab * sizeof *acc);
        if (!acc)
            die(model_path, "out of memory");
    }
    const int nv = (int)wp_logprob_row_len(n_vocab);
    uint16_t *rows = NULL;
    if (save_path || kl_path) {
        rows = malloc((size_t)n_score * nv * sizeof *rows);
        if (!rows)
            die(model_path, "out of memory");
    }

    FILE *save_f = NULL;
    if (save_path) {
        /* a temporary file beside it, renamed when complete, removed by an error or a
           signal (wp_out_open) */
        save_f = wp_out_open(save_path);
        uint32_t c = (uint32_t)n_ctx;
        int32_t h[2] = {n_vocab, n_chunk};
        write_full(save_f, WP_LOGPROB_MAGIC, 8, save_path);
        write_full(save_f, &c, 4, save_path);
        write_full(save_f, h, 8, save_path);
        write_full(save_f, tokens, (size_t)n_chunk * n_ctx * sizeof *tokens, save_path);
    }

    fprintf(stderr, "%s: %d tokens, %d chunk%s of %d, batch %d, %d parallel, %ld thread%s\n", wp_prog(), n_tokens,
            n_chunk, n_chunk > 1 ? "s" : "", n_ctx, n_batch, n_seq, threads, threads > 1 ? "s" : "");

    double nll = 0, nll2 = 0;
    long count = 0;
    struct wp_kld_sums ks;
    memset(&ks, 0, sizeof ks);

    for (int i = 0; i < n_chunk; i += n_seq) {
        const int start = i * n_ctx, end = start + n_ctx;
        const int n_seq_batch = n_seq < n_chunk - i ? n_seq : n_chunk - i;
        const double t0 = now_s();
        size_t n_acc = 0;

        llama_memory_clear(llama_get_memory(ctx), true);
        for (int j = 0; j < num_batches; j++) {
            const int batch_start = start + j * n_batch;
            const int batch_size = end - batch_start < n_batch ? end - batch_start : n_batch;
            int n_outputs = 0;
            batch.n_tokens = 0;
            for (int seq = 0; seq < n_seq_batch; seq++) {
                const int seq_start = batch_start + seq * n_ctx;
                for (int k = 0; k < batch_size; k++) {
                    const int idx = seq * n_ctx + k;
                    llama_token t = tokens[seq_start + k];
                    if (add_bos && j == 0 && k == 0)
                        t = llama_vocab_bos(vocab);
                    batch.token[idx] = t;
                    batch.pos[idx] = j * n_batch + k;
                    batch.n_seq_id[idx] = 1;
                    batch.seq_id[idx][0] = seq;
                    batch.logits[idx] = batch.pos[idx] >= first;
                    n_outputs += batch.logits[idx] != 0;
                }
                batch.n_tokens += batch_size;
            }
            if (llama_decode(ctx, batch) != 0)
                die(model_path, "llama_decode failed");
            if (num_batches > 1 && n_outputs > 0) {
                memcpy(acc + n_acc * n_vocab, llama_get_logits(ctx), (size_t)n_outputs * n_vocab * sizeof *acc);
                n_acc += (size_t)n_outputs;
            }
        }
        if (i == 0) {
            llama_synchronize(ctx);
            const double t = now_s() - t0;
            fprintf(stderr, "%s: %.2f seconds per pass - ETA %.2f minutes\n", wp_prog(), t,
                    t * ((n_chunk + n_seq - 1) / n_seq) / 60.0);
        }

        for (int seq = 0; seq < n_seq_batch; seq++) {
            const float *lg = num_batches > 1 ? acc : llama_get_logits_ith(ctx, seq * n_ctx + first);
            const llama_token *next = tokens + start + seq * n_ctx + first + 1;
            if (!lg)
                die(model_path, "llama.cpp returned no logits");
            if (kl_path) {
                if (read_full(kl_f, rows, (size_t)n_score * nv * sizeof *rows)) {
                    char msg[64];
                    snprintf(msg, sizeof msg, "truncated (log-probabilities of chunk %d)", i + seq + 1);
                    die(kl_path, msg);
                }
                for (int r = 0; r < n_score; r++) {
                    /* a row's header as wp_logprob_quantize writes it (a forged NaN or 1e30 gave
                       PPL -nan, exit 0) */
                    if (!wp_logprob_row_ok(rows + (size_t)r * nv)) {
                        float hdr[2];
                        memcpy(hdr, rows + (size_t)r * nv, sizeof hdr);
                        char msg[160];
                        snprintf(msg, sizeof msg, "row %d of chunk %d is corrupt (scale %g, min_log_prob %g)", r,
                                 i + seq + 1, (double)hdr[0], (double)hdr[1]);
                        die(kl_path, msg);
                    }
                    wp_logprob_kld(lg + (size_t)r * n_vocab, n_vocab, rows + (size_t)r * nv, next[r], &ks);
                }
                double lp, lpu, kl, klu;
                wp_logprob_mean(ks.nll, ks.nll2, ks.count, &lp, &lpu);
                wp_logprob_mean(ks.kld, ks.kld2, ks.count, &kl, &klu);
                fprintf(stderr, "[%d]%.4f/%.6f,", i + seq + 1, exp(lp), kl);
            } else {
                for (int r = 0; r < n_score; r++) {
                    const float *row = lg + (size_t)r * n_vocab;
                    const double v = save_f ? wp_logprob_quantize(row, n_vocab, next[r], rows + (size_t)r * nv)
                                            : wp_logprob_nll(row, n_vocab, next[r]);
                    nll += v;
                    nll2 += v * v;
                }
                if (save_f)
                    write_full(save_f, rows, (size_t)n_score * nv * sizeof *rows, save_path);
                count += n_score;
                fprintf(stderr, "[%d]%.4f,", i + seq + 1, exp(nll / count));
            }
        }
    }
    fprintf(stderr, "\n");

    /* A base read from a pipe ends where its header says, as a file must
       (trailing data was accepted from standard input, refused from the file). */
    if (kl_path && !kl_sized)
        kl_check_end(kl_f, kl_path, (uint64_t)(base_chunks - n_chunk) * n_score * nv * sizeof *rows, kl_want);
    /* The logits written out before the report, which is printed and flushed
       before they are published: a write error on either, or a closed pipe
       (SIGPIPE, wp_cli_init's handler), removes the temporary file (it was
       renamed first, and left behind by a failed run). */
    if (save_f && (fflush(save_f) || ferror(save_f)))
        wp_die("%s: write error: %s", save_path, strerror(errno ? errno : EIO));

    if (kl_path) {
        double lp, lpu, lb, lbu, kl, klu;
        wp_logprob_mean(ks.nll, ks.nll2, ks.count, &lp, &lpu);
        wp_logprob_mean(ks.nll_base, ks.nll_base2, ks.count, &lb, &lbu);
        wp_logprob_mean(ks.kld, ks.kld2, ks.count, &kl, &klu);
        const double cov = wp_logprob_covariance(ks.nll, ks.nll_base, ks.nll_nll_base, ks.count);
        const double ratio_unc = sqrt(lpu * lpu + lbu * lbu - 2.0 * cov);
        const double top = (double)ks.same_top / ks.count;
        const double top_unc = ks.count > 1 ? sqrt(top * (1 - top) / (ks.count - 1)) : 0;
        printf("PPL = %.4f +/- %.5f\n", exp(lp), exp(lp) * lpu);
        printf("PPL(base) = %.4f +/- %.5f\n", exp(lb), exp(lb) * lbu);
        printf("ln(PPL/PPL(base)) = %.6f +/- %.6f\n", lp - lb, ratio_unc);
        printf("KLD = %.8f +/- %.8f\n", kl, klu);
        printf("same top = %.3f +/- %.3f %%\n", 100.0 * top, 100.0 * top_unc);
        printf("chunks=%d tokens=%ld scored=%zu\n", n_chunk, (long)n_chunk * n_ctx, ks.count);
    } else {
        const double mean = nll / count, ppl = exp(mean);
        double var = nll2 / count - mean * mean;
        double err = var > 0 && count > 1 ? sqrt(var / (count - 1)) * ppl : 0;
        if (!(var > 0))
            fprintf(stderr, "%s: warning: non-positive variance of log(prob); error set to 0\n", wp_prog());
        printf("PPL = %.4f +/- %.5f\n", ppl, err);
        printf("chunks=%d tokens=%ld scored=%ld\n", n_chunk, (long)n_chunk * n_ctx, count);
    }
    if (fflush(stdout) || ferror(stdout))
        die("stdout", strerror(errno ? errno : EIO));
    if (save_f)
        wp_out_commit();   /* last: published only after a complete run */
    if (kl_f)
        fclose(kl_f);

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(acc);
    free(rows);
    free(tokens);
    return 0;
}
