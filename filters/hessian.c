/* hessian - input Hessians H = XᵀX of every weight matrix of a GGUF model,
 * collected through llama.cpp's own forward pass, as a wpack tensor stream.
 *
 *   hessian --model M.gguf --text FILE|- [--ctx 512] [--chunks N] [--threads T]
 *           [--batch 2048] [--max-memory BYTES] [--share-inputs] [-o OUT]
 *
 * Method (llama-imatrix's, tools/imatrix/imatrix.cpp of the pinned llama.cpp:
 * compute_imatrix() and IMatrixCollector::collect_imatrix()):
 *   - the text file (standard input for "-"; one trailing newline dropped) is
 *     tokenized once, BOS added as the vocabulary asks, special-token text
 *     read as plain text;
 *   - it is cut into N = min(--chunks, tokens / ctx) chunks of ctx tokens;
 *     the first token of every chunk is replaced by BOS; batch/ctx chunks run
 *     as parallel sequences; every position requests its logits, so every
 *     token reaches every matrix (output.weight and the last layer's FFN too);
 *   - the scheduler's eval callback (llama_context_params.cb_eval) sees every
 *     GGML_OP_MUL_MAT whose src0 is a model weight (a tensor in a buffer of
 *     usage GGML_BACKEND_BUFFER_USAGE_WEIGHTS) and whose src1 (the activation,
 *     F32) holds one token per row; every row x of src1 adds x xᵀ to that
 *     weight's H, in double precision (rows converted to double, BLAS dsyrk).
 *     llama-imatrix keeps only diag(H) (in float: "in_sum2") and the row count
 *     ("counts"); here diag(H)/n_tokens equals its in_sum2/counts.
 *     GGML_OP_MUL_MAT_ID (mixture-of-experts) gives one H per expert from the
 *     rows routed to it, as llama-imatrix does per expert.
 * Weights are all recorded, output.weight included (llama-imatrix needs
 * --process-output for it); a tied output matrix is recorded under the name of
 * the tensor the matmul reads (token_embd.weight).
 *
 * Memory: the Hessians of one pass (cols² doubles per weight, per expert for
 * MoE) must fit in --max-memory (wp_hessplan_default_memory: memory the model's
 * weights leave, at most half). A first
 * forward pass over one chunk, collecting nothing, finds the weights and their
 * column counts; the weights are then grouped by layer (blk.N) into passes of
 * consecutive layers that fit, and the text is run once per pass; a pass
 * stops each graph after its last Hessian's matmul (struct hstate's stop_at),
 * so the later layers cost nothing in it (on the CPU alone: see one_backend).
 *
 * Output: one Hessian record per weight (lib/hessians.h: the format), in the
 * order the forward pass first reaches the weights.
 * Weights that read the same input (q/k/v, gate/up) get equal Hessians, one
 * record each; hessian collects and holds one H for them (a 7B: 41 GiB of
 * Hessians to hold, where 54 GiB, and a quarter less to accumulate). With
 * --share-inputs they get one record, named after the first of them, with
 * attr weights=A,B,C naming them all in first-use order (the form gptq
 * --hessian reads for each of A, B, C). "The same input" is the same src1
 * tensor of MUL_MATs in the discovery pass's graph, and of MUL_MAT_IDs with
 * the same routing (src2: a mixture of experts' gate_exps and up_exps, one H
 * an expert), so the shared H is the one each of them would get.
 *
 * Errors: one line "hessian: FILE: problem" on stderr, exit 1, no output file
 * (lib/cli.h). Progress on stderr.
 */
#include "llm_common.h"
#include "blas_room.h"
#include "hessians.h"
#include "hessplan.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cli.h"
#include "ggml_type.h"
#include "par.h"
#include "stream.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hessian writes its doubles in host order: a little-endian host is required"
#endif

/* OpenBLAS's thread control; declared here so any cblas.h will do. */
void openblas_set_num_threads(int num_threads);

static const char usage[] =
    "usage: hessian --model M.gguf --text FILE [options] > OUT\n"
    "Input Hessians H = X^T X (double precision, summed over all calibration\n"
    "tokens) of every weight matrix of M, collected through llama.cpp's forward\n"
    "pass as llama-imatrix does, as a wpack stream of Hessian records.\n"
    "options (llama-imatrix's -m, -f, -c, -t, -b, --file, --ctx-size, --batch-size,\n"
    "--output-file, --output, -ngl N, and --process-output and --no-ppl, which it\n"
    "always does, too):\n"
    "  --model FILE        GGUF model (any architecture llama.cpp runs)\n"
    "  --text FILE         calibration text, - for standard input (never the\n"
    "                      evaluation text)\n"
    "  --ctx N             tokens per chunk (default 512)\n"
    "  --chunks N          use at most N chunks (default all)\n"
    "  --threads N         CPU threads (default: WPACK_THREADS, else the CPUs)\n"
    "  --batch N           logical batch; batch/ctx chunks run in parallel (default 2048)\n"
    "  --max-memory BYTES  bound on the Hessians held at once (suffix K, M, G, T;\n"
    "                      default: memory less the model's size less an eighth,\n"
    "                      at most half; WPACK_MEMORY=BYTES: the memory to plan for\n"
    "                      instead of physical memory); more passes when needed\n"
    "  --share-inputs      one record for the weights that read the same input\n"
    "                      (q/k/v, gate/up), listed in its attribute weights=\n"
    "  -o FILE             write to FILE (atomically) instead of stdout\n"
    "  --help              this text\n"
    "Set WPACK_LLAMA_LOG=1 to see llama.cpp's log.\n";

