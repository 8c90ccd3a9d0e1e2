/* gptq.c - GPTQ with llama.cpp's block formats and the LazyWeights options
 * (see gptq.h). The algorithm follows Frantar et al. 2022, Algorithm 1, and
 * the structure of its reference gptq.py (fasterquant); scale choice and
 * rounding come from lib/rtn.c (llama.cpp's), block layouts from
 * lib/block_layout.h (through lib/blocks.c). */
#include "gptq.h"

#include "blas_room.h"
#include "blocks.h"
#include "ggml_type.h"
#include "half.h"
#include "huffman.h"
#include "par.h"
#include "quant_search.h"
#include "rtn.h"

#include <cblas.h>
#include <lapacke.h>

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- type parameters ----------------------------------------------------- */

enum { K_SYM, K_IQ4, K_MIN32, K_KMIN };

typedef struct {
    int type, n, nsub, sub_n, ncode;
    int kind;
    float nneg;    /* symmetric: |most negative code value| in steps */
    int S;         /* K-quants: largest sub-block scale (γ uses it) */
    int M;         /* K-quants with mins: largest sub-block min */
    int nmax;      /* types with mins: largest code */
} tparams;

static int tparams_get(int type, tparams *t)
{
    wp_block_info bi;
    if (!wp_gptq_supported(type) || wp_block_info_get(type, &bi))
        return -1;
    memset(t, 0, sizeof *t);
    t->type = type;
    t->n = bi.n;
    t->nsub = bi.nsub;
    t->sub_n = bi.sub_n;
    t->ncode = 1 << bi.code_bits;
    switch (type) {
    case WP_Q4_0: t->kind = K_SYM; t->nneg = 8; break;
    case WP_Q5_0: t->kind = K_SYM; t->nneg = 16; break;
    case WP_Q8_0: t->kind = K_SYM; t->nneg = 127; break;   /* d = amax/127, see below */
    case WP_Q3_K: t->kind = K_SYM; t->nneg = 4; t->S = 31; break;
    case WP_Q6_K: t->kind = K_SYM; t->nneg = 32; t->S = 127; break;
    case WP_IQ4_NL: t->kind = K_IQ4; t->nneg = 127; break;
    case WP_IQ4_XS: t->kind = K_IQ4; t->nneg = 127; t->S = 31; break;
    case WP_Q4_1: t->kind = K_MIN32; t->nmax = 15; break;
    case WP_Q5_1: t->kind = K_MIN32; t->nmax = 31; break;
    case WP_Q2_K: t->kind = K_KMIN; t->nmax = 3; t->S = 15; t->M = 15; break;
    case WP_Q4_K: t->kind = K_KMIN; t->nmax = 15; t->S = 63; t->M = 63; break;
    case WP_Q5_K: t->kind = K_KMIN; t->nmax = 31; t->S = 63; t->M = 63; break;
    default: return -1;
    }
    return 0;
}

int wp_gptq_supported(int type) { return wp_block_supported(type); }   /* every block type */

void wp_gptq_opts_default(wp_gptq_opts *o)
{
    memset(o, 0, sizeof *o);
    o->damp = 0.01;
    o->retries = 4;
    o->widen = 1.0;
    o->block_cols = 128;
    o->threads = 1;
}

/* ---- one block's scales and how to code a weight under them -------------- */

typedef struct {
    wp_rtn_scales s;          /* s.p: side data and codes; rule for the exact mode */
    float v0[16], st[16];     /* value(q) ≈ v0 + st·t(q), t(q) = q or kvalues[q] */
    float lo[16], hi[16];     /* smallest / largest representable value */
    uint8_t flat[16];         /* 1: every code gives the same value */
} gstate;

/* A scale as fp16, rounded to nearest. Beyond fp16's range it is +-Inf, not
 * clamped to 65504: wp_gptq_check_blocks then fails the matrix ("does not
 * fit fp16") as RTN does, where a clamped scale gave a model llama.cpp
 * scores PPL nan (a new user's trial: one weight of 1e8, --widen 1.01). */
static uint16_t f16c(double v)
{
    if (!(v == v))
        v = 0;
    return wp_f32_to_fp16((float)v);
}

static float code_value(const tparams *t, gstate *g, int i, int q)
{
    g->s.p.q[i] = (uint8_t)q;
    return wp_parts_value(t->type, &g->s.p, i);
}

/* Fill v0/st/lo/hi/flat from the side data in g->s.p. */
static void prep(const tparams *t, gstate *g)
{
    for (int s = 0; s < t->nsub; s++) {
        const int i = s * t->sub_n;
        const uint8_t keep = g->s.p.q[i];
        float a, b;
        const float vfirst = code_value(t, g, i, 0), vlast = code_value(t, g, i, t->ncode - 1);
        if (t->kind == K_IQ4) {
            a = (vlast - vfirst) / 240.f;
            b = vfirst + 127.f * a;
        } else {
            const float v1 = code_value(t, g, i, 1);
            a = v1 - vfirst;
            b = vfirst;
        }
        g->s.p.q[i] = keep;
        g->v0[s] = b;
        g->st[s] = a;
        g->lo[s] = vfirst < vlast ? vfirst : vlast;
        g->hi[s] = vfirst < vlast ? vlast : vfirst;
        g->flat[s] = !(a != 0 && isfinite(a) && isfinite(b));
    }
}

/* Nearest code index to the ideal position (before exact checks). */
static int approx_code(const tparams *t, const gstate *g, int s, float x)
{
    if (t->kind == K_IQ4)
        return wp_best_index_int8(16, wp_kvalues_iq4nl, (x - g->v0[s]) / g->st[s]);
    float f = (x - g->v0[s]) / g->st[s];
    if (!(f > -1e6f)) f = -1e6f;
    if (f > 1e6f) f = 1e6f;
    int k = (int)lrintf(f);
    return k < 0 ? 0 : k >= t->ncode ? t->ncode - 1 : k;
}

