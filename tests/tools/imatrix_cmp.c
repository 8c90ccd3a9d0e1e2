/* imatrix_cmp - compare hessian's records with llama-imatrix's output.
 *
 *   imatrix_cmp IMATRIX.gguf|- HESSIANS [TOL]
 *   imatrix_cmp --diag HESSIANS NAME N    first N of diag(H)/n_tokens of NAME
 *   imatrix_cmp --xxh64 FILE              XXH64 (seed 0) of FILE, 16 hex digits
 *
 * Reads IMATRIX.gguf (with "-", only the checks of the Hessians themselves) with llama.cpp's own gguf API (gguf_init_from_file, so
 * the reference is read by the reference) and the Hessian stream with
 * lib/stream.h, and for every Hessian record H (cols × cols doubles, attr
 * n_tokens) checks, printing one "key value" line each:
 *   records      Hessian records in the stream
 *   matched      records with an imatrix entry (<name>.in_sum2, <name>.counts)
 *   unmatched    imatrix entries with no record
 *   max_rel      max over matched weights and columns of
 *                |H_jj / n_tokens - in_sum2_j / counts| / (in_sum2_j / counts)
 *                (a mixture-of-experts record, n_dims 3: per expert e, its
 *                H_e against in_sum2[e] / counts[e], its rows the attr
 *                expert_tokens' e-th; an expert no token reached is skipped)
 *   worst        the weight and column (WEIGHT[e][j] for an expert) where
 *                max_rel is reached
 *   count_diff   records whose n_tokens (expert_tokens) differs from the
 *                imatrix count (counts)
 *   asym         records with H_ij != H_ji for some i, j (bit-exact test)
 *   chol_fail    records (any expert's H) for which the Cholesky factorisation of
 *                H + 1e-6·I (LAPACKE_dpotrf) fails (H not positive semi-definite)
 *   n_tokens     the n_tokens attribute of the first record
 * Exit status 0 when max_rel <= TOL (default 1e-5) and the three counts above
 * are 0 and every imatrix entry is matched, 1 otherwise, 2 on a read error.
 */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ggml.h"
#include "gguf.h"
#include "stream.h"

