/*
 * bench - throughput and size benchmarks of libwpack, each against a baseline
 * run in the same process (make bench; tests/bench drives it). Nothing here
 * asserts a speed: every figure is printed beside its baseline and a ratio.
 *
 * Usage: bench machine | quant | rss | factor | codes | bf16
 *
 *   machine  nproc and CPU model.
 *   quant    issue 3: weights/s of our RTN (wp_rtn_quantize) and of GPTQ
 *            (wp_gptq_quantize, with H = XᵀX of 8192 correlated activation
 *            rows and with H = I) on a 4096×4096 realistic synthetic matrix,
 *            for Q4_K, Q8_0 and IQ4_XS, each against ggml_quantize_chunk of
 *            the pinned reference llama.cpp on the same matrix; ratio
 *            ours/reference of weights/s (> 1: ours faster).
 *   rss      issue 3: peak RSS (getrusage ru_maxrss) of a process that builds
 *            one 4096×4096 tensor and its Hessian and runs GPTQ (Q4_K) on it,
 *            printed beside the size of the tensor (F32) plus its Hessian
 *            (double), the target it must stay near. Its own process, so no
 *            other section's buffers count.
 *   factor   a Hessian record shared by q, k and v (gptq --hessian): three
 *            matrices (1024×2048 realistic, Q4_K) sharing one H (2048
 *            columns), each with wp_gptq_quantize (the factor made three
 *            times, as with one record per weight) against one
 *            wp_gptq_factor_make and three wp_gptq_quantize_factored; times,
 *            the ratio, the factor's own time, and the bytes compared.
 *   codes    issue 4: decode throughput of the fast CPU lane decoder
 *            (wp_coded_decode, reference = 0) on a 4096×14336 Q4_K matrix
 *            (ggml_quantize_chunk, pair symbols, Huffman max_len 11), single
 *            thread, against libzstd levels 3 and 19 compressing and
 *            decompressing the same symbol bytes; sizes and time ratios.
 *   bf16     issue 5: exponent decode throughput of the same decoder on a
 *            4096×14336 BF16 matrix split by wp_bf16_split (palette 16 and
 *            palette 0), against libzstd (levels 3 and 19) decompressing the
 *            exponent byte stream grouped as ZipNN does (the BF16 high bytes);
 *            sizes in bits per weight and time ratios.
 *
 * Timings: clock_gettime(CLOCK_MONOTONIC); one warm-up run, then the median
 * of up to 5 (fewer when one run takes long, shown in the "runs" column);
 * RTN and its reference are timed alternately so that other load on the
 * machine hits both alike. Every decoder's output is compared with its input
 * and every zstd round trip checked; a mismatch ends the run with status 1.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <zstd.h>

#include "bf16.h"
#include "blocks.h"
#include "bundle.h"
#include "codes.h"
#include "ggml.h"
#include "ggml_type.h"
#include "gptq.h"
#include "par.h"
#include "half.h"
#include "huffman.h"
#include "rtn.h"

/* ---- helpers ------------------------------------------------------------ */