/* The rate of the code choice with λ > 0: a code costs -log2 of its count so
 * far (+1). The rows are counted in chunks of RC_ROWS: in a lazy batch each
 * chunk codes its rows in order against the matrix's counts before the batch
 * plus its own codes in the batch, and the chunks' codes join the matrix's
 * counts after the batch. Chunks run on any thread; as they depend on the
 * row count alone, the bytes do not depend on the thread count. */
enum { RC_ROWS = 64, RC_CODES = 256 };
typedef struct {
    double lambda;
    int64_t rows, nchunk;
    int64_t cnt[RC_CODES];   /* the matrix's counts before this batch */
    int64_t *chunk;          /* nchunk × RC_CODES: a chunk's counts in this batch */
} ratectl;

/* Code choice of the LazyWeights modes: nearest, or with cnt (λ > 0: the
 * row's chunk's counts) rate-distortion. */
static int pick(const tparams *t, gstate *g, int i, float x, double wdist, double lambda, const int64_t *cnt,
                float *v)
{
    const int s = i / t->sub_n;
    int best = 0;
    if (g->flat[s]) {
        best = t->ncode / 2;
        if (cnt)
            for (int q = 0; q < t->ncode; q++)
                if (cnt[q] > cnt[best])
                    best = q;
        *v = code_value(t, g, i, best);
        return best;
    }
    const int k = approx_code(t, g, s, x);
    const int R = cnt ? 2 : 1;
    const double step = t->kind == K_IQ4 ? fabs(g->st[s]) * 16.0 : fabs(g->st[s]);
    double bestc = INFINITY;
    float bestv = 0;
    for (int q = k - R; q <= k + R; q++) {
        if (q < 0 || q >= t->ncode)
            continue;
        const float vq = code_value(t, g, i, q);
        double e = ((double)x - vq) / step, c = e * e * wdist;
        if (cnt)
            c -= lambda * log2((double)cnt[q] + 1);
        if (c < bestc) {
            bestc = c;
            best = q;
            bestv = vq;
        }
    }
    g->s.p.q[i] = (uint8_t)best;
    *v = bestv;
    return best;
}

/* Exact mode: llama.cpp's rounding rule (wp_rtn_code). Weights pushed far
 * outside the representable range by error feedback are first brought back
 * to one step beyond it (same code, no integer wrap-around). */
static int code_exact(const tparams *t, gstate *g, int i, float x, float *v)
{
    const int s = i / t->sub_n;
    if (!g->flat[s]) {
        const float m = t->kind == K_IQ4 ? fabsf(g->st[s]) * 127 : fabsf(g->st[s]);
        if (x < g->lo[s] - m) x = g->lo[s] - m;
        if (x > g->hi[s] + m) x = g->hi[s] + m;
    }
    const int q = wp_rtn_code(&g->s, i, x);
    *v = code_value(t, g, i, q);
    return q;
}

/* ---- scale choice -------------------------------------------------------- */

/* Side data of a symmetric block for a signed step delta (all sub-blocks). */
static void set_sym(const tparams *t, gstate *g, double delta)
{
    if (t->S) {
        for (int s = 0; s < t->nsub; s++)
            g->s.p.sc[s] = (int16_t)(t->type == WP_Q6_K ? t->S : t->S + 32);
        g->s.p.d = f16c(delta / t->S);
    } else {
        g->s.p.d = f16c(delta);
    }
}

/* Types with mins: put each sub-block's min so that the middle of its range
 * [lo_s, hi_s] falls on the middle code, given the (float) steps. */
