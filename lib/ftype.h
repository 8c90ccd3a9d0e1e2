/*
 * ftype.h - per-tensor type choice the way llama.cpp's llama-quantize does it.
 *
 * An ftype is a llama-quantize preset ("Q4_K_M", "IQ4_XS", "Q8_0" ...): a
 * default ggml type plus per-tensor rules (attn_v / ffn_down bumps by layer
 * position, tied embeddings, output tensor) and fallbacks for row lengths
 * that the chosen block size does not divide. The rules follow
 * src/llama-quant.cpp of the pinned reference llama.cpp (node-llama-cpp
 * 3.21.1): llama_tensor_get_type, llama_tensor_get_type_impl,
 * tensor_type_fallback, tensor_allows_quantization,
 * llama_ftype_get_default_type, init_quantize_state_counters,
 * tensor_requires_imatrix.
 *
 * Use: fill a wp_ftype_model (from GGUF metadata; this library parses no
 * GGUF) and wp_ftype_opts, make a planner, add every tensor of the model
 * (name, shape, type), add --tensor-type overrides, call
 * wp_ftype_plan_finish once, then ask wp_ftype_plan_get per tensor. The
 * whole list is needed first because llama-quantize counts attn_v layers
 * and walks tensors in its own order (layer number, then name), which
 * decides the layer-position bumps.
 *
 * wpack extension: where the reference throws "no tensor type fallback is
 * defined for type T" (a block type wider than 32 weights with no fallback
 * rule, e.g. Q1_0, NVFP4), the planner keeps F16 for that tensor unless
 * opts.strict asks for the reference's refusal. Every tensor that ends in
 * F16 because of its shape (the reference's own "must use F16 due to unusual
 * shape" path, e.g. Q8_0/Q5_0/Q4_0 on stories260K's 172-wide ffn_down, and
 * the extension above) is flagged so the program can warn and name it.
 */
#ifndef WPACK_FTYPE_H
#define WPACK_FTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* llama.cpp's enum llama_ftype (include/llama.h), same numbers: the value
 * llama-quantize writes to general.file_type. */
enum wp_ftype {
    WP_FTYPE_ALL_F32 = 0, WP_FTYPE_MOSTLY_F16 = 1, WP_FTYPE_MOSTLY_Q4_0 = 2,
    WP_FTYPE_MOSTLY_Q4_1 = 3, WP_FTYPE_MOSTLY_Q8_0 = 7, WP_FTYPE_MOSTLY_Q5_0 = 8,
    WP_FTYPE_MOSTLY_Q5_1 = 9, WP_FTYPE_MOSTLY_Q2_K = 10, WP_FTYPE_MOSTLY_Q3_K_S = 11,
    WP_FTYPE_MOSTLY_Q3_K_M = 12, WP_FTYPE_MOSTLY_Q3_K_L = 13,
    WP_FTYPE_MOSTLY_Q4_K_S = 14, WP_FTYPE_MOSTLY_Q4_K_M = 15,
    WP_FTYPE_MOSTLY_Q5_K_S = 16, WP_FTYPE_MOSTLY_Q5_K_M = 17,
    WP_FTYPE_MOSTLY_Q6_K = 18, WP_FTYPE_MOSTLY_IQ2_XXS = 19,
    WP_FTYPE_MOSTLY_IQ2_XS = 20, WP_FTYPE_MOSTLY_Q2_K_S = 21,
    WP_FTYPE_MOSTLY_IQ3_XS = 22, WP_FTYPE_MOSTLY_IQ3_XXS = 23,
    WP_FTYPE_MOSTLY_IQ1_S = 24, WP_FTYPE_MOSTLY_IQ4_NL = 25,
    WP_FTYPE_MOSTLY_IQ3_S = 26, WP_FTYPE_MOSTLY_IQ3_M = 27,
    WP_FTYPE_MOSTLY_IQ2_S = 28, WP_FTYPE_MOSTLY_IQ2_M = 29,
    WP_FTYPE_MOSTLY_IQ4_XS = 30, WP_FTYPE_MOSTLY_IQ1_M = 31,
    WP_FTYPE_MOSTLY_BF16 = 32, WP_FTYPE_MOSTLY_TQ1_0 = 36,
    WP_FTYPE_MOSTLY_TQ2_0 = 37, WP_FTYPE_MOSTLY_MXFP4_MOE = 38,
    WP_FTYPE_MOSTLY_NVFP4 = 39, WP_FTYPE_MOSTLY_Q1_0 = 40,
    WP_FTYPE_MOSTLY_Q2_0 = 41
};