static void die(const char *what)
{
    fprintf(stderr, "bench: %s\n", what);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of fn(ctx): one warm-up run (not counted), then
 * budget / (its time) timed runs, at least 3 and at most max_reps. A run
 * longer than budget / 2 (GPTQ, IQ4_XS, seconds each: warming up changes
 * nothing there) is timed once: the warm-up itself. *reps gets the number
 * of timings. */
typedef void (*bench_fn)(void *ctx);
static double median_time(bench_fn fn, void *ctx, int max_reps, double budget, int *reps)
{
    double t0 = now();
    fn(ctx);
    double w = now() - t0;
    if (2 * w > budget) {
        *reps = 1;
        return w;
    }
    int n = w > 0 ? (int)(budget / w) : max_reps;
    if (n < 3)
        n = 3;
    if (n > max_reps)
        n = max_reps;
    double t[16];
    for (int i = 0; i < n; i++) {
        t0 = now();
        fn(ctx);
        t[i] = now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *reps = n;
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Medians of fa(a) and fb(b) timed alternately (a, b, a, b, ...) after one
 * warm-up of each, so that a change in machine load hits both alike; reps as
 * median_time from the slower warm-up. */
static void median_pair(bench_fn fa, void *a, bench_fn fb, void *b, int max_reps, double budget,
                        double *ta, double *tb, int *reps)
{
    double t0 = now();
    fa(a);
    double wa = now() - t0;
    t0 = now();
    fb(b);
    double wb = now() - t0, w = wa > wb ? wa : wb;
    if (2 * w > budget) {
        *ta = wa, *tb = wb, *reps = 1;
        return;
    }
    int n = (int)(budget / w);
    if (n < 3)
        n = 3;
    if (n > max_reps)
        n = max_reps;
    double x[16], y[16];
    for (int i = 0; i < n; i++) {
        t0 = now();
        fa(a);
        x[i] = now() - t0;
        t0 = now();
        fb(b);
        y[i] = now() - t0;
    }
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    qsort(y, (size_t)n, sizeof *y, cmp_double);
    *ta = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    *tb = n % 2 ? y[n / 2] : 0.5 * (y[n / 2 - 1] + y[n / 2]);
    *reps = n;
}

/* xorshift64 and cheap samplers; the matrices only need to look like trained
 * weights statistically (mksynth's recipe), not to be reproducible elsewhere. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static inline double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return ((rng >> 11) + 0.5) / 9007199254740992.0;
}
static inline double gauss(void)
{
    return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand());
}
/* Student-t, 4 degrees of freedom: z / sqrt(chi2_4 / 4), chi2_4 / 4 =
 * -log(u1 u2) / 2 (two exponentials). Heavy tails like trained weights. */
static inline double student4(void)
{
    return gauss() / sqrt(-0.5 * log(urand() * urand()));
}

/* mksynth's realistic matrix: Student-t(4) weights, per-row scale spread
 * (log-normal), every 97th column an outlier column (×8). */
static void realistic(float *w, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        double s = 0.02 * exp(0.5 * gauss());
        for (int64_t c = 0; c < cols; c++) {
            double v = s * student4();
            if (c % 97 == 13)
                v *= 8;
            w[r * cols + c] = (float)v;
        }
    }
}

/* H = XᵀX / T (cols × cols doubles, row-major, symmetric) of T activation
 * rows that look like a transformer's inputs: a rank-64 shared component
 * (correlated features) plus independent noise, per-column scales spread
 * log-normally, every 61st column an outlier channel (×10). X is built 1024
 * rows at a time and XᵀX accumulated in float (cblas_ssyrk) in the first
 * half of H's own buffer, then widened in place, so the peak is H plus one
 * 1024-row chunk. */
static void hessian(double *H, int64_t cols, int64_t T)
{
    const int64_t K = 64, CH = 1024;
    float *B = xmalloc(sizeof(float) * (size_t)(K * cols));
    float *sc = xmalloc(sizeof(float) * (size_t)cols);
    float *G = xmalloc(sizeof(float) * (size_t)(CH * K));
    float *X = xmalloc(sizeof(float) * (size_t)(CH * cols));
    float *Hf = (float *)(void *)H;
    for (int64_t i = 0; i < K * cols; i++)
        B[i] = (float)(gauss() / sqrt((double)K));
    for (int64_t c = 0; c < cols; c++)
        sc[c] = (float)(exp(0.8 * gauss()) * (c % 61 == 7 ? 10 : 1));
    memset(H, 0, sizeof(double) * (size_t)(cols * cols));
    for (int64_t t0 = 0; t0 < T; t0 += CH) {
        int64_t m = T - t0 < CH ? T - t0 : CH;
        for (int64_t i = 0; i < m * K; i++)
            G[i] = (float)gauss();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)cols, (int)K, 1.0f, G,
                    (int)K, B, (int)cols, 0.0f, X, (int)cols);
        for (int64_t i = 0; i < m; i++)
            for (int64_t c = 0; c < cols; c++)
                X[i * cols + c] = (float)((0.8 * X[i * cols + c] + 0.6 * gauss()) * sc[c]);
        cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)cols, (int)m, 1.0f, X, (int)cols,
                    1.0f, Hf, (int)cols);
    }
    /* widen in place, last element first: double k covers floats 2k, 2k+1,
     * both > k (k > 0), already read */
    for (int64_t k = cols * cols - 1; k >= 0; k--) {
        float f;
        memcpy(&f, (char *)H + 4 * k, 4);
        double d = (double)f / (double)T;
        memcpy((char *)H + 8 * k, &d, 8);
    }
    for (int64_t i = 0; i < cols; i++)
        for (int64_t j = 0; j < i; j++)
            H[i * cols + j] = H[j * cols + i];
    free(B);
    free(sc);
    free(G);
    free(X);
}

static double maxrss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

static double mib(double bytes) { return bytes / 1048576.0; }

/* ---- machine ------------------------------------------------------------ */

static int machine(void)
{
    char line[512], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                snprintf(model, sizeof model, "%s", p);
                model[strcspn(model, "\n")] = 0;
            }
            break;
        }
    }
    if (f)
        fclose(f);
    char load[128] = "?";
    f = fopen("/proc/loadavg", "r");
    if (f && fgets(load, sizeof load, f))
        load[strcspn(load, "\n")] = 0;
    if (f)
        fclose(f);
    printf("machine: %ld cores online, CPU %s; libzstd %s; OpenBLAS (its default threads)\n",
           sysconf(_SC_NPROCESSORS_ONLN), model, ZSTD_versionString());
    printf("load average at start: %s (other work on the machine skews every timing; the "
           "ratios compare runs made in the same process, RTN and reference alternately)\n",
           load);
    return 0;
}

/* ---- issue 3: quantizer throughput -------------------------------------- */

enum { QR = 4096, QC = 4096, QT = 8192 };