static void set_mins(const tparams *t, gstate *g, const float *x, const float *step)
{
    if (t->kind == K_MIN32) {
        float lo = x[0], hi = x[0];
        for (int j = 1; j < 32; j++) {
            lo = x[j] < lo ? x[j] : lo;
            hi = x[j] > hi ? x[j] : hi;
        }
        g->s.p.dmin = f16c(0.5 * ((double)lo + hi) - 0.5 * step[0] * t->nmax);
        return;
    }
    double o[16], omax = 0;
    for (int s = 0; s < t->nsub; s++) {
        float lo = 0, hi = 0;
        for (int j = 0; j < t->sub_n; j++) {
            float v = x[s * t->sub_n + j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        o[s] = 0.5 * step[s] * t->nmax - 0.5 * ((double)lo + hi);
        if (!(o[s] > 0)) o[s] = 0;
        if (o[s] > omax) omax = o[s];
    }
    g->s.p.dmin = f16c(omax / t->M);
    const float dm = wp_fp16_to_f32(g->s.p.dmin);
    for (int s = 0; s < t->nsub; s++) {
        long m = dm > 0 ? lrint(o[s] / dm) : 0;
        g->s.p.mn[s] = (int16_t)(m < 0 ? 0 : m > t->M ? t->M : m);
    }
}

/* The float step of sub-block s as the dequantizer forms it. */
static float sub_step(const tparams *t, const gstate *g, int s)
{
    const float d = wp_fp16_to_f32(g->s.p.d);
    switch (t->type) {
    case WP_Q3_K: case WP_IQ4_XS: return d * (g->s.p.sc[s] - 32);
    case WP_Q6_K: return d * g->s.p.sc[s];
    case WP_Q2_K: case WP_Q4_K: case WP_Q5_K: return d * g->s.p.sc[s];
    default: return d;
    }
}

typedef struct {
    int lazy;        /* γ or c > 1: our scale choice; else llama.cpp's */
    int gamma;
    double widen;
} choosectl;

/* Choose the side data of len weights x (one block, or with γ on a 32-weight
 * type a run of len/32 blocks) into g[0 .. len/n - 1]. */
static void choose(const tparams *t, const choosectl *cc, const float *x, int len,
                   const float *qw, float sigma2, gstate *g)
{
    const int nb = len / t->n;
    for (int b = 0; b < nb; b++) {
        if (cc->gamma) {            /* side data all ours: skip llama.cpp's search */
            memset(&g[b].s, 0, sizeof g[b].s);
            g[b].s.type = t->type;
            g[b].s.p.n = t->n;
        } else {
            wp_rtn_choose(t->type, x + b * t->n, qw ? qw + b * t->n : NULL, sigma2, &g[b].s);
        }
    }
    if (cc->lazy) {
        const double C = cc->widen;
        for (int b = 0; b < nb; b++) {   /* our rule: no llama.cpp rounding state */
            wp_block_parts keep = g[b].s.p;
            memset(&g[b].s, 0, sizeof g[b].s);
            g[b].s.type = t->type;
            g[b].s.p = keep;
        }
        if (cc->gamma) {
            if (t->kind == K_SYM || t->kind == K_IQ4) {
                float amax = 0, mx = 0;
                for (int j = 0; j < len; j++)
                    if (fabsf(x[j]) > amax) {
                        amax = fabsf(x[j]);
                        mx = x[j];
                    }
                const double delta = (t->type == WP_Q8_0 ? amax / 127.0 : mx / -(double)t->nneg) * C;
                for (int b = 0; b < nb; b++)
                    set_sym(t, &g[b], delta);
            } else {
                /* widest (sub-)block range, including 0 for the K types */
                const int sn = t->kind == K_MIN32 ? 32 : t->sub_n;
                double w = 0;
                for (int s = 0; s < len / sn; s++) {
                    float lo = t->kind == K_MIN32 ? x[s * sn] : 0, hi = lo;
                    for (int j = 0; j < sn; j++) {
                        float v = x[s * sn + j];
                        lo = v < lo ? v : lo;
                        hi = v > hi ? v : hi;
                    }
                    if ((double)hi - lo > w) w = (double)hi - lo;
                }
                const double delta = w / t->nmax * C;
                for (int b = 0; b < nb; b++) {
                    float step[16];
                    if (t->kind == K_MIN32) {
                        g[b].s.p.d = f16c(delta);
                    } else {
                        for (int s = 0; s < t->nsub; s++)
                            g[b].s.p.sc[s] = (int16_t)t->S;
                        g[b].s.p.d = f16c(delta / t->S);
                    }
                    for (int s = 0; s < t->nsub; s++)
                        step[s] = sub_step(t, &g[b], s);
                    set_mins(t, &g[b], x + b * t->n, step);
                }
            }
        } else {
            /* c > 1 without γ: llama.cpp's steps, widened; mins recentred */
            for (int b = 0; b < nb; b++) {
                g[b].s.p.d = f16c(wp_fp16_to_f32(g[b].s.p.d) * C);
                if (t->kind == K_MIN32 || t->kind == K_KMIN) {
                    float step[16];
                    for (int s = 0; s < t->nsub; s++)
                        step[s] = sub_step(t, &g[b], s);
                    set_mins(t, &g[b], x + b * t->n, step);
                }
            }
        }
    }
    for (int b = 0; b < nb; b++)
        prep(t, &g[b]);
}

/* ---- Hessian ------------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The n×n doubles at A (row-major) turned end for end: element (i, j) and
 * element (n-1-i, n-1-j) swap places, which makes A into J·A·J (J the
 * exchange matrix) and turns its upper triangle into the lower one. */
static void reverse(double *A, int64_t nn)
{
    for (int64_t i = 0, j = nn - 1; i < j; i++, j--) {
        const double t = A[i];
        A[i] = A[j];
        A[j] = t;
    }
}

/* The upper Cholesky factor U of A⁻¹ (A⁻¹ = UᵀU, positive diagonal) into
 * A's row-major upper triangle, for A symmetric positive definite (n × n,
 * row-major, full). gptq.py takes cholesky, cholesky_inverse and cholesky
 * again (4n³/3 flops); the factor is unique, and this takes one Cholesky
 * and one triangular inverse (2n³/3): J·A·J = ŨᵀŨ (dpotrf) gives A = M·Mᵀ
 * with M = J·Ũᵀ·J upper triangular, so A⁻¹ = M⁻ᵀ·M⁻¹ and U = M⁻¹ (dtrtri).
 * The strict lower triangle keeps A's own entries, also when the Cholesky
 * fails (returns -1; the diagonal and upper triangle are then lost). */
static int inverse_factor(double *A, int64_t n)
{
    reverse(A, n * n);
    /* column-major 'U' is the row-major lower triangle: J·A·J's strict upper
     * one stays, and the reversal puts it back as A's strict lower one */
    const int bad = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)n, A, (lapack_int)n) != 0;
    reverse(A, n * n);
    if (bad)
        return -1;
    /* row-major upper = M; column-major that is Mᵀ, lower: its inverse is (M⁻¹)ᵀ */
    return LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'L', 'N', (lapack_int)n, A, (lapack_int)n) ? -1 : 0;
}

/* A = P·H·Pᵀ with dead diagonals set to 1 and damp added to the diagonal,
 * then the upper Cholesky factor U of its inverse (in A, row-major upper
 * triangle). Returns 0, or -1 when a factorization fails. */
static int factor(double *A, const double *H, const int64_t *perm, int64_t n, double damp)
{
    for (int64_t i = 0; i < n; i++) {
        const double *hr = H + perm[i] * n;
        double *ar = A + i * n;
        for (int64_t j = 0; j < n; j++)
            ar[j] = hr[perm[j]];
        if (ar[i] == 0)
            ar[i] = 1;
        ar[i] += damp;
    }
    if (inverse_factor(A, n))
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const double u = A[i * n + i];
        if (!(u > 0) || !isfinite(u))
            return -1;
        for (int64_t j = i + 1; j < n; j++)
            if (!isfinite(A[i * n + j]))
                return -1;
    }
    return 0;
}

