/*
 * mkllama - write a synthetic llama-shaped GGUF whose rows are multiples of
 * 256 (so llama.cpp's K-quants and IQ4_XS apply, unlike stories260K), with
 * realistic weights: Student-t(4)-like tails, a few outlier input columns,
 * a spread of per-row scales, norms near 1. Metadata (tokenizer included)
 * comes from stories260K with the dimensions changed, so llama.cpp loads it.
 *
 * Usage: mkllama STORIES260K-F32.gguf OUT.gguf [F32|F16|BF16 [SHAPE]]
 * Shape: n_embd 256, n_ff 768, 2 layers, 4 heads, 2 KV heads, vocab 512;
 * SHAPE=EMBD,FF,LAYERS,HEADS,KV_HEADS,VOCAB replaces it (e.g. Llama-2-7B's
 * 4096,11008,2,32,32,32000 with 2 of its 32 layers, for memory and time
 * checks at real sizes; the tokenizer stays stories260K's 512 tokens, so
 * llama.cpp loads only the default shape's vocabulary). Two more fields,
 * ...,EXPERTS,USED, make a mixture of experts as llama.cpp's llama
 * architecture reads one (Mixtral's form: llama.expert_count and
 * llama.expert_used_count, ffn_gate_inp {EMBD, EXPERTS} and ffn_gate_exps,
 * ffn_up_exps {EMBD, FF, EXPERTS}, ffn_down_exps {FF, EMBD, EXPERTS} in place
 * of the dense FFN), e.g. 256,512,2,4,2,512,4,2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "gguf_file.h"
#include "half.h"
#include "synth.h"

static long EMBD = 256, FF = 768, LAYERS = 2, HEADS = 4, KV_HEADS = 2, VOCAB = 512, EXPERTS = 0, USED = 0;


static wp_gguf_out *out;
static int wtype = WP_F32;

/* For a SHAPE other than the default: Student-t(4) draws from a table of
 * 2^16 of them, picked by one xorshift step (about 20x faster than
 * student4(); a 7B-shaped layer holds 200 M weights). The default shape
 * keeps student4() itself, so its files (tests/bitrates.tsv) do not change. */
static float *t4tab;

static double heavy(void)
{
    if (!t4tab)
        return student4();
    synth_state ^= synth_state << 13, synth_state ^= synth_state >> 7, synth_state ^= synth_state << 17;
    return t4tab[synth_state >> 48];
}

static void put_u32(const char *key, uint32_t v)
{
    wp_record r;
    wp_record_init(&r);
    if (wp_gguf_kv_set(&r, key, NULL, v) || wp_gguf_out_add(out, &r) < 0)
        exit(1);
    wp_record_free(&r);
}

/* Tensor `name` of n_mat matrices (ne[2]; 1: a 2-D tensor) of rows x cols:
 * weights (kind 0) or a norm's values near 1 (kind 1). */
static void tensor3(const char *name, int64_t cols, int64_t rows, int64_t n_mat, int kind)
{
    wp_record r;
    int type = rows == 1 ? WP_F32 : wtype;
    size_t es = wp_ggml_type_size((uint32_t)type);
    wp_record_init(&r);
    r.kind = WP_REC_TENSOR;
    r.type = (uint32_t)type;
    r.n_dims = rows == 1 ? 1 : n_mat > 1 ? 3 : 2;
    r.ne[0] = cols;
    r.ne[1] = rows;
    r.ne[2] = n_mat;
    rows *= n_mat;
    wp_record_set_name(&r, name);
    uint8_t *p = wp_record_alloc(&r, (uint64_t)(cols * rows) * es);
    for (int64_t i = 0; i < rows; i++) {
        double s = 0.02 * exp(0.4 * gauss());
        for (int64_t j = 0; j < cols; j++) {
            double v = kind ? 1.0 + 0.1 * gauss() : s * heavy() * ((j % 61 == 7) ? 6 : 1);
            float f = (float)v;
            size_t at = (size_t)(i * cols + j) * es;
            if (type == WP_F32)
                memcpy(p + at, &f, 4);
            else
                wp_wr16(p + at, type == WP_F16 ? wp_f32_to_fp16(f) : wp_f32_to_bf16(f));
        }
    }
    if (wp_gguf_out_add(out, &r) < 0) {
        fprintf(stderr, "mkllama: %s\n", wp_gguf_out_error(out));
        exit(1);
    }
    wp_record_free(&r);
}

static void tensor(const char *name, int64_t cols, int64_t rows, int kind)
{
    tensor3(name, cols, rows, 1, kind);
}

