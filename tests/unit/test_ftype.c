/*
 * test_ftype.c - lib/ftype.c against the reference llama_model_quantize.
 *
 * For each preset (and a few --tensor-type / output-type cases) the test runs
 * the pinned reference libllama's llama_model_quantize (nthread 1) into a
 * temporary directory, reads the output's tensor types back with gguf, and
 * compares them tensor by tensor with wp_ftype_plan's choice for the same
 * input. Models: stories260K-f32.gguf (row lengths 64 and 172: fallbacks)
 * and two synthetic llama-shaped GGUFs with 256-multiple rows, written here
 * with the reference gguf API (one with output.weight and GQA, one with tied
 * embeddings and no GQA), carrying stories260K's tokenizer KVs; a tiny
 * 8-expert one; and minimal models of architectures whose rules differ
 * (nanbeige, graniteswitch, falcon, phi3, qwen2).
 */
/* The reference llama.cpp headers (gguf.h, ggml.h, llama.h), then wpack's. */
#include "gguf.h"
#include "ggml-backend.h"
#include "llama.h"

#include "ftype.h"
#include "ggml_type.h" /* wpack: WP_* ids */
#include "tap.h"

#include <ctype.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];

static void quiet_log(enum ggml_log_level level, const char *text, void *ud)
{
    (void)level; (void)text; (void)ud;
}

/* ---- the input model's tensor list and metadata -------------------------- */

struct tinfo { char name[GGML_MAX_NAME]; int n_dims; int64_t ne[4]; int type; };

struct model {
    const char *label;
    char path[1024];
    char arch[64];
    struct wp_ftype_model m;
    struct tinfo *t;
    int n;
};

static uint32_t kv_u32(const struct gguf_context *g, const char *arch, const char *suffix, uint32_t dflt)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t id = gguf_find_key(g, key);
    if (id < 0)
        return dflt;
    if (gguf_get_kv_type(g, id) == GGUF_TYPE_UINT32)
        return gguf_get_val_u32(g, id);
    if (gguf_get_kv_type(g, id) == GGUF_TYPE_INT32)
        return (uint32_t)gguf_get_val_i32(g, id);
    return dflt;
}

static int load_model(struct model *md)
{
    struct ggml_context *gc = NULL;
    struct gguf_init_params ip = { .no_alloc = true, .ctx = &gc };
    struct gguf_context *g = gguf_init_from_file(md->path, ip);
    if (!g)
        return -1;
    int64_t a = gguf_find_key(g, "general.architecture");
    snprintf(md->arch, sizeof md->arch, "%s", a >= 0 ? gguf_get_val_str(g, a) : "");
    memset(&md->m, 0, sizeof md->m);
    md->m.arch = md->arch;
    md->m.n_layer = kv_u32(g, md->arch, "block_count", 0);
    md->m.n_head = kv_u32(g, md->arch, "attention.head_count", 0);
    md->m.n_head_kv = kv_u32(g, md->arch, "attention.head_count_kv", md->m.n_head);
    md->m.n_expert = kv_u32(g, md->arch, "expert_count", 0);
    md->m.n_loops = kv_u32(g, md->arch, "num_loops", 0);
    md->m.is_70b = -1;
    md->n = (int)gguf_get_n_tensors(g);
    md->t = calloc((size_t)md->n, sizeof *md->t);
    for (int i = 0; i < md->n; i++) {
        const char *name = gguf_get_tensor_name(g, i);
        struct ggml_tensor *t = ggml_get_tensor(gc, name);
        snprintf(md->t[i].name, sizeof md->t[i].name, "%s", name);
        md->t[i].n_dims = 4;
        for (int d = 0; d < 4; d++)
            md->t[i].ne[d] = t->ne[d];
        md->t[i].type = (int)t->type;
    }
    gguf_free(g);
    ggml_free(gc);
    return 0;
}

/* ---- a synthetic llama-shaped model ------------------------------------- */

static uint32_t rng = 12345;
static float frand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return ((float)(rng >> 8) / 16777216.0f - 0.5f) * 0.1f;
}

static struct ggml_tensor *mk3(struct ggml_context *c, struct gguf_context *g, const char *name,
                               int64_t ne0, int64_t ne1, int64_t ne2)
{
    struct ggml_tensor *t = ne2 ? ggml_new_tensor_3d(c, GGML_TYPE_F32, ne0, ne1, ne2)
                          : ne1 ? ggml_new_tensor_2d(c, GGML_TYPE_F32, ne0, ne1)
                                : ggml_new_tensor_1d(c, GGML_TYPE_F32, ne0);
    ggml_set_name(t, name);
    float *d = t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++)
        d[i] = ne1 ? frand() : 1.0f;
    gguf_add_tensor(g, t);
    return t;
}

static struct ggml_tensor *mk(struct ggml_context *c, struct gguf_context *g, const char *name,
                              int64_t ne0, int64_t ne1)
{
    return mk3(c, g, name, ne0, ne1, 0);
}

static int write_synth(const char *path, const char *src_path, int n_layer, int n_embd,
                       int n_ff, int n_head, int n_head_kv, int with_output, int n_expert)
{
    struct gguf_init_params ip = { .no_alloc = true, .ctx = NULL };
    struct gguf_context *src = gguf_init_from_file(src_path, ip);
    if (!src)
        return -1;
    int64_t tok = gguf_find_key(src, "tokenizer.ggml.tokens");
    int64_t n_vocab = tok >= 0 ? (int64_t)gguf_get_arr_n(src, tok) : 512;
    int n_embd_kv = n_embd / n_head * n_head_kv;

    size_t nfl = (size_t)n_vocab * n_embd * (with_output ? 2 : 1) + n_embd
               + (size_t)n_layer * ((size_t)2 * n_embd * n_embd + (size_t)2 * n_embd * n_embd_kv
                                    + (size_t)3 * n_embd * n_ff * (n_expert ? n_expert : 1)
                                    + (size_t)n_embd * n_expert + 2 * n_embd);
    struct ggml_init_params gp = {
        .mem_size = nfl * sizeof(float) + (size_t)(16 + 12 * n_layer) * ggml_tensor_overhead() + 4096,
        .mem_buffer = NULL, .no_alloc = false };
    struct ggml_context *c = ggml_init(gp);
    struct gguf_context *g = gguf_init_empty();
    gguf_set_kv(g, src);    /* tokenizer and llama.* keys of stories260K */
    gguf_free(src);
    gguf_set_val_str(g, "general.name", "wpack synthetic llama");
    gguf_set_val_u32(g, "general.file_type", 0);
    gguf_set_val_u32(g, "llama.context_length", 512);
    gguf_set_val_u32(g, "llama.embedding_length", (uint32_t)n_embd);
    gguf_set_val_u32(g, "llama.feed_forward_length", (uint32_t)n_ff);
    gguf_set_val_u32(g, "llama.block_count", (uint32_t)n_layer);
    gguf_set_val_u32(g, "llama.attention.head_count", (uint32_t)n_head);
    gguf_set_val_u32(g, "llama.attention.head_count_kv", (uint32_t)n_head_kv);
    gguf_set_val_u32(g, "llama.rope.dimension_count", (uint32_t)(n_embd / n_head));
    gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (n_expert) {
        gguf_set_val_u32(g, "llama.expert_count", (uint32_t)n_expert);
        gguf_set_val_u32(g, "llama.expert_used_count", 2);
    }

    mk(c, g, "token_embd.weight", n_embd, n_vocab);
    mk(c, g, "output_norm.weight", n_embd, 0);
    if (with_output)
        mk(c, g, "output.weight", n_embd, n_vocab);
    for (int l = 0; l < n_layer; l++) {
        char nm[GGML_MAX_NAME];
#define T(s, a, b) (snprintf(nm, sizeof nm, "blk.%d." s, l), mk(c, g, nm, a, b))
        T("attn_norm.weight", n_embd, 0);
        T("attn_q.weight", n_embd, n_embd);
        T("attn_k.weight", n_embd, n_embd_kv);
        T("attn_v.weight", n_embd, n_embd_kv);
        T("attn_output.weight", n_embd, n_embd);
        T("ffn_norm.weight", n_embd, 0);
        if (n_expert) {
            T("ffn_gate_inp.weight", n_embd, n_expert);
#define T3(s, a, b) (snprintf(nm, sizeof nm, "blk.%d." s, l), mk3(c, g, nm, a, b, n_expert))
            T3("ffn_gate_exps.weight", n_embd, n_ff);
            T3("ffn_down_exps.weight", n_ff, n_embd);
            T3("ffn_up_exps.weight", n_embd, n_ff);
#undef T3
        } else {
            T("ffn_gate.weight", n_embd, n_ff);
            T("ffn_down.weight", n_ff, n_embd);
            T("ffn_up.weight", n_embd, n_ff);
        }
#undef T
    }
    int ok = gguf_write_to_file(g, path, false);
    gguf_free(g);
    ggml_free(c);
    return ok ? 0 : -1;
}