/* Preset name as llama-quantize spells it ("Q4_K_M", "IQ4_XS", "F16",
 * case-insensitive; the aliases "Q3_K", "Q4_K", "Q5_K" mean the _M presets,
 * as in tools/quantize/quantize.cpp QUANT_OPTIONS; or a preset's number, "15"
 * for Q4_K_M, as its try_parse_ftype takes it) -> enum wp_ftype; -1 if
 * unknown. "COPY" is not a preset here. */
int wp_ftype_from_name(const char *name);

/* Canonical preset name of an ftype ("Q4_K_M"); NULL if unknown. */
const char *wp_ftype_name(int ftype);

/* The ftype's default ggml type (enum wp_ggml_type), -1 for an ftype that
 * llama-quantize rejects ("invalid output file type", e.g. NVFP4).
 * Source: llama_ftype_get_default_type. */
int wp_ftype_default_type(int ftype);

/* Whether tensor `name` is a token embedding ("token_embd.weight",
 * "per_layer_token_embd.weight"), which llama.cpp plans by its own rules and
 * quantizes without an imatrix entry that does not fit it. 1 or 0.
 * Source: llama-quant.cpp tensor_name_match_token_embd. */
int wp_ftype_is_token_embd(const char *name);

/* The order llama-quantize writes a model's tensors in: the layer N of
 * "blk.N." (-1 for other names) ascending, then the names (strcmp); <0, 0
 * or >0 as strcmp. Source: weight_name_comparer of llama-model-loader.h. */
int wp_ftype_weight_cmp(const char *x, const char *y);

/* What the rules need from the model's GGUF metadata. */
struct wp_ftype_model {
    const char *arch;      /* general.architecture, e.g. "llama"; NULL = "" */
    uint32_t n_layer;      /* {arch}.block_count (llama-quantize's n_ffn_down) */
    uint32_t n_head;       /* {arch}.attention.head_count (layer 0 when per layer) */
    uint32_t n_head_kv;    /* {arch}.attention.head_count_kv; 0 = same as n_head */
    uint32_t n_expert;     /* {arch}.expert_count; 0 when absent */
    int      is_70b;       /* llama.cpp's LLM_TYPE_70B: 1 yes, 0 no, -1 infer
                              (llama with 80 layers and GQA; qwen2, deci, olmo
                              with 80 layers; jais2 with 68), as load_hparams */
    uint32_t n_loops;      /* {arch}.num_loops (nanbeige, whose layers run that
                              many times); 0 when absent */
};

/* The layer count llama-quantize's ffn rules count in (its n_layer_all after
 * load_hparams): block_count, times num_loops for nanbeige, plus 1 (the
 * router layer) for graniteswitch. Source: init_quantize_state_counters of
 * llama-quant.cpp; load_arch_hparams of src/models/nanbeige.cpp and
 * granite-switch.cpp. */
uint32_t wp_ftype_model_layers(const struct wp_ftype_model *md);

/* Take the GGUF key/value key = v (an unsigned integer) into md when it is
 * one of the keys above of md->arch (set first): {arch}.block_count,
 * .attention.head_count, .attention.head_count_kv, .expert_count, .num_loops. Returns 1
 * when taken, 0 for any other key. Source: llama.cpp's LLM_KV names, as
 * llama_model_loader reads them. */
int wp_ftype_model_take(struct wp_ftype_model *md, const char *key, int64_t v);

/* llama_model_quantize_params' knobs that change type choice. Zero-fill,
 * then set ftype (wp_ftype_opts_default does that with "none" sentinels). */
struct wp_ftype_opts {
    int ftype;             /* enum wp_ftype */
    int output_type;       /* --output-tensor-type: a wp_ggml_type, -1 none */
    int token_embd_type;   /* --token-embedding-type: a wp_ggml_type, -1 none */
    int leave_output;      /* --leave-output-tensor (quantize_output_tensor=false) */
    int pure;              /* --pure: no per-tensor rules, only overrides+fallbacks */
    int has_imatrix;       /* an importance matrix will be used */
    int allow_requantize;  /* --allow-requantize: quantized inputs may change type */
    int strict;            /* 1: refuse where llama-quantize refuses (no
                              fallback defined); 0: F16 there, flagged */
};

/* Defaults: ftype as given, no output/token-embedding type, nothing else. */
struct wp_ftype_opts wp_ftype_opts_default(int ftype);

/* The planner's answer for one tensor. */
struct wp_ftype_choice {
    int type;              /* wp_ggml_type to write */
    int quantize;          /* 1 if llama-quantize would quantize it (2-D/3-D
                              weight passing tensor_allows_quantization) */
    int wanted;            /* the type the rules chose before the shape
                              fallback (== type when no fallback happened) */
    int fallback;          /* 1 if the row length forced a different type */
    int f16_fallback;      /* 1 if that fallback ended in F16 (warn) */
    int refused_by_ref;    /* 1 if llama-quantize would have thrown here and
                              the wpack extension chose F16 instead */
    int manual;            /* 1 if a --tensor-type pattern matched */
    int requires_imatrix;  /* 1 if its type needs the tensor's own imatrix entry
                              (llama-quantize: "Missing importance matrix for
                              tensor T in a very low-bit quantization") */
};

