/*
 * hessplan.h - hessian(1)'s passes over the calibration text: which weights'
 * Hessians each pass collects, so that the Hessians held at once fit a
 * memory bound (--max-memory), and that bound's default.
 *
 * The weights come in the order the forward pass first reaches them. A
 * pass takes whole layers (runs of weights of one blk.N) while their
 * Hessians fit; a layer too big for one pass is split between weights.
 * A weight that reads another's input (q/k/v, gate/up: its `lead` the
 * other's index) holds no H of its own and is collected with its lead.
 * Source: ours (llama-imatrix holds only diag(H) and needs one pass).
 */
#ifndef WPACK_HESSPLAN_H
#define WPACK_HESSPLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One weight matrix whose input's Hessian is collected. */
typedef struct {
    const char *name;   /* the weight's name, e.g. "blk.0.attn_q.weight" (for messages) */
    int64_t cols;       /* its ne[0]: the input's row length; H is cols x cols doubles */
    int64_t n_expert;   /* its H count: 1, or its experts (MUL_MAT_ID's ne[2]) */
    int layer;          /* N of "blk.N." (wp_hessplan_layer), -1 for other weights */
    int lead;           /* the index of the weight that holds its H: its own, or an
                           earlier one's that reads the same input; the plan may make
                           it its own (wp_hessplan_make) */
    int pass;           /* set by wp_hessplan_make: the 0-based pass that collects it */
} wp_hessplan_weight;

/* N of a weight name "blk.N....", else -1 (llama.cpp's layer tensors). */
int wp_hessplan_layer(const char *name);

/* Bytes of weight i's Hessians (n_expert x cols x cols doubles) when it
 * holds them (w[i].lead == i), else 0. */
uint64_t wp_hessplan_bytes(const wp_hessplan_weight *w, int i);

/* Plan the n weights w (their lead, cols, n_expert and layer set) into
 * passes whose Hessians fit *max_mem bytes: sets each w[i].pass, returns
 * the pass count (0 for n 0). With `grow` (the default bound) a weight
 * whose H alone is larger raises *max_mem to its size; without, that is an
 * error. A weight planned into a later pass than its lead (a weight
 * between them went there: phi2's ffn_up reads attn_qkv's input, with
 * attn_output between) is collected with its lead when `share` (its record
 * is the lead's); without, it gets an H of its own (lead = i) and the plan
 * is made again, so that the records keep first-use order whatever the
 * pass count. Returns -1 with one line in err (n bytes): "--max-memory: B
 * bytes cannot hold the Hessian of W (S bytes)". */
int wp_hessplan_make(wp_hessplan_weight *w, int n, uint64_t *max_mem, int grow, int share, char *err, size_t errlen);

/* The default --max-memory, in bytes: what the machine's memory (mem
 * bytes) leaves beside the model's weights (model_bytes: the forward pass
 * reads them all for every batch, so they stay in the page cache) and an
 * eighth of mem for the rest (the context, activations), at most half of
 * mem. A 7B F16 model (13.5 GB) on 24 GiB: 8.4 GiB. 0 when the weights alone
 * leave nothing (wp_hessplan_make with grow then takes one weight a pass). */
uint64_t wp_hessplan_default_memory(uint64_t mem, uint64_t model_bytes);

#ifdef __cplusplus
}
#endif
#endif
