/* gptq - quantize the weight matrices of a tensor stream into ggml blocks
 * (RTN byte-exact with llama.cpp, GPTQ with Hessians, the LazyWeights
 * options γ / c / λ). See gptq(1).
 *
 * How the stream is processed. llama-quantize's type choice (lib/ftype.h)
 * needs every tensor's name and shape before it decides the first one, and
 * llama-quantize writes tensors in its own order (layer number, then name)
 * and appends general.quantization_version and general.file_type at the end
 * of the metadata. So gptq spools the whole input stream to an unnamed
 * temporary file (tmpfile(3), in $TMPDIR; memory stays one tensor), plans,
 * and then writes: the GGUF header record (version 3, n_kv, data_start and
 * file_size updated for the new layout, so ggufpack pads the file as
 * llama.cpp's writer does), the metadata records in input order without
 * general.quantization_version, general.file_type and split.*, then
 * general.quantization_version = 2 and general.file_type = the ftype (u32),
 * then the tensors in llama-quantize's order (--keep-order: input order),
 * then every other record in input order.
 *
 * Hessian records (lib/hessians.h: the format; from `hessian`, read with
 * --hessian FILE, a stream file): a record is a weight's H, or that of a
 * shared input whose weights=A,B,C names the weights that read it; n_dims 2,
 * or 3 for a tensor of experts (ne[2] H, one an expert: each expert's matrix
 * gets GPTQ with its own), F64 or F32, H = Σ_tokens xᵀx (a mean is as
 * good: GPTQ's damping is relative); n_tokens and the rest carried, not read.
 * A weight named by two records (as a name or in weights=) is refused.
 * A shared record is factored once (wp_gptq_factor) for all its weights
 * (see "one Hessian factor kept" below).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blas_room.h"
#include "blocks.h"
#include "cli.h"
#include "names.h"
#include "spool.h"
#include "ftype.h"
#include "ggml_type.h"
#include "gguf_file.h"
#include "hessians.h"
#include "gptq.h"
#include "text.h"
#include "imatrix.h"
#include "half.h"
#include "par.h"
#include "quantize.h"
#include "rtn.h"
#include "safetensors.h"
#include "zframe.h"

static const char usage[] =
    "usage: gptq (--type T | --ftype PRESET) [--tensor-type REGEX=TYPE]...\n"
    "            [--tensor-type-file FILE] [--rtn] [--hessian FILE] [--imatrix FILE] [--damp F] [--act-order]\n"
    "            [--gamma] [--widen C] [--lambda L] [--keep-order] [--strict]\n"
    "            [--pure] [--output-tensor-type T] [--token-embedding-type T]\n"
    "            [--leave-output-tensor] [--allow-requantize] [--threads N] [--quiet]\n"
    "            [-o OUT] [STREAM]\n"
    "       gptq --check (--type T | --ftype PRESET) [--hessian-later] [options] [MODEL.gguf | STREAM]\n"
    "Quantize the weight matrices of a wpack tensor stream into ggml blocks:\n"
    "byte-exact llama.cpp RTN, GPTQ with the Hessians of --hessian, and the\n"
    "LazyWeights options (--gamma shared step, --widen C, --lambda L). See gptq(1).\n"
    "--check: say what gptq would refuse (options, type, the model's tensors) and exit;\n"
    "  it also refuses an already quantized model, which a run copies with a warning;\n"
    "--hessian-later: checked as a run with --hessian, before its Hessians exist.\n";

/* ---- small helpers ------------------------------------------------------- */


static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort's form of llama-quantize's tensor order (wp_ftype_weight_cmp) */
static int llama_order(const void *a, const void *b)
{
    return wp_ftype_weight_cmp(*(char *const *)a, *(char *const *)b);
}

static int dropped_kv(const char *k)
{
    /* (and a safetensors file's header, safetensorscat's: the output is no longer that file's
       tensors, and unbundle of its bundle refused to write a GGUF, a breaker's find) */
    return !strcmp(k, "general.quantization_version") || !strcmp(k, "general.file_type") ||
           !strcmp(k, "split.no") || !strcmp(k, "split.count") || !strcmp(k, "split.tensors.count") ||
           !strcmp(k, WP_ST_HEADER_KEY);
}

/* ---- Hessian file -------------------------------------------------------- */

static wp_hessian_file *hfile;   /* --hessian's file, indexed by weight */
static const char *hpath;

/* Append word w to the command line s (size n) as a shell reads it back (lib/cli.h's
 * wp_shell_word for a path, which makes -x ./-x, wp_shell_arg for an option word). */
static void shell_word(char *s, size_t n, const char *w, int path)
{
    char q[4 * 4096 + 6];
    const size_t k = strlen(s);
    snprintf(s + k, n - k, "%s%s", k ? " " : "", (path ? wp_shell_word : wp_shell_arg)(w, q, sizeof q));
}

/* Die for a --hessian file the stream reader refused (err, its message). The model
 * or llama-imatrix's GGUF given there was "not a wpack stream (a GGUF file: read it
 * with ggufcat)", a hint for the wrong file (a new user's trial): gguf_file and
 * imatrix say which it is (an imatrix.dat by its head first: wp_imatrix_dat_head), as
 * a text's first 4 KiB (printable) says it is one. */
static __attribute__((noreturn)) void not_hessians(const char *path, const char *err)
{
    unsigned char b[4096];   /* its first 4 KiB */
    const size_t n = wp_file_head(path, b, sizeof b);
    char gerr[256];
    wp_gguf_in *g = wp_gguf_open(path, gerr, sizeof gerr);
    wp_gguf_close(g);
    /* llama-imatrix's output, GGUF or legacy imatrix.dat (the .dat was "not a wpack stream (bad
       magic)": a new user's trial) */
    wp_imatrix im;
    const int dat = !g && wp_imatrix_dat_head(b, n);
    if (g || dat) {
        if (!wp_imatrix_load(path, &im, gerr, sizeof gerr)) {
            wp_imatrix_free(&im);
            wp_die("%s: an importance matrix (llama-imatrix), not Hessians: give it with --imatrix; "
                   "--hessian takes the file that hessian -o wrote", path);
        }
        if (dat)   /* one cut short: the loader says where */
            wp_die("%s", gerr);
    }
    if (g)
        wp_die("%s: a GGUF model, not Hessians: --hessian takes the file that hessian -o wrote", path);
    /* a calibration text given as the Hessians (it said "not a wpack stream (bad magic)"):
     * its first 4 KiB printable (tabs and line ends too; UTF-8's bytes above 127), and not
     * empty (a binary without a NUL, or a Hessian file cut in its magic, was "a text": a
     * breaker's find) */
    char q[1024] = "";
    shell_word(q, sizeof q, path, 1);
    if (wp_text_like(b, n) && memcmp(b, WP_STREAM_MAGIC, n < 8 ? n : 8))
        wp_die("%s: a text, not Hessians: hessian -m MODEL.gguf -f %s -o m.hess computes them from it; "
               "--hessian takes the file that hessian -o wrote", path, q);
    wp_die("%s", err);
}

/* Die when the input file in is llama-imatrix's legacy imatrix.dat (its head, then the
 * whole file loads as one), naming it as make model does its GGUF (it was "not a GGUF file
 * (bad magic)", "not a wpack stream (bad magic)": a breaker's find); one whose head passes
 * and the rest does not, with the loader's message. A pipe, standard input or any other
 * file returns. */
static void imatrix_dat_as_model(const char *in)
{
    struct stat st;
    if (!in || !strcmp(in, "-") || stat(in, &st) || !S_ISREG(st.st_mode))
        return;
    unsigned char b[4096];
    const size_t n = wp_file_head(in, b, sizeof b);
    wp_imatrix im;
    char err[256];
    if (!wp_imatrix_dat_head(b, n))
        return;
    if (wp_imatrix_load(in, &im, err, sizeof err))   /* one cut short: the loader says where */
        wp_die("%s", err);
    wp_imatrix_free(&im);
    wp_die("%s: an importance matrix (llama-imatrix's imatrix.dat), not a model: it goes to gptq --imatrix "
           "(IMATRIX=FILE for make model and lazyweights)", in);
}

/* Whether the input file in is an importance matrix that loads, GGUF or imatrix.dat: a
 * swapped MODEL and IMATRIX said (a note's left alone). Cheap for a model: the GGUF loader
 * stops at its first tensor, and another file's head is no .dat's. */
static int is_imatrix_file(const char *in)
{
    struct stat st;
    if (!in || !strcmp(in, "-") || stat(in, &st) || !S_ISREG(st.st_mode))
        return 0;
    unsigned char b[4096];
    const size_t n = wp_file_head(in, b, sizeof b);
    wp_imatrix im;
    char err[256];
    if (!wp_gguf_head(b, n) && !wp_imatrix_dat_head(b, n))
        return 0;
    if (wp_imatrix_load(in, &im, err, sizeof err))
        return 0;
    wp_imatrix_free(&im);
    return 1;
}

