/*
 * ftype.c - llama-quantize's per-tensor type choice (see ftype.h).
 *
 * Written from the behaviour of src/llama-quant.cpp of the pinned reference
 * llama.cpp; each function names the reference function it mirrors.
 */
#include "ftype.h"
#include "ecma_regex.h"
#include "ggml_type.h"
#include "names.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- presets ---------------------------------------------------------- */

static const struct { const char *name; int ftype; int dflt; } PRESETS[] = {
    {"F32",       WP_FTYPE_ALL_F32,          WP_F32},
    {"F16",       WP_FTYPE_MOSTLY_F16,       WP_F16},
    {"BF16",      WP_FTYPE_MOSTLY_BF16,      WP_BF16},
    {"Q1_0",      WP_FTYPE_MOSTLY_Q1_0,      WP_Q1_0},
    {"Q2_0",      WP_FTYPE_MOSTLY_Q2_0,      WP_Q2_0},
    {"Q4_0",      WP_FTYPE_MOSTLY_Q4_0,      WP_Q4_0},
    {"Q4_1",      WP_FTYPE_MOSTLY_Q4_1,      WP_Q4_1},
    {"MXFP4_MOE", WP_FTYPE_MOSTLY_MXFP4_MOE, WP_MXFP4},
    {"Q5_0",      WP_FTYPE_MOSTLY_Q5_0,      WP_Q5_0},
    {"Q5_1",      WP_FTYPE_MOSTLY_Q5_1,      WP_Q5_1},
    {"IQ2_XXS",   WP_FTYPE_MOSTLY_IQ2_XXS,   WP_IQ2_XXS},
    {"IQ2_XS",    WP_FTYPE_MOSTLY_IQ2_XS,    WP_IQ2_XS},
    {"IQ2_S",     WP_FTYPE_MOSTLY_IQ2_S,     WP_IQ2_XS},
    {"IQ2_M",     WP_FTYPE_MOSTLY_IQ2_M,     WP_IQ2_S},
    {"IQ1_S",     WP_FTYPE_MOSTLY_IQ1_S,     WP_IQ1_S},
    {"IQ1_M",     WP_FTYPE_MOSTLY_IQ1_M,     WP_IQ1_M},
    {"TQ1_0",     WP_FTYPE_MOSTLY_TQ1_0,     WP_TQ1_0},
    {"TQ2_0",     WP_FTYPE_MOSTLY_TQ2_0,     WP_TQ2_0},
    {"Q2_K",      WP_FTYPE_MOSTLY_Q2_K,      WP_Q2_K},
    {"Q2_K_S",    WP_FTYPE_MOSTLY_Q2_K_S,    WP_Q2_K},
    {"IQ3_XXS",   WP_FTYPE_MOSTLY_IQ3_XXS,   WP_IQ3_XXS},
    {"IQ3_S",     WP_FTYPE_MOSTLY_IQ3_S,     WP_IQ3_S},
    {"IQ3_M",     WP_FTYPE_MOSTLY_IQ3_M,     WP_IQ3_S},
    {"IQ3_XS",    WP_FTYPE_MOSTLY_IQ3_XS,    WP_IQ3_S},
    {"Q3_K_S",    WP_FTYPE_MOSTLY_Q3_K_S,    WP_Q3_K},
    {"Q3_K_M",    WP_FTYPE_MOSTLY_Q3_K_M,    WP_Q3_K},
    {"Q3_K_L",    WP_FTYPE_MOSTLY_Q3_K_L,    WP_Q3_K},
    {"IQ4_NL",    WP_FTYPE_MOSTLY_IQ4_NL,    WP_IQ4_NL},
    {"IQ4_XS",    WP_FTYPE_MOSTLY_IQ4_XS,    WP_IQ4_XS},
    {"Q4_K_S",    WP_FTYPE_MOSTLY_Q4_K_S,    WP_Q4_K},
    {"Q4_K_M",    WP_FTYPE_MOSTLY_Q4_K_M,    WP_Q4_K},
    {"Q5_K_S",    WP_FTYPE_MOSTLY_Q5_K_S,    WP_Q5_K},
    {"Q5_K_M",    WP_FTYPE_MOSTLY_Q5_K_M,    WP_Q5_K},
    {"Q6_K",      WP_FTYPE_MOSTLY_Q6_K,      WP_Q6_K},
    {"Q8_0",      WP_FTYPE_MOSTLY_Q8_0,      WP_Q8_0},
    /* NVFP4 has an ftype number but no default type in the reference */
    {"NVFP4",     WP_FTYPE_MOSTLY_NVFP4,     -1},
};
#define N_PRESETS (sizeof PRESETS / sizeof PRESETS[0])

