/*
 * logprobs.h - llama-perplexity's scoring of logits, and its log-probability
 * file (its --kl-divergence-base), as ppl(1) writes and reads them.
 *
 * The file (host byte order, little-endian; ppl(1), "Log-probability file"):
 *   8 bytes   "_logits_"
 *   u32       ctx, tokens a chunk
 *   i32       n_vocab
 *   i32       n_chunk
 *   i32       tokens[n_chunk x ctx], the text's tokens as tokenized
 *   then for each chunk, for each scored position (ctx/2 .. ctx-2: ctx - 1 -
 *   ctx/2 rows), one row of wp_logprob_row_len(n_vocab) u16: float scale,
 *   float min_log_prob (2 x 2 u16), then for each token's logit l_i the code
 *   round((l_i - lmin) / scale) (0 at or below lmin), with lmin = max(min l,
 *   max l - 16) and scale = (max l - lmin) / 65535, and one 0 when n_vocab is
 *   odd; the token's log-probability is scale q_i + min_log_prob.
 * Source: llama.cpp tools/perplexity/perplexity.cpp (kl_divergence,
 * log_softmax, mean_and_uncertainty) of the pinned llama.cpp; the sums in
 * the same precision, so reports agree with llama-perplexity's to its digits.
 */
#ifndef WPACK_LOGPROBS_H
#define WPACK_LOGPROBS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WP_LOGPROB_MAGIC "_logits_"
#define WP_LOGPROB_HEAD_BYTES 20u   /* magic, ctx, n_vocab, n_chunk */

/* u16 a row of n_vocab log-probabilities: the vocabulary rounded up to even,
 * plus the 4 of scale and min_log_prob. */
static inline int64_t wp_logprob_row_len(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }

/* Why a header's ctx, n_vocab and n_chunk are no file's ("implausible header
 * (ctx, vocabulary size or chunk count)": ctx 4 to 2^20, n_vocab and n_chunk
 * at least 1, ctx x n_chunk tokens an int32), or NULL when they pass. */
const char *wp_logprob_head_problem(uint32_t ctx, int32_t n_vocab, int32_t n_chunk);

/* The bytes of the file a header of ctx, n_vocab and n_chunk (which pass)
 * describes: the header, the tokens and every chunk's rows. */
uint64_t wp_logprob_file_bytes(uint32_t ctx, int32_t n_vocab, int32_t n_chunk);

/* Whether a stored row's header is one wp_logprob_quantize writes: scale
 * from 0 to 1e-3 (at most 16/65535 from the -16 floor) and min_log_prob at
 * most 0, both finite (a forged NaN or 1e30 gave a PPL of -nan). */
int wp_logprob_row_ok(const uint16_t *row);

/* Negative log-likelihood (nats) of token tok under the softmax of the
 * n_vocab logits lg: max + log(sum exp(l - max)) - l[tok], float
 * exponentials summed in double (llama-perplexity's log_softmax(n_vocab,
 * logits, tok)). */
double wp_logprob_nll(const float *lg, int n_vocab, int tok);

/* The n_vocab logits lg as a stored row (wp_logprob_row_len(n_vocab) u16 at
 * out, the format above: lmin = max(min l, max l - 16), scale = (max l -
 * lmin) / 65535), llama-perplexity's log_softmax(n_vocab, logits, log_prob,
 * tok). Returns the nll of tok (nats), computed in float as it is there. */
double wp_logprob_quantize(const float *lg, int n_vocab, int tok, uint16_t *out);

/* Running sums of the KL-divergence mode (llama-perplexity's
 * kl_divergence_result; nll and KLD in nats, p in [0, 1]). Zero them first. */
struct wp_kld_sums {
    double nll, nll2, nll_base, nll_base2, nll_nll_base, kld, kld2;
    double p_diff, p_diff2, p_diff4;
    float max_p_diff;
    size_t same_top, count;
};

/* Score the n_vocab logits lg against the stored base row `base` (one that
 * passes wp_logprob_row_ok: its scale and min_log_prob are used unchecked) for next
 * token tok, adding to *s: the nll of model and base, KL(base || model) =
 * sum_i p_base,i (log p_base,i - log p_i) over the tokens with log p_base,i >
 * -16, whether the argmaxes agree, tok's probability difference
 * (llama-perplexity's log_softmax(n_vocab, logits, base_log_prob, tok, kld)). */
void wp_logprob_kld(const float *lg, int n_vocab, const uint16_t *base, int tok, struct wp_kld_sums *s);

/* The mean of count values from their sum and sum of squares, and the
 * standard error of that mean (0 for count <= 10); both 0 for no value
 * (llama-perplexity's mean_and_uncertainty). */
void wp_logprob_mean(double sum, double sum2, size_t count, double *mean, double *unc);

/* The covariance of the means of a and b from their sums and the sum of
 * their products (0 for count < 10; llama-perplexity's covariance lambda). */
double wp_logprob_covariance(double sa, double sb, double sab, size_t count);

#ifdef __cplusplus
}
#endif
#endif