/* A model of another architecture with what llama_model_quantize reads: the
 * hyperparameters load_hparams needs (8 heads, n_head_kv of them for K and V;
 * rms: layer_norm_rms_epsilon, else layer_norm_epsilon), token_embd, output
 * when with_output, and a 256x256 tensor of each comma-separated name in
 * `layer` a layer (shapes decide only fallbacks, none at 256). nanbeige with
 * num_loops (n_loops > 0) runs its layers that many times, graniteswitch adds
 * a router layer: both change the layer count of the ffn rules (a
 * differential tester's find: gptq counted block_count). */
static int write_arch(const char *path, const char *arch, int n_layer, int n_head_kv, int n_loops,
                      const char *layer, int with_output, int rms)
{
    int per = 1;
    for (const char *c = layer; *c; c++)
        per += *c == ',';
    struct ggml_init_params gp = {
        .mem_size = (size_t)(n_layer * per + 2) * (256 * 256 * sizeof(float) + ggml_tensor_overhead()) + 4096,
        .mem_buffer = NULL, .no_alloc = false };
    struct ggml_context *c = ggml_init(gp);
    struct gguf_context *g = gguf_init_empty();
    char k[128];
#define KEY(s) (snprintf(k, sizeof k, "%s." s, arch), k)
    gguf_set_val_str(g, "general.architecture", arch);
    gguf_set_val_u32(g, "general.file_type", 0);
    gguf_set_val_u32(g, KEY("context_length"), 2048);
    gguf_set_val_u32(g, KEY("embedding_length"), 256);
    gguf_set_val_u32(g, KEY("block_count"), (uint32_t)n_layer);
    gguf_set_val_u32(g, KEY("feed_forward_length"), 256);
    gguf_set_val_u32(g, KEY("attention.head_count"), 8);
    gguf_set_val_u32(g, KEY("attention.head_count_kv"), (uint32_t)n_head_kv);
    gguf_set_val_u32(g, KEY("rope.dimension_count"), 32);
    gguf_set_val_f32(g, rms ? KEY("attention.layer_norm_rms_epsilon") : KEY("attention.layer_norm_epsilon"), 1e-5f);
    if (n_loops)
        gguf_set_val_u32(g, KEY("num_loops"), (uint32_t)n_loops);
    if (!strcmp(arch, "graniteswitch")) {   /* the adapter keys its load_arch_hparams requires */
        static const int32_t on[1] = { 5 }, sub[1] = { 6 };
        gguf_set_val_f32(g, KEY("logit_scale"), 1.0f);
        gguf_set_val_u32(g, KEY("adapters.count"), 1);
        gguf_set_val_u32(g, KEY("adapters.lora_rank"), 8);
        gguf_set_arr_data(g, KEY("adapters.token_ids_activate"), GGUF_TYPE_INT32, on, 1);
        gguf_set_arr_data(g, KEY("adapters.token_ids_substitute"), GGUF_TYPE_INT32, sub, 1);
    }
#undef KEY
    mk(c, g, "token_embd.weight", 256, 256);
    if (with_output)
        mk(c, g, "output.weight", 256, 256);
    for (int l = 0; l < n_layer; l++)
        for (const char *t = layer; *t;) {
            const size_t n = strcspn(t, ",");
            char nm[GGML_MAX_NAME];
            snprintf(nm, sizeof nm, "blk.%d.%.*s.weight", l, (int)n, t);
            mk(c, g, nm, 256, 256);
            t += n + (t[n] == ',');
        }
    int ok = gguf_write_to_file(g, path, false);
    gguf_free(g);
    ggml_free(c);
    return ok ? 0 : -1;
}

/* ---- one comparison ------------------------------------------------------ */

struct tcase {
    const char *preset;
    const char *const *overrides;  /* "regex=TYPE", NULL-terminated, or NULL */
    int output_type, token_embd_type, pure;
    const char *refusal;   /* where the reference refuses: what our planner's refusal says */
};

/* Our planner on md; returns 0 or -1 (err filled). */
static wp_ftype_plan *plan(const struct model *md, const struct tcase *tc, int strict,
                           char *err, size_t errlen)
{
    struct wp_ftype_opts o = wp_ftype_opts_default(wp_ftype_from_name(tc->preset));
    o.output_type = tc->output_type;
    o.token_embd_type = tc->token_embd_type;
    o.pure = tc->pure;
    o.strict = strict;
    wp_ftype_plan *p = wp_ftype_plan_new(&md->m, &o, err, errlen);
    if (!p)
        return NULL;
    for (int i = 0; i < md->n; i++)
        if (wp_ftype_plan_add_tensor(p, md->t[i].name, md->t[i].n_dims, md->t[i].ne, md->t[i].type)) {
            snprintf(err, errlen, "add_tensor %s failed", md->t[i].name);
            wp_ftype_plan_free(p);
            return NULL;
        }
    for (const char *const *s = tc->overrides; s && *s; s++)
        if (wp_ftype_plan_add_override(p, *s, err, errlen)) {
            wp_ftype_plan_free(p);
            return NULL;
        }
    if (wp_ftype_plan_finish(p, err, errlen)) {
        wp_ftype_plan_free(p);
        return NULL;
    }
    return p;
}

static char *describe(const struct tcase *tc, char *buf, size_t n)
{
    int k = snprintf(buf, n, "%s", tc->preset);
    for (const char *const *s = tc->overrides; s && *s && k < (int)n; s++)
        k += snprintf(buf + k, n - (size_t)k, " --tensor-type %s", *s);
    if (tc->output_type >= 0 && k < (int)n)
        k += snprintf(buf + k, n - (size_t)k, " --output-tensor-type %s", ggml_type_name(tc->output_type));
    if (tc->token_embd_type >= 0 && k < (int)n)
        k += snprintf(buf + k, n - (size_t)k, " --token-embedding-type %s", ggml_type_name(tc->token_embd_type));
    if (tc->pure && k < (int)n)
        snprintf(buf + k, n - (size_t)k, " --pure");
    return buf;
}

/* Run the reference and compare. Returns 1 when the reference refused. */
static int compare(const struct model *md, const struct tcase *tc)
{
    char desc[256], err[512] = "", out[600];
    describe(tc, desc, sizeof desc);
    snprintf(out, sizeof out, "%s/out.gguf", tmpdir);
    unlink(out);

    struct llama_model_tensor_override tto[8];
    int nt = 0;
    char pats[8][128];
    for (const char *const *s = tc->overrides; s && *s && nt < 7; s++, nt++) {
        /* what llama-quantize's parse_tensor_type does: lower-case the regex */
        const char *eq = strchr(*s, '=');
        size_t len = (size_t)(eq - *s);
        for (size_t i = 0; i < len && i < 127; i++)
            pats[nt][i] = (char)tolower((unsigned char)(*s)[i]);
        pats[nt][len < 127 ? len : 127] = 0;
        tto[nt].pattern = pats[nt];
        tto[nt].type = (enum ggml_type)wp_ggml_type_from_name(eq + 1);
    }
    tto[nt].pattern = NULL;
    tto[nt].type = GGML_TYPE_COUNT;

    struct llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.nthread = 1;
    qp.ftype = (enum llama_ftype)wp_ftype_from_name(tc->preset);
    qp.output_tensor_type = tc->output_type >= 0 ? (enum ggml_type)tc->output_type : GGML_TYPE_COUNT;
    qp.token_embedding_type = tc->token_embd_type >= 0 ? (enum ggml_type)tc->token_embd_type : GGML_TYPE_COUNT;
    qp.pure = tc->pure;
    qp.tt_overrides = nt ? tto : NULL;
    uint32_t rc = llama_model_quantize(md->path, out, &qp);

    wp_ftype_plan *strict = plan(md, tc, 1, err, sizeof err);
    if (rc != 0) {
        /* for the same reason (any refusal passed: a reviewer's find) */
        CHECK(strict == NULL && tc->refusal && strstr(err, tc->refusal),
              "%s %s: reference refuses, strict planner refuses too (%s)", md->label, desc, err);
        wp_ftype_plan_free(strict);
        return 1;
    }
    if (!CHECK(strict != NULL, "%s %s: strict planner accepts like the reference", md->label, desc)) {
        printf("# planner: %s\n", err);
        return 0;
    }

    struct gguf_init_params ip = { .no_alloc = true, .ctx = NULL };
    struct gguf_context *g = gguf_init_from_file(out, ip);
    if (!CHECK(g != NULL, "%s %s: reference output readable", md->label, desc)) {
        wp_ftype_plan_free(strict);
        return 0;
    }
    int n = (int)gguf_get_n_tensors(g), bad = 0, quantized = 0, f16fb = 0;
    for (int i = 0; i < n; i++) {
        const char *name = gguf_get_tensor_name(g, i);
        int ref = (int)gguf_get_tensor_type(g, i);
        struct wp_ftype_choice ch;
        if (wp_ftype_plan_get(strict, name, &ch)) {
            printf("# %s: not in the plan\n", name);
            bad++;
            continue;
        }
        quantized += ch.quantize;
        f16fb += ch.f16_fallback;
        if (ch.type != ref) {
            printf("# %s: ours %s, reference %s\n", name, ggml_type_name(ch.type), ggml_type_name(ref));
            bad++;
        }
    }
    int64_t fk = gguf_find_key(g, "general.file_type");
    uint32_t ft = fk >= 0 ? gguf_get_val_u32(g, fk) : 9999;
    CHECK(bad == 0 && n == md->n && (int)ft == wp_ftype_from_name(tc->preset),
          "%s %s: %d/%d tensor types equal the reference (%d quantizable, %d F16 fallbacks, file_type %u)",
          md->label, desc, n - bad, md->n, quantized, f16fb, ft);
    gguf_free(g);
    wp_ftype_plan_free(strict);
    unlink(out);
    return 0;
}

