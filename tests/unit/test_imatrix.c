/* test_imatrix - lib/imatrix.c (llama-imatrix GGUF files through wpack's own
 * GGUF reader) against llama.cpp's gguf API reading the same files:
 *   - a file written by the real llama-imatrix on stories260K (run through
 *     system() when $REF_BUILD/bin/llama-imatrix and the model exist, else
 *     skipped with a message);
 *   - synthetic files written with the gguf API: a dense and a MoE entry (one
 *     expert with count 0 -> importance 1, as llama-quantize), and broken
 *     files (no metadata, sums without counts, F16 sums, truncated, not GGUF);
 *   - legacy imatrix.dat files laid out here as save_imatrix_legacy writes
 *     them: importance value/ncall bit for bit, ncall <= 0, a repeated name,
 *     trailers cut or followed by junk (read as common_imatrix_load_legacy
 *     reads them), and broken ones (truncated, negative lengths, huge
 *     counts); and llama-imatrix's own .dat of the run above against its GGUF.
 * Run from the repository root (tests/run does); WPACK_DATA and REF_BUILD
 * locate the data and the reference build as in the bats files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml.h"
#include "gguf.h"
#include "gguf_file.h"
#include "imatrix.h"
#include "stream.h"
#include "tap.h"

static char dir[] = "/tmp/wpack-imatrix-XXXXXX";

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* Compare every entry of the file at path read by wp_imatrix_load with what
 * llama.cpp's gguf API reads (bit for bit), and the importance with
 * llama-quantize's formula.  Returns the number of entries. */
static int compare_with_gguf(const char *path, const char *what)
{
    wp_imatrix im;
    char err[512] = "";
    int rc = wp_imatrix_load(path, &im, err, sizeof err);
    CHECK(rc == 0, "%s: wp_imatrix_load reads it (%s)", what, err);
    if (rc)
        return 0;
    struct ggml_context *ctx = NULL;
    struct gguf_init_params gp = {.no_alloc = false, .ctx = &ctx};
    struct gguf_context *g = gguf_init_from_file(path, gp);
    CHECK(g != NULL, "%s: the gguf API reads it", what);
    if (!g) {
        wp_imatrix_free(&im);
        return 0;
    }
    int n_ref = 0, bad = 0, bad_imp = 0;
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const char *nm = gguf_get_tensor_name(g, i);
        size_t l = strlen(nm);
        if (l <= 8 || strcmp(nm + l - 8, ".in_sum2"))
            continue;
        n_ref++;
        char base[256], cn[300];
        snprintf(base, sizeof base, "%.*s", (int)(l - 8), nm);
        snprintf(cn, sizeof cn, "%s.counts", base);
        const struct ggml_tensor *s = ggml_get_tensor(ctx, nm), *c = ggml_get_tensor(ctx, cn);
        const wp_imatrix_entry *e = wp_imatrix_find(&im, base);
        if (!e || !c || e->n_mat != ggml_nelements(c) || e->n_mat * e->cols != ggml_nelements(s)) {
            bad++;
            continue;
        }
        const float *sv = s->data, *cv = c->data;
        bad += memcmp(e->sum2, sv, (size_t)ggml_nelements(s) * 4) != 0;
        bad += memcmp(e->counts, cv, (size_t)e->n_mat * 4) != 0;
        for (int64_t m = 0; m < e->n_mat; m++) {
            const float cnt = (float)lround(cv[m]); /* common_imatrix_load + load_imatrix */
            for (int64_t j = 0; j < e->cols; j++) {
                const float want = cnt > 0.0f ? sv[m * e->cols + j] / cnt : 1.0f;
                bad_imp += memcmp(&want, &e->importance[m * e->cols + j], 4) != 0;
            }
        }
    }
    CHECK(n_ref == im.n && bad == 0, "%s: %d entries, sums and counts equal the gguf API's bit for bit (%d bad)",
          what, im.n, bad);
    CHECK(bad_imp == 0, "%s: importance = in_sum2 / lround(counts) as llama-quantize (%d differ)", what, bad_imp);
    const int64_t kc = gguf_find_key(g, "imatrix.chunk_count"), ks = gguf_find_key(g, "imatrix.chunk_size"),
                  kd = gguf_find_key(g, "imatrix.datasets");
    CHECK(kc >= 0 && ks >= 0 && kd >= 0 && im.chunk_count == gguf_get_val_u32(g, kc) &&
              im.chunk_size == gguf_get_val_u32(g, ks) && im.n_datasets == (int)gguf_get_arr_n(g, kd) &&
              (im.n_datasets == 0 || !strcmp(im.datasets[0], gguf_get_arr_str(g, kd, 0))),
          "%s: metadata chunk_count %u, chunk_size %u, %d dataset(s)", what, im.chunk_count, im.chunk_size,
          im.n_datasets);
    int n = im.n;
    gguf_free(g);
    ggml_free(ctx);
    wp_imatrix_free(&im);
    return n;
}

/* Write a synthetic imatrix file: "blk.0.attn_q.weight" (4 columns, count 10)
 * and "blk.0.ffn_up_exps.weight" (3 columns, 2 experts, counts 5 and 0).
 * flags: 1 no metadata, 2 drop the second entry's counts, 4 F16 sums. */