/* One weight matrix whose input is collected: its plan (name, cols,
 * n_expert, layer, lead, pass: lib/hessplan.h) in hstate's p[] at the same
 * index, and here what collects it. */
struct hw {
    const void *in;    /* discovery: its src1 tensor, and that tensor's name */
    char in_name[GGML_MAX_NAME];
    const void *ids;   /* discovery, MUL_MAT_ID: its routing (src2) tensor, and its name */
    char ids_name[GGML_MAX_NAME];
    double *H;         /* n_expert × cols × cols (upper triangle filled until emitted) */
    int64_t *tokens;   /* n_expert row counts */
};

/* The callback's state. */
struct hstate {
    struct hw *w;
    wp_hessplan_weight *p;   /* w[i]'s plan; p[i].name malloc'd */
    int n, cap;
    int discover;      /* 1: record weights, collect nothing */
    int pass;          /* the pass being collected */
    const char *model_path;
    double *xd;        /* scratch: rows × cols doubles */
    size_t xd_cap;     /* doubles */
    char *host;        /* scratch copy of a non-host src1 / ids */
    size_t host_cap;
    /* Cutting a pass short: the graph computes its nodes in order, so once the
     * pass's last Hessian has its rows, the later layers are not needed. That
     * holds when discovery saw every weight matmul exactly once a graph, in
     * one order (weight index 0, 1, ..., n-1 each graph): then stop_at, the
     * largest index the pass collects, ends the graph (the callback returns
     * false, and ggml_backend_sched_compute_splits stops). */
    int next;          /* discovery: the index the order expects next */
    char quant[GGML_MAX_NAME + 8];   /* discovery: the first weight not F32/F16/BF16 */
    enum ggml_type quant_type;
    int in_order;      /* discovery found the one-order-a-graph form */
    int stop_at;       /* the pass's last collected index; -1: run it all */
    int64_t asks;      /* nodes the scheduler offered (ask calls) */
    int64_t graphs;    /* graphs begun: weight 0 offered */
    int threads;       /* --threads: BLAS threads for a large product */
    int blas_threads;  /* OpenBLAS's count as last set */
};

/* Seconds since an arbitrary start (monotonic clock). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* The weight name in a scheduler tensor name: "CUDA0#blk.0.attn_k.weight#0"
 * -> "blk.0.attn_k.weight" (llama-imatrix's filter_tensor_name), into buf. */
static void weight_name(const char *name, char *buf, size_t n)
{
    const char *p = strchr(name, '#');
    if (p) {
        p++;
        const char *q = strchr(p, '#');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (len >= n)
            len = n - 1;
        memcpy(buf, p, len);
        buf[len] = '\0';
    } else {
        snprintf(buf, n, "%s", name);
    }
}

/* The index of weight `name`, or -1. */
static int find_weight(const struct hstate *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->p[i].name, name) == 0)
            return i;
    return -1;
}

/* Grow a scratch buffer to at least n elements of size sz; dies when out of memory. */
static void *grow(void *p, size_t *cap, size_t n, size_t sz, struct hstate *s)
{
    if (n <= *cap)
        return p;
    void *q = realloc(p, n * sz);
    if (!q)
        wp_die("%s: out of memory for activations (%zu bytes)", s->model_path, n * sz);
    *cap = n;
    return q;
}

/* Is t a matmul on a model weight whose input we can collect?  src0 must be a
 * non-view tensor in a weights buffer, 2-D (MUL_MAT) or 3-D (MUL_MAT_ID),
 * src1 F32 with contiguous rows.  Source: llama-imatrix's `ask` branch, with
 * the weights-buffer test in place of its "blk." name prefix. */
static int is_weight_matmul(const struct ggml_tensor *t)
{
    if (t->op != GGML_OP_MUL_MAT && t->op != GGML_OP_MUL_MAT_ID)
        return 0;
    const struct ggml_tensor *a = t->src[0], *b = t->src[1];
    if (!a || !b || !a->buffer || a->view_src)
        return 0;
    if (ggml_backend_buffer_get_usage(a->buffer) != GGML_BACKEND_BUFFER_USAGE_WEIGHTS)
        return 0;
    if (b->type != GGML_TYPE_F32 || b->nb[0] != sizeof(float))
        return 0;
    if (t->op == GGML_OP_MUL_MAT)
        return a->ne[2] == 1 && a->ne[3] == 1;
    return a->ne[3] == 1 && t->src[2] != NULL && ggml_nrows(b) == b->ne[1] * b->ne[2];
}

/* src1's bytes in host memory (copied when its buffer is not host memory). */
static const char *host_data(struct hstate *s, const struct ggml_tensor *b)
{
    if (!b->buffer || ggml_backend_buffer_is_host(b->buffer))
        return (const char *)b->data;
    s->host = grow(s->host, &s->host_cap, ggml_nbytes(b), 1, s);
    ggml_backend_tensor_get(b, s->host, 0, ggml_nbytes(b));
    return s->host;
}

/* H (cols × cols, upper triangle, row-major) += Xᵀ X for the n rows x_r at
 * data + off[r] (cols floats each): the rows are converted to double in the
 * scratch matrix and added with one dsyrk, so every product x_i x_j is exact
 * and summed in double.  Dies on a non-finite activation (llama-imatrix
 * checks the same after accumulating). */