int wp_ftype_from_name(const char *name)
{
    if (!name)
        return -1;
    /* a preset's number, as llama-quantize's try_parse_ftype takes it (15 is Q4_K_M) */
    if (*name && strspn(name, "0123456789") == strlen(name) && strlen(name) <= 9) {   /* (0007 too, as stoi) */
        const int f = atoi(name);
        return wp_ftype_name(f) ? f : -1;
    }
    if (!strcasecmp(name, "Q3_K")) return WP_FTYPE_MOSTLY_Q3_K_M;
    if (!strcasecmp(name, "Q4_K")) return WP_FTYPE_MOSTLY_Q4_K_M;
    if (!strcasecmp(name, "Q5_K")) return WP_FTYPE_MOSTLY_Q5_K_M;
    for (size_t i = 0; i < N_PRESETS; i++)
        if (!strcasecmp(name, PRESETS[i].name))
            return PRESETS[i].ftype;
    return -1;
}

const char *wp_ftype_name(int ftype)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (PRESETS[i].ftype == ftype)
            return PRESETS[i].name;
    return NULL;
}

int wp_ftype_default_type(int ftype)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (PRESETS[i].ftype == ftype)
            return PRESETS[i].dflt;
    return -1;
}

struct wp_ftype_opts wp_ftype_opts_default(int ftype)
{
    struct wp_ftype_opts o;
    memset(&o, 0, sizeof o);
    o.ftype = ftype;
    o.output_type = -1;
    o.token_embd_type = -1;
    return o;
}

/* ---- planner state ------------------------------------------------------ */

/* tensor_category of llama-quant.cpp */
enum cat {
    CAT_TOKEN_EMBD, CAT_ATTN_Q, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_QKV,
    CAT_ATTN_KV_B, CAT_ATTN_OUTPUT, CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN,
    CAT_OUTPUT, CAT_OTHER
};

struct tensor {
    char *name;
    int n_dims;            /* as ggml_n_dims */
    int64_t ne[4];
    int type;
    enum cat cat;
    struct wp_ftype_choice ch;
};

struct override {
    wp_ecma_regex *re;   /* std::regex, as llama-quantize compiles it */
    int type;
    size_t hits;   /* tensors whose type it chose (get_type) */
};

struct wp_ftype_plan {
    struct wp_ftype_model model;
    char *arch;
    struct wp_ftype_opts opts;
    int default_type;
    int is_70b;

    struct tensor *t;
    size_t n, cap;
    wp_names *index;   /* name -> its tensor's index in t */
    struct override *ov;
    size_t n_ov, cap_ov;

    /* quantize_state_impl counters */
    int n_attention_wv, n_ffn_down, n_ffn_gate, n_ffn_up;
    int i_attention_wv, i_ffn_down, i_ffn_gate, i_ffn_up;
    int n_fallback, n_f16;
    int has_tied_embeddings;
    int finished;
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const char *tname(int type)
{
    const char *s = wp_ggml_type_name((uint32_t)type);
    return s ? s : "?";
}

static int is_quantized(int type)
{
    return type >= 0 && wp_ggml_is_quantized((uint32_t)type);
}

static int blck(int type)
{
    int b = wp_ggml_blck_size((uint32_t)type);
    return b > 0 ? b : 1;
}

static int arch_is(const wp_ftype_plan *p, const char *a)
{
    return strcmp(p->arch, a) == 0;
}

/* Source: the LLM_TYPE_70B cases of load_hparams (src/models/llama.cpp,
 * qwen2.cpp, deci.cpp, olmo.cpp, jais2.cpp). */
static int infer_70b(const wp_ftype_plan *p)
{
    uint32_t nl = p->model.n_layer;
    if (arch_is(p, "llama"))
        return nl == 80 && p->model.n_head != p->model.n_head_kv;
    if (arch_is(p, "qwen2") || arch_is(p, "deci") || arch_is(p, "olmo"))
        return nl == 80;
    if (arch_is(p, "jais2"))
        return nl == 68;
    return 0;
}

wp_ftype_plan *wp_ftype_plan_new(const struct wp_ftype_model *model,
                                 const struct wp_ftype_opts *opts,
                                 char *err, size_t errlen)
{
    if (!model || !opts) {
        seterr(err, errlen, "ftype: no model or options");
        return NULL;
    }
    int dflt = wp_ftype_default_type(opts->ftype);
    if (dflt < 0) {
        seterr(err, errlen, "invalid output file type %d", opts->ftype);
        return NULL;
    }
    wp_ftype_plan *p = calloc(1, sizeof *p);
    if (!p) {
        seterr(err, errlen, "out of memory");
        return NULL;
    }
    p->model = *model;
    p->arch = strdup(model->arch ? model->arch : "");
    p->index = wp_names_new();
    if (!p->arch || !p->index) {
        free(p->arch);
        wp_names_free(p->index);
        free(p);
        seterr(err, errlen, "out of memory");
        return NULL;
    }
    p->model.arch = p->arch;
    if (p->model.n_head_kv == 0)
        p->model.n_head_kv = p->model.n_head;
    p->opts = *opts;
    p->default_type = dflt;
    p->is_70b = model->is_70b >= 0 ? model->is_70b != 0 : infer_70b(p);
    return p;
}

void wp_ftype_plan_free(wp_ftype_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->t[i].name);
    free(p->t);
    wp_names_free(p->index);
    for (size_t i = 0; i < p->n_ov; i++)
        wp_ecma_regex_free(p->ov[i].re);
    free(p->ov);
    free(p->arch);
    free(p);
}