typedef struct {
    int type;
    const float *W;
    const double *H; /* NULL: H = I */
    void *dst;
    int64_t rows, cols;
    int threads;     /* 0 or 1: one */
    double lambda;   /* > 0: a LazyWeights point, γ, c 1.25 and this λ */
} qctx;

static void run_ref(void *p)
{
    qctx *c = p;
    ggml_quantize_chunk((enum ggml_type)c->type, c->W, c->dst, 0, c->rows, c->cols, NULL);
}
static void run_rtn(void *p)
{
    qctx *c = p;
    if (!(c->threads > 1 ? wp_rtn_quantize_threads(c->type, c->W, c->dst, c->rows, c->cols, NULL, c->threads)
                         : wp_rtn_quantize(c->type, c->W, c->dst, c->rows, c->cols, NULL)))
        die("wp_rtn_quantize failed");
}
static void run_gptq(void *p)
{
    qctx *c = p;
    char err[256];
    wp_gptq_info info;
    wp_gptq_opts o;
    wp_gptq_opts_default(&o);
    o.threads = c->threads;
    if (c->lambda > 0)
        o.gamma = 1, o.widen = 1.25, o.lambda = c->lambda;
    int rc = wp_gptq_quantize(c->type, c->W, c->rows, c->cols, c->H, NULL, &o, c->dst, &info,
                              err, sizeof err);
    if (rc) {
        fprintf(stderr, "bench: wp_gptq_quantize: %s\n", rc > 0 ? "not positive definite" : err);
        exit(1);
    }
}

static int quant(void)
{
    static const int types[] = {WP_Q4_K, WP_Q8_0, WP_IQ4_XS};
    const double nw = (double)QR * QC;
    float *W = xmalloc(sizeof(float) * QR * QC);
    double *H = xmalloc(sizeof(double) * QC * QC);
    const int cpus = wp_par_cpus();
    double t0 = now();
    realistic(W, QR, QC);
    hessian(H, QC, QT);
    printf("\n## Issue 3: quantizer throughput, %dx%d realistic matrix (Student-t(4), outlier "
           "columns, row scale spread)\n",
           QR, QC);
    printf("Baseline: ggml_quantize_chunk of the reference llama.cpp (RTN, no imatrix, one "
           "thread) on the same matrix.\n");
    printf("GPTQ: H = XᵀX of %d correlated activation rows (built in %.1f s), and H = I; "
           "BLAS threads: OpenBLAS default. Rows are coded on one thread unless the row names "
           "more (%d: the online CPUs, gptq's default --threads).\n\n",
           QT, now() - t0, cpus);
    printf("| type | quantizer | Mweights/s | runs | reference Mweights/s | ours/reference | "
           "bytes equal to reference |\n");
    /* reference: timed alternately with RTN, its median reused for the GPTQ rows */
    printf("|---|---|---:|---:|---:|---:|---|\n");
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        int type = types[k];
        size_t bytes = (size_t)QR * ggml_row_size((enum ggml_type)type, QC);
        uint8_t *ref = xmalloc(bytes), *ours = xmalloc(bytes);
        ggml_quantize_init((enum ggml_type)type);
        qctx c = {type, W, NULL, ours, QR, QC, 1, 0}, cr = {type, W, NULL, ref, QR, QC, 1, 0};
        int n;
        double tr, t;
        median_pair(run_ref, &cr, run_rtn, &c, 5, 6.0, &tr, &t, &n);
        double rref = nw / tr / 1e6;
        const char *tn = wp_ggml_type_name((uint32_t)type);
        printf("| %s | RTN (wp_rtn_quantize) | %.2f | %d | %.2f | %.2f | %s |\n", tn, nw / t / 1e6,
               n, rref, tr / t, memcmp(ours, ref, bytes) ? "NO" : "yes");

        c.H = NULL;
        t = median_time(run_gptq, &c, 3, 3.0, &n);
        printf("| %s | GPTQ, H = I | %.2f | %d | %.2f | %.2f | %s |\n", tn, nw / t / 1e6, n, rref,
               tr / t, memcmp(ours, ref, bytes) ? "NO" : "yes");

        c.H = H;
        t = median_time(run_gptq, &c, 3, 3.0, &n);
        double hl_g = wp_gptq_hloss(type, W, ours, 32, QC, H); /* first 32 rows */
        double hl_r = wp_gptq_hloss(type, W, ref, 32, QC, H);
        char eq[64];
        snprintf(eq, sizeof eq, "no (tr ΔWHΔWᵀ ×%.3f of RTN)", hl_r > 0 ? hl_g / hl_r : 0);
        printf("| %s | GPTQ, H = XᵀX | %.2f | %d | %.2f | %.2f | %s |\n", tn, nw / t / 1e6, n,
               rref, tr / t, eq);

        /* the same on every CPU (gptq's default --threads): against one thread */
        if (cpus > 1) {
            uint8_t *one = xmalloc(bytes);
            memcpy(one, ours, bytes);
            c.threads = cpus;
            double tt = median_time(run_gptq, &c, 3, 3.0, &n);
            printf("| %s | GPTQ, H = XᵀX, %d threads | %.2f | %d | %.2f | %.2f | %s one thread's; ×%.2f its speed |\n",
                   tn, cpus, nw / tt / 1e6, n, rref, tr / tt, memcmp(ours, one, bytes) ? "NOT" : "=", t / tt);
            c.H = NULL;
            c.threads = 1;
            qctx cm = c;
            cm.threads = cpus;
            double t1, tm;
            median_pair(run_rtn, &c, run_rtn, &cm, 3, 3.0, &t1, &tm, &n);
            run_rtn(&cm);
            printf("| %s | RTN, %d threads | %.2f | %d | %.2f | %.2f | %s; ×%.2f one thread's speed |\n", tn, cpus,
                   nw / tm / 1e6, n, rref, tr / tm, memcmp(ours, ref, bytes) ? "NO" : "yes", t1 / tm);
            c.threads = 1;
            /* λ > 0 (Q4_K only): its chunks of rows on every CPU against one thread */
            if (type == WP_Q4_K) {
                uint8_t *lam = xmalloc(bytes);
                qctx l1 = {type, W, H, one, QR, QC, 1, 0.1}, lm = l1;
                lm.threads = cpus;
                lm.dst = lam;
                median_pair(run_gptq, &l1, run_gptq, &lm, 3, 3.0, &t1, &tm, &n);
                printf("| %s | GPTQ λ 0.1 (γ, c 1.25), H = XᵀX, %d threads | %.2f | %d | %.2f | %.2f | %s one "
                       "thread's; ×%.2f its speed |\n",
                       tn, cpus, nw / tm / 1e6, n, rref, tr / tm, memcmp(one, lam, bytes) ? "NOT" : "=", t1 / tm);
                free(lam);
            }
            free(one);
        }
        free(ref);
        free(ours);
    }
    printf("\n(tr ΔWHΔWᵀ measured on the first 32 rows; < 1: GPTQ's Hessian-weighted error is "
           "below RTN's.)\n");
    free(W);
    free(H);
    return 0;
}