typedef struct wp_ftype_plan wp_ftype_plan;

/* New planner; copies model and opts (arch string too). NULL on bad ftype
 * (message in err, errlen bytes) or out of memory. */
wp_ftype_plan *wp_ftype_plan_new(const struct wp_ftype_model *model,
                                 const struct wp_ftype_opts *opts,
                                 char *err, size_t errlen);

/* Free p and its copies and overrides; NULL is a no-op. */
void wp_ftype_plan_free(wp_ftype_plan *p);

/* Add a --tensor-type override "REGEX=TYPE". The regex is lower-cased and
 * compiled as llama-quantize compiles it, by std::regex with its default
 * flags (ECMAScript; ecma_regex.h); it matches anywhere in the tensor name
 * (std::regex_search); the first matching override in the order added wins,
 * as in llama_tensor_get_type. TYPE is a ggml type name, case-insensitive.
 * Overrides apply only when the ftype's default type is quantized (not for
 * the F16/BF16/F32 presets), like the reference. Returns 0, or -1 with a
 * message in err (malformed spec, bad regex with std::regex_error's words,
 * a regex over WP_FTYPE_REGEX_MAX bytes, unknown type; the regex quoted up
 * to 200 bytes). Call before wp_ftype_plan_finish. */
int wp_ftype_plan_add_override(wp_ftype_plan *p, const char *spec,
                               char *err, size_t errlen);
/* The longest --tensor-type regex taken, in bytes: std::regex compiles by
 * recursion, and 90,000 bytes of it overflowed an 8 MiB stack. */
#define WP_FTYPE_REGEX_MAX 10000

/* How many tensors override i (0-based, in the order added) chose the type
 * of, the first matching override winning, after wp_ftype_plan_finish; -1
 * when there is no such override, before finish, or when overrides do not
 * apply (an F16/BF16/F32 preset). A 0 is an override that matched nothing,
 * which llama-quantize does not say. */
int64_t wp_ftype_plan_override_hits(const wp_ftype_plan *p, size_t i);

/* Add one tensor: its GGUF name, number of dims (1..4; trailing 1s are
 * ignored as ggml_n_dims does), ne[0..n_dims-1] in ggml order (ne[0] = row
 * length in weights) and its type as stored (wp_ggml_type). Names must be
 * unique. Returns 0, -1 on duplicate name / bad arguments / no memory. */
int wp_ftype_plan_add_tensor(wp_ftype_plan *p, const char *name, int n_dims,
                             const int64_t *ne, int type);

/* Choose every tensor's type, walking the tensors in llama-quantize's order
 * (blk.N layer number, then name; non-layer tensors first). Returns 0, or -1
 * with the reference's error in err: "no tensor type fallback is defined for
 * type T" (strict only), an IQ1/IQ2/IQ3_XXS (or Q2_K_S) choice without an
 * importance matrix, requantizing a quantized input without
 * allow_requantize, an expert layer number outside [0, n_layer). */
int wp_ftype_plan_finish(wp_ftype_plan *p, char *err, size_t errlen);

/* The choice for a tensor by name (after finish). Returns 0 and fills *out,
 * or -1 if the name was never added or finish has not succeeded. */
int wp_ftype_plan_get(const wp_ftype_plan *p, const char *name,
                      struct wp_ftype_choice *out);

/* Number of tensors added, and the i-th one's name in the order added
 * (owned by p; NULL when i is not below the count). */
size_t wp_ftype_plan_count(const wp_ftype_plan *p);
const char *wp_ftype_plan_name(const wp_ftype_plan *p, size_t i);

/* After finish: how many tensors fell back because of their row length
 * (llama-quantize's n_fallback), and how many of those ended in F16. */
int wp_ftype_plan_n_fallback(const wp_ftype_plan *p);
int wp_ftype_plan_n_f16_fallback(const wp_ftype_plan *p);

/* After finish: the fallbacks said in one phrase into buf (n bytes), the
 * tensors in the order added: "32 Q6_K -> Q8_0, 5 Q6_K -> F16 (F16:
 * blk.0.ffn_down.weight, ...)", each pair of wanted and written types with
 * its count (after 64 pairs, "and N more"), then the tensors that ended in
 * F16 (as many names as 4 KiB holds). Returns how many tensors fell back
 * (buf "" when none), and in *n_quantized how many the plan quantizes. */
int wp_ftype_plan_fallbacks(const wp_ftype_plan *p, int *n_quantized, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