/* Open --hessian's file and index its records (wp_hessian_file_open), or die: a file
 * the stream reader refuses is named for what it is (not_hessians). */
static void hessian_open(const char *path)
{
    char err[2 * WP_MAX_NAME + 1024];
    hpath = path;
    wp_cli_input(path);
    const int k = wp_hessian_file_open(path, &hfile, err, sizeof err);
    if (k == WP_HESSIANS_NOT_STREAM)
        not_hessians(path, err);
    if (k)
        wp_die("%s", err);
}

/* Dies unless Hessian record h (its head) fits tensor `name` of `cols`
 * columns and n_mat matrices (wp_hessian_fit_problem). */
static void hessian_fits(const wp_hessian_ref *h, const char *name, int64_t cols, int64_t n_mat)
{
    char b[2 * WP_MAX_NAME + 128];
    const char *why = wp_hessian_fit_problem(h->rec, h->ne0, h->ne1, h->ne2, h->type, h->payload_len, name, cols,
                                             n_mat, b, sizeof b);
    if (why)
        wp_die("%s: %s", hpath, why);
}

/* The Hessian record that weight `name` maps to, or NULL. */
static const wp_hessian_ref *hessian_of(const char *name)
{
    return hfile ? wp_hessian_file_find(hfile, name) : NULL;
}

/* The Hessian of weight `name` (cols × cols doubles, n_mat of them for a
 * tensor of experts, malloc'd), or NULL: none, or a zero one (with a
 * warning; its tensor is quantized by RTN). */
static double *hessian_get(const char *name, int64_t cols, int64_t n_mat)
{
    char err[2 * WP_MAX_NAME + 1024];
    double *H;
    const int k = wp_hessian_file_get(hfile, name, cols, n_mat, &H, err, sizeof err);
    if (k < 0)
        wp_die("%s", err);
    if (k == 1)
        wp_warn("%s: tensor %s: the Hessian is zero (no calibration token reached it): RTN instead", hpath, name);
    return H;
}

/* Whether the plan's choice ch quantizes a tensor of type `from` into blocks:
 * the tensors GPTQ reads a Hessian for. */
static int to_blocks(const struct wp_ftype_choice *ch, uint32_t from)
{
    return ch->quantize && (uint32_t)ch->type != from && !wp_ggml_is_float((uint32_t)ch->type);
}

/* ---- imatrix (llama-imatrix's GGUF or imatrix.dat, read by lib/imatrix.c) */

static wp_imatrix imatrix;
static int have_imat;
static int allow_requantize;   /* --allow-requantize: quantized inputs are dequantized and quantized again */
/* llama-quantize's --output-tensor-type, --token-embedding-type (ggml types, -1: none) and
 * --leave-output-tensor */
static int output_type = -1, token_embd_type = -1, leave_output;
static const char *imat_path;

/* The imatrix entry for weight `name` (ne0 × n_mat: one vector per expert),
 * as llama-quantize's load_imatrix takes it (wp_imatrix_fit); NULL if none, or
 * for a token embedding whose entry does not fit (warned when `warn`). Dies on
 * any other entry that does not fit. */
static const wp_imatrix_entry *imatrix_entry(const char *name, int64_t ne0, int64_t n_mat, int warn)
{
    const wp_imatrix_entry *e = NULL;
    char msg[2 * WP_MAX_NAME + 256];
    /* (llama-quantize quantizes the token embedding without an entry that does not fit; gptq
       stopped there) */
    const int k = have_imat ? wp_imatrix_fit(&imatrix, imat_path, name, ne0, n_mat, wp_ftype_is_token_embd(name), &e,
                                             msg, sizeof msg)
                            : 0;
    if (k < 0)
        wp_die("%s", msg);
    if (k == 1 && warn)
        wp_warn("%s", msg);
    return e;
}

/* Importance weights for weight `name` (ne0 × n_mat floats), a copy of its
 * imatrix_entry (finite: checked at load); NULL if none. The caller frees it. */
static float *imatrix_get(const char *name, int64_t ne0, int64_t n_mat)
{
    const wp_imatrix_entry *e = imatrix_entry(name, ne0, n_mat, 0);
    if (!e)
        return NULL;
    float *w = malloc((size_t)(ne0 * n_mat) * sizeof *w);
    if (!w)
        wp_die("out of memory");
    memcpy(w, e->importance, (size_t)(ne0 * n_mat) * sizeof *w);
    return w;
}

/* A u32 or string kv record. */
/* Write the key/value key = str (a string), or with str NULL = u (a u32), to w (NULL: not
 * written). Returns the bytes it takes in the GGUF. */
static uint64_t put_kv(wp_writer *w, const char *key, const char *str, uint32_t u)
{
    wp_record r;
    wp_record_init(&r);
    if (wp_gguf_kv_set(&r, key, str, u))
        wp_die("out of memory");
    const uint64_t bytes = wp_gguf_kv_bytes(&r);
    if (w)
        wp_cli_put(w, &r);
    wp_record_free(&r);
    return bytes;
}

/* llama-quantize's record of the imatrix used (wp_imatrix_kvs), written to w
 * (NULL: counted only); returns how many keys, and their GGUF bytes in *bytes. */
static int imatrix_kvs(wp_writer *w, uint64_t *bytes)
{
    wp_record kv[4];
    *bytes = 0;
    if (!have_imat)
        return 0;
    for (int k = 0; k < 4; k++)
        wp_record_init(&kv[k]);
    const int n = wp_imatrix_kvs(&imatrix, imat_path, kv);
    if (n < 0)
        wp_die("out of memory");
    for (int k = 0; k < n; k++) {
        *bytes += wp_gguf_kv_bytes(&kv[k]);
        if (w)
            wp_cli_put(w, &kv[k]);
    }
    for (int k = 0; k < 4; k++)
        wp_record_free(&kv[k]);
    return n;
}

/* ---- the model: what planning needs (metadata and tensor shapes) --------- */

struct kvval { char name[256]; int64_t v; };
/* st: a safetensors dtype or shape carried as bytes (WP_ST_DTYPE_ATTR, WP_ST_SHAPE_ATTR), or "" */
struct tensor_info { char *name; int n_dims; int64_t ne[4]; uint32_t type; char st[WP_ST_CARRIED_MAX + 24]; };

static char arch[256];
static struct kvval *kvs;
static size_t n_kvs;
static uint32_t alignment = WP_GGUF_DEFAULT_ALIGNMENT;
static struct tensor_info *tl;
static size_t n_t;
static int64_t want_tensors = -1, want_kv = -1;   /* the gguf record's counts (-1: not given) */
static uint64_t n_kv_in;                          /* key/value records read */

/* Note a record's part in the plan (a KV's value, a tensor's name, shape and type); the
 * payload of a tensor is not looked at. */
static void model_note(const wp_record *r)
{
    if (r->kind == WP_REC_GGUF) {
        want_tensors = wp_attr_i64(r, "n_tensors", -1);
        want_kv = wp_attr_i64(r, "n_kv", -1);
    }
    n_kv_in += r->kind == WP_REC_KV;
    if (r->kind == WP_REC_KV) {
        const int64_t v = wp_gguf_kv_uint(r);   /* (read once: it was read three times) */
        if (!strcmp(r->name, "general.architecture"))
            wp_gguf_kv_str(r, arch, sizeof arch);
        else if (!strcmp(r->name, "general.alignment") && v > 0)
            alignment = (uint32_t)v;
        if (v >= 0 && strlen(r->name) < 256) {
            kvs = realloc(kvs, (n_kvs + 1) * sizeof *kvs);
            if (!kvs)
                wp_die("out of memory");
            strcpy(kvs[n_kvs].name, r->name);
            kvs[n_kvs++].v = v;
        }
    } else if (r->kind == WP_REC_TENSOR) {
        tl = realloc(tl, (n_t + 1) * sizeof *tl);
        if (!tl)
            wp_die("out of memory");
        tl[n_t].name = strdup(r->name);
        tl[n_t].n_dims = r->n_dims;
        memcpy(tl[n_t].ne, r->ne, sizeof r->ne);
        tl[n_t].type = r->type;
        char v[WP_ST_CARRIED_MAX];
        const int carried = wp_st_carried(r, v, sizeof v);
        tl[n_t].st[0] = 0;
        if (carried)
            snprintf(tl[n_t].st, sizeof tl[n_t].st, "safetensors %s %s", carried == 1 ? "dtype" : "shape", v);
        n_t++;
    }
}


/* Where each override came from, for messages: "--tensor-type" or the file of
 * --tensor-type-file (over_from[i] beside overrides[i] of main). */
static const char **over_from;