static const char *const PRESETS[] = {
    "Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0", "Q4_0", "Q5_0",
    "IQ4_XS", "IQ4_NL", "F16", "BF16", "Q2_K", "Q3_K_S", "Q3_K_L", "Q4_1", "Q5_1",
};
#define N_PRESETS (int)(sizeof PRESETS / sizeof PRESETS[0])

static void run_presets(const struct model *md)
{
    for (int i = 0; i < N_PRESETS; i++) {
        struct tcase tc = { PRESETS[i], NULL, -1, -1, 0, NULL };
        compare(md, &tc);
    }
}

/* ---- planner-only checks ------------------------------------------------- */

static void unit_checks(const struct model *st)
{
    CHECK(wp_ftype_from_name("q4_k_m") == WP_FTYPE_MOSTLY_Q4_K_M &&
          wp_ftype_from_name("Q4_K") == WP_FTYPE_MOSTLY_Q4_K_M &&
          wp_ftype_from_name("IQ4_XS") == WP_FTYPE_MOSTLY_IQ4_XS &&
          wp_ftype_from_name("bogus") == -1 &&
          !strcmp(wp_ftype_name(WP_FTYPE_MOSTLY_Q5_K_S), "Q5_K_S"),
          "preset names parse like llama-quantize's");
    /* its numbers too, as try_parse_ftype takes them: only a preset's (4 was Q4_1_SOME_F16) */
    CHECK(wp_ftype_from_name("15") == WP_FTYPE_MOSTLY_Q4_K_M && wp_ftype_from_name("7") == WP_FTYPE_MOSTLY_Q8_0 &&
          wp_ftype_from_name("0") == WP_FTYPE_ALL_F32 && wp_ftype_from_name("4") == -1 &&
          wp_ftype_from_name("1000") == -1 && wp_ftype_from_name("") == -1 && wp_ftype_from_name("15x") == -1,
          "preset numbers parse like llama-quantize's");
    CHECK(wp_ftype_default_type(WP_FTYPE_MOSTLY_IQ2_S) == WP_IQ2_XS &&
          wp_ftype_default_type(WP_FTYPE_MOSTLY_Q3_K_L) == WP_Q3_K &&
          wp_ftype_default_type(WP_FTYPE_MOSTLY_NVFP4) == -1,
          "ftype default types follow llama_ftype_get_default_type");

    char err[256];
    struct wp_ftype_opts o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    wp_ftype_plan *p = wp_ftype_plan_new(&st->m, &o, err, sizeof err);
    CHECK(p && wp_ftype_plan_add_override(p, "no_equals", err, sizeof err) == -1 &&
          wp_ftype_plan_add_override(p, "ffn_(down=q4_k", err, sizeof err) == -1 &&
          wp_ftype_plan_add_override(p, "ffn_down=Q9_Z", err, sizeof err) == -1 &&
          wp_ftype_plan_add_override(p, "=q8_0", err, sizeof err) == -1 &&
          wp_ftype_plan_add_override(p, "FFN_DOWN=q8_0", err, sizeof err) == 0,
          "--tensor-type specs: malformed, bad regex and unknown types are errors");
    int64_t ne[2] = { 64, 64 };
    CHECK(wp_ftype_plan_add_tensor(p, "a.weight", 2, ne, WP_F32) == 0 &&
          wp_ftype_plan_add_tensor(p, "a.weight", 2, ne, WP_F32) == -1,
          "duplicate tensor names are rejected");
    struct wp_ftype_choice ch;
    CHECK(wp_ftype_plan_get(p, "a.weight", &ch) == -1, "no answer before finish");
    wp_ftype_plan_free(p);

    /* The wpack extension: a 128-block type on 172-wide rows, where the
     * reference throws "no tensor type fallback is defined". */
    static const char *const q1[] = { "ffn_down=q1_0", NULL };
    struct tcase tc = { "Q8_0", q1, -1, -1, 0, NULL };
    p = plan(st, &tc, 0, err, sizeof err);
    int nf = 0, all = 1;
    if (p)
        for (int i = 0; i < st->n; i++)
            if (strstr(st->t[i].name, "ffn_down")) {
                all &= wp_ftype_plan_get(p, st->t[i].name, &ch) == 0 && ch.type == WP_F16 &&
                       ch.f16_fallback && ch.refused_by_ref && ch.manual && ch.wanted == WP_Q1_0;
                nf++;
            }
    CHECK(p && all && nf == 5 && wp_ftype_plan_n_f16_fallback(p) == 5,
          "non-strict: F16 instead of the reference's refusal, each tensor flagged (%d)", nf);
    wp_ftype_plan_free(p);

    /* Q8_0 on stories260K: the pinned reference itself keeps F16 for the
     * 172-wide ffn_down (no refusal); the planner flags those tensors. */
    struct tcase q8 = { "Q8_0", NULL, -1, -1, 0, NULL };
    p = plan(st, &q8, 1, err, sizeof err);
    CHECK(p && wp_ftype_plan_get(p, "blk.3.ffn_down.weight", &ch) == 0 && ch.type == WP_F16 &&
          ch.f16_fallback && !ch.refused_by_ref && wp_ftype_plan_n_f16_fallback(p) == 5,
          "Q8_0 on 172-wide rows: F16, flagged for a warning, also under strict");
    wp_ftype_plan_free(p);

}

/* ---- planner rules without a reference run --------------------------------
 * Rules the comparisons above never reach (no such model or preset fits a
 * quick reference run): 80-layer 70B models, expert counts other than 8,
 * imatrix presets, MXFP4_MOE, per_layer_token_embd, attn_kv_b, odd row
 * lengths. Each expected type is read from src/llama-quant.cpp of the pinned
 * reference (llama_tensor_get_type_impl, tensor_type_fallback ...). */

/* A plan of m->n_layer layers of the per-layer tensors (a printf format with
 * one %d for the layer; 3-D with m->n_expert experts when the name has
 * "_exps"), then the extra tensors, each ne0 x 256, F32, then the overrides. */
static wp_ftype_plan *mini(const struct wp_ftype_model *m, const struct wp_ftype_opts *o,
                           int64_t ne0, const char *const *per_layer, const char *const *extra,
                           const char *const *overrides, char *err, size_t errlen)
{
    wp_ftype_plan *p = wp_ftype_plan_new(m, o, err, errlen);
    if (!p)
        return NULL;
    char nm[128];
    int ok = 1;
    int64_t ne[3] = { ne0, 256, m->n_expert ? m->n_expert : 1 };
    for (uint32_t l = 0; l < m->n_layer; l++)
        for (const char *const *s = per_layer; s && *s; s++) {
            snprintf(nm, sizeof nm, *s, (int)l);
            ok &= wp_ftype_plan_add_tensor(p, nm, strstr(nm, "_exps") ? 3 : 2, ne, WP_F32) == 0;
        }
    for (const char *const *s = extra; s && *s; s++)
        ok &= wp_ftype_plan_add_tensor(p, *s, 2, ne, WP_F32) == 0;
    for (const char *const *s = overrides; s && *s; s++)
        ok &= wp_ftype_plan_add_override(p, *s, err, errlen) == 0;
    if (!ok || wp_ftype_plan_finish(p, err, errlen)) {
        if (!ok)
            snprintf(err, errlen, "building the plan failed");
        wp_ftype_plan_free(p);
        return NULL;
    }
    return p;
}