/* ---- a shared Hessian factored once ------------------------------------- */

enum { FR = 1024, FC = 2048, FN = 3 };

typedef struct {
    const float *W[FN];
    const double *H;
    uint8_t *dst[FN];
    size_t bytes;
} fctx;

static void run_separate(void *p)
{
    fctx *c = p;
    char err[256];
    for (int m = 0; m < FN; m++)
        if (wp_gptq_quantize(WP_Q4_K, c->W[m], FR, FC, c->H, NULL, NULL, c->dst[m], NULL, err, sizeof err))
            die(err);
}
static wp_gptq_factor *factor_of(const fctx *c)
{
    char err[256];
    wp_gptq_factor *f;
    if (wp_gptq_factor_make(c->H, FC, NULL, &f, err, sizeof err))
        die(err);
    return f;
}
static void run_shared(void *p)
{
    fctx *c = p;
    char err[256];
    wp_gptq_factor *f = factor_of(c);
    for (int m = 0; m < FN; m++)
        if (wp_gptq_quantize_factored(WP_Q4_K, c->W[m], FR, FC, f, NULL, NULL, c->dst[m], NULL, err, sizeof err))
            die(err);
    wp_gptq_factor_free(f);
}
static void run_factor(void *p) { wp_gptq_factor_free(factor_of(p)); }

static int factor(void)
{
    fctx a, b;
    float *W = xmalloc(sizeof(float) * FN * FR * FC);
    double *H = xmalloc(sizeof(double) * FC * FC);
    realistic(W, (int64_t)FN * FR, FC);
    hessian(H, FC, 4096);
    a.H = b.H = H;
    a.bytes = b.bytes = (size_t)FR * ggml_row_size(GGML_TYPE_Q4_K, FC);
    for (int m = 0; m < FN; m++) {
        a.W[m] = b.W[m] = W + (size_t)m * FR * FC;
        a.dst[m] = xmalloc(a.bytes);
        b.dst[m] = xmalloc(b.bytes);
    }
    int n, nf;
    double ts, tc;
    median_pair(run_separate, &a, run_shared, &b, 5, 20.0, &ts, &tc, &n);
    double tf = median_time(run_factor, &a, 5, 5.0, &nf);
    int same = 1;
    for (int m = 0; m < FN; m++)
        same &= !memcmp(a.dst[m], b.dst[m], a.bytes);
    printf("\n### gptq --hessian: one H shared by %d matrices (q, k, v), %dx%d each, Q4_K, H %dx%d\n\n", FN, FR,
           FC, FC, FC);
    printf("| | s | runs |\n|---|---:|---:|\n");
    printf("| %d x wp_gptq_quantize (one record per weight: %d factors) | %.3f | %d |\n", FN, FN, ts, n);
    printf("| wp_gptq_factor_make + %d x wp_gptq_quantize_factored | %.3f | %d |\n", FN, tc, n);
    printf("| one factor (wp_gptq_factor_make) alone | %.3f | %d |\n", tf, nf);
    printf("| shared / separate | %.3f | |\n", tc / ts);
    printf("| bytes equal | %s | |\n", same ? "yes" : "NO");
    for (int m = 0; m < FN; m++) {
        free(a.dst[m]);
        free(b.dst[m]);
    }
    free(W);
    free(H);
    return same ? 0 : 1;
}