/* Override i of spec as its source names it: "--tensor-type X" or "FILE: entry X". */
static void over_say(int i, const char *spec, char *buf, size_t n)
{
    /* (the spec cut to 200 bytes: a long one filled the line and cut off why, a re-tester's find) */
    const char *more = strlen(spec) > 200 ? "..." : "";
    if (over_from && over_from[i])
        snprintf(buf, n, "--tensor-type-file %s: entry %.200s%s", over_from[i], spec, more);
    else
        snprintf(buf, n, "--tensor-type %.200s%s", spec, more);
}

/* Append spec to *ov (n of them), from the file from (NULL: --tensor-type). */
static void add_override(const char ***ov, int *n, const char *spec, const char *from)
{
    const char **o = realloc(*ov, (size_t)(*n + 1) * sizeof **ov), **fr = realloc(over_from, (size_t)(*n + 1) * sizeof *fr);
    if (!o || !fr)
        wp_die("out of memory");
    *ov = o;
    over_from = fr;
    o[*n] = spec;
    fr[(*n)++] = from;
}

/* Append to *ov (and over_from) the whitespace-separated REGEX=TYPE entries of
 * llama-quantize's --tensor-type-file (parse_tensor_type_file of
 * tools/quantize: each token one --tensor-type, in the file's order, where
 * the option stands); dies naming the file when it cannot be read. */
static void read_tensor_type_file(const char *path, const char ***ov, int *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        wp_die("--tensor-type-file %s: %s", path, strerror(errno));
    char *text = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            if (!(text = realloc(text, cap)))
                wp_die("out of memory");
        }
        const size_t got = fread(text + len, 1, 4096, f);
        len += got;
        /* a file of overrides, not a model: said, not read whole (the test was of the buffer, which
           refused a file a little under 64 MiB: a breaker's find) */
        if (len > ((size_t)64 << 20))
            wp_die("--tensor-type-file %s: more than 64 MiB, not a list of REGEX=TYPE entries", path);
        if (got < 4096)
            break;
    }
    if (ferror(f))
        wp_die("--tensor-type-file %s: %s", path, strerror(errno ? errno : EIO));
    fclose(f);
    text[len] = 0;
    if (memchr(text, 0, len))
        wp_die("--tensor-type-file %s: a NUL byte: not a list of REGEX=TYPE entries", path);
    /* (text kept to the end: the entries point into it) */
    for (char *save = NULL, *t = strtok_r(text, " \t\r\n\v\f", &save); t; t = strtok_r(NULL, " \t\r\n\v\f", &save))
        add_override(ov, n, t, path);
}

/* A planner for model md with the preset's options and the --tensor-type overrides
 * (dies naming a bad preset or override). */
static wp_ftype_plan *plan_new(const struct wp_ftype_model *md, int ftype, int pure, int strict,
                               const char **overrides, int n_over)
{
    char err[1024];
    struct wp_ftype_opts fo = wp_ftype_opts_default(ftype);
    fo.pure = pure;
    fo.strict = strict;
    fo.has_imatrix = have_imat;
    fo.allow_requantize = allow_requantize;
    fo.output_type = output_type;
    fo.token_embd_type = token_embd_type;
    fo.leave_output = leave_output;
    wp_ftype_plan *plan = wp_ftype_plan_new(md, &fo, err, sizeof err);
    if (!plan)
        wp_die("%s", err);
    for (int i = 0; i < n_over; i++)
        if (wp_ftype_plan_add_override(plan, overrides[i], err, sizeof err)) {
            char who[WP_MAX_NAME + 300];
            over_say(i, overrides[i], who, sizeof who);
            wp_die("%s: %s", who, err);
        }
    return plan;
}

/* llama-quantize's plan for the model noted (dies with its refusal: requantizing, a type
 * that needs an imatrix, ...); `in` names the input in messages. */
static wp_ftype_plan *model_plan(int ftype, int pure, int strict, const char **overrides, int n_over,
                                 const char *in)
{
    char err[1024];
    struct wp_ftype_model md = {arch, 0, 0, 0, 0, -1, 0};
    for (size_t i = 0; i < n_kvs; i++)   /* (general.architecture may come after them) */
        wp_ftype_model_take(&md, kvs[i].name, kvs[i].v);
    wp_ftype_plan *plan = plan_new(&md, ftype, pure, strict, overrides, n_over);
    for (size_t i = 0; i < n_t; i++)
        if (wp_ftype_plan_add_tensor(plan, tl[i].name, tl[i].n_dims, tl[i].ne, (int)tl[i].type))
            wp_die("%s: tensor '%s' appears twice (a GGUF holds each name once)", in && strcmp(in, "-") ? in : "stdin",
                   tl[i].name);   /* (as laneinterleave says it; it named no file and guessed a bad shape too,
                                     which the stream reader refuses first: a breaker's find) */
    if (wp_ftype_plan_finish(plan, err, sizeof err))
        wp_die("%s: %s", in && strcmp(in, "-") ? in : "stdin", err);
    /* an override that chose no tensor's type, said (llama-quantize says nothing: a typo, or a
       regex of another dialect, went unnoticed, a llama.cpp user's trial) */
    /* (and under a float preset, which applies none: it went unsaid, a breaker's find) */
    const int dt = wp_ftype_default_type(ftype);
    for (int i = 0; i < n_over; i++) {
        const int64_t hits = wp_ftype_plan_override_hits(plan, (size_t)i);
        char who[WP_MAX_NAME + 300];
        over_say(i, overrides[i], who, sizeof who);
        if (hits < 0 && dt >= 0 && wp_ggml_is_float((uint32_t)dt))
            wp_warn("%s: not applied: the preset's type is %s, and llama-quantize applies overrides to a "
                    "quantizing preset only", who, wp_ggml_type_name((uint32_t)dt));
        else if (hits == 0)   /* (norms matched: "matches no tensor" said wrongly, a breaker's find) */
            wp_warn("%s: decides no tensor's type in %s (it matches none that is quantized, or only ones an "
                    "earlier --tensor-type, --output-tensor-type, --token-embedding-type or "
                    "--leave-output-tensor decides)", who, in && strcmp(in, "-") ? in : "the model");
    }
    return plan;
}


/* Whether gptq reads type t's weights: as floats, or (--allow-requantize) as the blocks
 * blocks.c dequantizes. */
static int readable(uint32_t t) { return wp_ggml_is_float(t) || (allow_requantize && wp_block_supported((int)t)); }

/* The types readable() takes, for messages. */
static const char *from_types(void)
{
    return allow_requantize ? "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, "
                              "Q6_K, IQ4_XS only"
                            : "F32, F16, BF16 only";
}

/* The options given that change how a tensor is quantized ("--gamma, --hessian"), and
 * whether this is gptq --check: plan_check's words for a model already quantized. */
static char quant_opts[80];
static int checking;

/* What the plan asks that gptq cannot do, said before anything is quantized or written
 * (the tensor loop below refuses the same, tensor by tensor): a type it has no blocks for,
 * or an input that is neither F32, F16 nor BF16 to be changed into another type. */