/* The planned type of name, -1 when not in the plan. */
static int ty(const wp_ftype_plan *p, const char *name)
{
    struct wp_ftype_choice ch;
    return p && wp_ftype_plan_get(p, name, &ch) == 0 ? ch.type : -1;
}

static void rule_checks(void)
{
    char err[256] = "";
    wp_ftype_plan *p;
    struct wp_ftype_opts o;

    CHECK(wp_ftype_from_name("Q3_K") == WP_FTYPE_MOSTLY_Q3_K_M &&
          wp_ftype_from_name("q5_k") == WP_FTYPE_MOSTLY_Q5_K_M,
          "the Q3_K and Q5_K aliases are Q3_K_M and Q5_K_M (quantize.cpp)");
    CHECK(wp_ftype_default_type(WP_FTYPE_MOSTLY_IQ2_M) == WP_IQ2_S &&
          wp_ftype_default_type(WP_FTYPE_MOSTLY_Q2_K_S) == WP_Q2_K &&
          wp_ftype_default_type(WP_FTYPE_MOSTLY_IQ3_XS) == WP_IQ3_S &&
          wp_ftype_default_type(WP_FTYPE_MOSTLY_IQ3_M) == WP_IQ3_S &&
          wp_ftype_default_type(WP_FTYPE_MOSTLY_Q5_K_S) == WP_Q5_K,
          "IQ2_M, Q2_K_S, IQ3_XS, IQ3_M, Q5_K_S default types follow llama_ftype_get_default_type");

    /* LLM_TYPE_70B: Q3_K_M's attn_v of the third layer on is Q4_K, 70B makes it Q5_K */
    static const char *const av[] = { "blk.%d.attn_v.weight", NULL };
    static const struct { const char *arch; uint32_t n_layer, n_head, n_head_kv; int is_70b, want; } b70[] = {
        { "llama", 80, 64, 8, -1, WP_Q5_K },    /* 80 layers and GQA: 70B */
        { "llama", 80, 64, 64, -1, WP_Q4_K },   /* no GQA: not 70B */
        { "llama", 80, 64, 0, -1, WP_Q4_K },    /* head_count_kv absent: = head_count, no GQA */
        { "llama", 40, 64, 8, -1, WP_Q4_K },
        { "qwen2", 80, 64, 64, -1, WP_Q5_K },   /* qwen2: 80 layers is enough */
        { "qwen2", 40, 64, 64, -1, WP_Q4_K },
        { "llama", 8, 64, 64, 1, WP_Q5_K },     /* told */
        { "llama", 80, 64, 8, 0, WP_Q4_K },     /* told not: no inference */
        { "jais2", 68, 64, 64, -1, WP_Q5_K },   /* jais2: 68 layers */
        { "jais2", 80, 64, 64, -1, WP_Q4_K },
        { "deci", 80, 64, 64, -1, WP_Q5_K },
        { "olmo", 80, 64, 64, -1, WP_Q5_K },
    };
    for (size_t i = 0; i < sizeof b70 / sizeof b70[0]; i++) {
        struct wp_ftype_model m = { b70[i].arch, b70[i].n_layer, b70[i].n_head, b70[i].n_head_kv, 0, b70[i].is_70b, 0 };
        o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q3_K_M);
        p = mini(&m, &o, 256, av, NULL, NULL, err, sizeof err);
        int t0 = ty(p, "blk.0.attn_v.weight"), t2 = ty(p, "blk.2.attn_v.weight");
        CHECK(t0 == WP_Q5_K && t2 == b70[i].want,
              "Q3_K_M %s, %u layers, %u/%u heads, is_70b %d: attn_v Q5_K, then %s (got %d, %d)",
              b70[i].arch, b70[i].n_layer, b70[i].n_head, b70[i].n_head_kv, b70[i].is_70b,
              wp_ggml_type_name((uint32_t)b70[i].want), t0, t2);
        wp_ftype_plan_free(p);
    }

    /* --tensor-type: the regex is lower-cased; an empty type is named as missing */
    struct wp_ftype_model m4 = { "llama", 4, 8, 8, 0, -1, 0 };
    static const char *const ffn[] = { "blk.%d.ffn_down.weight", "blk.%d.ffn_up.weight", NULL };
    static const char *const upper[] = { "FFN_DOWN=q8_0", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    p = mini(&m4, &o, 256, ffn, NULL, upper, err, sizeof err);
    int td = ty(p, "blk.1.ffn_down.weight"), tu = ty(p, "blk.1.ffn_up.weight");
    CHECK(td == WP_Q8_0 && tu == WP_Q4_K,
          "--tensor-type FFN_DOWN=q8_0 matches ffn_down (lower-cased), not ffn_up (%d, %d)", td, tu);
    wp_ftype_plan_free(p);
    p = wp_ftype_plan_new(&m4, &o, err, sizeof err);
    int rc = p ? wp_ftype_plan_add_override(p, "ffn_down=", err, sizeof err) : 0;
    CHECK(rc == -1 && !strcmp(err, "missing quantization type in 'ffn_down='"),
          "--tensor-type ffn_down= : missing quantization type (%s)", err);
    wp_ftype_plan_free(p);

    /* per_layer_token_embd.weight is a token embedding: --token-embedding-type
     * applies, unless a --tensor-type names it */
    static const char *const ple[] = { "token_embd.weight", "per_layer_token_embd.weight", "output.weight", NULL };
    static const char *const ple_ov[] = { "per_layer_token_embd=q4_0", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    o.token_embd_type = WP_Q8_0;
    p = mini(&m4, &o, 256, NULL, ple, NULL, err, sizeof err);
    int a = ty(p, "token_embd.weight"), b = ty(p, "per_layer_token_embd.weight");
    CHECK(a == WP_Q8_0 && b == WP_Q8_0,
          "--token-embedding-type Q8_0: token_embd and per_layer_token_embd (%d, %d)", a, b);
    wp_ftype_plan_free(p);
    p = mini(&m4, &o, 256, NULL, ple, ple_ov, err, sizeof err);
    a = ty(p, "token_embd.weight");
    b = ty(p, "per_layer_token_embd.weight");
    CHECK(a == WP_Q8_0 && b == WP_Q4_0,
          "--token-embedding-type Q8_0 and --tensor-type per_layer_token_embd=q4_0: the override wins there (%d, %d)", a, b);
    wp_ftype_plan_free(p);

    /* IQ3_XS with an imatrix, 16 layers, 4 experts (layers from the names):
     * ffn_up/ffn_gate of layers 2..13 IQ3_XXS, the rest IQ3_S; attn_k IQ3_XXS */
    struct wp_ftype_model m16e = { "llama", 16, 8, 8, 4, -1, 0 };
    static const char *const moe[] = { "blk.%d.attn_k.weight", "blk.%d.attn_v.weight",
                                       "blk.%d.ffn_up_exps.weight", "blk.%d.ffn_gate_exps.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_IQ3_XS);
    o.has_imatrix = 1;
    p = mini(&m16e, &o, 256, moe, NULL, NULL, err, sizeof err);
    int got[6] = { ty(p, "blk.1.ffn_up_exps.weight"), ty(p, "blk.2.ffn_up_exps.weight"),
                   ty(p, "blk.13.ffn_gate_exps.weight"), ty(p, "blk.14.ffn_gate_exps.weight"),
                   ty(p, "blk.5.attn_k.weight"), ty(p, "blk.5.attn_v.weight") };
    CHECK(got[0] == WP_IQ3_S && got[1] == WP_IQ3_XXS && got[2] == WP_IQ3_XXS && got[3] == WP_IQ3_S &&
          got[4] == WP_IQ3_XXS && got[5] == WP_IQ3_S,
          "IQ3_XS, 16 layers, 4 experts: ffn_up/gate_exps IQ3_XXS in layers 2..13, attn_k IQ3_XXS (%d %d %d %d %d %d)",
          got[0], got[1], got[2], got[3], got[4], got[5]);
    wp_ftype_plan_free(p);

    /* 16 experts are not 8: attn_v and attn_k keep the usual rules */
    struct wp_ftype_model m4e16 = { "llama", 4, 8, 8, 16, -1, 0 };
    static const char *const kv[] = { "blk.%d.attn_k.weight", "blk.%d.attn_v.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    p = mini(&m4e16, &o, 256, kv, NULL, NULL, err, sizeof err);
    a = ty(p, "blk.0.attn_v.weight");
    b = ty(p, "blk.0.attn_k.weight");
    CHECK(a == WP_Q4_K && b == WP_Q4_K, "Q4_K_M, 16 experts: attn_v, attn_k Q4_K, not Q8_0 (%d, %d)", a, b);
    wp_ftype_plan_free(p);

    /* attn_kv_b counts as attn_v: Q3_K_M gives the first two Q5_K, then Q4_K */
    struct wp_ftype_model ds = { "deepseek2", 4, 8, 8, 0, -1, 0 };
    static const char *const kvb[] = { "blk.%d.attn_kv_b.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q3_K_M);
    p = mini(&ds, &o, 256, kvb, NULL, NULL, err, sizeof err);
    a = ty(p, "blk.1.attn_kv_b.weight");
    b = ty(p, "blk.2.attn_kv_b.weight");
    CHECK(a == WP_Q5_K && b == WP_Q4_K, "Q3_K_M: attn_kv_b follows the attn_v rule (%d, %d)", a, b);
    wp_ftype_plan_free(p);

    /* tensors llama-quantize never quantizes: not named ...weight, position_embd,
     * and output.weight under --leave-output-tensor */
    static const char *const keep[] = { "blk.0.attn_q.lora_a", "position_embd.weight", "output.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    o.leave_output = 1;
    p = mini(&m4, &o, 256, NULL, keep, NULL, err, sizeof err);
    struct wp_ftype_choice c0, c1, c2;
    int g0 = wp_ftype_plan_get(p, "blk.0.attn_q.lora_a", &c0), g1 = wp_ftype_plan_get(p, "position_embd.weight", &c1),
        g2 = wp_ftype_plan_get(p, "output.weight", &c2);
    CHECK(p && !g0 && !g1 && !g2 && !c0.quantize && !c1.quantize && !c2.quantize &&
          c0.type == WP_F32 && c1.type == WP_F32 && c2.type == WP_F32,
          "a 2-D non-weight, position_embd and a left output.weight stay F32, unquantized");
    wp_ftype_plan_free(p);

    /* MoE layer numbers come from the names and must lie in [0, n_layer) */
    static const char *const bad_layer[] = { "blk.4.ffn_down_exps.weight", NULL };
    struct wp_ftype_model m4e = { "llama", 4, 8, 8, 4, -1, 0 };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    p = mini(&m4e, &o, 256, NULL, bad_layer, NULL, err, sizeof err);
    CHECK(!p && !strcmp(err, "Bad layer 4 for tensor blk.4.ffn_down_exps.weight. Must be in [0, 4)"),
          "MoE: a layer number past the last is refused (%s)", err);
    wp_ftype_plan_free(p);

    /* IQ1_M (imatrix): token_embd Q2_K, output Q5_K */
    static const char *const io[] = { "token_embd.weight", "output.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_IQ1_M);
    o.has_imatrix = 1;
    p = mini(&m4, &o, 256, NULL, io, NULL, err, sizeof err);
    a = ty(p, "token_embd.weight");
    b = ty(p, "output.weight");
    CHECK(a == WP_Q2_K && b == WP_Q5_K, "IQ1_M: token_embd Q2_K, output Q5_K (%d, %d)", a, b);
    wp_ftype_plan_free(p);

    /* Q2_0 and TQ1_0: token_embd Q4_K (an untied model) */
    static const int lowbit[] = { WP_FTYPE_MOSTLY_Q2_0, WP_FTYPE_MOSTLY_TQ1_0, WP_FTYPE_MOSTLY_TQ2_0 };
    for (size_t i = 0; i < sizeof lowbit / sizeof lowbit[0]; i++) {
        o = wp_ftype_opts_default(lowbit[i]);
        p = mini(&m4, &o, 256, NULL, io, NULL, err, sizeof err);
        a = ty(p, "token_embd.weight");
        CHECK(a == WP_Q4_K, "%s: token_embd Q4_K (%d)", wp_ftype_name(lowbit[i]), a);
        wp_ftype_plan_free(p);
    }

    /* MXFP4_MOE: 3-D expert tensors MXFP4, 2-D ones Q8_0 */
    static const char *const mx[] = { "blk.%d.ffn_up_exps.weight", "blk.%d.ffn_up_shexp.weight", "blk.%d.attn_q.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_MXFP4_MOE);
    p = mini(&m4e, &o, 256, mx, NULL, NULL, err, sizeof err);
    got[0] = ty(p, "blk.0.ffn_up_exps.weight");
    got[1] = ty(p, "blk.0.ffn_up_shexp.weight");
    got[2] = ty(p, "blk.0.attn_q.weight");
    CHECK(got[0] == WP_MXFP4 && got[1] == WP_Q8_0 && got[2] == WP_Q8_0,
          "MXFP4_MOE: ffn_up_exps MXFP4, ffn_up_shexp and attn_q Q8_0 (%d %d %d)", got[0], got[1], got[2]);
    wp_ftype_plan_free(p);

    /* IQ2_XS (imatrix), 16 layers: ffn_down of layers 0, 1 Q2_K; n_gqa 4: attn_v Q4_K */
    struct wp_ftype_model g4 = { "llama", 16, 32, 8, 0, -1, 0 };
    static const char *const dv[] = { "blk.%d.ffn_down.weight", "blk.%d.attn_v.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_IQ2_XS);
    o.has_imatrix = 1;
    p = mini(&g4, &o, 256, dv, NULL, NULL, err, sizeof err);
    got[0] = ty(p, "blk.1.ffn_down.weight");
    got[1] = ty(p, "blk.2.ffn_down.weight");
    got[2] = ty(p, "blk.7.attn_v.weight");
    CHECK(got[0] == WP_Q2_K && got[1] == WP_IQ2_XS && got[2] == WP_Q4_K,
          "IQ2_XS, 16 layers, 4 heads a KV head: ffn_down Q2_K in layers 0, 1, attn_v Q4_K (%d %d %d)",
          got[0], got[1], got[2]);
    wp_ftype_plan_free(p);

    /* Q2_K_S (imatrix), 16 layers: ffn_down of layers 0, 1 Q4_K, then Q2_K */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q2_K_S);
    o.has_imatrix = 1;
    p = mini(&g4, &o, 256, dv, NULL, NULL, err, sizeof err);
    got[0] = ty(p, "blk.1.ffn_down.weight");
    got[1] = ty(p, "blk.2.ffn_down.weight");
    CHECK(got[0] == WP_Q4_K && got[1] == WP_Q2_K, "Q2_K_S, 16 layers: ffn_down Q4_K in layers 0, 1 (%d %d)",
          got[0], got[1]);
    wp_ftype_plan_free(p);

    /* IQ3_XXS with an imatrix and no GQA: attn_v IQ3_XXS (IQ3_S only without one) */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_IQ3_XXS);
    o.has_imatrix = 1;
    p = mini(&m4, &o, 256, av, NULL, NULL, err, sizeof err);
    a = ty(p, "blk.0.attn_v.weight");
    CHECK(a == WP_IQ3_XXS, "IQ3_XXS with an imatrix: attn_v IQ3_XXS (%d)", a);
    wp_ftype_plan_free(p);

    /* --token-embedding-type IQ2_XXS needs no imatrix (token_embd is exempt) */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    o.token_embd_type = WP_IQ2_XXS;
    p = mini(&m4, &o, 256, NULL, io, NULL, err, sizeof err);
    a = ty(p, "token_embd.weight");
    CHECK(a == WP_IQ2_XXS, "--token-embedding-type IQ2_XXS without an imatrix is planned (%d: %s)", a, p ? "" : err);
    wp_ftype_plan_free(p);

    /* tensor_type_fallback on 96-wide rows, strict: each 256-block type's
     * fallback (96 is a multiple of 32, not of 64 or 256) */
    static const struct { const char *t; int to; } fb[] = {
        { "TQ1_0", WP_Q4_0 }, { "TQ2_0", WP_Q4_0 }, { "Q2_0", WP_Q4_0 }, { "Q2_K", WP_Q4_0 },
        { "Q3_K", WP_Q4_0 }, { "Q4_K", WP_Q5_0 }, { "Q5_K", WP_Q5_1 }, { "Q6_K", WP_Q8_0 },
        { "IQ4_XS", WP_IQ4_NL }, { "IQ3_S", WP_IQ4_NL }, { "IQ2_XXS", WP_IQ4_NL }, { "IQ1_M", WP_IQ4_NL },
    };
    for (size_t i = 0; i < sizeof fb / sizeof fb[0]; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "attn_q=%s", fb[i].t);
        const char *const ov[] = { spec, NULL };
        static const char *const q[] = { "blk.%d.attn_q.weight", NULL };
        o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_0);
        o.strict = 1;
        p = mini(&m4, &o, 96, q, NULL, ov, err, sizeof err);
        struct wp_ftype_choice ch;
        memset(&ch, 0, sizeof ch);
        int g = p ? wp_ftype_plan_get(p, "blk.0.attn_q.weight", &ch) : -1;
        CHECK(g == 0 && ch.type == fb[i].to && ch.fallback && !ch.f16_fallback &&
              ch.wanted == wp_ggml_type_from_name(fb[i].t) && wp_ftype_plan_n_fallback(p) == 4,
              "96-wide rows: %s falls back to %s (got %d, wanted %d; %s)", fb[i].t,
              wp_ggml_type_name((uint32_t)fb[i].to), ch.type, ch.wanted, p ? "" : err);
        wp_ftype_plan_free(p);
    }

    /* the fallbacks in one phrase (gptq's warning): 96-wide rows fall back to Q5_0 (Q4_K) and
       Q8_0 (Q6_K), 172-wide ones to F16, named; the tensors in the order added */
    {
        static const char *const qv[] = { "blk.%d.attn_q.weight", "blk.%d.attn_v.weight", NULL };
        static const char *const ov[] = { "attn_v=Q6_K", NULL };
        char said[6200];
        int nq = -1;
        o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_S);
        p = mini(&m4, &o, 96, qv, NULL, ov, err, sizeof err);
        int nf = p ? wp_ftype_plan_fallbacks(p, &nq, said, sizeof said) : -1;
        CHECK(nf == 8 && nq == 8 && !strcmp(said, "4 Q4_K -> Q5_0, 4 Q6_K -> Q8_0"), "96-wide rows: %d of %d: %s", nf,
              nq, p ? said : err);
        wp_ftype_plan_free(p);
        static const char *const q1[] = { "blk.%d.attn_q.weight", NULL };
        p = mini(&m4, &o, 172, q1, NULL, NULL, err, sizeof err);
        nf = p ? wp_ftype_plan_fallbacks(p, &nq, said, sizeof said) : -1;
        CHECK(nf == 4 && !strcmp(said, "4 Q4_K -> F16 (F16: blk.0.attn_q.weight, blk.1.attn_q.weight, "
                                       "blk.2.attn_q.weight, blk.3.attn_q.weight)"),
              "172-wide rows: %s", p ? said : err);
        wp_ftype_plan_free(p);
        p = mini(&m4, &o, 256, q1, NULL, NULL, err, sizeof err);
        nf = p ? wp_ftype_plan_fallbacks(p, &nq, said, sizeof said) : -1;
        CHECK(nf == 0 && nq == 4 && !strcmp(said, ""), "256-wide rows: no fallback, \"\" (%s)", p ? said : err);
        wp_ftype_plan_free(p);
    }

    /* the model's keys of its architecture, as llama_model_loader names them */
    {
        struct wp_ftype_model mk = { "llama", 0, 0, 0, 0, -1, 0 };
        const int took = wp_ftype_model_take(&mk, "llama.block_count", 32) +
                         wp_ftype_model_take(&mk, "llama.attention.head_count", 32) +
                         wp_ftype_model_take(&mk, "llama.attention.head_count_kv", 8) +
                         wp_ftype_model_take(&mk, "llama.expert_count", 8) +
                         wp_ftype_model_take(&mk, "llama.context_length", 4096) +
                         wp_ftype_model_take(&mk, "qwen2.block_count", 80) +
                         wp_ftype_model_take(&mk, "llamax.block_count", 80);
        CHECK(took == 4 && mk.n_layer == 32 && mk.n_head == 32 && mk.n_head_kv == 8 && mk.n_expert == 8,
              "llama's block_count, head counts and expert count taken; another key or architecture not (%d)", took);
        /* nanbeige's num_loops multiplies the layers, taken before or after block_count; a
           num_loops of 1, or another architecture's, does not */
        struct wp_ftype_model nb = { "nanbeige", 0, 0, 0, 0, -1, 0 };
        const int nbt = wp_ftype_model_take(&nb, "nanbeige.num_loops", 3) + wp_ftype_model_take(&nb, "nanbeige.block_count", 10);
        struct wp_ftype_model one = { "nanbeige", 10, 0, 0, 0, -1, 1 }, ll = { "llama", 10, 0, 0, 0, -1, 3 },
                              huge = { "nanbeige", 1u << 31, 0, 0, 0, -1, 4 };
        CHECK(nbt == 2 && nb.n_loops == 3 && wp_ftype_model_layers(&nb) == 30 && wp_ftype_model_layers(&one) == 10 &&
                  wp_ftype_model_layers(&ll) == 10 && wp_ftype_model_layers(&huge) == INT32_MAX,
              "nanbeige.num_loops 3 of 10 layers: %u (1 loop %u, llama %u, 2^31 x 4 held at %u)",
              wp_ftype_model_layers(&nb), wp_ftype_model_layers(&one), wp_ftype_model_layers(&ll),
              wp_ftype_model_layers(&huge));
    }

    /* IQ2_XS (imatrix), no GQA, 4 experts: attn_v Q4_K (n_expert >= 4) */
    static const char *const kvo[] = { "blk.%d.attn_k.weight", "blk.%d.attn_v.weight",
                                       "blk.%d.attn_q.weight", "blk.%d.attn_output.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_IQ2_XS);
    o.has_imatrix = 1;
    p = mini(&m4e, &o, 256, kvo, NULL, NULL, err, sizeof err);
    a = ty(p, "blk.1.attn_v.weight");
    CHECK(a == WP_Q4_K, "IQ2_XS, 4 experts, no GQA: attn_v Q4_K (%d)", a);
    wp_ftype_plan_free(p);

    /* IQ2_XS (imatrix), 8 experts: attn_k Q4_K, attn_q stays IQ2_XS, attn_output Q5_K */
    struct wp_ftype_model m4e8 = { "llama", 4, 8, 8, 8, -1, 0 };
    p = mini(&m4e8, &o, 256, kvo, NULL, NULL, err, sizeof err);
    got[0] = ty(p, "blk.1.attn_k.weight");
    got[1] = ty(p, "blk.1.attn_q.weight");
    got[2] = ty(p, "blk.1.attn_output.weight");
    CHECK(got[0] == WP_Q4_K && got[1] == WP_IQ2_XS && got[2] == WP_Q5_K,
          "IQ2_XS, 8 experts: attn_k Q4_K, attn_q IQ2_XS, attn_output Q5_K (%d %d %d)", got[0], got[1], got[2]);
    wp_ftype_plan_free(p);

    /* attn_output without experts: IQ1_S and IQ1_M IQ2_XXS, IQ2_S and IQ2_M IQ3_S */
    static const struct { int ft, want; } ao[] = {
        { WP_FTYPE_MOSTLY_IQ1_S, WP_IQ2_XXS }, { WP_FTYPE_MOSTLY_IQ1_M, WP_IQ2_XXS },
        { WP_FTYPE_MOSTLY_IQ2_S, WP_IQ3_S }, { WP_FTYPE_MOSTLY_IQ2_M, WP_IQ3_S },
    };
    static const char *const aout[] = { "blk.%d.attn_output.weight", NULL };
    for (size_t i = 0; i < sizeof ao / sizeof ao[0]; i++) {
        o = wp_ftype_opts_default(ao[i].ft);
        o.has_imatrix = 1;
        p = mini(&m4, &o, 256, aout, NULL, NULL, err, sizeof err);
        a = ty(p, "blk.2.attn_output.weight");
        CHECK(a == ao[i].want, "%s: attn_output %s (%d)", wp_ftype_name(ao[i].ft),
              wp_ggml_type_name((uint32_t)ao[i].want), a);
        wp_ftype_plan_free(p);
    }

    /* IQ3_M, 16 layers, 8 experts: ffn_down Q4_K in layers 0, 1 and where
     * use_more_bits (4, 7, 10, 13, 14, 15), IQ3_S elsewhere (3, 12) */
    struct wp_ftype_model m16e8 = { "llama", 16, 8, 8, 8, -1, 0 };
    static const char *const dexp[] = { "blk.%d.ffn_down_exps.weight", NULL };
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_IQ3_M);
    p = mini(&m16e8, &o, 256, dexp, NULL, NULL, err, sizeof err);
    static const int dl[] = { 1, 3, 4, 7, 12, 14 };
    static const int dw[] = { WP_Q4_K, WP_IQ3_S, WP_Q4_K, WP_Q4_K, WP_IQ3_S, WP_Q4_K };
    char nm[64], line[128] = "";
    int all = p != NULL;
    for (size_t i = 0; i < sizeof dl / sizeof dl[0]; i++) {
        snprintf(nm, sizeof nm, "blk.%d.ffn_down_exps.weight", dl[i]);
        int t = ty(p, nm);
        all &= t == dw[i];
        snprintf(line + strlen(line), sizeof line - strlen(line), " %d", t);
    }
    CHECK(all, "IQ3_M, 16 layers, 8 experts: ffn_down_exps of layers 1 3 4 7 12 14 Q4_K IQ3_S Q4_K Q4_K IQ3_S Q4_K (%s)", line);
    wp_ftype_plan_free(p);

    /* Q4_0 and Q5_0 with an imatrix: ffn_down of the first n/8 layers Q4_1, Q5_1 */
    static const char *const down[] = { "blk.%d.ffn_down.weight", NULL };
    struct wp_ftype_model m16 = { "llama", 16, 8, 8, 0, -1, 0 };
    static const struct { int ft, first, rest; } q01[] = {
        { WP_FTYPE_MOSTLY_Q4_0, WP_Q4_1, WP_Q4_0 }, { WP_FTYPE_MOSTLY_Q5_0, WP_Q5_1, WP_Q5_0 },
    };
    for (size_t i = 0; i < sizeof q01 / sizeof q01[0]; i++) {
        o = wp_ftype_opts_default(q01[i].ft);
        o.has_imatrix = 1;
        p = mini(&m16, &o, 256, down, NULL, NULL, err, sizeof err);
        a = ty(p, "blk.1.ffn_down.weight");
        b = ty(p, "blk.2.ffn_down.weight");
        CHECK(a == q01[i].first && b == q01[i].rest, "%s with an imatrix, 16 layers: ffn_down %s in layers 0, 1, then %s (%d %d)",
              wp_ftype_name(q01[i].ft), wp_ggml_type_name((uint32_t)q01[i].first),
              wp_ggml_type_name((uint32_t)q01[i].rest), a, b);
        wp_ftype_plan_free(p);
    }

    /* IQ3_XXS without an imatrix, 16 layers: ffn_down Q4_K in layers 0, 1, then Q3_K */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_IQ3_XXS);
    p = mini(&m16, &o, 256, down, NULL, NULL, err, sizeof err);
    a = ty(p, "blk.1.ffn_down.weight");
    b = ty(p, "blk.2.ffn_down.weight");
    CHECK(a == WP_Q4_K && b == WP_Q3_K, "IQ3_XXS without an imatrix, 16 layers: ffn_down Q4_K in layers 0, 1, then Q3_K (%d %d%s%s)",
          a, b, p ? "" : "; ", p ? "" : err);
    wp_ftype_plan_free(p);

    /* output.weight needs no imatrix whatever its type (--output-tensor-type IQ2_XXS) */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_K_M);
    o.output_type = WP_IQ2_XXS;
    p = mini(&m4, &o, 256, NULL, io, NULL, err, sizeof err);
    a = ty(p, "output.weight");
    CHECK(a == WP_IQ2_XXS, "--output-tensor-type IQ2_XXS without an imatrix is planned (%d%s%s)",
          a, p ? "" : ": ", p ? "" : err);
    wp_ftype_plan_free(p);

    /* a quantized input tensor: refused unless allow_requantize */
    for (int allow = 0; allow <= 1; allow++) {
        o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_0);
        o.allow_requantize = allow;
        p = wp_ftype_plan_new(&m4, &o, err, sizeof err);
        int64_t ne2[2] = { 256, 256 };
        err[0] = 0;
        rc = p ? wp_ftype_plan_add_tensor(p, "blk.0.attn_q.weight", 2, ne2, WP_Q8_0) : -1;
        rc = rc ? rc : wp_ftype_plan_finish(p, err, sizeof err);
        a = rc ? -1 : ty(p, "blk.0.attn_q.weight");
        if (allow)
            CHECK(rc == 0 && a == WP_Q4_0, "allow_requantize: a Q8_0 tensor becomes Q4_0 (%d, %d: %s)", rc, a, err);
        else
            CHECK(rc == -1 && !strcmp(err, "requantizing from type Q8_0 is disabled (tensor blk.0.attn_q.weight; "
                                                  "--allow-requantize allows it, at a cost in quality: quantize "
                                                  "the F32, F16 or BF16 model)"),
                  "a Q8_0 tensor without allow_requantize is refused (%s)", err);
        wp_ftype_plan_free(p);
    }

    /* how many tensors each override decided, the first match winning: 0 for one that matched
       nothing, or only tensors an earlier one took (gptq warns of it) */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_0);
    p = mini(&m4, &o, 256, down, NULL, NULL, err, sizeof err);
    rc = p ? wp_ftype_plan_add_override(p, "blk\\.\\d+\\.ffn_down=q8_0", err, sizeof err) : -1;
    rc |= p ? wp_ftype_plan_add_override(p, "ffn_down=q5_0", err, sizeof err) : -1;
    rc |= p ? wp_ftype_plan_add_override(p, "ffn_dowm=q5_0", err, sizeof err) : -1;
    const int64_t h_before = p ? wp_ftype_plan_override_hits(p, 0) : 0;
    int frc = p ? wp_ftype_plan_finish(p, err, sizeof err) : -1;
    CHECK(rc == 0 && frc == 0 && h_before == -1 && wp_ftype_plan_override_hits(p, 0) == 4 &&
              wp_ftype_plan_override_hits(p, 1) == 0 && wp_ftype_plan_override_hits(p, 2) == 0 &&
              wp_ftype_plan_override_hits(p, 3) == -1 && ty(p, "blk.2.ffn_down.weight") == WP_Q8_0,
          "override hits: \\d+ takes the 4 ffn_down, the next none, a typo none (%d %d %lld %lld %lld)", rc, frc,
          (long long)wp_ftype_plan_override_hits(p, 0), (long long)wp_ftype_plan_override_hits(p, 1),
          (long long)wp_ftype_plan_override_hits(p, 2));
    wp_ftype_plan_free(p);
    /* an F16 preset applies none: no count */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_F16);
    p = mini(&m4, &o, 256, down, NULL, NULL, err, sizeof err);
    rc = p ? wp_ftype_plan_add_override(p, "ffn_down=q8_0", err, sizeof err) : -1;
    frc = p ? wp_ftype_plan_finish(p, err, sizeof err) : -1;
    CHECK(rc == 0 && frc == 0 && wp_ftype_plan_override_hits(p, 0) == -1, "override hits under F16: -1");
    wp_ftype_plan_free(p);
    /* what std::regex refuses, refused with its words, as llama-quantize refuses it */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_0);
    p = wp_ftype_plan_new(&m4, &o, err, sizeof err);
    rc = p ? wp_ftype_plan_add_override(p, "attn_v{,2}=q8_0", err, sizeof err) : 0;
    CHECK(rc == -1 && !strcmp(err, "bad tensor type regex 'attn_v{,2}': Invalid range in '{}' in regular expression"),
          "a regex std::regex refuses: %s", err);
    rc = p ? wp_ftype_plan_add_override(p, "ffn_(?!up)=q8_0", err, sizeof err) : -1;
    CHECK(rc == 0, "lookahead, which std::regex reads, taken (%s)", rc ? err : "");
    wp_ftype_plan_free(p);

    /* an override added after finish: no answers until the next finish, then the new one */
    o = wp_ftype_opts_default(WP_FTYPE_MOSTLY_Q4_0);
    p = mini(&m4, &o, 256, down, NULL, NULL, err, sizeof err);
    rc = p ? wp_ftype_plan_add_override(p, "ffn_down=q8_0", err, sizeof err) : -1;
    a = ty(p, "blk.0.ffn_down.weight");
    frc = p ? wp_ftype_plan_finish(p, err, sizeof err) : -1;
    b = ty(p, "blk.0.ffn_down.weight");
    CHECK(rc == 0 && a == -1 && frc == 0 && b == WP_Q8_0,
          "an override after finish: no answer until finish again, then Q8_0 (%d %d %d %d)", rc, a, frc, b);
    wp_ftype_plan_free(p);
}