int main(int argc, char **argv)
{
    synth_state = 0x2545F4914F6CDD1Dull;
    char err[512], name[96];
    if (argc < 3) {
        fprintf(stderr, "usage: mkllama STORIES260K-F32.gguf OUT.gguf [F32|F16|BF16 [EMBD,FF,LAYERS,HEADS,KV_HEADS,VOCAB[,EXPERTS,USED]]]\n");
        return 2;
    }
    if (argc > 3)
        wtype = wp_ggml_type_from_name(argv[3]);
    int nf = argc > 4 ? sscanf(argv[4], "%ld,%ld,%ld,%ld,%ld,%ld,%ld,%ld", &EMBD, &FF, &LAYERS, &HEADS, &KV_HEADS, &VOCAB,
                               &EXPERTS, &USED) : 6;
    if (argc > 4 && ((nf != 6 && nf != 8) || EMBD < 1 || FF < 1 || LAYERS < 1 || HEADS < 1 || KV_HEADS < 1 ||
                     VOCAB < 1 || EMBD % HEADS || HEADS % KV_HEADS || (nf == 8 && (EXPERTS < 2 || USED < 1 ||
                     USED > EXPERTS)))) {
        fprintf(stderr, "mkllama: %s: SHAPE must be EMBD,FF,LAYERS,HEADS,KV_HEADS,VOCAB[,EXPERTS,USED]\n", argv[4]);
        return 2;
    }
    if (wtype != WP_F32 && wtype != WP_F16 && wtype != WP_BF16) {
        fprintf(stderr, "mkllama: type must be F32, F16 or BF16\n");
        return 2;
    }
    if (argc > 4) {
        if (!(t4tab = malloc(sizeof *t4tab << 16)))
            return 1;
        for (int i = 0; i < 1 << 16; i++)
            t4tab[i] = (float)student4();
    }
    wp_gguf_in *g = wp_gguf_open(argv[1], err, sizeof err);
    out = wp_gguf_out_new(err, sizeof err);
    if (!g || !out) {
        fprintf(stderr, "mkllama: %s\n", err);
        return 1;
    }
    wp_record r;
    wp_record_init(&r);
    /* metadata of the source, dimensions replaced */
    while (wp_gguf_next(g, &r) > 0 && r.kind != WP_REC_TENSOR) {
        if (r.kind != WP_REC_KV)
            continue;
        if (!strcmp(r.name, "llama.embedding_length")) put_u32(r.name, (uint32_t)EMBD);
        else if (!strcmp(r.name, "llama.feed_forward_length")) put_u32(r.name, (uint32_t)FF);
        else if (!strcmp(r.name, "llama.block_count")) put_u32(r.name, (uint32_t)LAYERS);
        else if (!strcmp(r.name, "llama.attention.head_count")) put_u32(r.name, (uint32_t)HEADS);
        else if (!strcmp(r.name, "llama.attention.head_count_kv")) put_u32(r.name, (uint32_t)KV_HEADS);
        else if (!strcmp(r.name, "llama.rope.dimension_count")) put_u32(r.name, (uint32_t)(EMBD / HEADS));
        else if (!strcmp(r.name, "general.name")) continue;
        else if (wp_gguf_out_add(out, &r) < 0) return 1;
    }
    wp_record_free(&r);
    wp_gguf_close(g);
    if (EXPERTS) {
        put_u32("llama.expert_count", (uint32_t)EXPERTS);
        put_u32("llama.expert_used_count", (uint32_t)USED);
    }
    tensor("token_embd.weight", EMBD, VOCAB, 0);
    tensor("output_norm.weight", EMBD, 1, 1);
    tensor("output.weight", EMBD, VOCAB, 0);
    for (int l = 0; l < LAYERS; l++) {
#define T(n, c, r, k) (snprintf(name, sizeof name, "blk.%d." n, l), tensor(name, c, r, k))
        T("attn_norm.weight", EMBD, 1, 1);
        T("attn_q.weight", EMBD, EMBD, 0);
        T("attn_k.weight", EMBD, EMBD * KV_HEADS / HEADS, 0);
        T("attn_v.weight", EMBD, EMBD * KV_HEADS / HEADS, 0);
        T("attn_output.weight", EMBD, EMBD, 0);
        T("ffn_norm.weight", EMBD, 1, 1);
        if (EXPERTS) {
#define T3(n, c, r) (snprintf(name, sizeof name, "blk.%d." n, l), tensor3(name, c, r, EXPERTS, 0))
            T("ffn_gate_inp.weight", EMBD, EXPERTS, 0);
            T3("ffn_gate_exps.weight", EMBD, FF);
            T3("ffn_down_exps.weight", FF, EMBD);
            T3("ffn_up_exps.weight", EMBD, FF);
#undef T3
        } else {
            T("ffn_gate.weight", EMBD, FF, 0);
            T("ffn_down.weight", FF, EMBD, 0);
            T("ffn_up.weight", EMBD, FF, 0);
        }
#undef T
    }
    FILE *f = fopen(argv[2], "wb");
    if (!f || wp_gguf_out_finish(out, f) || fclose(f)) {
        fprintf(stderr, "mkllama: %s: cannot write\n", argv[2]);
        return 1;
    }
    wp_gguf_out_free(out);
    return 0;
}