/* Peak RSS of GPTQ on one tensor + its Hessian, alone in this process. */
static int rss(void)
{
    const int type = WP_Q4_K;
    double base = maxrss_mib();
    float *W = xmalloc(sizeof(float) * QR * QC);
    double *H = xmalloc(sizeof(double) * QC * QC);
    realistic(W, QR, QC);
    hessian(H, QC, QT);
    double before = maxrss_mib();
    size_t bytes = (size_t)QR * ggml_row_size((enum ggml_type)type, QC);
    uint8_t *dst = xmalloc(bytes);
    /* as the gptq program calls it: W and H are scratch (opts.consume) */
    wp_gptq_opts o;
    wp_gptq_opts_default(&o);
    o.consume = 1;
    char err[256];
    double t0 = now();
    if (wp_gptq_quantize(type, W, QR, QC, H, NULL, &o, dst, NULL, err, sizeof err))
        die(err);
    double t = now() - t0, peak = maxrss_mib();
    double target = mib(sizeof(float) * (double)QR * QC + sizeof(double) * (double)QC * QC);
    printf("\n### Issue 3: peak RSS of GPTQ (Q4_K, H = XᵀX, %dx%d, %.1f s), its own process\n\n",
           QR, QC, t);
    printf("| | MiB |\n|---|---:|\n");
    printf("| process at start (libraries) | %.0f |\n", base);
    printf("| after building W and H | %.0f |\n", before);
    printf("| peak RSS after GPTQ (ru_maxrss) | %.0f |\n", peak);
    printf("| one tensor (F32 %.0f) + its Hessian (double %.0f) | %.0f |\n",
           mib(sizeof(float) * (double)QR * QC), mib(sizeof(double) * (double)QC * QC), target);
    printf("| peak / (tensor + Hessian) | %.2f |\n", peak / target);
    printf("| peak above start / (tensor + Hessian) | %.2f |\n", (peak - base) / target);
    free(W);
    free(H);
    free(dst);
    return 0;
}

/* ---- shared by issues 4 and 5: coding, zstd, round-robin timing ---------- */

/* One decoder under test: fn(ctx) writes n bytes into the shared output
 * buffer, which must then equal expect. */
typedef struct {
    const char *what;
    bench_fn fn;
    void *ctx;
    const void *expect;
    size_t n;
    double t; /* out: median seconds */
} timed;

/* Times k decoders round-robin (1, 2, ..., k, 1, 2, ...) so that a change in
 * machine load hits all of them alike: one warm-up round in which each
 * output is checked against what it must be (a mismatch ends the run), then
 * budget / (round time) rounds, at least 3 and at most max_reps; v[i].t gets
 * each one's median. */
static void time_round_robin(timed *v, int k, const uint8_t *out, int max_reps, double budget,
                             int *reps)
{
    double w = 0;
    for (int i = 0; i < k; i++) {
        double t0 = now();
        v[i].fn(v[i].ctx);
        w += now() - t0;
        if (memcmp(out, v[i].expect, v[i].n)) {
            fprintf(stderr, "bench: %s: output differs from its input\n", v[i].what);
            exit(1);
        }
    }
    int n = w > 0 ? (int)(budget / w) : max_reps;
    if (n < 3)
        n = 3;
    if (n > max_reps)
        n = max_reps;
    double t[8][16];
    for (int r = 0; r < n; r++)
        for (int i = 0; i < k; i++) {
            double t0 = now();
            v[i].fn(v[i].ctx);
            t[i][r] = now() - t0;
        }
    for (int i = 0; i < k; i++) {
        qsort(t[i], (size_t)n, sizeof(double), cmp_double);
        v[i].t = n % 2 ? t[i][n / 2] : 0.5 * (t[i][n / 2 - 1] + t[i][n / 2]);
    }
    *reps = n;
}

typedef struct {
    const wp_coded_view *v;
    int reference;
    uint8_t *out;
} dctx;

static void run_decode(void *p)
{
    dctx *c = p;
    char err[256];
    if (wp_coded_decode(c->v, c->reference, c->out, err, sizeof err)) {
        fprintf(stderr, "bench: wp_coded_decode: %s\n", err);
        exit(1);
    }
}

/* A zstd baseline: src compressed once at level (timed once: level 19 on
 * tens of MB takes a minute), decompressed by run_zdec into out. */
typedef struct {
    int level;
    ZSTD_DCtx *dc;
    void *z;
    size_t zlen;
    double ctime;
    void *out;
    size_t n;
} zctx;