static void plan_check(const wp_ftype_plan *plan, const char *in)
{
    const char *src = in && strcmp(in, "-") ? in : "stdin";
    for (size_t i = 0; i < n_t; i++) {
        struct wp_ftype_choice ch;
        wp_ftype_plan_get(plan, tl[i].name, &ch);
        if (!ch.quantize || (uint32_t)ch.type == tl[i].type)
            continue;
        /* bytes safetensorscat carries for a file's round trip: U8 was "cannot quantize from I8",
           a 5-D tensor was quantized into a stream nothing writes (a breaker's finds) */
        if (tl[i].st[0])
            wp_die("%s: tensor %s: %s, carried as bytes for the safetensors file's round trip (gptq quantizes a "
                   "model's F32, F16 or BF16 tensors of at most 4 dimensions)", src, tl[i].name, tl[i].st);
        if (!readable(tl[i].type))
            wp_die("%s: tensor %s: cannot quantize from %s (%s)", src, tl[i].name,
                   wp_ggml_type_name(tl[i].type) ? wp_ggml_type_name(tl[i].type) : "?", from_types());
        if (!wp_ggml_is_float((uint32_t)ch.type) && !wp_gptq_supported(ch.type))
            wp_die("%s: tensor %s: type %s is not supported by gptq", src, tl[i].name,
                   wp_ggml_type_name((uint32_t)ch.type));
        int64_t nel = 1;
        for (int d = 0; d < tl[i].n_dims; d++)
            nel *= tl[i].ne[d];
        if (nel == 0)   /* (rows = n / ne0 divided by zero: SIGFPE) */
            wp_die("%s: tensor %s: a dimension is 0: no weights to quantize", src, tl[i].name);
        /* a type forced past the fallbacks (--output-tensor-type Q4_K on rows of 64; llama-quantize
           aborts there too): said before any output, where it stopped the stream half written
           (a breaker's find) */
        if (!wp_ggml_row_size((uint32_t)ch.type, tl[i].ne[0]))
            wp_die("%s: tensor %s: row length %lld does not fit %s (blocks of %d weights)", src, tl[i].name,
                   (long long)tl[i].ne[0], wp_ggml_type_name((uint32_t)ch.type), wp_ggml_blck_size((uint32_t)ch.type));
        const int64_t n_mat = tl[i].n_dims >= 3 ? nel / (tl[i].ne[0] * tl[i].ne[1]) : 1;
        if (hpath && !wp_ggml_is_float((uint32_t)ch.type)) {
            /* its Hessian's shape and type, from the record's header: a misfit stopped the
               run at its tensor, the output half written (the tensor loop reads the same) */
            const wp_hessian_ref *h = hessian_of(tl[i].name);
            if (h)
                hessian_fits(h, tl[i].name, tl[i].ne[0], n_mat);
        }
        if (have_imat && !wp_ggml_is_float((uint32_t)ch.type)) {
            /* the imatrix against the plan, before any output (a misfit stopped the run at its
               tensor, a stream already half written; --check passed it) */
            if (!imatrix_entry(tl[i].name, tl[i].ne[0], n_mat, 1) && ch.requires_imatrix &&
                !wp_imatrix_find(&imatrix, tl[i].name))
                wp_die("%s: no entry for tensor %s, which type %s needs (llama-quantize: missing importance "
                       "matrix in a very low-bit quantization)", imat_path, tl[i].name,
                       wp_ggml_type_name((uint32_t)ch.type));
        }
    }
    /* A tensor already of its planned quantized type is copied as it is: the options that
       shape a quantization do nothing to it. A point built on a quantized model was the
       model again under the point's name, gamma, c and lambda never applied (a fresh user's
       find): --check refuses it, a run warns. */
    size_t n_copied = 0, first_copied = 0, n_quant = 0;
    for (size_t i = 0; i < n_t; i++) {
        struct wp_ftype_choice ch;
        wp_ftype_plan_get(plan, tl[i].name, &ch);
        n_quant += ch.quantize != 0;
        if (ch.quantize && (uint32_t)ch.type == tl[i].type && !wp_ggml_is_float(tl[i].type) && !n_copied++)
            first_copied = i;
    }
    /* no tensor llama-quantize would quantize: not a model (llama-imatrix's GGUF went through
       make model, "quantized" into a copy of itself, exit 0: a breaker's find) */
    /* (Hessians given as the model, --hessian left out, were "no tensors": a new user's find) */
    if (!n_t && in && strcmp(in, "-") && wp_file_is_hessians(in))
        wp_die("%s: Hessians (hessian's output), not a model: they go to gptq --hessian %s", src, src);
    if (!n_t)   /* (an empty GGUF made a 128-byte "model", exit 0; llama-quantize refuses it: a breaker's find) */
        wp_die("%s: no tensors: not a model", src);
    if (!n_quant) {
        /* llama-imatrix's GGUF, its tensors NAME.in_sum2 and NAME.counts alone, named (it was "no
           weight matrix": a new user's trial) */
        size_t n_imat = 0;
        for (size_t i = 0; i < n_t; i++)
            n_imat += wp_imatrix_tensor_kind(tl[i].name) != 0;
        if (n_imat == n_t)
            wp_die("%s: an importance matrix (llama-imatrix's output), not a model: it goes to gptq --imatrix "
                   "(IMATRIX=FILE for make model and lazyweights)", src);
        wp_die("%s: no weight matrix to quantize among its %zu tensors (2-D *.weight tensors, as llama-quantize "
               "takes them): not a model", src, n_t);
    }
    if (n_copied && quant_opts[0]) {
        const char *ty = wp_ggml_type_name(tl[first_copied].type);
        if (checking)
            wp_die("%s: an already quantized model: tensor %s is %s already, copied as it is, so %s would "
                   "do nothing (quantize the F32, F16 or BF16 model)", src, tl[first_copied].name, ty ? ty : "?",
                   quant_opts);
        wp_warn("%s: %zu tensors are of their type already (the first: %s, %s): copied as they are, %s "
                "acting on none of them (quantize the F32, F16 or BF16 model)", src, n_copied,
                tl[first_copied].name, ty ? ty : "?", quant_opts);
    }
    /* Hessians for weights the model lacks: another model's file (another architecture's
       names) ran the whole model by RTN without a word */
    size_t unused = 0, first = 0, named = 0;
    for (size_t k = 0; hfile && k < wp_hessian_file_count(hfile); k++) {
        const wp_hessian_ref *h = wp_hessian_file_at(hfile, k);
        if (!h->named)   /* a shared record's own name, such as blk.0.attn_in */
            continue;
        named++;
        size_t i = 0;
        while (i < n_t && strcmp(tl[i].name, h->weight))
            i++;
        if (i == n_t && !unused++)
            first = k;
    }
    if (unused)
        wp_warn("%s: %zu of the %zu weights it names are not in %s (the first: %s): is it another model's "
                "Hessian file? A tensor without a Hessian is quantized by RTN", hpath, unused, named, src,
                wp_hessian_file_at(hfile, first)->weight);
    /* and matrices it quantizes without a Hessian: a model with more layers than the file's ran
       its last layer by RTN unsaid, with -q and by --check too (a fresh user's find); the token
       embedding is read by row (GGML_OP_GET_ROWS), no matmul, so hessian records none */
    size_t bare = 0, quantized = 0, first_bare = 0;
    for (size_t i = 0; hfile && i < n_t; i++) {
        struct wp_ftype_choice ch;
        wp_ftype_plan_get(plan, tl[i].name, &ch);
        if (!to_blocks(&ch, tl[i].type) || wp_ftype_is_token_embd(tl[i].name))
            continue;
        quantized++;
        if (!hessian_of(tl[i].name) && !bare++)
            first_bare = i;
    }
    if (bare)
        wp_warn("%s: %zu of the %zu matrices to quantize have no Hessian in it (the first: %s): RTN for them (the "
                "Hessians of a model with fewer layers, or of another model?)", hpath, bare, quantized,
                tl[first_bare].name);
}

/* ---- one Hessian factor kept for the next weights of its record ---------- */

/* A record shared by several weights (q/k/v, gate/up) is factored once
 * (wp_gptq_factor: damping, retries, act-order, dead columns) and the factor
 * (4·cols² bytes, or a WP_GPTQ_NOT_PD outcome) kept for the record's later
 * weights, which llama's tensor order interleaves with others (k, attn_norm,
 * attn_output, q, v; ffn_down, ffn_gate, ffn_norm, ffn_up). At most one is
 * kept: dropped after the record's last weight, when another shared record's
 * factor is made (after it), and before any tensor whose working set beside
 * it would pass the run's largest one (work_bytes): the peak does not grow. */
static struct {
    wp_gptq_factor *f;
    uint64_t off;      /* its record's offset */
    size_t left;       /* tensors still to come that map to the record */
    uint64_t bytes;    /* 4·cols² */
} fc;
static uint64_t work_max;   /* the largest work_bytes of the run */

static void fc_drop(void)
{
    wp_gptq_factor_free(fc.f);
    fc.f = NULL;
    fc.left = 0;
}

/* The Hessians of a tensor of experts (its record's n_mat H, each cols²
 * doubles), each expert's factor made in its own H's buffer when its turn
 * comes (wp_quantize_job.factor_of): the peak stays the record. */
struct expert_hessians {
    double *H;
    int64_t cols;
    const wp_gptq_opts *go;
    unsigned char *zero;     /* n_mat marks: the expert's H is zero (no token routed to it): RTN */
    unsigned char *not_pd;   /* n_mat marks: its H + damping is not positive definite: RTN */
};

static int expert_factor(void *user, int64_t m, wp_gptq_factor **f, char *err, size_t n)
{
    struct expert_hessians *x = user;
    double *H = x->H + m * x->cols * x->cols;
    int zero = 1;
    for (int64_t k = 0; k < x->cols * x->cols && zero; k++)
        zero = H[k] == 0;
    if (zero) {   /* GPTQ would zero its matrix (hessian warned of it too) */
        x->zero[m] = 1;
        return 0;
    }
    wp_gptq_opts o = *x->go;
    o.consume = 1;
    const int k = wp_gptq_factor_make(H, x->cols, &o, f, err, n);
    x->not_pd[m] = k == WP_GPTQ_NOT_PD;   /* the factor says so: RTN for this expert */
    return k < 0 ? -1 : 0;
}

/* A tensor's working set in the tensor loop: its weights as floats, and the
 * Hessian (cols² doubles, one an expert) where GPTQ reads one, and with act
 * (--act-order) a permuted copy of one H, held while its factor is made (a
 * factor kept beside attn_output raised the peak by its 4·cols² where
 * token_embd's weights set work_max). */