int main(void)
{
    ggml_log_set(quiet_log, NULL);
    llama_log_set(quiet_log, NULL);

    /* the reference's backends live beside libllama */
    Dl_info di;
    char libdir[1024] = ".";
    if (dladdr((void *)llama_model_quantize, &di) && di.dli_fname) {
        snprintf(libdir, sizeof libdir, "%s", di.dli_fname);
        char *d = dirname(libdir);
        memmove(libdir, d, strlen(d) + 1);
    }
    ggml_backend_load_all_from_path(libdir);

    rule_checks();

    const char *data = getenv("WPACK_DATA");
    char st_path[768];
    snprintf(st_path, sizeof st_path, "%s/models/stories260K/stories260K-f32.gguf",
             data ? data : "../shared/data");
    if (access(st_path, R_OK) != 0) {
        SKIP("no %s (set WPACK_DATA)", st_path);
        return tap_done();
    }

    snprintf(tmpdir, sizeof tmpdir, "%s/wpack-ftype-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        CHECK(0, "mkdtemp");
        return tap_done();
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    struct model st = { .label = "stories260K" };
    snprintf(st.path, sizeof st.path, "%s", st_path);
    int lrc = load_model(&st);
    CHECK(lrc == 0 && st.n > 0, "read stories260K's tensor list (%d tensors)", st.n);

    unit_checks(&st);
    run_presets(&st);
    {
        /* issue 9's stories260K recipe, plus a first-match-wins pair */
        static const char *const f16[] = { "ffn_down=f16", NULL };
        static const char *const two[] = { "blk\\.[0-2]\\.attn_v=Q8_0", "attn_(v|k)=q5_1", NULL };
        static const char *const q1[] = { "ffn_down=q1_0", NULL };
        struct tcase cs[] = {
            { "Q4_0", f16, -1, -1, 0, NULL },
            { "Q4_K_M", two, -1, -1, 0, NULL },
            { "Q4_K_M", NULL, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, 0, NULL },
            { "Q5_K_M", NULL, -1, -1, 1, NULL },
            { "IQ2_XS", NULL, -1, -1, 0, NULL },   /* 64-wide rows: IQ4_NL, no imatrix needed */
            { "IQ3_XS", NULL, -1, -1, 0, NULL },
        };
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
            compare(&st, &cs[i]);
        struct tcase rf = { "Q8_0", q1, -1, -1, 0, "no tensor type fallback is defined for type Q1_0" };
        CHECK(compare(&st, &rf) == 1, "stories260K: the reference refuses Q1_0 on 172-wide rows");
    }

    /* synthetic models: 256-multiple rows */
    struct model sa = { .label = "synthA(8L,gqa4,output)" }, sb = { .label = "synthB(8L,tied)" };
    snprintf(sa.path, sizeof sa.path, "%s/synth-a.gguf", tmpdir);
    snprintf(sb.path, sizeof sb.path, "%s/synth-b.gguf", tmpdir);
    CHECK(write_synth(sa.path, st_path, 8, 256, 512, 8, 2, 1, 0) == 0 && load_model(&sa) == 0,
          "write %s with the gguf API", sa.label);
    CHECK(write_synth(sb.path, st_path, 8, 256, 512, 4, 4, 0, 0) == 0 && load_model(&sb) == 0,
          "write %s with the gguf API", sb.label);
    if (sa.n) {
        run_presets(&sa);
        static const char *const two[] = { "blk\\.[0-3]\\.ffn_up=q8_0", "ffn=iq4_xs", NULL };
        /* llama-quantize's regexes are ECMAScript (std::regex): \d was the letter d here, and
           blk\.\d+\.attn_v matched nothing, unsaid (a llama.cpp user's trial) */
        static const char *const ecma[] = { "blk\\.\\d+\\.attn_v=q8_0", "blk\\.[\\d]\\.ffn_(?:up|gate)=q5_k",
                                            "\\w+\\.[1-3]\\.ffn_down.*?=q6_k", "blk\\.\\D\\.attn_q=q5_0",
                                            "BLK\\.[\\.\\w]+ATTN_K\\b=Q4_1", "blk\\.[[:digit:]\\d]\\.attn_output=q8_0",
                                            "^output[^\\d]=q5_1", NULL };
        /* where POSIX regcomp, or a rewriting of ECMAScript into it, chose otherwise, unsaid (a
           breaker's finds): a backspace in brackets, \> a literal '>', [] no character, \x2e a
           '.', a literal } made optional, [^] any character, a lookahead */
        static const char *const ecma2[] = { "[\\b]lk\\.0\\.attn_v=q8_0", "ttn_v\\>=q8_0", "[]a]ttn_v=q6_k",
                                             "blk\\x2e1\\x2eattn_v=q8_0", "attn_v}?=q5_0",
                                             "blk\\.0\\.attn_[^]=q5_1", "(?!ffn)blk\\.1\\.attn_q=q4_1", NULL };
        struct tcase cs[] = {
            { "Q4_K_M", two, -1, -1, 0, NULL },
            { "Q4_K_M", ecma, -1, -1, 0, NULL },
            { "Q4_K_M", ecma2, -1, -1, 0, NULL },
            { "Q4_K_S", NULL, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, 0, NULL },
        };
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
            compare(&sa, &cs[i]);
        /* 256-wide rows: IQ2_XS needs an importance matrix; both refuse */
        struct tcase iq2 = { "IQ2_XS", NULL, -1, -1, 0, "this quantization requires an imatrix" };
        CHECK(compare(&sa, &iq2) == 1, "%s: IQ2_XS without an imatrix is refused by both", sa.label);
    }
    if (sb.n) {
        run_presets(&sb);
        struct tcase cs[] = { { "Q3_K_M", NULL, GGML_TYPE_Q4_K, -1, 0, NULL } };
        compare(&sb, &cs[0]);
    }

    /* a tiny 8-expert MoE: the n_expert == 8 rules and layer numbers from names */
    struct model sm = { .label = "synthMoE(4L,8x)" };
    snprintf(sm.path, sizeof sm.path, "%s/synth-moe.gguf", tmpdir);
    CHECK(write_synth(sm.path, st_path, 4, 256, 256, 8, 2, 1, 8) == 0 && load_model(&sm) == 0,
          "write %s with the gguf API", sm.label);
    if (sm.n) {
        static const char *const moe[] = { "Q3_K_M", "Q4_K_M", "IQ4_XS", "Q8_0", "Q2_K" };
        for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
            struct tcase tc = { moe[i], NULL, -1, -1, 0, NULL };
            compare(&sm, &tc);
        }
    }
    unlink(sm.path);
    free(sm.t);

    /* architectures whose rules llama-quantize writes apart: nanbeige's 8 layers run twice (its
       ffn rules count 16), graniteswitch's 7 and its router (8); falcon (its own Q2_K..Q4_K_S
       ffn_down and attn_qkv rules, one KV head), phi3 (attn_qkv, a fused ffn_up), qwen2 (an
       80-layer model of it is LLM_TYPE_70B; here 16 layers, GQA 4) */
    static const struct {
        const char *label, *arch, *layer;
        int n_layer, n_head_kv, n_loops, with_output, rms;
        unsigned ffn_layers;
    } ar[] = {
        { "nanbeige(8L,2 loops)", "nanbeige", "ffn_down", 8, 2, 2, 0, 1, 16 },
        { "graniteswitch(7L)", "graniteswitch", "ffn_down", 7, 2, 0, 0, 1, 8 },
        { "falcon(16L,kv1)", "falcon", "attn_qkv,attn_output,ffn_up,ffn_down", 16, 1, 0, 1, 0, 16 },
        { "phi3(8L)", "phi3", "attn_qkv,attn_output,ffn_up,ffn_down", 8, 8, 0, 1, 1, 8 },
        { "qwen2(16L,gqa4)", "qwen2", "attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down", 16, 2, 0, 1, 1,
          16 },
    };
    for (size_t i = 0; i < sizeof ar / sizeof ar[0]; i++) {
        struct model sl = { .label = ar[i].label };
        snprintf(sl.path, sizeof sl.path, "%s/synth-arch-%zu.gguf", tmpdir, i);
        CHECK(write_arch(sl.path, ar[i].arch, ar[i].n_layer, ar[i].n_head_kv, ar[i].n_loops, ar[i].layer,
                         ar[i].with_output, ar[i].rms) == 0 &&
                  load_model(&sl) == 0,
              "write %s with the gguf API", sl.label);
        CHECK(wp_ftype_model_layers(&sl.m) == ar[i].ffn_layers, "%s: llama-quantize's ffn rules count %u layers",
              sl.label, wp_ftype_model_layers(&sl.m));
        if (sl.n)
            run_presets(&sl);
        unlink(sl.path);
        free(sl.t);
    }

    /* llama-quantize's tensor order: layer numbers as numbers, other names before blk.0 */
    CHECK(wp_ftype_weight_cmp("blk.2.attn_q.weight", "blk.10.attn_k.weight") < 0 &&
              wp_ftype_weight_cmp("output.weight", "blk.0.attn_q.weight") < 0 &&
              wp_ftype_weight_cmp("blk.3.ffn_up.weight", "blk.3.attn_q.weight") > 0 &&
              wp_ftype_weight_cmp("token_embd.weight", "output.weight") > 0 &&
              wp_ftype_weight_cmp("blk.1.a", "blk.1.a") == 0,
          "weight_name_comparer: blk.2 before blk.10, other names first, then by name");

    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("# %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    unlink(sa.path);
    unlink(sb.path);
    rmdir(tmpdir);
    free(st.t);
    free(sa.t);
    free(sb.t);
    return tap_done();
}