static void zstd_prepare(zctx *c, const void *src, size_t n, int level, void *out)
{
    size_t cap = ZSTD_compressBound(n);
    c->level = level;
    c->z = xmalloc(cap);
    double t0 = now();
    c->zlen = ZSTD_compress(c->z, cap, src, n, level);
    c->ctime = now() - t0;
    if (ZSTD_isError(c->zlen))
        die("ZSTD_compress failed");
    c->dc = ZSTD_createDCtx();
    if (!c->dc)
        die("out of memory");
    c->out = out;
    c->n = n;
}

static void zstd_release(zctx *c)
{
    ZSTD_freeDCtx(c->dc);
    free(c->z);
}

static void run_zdec(void *p)
{
    zctx *c = p;
    size_t r = ZSTD_decompressDCtx(c->dc, c->out, c->n, c->z, c->zlen);
    if (ZSTD_isError(r) || r != c->n)
        die("ZSTD_decompress failed");
}

/* Huffman-code sym (shape) into rec, a CODED record of a type × (ne0 weights
 * a row) tensor: lengths from its histogram, max_len 11. */
static void code_matrix(const uint8_t *sym, const wp_lanes_shape *shape, int type, int64_t ne0,
                        wp_record *rec, wp_coded_view *v, double *entropy)
{
    uint64_t counts[256] = {0};
    uint64_t n = shape->rows * shape->row_sym;
    for (uint64_t i = 0; i < n; i++)
        counts[sym[i]]++;
    uint8_t lengths[256];
    if (wp_huf_lengths(counts, 256, WP_HUF_LEN, lengths))
        die("wp_huf_lengths failed");
    *entropy = wp_huf_entropy(counts, 256);
    char err[256];
    wp_record_init(rec);
    wp_record_set_name(rec, "bench.weight");
    rec->type = (uint32_t)type;
    rec->n_dims = 2;
    rec->ne[0] = ne0;
    rec->ne[1] = (int64_t)shape->rows;
    if (wp_coded_encode(rec, sym, shape, lengths, WP_HUF_LEN, err, sizeof err) ||
        wp_coded_view_get(rec, v, err, sizeof err)) {
        fprintf(stderr, "bench: coding: %s\n", err);
        exit(1);
    }
}

/* ---- issue 4: decode throughput of coded Q4_K ---------------------------- */

enum { CR = 4096, CC = 14336 };

