/* test_gptq_consume.c - GPTQ working in the caller's W and H (opts.consume)
 * gives the same blocks as with copies, and an indefinite Hessian leaves
 * both as they were. */
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
        free(a);
        free(b);
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
    free(W), free(W2), free(H), free(H2), free(X), free(d);
    return tap_done();
}
