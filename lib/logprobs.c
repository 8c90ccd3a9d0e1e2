/* logprobs.c - llama-perplexity's scoring and log-probability file (see logprobs.h). */
#include "logprobs.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

const char *wp_logprob_head_problem(uint32_t ctx, int32_t n_vocab, int32_t n_chunk)
{
    if (ctx < 4 || ctx > (1u << 20) || n_vocab < 1 || n_chunk < 1 || (uint64_t)ctx * (uint64_t)n_chunk > INT32_MAX)
        return "implausible header (ctx, vocabulary size or chunk count)";
    return NULL;
}

uint64_t wp_logprob_file_bytes(uint32_t ctx, int32_t n_vocab, int32_t n_chunk)
{
    const uint64_t nv = (uint64_t)wp_logprob_row_len(n_vocab);
    return WP_LOGPROB_HEAD_BYTES + 4 * (uint64_t)ctx * (uint64_t)n_chunk +
           (uint64_t)n_chunk * (ctx - 1 - ctx / 2) * nv * 2;
}

int wp_logprob_row_ok(const uint16_t *row)
{
    float hdr[2];
    memcpy(hdr, row, sizeof hdr);
    return hdr[0] >= 0 && hdr[0] <= 1e-3f && hdr[1] <= 0 && isfinite(hdr[1]);
}

/* Round to the nearest integer, ties to even, as llama-perplexity's
 * nearest_int (valid for |x| < 2^22; inputs here are 0..65535). */
static int nearest_int(float x)
{
    return (int)lrintf(x);
}

double wp_logprob_nll(const float *lg, int n_vocab, int tok)
{
    float mx = lg[0];
    for (int i = 1; i < n_vocab; i++)
        mx = lg[i] > mx ? lg[i] : mx;
    double sum = 0;
    for (int i = 0; i < n_vocab; i++)
        sum += expf(lg[i] - mx);
    return -((double)(lg[tok] - mx) - log(sum));
}

double wp_logprob_quantize(const float *lg, int n_vocab, int tok, uint16_t *out)
{
    const int64_t nv = wp_logprob_row_len(n_vocab);
    float mx = lg[0], mn = lg[0];
    for (int i = 1; i < n_vocab; i++) {
        mx = lg[i] > mx ? lg[i] : mx;
        mn = lg[i] < mn ? lg[i] : mn;
    }
    mn = mn > mx - 16 ? mn : mx - 16;
    double sum = 0;
    for (int i = 0; i < n_vocab; i++)
        sum += expf(lg[i] - mx);
    const float lse = (float)log(sum);
    const float min_log_prob = mn - mx - lse;
    const float scale = (mx - mn) / 65535.f;
    float hdr[2] = {scale, min_log_prob};
    memcpy(out, hdr, sizeof hdr);
    uint16_t *q = out + 4;
    memset(q, 0, (size_t)(nv - 4) * sizeof *q);
    if (scale) {
        const float inv = 1 / scale;
        for (int i = 0; i < n_vocab; i++)
            q[i] = lg[i] > mn ? (uint16_t)nearest_int(inv * (lg[i] - mn)) : 0;
    }
    return mx + lse - lg[tok];
}

void wp_logprob_kld(const float *lg, int n_vocab, const uint16_t *base, int tok, struct wp_kld_sums *s)
{
    float mx = lg[0];
    int imax = 0;
    for (int i = 1; i < n_vocab; i++)
        if (lg[i] > mx) {
            mx = lg[i];
            imax = i;
        }
    double sum_exp = 0;
    for (int i = 0; i < n_vocab; i++)
        sum_exp += expf(lg[i] - mx);
    const float lse = (float)log(sum_exp);
    float hdr[2];
    memcpy(hdr, base, sizeof hdr);
    const float scale = hdr[0], min_log_prob = hdr[1];
    const uint16_t *q = base + 4;

    const float nll = mx + lse - lg[tok];
    s->nll += nll;
    s->nll2 += nll * nll;
    const float nll_base = -(scale * q[tok] + min_log_prob);
    s->nll_base += nll_base;
    s->nll_base2 += nll_base * nll_base;
    s->nll_nll_base += nll * nll_base;

    mx += lse;
    double kl = 0;
    int imax_base = -1;
    float lp_base_max = 0;
    for (int i = 0; i < n_vocab; i++) {
        const float lpb = scale * q[i] + min_log_prob;
        if (i == 0 || lpb > lp_base_max) {
            lp_base_max = lpb;
            imax_base = i;
        }
        if (lpb > -16.f)
            kl += expf(lpb) * (lpb - lg[i] + mx);
    }
    s->kld += kl;
    s->kld2 += kl * kl;
    s->count++;
    s->same_top += imax == imax_base;

    const float p_diff = expf(-nll) - expf(-nll_base);
    s->p_diff += p_diff;
    const double d2 = (double)p_diff * p_diff;
    s->p_diff2 += d2;
    s->p_diff4 += d2 * d2;
    if (fabsf(p_diff) > s->max_p_diff)
        s->max_p_diff = fabsf(p_diff);
}

void wp_logprob_mean(double sum, double sum2, size_t count, double *mean, double *unc)
{
    if (count < 1) {
        *mean = *unc = 0;
        return;
    }
    double f = sum / count, df = sum2 / count - f * f;
    *mean = f;
    *unc = df > 0 && count > 10 ? sqrt(df / (count - 1)) : 0.;
}

double wp_logprob_covariance(double sa, double sb, double sab, size_t count)
{
    if (count < 10)
        return 0;
    return (sab / count - (sa / count) * (sb / count)) / (count - 1);
}