/* factor() on the caller's H itself (no permutation): inverse_factor keeps
 * H's strict lower triangle, so after a failure the upper triangle and the
 * diagonal (d0: H's own, before damping) are restored from it. */
static int factor_inplace(double *A, const double *d0, int64_t n, double damp)
{
    for (int64_t i = 0; i < n; i++)
        A[i * n + i] = (d0[i] == 0 ? 1 : d0[i]) + damp;
    int bad = inverse_factor(A, n);
    for (int64_t i = 0; i < n && !bad; i++) {
        const double u = A[i * n + i];
        if (!(u > 0) || !isfinite(u))
            bad = 1;
        for (int64_t j = i + 1; j < n && !bad; j++)
            if (!isfinite(A[i * n + j]))
                bad = 1;
    }
    if (!bad)
        return 0;
    for (int64_t i = 0; i < n; i++) {
        A[i * n + i] = d0[i];
        for (int64_t j = i + 1; j < n; j++)
            A[i * n + j] = A[j * n + i];
    }
    return -1;
}

/* Narrow the n×n doubles at A to floats in place (index order, so every
 * double is read before its bytes are overwritten). */
static float *narrow(double *A, int64_t nn)
{
    unsigned char *b = (unsigned char *)A;
    for (int64_t k = 0; k < nn; k++) {
        double d;
        memcpy(&d, b + 8 * k, 8);
        float f = (float)d;
        memcpy(b + 4 * k, &f, 4);
    }
    return (float *)A;
}

/* act-order: column indices by descending diag H (the cols doubles at d),
 * ties by index (qsort_r, so that concurrent calls share no state). */