static void write_synthetic(const char *path, int flags)
{
    struct ggml_init_params ip = {.mem_size = 1 << 20, .mem_buffer = NULL, .no_alloc = false};
    struct ggml_context *ctx = ggml_init(ip);
    struct gguf_context *g = gguf_init_empty();
    if (!(flags & 1)) {
        const char *ds[] = {"calib.txt"};
        gguf_set_val_str(g, "general.type", "imatrix");
        gguf_set_arr_str(g, "imatrix.datasets", ds, 1);
        gguf_set_val_u32(g, "imatrix.chunk_count", 2);
        gguf_set_val_u32(g, "imatrix.chunk_size", 5);
    }
    struct ggml_tensor *s1 = ggml_new_tensor_2d(ctx, (flags & 4) ? GGML_TYPE_F16 : GGML_TYPE_F32, 4, 1);
    struct ggml_tensor *c1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, 1);
    struct ggml_tensor *s2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    struct ggml_tensor *c2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, 2);
    ggml_set_name(s1, "blk.0.attn_q.weight.in_sum2");
    ggml_set_name(c1, "blk.0.attn_q.weight.counts");
    ggml_set_name(s2, "blk.0.ffn_up_exps.weight.in_sum2");
    ggml_set_name(c2, "blk.0.ffn_up_exps.weight.counts");
    if (flags & 4)
        memset(s1->data, 0, ggml_nbytes(s1));
    else
        for (int j = 0; j < 4; j++)
            ((float *)s1->data)[j] = 10.0f * (j + 1);
    ((float *)c1->data)[0] = 10;
    for (int j = 0; j < 6; j++)
        ((float *)s2->data)[j] = j < 3 ? 2.5f * (j + 1) : 0.0f;
    ((float *)c2->data)[0] = 5;
    ((float *)c2->data)[1] = 0;
    gguf_add_tensor(g, s1);
    gguf_add_tensor(g, c1);
    gguf_add_tensor(g, s2);
    if (!(flags & 2))
        gguf_add_tensor(g, c2);
    gguf_write_to_file(g, path, false);
    gguf_free(g);
    ggml_free(ctx);
}

/* Write a GGUF of 1-D F32 tensors names[i] (n[i] values v[i]) with the
 * metadata meta asks for: 1 imatrix.datasets, 2 imatrix.chunk_count (a u32;
 * 4: an i32 instead), 8 imatrix.chunk_size. */
static void write_tensors(const char *path, int meta, int nt, const char *const *names, const int *n,
                          const float *const *v)
{
    struct ggml_init_params ip = {.mem_size = 1 << 20, .mem_buffer = NULL, .no_alloc = false};
    struct ggml_context *ctx = ggml_init(ip);
    struct gguf_context *g = gguf_init_empty();
    const char *ds[] = {"calib.txt"};
    if (meta & 1)
        gguf_set_arr_str(g, "imatrix.datasets", ds, 1);
    if (meta & 2)
        gguf_set_val_u32(g, "imatrix.chunk_count", 2);
    if (meta & 4)
        gguf_set_val_i32(g, "imatrix.chunk_count", 2);
    if (meta & 8)
        gguf_set_val_u32(g, "imatrix.chunk_size", 5);
    if (meta & 16)
        gguf_set_val_str(g, "general.architecture", "llama");
    for (int i = 0; i < nt; i++) {
        struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n[i]);
        ggml_set_name(t, names[i]);
        memcpy(t->data, v[i], (size_t)n[i] * 4);
        gguf_add_tensor(g, t);
    }
    gguf_write_to_file(g, path, false);
    gguf_free(g);
    ggml_free(ctx);
}

/* wp_imatrix_load fails on path with a message containing want. */
static void expect_error(const char *path, const char *want, const char *what)
{
    wp_imatrix im;
    char err[512] = "";
    int rc = wp_imatrix_load(path, &im, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want) && strstr(err, path) && im.n == 0,
          "%s: refused with a message naming the file (%s)", what, err);
}


/* ---- legacy imatrix.dat, laid out as save_imatrix_legacy writes it ----- */

struct dat {
    unsigned char b[4096];
    size_t n;
};
static void dat_i32(struct dat *d, int32_t v)
{
    for (int i = 0; i < 4; i++)
        d->b[d->n++] = (unsigned char)((uint32_t)v >> (8 * i));
}
static void dat_bytes(struct dat *d, const void *p, size_t n)
{
    memcpy(d->b + d->n, p, n);
    d->n += n;
}
/* one entry: i32 len, name, i32 ncall, i32 nval, nval f32 */
static void dat_entry(struct dat *d, const char *name, size_t len, int32_t ncall, int32_t nval, const float *v)
{
    dat_i32(d, (int32_t)len);
    dat_bytes(d, name, len);
    dat_i32(d, ncall);
    dat_i32(d, nval);
    dat_bytes(d, v, (size_t)nval * 4);
}
/* n bytes from b as the whole file at path (a failure shows in the load checked after). */
static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}
static void dat_write(const char *path, const struct dat *d, size_t n) { write_bytes(path, d->b, n); }

/* The synthetic legacy file: "blk.0.attn_q.weight" (ncall 3, values
 * 3,6,7.5,1e-3 x 3 scaled), "blk.0.ffn_up_exps.weight" (ncall 0, 6 values:
 * importance = the values), "blk.1.attn_k.weight" whose stored name runs on
 * after a NUL, "blk.0.attn_q.weight" again (ncall 7: this one is kept),
 * then chunk count 5 and dataset "calib.txt".  Offsets: *entries_end the
 * end of the entries (start of the trailer). */
static const float q_vals[4] = {3.0f, 6.0f, 7.5f, 0.1f}, q2_vals[4] = {7.0f, 0.7f, 1.0f, 1e-3f},
                   x_vals[6] = {0.5f, 1.5f, 2.5f, -1.0f, 0.0f, 4.0f}, k_vals[2] = {9.0f, 3.0f};