static int codes(void)
{
    const int type = WP_Q4_K;
    const double nw = (double)CR * CC;
    float *W = xmalloc(sizeof(float) * (size_t)CR * CC);
    realistic(W, CR, CC);
    wp_codes_geom g;
    if (wp_codes_geom_get(type, CC, CR, &g))
        die("wp_codes_geom_get failed");
    uint8_t *blocks = xmalloc(g.block_len);
    ggml_quantize_chunk(GGML_TYPE_Q4_K, W, blocks, 0, CR, CC, NULL);
    free(W);
    uint8_t *sym = xmalloc(g.n_sym), *side = xmalloc(g.side_len), *out = xmalloc(g.n_sym);
    wp_codes_split(&g, blocks, sym, side);
    free(blocks);
    free(side);
    wp_lanes_shape shape = {g.rows, g.row_sym, g.tile_sym};
    wp_record rec;
    wp_coded_view v;
    double H;
    code_matrix(sym, &shape, type, CC, &rec, &v, &H);
    const double ns = (double)g.n_sym;

    zctx z19, z3;
    zstd_prepare(&z19, sym, g.n_sym, 19, out);
    zstd_prepare(&z3, sym, g.n_sym, 3, out);
    dctx fast = {&v, 0, out}, ref = {&v, 1, out};
    timed tv[3] = {{"fast lane decoder", run_decode, &fast, sym, g.n_sym, 0},
                   {"zstd -19", run_zdec, &z19, sym, g.n_sym, 0},
                   {"zstd -3", run_zdec, &z3, sym, g.n_sym, 0}};
    int nr, nref;
    time_round_robin(tv, 3, out, 5, 3.0, &nr);
    timed tr = {"reference lane decoder", run_decode, &ref, sym, g.n_sym, 0};
    time_round_robin(&tr, 1, out, 3, 2.0, &nref);
    double tf = tv[0].t;

    printf("\n## Issue 4: decode of a coded %dx%d Q4_K matrix (ggml_quantize_chunk, pair "
           "symbols, Huffman max_len 11), one thread\n",
           CR, CC);
    printf("Baseline: libzstd on the same %" PRIu64 " symbol bytes (the 4-bit codes, 2 a byte), "
           "decoded round-robin with ours (%d rounds). Ours = CODED payload incl. table, "
           "offsets, lane counts.\n\n",
           g.n_sym, nr);
    printf("| coder | bytes | bits/weight | ours/this size | decode ms | Msymbols/s | "
           "Mweights/s | ours/this decode time |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    double ours = (double)rec.payload_len;
    printf("| wpack lanes, fast decoder | %" PRIu64 " | %.4f | 1.000 | %.1f | %.0f | %.0f | "
           "1.00 |\n",
           rec.payload_len, 8 * ours / nw, tf * 1e3, ns / tf / 1e6, nw / tf / 1e6);
    printf("| wpack lanes, reference decoder (information; %d runs) | %" PRIu64 " | %.4f | "
           "1.000 | %.1f | %.0f | %.0f | %.2f |\n",
           nref, rec.payload_len, 8 * ours / nw, tr.t * 1e3, ns / tr.t / 1e6, nw / tr.t / 1e6,
           tf / tr.t);
    const zctx *zs[2] = {&z19, &z3};
    for (int i = 0; i < 2; i++)
        printf("| zstd -%d (compress %.1f s) | %zu | %.4f | %.3f | %.1f | %.0f | %.0f | %.2f |\n",
               zs[i]->level, zs[i]->ctime, zs[i]->zlen, 8.0 * zs[i]->zlen / nw,
               ours / zs[i]->zlen, tv[1 + i].t * 1e3, ns / tv[1 + i].t / 1e6,
               nw / tv[1 + i].t / 1e6, tf / tv[1 + i].t);
    printf("| fixed width (4 bits) | %" PRIu64 " | 4.0000 | %.3f | | | | |\n", g.n_sym,
           ours / g.n_sym);
    printf("| entropy bound H(pair)/2 | %.0f | %.4f | %.3f | | | | |\n", H * ns / 8, H * ns / nw,
           ours / (H * ns / 8));
    printf("\nOf ours: tables, offsets and lane counts %" PRIu64 " bytes (%.4f b/w); lane words "
           "%.4f b/w, of which above the entropy bound %.4f b/w (code lengths and the zero bits "
           "ending each lane's last word).\n",
           v.table_bytes, 8.0 * v.table_bytes / nw, 32.0 * v.n_words / nw,
           32.0 * v.n_words / nw - H * ns / nw);
    printf("Goal (issue 4): ours/zstd-19 size < 1 (%s: %.3f) and decode faster than zstd "
           "(%s: %.2f of zstd-19's time, %.2f of zstd-3's).\n",
           ours < z19.zlen ? "met" : "not met", ours / z19.zlen,
           tf < tv[1].t && tf < tv[2].t ? "met" : "not met", tf / tv[1].t, tf / tv[2].t);
    zstd_release(&z19);
    zstd_release(&z3);
    wp_record_free(&rec);
    free(sym);
    free(out);
    return 0;
}

/* ---- issue 5: BF16 exponent decode ---------------------------------------- */

static int bf16(void)
{
    const double nw = (double)CR * CC;
    const size_t n = (size_t)CR * CC;
    uint16_t *b = xmalloc(2 * n);
    /* Gaussian-ish weights with a per-row (log-normal) scale spread */
    for (int64_t r = 0; r < CR; r++) {
        double s = 0.02 * exp(0.5 * gauss());
        for (int64_t c = 0; c < CC; c++)
            b[r * CC + c] = wp_f32_to_bf16((float)(s * gauss()));
    }
    uint8_t *hi = xmalloc(n), *lo = xmalloc(n), *out = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        hi[i] = (uint8_t)(b[i] >> 8), lo[i] = (uint8_t)b[i];
    /* the low bytes at zstd -3, for the baseline's whole-weight figure */
    zctx zl;
    zstd_prepare(&zl, lo, n, 3, out);
    free(lo);

    /* ours: palette 16 (pairs of 4-bit indices) and palette 0 (exponent bytes) */
    static const int pal[2] = {16, 0};
    struct wp_bf16_split s[2];
    struct wp_bf16_stats st[2];
    wp_record rec[2];
    wp_coded_view v[2];
    dctx dc[2];
    double ebytes[2];
    for (int k = 0; k < 2; k++) {
        int rc = wp_bf16_split(&s[k], WP_BF16, b, CR, CC, pal[k], WP_BF16_GROUP_DEFAULT);
        if (rc)
            die(wp_bf16_strerror(rc));
        wp_bf16_stats(&s[k], &st[k]);
        wp_lanes_shape shape = {(uint64_t)CR, (uint64_t)s[k].sym_per_row, pal[k] ? 128u : 256u};
        double H;
        code_matrix(s[k].sym, &shape, WP_BF16, CC, &rec[k], &v[k], &H);
        dc[k] = (dctx){&v[k], 0, out};
        ebytes[k] = (double)rec[k].payload_len +
                    (pal[k] ? WP_BF16_PALETTE_MAX + s[k].vmap_bytes + s[k].vbytes_len : 0);
    }
    free(b);
    /* baselines: ZipNN's high-byte stream at 19 and 3; the palette-0 symbols at 3 */
    zctx zh19, zh3, ze3;
    zstd_prepare(&zh19, hi, n, 19, out);
    zstd_prepare(&zh3, hi, n, 3, out);
    zstd_prepare(&ze3, s[1].sym, n, 3, out);
    timed tv[5] = {{"palette 16 decoder", run_decode, &dc[0], s[0].sym, s[0].n_sym, 0},
                   {"palette 0 decoder", run_decode, &dc[1], s[1].sym, s[1].n_sym, 0},
                   {"zstd -19 high bytes", run_zdec, &zh19, hi, n, 0},
                   {"zstd -3 high bytes", run_zdec, &zh3, hi, n, 0},
                   {"zstd -3 exponent bytes", run_zdec, &ze3, s[1].sym, n, 0}};
    int nr;
    time_round_robin(tv, 5, out, 5, 3.0, &nr);

    printf("\n## Issue 5: BF16 exponent decode, %dx%d Gaussian matrix with row scale spread, one "
           "thread\n",
           CR, CC);
    printf("Ours: wp_bf16_split, exponent symbols Huffman-coded (max_len 11) in lanes, fast "
           "decoder; exponent part = CODED payload (+ palette, verbatim map and verbatim bytes).\n");
    printf("Baseline: libzstd on the BF16 high bytes grouped as ZipNN does (sign + 7 exponent "
           "bits; the low byte, 1 exponent bit + mantissa, is a separate stream), decoded "
           "round-robin with ours (%d rounds).\n\n",
           nr);
    printf("| coder | exponent part bytes | exponent b/w | whole weight b/w | decode ms | "
           "Mweights/s | ours(p16)/this size | ours(p16)/this decode time |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < 2; k++)
        printf("| wpack palette %d%s | %.0f | %.4f | %.4f | %.1f | %.0f | %.3f | %.2f |\n", pal[k],
               pal[k] ? " (pairs)" : " (exponent bytes)", ebytes[k], 8 * ebytes[k] / nw,
               8 + 8 * ebytes[k] / nw, tv[k].t * 1e3, nw / tv[k].t / 1e6, ebytes[0] / ebytes[k],
               tv[0].t / tv[k].t);
    const zctx *zs[3] = {&zh19, &zh3, &ze3};
    for (int i = 0; i < 3; i++) {
        const timed *t = &tv[2 + i];
        printf("| zstd -%d, %s (compress %.1f s) | %zu | %.4f | %.4f | %.1f | %.0f | %.3f | %.2f "
               "|\n",
               zs[i]->level, i < 2 ? "high bytes (ZipNN)" : "exponent bytes (palette 0's symbols)",
               zs[i]->ctime, zs[i]->zlen, 8.0 * zs[i]->zlen / nw,
               8.0 * zs[i]->zlen / nw + (i < 2 ? 8.0 * zl.zlen / nw : 8), t->t * 1e3,
               nw / t->t / 1e6, ebytes[0] / zs[i]->zlen, tv[0].t / t->t);
    }
    printf("\n");
    for (int i = 0; i < 2; i++)
        printf("Against ZipNN-style zstd -%d (high bytes): size palette 16 %.3f, palette 0 %.3f; "
               "decode time palette 16 %.2f, palette 0 %.2f (< 1: ours smaller / faster)\n",
               zs[i]->level, ebytes[0] / zs[i]->zlen, ebytes[1] / zs[i]->zlen,
               tv[0].t / tv[2 + i].t, tv[1].t / tv[2 + i].t);
    printf("Against zstd -3 of the same exponent bytes: palette 0 size %.3f, decode time %.2f.\n",
           ebytes[1] / ze3.zlen, tv[1].t / tv[4].t);
    printf("H(exponent) = %.4f b/w (limit 8 + H = %.4f); palette 16: verbatim groups %.3f%%, "
           "verbatim map + bytes %.4f b/w. The ZipNN high byte also carries the sign bit; its "
           "whole-weight b/w adds the low bytes at zstd -3 (%.4f b/w). Ours' whole weight adds "
           "the 8 raw bits.\n",
           st[0].h_exp, 8 + st[0].h_exp, 100 * st[0].verbatim_frac,
           8.0 * (s[0].vmap_bytes + s[0].vbytes_len) / nw, 8.0 * zl.zlen / nw);
    for (int k = 0; k < 2; k++) {
        wp_record_free(&rec[k]);
        wp_bf16_split_free(&s[k]);
    }
    zstd_release(&zl);
    zstd_release(&zh19);
    zstd_release(&zh3);
    zstd_release(&ze3);
    free(hi);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench machine|quant|rss|factor|codes|bf16\n");
        return 2;
    }
    if (!strcmp(argv[1], "machine"))
        return machine();
    if (!strcmp(argv[1], "quant"))
        return quant();
    if (!strcmp(argv[1], "rss"))
        return rss();
    if (!strcmp(argv[1], "factor"))
        return factor();
    if (!strcmp(argv[1], "codes"))
        return codes();
    if (!strcmp(argv[1], "bf16"))
        return bf16();
    fprintf(stderr, "bench: unknown section %s\n", argv[1]);
    return 2;
}