int wp_ftype_plan_add_override(wp_ftype_plan *p, const char *spec,
                               char *err, size_t errlen)
{
    if (!p || !spec) {
        seterr(err, errlen, "tensor type: no spec");
        return -1;
    }
    /* parse_tensor_type of tools/quantize/quantize.cpp: first '=' splits */
    const char *sep = strchr(spec, '=');
    if (!sep) {
        seterr(err, errlen, "malformed tensor type '%s'", spec);
        return -1;
    }
    if (sep == spec) {
        seterr(err, errlen, "missing tensor name in '%s'", spec);
        return -1;
    }
    if (!sep[1]) {
        seterr(err, errlen, "missing quantization type in '%s'", spec);
        return -1;
    }
    int type = wp_ggml_type_from_name(sep + 1);
    if (type < 0 || !wp_ggml_type_name((uint32_t)type)) {
        seterr(err, errlen, "invalid quantization type '%s'", sep + 1);
        return -1;
    }
    size_t len = (size_t)(sep - spec);
    char *pat = malloc(len + 1);
    if (!pat) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        pat[i] = (char)tolower((unsigned char)spec[i]);
    pat[len] = 0;
    if (p->n_ov == p->cap_ov) {
        size_t nc = p->cap_ov ? 2 * p->cap_ov : 8;
        struct override *no = realloc(p->ov, nc * sizeof *no);
        if (!no) {
            free(pat);
            seterr(err, errlen, "out of memory");
            return -1;
        }
        p->ov = no;
        p->cap_ov = nc;
    }
    /* std::regex with llama-quantize's flags (ECMAScript): POSIX regcomp read \d as the letter
       d, \t as t, \< as a word start, and blk\.\d+\.attn_v matched nothing, unsaid (a llama.cpp
       user's trial; rewriting the one dialect into the other missed case after case, a
       breaker's finds) */
    char why[160];
    /* std::regex's compiler recurses once an element: 90,000 bytes overflowed the stack, a
       SIGSEGV without a word, as in llama-quantize (a re-tester's find); a --tensor-type regex is
       a few dozen bytes */
    if (len > WP_FTYPE_REGEX_MAX)
        snprintf(why, sizeof why, "%zu bytes, more than the %d taken (std::regex's compiler recurses "
                 "once an element, and a long regex overflowed the stack)", len, WP_FTYPE_REGEX_MAX);
    if (len > WP_FTYPE_REGEX_MAX || !(p->ov[p->n_ov].re = wp_ecma_regex_new(pat, why, sizeof why))) {
        /* the regex cut to 200 bytes, so the reason is said whole (a 30,000-way alternation filled
           the message and cut it off: a re-tester's find) */
        seterr(err, errlen, "bad tensor type regex '%.200s%s': %s", pat, len > 200 ? "..." : "", why);
        free(pat);
        return -1;
    }
    free(pat);
    p->ov[p->n_ov].type = type;
    p->ov[p->n_ov].hits = 0;
    p->n_ov++;
    p->finished = 0;
    return 0;
}

static struct tensor *find(const wp_ftype_plan *p, const char *name)
{
    const int64_t i = wp_names_get(p->index, name);
    return i < 0 ? NULL : &p->t[i];
}

int wp_ftype_is_token_embd(const char *name)
{
    return !strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight");
}