static int by_diag_desc(const void *a, const void *b, void *d)
{
    const int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    const double x = ((const double *)d)[i], y = ((const double *)d)[j];
    if (x != y)
        return x > y ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* ---- the rows of one lazy batch ----------------------------------------- */

/* What the shares of wp_gptq_quantize's row loops read and write: shared
 * read-only state, and per row (W's row, Err's row, rloss[r], the row's
 * output blocks, with act-order its gs blocks) what one share alone writes. */
typedef struct {
    const tparams *t;
    const choosectl *cc;
    int type, exact, act, group;
    int64_t cols, nblk;
    size_t bbytes;            /* bytes of a block */
    int64_t i1, i2;           /* the batch: columns [i1, i2) of the (permuted) order */
    float *W;                 /* rows × cols working weights */
    const float *qw;          /* cols importance weights or NULL */
    const float *sig;         /* rows: wp_rtn_row_sigma2 of the input row */
    const int64_t *perm;      /* cols: original column of position j */
    const float *U;           /* cols × cols upper factor of H⁻¹, or NULL */
    double ubar;              /* mean U_jj² */
    float *Err;               /* rows × (i2 - i1) batch error */
    gstate *gs;               /* act: rows × nblk; else group/n a share */
    ratectl *rc;              /* counted only with λ > 0 (shares of whole chunks) */
    double *rloss;            /* rows: the batch's loss per row */
    uint8_t *out;             /* rows × nblk ggml blocks, row after row */
} rowjob;

/* act-order's static groups: scales of rows [lo, hi) from the weights before
 * any update (wp_par_fn). */
static void static_groups(void *p, int64_t lo, int64_t hi, int part)
{
    const rowjob *jb = p;
    const int n = jb->t->n;
    (void)part;
    for (int64_t r = lo; r < hi; r++)
        for (int64_t c = 0; c < jb->cols; c += jb->group) {
            int len = (int)(jb->cols - c < jb->group ? jb->cols - c : jb->group);
            choose(jb->t, jb->cc, jb->W + r * jb->cols + c, len, jb->qw ? jb->qw + c : NULL, jb->sig[r],
                   jb->gs + r * jb->nblk + c / n);
        }
}

/* GPTQ's inner loop over columns [i1, i2) for rows [lo, hi): code each
 * weight, record its error, push the error to the batch's later columns of
 * the same row, and pack each block once its last column is coded
 * (wp_par_fn; Algorithm 1's inner loop, one row at a time). */
static void batch_rows(void *p, int64_t lo, int64_t hi, int part)
{
    const rowjob *jb = p;
    const tparams *t = jb->t;
    const int64_t cols = jb->cols, i1 = jb->i1, i2 = jb->i2, bw = i2 - i1;
    gstate *own = jb->act ? NULL : jb->gs + (size_t)part * (size_t)(jb->group / t->n);
    for (int64_t r = lo; r < hi; r++) {
        float *w = jb->W + r * cols;
        int64_t *cnt = jb->rc->lambda > 0 ? jb->rc->chunk + r / RC_ROWS * RC_CODES : NULL;
        double loss = 0;
        for (int64_t j = i1; j < i2; j++) {
            const int64_t oc = jb->perm[j];
            gstate *g;
            if (jb->act) {
                g = jb->gs + r * jb->nblk + oc / t->n;
            } else {
                if (j % jb->group == 0) {
                    int len = (int)(cols - j < jb->group ? cols - j : jb->group);
                    choose(t, jb->cc, w + j, len, jb->qw ? jb->qw + j : NULL, jb->sig[r], own);
                }
                g = own + (j % jb->group) / t->n;
            }
            const int i = (int)(oc % t->n);
            const float x = w[j];
            float v;
            double wd = 1;
            if (jb->U) {
                const double u = jb->U[j * cols + j];
                wd = jb->ubar / (u * u);
            }
            int q = jb->exact ? code_exact(t, g, i, x, &v) : pick(t, g, i, x, wd, jb->rc->lambda, cnt, &v);
            if (cnt)
                cnt[q]++;
            if (jb->U) {
                const float *ur = jb->U + j * cols;
                const float e = (x - v) / ur[j];
                loss += (double)(x - v) * (x - v) / ((double)ur[j] * ur[j]) / 2;
                jb->Err[r * bw + (j - i1)] = e;
                for (int64_t k = j + 1; k < i2; k++)
                    w[k] -= e * ur[k];
            }
            if (!jb->act && i == t->n - 1)
                wp_block_pack(jb->type, &g->s.p, jb->out + (size_t)(r * jb->nblk + oc / t->n) * jb->bbytes);
        }
        jb->rloss[r] = loss;
    }
}

/* batch_rows over chunks [lo, hi) of RC_ROWS rows (wp_par_fn, λ > 0): a
 * chunk's rows on one thread, in order. */
static void batch_chunks(void *p, int64_t lo, int64_t hi, int part)
{
    const int64_t rows = ((const rowjob *)p)->rc->rows;
    batch_rows(p, lo * RC_ROWS, hi * RC_ROWS < rows ? hi * RC_ROWS : rows, part);
}

/* ---- the factor of a Hessian ---------------------------------------------- */

/* How factor_build may use H. */
enum { H_COPY, H_BORROW, H_TAKE };

struct wp_gptq_factor {
    int64_t cols;
    int status;             /* 0, or WP_GPTQ_NOT_PD (U, perm and dead NULL) */
    int act;                /* built with act_order: perm sorts by diag H */
    float *U;               /* cols × cols upper factor of (P·H·Pᵀ + damping)⁻¹ */
    void *ubuf;             /* U's buffer when the factor owns it, else NULL */
    int64_t *perm;          /* cols: original column of position j */
    unsigned char *dead;    /* cols: 1 where H_ii == 0 (original order) */
    double ubar;            /* mean U_jj² */
    wp_gptq_info info;      /* damp_used, tries, dead_cols (loss 0) */
};

void wp_gptq_factor_free(wp_gptq_factor *f)
{
    if (!f)
        return;
    free(f->ubuf);
    free(f->perm);
    free(f->dead);
    free(f);
}

/* wp_gptq_factor_make's work, with H's buffer used as `mode` says: H_COPY
 * reads H only; H_BORROW factors in it (without act-order) and U then lives
 * there (H must outlive the factor; after WP_GPTQ_NOT_PD it is as it was);
 * H_TAKE owns H from the call on (factored in it, shrunk to the float
 * factor, freed with the factor or at once on NOT_PD or an error). */
static int factor_build(double *H, int64_t cols, const wp_gptq_opts *opts, int mode, wp_gptq_factor **out,
                        char *err, size_t errlen)
{
    const int act = opts->act_order != 0, inplace = mode != H_COPY && !act;
    wp_gptq_factor *f = calloc(1, sizeof *f);
    double *diag = malloc((size_t)cols * sizeof *diag), *d0 = malloc((size_t)cols * sizeof *d0);
    double *A = NULL;
    int ret = -1;
    *out = NULL;
    if (f) {
        f->perm = malloc((size_t)cols * sizeof *f->perm);
        f->dead = calloc((size_t)cols, 1);
    }
    if (!f || !diag || !d0 || !f->perm || !f->dead) {
        fail(err, errlen, "out of memory");
        goto done;
    }
    f->cols = cols;
    f->act = act;
    for (int64_t c = 0; c < cols; c++)
        f->perm[c] = c;
    for (int64_t i = 0; i < cols * cols; i++)
        if (!isfinite(H[i])) {
            fail(err, errlen, "non-finite Hessian entry at (%lld, %lld)", (long long)(i / cols), (long long)(i % cols));
            goto done;
        }
    A = inplace ? H : malloc((size_t)(cols * cols) * sizeof *A);
    if (!A) {
        fail(err, errlen, "out of memory (Hessian %lld x %lld)", (long long)cols, (long long)cols);
        goto done;
    }
    /* LAPACK's first call: under ulimit -v it could hang (blas_room.h); after A, which takes room
       too (checked before it, a copy of cols^2 doubles could take the room the check saw: a
       reviewer's find) */
    if (wp_blas_room(err, errlen)) {
        if (A != H)
            free(A);
        goto done;
    }
    double mean = 0, amean = 0;
    for (int64_t i = 0; i < cols; i++) {
        d0[i] = diag[i] = H[i * cols + i];
        if (diag[i] == 0) {            /* dead column (gptq.py); W zeroed by the quantizer */
            f->info.dead_cols++;
            f->dead[i] = 1;
            diag[i] = 1;
        }
        mean += diag[i];
        amean += fabs(diag[i]);
    }
    mean /= cols;
    amean /= cols;
    if (!(mean > 0))
        mean = amean > 0 ? amean : 1;
    if (act)
        qsort_r(f->perm, (size_t)cols, sizeof *f->perm, by_diag_desc, diag);
    int ok = 0;
    double rel = opts->damp;
    for (int k = 0; k <= opts->retries; k++, rel *= 10) {
        f->info.tries = k + 1;
        if ((inplace ? factor_inplace(A, d0, cols, rel * mean) : factor(A, H, f->perm, cols, rel * mean)) == 0) {
            ok = 1;
            break;
        }
    }
    if (mode == H_TAKE && !inplace)
        free(H);                       /* A holds the permuted copy */
    if (!ok) {
        if (mode == H_TAKE || !inplace)
            free(A);                   /* (H_BORROW: H restored by factor_inplace) */
        A = NULL;
        f->info.damp_used = rel / 10;
        f->status = WP_GPTQ_NOT_PD;
        free(f->perm);
        free(f->dead);
        f->perm = NULL;
        f->dead = NULL;
        ret = WP_GPTQ_NOT_PD;
        goto done;
    }
    f->info.damp_used = rel;
    f->U = narrow(A, cols * cols);
    if (A != H || mode == H_TAKE) {
        /* the doubles' second half is free now: keep cols² floats */
        void *s = realloc(A, (size_t)(cols * cols) * sizeof(float));
        f->ubuf = s ? s : A;
        f->U = f->ubuf;
    }
    A = NULL;
    f->ubar = 0;
    for (int64_t j = 0; j < cols; j++)
        f->ubar += (double)f->U[j * cols + j] * f->U[j * cols + j];
    f->ubar /= cols;
    ret = 0;
done:
    free(diag);
    free(d0);
    if (ret < 0) {               /* (before any A of its own) */
        if (mode == H_TAKE)
            free(H);
        wp_gptq_factor_free(f);
        f = NULL;
    }
    *out = f;
    return ret;
}

/* The factor's own arguments: H, cols, and the options it reads (damp,
 * retries); 0, or -1 with the message. */
static int factor_args(const double *H, int64_t cols, const wp_gptq_opts *opts, char *err, size_t errlen)
{
    if (!H)
        return fail(err, errlen, "bad arguments (no Hessian)");
    if (cols <= 0)
        return fail(err, errlen, "bad arguments (%lld columns)", (long long)cols);
    if (!(opts->damp >= 0) || !isfinite(opts->damp) || opts->retries < 0)
        return fail(err, errlen, "bad options (damp %g, retries %d: damp must be finite and >= 0, retries >= 0)",
                    opts->damp, opts->retries);
    return 0;
}

int wp_gptq_factor_make(const double *H, int64_t cols, const wp_gptq_opts *opts, wp_gptq_factor **f,
                        char *err, size_t errlen)
{
    wp_gptq_opts dflt;
    if (!f)
        return fail(err, errlen, "bad arguments (no factor to fill)");
    *f = NULL;
    if (!opts) {
        wp_gptq_opts_default(&dflt);
        opts = &dflt;
    }
    if (factor_args(H, cols, opts, err, errlen))
        return -1;
    return factor_build((double *)H, cols, opts, opts->consume ? H_BORROW : H_COPY, f, err, errlen);
}

int wp_gptq_factor_take(double *H, int64_t cols, const wp_gptq_opts *opts, wp_gptq_factor **f,
                        char *err, size_t errlen)
{
    wp_gptq_opts dflt;
    if (!f) {
        free(H);
        return fail(err, errlen, "bad arguments (no factor to fill)");
    }
    *f = NULL;
    if (!opts) {
        wp_gptq_opts_default(&dflt);
        opts = &dflt;
    }
    if (factor_args(H, cols, opts, err, errlen)) {
        free(H);
        return -1;
    }
    return factor_build(H, cols, opts, H_TAKE, f, err, errlen);
}

int64_t wp_gptq_factor_cols(const wp_gptq_factor *f)
{
    return f ? f->cols : 0;
}

/* ---- the driver ---------------------------------------------------------- */

/* wp_gptq_quantize's argument checks (type, shape, options, W and qw finite)
 * into t; 0 or -1 with the message. */
static int check_args(int type, const float *Win, int64_t rows, int64_t cols, const float *qw,
                      const void *dst, const wp_gptq_opts *opts, tparams *t, char *err, size_t errlen)
{
    if (rows < 0)
        return fail(err, errlen, "bad arguments (%lld rows)", (long long)rows);
    if (rows > 0 && (!Win || !dst))
        return fail(err, errlen, "bad arguments (no %s)", !Win ? "weights" : "destination");
    if (tparams_get(type, t))
        return fail(err, errlen, "type %s: not supported by gptq", wp_ggml_type_name((uint32_t)type) ? wp_ggml_type_name((uint32_t)type) : "?");
    if (cols <= 0 || cols % t->n)
        return fail(err, errlen, "row length %lld is not a multiple of %d (%s)", (long long)cols, t->n, wp_ggml_type_name((uint32_t)type));
    if (!(opts->widen >= 1) || !(opts->lambda >= 0) || !(opts->damp >= 0) || !isfinite(opts->widen) || !isfinite(opts->lambda))
        return fail(err, errlen, "bad options (widen must be >= 1, lambda and damp >= 0)");
    if (wp_gptq_check_weights(type, Win, rows, cols, err, errlen))
        return -1;
    if (qw)
        for (int64_t c = 0; c < cols; c++)
            if (!isfinite(qw[c]))
                return fail(err, errlen, "non-finite importance weight at column %lld", (long long)c);
    return 0;
}

/* GPTQ of checked arguments with factor f (NULL: H = I); WP_GPTQ_NOT_PD,
 * W and dst untouched, for a factor that records it. */
static int quantize_with(const tparams *tp, int type, const float *Win, int64_t rows, int64_t cols,
                         const wp_gptq_factor *f, const float *qw, const wp_gptq_opts *opts,
                         void *dst, wp_gptq_info *info, char *err, size_t errlen)
{
    if (f && f->status == WP_GPTQ_NOT_PD) {
        if (info)
            *info = f->info;
        return WP_GPTQ_NOT_PD;
    }
    const tparams t = *tp;
    const choosectl cc = {opts->gamma || opts->widen > 1, opts->gamma, opts->widen};
    const int exact = !cc.lazy && !(opts->lambda > 0);
    const int group = (opts->gamma && t.n == 32) ? 256 : t.n;      /* scale-choice unit */
    const int act = f && f->act;
    int64_t B = opts->block_cols > 0 ? opts->block_cols : 128;
    if (!act)
        B = (B + group - 1) / group * group;   /* a group never straddles a batch */
    if (B > cols)
        B = cols;
    const int64_t nblk = cols / t.n;
    const size_t bbytes = wp_ggml_type_size((uint32_t)type);
    wp_gptq_info inf = {0, 0, 0, 0};
    if (f)
        inf = f->info;

    const int own_w = !opts->consume;
    float *W = own_w ? malloc((size_t)(rows * cols) * sizeof *W + 1) : (float *)Win;
    float *sig = malloc((size_t)rows * sizeof *sig + 1);
    int64_t *ident = f ? NULL : malloc((size_t)cols * sizeof *ident);
    const int64_t *perm = f ? f->perm : ident;
    const float *U = f ? f->U : NULL;
    float *Err = NULL;
    double *rloss = NULL;
    rowjob jb = {0};   /* jb.gs freed at done */
    ratectl *rc = calloc(1, sizeof *rc);
    int ret = -1;
    if (!W || !sig || !perm || !rc) {
        fail(err, errlen, "out of memory");
        goto done;
    }
    if (f) {
        Err = malloc((size_t)(rows * B) * sizeof *Err + 1);
        if (!Err) {
            fail(err, errlen, "out of memory (Hessian %lld x %lld)", (long long)cols, (long long)cols);
            goto done;
        }
    }
    if (own_w && rows)
        memcpy(W, Win, (size_t)(rows * cols) * sizeof *W);
    rc->lambda = opts->lambda;
    rc->rows = rows;
    rc->nchunk = rc->lambda > 0 ? (rows + RC_ROWS - 1) / RC_ROWS : 0;
    if (rc->nchunk && !(rc->chunk = malloc((size_t)rc->nchunk * RC_CODES * sizeof *rc->chunk))) {
        fail(err, errlen, "out of memory");
        goto done;
    }
    for (int64_t r = 0; r < rows; r++)
        sig[r] = wp_rtn_row_sigma2(Win + r * cols, cols);
    if (ident)
        for (int64_t c = 0; c < cols; c++)
            ident[c] = c;
    if (f && f->info.dead_cols)
        for (int64_t i = 0; i < cols; i++)
            if (f->dead[i])
                for (int64_t r = 0; r < rows; r++)
                    W[r * cols + i] = 0;
    const double ubar = f ? f->ubar : 1;

    const float *qwp = qw;
    /* The rows of a lazy batch are independent (each row's error stays in its
     * row until the batch's product), so they run in shares (with λ > 0 of
     * whole chunks, see ratectl); per-row losses are added in row order after
     * each batch, so the result does not depend on the thread count. */
    const int T = opts->threads > 1 ? opts->threads : 1;
    rloss = malloc((size_t)rows * sizeof *rloss + 1);
    if (!rloss) {
        fail(err, errlen, "out of memory");
        goto done;
    }
    jb = (rowjob){&t, &cc, type, exact, act, group, cols, nblk, bbytes, 0, 0, W, qwp, sig, perm,
                  U, ubar, Err, NULL, rc, rloss, dst};
    if (act) {
        /* static groups: every block's scales from the (dead-zeroed) weights
         * before any update, in the original column order */
        jb.gs = malloc((size_t)(rows * nblk) * sizeof *jb.gs + 1);
        if (!jb.gs) {
            fail(err, errlen, "out of memory (act-order scales)");
            goto done;
        }
        wp_par_rows(T, rows, static_groups, &jb);
        /* permute the working weights' columns */
        float *tmp = malloc((size_t)cols * sizeof *tmp);
        if (!tmp) {
            fail(err, errlen, "out of memory");
            goto done;
        }
        for (int64_t r = 0; r < rows; r++) {
            float *w = W + r * cols;
            for (int64_t c = 0; c < cols; c++)
                tmp[c] = w[perm[c]];
            memcpy(w, tmp, (size_t)cols * sizeof *w);
        }
        free(tmp);
    } else {
        /* one block's (γ: one run's) scales at a time, per share */
        jb.gs = malloc((size_t)T * (size_t)(group / t.n) * sizeof *jb.gs);
        if (!jb.gs) {
            fail(err, errlen, "out of memory");
            goto done;
        }
    }

    uint8_t *out = dst;
    double loss = 0;
    for (int64_t i1 = 0; i1 < cols; i1 += B) {
        const int64_t i2 = i1 + B < cols ? i1 + B : cols, bw = i2 - i1;
        jb.i1 = i1;
        jb.i2 = i2;
        if (rc->nchunk) {
            for (int64_t k = 0; k < rc->nchunk; k++)
                memcpy(rc->chunk + k * RC_CODES, rc->cnt, sizeof rc->cnt);
            wp_par_rows(T, rc->nchunk, batch_chunks, &jb);
            int64_t add[RC_CODES] = {0};
            for (int64_t k = 0; k < rc->nchunk; k++)
                for (int q = 0; q < RC_CODES; q++)
                    add[q] += rc->chunk[k * RC_CODES + q] - rc->cnt[q];
            for (int q = 0; q < RC_CODES; q++)
                rc->cnt[q] += add[q];
        } else {
            wp_par_rows(T, rows, batch_rows, &jb);
        }
        for (int64_t r = 0; r < rows; r++)
            loss += rloss[r];
        if (U && i2 < cols)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)(cols - i2), (int)bw,
                        -1.0f, Err, (int)bw, U + i1 * cols + i2, (int)cols, 1.0f, W + i2, (int)cols);
    }
    if (act)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = 0; b < nblk; b++)
                wp_block_pack(type, &jb.gs[r * nblk + b].s.p, out + (size_t)(r * nblk + b) * bbytes);
    inf.loss = loss;
    int64_t bad = wp_gptq_check_blocks(type, dst, rows * nblk);
    if (bad >= 0) {
        /* (with qw, importances as large as 3e38 overflow the scale search too) */
        fail(err, errlen, "scale of block %lld (row %lld) does not fit fp16: weights too large for %s%s",
             (long long)(bad % nblk), (long long)(bad / nblk), wp_ggml_type_name((uint32_t)type),
             qw ? ", or importances too large in its imatrix entry" : "");
        goto done;
    }
    ret = 0;