static void add_rows(struct hstate *s, const wp_hessplan_weight *w, double *H, const char *const *rows, int64_t n)
{
    const int64_t c = w->cols;
    s->xd = grow(s->xd, &s->xd_cap, (size_t)(n * c), sizeof(double), s);
    for (int64_t r = 0; r < n; r++) {
        const float *x = (const float *)rows[r];
        double *d = s->xd + r * c;
        for (int64_t j = 0; j < c; j++) {
            if (!isfinite(x[j]))
                wp_die("%s: non-finite activation in the input of %s", s->model_path, w->name);
            d[j] = x[j];
        }
    }
    /* A small product on one thread: OpenBLAS's helper threads, woken for it, spin after it
       while ggml's threads compute the next part of the graph, and on few cores each ggml
       barrier then waited for a time slice (--batch 4: 22.5 s for a chunk of stories260K that
       --batch 512 computes in 0.4 s; a breaker's find). 2^22 flop: about a millisecond. */
    char err[512];
    if (wp_blas_room(err, sizeof err))   /* OpenBLAS's first call: under ulimit -v it could hang (blas_room.h) */
        wp_die("%s", err);
    const int nt = (double)n * (double)c * (double)c < 4194304.0 ? 1 : s->threads;
    if (nt != s->blas_threads) {
        openblas_set_num_threads(nt);
        s->blas_threads = nt;
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)c, (int)n, 1.0, s->xd, (int)c, 1.0, H, (int)c);
}

/* The scheduler's eval callback (llama_context_params.cb_eval), after
 * llama-imatrix's collect_imatrix: with ask, says whether t's result is
 * wanted (matmuls on weights of the current pass); without, accumulates t's
 * input rows into the Hessian of its weight (per routed expert for
 * MUL_MAT_ID).  In discovery mode it only records the weights (name, cols,
 * experts) and asks for nothing. */
static bool cb_eval(struct ggml_tensor *t, bool ask, void *user)
{
    struct hstate *s = user;
    if (ask)
        s->asks++;
    if (!is_weight_matmul(t))
        return false;
    const struct ggml_tensor *a = t->src[0], *b = t->src[1];
    char name[GGML_MAX_NAME + 8];
    weight_name(a->name, name, sizeof name);
    int idx = find_weight(s, name);

    if (s->discover) {
        if (idx < 0) {
            if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 64;
                s->w = realloc(s->w, (size_t)s->cap * sizeof *s->w);
                s->p = realloc(s->p, (size_t)s->cap * sizeof *s->p);
                if (!s->w || !s->p)
                    wp_die("%s: out of memory", s->model_path);
            }
            idx = s->n++;
            struct hw *w = &s->w[idx];
            wp_hessplan_weight *pw = &s->p[idx];
            memset(w, 0, sizeof *w);
            char *copy = strdup(name);
            if (!copy)
                wp_die("%s: out of memory", s->model_path);
            *pw = (wp_hessplan_weight){copy, a->ne[0], t->op == GGML_OP_MUL_MAT_ID ? a->ne[2] : 1,
                                       wp_hessplan_layer(name), idx, 0};
            w->in = b;
            if (!s->quant[0] && a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16 && a->type != GGML_TYPE_BF16) {
                snprintf(s->quant, sizeof s->quant, "%s", name);
                s->quant_type = a->type;
            }
            snprintf(w->in_name, sizeof w->in_name, "%s", b->name);
            const struct ggml_tensor *ids = t->op == GGML_OP_MUL_MAT_ID ? t->src[2] : NULL;
            w->ids = ids;
            snprintf(w->ids_name, sizeof w->ids_name, "%s", ids ? ids->name : "");
            /* the same input (and for experts the same routing: gate_exps and up_exps of a
               mixture of experts) gives the same H, one held for them all */
            for (int k = 0; k < idx; k++) {
                const wp_hessplan_weight *pv = &s->p[k];
                const struct hw *v = &s->w[k];
                if (pv->lead == k && pv->n_expert == pw->n_expert && v->in == b && pv->cols == pw->cols &&
                    strcmp(v->in_name, b->name) == 0 && v->ids == ids && strcmp(v->ids_name, w->ids_name) == 0) {
                    pw->lead = k;
                    break;
                }
            }
        }
        if (idx == 0)
            s->graphs++;
        if (idx == 0 && s->next == s->n && s->n > 0 && s->graphs > 1)
            s->next = 0;   /* the next graph */
        if (idx != s->next)
            s->in_order = 0;
        s->next = idx + 1;
        return false;
    }
    if (ask && idx == 0)
        s->graphs++;
    struct hw *w = idx >= 0 ? &s->w[idx] : NULL;
    const wp_hessplan_weight *pw = idx >= 0 ? &s->p[idx] : NULL;
    if (!w || pw->pass != s->pass || !w->H)
        return false;
    if (ask)
        return true;
    if (b->ne[0] != pw->cols)
        wp_die("%s: input of %s has %lld columns, the weight %lld", s->model_path, name, (long long)b->ne[0],
               (long long)pw->cols);

    const char *data = host_data(s, b);
    const int64_t c = pw->cols;
    const char **rows;
    if (t->op == GGML_OP_MUL_MAT) {
        /* every row of a 2-, 3- or 4-D src1 is one token's input (flattened, as
         * llama-imatrix does for a 2-D weight) */
        const int64_t n = ggml_nrows(b);
        rows = malloc((size_t)n * sizeof *rows);
        if (!rows)
            wp_die("%s: out of memory", s->model_path);
        int64_t k = 0;
        for (int64_t i3 = 0; i3 < b->ne[3]; i3++)
            for (int64_t i2 = 0; i2 < b->ne[2]; i2++)
                for (int64_t i1 = 0; i1 < b->ne[1]; i1++)
                    rows[k++] = data + i1 * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3];
        add_rows(s, pw, w->H, rows, n);
        w->tokens[0] += n;
        free(rows);
        return idx != s->stop_at;
    }

    /* MUL_MAT_ID: ids [n_used, n_tokens] (I32, maybe not contiguous),
     * src1 [cols, n_used or 1, n_tokens]; token `row`'s slot `slot` goes to
     * expert ids[slot, row] and reads src1 row (slot % src1->ne[1], row). */
    const struct ggml_tensor *ids = t->src[2];
    const int64_t n_ids = ids->ne[0], n_tok = b->ne[2];
    if (ids->ne[1] != n_tok)
        wp_die("%s: routing ids of %s do not match its input", s->model_path, name);
    char *idbuf = malloc(ggml_nbytes(ids));
    rows = malloc((size_t)(n_ids * n_tok) * sizeof *rows);
    if (!idbuf || !rows)
        wp_die("%s: out of memory", s->model_path);
    ggml_backend_tensor_get(ids, idbuf, 0, ggml_nbytes(ids));
    for (int64_t ex = 0; ex < pw->n_expert; ex++) {
        int64_t n = 0;
        for (int64_t row = 0; row < n_tok; row++)
            for (int64_t slot = 0; slot < n_ids; slot++) {
                const int32_t e = *(const int32_t *)(idbuf + row * ids->nb[1] + slot * ids->nb[0]);
                if (e < 0 || e >= pw->n_expert)
                    wp_die("%s: expert id %d of %s out of range", s->model_path, (int)e, name);
                if (e == ex)
                    rows[n++] = data + (slot % b->ne[1]) * b->nb[1] + row * b->nb[2];
            }
        if (n) {
            add_rows(s, pw, w->H + ex * c * c, rows, n);
            w->tokens[ex] += n;
        }
    }
    free(rows);
    free(idbuf);
    return idx != s->stop_at;
}