/* Source: tensor_get_category. */
static enum cat category(const char *n)
{
    if (!strcmp(n, "output.weight")) return CAT_OUTPUT;
    if (wp_ftype_is_token_embd(n))
        return CAT_TOKEN_EMBD;
    if (strstr(n, "attn_qkv.weight")) return CAT_ATTN_QKV;
    if (strstr(n, "attn_kv_b.weight")) return CAT_ATTN_KV_B;
    if (strstr(n, "attn_v.weight")) return CAT_ATTN_V;
    if (strstr(n, "attn_k.weight")) return CAT_ATTN_K;
    if (strstr(n, "attn_q.weight")) return CAT_ATTN_Q;
    if (strstr(n, "attn_output.weight")) return CAT_ATTN_OUTPUT;
    if (strstr(n, "ffn_up")) return CAT_FFN_UP;
    if (strstr(n, "ffn_gate")) return CAT_FFN_GATE;
    if (strstr(n, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

static int cat_is_attn_v(enum cat c)
{
    return c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B;
}

int wp_ftype_plan_add_tensor(wp_ftype_plan *p, const char *name, int n_dims,
                             const int64_t *ne, int type)
{
    if (!p || !name || !ne || n_dims < 1 || n_dims > 4 || find(p, name))
        return -1;
    if (p->n == p->cap) {
        size_t nc = p->cap ? 2 * p->cap : 64;
        struct tensor *nt = realloc(p->t, nc * sizeof *nt);
        if (!nt)
            return -1;
        p->t = nt;
        p->cap = nc;
    }
    struct tensor *t = &p->t[p->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name || wp_names_put(p->index, name, (int64_t)p->n) != -1) {
        free(t->name);
        return -1;
    }
    for (int i = 0; i < 4; i++)
        t->ne[i] = i < n_dims ? ne[i] : 1;
    /* ggml_n_dims: trailing dimensions of 1 do not count */
    t->n_dims = 1;
    for (int i = 3; i >= 1; i--)
        if (t->ne[i] != 1) {
            t->n_dims = i + 1;
            break;
        }
    t->type = type;
    t->cat = category(name);
    p->n++;
    p->finished = 0;
    return 0;
}

/* ---- the rules ------------------------------------------------------------ */

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Source: tensor_allows_quantization (only_copy is not an option here). */
static int allows_quantization(const wp_ftype_plan *p, const struct tensor *t)
{
    static const char *const never[] = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight",
        "altup", "laurel", "per_layer_model_proj", "ssm_conv1d",
        "shortconv.conv.weight", "indexer.k_proj.weight",
        "indexer.q_proj.weight", "time_mix_first.weight",
        "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
        "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
        "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
        "time_mix_g1.weight", "time_mix_g2.weight",
        "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd",
        "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
        ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
    };
    const char *n = t->name;
    if (t->n_dims < 2)
        return 0;
    /* the reference's rfind("weight") == size - 6: ends with "weight" */
    if (!ends_with(n, "weight"))
        return 0;
    if (p->opts.leave_output && !strcmp(n, "output.weight"))
        return 0;
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (strstr(n, never[i]))
            return 0;
    if (!strcmp(n, "position_embd.weight") || !strcmp(n, "token_types.weight"))
        return 0;
    return 1;
}

/* Source: use_more_bits lambda of llama_tensor_get_type_impl. */
static int use_more_bits(int i_layer, int n_layers)
{
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 ||
           (i_layer - n_layers / 8) % 3 == 2;
}

/* Source: layer_info lambda: with experts the layer comes from the name. */
static int layer_info(const wp_ftype_plan *p, int counter, const char *name,
                      int *i_layer, char *err, size_t errlen)
{
    int n_expert = p->model.n_expert > 1 ? (int)p->model.n_expert : 1;
    *i_layer = counter;
    if (n_expert > 1) {
        if (sscanf(name, "blk.%d.", i_layer) != 1) {
            seterr(err, errlen, "Failed to determine layer for tensor %s", name);
            return -1;
        }
        if (*i_layer < 0 || *i_layer >= p->n_ffn_down) {
            seterr(err, errlen, "Bad layer %d for tensor %s. Must be in [0, %d)",
                   *i_layer, name, p->n_ffn_down);
            return -1;
        }
    }
    return 0;
}

#define F(x) (ft == WP_FTYPE_MOSTLY_##x)

/* Source: llama_tensor_get_type_impl. Returns the type, -1 on error. */
static int get_type_impl(wp_ftype_plan *p, int new_type, const struct tensor *t,
                         char *err, size_t errlen)
{
    const int ft = p->opts.ftype;
    const enum cat c = t->cat;
    const int falcon = arch_is(p, "falcon");
    const int n_gqa = p->model.n_head_kv ? (int)(p->model.n_head / p->model.n_head_kv) : 0;
    const uint32_t n_expert = p->model.n_expert;
    const int imat = p->opts.has_imatrix;
    int i_layer, n_layer;

    if (c == CAT_OUTPUT || (p->has_tied_embeddings && c == CAT_TOKEN_EMBD)) {
        if (p->opts.output_type >= 0) {
            new_type = p->opts.output_type;
        } else {
            int64_t nx = t->ne[0];
            int qk_k = blck(new_type);
            if (F(MXFP4_MOE))
                new_type = WP_Q8_0;
            else if (falcon || nx % qk_k != 0)
                new_type = WP_Q8_0;
            else if (F(IQ2_XXS) || F(IQ2_XS) || F(IQ3_XXS) || F(IQ1_S) ||
                     F(IQ2_S) || F(IQ2_M) || F(IQ1_M))
                new_type = WP_Q5_K;
            else if (new_type != WP_Q8_0)
                new_type = WP_Q6_K;
        }
    } else if (F(MXFP4_MOE)) {
        int bailing = arch_is(p, "bailingmoe3");
        int bailing_expert = bailing &&
            (c == CAT_FFN_UP || c == CAT_FFN_GATE || c == CAT_FFN_DOWN);
        if (t->ne[2] > 1 && (!bailing || bailing_expert))
            new_type = WP_MXFP4;
        else
            new_type = WP_Q8_0;
    } else if (c == CAT_TOKEN_EMBD) {
        if (p->opts.token_embd_type >= 0)
            new_type = p->opts.token_embd_type;
        else if (F(IQ2_XXS) || F(IQ2_XS) || F(IQ1_S) || F(IQ1_M))
            new_type = WP_Q2_K;
        else if (F(IQ2_S) || F(IQ2_M))
            new_type = WP_IQ3_S;
        else if (F(IQ3_XXS))
            new_type = WP_IQ3_S;
        else if (F(TQ1_0) || F(TQ2_0) || F(Q2_0))
            new_type = WP_Q4_K;
    } else if (F(IQ2_XXS) || F(IQ2_XS) || F(IQ1_S) || F(IQ2_S) || F(IQ2_M) || F(IQ1_M)) {
        if (cat_is_attn_v(c)) {
            if (n_gqa >= 4 || n_expert >= 4)
                new_type = WP_Q4_K;
            else
                new_type = F(IQ2_S) || F(IQ2_M) ? WP_IQ3_S : WP_Q2_K;
            ++p->i_attention_wv;
        } else if (n_expert == 8 && c == CAT_ATTN_K) {
            new_type = WP_Q4_K;
        } else if (c == CAT_FFN_DOWN) {
            if (p->i_ffn_down < p->n_ffn_down / 8)
                new_type = F(IQ2_S) || F(IQ2_M) ? WP_IQ3_S : WP_Q2_K;
            ++p->i_ffn_down;
        } else if (c == CAT_ATTN_OUTPUT) {
            if (n_expert == 8) {
                new_type = WP_Q5_K;
            } else {
                if (F(IQ1_S) || F(IQ1_M))
                    new_type = WP_IQ2_XXS;
                else if (F(IQ2_S) || F(IQ2_M))
                    new_type = WP_IQ3_S;
            }
        }
    } else if (cat_is_attn_v(c)) {
        if (F(Q2_K))
            new_type = n_gqa >= 4 ? WP_Q4_K : WP_Q3_K;
        else if (F(Q2_K_S) && n_gqa >= 4)
            new_type = WP_Q4_K;
        else if (F(IQ3_XXS))
            new_type = n_gqa >= 4 ? WP_Q4_K : !imat ? WP_IQ3_S : WP_IQ3_XXS;
        else if ((F(IQ3_XS) || F(IQ3_S)) && n_gqa >= 4)
            new_type = WP_Q4_K;
        else if (F(IQ3_M))
            new_type = WP_Q4_K;
        else if (F(Q3_K_M))
            new_type = p->i_attention_wv < 2 ? WP_Q5_K : WP_Q4_K;
        else if (F(Q3_K_L))
            new_type = WP_Q5_K;
        else if ((F(IQ4_NL) || F(IQ4_XS)) && n_gqa >= 4)
            new_type = WP_Q5_K;
        else if ((F(Q4_K_M) || F(Q5_K_M)) && use_more_bits(p->i_attention_wv, p->n_attention_wv))
            new_type = WP_Q6_K;
        else if (F(Q4_K_S) && p->i_attention_wv < 4)
            new_type = WP_Q5_K;
        if (p->is_70b && (new_type == WP_Q3_K || new_type == WP_Q4_K))
            new_type = WP_Q5_K;
        if (n_expert == 8)
            new_type = WP_Q8_0;
        ++p->i_attention_wv;
    } else if (c == CAT_ATTN_K) {
        if (n_expert == 8)
            new_type = WP_Q8_0;
        else if (F(IQ3_XS))
            new_type = WP_IQ3_XXS;
        else if (F(IQ3_XXS))
            new_type = WP_IQ2_S;
    } else if (c == CAT_ATTN_Q) {
        if (F(IQ3_XS))
            new_type = WP_IQ3_XXS;
        else if (F(IQ3_XXS))
            new_type = WP_IQ2_S;
    } else if (c == CAT_FFN_DOWN) {
        if (layer_info(p, p->i_ffn_down, t->name, &i_layer, err, errlen))
            return -1;
        n_layer = p->n_ffn_down;
        if (F(Q2_K))
            new_type = WP_Q3_K;
        else if (F(Q2_K_S)) {
            if (i_layer < n_layer / 8)
                new_type = WP_Q4_K;
        } else if (F(IQ3_XXS) && !imat)
            new_type = i_layer < n_layer / 8 ? WP_Q4_K : WP_Q3_K;
        else if (F(Q3_K_M))
            new_type = i_layer < n_layer / 16 ? WP_Q5_K
                     : !falcon || use_more_bits(i_layer, n_layer) ? WP_Q4_K
                     : WP_Q3_K;
        else if (F(IQ3_M) && (i_layer < n_layer / 8 ||
                              (n_expert == 8 && use_more_bits(i_layer, n_layer))))
            new_type = WP_Q4_K;
        else if (F(Q3_K_L))
            new_type = falcon ? WP_Q4_K : WP_Q5_K;
        else if (F(Q4_K_M)) {
            if (falcon)
                new_type = i_layer < n_layer / 16 ? WP_Q6_K
                         : use_more_bits(i_layer, n_layer) ? WP_Q5_K : WP_Q4_K;
            else if (use_more_bits(i_layer, n_layer))
                new_type = WP_Q6_K;
        } else if (i_layer < n_layer / 8 && (F(IQ4_NL) || F(IQ4_XS)) && !imat)
            new_type = WP_Q5_K;
        else if (F(Q5_K_M) && use_more_bits(i_layer, n_layer))
            new_type = WP_Q6_K;
        else if (F(Q4_K_S) && !falcon && i_layer < n_layer / 8)
            new_type = WP_Q5_K;
        else if ((F(Q4_0) || F(Q5_0)) && imat && i_layer < n_layer / 8)
            new_type = F(Q4_0) ? WP_Q4_1 : WP_Q5_1;
        ++p->i_ffn_down;
    } else if (c == CAT_ATTN_OUTPUT) {
        if (!falcon) {
            if (n_expert == 8) {
                if (F(Q2_K) || F(IQ3_XS) || F(IQ3_XXS) || F(Q3_K_S) || F(Q3_K_M) ||
                    F(IQ4_NL) || F(Q4_K_S) || F(Q4_K_M) || F(IQ3_S) || F(IQ3_M) ||
                    F(IQ4_XS))
                    new_type = WP_Q5_K;
            } else {
                if (F(Q2_K)) new_type = WP_Q3_K;
                else if (F(IQ3_XXS)) new_type = WP_IQ3_S;
                else if (F(Q3_K_M)) new_type = WP_Q4_K;
                else if (F(Q3_K_L)) new_type = WP_Q5_K;
                else if (F(IQ3_M)) new_type = WP_Q4_K;
            }
        } else if (F(Q3_K_L)) {
            new_type = WP_Q4_K;
        }
    } else if (c == CAT_ATTN_QKV) {
        if (F(Q3_K_M) || F(Q3_K_L) || F(IQ3_M))
            new_type = WP_Q4_K;
        else if (F(Q4_K_M))
            new_type = WP_Q5_K;
        else if (F(Q5_K_M))
            new_type = WP_Q6_K;
    } else if (c == CAT_FFN_GATE || c == CAT_FFN_UP) {
        int *ctr = c == CAT_FFN_GATE ? &p->i_ffn_gate : &p->i_ffn_up;
        int nl = c == CAT_FFN_GATE ? p->n_ffn_gate : p->n_ffn_up;
        if (layer_info(p, *ctr, t->name, &i_layer, err, errlen))
            return -1;
        if (F(IQ3_XS) && i_layer >= nl / 8 && i_layer < 7 * nl / 8)
            new_type = WP_IQ3_XXS;
        ++*ctr;
    }
    return new_type;
}

#undef F

/* Source: tensor_type_fallback. Returns the type, -1 on refusal (strict). */
static int type_fallback(wp_ftype_plan *p, struct tensor *t, int target,
                         char *err, size_t errlen)
{
    int64_t ncols = t->ne[0];
    int qk_k = blck(target);
    int ret = target;
    if (ncols % qk_k == 0)
        return target;
    p->n_fallback++;
    t->ch.fallback = 1;
    switch (target) {
    case WP_IQ1_S: case WP_IQ1_M: case WP_IQ2_XXS: case WP_IQ2_XS:
    case WP_IQ2_S: case WP_IQ3_XXS: case WP_IQ3_S: case WP_IQ4_XS:
        ret = WP_IQ4_NL; break;
    case WP_Q2_0: case WP_Q2_K: case WP_Q3_K: case WP_TQ1_0: case WP_TQ2_0:
        ret = WP_Q4_0; break;
    case WP_Q4_K: ret = WP_Q5_0; break;
    case WP_Q5_K: ret = WP_Q5_1; break;
    case WP_Q6_K: ret = WP_Q8_0; break;
    default:
        if (qk_k <= 32) {
            ret = target;   /* becomes F16 below */
            break;
        }
        if (p->opts.strict) {
            seterr(err, errlen, "no tensor type fallback is defined for type %s (tensor %s)",
                   tname(target), t->name);
            return -1;
        }
        t->ch.refused_by_ref = 1;
        ret = WP_F16;
        break;
    }
    if (ncols % blck(ret) != 0)
        ret = WP_F16;
    if (ret == WP_F16) {
        t->ch.f16_fallback = 1;
        p->n_f16++;
    }
    return ret;
}

int64_t wp_ftype_plan_override_hits(const wp_ftype_plan *p, size_t i)
{
    if (!p || i >= p->n_ov || !p->finished || !is_quantized(p->default_type))
        return -1;
    return (int64_t)p->ov[i].hits;
}

/* The first override whose regex finds name (std::regex_search), -1 for none,
 * or -2 with the engine's message in err when a search fails (too complex). */
static int match_override(const wp_ftype_plan *p, const char *name, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n_ov; i++) {
        char why[160];
        const int m = wp_ecma_regex_search(p->ov[i].re, name, why, sizeof why);
        if (m < 0) {
            seterr(err, errlen, "tensor %s: tensor type regex %zu: %s", name, i + 1, why);
            return -2;
        }
        if (m)
            return (int)i;
    }
    return -1;
}

/* Source: llama_tensor_get_type (the outer wrapper) for an allowed tensor. */
static int get_type(wp_ftype_plan *p, struct tensor *t, char *err, size_t errlen)
{
    const struct wp_ftype_opts *o = &p->opts;
    if (o->token_embd_type >= 0 && t->cat == CAT_TOKEN_EMBD) {
        int named = 0;
        if (!strcmp(t->name, "per_layer_token_embd.weight")) {
            const int m = match_override(p, t->name, err, errlen);
            if (m == -2)
                return -1;
            named = m >= 0;
        }
        if (!named)
            return o->token_embd_type;
    }
    if (o->output_type >= 0 && t->cat == CAT_OUTPUT)
        return o->output_type;

    int new_type = p->default_type;
    if (is_quantized(p->default_type)) {
        int m = match_override(p, t->name, err, errlen);
        if (m == -2)
            return -1;
        if (m >= 0) {
            new_type = p->ov[m].type;
            p->ov[m].hits++;
            t->ch.manual = 1;
        }
        if (!t->ch.manual && !o->pure) {
            new_type = get_type_impl(p, new_type, t, err, errlen);
            if (new_type < 0)
                return -1;
        }
        t->ch.wanted = new_type;
        new_type = type_fallback(p, t, new_type, err, errlen);
    }
    return new_type;
}

/* Source: tensor_requires_imatrix. */
static int requires_imatrix(const wp_ftype_plan *p, const struct tensor *t, int dst)
{
    if (t->cat == CAT_TOKEN_EMBD || t->cat == CAT_OUTPUT)
        return 0;
    switch (dst) {
    case WP_IQ3_XXS: case WP_IQ2_XXS: case WP_IQ2_XS: case WP_IQ2_S:
    case WP_IQ1_M: case WP_IQ1_S:
        return 1;
    case WP_Q2_K:
        return p->opts.ftype == WP_FTYPE_MOSTLY_Q2_K_S;
    default:
        return 0;
    }
}

int wp_ftype_weight_cmp(const char *x, const char *y)
{
    int lx = -1, ly = -1;
    sscanf(x, "blk.%d.", &lx);
    sscanf(y, "blk.%d.", &ly);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return strcmp(x, y);
}

/* qsort's form of wp_ftype_weight_cmp, for the plan's tensors */
static int cmp_order(const void *a, const void *b)
{
    const struct tensor *x = *(const struct tensor *const *)a;
    const struct tensor *y = *(const struct tensor *const *)b;
    return wp_ftype_weight_cmp(x->name, y->name);
}

int wp_ftype_plan_finish(wp_ftype_plan *p, char *err, size_t errlen)
{
    if (!p) {
        seterr(err, errlen, "ftype: no planner");
        return -1;
    }
    p->finished = 0;
    for (size_t i = 0; i < p->n_ov; i++)
        p->ov[i].hits = 0;
    p->n_attention_wv = p->i_attention_wv = 0;
    p->i_ffn_down = p->i_ffn_gate = p->i_ffn_up = 0;
    p->n_fallback = p->n_f16 = 0;
    p->has_tied_embeddings = 1;

    struct tensor **ord = malloc((p->n ? p->n : 1) * sizeof *ord);
    if (!ord) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < p->n; i++)
        ord[i] = &p->t[i];
    qsort(ord, p->n, sizeof *ord, cmp_order);