static uint64_t work_bytes(const struct tensor_info *t, const wp_ftype_plan *plan, int act)
{
    struct wp_ftype_choice ch;
    wp_ftype_plan_get(plan, t->name, &ch);
    uint64_t nel = 1;
    for (int d = 0; d < t->n_dims; d++)
        nel *= (uint64_t)t->ne[d];
    uint64_t b = 4 * nel;
    const uint64_t n_mat = t->n_dims < 3 ? 1 : nel / ((uint64_t)t->ne[0] * (uint64_t)t->ne[1]);
    if (hpath && to_blocks(&ch, t->type) && hessian_of(t->name))
        b += (n_mat + (act ? 1 : 0)) * 8 * (uint64_t)t->ne[0] * (uint64_t)t->ne[0];
    return b;
}

/* The stream read (model_note) holds as many tensor and kv records as its gguf record
 * says (its n_tensors and n_kv, where given), or gptq dies naming in. The output's gguf
 * record gets gptq's own counts, so a record lost before gptq went unseen past ggufpack's
 * check of them (a breaker's find: a GGUF short of a tensor, exit 0). */
static void counts_check(const char *in)
{
    char err[256];
    if (wp_gguf_counts_check(want_tensors, n_t, want_kv, n_kv_in, err, sizeof err))
        wp_die("%s: %s", in && strcmp(in, "-") ? in : "stdin", err);
}

/* gptq --check with an input: the model's metadata and tensor shapes (a GGUF file read
 * without its tensor data, or a stream's record headers), planned and checked. */
static void check_model(const char *in, int ftype, int pure, int strict, const char **overrides, int n_over)
{
    char err[1024];
    wp_record r;
    wp_record_init(&r);
    /* a regular file that is no stream (plain or zstd-framed) is read as a GGUF file;
     * anything else (-, a pipe, <(ggufcat m.gguf)) goes to the stream reader whole
     * (the magic was read off a pipe and lost, and a zstd'd stream read as GGUF) */
    imatrix_dat_as_model(in);
    struct stat st;
    int as_gguf = 0;
    FILE *f = strcmp(in, "-") && stat(in, &st) == 0 && S_ISREG(st.st_mode) ? fopen(in, "rb") : NULL;
    if (f) {
        char head[8];
        as_gguf = !(fread(head, 1, 8, f) == 8 && !memcmp(head, WP_STREAM_MAGIC, 8)) && !wp_zframe_is(f);
        fclose(f);
    }
    if (as_gguf) {
        /* not a stream: a GGUF file, or a one-line reason it is none */
        wp_gguf_in *g = wp_gguf_open(in, err, sizeof err);
        if (!g)
            wp_die("%s", err);
        int k;
        while ((k = wp_gguf_next_header(g, &r)) > 0)
            model_note(&r);
        if (k < 0)
            wp_die("%s", wp_gguf_error(g));
        wp_gguf_close(g);
    } else {
        wp_reader *rd = wp_cli_reader(in);
        int k;
        while ((k = wp_reader_next_header(rd, &r)) > 0) {
            if (wp_rec_is_coded(r.kind))
                wp_cli_refuse_coded(in, &r, "a tensor stream");
            if (r.kind == WP_REC_KV && wp_reader_payload(rd, &r))
                wp_die("%s", wp_reader_error(rd));
            model_note(&r);
        }
        if (k < 0)
            wp_die("%s", wp_reader_error(rd));
        wp_reader_close(rd);
        counts_check(in);   /* (--check passed a stream that lost a record: a reviewer's find) */
    }
    wp_record_free(&r);
    wp_ftype_plan *plan = model_plan(ftype, pure, strict, overrides, n_over, in);
    plan_check(plan, in);
    wp_ftype_plan_free(plan);
}

/* ---- main ---------------------------------------------------------------- */

/* The types gptq writes, for messages. */
static const char written_types[] = "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, "
                                    "F16, BF16, F32";

/* Option opt's ggml type name v (any case, as llama-quantize's parse_ggml_type); dies
 * naming the types gptq writes when it is none. */
static int type_arg(const char *opt, const char *v)
{
    const int t = wp_ggml_type_from_name(v);
    if (t < 0)
        wp_die("%s: unknown type '%s' (gptq writes %s)", opt, v, written_types);
    return t;
}

/* llama-quantize's presets, for messages: "Q4_0, Q4_1, ..." in ftype order. */
static const char *preset_list(void)
{
    static char list[1024];
    size_t k = 0;
    for (int f = 0; f < 64 && k < sizeof list; f++)
        if (wp_ftype_name(f) && wp_ftype_default_type(f) >= 0)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", wp_ftype_name(f));
    return list;
}

/* More than one input word given (words, n > 1): refused, with the filter's form of the same
 * run when the words are llama-quantize's `IN [OUT] PRESET [NTHREADS]` (a llama.cpp user's
 * first try, which said only "one input stream at a time"): argv's other words kept but -o
 * FILE, --check and --hessian-later; --ftype PRESET, --rtn and --threads NTHREADS added where
 * no type, no --rtn or --hessian, no --threads were given (has_type, has_method, has_threads). */