done:
    if (info)
        *info = inf;
    if (own_w)
        free(W);
    free(sig);
    free(ident);
    free(Err);
    free(jb.gs);
    free(rloss);
    if (rc)
        free(rc->chunk);
    free(rc);
    return ret;
}

int wp_gptq_quantize_factored(int type, const float *Win, int64_t rows, int64_t cols,
                              const wp_gptq_factor *f, const float *qw, const wp_gptq_opts *opts,
                              void *dst, wp_gptq_info *info, char *err, size_t errlen)
{
    wp_gptq_opts dflt;
    tparams t;
    if (!opts) {
        wp_gptq_opts_default(&dflt);
        opts = &dflt;
    }
    if (check_args(type, Win, rows, cols, qw, dst, opts, &t, err, errlen))
        return -1;
    if (f && f->cols != cols)
        return fail(err, errlen, "the Hessian factor is %lldx%lld, the matrix has %lld columns", (long long)f->cols,
                    (long long)f->cols, (long long)cols);
    if (f && f->act != (opts->act_order != 0))
        return fail(err, errlen, "the Hessian factor was made %s act-order, the options ask %s it",
                    f->act ? "with" : "without", f->act ? "without" : "with");
    return quantize_with(&t, type, Win, rows, cols, f, qw, opts, dst, info, err, errlen);
}