    /* init_quantize_state_counters */
    for (size_t i = 0; i < p->n; i++) {
        if (cat_is_attn_v(ord[i]->cat))
            p->n_attention_wv++;
        if (ord[i]->cat == CAT_OUTPUT)
            p->has_tied_embeddings = 0;
    }
    p->n_ffn_down = p->n_ffn_gate = p->n_ffn_up = (int)wp_ftype_model_layers(&p->model);

    for (size_t i = 0; i < p->n; i++) {
        struct tensor *t = ord[i];
        memset(&t->ch, 0, sizeof t->ch);
        t->ch.quantize = allows_quantization(p, t);
        int type = t->type;
        if (t->ch.quantize) {
            type = get_type(p, t, err, errlen);
            if (type < 0) {
                free(ord);
                return -1;
            }
            t->ch.requires_imatrix = requires_imatrix(p, t, type);
            if (!p->opts.has_imatrix && t->ch.requires_imatrix) {
                seterr(err, errlen, "this quantization requires an imatrix! "
                       "(tensor %s, target type %s)", t->name, tname(type));
                free(ord);
                return -1;
            }
            if (type != t->type && is_quantized(t->type) && !p->opts.allow_requantize) {
                /* llama-quantize's words, and its flag (unsaid: a new user's trial) */
                seterr(err, errlen, "requantizing from type %s is disabled (tensor %s; --allow-requantize "
                       "allows it, at a cost in quality: quantize the F32, F16 or BF16 model)", tname(t->type), t->name);
                free(ord);
                return -1;
            }
        }
        t->ch.type = type;
        if (!t->ch.fallback)
            t->ch.wanted = type;
    }
    free(ord);
    p->finished = 1;
    return 0;
}

