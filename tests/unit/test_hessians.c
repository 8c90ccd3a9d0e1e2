/* test_hessians.c - lib/hessians.c: the head hessian writes, and what gptq
 * takes from a record (a Hessian that fits, F32 widened in place, refusals of
 * entries no X^T X has; a record of experts), and a Hessian file read by
 * weight (shared records, a weight in two records, a zero H, a misfit, a
 * record of experts). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggml_type.h"
#include "hessians.h"
#include "tap.h"

/* a record of type and c x c values v(i, j) */
static void make(wp_record *r, uint32_t type, int c, double (*v)(int, int))
{
    wp_record_init(r);
    wp_hessian_head(r, "blk.0.attn_q.weight", c, 1, 512, "0123456789abcdef", 128, 4);
    r->type = type;
    uint8_t *p = wp_record_alloc(r, (uint64_t)c * c * (type == WP_F32 ? 4 : 8));
    for (int i = 0; i < c; i++)
        for (int j = 0; j < c; j++) {
            if (type == WP_F32) {
                float f = (float)v(i, j);
                memcpy(p + 4 * (i * c + j), &f, 4);
            } else {
                double d = v(i, j);
                memcpy(p + 8 * (i * c + j), &d, 8);
            }
        }
}

static double spd(int i, int j) { return i == j ? 4.0 + i : 1.0 / (1 + i + j); }
static double zero(int i, int j) { return 0 * (i + j); }
static double neg_diag(int i, int j) { return i == j && i == 2 ? -1.5 : spd(i, j); }
static double with_nan(int i, int j) { return i == 1 && j == 3 ? NAN : spd(i, j); }

/* a record of n_exp experts' c x c values v(e, i, j), F64 */
static void make_experts(wp_record *r, int c, int n_exp, double (*v)(int, int, int))
{
    wp_record_init(r);
    wp_hessian_head(r, "blk.0.ffn_up_exps.weight", c, n_exp, 512, "0123456789abcdef", 128, 4);
    uint8_t *p = wp_record_alloc(r, (uint64_t)n_exp * c * c * 8);
    for (int e = 0; e < n_exp; e++)
        for (int i = 0; i < c; i++)
            for (int j = 0; j < c; j++) {
                double d = v(e, i, j);
                memcpy(p + 8 * ((e * c + i) * c + j), &d, 8);
            }
}

static double ex_spd(int e, int i, int j) { return (e + 1) * spd(i, j); }
static double ex_one_zero(int e, int i, int j) { return e == 1 ? 0 : ex_spd(e, i, j); }
static double ex_nan(int e, int i, int j) { return e == 1 && i == 2 && j == 0 ? NAN : ex_spd(e, i, j); }
static double ex_neg(int e, int i, int j) { return e == 2 && i == 3 && j == 3 ? -2.0 : ex_spd(e, i, j); }
/* expert 1: row and column 2 zero but (2, 3) and (3, 2): a zero diagonal entry beside entries */
static double ex_dead(int e, int i, int j)
{
    if (e == 1 && (i == 2 || j == 2))
        return (i == 2 && j == 3) || (i == 3 && j == 2) ? 0.5 : 0;
    return ex_spd(e, i, j);
}
/* row and column 1 zero: a dead column, which GPTQ zeroes */
static double dead_col(int i, int j) { return i == 1 || j == 1 ? 0 : spd(i, j); }
static double dead_beside(int i, int j) { return i == 1 && j == 1 ? 0 : spd(i, j); }

/* Write a Hessian file at path: records named names[k] of c x c values v,
 * with weights= when weights[k] is not NULL. */
static void write_file(const char *path, int n, const char *const *names, const char *const *weights, int c,
                       double (*v)(int, int))
{
    char err[256];
    FILE *f = fopen(path, "wb");
    wp_writer *w = wp_writer_open(f, path, 64, err, sizeof err);
    for (int k = 0; k < n; k++) {
        wp_record r;
        make(&r, WP_F64, c, v);
        wp_record_set_name(&r, names[k]);
        if (weights[k])
            wp_attr_set(&r, "weights", weights[k]);
        wp_writer_put(w, &r);
        wp_record_free(&r);
    }
    wp_writer_close(w, err, sizeof err);
    fclose(f);
}