int wp_gptq_quantize(int type, const float *Win, int64_t rows, int64_t cols,
                     const double *H, const float *qw, const wp_gptq_opts *opts,
                     void *dst, wp_gptq_info *info, char *err, size_t errlen)
{
    wp_gptq_opts dflt;
    tparams t;
    wp_gptq_factor *f = NULL;
    if (!opts) {
        wp_gptq_opts_default(&dflt);
        opts = &dflt;
    }
    if (check_args(type, Win, rows, cols, qw, dst, opts, &t, err, errlen))
        return -1;
    /* consume: the factor in H's own buffer (restored on NOT_PD) */
    if (H && wp_gptq_factor_make(H, cols, opts, &f, err, errlen) < 0)
        return -1;
    int ret = quantize_with(&t, type, Win, rows, cols, f, qw, opts, dst, info, err, errlen);
    wp_gptq_factor_free(f);
    return ret;
}

/* ---- checks for tests and reports --------------------------------------- */

double wp_gptq_hloss(int type, const float *W, const void *q, int64_t rows, int64_t cols,
                     const double *H)
{
    wp_block_info bi;
    if (wp_block_info_get(type, &bi) || cols % bi.n)
        return -1;
    float *y = malloc((size_t)cols * sizeof *y);
    double *e = malloc((size_t)cols * sizeof *e), *he = malloc((size_t)cols * sizeof *he);
    double tot = 0;
    const size_t rsz = wp_ggml_row_size((uint32_t)type, cols);
    char room[256];
    if (!y || !e || !he || wp_blas_room(room, sizeof room)) {   /* (blas_room.h) */
        tot = -1;
        goto out;
    }
    for (int64_t r = 0; r < rows; r++) {
        wp_dequantize_row(type, (const uint8_t *)q + (size_t)r * rsz, y, cols);
        for (int64_t c = 0; c < cols; c++)
            e[c] = (double)y[c] - W[r * cols + c];
        if (H) {
            cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)cols, (int)cols, 1.0, H, (int)cols, e, 1, 0.0, he, 1);
            tot += cblas_ddot((int)cols, e, 1, he, 1);
        } else {
            tot += cblas_ddot((int)cols, e, 1, e, 1);
        }
    }