int wp_ftype_plan_get(const wp_ftype_plan *p, const char *name,
                      struct wp_ftype_choice *out)
{
    if (!p || !name || !p->finished)
        return -1;
    const struct tensor *t = find(p, name);
    if (!t)
        return -1;
    if (out)
        *out = t->ch;
    return 0;
}

size_t wp_ftype_plan_count(const wp_ftype_plan *p)
{
    return p ? p->n : 0;
}

const char *wp_ftype_plan_name(const wp_ftype_plan *p, size_t i)
{
    return p && i < p->n ? p->t[i].name : NULL;
}

int wp_ftype_plan_n_fallback(const wp_ftype_plan *p)
{
    return p ? p->n_fallback : 0;
}

int wp_ftype_plan_n_f16_fallback(const wp_ftype_plan *p)
{
    return p ? p->n_f16 : 0;
}

int wp_ftype_plan_fallbacks(const wp_ftype_plan *p, int *n_quantized, char *buf, size_t n)
{
    char list[4096] = "", pairs[2048] = "";
    int nf = 0, nfall = 0, nq = 0, np = 0, nmore = 0;
    struct { int from, to, n; } pair[64];   /* more pairs: "and N more" */
    for (size_t i = 0; i < wp_ftype_plan_count(p); i++) {
        const char *name = wp_ftype_plan_name(p, i);
        struct wp_ftype_choice ch;
        wp_ftype_plan_get(p, name, &ch);
        nq += ch.quantize;
        if (!ch.fallback)
            continue;
        nfall++;
        int k = 0;
        while (k < np && (pair[k].from != ch.wanted || pair[k].to != ch.type))
            k++;
        if (k == np && np < 64) {
            pair[k].from = ch.wanted, pair[k].to = ch.type, pair[k].n = 0;
            np++;
        }
        if (k < np)
            pair[k].n++;
        else
            nmore++;
        if (ch.f16_fallback) {
            if (strlen(list) + strlen(name) + 8 < sizeof list)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", nf ? ", " : "", name);
            nf++;
        }
    }
    for (int k = 0; k < np; k++)
        snprintf(pairs + strlen(pairs), sizeof pairs - strlen(pairs), "%s%d %s -> %s", k ? ", " : "", pair[k].n,
                 wp_ggml_type_name((uint32_t)pair[k].from), wp_ggml_type_name((uint32_t)pair[k].to));
    if (nmore)
        snprintf(pairs + strlen(pairs), sizeof pairs - strlen(pairs), ", and %d more", nmore);
    snprintf(buf, n, "%s%s%s%s", pairs, nf ? " (F16: " : "", list, nf ? ")" : "");
    *n_quantized = nq;
    return nfall;
}