/* --diag and --xxh64 modes (see top). */
static int small_modes(int argc, char **argv)
{
    if (!strcmp(argv[1], "--xxh64")) {
        FILE *f = fopen(argv[2], "rb");
        if (!f)
            return 2;
        XXH64_state_t *st = XXH64_createState();
        XXH64_reset(st, 0);
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            XXH64_update(st, buf, n);
        printf("%016llx\n", (unsigned long long)XXH64_digest(st));
        XXH64_freeState(st);
        fclose(f);
        return 0;
    }
    if (argc < 5)
        return 2;
    FILE *f = fopen(argv[2], "rb");
    char err[512];
    wp_reader *rd = f ? wp_reader_open(f, argv[2], err, sizeof err) : NULL;
    if (!rd)
        return 2;
    wp_record r;
    wp_record_init(&r);
    while (wp_reader_next(rd, &r) > 0) {
        if (r.kind != WP_REC_HESSIAN || strcmp(r.name, argv[3]))
            continue;
        const double *H = (const double *)r.payload;
        const double nt = (double)wp_attr_i64(&r, "n_tokens", 1);
        for (int64_t j = 0; j < atoi(argv[4]) && j < r.ne[0]; j++)
            printf("%s%.9g", j ? " " : "", H[j * r.ne[0] + j] / nt);
        printf("\n");
        return 0;
    }
    fprintf(stderr, "imatrix_cmp: %s: no Hessian record %s\n", argv[2], argv[3]);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && (!strcmp(argv[1], "--diag") || !strcmp(argv[1], "--xxh64")))
        return small_modes(argc, argv);
    if (argc < 3) {
        fprintf(stderr, "usage: imatrix_cmp IMATRIX.gguf HESSIANS [TOL]\n");
        return 2;
    }
    const double tol = argc > 3 ? atof(argv[3]) : 1e-5;

    struct ggml_context *gctx = NULL;
    struct gguf_init_params gp = {.no_alloc = false, .ctx = &gctx};
    struct gguf_context *gg = strcmp(argv[1], "-") ? gguf_init_from_file(argv[1], gp) : NULL;
    if (!gg && strcmp(argv[1], "-")) {
        fprintf(stderr, "imatrix_cmp: %s: gguf_init_from_file failed\n", argv[1]);
        return 2;
    }
    int n_entries = 0;
    for (int64_t i = 0; gg && i < gguf_get_n_tensors(gg); i++) {
        const char *nm = gguf_get_tensor_name(gg, i);
        size_t l = strlen(nm);
        n_entries += l > 8 && !strcmp(nm + l - 8, ".in_sum2");
    }

    FILE *f = fopen(argv[2], "rb");
    char err[512];
    wp_reader *rd = f ? wp_reader_open(f, argv[2], err, sizeof err) : NULL;
    if (!rd) {
        fprintf(stderr, "imatrix_cmp: %s: cannot read\n", argv[2]);
        return 2;
    }
    wp_record r;
    wp_record_init(&r);
    int records = 0, matched = 0, count_diff = 0, asym = 0, chol_fail = 0, k;
    long long first_tokens = -1;
    double max_rel = 0;
    char worst[300] = "-";
    while ((k = wp_reader_next(rd, &r)) > 0) {
        if (r.kind != WP_REC_HESSIAN)
            continue;
        records++;
        const int64_t c = r.ne[0], n_exp = r.n_dims == 3 ? r.ne[2] : 1;
        const long long nt = wp_attr_i64(&r, "n_tokens", -1);
        if (first_tokens < 0)
            first_tokens = nt;
        if (r.n_dims < 2 || r.n_dims > 3 || r.ne[1] != c || n_exp < 1 ||
            r.payload_len != (uint64_t)(c * c * n_exp) * 8) {
            fprintf(stderr, "imatrix_cmp: %s: bad shape\n", r.name);
            return 2;
        }
        /* rows per expert: expert_tokens=t0,t1,... (MoE), else n_tokens */
        long long *tok = malloc((size_t)n_exp * sizeof *tok);
        size_t len = 0;
        const char *et = n_exp > 1 ? wp_attr_find(&r, "expert_tokens", &len) : NULL;
        for (int64_t e = 0; e < n_exp; e++) {
            char *end = NULL;
            tok[e] = et ? strtoll(et, &end, 10) : nt;
            if (et && (end == et || (*end != ',' && e + 1 < n_exp))) {
                fprintf(stderr, "imatrix_cmp: %s: bad expert_tokens\n", r.name);
                return 2;
            }
            if (et)
                et = end + 1;
        }
        int sym = 1, pd = 1;
        for (int64_t e = 0; e < n_exp; e++) {
            const double *H = (const double *)r.payload + e * c * c;
            for (int64_t i = 0; i < c && sym; i++)
                for (int64_t j = i + 1; j < c; j++)
                    if (H[i * c + j] != H[j * c + i]) {
                        sym = 0;
                        break;
                    }
            double *A = malloc((size_t)(c * c) * sizeof *A);
            memcpy(A, H, (size_t)(c * c) * sizeof *A);
            for (int64_t i = 0; i < c; i++)
                A[i * c + i] += 1e-6;
            pd &= LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)c, A, (lapack_int)c) == 0;
            free(A);
        }
        asym += !sym;
        chol_fail += !pd;

        char nm[300];
        snprintf(nm, sizeof nm, "%s.in_sum2", r.name);
        struct ggml_tensor *sum = gctx ? ggml_get_tensor(gctx, nm) : NULL;
        snprintf(nm, sizeof nm, "%s.counts", r.name);
        struct ggml_tensor *cnt = gctx ? ggml_get_tensor(gctx, nm) : NULL;
        if (!sum || !cnt) {
            free(tok);
            continue;
        }
        matched++;
        /* llama-imatrix's entry of a MoE weight: in_sum2 {c, n_expert}, counts {1, n_expert} */
        if (sum->type != GGML_TYPE_F32 || cnt->type != GGML_TYPE_F32 || ggml_nelements(sum) != c * n_exp ||
            ggml_nelements(cnt) != n_exp) {
            fprintf(stderr, "imatrix_cmp: %s: unexpected imatrix shape\n", r.name);
            return 2;
        }
        int differs = 0;
        for (int64_t e = 0; e < n_exp; e++) {
            const double *H = (const double *)r.payload + e * c * c;
            const float count = ((const float *)cnt->data)[e];
            differs |= (double)count != (double)tok[e];
            if (count == 0 || tok[e] == 0)   /* an expert no token reached: nothing to compare */
                continue;
            for (int64_t j = 0; j < c; j++) {
                const double ref = ((const float *)sum->data)[e * c + j] / (double)count;
                const double ours = H[j * c + j] / (double)tok[e];
                const double rel = fabs(ours - ref) / (fabs(ref) > 1e-30 ? fabs(ref) : 1e-30);
                if (rel > max_rel || isnan(rel)) {
                    max_rel = isnan(rel) ? INFINITY : rel;
                    if (n_exp > 1)
                        snprintf(worst, sizeof worst, "%s[%lld][%lld]", r.name, (long long)e, (long long)j);
                    else
                        snprintf(worst, sizeof worst, "%s[%lld]", r.name, (long long)j);
                }
            }
        }
        count_diff += differs;
        free(tok);
    }
    if (k < 0) {
        fprintf(stderr, "imatrix_cmp: %s\n", wp_reader_error(rd));
        return 2;
    }
    printf("records %d\nmatched %d\nunmatched %d\nmax_rel %.3g\nworst %s\ncount_diff %d\nasym %d\nchol_fail %d\n"
           "n_tokens %lld\n",
           records, matched, n_entries - matched, max_rel, worst, count_diff, asym, chol_fail, first_tokens);
    wp_record_free(&r);
    wp_reader_close(rd);
    fclose(f);
    if (gg) {
        gguf_free(gg);
        ggml_free(gctx);
    }
    return max_rel <= tol && count_diff == 0 && asym == 0 && chol_fail == 0 && matched == n_entries ? 0 : 1;
}