int main(void)
{
    wp_record r;
    char err[256], buf[256], hash[32] = "";
    int z = -1;
    wp_record_init(&r);
    CHECK(wp_hessian_head(&r, "blk.0.ffn_up.weight", 64, 1, 1024, "0123456789abcdef", 128, 8) == 0 &&
              r.kind == WP_REC_HESSIAN && r.type == WP_F64 && r.n_dims == 2 && r.ne[0] == 64 && r.ne[1] == 64 &&
              !strcmp(r.name, "blk.0.ffn_up.weight") && wp_attr_i64(&r, "n_tokens", -1) == 1024 &&
              wp_attr_str(&r, "text_hash", hash, sizeof hash) && !strcmp(hash, "0123456789abcdef") &&
              wp_attr_i64(&r, "ctx", -1) == 128 && wp_attr_i64(&r, "chunks", -1) == 8,
          "the head: F64, 64x64, n_tokens=1024 text_hash ctx=128 chunks=8");
    wp_record_free(&r);
    wp_record_init(&r);
    CHECK(wp_hessian_head(&r, "blk.0.ffn_up_exps.weight", 64, 8, 1024, "0123456789abcdef", 128, 8) == 0 &&
              r.n_dims == 3 && r.ne[2] == 8,
          "an expert matrix: n_dims 3, ne[2] = 8 experts");
    wp_record_free(&r);

    /* the attributes hessian adds: weights= (--share-inputs) and expert_tokens= */
    wp_record_init(&r);
    const char *qkv[] = {"blk.0.attn_q.weight", "blk.0.attn_v.weight", "blk.0.attn_k.weight"};
    CHECK(wp_hessian_set_weights(&r, qkv, 3, err, sizeof err) == 0 && wp_attr_str(&r, "weights", buf, sizeof buf) &&
              !strcmp(buf, "blk.0.attn_q.weight,blk.0.attn_v.weight,blk.0.attn_k.weight"),
          "weights=: the names in the order given, comma-separated (%s)", buf);
    const char *comma[] = {"blk.0.attn_q.weight", "blk.0.a,b"};
    CHECK(wp_hessian_set_weights(&r, comma, 2, err, sizeof err) == -1 &&
              !strcmp(err, "weight name 'blk.0.a,b' holds a comma (weights= could not list it)"),
          "a name with a comma, which the list's reader would split: refused (%s)", err);
    const int64_t tok[] = {266, 251, 0, 1234567890123};
    CHECK(wp_hessian_set_expert_tokens(&r, tok, 4) == 0 && wp_attr_str(&r, "expert_tokens", buf, sizeof buf) &&
              !strcmp(buf, "266,251,0,1234567890123"),
          "expert_tokens=: each expert's rows (%s)", buf);
    wp_record_free(&r);

    CHECK(wp_hessian_fit_problem("h", 64, 64, 1, WP_F64, 64 * 64 * 8, "t", 64, 1, buf, sizeof buf) == NULL &&
              wp_hessian_fit_problem("h", 64, 64, 1, WP_F32, 64 * 64 * 4, "t", 64, 1, buf, sizeof buf) == NULL,
          "64x64 F64 and F32 fit a tensor of 64 columns");
    const char *p = wp_hessian_fit_problem("blk.0.h", 64, 64, 1, WP_F64, 64 * 64 * 8, "blk.0.ffn_down.weight", 172,
                                           1, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'blk.0.h' is 64x64, tensor blk.0.ffn_down.weight has 172 columns"), "%s",
          p ? p : "(fits)");
    p = wp_hessian_fit_problem("h", 64, 64, 1, WP_F16, 64 * 64 * 2, "t", 64, 1, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'h': type must be F64 or F32 with 4096 values"), "%s", p ? p : "(fits)");
    p = wp_hessian_fit_problem("h", 64, 64, 1, WP_F64, 64 * 64 * 8 - 8, "t", 64, 1, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'h': type must be F64 or F32 with 4096 values"), "a value short: %s",
          p ? p : "(fits)");
    /* experts (a record of n_dims 3, one H an expert) */
    CHECK(wp_hessian_fit_problem("e", 64, 64, 4, WP_F64, 4 * 64 * 64 * 8, "t", 64, 4, buf, sizeof buf) == NULL,
          "4 experts' 64x64 F64 fit a tensor of 4 experts of 64 columns");
    p = wp_hessian_fit_problem("e", 64, 64, 4, WP_F64, 4 * 64 * 64 * 8, "t", 64, 1, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'e' holds 4 experts' H, tensor t is one matrix"), "%s", p ? p : "(fits)");
    p = wp_hessian_fit_problem("e", 64, 64, 1, WP_F64, 64 * 64 * 8, "t", 64, 8, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'e' is one matrix's H, tensor t has 8 experts"), "%s", p ? p : "(fits)");
    p = wp_hessian_fit_problem("e", 64, 64, 4, WP_F64, 4 * 64 * 64 * 8, "t", 64, 8, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'e' holds 4 experts' H, tensor t has 8 experts"), "%s", p ? p : "(fits)");
    p = wp_hessian_fit_problem("e", 64, 64, -1, WP_F64, 4 * 64 * 64 * 8, "t", 64, 4, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'e' has more than 3 dimensions (cols x cols, or cols x cols x experts)"),
          "a record of n_dims 4 (ne2 -1), not taken for 2 x 2 experts (a breaker's find): %s", p ? p : "(fits)");
    p = wp_hessian_fit_problem("e", 64, 64, 4, WP_F64, 64 * 64 * 8, "t", 64, 4, buf, sizeof buf);
    CHECK(p && !strcmp(p, "Hessian 'e': type must be F64 or F32 with 16384 values"), "one expert's values: %s",
          p ? p : "(fits)");

    make(&r, WP_F32, 5, spd);
    double *H = wp_hessian_take(&r, &z, err, sizeof err);
    int same = H != NULL;
    for (int i = 0; same && i < 5; i++)
        for (int j = 0; j < 5; j++)
            same &= H[i * 5 + j] == (double)(float)spd(i, j);
    CHECK(same && z == 0 && r.payload == NULL && r.payload_len == 0,
          "an F32 Hessian widened in place: every value the float's, the record left without its payload");
    free(H);
    wp_record_free(&r);

    make(&r, WP_F64, 4, zero);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(H && z == 1, "a zero Hessian is taken, and said zero (gptq quantizes its tensor by RTN)");
    free(H);
    wp_record_free(&r);

    make(&r, WP_F64, 4, neg_diag);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(!H && !strcmp(err, "negative Hessian diagonal entry -1.5 at (2, 2): X^T X has none"), "%s", err);
    wp_record_free(&r);

    make(&r, WP_F32, 4, with_nan);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(!H && !strcmp(err, "non-finite Hessian entry at (1, 3)"), "%s", err);
    wp_record_free(&r);

    /* experts: one H an expert, each checked and said by its number */
    make_experts(&r, 4, 3, ex_spd);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(H && z == 0 && H[0] == spd(0, 0) && H[16 + 1 * 4 + 2] == 2 * spd(1, 2) && H[32 + 15] == 3 * spd(3, 3),
          "3 experts' H taken, one after the other");
    free(H);
    wp_record_free(&r);
    make_experts(&r, 4, 3, ex_one_zero);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(H && z == 0, "one expert's zero H is not the record's (its caller sees it)");
    free(H);
    wp_record_free(&r);
    make_experts(&r, 4, 3, ex_nan);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(!H && !strcmp(err, "non-finite Hessian entry at (2, 0), expert 1"), "%s", err);
    wp_record_free(&r);
    make_experts(&r, 4, 3, ex_neg);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(!H && !strcmp(err, "negative Hessian diagonal entry -2 at (3, 3), expert 2: X^T X has none"), "%s", err);
    wp_record_free(&r);
    make_experts(&r, 4, 3, ex_dead);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(!H && !strcmp(err, "Hessian entry 0.5 at (2, 3) beside a zero diagonal entry at (2, 2), expert 1: X^T X "
                             "has none"),
          "a zero diagonal entry with entries beside it: refused (GPTQ zeroed the matrix: a breaker's find): %s", err);
    wp_record_free(&r);
    make(&r, WP_F64, 4, dead_col);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(H && z == 0, "a dead column (its row and column zero) is taken");
    free(H);
    wp_record_free(&r);
    make(&r, WP_F64, 4, dead_beside);
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(!H && !strcmp(err, "Hessian entry 0.5 at (1, 0) beside a zero diagonal entry at (1, 1): X^T X has none"),
          "%s", err);
    wp_record_free(&r);

    make_experts(&r, 4, 3, ex_spd);
    r.n_dims = 4;
    r.ne[2] = 3, r.ne[3] = 1;
    H = wp_hessian_take(&r, &z, err, sizeof err);
    CHECK(!H && !strcmp(err, "not a Hessian's shape (n_dims 4, 4x4)"), "a record that does not fit, taken: %s", err);
    wp_record_free(&r);

    /* the experts named in warnings */
    unsigned char mark[128] = {0, 0, 1, 1, 0, 0, 1, 1};
    CHECK(wp_hessian_expert_list(mark, 8, buf, sizeof buf) == 4 && !strcmp(buf, "2, 3, 6, 7 (4 of 8)"), "%s", buf);
    CHECK(wp_hessian_expert_list(mark, 2, buf, sizeof buf) == 0 && !strcmp(buf, ""), "none: 0, \"\"");
    for (int e = 0; e < 128; e++)
        mark[e] = e % 16 != 5;
    char small[96];
    CHECK(wp_hessian_expert_list(mark, 128, small, sizeof small) == 120 && strstr(small, ", ... (120 of 128)") &&
              !strncmp(small, "0, 1, 2, 3, 4, 6, ", 18) && strlen(small) < sizeof small,
          "many: cut with ..., the count kept (%s)", small);

    /* a Hessian file read by weight */
    char path[] = "/tmp/test_hessians.XXXXXX";
    const int fd = mkstemp(path);
    close(fd);
    const char *names[] = {"blk.0.attn_in", "blk.0.ffn_down.weight"};
    const char *weights[] = {"blk.0.attn_in,blk.0.attn_q.weight,blk.0.attn_k.weight", NULL};
    write_file(path, 2, names, weights, 4, spd);
    wp_hessian_file *hf;
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == 0, "the file opens");
    CHECK(wp_hessian_file_count(hf) == 4, "4 weights: the shared record's own name, q, k, and ffn_down");
    const wp_hessian_ref *q = wp_hessian_file_find(hf, "blk.0.attn_q.weight"),
                         *k = wp_hessian_file_find(hf, "blk.0.attn_k.weight"),
                         *own = wp_hessian_file_find(hf, "blk.0.attn_in"),
                         *down = wp_hessian_file_find(hf, "blk.0.ffn_down.weight");
    CHECK(q && k && own && down && q->offset == k->offset && own->offset == q->offset &&
              down->offset > q->offset && !strcmp(q->rec, "blk.0.attn_in") && q->ne0 == 4 && q->type == WP_F64 &&
              q->payload_len == 4 * 4 * 8,
          "q, k and the record's own name are one record; ffn_down its own, after it");
    CHECK(own && q && down && own->named == 1 && q->named == 1 && down->named == 1 &&
              !strcmp(wp_hessian_file_at(hf, 0)->weight, "blk.0.attn_in") &&
              !strcmp(wp_hessian_file_at(hf, 3)->weight, "blk.0.ffn_down.weight"),
          "named: each weight the records name (attn_in is in its own weights=); in the file's order");
    CHECK(wp_hessian_file_find(hf, "blk.0.attn_v.weight") == NULL, "a weight without a record: NULL");
    H = NULL;
    CHECK(wp_hessian_file_get(hf, "blk.0.attn_k.weight", 4, 1, &H, err, sizeof err) == 0 && H &&
              H[1 * 4 + 2] == spd(1, 2) && H[3 * 4 + 3] == spd(3, 3),
          "the shared H, read for k");
    free(H);
    CHECK(wp_hessian_file_get(hf, "blk.0.attn_v.weight", 4, 1, &H, err, sizeof err) == 0 && H == NULL,
          "no record: 0, H NULL");
    char want[512];
    snprintf(want, sizeof want, "%s: Hessian 'blk.0.ffn_down.weight' is 4x4, tensor blk.0.ffn_down.weight has 8 columns",
             path);
    CHECK(wp_hessian_file_get(hf, "blk.0.ffn_down.weight", 8, 1, &H, err, sizeof err) == -1 && !strcmp(err, want),
          "a misfit names the file: %s", err);
    wp_hessian_file_close(hf);

    const char *zn[] = {"blk.0.attn_q.weight"}, *zw[] = {NULL};
    write_file(path, 1, zn, zw, 4, zero);
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == 0, "the file opens");
    H = (double *)1;
    CHECK(wp_hessian_file_get(hf, "blk.0.attn_q.weight", 4, 1, &H, err, sizeof err) == 1 && H == NULL,
          "a zero H: 1, H NULL (RTN)");
    wp_hessian_file_close(hf);

    write_file(path, 1, zn, zw, 4, with_nan);
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == 0, "the file opens");
    snprintf(want, sizeof want, "%s: tensor blk.0.attn_q.weight: non-finite Hessian entry at (1, 3)", path);
    CHECK(wp_hessian_file_get(hf, "blk.0.attn_q.weight", 4, 1, &H, err, sizeof err) == -1 && !strcmp(err, want),
          "a bad H names the file and the tensor: %s", err);
    wp_hessian_file_close(hf);

    /* a record of experts, read for a tensor of as many, refused for a 2-D one */
    {
        FILE *ef = fopen(path, "wb");
        wp_writer *w = wp_writer_open(ef, path, 64, err, sizeof err);
        make_experts(&r, 4, 3, ex_spd);
        wp_writer_put(w, &r);
        wp_record_free(&r);
        wp_writer_close(w, err, sizeof err);
        fclose(ef);
    }
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == 0, "the file opens");
    const wp_hessian_ref *ue = wp_hessian_file_find(hf, "blk.0.ffn_up_exps.weight");
    CHECK(ue && ue->ne0 == 4 && ue->ne1 == 4 && ue->ne2 == 3 && ue->payload_len == 3 * 4 * 4 * 8,
          "the index holds the experts' count: ne2 3");
    H = NULL;
    CHECK(wp_hessian_file_get(hf, "blk.0.ffn_up_exps.weight", 4, 3, &H, err, sizeof err) == 0 && H &&
              H[16 + 5] == 2 * spd(1, 1) && H[32 + 4 * 3 + 1] == 3 * spd(3, 1),
          "the experts' H read for a tensor of 3 experts");
    free(H);
    snprintf(want, sizeof want, "%s: Hessian 'blk.0.ffn_up_exps.weight' holds 3 experts' H, tensor "
             "blk.0.ffn_up_exps.weight is one matrix", path);
    CHECK(wp_hessian_file_get(hf, "blk.0.ffn_up_exps.weight", 4, 1, &H, err, sizeof err) == -1 && !strcmp(err, want),
          "%s", err);
    wp_hessian_file_close(hf);

    const char *two[] = {"blk.0.attn_in", "blk.1.attn_in"};
    const char *twow[] = {"blk.0.attn_q.weight", "blk.0.attn_q.weight"};
    write_file(path, 2, two, twow, 4, spd);
    hf = (wp_hessian_file *)1;
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == -1 && hf == NULL &&
              strstr(err, ": weight blk.0.attn_q.weight has two Hessian records (at offsets ") == err + strlen(path),
          "a weight in two records: %s", err);

    write_file(path, 0, two, twow, 4, spd);
    snprintf(want, sizeof want, "%s: no Hessian records (make them with hessian --model M --text T -o FILE)", path);
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == -1 && !strcmp(err, want), "%s", err);

    FILE *f = fopen(path, "wb");
    fputs("blk.0.attn_q.weight\n", f);
    fclose(f);
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == WP_HESSIANS_NOT_STREAM && hf == NULL,
          "a text: the reader's refusal, for the caller to say what the file is (%s)", err);
    unlink(path);
    snprintf(want, sizeof want, "%s: cannot open Hessian file: No such file or directory", path);
    CHECK(wp_hessian_file_open(path, &hf, err, sizeof err) == -1 && !strcmp(err, want), "%s", err);
    return tap_done();
}