uint32_t wp_ftype_model_layers(const struct wp_ftype_model *md)
{
    const char *arch = md->arch ? md->arch : "";
    if (!strcmp(arch, "nanbeige") && md->n_loops > 1) {   /* (llama.cpp asserts at most 512) */
        const uint64_t n = (uint64_t)md->n_layer * md->n_loops;
        return n > INT32_MAX ? INT32_MAX : (uint32_t)n;
    }
    if (!strcmp(arch, "graniteswitch"))
        return md->n_layer < INT32_MAX ? md->n_layer + 1 : INT32_MAX;
    return md->n_layer;
}

int wp_ftype_model_take(struct wp_ftype_model *md, const char *key, int64_t v)
{
    const char *arch = md->arch ? md->arch : "";
    const size_t al = strlen(arch);
    if (strncmp(key, arch, al) || key[al] != '.')
        return 0;
    key += al + 1;
    if (!strcmp(key, "block_count"))
        md->n_layer = (uint32_t)v;
    else if (!strcmp(key, "attention.head_count"))
        md->n_head = (uint32_t)v;
    else if (!strcmp(key, "attention.head_count_kv"))
        md->n_head_kv = (uint32_t)v;
    else if (!strcmp(key, "expert_count"))
        md->n_expert = (uint32_t)v;
    else if (!strcmp(key, "num_loops"))
        md->n_loops = (uint32_t)v;
    else
        return 0;
    return 1;
}