static void words_refused(int argc, char **argv, char **words, int n, int has_type, int has_method, int has_threads)
{
    for (int k = 1; k < n && k <= 2; k++) {   /* (llama-quantize's TYPE is a preset's name or number) */
        /* (it said "one input stream at a time"; IN COPY without OUT too: a breaker's find) */
        if (!strcasecmp(words[k], "COPY") && n == k + 1) {
            char in[1024] = "", out[1024] = "", given[2100] = "";
            shell_word(in, sizeof in, words[0], strcmp(words[0], "-") != 0);
            shell_word(out, sizeof out, k == 2 ? words[1] : "OUT.gguf", 1);
            for (int w = 0; w <= k; w++)
                snprintf(given + strlen(given), sizeof given - strlen(given), "%s%s", w ? " " : "", words[w]);
            wp_die("%s: llama-quantize's order; COPY keeps every tensor as it is, as ggufcat %s | ggufpack -o %s does "
                   "(the input's own bytes)", given, in, out);
        }
        const int f = wp_ftype_from_name(words[k]);
        if (f < 0)
            continue;
        if (wp_ftype_default_type(f) < 0)   /* NVFP4: the command given would fail there */
            wp_die("%s: llama.cpp gives this preset no type to quantize to", words[k]);
        /* OUT: the word before PRESET, or after it (IN PRESET OUT), unless a thread count */
        const char *out = k == 2 ? words[1]
                        : n > 2 && strspn(words[2], "0123456789") != strlen(words[2]) ? words[2] : "OUT.gguf";
        char given[1024] = "", cmd[4096] = "";
        for (int i = 0; i < n; i++)
            shell_word(given, sizeof given, words[i], 0);
        snprintf(cmd, sizeof cmd, "ggufcat");
        shell_word(cmd, sizeof cmd, words[0], strcmp(words[0], "-") != 0);   /* (- is stdin, not ./-) */
        strncat(cmd, " | gptq", sizeof cmd - strlen(cmd) - 1);
        /* (not -o FILE, --check, --hessian-later: the command printed then failed, or wrote
           nothing for ggufpack: a fresh user's find) */
        for (int i = 1; i < argc; i++) {
            int word = !strcmp(argv[i], "--") || !strcmp(argv[i], "--check") || !strcmp(argv[i], "--hessian-later");
            for (int w = 0; w < n && !word; w++)
                word = argv[i] == words[w];
            if (!strcmp(argv[i], "-o") && i + 1 < argc)
                i++;
            else if (!word)
                shell_word(cmd, sizeof cmd, argv[i], 0);
        }
        /* llama-quantize's NTHREADS, after PRESET */
        if (!has_threads && k + 1 < n && strspn(words[k + 1], "0123456789") == strlen(words[k + 1])) {
            shell_word(cmd, sizeof cmd, "--threads", 0);
            shell_word(cmd, sizeof cmd, words[k + 1], 0);
        }
        if (!has_type) {
            shell_word(cmd, sizeof cmd, "--ftype", 0);
            shell_word(cmd, sizeof cmd, words[k], 0);
        }
        if (!has_method)
            shell_word(cmd, sizeof cmd, "--rtn", 0);
        /* (-o, not >: a paste that failed, requantizing refused, left OUT emptied by the shell,
           an input of that name too: a fresh user's find) */
        strncat(cmd, " | ggufpack -o", sizeof cmd - strlen(cmd) - 1);
        shell_word(cmd, sizeof cmd, out, 1);
        wp_die("%s: llama-quantize's order; gptq is a filter of wpack streams: %s (or pipelines/lazyweights)",
               given, cmd);
    }
    /* IN OUT.gguf WORD, WORD no preset and no file: llama-quantize's order with a preset it does
       not know (it said "one input stream at a time": a note's left alone) */
    const size_t l1 = strlen(words[1]), l2 = n >= 3 ? strlen(words[2]) : 0;
    if (n >= 3 && l1 > 5 && !strcasecmp(words[1] + l1 - 5, ".gguf") && access(words[2], F_OK)) {
        /* (a GGUF's name there is a missing file, not a preset; an empty word named: a breaker's) */
        if (l2 > 5 && !strcasecmp(words[2] + l2 - 5, ".gguf"))
            wp_die("%s: no such file", words[2]);
        wp_die("%s%s: unknown preset in llama-quantize's order IN OUT PRESET (its presets, by name or number: %s; "
               "gptq takes them as --ftype PRESET)", l2 ? words[2] : "''", l2 ? "" : " (an empty word)", preset_list());
    }
    wp_cli_second_input(words[0], words[1], "input stream");   /* (as the other filters say it: a new user's trial) */
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *type_name = NULL, *ftype_name = NULL;
    const char *output_type_name = NULL, *token_embd_type_name = NULL;   /* as given, for wp_cli_once */
    const char *hess_path = NULL;
    const char **overrides = NULL;
    int n_over = 0, rtn = 0, quiet = 0, strict = 0, keep_order = 0, damp_given = 0, check = 0, hess_later = 0;
    int pure_flag = 0;
    wp_gptq_opts go;
    char err[1024];
    wp_cli_init(argv[0]);
    wp_cli_skip_destructors();   /* OpenBLAS's shutdown can hang (cli.h) */
    wp_gptq_opts_default(&go);
    int threads_given = 0;
    char **words = calloc((size_t)argc, sizeof *words);   /* the input words: one at most */
    int n_words = 0;
    if (!words)
        wp_die("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        const int more = i + 1 < argc;
        if (!strcmp(a, "--")) {   /* the options end (GNU, zstd): the words after it are the input, "-x" too */
            while (++i < argc)
                words[n_words++] = argv[i];
            break;
        }
        wp_cli_info(a, usage);   /* --help, -h, --version: exit here */
        if ((v = wp_cli_arg(argc, argv, &i, "--type"))) {
            type_name = wp_cli_once("--type", type_name, v, 1);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--ftype"))) {
            ftype_name = wp_cli_once("--ftype", ftype_name, v, 1);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--tensor-type"))) {
            add_override(&overrides, &n_over, v, NULL);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--tensor-type-file"))) {
            read_tensor_type_file(v, &overrides, &n_over);   /* (it was "unknown option": a llama.cpp user's trial) */
        } else if (wp_cli_flag(a, "--rtn")) {
            rtn = 1;
        } else if (wp_cli_flag(a, "--check")) {
            check = 1;
        } else if (wp_cli_flag(a, "--hessian-later")) {
            hess_later = 1;
        } else if ((v = wp_cli_arg(argc, argv, &i, "--hessian"))) {
            hess_path = wp_cli_once("--hessian", hess_path, v, 0);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--imatrix"))) {
            imat_path = wp_cli_once("--imatrix", imat_path, v, 0);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--damp"))) {
            go.damp = wp_arg_float("--damp", v, 0, 1e6);
            damp_given = 1;
        } else if (wp_cli_flag(a, "--act-order")) {
            go.act_order = 1;
        } else if (wp_cli_flag(a, "--gamma")) {
            go.gamma = 1;
        } else if ((v = wp_cli_arg(argc, argv, &i, "--widen"))) {
            go.widen = wp_arg_float("--widen", v, 1, 64);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--lambda"))) {
            go.lambda = wp_arg_float("--lambda", v, 0, 1e6);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--threads"))) {
            go.threads = (int)wp_arg_int("--threads", v, 1, 512);
            threads_given = 1;
        } else if (wp_cli_flag(a, "--keep-order")) {
            keep_order = 1;
        } else if (wp_cli_flag(a, "--strict")) {
            strict = 1;
        } else if (wp_cli_flag(a, "--allow-requantize")) {
            allow_requantize = 1;
        } else if (wp_cli_flag(a, "--leave-output-tensor")) {
            leave_output = 1;
        } else if (wp_cli_flag(a, "--pure")) {
            pure_flag = 1;
        } else if ((v = wp_cli_arg(argc, argv, &i, "--output-tensor-type"))) {
            output_type_name = wp_cli_once("--output-tensor-type", output_type_name, v, 1);
            output_type = type_arg("--output-tensor-type", v);
        } else if ((v = wp_cli_arg(argc, argv, &i, "--token-embedding-type"))) {
            token_embd_type_name = wp_cli_once("--token-embedding-type", token_embd_type_name, v, 1);
            token_embd_type = type_arg("--token-embedding-type", v);
        } else if (wp_cli_flag(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "-o") && more) {
            out = wp_cli_once("-o", out, wp_cli_value(argv, &i), 0);
        } else if (a[0] == '-' && a[1]) {
            /* llama-quantize's options gptq lacks, named as such (they were "unknown option": a
               llama.cpp user's trial; hessian names llama-imatrix's so) */
            static const char *const lq_only[] = {"--include-weights", "--exclude-weights", "--prune-layers",
                                                  "--keep-split", "--override-kv", "--dry-run", "--max-buffer-size"};
            const char *other = wp_cli_option_of(a, lq_only, sizeof lq_only / sizeof *lq_only);
            if (other)
                wp_die("%s: llama-quantize's option, which gptq does not take (gptq(1) lists the ones it does)", other);
            wp_die("%s: %s (try --help)", a, more ? "unknown option" : "unknown option or missing value");
        } else {
            words[n_words++] = (char *)a;
        }
    }
    /* a preset where the input goes, not a file of that name (gptq Q4_K_M --rtn m.wts blamed
       m.wts, "one input stream at a time": a new user's trial) */
    if (n_words && wp_ftype_from_name(words[0]) >= 0 && access(words[0], F_OK))
        wp_die("%s: no such file: a preset goes with --ftype (gptq --ftype %s ...)", words[0], words[0]);
    /* (before llama-quantize's order is answered: its command with both failed when pasted, a
       fresh user's find) */
    if (rtn && hess_path)
        wp_die("--rtn and --hessian exclude each other");
    if (n_words > 1)
        words_refused(argc, argv, words, n_words, type_name || ftype_name, rtn || hess_path, threads_given);
    in = n_words ? words[0] : NULL;
    free(words);
    wp_blas_room_init();   /* OpenBLAS's workers' buffers, before gptq's own (blas_room.h); after --help */
    /* (not by --check, which runs no threads: lazyweights --check said gptq's refusal of a bad
       WPACK_THREADS, a breaker's find) */
    if (!threads_given && !check)
        go.threads = wp_cli_threads(wp_par_cpus());
    if (!!type_name == !!ftype_name)
        wp_die("give exactly one of --type T or --ftype PRESET (try --help)");
    int ftype, pure = pure_flag;
    if (ftype_name) {
        ftype = wp_ftype_from_name(ftype_name);
        if (ftype < 0)
            wp_die("unknown --ftype '%s' (llama-quantize's presets, by name or number: %s)", ftype_name, preset_list());
        /* NVFP4: llama-quantize's "invalid output file type 39" said neither the preset nor why */
        if (wp_ftype_default_type(ftype) < 0)
            wp_die("--ftype %s: llama.cpp gives this preset no type to quantize to", ftype_name);
    } else {
        int t = wp_ggml_type_from_name(type_name);
        if (t < 0)
            wp_die("unknown --type '%s' (gptq writes %s)", type_name, written_types);
        /* --type T = llama-quantize --pure with the preset whose default is T */
        ftype = wp_ftype_from_name(type_name);
        if (ftype < 0 || wp_ftype_default_type(ftype) != t)
            for (ftype = 0; ftype < 64; ftype++)
                if (wp_ftype_name(ftype) && wp_ftype_default_type(ftype) == t)
                    break;
        if (ftype >= 64)
            wp_die("--type %s: no llama.cpp file type quantizes to it", type_name);
        pure = 1;
    }
    if (hess_later && (!check || rtn || hess_path))
        wp_die(!check ? "--hessian-later is for --check (a run takes --hessian FILE)"
                      : "--hessian-later excludes --rtn and --hessian (it stands for a --hessian to come)");
    if (check && out)
        wp_die("--check writes nothing (no -o)");
    if (!check) {   /* before any work (wp_cli_writer would refuse it after the model is read) */
        wp_cli_input(in);   /* so that -o onto it is said as such now, not after the spooling */
        wp_out_refuse_tty(out, WP_OUT_STREAM);
    }
    {
        /* the preset itself (NVFP4 has no type) and the overrides, before any input is read */
        const struct wp_ftype_model none = {"", 0, 0, 0, 0, -1, 0};
        wp_ftype_plan_free(plan_new(&none, ftype, pure, strict, overrides, n_over));
    }
    /* said once, at the first matrix rounded to nearest: not with --rtn or --hessian (whose
       tensors without a record, or not positive definite, are said otherwise), nor after the
       warnings below, which say RTN */
    int rtn_said = rtn || hess_path || (go.act_order || damp_given);
    if (!hess_path && !hess_later && go.act_order && damp_given)
        fprintf(stderr, "gptq: warning: --act-order and --damp act on GPTQ's Hessians: without --hessian (RTN) "
                        "they do nothing\n");
    else if (!hess_path && !hess_later && (go.act_order || damp_given))
        fprintf(stderr, "gptq: warning: %s acts on GPTQ's Hessians: without --hessian (RTN) it does nothing\n",
                go.act_order ? "--act-order" : "--damp");
    snprintf(quant_opts, sizeof quant_opts, "%s%s%s%s%s", go.gamma ? ", --gamma" : "", go.widen > 1 ? ", --widen" : "",
             go.lambda > 0 ? ", --lambda" : "", hess_path || hess_later ? ", --hessian" : "",
             imat_path ? ", --imatrix" : "");
    if (quant_opts[0])
        memmove(quant_opts, quant_opts + 2, strlen(quant_opts + 2) + 1);   /* the leading ", " */
    checking = check;
    if (hess_path)
        hessian_open(hess_path);
    struct stat ost;
    if (out && strcmp(out, "-") && !(stat(out, &ost) == 0 && !S_ISREG(ost.st_mode))) {
        /* fail now, not after quantizing the model, when OUT cannot be written; a device or
         * FIFO (-o /dev/stdout) is written in place, whatever its directory allows */
        char dir[4096];
        const char *slash = strrchr(out, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - out) + 1 : 1, slash ? out : ".");
        if (access(dir, W_OK) != 0)
            wp_die("%s: cannot write into %s", out, dir);
    }
    if (imat_path) {
        wp_cli_input(imat_path);
        have_imat = wp_imatrix_load(imat_path, &imatrix, err, sizeof err) == 0;
        if (!have_imat && strstr(err, "), not an importance matrix (") && is_imatrix_file(in))
            wp_die("%s; %s is one: the model and the importance matrix look swapped", err, in);
        if (!have_imat)
            wp_die("%s", err);
        /* every value checked, as llama_model_quantize_impl does (gptq checked only the
           entries it used, when it used them) */
        char ierr[2 * WP_MAX_NAME + 256];   /* (as wp_die's own line: the entry's name in full) */
        if (wp_imatrix_check(&imatrix, imat_path, ierr, sizeof ierr))
            wp_die("%s", ierr);
    }
    if (check) {
        /* no input: standard input when a model is piped or redirected there, as every other
           gptq run reads it (a terminal or /dev/null: the options alone) */
        struct stat sst;
        if (!in && fstat(STDIN_FILENO, &sst) == 0 && (S_ISFIFO(sst.st_mode) || S_ISREG(sst.st_mode)))
            in = "-";
        if (in) {
            check_model(in, ftype, pure, strict, overrides, n_over);
        } else {
            /* no model: the type the preset (or --type) quantizes to must be one gptq has; only
             * a model whose every row falls back to another type could build without it */
            const int t = wp_ftype_default_type(ftype);
            if (!wp_ggml_is_float((uint32_t)t) && !wp_gptq_supported(t))
                wp_die("%s %s: type %s is not supported by gptq", ftype_name ? "--ftype" : "--type",
                       ftype_name ? ftype_name : type_name, wp_ggml_type_name((uint32_t)t));
        }
        return 0;
    }

    /* ---- pass 1: spool everything, collect metadata and the tensor list */
    imatrix_dat_as_model(in);
    wp_reader *rd = wp_cli_reader(in);
    FILE *sp = wp_spool(err, sizeof err);
    if (!sp)
        wp_die("%s: %s", in && strcmp(in, "-") ? in : "stdin", err);
    /* a full $TMPDIR said "temporary file: spool: write error: ...", not which input (a breaker's find) */
    const char *inname = in && strcmp(in, "-") ? in : "stdin";
    /* (the spool named with its folder: "temporary file: write error: File too large" did not
       say where gptq writes a copy of the whole model, a new user's trial) */
    char spname[4200];
    snprintf(spname, sizeof spname, "temporary file in %s", wp_spool_where());
    wp_writer *sw = wp_writer_open(sp, spname, 64, err, sizeof err);
    if (!sw)
        wp_die("%s: %s", inname, err);
    wp_record r;
    wp_record_init(&r);
    while (wp_cli_next(rd, &r)) {
        if (wp_rec_is_coded(r.kind))
            wp_cli_refuse_coded(in, &r, "a tensor stream");
        model_note(&r);
        if (wp_writer_put(sw, &r))
            wp_die("%s: %s", inname, wp_writer_error(sw));
    }
    wp_reader_close(rd);
    /* the reader kept the largest payload's buffer in r: freed, not leaked by
     * the wp_record_init below (262 MB all run long for a 7B's token_embd in F16) */
    wp_record_free(&r);
    if (wp_writer_close(sw, err, sizeof err))
        wp_die("%s: %s", inname, err);
    counts_check(in);

    /* ---- plan, and what in it gptq cannot do: refused before any output */
    wp_ftype_plan *plan = model_plan(ftype, pure, strict, overrides, n_over, in);
    plan_check(plan, in);
    /* the shape fallbacks, one line: per-tensor progress showed them, but with -q, or
     * among 100 lines, "--type Q6_K" giving no Q6_K tensor went unnoticed (a new user's
     * trial); it said "kept F16" of F32 input */
    {
        char said[6200];
        int nq;
        const int nfall = wp_ftype_plan_fallbacks(plan, &nq, said, sizeof said);
        if (nfall && !quiet)
            wp_warn("%d of %d quantized tensor(s) fell back, their row length not a multiple of the type's "
                    "block (llama-quantize's fallbacks): %s", nfall, nq, said);
    }

    /* a model spooled to a tmpfs (/tmp on some distributions) takes memory unsaid: a 7B's 13.5 GB
       beside the Hessians (a new user's trial at 7B shapes); said from 1 GiB */
    struct stat sp_st;
    const double sp_len = fstat(fileno(sp), &sp_st) == 0 ? (double)sp_st.st_size : 0;
    if (sp_len >= 1073741824.0 && wp_spool_in_memory(sp))
        wp_warn("%s: its copy (%.1f GiB) is held in %s, a file system in memory: set TMPDIR to a folder on disk "
                "for a large model", inname, sp_len / 1073741824.0, wp_spool_where());

    /* ---- the spooled stream's index */
    wp_index ix;
    if (wp_index_read(sp, "spool", &ix, err, sizeof err))
        wp_die("temporary file: %s", err);

    /* tensor order and the output's GGUF layout */
    char **order = malloc((n_t + 1) * sizeof *order);
    if (!order)
        wp_die("out of memory");
    for (size_t i = 0; i < n_t; i++)
        order[i] = tl[i].name;
    if (!keep_order)
        qsort(order, n_t, sizeof *order, llama_order);
    uint64_t pos = WP_GGUF_HEADER_BYTES, data = 0, n_kv_out = 2;
    for (uint64_t e = 0; e < ix.count; e++) {
        if (ix.e[e].kind != WP_REC_KV || dropped_kv(ix.e[e].name))
            continue;
        wp_record_init(&r);
        if (wp_record_read_at(sp, "spool", ix.e[e].offset, &r, err, sizeof err))
            wp_die("temporary file: %s", err);
        pos += wp_gguf_kv_bytes(&r);
        n_kv_out++;
        wp_record_free(&r);
    }
    pos += put_kv(NULL, "general.quantization_version", NULL, 2) + put_kv(NULL, "general.file_type", NULL, 0);
    uint64_t imat_bytes;
    n_kv_out += (uint64_t)imatrix_kvs(NULL, &imat_bytes);
    pos += imat_bytes;
    for (size_t i = 0; i < n_t; i++) {
        struct wp_ftype_choice ch;
        wp_ftype_plan_get(plan, tl[i].name, &ch);
        uint32_t ty = ch.quantize ? (uint32_t)ch.type : tl[i].type;
        int64_t rows = 1;
        for (int d = 1; d < tl[i].n_dims; d++)
            rows *= tl[i].ne[d];
        uint64_t sz = wp_ggml_row_size(ty, tl[i].ne[0]) * (uint64_t)rows;
        pos += wp_gguf_tinfo_bytes(tl[i].name, tl[i].n_dims);
        data += (sz + alignment - 1) / alignment * alignment;
    }
    const uint64_t data_start = (pos + alignment - 1) / alignment * alignment;

    /* ---- pass 2: write */
    wp_writer *w = wp_cli_writer(out);
    /* GGUF header and metadata */
    int kv_done = 0;
    for (uint64_t e = 0; e < ix.count; e++) {
        if (ix.e[e].kind != WP_REC_GGUF && ix.e[e].kind != WP_REC_KV)
            continue;
        wp_record_init(&r);
        if (wp_record_read_at(sp, "spool", ix.e[e].offset, &r, err, sizeof err))
            wp_die("temporary file: %s", err);
        if (r.kind == WP_REC_GGUF) {
            wp_attr_set_i64(&r, "version", 3);   /* llama.cpp writes GGUF_VERSION (3), whatever it read */
            wp_attr_set_i64(&r, "n_kv", (int64_t)n_kv_out);
            wp_attr_set_i64(&r, "n_tensors", (int64_t)n_t);
            wp_attr_set_i64(&r, "data_start", (int64_t)data_start);
            wp_attr_set_i64(&r, "file_size", (int64_t)(data_start + data));
            wp_cli_put(w, &r);
        } else if (!dropped_kv(r.name)) {
            wp_cli_put(w, &r);
        }
        wp_record_free(&r);
    }
    put_kv(w, "general.quantization_version", NULL, 2u);
    put_kv(w, "general.file_type", NULL, (uint32_t)ftype);
    imatrix_kvs(w, &imat_bytes);
    kv_done = 1;
    (void)kv_done;

    /* tensors */
    for (size_t i = 0; i < n_t; i++) {
        const uint64_t b = work_bytes(&tl[i], plan, go.act_order);
        work_max = b > work_max ? b : work_max;
    }
    const double t0 = now();
    for (size_t ti = 0; ti < n_t; ti++) {
        const char *name = order[ti];
        const wp_hessian_ref *hrec = hpath ? hessian_of(name) : NULL;
        const int fc_user = fc.f && hrec && hrec->offset == fc.off;
        if (fc.f && !fc_user) {
            const struct tensor_info *tt = NULL;
            for (size_t i = 0; i < n_t && !tt; i++)
                if (!strcmp(tl[i].name, name))
                    tt = &tl[i];
            if (!tt || work_bytes(tt, plan, go.act_order) + fc.bytes > work_max)
                fc_drop();
        }
        const wp_index_entry *ie = wp_index_find(&ix, WP_REC_TENSOR, name);
        if (!ie)
            wp_die("temporary file: tensor %s lost", name);
        wp_record_init(&r);
        if (wp_record_read_at(sp, "spool", ie->offset, &r, err, sizeof err))
            wp_die("temporary file: %s", err);
        wp_attr_del(&r, "offset");
        struct wp_ftype_choice ch;
        wp_ftype_plan_get(plan, name, &ch);
        const char *how = "copy";
        char how_experts[64];
        const uint32_t from = r.type;
        if (ch.quantize && (uint32_t)ch.type != r.type) {
            const int64_t ne0 = r.ne[0], n = wp_record_nelem(&r);
            const uint32_t to = (uint32_t)ch.type;
            if (!readable(from))
                wp_die("tensor %s: cannot quantize from %s (%s)", name,
                       wp_ggml_type_name(from) ? wp_ggml_type_name(from) : "?", from_types());
            /* the weights read and checked first, then their imatrix slice (one a matrix:
             * an ne[2] slice, an expert) and Hessian (one matrix) by the tensor's name */
            float *f = wp_quantize_read(&r, (int)to, err, sizeof err);
            if (!f)
                wp_die("tensor %s: %s", name, err);
            const int64_t n_mat = r.n_dims >= 3 ? n / (ne0 * r.ne[1]) : 1;
            const int quant = !wp_ggml_is_float(to);
            float *iw = quant ? imatrix_get(name, ne0, n_mat) : NULL;
            /* the Hessian's factor: the kept one of this tensor's record, or made from the
             * record (H taken over and shrunk to the float factor) */
            wp_gptq_factor *hf = NULL;
            int reused = 0;
            if (quant && hess_path && n_mat == 1) {
                if (fc_user) {
                    hf = fc.f;
                    reused = 1;
                } else {
                    double *H = hessian_get(name, ne0, 1);
                    if (H && wp_gptq_factor_take(H, ne0, &go, &hf, err, sizeof err) < 0)
                        wp_die("tensor %s: %s", name, err);
                    size_t left = 0;   /* this record's tensors still to come */
                    for (size_t k = ti + 1; hf && k < n_t; k++) {
                        const wp_hessian_ref *o = hessian_of(order[k]);
                        left += o && o->offset == hrec->offset;
                    }
                    if (left) {
                        fc_drop();
                        fc.f = hf;
                        fc.off = hrec->offset;
                        fc.left = left;
                        fc.bytes = 4 * (uint64_t)ne0 * (uint64_t)ne0;
                    }
                }
            }
            /* a tensor of experts: each expert's factor from its own H, made in turn */
            struct expert_hessians eh = {NULL, ne0, &go, NULL, NULL};
            if (quant && hess_path && n_mat > 1 && (eh.H = hessian_get(name, ne0, n_mat)) &&
                (!(eh.zero = calloc((size_t)n_mat, 1)) || !(eh.not_pd = calloc((size_t)n_mat, 1))))
                wp_die("tensor %s: out of memory", name);
            const wp_quantize_job job = {(int)to, iw, hf, &go, eh.H ? expert_factor : NULL, &eh};
            wp_quantize_info qi;
            const int bad = wp_quantize_write(&r, f, &job, &qi, err, sizeof err);
            free(eh.H);
            char list[160];
            /* the experts rounded, named (the whole tensor's warning read as if every expert was:
               a breaker's find) */
            if (eh.zero && wp_hessian_expert_list(eh.zero, n_mat, list, sizeof list) > 1)
                wp_warn("%s: tensor %s: the Hessians of experts %s are zero (no calibration token was routed to them): "
                        "RTN for them", hpath, name, list);
            else if (eh.zero && list[0])
                wp_warn("%s: tensor %s: the Hessian of expert %s is zero (no calibration token was routed to it): "
                        "RTN for it", hpath, name, list);
            if (eh.not_pd && wp_hessian_expert_list(eh.not_pd, n_mat, list, sizeof list) > 1)
                wp_warn("tensor %s: the Hessians of experts %s are not positive definite even with damping %g: RTN for "
                        "them", name, list, qi.damp_used);
            else if (eh.not_pd && list[0])
                wp_warn("tensor %s: the Hessian of expert %s is not positive definite even with damping %g: RTN for it",
                        name, list, qi.damp_used);
            free(eh.zero);
            free(eh.not_pd);
            if (qi.not_pd && n_mat == 1)
                wp_warn("tensor %s: Hessian not positive definite even with damping %g; RTN instead%s", name,
                        qi.damp_used, reused ? " (its record's factor, reused)" : "");
            /* GPTQ's own program rounding to nearest unasked was a trap: a user without
               --hessian took RTN's codes for GPTQ's (a fresh user's trial) */
            if (qi.rounded && !rtn_said) {
                wp_warn("no --hessian: rounding to nearest (RTN), not GPTQ (hessian(1) makes the Hessians; "
                        "--rtn asks for RTN and says no more)");
                rtn_said = 1;
            }
            if (bad)
                wp_die("tensor %s: %s", name, err);
            how = reused && !strcmp(qi.how, "gptq") ? "gptq, factor reused" : qi.how;
            if (n_mat > 1 && qi.gptq == n_mat)
                snprintf(how_experts, sizeof how_experts, "gptq, %lld experts", (long long)n_mat);
            else if (n_mat > 1 && qi.gptq > 0)   /* the others rounded (a zero H, or not positive definite) */
                snprintf(how_experts, sizeof how_experts, "gptq for %lld of %lld experts", (long long)qi.gptq,
                         (long long)n_mat);
            if (n_mat > 1 && qi.gptq > 0)
                how = how_experts;
            free(iw);
            if (hf != fc.f)
                wp_gptq_factor_free(hf);
        }
        if (!quiet)
            fprintf(stderr, "%s: [%zu/%zu] %-32s %s -> %s (%s) %.2fs\n", wp_prog(), ti + 1, n_t, name,
                    wp_ggml_type_name(from) ? wp_ggml_type_name(from) : "?",
                    wp_ggml_type_name(r.type) ? wp_ggml_type_name(r.type) : "?", how, now() - t0);
        wp_cli_put(w, &r);
        wp_record_free(&r);
        if (fc_user && --fc.left == 0)
            fc_drop();
    }
    fc_drop();
    free(order);
    /* every other record, in input order */
    for (uint64_t e = 0; e < ix.count; e++) {
        unsigned k = ix.e[e].kind;
        if (k == WP_REC_GGUF || k == WP_REC_KV || k == WP_REC_TENSOR || k == WP_REC_END)
            continue;
        wp_record_init(&r);
        if (wp_record_read_at(sp, "spool", ix.e[e].offset, &r, err, sizeof err))
            wp_die("temporary file: %s", err);
        wp_cli_put(w, &r);
        wp_record_free(&r);
    }
    wp_cli_writer_close(w);
    wp_index_free(&ix);
    wp_ftype_plan_free(plan);
    wp_hessian_file_close(hfile);
    fclose(sp);
    return 0;
}