out:
    free(y);
    free(e);
    free(he);
    return tot;
}

int64_t wp_gptq_check_blocks(int type, const void *q, int64_t nblocks)
{
    wp_block_info bi;
    if (wp_block_info_get(type, &bi))
        return -2;
    wp_block_parts p;
    for (int64_t b = 0; b < nblocks; b++) {
        wp_block_unpack(type, (const uint8_t *)q + (size_t)b * bi.block_bytes, &p);
        if (!isfinite(wp_fp16_to_f32(p.d)) || !isfinite(wp_fp16_to_f32(p.dmin)))
            return b;
    }
    return -1;
}

int wp_gptq_check_weights(int type, const float *w, int64_t rows, int64_t cols, char *err, size_t errlen)
{
    const char *tn = wp_ggml_type_name((uint32_t)type);
    for (int64_t k = 0; k < rows * cols; k++) {
        if (!isfinite(w[k]))
            return fail(err, errlen, "non-finite weight %g at row %lld, column %lld", (double)w[k],
                        (long long)(k / cols), (long long)(k % cols));
        if (fabsf(w[k]) > (float)WP_GPTQ_WEIGHT_MAX)
            return fail(err, errlen, "weight %g at row %lld, column %lld is too large for %s (no block holds one "
                        "above %.3g: its scales are fp16)", (double)w[k], (long long)(k / cols),
                        (long long)(k % cols), tn ? tn : "?", WP_GPTQ_WEIGHT_MAX);
    }
    return 0;
}

double wp_gptq_code_entropy(int type, const void *q, int64_t nblocks)
{
    wp_block_info bi;
    if (wp_block_info_get(type, &bi))
        return -1;
    uint64_t cnt[256] = {0};
    uint8_t c[256];
    for (int64_t b = 0; b < nblocks; b++) {
        wp_block_get_codes(type, (const uint8_t *)q + (size_t)b * bi.block_bytes, c);
        for (int i = 0; i < bi.n; i++)
            cnt[c[i]]++;
    }
    return wp_huf_entropy(cnt, 256);
}