static void dat_synthetic(struct dat *d, size_t *entries_end)
{
    d->n = 0;
    dat_i32(d, 4);
    dat_entry(d, "blk.0.attn_q.weight", 19, 3, 4, q_vals);
    dat_entry(d, "blk.0.ffn_up_exps.weight", 24, 0, 6, x_vals);
    dat_entry(d, "blk.1.attn_k.weight\0junk", 24, -2, 2, k_vals);
    dat_entry(d, "blk.0.attn_q.weight", 19, 7, 4, q2_vals);
    *entries_end = d->n;
    dat_i32(d, 5);
    dat_i32(d, 9);
    dat_bytes(d, "calib.txt", 9);
}

/* The synthetic file's entries and importance, bit for bit. */
static void check_legacy_synthetic(const wp_imatrix *im, const char *what)
{
    const wp_imatrix_entry *q = wp_imatrix_find(im, "blk.0.attn_q.weight"),
                           *x = wp_imatrix_find(im, "blk.0.ffn_up_exps.weight"),
                           *k = wp_imatrix_find(im, "blk.1.attn_k.weight");
    CHECK(im->legacy == 1 && im->n == 3 && q && x && k && im->chunk_size == 0,
          "%s: legacy, 3 entries (a repeated name counts once, a name ends at its NUL)", what);
    if (!q || !x || !k)
        return;
    int bad = 0;
    for (int j = 0; j < 4; j++) {
        const float want = q2_vals[j] / 7.0f; /* load_imatrix: sums[i] / ncall */
        bad += memcmp(&want, &q->importance[j], 4) != 0 || q->sum2[j] != q2_vals[j];
    }
    CHECK(q->cols == 4 && q->n_mat == 1 && q->counts[0] == 7.0f && bad == 0,
          "%s: the later blk.0.attn_q.weight (ncall 7) is kept; importance = value / 7.0f bit for bit", what);
    CHECK(x->cols == 6 && x->n_mat == 1 && !memcmp(x->importance, x_vals, sizeof x_vals),
          "%s: ncall 0: importance = the values as stored (not 1 as for a GGUF count 0)", what);
    CHECK(k->cols == 2 && !memcmp(k->importance, k_vals, sizeof k_vals) && k->counts[0] == -2.0f,
          "%s: ncall -2: importance = the values as stored", what);
}

