/* test_distform.c - lib/distform.c: the z_group of a type, when a zstd
 * record is worth storing, a symbols record's fixed-width size, a matrix
 * restored fixed-width from its side and symbols records (the bytes it was
 * split from), and --dist's choice for a matrix whose codes do not
 * concentrate (the fixed-width tensor) and for one whose do (side + symbols). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codes.h"
#include "distform.h"
#include "ggml_type.h"
#include "rtn.h"
#include "tap.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t next32(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

/* A Q8_0 tensor record of rows x 256 weights: uniform noise, each block at a
 * scale of its own (codes spread over all 256 values, scales that do not
 * repeat) or, with `flat`, weights that round to a few codes. */
static void q8_tensor(wp_record *t, int64_t rows, int flat)
{
    float *w = malloc(sizeof(float) * 256 * rows);
    for (int64_t k = 0; k < 256 * rows; k++)
        w[k] = flat ? (k % 256 == 0 ? 1.0f : (float)(next32() % 3) * 0.01f) : (float)(next32() % 20001) * 1e-4f - 1.0f;
    for (int64_t b = 0; !flat && b < 8 * rows; b++) {   /* each block's scale its own: side data of noise too */
        const float s = exp2f((float)(next32() % 16000) * 1e-3f - 8.0f);   /* 2^-8 .. 2^8 */
        for (int j = 0; j < 32; j++)
            w[32 * b + j] *= s;
    }
    wp_record_init(t);
    t->kind = WP_REC_TENSOR;
    t->type = WP_Q8_0;
    t->n_dims = 2;
    t->ne[0] = 256, t->ne[1] = rows, t->ne[2] = t->ne[3] = 1;
    wp_record_set_name(t, "blk.0.ffn_up.weight");
    const size_t len = wp_ggml_row_size(WP_Q8_0, 256) * (size_t)rows;
    wp_rtn_quantize(WP_Q8_0, w, wp_record_alloc(t, len), rows, 256, NULL);
    free(w);
}

int main(void)
{
    CHECK(wp_form_group(WP_F32) == 4 && wp_form_group(WP_F16) == 2 && wp_form_group(WP_BF16) == 2 &&
              wp_form_group(WP_Q4_K) == 1 && wp_form_group(WP_Q8_0) == 1,
          "z_group: an element's bytes for plain types, 1 for blocks");

    wp_record r, z;
    wp_record_init(&r);
    wp_record_init(&z);
    r.kind = WP_REC_TENSOR;
    r.type = WP_F32;
    r.n_dims = 1;
    r.ne[0] = 1024, r.ne[1] = r.ne[2] = r.ne[3] = 1;
    wp_record_set_name(&r, "output_norm.weight");
    memset(wp_record_alloc(&r, 4096), 0, 4096);
    CHECK(wp_form_zstd_smaller(&r, 4, &z) == 1 && z.kind == WP_REC_Z && z.payload_len + 32 < 4096,
          "4 KiB of zeros: its zstd record (%llu bytes) is stored", (unsigned long long)z.payload_len);
    wp_record_free(&z), wp_record_init(&z);
    for (int k = 0; k < 4096; k++)
        r.payload[k] = (uint8_t)next32();
    CHECK(wp_form_zstd_smaller(&r, 4, &z) == 0, "4 KiB of noise: stored as it is");
    wp_record_free(&z), wp_record_init(&z);
    r.payload_len = 63;
    memset(r.payload, 0, 63);
    r.ne[0] = 63;
    CHECK(wp_form_zstd_smaller(&r, 1, &z) == 0, "under 64 bytes: never zstd'd");
    wp_record_free(&z), wp_record_free(&r);

    /* a Q8_0 matrix split into side and symbols, and back */
    wp_record t, side, sym;
    q8_tensor(&t, 64, 0);
    wp_codes_geom g;
    wp_codes_geom_get(WP_Q8_0, 256, 64, &g);
    wp_record_init(&side);
    wp_record_init(&sym);
    int ok = wp_q_records(&g, &t, &side, &sym) == 0;
    uint64_t fb = 0;
    char err[256];
    CHECK(ok && wp_form_fixed_bytes(&sym, &fb, err, sizeof err) == 0 && fb == 64 * 8 * 34,
          "Q8_0 64 x 256: 64 rows of 8 blocks of 34 bytes fixed-width");
    wp_form_fixed f;
    CHECK(wp_form_fixed_open(&f, &side, &sym, err, sizeof err) == 0 && f.t->payload_len == t.payload_len &&
              !memcmp(f.t->payload, t.payload, t.payload_len) && f.t->type == WP_Q8_0,
          "restored fixed-width: the blocks it was split from, byte for byte");
    char stored[16] = "";
    CHECK(wp_attr_str(f.t, "stored", stored, sizeof stored) && !strcmp(stored, "fixed"), "marked stored=fixed");
    wp_form_fixed_close(&f);
    CHECK(side.payload != NULL && sym.payload != NULL, "side and symbols left as they were");

    wp_record bad;
    wp_record_init(&bad);
    wp_record_copy(&bad, &sym);
    wp_attr_set(&bad, "codec", "zz");
    CHECK(wp_form_fixed_bytes(&bad, &fb, err, sizeof err) == -1 && !strcmp(err, "unknown codec 'zz'"), "%s", err);
    wp_attr_set(&bad, "codec", "q");
    bad.type = WP_F16;
    CHECK(wp_form_fixed_bytes(&bad, &fb, err, sizeof err) == -1 && !strcmp(err, "type without a code view"), "%s",
          err);
    wp_attr_set(&bad, "xxh32", "00000000");
    bad.type = WP_Q8_0;
    CHECK(wp_form_fixed_open(&f, &side, &bad, err, sizeof err) == -1 && err[0], "a wrong hash: the restorer's '%s'",
          err);
    wp_form_fixed_close(&f);
    wp_record_free(&bad);

    /* --dist: noise codes (no lane coding offered here: coded = the symbols as they are) go fixed-width */
    wp_record coded, out[2];
    wp_record_init(&coded);
    wp_record_copy(&coded, &sym);
    wp_record_init(&out[0]);
    wp_record_init(&out[1]);
    int n_out = -1;
    CHECK(wp_form_dist(&side, &sym, &coded, fb, out, &n_out, err, sizeof err) == 0 && n_out == 1 &&
              out[0].kind == WP_REC_TENSOR && out[0].payload_len == t.payload_len &&
              !memcmp(out[0].payload, t.payload, t.payload_len),
          "noise: one record, the fixed-width tensor as it is (zstd does not shrink it)");
    wp_record_free(&out[0]), wp_record_init(&out[0]);
    wp_record_free(&t);

    /* codes that concentrate: side + zstd'd symbols beat the fixed-width tensor's zstd */
    q8_tensor(&t, 64, 1);
    wp_record_init(&side);
    wp_record_init(&sym);
    wp_q_records(&g, &t, &side, &sym);
    wp_record_init(&coded);
    wp_record_copy(&coded, &sym);
    CHECK(wp_form_dist(&side, &sym, &coded, fb, out, &n_out, err, sizeof err) == 0 &&
              n_out == 2 && out[1].kind == WP_REC_Z && wp_record_kind_of(&out[1]) == WP_REC_SYMBOLS &&
              wp_record_kind_of(&out[0]) == WP_REC_SIDE,
          "concentrated codes: 2 records, the side data, then the symbols zstd'd");
    wp_record_free(&out[0]), wp_record_free(&out[1]), wp_record_free(&t);
    return tap_done();
}