/* XXH64 (seed 0) of the text's bytes as read, as 16 lower-case hex digits
 * into hex[17]: text[0..raw_len), where llm_read_text put a NUL over the
 * newline it dropped (raw_len = len + 1), which is put back for the hash. The
 * file was read a second time for it, which standard input cannot be. */
static void hash_text(char *text, size_t len, size_t raw_len, char hex[17])
{
    if (raw_len > len)
        text[len] = '\n';
    snprintf(hex, 17, "%016llx", (unsigned long long)XXH64(text, raw_len, 0));
    text[len] = '\0';
}

/* The machine's memory in bytes: WPACK_MEMORY (bytes, suffix K, M, G or T:
 * a container's share, a machine shared with other jobs), else physical
 * memory (4 GiB where the system does not say). */
static uint64_t machine_memory(void)
{
    const char *e = getenv("WPACK_MEMORY");
    if (e && *e)
        return wp_arg_bytes("WPACK_MEMORY", e);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : (uint64_t)4 << 30;
}

/* GPTQ on a Hessian of fewer tokens (rows of X) than a few times its columns
 * fits the calibration text rather than the model: measured on stories260K
 * (Q4_0, KL divergence over 40 chunks of tinystories), 64 or 128 tokens for
 * 64 columns gave 0.27-0.40 against RTN's 0.217, 4096 tokens 0.157-0.171; in
 * 18 2-layer models of 13 architectures, 512 tokens for 256 to 768 columns
 * did worse than RTN in 10, 8192 in none (gptq(1), Calibration tokens). */
#define WP_FEW_TOKENS 4

/* Whether a weight of cols columns is one GPTQ can quantize: a multiple of
 * the smallest block of the types gptq writes (Q4_0's, as Q5_0, Q8_0 and
 * IQ4_NL's; the K-quants' and IQ4_XS's are larger); any other row stays F16
 * or F32 in every ftype. */
static int quantizable(int64_t cols)
{
    return cols % wp_ggml_blck_size(WP_Q4_0) == 0;
}

/* One warning, before the passes, for the weights (one H each, not experts)
 * whose n_chunk x n_ctx tokens are fewer than WP_FEW_TOKENS times their
 * columns, with the chunks that would give the widest enough (or, past the
 * text's n_chunk_max, a longer text). A weight whose rows no block type
 * divides (quantizable) stays F16 or F32 in every ftype: GPTQ never reads its
 * H, and it is left out (stories260K's 172-column ffn_down was named the
 * widest: a re-tester's find). */
static void few_tokens_dense(const wp_hessplan_weight *p, int n, int n_chunk, int n_ctx, int n_chunk_max,
                             int n_text, const char *text_name)
{
    const int64_t tokens = (int64_t)n_chunk * n_ctx;
    int few = 0, dense = 0, widest = -1, experts = 0;
    for (int i = 0; i < n; i++) {
        experts |= p[i].n_expert > 1;
        if (p[i].n_expert > 1 || !quantizable(p[i].cols))
            continue;
        dense++;
        if (tokens < WP_FEW_TOKENS * p[i].cols) {
            few++;
            if (widest < 0 || p[i].cols > p[widest].cols)
                widest = i;
        }
    }
    if (!few)
        return;
    const int64_t need = (WP_FEW_TOKENS * p[widest].cols + n_ctx - 1) / n_ctx;
    char way[160];
    /* (the chunks as a count, not as hessian's option: lazyweights and make model pass this line on,
       where the knob is HESSIAN_CHUNKS, and a fresh user looked for their --chunks) */
    if (need <= n_chunk_max)
        snprintf(way, sizeof way, "%lld chunks give %d times, and more help further (hessian --chunks, lazyweights' "
                 "HESSIAN_CHUNKS)", (long long)need, WP_FEW_TOKENS);
    else   /* (a shorter --ctx uses the text's last partial chunk too; "holds 1 chunks" was said, and gptq
              --damp, which lazyweights cannot pass: a re-tester's finds) */
        snprintf(way, sizeof way, "%s holds %d tokens: a longer text gives more%s", text_name, n_text,
                 n_text >= WP_FEW_TOKENS * p[widest].cols ? ", a shorter --ctx more of these" : "");
    wp_warn("%lld tokens (%d chunk%s of %d) are fewer than %d times the columns of %d of the %d weights to quantize "
            "(%sthe widest: %s, %lld columns): GPTQ on so few can do worse than RTN; %s (gptq(1): Calibration tokens)",
            (long long)tokens, n_chunk, n_chunk == 1 ? "" : "s", n_ctx, WP_FEW_TOKENS, few, dense,
            experts ? "experts aside; " : "", p[widest].name, (long long)p[widest].cols, way);
}

