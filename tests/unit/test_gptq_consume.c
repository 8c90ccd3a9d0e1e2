/* test_gptq_consume.c - GPTQ working in the caller's W and H (opts.consume)
 * gives the same blocks as with copies, and an indefinite Hessian leaves
 * both as they were; a Hessian's factor made once (wp_gptq_factor_make,
 * _take) gives, for several matrices and types, the blocks of
 * wp_gptq_quantize, and keeps a not-positive-definite outcome. */
#include <stdlib.h>
#include <string.h>

#include "ggml_type.h"
#include "gptq.h"
#include "tap.h"

static uint64_t rng = 0x853c49e6748fea9bull;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((rng >> 11) + 0.5) / 9007199254740992.0;
}

int main(void)
{
    const int64_t rows = 16, cols = 256, toks = 512;
    static const int types[] = {WP_Q4_K, WP_Q8_0, WP_IQ4_XS};
    float *W = malloc(sizeof(float) * rows * cols), *W2 = malloc(sizeof(float) * rows * cols);
    double *H = calloc((size_t)(cols * cols), sizeof *H), *H2 = malloc(sizeof(double) * cols * cols);
    double *X = malloc(sizeof(double) * toks * cols);
    for (int64_t i = 0; i < rows * cols; i++)
        W[i] = (float)((urand() - 0.5) * 0.1);
    for (int64_t t = 0; t < toks; t++) {     /* correlated activations */
        double base = urand() - 0.5;
        for (int64_t c = 0; c < cols; c++)
            X[t * cols + c] = 0.7 * base + (urand() - 0.5);
    }
    for (int64_t t = 0; t < toks; t++)
        for (int64_t i = 0; i < cols; i++)
            for (int64_t j = 0; j < cols; j++)
                H[i * cols + j] += X[t * cols + i] * X[t * cols + j];
    char err[256];
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        int type = types[k];
        size_t bytes = (size_t)rows * wp_ggml_row_size((uint32_t)type, cols);
        uint8_t *a = malloc(bytes), *b = malloc(bytes);
        wp_gptq_opts o;
        wp_gptq_opts_default(&o);
        int ra = wp_gptq_quantize(type, W, rows, cols, H, NULL, &o, a, NULL, err, sizeof err);
        memcpy(W2, W, sizeof(float) * rows * cols);
        memcpy(H2, H, sizeof(double) * cols * cols);
        o.consume = 1;
        int rb = wp_gptq_quantize(type, W2, rows, cols, H2, NULL, &o, b, NULL, err, sizeof err);
        CHECK(ra == 0 && rb == 0 && !memcmp(a, b, bytes), "%s: consume gives the same blocks as copies",
              wp_ggml_type_name((uint32_t)type));
        /* ... worked in the caller's buffers: a library that copied anyway passed the check
           above (a reviewer's find) */
        CHECK(memcmp(W2, W, sizeof(float) * rows * cols) && memcmp(H2, H, sizeof(double) * cols * cols),
              "%s: consume worked in the caller's W and H", wp_ggml_type_name((uint32_t)type));
        free(a);
        free(b);
    }
    /* one factor, several matrices and types: wp_gptq_quantize's blocks,
     * with and without act-order, made from a copy, in H (consume) or taking
     * H over; a dead column (zero row and column 3) zeroed in each matrix */
    for (int64_t i = 0; i < cols; i++)
        H[3 * cols + i] = H[i * cols + 3] = 0;
    for (int act = 0; act < 2; act++)
        for (int how = 0; how < 3; how++) {
            wp_gptq_opts o;
            wp_gptq_opts_default(&o);
            o.act_order = act;
            o.consume = how == 1;
            double *Hc = malloc(sizeof(double) * cols * cols);
            memcpy(Hc, H, sizeof(double) * cols * cols);
            wp_gptq_factor *f = NULL;
            int rf = how == 2 ? wp_gptq_factor_take(Hc, cols, &o, &f, err, sizeof err)
                              : wp_gptq_factor_make(Hc, cols, &o, &f, err, sizeof err);
            CHECK(rf == 0 && f && wp_gptq_factor_cols(f) == cols, "act %d how %d: factor made (%s)", act, how,
                  rf ? err : "");
            if (how == 1)   /* consume: the factor in H's own buffer without act-order, a copy with it */
                CHECK((memcmp(Hc, H, sizeof(double) * cols * cols) == 0) == act,
                      "act %d: consume makes the factor %s", act, act ? "in a copy" : "in H's own buffer");
            int same = 1;
            for (size_t k = 0; k < sizeof types / sizeof *types; k++)
                for (int m = 0; m < 2; m++) {
                    const int type = types[k];
                    size_t bytes = (size_t)rows * wp_ggml_row_size((uint32_t)type, cols);
                    uint8_t *a = malloc(bytes), *b = malloc(bytes);
                    for (int64_t i = 0; i < rows * cols; i++)     /* matrix m: W, or W reversed */
                        W2[i] = m ? W[rows * cols - 1 - i] : W[i];
                    wp_gptq_info ia, ib;
                    o.consume = 0;
                    int ra = wp_gptq_quantize(type, W2, rows, cols, H, NULL, &o, a, &ia, err, sizeof err);
                    int rb = wp_gptq_quantize_factored(type, W2, rows, cols, f, NULL, &o, b, &ib, err, sizeof err);
                    same &= ra == 0 && rb == 0 && !memcmp(a, b, bytes) && ia.dead_cols == 1 && ib.dead_cols == 1 &&
                            ia.loss == ib.loss && ia.tries == ib.tries;
                    free(a);
                    free(b);
                }
            CHECK(same, "act %d how %d: one factor, 2 matrices x 3 types: wp_gptq_quantize's blocks", act, how);
            o.act_order = !act;
            uint8_t *d = malloc((size_t)rows * wp_ggml_row_size(WP_Q8_0, cols));
            CHECK(wp_gptq_quantize_factored(WP_Q8_0, W, rows, cols, f, NULL, &o, d, NULL, err, sizeof err) == -1,
                  "act %d how %d: options asking the other act-order are refused (%s)", act, how, err);
            free(d);
            wp_gptq_factor_free(f);
            if (how != 2)
                free(Hc);
        }
    /* an indefinite Hessian: every damping fails; W and H come back intact */
    /* one hugely negative diagonal entry: even 100 x mean|diag| of damping
     * leaves it negative */
    for (int64_t i = 0; i < cols; i++)
        for (int64_t j = 0; j < cols; j++)
            H2[i * cols + j] = i == j ? 1.0 : 0.001;
    H2[0] = -1e9;
    memcpy(X, H2, sizeof(double) * cols * cols);   /* reuse X as the original H */
    memcpy(W2, W, sizeof(float) * rows * cols);
    uint8_t *d = malloc((size_t)rows * wp_ggml_row_size(WP_Q4_K, cols));
    wp_gptq_opts o;
    wp_gptq_opts_default(&o);
    o.consume = 1;
    int r = wp_gptq_quantize(WP_Q4_K, W2, rows, cols, H2, NULL, &o, d, NULL, err, sizeof err);
    CHECK(r == WP_GPTQ_NOT_PD, "an indefinite Hessian is refused (%d)", r);
    CHECK(!memcmp(X, H2, sizeof(double) * cols * cols), "the caller's H comes back unchanged");
    CHECK(!memcmp(W, W2, sizeof(float) * rows * cols), "the caller's W comes back unchanged");
    /* ... and as a factor: kept as the outcome, for every matrix given it */
    for (int how = 0; how < 2; how++) {
        double *Hc = malloc(sizeof(double) * cols * cols);
        memcpy(Hc, X, sizeof(double) * cols * cols);
        wp_gptq_factor *f = NULL;
        o.consume = 0;
        int rf = how ? wp_gptq_factor_take(Hc, cols, &o, &f, err, sizeof err)
                     : wp_gptq_factor_make(Hc, cols, &o, &f, err, sizeof err);
        CHECK(rf == WP_GPTQ_NOT_PD && f, "how %d: an indefinite Hessian's factor records it", how);
        for (int m = 0; m < 2; m++) {
            wp_gptq_info info = {0};
            int q = wp_gptq_quantize_factored(m ? WP_Q8_0 : WP_Q4_K, W2, rows, cols, f, NULL, &o, d, &info, err,
                                              sizeof err);
            CHECK(q == WP_GPTQ_NOT_PD && info.tries == 5 && info.damp_used > 99 && info.damp_used < 101,
                  "how %d, matrix %d: WP_GPTQ_NOT_PD, 5 tries, damping 100 (%d %d %g)", how, m, q, info.tries,
                  info.damp_used);
        }
        wp_gptq_factor_free(f);
        if (!how)
            free(Hc);
    }
    /* bad arguments are -1 with a message, not a crash: no weights, no
     * destination (a new user's trial: both segfaulted), a negative row count */
    {
        wp_gptq_factor *f = NULL;
        wp_gptq_opts_default(&o);
        CHECK(wp_gptq_factor_make(H, cols, &o, &f, err, sizeof err) == 0, "a factor for the argument checks");
        for (int fac = 0; fac < 2; fac++) {
            err[0] = 0;
            int q = fac ? wp_gptq_quantize_factored(WP_Q4_K, NULL, rows, cols, f, NULL, &o, d, NULL, err, sizeof err)
                        : wp_gptq_quantize(WP_Q4_K, NULL, rows, cols, H, NULL, &o, d, NULL, err, sizeof err);
            CHECK(q == -1 && !strcmp(err, "bad arguments (no weights)"), "factored %d: W NULL is -1 (%d, %s)", fac, q,
                  err);
            err[0] = 0;
            q = fac ? wp_gptq_quantize_factored(WP_Q4_K, W, rows, cols, f, NULL, &o, NULL, NULL, err, sizeof err)
                    : wp_gptq_quantize(WP_Q4_K, W, rows, cols, H, NULL, &o, NULL, NULL, err, sizeof err);
            CHECK(q == -1 && !strcmp(err, "bad arguments (no destination)"), "factored %d: dst NULL is -1 (%d, %s)",
                  fac, q, err);
            err[0] = 0;
            q = fac ? wp_gptq_quantize_factored(WP_Q4_K, W, -1, cols, f, NULL, &o, d, NULL, err, sizeof err)
                    : wp_gptq_quantize(WP_Q4_K, W, -1, cols, H, NULL, &o, d, NULL, err, sizeof err);
            CHECK(q == -1 && strstr(err, "rows"), "factored %d: rows -1 is -1 and says rows (%d, %s)", fac, q, err);
        }
        /* options the factor reads: a negative retries made no try and reported
           NOT_PD with a damping never tried; a negative damp was "widen must be >= 1" */
        wp_gptq_opts bo = o;
        bo.retries = -1;
        wp_gptq_factor *g = NULL;
        CHECK(wp_gptq_quantize(WP_Q4_K, W, rows, cols, H, NULL, &bo, d, NULL, err, sizeof err) == -1 &&
                  strstr(err, "retries -1"), "retries -1 is -1, bad options (%s)", err);
        CHECK(wp_gptq_factor_make(H, cols, &bo, &g, err, sizeof err) == -1 && !g && strstr(err, "retries -1"),
              "factor_make: retries -1 is -1 (%s)", err);
        bo = o;
        bo.damp = -1;
        CHECK(wp_gptq_factor_make(H, cols, &bo, &g, err, sizeof err) == -1 && strstr(err, "bad options (damp -1"),
              "factor_make: damp -1 names damp (%s)", err);
        CHECK(wp_gptq_factor_make(NULL, cols, &o, &g, err, sizeof err) == -1 &&
                  !strcmp(err, "bad arguments (no Hessian)"), "factor_make: H NULL (%s)", err);
        CHECK(wp_gptq_quantize(WP_Q4_K, NULL, 0, cols, NULL, NULL, &o, NULL, NULL, err, sizeof err) == 0,
              "no rows: nothing to read or write, NULL W and dst allowed");
        wp_gptq_factor_free(f);
    }
    free(W), free(W2), free(H), free(H2), free(X), free(d);
    return tap_done();
}
