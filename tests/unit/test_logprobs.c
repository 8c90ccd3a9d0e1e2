/* test_logprobs.c - lib/logprobs.c: llama-perplexity's log-probability rows
 * and file sizes, the nll and KL divergence of a row, and the mean and its
 * uncertainty, against values worked out by hand. */
#include <math.h>
#include <string.h>

#include "logprobs.h"
#include "tap.h"

int main(void)
{
    CHECK(wp_logprob_row_len(5) == 10 && wp_logprob_row_len(6) == 10 && wp_logprob_row_len(32000) == 32004,
          "a row: the vocabulary rounded up to even, plus 4");
    CHECK(wp_logprob_file_bytes(8, 5, 2) == 20 + 4 * 16 + 2 * 3 * 10 * 2,
          "ctx 8, 5 tokens, 2 chunks: header, 16 tokens, 2 x 3 scored rows of 10 u16");
    CHECK(wp_logprob_head_problem(512, 32000, 4) == NULL && wp_logprob_head_problem(3, 5, 1) &&
              wp_logprob_head_problem(8, 0, 1) && wp_logprob_head_problem(8, 5, 0) &&
              wp_logprob_head_problem(1u << 20, 5, 4096) &&
              !strcmp(wp_logprob_head_problem(3, 5, 1), "implausible header (ctx, vocabulary size or chunk count)"),
          "a header: ctx 4 to 2^20, a vocabulary and a chunk at least, ctx x chunks an int32");

    /* logits 1, 0, -1, -2, -20: the floor is max - 16 = -15, so -20 is code 0 and 1 is 65535 */
    const float lg[5] = {1.0f, 0.0f, -1.0f, -2.0f, -20.0f};
    uint16_t row[10];
    memset(row, 0xff, sizeof row);
    const double nll_q = wp_logprob_quantize(lg, 5, 1, row);
    double sum = 0;
    for (int i = 0; i < 5; i++)
        sum += exp(lg[i] - 1.0);
    const double nll = 1.0 + log(sum) - 0.0;   /* of token 1 */
    float hdr[2];
    memcpy(hdr, row, sizeof hdr);
    CHECK(fabs(nll_q - nll) < 1e-5 && fabs(wp_logprob_nll(lg, 5, 1) - nll) < 1e-6,
          "the nll of token 1: %.6f and %.6f, by hand %.6f", nll_q, wp_logprob_nll(lg, 5, 1), nll);
    CHECK(fabsf(hdr[0] - 16.0f / 65535.0f) < 1e-12f && fabsf(hdr[1] - (float)(-16.0 - log(sum))) < 1e-5f &&
              row[4] == 65535 && row[8] == 0 && row[9] == 0 && row[5] == (uint16_t)lrint(15.0 * 65535.0 / 16.0),
          "scale 16/65535, min_log_prob -16 - log sum; codes 65535 for the max, 0 below the floor, 0 padding");
    CHECK(wp_logprob_row_ok(row), "the row's header passes");

    /* the model against its own stored row: KL about 0, the same top token */
    struct wp_kld_sums s;
    memset(&s, 0, sizeof s);
    wp_logprob_kld(lg, 5, row, 1, &s);
    CHECK(s.count == 1 && s.same_top == 1 && fabs(s.kld) < 1e-4 && fabs(s.nll - nll) < 1e-5 &&
              fabs(s.nll_base - nll) < 1e-3,
          "a row against itself: KLD %.2e, nll %.5f, base nll %.5f", s.kld, s.nll, s.nll_base);
    /* against a uniform base: KL(u || p) = sum 1/5 (log 1/5 - log p_i), the last token under the floor not counted */
    const float flat[5] = {0, 0, 0, 0, 0};
    uint16_t urow[10];
    wp_logprob_quantize(flat, 5, 0, urow);
    memset(&s, 0, sizeof s);
    wp_logprob_kld(lg, 5, urow, 0, &s);
    double kl = 0;
    for (int i = 0; i < 5; i++)
        kl += 0.2 * (log(0.2) - (lg[i] - 1.0 - log(sum)));
    const double p0 = exp(-log(sum));   /* the model's probability of token 0, the base's 1/5 */
    CHECK(fabs(s.kld - kl) < 1e-4 && s.same_top == 1 && fabs(s.max_p_diff - fabs(p0 - 0.2)) < 1e-4,
          "against a uniform base: KLD %.6f, by hand %.6f; p difference %.5f", s.kld, kl, s.max_p_diff);

    /* a forged row header */
    memcpy(urow, (float[2]){1e-4f, NAN}, 8);
    CHECK(!wp_logprob_row_ok(urow), "min_log_prob NaN: refused");
    memcpy(urow, (float[2]){-1e-4f, -1.0f}, 8);
    CHECK(!wp_logprob_row_ok(urow), "a negative scale: refused");
    memcpy(urow, (float[2]){1e-4f, 1.0f}, 8);
    CHECK(!wp_logprob_row_ok(urow), "min_log_prob above 0: refused");

    double m, u;
    wp_logprob_mean(10, 30, 5, &m, &u);
    CHECK(m == 2 && u == 0, "5 values: the mean, no uncertainty (llama-perplexity gives none to 10 or fewer)");
    /* 0, 1, ..., 10: mean 5, sum of squares 385, variance 385/11 - 25 = 10, uncertainty sqrt(10/10) = 1 */
    wp_logprob_mean(55, 385, 11, &m, &u);
    CHECK(m == 5 && fabs(u - 1.0) < 1e-12, "11 values 0..10: mean 5, uncertainty %.6f", u);
    wp_logprob_mean(0, 0, 0, &m, &u);
    CHECK(m == 0 && u == 0, "no value: 0 and 0");
    /* a = b = 0..9: covariance of the means = var / (n - 1) = (285/10 - 4.5^2) / 9 */
    CHECK(fabs(wp_logprob_covariance(45, 45, 285, 10) - (28.5 - 20.25) / 9) < 1e-12 &&
              wp_logprob_covariance(45, 45, 285, 9) == 0,
          "the covariance of the means; 0 below 10 values");
    return tap_done();
}