/* The experts' matrices whose Hessians hold fewer than WP_FEW_TOKENS times
 * their columns' tokens (and more than none, which have their own
 * warning), counted a weight each (m weights share a record with
 * --share-inputs: the count is the same with and without it) over the run
 * for one warning, with the one of fewest tokens a column. */
struct few_experts {
    int64_t n, of, expert, tokens, cols;
    char name[GGML_MAX_NAME];
};

static void few_experts_add(struct few_experts *f, const char *name, int64_t expert, int64_t tokens, int64_t cols,
                            int m)
{
    f->of += m;
    if (tokens == 0 || tokens >= WP_FEW_TOKENS * cols || !quantizable(cols))
        return;
    if (!f->n || (double)tokens / (double)cols < (double)f->tokens / (double)f->cols) {
        snprintf(f->name, sizeof f->name, "%s", name);
        f->expert = expert;
        f->tokens = tokens;
        f->cols = cols;
    }
    f->n += m;
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *text_path = NULL, *out_path = NULL;
    long long ctx_arg = 512, chunks_arg = -1, batch_arg = 2048, threads = 0;
    uint64_t max_mem = 0;
    int share = 0;

    wp_cli_init("hessian");
    wp_cli_skip_destructors();   /* OpenBLAS's shutdown can hang (cli.h) */
    for (int i = 1; i < argc; i++) {
        /* llama-imatrix's short names too, as ppl takes llama-perplexity's (-m, -f: "unknown
           option" to a llama.cpp user: a new user's trial) */
        static const char *const takes[] = {"--model", "--text", "--ctx", "--chunks", "--threads",
                                            "--batch", "--max-memory", "-o", "--output-file", "--output", LLM_LLAMA_NAMES};
        if (wp_cli_flag(argv[i], "--share-inputs")) {
            share = 1;
            continue;
        }
        /* llama-imatrix's --process-output: what hessian always does (output.weight recorded);
           its options of the imatrix file alone named (they were "unknown option": a new user's
           trial) */
        if (wp_cli_flag(argv[i], "--process-output") || wp_cli_flag(argv[i], "--no-ppl"))
            continue;   /* (and --no-ppl: hessian computes no perplexity) */
        static const char *const imatrix_only[] = {"--output-format", "-ofreq", "--output-frequency", "--save-frequency",
                                                   "--in-file", "--ppl", "--parse-special", "--show-statistics",
                                                   "--chunk", "--from-chunk"};
        const char *other = wp_cli_option_of(argv[i], imatrix_only, sizeof imatrix_only / sizeof *imatrix_only);
        if (other)
            wp_die("%s: llama-imatrix's option, not hessian's: hessian writes GPTQ's Hessians of the whole text, "
                   "for gptq --hessian, and nothing else (try --help)", other);
        llm_bare_word(argv[i]);
        const char *v, *a = wp_cli_opt(argc, argv, &i, usage, takes, sizeof takes / sizeof *takes, &v);
        if (!a)   /* "--" last */
            break;
        const char *typed = a;   /* for "given twice", as typed */
        a = llm_long_name(a);
        if (llm_shared_opt(a, v))
            ;
        else if (!strcmp(a, "--model"))
            model_path = wp_cli_once(typed, model_path, v, 0);
        else if (!strcmp(a, "--text"))
            text_path = wp_cli_once(typed, text_path, v, 0);
        else if (!strcmp(a, "--ctx"))
            ctx_arg = wp_arg_int(a, v, 16, 1 << 20);
        else if (!strcmp(a, "--chunks"))
            chunks_arg = wp_arg_int(a, v, 1, INT32_MAX);
        else if (!strcmp(a, "--threads"))
            threads = wp_arg_int(a, v, 1, 512);
        else if (!strcmp(a, "--batch"))
            batch_arg = wp_arg_int(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--max-memory"))
            max_mem = wp_arg_bytes(a, v);
        else
            out_path = wp_cli_once(typed, out_path, v, 0);
    }
    if (!model_path)
        wp_die("--model: is required (try --help)");
    if (!text_path)
        wp_die("--text: is required (try --help)");
    wp_cli_input(model_path);   /* -o onto either is refused */
    wp_cli_input(text_path);
    wp_out_refuse_tty(out_path, WP_OUT_HESSIANS);   /* before the model is run, not after */
    const bool default_mem = max_mem == 0;
    const uint64_t mem = default_mem ? machine_memory() : 0;
    if (threads == 0)
        threads = wp_cli_threads(wp_par_cpus());
    /* OpenBLAS's threads set before anything of hessian's own is allocated: a count above the
       one it started with starts more workers, whose buffers wp_blas_room_init waits for (set
       after the model, they went unchecked: a reviewer's find) */
    openblas_set_num_threads((int)threads);
    wp_blas_room_init();

    const char *text_name = llm_text_name(text_path);   /* "-": "stdin" */
    size_t text_len = 0, text_raw = 0;
    char *text = llm_read_text(text_path, &text_len, &text_raw);
    if (!text)
        wp_die("%s: %s", text_name, strerror(errno));
    char why_not[2 * PATH_MAX + 160];
    if (llm_not_text(text, text_len, text_path, why_not, sizeof why_not))
        wp_die("%s: not a calibration text: %s", text_name, why_not);
    char text_hash[17];
    hash_text(text, text_len, text_raw, text_hash);

    if (llm_setup() != 0)
        wp_die("%s: no ggml backend available (set WPACK_GGML_BACKEND_DIR)", model_path);
    const char *why;
    struct llama_model *model = llm_load_model(model_path, &why);
    if (!model)
        wp_die("%s: %s", model_path, why);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const int add_bos = llama_vocab_get_add_bos(vocab);
    if (llama_vocab_get_add_eos(vocab))
        wp_die("%s: the vocabulary adds EOS to every text; llama-imatrix's method does not apply", model_path);
    if (default_mem)
        max_mem = wp_hessplan_default_memory(mem, llama_model_size(model));

    int n_tokens = 0;
    llm_step_tokenize(text_name, model_path);
    llama_token *tokens = llm_tokenize(vocab, text, text_len, &n_tokens);
    if (!tokens)
        wp_die("%s: cannot tokenize (too long?)", text_name);
    free(text);
    const int n_ctx = (int)ctx_arg;
    if (n_tokens < n_ctx)
        wp_die("%s: tokenizes to only %d token%s; --ctx %d needs at least %d (one chunk)", text_name, n_tokens,
               n_tokens == 1 ? "" : "s", n_ctx, n_ctx);
    const int n_chunk_max = n_tokens / n_ctx;
    const int n_chunk = chunks_arg < 0 ? n_chunk_max : (int)(chunks_arg < n_chunk_max ? chunks_arg : n_chunk_max);
    /* fewer than asked, said (make model cached 255 chunks as HESSIAN_CHUNKS=300's, unsaid:
       a fresh user's find) */
    if (chunks_arg > n_chunk_max)
        wp_warn("%s: --chunks %lld: the text holds %d chunk%s of %d tokens (%d tokens); using %s", text_name,
                chunks_arg, n_chunk_max, n_chunk_max == 1 ? "" : "s", n_ctx, n_tokens,
                n_chunk_max == 1 ? "it" : "them all");

    /* llama-imatrix's layout: n_seq = batch/ctx chunks in parallel, or a chunk
     * in several batches when batch < ctx */
    int n_seq = (int)(batch_arg / n_ctx);
    if (n_seq < 1)
        n_seq = 1;
    if ((size_t)n_seq > llama_max_parallel_sequences())
        n_seq = (int)llama_max_parallel_sequences();
    if (n_seq > n_chunk)
        n_seq = n_chunk;
    const int n_batch = (int)(batch_arg < (long long)n_seq * n_ctx ? batch_arg : (long long)n_seq * n_ctx);
    const int num_batches = (n_ctx + n_batch - 1) / n_batch;
    if (n_ctx > llama_model_n_ctx_train(model))
        wp_warn("the model was trained on only %d context tokens (--ctx %d)", llama_model_n_ctx_train(model), n_ctx);

    struct hstate st;
    memset(&st, 0, sizeof st);
    st.model_path = model_path;
    st.discover = 1;
    st.in_order = 1;
    st.stop_at = -1;

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_seq * n_ctx);
    cp.n_batch = (uint32_t)n_batch;
    cp.n_seq_max = (uint32_t)n_seq;
    cp.n_threads = (int32_t)threads;
    cp.n_threads_batch = (int32_t)threads;
    cp.swa_full = false;
    cp.cb_eval = cb_eval;
    cp.cb_eval_user_data = &st;
    llm_step(model_path, "llama.cpp cannot create a context of this size");
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx)
        wp_die("%s: llama.cpp cannot create a context of this size", model_path);
    st.threads = st.blas_threads = (int)threads;

    wp_writer *wr = wp_cli_writer(out_path);
    llm_step(model_path, "llama_decode failed");
    struct llama_batch batch = llama_batch_init(n_batch, 0, 1);

    /* Run chunks [0, n_chunk) through the model as llama-imatrix does; with
     * `one`, only the first batch of the first chunk (discovery). */
    /* A false return ends only the scheduler's current split (the node loop
     * of ggml_backend_sched_compute_splits): with a GPU or another device
     * beside the CPU the graph has several, and the later ones would run on
     * what the stop left uncomputed (a MoE's routing ids among it). */
    bool one_backend = true;
    for (size_t d = 0; d < ggml_backend_dev_count(); d++)
        if (ggml_backend_dev_type(ggml_backend_dev_get(d)) != GGML_BACKEND_DEVICE_TYPE_CPU)
            one_backend = false;
    const double t_start = now_s();
    struct few_experts few = {0};
    int n_pass = 1;
    double graph_nodes = 0;         /* nodes of one whole graph (discovery) */
    for (int pass = -1; pass < n_pass; pass++) {
        st.discover = pass < 0;
        st.pass = pass;
        if (pass == 0) {
            /* the one-order-a-graph form needs as many graphs as the batch
             * had micro-batches: a model that runs its layers twice (shared
             * weights) repeats the order inside one graph */
            const int64_t first = n_ctx < n_batch ? n_ctx : n_batch, ub = (int64_t)llama_n_ubatch(ctx);
            if (st.next != st.n || st.graphs != (first + ub - 1) / ub)
                st.in_order = 0;
            graph_nodes = st.graphs > 0 ? (double)st.asks / (double)st.graphs : 0;
            st.asks = st.graphs = 0;
            char perr[2 * GGML_MAX_NAME + 128];
            n_pass = wp_hessplan_make(st.p, st.n, &max_mem, default_mem, share, perr, sizeof perr);
            if (n_pass < 0)
                wp_die("%s", perr);
            if (n_pass == 0)
                wp_die("%s: no matrix multiplication on a model weight was seen", model_path);
            if (st.quant[0])   /* gptq needs the unquantized model; its Hessians should be that model's */
                wp_warn("%s: %s is %s: these are the Hessians of a quantized model (calibrate the F32/F16/BF16 "
                        "model you quantize)", model_path, st.quant, wp_ggml_type_name((uint32_t)st.quant_type));
            /* held: the Hessians in memory (one for the weights of an input); written: the
               records' payloads, where without --share-inputs each weight's record holds its
               input's H (the line said "36 records, 1.6 MiB of Hessians" of a 2.1 MiB file) */
            uint64_t held = 0, written = 0, shared = 0;
            int n_rec = 0;
            for (int i = 0; i < st.n; i++) {
                held += wp_hessplan_bytes(st.p, i);
                if (!share || st.p[i].lead == i) {
                    n_rec++;
                    written += wp_hessplan_bytes(st.p, st.p[i].lead);
                }
                if (st.p[i].lead == i)
                    shared += wp_hessplan_bytes(st.p, i);
            }
            /* the output's room, before the passes (a full disk or ulimit -f said "write error"
               after them: tens of minutes on a 7B model, a new user's trial); the Hessians'
               bytes alone, a bound the file passes by its records' headers (about 210 bytes a
               record): an allowance for them refused files that fit (a breaker's find) */
            char room[160];
            const uint64_t need = written;
            if (!wp_out_room(need, room, sizeof room)) {
                char alt[160] = "";
                const uint64_t need_shared = shared;
                if (!share && need_shared < need)
                    snprintf(alt, sizeof alt, "; --share-inputs writes %.1f %s, one H for the weights of an input",
                             need_shared >= (1ull << 30) ? need_shared / 1073741824.0 : need_shared / 1048576.0,
                             need_shared >= (1ull << 30) ? "GiB" : "MiB");
                wp_die("%s: no room for the Hessians: %s%s", wp_out_name(), room, alt);
            }
            /* "36 records of 2.1 MiB" read as 2.1 MiB each (a fresh user's find) */
            fprintf(stderr, "hessian: %d tokens, %d chunk%s of %d, %d weights, %d record%s, %.1f MiB in all "
                    "(%.1f MiB of Hessians to hold, over the passes), %d pass%s of at most %.1f MiB%s\n", n_tokens, n_chunk,
                    n_chunk > 1 ? "s" : "", n_ctx, st.n, n_rec, n_rec > 1 ? "s" : "", written / 1048576.0,
                    held / 1048576.0, n_pass, n_pass > 1 ? "es" : "", max_mem / 1048576.0,
                    default_mem ? " (the default --max-memory)" : "");
            few_tokens_dense(st.p, st.n, n_chunk, n_ctx, n_chunk_max, n_tokens, text_name);
        }
        if (pass >= 0) {
            st.stop_at = -1;
            for (int i = 0; i < st.n; i++)
                if (st.in_order && one_backend && st.p[i].pass == pass && st.p[i].lead == i)
                    st.stop_at = i;
        }
        if (pass >= 0)
            for (int i = 0; i < st.n; i++) {
                struct hw *w = &st.w[i];
                const wp_hessplan_weight *pw = &st.p[i];
                if (pw->pass != pass || pw->lead != i)
                    continue;
                w->H = calloc((size_t)(pw->n_expert * pw->cols * pw->cols), sizeof(double));
                w->tokens = calloc((size_t)pw->n_expert, sizeof *w->tokens);
                if (!w->H || !w->tokens)
                    wp_die("%s: out of memory for the Hessian of %s (%llu bytes; lower --max-memory)",
                           model_path, pw->name, (unsigned long long)wp_hessplan_bytes(st.p, i));
            }
        const int chunks_now = pass < 0 ? 1 : n_chunk;
        const double t0 = now_s();
        for (int i = 0; i < chunks_now; i += n_seq) {
            const int start = i * n_ctx, end = start + n_ctx;
            const int n_seq_batch = pass < 0 ? 1 : (n_seq < n_chunk - i ? n_seq : n_chunk - i);
            llama_memory_clear(llama_get_memory(ctx), true);
            for (int j = 0; j < (pass < 0 ? 1 : num_batches); j++) {
                const int batch_start = start + j * n_batch;
                const int batch_size = end - batch_start < n_batch ? end - batch_start : n_batch;
                batch.n_tokens = 0;
                for (int seq = 0; seq < n_seq_batch; seq++) {
                    const int seq_start = batch_start + seq * n_ctx;
                    for (int k = 0; k < batch_size; k++) {
                        const int idx = batch.n_tokens++;
                        llama_token tk = tokens[seq_start + k];
                        if (add_bos && j == 0 && k == 0)
                            tk = llama_vocab_bos(vocab);
                        batch.token[idx] = tk;
                        batch.pos[idx] = j * n_batch + k;
                        batch.n_seq_id[idx] = 1;
                        batch.seq_id[idx][0] = seq;
                        batch.logits[idx] = 1; /* all outputs: every token reaches every matrix */
                    }
                }
                if (llama_decode(ctx, batch) != 0)
                    wp_die("%s: llama_decode failed", model_path);
            }
            llama_synchronize(ctx);
            if (pass >= 0) {
                const double t = now_s() - t0;
                const int done = i + n_seq_batch;
                fprintf(stderr, "hessian: pass %d/%d chunk %d/%d, %.0f tokens/s\n", pass + 1, n_pass, done,
                        n_chunk, t > 0 ? (double)done * n_ctx / t : 0.0);
            }
        }
        if (pass < 0)
            continue;

        /* emit this pass's records (full symmetric H), free them: with
         * --share-inputs one record a Hessian, naming its weights; without,
         * one record a weight, those that read one input each with its H */
        for (int i = 0; i < st.n; i++) {
            const wp_hessplan_weight *pw = &st.p[i];
            if (pw->pass != pass || (share && pw->lead != i))
                continue;
            const int l = pw->lead;
            struct hw *h = &st.w[l];   /* the weight whose H this is */
            const int64_t c = st.p[l].cols, n_expert = st.p[l].n_expert;
            int64_t total = 0;
            for (int64_t ex = 0; ex < n_expert; ex++) {
                double *H = h->H + ex * c * c;
                if (l == i)
                    for (int64_t r = 0; r < c; r++)
                        for (int64_t q = r + 1; q < c; q++)
                            H[q * c + r] = H[r * c + q];
                total += h->tokens[ex];
            }
            wp_record r;
            wp_record_init(&r);
            if (wp_hessian_head(&r, pw->name, c, n_expert, total, text_hash, n_ctx, n_chunk))
                wp_die("%s: cannot name a record", pw->name);
            /* shared (--share-inputs): weights=A,B,C in first-use order, this one first */
            const char **names = malloc((size_t)st.n * sizeof *names);
            if (!names)
                wp_die("%s: out of memory", model_path);
            size_t n_share = 0;
            for (int k = i; share && k < st.n; k++)
                if (st.p[k].lead == i)
                    names[n_share++] = st.p[k].name;
            char aerr[2 * GGML_MAX_NAME + 64];
            if (n_share > 1 && wp_hessian_set_weights(&r, names, n_share, aerr, sizeof aerr))
                wp_die("%s: %s", model_path, aerr);
            free(names);
            if (n_expert > 1) {
                if (wp_hessian_set_expert_tokens(&r, h->tokens, n_expert))
                    wp_die("%s: out of memory", model_path);
                /* one line a weight (a line an expert: 363 lines for 128 experts, a breaker's find) */
                unsigned char *none = calloc((size_t)n_expert, 1);
                if (!none)
                    wp_die("%s: out of memory", model_path);
                for (int64_t ex = 0; ex < n_expert; ex++) {   /* (n_share: the weights a shared record stands for) */
                    none[ex] = h->tokens[ex] == 0;
                    few_experts_add(&few, pw->name, ex, h->tokens[ex], c, n_share ? (int)n_share : 1);
                }
                char list[160];
                if (wp_hessian_expert_list(none, n_expert, list, sizeof list) > 1)
                    wp_warn("%s: experts %s received no tokens; their Hessians are zero", pw->name, list);
                else if (list[0])
                    wp_warn("%s: expert %s received no tokens; its Hessian is zero", pw->name, list);
                free(none);
            } else if (total == 0) {
                wp_warn("%s: received no tokens; its Hessian is zero", pw->name);
            }
            /* the record borrows the Hessian as its payload (doubles are
             * little-endian on every host llama.cpp's CPU backend runs on) */
            r.payload = (uint8_t *)h->H;
            r.payload_len = r.payload_cap = wp_hessplan_bytes(st.p, l);
            wp_cli_put(wr, &r);
            r.payload = NULL;
            r.payload_len = r.payload_cap = 0;
            wp_record_free(&r);
            /* the Hessian's last weight frees it */
            int later = 0;
            for (int k = i + 1; !share && k < st.n && !later; k++)
                later = st.p[k].lead == l;
            if (!later) {
                free(h->H);
                h->H = NULL;
                free(h->tokens);
                h->tokens = NULL;
            }
        }
    }
    if (few.n) {   /* (after the records: an expert's tokens are known when its H is written) */
        /* the routed tokens grow with the chunks: about this many give the worst 4 times (the
           line said "more chunks" alone: a re-tester's find) */
        const double want = ceil((double)n_chunk * WP_FEW_TOKENS * (double)few.cols / (double)few.tokens);
        wp_warn("%lld of the %lld experts' matrices have Hessians of fewer tokens than %d times their columns (the "
                "fewest a column: %s expert %lld, %lld token%s for %lld columns): GPTQ on so few can do worse than "
                "RTN; about %.0f chunks give it %d times (gptq(1): Calibration tokens)",
                (long long)few.n, (long long)few.of, WP_FEW_TOKENS, few.name, (long long)few.expert,
                (long long)few.tokens, few.tokens == 1 ? "" : "s", (long long)few.cols, want, WP_FEW_TOKENS);
    }
    fprintf(stderr, "hessian: %d weights, %d chunk%s x %d tokens in %.1f s", st.n, n_chunk, n_chunk > 1 ? "s" : "",
            n_ctx, now_s() - t_start);
    if (n_pass > 1 && st.in_order && one_backend && st.graphs > 0 && graph_nodes > 0)
        fprintf(stderr, "; each pass stops after its last layer: %.0f%% of %d whole forward passes' graph nodes",
                100.0 * (double)st.asks / ((double)st.graphs * graph_nodes), n_pass);
    else if (n_pass > 1)
        fprintf(stderr, "; every pass runs the whole forward pass (%s)",
                one_backend ? "a weight is used more than once a graph" : "the graph runs on more than the CPU");
    fputc('\n', stderr);
    wp_cli_writer_close(wr);

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    for (int i = 0; i < st.n; i++)
        free((char *)st.p[i].name);
    free(st.w);
    free(st.p);
    free(st.xd);
    free(st.host);
    free(tokens);
    return 0;
}