/* wp_imatrix_load reads the file at path: returns 0 and fills *im. */
static int load_ok(const char *path, wp_imatrix *im, const char *what)
{
    char err[512] = "";
    int rc = wp_imatrix_load(path, im, err, sizeof err);
    CHECK(rc == 0, "%s: wp_imatrix_load reads it (%s)", what, err);
    return rc;
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char p[512], q[512];

    /* synthetic files */
    path_in(p, sizeof p, "syn.gguf");
    write_synthetic(p, 0);
    CHECK(compare_with_gguf(p, "synthetic") == 2, "synthetic: both entries read");
    wp_imatrix im;
    char err[512] = "";
    if (wp_imatrix_load(p, &im, err, sizeof err) == 0) {
        const wp_imatrix_entry *d = wp_imatrix_find(&im, "blk.0.attn_q.weight");
        const wp_imatrix_entry *m = wp_imatrix_find(&im, "blk.0.ffn_up_exps.weight");
        CHECK(d && d->cols == 4 && d->n_mat == 1 && d->importance[0] == 1.0f && d->importance[3] == 4.0f,
              "dense entry: 4 columns, importance = in_sum2 / 10");
        CHECK(m && m->cols == 3 && m->n_mat == 2 && m->importance[0] == 0.5f && m->importance[2] == 1.5f &&
                  m->importance[3] == 1.0f && m->importance[5] == 1.0f,
              "MoE entry: 2 experts x 3 columns; the expert with count 0 gets importance 1");
        CHECK(!wp_imatrix_find(&im, "blk.0.attn_k.weight") && !wp_imatrix_find(&im, "blk.0.attn_q.weight.in_sum2"),
              "wp_imatrix_find: absent names give NULL");
        CHECK(im.n_datasets == 1 && !strcmp(im.datasets[0], "calib.txt") && im.chunk_count == 2 &&
                  im.chunk_size == 5,
              "metadata: datasets, chunk_count, chunk_size");
        wp_imatrix_free(&im);
    } else {
        CHECK(0, "synthetic file loads (%s)", err);
    }

    /* broken files */
    path_in(p, sizeof p, "nometa.gguf");
    write_synthetic(p, 1);
    expect_error(p, "missing imatrix metadata", "no imatrix.* metadata");
    path_in(p, sizeof p, "nocounts.gguf");
    write_synthetic(p, 2);
    expect_error(p, "mismatched sums and counts for blk.0.ffn_up_exps.weight", "in_sum2 without counts");
    path_in(p, sizeof p, "f16.gguf");
    write_synthetic(p, 4);
    expect_error(p, "not F32", "F16 in_sum2");
    path_in(p, sizeof p, "syn.gguf");
    path_in(q, sizeof q, "cut.gguf");
    {
        FILE *in = fopen(p, "rb"), *out = fopen(q, "wb");
        char buf[4096];
        size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
        if (out)
            fwrite(buf, 1, n > 40 ? n - 40 : n, out);
        if (in)
            fclose(in);
        if (out)
            fclose(out);
    }
    expect_error(q, "runs past the end", "truncated file");
    path_in(p, sizeof p, "text.gguf");
    write_bytes(p, "Once upon a time there was a legacy .dat file.\n", 47);
    /* (named as a text: the legacy reader's "entry 1 of 1701015119: name length ..." was the
       message, a new user's trial) */
    expect_error(p, "text.gguf: a text, not an importance matrix (llama-imatrix writes one, GGUF or imatrix.dat; "
                    "GPTQ's Hessians of a text: hessian -f)", "text file");
    path_in(p, sizeof p, "binary.dat");
    write_bytes(p, "\001\002\003\004\005\006\007\010junk", 12);
    expect_error(p, "not GGUF, so read as a legacy imatrix.dat: entry 1 of ", "a binary that is no imatrix.dat");
    path_in(p, sizeof p, "missing.gguf");
    expect_error(p, "No such file", "missing file");


    /* GGUF files that are not what llama-imatrix writes, one fault each */
    {
        static const float sums[6] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, one[1] = {1.0f}, two[2] = {1.0f, 1.0f};
        const char *ab[] = {"a.in_sum2", "a.counts"};
        const int n41[] = {4, 1};
        const float *v41[] = {sums, one};
        path_in(p, sizeof p, "meta.gguf");
        write_tensors(p, 1 | 8, 2, ab, n41, v41);
        expect_error(p, "missing imatrix metadata", "no imatrix.chunk_count");
        write_tensors(p, 2 | 8, 2, ab, n41, v41);
        expect_error(p, "missing imatrix metadata", "no imatrix.datasets");
        write_tensors(p, 1 | 2, 2, ab, n41, v41);
        expect_error(p, "missing imatrix metadata", "no imatrix.chunk_size");
        /* with general.architecture: some of llama-imatrix's keys make it a damaged imatrix, none a
           model (a damaged one was called a model: a breaker's find) */
        write_tensors(p, 1 | 2 | 16, 2, ab, n41, v41);
        expect_error(p, "meta.gguf: missing imatrix metadata", "no imatrix.chunk_size, an architecture");
        write_tensors(p, 16, 2, ab, n41, v41);
        expect_error(p, "meta.gguf: a model (general.architecture llama), not an importance matrix", "an architecture alone");
        write_tensors(p, 1 | 2 | 8 | 16, 2, ab, n41, v41);
        {
            wp_imatrix im;
            char err[512] = "";
            CHECK(wp_imatrix_load(p, &im, err, sizeof err) == 0 && im.n == 1, "every key and an architecture: loads (%s)", err);
            if (im.n)
                wp_imatrix_free(&im);
        }
        write_tensors(p, 1 | 4 | 8, 2, ab, n41, v41);
        expect_error(p, "imatrix.chunk_count is not a u32", "imatrix.chunk_count an i32");
        write_tensors(p, 1 | 2 | 8, 0, NULL, NULL, NULL);
        expect_error(p, "no imatrix entries (no *.in_sum2 tensors)", "metadata and no tensors");
        const char *ac[] = {"a.in_sum2", "c.counts"};
        write_tensors(p, 1 | 2 | 8, 2, ac, n41, v41);
        expect_error(p, "mismatched sums and counts for a", "a's sums with c's counts");
        const int n52[] = {5, 2};
        const float *v52[] = {sums, two};
        write_tensors(p, 1 | 2 | 8, 2, ab, n52, v52);
        expect_error(p, "a: 5 sums do not divide into 2 matrices", "5 sums, 2 counts");
        const float nan1[1] = {NAN}, inf1[1] = {INFINITY}, neg1[1] = {-1.0f};
        const float *vnan[] = {sums, nan1}, *vinf[] = {sums, inf1}, *vneg[] = {sums, neg1};
        write_tensors(p, 1 | 2 | 8, 2, ab, n41, vnan);
        expect_error(p, "a: bad count nan", "count NaN");
        write_tensors(p, 1 | 2 | 8, 2, ab, n41, vinf);
        expect_error(p, "a: bad count inf", "count infinite");
        write_tensors(p, 1 | 2 | 8, 2, ab, n41, vneg);
        expect_error(p, "a: bad count -1", "count -1");

        /* counts rounded as std::lround (2.5 -> 3, 2.4 -> 2), -0.4 -> 0 -> importance 1;
         * the entry "" (tensors ".in_sum2", ".counts"), as common_imatrix_load keeps it */
        const float c3[3] = {2.5f, 2.4f, -0.4f};
        const char *nm[] = {".in_sum2", ".counts", "r.in_sum2", "r.counts"};
        const int n3[] = {4, 1, 6, 3};
        const float *v3[] = {sums, one, sums, c3};
        path_in(p, sizeof p, "round.gguf");
        write_tensors(p, 1 | 2 | 8, 4, nm, n3, v3);
        if (!load_ok(p, &im, "rounded counts")) {
            const wp_imatrix_entry *e = wp_imatrix_find(&im, ""), *r = wp_imatrix_find(&im, "r");
            CHECK(im.n == 2 && e && e->cols == 4 && e->n_mat == 1 && e->importance[3] == 4.0f,
                  "the tensors .in_sum2 and .counts: the entry \"\" (4 columns)");
            const float want[6] = {1.0f / 3.0f, 2.0f / 3.0f, 3.0f / 2.0f, 4.0f / 2.0f, 1.0f, 1.0f};
            CHECK(r && r->cols == 2 && r->n_mat == 3 && !memcmp(r->importance, want, sizeof want),
                  "counts 2.5, 2.4, -0.4: sums / 3, / 2, and 1 (lround, as llama.cpp)");
            wp_imatrix_free(&im);
        }
    }

    /* a GGUF cut after its magic: said as GGUF, not read as a legacy file */
    path_in(p, sizeof p, "magic.gguf");
    write_bytes(p, "GGUF", 4);
    expect_error(p, "magic.gguf: truncated file: the header at byte 4 needs 20 bytes", "GGUF magic alone");


    /* legacy imatrix.dat, synthetic */
    {
        struct dat d;
        size_t ee;
        dat_synthetic(&d, &ee);
        path_in(p, sizeof p, "syn.dat");
        dat_write(p, &d, d.n);
        if (!load_ok(p, &im, "legacy")) {
            check_legacy_synthetic(&im, "legacy");
            CHECK(im.chunk_count == 5 && im.n_datasets == 1 && !strcmp(im.datasets[0], "calib.txt"),
                  "legacy trailer: chunk count 5, dataset calib.txt");
            wp_imatrix_free(&im);
        }
        /* the same bytes under a .gguf name: told by content */
        path_in(p, sizeof p, "dat-named.gguf");
        dat_write(p, &d, d.n);
        if (!load_ok(p, &im, "legacy named .gguf")) {
            check_legacy_synthetic(&im, "legacy named .gguf");
            wp_imatrix_free(&im);
        }
        /* trailers as llama.cpp reads them */
        path_in(p, sizeof p, "notrailer.dat");
        dat_write(p, &d, ee);
        if (!load_ok(p, &im, "no trailer")) {
            CHECK(im.n == 3 && im.chunk_count == 0 && im.n_datasets == 0, "no trailer: chunk count 0, no dataset");
            wp_imatrix_free(&im);
        }
        path_in(p, sizeof p, "cut-trailer.dat");
        dat_write(p, &d, ee + 1);
        if (!load_ok(p, &im, "trailer cut inside the chunk count")) {
            CHECK(im.n == 3 && im.chunk_count == 5 && im.n_datasets == 0,
                  "trailer of 1 byte: chunk count = that byte (5), no dataset");
            wp_imatrix_free(&im);
        }
        path_in(p, sizeof p, "cut-dataset.dat");
        dat_write(p, &d, d.n - 1);
        if (!load_ok(p, &im, "dataset name cut short")) {
            CHECK(im.n == 3 && im.chunk_count == 5 && im.n_datasets == 0,
                  "dataset name cut short: chunk count 5, no dataset");
            wp_imatrix_free(&im);
        }
        struct dat j = d;
        dat_bytes(&j, "\x01\x02junk", 6);
        path_in(p, sizeof p, "junk.dat");
        dat_write(p, &j, j.n);
        if (!load_ok(p, &im, "bytes after the trailer")) {
            CHECK(im.n == 3 && im.chunk_count == 5 && im.n_datasets == 1 && !strcmp(im.datasets[0], "calib.txt"),
                  "bytes after the trailer: ignored, as llama.cpp");
            wp_imatrix_free(&im);
        }
        j = d;
        j.n = ee;
        dat_i32(&j, -3);
        dat_i32(&j, 0x7fffffff);
        dat_bytes(&j, "calib", 5);
        path_in(p, sizeof p, "huge-dataset.dat");
        dat_write(p, &j, j.n);
        if (!load_ok(p, &im, "dataset length 2^31-1")) {
            CHECK(im.n == 3 && (int32_t)im.chunk_count == -3 && im.n_datasets == 0,
                  "dataset length past the end: no dataset; chunk count -3 kept as stored");
            wp_imatrix_free(&im);
        }

        j = d;
        j.n = ee;
        dat_i32(&j, 6);
        dat_i32(&j, 0);
        path_in(p, sizeof p, "empty-dataset.dat");
        dat_write(p, &j, j.n);
        if (!load_ok(p, &im, "dataset length 0")) {
            CHECK(im.n == 3 && im.chunk_count == 6 && im.n_datasets == 0,
                  "dataset length 0: no dataset (llama.cpp reads one only for a length > 0)");
            wp_imatrix_free(&im);
        }


        /* broken legacy files */
        path_in(p, sizeof p, "cut.dat");
        dat_write(p, &d, ee - 5);
        expect_error(p, "legacy imatrix.dat: entry 4 of 4 (blk.0.attn_q.weight): value count 4 runs past the end",
                     "legacy cut inside the last entry's values");
        dat_write(p, &d, 4 + 4 + 10);
        expect_error(p, "entry 1 of 4: name length 19 runs past the end", "legacy cut inside a name");
        dat_write(p, &d, 4 + 4 + 19 + 6);
        expect_error(p, "entry 1 of 4 (blk.0.attn_q.weight): the file ends before its call and value counts",
                     "legacy cut inside nval");
        dat_write(p, &d, 2);
        expect_error(p, "2 bytes, shorter than its 4-byte entry count", "legacy of 2 bytes");
        dat_write(p, &d, 0);
        expect_error(p, "0 bytes, shorter than its 4-byte entry count", "empty file");
        j = d;
        memcpy(j.b, "\0\0\0\0", 4);
        path_in(p, sizeof p, "zero.dat");
        dat_write(p, &j, j.n);
        expect_error(p, "no entries (entry count 0)", "legacy entry count 0");
        j.n = 0;
        dat_i32(&j, 0x7fffffff);
        dat_entry(&j, "a", 1, 1, 1, q_vals);
        path_in(p, sizeof p, "many.dat");
        dat_write(p, &j, j.n);
        expect_error(p, "entry 2 of 2147483647: the file ends before its name length", "legacy entry count 2^31-1");
        j.n = 0;
        dat_i32(&j, 1);
        dat_i32(&j, -1);
        path_in(p, sizeof p, "neg.dat");
        dat_write(p, &j, j.n);
        expect_error(p, "entry 1 of 1: name length -1 is negative", "legacy negative name length");
        j.n = 0;
        dat_i32(&j, 1);
        dat_i32(&j, 1);
        dat_bytes(&j, "a", 1);
        dat_i32(&j, 1);
        dat_i32(&j, 0x7fffffff);
        dat_bytes(&j, q_vals, 16);
        path_in(p, sizeof p, "huge.dat");
        dat_write(p, &j, j.n);
        expect_error(p, "entry 1 of 1 (a): value count 2147483647 runs past the end of the file (16 bytes left)",
                     "legacy value count 2^31-1 (nothing allocated for it)");
        j.n = 0;
        dat_i32(&j, 1);
        dat_i32(&j, 3);
        dat_bytes(&j, "a\nb", 3);
        dat_i32(&j, 1);
        dat_i32(&j, 0);
        path_in(p, sizeof p, "nval0.dat");
        dat_write(p, &j, j.n);
        expect_error(p, "entry 1 of 1 (a?b): value count 0 is not positive",
                     "legacy value count 0 (a newline in the name shown as ?)");

        /* a name of 60 bytes with a DEL in it: shown cut to 48, DEL as ? */
        j.n = 0;
        dat_i32(&j, 1);
        dat_i32(&j, 60);
        dat_bytes(&j, "blk.0.\x7f" "bcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRST", 60);
        dat_i32(&j, 1);
        dat_i32(&j, 0);
        path_in(p, sizeof p, "longname.dat");
        dat_write(p, &j, j.n);
        expect_error(p, "entry 1 of 1 (blk.0.?bcdefghijklmnopqrstuvwxyz0123456789ABCDEF...): value count 0",
                     "legacy long name in a message: 48 bytes and ...");
        j.n = 0;
        dat_bytes(&j, WP_STREAM_MAGIC, 8);
        dat_i32(&j, 1);
        path_in(p, sizeof p, "s.wts");
        dat_write(p, &j, j.n);
        expect_error(p, "a wpack stream, not an imatrix", "a wpack stream");
    }

    /* a legacy file larger than the first read (64 KiB): read whole */
    {
        enum { NV = 40000 };
        static float big[NV];
        for (int i = 0; i < NV; i++)
            big[i] = (float)(i + 1);
        path_in(p, sizeof p, "big.dat");
        FILE *f = fopen(p, "wb");
        if (f) {
            const int32_t hdr[2] = {1, 1}, cnt[2] = {4, NV};
            fwrite(hdr, 4, 2, f);
            fputc('w', f);
            fwrite(cnt, 4, 2, f);
            fwrite(big, 4, NV, f);
            fclose(f);
        }
        if (!load_ok(p, &im, "legacy of 156 KiB")) {
            const wp_imatrix_entry *w = wp_imatrix_find(&im, "w");
            CHECK(w && w->cols == NV && w->importance[0] == 0.25f && w->importance[NV - 1] == NV / 4.0f,
                  "legacy of 156 KiB: %d values, the last one's importance %d / 4", NV, NV);
            wp_imatrix_free(&im);
        }
    }

    /* a real llama-imatrix file */
    const char *rb = getenv("REF_BUILD"), *data = getenv("WPACK_DATA"), *home = getenv("HOME");
    char tool[512], model[512], text[512], cmd[4096];
    if (rb && *rb)
        snprintf(tool, sizeof tool, "%s/bin/llama-imatrix", rb);
    else
        snprintf(tool, sizeof tool, "%s/.cache/wpack/llama.cpp-build/bin/llama-imatrix", home ? home : "");
    snprintf(model, sizeof model, "%s/models/stories260K/stories260K-f32.gguf", data && *data ? data : "../shared/data");
    snprintf(text, sizeof text, "%s/text/groups_merged.txt", data && *data ? data : "../shared/data");
    /* a model given as the imatrix (MODEL and IMATRIX swapped) is named, at its first tensor
       (it said "missing imatrix metadata", after reading every tensor: a note's left alone) */
    if (access(model, R_OK) == 0)
        expect_error(model, "stories260K-f32.gguf: a model (general.architecture llama), not an importance matrix "
                            "(llama-imatrix -m MODEL -f TEXT makes one)", "a model GGUF");
    if (access(tool, X_OK) != 0) {
        SKIP("llama-imatrix not built at %s (make reftools): real-file comparison skipped", tool);
    } else if (access(model, R_OK) != 0 || access(text, R_OK) != 0) {
        SKIP("stories260K or groups_merged.txt not found under %s: real-file comparison skipped",
             data && *data ? data : "../shared/data");
    } else {
        path_in(p, sizeof p, "real.gguf");
        path_in(q, sizeof q, "real.log");
        snprintf(cmd, sizeof cmd,
                 "'%s' -m '%s' -f '%s' -c 128 --chunks 3 -t 1 --no-ppl --process-output -o '%s' > '%s' 2>&1", tool,
                 model, text, p, q);
        int rc = system(cmd);
        CHECK(rc == 0 && access(p, R_OK) == 0, "llama-imatrix ran (exit %d; log %s)", rc, q);
        if (rc == 0) {
            int n = compare_with_gguf(p, "llama-imatrix stories260K");
            CHECK(n == 36, "llama-imatrix --process-output: 36 entries (5 layers x 7 + output.weight), got %d", n);
            if (wp_imatrix_load(p, &im, err, sizeof err) == 0) {
                const wp_imatrix_entry *e = wp_imatrix_find(&im, "blk.4.ffn_down.weight");
                CHECK(e && e->cols == 172 && e->n_mat == 1 && e->counts[0] == 384.0f && im.chunk_size == 128,
                      "blk.4.ffn_down.weight: 172 columns, count 3 x 128 = 384");
                wp_imatrix_free(&im);
            }
            /* the same run written as imatrix.dat: the same importance up to
             * the rounding of (sum/count)·ncall/ncall */
            char r[512];
            path_in(r, sizeof r, "real.dat");
            snprintf(cmd, sizeof cmd,
                     "'%s' -m '%s' -f '%s' -c 128 --chunks 3 -t 1 --no-ppl --process-output --output-format dat "
                     "-o '%s' > '%s' 2>&1",
                     tool, model, text, r, q);
            rc = system(cmd);
            CHECK(rc == 0 && access(r, R_OK) == 0, "llama-imatrix --output-format dat ran (exit %d; log %s)", rc, q);
            wp_imatrix g, l;
            if (rc == 0 && !load_ok(p, &g, "real GGUF")) {
                if (!load_ok(r, &l, "llama-imatrix stories260K imatrix.dat")) {
                    int bad = l.n != g.n;
                    double worst = 0;
                    for (int i = 0; !bad && i < l.n; i++) {
                        const wp_imatrix_entry *a = &l.e[i], *b = &g.e[i];
                        bad += strcmp(a->name, b->name) || a->cols != b->cols * b->n_mat || a->counts[0] != 3.0f;
                        for (int64_t k = 0; !bad && k < a->cols; k++) {
                            double dv = fabs((double)a->importance[k] - b->importance[k]) /
                                        fmax(fabs((double)b->importance[k]), 1e-30);
                            worst = dv > worst ? dv : worst;
                        }
                    }
                    /* (0 here; 1e-6 was 17 float roundings of slack: a reviewer's find) */
                    CHECK(l.legacy && !g.legacy && !bad && worst < 1e-7,
                          "imatrix.dat = GGUF of the same run: %d entries, names and sizes, ncall 3, importance to "
                          "%.2g relative",
                          l.n, worst);
                    CHECK(l.chunk_count == 3 && l.chunk_size == 0 && l.n_datasets == 1 && g.n_datasets == 1 &&
                              !strcmp(l.datasets[0], g.datasets[0]),
                          "imatrix.dat trailer: chunk count 3, dataset %s", l.n_datasets ? l.datasets[0] : "-");
                    wp_imatrix_free(&l);
                }
                wp_imatrix_free(&g);
            }
        }
    }

    /* wp_imatrix_dat_head: a .dat's head, and what is not one (a llama2.c checkpoint's dim and
       hidden_dim passed as a count and a length, and it was read whole: a breaker's find) */
    {
        struct dat d = {0};
        size_t end = 0;
        dat_synthetic(&d, &end);
        CHECK(wp_imatrix_dat_head(d.b, d.n) == 1, "dat_head: a synthetic imatrix.dat's head is one");
        const uint8_t ckpt[16] = {64, 0, 0, 0, 172, 0, 0, 0, 5, 0, 0, 0, 8, 0, 0, 0};   /* dim 64, hidden 172 */
        const uint8_t blank[12] = {1, 0, 0, 0, 3, 0, 0, 0, 'a', ' ', 'b', 0};
        const uint8_t zero[12] = {0, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c', 0};
        const uint8_t cut[10] = {1, 0, 0, 0, 3, 0, 0, 0, 'a', 'b'};
        CHECK(!wp_imatrix_dat_head(ckpt, sizeof ckpt) && !wp_imatrix_dat_head(blank, sizeof blank) &&
                  !wp_imatrix_dat_head(zero, sizeof zero) && !wp_imatrix_dat_head(cut, sizeof cut) &&
                  !wp_imatrix_dat_head(d.b, 7),
              "dat_head: a checkpoint's head, a name with a blank, 0 entries, a name past the bytes, 7 bytes are none");
    }

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", dir);

    /* what gptq takes of a loaded file: the values checked, an entry fitted to a tensor,
       and llama-quantize's record of the file (an importance matrix laid out here, sorted
       by name as the loader leaves it) */
    {
        float up[8] = {1, 2, 3, 4, 5, 6, 7, 8}, q[4] = {1, 1, 1, 1}, te[4] = {1, 1, 1, 1};
        char n_exps[] = "blk.0.ffn_up_exps.weight", n_q[] = "blk.0.attn_q.weight", n_te[] = "token_embd.weight";
        char ds[] = "calib.txt", *dsl[] = {ds};
        wp_imatrix_entry es[3] = {{n_q, 4, 1, NULL, NULL, q}, {n_exps, 4, 2, NULL, NULL, up},
                                  {n_te, 4, 1, NULL, NULL, te}};
        wp_imatrix mi = {3, es, 1, dsl, 7, 512, 0};
        char msg[512];
        const wp_imatrix_entry *e = NULL;
        CHECK(wp_imatrix_check(&mi, "m.imatrix", msg, sizeof msg) == 0, "finite, non-negative importances pass");
        up[5] = -1.0f;
        CHECK(wp_imatrix_check(&mi, "m.imatrix", msg, sizeof msg) == -1 &&
                  !strcmp(msg, "m.imatrix: imatrix entry blk.0.ffn_up_exps.weight has a negative importance (-1 at "
                               "5): importance is a mean of squared activations"),
              "a negative importance: %s", msg);
        up[5] = NAN;
        CHECK(wp_imatrix_check(&mi, "m.imatrix", msg, sizeof msg) == -1 &&
                  !strcmp(msg, "m.imatrix: imatrix entry blk.0.ffn_up_exps.weight has a non-finite importance (nan "
                               "at 5): llama-quantize refuses such a file"),
              "a non-finite importance: %s", msg);
        up[5] = 6.0f;
        CHECK(wp_imatrix_fit(&mi, "m.imatrix", "blk.0.attn_q.weight", 4, 1, 0, &e, msg, sizeof msg) == 0 && e == &es[0],
              "an entry of the tensor's columns fits");
        CHECK(wp_imatrix_fit(&mi, "m.imatrix", "blk.0.attn_k.weight", 4, 1, 0, &e, msg, sizeof msg) == 0 && e == NULL,
              "no entry: 0, NULL");
        CHECK(wp_imatrix_fit(&mi, "m.imatrix", "blk.0.ffn_up_exps.weight", 4, 2, 0, &e, msg, sizeof msg) == 0 &&
                  e == &es[1],
              "4 columns x 2 experts fit a tensor of 2 experts");
        CHECK(wp_imatrix_fit(&mi, "m.imatrix", "blk.0.ffn_up_exps.weight", 8, 1, 0, &e, msg, sizeof msg) == -1 &&
                  e == NULL &&
                  !strcmp(msg, "m.imatrix: imatrix entry blk.0.ffn_up_exps.weight does not fit the tensor: the entry "
                               "has 4 columns x 2 experts, the tensor's rows are 8 long"),
              "8 values as 4 x 2 experts do not fit one matrix of rows of 8: %s", msg);
        CHECK(wp_imatrix_fit(&mi, "m.imatrix", "blk.0.attn_q.weight", 2, 2, 0, &e, msg, sizeof msg) == -1 &&
                  !strcmp(msg, "m.imatrix: imatrix entry blk.0.attn_q.weight does not fit the tensor: the entry has "
                               "4 columns, the tensor's rows are 2 long x 2 experts"),
              "%s", msg);
        CHECK(wp_imatrix_fit(&mi, "m.imatrix", "token_embd.weight", 8, 1, 1, &e, msg, sizeof msg) == 1 && e == NULL &&
                  !strcmp(msg, "m.imatrix: imatrix entry token_embd.weight does not fit the tensor: the entry has 4 "
                               "values, the tensor's rows are 8 long: quantized without it, as llama-quantize does"),
              "a token embedding's misfit: quantized without it (%s)", msg);
        CHECK(wp_imatrix_fit(&mi, "m.imatrix", "token_embd.weight", 8, 1, 0, &e, msg, sizeof msg) == -1 && e == NULL,
              "the same misfit, not lenient: refused");
        mi.legacy = 1;
        CHECK(wp_imatrix_fit(&mi, "m.dat", "blk.0.ffn_up_exps.weight", 8, 1, 0, &e, msg, sizeof msg) == 0 &&
                  e == &es[1],
              "legacy: 8 values fit 8 x 1, however the file split them");
        CHECK(wp_imatrix_fit(&mi, "m.dat", "blk.0.attn_q.weight", 8, 1, 0, &e, msg, sizeof msg) == -1 &&
                  !strcmp(msg, "m.dat: imatrix entry blk.0.attn_q.weight does not fit the tensor: the entry has 4 "
                               "values, the tensor's rows are 8 long"),
              "legacy: said as values (%s)", msg);
        mi.legacy = 0;

        wp_record kv[4];
        for (int k = 0; k < 4; k++)
            wp_record_init(&kv[k]);
        char longpath[200];
        memset(longpath, 'p', sizeof longpath - 1);
        longpath[sizeof longpath - 1] = 0;
        char v0[256] = "", v1[256] = "";
        const int nk = wp_imatrix_kvs(&mi, longpath, kv);
        wp_gguf_kv_str(&kv[0], v0, sizeof v0);
        wp_gguf_kv_str(&kv[1], v1, sizeof v1);
        CHECK(nk == 4 && !strcmp(kv[0].name, "quantize.imatrix.file") && strlen(v0) == 127 &&
                  !strcmp(kv[1].name, "quantize.imatrix.dataset") && !strcmp(v1, "calib.txt") &&
                  !strcmp(kv[2].name, "quantize.imatrix.entries_count") && wp_gguf_kv_uint(&kv[2]) == 3 &&
                  !strcmp(kv[3].name, "quantize.imatrix.chunks_count") && wp_gguf_kv_uint(&kv[3]) == 7,
              "llama-quantize's keys: the file cut to 127 bytes, the dataset, 3 entries, 7 chunks");
        for (int k = 0; k < 4; k++)
            wp_record_free(&kv[k]), wp_record_init(&kv[k]);
        mi.n_datasets = 0;
        mi.chunk_count = 0x80000000u;   /* an int32 below 0: not recorded */
        CHECK(wp_imatrix_kvs(&mi, "m.imatrix", kv) == 2 && !strcmp(kv[1].name, "quantize.imatrix.entries_count"),
              "no dataset, a chunk count negative as an int32: the file and the entry count alone");
        for (int k = 0; k < 4; k++)
            wp_record_free(&kv[k]);
    }
    return tap_done();
}
